#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Map a kernel line to the lab's Debian kernel release.
#   kver.sh 6.1    -> release behind linux-headers-amd64 (bookworm's 6.1 line)
#   kver.sh 6.12   -> release behind linux-headers-6.12-amd64
#   kver.sh debug  -> the cached debug kernel's release
#   kver.sh RELEASE -> RELEASE
# tools/lab-setup.sh reads the releases from Debian's meta-packages (the
# archive moves on), unpacks them into the cache and records them there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want=${1:?usage: kver.sh 6.1|6.12|debug|RELEASE}
cache=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}

case "$want" in
6.1|6.12) rel=$(cat "$cache/kernels/line-$want" 2>/dev/null || true) ;;
debug)	d=$("$here/debug-kernel.sh" --print-dir) || exit 1
	rel=$(cat "$d/release") ;;
*)	rel=$want ;;
esac
[ -n "$rel" ] || { echo "kver: kernel line $want is not in the lab cache (run tools/lab-setup.sh)" >&2; exit 1; }
echo "$rel"
