#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 19: an export replaced under a map.  krdmablk0 maps export e0 of
# a 1 GiB null_blk (2 queues, reconnect every 200 ms); the server
# unexports e0 and exports it again from another device, and each time
# the map's queues reconnect and greet it again:
# 1. a 2 GiB device: the disk takes the new size (one "detected capacity
#    change" line), and what A writes past the old end through the map
#    is on the new device, byte for byte;
# 2. the same device read-only: the disk turns read-only (one line) and a
#    write fails; exported read-write again, the disk is writable again
#    and a write reads back;
# 3. a device of 4 KiB blocks: the disk cannot change its block size
#    under the block layer, so its queues fail their I/O (one line naming
#    the change), a read fails with an I/O error, and the map unmaps;
# 4. an export that answers no greeting in time (a reconnect whose
#    connection comes up but whose HELLO times out, again and again): the
#    session is lost loss_tmo_ms after the first failure, not never, and
#    the read in flight fails with an I/O error;
# 5. an unmap while a reconnected queue waits for the export's greeting
#    (answered 9 s late) ends within 3 s, not when the greeting does.
# On the code before the HELLO after a reconnect was looked at, the size
# stayed 1 GiB; before a set that failed in its RECONNECTED callback kept
# the outage going, the read of step 4 hung (planted 2026-11-30).
# topo: single
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need

PORT=7487
ADDR=$MY_IP:$PORT
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/blk-reexport
CFS=/sys/kernel/config
BIG=$CFS/nullb/krx2g
LBS4K=$CFS/nullb/krx4k

cleanup() {
	set +e
	echo 0 >/sys/module/krdma_blk/parameters/test_hello_delay_ms 2>/dev/null
	if [ -w "$BLK_CTL" ]; then
		echo "unmap name=krdmablk0" >"$BLK_CTL" 2>/dev/null
		echo "unexport name=e0" >"$BLK_CTL" 2>/dev/null
	fi
	for n in "$BIG" "$LBS4K"; do
		[ -d "$n" ] || continue
		echo 0 >"$n/power"
		rmdir "$n"
	done
	blk_unload
}
trap cleanup EXIT

blk_start
mkdir -p "$W"
mountpoint -q $CFS || mount -t configfs none $CFS || fail "mount configfs"
# nullb_cfs DIR MIB LBS: a memory-backed null_blk made through configfs,
# /dev/ and the item's name.
nullb_cfs() {
	mkdir "$1" || fail "configfs null_blk ${1##*/}"
	for a in "size $2" "blocksize $3" "memory_backed 1" "power 1"; do
		echo "${a#* }" >"$1/${a%% *}" || fail "null_blk ${1##*/}: $a"
	done
	wait_for 10 test -b "/dev/${1##*/}" || fail "/dev/${1##*/} never appeared"
}
nullb_cfs "$BIG" 2048 512
nullb_cfs "$LBS4K" 1024 4096

sectors() { cat /sys/block/krdmablk0/size; }
size_is() { [ "$(sectors)" = "$1" ]; }
new_line() { dmesg_new | grep -q "$1"; }
# reexport ARGS...: e0 gone and back with ARGS (path= and options).
reexport() {
	blk "unexport name=e0" || fail "unexport e0"
	blk "export name=e0 $* addr=$ADDR" || fail "export e0 $*"
}

blk export name=e0 path=$NB addr=$ADDR || fail "export e0"
blk map name=krdmablk0 addr=$ADDR export=e0 queues=2 reconnect_delay_ms=200 ||
	fail "map krdmablk0"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(sectors)" $((1 << 21)) "sectors of the 1 GiB export"
head -c 1M /dev/urandom >"$W/rand" || fail "random data"
dd if="$W/rand" of="$D" bs=1M oflag=direct status=none || fail "dd to $D"

# ---- 1. a larger device -----------------------------------------------------
log "e0 again from a 2 GiB device"
dmesg_mark
reexport path=/dev/krx2g
wait_for 30 size_is $((1 << 22)) ||
	fail "krdmablk0 has $(sectors) sectors after e0 came back with 2 GiB"
wait_for 10 new_line "krdmablk0: detected capacity change from $((1 << 21)) to $((1 << 22))" ||
	fail "no capacity change line: $(dmesg_new | grep krdmablk0 | tail -n 3)"
dd if="$W/rand" of="$D" bs=1M seek=1536 oflag=direct status=none ||
	fail "dd to $D past the old end"
dd if=/dev/krx2g of="$W/back" bs=1M skip=1536 count=1 iflag=direct status=none ||
	fail "dd from /dev/krx2g"
cmp "$W/rand" "$W/back" || fail "the new device does not hold what was written through the map"
dd if="$D" of="$W/back" bs=1M skip=1536 count=1 iflag=direct status=none ||
	fail "dd from $D past the old end"
cmp "$W/rand" "$W/back" || fail "read back through the map differs"

# ---- 2. read-only, then read-write again ----------------------------------
log "e0 again read-only"
dmesg_mark
reexport path=/dev/krx2g ro
wait_for 30 grep -qx 1 /sys/block/krdmablk0/ro ||
	fail "krdmablk0 not read-only after e0 came back read-only"
wait_for 10 new_line "krdmablk0: export e0 is read-only now" ||
	fail "no read-only line: $(dmesg_new | grep krdmablk0 | tail -n 3)"
# Refused by the disk itself (EPERM), not by the server (EROFS: EIO).
dd if="$W/rand" of="$D" bs=1M oflag=direct status=none 2>"$W/err" &&
	fail "a write to the read-only krdmablk0 succeeded"
grep -q 'Operation not permitted' "$W/err" ||
	fail "the write to the read-only krdmablk0 failed with: $(cat "$W/err")"
log "e0 again read-write"
reexport path=/dev/krx2g
wait_for 30 grep -qx 0 /sys/block/krdmablk0/ro ||
	fail "krdmablk0 still read-only after e0 came back read-write"
dd if="$W/rand" of="$D" bs=1M seek=2 oflag=direct status=none ||
	fail "dd to $D after read-write again"
dd if="$D" of="$W/back" bs=1M skip=2 count=1 iflag=direct status=none ||
	fail "dd from $D after read-write again"
cmp "$W/rand" "$W/back" || fail "read back after read-write again differs"

# ---- 3. another block size ---------------------------------------------------
log "e0 again from a device of 4 KiB blocks"
dmesg_mark
reexport path=/dev/krx4k
wait_for 30 new_line 'krdmablk0: queue [0-9]*: export e0 has 4096-byte blocks and requests of [0-9]* sectors after the reconnect, the disk 512 and [0-9]*; failing its I/O' ||
	fail "no line for the block size change: $(dmesg_new | grep krdmablk0 | tail -n 3)"
t0=$SECONDS
timeout 60 dd if="$D" of=/dev/null bs=4k count=1 iflag=direct status=none 2>"$W/err" &&
	fail "a read from krdmablk0 succeeded after its block size changed"
grep -q 'Input/output error' "$W/err" || fail "the read failed with: $(cat "$W/err")"
log "the read failed after $((SECONDS - t0)) s"
blk unmap name=krdmablk0 || fail "unmap"
wait_for 10 test ! -e "$D" || fail "$D still there after unmap"
blk "unexport name=e0" || fail "unexport"

# ---- 4. a greeting that never comes back in time ---------------------------
# Every HELLO answered 15 s late (test_hello_delay_ms), the client waiting
# 10 s for it: each reconnect's connection is up, its greeting times out
# and krdma-blk fails it in its RECONNECTED callback.  Such a set does not
# end the outage: loss_tmo_ms (3 s) counts from the first failure, the
# session is lost after the first greeting that timed out, and the read
# that was in flight fails with an I/O error, where before each of these
# connections started the loss timeout again and the read hung for ever.
log "a greeting that times out after each reconnect"
blk export name=e0 path=$NB addr=$ADDR || fail "export e0 (4)"
blk map name=krdmablk0 addr=$ADDR export=e0 queues=1 reconnect_delay_ms=200 loss_tmo_ms=3000 ||
	fail "map krdmablk0 (4)"
wait_for 10 test -b "$D" || fail "$D never appeared (4)"
P=/sys/module/krdma_blk/parameters
sd=$(echo $KRDMA_SYS/sessions/*)
[ -e "$sd/conn" ] || fail "no session of krdmablk0's queue: $sd"
c=$(cat "$sd/conn")
echo 15000 >$P/test_hello_delay_ms || fail "test_hello_delay_ms"
dmesg_mark
echo "retry_exc_err op=recv nth=1" >"$KRDMA_SYS/conns/$c/inject" || fail "arm $c"
t0=$SECONDS
rm -f "$W/rc"
# In the background: a read that hangs cannot be killed (it waits for its
# request); the unmap of the cleanup ends it.
( dd if="$D" of=/dev/null bs=4k count=1 iflag=direct status=none 2>"$W/err"
  echo $? >"$W/rc" ) &
wait_for 60 test -s "$W/rc" ||
	fail "the read still hangs after 60 s: the session was never lost ($(dmesg_new | grep -c 'connection lost') connections lost)"
t=$((SECONDS - t0))
echo 0 >$P/test_hello_delay_ms
[ "$(cat "$W/rc")" != 0 ] || fail "a read succeeded though no greeting was answered in time"
grep -q 'Input/output error' "$W/err" ||
	fail "the read failed after $t s with: '$(cat "$W/err")'"
[ $t -le 45 ] || fail "the read failed after $t s, loss_tmo_ms=3000 and a 10 s greeting"
new_line 'failed before it was taken up: the loss timeout still counts from the failure before' ||
	fail "no line for the set that failed in its callback: $(dmesg_new | grep -E 'krdma' | tail -n 4)"
new_line 'krdmablk0: queue 0: session lost' ||
	fail "no 'session lost' line: $(dmesg_new | grep -E 'krdma' | tail -n 4)"
log "the read failed after $t s"
blk unmap name=krdmablk0 || fail "unmap (4)"
blk "unexport name=e0" || fail "unexport (4)"

# ---- 5. an unmap while a queue greets the export ---------------------------
# A queue's connection fails (an injected receive failure), its session
# reconnects and the RECONNECTED callback greets the export, which
# answers 9 s late.  The unmap must not wait out that greeting: it ends
# within 3 s, the read in flight fails with an I/O error.  Before, the
# unmap waited for the queue's lock, which the greeting held for its
# whole wait (about 8 s here, up to 10 s with no answer).
log "an unmap while a queue greets the export"
blk export name=e0 path=$NB addr=$ADDR || fail "export e0 (5)"
blk map name=krdmablk0 addr=$ADDR export=e0 queues=1 reconnect_delay_ms=200 ||
	fail "map krdmablk0 (5)"
wait_for 10 test -b "$D" || fail "$D never appeared (5)"
sd=$(echo $KRDMA_SYS/sessions/*)
[ -e "$sd/conn" ] || fail "no session of krdmablk0's queue: $sd"
c=$(cat "$sd/conn")
echo 9000 >$P/test_hello_delay_ms || fail "test_hello_delay_ms (5)"
echo "retry_exc_err op=recv nth=1" >"$KRDMA_SYS/conns/$c/inject" || fail "arm $c (5)"
rm -f "$W/rc"
( dd if="$D" of=/dev/null bs=4k count=1 iflag=direct status=none 2>"$W/err"
  echo $? >"$W/rc" ) &
# reconnected: the session is up again on another connection, and so
# its RECONNECTED callback greets the export.
reconnected() {
	[ "$(cat "$sd/state" 2>/dev/null)" = connected ] &&
		[ "$(cat "$sd/reconnects" 2>/dev/null)" -ge 1 ] &&
		[ "$(cat "$sd/conn" 2>/dev/null)" != "$c" ]
}
wait_for 20 reconnected || fail "the session never reconnected: $(cat "$sd/state")"
nap 1
t0=${EPOCHREALTIME/./}
blk unmap name=krdmablk0 || fail "unmap during the greeting"
ms=$(( (${EPOCHREALTIME/./} - t0) / 1000 ))
echo 0 >$P/test_hello_delay_ms
log "the unmap took $ms ms"
[ "$ms" -le 3000 ] || fail "the unmap took $ms ms: it waited for the greeting"
wait_for 20 test -s "$W/rc" || fail "the read did not end after the unmap"
[ "$(cat "$W/rc")" != 0 ] || fail "the read succeeded though its disk was unmapped"
grep -q 'Input/output error' "$W/err" || fail "the read after the unmap: '$(cat "$W/err")'"
blk "unexport name=e0" || fail "unexport (5)"
