#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest tests of one lane (a topology, its devices, a kernel line):
# what test/run-suite.sh runs in the guest and what tools/check expects
# from it on the host.  One script for both, so that they cannot disagree.
#   list-tests.sh [--dir DIR] TOPO "DEV..." KLINE [FILTER]
#	one line "DEV NAME" per test, in the order run-suite.sh runs them
#   list-tests.sh [--dir DIR] --names
#	every name a FILTER may hold
# A test is DIR/NAME.sh (DIR: test/guest).  Its "# topo:" and "# dev:"
# lines say where it runs; "# kernel: LINE..." limits it to those kernel
# lines; "# check-kernel: LINE..." limits it further in make check, where
# time is short, and "# check-dev: DEV..." to those devices (KRDMA_STRESS=1,
# make stress, runs it on every line its "# kernel:" allows, with every
# device of its "# dev:"); "# check-dev@LINE: DEV..." limits it to those
# devices on kernel line LINE alone, in make check.  "# alone: yes" marks a test that must have
# its boot to itself (poweroff: the peer does not survive it): it runs only
# when FILTER names it.  The debug line adds "kmemleak" (test/kmemleak.sh, once per boot,
# after the last device's tests).  FILTER (tools/check --tests, KRDMA_TESTS):
# only the tests it names.  Only bash, no fork per test: it runs in the
# guest under TCG too.
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)/guest
if [ "${1:-}" = --dir ]; then
	dir=${2:?--dir DIR}
	shift 2
fi

# has WORD LIST: LIST (words split on blanks) holds WORD.
has() {
	local w ws
	read -ra ws <<<"$2"
	for w in "${ws[@]}"; do
		[ "$w" = "$1" ] && return 0
	done
	return 1
}

if [ "${1:-}" = --names ]; then
	for f in "$dir"/*.sh; do
		[ -f "$f" ] || continue
		f=${f##*/}
		echo "${f%.sh}"
	done
	echo kmemleak
	exit 0
fi
if [ $# -lt 3 ] || [ $# -gt 4 ]; then
	echo "usage: list-tests.sh [--dir DIR] TOPO \"DEV...\" KLINE [FILTER]" >&2
	exit 2
fi
topo=$1 devs=$2 kline=$3 filter=${4:-}
[ -d "$dir" ] || { echo "list-tests.sh: no $dir" >&2; exit 1; }

# The header lines of every test, read once.
names=() topos=() tdevs=() klines=() alones=()
for f in "$dir"/*.sh; do
	[ -f "$f" ] || continue
	t=${f##*/} tp='' dv='' kl='' ck='' cd='' al='' cl=''
	while IFS= read -r l; do
		case "$l" in
		"# check-dev@$kline:"*) cl+=" ${l#"# check-dev@$kline:"}" ;;
		"# topo:"*)	tp+=" ${l#"# topo:"}" ;;
		"# dev:"*)	dv+=" ${l#"# dev:"}" ;;
		# "-" marks a test with a kernel line (an empty one runs nowhere).
		"# kernel:"*)	kl+=" - ${l#"# kernel:"}" ;;
		"# check-kernel:"*) ck+=" - ${l#"# check-kernel:"}" ;;
		"# check-dev:"*) cd+=" ${l#"# check-dev:"}" ;;
		"# alone: yes") al=1 ;;
		esac
	done <"$f"
	if [ "${KRDMA_STRESS:-0}" != 1 ]; then
		kl=${ck:-$kl}
		dv=${cl:-${cd:-$dv}}
	fi
	names+=("${t%.sh}") topos+=("$tp") tdevs+=("$dv") klines+=("$kl") alones+=("$al")
done

# KRDMA_DEBUG_RXE=1 (tools/check sets it in make check when the debug line
# runs over rxe in one guest in the same run): a test that lane runs is
# left to it on 6.12's rxe in one guest.  The debug kernel is built from
# the same 6.12 source, with KASAN, lockdep and kmemleak on top; 6.12's
# siw, 6.1 and make stress run the test as before.
dedup=0
[ "${KRDMA_STRESS:-0}" != 1 ] && [ "${KRDMA_DEBUG_RXE:-0}" = 1 ] &&
	[ "$kline" = 6.12 ] && has single "$topo" && dedup=1

last=
for d in $devs; do
	last=$d
	for i in "${!names[@]}"; do
		t=${names[$i]}
		has "$topo" "${topos[$i]}" || continue
		has "$d" "${tdevs[$i]}" || continue
		[ -z "${klines[$i]}" ] || has "$kline" "${klines[$i]}" || continue
		if [ "$dedup" = 1 ] && [ "$d" = rxe ] && has single "${topos[$i]}" &&
		   { [ -z "${klines[$i]}" ] || has debug "${klines[$i]}"; }; then
			continue
		fi
		if [ -n "${alones[$i]}" ]; then
			has "$t" "$filter" || continue
		fi
		[ -z "$filter" ] || has "$t" "$filter" || continue
		echo "$d $t"
	done
done
# test/run-suite.sh scans for leaks after the last device (krdma unloaded).
if [ "$kline" = debug ] && [ -n "$last" ] &&
   { [ -z "$filter" ] || has kmemleak "$filter"; }; then
	echo "$last kmemleak"
fi
exit 0
