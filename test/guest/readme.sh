#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The README's sessions are real: every README line "    $ COMMAND" is run,
# in order, in one shell (rxe0 up on 10.10.1.1, krdma loaded, tools/ on
# PATH), and must exit 0 (a command ending in "&" runs in the background
# and is waited for at the end).  Where the README shows exactly one output
# line without digits under a command ("connected", "passed"), the output
# must be that line.  Other output (addresses, keys, timings) is what a real
# run printed, and is not compared.
# Not on the debug kernel: the commands go through the same control file
# and ioctl paths that control.sh and chardev.sh drive there, and a third
# pass over them cost the KASAN guest a minute.
# topo: single
# dev: rxe
# kernel: 6.1 6.12
# check-kernel: 6.12
. "$(dirname "$0")/../lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
readme=$top/README
[ "$MY_IP" = 10.10.1.1 ] || skip "the README's sessions use 10.10.1.1, this guest has $MY_IP"

rdma_dev_up
krdma_load
export PATH=$top/tools:$PATH
tmp=$(mktemp -d)
cd "$tmp" || fail "cd $tmp"

# The commands, each with its expected single line of output (or "").
cmds=() outs=()
cur=-1
while IFS= read -r line; do
	if [[ $line == '    $ '* ]]; then
		cmds+=("${line#    \$ }")
		outs+=("")
		cur=$(( ${#cmds[@]} - 1 ))
		nout=0
	elif [ $cur -ge 0 ] && [[ $line == '    '?* ]]; then
		nout=$((nout + 1))
		if [ $nout = 1 ] && [[ ${line#    } != *[0-9]* ]]; then
			outs[cur]=${line#    }
		else
			outs[cur]=""	# several lines, or numbers: not compared
		fi
	else
		cur=-1
	fi
done <"$readme"
[ ${#cmds[@]} -ge 10 ] || fail "only ${#cmds[@]} README commands found"
log "${#cmds[@]} README commands"

bg_pids=() bg_cmds=()
for i in "${!cmds[@]}"; do
	cmd=${cmds[i]}
	echo "\$ $cmd"
	if [[ $cmd == *'&' ]]; then
		eval "$cmd"
		bg_pids+=($!)
		bg_cmds+=("$cmd")
		continue
	fi
	out=$(eval "$cmd" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	[ $rc = 0 ] || fail "README command exited $rc: $cmd"
	if [ -n "${outs[i]}" ]; then
		expect_eq "$out" "${outs[i]}" "output of '$cmd'"
	fi
done
# Each background command must end, and end well (a bare "wait" says 0
# whatever they did).
for i in "${!bg_pids[@]}"; do
	timeout_left=60
	while kill -0 "${bg_pids[i]}" 2>/dev/null; do
		timeout_left=$((timeout_left - 1))
		[ $timeout_left -gt 0 ] || fail "README background command still running: ${bg_cmds[i]}"
		nap 1
	done
	wait "${bg_pids[i]}" || fail "README background command failed ($?): ${bg_cmds[i]}"
done
no=$(ls $KRDMA_SYS/conns | wc -l)
expect_eq "$no" 0 "connections left after the README's sessions"
