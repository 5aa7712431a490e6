#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The benchmark engine works: "bench" of each operation at 4 KiB with a
# small count over loopback ends "passed" with ops == count, bytes ==
# count * size and min <= p50 <= p99 <= max; the secs= form, the grammar's
# refusals and EBUSY; sge= gathered and packed, with the bytes each
# operation carried and the sends that went out without a copy; fadd and
# cas with every result checked (refused on siw, which has no atomics);
# imm, whose notices the peer must have counted, in order (refused on
# siw: iWARP has no immediate data).  No rate is checked: a slow machine
# never fails it.
# Not on the debug kernel: the engine's own paths (the rdma_rw and send
# paths it drives) run there under the self-test and apitest already, and
# this would add minutes of a KASAN guest.
# topo: single
# dev: rxe siw
# kernel: 6.1 6.12
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
ctl listen name=l1 addr=$MY_IP:7090 || fail "listen"
ctl connect name=c1 addr=$PEER_IP:7090 || fail "connect"
c=$KRDMA_SYS/conns/c1
expect_eq "$(<$c/bench_status)" idle "bench_status before any bench"

bench_done() {	# bench_done WHAT: wait for the bench to end, check it passed
	wait_for 240 not_running $c/bench_status ||
		fail "$1: still running after 240 s"
	expect_eq "$(<$c/bench_status)" passed "$1: bench_status"
}

check_lat() {	# check_lat WHAT: latencies present and ordered
	local min p50 p99 max
	min=$(<$c/bench_lat_min_ns) p50=$(<$c/bench_lat_p50_ns)
	p99=$(<$c/bench_lat_p99_ns) max=$(<$c/bench_lat_max_ns)
	[ "$min" -gt 0 ] && [ "$min" -le "$p50" ] && [ "$p50" -le "$p99" ] &&
		[ "$p99" -le "$max" ] ||
		fail "$1: latencies not ordered: min $min p50 $p50 p99 $p99 max $max"
}

count=40 size=4096
for op in write read send; do
	ctl bench name=c1 op=$op size=4K count=$count || fail "bench op=$op"
	bench_done "$op"
	expect_eq "$(<$c/bench_ops)" $count "$op: bench_ops"
	expect_eq "$(<$c/bench_bytes)" $((count * size)) "$op: bench_bytes"
	[ "$(<$c/bench_usecs)" -gt 0 ] || fail "$op: bench_usecs is 0"
	[ "$(<$c/bench_msg_rate)" -gt 0 ] || fail "$op: bench_msg_rate is 0"
	grep -qE '^[0-9]+\.[0-9]{2}$' $c/bench_bw_mbps || fail "$op: bench_bw_mbps '$(<$c/bench_bw_mbps)'"
	check_lat "$op"
	log "$op 4K x$count: $(<$c/bench_usecs) us, $(<$c/bench_bw_mbps) MiB/s," \
		"$(<$c/bench_msg_rate) op/s, p50 $(<$c/bench_lat_p50_ns) ns"
done

# One operation in flight, and the secs= form.
ctl bench name=c1 op=write size=64 depth=1 count=10 || fail "bench depth=1"
bench_done "write depth=1"
expect_eq "$(<$c/bench_ops)" 10 "depth=1: bench_ops"
check_lat "write depth=1"
ctl bench name=c1 op=send size=64 secs=1 || fail "bench secs=1"
expect_ctl_err EBUSY bench name=c1 op=read size=4K count=1
bench_done "send secs=1"
[ "$(<$c/bench_ops)" -gt 0 ] || fail "secs=1: no operation done"
expect_eq "$(<$c/bench_bytes)" $(( $(<$c/bench_ops) * 64 )) "secs=1: bench_bytes"
check_lat "send secs=1"

# The scatter-gather experiment (sge=, issue #20): N blocks of size bytes,
# stride apart, gathered by the work request (pack=0) or copied into one
# buffer first (pack=1).  Every operation carries N * size bytes; a gather
# send of no more elements than max_send_sge, past the inline size, goes
# out without a copy (send_zcopy counts it), and so does a packed one.
max_sge=$(<$c/max_send_sge)
zc() { cat $c/send_zcopy; }
for op in send write; do
	for pack in 0 1; do
		n=4 bs=1024 cnt=30
		[ "$max_sge" -ge $n ] || n=$max_sge
		z0=$(zc)
		ctl bench name=c1 op=$op size=$bs sge=$n stride=3000 pack=$pack count=$cnt ||
			fail "bench op=$op sge=$n pack=$pack"
		bench_done "$op sge=$n pack=$pack"
		expect_eq "$(<$c/bench_ops)" $cnt "$op sge=$n pack=$pack: bench_ops"
		expect_eq "$(<$c/bench_bytes)" $((cnt * n * bs)) "$op sge=$n pack=$pack: bench_bytes"
		check_lat "$op sge=$n pack=$pack"
		[ $op = write ] ||
			expect_eq $(( $(zc) - z0 )) $cnt "$op sge=$n pack=$pack: sends without a copy"
	done
done
# More elements than the device gathers: the send is copied, and passes.
ctl bench name=c1 op=send size=64 sge=$((max_sge + 2)) stride=4096 count=20 ||
	fail "bench send sge=max+2"
bench_done "send sge=max_send_sge+2"
expect_eq "$(<$c/bench_bytes)" $((20 * 64 * (max_sge + 2))) "send sge=max+2: bench_bytes"
log "sge: send and write of 4 x 1 KiB gathered and packed, send of $((max_sge + 2)) x 64 B"

# The atomics (issue #20's matrix).  Each fadd adds 1 and each cas swaps
# in one more than it compares with, so the k-th operation finds the word
# at its start value + k: the bench checks every old value and ends
# "failed: N results wrong" otherwise.  siw has no atomics: refused.
for op in fadd cas; do
	if [ "$DEV" = siw ]; then
		expect_ctl_err EOPNOTSUPP bench name=c1 op=$op size=8 count=10
		dmesg_new | grep -q "bench: c1: siw0 has no atomics" ||
			fail "$op on siw: no dmesg line naming it"
		continue
	fi
	ctl bench name=c1 op=$op size=8 count=200 depth=16 || fail "bench op=$op"
	bench_done "$op"
	expect_eq "$(<$c/bench_ops)" 200 "$op: bench_ops"
	expect_eq "$(<$c/bench_bytes)" $((200 * 8)) "$op: bench_bytes"
	check_lat "$op"
	log "$op x200: $(<$c/bench_msg_rate) op/s, p50 $(<$c/bench_lat_p50_ns) ns"
done

# Write-with-immediate (issue #20's matrix): a WRITE and a notice per
# operation, or with size=0 the notice alone.  The peer's service counts
# the notices and checks their order; the bench ends "failed: the peer
# took N notices, M completed" unless it took every one.
if [ "$DEV" = siw ]; then
	expect_ctl_err EOPNOTSUPP bench name=c1 op=imm size=4K count=10
	dmesg_new | grep -q "bench: c1: siw0 has no immediate data (iWARP)" ||
		fail "imm on siw: no dmesg line naming it"
else
	for size in 4096 0; do
		ctl bench name=c1 op=imm size=$size count=200 depth=16 ||
			fail "bench op=imm size=$size"
		bench_done "imm size=$size"
		expect_eq "$(<$c/bench_ops)" 200 "imm size=$size: bench_ops"
		expect_eq "$(<$c/bench_bytes)" $((200 * size)) "imm size=$size: bench_bytes"
		check_lat "imm size=$size"
		log "imm $size B x200: $(<$c/bench_msg_rate) op/s, p50 $(<$c/bench_lat_p50_ns) ns"
	done
	! dmesg_new | grep -q "bench notice .* came where" ||
		fail "imm: the peer saw a notice out of order"
fi
expect_ctl_err EINVAL bench name=c1 op=imm size=64 batch=2
expect_ctl_err EINVAL bench name=c1 op=imm size=64 sge=2

# Refusals: nothing starts.
expect_ctl_err EINVAL bench name=c1 op=write,read size=4K
expect_ctl_err EINVAL bench name=c1 op=atomic size=8
expect_ctl_err EINVAL bench name=c1 op=fadd size=16
expect_ctl_err EINVAL bench name=c1 op=cas size=8 batch=2
expect_ctl_err EINVAL bench name=c1 op=write
expect_ctl_err EINVAL bench name=c1 op=write size=4K count=5 secs=1
expect_ctl_err EINVAL bench name=c1 op=read size=0
expect_ctl_err EINVAL bench name=c1 op=read size=64 sge=2
expect_ctl_err EINVAL bench name=c1 op=send size=64 sge=2 stride=32
expect_ctl_err EINVAL bench name=c1 op=send size=64 pack=1
expect_ctl_err EMSGSIZE bench name=c1 op=send size=$(( $(<$c/max_msg_size) / 2 + 1 )) sge=2
expect_ctl_err ENOENT bench name=nosuch op=send size=64
expect_ctl_err EMSGSIZE bench name=c1 op=send size=$(( $(<$c/max_msg_size) + 1 ))
expect_eq "$(<$c/bench_status)" passed "bench_status after refusals"

# The bench gave the self-test's peer protocol back: the self-test runs.
ctl test name=c1 op=write,read size=4096 count=2 || fail "self-test after bench"
wait_for 120 not_running $c/test_status
expect_eq "$(<$c/test_status)" passed "self-test after bench"
expect_eq "$(<$c/errors)" 0 "errors"
ctl disconnect name=c1 || fail "disconnect"
ctl unlisten name=l1 || fail "unlisten"
