#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of `make bench` (tools/bench): krdma's in-kernel bench and
# perftest back to back on the same rxe device, in one boot, cell by cell
# (krdma first, then perftest with the same size and depth).
#   KRDMA_BENCH_TOPO   single: loopback in one guest; pair: guest A -> guest B
#   KRDMA_BENCH_SIZES  message sizes in bytes (default "64 4096 65536 1048576")
#   KRDMA_BENCH_SECS   seconds per bandwidth run (default 2)
#   KRDMA_BENCH_LAT_N  operations per latency run at 64 B (default 300; fewer
#                      for large sizes)
#   KRDMA_BENCH_DEPTH  operations in flight in bandwidth runs, both tools (32)
#   KRDMA_BENCH_OPS    which operations (default "write read send imm
#                      fadd cas"; imm, a WRITE and its write-with-immediate
#                      notice, against ib_write_{bw,lat}: perftest 4.5 has
#                      no write-with-immediate; the atomics run at 8 B only,
#                      against ib_atomic_{bw,lat} -A FETCH_AND_ADD|CMP_AND_SWAP)
#   KRDMA_BENCH_POLL   1 (default): krdma runs each cell twice, on an
#                      interrupt-driven connection and on a polled one
#                      (poll=1, issue #20); 0: the first only
# Guest A writes "test size tool metric value" lines (tab separated) to
# $LAB/bench.tsv, and the two tools' raw output to $LAB/bench-logs/.
export TOPO=${KRDMA_BENCH_TOPO:-single} DEV=rxe ROLE=$GUEST TEST_ID=bench
[ "$TOPO" = single ] && export PEER_IP=$MY_IP
. "$(dirname "$0")/lib.sh"

sizes=${KRDMA_BENCH_SIZES:-64 4096 65536 1048576}
secs=${KRDMA_BENCH_SECS:-2}
lat_n=${KRDMA_BENCH_LAT_N:-300}
depth=${KRDMA_BENCH_DEPTH:-32}
# Write and read bandwidth runs post this many at a time, one completion
# each batch (perftest signals one in 100 by default, --cq-mod).
batch=${KRDMA_BENCH_BATCH:-8}
ops=${KRDMA_BENCH_OPS:-write read send imm fadd cas}
poll=${KRDMA_BENCH_POLL:-1}
port0=7100
logs=$LAB/bench-logs
out=$LAB/bench.tsv
mkdir -p "$logs"

rdma_dev_up
modprobe ib_uverbs || fail "modprobe ib_uverbs"
# A bench measures krdma, not its test-only DMA check.
KRDMA_DMA_CHECK=0 krdma_load

# Latency runs: fewer operations for large sizes (TCG moves ~50 MB/s).
lat_count() {
	local n=$(( lat_n * 4096 / ($1 > 4096 ? $1 : 4096) ))
	[ $n -ge 20 ] && echo $n || echo 20
}

atomic() { [ "$1" = fadd ] || [ "$1" = cas ]; }

# The perftest runs, in order: both guests walk the same list.  An atomic
# works on 8 bytes: its cells are at that size only.
plan() {
	local kind s op
	for kind in bw lat; do
		for s in $sizes; do
			for op in $ops; do
				atomic $op || echo "$kind $op $s"
			done
		done
		for op in $ops; do
			! atomic $op || echo "$kind $op 8"
		done
	done
}

# perftest_args bw|lat OP SIZE PORT ITERS: both sides' command line.
perftest_args() {
	local a="-d $IBDEV -F -p $4 -s $3 -n $5" t=$2
	case $2 in
	imm) t=write ;;
	fadd) t=atomic a="-d $IBDEV -F -p $4 -n $5 -A FETCH_AND_ADD" ;;
	cas) t=atomic a="-d $IBDEV -F -p $4 -n $5 -A CMP_AND_SWAP" ;;
	esac
	if [ "$1" = bw ]; then
		echo "ib_${t}_bw $a -t $depth"
	else
		echo "ib_${t}_lat $a"
	fi
}

listening() { ss -Hltn "sport = :$1" | grep -q .; }

# The waits below use lib.sh's nap: a fork and exec costs the guest a lot
# under TCG and would steal from the bench that runs meanwhile.

# Guest B of the pair: krdma's service thread answers by itself; start each
# perftest server when A gets to it.
if [ "$TOPO" = pair ] && [ "$ROLE" = B ]; then
	ctl listen name=bench addr=$MY_IP:$port0 depth=$depth msg=1M || fail "listen"
	barrier listening
	i=0
	while read -r kind op size; do
		i=$((i + 1))
		port=$((18600 + i))
		# A says how many iterations (what krdma did in the same cell).
		t=9000
		while [ ! -e "$LAB/sync/$TEST_ID.val.iters$i" ] && [ $t -gt 0 ]; do
			t=$((t - 1))
			nap 0.1
		done
		n=$(get_val "iters$i")
		# shellcheck disable=SC2046
		timeout 300 $(perftest_args "$kind" "$op" "$size" $port "$n") \
			>"$logs/perftest-B-$i.log" 2>&1 &
		pid=$!
		wait_for 30 listening $port || echo "perftest server $i did not listen"
		barrier "pt$i" 900
		wait $pid
	done < <(plan)
	barrier finished 900
	exit 0
fi

: >"$out"
rec() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$out"; }

# The memory-copy reference of this guest.
if [ -x "$TOP/build/bench/bench-memcpy" ]; then
	rec memcpy 67108864 memcpy bw_mibs "$("$TOP/build/bench/bench-memcpy" 2)"
fi
rec info 0 guest cpus "$(nproc)"

[ "$TOPO" = single ] && { ctl listen name=bench addr=$MY_IP:$port0 depth=$depth msg=1M || fail "listen"; }
barrier listening
ctl connect name=b addr=$PEER_IP:$port0 depth=$depth msg=1M || fail "connect"
rec info 0 krdma queue_depth "$(cat $KRDMA_SYS/conns/b/queue_depth)"
rec info 0 krdma batch "$batch"
# The polled connection: its completions are reaped by the bench's own
# waits (krdma_wait_event_timeout()), never by the CQ pool's softirq.
modes="b:krdma"
if [ "$poll" = 1 ]; then
	ctl connect name=bp addr=$PEER_IP:$port0 depth=$depth msg=1M poll=1 ||
		fail "connect poll=1"
	expect_eq "$(cat $KRDMA_SYS/conns/bp/poll)" 1 "conns/bp/poll"
	modes+=" bp:krdma_poll"
fi

# kb CONN CELL ARGS...: one krdma bench on CONN; results in $c/bench_*.
kb() {
	local conn=$1 cell=$2 st t=$(( (secs + 300) * 5 ))
	shift 2
	c=$KRDMA_SYS/conns/$conn
	ctl bench name="$conn" "$@" || { echo "bench $conn $*: refused" >>"$logs/krdma.log"; return 1; }
	while read -r st <"$c/bench_status" && [ "$st" = running ] && [ $t -gt 0 ]; do
		t=$((t - 1))
		nap 0.2
	done
	{
		echo "== $cell: bench $conn $*: $st"
		for f in ops bytes usecs bw_mbps msg_rate lat_min_ns lat_p50_ns lat_p99_ns lat_max_ns; do
			printf '%s=%s ' $f "$(cat $c/bench_$f)"
		done
		echo
	} >>"$logs/krdma.log"
	[ "$st" = passed ]
}

us() { awk -v n="$1" 'BEGIN { printf "%.2f", n / 1000 }'; }

# pt I KIND OP SIZE ITERS: one perftest client run (its server on B, or here).
pt() {
	local i=$1 kind=$2 op=$3 size=$4 port=$((18600 + $1)) pid= log line
	local args
	args=$(perftest_args "$kind" "$op" "$size" $port "$5")
	[ "$TOPO" = pair ] && put_val "iters$i" "$5"
	if [ "$TOPO" = single ]; then
		# shellcheck disable=SC2086
		timeout 300 $args >"$logs/perftest-server-$i.log" 2>&1 &
		pid=$!
		wait_for 30 listening $port
	fi
	barrier "pt$i" 900
	log=$logs/perftest-$i-$kind-$op-$size.log
	# shellcheck disable=SC2086
	timeout 300 $args "$PEER_IP" >"$log" 2>&1
	[ -n "$pid" ] && wait $pid
	line=$(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/ { print; exit }' "$log")
	[ -n "$line" ] || { echo "perftest $args: no result" >>"$logs/krdma.log"; return 1; }
	set -- $line
	if [ "$kind" = bw ]; then
		rec "${op}_bw" "$size" perftest bw_mibs "$4"
		rec "${op}_bw" "$size" perftest msg_rate "$(awk -v m="$5" 'BEGIN { printf "%.0f", m * 1e6 }')"
	else
		rec "${op}_lat" "$size" perftest p50_us "$5"
		rec "${op}_lat" "$size" perftest p99_us "$8"
	fi
}

# Bandwidth: krdma runs for $secs, perftest then does as many operations
# (both report the rate from the first post to the last completion).
# Latency: both do the same number of operations, one at a time.
# perftest does as many as the interrupt-driven krdma run did.
i=0
while read -r kind op size; do
	i=$((i + 1))
	n=
	for m in $modes; do
		conn=${m%%:*} tool=${m#*:}
		if [ "$kind" = bw ]; then
			b=
			[ "$op" = send ] || [ "$op" = imm ] || atomic $op ||
				b=batch=$batch
			if kb "$conn" "$op-bw-$size" op=$op size=$size secs=$secs $b; then
				rec "${op}_bw" "$size" "$tool" bw_mibs "$(cat $c/bench_bw_mbps)"
				rec "${op}_bw" "$size" "$tool" msg_rate "$(cat $c/bench_msg_rate)"
				[ -n "$n" ] || n=$(cat $c/bench_ops)
			fi
		else
			[ -n "$n" ] || n=$(lat_count "$size")
			if kb "$conn" "$op-lat-$size" op=$op size=$size depth=1 count=$n; then
				rec "${op}_lat" "$size" "$tool" p50_us "$(us "$(cat $c/bench_lat_p50_ns)")"
				rec "${op}_lat" "$size" "$tool" p99_us "$(us "$(cat $c/bench_lat_p99_ns)")"
			fi
		fi
	done
	[ "$kind" = lat ] || [ "${n:-0}" -ge 5 ] || n=5
	[ -n "$n" ] || n=$(lat_count "$size")
	pt $i "$kind" "$op" "$size" "$n"
done < <(plan)

for m in $modes; do
	expect_eq "$(cat "$KRDMA_SYS/conns/${m%%:*}/errors")" 0 "krdma errors on ${m%%:*}"
	ctl disconnect name="${m%%:*}"
done
barrier finished 900
exit 0
