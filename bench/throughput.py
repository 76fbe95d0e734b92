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

    # PyTorch before and after the probe, its better figure kept: neither side gains from the
    # order in which the GPU warmed up.
    before = {m: torch_tflops(m, args.size) for m in ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2")}
    proc = subprocess.run([args.probe, "--bench", "--bench-size", str(args.size), "--device", "0", "--format", "json"],
                          capture_output=True, text=True)
    report = json.loads(proc.stdout)
    gpu = next(d for d in report["devices"] if d["kind"] == "cuda")
    rows = []
    for mode, b in gpu.get("bench", {}).items():
        after = torch_tflops(mode, args.size)
        theirs = max(v for v in (before.get(mode), after) if v is not None) if after or before.get(mode) else None
        ours = b["tflops"]
        rows.append({
            "mode": mode,
            "probe_tflops": ours,
            "pytorch_tflops": theirs,
            "ratio": ours / theirs if ours and theirs else None,
            "ratio_to_fp32": b["ratio_to_fp32"],
            "peak_tflops": b["peak_tflops"],
            "percent_of_peak": b["percent_of_peak"],
        })
    within = all(r["ratio"] is not None and abs(r["ratio"] - 1.0) <= 0.03 for r in rows)
    bf16 = next((r for r in rows if r["mode"] == "bf16"), None)
    bf16_ok = bf16 is not None and bf16["percent_of_peak"] is not None and bf16["percent_of_peak"] >= 75.0
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "bench-throughput.json"), "w") as f:
        json.dump({"device": gpu["name"], "size": args.size, "rows": rows,
                   "targets": {"within_3_percent": within, "bf16_75_percent_of_peak": bf16_ok}}, f, indent=2)

    print(f"{gpu['name']}, {args.size}^3 GEMM, median of 20 (CUDA events)")
    print(f"{'mode':10} {'probe TF/s':>11} {'torch TF/s':>11} {'probe/torch':>12} {'vs fp32':>8} {'% of peak':>10}")
    for r in rows:
        fmt = lambda v, spec: format(v, spec) if v is not None else "-"
        print(f"{r['mode']:10} {fmt(r['probe_tflops'], '11.1f')} {fmt(r['pytorch_tflops'], '11.1f')} "
              f"{fmt(r['ratio'], '12.3f')} {fmt(r['ratio_to_fp32'], '7.1f')}x {fmt(r['percent_of_peak'], '9.1f')}%")
    print(f"within 3% of PyTorch for every precision: {'met' if within else 'MISSED'}; "
          f"bf16 >= 75% of dense peak: {'met' if bf16_ok else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
