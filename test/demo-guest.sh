#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make demo` (tools/demo): B listens, A connects and
# moves verified data with send, RDMA WRITE and RDMA READ.  A writes a
# report to $LAB/report.txt.
export TOPO=pair DEV=${KRDMA_DEV:-rxe} ROLE=$GUEST TEST_ID=demo
. "$(dirname "$0")/lib.sh"

rdma_dev_up
krdma_load
if [ "$ROLE" = B ]; then
	ctl listen name=demo addr=$MY_IP:7777 || fail "listen"
	barrier listening
	barrier finished 600
	exit 0
fi

r=$LAB/report.txt
barrier listening
{
	echo "krdma $(cat $KRDMA_SYS/version) on $(uname -r), guest A ($MY_IP) -> guest B ($PEER_IP)"
	echo
	echo "RDMA devices seen by krdma on A:"
	for d in $KRDMA_SYS/devices/*; do
		printf '  %-6s transport=%s port=%s max_qp_wr=%s atomics=%s\n' \
			"$(cat $d/name)" "$(cat $d/transport)" "$(cat $d/port_state)" \
			"$(cat $d/max_qp_wr)" "$(cat $d/atomics)"
	done
} >"$r"
ctl connect name=demo addr=$PEER_IP:7777 || fail "connect"
c=$KRDMA_SYS/conns/demo
{
	echo
	echo "Connection 'demo': $(cat $c/state), $(cat $c/local_addr) -> $(cat $c/peer_addr)"
	echo "  device $(cat $c/device), QP $(cat $c/qp_num), queue depth $(cat $c/queue_depth), max message $(cat $c/max_msg_size) bytes"
	echo
	printf '  %-6s %10s %6s %10s %12s  %s\n' op size count "time(us)" "avg lat(us)" "data check"
} >>"$r"
ok=1
for t in "send 4096 100" "write 1048576 5" "read 1048576 5" "write 4194304 1" "read 4194304 1"; do
	set -- $t
	ctl test name=demo op=$1 size=$2 count=$3 || fail "test $t"
	wait_for 300 not_running $c/test_status
	st=$(cat $c/test_status)
	[ "$st" = passed ] && chk="every byte verified on both sides" || { chk="$st"; ok=0; }
	printf '  %-6s %10s %6s %10s %12s  %s\n' $1 $2 $3 "$(cat $c/test_usecs)" \
		"$(( $(cat $c/test_lat_avg_ns) / 1000 ))" "$chk" >>"$r"
done
{
	echo
	echo "Counters on A: sent $(cat $c/send_ops) msgs / $(cat $c/send_bytes) B," \
		"wrote $(cat $c/write_bytes) B, read $(cat $c/read_bytes) B, errors $(cat $c/errors)"
	[ $ok = 1 ] && echo "RESULT: PASS" || echo "RESULT: FAIL"
} >>"$r"
ctl disconnect name=demo
barrier finished
[ $ok = 1 ]
