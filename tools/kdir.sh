#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Print the kernel build directory (KDIR) for a kernel line or release.
#   kdir.sh            running kernel's build dir, else the newest Debian header set
#   kdir.sh 6.1|6.12   the Debian header set of that line (via its meta-package)
#   kdir.sh RELEASE    that exact release (e.g. 6.12.117+deb12-amd64)
#   kdir.sh debug      the cached debug kernel's build tree
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want=${1:-}

if [ -z "$want" ]; then
	if [ -d "/lib/modules/$(uname -r)/build" ]; then
		echo "/lib/modules/$(uname -r)/build"
		exit 0
	fi
	newest=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n 1)
	[ -n "$newest" ] || { echo "kdir: no kernel headers installed (run tools/lab-setup.sh)" >&2; exit 1; }
	echo "$newest"
	exit 0
fi

if [ "$want" = debug ]; then
	d=$("$here/debug-kernel.sh" --print-dir) || { echo "kdir: debug kernel not built" >&2; exit 1; }
	echo "$d/build"
	exit 0
fi

rel=$("$here/kver.sh" "$want")
for d in "/lib/modules/$rel/build" "/usr/src/linux-headers-$rel"; do
	[ -d "$d" ] && { echo "$d"; exit 0; }
done
echo "kdir: no headers for $rel (run tools/lab-setup.sh)" >&2
exit 1
