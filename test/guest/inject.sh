#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Work completion fault injection (conns/NAME/inject, krdma_inject.c): for
# each status of the work completion table, a connection made to fail one
# completion of one kind with it must end exactly as if the device had
# reported it: its error is krdma_wc_errno()'s errno for the status, its
# wc_status names it, dmesg says it was injected and (but for a flush)
# has the handler's "KIND failed: NAME (N)" line, its peer is told within
# 5 s, and nothing else breaks.  The kinds: a message send, a receive (on
# the passive side), an RDMA WRITE, an atomic (rxe; siw: an RDMA READ), a
# memory registration (the passive self-test service's, for a WRITE test)
# and a heartbeat send.  Also the file's grammar: bad words refused with
# EINVAL and one line naming them, EBUSY once it fired; and drop_hb, which
# loses the heartbeats a connection receives: it fails with -ETIMEDOUT.
# make check runs 7 of the 21 statuses (a different 7 each day, every kind
# among them); KRDMA_STRESS=1 all of them.
# topo: single
# dev: rxe siw
# kernel: 6.1 6.12 debug
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

S=$KRDMA_SYS/conns

# STATUS NUMBER ERRNO "ib_wc_status_msg()"
table="loc_len_err 1 -22 local length error
loc_qp_op_err 2 -5 local QP operation error
loc_eec_op_err 3 -5 local EE context operation error
loc_prot_err 4 -14 local protection error
wr_flush_err 5 -104 WR flushed
mw_bind_err 6 -14 memory bind operation error
bad_resp_err 7 -5 bad response error
loc_access_err 8 -13 local access error
rem_inv_req_err 9 -22 remote invalid request error
rem_access_err 10 -13 remote access error
rem_op_err 11 -121 remote operation error
retry_exc_err 12 -110 transport retry counter exceeded
rnr_retry_exc_err 13 -110 RNR retry counter exceeded
loc_rdd_viol_err 14 -5 local RDD violation error
rem_inv_rd_req_err 15 -5 remote invalid RD request
rem_abort_err 16 -121 operation aborted
inv_eecn_err 17 -5 invalid EE context number
inv_eec_state_err 18 -5 invalid EE context state
fatal_err 19 -5 fatal error
resp_timeout_err 20 -110 response timeout error
general_err 21 -5 general error"

kinds=(send recv rdma atomic reg hb)
# What the handler's line calls each kind's operation.
declare -A what=([send]=send [recv]=receive [rdma]="RDMA WRITE"
	[atomic]=atomic [reg]="memory registration" [hb]=heartbeat)

rdma_dev_up
krdma_load

# ---- the grammar -------------------------------------------------------
ctl listen name=g addr=$MY_IP:7150 || fail "listen g"
ctl connect name=gc addr=$PEER_IP:7150 || fail "connect gc"
f=$S/gc/inject
expect_eq "$(stat -c %a $f)" 600 "inject's mode"
expect_eq "$(cat $f)" off "inject at first"
bad() {	# bad ERRNO 'dmesg words' LINE
	local want=$1 words=$2 got
	ratelimit_pace
	dmesg_mark
	got=$(KRDMA_CTL=$f ctl_err "$3")
	[ "$got" = "$want" ] || fail "inject '$3': $got, expected $want"
	dmesg_new | grep -qF "krdma: gc: inject: $words" ||
		fail "inject '$3': no line naming '$words': $(dmesg_new | tail -n 2)"
}
bad EINVAL "bad word 'no_such_err'" "no_such_err"
bad EINVAL "bad word '0'" "0"
bad EINVAL "bad word '22'" "22"
bad EINVAL "bad word 'op=disk'" "rem_access_err op=disk"
bad EINVAL "bad word 'nth=0'" "rem_access_err nth=0"
bad EINVAL "bad word 'percent=101'" "rem_access_err percent=101"
bad EINVAL "bad word 'colour=red'" "rem_access_err colour=red"
bad EINVAL "no status given" " "
expect_eq "$(cat $f)" off "inject after refused lines"
echo "12 op=send,rdma nth=1000" >$f || fail "arm by number"
expect_eq "$(cat $f)" "retry_exc_err op=send,rdma nth=1000 armed" "inject armed"
echo "rem_op_err op=send percent=50" >$f || fail "arm by percent"
expect_eq "$(cat $f)" "rem_op_err op=send percent=50 armed" "inject by percent"
echo off >$f || fail "off"
expect_eq "$(cat $f)" off "inject off"
echo "rem_access_err op=send" >$f || fail "arm gc"
ctl test name=gc op=send size=64 count=5 || fail "test gc"
wait_for 10 not_running $S/gc/test_status
expect_eq "$(cat $f)" "rem_access_err op=send nth=0 fired" "inject after firing"
ratelimit_pace
dmesg_mark
got=$(KRDMA_CTL=$f ctl_err off)
[ "$got" = EBUSY ] || fail "off after firing: $got, expected EBUSY"
dmesg_new | grep -qF "krdma: gc: inject: it fired; the connection has failed" ||
	fail "no line for the refused 'off'"
ctl disconnect name=gc || fail "disconnect gc"
ctl unlisten name=g || fail "unlisten g"

# ---- heartbeats lost -----------------------------------------------------
# drop_hb: the heartbeats c0 receives are ignored, as if lost: after its
# 3 misses of 100 ms it fails with -ETIMEDOUT and says the peer is lost.
ctl listen name=l0 addr=$MY_IP:7149 hb_ms=100 hb_misses=3 || fail "listen l0"
ctl connect name=c0 addr=$PEER_IP:7149 hb_ms=100 hb_misses=3 || fail "connect c0"
sleep 1
expect_eq "$(cat $S/c0/state)" connected "c0 before drop_hb"
dmesg_mark
echo drop_hb >$S/c0/inject || fail "drop_hb"
expect_eq "$(cat $S/c0/inject)" drop_hb "inject with drop_hb"
wait_for 5 sh -c "[ \"\$(cat $S/c0/error)\" = -110 ]" ||
	fail "c0 after its heartbeats were dropped: $(cat $S/c0/state $S/c0/error | paste -sd ' ')"
dmesg_new | grep -qE "krdma: c0: peer .* lost: [0-9]+ heartbeats of 100 ms unanswered" ||
	fail "no 'peer lost' line for c0: $(dmesg_new | grep krdma | tail -n 3)"
ctl disconnect name=c0 || fail "disconnect c0"
ctl unlisten name=l0 || fail "unlisten l0"

# ---- every status ------------------------------------------------------
# in_run I: whether case I runs here.
day=$((10#$(date +%j)))
in_run() { [ "${KRDMA_STRESS:-0}" = 1 ] || [ $((($1 + day) % 3)) = 0 ]; }

# ended CONN ERRNO: CONN failed with ERRNO (a passive end may be gone
# already: the control file's listener closes it and says with what).
ended() {
	if [ -e "$S/$1" ]; then
		[ "$(cat $S/$1/state)" != connected ] &&
			[ "$(cat $S/$1/error)" = "$2" ]
	else
		dmesg_new | grep -qF "krdma: $1: peer gone ($2)"
	fi
}
gone_or_down() { [ ! -e "$S/$1" ] || [ "$(cat $S/$1/state)" != connected ]; }

# The handlers' "KIND failed" lines share one rate limit (10 in 5 s) over
# every connection, and siw adds a line of its own for a failed send: all
# 21 statuses in a row (KRDMA_STRESS=1) lost one there.  At least 1.2 s
# from one status to the next keeps each one's line.
next_status=0
pace_status() {
	local w=$((next_status - ${EPOCHREALTIME/./}))
	[ $w -le 0 ] || nap "$(printf '%d.%06d' $((w / 1000000)) $((w % 1000000)))"
	next_status=$((${EPOCHREALTIME/./} + 1200000))
}

i=0
ran=0
while read -r st num err msg; do
	i=$((i + 1))
	in_run $i || continue
	ran=$((ran + 1))
	pace_status
	k=${kinds[$(((ran - 1) % ${#kinds[@]}))]}
	label=${what[$k]}
	port=$((7150 + i))
	hb=
	[ "$k" = hb ] && hb="hb_ms=100"
	ctl listen name=l$i addr=$MY_IP:$port $hb || fail "listen l$i"
	ctl connect name=c$i addr=$PEER_IP:$port $hb || fail "connect c$i"
	wait_for 5 test -e $S/l$i.0/test_status || fail "l$i.0 missing"
	case $k in
	recv|reg) victim=l$i.0 other=c$i ;;
	*) victim=c$i other=l$i.0 ;;
	esac
	case $k in
	send|recv) op=send ;;
	rdma|reg) op=write ;;
	atomic) op=atomic
		# siw has no atomics: an RDMA READ's completion instead.
		[ "$DEV" = siw ] && { k=rdma op=read label="RDMA READ"; } ;;
	hb) op= ;;
	esac
	log "$st ($num) on $victim's $k completion"
	dmesg_mark
	echo "$st op=$k" >$S/$victim/inject || fail "arm $victim"
	[ -n "$op" ] && { ctl test name=c$i op=$op size=4096 count=20 || fail "test c$i"; }
	wait_for 10 ended $victim "$err" ||
		fail "$st on $victim's $k: state $(cat $S/$victim/state $S/$victim/error 2>&1 | paste -sd ' ')"
	if [ -e $S/$victim ]; then
		if [ "$st" = wr_flush_err ]; then
			case "$(cat $S/$victim/wc_status)" in
			none|"WR flushed") ;;
			*) fail "$victim's wc_status after a flush: $(cat $S/$victim/wc_status)" ;;
			esac
		else
			expect_eq "$(cat $S/$victim/wc_status)" "$msg" "$victim's wc_status"
		fi
	fi
	dmesg_new | grep -qF "krdma: $victim: injected: a $k completion fails with $msg" ||
		fail "no injection line for $victim: $(dmesg_new | grep krdma | tail -n 3)"
	if [ "$st" != wr_flush_err ]; then
		dmesg_new | grep -qF "krdma: $victim: $label failed: $msg ($num)" ||
			fail "no '$label failed: $msg ($num)' line: $(dmesg_new | grep krdma | tail -n 3)"
	fi
	wait_for 5 gone_or_down $other || fail "$other still connected 5 s after $victim failed"
	[ -n "$op" ] && wait_for 10 not_running $S/c$i/test_status
	ctl disconnect name=c$i 2>/dev/null
	ctl unlisten name=l$i || fail "unlisten l$i"
done <<<"$table"
log "$ran statuses injected"
[ "$ran" -ge 7 ] || fail "only $ran statuses ran"
wait_for 10 sh -c "! ls $S | grep -q ." || fail "connections left: $(ls $S)"
krdma_unload
