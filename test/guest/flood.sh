#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Flow control: a flood of small sends over a shallow queue.  The sender
# must wait for credits (credit_waits > 0) and get them back (credit_msgs
# > 0 on the receiver's side of the exchange), every message arrives
# verified, and the device never sees a receiver-not-ready (rxe counters).
# make check runs it on 6.1 and 6.12 (flow control under KASAN and
# lockdep is apitest's on the debug kernel); make stress there too.
# topo: single pair
# dev: rxe siw
# check-kernel: 6.1 6.12
. "$(dirname "$0")/../lib.sh"

rnr() {	# sum of rxe's RNR counters (0 on siw, which has none)
	local f=/sys/class/infiniband/$IBDEV/ports/1/hw_counters
	[ -d $f ] || { echo 0; return; }
	echo $(( $(cat $f/rcvd_rnr_err) + $(cat $f/send_rnr_err) + $(cat $f/retry_rnr_exceeded_err) ))
}

rdma_dev_up
krdma_load
if [ "$ROLE" = B ] && [ "$TOPO" = pair ]; then
	ctl listen name=l1 addr=$MY_IP:7060 depth=4 || fail "listen"
	rnr0=$(rnr)
	barrier listening
	barrier done 600
	expect_eq "$(rnr)" "$rnr0" "RNR counter on the receiver"
	exit 0
fi
[ "$TOPO" = single ] && { ctl listen name=l1 addr=$MY_IP:7060 depth=4 || fail "listen"; }
barrier listening
rnr0=$(rnr)
ctl connect name=c1 addr=$PEER_IP:7060 depth=4 || fail "connect"
c=$KRDMA_SYS/conns/c1
expect_eq "$(cat $c/queue_depth)" 4 "depth"
ctl test name=c1 op=send size=16 count=${KRDMA_FLOOD:-5000} || fail "test"
wait_for 600 not_running $c/test_status
expect_eq "$(cat $c/test_status)" passed "flood test"
log "sent $(cat $c/send_ops), credit waits $(cat $c/credit_waits), credit msgs in $(cat $c/credit_msgs), $(cat $c/test_usecs) us"
[ "$(cat $c/credit_waits)" -gt 0 ] || fail "the sender never waited for a credit: no backpressure"
[ "$(cat $c/send_ops)" -ge "${KRDMA_FLOOD:-5000}" ] || fail "send_ops $(cat $c/send_ops)"
# The receiver returns credits in credit-only messages: the initiator sees them.
[ "$(cat $c/credit_msgs)" -gt 0 ] || fail "no credit message came back"
expect_eq "$(rnr)" "$rnr0" "RNR counter"
barrier done
