#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# What the krdma-blk tests share (test/guest/blk.sh, one guest;
# test/guest/blk-pair.sh, two): sourced after test/lib.sh, with D (the
# mapped device) and W (a work directory) set by the test.

BLK_CTL=/sys/kernel/krdma_blk/control

KRDMA_BLK_KO=$BUILD/blk/krdma_blk.ko

# What every krdma-blk test needs: a block layer (else SKIP), the module
# and fio.
blk_need() {
	[ -d /sys/block ] || skip "no block layer in this kernel (CONFIG_BLOCK=n)"
	[ -f "$KRDMA_BLK_KO" ] || fail "$KRDMA_BLK_KO not built"
	command -v fio >/dev/null || fail "fio not installed (tools/lab-setup.sh)"
}

# One guest's start: the RDMA device, krdma, a null_blk completing in
# softirq ($NB) and krdma_blk.
blk_start() {
	rdma_dev_up
	krdma_load
	nullb_load 1
	insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
}

# The end of a cleanup: krdma_blk and null_blk unloaded, $W gone.
blk_unload() {
	lsmod | grep -q '^krdma_blk ' && rmmod krdma_blk
	lsmod | grep -q '^null_blk ' && rmmod null_blk
	rm -rf "$W"
}

# blk_cleanup_e0: the EXIT trap of a test with one map (krdmablk0) of one
# export (e0): both gone, then blk_unload.
blk_cleanup_e0() {
	set +e
	if [ -w "$BLK_CTL" ]; then
		echo "unmap name=krdmablk0" >"$BLK_CTL" 2>/dev/null
		echo "unexport name=e0" >"$BLK_CTL" 2>/dev/null
	fi
	blk_unload
}

# nullb_load IRQMODE: a fresh 1 GiB memory-backed null_blk, $NB, whose
# requests complete in softirq (1) or, from a timer, in hardirq context (2).
nullb_load() {
	lsmod | grep -q '^null_blk ' && rmmod null_blk
	modprobe null_blk queue_mode=2 irqmode="$1" memory_backed=1 gb=1 nr_devices=1 ||
		fail "modprobe null_blk irqmode=$1"
	wait_for 10 test -b "$NB" || fail "$NB never appeared"
}

# blk_serve_e0 ADDR: a fresh null_blk ($NB) exported as e0 at ADDR by a
# krdma_blk loaded for it (the server guest of a two-guest test).
blk_serve_e0() {
	nullb_load 1
	insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
	blk export name=e0 path=$NB addr="$1" || fail "export e0"
}

# blk CMD...: one command to krdma-blk's control file; write's status.
blk() { echo "$*" >"$BLK_CTL"; }

# blk_dd_check OFF FLAG MB [BACKING]: MB MiB of $W/rand written to $D at
# OFF MiB with dd's FLAG (oflag=direct, conv=fsync), read back with
# O_DIRECT and compared byte for byte; with BACKING (the exported device,
# in one guest), read from it too and compared.
blk_dd_check() {
	local off=$1 fl=$2 mb=$3 nb=${4:-}
	dd if="$W/rand" of="$D" bs=1M seek="$off" "$fl" status=none ||
		fail "dd to $D at ${off}M ($fl)"
	dd if="$D" of="$W/back" bs=1M skip="$off" count="$mb" iflag=direct status=none ||
		fail "dd from $D at ${off}M"
	cmp "$W/rand" "$W/back" || fail "data read back at ${off}M ($fl) differs"
	[ -n "$nb" ] || return 0
	dd if="$nb" of="$W/nb" bs=1M skip="$off" count="$mb" iflag=direct status=none ||
		fail "dd from $nb"
	cmp "$W/rand" "$W/nb" || fail "$nb at ${off}M ($fl) differs"
}

# fio_verify SIZE [MAXBS] [JOBS] [DEPTH] [RW]: JOBS (2) jobs of random
# writes of 512 B to MAXBS (1M) at DEPTH (16), then every block read back
# and checked (crc32c); no error, no complaint.  RW randrw: reads and
# writes mixed, each write read back and checked while the job runs
# (verify_backlog), 4 KiB blocks.  FIO_ENGINE: fio's engine options
# (default --ioengine=libaio; blk-poll.sh: io_uring with --hipri).
fio_verify() {
	local rc errs rw=${5:-randwrite} bs=(--bsrange=512-"${2:-1M}" --bs_unaligned=0)
	[ "$rw" = randrw ] && bs=(--bs=4k --verify_backlog=64)
	(cd "$W" && fio --name=blkverify --filename="$D" --direct=1 ${FIO_ENGINE:---ioengine=libaio} \
		--rw="$rw" "${bs[@]}" --iodepth="${4:-16}" --numjobs="${3:-2}" \
		--size="$1" --offset_increment="$1" --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --verify_state_save=0 --group_reporting \
		--output-format=terse --terse-version=3 >"$W/fio.out" 2>"$W/fio.err")
	rc=$?
	[ $rc = 0 ] || { cat "$W/fio.out" "$W/fio.err"; fail "fio exit $rc"; }
	# terse v3: field 5 is the total error count.
	errs=$(grep '^3;' "$W/fio.out" | cut -d';' -f5 | head -n 1)
	expect_eq "$errs" 0 "fio errors"
	grep -qiE 'verify:|bad magic|error' "$W/fio.err" &&
		{ cat "$W/fio.err"; fail "fio complained"; }
	return 0
}

# fio_loop SIZE MAXBS DEPTH: in the background, fio_verify with 2 jobs
# of SIZE, random writes and mixed reads and writes turn about, until
# $W/stop exists; the runs done so far in $W/fio-runs, the output in
# $W/fio-loop.log; the first run that fails ends the loop with its reason
# (exit non-zero).  Sets bgpid.
fio_loop() {
	rm -f "$W/stop" "$W/fio-runs"
	(
		n=0
		while [ ! -e "$W/stop" ]; do
			rw=randwrite
			[ $((n % 2)) = 1 ] && rw=randrw
			fio_verify "$1" "$2" 2 "$3" "$rw"
			n=$((n + 1))
			echo "$n" >"$W/fio-runs"
		done
	) >"$W/fio-loop.log" 2>&1 &
	bgpid=$!
}

# bg_wait LIMIT WHAT: wait at most LIMIT s for $bgpid (fail "... still
# running LIMIT s after WHAT" past it); its exit status in BG_RC, bgpid
# cleared.
bg_wait() {
	local t0=$SECONDS
	while kill -0 "$bgpid" 2>/dev/null; do
		[ $((SECONDS - t0)) -le "$1" ] || fail "I/O still running $1 s after $2"
		nap 0.2
	done
	wait "$bgpid"
	BG_RC=$?
	bgpid=
}

# sess_sum FILE: FILE (a number) summed over every session.
sess_sum() {
	local f n=0 v
	for f in "$KRDMA_SYS"/sessions/*/"$1"; do
		read -r v <"$f" || return 1
		n=$((n + v))
	done
	echo $n
}
# sess_all_connected: every session is connected.
sess_all_connected() {
	local f st
	for f in "$KRDMA_SYS"/sessions/*/state; do
		read -r st <"$f" || return 1
		[ "$st" = connected ] || return 1
	done
}

# io_loop ERRFILE: in the background, write and read back $D (256 KiB
# direct I/O, 100 MiB a pass) until an I/O fails, then exit 3; dd's
# complaints go to ERRFILE.  Sets bgpid.  conv=nocreat: a device node
# removed between two of dd's runs (an unmap that found no I/O in flight)
# fails the next one ("No such file or directory") instead of making dd
# fill a regular file in /dev (devtmpfs) until "No space left on device".
io_loop() {
	(
		while :; do
			dd if=/dev/urandom of="$D" bs=256k count=400 oflag=direct \
				conv=nocreat status=none ||
				exit 3
			dd if="$D" of=/dev/null bs=256k count=400 iflag=direct status=none ||
				exit 3
		done
	) 2>"$1" &
	bgpid=$!
}
