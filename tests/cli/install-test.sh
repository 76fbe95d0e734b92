#!/bin/sh
# Installs the build into a temporary prefix, then runs the installed binary: it must find its
# engine in ../libexec/precision-probe and, given a LibTorch release (SITE, "" for none), run its
# CPU checks through it; and cpack must build a .deb holding both.
#   usage: install-test.sh BUILD_DIR SITE [--deb]
set -eu
build=$1
site=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/precision-probe" --version | grep -q '^precision-probe '
[ -x "$prefix/libexec/precision-probe/precision-probe-engine" ] || { echo "no engine installed"; exit 1; }
json=$(env -u PRECISION_PROBE_ENGINE PRECISION_PROBE_TORCH="${site:-none}" \
  "$prefix/bin/precision-probe" --device cpu --format json --no-amp) || true
if echo "$json" | grep -q 'engine-not-installed'; then
  echo "the installed probe did not find its engine"
  exit 1
fi
if [ -n "$site" ]; then
  echo "$json" | grep -q '"abi_version": "[0-9]' || { echo "the installed engine loaded no LibTorch"; echo "$json" | head -60; exit 1; }
  echo "$json" | grep -q '"ran": true' || { echo "no check ran through the installed engine"; exit 1; }
fi
if [ "${3:-}" = --deb ]; then
  out=$(mktemp -d)
  (cd "$build" && cpack -G DEB -B "$out" >/dev/null)
  deb=$(ls "$out"/*.deb)
  dpkg-deb -c "$deb" | grep -q './usr/bin/precision-probe$' || { echo "no usr/bin/precision-probe in $deb"; exit 1; }
  dpkg-deb -c "$deb" | grep -q './usr/libexec/precision-probe/precision-probe-engine$' || { echo "no engine in $deb"; exit 1; }
  depends=$(dpkg-deb -f "$deb" Depends)
  [ "$depends" = "libc6 (>= 2.34)" ] || { echo "the package depends on '$depends', not the C library alone"; exit 1; }
  rm -rf "$out"
fi
echo "installed and ran: ok"
