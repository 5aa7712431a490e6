#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict over krdma's C sources, with the checkpatch of the
# installed linux-source-6.12 package (unpacked once into the cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
cache=${KRDMA_CACHE:-$HOME/.cache/krdma}
ver=$(dpkg-query -W -f='${Version}' linux-source-6.12)
dir=$cache/src/checkpatch-$ver
if [ ! -f "$dir/.done" ]; then
	mkdir -p "$dir"
	tar -xJf /usr/src/linux-source-6.12.tar.xz -C "$dir" --strip-components=1 \
		linux-source-6.12/scripts/checkpatch.pl \
		linux-source-6.12/scripts/spelling.txt \
		linux-source-6.12/scripts/const_structs.checkpatch
	touch "$dir/.done"
fi
cd "$top"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || ls ./*.c ./*.h include/*.h)
# shellcheck disable=SC2086
perl "$dir/scripts/checkpatch.pl" --strict --no-tree --quiet --show-types \
	--ignore FILE_PATH_CHANGES -f $files
