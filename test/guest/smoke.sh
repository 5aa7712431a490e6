#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One connection over loopback: listen, connect, self-test, disconnect.
# krdma loaded as a user would (no dyndbg=): a connection's life prints
# nothing, only the self-test's result; with dynamic debug turned on for
# the module, the next connection says it connected.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
dmesg_mark
KRDMA_DYNDBG= krdma_load
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
# Quiet by default: the admin saw the load and the self-test's result.
dmesg_new | grep -q 'krdma: c1: self-test passed' || fail "no self-test line: $(dmesg_new | grep krdma)"
chatter=$(dmesg_new | grep 'krdma: ' | grep -vE "krdma: (version .* loaded|$IBDEV: added|c1: self-test passed|loading out-of-tree module|module verification failed)")
[ -z "$chatter" ] || fail "pr_info for a connection's life: $chatter"
# Dynamic debug on: the same life is told.
ddc=/proc/dynamic_debug/control
[ -w $ddc ] || ddc=/sys/kernel/debug/dynamic_debug/control
echo 'module krdma +p' >$ddc || fail "dynamic debug: cannot write $ddc"
dmesg_mark
ctl listen name=l2 addr=$MY_IP:7001 || fail "listen l2"
ctl connect name=c2 addr=$PEER_IP:7001 || fail "connect c2"
ctl disconnect name=c2 || fail "disconnect c2"
ctl unlisten name=l2 || fail "unlisten l2"
for w in "l2: listening on $MY_IP:7001" "c2: connected to $PEER_IP:7001 on $IBDEV" "l2: closed"; do
	dmesg_new | grep -qF "krdma: $w" || fail "dynamic debug on: no '$w' line: $(dmesg_new | grep krdma)"
done
echo 'module krdma -p' >$ddc
