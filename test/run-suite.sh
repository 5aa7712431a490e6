#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Run the guest tests of one topology, on one or more devices in turn,
# inside a lab guest.
#   run-suite.sh single|pair "rxe siw" [TEST...]
# Each test is test/guest/NAME.sh; which ones run, on which device and in
# which order, is test/list-tests.sh's answer: the very list tools/check
# expects results for.  TEST... (else KRDMA_TESTS) narrows it.  The
# devices share one boot (a boot is 15 to 25 s of a lane under TCG) but
# not a suite: each device's tests run on their own, and between two
# devices the first one and its driver are removed, so that no test ever
# sees two RDMA devices on eth0.  Results go to $LAB/results-$GUEST-$DEV,
# one line each:
#   PASS name | FAIL name: reason | SKIP name: reason
# A kernel bug pattern appearing in dmesg during a test fails that test;
# one that the emulator caused (tools/emulator-fault.sh) says
# "EMULATOR FAULT", for tools/check-results.
topo=${1:?topo}
read -ra devs <<<"${2:?devs}"
shift 2
export TOPO=$topo ROLE=$GUEST
[ "$topo" = single ] && export PEER_IP=$MY_IP
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/emulator-fault.sh
. "$top/tools/emulator-fault.sh"
mkdir -p "$LAB/tests" "$LAB/sync"
for dev in "${devs[@]}"; do
	: >"$LAB/results-$GUEST-$dev"
done
# On a kernel with kmemleak (debug): mark the time, so that the report
# after the suite (krdma unloaded) counts only objects allocated since,
# and require none ("kmemleak" result).
"$top/test/kmemleak.sh" --mark >/dev/null 2>&1

# The plan: "DEV NAME" lines, kmemleak last on the debug line.  A plan
# that cannot be made leaves every device a result saying so.
filter=${KRDMA_TESTS:-}
[ $# -gt 0 ] && filter="$*"
if ! plan=$("$top/test/list-tests.sh" "$topo" "${devs[*]}" "$KLINE" "$filter" 2>&1); then
	for dev in "${devs[@]}"; do
		echo "FAIL list-tests: ${plan//$'\n'/; }" >>"$LAB/results-$GUEST-$dev"
	done
	plan=
fi
mapfile -t plan_lines <<<"$plan"
# A test that would scan for leaks itself (failslab) leaves it to the
# suite's own scan after the last test when the plan has one.
[[ $'\n'"$plan"$'\n' == *" kmemleak"$'\n'* ]] && export KRDMA_KMEMLEAK_LATER=1

# In the two-guest lab both guests walk the same list; meet at the start and
# end of every test so that one guest's failure cannot desynchronise them.
# The wait naps without a fork (see test/lib.sh): the guest that finished
# first must not slow the other down.
. "$top/test/lib.sh"
other=$([ "$GUEST" = A ] && echo B || echo A)
sync_peer() {
	local t=3000
	[ "$topo" = pair ] || return 0
	: >"$LAB/sync/$TEST_ID.suite-$1.$GUEST"
	while [ ! -e "$LAB/sync/$TEST_ID.suite-$1.$other" ]; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		! peer_gone "$other" || return 1
		nap 0.1
	done
}

# run_test NAME: one test on $DEV, its result appended to $results.
run_test() {
	local t=$1 out before t0 rc bug why kmsg
	# The sync files of the two guests are per device too.
	export TEST_ID=$DEV.$t
	if ! sync_peer begin; then
		if peer_gone "$other"; then
			echo "FAIL $t: guest $other is gone" >>"$results"
		else
			echo "FAIL $t: the other guest never started it" >>"$results"
		fi
		return
	fi
	out=$LAB/tests/$KLINE-$DEV-$topo-$t-$GUEST.log
	before=$(dmesg | wc -l)
	echo "=== $t ($KLINE $DEV $topo $GUEST)" >/dev/console
	t0=$SECONDS
	KRDMA_DMESG_BEFORE=$before timeout -k 5 "${KRDMA_TEST_TIMEOUT:-300}" \
		bash "$top/test/guest/$t.sh" >"$out" 2>&1
	rc=$?
	echo "# $t took $((SECONDS - t0)) s" >>"$out"
	# A test that hung: keep the stacks of the blocked tasks in its log
	# now, since a guest that hangs later is killed with its dmesg unsaved.
	if [ $rc = 124 ] && echo w >/proc/sysrq-trigger 2>/dev/null; then
		echo "# timed out; dmesg since the test started, blocked tasks last:" >>"$out"
		dmesg | tail -n +"$((before + 1))" >>"$out"
	fi
	# Leave no state behind for the next test.  A test module left loaded
	# (a test that failed half-way, say) would hold the next test's
	# device: krdma_hostile's listener does not leave on DEVICE_REMOVAL,
	# and rdma link delete then waits for it for ever (seen).  Dependents
	# first.
	for m in krdma_blk_evilsrv krdma_blk_hostile krdma_blk krdma_apitest krdma_hostile; do
		[ -e "/sys/module/$m" ] || continue
		if rmmod "$m" >>"$out" 2>&1; then
			[ $rc = 0 ] && rc=1 && echo "FAIL: the test left $m loaded" >>"$out"
		else
			[ $rc = 0 ] && rc=1 && echo "FAIL: rmmod $m after the test" >>"$out"
		fi
	done
	if [ -e /sys/module/krdma ] && ! rmmod krdma >>"$out" 2>&1; then
		[ $rc = 0 ] && rc=1 && echo "FAIL: rmmod krdma after the test" >>"$out"
	fi
	bugs=$(dmesg | tail -n +"$((before + 1))" | grep -F -f "$top/tools/bug-patterns")
	bug=$(head -n 1 <<<"$bugs")
	if [ -n "$bug" ] &&
	   why=$(emulator_fault "$bugs" <(dmesg | tail -n +"$((before + 1))")); then
		echo "FAIL $t: EMULATOR FAULT: $why: $bug" >>"$results"
	elif [ -n "$bug" ]; then
		echo "FAIL $t: kernel bug pattern: $bug" >>"$results"
	elif [ $rc = 0 ]; then
		echo "PASS $t" >>"$results"
	elif [ $rc = 77 ]; then
		echo "SKIP $t: $(grep -m1 '^SKIP:' "$out" | cut -c7-)" >>"$results"
	elif [ $rc = 124 ]; then
		# The last RDMA lines before the stacks: why a peer, say,
		# disconnected is often here, and CI keeps only the results.
		kmsg=$(dmesg | tail -n +"$((before + 1))" |
			sed '/sysrq: Show Blocked State/,$d' |
			grep -E 'krdma|siw|rxe|rdma|iw_cm|ib_' |
			grep -v 'self-test passed' | tail -n 4 |
			sed 's/^\[ *[0-9.]*\] //' | paste -sd '|' -)
		echo "FAIL $t: timed out${kmsg:+ [dmesg: $kmsg]}" >>"$results"
	else
		why=$(grep -m1 '^FAIL:' "$out" | cut -c7-)
		kmsg=$(grep '^DMESG: ' "$out" | cut -c8- | paste -sd '|' -)
		echo "FAIL $t: ${why:-exit status $rc}${kmsg:+ [dmesg: $kmsg]}" >>"$results"
	fi
	echo "$(tail -n 1 "$results") ($((SECONDS - t0)) s)" >/dev/console
	sync_peer end || echo "# $t: the other guest did not finish it" >>"$out"
}

# dev_remove: take $DEV and its driver away before the next device's suite.
dev_remove() {
	local drv
	drv=$([ "$DEV" = rxe ] && echo rdma_rxe || echo siw)
	lsmod | grep -q '^krdma ' && rmmod krdma
	rdma link delete "$IBDEV" 2>/dev/null
	if lsmod | grep -q "^$drv "; then
		rmmod "$drv" || { echo "FAIL device-removal: rmmod $drv" >>"$results"; return 1; }
	fi
	! rdma link show "$IBDEV/1" >/dev/null 2>&1 ||
		{ echo "FAIL device-removal: $IBDEV still there" >>"$results"; return 1; }
}

# run_kmemleak: after the last device's tests, krdma unloaded and the
# device and its driver removed (debug line): an object a driver leaked
# but still lists (siw keeps every endpoint on its device's list until
# the device goes) is unreferenced only then.
run_kmemleak() {
	local out=$LAB/tests/$KLINE-$DEV-$topo-kmemleak-$GUEST.log
	dev_remove || return 0
	"$top/test/kmemleak.sh" >"$out" 2>&1
	case $? in
	0)	echo "PASS kmemleak" >>"$results" ;;
	77)	echo "SKIP kmemleak: $(head -n 1 "$out")" >>"$results" ;;
	*)	echo "FAIL kmemleak: $(head -n 1 "$out")" >>"$results" ;;
	esac
	tail -n 1 "$results" >/dev/console
}

for DEV in "${devs[@]}"; do
	export DEV IBDEV=${DEV}0
	results=$LAB/results-$GUEST-$DEV
	# Not "while read ... <<<$plan": the tests would inherit it as stdin.
	for p in "${plan_lines[@]}"; do
		[ "${p%% *}" = "$DEV" ] || continue
		t=${p#* }
		if [ "$t" = kmemleak ]; then
			run_kmemleak
		else
			run_test "$t"
		fi
	done
	[ "$DEV" = "${devs[-1]}" ] || dev_remove
done
exit 0
