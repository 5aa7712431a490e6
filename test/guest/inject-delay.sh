#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Delayed completions, a slow peer on demand (conns/NAME/inject "delay=MS",
# krdma_inject.c): the grammar (bounds refused with EINVAL and a line
# naming the word; the file tells the delay, what is queued and how many
# were delayed); a send self-test whose one send completion is delayed
# 1500 ms takes at least that and passes; a send test with every 2nd send
# completion delayed on the sender and every 3rd receive on the receiver
# passes: the sender sees its send completions in order and the receiver
# its messages in order (the self-test checks both), every byte compared;
# "off" hands what is queued on at once; a disconnect while a
# registration waits for its held completion moves the QP to ERROR after
# 1 s rather than wait it out; receives delayed past the
# heartbeat bound fail the connection with -ETIMEDOUT ("peer ... lost"),
# and its teardown hands on what was queued; a disconnect and an rmmod
# with completions queued on both ends are clean (no splat, no leak: the
# debug kernel's KASAN, lockdep and kmemleak run it).
# make check: 6.12 over rxe (12 s); KRDMA_STRESS=1: every line and device,
# the debug kernel's included (66 s there, too long for its lane), with
# larger counts.
# topo: single
# dev: rxe siw
# kernel: 6.1 6.12 debug
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

S=$KRDMA_SYS/conns
stress=${KRDMA_STRESS:-0}

rdma_dev_up
krdma_load

# field FILE WORD: the value of WORD=N in the inject file FILE.
field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1"; }
queued() { [ "$(field "$1" queued)" -ge "${2:-1}" ]; }
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

# ---- the grammar ---------------------------------------------------------
ctl listen name=g addr=$MY_IP:7250 || fail "listen g"
ctl connect name=gc addr=$PEER_IP:7250 || fail "connect gc"
f=$S/gc/inject
bad() {	# bad 'dmesg words' LINE
	local got
	ratelimit_pace
	dmesg_mark
	got=$(KRDMA_CTL=$f ctl_err "$2")
	[ "$got" = EINVAL ] || fail "inject '$2': $got, expected EINVAL"
	dmesg_new | grep -qF "krdma: gc: inject: $1" ||
		fail "inject '$2': no line naming '$1': $(dmesg_new | tail -n 2)"
}
bad "bad word 'delay=0'" "delay=0"
bad "bad word 'delay=10001'" "delay=10001"
bad "bad word 'delay=1s'" "delay=1s op=send"
bad "bad word 'op=disk'" "delay=100 op=disk"
bad "bad word 'nth=0'" "delay=100 nth=0"
expect_eq "$(cat $f)" off "inject after refused delays"
echo "delay=10000 op=send,recv nth=2" >$f || fail "delay=10000"
expect_eq "$(cat $f)" "delay=10000 op=send,recv nth=2 queued=0 delayed=0" "inject delayed"
echo "delay=1 percent=50" >$f || fail "delay=1 percent=50"
expect_eq "$(cat $f)" "delay=1 op=any percent=50 queued=0 delayed=0" "inject by percent"
# A status injection replaces the delay, and "off" ends both.
echo "rem_access_err op=send nth=1000" >$f || fail "status after delay"
expect_eq "$(cat $f)" "rem_access_err op=send nth=1000 armed" "status after delay"
echo off >$f || fail "off"
expect_eq "$(cat $f)" off "inject off"
ctl disconnect name=gc || fail "disconnect gc"
ctl unlisten name=g || fail "unlisten g"

# ---- a slow send ---------------------------------------------------------
# One send, its completion 1500 ms late: the test lasts at least that
# (test_usecs, the kernel's clock) and less than 1500 ms more.
ctl listen name=l1 addr=$MY_IP:7251 || fail "listen l1"
ctl connect name=c1 addr=$PEER_IP:7251 || fail "connect c1"
echo "delay=1500 op=send" >$S/c1/inject || fail "delay c1"
ctl test name=c1 op=send size=4096 count=1 || fail "test c1"
wait_for 10 not_running $S/c1/test_status || fail "c1's test still running"
expect_eq "$(cat $S/c1/test_status)" passed "c1's test with a slow send"
us=$(cat $S/c1/test_usecs)
log "a send test with its send completion 1500 ms late: $us us"
[ "$us" -ge 1500000 ] && [ "$us" -lt 3000000 ] ||
	fail "c1's test took $us us, expected 1.5 to 3 s"
expect_eq "$(field $S/c1/inject delayed)" 1 "completions c1 delayed"
expect_eq "$(field $S/c1/inject queued)" 0 "completions c1 holds after"

# ---- order -----------------------------------------------------------------
# Every 2nd send completion of c1 200 ms late, and every 3rd receive of
# its peer: those behind them wait their turn.  The self-test fails
# ("send completions out of order", "messages out of order at the peer")
# if one overtook.
n=24
[ "$stress" = 1 ] && n=200
echo "delay=200 op=send nth=2" >$S/c1/inject || fail "delay c1 nth=2"
echo "delay=200 op=recv nth=3" >$S/l1.0/inject || fail "delay l1.0 nth=3"
t0=$(now_ms)
ctl test name=c1 op=send size=4096 count=$n || fail "test c1 order"
wait_for 60 not_running $S/c1/test_status || fail "c1's order test still running"
expect_eq "$(cat $S/c1/test_status)" passed "c1's test with delays"
log "$n sends, every 2nd completion and every 3rd receive 200 ms late: $(($(now_ms) - t0)) ms"
d=$(field $S/c1/inject delayed)
[ "$d" -ge $((n / 2)) ] || fail "c1 delayed $d send completions, expected $((n / 2)) or more"
d=$(field $S/l1.0/inject delayed)
[ "$d" -ge $((n / 3)) ] || fail "l1.0 delayed $d receives, expected $((n / 3)) or more"

# ---- off -------------------------------------------------------------------
# "off" with a completion queued hands it on at once: the test ends long
# before the 10 s.
echo off >$S/l1.0/inject || fail "off l1.0"
echo "delay=10000 op=send" >$S/c1/inject || fail "delay c1 10 s"
ctl test name=c1 op=send size=4096 count=1 || fail "test c1 off"
within 5 queued $S/c1/inject || fail "nothing queued on c1: $(cat $S/c1/inject)"
t0=$(now_ms)
echo off >$S/c1/inject || fail "off c1 with one queued"
expect_eq "$(cat $S/c1/inject)" off "c1's inject after off"
within 5 not_running $S/c1/test_status || fail "c1's test still running after off"
expect_eq "$(cat $S/c1/test_status)" passed "c1's test after off"
t=$(($(now_ms) - t0))
log "off with a send completion queued: the test ended $t ms later"
[ "$t" -lt 3000 ] || fail "c1's test ended $t ms after off"
ctl disconnect name=c1 || fail "disconnect c1"
ctl unlisten name=l1 || fail "unlisten l1"

# ---- a peer too slow for the heartbeats ----------------------------------
# c2's receives (the peer's heartbeats among them) 3000 ms late, with 3
# heartbeats of 100 ms: c2 gives its peer up with -ETIMEDOUT long before,
# and its teardown hands the queued receives on.
ctl listen name=l2 addr=$MY_IP:7252 hb_ms=100 hb_misses=3 || fail "listen l2"
ctl connect name=c2 addr=$PEER_IP:7252 hb_ms=100 hb_misses=3 || fail "connect c2"
sleep 1
expect_eq "$(cat $S/c2/state)" connected "c2 before the delay"
dmesg_mark
t0=$(now_ms)
echo "delay=3000 op=recv" >$S/c2/inject || fail "delay c2"
within 10 sh -c "[ \"\$(cat $S/c2/error)\" = -110 ]" ||
	fail "c2 with its receives late: $(cat $S/c2/state $S/c2/error | paste -sd ' ')"
t=$(($(now_ms) - t0))
log "receives 3000 ms late, heartbeats 3 x 100 ms: -ETIMEDOUT after $t ms"
[ "$t" -lt 3000 ] || fail "c2 failed after $t ms, not for its heartbeats"
dmesg_new | grep -qE "krdma: c2: peer .* lost: [0-9]+ heartbeats of 100 ms unanswered" ||
	fail "no 'peer lost' line for c2: $(dmesg_new | grep krdma | tail -n 3)"
within 5 sh -c "[ \"\$(cat $S/c2/inject)\" = off ]" ||
	fail "c2's queue after teardown: $(cat $S/c2/inject)"
ctl disconnect name=c2 || fail "disconnect c2"
ctl unlisten name=l2 || fail "unlisten l2"

# ---- a registration the device holds ---------------------------------------
# l7.0's registrations 10 s late, as a device that completes a request
# only when the QP goes to ERROR (siw with its socket gone): its
# self-test service waits for its registration, holding the QP.  A
# disconnect of l7.0 then moves the QP to ERROR after a grace of 1 s,
# which hands the completion on, rather than wait as long as the waiter
# (30 s for a device's request; here the 10 s).  The self-test fails.
ctl listen name=l7 addr=$MY_IP:7257 || fail "listen l7"
ctl connect name=c7 addr=$PEER_IP:7257 || fail "connect c7"
wait_for 5 test -e $S/l7.0/test_status || fail "l7.0 missing"
echo "delay=10000 op=reg" >$S/l7.0/inject || fail "delay l7.0"
ctl test name=c7 op=write size=4096 count=1 || fail "test c7"
within 5 queued $S/l7.0/inject || fail "nothing queued on l7.0: $(cat $S/l7.0/inject)"
dmesg_mark
t0=$(now_ms)
timeout 30 sh -c "echo disconnect name=l7.0 >$KRDMA_CTL" ||
	fail "disconnect l7.0 with its registration held failed or hung"
t=$(($(now_ms) - t0))
log "disconnect with a registration held 10 s: $t ms"
[ "$t" -lt 4000 ] || fail "disconnect of l7.0 took $t ms with its registration held, expected under 4 s"
dmesg_new | grep -qF "krdma: l7.0: teardown: a work request outstanding after 1000 ms; moving the QP to ERROR" ||
	fail "no line for l7.0's QP moved to ERROR: $(dmesg_new | grep krdma | tail -n 3)"
within 10 not_running $S/c7/test_status || fail "c7's test still running"
st=$(cat $S/c7/test_status)
[ "$st" != passed ] || fail "c7's test passed with its peer's service gone"
ctl disconnect name=c7 2>/dev/null
ctl unlisten name=l7 || fail "unlisten l7"
wait_for 10 sh -c "! ls $S | grep -q ." || fail "connections left: $(ls $S)"

# ---- disconnect and rmmod with completions queued ------------------------
# Every completion of both ends 2000 ms late while a send test runs: the
# disconnect's teardown hands them on (flushed ones queue behind) before
# what they point to is freed, and does not wait for the delay.
rounds=1
[ "$stress" = 1 ] && rounds=5
for r in $(seq $rounds); do
	ctl listen name=l3 addr=$MY_IP:7253 || fail "listen l3"
	ctl connect name=c3 addr=$PEER_IP:7253 || fail "connect c3"
	wait_for 5 test -e $S/l3.0/test_status || fail "l3.0 missing"
	echo "delay=2000" >$S/c3/inject || fail "delay c3"
	echo "delay=2000" >$S/l3.0/inject || fail "delay l3.0"
	ctl test name=c3 op=send size=4096 count=1000 || fail "test c3"
	within 5 queued $S/c3/inject || fail "nothing queued on c3: $(cat $S/c3/inject)"
	t0=$(now_ms)
	timeout 30 sh -c "echo disconnect name=c3 >$KRDMA_CTL" ||
		fail "disconnect c3 with completions queued failed or hung"
	t=$(($(now_ms) - t0))
	log "round $r: disconnect with completions queued: $t ms"
	[ ! -e $S/c3 ] || fail "c3 still listed after its disconnect"
	ctl unlisten name=l3 || fail "unlisten l3"
	wait_for 10 sh -c "! ls $S | grep -q ." || fail "connections left: $(ls $S)"
done

# The same on module unload, with two connections' worth queued.
ctl listen name=l4 addr=$MY_IP:7254 || fail "listen l4"
for c in c4 c5; do
	ctl connect name=$c addr=$PEER_IP:7254 || fail "connect $c"
	echo "delay=2000" >$S/$c/inject || fail "delay $c"
	ctl test name=$c op=send size=4096 count=1000 || fail "test $c"
done
for c in c4 c5; do
	within 5 queued $S/$c/inject || fail "nothing queued on $c: $(cat $S/$c/inject)"
done
dmesg_mark
t0=$(now_ms)
timeout 60 rmmod krdma || fail "rmmod with completions queued failed or hung"
log "rmmod with completions queued: $(($(now_ms) - t0)) ms"
[ ! -e $KRDMA_SYS ] || fail "sysfs left after rmmod"
dmesg_new | grep -q 'c4: closed by module unload' || fail "no close message for c4"
# Loaded again, a connection works.
krdma_load
ctl listen name=l6 addr=$MY_IP:7256 || fail "listen l6"
ctl connect name=c6 addr=$PEER_IP:7256 || fail "connect c6"
ctl test name=c6 op=send,write size=4096 count=10 || fail "test c6"
wait_for 20 not_running $S/c6/test_status || fail "c6's test still running"
expect_eq "$(cat $S/c6/test_status)" passed "c6's test after the reload"
ctl disconnect name=c6 || fail "disconnect c6"
ctl unlisten name=l6 || fail "unlisten l6"
krdma_unload
