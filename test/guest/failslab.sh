#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Allocation failures (debug kernel; skipped without fault injection): for
# listen, connect, test and disconnect written to the control file, make the
# Nth slab allocation of the writing task fail (failslab through
# /proc/self/fail-nth, GFP_KERNEL included).  Every step must succeed or fail
# with an errno, leave nothing half made, never hang; afterwards the module
# still works, rmmod is prompt, kmemleak reports nothing and dmesg shows no
# bug pattern.  A command making more than KRDMA_FAILSLAB_POINTS (default 40)
# allocations gets that many: its first 10 and the rest spread evenly from an
# offset chosen by KRDMA_FAILSLAB_SEED (default: the day of the year), so that
# runs on different days cover different ones.
# topo: single
# dev: rxe siw
# kernel: debug
. "$(dirname "$0")/../lib.sh"

fs=/sys/kernel/debug/failslab
[ -d $fs ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[ -d $fs ] && [ -e /proc/self/fail-nth ] ||
	skip "kernel $(uname -r) has no failslab fault injection (use --kernels debug)"
top=$(cd "$(dirname "$0")/../.." && pwd)
budget=${KRDMA_FAILSLAB_POINTS:-40}
seed=${KRDMA_FAILSLAB_SEED:-$((10#$(date +%j)))}
port=7090

rdma_dev_up
# Without the DMA check: its records would take injected failures meant
# for krdma's own allocations.
KRDMA_DMA_CHECK=0 krdma_load
echo "krdma-failslab: start" >/dev/kmsg
# Count GFP_KERNEL allocations too; each forced failure logs one line and a
# stack (rate-limited), which tools/bug-patterns does not count as a bug.
echo N >$fs/ignore-gfp-wait
echo 2 >$fs/verbose
restore() { echo Y >$fs/ignore-gfp-wait 2>/dev/null; }
trap restore EXIT

# inject N CMD...: write CMD to the control file from a subshell whose Nth
# slab allocation fails.  Sets $res to OK or the errno name, $injected to 1
# if the failure was injected (0: CMD needed fewer than N allocations).
inject() {
	local n=$1 out
	shift
	# Open everything first, so that only the write itself is counted.
	out=$( (exec 3>"$KRDMA_CTL" 4>/proc/self/fail-nth 5</proc/self/fail-nth
		echo "$n" >&4
		echo "$*" >&3
		rc=$?
		read -r left <&5
		echo 0 >&4
		echo "rc=$rc left=$left") 2>&1 )
	left=${out##*left=}
	injected=1
	[ "$left" = 0 ] || injected=0
	case "$out" in
	*"rc=0 "*)	res=OK ;;
	*"write error: "*)
		res=${out#*write error: }
		res=${res%%$'\n'*} ;;
	*)	fail "'$*' with allocation $n failing: no status ($out)" ;;
	esac
}

# points COUNT: the failure points to try for a command making COUNT allocations.
points() {
	local count=$1 n step
	if [ "$count" -le "$budget" ]; then
		seq 1 "$count"
		return
	fi
	seq 1 10
	step=$(( (count - 10 + budget - 11) / (budget - 10) ))
	for ((n = 11 + seed % step; n <= count; n += step)); do echo $n; done
}

# sweep NAME CHECK CMD...: count CMD's allocations (one clean run, which must
# work; CHECK undoes it), then inject at each point; after every step run CHECK
# (a function) with $n, $res and $injected.
sweep() {
	local what=$1 check=$2 n t0=$SECONDS fails=0 count tried=0
	shift 2
	n=0
	inject 1000000 "$@"
	[ "$res" = OK ] || fail "$what with no failure injected: $res"
	count=$(( 1000000 - left ))
	"$check"
	for n in $(points "$count"); do
		inject "$n" "$@"
		echo "# $what: allocation $n of $count fails -> $res"
		tried=$((tried + 1))
		[ "$res" = OK ] || fails=$((fails + 1))
		[ "$injected" = 1 ] || [ "$res" = OK ] ||
			fail "$what failed ($res) with no failure injected (allocation $n of $count)"
		"$check"
	done
	log "$what: $count allocations, $tried failure points tried (seed $seed), $fails refused with an errno, $((SECONDS - t0)) s"
}

# --- listen ---
check_listen() {
	if [ "$res" = OK ]; then
		expect_eq "$(cat $KRDMA_SYS/listeners/lf/state)" listening "lf after listen ($n)"
		ctl unlisten name=lf || fail "unlisten lf after listen ($n)"
	fi
	wait_for 10 test ! -e $KRDMA_SYS/listeners/lf || fail "listener lf left behind ($n: $res)"
}
sweep listen check_listen listen name=lf addr=$MY_IP:$((port + 1))

ctl listen name=l1 addr=$MY_IP:$port || fail "listen l1"

# --- connect ---
check_connect() {
	if [ "$res" = OK ]; then
		expect_eq "$(cat $KRDMA_SYS/conns/cf/state)" connected "cf after connect ($n)"
		ctl disconnect name=cf || fail "disconnect cf after connect ($n)"
	fi
	wait_for 10 test ! -e $KRDMA_SYS/conns/cf ||
		fail "connection cf left behind ($n: $res, state $(cat $KRDMA_SYS/conns/cf/state))"
}
sweep connect check_connect connect name=cf addr=$PEER_IP:$port

# --- test (self-test start on a live connection) ---
ctl connect name=c1 addr=$PEER_IP:$port || fail "connect c1"
c=$KRDMA_SYS/conns/c1
check_test() {
	wait_for 120 not_running $c/test_status ||
		fail "self-test still running 120 s after start ($n: $res)"
	st=$(cat $c/test_status)
	# A start that succeeded ran a test that must pass (the injected
	# failures are the writer's, and the test runs in a work item); one
	# that failed left the status as it was.
	case "$res:$st" in
	OK:passed) ;;
	OK:*)	fail "test status '$st' after a start that succeeded ($n)" ;;
	*:idle|*:passed|*:failed*) ;;
	*)	fail "test status '$st' after start ($n: $res)" ;;
	esac
	expect_eq "$(cat $c/state)" connected "c1 after test start ($n: $res, status $st)"
}
sweep test check_test test name=c1 op=send,write,read size=8K count=2
# A start that ran out of memory did no harm: a clean one passes.
ctl test name=c1 op=send,write,read size=8K count=2 || fail "clean test start"
wait_for 120 not_running $c/test_status || fail "clean test hangs"
expect_eq "$(cat $c/test_status)" passed "clean test after the sweep"

# --- disconnect ---
check_disconnect() {
	if [ "$res" != OK ] && [ -e $KRDMA_SYS/conns/c1 ]; then
		ctl disconnect name=c1 || [ ! -e $KRDMA_SYS/conns/c1 ] ||
			fail "second disconnect of c1 after '$res' ($n)"
	fi
	wait_for 10 test ! -e $KRDMA_SYS/conns/c1 || fail "c1 left after disconnect ($n: $res)"
	# The next round needs a connection again.
	ctl connect name=c1 addr=$PEER_IP:$port || fail "connect c1 again ($n)"
}
sweep disconnect check_disconnect disconnect name=c1
ctl disconnect name=c1 || fail "disconnect c1"

restore
ctl unlisten name=l1 || fail "unlisten l1"
t0=$SECONDS
timeout 120 rmmod krdma || fail "rmmod krdma after the sweeps failed or hung"
log "rmmod in $((SECONDS - t0)) s"

# Nothing leaked by any failed path (kmemleak), no bug in dmesg.  When
# the suite scans after its last test (test/run-suite.sh's kmemleak
# result, whose mark is older than this test), that scan is this one too:
# twenty seconds of the debug lane are not spent on it twice.  A leak of
# this test's then shows as that result's failure (its report names the
# allocation's caller), after the later tests ran.
if [ "${KRDMA_KMEMLEAK_LATER:-0}" = 1 ]; then
	log "kmemleak: left to the suite's scan after its last test"
else
	out=$("$top/test/kmemleak.sh")
	case $? in
	0|77)	;;
	*)	echo "$out"
		fail "kmemleak: $(head -n 1 <<<"$out")" ;;
	esac
fi
bug=$(dmesg | sed -n '/krdma-failslab: start/,$p' | grep -F -f "$top/tools/bug-patterns" | head -n 1)
[ -z "$bug" ] || fail "kernel bug pattern: $bug"
dmesg | grep -q 'krdma-failslab: start' || log "dmesg wrapped: only the console log was checked"
exit 0
