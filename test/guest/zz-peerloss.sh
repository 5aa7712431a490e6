#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Peer loss: guest B dies mid-transfer (sysrq reboot, no disconnect sent).
# A's connection must end in the error state within a bounded time, and A's
# waiters must get an error, not hang.  Runs last: B does not come back.
# topo: pair
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
if [ "$ROLE" = B ]; then
	ctl listen name=l1 addr=$MY_IP:7050 || fail "listen"
	barrier listening
	barrier running
	sleep 1
	# Report our part, then drop dead without a word to the peer.
	echo "PASS $TEST_ID" >>"$LAB/results-$GUEST"
	dmesg >"$LAB/dmesg-$GUEST.txt"
	echo 0 >"$LAB/rc-$GUEST"
	: >"$LAB/sync/$TEST_ID.suite-end.$GUEST"
	sync
	echo b >/proc/sysrq-trigger
	sleep 60
	fail "still alive after sysrq reboot"
fi
barrier listening
ctl connect name=c1 addr=$PEER_IP:7050 || fail "connect"
ctl test name=c1 op=write,read,send size=64K count=1000000 || fail "test"
barrier running
start=$(date +%s)
wait_for 120 sh -c "! grep -q connected $KRDMA_SYS/conns/c1/state" ||
	fail "peer loss not noticed in 120 s"
wait_for 60 not_running $KRDMA_SYS/conns/c1/test_status ||
	fail "self-test still waiting 60 s after the connection failed"
log "peer loss noticed after $(( $(date +%s) - start )) s: state $(cat $KRDMA_SYS/conns/c1/state), error $(cat $KRDMA_SYS/conns/c1/error), test $(cat $KRDMA_SYS/conns/c1/test_status)"
grep -q '^failed' $KRDMA_SYS/conns/c1/test_status || fail "test: $(cat $KRDMA_SYS/conns/c1/test_status)"
timeout 60 bash -c "echo disconnect name=c1 >$KRDMA_CTL" || fail "disconnect hung"
