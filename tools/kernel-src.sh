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
# Trees of older versions of the same package are removed.
set -euo pipefail
pkg=${1:?usage: kernel-src.sh linux-source-6.1|linux-source-6.12}
case "$pkg" in
linux-source-*) ;;
*) echo "kernel-src: not a linux-source package: $pkg" >&2; exit 2 ;;
esac
tarball=/usr/src/$pkg.tar.xz
ver=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null) || ver=
[ -n "$ver" ] && [ -f "$tarball" ] ||
	{ echo "kernel-src: $pkg is not installed (tools/lab-setup.sh)" >&2; exit 1; }
root=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}/kernel-src
# Debian versions may carry an epoch ("1:"): keep the path plain.
dir=$root/$pkg-$(printf '%s' "$ver" | tr -c 'A-Za-z0-9.+~_-' '_')

mkdir -p "$root"
# Lab runs may start together: one unpacker per package, the others wait.
exec 9>"$root/.lock-$pkg"
flock 9
if [ ! -f "$dir/.done" ]; then
	rm -rf -- "$dir"
	mkdir -p "$dir"
	tar -xJf "$tarball" -C "$dir" --strip-components=1
	touch "$dir/.done"
fi
# Older versions of this package ("linux-source-6.1-*" matches no 6.12).
for d in "$root/$pkg"-*; do
	[ -d "$d" ] && [ "$d" != "$dir" ] && rm -rf -- "$d"
done
printf '%s\n' "$dir"
