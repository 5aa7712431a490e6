#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# More than 64 connections between two kernels (80; KRDMA_MANY), set up
# by 8 writers connecting at the same time to one listener, then each
# moving verified data at the same time.
# topo: pair
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

N=${KRDMA_MANY:-80}
rdma_dev_up
krdma_load
if [ "$ROLE" = B ]; then
	ctl listen name=l1 addr=$MY_IP:7040 depth=8 backlog=$N || fail "listen"
	barrier listening
	barrier done 600
	expect_eq "$(cat $KRDMA_SYS/listeners/l1/accepted)" $N "accepted"
	exit 0
fi
barrier listening
# Simultaneous connects: 8 writers of the control file, each its share.
errs=$(mktemp)
for w in $(seq 8); do
	(
		for i in $(seq "$w" 8 "$N"); do
			ctl connect name=m$i addr=$PEER_IP:7040 depth=8 ||
				echo "connect m$i failed" >>"$errs"
		done
	) &
done
wait
[ -s "$errs" ] && fail "$(head -n 3 "$errs")"
rm -f "$errs"
for i in $(seq $N); do
	ctl test name=m$i op=send,write,read size=8K count=3 || fail "test m$i"
done
for i in $(seq $N); do
	wait_for 300 not_running $KRDMA_SYS/conns/m$i/test_status ||
		fail "m$i still running"
	st=$(cat $KRDMA_SYS/conns/m$i/test_status)
	[ "$st" = passed ] || fail "m$i: $st"
done
expect_eq "$(ls -d $KRDMA_SYS/conns/m* | wc -l)" $N "connections in sysfs"
barrier done
