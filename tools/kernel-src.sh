#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack (once) the kernel source of an installed Debian linux-source
# package into the lab cache, and print its directory.
#   kernel-src.sh linux-source-6.1|linux-source-6.12
# ${KRDMA_CACHE:-~/.cache/krdma}/kernel-src/PKG-VERSION/, .done written last.
#
# One tree serves every user of that source: checkpatch.pl, the siw module
# built for a Debian kernel that lacks it, and the debug kernel.  Each xz
# decompression of the tarball costs about 15 s of CPU, whether it keeps
# three files or all of them, so it is done once per package version.
# Trees of other versions or patch sets of the same package are removed
# once no call has used them for six hours: a clone of another commit
# (CI's clean clone of main beside a branch with a new patch) may still be
# building from one, as the debug kernel's 10 to 25 minutes do.
#
# The fixes the lab carries for that source (tools/kernel-patches/PKG/
# *.patch, in name order; README there) are applied once, after the
# unpacking; the tree's name ends in -pHASH of them, so a changed patch
# set unpacks a tree of its own.
#   kernel-src.sh --patches PKG	print that suffix ("" without patches)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
patches_only=0
if [ "${1:-}" = --patches ]; then
	patches_only=1
	shift
fi
pkg=${1:?usage: kernel-src.sh [--patches] linux-source-6.1|linux-source-6.12}
case "$pkg" in
linux-source-*) ;;
*) echo "kernel-src: not a linux-source package: $pkg" >&2; exit 2 ;;
esac
pdir=$here/kernel-patches/$pkg
plist=()
for p in "$pdir"/*.patch; do
	[ -f "$p" ] && plist+=("$p")
done
psuf=
[ ${#plist[@]} = 0 ] || psuf=-p$(cat "${plist[@]}" | sha256sum | cut -c1-8)
if [ $patches_only = 1 ]; then
	printf '%s\n' "$psuf"
	exit 0
fi
tarball=/usr/src/$pkg.tar.xz
ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || ver=
[ -n "$ver" ] && [ -f "$tarball" ] ||
	{ echo "kernel-src: $pkg is not installed (tools/lab-setup.sh)" >&2; exit 1; }
root=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}/kernel-src
# Debian versions may carry an epoch ("1:"): keep the path plain.
dir=$root/$pkg-$(printf '%s' "$ver" | tr -c 'A-Za-z0-9.+~_-' '_')$psuf

mkdir -p "$root"
# Lab runs may start together: one unpacker per package, the others wait.
exec 9>"$root/.lock-$pkg"
flock 9
if [ ! -f "$dir/.done" ]; then
	rm -rf -- "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir" --strip-components=1
	for p in "${plist[@]}"; do
		if ! patch -p1 -d "$dir" --forward --quiet <"$p" >"$dir/.patch.log" 2>&1; then
			cat "$dir/.patch.log" >&2
			echo "kernel-src: $p does not apply to $pkg $ver" >&2
			exit 1
		fi
	done
	rm -f "$dir/.patch.log"
	touch "$dir/.done"
fi
# Other versions of this package, or other patch sets ("linux-source-6.1-*"
# matches no 6.12), that no call has used for six hours.
touch "$dir/.used"
for d in "$root/$pkg"-*; do
	[ -d "$d" ] && [ "$d" != "$dir" ] || continue
	[ -n "$(find "$d/.used" "$d/.done" -maxdepth 0 -mmin -360 2>/dev/null)" ] ||
		rm -rf -- "$d"
done
printf '%s\n' "$dir"
