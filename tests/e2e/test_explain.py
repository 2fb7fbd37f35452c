"""`cpuzombie explain`: pasted kernel log text in each prefix style into the reset's cause, queue
and the CPU/task that starved it. The pastes are tests/fixtures/klog (SOURCES there names the
source of every line's format)."""
import json
import os
import random
import re

import pytest

from conftest import FIXTURES

KLOG = os.path.join(FIXTURES, "klog")


def explain(cz, name, *args, check=1):
    return cz("explain", os.path.join(KLOG, name), *args, check=check)


def test_incident_signature_dmesg(cz):
    """The incident's own lines (driver 2.11.0g): poll starvation on q5 for 6.6 s, reset completed."""
    r = explain(cz, "incident-2.11.0g.dmesg")
    first = r.out.splitlines()[0]
    assert first == ("ENA reset 1 (line 8, [1034155.120725]): eth0 q5 Tx stopped 6.6s, NAPI "
                     "scheduled but not run -> poll starvation -> reset (completed, ENA v2.11.0g)")
    assert "reason counter: suspected_poll_starvation" in r.out
    # the statistics dump went through the ethtool -S verdict
    assert "statistics dump at the reset (29 counters" in r.out
    j = json.loads(explain(cz, "incident-2.11.0g.dmesg", "--json").out)
    (x,) = j["resets"]
    assert (x["interface"], x["pci"], x["queue"], x["outcome"]) == ("eth0", "0000:20:03.0", 5,
                                                                     "completed")
    assert x["poll_starvation"] and x["napi_not_run_ms"] == 6596
    assert x["reason"] == "suspected_poll_starvation" and x["driver_version"] == "v2.11.0g"
    assert x["statistics"]["resets"] == 1 and x["statistics"]["since_driver_load"]
    moved = {m["name"]: m["delta"] for m in x["statistics"]["moved"]}
    assert moved["suspected_poll_starvation"] == 1 and moved["tx_timeout"] == 1
    assert j["statistics_lines"] == 29
    assert [e["kind"] for e in j["events"]][:3] == ["netdev_watchdog", "ena_tx_timeout",
                                                    "ena_poll_starvation"]


def test_journal_names_cpu_and_task(cz):
    """journalctl -k: kubelet stuck on cpu3 for 23 s, then lost Tx completions on q0; lines of other
    programs (kubelet's own, a forged `logger` line that looks like the kernel's) are skipped."""
    r = explain(cz, "lost-tx-softlockup.journal")
    assert ("cpu3 soft lockup 23s (kubelet) -> eth0 q0 Tx not completed (3) -> lost Tx "
            "completions 156 > 128 -> reset (completed)") in r.out.splitlines()[0]
    assert "(3 lines of other programs skipped)" in r.out
    assert "forged" not in r.out and "99s" not in r.out
    j = json.loads(explain(cz, "lost-tx-softlockup.journal", "--json").out)
    (x,) = j["resets"]
    assert x["lockup"]["kind"] == "soft_lockup" and x["lockup"]["cpu"] == 3
    assert x["lockup"]["task"] == "kubelet" and x["lockup"]["pid"] == 2212
    assert x["lost_tx"] == 156 and x["lost_tx_threshold"] == 128 and x["queue"] == 0
    assert j["skipped_lines"] == 3 and j["lockups"] == 1


def test_relative_stamps_and_napi_cpu(cz):
    """dmesg -H with driver 2.17.0g: linked through the NAPI CPU the driver names."""
    r = explain(cz, "lost-tx-2.17.dmesg-H")
    assert ("cpu7 soft lockup 22s (kworker/7:1) -> eth0 q2 Tx not completed (12) [napi cpu7] -> "
            "lost Tx completions 156 > 128 -> reset (completed, ENA v2.17.0g)") in r.out
    j = json.loads(explain(cz, "lost-tx-2.17.dmesg-H", "--json").out)
    assert j["resets"][0]["napi_cpu"] == 7 and j["resets"][0]["lockup"]["cpu"] == 7


def test_dmesg_T_keepalive_and_hung_task(cz):
    r = explain(cz, "keepalive-hungtask.dmesg-T")
    assert "eth1 -> keep-alive watchdog timeout -> reset (completed)" in r.out
    assert "wd_expired +1" in r.out
    assert "[Tue Jul 14 14:19:36 2026] task blocked 120s (jbd2/nvme0n1p1-) pid 412" in r.out


def test_short_iso_failed_reset_and_rcu(cz):
    r = explain(cz, "txtimeout-failed-rcu.short-iso")
    assert "eth0 q3 Tx stopped, NAPI last ran 5.4s ago -> Tx timeout (netdev watchdog) -> reset (FAILED)" in r.out
    j = json.loads(explain(cz, "txtimeout-failed-rcu.short-iso", "--json").out)
    assert j["resets"][0]["outcome"] == "failed" and j["skipped_lines"] == 1
    assert {e["kind"] for e in j["events"]} >= {"netdev_watchdog", "rcu_stall", "ena_reset_failed"}


def test_kmsg_records_user_facility_ignored(cz):
    """`cat /dev/kmsg`: only facility 0 counts; the user-facility 'Trigger reset' and 'soft
    lockup' records (any root process can write those) are skipped."""
    j = json.loads(explain(cz, "keepalive.kmsg", "--json").out)
    assert j["skipped_lines"] == 2 and j["lockups"] == 0
    assert [e["kind"] for e in j["events"]] == ["ena_keep_alive", "ena_reset_trigger", "ena_reset"]


def test_quiet_is_zero(cz):
    r = explain(cz, "quiet-boot.dmesg", check=0)
    assert r.out.strip() == "0 ENA resets, 0 lockup/stall/hung-task/watchdog events in 8 kernel lines"


def test_stdin_crlf_paste(cz):
    """A ticket paste from a Windows browser: CRLF line ends, read from stdin."""
    with open(os.path.join(KLOG, "lost-tx-softlockup.journal")) as f:
        text = f.read().replace("\n", "\r\n")
    r = cz("explain", "-", input=text, check=1)
    assert "cpu3 soft lockup 23s (kubelet) -> eth0 q0" in r.out


def test_unreadable_input_exits_2(cz, tmp_path):
    r = cz("explain", str(tmp_path / "missing.log"), check=2)
    assert r.out == "" and "missing.log" in r.err and len(r.err.strip().splitlines()) == 1
    r = cz("explain", str(tmp_path), check=2)  # a directory: read() fails with EISDIR
    assert "Failed to read" in r.err
    r = cz("explain", check=2)
    assert "usage: cpuzombie explain" in r.err


def test_garbage_and_huge_input_bounded(cz, tmp_path):
    rnd = random.Random(15)
    junk = tmp_path / "junk.bin"
    raw = bytes(rnd.getrandbits(8) for _ in range(1 << 20))
    junk.write_bytes(raw)
    # random bytes hold NULs: not text at all, unreadable input (exit 2 naming the line)
    r = cz("explain", str(junk), check=2)
    assert r.out == "" and re.search(re.escape(str(junk)) + r":\d+: NUL byte", r.err), r.err
    # the same garbage without NULs reads as text that holds no kernel event
    junk.write_bytes(raw.replace(b"\0", b"\1"))
    r = cz("explain", str(junk), check=0)
    assert "0 ENA resets" in r.out
    # more events than are kept: the rest are counted, the verdict still comes
    line = ("[  100.000000] ena 0000:00:05.0 eth0: Found a Tx that wasn't completed on time, qid 1, "
            "index 7. 5012000 usecs have passed since last napi execution. Missing Tx timeout "
            "value 5000 msecs\n")
    huge = tmp_path / "huge.log"
    with open(huge, "w") as f:
        f.write(line * 60000)
        f.write("x" * 5000 + "\n")  # an over-long line is cut, not fatal
        f.write("[  101.000000] ena 0000:00:05.0 eth0: Keep alive watchdog timeout.\n")
    j = json.loads(cz("explain", str(huge), "--json", check=1).out)
    # the last 5000 places are kept for what is not a statistics or missed-Tx line: the flood
    # cannot hide the reset after it
    assert j["dropped_events"] == 60000 - 45000
    assert j["lines"] == 60002 and j["resets"][0]["missed_tx"] == 45000
    assert j["resets"][0]["reset"] and j["resets"][0]["reason"] == "keep_alive_to"


def test_dump_only_paste_through_the_ethtool_verdict(cz):
    """Only the statistics dump was pasted, behind journal prefixes and without the driver's
    bus id (`eth0: queue_2_tx_missed_tx: 248`): the driver prints it only at a reset, and its
    counters go through the same verdict as `ethtool -S` (names from ena_ethtool.c)."""
    pre = "Jul 14 14:17:15 ip-10-0-1-23 kernel: "
    text = "".join(pre + l + "\n" for l in (
        "eth0: total_resets: 1", "eth0: tx_timeout: 0", "eth0: suspend: 0",
        "eth0: missing_tx_cmpl: 1", "eth0: interface_up: 1", "eth0: queue_2_tx_cnt: 1201133",
        "eth0: queue_2_tx_missed_tx: 248"))
    j = json.loads(cz("explain", "-", "--json", input=text, check=1).out)
    (x,) = j["resets"]
    assert x["reset"] and x["interface"] == "eth0" and x["statistics"]["counters"] == 7
    moved = {m["name"]: m["delta"] for m in x["statistics"]["moved"]}
    assert moved == {"total_resets": 1, "missing_tx_cmpl": 1, "queue_2_tx_missed_tx": 248,
                     "interface_up": 1}
    assert x["chain"] == ("eth0 -> statistics: missing Tx completions q2; tx_missed_tx q2 +248 "
                          "-> reset (outcome not logged)")
