#!/usr/bin/env python3
"""Where an engine process's memory goes: a breakdown by mapping of each engine process of one
probe run at its peak (docs/performance.md, "Memory").

Runs the command given after `--` (default: build-gpu/bin/precision-probe -q) and, every
--sample-ms, reads /proc/PID/smaps of each process of its tree whose executable's name contains
--match (default precision-probe-engine). Per process it keeps the sample with the most
Private_Dirty (what the process wrote itself) and sorts its mappings into kinds:

  LIBRARY (written)  a shared library's pages the process wrote: its relocations (.data.rel.ro,
                     the GOT), .data and .bss; LIBRARY named for LibTorch's, CUDA's and NVIDIA's,
                     the rest summed as "other libraries (written)"
  libraries (read-only)  every library's pages shared with the file (code, read-only data)
  heap               [heap]: malloc's arena (inputs and references made on the host, the
                     driver's and LibTorch's host state)
  anonymous          mappings with no name: larger mallocs, thread stacks, the CUDA driver's
                     host-side state and the kernels it loaded (module images), pinned memory
  /dev/nvidia*       the driver's device-file mappings (host-visible device memory, doorbells)
  other              [stack], memfd, vdso and what else there is

Prints, per process, Pss, Private_Dirty and Rss in MiB per kind, largest first; then, with the
command run traced (PRECISION_PROBE_TRACE=1), the process's Private_Dirty at each of its trace
events (the first sample at or after it: the kernel's start time of the process plus the event's
milliseconds, on CLOCK_BOOTTIME), so that what each phase added shows; writes memory-map.json. Linux only; needs no privilege for the command's own processes.

  usage: bench/memory_map.py [--match precision-probe-engine] [--sample-ms 20] [--out DIR]
                             [-- COMMAND ARGS...]
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from startup import descendants  # noqa: E402

NAMED = ("libtorch_cuda", "libtorch_cpu", "libtorch", "libc10_cuda", "libc10", "libcublasLt",
         "libcublas", "libcudnn", "libnccl", "libcusparse", "libcufft", "libcurand", "libcusolver",
         "libnvrtc", "libnvJitLink", "libcudart", "libcupti", "libcuda", "libnvidia", "libgomp")
FIELDS = ("Rss", "Pss", "Private_Dirty")


def kind_of(path, private_dirty_kib):
    """The kind a mapping counts under (see the module's text)."""
    if not path:
        return "anonymous"
    if path == "[heap]":
        return "heap"
    if path.startswith("/dev/nvidia"):
        return "/dev/nvidia*"
    if path.startswith("/") and ".so" in os.path.basename(path):
        if private_dirty_kib == 0:
            return "libraries (read-only)"
        base = os.path.basename(path)
        for name in NAMED:
            if base.startswith(name):  # longer names first: libtorch_cuda before libtorch
                return f"{name} (written)"
        return "other libraries (written)"
    return "other"


def read_smaps(pid):
    """{kind: {Rss, Pss, Private_Dirty}} in KiB for `pid`, or None where it is gone."""
    try:
        with open(f"/proc/{pid}/smaps") as f:
            return parse_smaps(f.read())
    except OSError:
        return None


def parse_smaps(text):
    """{kind: {Rss, Pss, Private_Dirty}} in KiB, summed over the mappings of an smaps text."""
    kinds, path, fields = {}, None, {}

    def flush():
        if path is None:
            return
        k = kinds.setdefault(kind_of(path, fields.get("Private_Dirty", 0)), dict.fromkeys(FIELDS, 0))
        for name in FIELDS:
            k[name] += fields.get(name, 0)

    for line in text.splitlines():
        head = line.split(maxsplit=1)[0] if line else ""
        if "-" in head and not head.endswith(":"):  # a mapping's header: ADDR-ADDR PERMS OFF DEV INODE [PATH]
            flush()
            parts = line.split(maxsplit=5)
            path, fields = (parts[5] if len(parts) > 5 else ""), {}
        elif head.rstrip(":") in FIELDS:
            fields[head.rstrip(":")] = int(line.split()[1])
    flush()
    return kinds


def executable(pid):
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        return ""


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return " ".join(p.decode(errors="replace") for p in f.read().split(b"\0") if p)
    except OSError:
        return ""


def boot_ms():
    return time.clock_gettime(time.CLOCK_BOOTTIME) * 1000


def sample(command, match, interval_s, trace_file):
    """Run `command` traced; per matching process of its tree, read when first seen: its
    command line (again while empty) and its start (`start_ms`); then every sample (`series`: boot ms, Private_Dirty
    KiB) and the one with the most Private_Dirty (`kinds`, `dirty`, `at_s`)."""
    procs = {}
    t0 = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=trace_file,
                             env={**os.environ, "PRECISION_PROBE_TRACE": "1"})
    while child.poll() is None:
        for pid in descendants(child.pid):
            if pid not in procs and match not in executable(pid):
                continue
            kinds = read_smaps(pid)
            if not kinds:
                continue
            dirty = sum(k["Private_Dirty"] for k in kinds.values())
            proc = procs.setdefault(pid, {"cmdline": cmdline(pid), "start_ms": start_boot_ms(pid),
                                          "series": [], "kinds": None, "dirty": -1, "at_s": 0.0})
            if not proc["cmdline"]:  # empty while its exec is under way: read again
                proc["cmdline"] = cmdline(pid)
            proc["series"].append((boot_ms(), dirty))
            if dirty > proc["dirty"]:
                proc.update(kinds=kinds, dirty=dirty, at_s=time.monotonic() - t0)
        time.sleep(interval_s)
    return child.returncode, time.monotonic() - t0, procs


def start_boot_ms(pid):
    """When `pid` started, in ms on CLOCK_BOOTTIME (field 22 of /proc/PID/stat), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2:].split()[19]) * 1000 / os.sysconf("SC_CLK_TCK")


def timeline(trace_text, pid, start_ms, samples, limit=40):
    """[(event, ms, Private_Dirty KiB or None)] of `pid`'s trace lines ("trace: NAME:PID  MS ms
    FAULTS flt  EVENT"), each with the first sample at or after it."""
    rows = []
    for line in trace_text.splitlines():
        parts = line.split(maxsplit=6)
        if len(parts) < 7 or parts[0] != "trace:" or not parts[1].endswith(f":{pid}"):
            continue
        at = start_ms + float(parts[2])
        after = [d for t, d in samples if t >= at]
        rows.append((parts[6], float(parts[2]), after[0] if after else None))
    return rows[:limit]


def print_process(pid, line, kinds, at_s):
    mib = lambda kib: kib / 1024  # noqa: E731
    total = {name: sum(k[name] for k in kinds.values()) for name in FIELDS}
    print(f"{line[:100]}  (pid {pid}, peak at {at_s:.2f} s)")
    print(f"  {'kind':32} {'Pss':>8} {'Private_Dirty':>14} {'Rss':>8}  MiB")
    for kind, k in sorted(kinds.items(), key=lambda kv: (-kv[1]["Private_Dirty"], -kv[1]["Pss"])):
        if k["Pss"] < 52 and k["Private_Dirty"] < 52:  # under 0.05 MiB: left out of the table
            continue
        print(f"  {kind:32} {mib(k['Pss']):8.1f} {mib(k['Private_Dirty']):14.1f} {mib(k['Rss']):8.1f}")
    print(f"  {'total':32} {mib(total['Pss']):8.1f} {mib(total['Private_Dirty']):14.1f} {mib(total['Rss']):8.1f}")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    command = ["build-gpu/bin/precision-probe", "-q"]
    if "--" in argv:
        command = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--match", default="precision-probe-engine")
    parser.add_argument("--sample-ms", type=float, default=20)
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    if not command:
        sys.exit("bench: nothing to run after --")
    if args.sample_ms <= 0:
        sys.exit(f"bench: --sample-ms {args.sample_ms}: give a positive interval")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "memory-map-trace.txt"), "w+") as trace_file:
        try:
            rc, wall, procs = sample(command, args.match, args.sample_ms / 1000, trace_file)
        except OSError as e:
            sys.exit(f"bench: {command[0]}: {e.strerror}")
        trace_file.seek(0)
        trace_text = trace_file.read()
    print(f"{' '.join(command)}: exit {rc} in {wall:.2f} s; {len(procs)} process(es) matching {args.match!r}")
    report = []
    for pid, proc in procs.items():
        print_process(pid, proc["cmdline"], proc["kinds"], proc["at_s"])
        rows = timeline(trace_text, pid, proc["start_ms"] or 0.0, proc["series"])
        for event, ms, dirty in rows:
            print(f"    {ms:8.1f} ms  {'-' if dirty is None else f'{dirty / 1024:7.1f}':>7} MiB dirty  {event[:70]}")
        report.append({"pid": pid, "cmdline": proc["cmdline"], "peak_at_s": proc["at_s"],
                       "kinds_kib": proc["kinds"], "timeline": rows})
    with open(os.path.join(args.out, "memory-map.json"), "w") as f:
        json.dump({"command": command, "exit": rc, "wall_s": wall, "processes": report}, f, indent=1)
    return 0 if procs else 1


if __name__ == "__main__":
    sys.exit(main())
