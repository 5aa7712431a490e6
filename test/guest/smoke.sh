#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One connection over loopback: listen, connect, self-test, disconnect.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
ctl listen name=l1 addr=$MY_IP:7000 || fail "listen"
ctl connect name=c1 addr=$PEER_IP:7000 || fail "connect"
c=$KRDMA_SYS/conns/c1
expect_eq "$(cat $c/state)" connected "c1 state"
wait_for 5 grep -q connected $KRDMA_SYS/conns/l1.0/state || fail "l1.0 not connected"
cat $c/queue_depth $c/max_msg_size $c/device $c/qp_num $c/local_addr $c/peer_addr
ctl test name=c1 op=send,write,read size=4096 count=3 || fail "test start"
wait_for 60 not_running $c/test_status
expect_eq "$(cat $c/test_status)" passed "test_status"
grep . $c/* 
ctl disconnect name=c1 || fail "disconnect"
# The passive end goes with its peer (#22 item 4).
wait_for 20 test ! -e $KRDMA_SYS/conns/l1.0 || fail "l1.0 not closed after its peer left: $(cat $KRDMA_SYS/conns/l1.0/state)"
ctl unlisten name=l1 || fail "unlisten"
