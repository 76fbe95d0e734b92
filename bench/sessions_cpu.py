#!/usr/bin/env python3
"""One LibTorch per run, measured on the CPU: N device plans run by N engine processes of one plan
each (the probe's workers before issue 39) against one engine session running the N plans at once
(a thread each), in alternating rounds. Each plan is the CPU's smoke tests (fp32, fp16, bf16,
int8) on the LibTorch named. Reports per N the median wall time until every plan is done, the CPU
time of all the processes, and the peak of their summed Pss (/proc/PID/smaps_rollup, sampled every
10 ms), and the session's ratios to the processes'. A proxy for GPUs: what a further device costs
when it brings its own LibTorch, and when it does not (docs/performance.md).

  usage: bench/sessions_cpu.py --engine build/bin/precision-probe-engine --libtorch LIB
                               [--counts 1,2,4,8] [--runs 5] [--cpus N]
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))


def plan_line(slot):
    return json.dumps({"protocol": 7, "slot": slot, "kind": "cpu", "index": -1,
                       "smoke": ["fp32", "fp16", "bf16", "int8"], "seed": slot + 1})


def pss_kib(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(argv_list, inputs, cpus):
    """Starts each argv with its stdin text, waits until every one exits; wall s, CPU s, peak
    summed Pss MiB."""
    usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    procs = []
    for argv, text in zip(argv_list, inputs):
        if cpus:
            argv = ["taskset", "-c", cpus] + argv
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
        p.stdin.write(text)
        p.stdin.close()
        procs.append(p)
    peak = 0
    while any(p.poll() is None for p in procs):
        peak = max(peak, sum(pss_kib(p.pid) for p in procs if p.poll() is None))
        time.sleep(0.01)
    wall = time.perf_counter() - start
    for p, text in zip(procs, inputs):
        out = p.stdout.read()
        if p.returncode != 0 or out.count('"type":"done"') != text.count('"slot"'):
            sys.exit(f"an engine did not answer every plan (exit {p.returncode})")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
    return wall, cpu, peak / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True)
    ap.add_argument("--libtorch", required=True)
    ap.add_argument("--counts", default="1,2,4,8")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cpus", default="", help="taskset CPU list, e.g. 0")
    a = ap.parse_args()
    engine = [a.engine, "--worker", "cpu", "--libtorch", a.libtorch]
    rows = []
    for n in [int(c) for c in a.counts.split(",")]:
        separate, session = [], []
        for _ in range(a.runs):
            separate.append(run([engine] * n, [plan_line(i) + "\n" for i in range(n)], a.cpus))
            session.append(run([engine], ["".join(plan_line(i) + "\n" for i in range(n))], a.cpus))
        med = lambda rs, k: statistics.median(r[k] for r in rs)
        rows.append((n, [med(separate, k) for k in range(3)], [med(session, k) for k in range(3)]))
    print(f"one CPU list: {a.cpus or 'all'}; {a.runs} alternating runs; medians")
    print(f"{'plans':>5}  {'processes: wall s':>17} {'CPU s':>6} {'Pss MiB':>8}  "
          f"{'session: wall s':>15} {'CPU s':>6} {'Pss MiB':>8}  {'ratios wall/CPU/Pss':>20}")
    for n, p, s in rows:
        print(f"{n:>5}  {p[0]:>17.3f} {p[1]:>6.2f} {p[2]:>8.0f}  {s[0]:>15.3f} {s[1]:>6.2f} "
              f"{s[2]:>8.0f}  {s[0]/p[0]:>6.2f} {s[1]/p[1]:>6.2f} {s[2]/p[2]:>6.2f}")


if __name__ == "__main__":
    main()
