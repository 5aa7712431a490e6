#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Peer loss: guest B vanishes from the network mid-transfer (its link goes
# down: no disconnect, no FIN, not another frame).  For A that is a dead
# peer: A's connection must end in the error state within a bounded time,
# and A's waiters must get an error, not hang.  B's kernel lives on, so B
# then checks the other side: a connection to a peer that has forgotten it
# must not keep krdma from unloading.
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
	# Whatever happens next, the next test needs the link.
	trap 'ip link set eth0 up' EXIT
	ip link set eth0 down || fail "link down"
	barrier noticed 180
	ip link set eth0 up || fail "link up"
	timeout 60 rmmod krdma ||
		fail "rmmod krdma with a connection to a vanished peer: $?"
	exit 0
fi
barrier listening
ctl connect name=c1 addr=$PEER_IP:7050 || fail "connect"
# An RC QP (rxe) gives up after its retries, in seconds; siw's TCP keeps
# retransmitting, so there the self-test's own bound on each wait decides.
ctl test name=c1 op=write,read,send size=64K count=1000000 timeout_ms=5000 ||
	fail "test"
barrier running
start=$(date +%s)
# B waits for this test either way; it must not wait for A's timeouts too.
trap 'barrier noticed' EXIT
wait_for 60 sh -c "! grep -q connected $KRDMA_SYS/conns/c1/state" ||
	fail "peer loss not noticed in 60 s"
wait_for 60 not_running $KRDMA_SYS/conns/c1/test_status ||
	fail "self-test still waiting 60 s after the connection failed"
log "peer loss noticed after $(( $(date +%s) - start )) s: state $(cat $KRDMA_SYS/conns/c1/state), error $(cat $KRDMA_SYS/conns/c1/error), test $(cat $KRDMA_SYS/conns/c1/test_status)"
grep -q '^failed' $KRDMA_SYS/conns/c1/test_status || fail "test: $(cat $KRDMA_SYS/conns/c1/test_status)"
timeout 60 bash -c "echo disconnect name=c1 >$KRDMA_CTL" || fail "disconnect hung"
