#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod on one host while its peer holds live connections to it: B's
# krdma unloads at once (within 60 s) with A's connections open, an idle
# one and one in the middle of a self-test that B's service answers; A
# sees both fail within 10 s (the idle one disconnected with -ECONNRESET;
# the busy one too, or with the error of the operation in flight that
# failed first: see below), the self-test ends failed (not hung, not
# passed), and once B has loaded krdma again A connects anew and passes a
# self-test.  A session to B comes back by itself (reconnect_delay_ms=500,
# never lost) once B listens again, and both ends name the session.
# topo: pair
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
PORT=7060
if [ "$ROLE" = B ]; then
	ctl listen name=l1 addr=$MY_IP:$PORT || fail "listen"
	barrier listening
	barrier running
	wait_for 10 test -e $KRDMA_SYS/conns/l1.2/test_status || fail "no l1.2"
	start=$SECONDS
	timeout 60 rmmod krdma || fail "rmmod with the peer's connections live: $?"
	log "rmmod took $((SECONDS - start)) s"
	[ ! -e $KRDMA_SYS ] || fail "sysfs left after rmmod"
	barrier unloaded
	krdma_load
	ctl listen name=l2 addr=$MY_IP:$PORT || fail "listen again"
	barrier relistening
	# A's session came back by itself: its passive end names it.
	wait_for 30 test -e $KRDMA_SYS/conns/l2.0/test_status || fail "A's session never came back (no l2.0)"
	[ "$(cat $KRDMA_SYS/conns/l2.0/session)" != none ] ||
		fail "l2.0 is no session's connection"
	barrier done
	ctl unlisten name=l2 || fail "unlisten"
	exit 0
fi

barrier listening
ctl connect name=c1 addr=$PEER_IP:$PORT || fail "connect c1"
ctl connect name=c2 addr=$PEER_IP:$PORT || fail "connect c2"
c1=$KRDMA_SYS/conns/c1 c2=$KRDMA_SYS/conns/c2
ctl test name=c2 op=write,read size=64K count=1000000 || fail "test start"
# A session too: it must come back by itself once B's krdma is loaded
# and listening again (issue #18).  The control file's self-test runs on
# its own connections only, so this one carries heartbeats, not data.
SS=$KRDMA_SYS/sessions
ctl session name=s1 addr=$PEER_IP:$PORT reconnect_delay_ms=500 loss_tmo_ms=never ||
	fail "session s1"
sc0=$(cat $SS/s1/conn)
nap 0.5
grep -q running $c2/test_status || fail "c2 self-test not running: $(cat $c2/test_status)"
barrier running
barrier unloaded
start=$SECONDS
wait_for 10 grep -q disconnected $c1/state ||
	fail "c1 after the peer's rmmod: $(cat $c1/state), error $(cat $c1/error)"
expect_eq "$(cat $c1/error)" -104 "c1 error after the peer's rmmod"
# c2 was moving data, and the first error is the cause it keeps.  On siw
# an RDMA WRITE in flight meets the TCP reset first (QP fatal error; the
# WRITE or a SEND fails, local QP operation error): -EIO.  On rxe B's QP
# drops A's packets once B has disconnected; when A's CM handles the DREQ
# later than A's retries run out (a busy TCG guest), the WRITE fails first
# with "transport retry counter exceeded": -ETIMEDOUT.  Either way with a
# line naming the failed operation.
wait_for 10 eval 'grep -qE "disconnected|error" $c2/state' ||
	fail "c2 after the peer's rmmod: $(cat $c2/state), error $(cat $c2/error)"
e=$(cat $c2/error)
if [ "$e" != -104 ]; then
	case "$DEV:$e" in
	siw:-5)		why='failed: ' ;;
	rxe:-110)	why='transport retry counter exceeded' ;;
	*)		fail "c2 error after the peer's rmmod: $e" ;;
	esac
	dmesg | grep -E 'c2: (RDMA [A-Z]+|send|receive) failed: ' | grep -qE "$why" ||
		fail "c2 failed with $e and no line naming the failed operation and why"
fi
wait_for 10 not_running $c2/test_status || fail "c2 self-test still running"
st=$(cat $c2/test_status)
case "$st" in
passed|running*)	fail "c2 self-test after the peer's rmmod: $st" ;;
esac
log "A noticed within $((SECONDS - start)) s; c2's self-test: $st"
expect_ctl_err ECONNRESET test name=c1 op=send
ctl disconnect name=c1 || fail "disconnect c1"
ctl disconnect name=c2 || fail "disconnect c2"
barrier relistening
start=$SECONDS
wait_for 30 eval '[ "$(cat $SS/s1/state)" = connected ] && [ "$(cat $SS/s1/conn)" != "$sc0" ]' ||
	fail "s1 not back 30 s after the peer listened again: $(cat $SS/s1/state), error $(cat $SS/s1/last_error)"
sc1=$(cat $SS/s1/conn)
log "s1 back on $sc1 within $((SECONDS - start)) s of the peer's relisten, $(cat $SS/s1/reconnects) reconnects"
[ "$(cat $SS/s1/reconnects)" -ge 1 ] || fail "s1 reconnects: $(cat $SS/s1/reconnects)"
expect_eq "$(cat $KRDMA_SYS/conns/$sc1/session)" "$(cat $SS/s1/id)" "conns/$sc1/session"
ctl connect name=c3 addr=$PEER_IP:$PORT || fail "connect c3 after the peer's reload"
ctl test name=c3 op=all size=4097 count=2 || fail "test c3"
wait_for 120 not_running $KRDMA_SYS/conns/c3/test_status
expect_eq "$(cat $KRDMA_SYS/conns/c3/test_status)" passed "c3 self-test"
ctl disconnect name=c3 || fail "disconnect c3"
barrier done
ctl unsession name=s1 || fail "unsession s1"
