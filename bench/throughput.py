#!/usr/bin/env python3
"""precision-probe --bench against PyTorch's own matmul throughput, in the same run.

For every precision the probe measures on GPU 0, times torch.mm (torch._scaled_mm for fp8) the way
the probe does: the same size and dtypes, random inputs, three input sets used in turn; for every
precision (1) after a 2 s rest, right after warm-up (three calls queued back to back, the timed
ones right behind them), CUDA events around each of the calls that fit in about 30 ms (8 to 20),
the median; then for every precision (2) after a rest and at
least a second of continuous load, the same. Three rounds, PyTorch
and the probe in turn; the median of each side's rounds is compared. Prints both, their ratio, and
the probe's share of the datasheet dense peak; writes bench-throughput.json.
Targets (docs/performance.md): within 3% of PyTorch for every precision; bf16 at 75% or more of
the H200's datasheet dense peak (989.4 TFLOP/s). Both apply to (1), the figure the datasheet's
peak is comparable with; (2), under the power limit, is reported beside it.

  usage: bench/throughput.py [--probe build-gpu/bin/precision-probe] [--size 8192] [--rounds 3]
                             [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

MODES = ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")


def median_ms(call, warmup_calls, warmup_s, reps, offset):
    # As the probe's time_calls: `warmup_calls` queued back to back, then calls for `warmup_s`
    # (waiting for each), then the timed calls right behind them.
    begin, done = time.perf_counter(), 0
    while done < warmup_calls:
        call(offset + done)
        done += 1
    while time.perf_counter() - begin < warmup_s:
        call(offset + done)
        torch.cuda.synchronize()
        done += 1
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        call(offset + done + i)
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends)), done + reps


def torch_gemm(mode, n, sets=3):
    """call(i): PyTorch's own GEMM of `mode` on the i-th of `sets` random input sets, or None."""
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev).manual_seed(1234)
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    inputs = []
    for _ in range(sets):
        if mode in dtypes:
            a = torch.randn(n, n, device=dev, dtype=dtypes[mode], generator=gen)
            b = torch.randn(n, n, device=dev, dtype=dtypes[mode], generator=gen)
        elif mode in ("fp8_e4m3", "fp8_e5m2"):
            a_type = torch.float8_e4m3fn if mode == "fp8_e4m3" else torch.float8_e5m2
            a = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen).to(a_type)
            b = torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen).to(torch.float8_e4m3fn).t()
        else:
            return None
        inputs.append((a, b))
    one = torch.ones((), device=dev, dtype=torch.float32)

    def call(i):
        a, b = inputs[i % sets]
        if mode.startswith("fp8"):
            return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
        return torch.mm(a, b)

    torch.cuda.synchronize()
    return call


def torch_tflops(mode, n, sustained, reps=20):
    """PyTorch's TFLOP/s for `mode`, as the probe measures it: after a 2 s rest, right after
    warm-up; or (sustained) after a 500 ms rest and a second of continuous load."""
    torch.set_float32_matmul_precision("high" if mode == "tf32" else "highest")
    try:
        call = torch_gemm(mode, n)
        if call is None:
            return None
        time.sleep(0.5 if sustained else 2.0)
        if sustained:
            ms, _ = median_ms(call, 0, 1.0, reps, 0)
        else:
            # As the probe: one call says how long a call takes, and the timed calls fill about
            # 30 ms (8 to 20 of them).
            begin = time.perf_counter()
            call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - begin) * 1e3
            ms, _ = median_ms(call, 3, 0.0, max(8, min(reps, int(30.0 / first_ms))), 1)
        return 2.0 * n ** 3 / (ms * 1e-3) / 1e12
    finally:
        torch.set_float32_matmul_precision("highest")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()

    # Rounds of PyTorch then the probe: neither side gains from the order in which the GPU warmed
    # up or from a drift of its clocks; the median of each side's rounds is compared.
    theirs = {m: [] for m in MODES}
    ours = {m: [] for m in MODES}
    report = None
    for _ in range(args.rounds):
        # As the probe: every precision right after warm-up first, then each under load.
        first = {m: torch_tflops(m, args.size, sustained=False) for m in MODES}
        for m in MODES:
            if first[m] is not None:
                theirs[m].append((first[m], torch_tflops(m, args.size, sustained=True)))
        proc = subprocess.run([args.probe, "--bench", "--bench-size", str(args.size), "--device", "0",
                               "--no-amp", "--format", "json"], capture_output=True, text=True)
        report = json.loads(proc.stdout)
        gpu0 = next(d for d in report["devices"] if d["kind"] == "cuda")
        for m, b in gpu0.get("bench", {}).items():
            if b["tflops"]:
                ours[m].append((b["tflops"], b["sustained_tflops"]))
    gpu = next(d for d in report["devices"] if d["kind"] == "cuda")

    def med(values, k):
        vals = [v[k] for v in values if v[k] is not None]
        return statistics.median(vals) if vals else None

    rows = []
    for mode, b in gpu.get("bench", {}).items():
        peak = b["peak_tflops"]
        row = {"mode": mode, "peak_tflops": peak,
               "probe_tflops": med(ours.get(mode, []), 0), "pytorch_tflops": med(theirs.get(mode, []), 0),
               "probe_sustained_tflops": med(ours.get(mode, []), 1),
               "pytorch_sustained_tflops": med(theirs.get(mode, []), 1),
               "probe_rounds": ours.get(mode, []), "pytorch_rounds": theirs.get(mode, [])}
        p, t = row["probe_tflops"], row["pytorch_tflops"]
        ps, ts = row["probe_sustained_tflops"], row["pytorch_sustained_tflops"]
        row["ratio"] = p / t if p and t else None
        row["sustained_ratio"] = ps / ts if ps and ts else None
        row["percent_of_peak"] = 100.0 * p / peak if p and peak else None
        row["pytorch_percent_of_peak"] = 100.0 * t / peak if t and peak else None
        rows.append(row)
    fp32 = next((r["probe_tflops"] for r in rows if r["mode"] == "fp32"), None)
    for r in rows:
        r["ratio_to_fp32"] = r["probe_tflops"] / fp32 if r["probe_tflops"] and fp32 else None
    within = bool(rows) and all(r["ratio"] is not None and abs(r["ratio"] - 1.0) <= 0.03 for r in rows)
    bf16 = next((r for r in rows if r["mode"] == "bf16"), None)
    bf16_ok = bf16 is not None and bf16["percent_of_peak"] is not None and bf16["percent_of_peak"] >= 75.0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-throughput.json"), "w") as f:
        json.dump({"device": gpu["name"], "size": args.size, "rounds": args.rounds, "rows": rows,
                   "targets": {"within_3_percent": within, "bf16_75_percent_of_peak": bf16_ok}}, f, indent=2)

    fmt = lambda v, spec: format(v, spec) if v is not None else "-"
    print(f"{gpu['name']}, {args.size}^3 GEMM, median per measurement (CUDA events), median of {args.rounds} rounds each")
    print(f"{'mode':10} {'probe TF/s':>10} {'torch TF/s':>10} {'ratio':>6} {'vs fp32':>8} {'% peak':>7} "
          f"{'torch %':>7} | {'sustained: probe':>16} {'torch':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['mode']:10} {fmt(r['probe_tflops'], '10.1f')} {fmt(r['pytorch_tflops'], '10.1f')} "
              f"{fmt(r['ratio'], '6.3f')} {fmt(r['ratio_to_fp32'], '7.1f')}x {fmt(r['percent_of_peak'], '6.1f')}% "
              f"{fmt(r['pytorch_percent_of_peak'], '6.1f')}% | {fmt(r['probe_sustained_tflops'], '16.1f')} "
              f"{fmt(r['pytorch_sustained_tflops'], '7.1f')} {fmt(r['sustained_ratio'], '6.3f')}")
    print(f"within 3% of PyTorch for every precision: {'met' if within else 'MISSED'}; "
          f"bf16 >= 75% of dense peak: {'met' if bf16_ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
