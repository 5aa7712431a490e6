#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod with live listeners, connections and a running self-test cleans up
# everything: the module goes, the device stays usable, reload works.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
for round in 1 2; do
	dmesg_mark
	krdma_load
	ctl listen name=l1 addr=$MY_IP:7020 || fail "listen"
	ctl listen name=l2 addr=0.0.0.0:7021 || fail "listen wildcard"
	for i in 1 2 3 4; do
		ctl connect name=c$i addr=$PEER_IP:$((7020 + i % 2)) || fail "connect c$i"
	done
	ctl test name=c1 op=write,read size=128K count=100000 || fail "test start"
	ctl test name=c2 op=send size=512 count=1000000 || fail "test start"
	sleep 1
	timeout 60 rmmod krdma || fail "rmmod with live connections failed or hung (round $round)"
	[ ! -e $KRDMA_SYS ] || fail "sysfs left after rmmod"
	lsmod | grep -q '^krdma ' && fail "module still loaded"
	dmesg_new | grep -q 'c1: closed by module unload' ||
		fail "no close message for c1 (round $round)"
done
# The device itself is unharmed.
rdma link show $IBDEV/1 | grep -q 'state ACTIVE' || fail "device not active after unload"
