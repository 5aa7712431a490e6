#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The scatter-gather section of `make bench` (tools/bench --sections sg),
# issue #20: the homework of the seeds' RC examples.  Over rxe loopback in
# one guest, krdma's bench sends N blocks of B bytes that lie 2 * B apart
# in memory as one message (op=send) or one RDMA WRITE (op=write), two
# ways in turn:
#   gather  pack=0: the work request carries the N blocks as N SGEs (a
#           send of more elements than the QP gathers is copied by krdma
#           into its send buffer instead; a message that fits the QP's
#           inline data is copied by the device while it is posted);
#   pack    pack=1: the CPU copies the N blocks into one buffer of the
#           operation first, which goes out as one SGE; the copy is part
#           of each operation's time.
#   KRDMA_BENCH_SG_SIZES  block sizes B (default "64 256 1024 4096 16384")
#   KRDMA_BENCH_SG_N      block counts N (default "1 4 16")
#   KRDMA_BENCH_SG_OPS    (default "send write")
#   KRDMA_BENCH_SG_SECS   seconds per cell (default 2)
#   KRDMA_BENCH_DEPTH     operations in flight (default 32)
# Writes "sg_OP B N gather|pack msg_rate|bw_mibs VALUE" lines (tab
# separated) to $LAB/bench-sg.tsv, and the connection's max_send_sge and
# max_inline as "info" lines; tools/bench-report.py makes the table.
export TOPO=single DEV=rxe ROLE=${GUEST:-A} TEST_ID=bench-sg
export PEER_IP=$MY_IP
. "$(dirname "$0")/lib.sh"

sizes=${KRDMA_BENCH_SG_SIZES:-64 256 1024 4096 16384}
counts=${KRDMA_BENCH_SG_N:-1 4 16}
ops=${KRDMA_BENCH_SG_OPS:-send write}
secs=${KRDMA_BENCH_SG_SECS:-2}
depth=${KRDMA_BENCH_DEPTH:-32}
out=$LAB/bench-sg.tsv
logs=$LAB/bench-logs
mkdir -p "$logs"
: >"$out"
rec() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$out"; }

rdma_dev_up
KRDMA_DMA_CHECK=0 krdma_load
ctl listen name=sgl addr=$MY_IP:7190 depth=$depth msg=1M || fail "listen"
ctl connect name=sg addr=$PEER_IP:7190 depth=$depth msg=1M || fail "connect"
c=$KRDMA_SYS/conns/sg
rec info 0 0 krdma max_send_sge "$(cat $c/max_send_sge)"
rec info 0 0 krdma max_inline "$(cat $c/max_inline)"

r=0
for op in $ops; do
	for b in $sizes; do
		for n in $counts; do
			for pack in 0 1; do
				mode=$([ $pack = 1 ] && echo pack || echo gather)
				args="op=$op size=$b sge=$n stride=$((2 * b)) pack=$pack secs=$secs"
				if ! ctl bench name=sg $args; then
					echo "bench $args: refused" >>"$logs/krdma-sg.log"
					r=1
					continue
				fi
				wait_for $((secs + 120)) not_running $c/bench_status
				st=$(cat $c/bench_status)
				echo "== bench $args: $st msg_rate=$(cat $c/bench_msg_rate) bw_mbps=$(cat $c/bench_bw_mbps)" \
					>>"$logs/krdma-sg.log"
				if [ "$st" != passed ]; then
					r=1
					continue
				fi
				rec "sg_$op" "$b" "$n" "$mode" msg_rate "$(cat $c/bench_msg_rate)"
				rec "sg_$op" "$b" "$n" "$mode" bw_mibs "$(cat $c/bench_bw_mbps)"
			done
		done
	done
done
expect_eq "$(cat $c/errors)" 0 "krdma errors on sg"
ctl disconnect name=sg
ctl unlisten name=sgl
exit $r
