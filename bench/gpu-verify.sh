#!/usr/bin/env bash
# Everything the GPU machine has to show: the reports, every mode's relative error, the
# diagnostics of a misconfigured environment, a GPU whose memory another process holds, the soak
# with an injected fault, the probe and engine copied out of the build tree, the block-scaled calls
# reaching LibTorch, collectives, compute-sanitizer, and the benchmarks. Writes verify.log (every
# section), report.json and the benchmark JSON files to $OUT (default ./gpu-verify), and prints a
# short table last. Run after ./dev gpu-test has built build-gpu.
#
#   bench/gpu-verify.sh [PART...]   PART: reports, modes, memory, soak, copied, blockscaled, nccl,
#                                   sanitizer, startup, throughput (default: all, in that order)
#   BASELINE=DIR/bin/precision-probe bench/gpu-verify.sh startup throughput
#                                   start-up and --bench side by side with another build
#   BASELINE=... bench/gpu-verify.sh startup-one-cpu startup-all-cpus
#                                   issue 39's figures (not in the default list: a few minutes
#                                   each): the floor, one CPU, every process's memory, 1, 2, 4, 8
#                                   copies of GPU 0; bench-startup.json in $OUT/startup-*-cpu*/
#   BASELINE=... bench/gpu-verify.sh startup-quota-ways
#                                   the engine's settings for a CPU quota as variants, under a
#                                   cgroup of one CPU's quota (made as root) and on all CPUs
#   BASELINE=build-baseline/bin/precision-probe bench/gpu-verify.sh startup-quota quota-verdicts quota-measure
#                                   issue 39's confirmation under one CPU's quota, against the
#                                   baseline ./dev gpu-baseline built (./dev stage-baseline COMMIT
#                                   where git is): the start-up (RUNS rounds, default 6, with the
#                                   floor, the Python check, the traced GPU's checks with and without
#                                   the CPU's, 1, 2, 4, 8 copies of GPU 0); seeds 1 and 2 of both
#                                   builds and a hung GPU check; --bench and --soak of both builds
set -uo pipefail
OUT=${OUT:-gpu-verify}
mkdir -p "$OUT"
P=build-gpu/bin/precision-probe
LOG="$OUT/verify.log"
touch "$LOG"
section() {
  local name=$1; shift
  { echo "===== $name: $*"; "$@" 2>&1; echo "===== $name: exit $?"; echo; } >> "$LOG"
}
gpus=$(nvidia-smi -L | wc -l)
site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))')

reports() {
  section topology nvidia-smi topo -m
  [ "$gpus" -ge 2 ] && section nvlink nvidia-smi nvlink -s -i 0
  section report $P --seed 1
  $P --seed 1 --format json > "$OUT/report.json"
  section quick $P --quick
  section no-visible-devices env CUDA_VISIBLE_DEVICES= $P --require bf16
  section visible-device-7 env CUDA_VISIBLE_DEVICES=7 $P --require bf16
  section no-driver-library env PRECISION_PROBE_LIBCUDA=libcuda-missing.so.1 PRECISION_PROBE_LIBNVML=libnvidia-ml-missing.so.1 $P --require bf16
  section tf32-override env TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 $P --device 0 --no-amp
  section no-torch env PRECISION_PROBE_TORCH=/nonexistent $P --require bf16
  section arch-7.5 $P arch 7.5 --require bf16
  section markdown $P --format markdown --no-amp
  section prometheus-promtool-free $P --format prometheus --no-amp
  section bench $P --bench --device 0 --no-amp
  section trace env PRECISION_PROBE_TRACE=1 $P --format json -o /dev/null
}

# Every mode of report.json: its status, relative error, tolerance and how it was called.
modes() {
  [ -f "$OUT/report.json" ] || $P --seed 1 --format json > "$OUT/report.json"
  section modes python3 -c "
import json
r = json.load(open('$OUT/report.json'))
for d in r['devices']:
    for m, p in d['precisions'].items():
        s = p['smoke']
        print(f\"{d['kind']}{'' if d['index'] is None else d['index']:<2} {m:14} {p['status']:12} \"
              f\"{s['rel_error'] if s['rel_error'] is not None else '-':<24} {s['tolerance'] or '-':<8} {s['method'] or p['reason'][:60]}\")
    for m, a in d.get('amp', {}).items():
        print(f\"{d['kind']}{'' if d['index'] is None else d['index']:<2} {m:14} {a['status']:12} loss {a['loss_start']} -> {a['loss_end']} vs fp32 {a['fp32_loss_end']}: {a['method'][:70]}\")
"
}

# Another process holds all but LEFT MiB of GPU 0's memory (MEMORY_LEFT, default "4096 1024 256"):
# what could not run is not_tested (never failed, never exit 4), a requirement that needed it is
# exit 3, the holder is named, and --bench sizes its GEMMs to what is free.
memory() {
  local left
  for left in ${MEMORY_LEFT:-4096 1024 256}; do
    python3 - "$left" > "$OUT/holder-$left.log" 2>&1 <<'EOF' &
import sys, time, torch
free, total = torch.cuda.mem_get_info(0)
hold = torch.empty(free - int(sys.argv[1]) * 2**20, dtype=torch.uint8, device="cuda:0")
print(f"holding {hold.numel() / 2**30:.1f} GiB of {total / 2**30:.1f}", flush=True)
time.sleep(120)
EOF
    local holder=$!
    for _ in $(seq 60); do grep -q holding "$OUT/holder-$left.log" && break; sleep 0.5; done
    section "memory-held-$left-MiB-left" $P --device 0 --require bf16,amp_bf16
    section "memory-held-$left-MiB-left-bench" $P --device 0 --bench --no-amp --format json -o "$OUT/memory-$left.json"
    section "memory-held-$left-MiB-left-bench-sizes" python3 -c "import json; d = json.load(open('$OUT/memory-$left.json'))['devices'][0]; [print(m, b['size'], b['note'] or b['error']) for m, b in d.get('bench', {}).items()]; print([p['pid'] for p in d['gpu']['processes']])"
    kill "$holder"; wait "$holder" 2>/dev/null
  done
}

# --soak 30 with one bit of bf16's 200th result flipped: caught there, exit 4; every other mode
# (tf32 in its own process) bit-exact.
soak() {
  section soak-30-injected env PRECISION_PROBE_INJECT_FAULT=bf16:200:0 $P --device 0 --no-amp --soak 30 --format json -o "$OUT/soak.json"
  section soak-30-summary python3 -c "
import json
d = json.load(open('$OUT/soak.json'))
g = d['devices'][0]['soak']
for m, o in g['modes'].items():
    f = o.get('first_mismatch') or {}
    print(f\"{m:14} iterations {o['iterations']:>6} mismatches {o['mismatches']} first at {f.get('iteration', '-')} {o['seconds']} s {o['tflops']} TFLOP/s\")
print('exit', d['exit_code'], d['exit_reason'])
"
}

# The probe and the engine copied out of the build tree, as a pulled image gets them mounted:
# bin/ and libexec/precision-probe/, nothing else, run against this machine's torch.
copied() {
  local dir
  dir=$(mktemp -d)
  mkdir -p "$dir/bin" "$dir/libexec/precision-probe"
  cp build-gpu/bin/precision-probe "$dir/bin/"
  cp build-gpu/bin/precision-probe-engine "$dir/libexec/precision-probe/"
  section copied-out env -i PATH="$PATH" HOME=/tmp "$dir/bin/precision-probe" --seed 1 --require bf16,fp8_rowwise,amp_bf16
  section copied-out-json bash -c "env -i PATH=$PATH HOME=/tmp $dir/bin/precision-probe --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(r[\"stack\"][\"library\"], r[\"stack\"][\"abi_version\"], r[\"exit_code\"])'"
  rm -rf "$dir"
}

# cc 9.0 has no MX or NVFP4 kernels: calling them anyway must reach LibTorch and come back with
# its own architecture error (the engine's GPU test prints what LibTorch said).
blockscaled() {
  local t
  for t in build-gpu/bin/pp_engine_gpu_tests; do
    section blockscaled env PP_TEST_TORCH="$site" "$t" --gtest_filter='EngineGpu.TheBlockScaledCallsReachLibTorch'
  done
}

nccl() {
  section nccl $P --nccl --no-amp
  section nccl-json-timing bash -c "time $P --nccl --no-amp --format json > /dev/null; time $P --no-amp --format json > /dev/null"
}

sanitizer() {
  command -v compute-sanitizer > /dev/null || return 0
  section compute-sanitizer compute-sanitizer --tool memcheck --target-processes all $P --device 0 --seed 1 -q --timeout 400 --check-timeout 300
}

startup() {
  python3 bench/startup.py --probe $P --orders ${BASELINE:+--baseline "$BASELINE"} --out "$OUT" >> "$LOG" 2>&1
}

startup-one-cpu() {
  python3 bench/startup.py --probe $P --cpus 1 --copies 1,2,4,8 ${BASELINE:+--baseline "$BASELINE"} \
    --out "$OUT/startup-one-cpu" >> "$LOG" 2>&1
}

startup-all-cpus() {
  python3 bench/startup.py --probe $P --copies 1,2,4,8 ${BASELINE:+--baseline "$BASELINE"} \
    --out "$OUT/startup-all-cpus" >> "$LOG" 2>&1
}

# A cgroup of one CPU's quota, made once (as root, cgroup v2: the machine's processes are moved
# into a child cgroup first, since a cgroup that holds processes cannot hand the cpu controller down).
QUOTA=${QUOTA:-/sys/fs/cgroup/pp-1cpu}  # a cgroup of one CPU's quota (one_cpu_cgroup makes it)
one_cpu_cgroup() {
  local root=/sys/fs/cgroup q=$QUOTA p
  [ -f $q/cpu.max ] && grep -q '^100000 100000$' $q/cpu.max && return 0
  if mkdir -p $root/pp-leaf $q; then
    for p in $(cat $root/cgroup.procs); do echo "$p" > $root/pp-leaf/cgroup.procs 2> /dev/null; done
    echo +cpu > $root/cgroup.subtree_control && echo "100000 100000" > $q/cpu.max && return 0
  fi
  echo "gpu-verify: no cgroup of one CPU's quota could be made (root and cgroup v2 are needed)" | tee -a "$LOG" >&2
  return 1
}

# The engine's settings for a CPU quota (docs/performance.md, "The CPU's checks under a quota"),
# each a variant against the default: under one CPU's quota, then on all CPUs. Each bench is kept
# inside a time limit and leaves what it measured if stopped.
startup-quota-ways() {
  one_cpu_cgroup || return 1
  timeout 300 python3 bench/startup.py --probe $P --cgroup "$QUOTA" --runs 3 --memory-runs 2 \
    ${BASELINE:+--baseline "$BASELINE"} \
    --variant mask:PRECISION_PROBE_ENGINE_CPUS=mask \
    --variant beside:PRECISION_PROBE_ENGINE_CPU_CHECKS=beside \
    --variant blocking:PRECISION_PROBE_ENGINE_WAIT=blocking \
    --out "$OUT/startup-quota-ways" >> "$LOG" 2>&1
  timeout 150 python3 bench/startup.py --probe $P --runs 3 --memory-runs 2 ${BASELINE:+--baseline "$BASELINE"} \
    --variant in-turn:PRECISION_PROBE_ENGINE_CPU_TRAINING=in-turn \
    --variant blocking:PRECISION_PROBE_ENGINE_WAIT=blocking \
    --out "$OUT/startup-all-cpus-ways" >> "$LOG" 2>&1
}

# Issue 39's figures under one CPU's quota, against BASELINE (docs/performance.md).
startup-quota() {
  one_cpu_cgroup || return 1
  timeout "${STARTUP_TIMEOUT:-540}" python3 bench/startup.py --probe $P --cgroup $QUOTA --runs "${RUNS:-6}" --memory-runs 2 \
    --copies 1,2,4,8 ${BASELINE:+--baseline "$BASELINE"} --out "$OUT/startup-quota" >> "$LOG" 2>&1
}

# Under the quota: seeds 1 and 2 of this build ("new") and BASELINE ("baseline"), every mode side by
# side; then GPU 0's bf16 made to hang (--check-timeout 5): only GPU 0's later checks fail, the CPU's
# verdicts arrive, no engine is left.
quota-verdicts() {
  one_cpu_cgroup || return 1
  local seed role reports=()
  for seed in 1 2; do
    for role in new ${BASELINE:+baseline}; do
      in_quota "$(build_of $role)" --seed $seed --format json -o "$OUT/seed$seed-$role.json"
      reports+=("$OUT/seed$seed-$role.json")
    done
  done
  section quota-seeds python3 bench/compare_reports.py verdicts "${reports[@]}"
  in_quota env PRECISION_PROBE_TRACE=1 PRECISION_PROBE_INJECT_HANG=bf16:0 "$P" --check-timeout 5 --format json \
    -o "$OUT/hung.json"
  section quota-hung-check-verdicts python3 bench/compare_reports.py verdicts "$OUT/hung.json"
  section quota-hung-check-left bash -c "sleep 1; echo engine processes left: \$(pgrep -c -f '[p]recision-probe-engine')"
}

# --bench and --soak 10 under the quota, this build and BASELINE alternating (BENCH_ROUNDS, default
# 2): each mode's figure A/B; then a soak of GPU 0 with bf16's 20th result's bit flipped: caught,
# exit 4.
quota-measure() {
  one_cpu_cgroup || return 1
  local round role benches=() soaks=()
  for round in $(seq "${BENCH_ROUNDS:-2}"); do
    for role in new ${BASELINE:+baseline}; do
      in_quota "$(build_of $role)" --bench --device 0 --no-amp --format json -o "$OUT/bench$round-$role.json"
      benches+=("$OUT/bench$round-$role.json")
    done
  done
  for role in new ${BASELINE:+baseline}; do
    in_quota "$(build_of $role)" --soak 10 --no-amp --format json -o "$OUT/soak-quota-$role.json"
    soaks+=("$OUT/soak-quota-$role.json")
  done
  [ -n "${BASELINE:-}" ] && section quota-bench python3 bench/compare_reports.py bench "${benches[@]}"
  section quota-soak python3 bench/compare_reports.py soak "${soaks[@]}"
  in_quota env PRECISION_PROBE_INJECT_FAULT=bf16:20:0 "$P" --soak 10 --device 0 --no-amp --format json \
    -o "$OUT/soak-quota-injected.json"
  section quota-soak-injected-figures python3 bench/compare_reports.py soak "$OUT/soak-quota-injected.json"
}

build_of() { if [ "$1" = baseline ]; then echo "$BASELINE"; else echo "$P"; fi; }

# A command in the cgroup of one CPU's quota, its exit said in the log (125: the move failed). The
# report it is to write (-o FILE, last) is removed first: a run that writes none leaves none to read.
in_quota() {
  rm -f "${!#}"
  section "quota: $*" sh -c 'echo $$ > "$0/cgroup.procs" || exit 125; exec "$@"' "$QUOTA" "$@"
}

throughput() {
  python3 bench/throughput.py --probe $P ${BASELINE:+--baseline "$BASELINE"} --out "$OUT" >> "$LOG" 2>&1
}

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(reports modes memory soak copied blockscaled nccl sanitizer startup throughput)
for part in "${parts[@]}"; do
  case $part in
    reports | modes | memory | soak | copied | blockscaled | nccl | sanitizer | startup | throughput | \
      startup-one-cpu | startup-all-cpus | startup-quota-ways | startup-quota | quota-verdicts | quota-measure) "$part" ;;
    *) echo "gpu-verify: unknown part '$part'" >&2; exit 2 ;;
  esac
done
grep -E "^===== .*: exit|TF/s|TFLOP/s|full probe|one CPU:|GPU's checks done|each device added|each added device|NOTE:|AMP section|--quick|baseline|the default's time|at least PyTorch|engine start|^(cuda|cpu)[0-9 ]|^(fp32|tf32|fp16|bf16|fp8|int8|mx|nvfp)|LibTorch said|libtorch_c|^exit [0-9]|gpu-memory-busy|sized to|collectives|by round|statuses the same|statuses differ|A/B|mismatches,|engine processes left" "$LOG"
