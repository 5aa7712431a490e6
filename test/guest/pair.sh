#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Kernel to kernel across two guests: B listens, A connects; self-test of
# every operation at size edges, single and multi-SGE, started by the
# active side, then by the accepting side (its one-sided operations go the
# other way); disconnect from the passive side is seen by the active side.
# topo: pair
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
run_test() {	# run_test CONN ARGS...
	local c=$KRDMA_SYS/conns/$1 st ops us

	ctl test name="$@" || fail "test on $*"
	wait_for 300 not_running $c/test_status
	read -r st <$c/test_status
	[ "$st" = passed ] || fail "test on $*: $st"
	read -r ops <$c/test_ops
	read -r us <$c/test_usecs
	log "test on $*: $ops ops, $us us"
}
if [ "$ROLE" = B ]; then
	ctl listen name=l1 addr=$MY_IP:7030 || fail "listen"
	barrier listening
	barrier tested
	wait_for 10 test -e $KRDMA_SYS/conns/l1.0/test_status || fail "no l1.0"
	expect_eq "$(cat $KRDMA_SYS/conns/l1.0/state)" connected "l1.0 state"
	expect_eq "$(cat $KRDMA_SYS/conns/l1.0/peer_addr | cut -d: -f1)" "$PEER_IP" "peer address"
	[ "$(cat $KRDMA_SYS/conns/l1.0/write_ops)" = 0 ] || fail "passive side counted writes it did not do"
	# The accepting side starts one-sided operations of its own: A's
	# service exposes its memory and checks it.
	run_test l1.0 op=write,read size=65536 count=2
	run_test l1.0 op=all size=4097 count=2
	run_test l1.0 op=write,read size=200001 sge=7 count=1
	if [ "$DEV" = rxe ]; then
		run_test l1.0 op=atomic count=5
	fi
	[ "$(cat $KRDMA_SYS/conns/l1.0/write_ops)" -ge 5 ] ||
		fail "passive side's writes not counted: $(cat $KRDMA_SYS/conns/l1.0/write_ops)"
	expect_eq "$(cat $KRDMA_SYS/conns/l1.0/errors)" 0 "passive side's errors"
	ctl disconnect name=l1.0 || fail "passive disconnect"
	barrier disconnected
	ctl unlisten name=l1 || fail "unlisten"
	exit 0
fi

barrier listening
ctl connect name=c1 addr=$PEER_IP:7030 || fail "connect"
c=$KRDMA_SYS/conns/c1
expect_eq "$(cat $c/peer_addr)" "$PEER_IP:7030" "peer_addr"
expect_eq "$(cat $c/local_addr | cut -d: -f1)" "$MY_IP" "local_addr"
run_test c1 op=send size=0 count=3
for size in 1 4095 4096 4097 65536 1M; do
	run_test c1 op=all size=$size count=2
done
run_test c1 op=write,read size=3M count=1
run_test c1 op=write,read size=200001 sge=7 count=2
run_test c1 op=send size=4096 count=2000
if [ "$DEV" = rxe ]; then
	run_test c1 op=atomic count=20
	# RDMA WRITE with immediate: B checks the data when the notice comes.
	run_test c1 op=imm size=1 count=2
	run_test c1 op=imm size=64K count=3
	run_test c1 op=imm size=3M count=1
else
	# iWARP has neither atomics nor immediate data.
	expect_ctl_err EOPNOTSUPP test name=c1 op=atomic
	expect_ctl_err EOPNOTSUPP test name=c1 op=imm
fi
[ "$(cat $c/errors)" = 0 ] || fail "errors counted: $(cat $c/errors)"
barrier tested
barrier disconnected
wait_for 10 grep -q disconnected $c/state || fail "active side state: $(cat $c/state)"
expect_eq "$(cat $c/error)" -104 "error after peer disconnect"
expect_ctl_err ECONNRESET test name=c1 op=send
ctl disconnect name=c1 || fail "disconnect"
