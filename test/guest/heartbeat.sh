#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Heartbeats (#18) over loopback: the two sides agree on the shorter
# interval, or none if either turned them off (on iWARP only the first
# ping and its pong then, protocol version 4, and nudges until that pong
# when it is late); pings and pongs flow on an
# idle connection and keep it up; bad values are refused.  Peer loss,
# where they fail a connection, is test/guest/peerloss.sh's.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
S=$KRDMA_SYS/conns
expect_ctl_err EINVAL connect name=bad addr=$PEER_IP:7060 hb_ms=99
expect_ctl_err EINVAL connect name=bad addr=$PEER_IP:7060 hb_ms=0
expect_ctl_err EINVAL connect name=bad addr=$PEER_IP:7060 hb_misses=0
expect_ctl_err EINVAL connect name=bad addr=$PEER_IP:7060 hb_misses=101
expect_ctl_err EINVAL listen name=bad addr=$MY_IP:7060 hb_ms=600001
[ ! -e $S/bad ] || fail "a refused connect left conns/bad"

ctl listen name=l1 addr=$MY_IP:7060 hb_ms=100 || fail "listen l1"
ctl listen name=l2 addr=$MY_IP:7061 hb_ms=off || fail "listen l2"
# c1 asks for 200 ms, l1 for 100: both use 100.  Five silent ticks fail
# it: with two, a guest that stalled 300 ms under TCG lost c1 over siw
# (once in 8 runs, 2026-11-27).
ctl connect name=c1 addr=$PEER_IP:7060 hb_ms=200 hb_misses=5 || fail "connect c1"
ctl connect name=c2 addr=$PEER_IP:7060 hb_ms=off || fail "connect c2"
ctl connect name=c3 addr=$PEER_IP:7061 || fail "connect c3"
wait_for 5 test -e $S/l1.1/test_status -a -e $S/l2.0/test_status || fail "passive ends missing"
expect_eq "$(cat $S/c1/heartbeat_ms)" 100 "c1 heartbeat_ms (200 asked, listener 100)"
expect_eq "$(cat $S/l1.0/heartbeat_ms)" 100 "l1.0 heartbeat_ms"
expect_eq "$(cat $S/c2/heartbeat_ms)" 0 "c2 heartbeat_ms (off asked)"
expect_eq "$(cat $S/l1.1/heartbeat_ms)" 0 "l1.1 heartbeat_ms"
expect_eq "$(cat $S/c3/heartbeat_ms)" 0 "c3 heartbeat_ms (listener off)"
expect_eq "$(cat $S/l2.0/heartbeat_ms)" 0 "l2.0 heartbeat_ms"

# Idle for 3 s: about 30 pings each answered, nothing else.
sleep 3
for c in c1 l1.0 c2 l1.1 c3 l2.0; do
	expect_eq "$(cat $S/$c/state)" connected "$c state after 3 s idle"
	expect_eq "$(cat $S/$c/error)" 0 "$c error"
done
# Read from the last step of a ping's round to the first: the counters
# keep moving meanwhile, but every pong c1 got was sent by l1.0 for a ping
# it received from c1, so they must read in this order.
pr=$(cat $S/c1/hb_received) qs=$(cat $S/l1.0/hb_sent)
qr=$(cat $S/l1.0/hb_received) ps=$(cat $S/c1/hb_sent)
log "c1 sent $ps received $pr; l1.0 sent $qs received $qr"
# Under TCG ticks run late: at least 5 rounds in 3 s.
[ "$pr" -ge 5 ] || fail "c1 got $pr pongs in 3 s at 100 ms"
[ "$pr" -le "$qs" ] && [ "$qs" -le "$qr" ] && [ "$qr" -le "$ps" ] ||
	fail "pongs received $pr, sent $qs; pings received $qr, sent $ps"
# With heartbeats off none flow, but on iWARP the active side speaks
# first (MPA lets only the initiator send the first FPDU): one ping at
# once, and its pong, before the passive side gives its end to anyone.
first="0 0"
[ "$DEV" = siw ] && first="1 1"
for c in c2 l1.1 c3 l2.0; do
	expect_eq "$(cat $S/$c/hb_sent) $(cat $S/$c/hb_received)" "$first" \
		"$c heartbeats with heartbeats off"
done
# Heartbeats take no credit: all of them are still there.
expect_eq "$(cat $S/c1/credits)" "$(cat $S/c1/queue_depth)" "c1 credits"
expect_eq "$(cat $S/c1/recv_ops) $(cat $S/l1.0/recv_ops)" "0 0" \
	"messages received (heartbeats are not messages)"
# And a self-test on c1 still passes alongside them.
ctl test name=c1 op=send,write,read size=4096 count=20 || fail "test start"
wait_for 60 not_running $S/c1/test_status
expect_eq "$(cat $S/c1/test_status)" passed "c1 test_status"
for c in c1 c2 c3; do
	ctl disconnect name=$c || fail "disconnect $c"
done
ctl unlisten name=l1 || fail "unlisten l1"
ctl unlisten name=l2 || fail "unlisten l2"

# A peer that stops answering (fault_hb_mute: pings received, no pong):
# c4 fails with -ETIMEDOUT after 2 silent ticks of 100 ms (3 s of slack
# under TCG), and its control-file service thread then sleeps.  It took
# -ETIMEDOUT from krdma_recv() for "idle" and spun at full speed.
mute=/sys/module/krdma/parameters/fault_hb_mute
ctl listen name=l4 addr=$MY_IP:7062 hb_ms=100 || fail "listen l4"
ctl connect name=c4 addr=$PEER_IP:7062 hb_misses=2 || fail "connect c4"
wait_for 5 test -e $S/l4.0/test_status || fail "l4.0 missing"
echo 1 >$mute || fail "cannot set fault_hb_mute"
c4_lost() { [ "$(cat $S/c4/state):$(cat $S/c4/error)" = error:-110 ]; }
wait_for 3 c4_lost || { echo 0 >$mute; fail "c4 with its pings unanswered: $(cat $S/c4/state) $(cat $S/c4/error)"; }
echo 0 >$mute
pid=
for p in /proc/[0-9]*; do	# read, not cat: a fork per process adds up
	comm=
	read -r comm 2>/dev/null <"$p/comm"
	[ "$comm" = krdma/c4 ] && pid=${p#/proc/}
done
[ -n "$pid" ] || fail "no krdma/c4 thread"
# utime + stime, in clock ticks (USER_HZ, 100 a second).
cpu() { awk '{ print $14 + $15 }' /proc/$pid/stat; }
t0=$(cpu)
sleep 2
t1=$(cpu)
log "krdma/c4 used $((t1 - t0)) ticks in 2 s after its connection failed"
[ $((t1 - t0)) -le 10 ] || fail "krdma/c4 spins after -ETIMEDOUT: $((t1 - t0)) ticks of CPU in 2 s"
ctl disconnect name=c4 || fail "disconnect c4"
ctl unlisten name=l4 || fail "unlisten l4"

# iWARP: until the first pong, the active side nudges the passive one
# with zero-length RDMA WRITEs (conns/NAME/nudges), 200 ms after the ping
# and then twice as long each time: siw leaves an FPDU that comes as it
# accepts unread until more data comes.  A passive side that never
# answers (mute) gets them; the connection works meanwhile (a self-test
# passes alongside them) and they stop at 8.  On rxe there are none.
ctl listen name=l5 addr=$MY_IP:7063 hb_ms=off || fail "listen l5"
echo 1 >$mute || fail "cannot set fault_hb_mute"
ctl connect name=c5 addr=$PEER_IP:7063 || { echo 0 >$mute; fail "connect c5"; }
nudged() { [ "$(cat $S/c5/nudges)" -ge 2 ]; }
if [ "$DEV" = siw ]; then
	within 10 nudged || { echo 0 >$mute; fail "c5: $(cat $S/c5/nudges) nudges with its ping unanswered"; }
fi
echo 0 >$mute
ctl test name=c5 op=send,write,read size=65536 count=5 || fail "test on c5"
wait_for 60 not_running $S/c5/test_status
expect_eq "$(cat $S/c5/test_status)" passed "c5 test_status"
if [ "$DEV" = siw ]; then
	nudged8() { [ "$(cat $S/c5/nudges)" = 8 ]; }
	within 30 nudged8 || fail "c5: $(cat $S/c5/nudges) nudges, expected them to stop at 8"
else
	expect_eq "$(cat $S/c5/nudges)" 0 "c5 nudges on $DEV"
fi
expect_eq "$(cat $S/c5/state)" connected "c5 state after its nudges"
expect_eq "$(cat $S/l5.0/nudges)" 0 "l5.0 (passive) nudges"
log "c5: $(cat $S/c5/nudges) nudges"
ctl disconnect name=c5 || fail "disconnect c5"
ctl unlisten name=l5 || fail "unlisten l5"
