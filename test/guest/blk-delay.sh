#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma-blk with a slow peer on demand (issue #18): completions of the
# client's queue connections delayed through conns/NAME/inject "delay=MS"
# (krdma_inject.c), one guest, a memory-backed null_blk exported.
#  - within the I/O timeout: every 2nd reply's receive 150 ms late on
#    every queue; fio verify is clean, no queue reconnects, and each
#    queue's connection delayed completions;
#  - past it: every receive of both queues 3 s late, io_timeout 1 s: a
#    read times out (or its queue's heartbeats do), its connection fails,
#    its queue's session reconnects and sends the read again on the new
#    connection, which returns the right data; the late reply of the old
#    one, handed on by its teardown, is dropped; the other queue, idle,
#    keeps its connection;
#  - unmap with replies held back on every queue: the disk goes within
#    10 s, the reader gets its answer (data or an I/O error, not a hang),
#    and no connection of the map is left.
# The export is without wq: a wq connection refuses delay= (its callbacks
# run in process context), and the client's queues are softirq ones.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need

PORT=7495
ADDR=$MY_IP:$PORT
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/blkdelay-work
S=$KRDMA_SYS/conns

trap blk_cleanup_e0 EXIT

# field FILE WORD: the value of WORD=N in the inject file FILE.
field() { sed -n "s/.* $2=\([0-9]*\).*/\1/p" "$1"; }
# queue_conns: the map's queue connections (one per session).
queue_conns() {
	local sd
	for sd in "$KRDMA_SYS"/sessions/*; do
		[ -e "$sd/conn" ] && cat "$sd/conn"
	done
}

blk_start
mkdir -p "$W"
blk export name=e0 path=$NB addr="$ADDR" || fail "export e0"
blk map name=krdmablk0 addr="$ADDR" export=e0 queues=2 reconnect_delay_ms=200 ||
	fail "map krdmablk0"
wait_for 10 test -b "$D" || fail "$D never appeared"
mapfile -t qc < <(queue_conns)
expect_eq "${#qc[@]}" 2 "queue connections (${qc[*]})"
r0=$(sess_sum reconnects)

# ---- a slow peer, within the I/O timeout ----------------------------------
log "fio verify with every 2nd reply 150 ms late"
for c in "${qc[@]}"; do
	echo "delay=150 op=recv nth=2" >"$S/$c/inject" || fail "delay $c"
done
fio_verify 2M 64k 2 8
for c in "${qc[@]}"; do
	n=$(field "$S/$c/inject" delayed)
	[ "${n:-0}" -ge 2 ] || fail "$c delayed ${n:-0} receives: $(cat "$S/$c/inject")"
	log "$c: $n receives delayed"
	echo off >"$S/$c/inject" || fail "off $c"
done
expect_eq "$(sess_sum reconnects)" "$r0" "queue reconnects with a slow peer"
expect_eq "$(queue_conns | sort | paste -sd ' ')" \
	"$(printf '%s\n' "${qc[@]}" | sort | paste -sd ' ')" "the queues' connections"

# ---- a peer slower than the I/O timeout ----------------------------------
# Every receive of both queues 3 s late, io_timeout 1 s: a read fails its
# queue's connection (its timeout, or the heartbeats it missed) and is
# sent again on the new connection, which is not delayed.
log "a read whose replies are later than the I/O timeout"
echo 1000 >/sys/block/krdmablk0/queue/io_timeout || fail "io_timeout 1000"
dmesg_mark
for c in "${qc[@]}"; do
	echo "delay=3000 op=recv" >"$S/$c/inject" || fail "delay 3000 $c"
done
t0=$SECONDS
dd if="$D" of="$W/back" bs=4k skip=91 count=1 iflag=direct status=none ||
	fail "a read with its replies 3 s late failed: $(dmesg_new | grep krdma | tail -n 4)"
t=$((SECONDS - t0))
dd if="$NB" of="$W/nb" bs=4k skip=91 count=1 iflag=direct status=none
cmp "$W/back" "$W/nb" || fail "the read sent again returned other data"
log "the read returned after $t s"
[ "$t" -le 30 ] || fail "the read took $t s"
dmesg_new | grep -qE 'krdmablk0: queue [0-9]+: (request timed out; failing the connection|connection lost)' ||
	{ dmesg_new | grep krdma; fail "no line for the failed queue connection"; }
wait_for 10 sess_all_connected || fail "queues not connected again: $(cat "$KRDMA_SYS"/sessions/*/state)"
[ "$(sess_sum reconnects)" -gt "$r0" ] || fail "no queue reconnected"
# The other queue (a session of its own) kept its connection, idle and
# still slow, unless its heartbeats gave it up meanwhile.
new=0
for c in $(queue_conns); do
	if printf '%s\n' "${qc[@]}" | grep -qx "$c"; then
		echo off >"$S/$c/inject" || fail "off $c"
		continue
	fi
	expect_eq "$(cat "$S/$c/inject")" off "inject of the new connection $c"
	new=$((new + 1))
done
[ "$new" -ge 1 ] || fail "no new queue connection: $(queue_conns | paste -sd ' ') (were ${qc[*]})"
echo 30000 >/sys/block/krdmablk0/queue/io_timeout || fail "io_timeout 30000"
fio_verify 1M 64k 2 8

# ---- unmap with replies held back ------------------------------------------
log "unmap with replies held back"
mapfile -t qc < <(queue_conns)
for c in "${qc[@]}"; do
	echo "delay=5000 op=recv" >"$S/$c/inject" || fail "delay 5000 $c"
done
dd if="$D" of=/dev/null bs=64k count=16 iflag=direct status=none 2>"$W/dd.err" &
bgpid=$!
nap 0.5
t0=$SECONDS
blk unmap name=krdmablk0 || fail "unmap with replies held back"
wait_for 10 test ! -e "$D" || fail "$D still there 10 s after unmap"
wait_for 10 eval '! kill -0 $bgpid 2>/dev/null' || fail "the reader hangs after unmap"
wait $bgpid
log "unmap returned after $((SECONDS - t0)) s; the reader: exit $? $(head -c 120 "$W/dd.err")"
for c in "${qc[@]}"; do
	wait_for 10 test ! -e "$S/$c" || fail "$c stayed after unmap"
done
blk unexport name=e0 || fail "unexport"
