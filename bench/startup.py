#!/usr/bin/env python3
"""Start-up speed of precision-probe against the checks people run today, in the same run.

Measures wall time (median of N runs, plus the first, cold run) of:
  quick      precision-probe --quick                      vs  nvidia-smi --query-gpu=compute_cap
  full       precision-probe (smoke tests on every GPU)   vs  the Python check (import torch,
                                                              fp16 and bf16 3x3 matmuls)
and the peak RSS of the largest process of each (the probe's worker included). With --baseline
(another build of the probe, an earlier commit's), its full and --quick runs alternate with this
build's, run for run, and the table ends with the change. Prints a table and writes
bench-startup.json. Targets (docs/performance.md): full <= 1.0 s and >= 6x faster than the Python
check; --quick <= 0.15 s.

  usage: bench/startup.py [--probe build-gpu/bin/precision-probe] [--baseline PROBE] [--runs 5]
                          [--out DIR]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

PYTHON_CHECK = (
    "import torch\n"
    "a = torch.randn(3, 3, device='cuda', dtype=torch.float16)\n"
    "print('FP16 ok', (a @ a).float().sum().item())\n"
    "b = a.bfloat16()\n"
    "print('BF16 ok', (b @ b).float().sum().item(), torch.cuda.is_bf16_supported())\n"
)


# Runs a command in a fresh process and reports its wall time, exit code and the peak RSS of its
# largest descendant (RUSAGE_CHILDREN of a process that ran only that command).
WRAPPER = (
    "import resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
    "wall = time.perf_counter() - start\n"
    "rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "sys.stderr.write(p.stderr[-300:])\n"
    "print(wall, p.returncode, rss)\n"
)


def run_once(argv):
    """Wall seconds, exit code, peak RSS (MiB) and the stderr tail of one run."""
    proc = subprocess.run([sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=True)
    wall, code, rss_kib = proc.stdout.split()
    return float(wall), int(code), int(rss_kib) / 1024.0, proc.stderr.strip()


def measure(name, argv, runs):
    return summarise(name, argv, [run_once(argv) for _ in range(runs)])


def measure_alternating(pairs, runs):
    """Runs each (name, argv) of `pairs` once per round, round after round, so that drift in the
    machine's state falls on all of them alike."""
    results = {name: [] for name, _ in pairs}
    for _ in range(runs):
        for name, argv in pairs:
            results[name].append(run_once(argv))
    return [summarise(name, argv, results[name]) for name, argv in pairs]


def summarise(name, argv, results):
    walls = [r[0] for r in results]
    codes = sorted({r[1] for r in results})
    return {
        "name": name,
        "argv": argv,
        "cold_s": walls[0],
        "median_s": statistics.median(walls),
        "min_s": min(walls),
        "exit_codes": codes,
        "peak_rss_mib": max(r[2] for r in results),
        "stderr": results[-1][3],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", help="another build of the probe to compare with, run for run")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    if not os.path.exists(args.probe):
        sys.exit(f"bench: {args.probe} not found (build first: ./dev gpu-test)")

    rows = []
    # Each pair is measured in the same run, alternating nothing else: the reference first.
    if shutil.which("nvidia-smi"):
        rows.append(measure("nvidia-smi compute_cap", ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv"], args.runs))
    if args.baseline:
        rows += measure_alternating([("precision-probe --quick", [args.probe, "--quick", "--format", "json"]),
                                     ("baseline --quick", [args.baseline, "--quick", "--format", "json"])], args.runs)
    else:
        rows.append(measure("precision-probe --quick", [args.probe, "--quick", "--format", "json"], args.runs))
    rows.append(measure("python3 torch fp16/bf16 check", [sys.executable, "-c", PYTHON_CHECK], max(2, args.runs // 2)))
    if args.baseline:
        rows += measure_alternating([("precision-probe (full)", [args.probe, "--format", "json"]),
                                     ("baseline (full)", [args.baseline, "--format", "json"])], args.runs)
    else:
        rows.append(measure("precision-probe (full)", [args.probe, "--format", "json"], args.runs))
    rows.append(measure("precision-probe --no-amp", [args.probe, "--no-amp", "--format", "json"], args.runs))

    by_name = {r["name"]: r for r in rows}
    full = by_name["precision-probe (full)"]["median_s"]
    python = by_name["python3 torch fp16/bf16 check"]["median_s"]
    quick = by_name["precision-probe --quick"]["median_s"]
    no_amp = by_name["precision-probe --no-amp"]["median_s"]
    summary = {
        "full_s": full,
        "python_check_s": python,
        "speedup_vs_python": python / full,
        "quick_s": quick,
        "amp_cost_s": full - no_amp,
        "targets": {
            "full_at_most_1s": full <= 1.0,
            "full_6x_faster_than_python": python / full >= 6.0,
            "quick_at_most_0.15s": quick <= 0.15,
            "amp_at_most_0.3s": full - no_amp <= 0.3,
        },
    }
    if args.baseline:
        summary["baseline_full_s"] = by_name["baseline (full)"]["median_s"]
        summary["baseline_quick_s"] = by_name["baseline --quick"]["median_s"]
        summary["full_change"] = full / summary["baseline_full_s"] - 1.0
        summary["quick_change"] = quick / summary["baseline_quick_s"] - 1.0
    if "nvidia-smi compute_cap" in by_name:
        summary["nvidia_smi_s"] = by_name["nvidia-smi compute_cap"]["median_s"]
        summary["quick_vs_nvidia_smi"] = quick / summary["nvidia_smi_s"]

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-startup.json"), "w") as f:
        json.dump({"rows": rows, "summary": summary}, f, indent=2)

    print(f"{'command':34} {'cold s':>8} {'median s':>9} {'peak RSS MiB':>13} {'exit':>5}")
    for r in rows:
        print(f"{r['name']:34} {r['cold_s']:8.3f} {r['median_s']:9.3f} {r['peak_rss_mib']:13.0f} {','.join(map(str, r['exit_codes'])):>5}")
    print(f"full probe: {full:.3f} s, {python / full:.1f}x faster than the Python check "
          f"(targets: <= 1.0 s: {'met' if full <= 1.0 else 'MISSED'}, >= 6x: {'met' if python / full >= 6 else 'MISSED'})")
    print(f"AMP section: {full - no_amp:.3f} s (target <= 0.3 s: {'met' if full - no_amp <= 0.3 else 'MISSED'})")
    print(f"--quick: {quick:.3f} s (target <= 0.15 s: {'met' if quick <= 0.15 else 'MISSED'})"
          + (f", {summary['quick_vs_nvidia_smi']:.1f}x nvidia-smi's time" if "quick_vs_nvidia_smi" in summary else ""))
    if args.baseline:
        print(f"against the baseline: full {summary['baseline_full_s']:.3f} -> {full:.3f} s "
              f"({100 * summary['full_change']:+.1f} %), --quick {summary['baseline_quick_s']:.3f} -> "
              f"{quick:.3f} s ({100 * summary['quick_change']:+.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
