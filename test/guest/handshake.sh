#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The connection handshake: a peer speaking garbage, another protocol
# version, a truncated hello or bad parameters is rejected with a clear
# reason on both sides; a good peer afterwards still connects.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
ctl listen name=l1 addr=$MY_IP:7001 || fail "listen"
l=$KRDMA_SYS/listeners/l1
expect_eq "$(cat $l/state)" listening "listener state"

# seen A B: a kernel line since the mark holds A, and then B after it.
seen() {
	local l
	for l in "${KMSG_NEW[@]}"; do
		[[ $l == *"$1"*"$2"* ]] && return 0
	done
	return 1
}
try() {	# try HELLO ERRNO DMESG-REASON
	local before after got
	read -r before <$l/rejected
	dmesg_mark
	ctl_err_v connect name=bad$1 addr=$PEER_IP:7001 hello=$1 timeout_ms=3000
	got=$CTL_ERR
	[ ! -e $KRDMA_SYS/conns/bad$1 ] || fail "failed connection bad$1 left in sysfs"
	read -r after <$l/rejected
	expect_eq "$after" $((before + 1)) "rejected count after hello=$1"
	# The lines, read once: KMSG_NEW (test/lib.sh).
	dmesg_fetch
	seen "l1: rejected connection from " ": $3" ||
		fail "passive side did not log '$3'"
	# siw releases the passive socket right after queueing the MPA
	# reject; now and then the active side meets the TCP reset before
	# the reply, and all it can learn is that it was refused.
	if [ "$DEV" = siw ] && [ "$got" = ECONNREFUSED ] &&
	   seen "bad$1: " " rejected the connection: reset by remote host"; then
		log "hello=$1: siw delivered the reject as a TCP reset"
		return
	fi
	[ "$got" = "$2" ] || fail "hello=$1: got $got, expected $2"
	seen "bad$1: " " rejected the connection: $3" ||
		fail "active side did not log '$3'"
}
try 1 EPROTO "not a krdma peer (bad magic)"
try 2 EPROTONOSUPPORT "unsupported protocol version"
# IB CM pads private data with zeros, so on RoCE a short hello reads as
# version 0; iWARP delivers it exactly as sent.
if [ "$DEV" = siw ]; then
	try 3 EPROTO "handshake too short"
else
	try 3 EPROTONOSUPPORT "unsupported protocol version"
fi
try 4 EINVAL "queue depth or message size out of range"

# Negotiation: each side's smaller depth and message size win.  The active
# side mapped its buffers for 64 KiB before it learned of 2048: each must be
# unmapped with the size it was mapped with (krdma's DMA check, on in
# every test, names any that is not; the bug scan fails on its line).
expect_eq "$(cat /sys/module/krdma/parameters/dma_check)" Y "dma_check"
ctl listen name=l2 addr=$MY_IP:7002 depth=8 msg=2048 || fail "listen l2"
ctl connect name=c2 addr=$PEER_IP:7002 depth=16 msg=65536 || fail "connect c2"
expect_eq "$(cat $KRDMA_SYS/conns/c2/queue_depth)" 8 "negotiated depth"
expect_eq "$(cat $KRDMA_SYS/conns/c2/max_msg_size)" 2048 "negotiated msg size"
wait_for 5 test -e $KRDMA_SYS/conns/l2.0/test_status || fail "l2.0 missing"
expect_eq "$(cat $KRDMA_SYS/conns/l2.0/queue_depth)" 8 "passive depth"
expect_eq "$(cat $KRDMA_SYS/conns/l2.0/max_msg_size)" 2048 "passive msg size"

# Nobody listening: refused, nothing left behind.
expect_ctl_err ECONNREFUSED connect name=c3 addr=$PEER_IP:7999 timeout_ms=3000
[ ! -e $KRDMA_SYS/conns/c3 ] || fail "refused connection left in sysfs"

# Names are unique.
ctl connect name=c4 addr=$PEER_IP:7001 || fail "good connect after rejects"
expect_ctl_err EEXIST connect name=c4 addr=$PEER_IP:7001
expect_ctl_err EEXIST listen name=l1 addr=$MY_IP:7003
ctl test name=c4 op=send,write,read size=1 || fail "test c4"
wait_for 60 not_running $KRDMA_SYS/conns/c4/test_status
expect_eq "$(cat $KRDMA_SYS/conns/c4/test_status)" passed "c4 self-test"

# A connect that times out returns at its timeout and leaves nothing
# once its teardown work ran (krdma_connect_give_up()): an address on the
# device's subnet that nobody has, so that address resolution (ARP) is
# still under way when 300 ms are up.
nobody=${MY_IP%.*}.77
dmesg_mark
t0=${EPOCHREALTIME/./}
expect_ctl_err ETIMEDOUT connect name=c5 addr=$nobody:7001 timeout_ms=300
ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
log "connect to $nobody timed out after $ms ms"
[ $ms -lt 3000 ] || fail "connect with timeout_ms=300 took $ms ms"
dmesg_new | grep -q "c5: connecting to $nobody:7001 timed out" ||
	fail "no dmesg line for c5's timeout"
wait_for 10 test ! -e $KRDMA_SYS/conns/c5 || fail "c5 still in sysfs 10 s after its timeout"
# Its name is free again.
expect_ctl_err ETIMEDOUT connect name=c5 addr=$nobody:7001 timeout_ms=300
wait_for 10 test ! -e $KRDMA_SYS/conns/c5 || fail "c5 (again) still in sysfs 10 s after its timeout"
