#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Peer loss: guest B vanishes from the network mid-transfer (its link goes
# down: no disconnect, no FIN, not another frame).  For A that is a dead
# peer: A's connection must end in the error state within a bounded time,
# and A's waiters must get an error, not hang.  Idle connections notice it
# too, through their heartbeats: one with hb_ms=500 hb_misses=3 within
# 2 s (7 s allowed here, under TCG), one with the defaults within 10 s
# (13 s allowed), both with -ETIMEDOUT.  B's kernel lives on, so B then checks
# the other side: a connection to a peer that has forgotten it must not
# keep krdma from unloading.
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
ctl connect name=hb1 addr=$PEER_IP:7050 hb_ms=500 hb_misses=3 ||
	fail "connect hb1"
ctl connect name=hb2 addr=$PEER_IP:7050 || fail "connect hb2"
ctl connect name=hboff addr=$PEER_IP:7050 hb_ms=off || fail "connect hboff"
# An RC QP (rxe) gives up after its retries, in seconds; siw's TCP keeps
# retransmitting, so there the self-test's own bound on each wait decides.
ctl test name=c1 op=write,read,send size=64K count=1000000 timeout_ms=5000 ||
	fail "test"
barrier running
start=$(date +%s)
# B waits for this test either way; it must not wait for A's timeouts too.
trap 'barrier noticed' EXIT
# Idle connections, heartbeats only (B's link goes down 1 s after
# "running").  The deadlines count from here.
hb_lost() {
	[ "$(cat $KRDMA_SYS/conns/$1/state)" != connected ]
}
wait_for 30 hb_lost hb1 || fail "hb1 (hb_ms=500 hb_misses=3) still connected 30 s after peer loss"
t=$(( $(date +%s) - start ))
log "hb1 failed after $t s"
[ $t -le 8 ] || fail "hb1 (hb_ms=500 hb_misses=3) took $t s to notice the peer loss; want <= 8 (2 s, and TCG)"
wait_for 30 hb_lost hb2 || fail "hb2 (default heartbeat) still connected 30 s after peer loss"
t=$(( $(date +%s) - start ))
log "hb2 failed after $t s"
[ $t -le 14 ] || fail "hb2 (default heartbeat) took $t s to notice the peer loss; want <= 14 (10 s, and TCG)"
for c in hb1 hb2; do
	e=$(cat $KRDMA_SYS/conns/$c/error)
	[ "$e" = -110 ] || fail "$c: error $e, want -110 (-ETIMEDOUT)"
done
[ "$(cat $KRDMA_SYS/conns/hboff/state)" = connected ] ||
	fail "hboff (hb_ms=off) failed with no traffic: $(cat $KRDMA_SYS/conns/hboff/error)"
# Either the heartbeats went unanswered, or (rxe) the transport gave up
# on a ping first: both say so in dmesg.
dmesg | grep -Eq "hb1: (peer .* lost: 3 heartbeats of 500 ms unanswered|heartbeat failed: transport retry counter exceeded)" ||
	fail "no dmesg line naming hb1's lost heartbeats"
wait_for 60 hb_lost c1 ||
	fail "peer loss not noticed in 60 s"
wait_for 60 not_running $KRDMA_SYS/conns/c1/test_status ||
	fail "self-test still waiting 60 s after the connection failed"
log "peer loss noticed after $(( $(date +%s) - start )) s: state $(cat $KRDMA_SYS/conns/c1/state), error $(cat $KRDMA_SYS/conns/c1/error), test $(cat $KRDMA_SYS/conns/c1/test_status)"
grep -q '^failed' $KRDMA_SYS/conns/c1/test_status || fail "test: $(cat $KRDMA_SYS/conns/c1/test_status)"
timeout 60 bash -c "echo disconnect name=c1 >$KRDMA_CTL" || fail "disconnect hung"
for c in hb1 hb2 hboff; do
	timeout 60 bash -c "echo disconnect name=$c >$KRDMA_CTL" ||
		fail "disconnect $c hung"
done
