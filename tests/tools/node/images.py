# SPDX-License-Identifier: MIT
"""Images for the test node without a registry: archives `ctr -n k8s.io images import` loads
into the node's containerd, named as the chart and the kubelet name them.

- scratch_archive(): a docker-archive of one layer made here from files on this machine (the
  sandbox's pause binary, compiled from pause.c; node-problem-detector's binary built from its
  Go module with the shipped config/npd/*.json under /config, as upstream's image has them);
- podman_archive(): an image podman built (`make image`: ours), saved as it is named there (the
  node tags it with the chart's name after the import).
"""

import hashlib
import io
import json
import os
import subprocess
import tarfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
PAUSE_IMAGE = "registry.k8s.io/pause:3.10.2"     # containerd 2.4's default sandbox


def _layer(files):
    """A tar layer (bytes) of @files: {path in image: (host path or bytes, mode)}; the parent
    directories are made, every entry owned by root."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        dirs = set()
        for path in sorted(files):
            parts = path.strip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    ti = tarfile.TarInfo(d)
                    ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, 0
                    t.addfile(ti)
            src, mode = files[path]
            data = src if isinstance(src, bytes) else open(src, "rb").read()
            ti = tarfile.TarInfo(path.strip("/"))
            ti.size, ti.mode, ti.mtime = len(data), mode, 0
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def scratch_archive(out, name, files, entrypoint, user=None):
    """Writes a docker-archive at @out: image @name (repository:tag) FROM scratch with one
    layer of @files (see _layer) and @entrypoint; returns @out."""
    layer = _layer(files)
    diff = "sha256:" + hashlib.sha256(layer).hexdigest()
    cfg = {"architecture": "amd64", "os": "linux",
           "config": {"Entrypoint": entrypoint, "Env": ["PATH=/"],
                      **({"User": user} if user else {})},
           "rootfs": {"type": "layers", "diff_ids": [diff]},
           "history": [{"created_by": "tests/tools/node/images.py"}]}
    cfg_b = json.dumps(cfg, sort_keys=True).encode()
    cfg_name = hashlib.sha256(cfg_b).hexdigest() + ".json"
    manifest = json.dumps([{"Config": cfg_name, "RepoTags": [name],
                            "Layers": ["layer.tar"]}]).encode()
    with tarfile.open(out, "w") as t:
        for n, data in ((cfg_name, cfg_b), ("layer.tar", layer), ("manifest.json", manifest)):
            ti = tarfile.TarInfo(n)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            t.addfile(ti, io.BytesIO(data))
    return out


def pause_archive(workdir):
    """The sandbox image: pause.c compiled static, as PAUSE_IMAGE."""
    exe = os.path.join(workdir, "pause")
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-Werror", "-o", exe,
                    os.path.join(HERE, "pause.c")], check=True)
    return scratch_archive(os.path.join(workdir, "pause.tar"), PAUSE_IMAGE,
                           {"/pause": (exe, 0o755)}, ["/pause"], user="65535:65535")


def npd_archive(workdir, binary, name):
    """node-problem-detector's image as @name: its (static) @binary at /node-problem-detector,
    where the chart's command runs it, and the shipped custom-plugin configs under /config."""
    files = {"/node-problem-detector": (binary, 0o755)}
    npd = os.path.join(ROOT, "config", "npd")
    for f in sorted(os.listdir(npd)):
        if f.endswith(".json"):
            files["/config/" + f] = (os.path.join(npd, f), 0o644)
    return scratch_archive(os.path.join(workdir, "npd.tar"), name, files,
                           ["/node-problem-detector"])


def podman_archive(workdir, local):
    """podman's image @local (built by `make image`), saved as a docker-archive."""
    env = dict(os.environ, CONTAINERS_CONF=os.environ.get(
        "CONTAINERS_CONF", os.path.join(ROOT, "tests", "tools", "podman", "containers.conf")))
    out = os.path.join(workdir, "image.tar")
    subprocess.run(["podman", "save", "-q", "--format", "docker-archive", "-o", out, local],
                   check=True, env=env)
    return out
