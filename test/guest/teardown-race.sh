#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Teardown under batched one-sided traffic (#22 item 0): a batch op must be
# finished and freed exactly once whatever order its completions and
# flushes arrive in.  Rounds of: a batched READ or WRITE bench (and a
# self-test beside it) on a connection, then, within a second, one of
#   disconnect of the active end, disconnect of the passive end,
#   rdma link delete (device removal), rmmod krdma.
# Each round: the command returns, the bench ends (not "running"), nothing
# is left behind, krdma unloads; the suite's dmesg scan fails the test on
# any KASAN report, double free or WARNING.  On siw, "disconnect" during a
# batched READ bench crashed the kernel (a double free) within three
# rounds: siw reports a READ flushed while queued twice.  krdma's test knob
# fault_dup_flush=1 delivers every failed one-sided completion twice on
# any device, so every round here meets that case, on rxe too.
# KRDMA_RACE_ROUNDS: rounds per (op, way); default 1 (make stress: more).
# make check runs four of the eight (op, way) pairs, a different four
# each day; make stress all eight.
# topo: single
# dev: rxe siw
# check-kernel: debug
. "$(dirname "$0")/../lib.sh"

rounds=${KRDMA_RACE_ROUNDS:-1}
port=7400

# start_traffic OP: listener, connection, a batched bench and a self-test.
start_traffic() {
	port=$((port + 1))
	ctl listen name=l1 addr=$MY_IP:$port || fail "listen"
	ctl connect name=c1 addr=$PEER_IP:$port || fail "connect"
	ctl connect name=c2 addr=$PEER_IP:$port || fail "connect c2"
	ctl bench name=c1 op=$1 size=8K batch=4 secs=30 || fail "bench op=$1"
	ctl test name=c2 op=$1 size=64K count=100000 || fail "test op=$1"
	# Up to a second of traffic: the window is while ops are in flight.
	nap "0.$((RANDOM % 9 + 1))"
	grep -q running $KRDMA_SYS/conns/c1/bench_status ||
		fail "bench op=$1 not running: $(cat $KRDMA_SYS/conns/c1/bench_status)"
}

# settle WHAT CONN...: the bench and the self-test on CONN have ended.
settle() {
	local what=$1 c

	shift
	for c in "$@"; do
		[ -d $KRDMA_SYS/conns/$c ] || continue
		wait_for 60 not_running $KRDMA_SYS/conns/$c/bench_status ||
			fail "$what: $c bench still running 60 s after teardown"
		wait_for 60 not_running $KRDMA_SYS/conns/$c/test_status ||
			fail "$what: $c self-test still running 60 s after teardown"
	done
}

# cleanup WHAT: disconnect what is left (a self-test may still run on it).
cleanup() {
	local c

	for c in $(ls $KRDMA_SYS/conns 2>/dev/null); do
		timeout 60 bash -c "echo disconnect name=$c >$KRDMA_CTL 2>/dev/null" ||
			[ $? != 124 ] || fail "$1: disconnect $c hung"
	done
	ctl unlisten name=l1 2>/dev/null
	# A passive end whose peer went is closed by its reaper, not by us.
	wait_for 30 eval '[ -z "$(ls $KRDMA_SYS/conns 2>/dev/null)" ]' ||
		fail "$1: connections left: $(ls $KRDMA_SYS/conns)"
}

# make check: each way once, with READ and WRITE alternating over the ways
# and swapping from one day to the next (four rounds; both ops meet every
# way within two days); make stress: every op with every way.
day=$((10#$(date +%j)))
o=0 n=0
for op in read write; do
	o=$((o + 1)) w=0
	for way in disconnect disconnect-passive devremove rmmod; do
		w=$((w + 1))
		if [ "${KRDMA_STRESS:-0}" != 1 ] && [ $(((o + w + day) % 2)) = 1 ]; then
			continue
		fi
		for r in $(seq 1 "$rounds"); do
			what="$op/$way round $r"
			n=$((n + 1))
			log "$what"
			rdma_dev_up
			krdma_load fault_dup_flush=1
			start_traffic $op
			case $way in
			disconnect)
				timeout 60 bash -c "echo disconnect name=c1 >$KRDMA_CTL" ||
					fail "$what: disconnect failed or hung"
				[ ! -d $KRDMA_SYS/conns/c1 ] || fail "$what: c1 still there"
				cleanup "$what"
				;;
			disconnect-passive)
				timeout 60 bash -c "echo disconnect name=l1.0 >$KRDMA_CTL" ||
					fail "$what: disconnect failed or hung"
				settle "$what" c1
				cleanup "$what"
				;;
			devremove)
				timeout 60 rdma link delete $IBDEV ||
					fail "$what: rdma link delete failed or hung"
				settle "$what" c1 c2
				cleanup "$what"
				;;
			rmmod)
				timeout 60 rmmod krdma || fail "$what: rmmod failed or hung"
				;;
			esac
			lsmod | grep -q '^krdma ' && { timeout 60 rmmod krdma || fail "$what: rmmod after the round"; }
		done
	done
done
log "$n rounds"
