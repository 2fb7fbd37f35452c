# SPDX-License-Identifier: MIT
"""Decoding of the Kubernetes protobuf encoding for the API server emulator (kubeemu.py).

client-go's event recorder, as node-problem-detector uses it, POSTs core/v1 Events as
`application/vnd.kubernetes.protobuf`, not JSON. A real API server accepts both; so must the
emulator, or every NPD event is rejected and a test cannot see them. Only what a client sends
as a request body is decoded (an Event, with the messages it embeds), into the JSON shape the
emulator stores. The envelope is the 4-byte magic "k8s\\0" then a runtime.Unknown
(typeMeta=1, raw=2, contentEncoding=3, contentType=4); field numbers below are those of
k8s.io/api core/v1 and k8s.io/apimachinery meta/v1 generated.proto.
"""

import datetime

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"


class ProtoError(ValueError):
    pass


def _varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def fields(buf):
    """Yields (field number, wire type, value) of one message: value is an int (varint,
    fixed) or bytes (length-delimited)."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ProtoError("length-delimited field %d overruns the message" % num)
            v, i = bytes(buf[i:i + n]), i + n
        elif wt == 1:
            if i + 8 > len(buf):
                raise ProtoError("truncated fixed64")
            v, i = int.from_bytes(buf[i:i + 8], "little"), i + 8
        elif wt == 5:
            if i + 4 > len(buf):
                raise ProtoError("truncated fixed32")
            v, i = int.from_bytes(buf[i:i + 4], "little"), i + 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        yield num, wt, v


def _str(v):
    try:
        return v.decode("utf-8")
    except (AttributeError, UnicodeDecodeError):
        raise ProtoError("a string field is not UTF-8")


def _signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def _time(v, micro=False):
    secs = nanos = 0
    for num, _wt, x in fields(v):
        if num == 1:
            secs = _signed(x)
        elif num == 2:
            nanos = x
    if secs == 0 and nanos == 0:
        return None  # Go's zero time is sent as an empty message; JSON would carry null
    t = datetime.datetime.fromtimestamp(secs, datetime.timezone.utc)
    if micro:
        return t.strftime("%Y-%m-%dT%H:%M:%S") + ".%06dZ" % (nanos // 1000)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


# message name -> {field number: (json name, kind)}; kind is "str", "int", a message name,
# "time"/"microtime", "map" (map<string,string>), or ("repeated", kind).
SCHEMA = {
    "ObjectMeta": {1: ("name", "str"), 2: ("generateName", "str"), 3: ("namespace", "str"),
                   5: ("uid", "str"), 6: ("resourceVersion", "str"),
                   8: ("creationTimestamp", "time"), 11: ("labels", "map"),
                   12: ("annotations", "map")},
    "ObjectReference": {1: ("kind", "str"), 2: ("namespace", "str"), 3: ("name", "str"),
                        4: ("uid", "str"), 5: ("apiVersion", "str"),
                        6: ("resourceVersion", "str"), 7: ("fieldPath", "str")},
    "EventSource": {1: ("component", "str"), 2: ("host", "str")},
    "EventSeries": {1: ("count", "int"), 2: ("lastObservedTime", "microtime")},
    "Event": {1: ("metadata", "ObjectMeta"), 2: ("involvedObject", "ObjectReference"),
              3: ("reason", "str"), 4: ("message", "str"), 5: ("source", "EventSource"),
              6: ("firstTimestamp", "time"), 7: ("lastTimestamp", "time"), 8: ("count", "int"),
              9: ("type", "str"), 10: ("eventTime", "microtime"), 11: ("series", "EventSeries"),
              12: ("action", "str"), 13: ("related", "ObjectReference"),
              14: ("reportingComponent", "str"), 15: ("reportingInstance", "str")},
}


def _value(kind, v):
    if kind == "str":
        return _str(v)
    if kind == "int":
        return _signed(v)
    if kind in ("time", "microtime"):
        return _time(v, kind == "microtime")
    if kind == "map":
        k = val = ""
        for num, _wt, x in fields(v):
            if num == 1:
                k = _str(x)
            elif num == 2:
                val = _str(x)
        return k, val
    return message(kind, v)


def message(name, buf):
    """Decodes @buf as message @name into a dict; unknown fields are skipped (as a server
    that does not know a newer field would drop it), empty strings and zero times left out."""
    out = {}
    for num, wt, v in fields(buf):
        spec = SCHEMA[name].get(num)
        if spec is None:
            continue
        key, kind = spec
        if wt != (0 if kind == "int" else 2):
            raise ProtoError("%s.%s: wrong wire type %d" % (name, key, wt))
        if kind == "map":
            mk, mv = _value(kind, v)
            out.setdefault(key, {})[mk] = mv
            continue
        val = _value(kind, v)
        if val not in (None, ""):   # what JSON's omitempty leaves out
            out[key] = val
    return out


# the Kind in the envelope -> the message its raw bytes hold
KINDS = {"Event": "Event"}


def decode(body):
    """A protobuf request body -> the object as the JSON API would carry it. Raises ProtoError
    (a ValueError) for anything else, naming what was wrong."""
    if not body.startswith(MAGIC):
        raise ProtoError("no k8s protobuf magic")
    api_version = kind = ""
    raw = None
    for num, _wt, v in fields(body[len(MAGIC):]):
        if num == 1:
            for n2, _w2, x in fields(v):
                if n2 == 1:
                    api_version = _str(x)
                elif n2 == 2:
                    kind = _str(x)
        elif num == 2:
            raw = v
        elif num == 3 and v:
            raise ProtoError("content encoding %r is not supported" % _str(v))
    if kind not in KINDS:
        raise ProtoError("protobuf body of kind %r is not supported by the emulator" % kind)
    obj = message(KINDS[kind], raw or b"")
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    return obj
