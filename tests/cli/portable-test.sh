#!/bin/sh
# The probe runs in images it was not built in (docs/images.md): it may need the C library (libc,
# libm, the loader) and libgcc_s alone, no libstdc++ symbol, and no glibc symbol newer than 2.34
# (pytorch/pytorch 2.9 images are Ubuntu 22.04, glibc 2.35). And the tarball `cpack -G TGZ` makes
# holds it as bin/precision-probe, to be mounted into an image (/opt/precision-probe:/pp).
#   usage: portable-test.sh PROBE BUILD_DIR
set -eu
probe=$1
build=$2
# The floor is the build host's: a probe linked against a newer glibc takes its newer symbols
# (Ubuntu 24.04's 2.38 __isoc23_strtol). The portable probe is built on Debian 12 (glibc 2.36),
# as CI does; built elsewhere, the floor cannot be checked (exit 77: skipped).
host=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc //p')
if [ -n "$host" ] && [ "$(printf '%s\n2.36\n' "$host" | sort -V | tail -n 1)" != 2.36 ]; then
  echo "built against glibc $host, newer than Debian 12's 2.36: the floor is that host's (build the portable probe on Debian 12 or older)"
  exit 77
fi
needed=$(readelf -d "$probe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  case $lib in
    libc.so.6 | libm.so.6 | libgcc_s.so.1 | ld-linux-*.so.* | libdl.so.2 | libpthread.so.0) ;;
    *) echo "the probe needs $lib: only the C library and libgcc_s may be needed"; exit 1 ;;
  esac
done
versions=$(readelf -V "$probe" | grep -oE 'Name: (GLIBC_[0-9][0-9.]*|GLIBCXX_[0-9.]*|CXXABI_[0-9.]*)' | sed 's/Name: //' | sort -u)
if echo "$versions" | grep -q '^GLIBCXX\|^CXXABI'; then
  echo "the probe needs libstdc++: $(echo "$versions" | grep '^GLIBCXX\|^CXXABI' | tr '\n' ' ')"
  exit 1
fi
newest=$(echo "$versions" | sed -n 's/^GLIBC_//p' | sort -V | tail -n 1)
if [ "$(printf '%s\n2.34\n' "$newest" | sort -V | tail -n 1)" != 2.34 ]; then
  echo "the probe needs glibc $newest: $(objdump -T "$probe" | grep "GLIBC_$newest" | head -3)"
  exit 1
fi
echo "needs: $(echo $needed); glibc $newest at most"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
(cd "$build" && cpack -G TGZ -B "$out" >/dev/null)
tgz=$(ls "$out"/*.tar.gz)
tar -tzf "$tgz" | grep -q '/bin/precision-probe$' || { echo "no bin/precision-probe in $tgz"; exit 1; }
echo "tarball: $(basename "$tgz") holds bin/precision-probe"
