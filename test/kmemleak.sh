#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kmemleak in a lab guest (debug kernel).
#   kmemleak.sh --clear   scan, then forget every suspect so far (boot noise)
#   kmemleak.sh           scan twice and report: exit 0 when no object is
#                         reported, 1 with the report on stdout (first line:
#                         a summary naming the first object's allocator)
# Exits 77 when the kernel has no kmemleak.
km=/sys/kernel/debug/kmemleak
[ -e $km ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[ -w $km ] || { echo "no kmemleak in $(uname -r)"; exit 77; }

if [ "${1:-}" = --clear ]; then
	echo scan >$km
	echo clear >$km
	exit 0
fi

# Objects younger than 5 s are never reported: let what was just freed (or
# leaked, by an rmmod a moment ago) age first; the second scan confirms.
sleep 6
echo scan >$km
echo scan >$km
report=$(cat $km)
[ -z "$report" ] && exit 0
n=$(grep -c '^unreferenced object' <<<"$report")
# The first report's frames below kmemleak and the allocator name the
# culprit; a bare address is in a module unloaded since (krdma, usually):
# name its caller too.  (The summary avoids the words of tools/bug-patterns:
# run-suite.sh echoes it to the console.)
frames=$(sed -n '/backtrace/,/^unreferenced/p' <<<"$report" | sed '1d' |
	grep -vE '^unreferenced|kmemleak_alloc|slab_post_alloc|kmalloc|kmem_cache_alloc|__kvmalloc|vmalloc|alloc_pages' |
	sed 's/^ *\[<[0-9a-f]*>\] *//; s/^ *//' | head -n 2)
first=$(head -n 1 <<<"$frames")
[[ "$first" == 0x* ]] && first="$first (a module since unloaded), called from $(sed -n 2p <<<"$frames")"
size=$(sed -n '1s/.*(size \([0-9]*\)).*/\1/p' <<<"$report")
comm=$(sed -n '2s/^ *comm \("[^"]*", pid [0-9]*\).*/\1/p' <<<"$report")
echo "$n leaked object(s), the first of $size bytes from $comm allocated by ${first:-?}"
echo "$report"
exit 1
