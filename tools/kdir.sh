#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Print the kernel build directory (KDIR) for a kernel line or release.
#   kdir.sh            the running kernel's /lib/modules/$(uname -r)/build,
#                      or an error naming the headers package to install
#   kdir.sh 6.1|6.12   the lab's unpacked Debian headers of that line
#   kdir.sh RELEASE    that exact release: installed headers, else the lab's
#   kdir.sh debug      the cached debug kernel's build tree
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want=${1:-}
cache=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}

if [ -z "$want" ]; then
	# A host build is for the kernel the host runs, never another one.
	d=/lib/modules/$(uname -r)/build
	if [ -d "$d" ]; then
		echo "$d"
		exit 0
	fi
	echo "kdir: no headers for the running kernel $(uname -r): install linux-headers-$(uname -r)" >&2
	echo "kdir: (or build for a lab kernel: make KVER=6.1|6.12|debug)" >&2
	exit 1
fi

if [ "$want" = debug ]; then
	d=$("$here/debug-kernel.sh" --print-dir) || { echo "kdir: debug kernel not built" >&2; exit 1; }
	echo "$d/build"
	exit 0
fi

rel=$("$here/kver.sh" "$want")
for d in "$cache/kernels/$rel/usr/src/linux-headers-$rel" "/lib/modules/$rel/build"; do
	[ -f "$d/Makefile" ] && { echo "$d"; exit 0; }
done
echo "kdir: no headers for $rel (run tools/lab-setup.sh, or install linux-headers-$rel)" >&2
exit 1
