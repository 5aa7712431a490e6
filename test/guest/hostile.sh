#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# A hostile peer (test/hostile, krdma_hostile.ko): a module that speaks
# rdma_cm and the verbs but breaks krdma's protocol, pointed at krdma in
# one guest.  Each breach must fail that one connection only, with its
# errno and one dmesg line naming it, and leave no connection, QP or cm_id
# behind; a good krdma connection made before (g0, over loopback of the
# same device) passes a self-test after each part, and a good peer still
# connects at the end.
#  1. krdma active, the hostile passive: an accept reply of garbage, too
#     short (on RoCE the CM pads it with zeros: it reads as a message size
#     of 0), a good hello in the largest reply (accepted), the next
#     version, depth 0, a depth larger than offered, a message size of
#     4 GiB - 1 or of 8 bytes, heartbeats not asked for, consumer data
#     longer than the hello may carry; on rxe, a message longer than the
#     accept's size, or more messages than its depth, sent before krdma
#     read the accept (fault_established_delay_ms holds the active side's
#     ESTABLISHED event for 2 s, the module sends 400 ms after its
#     accept; on iWARP the passive side may not speak first), and a
#     credit message then (it could not be reposted, and the peer's next
#     one failed the connection for a missing ack; no krdma peer sends
#     one before it is established).  The connect fails with its errno,
#     krdma prints one line naming the problem, no conns/NAME stays.
#     Then krdma rejects carrying errnos: the listener consumer's EACCES
#     and a session refusal's ESTALE come through, but 512 (ERESTARTSYS,
#     never for userspace), ENOLINK (KRDMA_ERR_RETRY), ESTALE as a
#     consumer's refusal and EACCES as a session refusal (no krdma
#     listener sends those), and a reject carrying no errno, are
#     ECONNREFUSED.
#  2. krdma passive (a listener of the control file), the hostile active:
#     after a good handshake a header of an unknown type, one whose
#     length disagrees with what came, random bytes, a heartbeat with a
#     payload, a message longer than the negotiated maximum, credits
#     returned that krdma never spent, an ack of a credit message never
#     sent, more messages than the credits krdma granted.  The connection
#     fails: one line naming the breach, "peer gone (ERRNO)".  On rxe, a
#     peer that takes 1 READ in flight and asks for 4 gets an accept of
#     at most 1 towards it and 4 from it.
#  3. One-sided: RDMA WRITE and READ with guessed rkeys, past the end and
#     before the start of a real token, through a read-only token, and
#     with another connection's token: each fails on the device, and the
#     other connection's region still holds its pattern byte for byte
#     (the self-test service's ST_VERIFY; the module's header).
#  4. (siw) Silent peers: backlog + 1 connections to a listener of
#     backlog 4, and 2 to a polled listener (apitest's server with
#     server_poll=1: the control file's listeners are not polled), all
#     at once, each with a good hello, heartbeats off, then nothing.
#     Over iWARP krdma's passive side waits for the first message before
#     it hands a connection over; it must close each one 30 s
#     (KRDMA_HANDOVER_TIMEOUT_MS) after its set-up (the module says
#     when the first ended: not before 30 s), with one line each (but
#     that the kernel may drop one printed on two CPUs at once: below),
#     the fifth to the first listener being refused (backlog full), and
#     a good connection must then be taken.  Over rxe a connection is
#     handed over at once (its owner decides), so the part is siw's only.
#  5. krdma active, the hostile passive with reply=deaf: every credit
#     granted, heartbeats at krdma's interval (1000 ms, 3 misses), no
#     receive posted, ever.  Over rxe krdma's first message meets an
#     RNR NAK (rxe0's send_rnr_err counts it), which RC retries for
#     ever; the module's pings every 500 ms keep krdma's heartbeats
#     content (hb_received > 0, no "lost" line), and krdma answers
#     them.  But the module's RNR NAK asks for a wait (rdma_cm's
#     min_rnr_timer 0: 655 ms) longer than krdma's QP's ACK timeout,
#     and rxe leaves its retransmit timer running through the wait:
#     it fires in each one (rxe's dynamic debug: "retransmit timer
#     fired", "ERROR RETRY", then "nak timer fired") and spends one of
#     the 7 retries; the messages behind the first (those pongs, the
#     self-test's sends) meet PSN sequence NAKs besides.  So the connection
#     fails with -ETIMEDOUT (conns/h5/error -110), one line "h5: ...
#     failed: transport retry counter exceeded (12)", 2 to 16 s after
#     the connect (about 5 s; TCG), and the self-test's sends fail with
#     it ("failed: -110").  Over siw there is no RNR: the module's siw
#     meets krdma's first message (the ping an iWARP active side sends
#     at once) with no receive posted, terminates the connection (DDP
#     "no buffer", siw_proc_send()) and closes its socket; krdma's siw
#     takes the TERMINATE and the close as a disconnect, with no QP
#     event, so the connection fails with -ECONNRESET (-104) within
#     10 s, and the send fails with it (refused, or "failed: -104").
#     Nothing stays.
#  6. The same deaf peer with a short RNR wait (the module's
#     rnr_timer=8: 0.64 ms, within rxe's ACK timeout), heartbeats off
#     (hb_ms=off: the module pings nothing either), and one message in
#     flight: a send bench of count=1 depth=1.  Now rxe retries the RNR
#     NAKs for ever, as a device that stops its ACK timer for them does
#     (hundreds a second, send_rnr_err counts them), and no retry runs
#     out; nothing in krdma's core bounds that send, and the bench's
#     own bound on a completion ends it: -ETIMEDOUT (conns/h6/error
#     -110) 30 s after the post (the test allows 30 to 45 s), one line
#     "h6: bench: no completion in 30 s, failing the connection", no
#     retry-exceeded line, the bench "failed: -110".  rxe only (siw
#     terminates at the first message, part 5), and in make stress
#     only (the 30 s).
# KRDMA_HOSTILE_PARTS: only those parts.  Default: all five, but only
# parts 4 and 5 over siw in make check (KRDMA_STRESS unset), which runs
# the rest over rxe only.
# Timings (one boot, one device), as measured before the late messages,
# the rejects and part 4 came, and estimated since (not run yet): 6.12
# rxe 43 s then, about 55 s now; 6.12 siw 35 s then, about 75 s now
# with part 4's 30 s wait; debug rxe 101 s then, about 115 s now.  make
# check runs it on 6.12, over rxe (parts 1 to 3) and over siw (part 4
# alone, about 40 s); make stress every part on every line and device.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe siw
. "$(dirname "$0")/../lib.sh"

hko=$BUILD/hostile/krdma_hostile.ko
[ -f "$hko" ] || fail "$hko not built"
PH=7620		# the hostile module's listener (part 1)
PL=7621		# krdma's listener for the hostile module (parts 2 and 3)
PG=7622		# krdma's listener for the good connection
PM=7623		# krdma's listener for the silent peers (part 4)
PP=7624		# apitest's polled listener for the silent peers (part 4)
HP=/sys/module/krdma_hostile/parameters
C=$KRDMA_SYS/conns
if [ -n "${KRDMA_HOSTILE_PARTS:-}" ]; then
	parts=" $KRDMA_HOSTILE_PARTS "
elif [ "$DEV" = siw ]; then
	parts=" 4 5 "	# make check; make stress adds 1-3; 6 is rxe's
	[ "${KRDMA_STRESS:-0}" = 1 ] && parts=" 1 2 3 4 5 "
else
	parts=" 1 2 3 4 5 "	# make check; 6 waits out 30 s
	[ "${KRDMA_STRESS:-0}" = 1 ] && parts=" 1 2 3 4 5 6 "
fi

rdma_dev_up
krdma_load

res_count() { rdma resource show "$1" 2>/dev/null | grep -c "$IBDEV"; }
qp0=$(res_count qp) cm0=$(res_count cm_id)

ctl listen name=good addr=$MY_IP:$PG || fail "listen good"
ctl connect name=g0 addr=$MY_IP:$PG || fail "connect g0"
qp1=$(res_count qp) cm1=$(res_count cm_id)

# good_ok WHEN: the good connection still works.
good_ok() {
	ctl test name=g0 op=send,write,read size=4096 count=16 ||
		fail "$1: test on g0 refused"
	wait_for 60 not_running $C/g0/test_status ||
		fail "$1: the test on g0 did not end"
	expect_eq "$(cat $C/g0/test_status)" passed "$1: g0's test"
}

# krdma_lines: krdma's lines since the mark, shown in the log.
krdma_lines() { dmesg_new | grep -E 'krdma: ' | sed 's/^/# /'; }

# ---- 1. krdma active, the hostile passive ---------------------------------
part1() {
	log "1. krdma connects to a hostile listener"
	insmod "$hko" mode=passive addr="$MY_IP" port=$PH || fail "insmod passive"
	# reply KIND ERRNO 'REASON' [WORDS]: the connect (with WORDS) fails
	# with ERRNO, and krdma says
	# "h1: peer ADDR accepted with a bad handshake: REASON", once.
	reply() {
		local kind=$1 want=$2 why=$3 got n
		ratelimit_pace
		dmesg_mark
		echo "$kind" >$HP/reply || fail "reply=$kind"
		# shellcheck disable=SC2086	# $4: words
		got=$(ctl_err connect name=h1 addr=$MY_IP:$PH hb_ms=off depth=8 msg=2048 ${4:-})
		krdma_lines
		[ "$got" = "$want" ] || { dmesg_new; fail "reply $kind: connect got $got, expected $want"; }
		if [ "$want" = OK ]; then
			ctl disconnect name=h1 || fail "reply $kind: disconnect"
			return
		fi
		[ -e $C/h1 ] && fail "reply $kind: conns/h1 is left"
		n=$(dmesg_new | grep -c 'krdma: h1: ')
		expect_eq "$n" 1 "reply $kind: krdma's lines"
		dmesg_new | grep -qF "krdma: h1: peer $MY_IP:$PH accepted with a bad handshake: $why" ||
			{ dmesg_new; fail "reply $kind: krdma's line does not say '$why'"; }
}
short_err=EINVAL short_why="queue depth or message size out of range"
if [ "$DEV" = siw ]; then	# iWARP carries the 8 bytes as they are
	short_err=EPROTO short_why="handshake too short"
fi
reply good OK ''
reply garbage EPROTO "not a krdma peer (bad magic)"
reply short $short_err "$short_why"
reply long OK ''
reply version EPROTONOSUPPORT "unsupported protocol version"
reply depth0 EINVAL "queue depth or message size out of range"
reply deeper EINVAL "queue depth or message size out of range"
reply hugemsg EINVAL "queue depth or message size out of range"
reply tinymsg EINVAL "queue depth or message size out of range"
reply hb EINVAL "queue depth or message size out of range"
reply pdata EINVAL "queue depth or message size out of range"
if [ "$DEV" = rxe ]; then
	# The module's child sends 400 ms after its accept, from a timer of
	# its own (its ESTABLISHED event may wait behind krdma's sleep in
	# ib_cm's work); krdma's ESTABLISHED event sleeps 2 s before it reads
	# the accept, so the messages come first, checked against krdma's
	# offer (depth 8, 2048 bytes).
	echo 2000 >/sys/module/krdma/parameters/fault_established_delay_ms ||
		fail "fault_established_delay_ms"
	reply bigmsg EPROTO "a message longer than agreed came before it" timeout_ms=20000
	reply overdepth EPROTO "more messages than the agreed depth came before it" timeout_ms=20000
	# A credit message then fails it where it lands: that line, and the
	# connect's "failed before it was established".
	ratelimit_pace
	dmesg_mark
	echo credit0 >$HP/reply || fail "reply=credit0"
	got=$(ctl_err connect name=h1 addr=$MY_IP:$PH hb_ms=off depth=8 msg=2048 timeout_ms=20000)
	krdma_lines
	[ "$got" = EPROTO ] || { dmesg_new; fail "reply credit0: connect got $got, expected EPROTO"; }
	[ -e $C/h1 ] && fail "reply credit0: conns/h1 is left"
	n=$(dmesg_new | grep -c 'krdma: h1: flow control violated by the peer: a credit message before the connection was established$')
	expect_eq "$n" 1 "reply credit0: krdma's lines on the credit message"
	echo 0 >/sys/module/krdma/parameters/fault_established_delay_ms
fi
	# rej KIND ERRNO SENT: a reject carrying errno SENT fails the connect
	# with ERRNO (on siw the reject may come as a reset: ECONNREFUSED),
	# and no conns/h1 stays; on rxe krdma says so in one line.
	rej() {
		local kind=$1 want=$2 sent=$3 got n line
		ratelimit_pace
		dmesg_mark
		echo "$kind" >$HP/reply || fail "reply=$kind"
		got=$(ctl_err connect name=h1 addr=$MY_IP:$PH hb_ms=off depth=8 msg=2048)
		krdma_lines
		if [ "$got" != "$want" ] && ! [ "$DEV:$got" = siw:ECONNREFUSED ]; then
			dmesg_new
			fail "reply $kind: connect got $got, expected $want"
		fi
		[ -e $C/h1 ] && fail "reply $kind: conns/h1 is left"
		# Over siw, what comes (a reject, a reset) is siw's to say.
		[ "$DEV" = rxe ] || return 0
		n=$(dmesg_new | grep -c 'krdma: h1: ')
		expect_eq "$n" 1 "reply $kind: krdma's lines"
		line="krdma: h1: $MY_IP:$PH rejected the connection: "
		if [ "${kind#s}" = "$kind" ]; then
			line+="refused by the listener's consumer"
		else
			line+="the session's connection is up at the listener"
		fi
		if [ "$sent" = 0 ]; then
			line+=" (it carried no errno: -111)"
		elif [ "$want" = ECONNREFUSED ]; then
			line+=" (-$sent, which no krdma listener sends: -111)"
		else
			line+=" (-$sent)"
		fi
		dmesg_new | grep -qF "$line" ||
			{ dmesg_new; fail "reply $kind: no line '$line'"; }
}
rej rej13 EACCES 13
rej srej116 ESTALE 116
rej rej512 ECONNREFUSED 512
rej rej67 ECONNREFUSED 67
rej rej116 ECONNREFUSED 116
rej srej13 ECONNREFUSED 13
rej rej0 ECONNREFUSED 0
rmmod krdma_hostile || fail "rmmod krdma_hostile (passive)"
good_ok "after part 1"
}

ctl listen name=hl addr=$MY_IP:$PL || fail "listen hl"

# ---- 2. krdma passive, the hostile active ---------------------------------
part2() {
	log "2. a hostile peer connects to krdma and breaks the protocol"
	# brk MODE ERRNO 'LINE': the connection the module makes ends with ERRNO
	# (an extended regex), and krdma's one line about it says LINE.
	brk() {
		local m=$1 want=$2 why=$3 n
		ratelimit_pace
		dmesg_mark
		insmod "$hko" mode="$m" addr="$MY_IP" port=$PL depth=4 msg=1024 ||
			{ krdma_lines; dmesg_new | grep krdma_hostile; fail "$m: krdma did not end the connection"; }
		rmmod krdma_hostile || fail "rmmod krdma_hostile ($m)"
		# Closed once taken, or torn down when the breach came before
		# krdma's ESTABLISHED event (the module sends at once).
		within 10 eval 'dmesg_new | grep -qE "krdma: hl\.[0-9]*: (peer gone|failed before it was established)"' ||
			{ dmesg_new; fail "$m: the connection was not closed"; }
		krdma_lines
		dmesg_new | grep -qE "krdma: hl\.[0-9]*: (peer gone \(($want)\), connection closed|failed before it was established: ($want))\$" ||
			{ dmesg_new; fail "$m: not closed with $want"; }
		# The breach's line may come after the close's (siw's toolong).
		within 5 eval 'dmesg_new | grep -q "krdma: hl\.[0-9]*: $why"' ||
			{ dmesg_new; fail "$m: no line '$why'"; }
		n=$(dmesg_new | grep -c "krdma: hl\.[0-9]*: $why")
		expect_eq "$n" 1 "$m: lines '$why'"
		[ -z "$(ls $C | grep '^hl\.')" ] || fail "$m: $(ls $C | grep '^hl\.') left"
}
brk badtype -71 "malformed message from the peer (24 bytes)"
brk badlen -71 "malformed message from the peer (24 bytes)"
brk random -71 "malformed message from the peer (72 bytes)"
brk hbpayload -71 "malformed message from the peer (12 bytes)"
brk credits -71 "flow control violated by the peer: 5 credits returned with 4 of 4 in hand"
brk ctlack -71 "flow control violated by the peer: 0 credits and a credit ack returned with 4 of 4 in hand"
# Longer than krdma's receive: the device fails the receive.  siw also
# reports a fatal QP event and closes the connection, and krdma may
# handle the CM's disconnect (-104) before the failed receive (-22).
if [ "$DEV" = siw ]; then
	brk toolong "-22|-104" "receive failed: local length error"
else
	brk toolong -5 "receive failed: local QP operation error"
fi
brk overcredit -71 "flow control violated by the peer: a message sent without a credit"
# A peer that takes 1 READ in flight and asks for 4: krdma must accept at
# most 1 towards it and room for its 4 (the module checks the accept; on
# iWARP siw's own negotiation mends a mismatched pair, nothing to see).
if [ "$DEV" = rxe ]; then
	dmesg_mark
	insmod "$hko" mode=rdatom addr="$MY_IP" port=$PL depth=4 msg=1024 ||
		{ dmesg_new | grep krdma_hostile; fail "rdatom: krdma accepted the wrong READ depths"; }
	dmesg_new | grep krdma_hostile
	rmmod krdma_hostile || fail "rmmod krdma_hostile (rdatom)"
	within 10 eval '[ -z "$(ls $C | grep "^hl\.")" ]' || fail "rdatom: $(ls $C | grep '^hl\.') left"
fi
good_ok "after part 2"
}

# ---- 3. one-sided attacks --------------------------------------------------
part3() {
	log "3. RDMA WRITE and READ with keys and ranges that must fail"
	ratelimit_pace
	dmesg_mark
	# 0.6 s between attacks: krdma's lines are rate-limited (test/lib.sh).
	insmod "$hko" mode=onesided addr="$MY_IP" port=$PL depth=4 msg=1024 pace_ms=600 ||
		{ dmesg_new; fail "onesided: an attack was not refused"; }
	rmmod krdma_hostile || fail "rmmod krdma_hostile (onesided)"
	dmesg_new | grep krdma_hostile | sed 's/^/# /'
	within 20 eval '[ -z "$(ls $C | grep "^hl\.")" ]' ||
		fail "onesided: $(ls $C | grep '^hl\.') left"
	n=$(dmesg_new | grep -c 'krdma_hostile: onesided: .*: refused (')
	expect_eq "$n" 12 "onesided: attacks refused"
	# Each attacked connection fails on krdma's side too, and is closed: its
	# QP leaves RTS with the attacker's.  rxe tells no cause ("work requests
	# flushed", -104); siw reports a QP event (access error for a WRITE,
	# request error for a READ) and closes the connection, and whichever
	# krdma handles first gives the errno (-13 or -104).  Then the good one.
	within 10 eval '[ "$(dmesg_new | grep -c "krdma: hl\.[0-9]*: peer gone (")" = 13 ]' ||
		{ dmesg_new; fail "onesided: $(dmesg_new | grep -c 'krdma: hl\.[0-9]*: peer gone (') connections closed, expected 13"; }
	krdma_lines
	n=$(dmesg_new | grep -cE 'krdma: hl\.[0-9]*: peer gone \((-104|-13)\)')
	expect_eq "$n" 13 "onesided: connections closed with -104 or -13"
	good_ok "after part 3"
}

# ---- 4. silent peers (siw) ------------------------------------------------
part4() {
	local n first names l pat want ako=$BUILD/apitest/krdma_apitest.ko
	if [ "$DEV" != siw ]; then
		log "4. silent peers: over iWARP only (rxe hands a connection over at once)"
		return
	fi
	log "4. silent peers hold no listener's backlog for ever"
	[ -f "$ako" ] || fail "$ako not built"
	ctl listen name=ml addr=$MY_IP:$PM backlog=4 || fail "listen ml"
	# A polled listener: its handover work polls, backing off to 50 ms.
	insmod "$ako" role=server addr="$MY_IP" port=$PP dev="$DEV" server_poll=1 ||
		fail "insmod krdma_apitest (polled server)"
	ratelimit_pace
	dmesg_mark
	# The module connects 5 times to ml and twice to the polled listener,
	# all at once, and waits up to 40 s (the 30 s of
	# KRDMA_HANDOVER_TIMEOUT_MS and 10) for krdma to end each one it took.
	insmod "$hko" mode=mute count=5 addr="$MY_IP" port=$PM count2=2 port2=$PP ||
		{ dmesg_new; fail "mute: krdma did not close the silent connections"; }
	rmmod krdma_hostile || fail "rmmod krdma_hostile (mute)"
	dmesg_new | grep krdma_hostile | sed 's/^/# /'
	krdma_lines
	dmesg_new | grep -qF "krdma_hostile: mute: $MY_IP:$PM: 4 of 5 connected" ||
		{ dmesg_new; fail "mute: not 4 of 5 connected to ml"; }
	dmesg_new | grep -qF "krdma_hostile: mute: $MY_IP:$PP: 2 of 2 connected" ||
		{ dmesg_new; fail "mute: not 2 of 2 connected to the polled listener"; }
	dmesg_new | grep -q 'krdma_hostile: mute: krdma ended all 6 ' ||
		{ dmesg_new; fail "mute: krdma did not end all 6"; }
	# None ended before its deadline: 30 s after its set-up, which came
	# after the module's first connect began.
	first=$(dmesg_new | sed -n 's/.*krdma_hostile: mute: krdma ended all 6 .*, the first after \([0-9]*\) ms$/\1/p' | tail -n 1)
	[ -n "$first" ] || fail "mute: the module did not say when the first ended"
	[ "$first" -ge 30000 ] || fail "mute: a silent connection ended after $first ms, before its 30 s"
	# One line each, but that the kernel may drop one: two CPUs printing
	# the same rate-limited line at once lose one of them, silently
	# (___ratelimit() gives up when it cannot take the state's lock).
	# Seen once, the polled listener's two, whose deadlines fell on the
	# same tick.  So: each line names the silence, none comes twice, and
	# at least one comes per listener; the module's count and times
	# above show that every connection ended at its deadline.
	for l in "ml 4" "listen[0-9]* 2"; do
		read -r pat want <<<"$l"
		names=$(dmesg_new | sed -n "s/.*krdma: \($pat\.[0-9]*\): no word from $MY_IP:[0-9]* in 30000 ms since it connected, connection closed\$/\1/p")
		n=$(grep -c . <<<"$names")
		[ "$n" -ge 1 ] && [ "$n" -le "$want" ] ||
			fail "mute: $n lines of $pat's connections closed for silence, expected 1 to $want"
		[ -z "$(sort <<<"$names" | uniq -d)" ] ||
			fail "mute: a connection of $pat closed twice: $names"
		[ "$n" = "$want" ] || log "mute: $n of $pat's $want lines came (the kernel dropped the rest)"
	done
	within 10 eval '[ -z "$(ls $C | grep -E "^(ml|listen[0-9]+)\.")" ]' ||
		fail "mute: $(ls $C | grep -E '^(ml|listen[0-9]+)\.') left"
	rmmod krdma_apitest || fail "rmmod krdma_apitest (polled server)"
	# The backlog is free again: a good client is taken (EBUSY before).
	ctl connect name=m1 addr=$MY_IP:$PM || fail "connect m1 after the silent peers"
	ctl test name=m1 op=send size=4096 count=4 || fail "test on m1 refused"
	wait_for 60 not_running $C/m1/test_status || fail "the test on m1 did not end"
	expect_eq "$(cat $C/m1/test_status)" passed "m1's test"
	ctl disconnect name=m1 || fail "disconnect m1"
	ctl unlisten name=ml || fail "unlisten ml"
}

# ---- 5. a peer that takes no messages ------------------------------------
part5() {
	local t0 t e=0 st hb=0 want rnr0=0 rnr=0
	local rnrf=/sys/class/infiniband/$IBDEV/ports/1/hw_counters/send_rnr_err
	now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
	h5_failed() { read -r e <$C/h5/error && [ "$e" != 0 ]; }
	log "5. a peer that grants credits and takes no messages"
	insmod "$hko" mode=passive addr="$MY_IP" port=$PH || fail "insmod passive (deaf)"
	echo deaf >$HP/reply || fail "reply=deaf"
	[ "$DEV" = siw ] || read -r rnr0 <$rnrf || fail "no $rnrf"
	ratelimit_pace
	dmesg_mark
	t0=$(now_ms)
	ctl_err_v connect name=h5 addr=$MY_IP:$PH hb_ms=1000 hb_misses=3 depth=4 msg=1024
	[ "$CTL_ERR" = OK ] || { krdma_lines; fail "deaf: connect got $CTL_ERR"; }
	# The self-test's sends, each waited for far longer than the bound.
	ctl_err_v test name=h5 op=send size=512 count=8 timeout_ms=60000
	want=-110
	[ "$DEV" = siw ] && want=-104
	within 20 h5_failed || { krdma_lines; fail "deaf: h5 still up after 20 s: $(cat $C/h5/state)"; }
	t=$(($(now_ms) - t0))
	log "deaf: h5 failed with $e after $t ms"
	krdma_lines
	expect_eq "$e" "$want" "deaf: h5's error"
	dmesg_fetch
	new_count "krdma: h5: peer $MY_IP:$PH lost:"
	expect_eq "$NEW_N" 0 "deaf: heartbeat lines"
	if [ "$DEV" = siw ]; then
		[ "$t" -le 10000 ] || fail "deaf (siw): h5 failed after $t ms, expected within 10 s"
		# Refused once h5 failed, else its sends fail with it.
		if [ "$CTL_ERR" = OK ]; then
			wait_for 60 not_running $C/h5/test_status || fail "deaf: the test on h5 did not end"
			expect_eq "$(cat $C/h5/test_status)" "failed: $want" "deaf (siw): h5's test"
		else
			expect_eq "$CTL_ERR" ECONNRESET "deaf (siw): test on h5"
		fi
	else
		[ "$CTL_ERR" = OK ] || fail "deaf: test on h5 refused: $CTL_ERR"
		read -r rnr <$rnrf || fail "no $rnrf"
		[ "$rnr" -gt "$rnr0" ] ||
			fail "deaf: the module's QP sent no RNR NAK (send_rnr_err $rnr0 -> $rnr): it is not deaf the way the test means"
		log "deaf: the module's QP sent $((rnr - rnr0)) RNR NAKs"
		new_count "failed: transport retry counter exceeded (12)"
		expect_eq "$NEW_N" 1 "deaf: retry-exceeded lines"
		new_count "krdma: h5: "
		[ "$NEW_N" -le 4 ] || fail "deaf: $NEW_N lines of h5's, expected the connect, the failure and the test's"
		read -r hb <$C/h5/hb_received
		[ "${hb:-0}" -gt 0 ] || fail "deaf: no ping of the module's reached h5"
		[ "$t" -ge 2000 ] || fail "deaf: h5 failed after $t ms, before three RNR rounds of 655 ms"
		[ "$t" -le 16000 ] || fail "deaf: h5 failed after $t ms, expected about 5 s (16 under TCG)"
		wait_for 60 not_running $C/h5/test_status || fail "deaf: the test on h5 did not end"
		st=$(cat $C/h5/test_status)
		expect_eq "$st" "failed: $want" "deaf: h5's test"
	fi
	ctl disconnect name=h5 || fail "deaf: disconnect h5"
	within 5 eval '[ ! -e $C/h5 ]' || fail "deaf: conns/h5 is left"
	rmmod krdma_hostile || fail "rmmod krdma_hostile (deaf)"
	dmesg_new | grep 'krdma_hostile: passive: deaf' | sed 's/^/# /'
	good_ok "after part 5"
}

# ---- 6. one message in RNR retry for ever, heartbeats off --------------------
part6() {
	local t0 t e=0 rnr0=0 rnr=0
	local rnrf=/sys/class/infiniband/$IBDEV/ports/1/hw_counters/send_rnr_err
	now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
	h6_failed() { read -r e <$C/h6/error && [ "$e" != 0 ]; }
	log "6. one message in RNR retry for ever, heartbeats off"
	[ "$DEV" = rxe ] || fail "part 6 is rxe's (siw terminates at once: part 5)"
	# An RNR wait of 0.64 ms (rdma_cm's 655 ms outlasts rxe's ACK timeout).
	insmod "$hko" mode=passive addr="$MY_IP" port=$PH rnr_timer=8 ||
		fail "insmod passive (deaf, part 6)"
	echo deaf >$HP/reply || fail "reply=deaf"
	read -r rnr0 <$rnrf || fail "no $rnrf"
	ratelimit_pace
	dmesg_mark
	ctl_err_v connect name=h6 addr=$MY_IP:$PH hb_ms=off depth=4 msg=1024
	[ "$CTL_ERR" = OK ] || { krdma_lines; fail "RNR for ever: connect got $CTL_ERR"; }
	t0=$(now_ms)
	ctl_err_v bench name=h6 op=send size=64 count=1 depth=1
	[ "$CTL_ERR" = OK ] || { krdma_lines; fail "RNR for ever: bench on h6 refused: $CTL_ERR"; }
	within 50 h6_failed || {
		krdma_lines
		fail "RNR for ever: h6 still up 50 s after its send: $(cat $C/h6/state), bench $(cat $C/h6/bench_status)"
	}
	t=$(($(now_ms) - t0))
	read -r rnr <$rnrf || fail "no $rnrf"
	log "RNR for ever: h6 failed with $e $t ms after its send, $((rnr - rnr0)) RNR NAKs"
	krdma_lines
	expect_eq "$e" -110 "RNR for ever: h6's error"
	dmesg_fetch
	new_has "krdma_hostile: passive: deaf: min_rnr_timer 8: 0" ||
		fail "RNR for ever: the module did not set its RNR timer"
	new_count "krdma: h6: bench: no completion in 30 s, failing the connection"
	expect_eq "$NEW_N" 1 "RNR for ever: the bench's lines"
	new_count "failed: transport retry counter exceeded"
	expect_eq "$NEW_N" 0 "RNR for ever: retry-exceeded lines"
	# At 0.64 ms a wait, far more than the 7 rounds of part 5.
	[ "$((rnr - rnr0))" -ge 100 ] ||
		fail "RNR for ever: $((rnr - rnr0)) RNR NAKs (send_rnr_err), expected hundreds"
	[ "$t" -ge 29000 ] || fail "RNR for ever: h6 failed $t ms after its send, before the bench's 30 s"
	[ "$t" -le 45000 ] || fail "RNR for ever: h6 failed $t ms after its send, expected at 30 s (45 under TCG)"
	wait_for 30 not_running $C/h6/bench_status || fail "RNR for ever: the bench on h6 did not end"
	expect_eq "$(cat $C/h6/bench_status)" "failed: -110" "RNR for ever: h6's bench"
	ctl disconnect name=h6 || fail "RNR for ever: disconnect h6"
	within 5 eval '[ ! -e $C/h6 ]' || fail "RNR for ever: conns/h6 is left"
	rmmod krdma_hostile || fail "rmmod krdma_hostile (part 6)"
	good_ok "after part 6"
}

for p in 1 2 3 4 5 6; do
	[[ $parts == *" $p "* ]] && "part$p"
done

# ---- a good peer after them, and nothing left ------------------------------
log "a new connection to krdma works"
ctl connect name=g1 addr=$MY_IP:$PG || fail "connect g1 after the hostile peer"
ctl test name=g1 op=send,write,read size=4096 count=16 || fail "test on g1 refused"
wait_for 60 not_running $C/g1/test_status || fail "the test on g1 did not end"
expect_eq "$(cat $C/g1/test_status)" passed "g1's test"
ctl disconnect name=g1 || fail "disconnect g1"
ctl unlisten name=hl || fail "unlisten hl"
within 10 eval '[ "$(res_count qp)" = "$qp1" ]' ||
	fail "QPs: $(res_count qp), expected $qp1: $(rdma resource show qp)"
within 10 eval '[ "$(res_count cm_id)" = "$cm1" ]' ||
	fail "cm_ids: $(res_count cm_id), expected $cm1: $(rdma resource show cm_id)"
ctl disconnect name=g0 || fail "disconnect g0"
ctl unlisten name=good || fail "unlisten good"
within 10 eval '[ "$(res_count qp)" = "$qp0" ]' || fail "QPs left: $(rdma resource show qp)"
within 10 eval '[ "$(res_count cm_id)" = "$cm0" ]' || fail "cm_ids left: $(rdma resource show cm_id)"
krdma_unload
log "done"
