#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 21: mixed traffic across two guests for KRDMA_SOAK_SECS seconds
# (default 120; make stress: 1800 on 6.12, over rxe and over siw), every
# byte verified.  B listens and exports a memory-backed null_blk; A makes
# three connections to B and maps the export (2 queues).  Then, all at
# once until the time is up:
# - on A's c1 and c2, self-tests one after another (the control file's
#   `test`, which compares every byte and checks each message's sequence
#   number): every operation the device has (messages, RDMA WRITE and
#   READ; atomics and write-with-immediate over rxe), 1 to 4 SGEs, sizes
#   drawn from 1 B to 256 KiB;
# - on B, the same on l1.2 (A's c3), started by the accepting side, so
#   that its one-sided operations go the other way;
# - fio verify on A's map in a loop (random writes of 512 B to 256 KiB at
#   depth 8, then random reads and writes mixed with verify_backlog;
#   crc32c).
# Every self-test passes, every fio run exits 0 with 0 errors, no
# connection counts an error.  The map's sessions may reconnect: between
# two CPU-starved TCG guests rxe now and then runs out of retries on a
# live peer (3 times in 30 minutes over rxe, 2026-11-27), and krdma-blk is
# to ride that out with no error reaching fio; the log counts them, and
# every session must be connected again at the end.
# Then everything is torn down on both sides (no connection, listener or
# session left; krdma_blk unloads) and the suite's dmesg scan finds no
# splat.  Logs the totals: self-tests, their operations and bytes; fio
# runs and the bytes they wrote and verified.
# The two guests' link should lose nothing (KRDMA_NET=stream, which make
# stress sets; the log says which it was): over the lab's UDP link a
# busy qemu drops frames past its socket buffer, and under this load
# rxe's go-back-N then ran out of retries on live peers (10 session
# reconnects in 120 s) and hit its own READ retry bug (README, known rxe
# bugs), neither of them krdma's.
# Not in make check (the empty check-kernel); make stress runs it, and
# `KRDMA_STRESS=1 KRDMA_NET=stream tools/check --kernels 6.12 --topos pair
# --tests soak` its two minutes' form.
# topo: pair
# dev: rxe siw
# kernel: 6.12 6.1
# check-kernel:
# alone: yes
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need

PORT=7500
BPORT=7501
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/soak
secs=${KRDMA_SOAK_SECS:-120}
fio_size=${KRDMA_BLK_FIO_SIZE:-8M}
pids=()

# Up to 256 KiB: with 1 MiB transfers from both sides and fio at once,
# rxe between two TCG guests ran out of transport retries ("transport
# retry counter exceeded", its go-back-N starved for 3.8 s) and ended
# connections; a soak is about time, not peak load.
sizes=(1 100 4095 4096 4097 65536 200001 256K)
ops=all
# selftest_loop CONN: self-tests on CONN until $W/stop, each with an
# operation set, a size and an SGE count drawn at random; the totals go to
# $W/CONN.sum ("rounds ops bytes"), the first failure to $W/CONN.fail.
selftest_loop() {
	local c=$1 d=$KRDMA_SYS/conns/$1 n=0 o=0 b=0 size sge st
	(
		while [ ! -e "$W/stop" ]; do
			size=${sizes[$((RANDOM % ${#sizes[@]}))]}
			sge=$((RANDOM % 4 + 1))
			[ "$size" = 1 ] && sge=1
			if ! ctl test name="$c" op="$ops" size="$size" sge="$sge" count=4; then
				echo "round $n: test name=$c op=$ops size=$size sge=$sge refused" >"$W/$c.fail"
				exit 1
			fi
			within 300 not_running "$d/test_status" ||
				{ echo "round $n: still running after 300 s" >"$W/$c.fail"; exit 1; }
			st=$(cat "$d/test_status")
			if [ "$st" != passed ]; then
				echo "round $n (size=$size sge=$sge): $st" >"$W/$c.fail"
				exit 1
			fi
			n=$((n + 1))
			o=$((o + $(cat "$d/test_ops")))
			b=$((b + $(cat "$d/test_bytes")))
			echo "$n $o $b" >"$W/$c.sum"
		done
	) &
	pids+=($!)
}
# loops_check CONN...: every loop ended well; n, o and b are their
# rounds, operations and bytes summed.  (Not in $(...): it waits for the
# loops, and fail must end the test.)
loops_check() {
	local p c rc=0 r1 r2 r3
	for p in "${pids[@]}"; do
		wait "$p" || rc=1
	done
	pids=()
	n=0 o=0 b=0
	for c in "$@"; do
		[ ! -e "$W/$c.fail" ] || fail "self-tests on $c: $(cat "$W/$c.fail")"
		[ -e "$W/$c.sum" ] || fail "no self-test on $c finished"
		read -r r1 r2 r3 <"$W/$c.sum"
		n=$((n + r1)) o=$((o + r2)) b=$((b + r3))
		expect_eq "$(cat "$KRDMA_SYS/conns/$c/errors")" 0 "$c errors"
	done
	[ $rc = 0 ] || fail "a self-test loop failed"
}
rdma_dev_up
krdma_load
rm -rf "$W"
mkdir -p "$W"

# ---- B: listener, export, self-tests from the accepting side --------------
if [ "$ROLE" = B ]; then
	cleanup() {
		set +e
		touch "$W/stop"
		for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
		[ -w "$BLK_CTL" ] && echo "unexport name=e0" >"$BLK_CTL" 2>/dev/null
		ctl unlisten name=l1 2>/dev/null
		blk_unload
		put_val B-done 1
	}
	trap cleanup EXIT
	blk_serve_e0 $MY_IP:$BPORT
	ctl listen name=l1 addr=$MY_IP:$PORT || fail "listen"
	put_val ready 1
	wait_val 120 connected
	wait_for 10 test -e $KRDMA_SYS/conns/l1.2/test_status || fail "no l1.2"
	selftest_loop l1.2
	wait_val $((secs + 600)) a-stopped
	touch "$W/stop"
	loops_check l1.2
	[ "$n" -ge 1 ] || fail "no self-test from the accepting side finished"
	log "B: $n self-tests on l1.2 from the accepting side, $o operations, $b bytes"
	put_val b-sum "$n $o $b"
	wait_val 300 a-closed
	blk "unexport name=e0" || fail "unexport"
	ctl unlisten name=l1 || fail "unlisten"
	wait_for 30 sysfs_empty $KRDMA_SYS/conns ||
		fail "connections left on B: $(ls $KRDMA_SYS/conns)"
	sysfs_empty $KRDMA_SYS/listeners || fail "listeners left on B"
	rmmod krdma_blk || fail "rmmod krdma_blk"
	put_val b-clean 1
	exit 0
fi

# ---- A: connections, map, traffic ------------------------------------------
cleanup() {
	set +e
	touch "$W/stop"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	[ -w "$BLK_CTL" ] && echo "unmap name=krdmablk0" >"$BLK_CTL" 2>/dev/null
	for c in c1 c2 c3; do ctl disconnect name=$c 2>/dev/null; done
	lsmod | grep -q '^krdma_blk ' && rmmod krdma_blk
	rm -rf "$W"
	put_val A-done 1
}
trap cleanup EXIT
insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
wait_val 120 ready
for c in c1 c2 c3; do
	ctl connect name=$c addr=$PEER_IP:$PORT || fail "connect $c"
done
put_val connected 1
blk map name=krdmablk0 addr=$PEER_IP:$BPORT export=e0 queues=2 || fail "map"
wait_for 10 test -b "$D" || fail "$D never appeared"
S=$KRDMA_SYS/sessions
rc0=$(sess_sum reconnects) || fail "the sessions' reconnects"

log "soak: $secs s of self-tests on c1 and c2 (B: on l1.2) and fio verify on $D (link: ${KRDMA_NET:-udp})"
selftest_loop c1
selftest_loop c2
fio_loop "$fio_size" 256k 8
fpid=$bgpid
end=$((SECONDS + secs))
while [ $SECONDS -lt "$end" ]; do
	kill -0 "$fpid" 2>/dev/null ||
		{ cat "$W/fio-loop.log"; fail "fio verify ended after $(cat "$W/fio-runs" 2>/dev/null || echo 0) runs"; }
	for c in c1 c2; do
		[ ! -e "$W/$c.fail" ] || fail "self-tests on $c: $(cat "$W/$c.fail")"
	done
	sleep 5
done
touch "$W/stop"
put_val a-stopped 1
wait "$fpid"
rc=$?
[ $rc = 0 ] || { cat "$W/fio-loop.log"; fail "fio verify: $(grep -m1 '^FAIL:' "$W/fio-loop.log")"; }
runs=$(cat "$W/fio-runs" 2>/dev/null || echo 0)
[ "$runs" -ge 1 ] || fail "no fio verify run finished in $secs s"
loops_check c1 c2
[ "$n" -ge 2 ] || fail "only $n self-tests finished in $secs s"
within 60 sess_all_connected || fail "sessions not connected at the end: $(grep . "$S"/*/state | paste -sd ' ')"
rcn=$(( $(sess_sum reconnects) - rc0 ))
wait_val 600 b-sum
fio_mib=$(( runs * 2 * ${fio_size%M} ))
log "A: $n self-tests on c1 and c2, $o operations, $b bytes; B: $VAL (self-tests, operations, bytes)"
log "A: $runs fio verify runs, $fio_mib MiB written and verified through $D; its sessions reconnected $rcn times"

blk "unmap name=krdmablk0" || fail "unmap"
for c in c1 c2 c3; do
	ctl disconnect name=$c || fail "disconnect $c"
done
wait_for 30 sysfs_empty $S || fail "sessions left on A: $(ls $S)"
wait_for 30 sysfs_empty $KRDMA_SYS/conns || fail "connections left on A: $(ls $KRDMA_SYS/conns)"
rmmod krdma_blk || fail "rmmod krdma_blk"
put_val a-closed 1
wait_val 120 b-clean
echo PASS
