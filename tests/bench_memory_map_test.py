#!/usr/bin/env python3
"""bench/memory_map.py without a GPU: an smaps text of every kind of mapping sorted into its kinds
and summed; a trace's events of one process found and given the first sample at or after them;
and a whole run against a real child that writes 48 MiB 0.2 s after a first trace line and says so in a
second, whose peak and timeline must show it. Nothing is left behind (the output goes to a
temporary directory; the child is the command's and is reaped with it).

    bench_memory_map_test.py MEMORY_MAP_PY
"""

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pychecks import check, finish, load as load_module  # noqa: E402


def load(path):
    return load_module(path, "memory_map")


def mapping(path, rss, pss, dirty):
    return (f"7f0000000000-7f0000100000 rw-p 00000000 08:01 1234                       {path}\n"
            f"Size:               1024 kB\nRss:  {rss} kB\nPss:  {pss} kB\nShared_Clean:  0 kB\n"
            f"Private_Dirty:  {dirty} kB\nVmFlags: rd wr mr mw me ac\n")


SMAPS = "".join([
    mapping("/opt/torch/lib/libtorch_cuda.so", 900, 450, 0),        # code: read-only, shared
    mapping("/opt/torch/lib/libtorch_cuda.so", 300, 300, 300),      # its relocations
    mapping("/opt/torch/lib/libtorch_cpu.so", 100, 100, 100),
    mapping("/opt/torch/lib/libcudnn_ops.so.9", 40, 40, 40),
    mapping("/usr/lib/x86_64-linux-gnu/libcudart.so.13", 8, 8, 8),   # not libcuda's
    mapping("/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", 20, 20, 20),
    mapping("/usr/lib/x86_64-linux-gnu/libm.so.6", 4, 4, 4),
    mapping("[heap]", 64, 64, 64),
    mapping("", 2048, 2048, 2000),
    mapping("", 16, 16, 16),
    mapping("/dev/nvidiactl", 12, 12, 0),
    mapping("/dev/nvidia0", 4, 4, 4),
    mapping("[stack]", 132, 132, 132),
])


def part_parse(m):
    kinds = m.parse_smaps(SMAPS)
    want = {"libraries (read-only)": 450, "libtorch_cuda (written)": 300, "libtorch_cpu (written)": 100,
            "libcudnn (written)": 40, "libcudart (written)": 8, "libcuda (written)": 20,
            "other libraries (written)": 4, "heap": 64, "anonymous": 2064, "/dev/nvidia*": 16, "other": 132}
    got = {k: v["Pss"] for k, v in kinds.items()}
    check("every mapping sorted into its kind, Pss summed", got == want, got)
    check("anonymous mappings' Private_Dirty summed", kinds["anonymous"]["Private_Dirty"] == 2016, kinds["anonymous"])
    check("a library's written pages apart from its read-only ones",
          kinds["libtorch_cuda (written)"]["Rss"] == 300 and kinds["libraries (read-only)"]["Rss"] == 900, kinds)
    check("an empty smaps (a process gone between listing and reading) is no kinds", m.parse_smaps("") == {})


def part_timeline(m):
    trace = ("trace: precision-probe:10             5.0 ms     200 flt  probe start\n"
             "trace: precision-probe-engine:11     10.0 ms     100 flt  main\n"
             "trace: precision-probe-engine:11    300.0 ms   20000 flt  LibTorch loaded\n"
             "trace: precision-probe-engine:12    300.0 ms   20000 flt  LibTorch loaded\n"
             "trace: precision-probe-engine:11    900.0 ms   30000 flt  plan 0 done\n")
    samples = [(1000.0 + 50, 3000), (1000.0 + 320, 90000), (1000.0 + 600, 120000)]
    rows = m.timeline(trace, 11, 1000.0, samples)
    check("only the process's own events, each with the first sample at or after it",
          rows == [("main", 10.0, 3000), ("LibTorch loaded", 300.0, 90000), ("plan 0 done", 900.0, None)], rows)


CHILD = r"""
import os, sys, time
def start_ms():
    stat = open('/proc/self/stat').read()
    return int(stat[stat.rfind(')') + 2:].split()[19]) * 1000 / os.sysconf('SC_CLK_TCK')
def say(what):
    ms = time.clock_gettime(time.CLOCK_BOOTTIME) * 1000 - start_ms()
    sys.stderr.write(f"trace: child:{os.getpid()} {ms:10.1f} ms 0 flt  {what}\n"); sys.stderr.flush()
time.sleep(0.3)
say('before')
time.sleep(0.2)  # a sample or more before the writing starts
data = b'\x01' * (48 << 20)
say('written')
time.sleep(0.6)
"""


def part_run(path):
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-c", f"import subprocess, sys; subprocess.run([sys.executable, '-c', {CHILD!r}])"]
        done = subprocess.run([sys.executable, path, "--match", "python", "--sample-ms", "10", "--out", out, "--",
                               *command], capture_output=True, text=True, timeout=120)
        check("exit 0 with a process matched", done.returncode == 0, done.stderr)
        with open(os.path.join(out, "memory-map.json")) as f:
            report = json.load(f)
        procs = report["processes"]
        check("one process of the tree matched (the child, not the command itself)", len(procs) == 1, procs)
        if len(procs) != 1:
            return
        anon = procs[0]["kinds_kib"].get("anonymous", {}).get("Private_Dirty", 0) + \
            procs[0]["kinds_kib"].get("heap", {}).get("Private_Dirty", 0)
        check("its peak holds the 48 MiB it wrote", anon >= 48 * 1024, procs[0]["kinds_kib"])
        events = {event: dirty for event, _, dirty in procs[0]["timeline"]}
        check("its trace events found", set(events) == {"before", "written"}, procs[0]["timeline"])
        if set(events) == {"before", "written"} and None not in events.values():
            check("the timeline shows the 48 MiB added between them", events["written"] - events["before"] >= 40 * 1024,
                  events)
        check("the table printed", "anonymous" in done.stdout and "written" in done.stdout, done.stdout)
        bad = subprocess.run([sys.executable, path, "--sample-ms", "0", "--", "true"], capture_output=True, text=True)
        check("a bad interval is refused in one line", bad.returncode != 0 and "--sample-ms" in bad.stderr, bad.stderr)


def main():
    path = sys.argv[1]
    m = load(path)
    part_parse(m)
    part_timeline(m)
    part_run(path)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
