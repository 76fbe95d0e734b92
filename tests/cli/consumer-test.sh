#!/bin/sh
# Installs the build into a temporary prefix, builds tests/consumer against the installed
# package (find_package(precision-probe)), and reads a report the probe wrote with it.
# The probe runs with the fake engine and driver, in an "image" whose PyTorch is FAKE_TORCH.
#   usage: consumer-test.sh BUILD_DIR SOURCE_DIR FAKE_ENGINE FAKE_DRIVER FAKE_TORCH
set -eu
build=$1 source=$2 engine=$3 driver=$4 torch=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$source/tests/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
env -u CUDA_VISIBLE_DEVICES -u TORCH_ALLOW_TF32_CUBLAS_OVERRIDE PRECISION_PROBE_TORCH="$torch" \
  PRECISION_PROBE_ENGINE="$engine" PRECISION_PROBE_LIBCUDA="$driver" \
  PRECISION_PROBE_LIBNVML="$driver" FAKE_NVIDIA_GPUS='NVIDIA H200:9.0:132:141' \
  "$build/bin/precision-probe" --format json --require bf16 -o "$work/report.json"
out=$("$work/build/report-consumer" "$work/report.json")
echo "$out"
echo "$out" | grep -q '^exit ' || { echo "no exit line"; exit 1; }
echo "$out" | grep -q '^GPU 0: fp32 tf32 fp16 bf16 .*amp_fp16 amp_bf16$' || { echo "GPU 0 is not read as the probe reported it"; exit 1; }
echo "$out" | grep -q '^CPU: fp32' || { echo "the CPU's fp32 is not native in the consumer's reading"; exit 1; }
echo "$out" | grep -q '^same document$' || { echo "the consumer wrote back a different document"; exit 1; }
echo '{"schema_version": 1' > "$work/broken.json"
if "$work/build/report-consumer" "$work/broken.json" 2>"$work/err"; then echo "a broken report was read"; exit 1; fi
grep -q 'not a JSON document' "$work/err" || { cat "$work/err"; exit 1; }
echo "consumer built against the installed package and read the report: ok"
