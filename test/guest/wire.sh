#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# No kernel address on the wire.  A captures every frame of its NIC
# (test/wire-sniff.py, an AF_PACKET socket) while the two guests run
# every kind of one-sided operation at each other: A's self-test (WRITE,
# READ, SEND; multi-SGE; atomics and WRITE with immediate over rxe),
# then B's (the accepting side's), then krdma-blk (B exports a null_blk,
# A writes 1 MiB through the map, which B's server fetches with RDMA READs
# into its bio's pages, and reads it back).  Every address the frames
# carry (RoCE: each RETH and AtomicETH; iWARP: each tagged segment's TO
# and each READ request's sink and source TO) must be an I/O virtual
# address of krdma's (a random page number below 2^32 and the offset in
# its page: below 2^44), never a kernel address: on rxe and siw a DMA
# address is the buffer's kernel virtual address.  The capture must have
# lost nothing and read every MPA stream to its end, and must hold at
# least as many addresses of each kind as the operations made.  Planted
# (2026-11-30): on the code before krdma_rw.c moved iWARP READ sinks to a
# random address, siw's READ requests carried kernel addresses.
# make check runs it over siw, where that was (a token's address is
# apitest's token_addr too); make stress over rxe as well, and on 6.1.
# topo: pair
# dev: rxe siw
# kernel: 6.1 6.12
# check-kernel: 6.12
# check-dev: siw
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

PORT=7540
BPORT=7541
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/wire

run_test() {	# run_test CONN ARGS...
	local c=$KRDMA_SYS/conns/$1 st

	ctl test name="$@" || fail "test on $*"
	wait_for 300 not_running $c/test_status
	read -r st <$c/test_status
	[ "$st" = passed ] || fail "test on $*: $st"
}

blk_need
rdma_dev_up
krdma_load
mkdir -p "$W"

if [ "$ROLE" = B ]; then
	cleanup() {
		set +e
		[ -w "$BLK_CTL" ] && echo "unexport name=e0" >"$BLK_CTL" 2>/dev/null
		blk_unload
		put_val B-done 1
	}
	trap cleanup EXIT
	blk_serve_e0 $MY_IP:$BPORT
	ctl listen name=wl addr=$MY_IP:$PORT || fail "listen"
	put_val listening 1
	wait_val 300 a-tested
	wait_for 10 test -e $KRDMA_SYS/conns/wl.0/test_status || fail "no wl.0"
	# The accepting side's one-sided operations, into A's memory.
	run_test wl.0 op=write,read size=65536 count=2
	run_test wl.0 op=write,read size=20001 sge=3 count=1
	[ "$DEV" = rxe ] && run_test wl.0 op=atomic count=2
	put_val b-tested 1
	wait_val 300 a-done
	ctl unlisten name=wl || fail "unlisten"
	exit 0
fi

sniff_pid=
cleanup() {
	set +e
	[ -n "$sniff_pid" ] && kill "$sniff_pid" 2>/dev/null
	[ -w "$BLK_CTL" ] && echo "unmap name=krdmablk0" >"$BLK_CTL" 2>/dev/null
	blk_unload
}
trap cleanup EXIT
insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
wait_val 120 listening
out=$W/addrs
/usr/bin/python3 "$(dirname "$0")/../wire-sniff.py" eth0 "$out" &
sniff_pid=$!
wait_for 30 test -e "$out.ready" || fail "the capture did not start"

ctl connect name=w1 addr=$PEER_IP:$PORT || fail "connect"
run_test w1 op=all size=4097 count=2
run_test w1 op=write,read size=65536 count=2
run_test w1 op=write,read size=20001 sge=3 count=1
if [ "$DEV" = rxe ]; then
	run_test w1 op=atomic count=2
	run_test w1 op=imm size=8192 count=2
fi
put_val a-tested 1
wait_val 300 b-tested

blk map name=krdmablk0 addr=$PEER_IP:$BPORT export=e0 queues=1 || fail "map"
wait_for 10 test -b "$D" || fail "$D never appeared"
head -c 1M /dev/urandom >"$W/rand" || fail "random data"
dd if="$W/rand" of="$D" bs=1M oflag=direct status=none || fail "dd to $D"
dd if="$D" of="$W/back" bs=1M count=1 iflag=direct status=none || fail "dd from $D"
cmp "$W/rand" "$W/back" || fail "what was read back through $D differs"
blk unmap name=krdmablk0 || fail "unmap"
ctl disconnect name=w1 || fail "disconnect"
put_val a-done 1

kill -TERM "$sniff_pid"
wait "$sniff_pid"
rc=$?
sniff_pid=
[ $rc = 0 ] || fail "wire-sniff.py exited with $rc"
[ -f "$out" ] || fail "wire-sniff.py wrote no $out"
declare -A n=()
while read -r k v _; do
	[ "$k" = addr ] || n[$k]=$v
done <"$out"
log "captured: $(grep -v '^addr ' "$out" | paste -sd ' ')"
expect_eq "${n[dropped]}" 0 "frames the capture dropped"
# How many of each kind the operations above must have put on the wire at
# the least (each transfer in its first frame; more when split).
if [ "$DEV" = rxe ]; then
	# WRITEs and READs: 2 x 2 (op=all) + 2 x 2 + 2 (sge=3) by A, 2 x 2
	# + 2 by B, 2 with immediate; the server's for 1 MiB; atomics 2 + 2
	# (op=all holds no atomic).
	[ "${n[roce-reth]}" -ge 20 ] || fail "only ${n[roce-reth]} RETHs seen"
	[ "${n[roce-atomic]}" -ge 4 ] || fail "only ${n[roce-atomic]} AtomicETHs seen"
else
	[ "${n[mpa-streams]}" -ge 4 ] || fail "only ${n[mpa-streams]} MPA streams seen (two connections)"
	expect_eq "${n[unparsed]}" 0 "MPA streams that could not be read to their end"
	# READs: 2 (op=all) + 2 + 1 by A, 2 + 1 by B, and the server's.
	[ "${n[iwarp-sink]}" -ge 9 ] || fail "only ${n[iwarp-sink]} READ requests seen"
	[ "${n[iwarp-tagged]}" -ge 18 ] || fail "only ${n[iwarp-tagged]} tagged segments seen"
fi
# Every address below 2^44 (as 16 hex digits: the first five are 0).
bad=$(grep '^addr ' "$out" | grep -v ' 0x00000' | head -n 5)
if [ -n "$bad" ]; then
	# The kernel's half: 0xffff... with 4-level page tables, 0xff1...
	# with 5 (qemu's CPU has LA57).
	kern=$(grep '^addr ' "$out" | grep -c ' 0xff')
	fail "addresses on the wire that are not krdma's I/O virtual addresses ($kern of them kernel addresses): $(paste -sd ';' <<<"$bad")"
fi
wait_val 120 B-done
