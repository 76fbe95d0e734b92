#!/bin/sh
# A fake precision-probe-engine for the CLI tests: speaks the worker protocol without LibTorch.
#   FAKE_ENGINE        ok (default) | hang | crash | garbage | wrong:MODE | nan:MODE |
#                      unsupported:MODE | noimage | slow | stall:MODE | slowbf16 |
#                      oom:MODE (CUDA out of memory in MODE's smoke test, training run or benchmark) |
#                      inexact:DTYPE | nonccl | wronggpu
#   FAKE_ENGINE_ON     cpu | cuda | any (default): which workers misbehave
#   FAKE_ENGINE_STACK  cuda (default) | cpu: the LibTorch the fake pretends to be
#   FAKE_ENGINE_ARCHS  the arch list of the cuda stack (default sm_75 sm_80 sm_86 sm_90 sm_100 sm_120)
#                      orphan (leaves a process holding its stdout, exits 1) | linger (says done,
#                      then stays) | flood (an endless line)
#   FAKE_ENGINE_LOG    a file each worker appends "KIND ARGS" to, once it has its plan
#   FAKE_ENGINE_PIDS   a file each worker appends its PID to (and an orphan's)
set -u
archs=${FAKE_ENGINE_ARCHS:-"sm_75 sm_80 sm_86 sm_90 sm_100 sm_120"}
arch_json=$(printf '%s\n' $archs | sed 's/.*/"&"/' | paste -sd, -)
if [ "${FAKE_ENGINE_STACK:-cuda}" = cpu ]; then
  stack='{"arch_list":[],"available":true,"cpu_threads":2,"cuda_built":false,"cuda_version":"","cudnn_version":"","error":"","libtorch_version":"1.13.0","source":"engine"}'
else
  stack="{\"arch_list\":[${arch_json}],\"available\":true,\"cpu_threads\":8,\"cuda_built\":true,\"cuda_version\":\"13.0\",\"cudnn_version\":\"91300\",\"error\":\"\",\"libtorch_version\":\"2.11.0\",\"source\":\"engine\"}"
fi
case "${1:-}" in
  --describe) [ "${FAKE_ENGINE:-}" = hang ] && sleep 1000; echo "$stack"; exit 0 ;;
  --worker) ;;
  *) echo "usage: fake-engine --worker | --describe" >&2; exit 2 ;;
esac
plan=$(cat)
[ -z "$plan" ] && exit 0  # started ahead and not needed
kind=$(printf '%s' "$plan" | sed -n 's/.*"kind":"\([a-z]*\)".*/\1/p')
[ -n "${FAKE_ENGINE_LOG:-}" ] && echo "$kind $*" >> "$FAKE_ENGINE_LOG"
[ -n "${FAKE_ENGINE_PIDS:-}" ] && echo "$$" >> "$FAKE_ENGINE_PIDS"
modes=$(printf '%s' "$plan" | sed -n 's/.*"smoke":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
amp_modes=$(printf '%s' "$plan" | sed -n 's/.*"amp":\[\([^]]*\)\].*/\1/p' | tr -d '"' | tr ',' ' ')
behaviour=${FAKE_ENGINE:-ok}
case "${FAKE_ENGINE_ON:-any}" in any|"$kind") ;; *) behaviour=ok ;; esac

echo "{\"type\":\"hello\",\"protocol\":2,\"stack\":$stack}"
ranks=$(printf '%s' "$plan" | sed -n 's/.*"collective_ranks":\([0-9]*\).*/\1/p')
if [ -n "$ranks" ] && [ "$ranks" -gt 0 ]; then
  # Bandwidths as nccl-tests defines them, from the size, the time and the ranks.
  busbw=$(awk -v r="$ranks" 'BEGIN { printf "%.4f", 268435456 / 1.5e-3 / 1e9 * 2 * (r - 1) / r }')
  # The NCCL all-reduce: exact unless FAKE_ENGINE=inexact:DTYPE; FAKE_ENGINE=nonccl: no NCCL.
  for dtype in fp32 fp16 bf16; do
    if [ "$behaviour" = nonccl ]; then
      echo "{\"type\":\"collective\",\"op\":\"all_reduce\",\"dtype\":\"$dtype\",\"ran\":false,\"ok\":false,\"error_kind\":\"not_supported\",\"error\":\"this LibTorch (1.13.0) was built without NCCL (c10d ProcessGroupNCCL)\",\"ranks\":$ranks,\"bytes\":268435456,\"time_ms\":null,\"algbw_gbps\":null,\"busbw_gbps\":null,\"nccl_version\":\"\"}"
    elif [ "$behaviour" = "inexact:$dtype" ]; then
      echo "{\"type\":\"collective\",\"op\":\"all_reduce\",\"dtype\":\"$dtype\",\"ran\":true,\"ok\":false,\"error_kind\":\"wrong_result\",\"error\":\"wrong result: the all-reduce sum is not exact on every rank\",\"ranks\":$ranks,\"bytes\":268435456,\"time_ms\":1.5,\"algbw_gbps\":178.9567,\"busbw_gbps\":$busbw,\"nccl_version\":\"2.27.7\"}"
    else
      echo "{\"type\":\"collective\",\"op\":\"all_reduce\",\"dtype\":\"$dtype\",\"ran\":true,\"ok\":true,\"error_kind\":\"none\",\"error\":\"\",\"ranks\":$ranks,\"bytes\":268435456,\"time_ms\":1.5,\"algbw_gbps\":178.9567,\"busbw_gbps\":$busbw,\"nccl_version\":\"2.27.7\"}"
    fi
  done
  echo '{"type":"done"}'
  exit 0
fi
[ "$behaviour" = garbage ] && { echo "this is not json"; exit 0; }
[ "$behaviour" = flood ] && { head -c 2100000 /dev/zero | tr '\0' x; echo; exit 0; }
if [ "$behaviour" = orphan ]; then
  sleep 1000 &
  [ -n "${FAKE_ENGINE_PIDS:-}" ] && echo "$!" >> "$FAKE_ENGINE_PIDS"
  exit 1
fi
[ "$behaviour" = hang ] && { sleep 1000; exit 0; }
# The GPU it runs on: the plan's CUDA_VISIBLE_DEVICES, as a real worker would find it, or another
# one (FAKE_ENGINE=wronggpu), as a worker that did not honour it would.
uuid=$(printf '%s' "$plan" | sed -n 's/.*"cuda_visible_devices":"\([^"]*\)".*/\1/p')
[ "$behaviour" = wronggpu ] && uuid="GPU-00000000-0000-0000-0000-000000000bad"
echo "{\"type\":\"device\",\"name\":\"fake $kind\",\"uuid\":\"$uuid\"}"
n=0
for mode in $modes; do
  n=$((n + 1))
  [ "$behaviour" = slow ] && sleep 1
  [ "$behaviour" = "stall:$mode" ] && sleep 1000
  case "$behaviour" in
    "wrong:$mode")
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":true,\"ok\":false,\"rel_error\":0.5,\"tolerance\":0.01,\"ms\":0.1,\"m\":256,\"n\":256,\"k\":256,\"method\":\"fake\",\"error_kind\":\"wrong_result\",\"error\":\"wrong result: relative error 0.5 exceeds the tolerance 0.01\"}" ;;
    "nan:$mode")
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":true,\"ok\":false,\"rel_error\":null,\"tolerance\":0.01,\"ms\":0.1,\"m\":256,\"n\":256,\"k\":256,\"method\":\"fake\",\"error_kind\":\"wrong_result\",\"error\":\"wrong result: the output contains NaN or Inf\"}" ;;
    "unsupported:$mode")
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"rel_error\":null,\"tolerance\":0.001,\"ms\":null,\"m\":128,\"n\":128,\"k\":128,\"method\":\"\",\"error_kind\":\"not_supported\",\"error\":\"\\\"addmm_impl_cpu_\\\" not implemented for 'Half'\"}" ;;
    "oom:$mode")
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"rel_error\":null,\"tolerance\":0.01,\"ms\":null,\"m\":256,\"n\":256,\"k\":256,\"method\":\"\",\"error_kind\":\"unavailable\",\"error\":\"CUDA out of memory. Tried to allocate 2.00 MiB\"}" ;;
    noimage)
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"rel_error\":null,\"tolerance\":0.01,\"ms\":null,\"m\":256,\"n\":256,\"k\":256,\"method\":\"\",\"error_kind\":\"environment\",\"error\":\"CUDA error: no kernel image is available for execution on the device\"}" ;;
    *)
      echo "{\"type\":\"smoke\",\"mode\":\"$mode\",\"ran\":true,\"ok\":true,\"rel_error\":0.000001,\"tolerance\":0.01,\"ms\":0.25,\"m\":256,\"n\":256,\"k\":256,\"method\":\"fake\",\"error_kind\":\"none\",\"error\":\"\"}" ;;
  esac
  if [ "$behaviour" = crash ] && [ $n -eq 1 ]; then kill -SEGV $$; fi
done
for mode in $amp_modes; do
  scale=null; injected=null; handled=false
  if [ "$mode" = amp_fp16 ]; then scale=131072; injected=3; handled=true; fi
  case "$behaviour" in
    "wrong:$mode")
      echo "{\"type\":\"amp\",\"mode\":\"$mode\",\"ran\":true,\"ok\":false,\"error_kind\":\"wrong_result\",\"error\":\"wrong result: the loss did not go down (2.3026 -> 2.3100)\",\"ms\":40,\"steps\":30,\"loss_start\":2.3026,\"loss_end\":2.31,\"fp32_loss_end\":0.5,\"loss_rel_diff\":3.62,\"loss_tolerance\":0.05,\"params_changed\":true,\"matmul_dtype\":\"bf16\",\"layer_norm_dtype\":\"fp32\",\"softmax_dtype\":\"fp32\",\"loss_dtype\":\"fp32\",\"skipped_steps\":0,\"initial_scale\":null,\"final_scale\":null,\"injected_overflow_step\":null,\"overflow_handled\":false,\"peak_bytes\":null,\"fp32_peak_bytes\":null}" ;;
    "oom:$mode")
      echo "{\"type\":\"amp\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"error_kind\":\"unavailable\",\"error\":\"CUDA out of memory. Tried to allocate 2.00 GiB\",\"ms\":null,\"steps\":24,\"loss_start\":null,\"loss_end\":null,\"fp32_loss_end\":null,\"loss_rel_diff\":null,\"loss_tolerance\":0.05,\"params_changed\":false,\"matmul_dtype\":\"\",\"layer_norm_dtype\":\"\",\"softmax_dtype\":\"\",\"loss_dtype\":\"\",\"skipped_steps\":0,\"initial_scale\":null,\"final_scale\":null,\"injected_overflow_step\":null,\"overflow_handled\":false,\"peak_bytes\":null,\"fp32_peak_bytes\":null}" ;;
    "unsupported:$mode")
      echo "{\"type\":\"amp\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"error_kind\":\"not_supported\",\"error\":\"Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype\",\"ms\":null,\"steps\":30,\"loss_start\":null,\"loss_end\":null,\"fp32_loss_end\":null,\"loss_rel_diff\":null,\"loss_tolerance\":0.02,\"params_changed\":false,\"matmul_dtype\":\"\",\"layer_norm_dtype\":\"\",\"softmax_dtype\":\"\",\"loss_dtype\":\"\",\"skipped_steps\":0,\"initial_scale\":null,\"final_scale\":null,\"injected_overflow_step\":null,\"overflow_handled\":false,\"peak_bytes\":null,\"fp32_peak_bytes\":null}" ;;
    *)
      echo "{\"type\":\"amp\",\"mode\":\"$mode\",\"ran\":true,\"ok\":true,\"error_kind\":\"none\",\"error\":\"\",\"ms\":40,\"steps\":30,\"loss_start\":2.3026,\"loss_end\":0.5021,\"fp32_loss_end\":0.5003,\"loss_rel_diff\":0.0036,\"loss_tolerance\":0.02,\"params_changed\":true,\"matmul_dtype\":\"bf16\",\"layer_norm_dtype\":\"fp32\",\"softmax_dtype\":\"fp32\",\"loss_dtype\":\"fp32\",\"skipped_steps\":1,\"initial_scale\":65536,\"final_scale\":$scale,\"injected_overflow_step\":$injected,\"overflow_handled\":$handled,\"peak_bytes\":62914560,\"fp32_peak_bytes\":115343360}" ;;
  esac
done
bench_size=$(printf '%s' "$plan" | sed -n 's/.*"bench_size":\([0-9]*\).*/\1/p')
if [ -n "$bench_size" ] && [ "$bench_size" -gt 0 ]; then
  # Throughput: fp32 1x; bf16 15x, or no faster than fp32 with FAKE_ENGINE=slowbf16.
  for mode in $modes; do
    case "$mode" in fp32) t=50 ;; tf32) t=400 ;; bf16) t=750; [ "$behaviour" = slowbf16 ] && t=40 ;; *) t=700 ;; esac
    ms=$(awk -v n="$bench_size" -v t="$t" 'BEGIN { printf "%.9g", 2 * n * n * n / (t * 1e9) }')
    case "$behaviour" in
      "oom:$mode")
        echo "{\"type\":\"bench\",\"mode\":\"$mode\",\"ran\":false,\"ok\":false,\"error_kind\":\"unavailable\",\"error\":\"CUDA out of memory. Tried to allocate 4.00 GiB\",\"size\":$bench_size,\"reps\":0,\"ms\":null,\"tflops\":null,\"timer\":\"cuda events\"}" ;;
      *)
        echo "{\"type\":\"bench\",\"mode\":\"$mode\",\"ran\":true,\"ok\":true,\"error_kind\":\"none\",\"error\":\"\",\"size\":$bench_size,\"reps\":20,\"ms\":$ms,\"tflops\":$t,\"timer\":\"cuda events\"}" ;;
    esac
  done
fi
echo '{"type":"done"}'
[ "$behaviour" = linger ] && sleep 1000
exit 0
