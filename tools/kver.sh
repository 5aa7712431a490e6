#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Map a kernel line to the installed Debian kernel release.
#   kver.sh 6.1    -> release behind linux-image-amd64 (bookworm's 6.1 line)
#   kver.sh 6.12   -> release behind linux-image-6.12-amd64
#   kver.sh debug  -> the cached debug kernel's release
#   kver.sh RELEASE -> RELEASE, if installed
# Versions are read from the meta-packages so that the archive can move on.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
want=${1:?usage: kver.sh 6.1|6.12|debug|RELEASE}

meta_release() {
	dpkg-query -W -f='${Depends}' "$1" 2>/dev/null |
		tr ',' '\n' | sed -n 's/^ *linux-image-\([^ ]*\).*/\1/p' | head -n 1
}

case "$want" in
6.1)	rel=$(meta_release linux-image-amd64) ;;
6.12)	rel=$(meta_release linux-image-6.12-amd64) ;;
debug)	d=$("$here/debug-kernel.sh" --print-dir) || exit 1
	rel=$(cat "$d/release") ;;
*)	rel=$want ;;
esac
[ -n "$rel" ] || { echo "kver: kernel line $want is not installed (run tools/lab-setup.sh)" >&2; exit 1; }
echo "$rel"
