#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Sessions through the control file (#18): "session" makes one under
# sessions/NAME (a connection that comes back on its own), "unsession"
# destroys it.  Over loopback, against a listener of the control file:
# closing the session's passive end makes it reconnect (reconnects 1,
# last_error -104, a new connection); with the listener gone it tries
# every reconnect_delay_ms and is lost after loss_tmo_ms (last_error
# -111, ECONNREFUSED); refused commands fail with their errno and a
# dmesg line; a session left at rmmod is destroyed by the unload; a set
# of three connections (conns=3) fails and comes back as one.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
SS=$KRDMA_SYS/sessions C=$KRDMA_SYS/conns
P=7090
# says FILE VALUE: FILE reads VALUE (for wait_for, which runs it again).
says() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }
# close_and_reconnect SESSION PASSIVE: the passive end PASSIVE closes (the
# kernel log marked first); SESSION reconnects on its own, once, and is
# connected again.
close_and_reconnect() {
	dmesg_mark
	ctl disconnect name=$2 || fail "disconnect $2"
	wait_for 10 says $SS/$1/reconnects 1 ||
		fail "$1 did not reconnect: state $(cat $SS/$1/state), last_error $(cat $SS/$1/last_error)"
	wait_for 5 says $SS/$1/state connected || fail "$1 not connected again"
}

# Refused: each with its errno, nothing left behind.
expect_ctl_err EINVAL session name=bad addr=$PEER_IP:$P reconnect_delay_ms=99
expect_ctl_err EINVAL session name=bad addr=$PEER_IP:$P loss_tmo_ms=0
expect_ctl_err EINVAL session name=bad addr=$PEER_IP
expect_ctl_err ENOENT unsession name=nosuch
# Nobody listens: the first connection's error, as connect's.
expect_ctl_err ECONNREFUSED session name=bad addr=$PEER_IP:$P timeout_ms=5000
[ ! -e $SS/bad ] || fail "a refused session left sessions/bad"

ctl listen name=l addr=$MY_IP:$P || fail "listen"
ctl session name=s1 addr=$PEER_IP:$P reconnect_delay_ms=200 loss_tmo_ms=2000 ||
	fail "session s1"
expect_ctl_err EEXIST session name=s1 addr=$PEER_IP:$P
wait_for 5 says $SS/s1/state connected ||
	fail "s1 state: $(cat $SS/s1/state 2>&1)"
expect_eq "$(cat $SS/s1/reconnects) $(cat $SS/s1/generation)" "0 0" \
	"s1 reconnects and generation"
expect_eq "$(cat $SS/s1/last_error) $(cat $SS/s1/last_wc_status)" "0 none" \
	"s1 last_error and last_wc_status"
expect_eq "$(cat $SS/s1/reconnect_delay_ms) $(cat $SS/s1/loss_tmo_ms)" \
	"200 2000" "s1 delays"
c0=$(cat $SS/s1/conn)
[ -d "$C/$c0" ] || fail "s1's connection '$c0' has no conns/ directory"
expect_eq "$(cat "$C/$c0/state")" connected "$c0 state"
wait_for 5 test -e $C/l.0/test_status || fail "no passive end l.0"
# Both ends name the session; a connection of no session says none.
sid=$(cat $SS/s1/id)
expect_eq "$(cat "$C/$c0/session") $(cat $C/l.0/session)" "$sid $sid" \
	"conns/$c0/session and conns/l.0/session (s1 is $sid)"
ctl listen name=lp addr=$MY_IP:$((P + 9)) || fail "listen lp"
ctl connect name=plain addr=$PEER_IP:$((P + 9)) || fail "connect plain"
wait_for 5 test -e $C/lp.0/test_status || fail "no passive end lp.0"
expect_eq "$(cat $C/plain/session) $(cat $C/lp.0/session)" "none none" \
	"conns/plain/session and conns/lp.0/session"
ctl disconnect name=plain || fail "disconnect plain"
ctl unlisten name=lp || fail "unlisten lp"

# The passive end closes: the session reconnects on its own.
close_and_reconnect s1 l.0
c1=$(cat $SS/s1/conn)
[ "$c1" != "$c0" ] && [ -d "$C/$c1" ] || fail "s1's new connection: '$c1' (was '$c0')"
expect_eq "$(cat $SS/s1/last_error)" -104 "s1 last_error after the peer closed"
expect_eq "$(cat $SS/s1/generation)" 1 "s1 generation"
dmesg_new | grep -q "s1: reconnected ($c1, generation 1)" ||
	fail "no 'reconnected' line: $(dmesg_new | tail -n 5)"
wait_for 5 test ! -e "$C/$c0" || fail "the failed connection $c0 stayed"

# Nobody listens any more: attempts fail, and after 2 s the session is lost.
ctl unlisten name=l || fail "unlisten"
dmesg_mark
t0=$SECONDS
ctl disconnect name=l.1 || fail "disconnect l.1"
wait_for 15 says $SS/s1/state lost ||
	fail "s1 not lost: state $(cat $SS/s1/state), last_error $(cat $SS/s1/last_error)"
t=$((SECONDS - t0))
[ $t -ge 2 ] && [ $t -le 10 ] || fail "s1 lost after $t s, loss_tmo_ms=2000"
expect_eq "$(cat $SS/s1/last_error) $(cat $SS/s1/conn)" "-111 none" \
	"s1 last_error and conn once lost"
n=$(dmesg_new | grep -c "s1: reconnect failed (-111)")
[ "$n" -ge 2 ] || fail "$n failed attempts in 2 s at 200 ms: $(dmesg_new | tail -n 5)"
dmesg_new | grep -q "s1: lost (-111), no more reconnects" || fail "no 'lost' line"
ctl unsession name=s1 || fail "unsession s1"
[ ! -e $SS/s1 ] || fail "sessions/s1 stayed after unsession"
expect_ctl_err ENOENT unsession name=s1

# The name is free again; a session left to rmmod goes with the module.
ctl listen name=l addr=$MY_IP:$P || fail "listen again"
ctl session name=s1 addr=$PEER_IP:$P || fail "session s1 again"
wait_for 5 says $SS/s1/state connected || fail "s1 again"
dmesg_mark
krdma_unload || fail "rmmod with a session"
dmesg_new | grep -q "s1: session destroyed by module unload" ||
	fail "no unload line for s1: $(dmesg_new | tail -n 5)"
krdma_load

# The loss comes on time although an attempt blocks.  A second address,
# a session to a listener on it, then the address taken away and the
# passive end closed: each attempt now waits for an ARP answer that never
# comes, up to the connection's timeout_ms=5000.  With loss_tmo_ms=2000
# and reconnect_delay_ms=1500 the attempt that starts at 1.5 s gets only
# the 0.5 s left, and the session is lost at 2 s (the test allows 2.7),
# not when a whole attempt ends (6.5 s).
X=${MY_IP%.*}.99
ip addr add $X/32 dev eth0 || fail "ip addr add $X"
ctl listen name=lx addr=$X:$P || fail "listen on $X"
ctl session name=s3 addr=$X:$P timeout_ms=5000 reconnect_delay_ms=1500 loss_tmo_ms=2000 \
	hb_ms=500 hb_misses=3 || fail "session s3"
wait_for 5 says $SS/s3/state connected || fail "s3: $(cat $SS/s3/state)"
wait_for 5 test -e $C/lx.0/test_status || fail "no passive end lx.0"
# Before the address goes: with heartbeats of 500 ms the connection may
# fail before the disconnect below (on the debug kernel it did once).
dmesg_mark
ip addr del $X/32 dev eth0 || fail "ip addr del $X"
ctl disconnect name=lx.0 || fail "disconnect lx.0"
ctl unlisten name=lx || fail "unlisten lx"
# (How soon s3's connection fails depends on the device: on rxe at once,
# its passive end's disconnect flushing its receives; on siw only when its
# heartbeats go unanswered, here 3 of 500 ms (the defaults, 4 of 2000 ms,
# took 10 s).  The loss counts from that failure, and so does this.)
wait_for 30 says $SS/s3/state lost ||
	fail "s3 not lost: state $(cat $SS/s3/state), last_error $(cat $SS/s3/last_error)"
# dmesg's stamps: "[ 15.476627] krdma: s3: connection failed ..."
stamp_ms() { dmesg_new | grep -m1 "krdma: s3: $1" | sed 's/^\[ *\([0-9]*\)\.\([0-9]\{3\}\).*/\1\2/'; }
f=$(stamp_ms "connection failed") l=$(stamp_ms "lost")
[ -n "$f" ] && [ -n "$l" ] || fail "no failure or loss line for s3: $(dmesg_new | grep s3)"
ms=$((10#$l - 10#$f))
log "s3 lost $ms ms after its connection failed (loss_tmo_ms=2000, attempts blocking)"
[ $ms -ge 1950 ] && [ $ms -le 2700 ] ||
	fail "s3 lost $ms ms after the failure with loss_tmo_ms=2000: $(dmesg_new | grep s3 | tail -n 4)"
ctl unsession name=s3 || fail "unsession s3"

# rmmod while a session reconnects: its peer gone and nobody listening, it
# tries every 100 ms (each attempt refused at once over loopback); the
# unload stops the attempts and the timer, whichever is running, and
# destroys it.  Twice, at two points of the cycle.
# rmmod waits for krdma's kobjects to be released, which make stress's
# debug-kobj kernel (CONFIG_DEBUG_KOBJECT_RELEASE) defers, each by up to
# 4 s: 10 s there on 2026-11-29 (5 s is the bound everywhere else).
rmmod_max=5
[[ ${KRDMA_DEBUG_EXTRA:-} == *CONFIG_DEBUG_KOBJECT_RELEASE=y* ]] && rmmod_max=20
for d in 100 170; do
	ctl listen name=l addr=$MY_IP:$P || fail "listen ($d)"
	ctl session name=s2 addr=$PEER_IP:$P reconnect_delay_ms=$d loss_tmo_ms=60000 ||
		fail "session s2 ($d)"
	wait_for 5 says $SS/s2/state connected || fail "s2 ($d)"
	ctl unlisten name=l || fail "unlisten ($d)"
	dmesg_mark
	ctl disconnect name=l.0 || fail "disconnect l.0 ($d)"
	wait_for 10 eval '[ "$(dmesg_new | grep -c "s2: reconnect failed")" -ge 3 ]' ||
		fail "s2 ($d ms) is not retrying: state $(cat $SS/s2/state), $(dmesg_new | tail -n 3)"
	expect_eq "$(cat $SS/s2/state)" reconnecting "s2 state while nobody listens"
	t0=$SECONDS
	timeout 30 rmmod krdma || fail "rmmod while s2 reconnects every $d ms: $?"
	[ $((SECONDS - t0)) -le $rmmod_max ] || fail "rmmod took $((SECONDS - t0)) s while s2 reconnected"
	[ ! -e $KRDMA_SYS ] || fail "sysfs left after rmmod"
	dmesg_new | grep -q "s2: session destroyed by module unload" ||
		fail "no unload line for s2: $(dmesg_new | tail -n 5)"
	krdma_load
done

# A set of three connections (conns=3, opts.nr_conns): made together, each
# on completion vector i, named in index order under sessions/NAME/conn.
# One passive end closed: the other two are failed with it and the whole
# set comes back as one (one reconnect, three new connections, the old
# three gone; the apitest's session_set checks the requests' indices and
# traffic on every queue).
nvec=$(( $(sed 's/.*-//' /sys/devices/system/cpu/possible) + 1 ))
ctl listen name=ls addr=$MY_IP:$P || fail "listen ls"
expect_ctl_err EINVAL session name=bad addr=$PEER_IP:$P conns=65
ctl session name=set addr=$PEER_IP:$P conns=3 reconnect_delay_ms=200 ||
	fail "session set"
wait_for 5 says $SS/set/state connected || fail "set: $(cat $SS/set/state)"
expect_eq "$(cat $SS/set/nr_conns)" 3 "set nr_conns"
read -ra old <<<"$(cat $SS/set/conn)"
[ "${#old[@]}" = 3 ] || fail "set's connections: '$(cat $SS/set/conn)'"
for i in 0 1 2; do
	expect_eq "$(cat "$C/${old[$i]}/state")" connected "${old[$i]} state"
	expect_eq "$(cat "$C/${old[$i]}/comp_vector")" $((i % nvec)) \
		"set connection $i (${old[$i]}) comp_vector"
done
wait_for 5 test -e $C/ls.2/test_status || fail "no passive end ls.2"
close_and_reconnect set ls.1
read -ra new <<<"$(cat $SS/set/conn)"
[ "${#new[@]}" = 3 ] || fail "set's new connections: '$(cat $SS/set/conn)'"
for i in 0 1 2; do
	for o in "${old[@]}"; do
		[ "${new[$i]}" != "$o" ] || fail "set connection $i is still $o"
	done
	expect_eq "$(cat "$C/${new[$i]}/state")" connected "${new[$i]} state"
	wait_for 5 test ! -e "$C/${old[$i]}" ||
		fail "the old set's ${old[$i]} stayed"
done
expect_eq "$(cat $SS/set/reconnects) $(cat $SS/set/generation)" "1 1" \
	"set reconnects and generation"
dmesg_new | grep -q "set: 2 more connections of its set failed with it" ||
	fail "no line for the set's other connections: $(dmesg_new | grep 'set:' | tail -n 4)"
dmesg_new | grep -q "set: reconnected (3 connections, ${new[0]} first, generation 1)" ||
	fail "no 'reconnected' line for the set: $(dmesg_new | grep 'set:' | tail -n 4)"
ctl unsession name=set || fail "unsession set"
for c in "${new[@]}"; do
	wait_for 5 test ! -e "$C/$c" || fail "$c stayed after unsession"
done
ctl unlisten name=ls || fail "unlisten ls"
log "a set of 3 on $nvec vectors: one passive end closed, all 3 made again"

# sessions/NAME/conn read while the session is destroyed: a reader that
# never stops (bash's read, no fork) against unsession of a set of three,
# a few rounds.  The file names the connections under the session's lock;
# destroy took them out of it only after closing (and freeing) them, which
# KASAN on the debug kernel reports as a use after free when a read falls
# in between (review, 2026-11-30; the window is narrow: not reproduced).
ctl listen name=lr addr=$MY_IP:$P || fail "listen lr"
rounds=5
[ "${KRDMA_STRESS:-0}" = 1 ] && rounds=20
stop=/tmp/sessions-read-stop
for r in $(seq 1 $rounds); do
	ctl session name=sr addr=$PEER_IP:$P conns=3 reconnect_delay_ms=200 ||
		fail "session sr (round $r)"
	wait_for 5 says $SS/sr/state connected || fail "sr: $(cat $SS/sr/state)"
	rm -f $stop
	( n=0; while [ ! -e $stop ]; do
		read -r _ <$SS/sr/conn 2>/dev/null || break
		n=$((n + 1))
	done; echo "$n" >$stop.n ) &
	rd=$!
	nap 0.3		# the reader is reading
	ctl unsession name=sr || fail "unsession sr (round $r)"
	: >$stop
	wait $rd
	[ ! -e $SS/sr ] || fail "sessions/sr stayed after unsession (round $r)"
	read -r n <$stop.n
	[ "${n:-0}" -ge 1 ] || fail "the reader read sessions/sr/conn $n times (round $r)"
done
rm -f $stop $stop.n
ctl unlisten name=lr || fail "unlisten lr"
log "sessions/sr/conn read during $rounds destroys"
