#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# kmemleak in a lab guest (debug kernel).
#   kmemleak.sh --mark    note the time (jiffies): objects allocated before
#                         it (boot noise) are never reported
#   kmemleak.sh           scan twice and report what was allocated since the
#                         mark: exit 0 when no object is reported, 1 with the
#                         report on stdout (first line: a summary naming the
#                         first object's allocator)
# Exits 77 when the kernel has no kmemleak.
#
# A mark rather than "scan, then clear" before the suite: under KASAN and
# TCG that first scan took two minutes, and objects from before the suite
# cannot be krdma's.
km=/sys/kernel/debug/kmemleak
mark=/tmp/kmemleak.mark
[ -e $km ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[ -w $km ] || { echo "no kmemleak in $(uname -r)"; exit 77; }

if [ "${1:-}" = --mark ]; then
	sed -n 's/^jiffies: *//p' /proc/timer_list | head -n 1 >$mark
	[ -s $mark ] || { echo "no jiffies in /proc/timer_list"; exit 1; }
	exit 0
fi

# Objects younger than 5 s are never reported: let what was just freed (or
# leaked, by an rmmod a moment ago) age first; the second scan confirms.
sleep 6
# A scan that did not run (kmemleak disabled itself, say) reports nothing:
# that is a failure, not a clean result.
for i in 1 2; do
	echo scan >$km 2>/dev/null ||
		{ echo "kmemleak scan $i did not run: $(dmesg | grep -m1 'kmemleak: .*disabled')"; exit 1; }
done
# Keep the reports (each from its "unreferenced object" line to the next)
# of objects allocated at or after the mark.
report=$(awk -v since="$(cat $mark 2>/dev/null || echo 0)" '
	/^unreferenced object/ { keep = 0 }
	/^  comm .*, jiffies [0-9]+/ { keep = ($NF + 0 >= since + 0) }
	/^unreferenced object/ { head = $0; next }
	head != "" { if (keep) print head; head = "" }
	keep' $km)
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
