#!/bin/sh
# The probe and its engine run in images they were not built in (docs/images.md): each may need
# the C library alone (libc, libm, the loader: the C++ runtime and GCC's unwinder are linked in),
# no libstdc++ symbol, and no glibc symbol newer than 2.34 (pytorch/pytorch 2.9 images are Ubuntu
# 22.04, glibc 2.35); the engine loads the image's LibTorch, with the image's libstdc++, so it
# must export none of its own symbols, which would take LibTorch's place. And the tarball `cpack -G TGZ`
# makes holds both, bin/precision-probe and libexec/precision-probe/precision-probe-engine, to be
# mounted into an image (/opt/precision-probe:/pp).
#   usage: portable-test.sh PROBE ENGINE BUILD_DIR
set -eu
probe=$1
engine=$2
build=$3
# The floor is the build host's: a binary linked against a newer glibc takes its newer symbols
# (Ubuntu 24.04's 2.38 __isoc23_strtol). The portable binaries are built on Debian 12 (glibc 2.36),
# as CI does; built elsewhere, the floor cannot be checked (exit 77: skipped).
host=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
if [ -n "$host" ] && [ "$(printf '%s\n2.36\n' "$host" | sort -V | tail -n 1)" != 2.36 ]; then
  echo "built against glibc $host, newer than Debian 12's 2.36: the floor is that host's (build the portable binaries on Debian 12 or older)"
  exit 77
fi
check() {  # NAME BINARY ALLOWED-NEEDED...
  name=$1 binary=$2
  shift 2
  needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for lib in $needed; do
    ok=0
    for allowed in "$@"; do
      case $lib in $allowed) ok=1 ;; esac
    done
    [ $ok = 1 ] || { echo "the $name needs $lib: only $* may be needed"; exit 1; }
  done
  versions=$(readelf -V "$binary" | grep -oE 'Name: (GLIBC_[0-9][0-9.]*|GLIBCXX_[0-9.]*|CXXABI_[0-9.]*)' | sed 's/Name: //' | sort -u)
  if echo "$versions" | grep -q '^GLIBCXX\|^CXXABI'; then
    echo "the $name needs libstdc++: $(echo "$versions" | grep '^GLIBCXX\|^CXXABI' | tr '\n' ' ')"
    exit 1
  fi
  newest=$(echo "$versions" | sed -n 's/^GLIBC_//p' | sort -V | tail -n 1)
  if [ "$(printf '%s\n2.34\n' "$newest" | sort -V | tail -n 1)" != 2.34 ]; then
    echo "the $name needs glibc $newest: $(objdump -T "$binary" | grep "GLIBC_$newest" | head -3)"
    exit 1
  fi
  echo "$name needs: $(echo $needed); glibc $newest at most"
}
check probe "$probe" libc.so.6 libm.so.6 'ld-linux-*.so.*'
check engine "$engine" libc.so.6 libm.so.6 'ld-linux-*.so.*'
# An exception thrown and caught in the probe goes through the linked-in unwinder (and its
# _dl_find_object of src/portable/portable.cpp): a flag CLI11 refuses is exit 2 with its message.
set +e
refused=$("$probe" --no-such-flag 2>&1 >/dev/null)
rc=$?
set -e
[ $rc = 2 ] && echo "$refused" | grep -q -- '--no-such-flag' ||
  { echo "the probe did not refuse an unknown flag (exit $rc): $refused"; exit 1; }
# What the engine's dynamic symbol table defines: glibc's data it refers to (copy relocations,
# versioned GLIBC_*) and nothing of its own.
own=$(nm -D --defined-only "$engine" | awk '{print $NF}' | grep -v '@GLIBC_' || true)
[ -z "$own" ] || { echo "the engine exports symbols of its own: $(echo "$own" | head -5 | tr '\n' ' ')"; exit 1; }
echo "engine exports nothing of its own"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G TGZ -B "$out" >/dev/null)
tgz=$(ls "$out"/*.tar.gz)
tar -tzf "$tgz" | grep -q '/bin/precision-probe$' || { echo "no bin/precision-probe in $tgz"; exit 1; }
tar -tzf "$tgz" | grep -q '/libexec/precision-probe/precision-probe-engine$' || { echo "no engine in $tgz"; exit 1; }
echo "tarball: $(basename "$tgz") holds bin/precision-probe and libexec/precision-probe/precision-probe-engine"
