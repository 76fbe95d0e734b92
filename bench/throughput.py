#!/usr/bin/env python3
"""precision-probe --bench against PyTorch's own matmul throughput, in the same run.

For every precision the probe measures on GPU 0 that PyTorch can run here, times PyTorch's own
call the way the probe does: torch.mm (fp32, tf32 with set_float32_matmul_precision('high'),
fp16, bf16), torch._scaled_mm (fp8 per-tensor and row-wise), aten::_scaled_mm_v2 (block-wise fp8,
1x128 and 128x128 scales, as the engine calls it on 2.10 and later), torch._int_mm (int8); the
same size and layouts (B column-major for the scaled and integer products), random inputs, three
input sets used in turn. For every precision (1) after a 2 s rest, right after warm-up (three
calls queued back to back, the timed ones right behind them), CUDA events around each of the calls
that fit in about 30 ms (8 to 20), the median; then for every precision (2) after a rest and at
least a second of continuous load, the same. Rounds of PyTorch, the probe and (--baseline) an
earlier build of the probe in turn; the median of each side's rounds is compared. Prints every
figure, the ratios and the probe's share of the datasheet dense peak; writes
bench-throughput.json. Targets (docs/performance.md), on (1), the figure the datasheet's peak is
comparable with: at least PyTorch's own for every precision (0.98 or more: the rounds' own spread
is about 2 %), within 2 % of the baseline, bf16 at 75 % or more of the H200's dense peak.

  usage: bench/throughput.py [--probe build-gpu/bin/precision-probe] [--baseline PROBE]
                             [--size 8192] [--rounds 3] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

MODES = ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp8_rowwise", "fp8_blockwise", "int8")


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


def column_major(t):
    return t.t().contiguous().t()


def torch_gemm(mode, n, sets=3):
    """call(i): PyTorch's own GEMM of `mode` on the i-th of `sets` random input sets, or None."""
    dev = torch.device("cuda", 0)
    gen = torch.Generator(device=dev).manual_seed(1234)
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    rand = lambda: torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen)
    inputs = []
    for _ in range(sets):
        if mode in dtypes:
            a = torch.randn(n, n, device=dev, dtype=dtypes[mode], generator=gen)
            b = torch.randn(n, n, device=dev, dtype=dtypes[mode], generator=gen)
        elif mode.startswith("fp8"):
            a = rand().to(torch.float8_e5m2 if mode == "fp8_e5m2" else torch.float8_e4m3fn)
            b = column_major(rand().to(torch.float8_e4m3fn))
        elif mode == "int8":
            a = torch.randint(-127, 128, (n, n), device=dev, dtype=torch.int8, generator=gen)
            b = column_major(torch.randint(-127, 128, (n, n), device=dev, dtype=torch.int8, generator=gen))
        else:
            return None
        inputs.append((a, b))
    f32 = dict(device=dev, dtype=torch.float32)
    one = torch.ones((), **f32)
    rows, cols = torch.ones((n, 1), **f32), torch.ones((1, n), **f32)
    blocks = n // 128
    padded = (blocks + 3) // 4 * 4
    # As the engine: A's 1x128 scales (M, K/128) with strides (1, M); B's 128x128 scales
    # (round_up(K/128, 4), N/128) with strides (1, that).
    block_a = torch.empty_strided((n, blocks), (1, n), **f32).fill_(1.0)
    block_b = torch.empty_strided((padded, blocks), (1, padded), **f32).fill_(1.0)

    def call(i):
        a, b = inputs[i % sets]
        if mode in ("fp8_e4m3", "fp8_e5m2"):
            return torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)
        if mode == "fp8_rowwise":
            return torch._scaled_mm(a, b, rows, cols, out_dtype=torch.bfloat16)
        if mode == "fp8_blockwise":
            return torch.ops.aten._scaled_mm_v2(a, b, [block_a], [4], [], [block_b], [5], [], None,
                                                torch.bfloat16)
        if mode == "int8":
            return torch._int_mm(a, b)
        return torch.mm(a, b)

    try:
        call(0)
    except (RuntimeError, AttributeError) as e:  # this PyTorch or GPU has no such call
        print(f"PyTorch cannot run {mode} here: {str(e).splitlines()[0]}", file=sys.stderr)
        return None
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


def probe_bench(probe, size):
    """{mode: (tflops, sustained_tflops)} of one `probe --bench` run on GPU 0, and its report."""
    proc = subprocess.run([probe, "--bench", "--bench-size", str(size), "--device", "0", "--no-amp",
                           "--format", "json"], capture_output=True, text=True)
    report = json.loads(proc.stdout)
    gpu0 = next(d for d in report["devices"] if d["kind"] == "cuda")
    return {m: (b["tflops"], b["sustained_tflops"]) for m, b in gpu0.get("bench", {}).items()
            if b["tflops"]}, report


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--baseline", help="an earlier build of the probe, run in every round too")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()

    # Rounds of PyTorch, the probe and the baseline: no side gains from the order in which the GPU
    # warmed up or from a drift of its clocks; the median of each side's rounds is compared.
    sides = {"pytorch": {}, "probe": {}, "baseline": {}}
    report = None
    for _ in range(args.rounds):
        # As the probe: every precision right after warm-up first, then each under load.
        first = {m: torch_tflops(m, args.size, sustained=False) for m in MODES}
        for m in MODES:
            if first[m] is not None:
                sides["pytorch"].setdefault(m, []).append((first[m], torch_tflops(m, args.size, sustained=True)))
        ours, report = probe_bench(args.probe, args.size)
        for m, figures in ours.items():
            sides["probe"].setdefault(m, []).append(figures)
        if args.baseline:
            theirs, _ = probe_bench(args.baseline, args.size)
            for m, figures in theirs.items():
                sides["baseline"].setdefault(m, []).append(figures)
    gpu = next(d for d in report["devices"] if d["kind"] == "cuda")

    def med(side, mode, k):
        vals = [v[k] for v in sides[side].get(mode, []) if v[k] is not None]
        return statistics.median(vals) if vals else None

    ratio = lambda a, b: a / b if a and b else None
    rows = []
    for mode, b in gpu.get("bench", {}).items():
        peak = b["peak_tflops"]
        row = {"mode": mode, "peak_tflops": peak, "rounds": {k: v.get(mode, []) for k, v in sides.items()}}
        for side in sides:
            row[f"{side}_tflops"] = med(side, mode, 0)
            row[f"{side}_sustained_tflops"] = med(side, mode, 1)
        row["vs_pytorch"] = ratio(row["probe_tflops"], row["pytorch_tflops"])
        row["sustained_vs_pytorch"] = ratio(row["probe_sustained_tflops"], row["pytorch_sustained_tflops"])
        row["vs_baseline"] = ratio(row["probe_tflops"], row["baseline_tflops"])
        row["percent_of_peak"] = 100.0 * row["probe_tflops"] / peak if row["probe_tflops"] and peak else None
        rows.append(row)
    fp32 = next((r["probe_tflops"] for r in rows if r["mode"] == "fp32"), None)
    for r in rows:
        r["ratio_to_fp32"] = ratio(r["probe_tflops"], fp32)
    compared = [r for r in rows if r["vs_pytorch"] is not None]
    at_least_pytorch = bool(compared) and all(r["vs_pytorch"] >= 0.98 for r in compared)
    baselined = [r for r in rows if r["vs_baseline"] is not None]
    within_baseline = bool(baselined) and all(abs(r["vs_baseline"] - 1.0) <= 0.02 for r in baselined)
    bf16 = next((r for r in rows if r["mode"] == "bf16"), None)
    bf16_ok = bf16 is not None and bf16["percent_of_peak"] is not None and bf16["percent_of_peak"] >= 75.0
    targets = {"at_least_pytorch": at_least_pytorch, "bf16_75_percent_of_peak": bf16_ok}
    if args.baseline:
        targets["within_2_percent_of_baseline"] = within_baseline
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-throughput.json"), "w") as f:
        json.dump({"device": gpu["name"], "size": args.size, "rounds": args.rounds, "rows": rows,
                   "targets": targets}, f, indent=2)

    fmt = lambda v, spec: format(v, spec) if v is not None else "-"
    print(f"{gpu['name']}, {args.size}^3 GEMM, median per measurement (CUDA events), median of {args.rounds} rounds each")
    print(f"{'mode':13} {'probe':>8} {'torch':>8} {'ratio':>6} {'baseline':>8} {'ratio':>6} {'vs fp32':>8} "
          f"{'% peak':>7} | {'sustained: probe':>16} {'torch':>7} {'ratio':>6}")
    for r in rows:
        print(f"{r['mode']:13} {fmt(r['probe_tflops'], '8.1f')} {fmt(r['pytorch_tflops'], '8.1f')} "
              f"{fmt(r['vs_pytorch'], '6.3f')} {fmt(r['baseline_tflops'], '8.1f')} {fmt(r['vs_baseline'], '6.3f')} "
              f"{fmt(r['ratio_to_fp32'], '7.1f')}x {fmt(r['percent_of_peak'], '6.1f')}% | "
              f"{fmt(r['probe_sustained_tflops'], '16.1f')} {fmt(r['pytorch_sustained_tflops'], '7.1f')} "
              f"{fmt(r['sustained_vs_pytorch'], '6.3f')}")
    met = lambda ok: "met" if ok else "MISSED"
    print(f"at least PyTorch's own (>= 0.98) for every precision it runs: {met(at_least_pytorch)}; "
          f"bf16 >= 75% of dense peak: {met(bf16_ok)}"
          + (f"; within 2% of the baseline: {met(within_baseline)}" if args.baseline else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
