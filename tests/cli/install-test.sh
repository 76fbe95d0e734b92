#!/bin/sh
# Installs the build into a temporary prefix, then runs the installed binary: it must find its
# engine in ../libexec/precision-probe and answer; and cpack must build a .deb holding both.
#   usage: install-test.sh BUILD_DIR [--deb]
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
"$prefix/bin/precision-probe" --version | grep -q '^precision-probe '
json=$(env -u PRECISION_PROBE_ENGINE "$prefix/bin/precision-probe" --device cpu --format json --no-amp) || true
if [ -x "$prefix/libexec/precision-probe/precision-probe-engine" ]; then
  echo "$json" | grep -q '"source": "engine"\|"source": "build cache"' || { echo "the installed probe did not use its engine"; echo "$json" | head -40; exit 1; }
  echo "$json" | grep -q 'engine-not-installed' && { echo "the installed probe did not find its engine"; exit 1; }
fi
if [ "${2:-}" = --deb ]; then
  out=$(mktemp -d)
  (cd "$build" && cpack -G DEB -B "$out" >/dev/null)
  deb=$(ls "$out"/*.deb)
  dpkg-deb -c "$deb" | grep -q './usr/bin/precision-probe$' || { echo "no usr/bin/precision-probe in $deb"; exit 1; }
  if [ -x "$prefix/libexec/precision-probe/precision-probe-engine" ]; then
    dpkg-deb -c "$deb" | grep -q './usr/libexec/precision-probe/precision-probe-engine$' || { echo "no engine in $deb"; exit 1; }
  fi
  rm -rf "$out"
fi
echo "installed and ran: ok"
