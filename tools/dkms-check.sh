#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build krdma with DKMS, as a host would, against a kernel line's headers,
# in private DKMS trees (nothing of the host's own DKMS state is touched).
#   dkms-check.sh 6.1|6.12|RELEASE
# Exits 0 when `dkms add` and `dkms build` succeed and built krdma.ko for
# that release, with the version dkms.conf names.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
rel=$("$here/kver.sh" "${1:?usage: dkms-check.sh 6.1|6.12|RELEASE}")
kdir=$("$here/kdir.sh" "$rel")
command -v dkms >/dev/null || { echo "dkms-check: dkms is not installed (tools/lab-setup.sh)" >&2; exit 1; }
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$top/dkms.conf")
[ "$ver" = "$(sed -n 's/^#define KRDMA_VERSION\t"\(.*\)"$/\1/p' "$top/krdma_core.h")" ] ||
	{ echo "dkms-check: dkms.conf's version $ver is not KRDMA_VERSION" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$tmp/src/krdma-$ver
mkdir -p "$src" "$tmp/dkms"
# What a release tarball would hold: the tracked sources (or, outside a
# git checkout, the tree without build output).
if git -C "$top" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$top" ls-files -z -co --exclude-standard | (cd "$top" && cpio -0pdm --quiet "$src")
else
	(cd "$top" && find . -path ./build -prune -o -type f -print0 | cpio -0pdm --quiet "$src")
fi
d=(dkms --dkmstree "$tmp/dkms" --sourcetree "$tmp/src")
"${d[@]}" add -m krdma -v "$ver" >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log" >&2; echo "dkms-check: dkms add failed" >&2; exit 1; }
if ! "${d[@]}" build -m krdma -v "$ver" -k "$rel" --kernelsourcedir "$kdir" >"$tmp/log" 2>&1; then
	cat "$tmp/log" "$tmp/dkms/krdma/$ver/build/make.log" 2>/dev/null | tail -n 30 >&2
	echo "dkms-check: dkms build for $rel failed" >&2
	exit 1
fi
ko=$(find "$tmp/dkms/krdma/$ver/$rel" -name 'krdma.ko*' | head -n 1)
[ -n "$ko" ] || { echo "dkms-check: no krdma.ko for $rel after dkms build" >&2; exit 1; }
echo "dkms-check: built $(basename "$ko") $ver for $rel"

# make install, as the README has it, into a scratch root: the module
# lands in updates/ and depmod indexes it (modprobe would find it).
inst=$tmp/root
if ! make -C "$src" KVER="$rel" INSTALL_MOD_PATH="$inst" install >"$tmp/log" 2>&1; then
	tail -n 30 "$tmp/log" >&2
	echo "dkms-check: make install for $rel failed" >&2
	exit 1
fi
grep -q '^updates/krdma.ko' "$inst/lib/modules/$rel/modules.dep" ||
	{ echo "dkms-check: make install left no updates/krdma.ko in modules.dep" >&2; exit 1; }
echo "dkms-check: make install put krdma.ko in updates/ for $rel"
