#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Device removal under traffic: rdma link delete while a self-test runs
# tears everything down synchronously (no hang), waiters get an error,
# connections show -ENODEV; the device added again is usable again, and a
# session and a listener whose device went away come back on their own;
# the listeners' lines of it are rate-limited (15 listeners, at most 10
# lines each way).
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
ctl listen name=l1 addr=$MY_IP:7010 || fail "listen"
for i in 1 2 3; do
	ctl connect name=c$i addr=$PEER_IP:7010 || fail "connect c$i"
done
ctl test name=c1 op=write,read size=256K count=100000 || fail "test start"
ctl test name=c2 op=send size=1K count=1000000 || fail "test start"
# Both tests under way (they would run for minutes).
within 20 ops_going c1 && within 20 ops_going c2 ||
	fail "the tests did not get going in 20 s"
expect_eq "$(cat $KRDMA_SYS/conns/c1/test_status)" running "c1 test before removal"

timeout 60 rdma link delete $IBDEV || fail "rdma link delete hung or failed"
for c in c1 c2 c3; do
	expect_eq "$(cat $KRDMA_SYS/conns/$c/state)" error "$c state after removal"
	expect_eq "$(cat $KRDMA_SYS/conns/$c/error)" -19 "$c error after removal"
done
# Over loopback the passive ends may see their peer's disconnect first;
# either way they are closed (reaped) once they have failed.
for c in l1.0 l1.1 l1.2; do
	[ -e $KRDMA_SYS/conns/$c ] || continue
	case "$(cat $KRDMA_SYS/conns/$c/state 2>/dev/null):$(cat $KRDMA_SYS/conns/$c/error 2>/dev/null)" in
	error:-19|disconnected:-104|:) ;;
	*) fail "$c after removal: $(cat $KRDMA_SYS/conns/$c/state) $(cat $KRDMA_SYS/conns/$c/error)" ;;
	esac
done
wait_for 40 not_running $KRDMA_SYS/conns/c1/test_status ||
	fail "c1 self-test still running after removal"
grep -q '^failed' $KRDMA_SYS/conns/c1/test_status || fail "c1 test: $(cat $KRDMA_SYS/conns/c1/test_status)"
[ ! -e $KRDMA_SYS/devices/$IBDEV ] || fail "device dir left after removal"
# A listener bound to the device's address stops listening.
grep -q 'stopped -19' $KRDMA_SYS/listeners/l1/state || fail "l1: $(cat $KRDMA_SYS/listeners/l1/state)"
expect_ctl_err ENODEV test name=c3 op=send
for c in c1 c2 c3; do ctl disconnect name=$c || fail "disconnect $c"; done
wait_for 30 eval '! ls -d $KRDMA_SYS/conns/l1.* >/dev/null 2>&1' ||
	fail "passive ends not reaped: $(ls $KRDMA_SYS/conns)"
ctl unlisten name=l1 || fail "unlisten"

rdma_dev_up
wait_for 5 test -d $KRDMA_SYS/devices/$IBDEV || fail "device not back"
ctl listen name=l2 addr=$MY_IP:7011 || fail "listen after re-add"
ctl connect name=d1 addr=$PEER_IP:7011 || fail "connect after re-add"
ctl test name=d1 op=send,write,read size=64K count=2 || fail "test after re-add"
wait_for 60 not_running $KRDMA_SYS/conns/d1/test_status
expect_eq "$(cat $KRDMA_SYS/conns/d1/test_status)" passed "self-test after re-add"
ctl disconnect name=d1 || fail "disconnect d1"
ctl unlisten name=l2 || fail "unlisten l2"

# A session and its listener ride out the removal: while the device is
# gone the listener is stopped (-19) and the session's attempts fail (it
# stays reconnecting, loss_tmo_ms is long); once the device is back the
# listener listens again and the session reconnects, nobody doing a thing.
SS=$KRDMA_SYS/sessions
ctl listen name=l3 addr=$MY_IP:7012 || fail "listen l3"
ctl session name=s1 addr=$PEER_IP:7012 reconnect_delay_ms=300 loss_tmo_ms=60000 ||
	fail "session s1"
wait_for 5 eval '[ "$(cat $SS/s1/state)" = connected ]' || fail "s1: $(cat $SS/s1/state)"
dmesg_mark
timeout 60 rdma link delete $IBDEV || fail "rdma link delete (s1) hung or failed"
wait_for 10 eval 'dmesg_new | grep -q "s1: reconnect failed"' ||
	fail "s1 made no attempt with the device gone: $(cat $SS/s1/state) $(cat $SS/s1/last_error)"
expect_eq "$(cat $SS/s1/state)" reconnecting "s1 state with the device gone"
expect_eq "$(cat $SS/s1/reconnects)" 0 "s1 reconnects with the device gone"
grep -q 'stopped -19' $KRDMA_SYS/listeners/l3/state || fail "l3: $(cat $KRDMA_SYS/listeners/l3/state)"
dmesg_mark
rdma_dev_up
wait_for 5 test -d $KRDMA_SYS/devices/$IBDEV || fail "device not back (s1)"
wait_for 10 grep -qx listening $KRDMA_SYS/listeners/l3/state ||
	fail "l3 after the re-add: $(cat $KRDMA_SYS/listeners/l3/state)"
dmesg_new | grep -q "l3: listening again on $MY_IP:7012 ($IBDEV)" ||
	fail "no 'listening again' line for l3: $(dmesg_new | tail -n 5)"
wait_for 15 eval '[ "$(cat $SS/s1/state)" = connected ]' ||
	fail "s1 did not reconnect after the re-add: $(cat $SS/s1/state), last_error $(cat $SS/s1/last_error)"
expect_eq "$(cat $SS/s1/reconnects)" 1 "s1 reconnects after the re-add"
c=$(cat $SS/s1/conn)
expect_eq "$(cat $KRDMA_SYS/conns/$c/device)" $IBDEV "s1's connection's device"
expect_eq "$(cat $KRDMA_SYS/conns/$c/state)" connected "s1's connection's state"
# (A session's connection carries no self-test: the control file's test
# runs on its own connections.  Data over a session that reconnects is
# session-flap's, through krdma_apitest.)  Its passive end is l3's.
wait_for 5 eval 'grep -q connected $KRDMA_SYS/conns/l3.*/state' ||
	fail "no connected passive end under l3: $(ls $KRDMA_SYS/conns)"
ctl unsession name=s1 || fail "unsession s1"
ctl unlisten name=l3 || fail "unlisten l3 at the end"

# The lines of a listener's stop and return are one per listener, and
# users make listeners (the control file, /dev/krdma): they are
# rate-limited.  15 listeners on the device log at most the kernel's
# burst of 10 each way; every one of them still stops, and listens again.
n=15
lstate() { read -r st <"$KRDMA_SYS/listeners/rl$1/state"; }
all_listening() {
	local i
	for i in $(seq $n); do
		lstate "$i"
		[ "$st" = listening ] || { bad="rl$i: $st"; return 1; }
	done
}
for i in $(seq $n); do
	ctl listen name=rl$i addr=$MY_IP:$((7040 + i)) || fail "listen rl$i"
done
# Each kind of line's window (5 s) must start with these listeners: one
# that l3's lines above opened would leave fewer than 10 to them, and a
# new window midway would allow up to 10 more.
sleep 6
dmesg_mark
timeout 60 rdma link delete $IBDEV || fail "rdma link delete (15 listeners) hung or failed"
for i in $(seq $n); do
	lstate "$i"
	expect_eq "$st" "stopped -19" "rl$i with the device gone"
done
dmesg_fetch
new_count "removed, no longer listening"
log "$n listeners stopped: $NEW_N lines"
[ "$NEW_N" -ge 1 ] && [ "$NEW_N" -le 10 ] ||
	fail "$NEW_N 'no longer listening' lines for $n listeners, expected 1 to 10 (rate-limited)"
dmesg_mark
rdma_dev_up
within 20 all_listening || fail "not every rl listener listens again: $bad"
dmesg_fetch
new_count ": listening again on "
log "$n listeners back: $NEW_N lines"
[ "$NEW_N" -ge 1 ] && [ "$NEW_N" -le 10 ] ||
	fail "$NEW_N 'listening again' lines for $n listeners, expected 1 to 10 (rate-limited)"
for i in $(seq $n); do ctl unlisten name=rl$i || fail "unlisten rl$i"; done
