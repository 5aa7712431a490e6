#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# #22 item 4: a peer cannot make a listener's host allocate without bound.
# A hostile peer (here, through the control file on the same host) sends
# 1000 connection requests to a listener with backlog=8: 8 are accepted,
# the rest are refused with EBUSY and counted.  It then sends 100 (make
# stress: 1000)
# self-test setup requests larger than the service allows (svc_expose_max)
# and with rights it does not grant (svc_rights): each is refused with a
# dmesg line and nothing is exposed.  Kernel memory (Slab + VmallocUsed +
# KernelStack) grows by at most the bound the README gives.  When the
# peer's connections go, the listener's go with them (reaped), and a
# legitimate client still connects and passes its self-test.
# topo: single
# dev: rxe siw
# kernel: 6.1 6.12
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

port=7050
backlog=8
tries=${KRDMA_BACKLOG_TRIES:-1000}
setups=${KRDMA_BACKLOG_SETUPS:-100}
[ "${KRDMA_STRESS:-0}" = 1 ] && setups=${KRDMA_BACKLOG_SETUPS:-1000}
L=$KRDMA_SYS/listeners/lb
P=/sys/module/krdma/parameters

# Kernel memory in KiB: slab, vmalloc, kernel stacks.
kmem() {
	awk '/^(Slab|VmallocUsed|KernelStack):/ { s += $2 } END { print s }' /proc/meminfo
}
passive() { ls -d $KRDMA_SYS/conns/lb.* 2>/dev/null | wc -l; }
no_passive() { [ "$(passive)" = 0 ]; }

rdma_dev_up
krdma_load
expect_eq "$(cat $P/svc_expose_max)" $((16 << 20)) "svc_expose_max default"
expect_eq "$(cat $P/svc_rights)" 7 "svc_rights default"
echo $((1 << 20)) >$P/svc_expose_max || fail "svc_expose_max"

mem0=$(kmem)
ctl listen name=lb addr=$MY_IP:$port backlog=$backlog || fail "listen"
expect_eq "$(cat $L/backlog)" $backlog "backlog"

dmesg_mark
ok=0 busy=0 reset=0
for ((i = 1; i <= tries; i++)); do
	# Past the first 50, no fork (slow under TCG): success or not is
	# enough there, the errnos were checked on the first ones.
	if [ $i -gt 50 ]; then
		if { echo "connect name=h$i addr=$MY_IP:$port depth=2 msg=64" >$KRDMA_CTL; } 2>/dev/null; then
			ok=$((ok + 1))
		else
			busy=$((busy + 1))
		fi
		continue
	fi
	e=$(ctl_err connect name=h$i addr=$MY_IP:$port depth=2 msg=64)
	case $e in
	OK) ok=$((ok + 1)) ;;
	EBUSY) busy=$((busy + 1)) ;;
	# siw releases the passive socket right after queueing the MPA
	# reject: the active side often meets the TCP reset first and
	# learns only that it was refused (handshake.sh).
	ECONNREFUSED) [ "$DEV" = siw ] || fail "connect h$i: $e"
		reset=$((reset + 1)) ;;
	*) fail "connect h$i: $e (after $ok accepted, $busy refused)" ;;
	esac
done
log "$tries connection requests: $ok accepted, $busy refused ($reset of the first 50 by a reset)"
if [ "$DEV" = rxe ]; then
	expect_eq "$busy" $((tries - backlog)) "connects refused"
	dmesg_new | grep -q "rejected the connection: listener backlog full" ||
		fail "the active side never named the reason"
fi
expect_eq "$ok" $backlog "connections accepted"
expect_eq "$(cat $L/held)" $backlog "connections the listener holds"
expect_eq "$(passive)" $backlog "passive connections"
[ "$(cat $L/rejected)" -ge $((tries - backlog)) ] || fail "rejected: $(cat $L/rejected)"
dmesg_new | grep -q "lb: backlog of $backlog full, rejected connection from" ||
	fail "no dmesg line for the refused connections"
mem1=$(kmem)

# Setup requests the service refuses: too large, or rights it does not
# grant.  A refused self-test ends with the peer's error.
h=$(for c in $KRDMA_SYS/conns/h*; do basename "$c"; done | head -n 1)
echo 3 >$P/svc_rights || fail "svc_rights"
# ended FILE: the self-test ended within 60 s; polled every 10 ms, since
# each refused setup takes a few and there are $setups of them.
ended() {
	local end=$((SECONDS + 60))
	until not_running "$1"; do
		[ $SECONDS -lt $end ] || return 1
		nap 0.01
	done
}
dmesg_mark
for i in $(seq 1 "$setups"); do
	if [ $((i % 2)) = 0 ]; then
		args="op=write size=2M count=1"
	elif [ "$DEV" = rxe ]; then
		args="op=atomic count=1"
	else
		args="op=read size=4M count=1"
	fi
	ctl test name=$h $args || fail "test $args"
	ended $KRDMA_SYS/conns/$h/test_status || fail "test $args hangs"
	st=
	read -r st <$KRDMA_SYS/conns/$h/test_status
	case $st in
	failed*) ;;
	*) fail "setup request $i ($args) was not refused: $st" ;;
	esac
done
dmesg_new | grep -q "self-test service: peer asked for 2097152 bytes, svc_expose_max is 1048576" ||
	fail "no dmesg line for the refused size"
if [ "$DEV" = rxe ]; then
	dmesg_new | grep -q "self-test service: peer asked for rights 0x4, svc_rights is 0x3" ||
		fail "no dmesg line for the refused rights"
fi
echo 7 >$P/svc_rights
ctl test name=$h op=write,read size=1M count=1 || fail "test at the limit"
wait_for 60 not_running $KRDMA_SYS/conns/$h/test_status
expect_eq "$(cat $KRDMA_SYS/conns/$h/test_status)" passed "self-test at svc_expose_max"
mem2=$(kmem)
log "kernel memory: $mem0 KiB before, $mem1 KiB with the listener full, $mem2 KiB after $setups refused setups"
# README: a listener holds at most backlog x (svc_expose_max + about
# 1 MiB); the hostile side's own connections are on this host too.
bound=$(( 2 * backlog * (1024 + 1024) ))
[ $((mem1 - mem0)) -le $bound ] || fail "kernel memory grew $((mem1 - mem0)) KiB with the listener full (bound $bound)"
[ $((mem2 - mem0)) -le $bound ] || fail "kernel memory grew $((mem2 - mem0)) KiB after the setups (bound $bound)"

# The peer leaves: the listener's connections are reaped.
dmesg_mark
for c in $KRDMA_SYS/conns/h*; do
	ctl disconnect name="$(basename "$c")" || fail "disconnect $(basename "$c")"
done
wait_for 30 no_passive || fail "$(passive) passive connections left 30 s after their peers"
expect_eq "$(cat $L/held)" 0 "connections held after the peers left"
dmesg_new | grep -q "lb\.[0-9]*: peer gone (-104), connection closed" ||
	fail "no dmesg line for the reaped connections"

# A legitimate client is served.
ctl connect name=good addr=$MY_IP:$port || fail "legitimate connect"
ctl test name=good op=all size=64K count=2 || fail "test start"
wait_for 120 not_running $KRDMA_SYS/conns/good/test_status
expect_eq "$(cat $KRDMA_SYS/conns/good/test_status)" passed "legitimate self-test"
ctl disconnect name=good || fail "disconnect good"
wait_for 30 no_passive || fail "the legitimate client's passive end was not reaped"
ctl unlisten name=lb || fail "unlisten"
echo $((16 << 20)) >$P/svc_expose_max
