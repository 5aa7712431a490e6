#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the guest tests of one topology on one device, inside a lab guest.
#   run-suite.sh single|pair rxe|siw [TEST...]
# Each test is test/guest/NAME.sh; its "# topo:" and "# dev:" header lines
# say where it runs.  Results go to $LAB/results-$GUEST, one line each:
#   PASS name | FAIL name: reason | SKIP name: reason
# A kernel bug pattern appearing in dmesg during a test fails that test.
topo=${1:?topo} dev=${2:?dev}
shift 2
export TOPO=$topo DEV=$dev ROLE=$GUEST
[ "$topo" = single ] && export PEER_IP=$MY_IP
top=$(cd "$(dirname "$0")/.." && pwd)
results=$LAB/results-$GUEST
mkdir -p "$LAB/tests" "$LAB/sync"
: >"$results"
# On a kernel with kmemleak (debug): mark the time, so that the report
# after the suite (krdma unloaded) counts only objects allocated since,
# and require none ("kmemleak" result).
"$top/test/kmemleak.sh" --mark >/dev/null 2>&1

if [ $# -gt 0 ]; then
	tests=("$@")
else
	tests=()
	for f in "$top"/test/guest/*.sh; do
		grep -qE "^# topo:.*\b$topo\b" "$f" || continue
		grep -qE "^# dev:.*\b$dev\b" "$f" || continue
		# "# kernel: LINE ..." limits a test to those kernel lines.
		! grep -qE "^# kernel:" "$f" ||
			grep -qE "^# kernel:.*\b$KLINE\b" "$f" || continue
		tests+=("$(basename "$f" .sh)")
	done
fi
filter=${KRDMA_TESTS:-}

# In the two-guest lab both guests walk the same list; meet at the start and
# end of every test so that one guest's failure cannot desynchronise them.
# The wait naps without a fork (see test/lib.sh): the guest that finished
# first must not slow the other down.
. "$top/test/lib.sh"
sync_peer() {
	local other t=3000
	[ "$topo" = pair ] || return 0
	other=$([ "$GUEST" = A ] && echo B || echo A)
	: >"$LAB/sync/$TEST_ID.suite-$1.$GUEST"
	while [ ! -e "$LAB/sync/$TEST_ID.suite-$1.$other" ]; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		nap 0.1
	done
}

for t in "${tests[@]}"; do
	if [ -n "$filter" ] && ! [[ " $filter " == *" $t "* ]]; then
		continue
	fi
	export TEST_ID=$t
	if ! sync_peer begin; then
		echo "FAIL $t: the other guest never started it" >>"$results"
		continue
	fi
	out=$LAB/tests/$KLINE-$dev-$topo-$t-$GUEST.log
	before=$(dmesg | wc -l)
	echo "=== $t ($KLINE $dev $topo $GUEST)" >/dev/console
	t0=$SECONDS
	timeout -k 5 "${KRDMA_TEST_TIMEOUT:-300}" bash "$top/test/guest/$t.sh" >"$out" 2>&1
	rc=$?
	echo "# $t took $((SECONDS - t0)) s" >>"$out"
	# Leave no state behind for the next test.
	if lsmod | grep -q '^krdma ' && ! rmmod krdma >>"$out" 2>&1; then
		[ $rc = 0 ] && rc=1 && echo "FAIL: rmmod krdma after the test" >>"$out"
	fi
	bug=$(dmesg | tail -n +"$((before + 1))" | grep -F -f "$top/tools/bug-patterns" | head -n 1)
	if [ -n "$bug" ]; then
		echo "FAIL $t: kernel bug pattern: $bug" >>"$results"
	elif [ $rc = 0 ]; then
		echo "PASS $t" >>"$results"
	elif [ $rc = 77 ]; then
		echo "SKIP $t: $(grep -m1 '^SKIP:' "$out" | cut -c7-)" >>"$results"
	elif [ $rc = 124 ]; then
		echo "FAIL $t: timed out" >>"$results"
	else
		why=$(grep -m1 '^FAIL:' "$out" | cut -c7-)
		echo "FAIL $t: ${why:-exit status $rc}" >>"$results"
	fi
	echo "$(tail -n 1 "$results") ($((SECONDS - t0)) s)" >/dev/console
	sync_peer end || echo "# $t: the other guest did not finish it" >>"$out"
done
if [ -e /sys/kernel/debug/kmemleak ]; then
	out=$LAB/tests/$KLINE-$dev-$topo-kmemleak-$GUEST.log
	lsmod | grep -q '^krdma ' && rmmod krdma
	"$top/test/kmemleak.sh" >"$out" 2>&1
	case $? in
	0)	echo "PASS kmemleak" >>"$results" ;;
	77)	;;
	*)	echo "FAIL kmemleak: $(head -n 1 "$out")" >>"$results" ;;
	esac
	tail -n 1 "$results" >/dev/console
fi
exit 0
