#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict over krdma's C sources, with the checkpatch of the
# installed linux-source-6.12 package (tools/kernel-src.sh unpacks it once).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
dir=$("$here/kernel-src.sh" linux-source-6.12)
cd "$top"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || ls ./*.c ./*.h include/*.h)
# User-space programs (tools/, test/ioctl_fuzz.c): they define the kernel's
# __printf() themselves, as the kernel's own tools/include does, which
# checkpatch would have them take from compiler_attributes.h.
user=$(echo "$files" | tr ' ' '\n' | grep -E '^(tools/|test/ioctl_fuzz\.c$)' || true)
kern=$(echo "$files" | tr ' ' '\n' | grep -vE '^(tools/|test/ioctl_fuzz\.c$)')
# shellcheck disable=SC2086
perl "$dir/scripts/checkpatch.pl" --strict --no-tree --quiet --show-types \
	--ignore FILE_PATH_CHANGES -f $kern
if [ -n "$user" ]; then
	# shellcheck disable=SC2086
	perl "$dir/scripts/checkpatch.pl" --strict --no-tree --quiet \
		--show-types --ignore FILE_PATH_CHANGES \
		--ignore PREFER_DEFINED_ATTRIBUTE_MACRO -f $user
fi
