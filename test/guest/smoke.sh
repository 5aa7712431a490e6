#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# One connection over loopback: listen, connect, self-test, disconnect.
# krdma loaded as a user would (no dyndbg=): a connection's life prints
# nothing, only the self-test's result; with dynamic debug turned on for
# the module, the next connection says it connected.
# make check runs it on 6.1 and 6.12 (a connection's life under KASAN
# and lockdep is apitest's on the debug kernel); make stress there too.
# topo: single
# dev: rxe siw
# check-kernel: 6.1 6.12
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
dmesg_mark
KRDMA_DYNDBG= krdma_load
ctl listen name=l1 addr=$MY_IP:7000 || fail "listen"
ctl connect name=c1 addr=$PEER_IP:7000 || fail "connect"
c=$KRDMA_SYS/conns/c1
expect_eq "$(cat $c/state)" connected "c1 state"
expect_eq "$(cat $c/completions)" softirq "c1 completions"
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
# Completions in process context (wq=1, opts.workqueue): both sides say
# so, the self-test's data is compared as on any connection, a delay=
# injection (whose completions would come from a timer) is refused with
# EOPNOTSUPP and a line, and a polled one with it is refused by the grammar.
ctl listen name=lw addr=$MY_IP:7002 wq=1 || fail "listen wq=1"
ctl connect name=cw addr=$PEER_IP:7002 wq=1 || fail "connect wq=1"
wait_for 5 test -e $KRDMA_SYS/conns/lw.0/completions || fail "lw.0 not there"
expect_eq "$(cat $KRDMA_SYS/conns/cw/completions)" workqueue "cw completions"
expect_eq "$(cat $KRDMA_SYS/conns/lw.0/completions)" workqueue "lw.0 completions"
ctl test name=cw op=send,write,read size=65536 count=3 || fail "test on cw"
wait_for 60 not_running $KRDMA_SYS/conns/cw/test_status
expect_eq "$(cat $KRDMA_SYS/conns/cw/test_status)" passed "cw test_status"
dmesg_mark
out=$( (echo delay=100 >$KRDMA_SYS/conns/cw/inject) 2>&1) &&
	fail "delay= on a workqueue connection was accepted"
case $out in *"Operation not supported"*) ;; *) fail "delay= on cw: $out" ;; esac
dmesg_new | grep -qF "krdma: cw: inject: delay: not on a workqueue connection" ||
	fail "no line for delay= on cw: $(dmesg_new | tail -n 2)"
expect_ctl_err EINVAL connect name=cx addr=$PEER_IP:7002 wq=1 poll=1
ctl disconnect name=cw || fail "disconnect cw"
wait_for 20 test ! -e $KRDMA_SYS/conns/lw.0 || fail "lw.0 not closed after its peer left"
ctl unlisten name=lw || fail "unlisten lw"
# Completion vectors (vector=, opts.comp_vector): rxe and siw have one per
# possible CPU.  A connection asked for vector N is on N modulo their
# number (conns/NAME/comp_vector), polled too; a listener's vector is its
# accepted connections'.  apitest's comp_vector checks the kernel API.
nvec=$(( $(sed 's/.*-//' /sys/devices/system/cpu/possible) + 1 ))
[ "$nvec" -ge 2 ] || fail "$nvec possible CPUs: vectors cannot be told apart"
ctl listen name=lv addr=$MY_IP:7003 vector=1 || fail "listen vector=1"
for v in 0 1 5 3:poll; do
	n=${v%%:*} p=0
	[ "$v" = "$n" ] || p=1
	ctl connect name=cv$n addr=$PEER_IP:7003 vector=$n poll=$p || fail "connect vector=$n poll=$p"
	expect_eq "$(cat $KRDMA_SYS/conns/cv$n/comp_vector)" $((n % nvec)) "cv$n comp_vector"
done
lv_conns() { [ "$(ls -d $KRDMA_SYS/conns/lv.* 2>/dev/null | wc -l)" = "$1" ]; }
wait_for 5 lv_conns 4 || fail "lv did not accept 4"
for c in $KRDMA_SYS/conns/lv.*; do
	expect_eq "$(cat $c/comp_vector)" $((1 % nvec)) "${c##*/} comp_vector"
done
ctl connect name=cva addr=$PEER_IP:7003 vector=any || fail "connect vector=any"
v=$(cat $KRDMA_SYS/conns/cva/comp_vector)
[ "$v" -ge 0 ] && [ "$v" -lt "$nvec" ] || fail "cva comp_vector $v"
expect_ctl_err EINVAL connect name=cvx addr=$PEER_IP:7003 vector=1024
for n in 0 1 5 3 a; do
	ctl disconnect name=cv$n || fail "disconnect cv$n"
done
wait_for 20 lv_conns 0 || fail "lv's connections not closed"
ctl unlisten name=lv || fail "unlisten lv"
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
