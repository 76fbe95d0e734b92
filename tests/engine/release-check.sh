#!/bin/sh
# A LibTorch release against the engine's tables (src/engine/torch/c_api.hpp, ops.hpp): every C
# function the engine looks up is exported by the library that should export it from the release
# the table names (and not before: the table's "since" is true), its prototype is the one the
# release's own headers declare (a compile check with their shim headers), and every operator's
# schema is a `func:` line of the release's native_functions.yaml.
#   usage: release-check.sh TABLES SITE VERSION CXX SRC_DIR
#   TABLES: tests/engine/print_tables.cpp's program; SITE holds torch/ (and, in ./dev's cache,
#   libtorch_cuda.exports: what libtorch_cuda.so exports, the library itself being left out).
set -eu
tables=$1 site=$2 version=$3 cxx=$4 src=$5
minor=$(echo "$version" | cut -d. -f2)
lib="$site/torch/lib"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tables" > "$work/tables"
exports() {  # the C names a library exports, one a line
  nm -D --defined-only "$1" | awk '{print $NF}' | grep -E '^(aoti_torch_|torch_)' | sort -u
}
exports "$lib/libtorch_cpu.so" > "$work/cpu"
if [ -f "$lib/libtorch_cuda.so" ]; then
  exports "$lib/libtorch_cuda.so" > "$work/cuda"
elif [ -f "$site/libtorch_cuda.exports" ]; then
  cp "$site/libtorch_cuda.exports" "$work/cuda"
else
  echo "no libtorch_cuda.so nor its exports list in $site"
  exit 1
fi
failed=0 exported=0
while read -r kind name since need where; do
  [ "$kind" = function ] || continue
  since_minor=$(echo "$since" | cut -d. -f2)
  if grep -qx "$name" "$work/$where"; then present=1; else present=0; fi
  if [ "$since_minor" -le "$minor" ] && [ $present = 0 ]; then
    echo "FAIL: $name ($need, since $since) is not exported by LibTorch $version's libtorch_$where.so"
    failed=1
  elif [ "$since_minor" -gt "$minor" ] && [ $present = 1 ]; then
    echo "FAIL: $name is exported by LibTorch $version, but the table says it came in $since"
    failed=1
  elif [ $present = 1 ]; then
    exported=$((exported + 1))
  fi
done < "$work/tables"

# The prototypes, against the release's own declarations.
inc="$site/torch/include"
{
  for h in torch/csrc/inductor/aoti_torch/c/shim.h torch/csrc/inductor/aoti_torch/generated/c_shim_aten.h \
           torch/csrc/inductor/aoti_torch/generated/c_shim_cpu.h torch/csrc/inductor/aoti_torch/generated/c_shim_cuda.h \
           torch/csrc/stable/c/shim.h; do
    [ -f "$inc/$h" ] && echo "#include <$h>"
  done
  echo '#include <type_traits>'
  echo '#include "engine/torch/c_api.hpp"'
  echo 'namespace tc = precision_probe::engine::torch_c;'
  while read -r kind name since need where; do
    [ "$kind" = function ] || continue
    [ "$(echo "$since" | cut -d. -f2)" -le "$minor" ] || continue
    echo "static_assert(std::is_same_v<decltype(&::$name), decltype(tc::Functions::$name)>, \"$name\");"
  done < "$work/tables"
} > "$work/check.cpp"
declared=$(grep -c static_assert "$work/check.cpp")
if ! "$cxx" -std=c++17 -fsyntax-only -DUSE_CUDA -I"$src" -isystem "$inc" "$work/check.cpp" > "$work/cc.log" 2>&1; then
  echo "FAIL: the engine's prototypes differ from LibTorch $version's headers:"
  grep -E 'error|static assertion' "$work/cc.log" | head -20
  failed=1
fi

# The operators' schemas, against the release's native_functions.yaml.
yaml="$site/torchgen/packaged/ATen/native/native_functions.yaml"
schemas=0
sed -n 's/^- func: //p' "$yaml" | tr -s ' ' > "$work/funcs"
while read -r kind since schema; do
  [ "$kind" = operator ] || continue
  [ "$(echo "$since" | cut -d. -f2)" -le "$minor" ] || continue
  if grep -qxF "$(echo "$schema" | tr -s ' ')" "$work/funcs"; then
    schemas=$((schemas + 1))
  else
    echo "FAIL: LibTorch $version's native_functions.yaml has no \`$schema\`"
    failed=1
  fi
done < "$work/tables"
echo "LibTorch $version: $exported functions exported, $declared prototypes as its headers declare them, $schemas operator schemas in its native_functions.yaml"
exit $failed
