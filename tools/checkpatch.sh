#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# checkpatch.pl --strict over krdma's C sources, with the checkpatch of the
# installed linux-source-6.12 package (tools/kernel-src.sh unpacks it once).
#
# A file's result depends on its bytes, checkpatch.pl (and the files it
# reads beside it) and the options alone, so a clean result is remembered
# in ~/.cache/krdma/checkpatch/ under the hash of all three: a clean clone
# checks again only the files that changed (all of them took 3 minutes of
# a CPU that make check's guests need).  Only clean results are kept; a
# file with a report is checked, and reported, every time.
# KRDMA_CHECKPATCH_CACHE=0: check every file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
dir=$("$here/kernel-src.sh" linux-source-6.12)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/krdma/checkpatch
cd "$top"
files=$(git ls-files '*.c' '*.h' 2>/dev/null || ls ./*.c ./*.h include/*.h)
opts=(--strict --no-tree --quiet --show-types --ignore FILE_PATH_CHANGES)
# User-space programs (tools/, test/ioctl_fuzz.c): they define the kernel's
# __printf() themselves, as the kernel's own tools/include does, which
# checkpatch would have them take from compiler_attributes.h.
user_opts=("${opts[@]}" --ignore PREFER_DEFINED_ATTRIBUTE_MACRO)
tool=$(cat "$dir/scripts/checkpatch.pl" "$dir/scripts/spelling.txt" \
	"$dir/scripts/const_structs.checkpatch" 2>/dev/null | sha256sum | cut -c1-64)
mkdir -p "$cache"

rc=0
kern=() user=()
for f in $files; do
	if [[ $f =~ ^(tools/|test/ioctl_fuzz\.c$) ]]; then
		o=("${user_opts[@]}")
	else
		o=("${opts[@]}")
	fi
	key=$( { echo "$tool ${o[*]}"; cat "$f"; } | sha256sum | cut -c1-64)
	if [ "${KRDMA_CHECKPATCH_CACHE:-1}" != 0 ] && [ -e "$cache/$key" ]; then
		continue
	fi
	if [ "${o[*]}" = "${opts[*]}" ]; then
		kern+=("$f:$key")
	else
		user+=("$f:$key")
	fi
done

# check OPTS... -- FILE:KEY...: one checkpatch run over the files; each
# file that then checks clean on its own gets its mark.
check() {
	local -a o=() fs=() ks=()
	local a i
	while [ "$1" != -- ]; do o+=("$1"); shift; done
	shift
	for a in "$@"; do fs+=("${a%:*}"); ks+=("${a##*:}"); done
	[ ${#fs[@]} -gt 0 ] || return 0
	if perl "$dir/scripts/checkpatch.pl" "${o[@]}" -f "${fs[@]}"; then
		for i in "${!ks[@]}"; do : >"$cache/${ks[$i]}"; done
		return 0
	fi
	# Something to report (printed above): mark only the clean files.
	for i in "${!fs[@]}"; do
		perl "$dir/scripts/checkpatch.pl" "${o[@]}" -f "${fs[$i]}" \
			>/dev/null 2>&1 && : >"$cache/${ks[$i]}"
	done
	return 1
}
check "${opts[@]}" -- ${kern[@]+"${kern[@]}"} || rc=1
check "${user_opts[@]}" -- ${user[@]+"${user[@]}"} || rc=1
# The lab's fixes of the kernel (tools/kernel-patches/) are patches for
# linux-rdma, checked as patches.  On standard input: checkpatch.pl takes
# a file argument that git ls-files knows for a source file (as -f does)
# and would read each blank context line as trailing whitespace.
# UNKNOWN_COMMIT_ID is ignored: a Fixes: line names a commit of the
# kernel's history, which the lab has no git tree of.
for p in $(git ls-files 'tools/kernel-patches/*.patch' 2>/dev/null); do
	perl "$dir/scripts/checkpatch.pl" --strict --no-tree --quiet \
		--ignore UNKNOWN_COMMIT_ID --show-types - <"$p" || { echo "checkpatch: in $p" >&2; rc=1; }
done
exit $rc
