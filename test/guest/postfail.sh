#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A post that krdma makes on its own, under the connection's lock, fails
# (krdma's fault_post_fail parameter: the Nth such post from now returns
# -ENOMEM, as from a device whose queue is full).  The connection must fail
# with that errno at once, say so in one dmesg line, and be torn down so
# that its peer learns it too.  Before, such a connection only stopped
# posting: it stayed "connected" with error 0, and its peer waited for
# credits or heartbeats that never came.
#  1. a receive going back after a message: the receiving side fails;
#  2. a heartbeat's pong (the second heartbeat post, after the ping): the
#     passive side fails.
# The posts of a consumer's operations do the same when the device refuses
# them, as siw refuses a post on a QP that has just left RTS before that
# failure is reported: the caller must find its connection failed, not a
# working one that refused one request (fault_mr_post_fail: -ENOTCONN):
#  3. a registration its caller waits for (the self-test service's);
#  4. an invalidation its caller waits for (the same region's, freed);
# and the posts of the operations themselves (fault_op_post_fail, the same
# errno), where the side that posted must fail and be torn down:
#  5. an atomic (not on siw, which has none);
#  6. a message;
#  7. an RDMA WRITE.
# make check runs it on the debug kernel, where lockdep watches the failure
# path (it runs under the connection's lock, in softirq).
# topo: single
# dev: rxe siw
# check-kernel: debug
. "$(dirname "$0")/../lib.sh"

P=/sys/module/krdma/parameters/fault_post_fail
MP=/sys/module/krdma/parameters/fault_mr_post_fail
OP=/sys/module/krdma/parameters/fault_op_post_fail
S=$KRDMA_SYS/conns
restore() {
	echo 0 >$P 2>/dev/null
	echo 0 >$MP 2>/dev/null
	echo 0 >$OP 2>/dev/null
}
trap restore EXIT

# arm N: krdma's Nth own post from now fails.
arm() { echo "$1" >$P || fail "cannot set fault_post_fail"; }

# state_is CONN STATE ERROR
state_is() { [ "$(cat $S/$1/state):$(cat $S/$1/error)" = "$2:$3" ]; }
not_connected() { [ "$(cat $S/$1/state)" != connected ]; }

# pair N PORT HB_MS: listener lN, connection cN to it, its passive end lN.0.
pair() {
	ctl listen name=l$1 addr=$MY_IP:$2 hb_ms=$3 || fail "listen l$1"
	ctl connect name=c$1 addr=$PEER_IP:$2 hb_ms=$3 || fail "connect c$1"
	wait_for 5 test -e $S/l$1.0/test_status || fail "l$1.0 missing"
	dmesg_mark
}

# ended CONN [ERRNO]: failed with ERRNO (-12, -ENOMEM); a passive end is
# closed by the control file's listener when its connection fails, and
# says with which error.
ended() {
	local e=${2:--12}
	state_is "$1" error "$e" ||
		{ [ ! -e "$S/$1" ] && dmesg_new | grep -qF "krdma: $1: peer gone ($e)"; }
}

# failed CONN WHAT PEER [ERRNO KNOB]: the one injected failure (of KNOB,
# fault_post_fail's by default, with ERRNO, -12) was CONN's post of WHAT;
# CONN failed with its errno, said so, and was torn down, so that PEER is
# told now rather than after a 30 s credit wait or its heartbeats.
failed() {
	local e=${4:--12} k=${5:-$P}
	wait_for 5 ended "$1" "$e" ||
		fail "$1 after its post of $2 failed: $(cat $S/$1/state $S/$1/error 2>&1)"
	expect_eq "$(cat $k)" 0 "posts left before the failure ($2 was the one)"
	dmesg_new | grep -qF "krdma: $1: posting $2 failed ($e): failing the connection" ||
		fail "no dmesg line for $1's failed post of $2"
	wait_for 5 not_connected "$3" || fail "$3 still connected 5 s after $1 failed"
}

unpair() {	# unpair N
	restore
	ctl disconnect name=c$1 || fail "disconnect c$1"
	ctl unlisten name=l$1 || fail "unlisten l$1"
}

rdma_dev_up
krdma_load

# 1. Nothing is received on either side until c1's first message reaches
# l1.0: the first repost is l1.0's.
pair 1 7130 off
arm 1
ctl test name=c1 op=send size=64 count=50 || fail "test start"
failed l1.0 "a receive" c1
wait_for 10 not_running $S/c1/test_status
case "$(cat $S/c1/test_status)" in
failed*) ;;
*) fail "c1 test_status after l1.0 failed: $(cat $S/c1/test_status)" ;;
esac
unpair 1

# 2. Idle at 100 ms heartbeats, a round is c2's ping, l2.0's receive going
# back, l2.0's pong, c2's receive going back, and c2 pings again only after
# the pong: armed between two rounds (most of the time), the third post is
# l2.0's pong.  Armed during a round, another of them fails: the checks
# are the same for it, on the side whose post it was.
pair 2 7131 100
arm 3
wait_for 5 sh -c "dmesg | tail -n +$((KRDMA_DMESG_MARK + 1)) | grep -q 'posting .* failed (-12)'" ||
	fail "no heartbeat-time post failed in 5 s"
line=$(dmesg_new | grep -o 'krdma: [^ ]*: posting .* failed (-12)' | head -n 1)
who=${line#krdma: } who=${who%%:*}
what=${line#*posting } what=${what% failed*}
log "failed: $who's post of $what"
case "$who" in
l2.0)	failed l2.0 "$what" c2 ;;
c2)	failed c2 "$what" l2.0 ;;
*)	fail "unexpected failure: $line" ;;
esac
unpair 2

# refuse N KNOB NTH WHO WHAT STATUS OP ARGS...: pair N (port 7129 + N), the
# NTH post from now that KNOB counts refused (-ENOTCONN), then cN's
# self-test OP with ARGS.  WHO (cN or lN.0) must fail with -107 and say
# that its post of WHAT failed, its peer be told, and cN's test status end
# as the case pattern STATUS says.
refuse() {
	local n=$1 knob=$2 nth=$3 who=$4 what=$5 status=$6 op=$7 peer=c$1 st
	shift 7
	[ "$who" = "c$n" ] && peer=l$n.0
	pair "$n" $((7129 + n)) off
	echo "$nth" >"$knob" || fail "cannot set $knob"
	ctl test name=c$n op=$op "$@" || fail "test start c$n"
	failed "$who" "$what" "$peer" -107 "$knob"
	wait_for 10 not_running $S/c$n/test_status
	st=$(cat $S/c$n/test_status)
	# shellcheck disable=SC2254 # STATUS is a pattern
	case "$st" in
	$status) ;;
	*) fail "c$n test_status after $who's post of $what failed: $st" ;;
	esac
	unpair "$n"
}

# 3. c4's write test asks l4.0's self-test service for a region, which
# registers it with krdma_reg_buf(): the first waited registration from
# now on.  Its refused post must fail l4.0 with -ENOTCONN, not end in
# "self-test setup failed" answered over a connection that stays up.
refuse 4 $MP 1 l4.0 "a registration" 'failed*' write size=4096 count=1

# 4. The same test with the second one failed: the region's registration
# goes, the write passes, and the service's krdma_mr_free() of it (c5's
# ST_FREE) posts the LOCAL_INV that is refused.  l5.0 must fail with
# -ENOTCONN and say so, not be torn down as if its peer had left (-104,
# no line); c5's test may have passed by then.
refuse 5 $MP 2 l5.0 "an invalidation" '*' write size=4096 count=1

# The posts of the operations themselves (fault_op_post_fail): cN must
# fail with -ENOTCONN, say so once and be torn down (lN.0 told), not see
# its test fail over a connection that stays up; before, a message or a
# transfer failed cN without a teardown (lN.0 stayed connected), an
# atomic not at all.  An atomic's and a WRITE's test refuse the 3rd
# operation post: cN's ST_SETUP message (1st) asks lN.0 for a region and
# lN.0's ST_TOKEN message (2nd) answers, each waiting for the other.
# 5. c6's first fetch-and-add.
if [ "$DEV" = siw ]; then
	log "5. skipped: siw has no atomics"
else
	refuse 6 $OP 3 c6 "an atomic" 'failed*' atomic count=5
fi

# 6. c7's first message of a send test: the 1st operation post (no
# region to set up).
refuse 7 $OP 1 c7 "a message" 'failed*' send size=64 count=20

# 7. c8's first RDMA WRITE into l8.0's region.
refuse 8 $OP 3 c8 "an RDMA WRITE" 'failed*' write size=4096 count=1

# Nothing left behind, and krdma still works.
ctl listen name=l3 addr=$MY_IP:7132 || fail "listen l3"
ctl connect name=c3 addr=$PEER_IP:7132 || fail "connect c3"
ctl test name=c3 op=send,write,read size=4096 count=20 || fail "test c3"
wait_for 60 not_running $S/c3/test_status
expect_eq "$(cat $S/c3/test_status)" passed "c3 test_status after the failures"
ctl disconnect name=c3 || fail "disconnect c3"
ctl unlisten name=l3 || fail "unlisten l3"
