#!/usr/bin/env python3
"""Start-up speed of precision-probe against the checks people run today, in the same run.

Measures wall time (median of N runs, plus the first, cold run) of:
  quick      precision-probe --quick                      vs  nvidia-smi --query-gpu=compute_cap
  full       precision-probe (smoke tests on every GPU)   vs  the Python check (import torch,
                                                              fp16 and bf16 3x3 matmuls)
and the peak RSS of the largest process of each (the probe's worker included). The Python check
and the full probe alternate, round after round. With --baseline (another build of the probe, an
earlier commit's), its full and --quick runs alternate with this build's too, and the change is
the median of the per-round ratios. --orders also times the engine's start-up orders
(PRECISION_PROBE_ENGINE_START=overlap, cuinit-beside, driver-first, libtorch-first: docs/engine.md), and
--variant NAME:VAR=VALUE[,VAR=VALUE...] (repeatable) the full probe under other settings of the
start-up's variables, each alternating with the default, its change the median per-round ratio.
Prints a table and writes bench-startup.json. Targets (docs/performance.md): the full probe at
least 8x faster than the Python check; against the baseline no slower than 5 %, full and --quick.

  usage: bench/startup.py [--probe build-gpu/bin/precision-probe] [--baseline PROBE] [--orders]
                          [--variant NAME:VAR=VALUE[,VAR=VALUE...]]... [--runs 7] [--out DIR]
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


def round_ratios(results, name, reference):
    """Per round, `name`'s wall time over `reference`'s (they alternated): the median of those."""
    ratios = [a[0] / b[0] for a, b in zip(results[name], results[reference])]
    return statistics.median(ratios), ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", help="another build of the probe to compare with, run for run")
    parser.add_argument("--orders", action="store_true", help="also time the engine's start-up orders")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME:VAR=VALUE[,VAR=VALUE...]: also time the full probe so, against the default")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    if not os.path.exists(args.probe):
        sys.exit(f"bench: {args.probe} not found (build first: ./dev gpu-test)")

    rows, raw = [], {}

    def alternate(pairs):
        results = {name: [] for name, _ in pairs}
        for _ in range(args.runs):
            for name, argv in pairs:
                results[name].append(run_once(argv))
        raw.update(results)
        rows.extend(summarise(name, argv, results[name]) for name, argv in pairs)

    if shutil.which("nvidia-smi"):
        rows.append(measure("nvidia-smi compute_cap", ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv"], args.runs))
    quick = [("precision-probe --quick", [args.probe, "--quick", "--format", "json"])]
    if args.baseline:
        quick.append(("baseline --quick", [args.baseline, "--quick", "--format", "json"]))
    alternate(quick)
    full = [("python3 torch fp16/bf16 check", [sys.executable, "-c", PYTHON_CHECK]),
            ("precision-probe (full)", [args.probe, "--format", "json"])]
    if args.baseline:
        full.append(("baseline (full)", [args.baseline, "--format", "json"]))
    alternate(full)
    if args.orders:
        alternate([(f"engine start {order}", ["env", f"PRECISION_PROBE_ENGINE_START={order}", args.probe,
                                               "--format", "json"])
                   for order in ("overlap", "cuinit-beside", "driver-first", "libtorch-first")])
    variants = []
    for spec in args.variant:
        name, _, settings = spec.partition(":")
        if not name or "=" not in settings:
            sys.exit(f"bench: --variant {spec!r}: expected NAME:VAR=VALUE[,VAR=VALUE...]")
        variants.append((f"variant {name}", ["env", *settings.split(","), args.probe, "--format", "json"]))
    if variants:
        alternate([("default (variants)", [args.probe, "--format", "json"]), *variants])
    rows.append(measure("precision-probe --no-amp", [args.probe, "--no-amp", "--format", "json"], args.runs))

    by_name = {r["name"]: r for r in rows}
    full_s = by_name["precision-probe (full)"]["median_s"]
    python = by_name["python3 torch fp16/bf16 check"]["median_s"]
    quick_s = by_name["precision-probe --quick"]["median_s"]
    no_amp = by_name["precision-probe --no-amp"]["median_s"]
    speedup, _ = round_ratios(raw, "python3 torch fp16/bf16 check", "precision-probe (full)")
    summary = {
        "full_s": full_s,
        "python_check_s": python,
        "speedup_vs_python": speedup,
        "quick_s": quick_s,
        "amp_cost_s": full_s - no_amp,
        "targets": {"full_8x_faster_than_python": speedup >= 8.0},
    }
    if args.baseline:
        summary["full_change"], summary["full_ratios"] = round_ratios(raw, "precision-probe (full)", "baseline (full)")
        summary["quick_change"], summary["quick_ratios"] = round_ratios(raw, "precision-probe --quick", "baseline --quick")
        summary["targets"]["full_within_5_percent_of_baseline"] = summary["full_change"] <= 1.05
        summary["targets"]["quick_within_5_percent_of_baseline"] = summary["quick_change"] <= 1.05
    summary["variants"] = {name: round_ratios(raw, name, "default (variants)")[0] for name, _ in variants}
    if "nvidia-smi compute_cap" in by_name:
        summary["nvidia_smi_s"] = by_name["nvidia-smi compute_cap"]["median_s"]
        summary["quick_vs_nvidia_smi"] = quick_s / summary["nvidia_smi_s"]

    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-startup.json"), "w") as f:
        json.dump({"rows": rows, "summary": summary}, f, indent=2)

    print(f"{'command':34} {'cold s':>8} {'median s':>9} {'peak RSS MiB':>13} {'exit':>5}")
    for r in rows:
        print(f"{r['name']:34} {r['cold_s']:8.3f} {r['median_s']:9.3f} {r['peak_rss_mib']:13.0f} {','.join(map(str, r['exit_codes'])):>5}")
    met = lambda ok: "met" if ok else "MISSED"
    print(f"full probe: {full_s:.3f} s, {speedup:.1f}x faster than the Python check, the median of {args.runs} "
          f"alternating rounds (target >= 8x: {met(speedup >= 8.0)})")
    print(f"AMP section: {full_s - no_amp:.3f} s; --quick: {quick_s:.3f} s"
          + (f", {summary['quick_vs_nvidia_smi']:.1f}x nvidia-smi's time" if "quick_vs_nvidia_smi" in summary else ""))
    for name, change in summary["variants"].items():
        print(f"{name}: {change:.3f}x the default's time, run for run")
    if args.baseline:
        print(f"against the baseline, run for run: full {summary['full_change']:.3f}x "
              f"({met(summary['full_change'] <= 1.05)} <= 1.05), --quick {summary['quick_change']:.3f}x "
              f"({met(summary['quick_change'] <= 1.05)} <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
