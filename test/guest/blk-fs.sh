#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma-blk (blk/, krdma_blk.ko) carrying volume, client and server in one
# guest: a memory-backed null_blk exported (default options: completions
# in softirq) and mapped over the lane's device as /dev/krdmablk0.  dd
# writes KRDMA_BLK_DD_MB (default 8; 2 on the debug kernel) MiB at 0, 3
# and 517 MiB, with O_DIRECT and through the page cache with fsync, and
# each is read back and compared byte for byte with the data and with
# null_blk itself; fio verifies random writes of 512 B to 1 MiB
# (KRDMA_BLK_FIO_SIZE: 32M, 64M in make stress; on the debug kernel 8M,
# 16M); make stress adds fio verify with 4 jobs at iodepth 1 and 128 and
# mixed random reads and writes; an ext4 made on it survives umount and
# mount (sha256 of every file, e2fsck -fn).
# test/guest/blk.sh has the protocol, its failures and the hostile peers
# (on the debug kernel in make check, where KASAN and lockdep watch them);
# this test is the data in bulk, which needs neither and takes a third of
# the time on 6.12: make check runs it there over rxe, make stress on
# every line (the debug kernel included) and device.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need
command -v mkfs.ext4 >/dev/null || fail "mkfs.ext4 not installed"

PORT=7490
ADDR=$MY_IP:$PORT
NB=/dev/nullb0
D=/dev/krdmablk0
MNT=/tmp/blk-fs-mnt
W=/tmp/blk-fs-work
fio_size=${KRDMA_BLK_FIO_SIZE:-32M} dd_mb=${KRDMA_BLK_DD_MB:-8}
[ "${KRDMA_STRESS:-0}" = 1 ] && fio_size=${KRDMA_BLK_FIO_SIZE:-64M}
if [ "$KLINE" = debug ]; then
	fio_size=${KRDMA_BLK_FIO_SIZE:-8M} dd_mb=${KRDMA_BLK_DD_MB:-2}
	[ "${KRDMA_STRESS:-0}" = 1 ] && fio_size=${KRDMA_BLK_FIO_SIZE:-16M}
fi

cleanup() {
	set +e
	mountpoint -q "$MNT" && umount "$MNT"
	rmdir "$MNT" 2>/dev/null
	blk_cleanup_e0
}
trap cleanup EXIT

blk_start
mkdir -p "$MNT" "$W"
blk export name=e0 path=$NB addr=$ADDR || fail "export e0"
blk map name=krdmablk0 addr=$ADDR export=e0 queues=2 || fail "map krdmablk0"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(blockdev --getsize64 "$D")" "$(blockdev --getsize64 "$NB")" "size"

# ---- data, byte for byte -----------------------------------------------
log "dd and cmp, $dd_mb MiB at 0, 3 and 517 MiB"
head -c ${dd_mb}M /dev/urandom >"$W/rand" || fail "random data"
for off in 0 3 517; do	# in MiB
	for fl in oflag=direct conv=fsync; do
		blk_dd_check "$off" "$fl" "$dd_mb" "$NB"
	done
done

# ---- fio verify ---------------------------------------------------------
log "fio verify, $fio_size"
fio_verify "$fio_size"
# make stress: 4 jobs at depth 1 and 128, and reads and writes mixed.
if [ "${KRDMA_STRESS:-0}" = 1 ]; then
	for depth in 1 128; do
		log "fio verify, 4 jobs at depth $depth"
		fio_verify 8M 1M 4 "$depth"
	done
	log "fio verify, random reads and writes mixed, 4 jobs at depth 32"
	fio_verify 16M 4k 4 32 randrw
fi

# ---- ext4 ---------------------------------------------------------------
log "ext4"
mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,lazy_journal_init=1 "$D" 256M ||
	fail "mkfs.ext4"
mount "$D" "$MNT" || fail "mount"
for i in 1 2 3 4; do
	mkdir -p "$MNT/d$i/sub"
	for j in 1 2 3 4 5; do
		head -c $((i * 37000 + j * 4093)) /dev/urandom >"$MNT/d$i/f$j"
		head -c $((j * 1000)) /dev/urandom >"$MNT/d$i/sub/g$j"
	done
done
head -c 3M /dev/urandom >"$MNT/big"
(cd "$MNT" && find . -type f -print0 | sort -z | xargs -0 sha256sum) >"$W/sums" ||
	fail "sha256 before"
sync
umount "$MNT" || fail "umount"
echo 3 >/proc/sys/vm/drop_caches
mount "$D" "$MNT" || fail "mount again"
(cd "$MNT" && sha256sum --quiet -c "$W/sums") || fail "sha256 after remount differ"
expect_eq "$(wc -l <"$W/sums")" 41 "files"
umount "$MNT" || fail "umount again"
e2fsck -fn "$D" >"$W/fsck" 2>&1 || { cat "$W/fsck"; fail "e2fsck -fn"; }

blk "unmap name=krdmablk0" || fail "unmap krdmablk0"
blk "unexport name=e0" || fail "unexport e0"
echo "PASS"
