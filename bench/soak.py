#!/usr/bin/env python3
"""What the soak's bit-for-bit comparison costs: its throughput against the benchmark's sustained
figure for the same mode, in the same run of the probe.

Runs `precision-probe --device 0 --no-amp --bench --bench-size SIZE --soak SECONDS --soak-modes
MODES` ROUNDS times and, per mode, sets the soak's TFLOP/s (every result compared with the golden
one) against --bench's sustained TFLOP/s (after a second of continuous load, nothing compared), both
for the same GEMM (SIZE, default 16384: the soak's size on an H200). Target (docs/performance.md):
bf16 at >= 95 % of the sustained figure on an H200. Prints a table and writes bench-soak.json.
bench/soak_cost.py isolates the comparison from what minutes of load do to the clocks. A round takes
about 2 minutes on an H200 (--bench times every native mode at SIZE; fp32's GEMM alone is 0.17 s).

  usage: bench/soak.py [--probe build-gpu/bin/precision-probe] [--modes bf16,fp16,fp8_e4m3]
                       [--size 16384] [--seconds 20] [--rounds 3] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

TARGET = 0.95


def one_round(probe, modes, size, seconds):
    args = [probe, "--device", "0", "--no-amp", "--bench", "--bench-size", str(size),
            "--soak", str(seconds),
            "--soak-modes", modes, "--format", "json", "--timeout", str(120 + 4 * seconds)]
    out = subprocess.run(args, capture_output=True, text=True, check=False)
    if not out.stdout.strip():
        sys.exit(f"the probe printed nothing (exit {out.returncode}): {out.stderr.strip()}")
    report = json.loads(out.stdout)
    gpu = next(d for d in report["devices"] if d["kind"] == "cuda")
    figures = {}
    for mode, soak in gpu["soak"]["modes"].items():
        bench = gpu.get("bench", {}).get(mode, {})
        figures[mode] = {
            "soak_tflops": soak.get("tflops"),
            "sustained_tflops": bench.get("sustained_tflops"),
            "results": soak.get("iterations"),
            "mismatches": soak.get("mismatches"),
            "soak_size": soak.get("size"),
            "bench_size": bench.get("size"),
        }
    return report["exit_code"], figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--modes", default="bf16,fp16,fp8_e4m3")
    parser.add_argument("--size", type=int, default=16384)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=".")
    a = parser.parse_args()
    rounds = []
    for _ in range(a.rounds):
        code, figures = one_round(a.probe, a.modes, a.size, a.seconds)
        if code != 0:
            sys.exit(f"the probe exited {code}: a soak that mismatches or fails is no benchmark")
        rounds.append(figures)
    rows = []
    print(f"{'mode':<14} {'sustained':>10} {'soak':>10} {'ratio':>7} {'results':>9} {'sizes':>12}"
          f"  (median of {a.rounds} rounds, TFLOP/s; sizes: bench/soak)")
    for mode in rounds[0]:
        soak = statistics.median(r[mode]["soak_tflops"] for r in rounds)
        sustained = statistics.median(r[mode]["sustained_tflops"] for r in rounds)
        results = sum(r[mode]["results"] for r in rounds)
        ratio = soak / sustained
        sizes = f"{rounds[0][mode]['bench_size']}/{rounds[0][mode]['soak_size']}"
        rows.append({"mode": mode, "sustained_tflops": sustained, "soak_tflops": soak,
                     "ratio": ratio, "results": results, "sizes": sizes})
        print(f"{mode:<14} {sustained:>10.4g} {soak:>10.4g} {ratio:>7.3f} {results:>9} {sizes:>12}")
    bf16 = next((r for r in rows if r["mode"] == "bf16"), None)
    if bf16:
        verdict = "met" if bf16["ratio"] >= TARGET else "MISSED"
        print(f"bf16: the soak at {100 * bf16['ratio']:.1f} % of the sustained figure "
              f"(target >= {100 * TARGET:.0f} %: {verdict})")
    with open(os.path.join(a.out, "bench-soak.json"), "w", encoding="utf-8") as f:
        json.dump({"rounds": rounds, "summary": rows}, f, indent=2)


if __name__ == "__main__":
    main()
