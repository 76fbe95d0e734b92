#!/usr/bin/env python3
"""precision-probe --bench against PyTorch's own matmul throughput, in the same run.

For every precision the probe measures on GPU 0, times torch.mm (torch._scaled_mm for fp8) the way
the probe does: the same size and dtypes, random inputs, three input sets used in turn, three
warm-up calls, CUDA events around each of 20 calls, the median. Prints both, their ratio, and the
probe's share of the datasheet dense peak; writes bench-throughput.json.
Targets (docs/performance.md): within 3% of PyTorch for every precision; bf16 at 75% or more of
the H200's datasheet dense peak (989.4 TFLOP/s).

  usage: bench/throughput.py [--probe build-gpu/bin/precision-probe] [--size 8192] [--out DIR]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

import torch


def torch_tflops(mode, n, warmup=3, reps=20, sets=3):
    dev = torch.device("cuda", 0)
    torch.set_float32_matmul_precision("high" if mode == "tf32" else "highest")
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

    # As the probe: at least `warmup` calls and 200 ms of them, so that the clocks have risen.
    import time
    begin, done = time.perf_counter(), 0
    while done < warmup or time.perf_counter() - begin < 0.2:
        call(done)
        torch.cuda.synchronize()
        done += 1
    warmup = done
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        starts[i].record()
        call(warmup + i)
        ends[i].record()
    torch.cuda.synchronize()
    ms = statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))
    torch.set_float32_matmul_precision("highest")
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--probe", default="build-gpu/bin/precision-probe")
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()

    # Two rounds, PyTorch and the probe in turn, the better figure of each kept: neither side
    # gains from the order in which the GPU warmed up or from a drift of its clocks.
    modes = ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")
    torch_best, probe_best, report = {}, {}, None
    for _ in range(2):
        for m in modes:
            t = torch_tflops(m, args.size)
            if t is not None:
                torch_best[m] = max(t, torch_best.get(m, 0.0))
        proc = subprocess.run([args.probe, "--bench", "--bench-size", str(args.size), "--device", "0",
                               "--no-amp", "--format", "json"], capture_output=True, text=True)
        report = json.loads(proc.stdout)
        gpu0 = next(d for d in report["devices"] if d["kind"] == "cuda")
        for m, b in gpu0.get("bench", {}).items():
            if b["tflops"]:
                probe_best[m] = max(b["tflops"], probe_best.get(m, 0.0))
    gpu = next(d for d in report["devices"] if d["kind"] == "cuda")
    rows = []
    for mode, b in gpu.get("bench", {}).items():
        theirs = torch_best.get(mode)
        ours = probe_best.get(mode)
        peak = b["peak_tflops"]
        rows.append({
            "mode": mode,
            "probe_tflops": ours,
            "pytorch_tflops": theirs,
            "ratio": ours / theirs if ours and theirs else None,
            "ratio_to_fp32": ours / probe_best["fp32"] if ours and probe_best.get("fp32") else None,
            "peak_tflops": peak,
            "percent_of_peak": 100.0 * ours / peak if ours and peak else None,
            "pytorch_percent_of_peak": 100.0 * theirs / peak if theirs and peak else None,
        })
    within = bool(rows) and all(r["ratio"] is not None and abs(r["ratio"] - 1.0) <= 0.03 for r in rows)
    bf16 = next((r for r in rows if r["mode"] == "bf16"), None)
    bf16_ok = bf16 is not None and bf16["percent_of_peak"] is not None and bf16["percent_of_peak"] >= 75.0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-throughput.json"), "w") as f:
        json.dump({"device": gpu["name"], "size": args.size, "rows": rows,
                   "targets": {"within_3_percent": within, "bf16_75_percent_of_peak": bf16_ok}}, f, indent=2)

    print(f"{gpu['name']}, {args.size}^3 GEMM, median of 20 (CUDA events), best of 2 rounds each")
    print(f"{'mode':10} {'probe TF/s':>11} {'torch TF/s':>11} {'probe/torch':>12} {'vs fp32':>8} {'% of peak':>10} {'torch %':>8}")
    for r in rows:
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"{r['mode']:10} {fmt(r['probe_tflops'], '11.1f')} {fmt(r['pytorch_tflops'], '11.1f')} "
              f"{fmt(r['ratio'], '12.3f')} {fmt(r['ratio_to_fp32'], '7.1f')}x {fmt(r['percent_of_peak'], '9.1f')}% "
              f"{fmt(r['pytorch_percent_of_peak'], '7.1f')}%")
    print(f"within 3% of PyTorch for every precision: {'met' if within else 'MISSED'}; "
          f"bf16 >= 75% of dense peak: {'met' if bf16_ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
