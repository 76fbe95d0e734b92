#!/bin/sh
# The probe and its engine run in images they were not built in (docs/images.md): each may need
# the C library alone (glibc's libraries and the loader: the C++ runtime and its unwinder are
# linked in), no libstdc++ symbol, no glibc symbol newer than FLOOR, and no RPATH or RUNPATH; the
# engine loads the image's LibTorch, with the image's libstdc++, so it must export none of its own
# symbols, which would take LibTorch's place. And the tarball holds both,
# bin/precision-probe and libexec/precision-probe/precision-probe-engine, to be mounted into an
# image (/opt/precision-probe:/pp).
#   usage: portable-test.sh PROBE ENGINE BUILD_DIR|TARBALL [FLOOR [ARCH]]
# FLOOR (default 2.34): Debian 12's g++ build; the distribution's zig build (./dev dist) is held to
# 2.28 for x86_64 and aarch64 alike (ARCH: the ELF machine the binaries must be for). Given a
# BUILD_DIR, `cpack -G TGZ` makes the tarball there; else TARBALL is checked.
set -eu
probe=$1
engine=$2
packed=$3
floor=${4:-2.34}
arch=${5:-}
for binary in "$probe" "$engine"; do
  [ -f "$binary" ] || { echo "no $binary: build it first (the distribution's: ./dev dist)"; exit 1; }
done
# Debian 12's g++ links against the build host's glibc: a newer one's symbols are taken
# (Ubuntu 24.04's 2.38 __isoc23_strtol). Those binaries are built on Debian 12 (glibc 2.36), as CI
# does; built elsewhere, the floor cannot be checked (exit 77: skipped). zig's targets a glibc
# version from any host: its floor is always checked.
if [ "$floor" = 2.34 ]; then
  host=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
  if [ -n "$host" ] && [ "$(printf '%s\n2.36\n' "$host" | sort -V | tail -n 1)" != 2.36 ]; then
    echo "built against glibc $host, newer than Debian 12's 2.36: the floor is that host's (build the portable binaries on Debian 12 or older)"
    exit 77
  fi
fi
# Below 2.34, libdl, libpthread and librt were libraries of their own (glibc's, everywhere).
allowed="libc.so.6 libm.so.6 ld-linux-*.so.*"
if [ "$(printf '%s\n2.34\n' "$floor" | sort -V | head -n 1)" != 2.34 ]; then
  allowed="$allowed libdl.so.2 libpthread.so.0 librt.so.1"
fi
case $arch in
  x86_64) machine='Advanced Micro Devices X86-64' ;;
  aarch64) machine='AArch64' ;;
  '') machine='' ;;
  *) echo "unknown architecture $arch"; exit 1 ;;
esac
check() {  # NAME BINARY
  name=$1 binary=$2
  if [ -n "$machine" ]; then
    got=$(readelf -h "$binary" | sed -n 's/^ *Machine: *//p')
    [ "$got" = "$machine" ] || { echo "the $name is for $got, not $arch"; exit 1; }
  fi
  needed=$(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for lib in $needed; do
    ok=0
    for pattern in $allowed; do
      # shellcheck disable=SC2254 # a pattern
      case $lib in $pattern) ok=1 ;; esac
    done
    [ $ok = 1 ] || { echo "the $name needs $lib: only $allowed may be needed"; exit 1; }
  done
  paths=$(readelf -d "$binary" | grep -E '\((RPATH|RUNPATH)\)' || true)
  [ -z "$paths" ] || { echo "the $name has a search path of its own: $paths"; exit 1; }
  versions=$(readelf -V "$binary" | grep -oE 'Name: (GLIBC_[0-9][0-9.]*|GLIBCXX_[0-9.]*|CXXABI_[0-9.]*)' | sed 's/Name: //' | sort -u)
  if echo "$versions" | grep -q '^GLIBCXX\|^CXXABI'; then
    echo "the $name needs libstdc++: $(echo "$versions" | grep '^GLIBCXX\|^CXXABI' | tr '\n' ' ')"
    exit 1
  fi
  newest=$(echo "$versions" | sed -n 's/^GLIBC_//p' | sort -V | tail -n 1)
  if [ "$(printf '%s\n%s\n' "$newest" "$floor" | sort -V | tail -n 1)" != "$floor" ]; then
    echo "the $name needs glibc $newest, newer than $floor: $(objdump -T "$binary" | grep "GLIBC_$newest" | head -3)"
    exit 1
  fi
  echo "$name${arch:+ ($arch)} needs: $(echo $needed); glibc $newest at most (floor $floor)"
}
check probe "$probe"
check engine "$engine"
# An exception thrown and caught in the probe goes through the linked-in unwinder (and its
# _dl_find_object of src/portable/portable.cpp): a flag CLI11 refuses is exit 2 with its message.
# Only where this machine runs the binaries' architecture (aarch64 ones run under emulation in a
# test of their own).
if [ -z "$arch" ] || [ "$arch" = "$(uname -m)" ]; then
  set +e
  refused=$("$probe" --no-such-flag 2>&1 >/dev/null)
  rc=$?
  set -e
  [ $rc = 2 ] && echo "$refused" | grep -q -- '--no-such-flag' ||
    { echo "the probe did not refuse an unknown flag (exit $rc): $refused"; exit 1; }
else
  echo "not run here ($(uname -m)): $arch binaries"
fi
# What the engine's dynamic symbol table defines: glibc's data it refers to (copy relocations,
# versioned GLIBC_*) and nothing of its own.
own=$(nm -D --defined-only "$engine" | awk '{print $NF}' | grep -v '@GLIBC_' || true)
[ -z "$own" ] || { echo "the engine exports symbols of its own: $(echo "$own" | head -5 | tr '\n' ' ')"; exit 1; }
echo "engine exports nothing of its own"
if [ -d "$packed" ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  (cd "$packed" && cpack -G TGZ -B "$out" >/dev/null)
  tgz=$(ls "$out"/*.tar.gz)
else
  tgz=$packed
fi
tar -tzf "$tgz" | grep -q '/bin/precision-probe$' || { echo "no bin/precision-probe in $tgz"; exit 1; }
tar -tzf "$tgz" | grep -q '/libexec/precision-probe/precision-probe-engine$' || { echo "no engine in $tgz"; exit 1; }
echo "tarball: $(basename "$tgz") holds bin/precision-probe and libexec/precision-probe/precision-probe-engine"
