#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma-blk's poll queues (issue #20): a map with poll_queues=1 over a
# memory-backed null_blk in one guest.  The disk says it polls
# (queue/io_poll 1), its polled queue's connection is polled
# (conns/NAME/poll 1), fio verifies random writes of 512 B to 1 MiB
# through io_uring with --hipri (IORING_SETUP_IOPOLL: the submitter reaps
# its completions through blk-mq's ->poll, krdma_poll() on that queue's
# connection): the polled connection carries replies, and its consumer's
# krdma_poll() reaps completions (conns/NAME/poll_reaped; krdma's own
# waits and heartbeat tick do not count there).  Queue i's connection is
# on completion vector i.  Plain I/O after it goes
# to the default queue.  Without poll_queues the disk does not poll, and
# a bad poll_queues= is refused naming its value.  A request holds what
# one pool MR maps, less a page, up to 1 MiB (as nvme-rdma's): 1 MiB over
# rxe (MRs of 512 pages), 1020 KiB over siw (256), the disk's
# max_hw_sectors_kb says so.  6.1 cannot split a polled bio (fio's 1 MiB
# polled writes stalled there while a request was 512 KiB;
# blk/krdma_blk_compat.h): there the map takes poll queues over rxe, whose
# requests hold a whole bio, and refuses them over siw with EOPNOTSUPP
# and a line that says so.
# topo: single
# dev: rxe siw
# check-kernel: 6.12 6.1
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need
fio --enghelp 2>/dev/null | grep -q io_uring || fail "fio has no io_uring engine"

PORT=7490
ADDR=$MY_IP:$PORT
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/blkpoll-work

trap blk_cleanup_e0 EXIT

blk_start
mkdir -p "$W"

blk export name=e0 path=$NB addr="$ADDR" || fail "export e0"
grep -q 'poll_queues=N' "$BLK_CTL" || fail "the grammar lacks poll_queues="

# ---- without poll queues the disk does not poll ----------------------
blk map name=krdmablk0 addr="$ADDR" export=e0 || fail "map without poll queues"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(cat /sys/block/krdmablk0/queue/io_poll)" 0 "io_poll without poll queues"
case $DEV in
rxe) kb=1024 segs=257 ;;
siw) kb=1020 segs=256 ;;
esac
expect_eq "$(cat /sys/block/krdmablk0/queue/max_hw_sectors_kb) $(cat /sys/block/krdmablk0/queue/max_segments)" \
	"$kb $segs" "the largest request (KiB) and its segments over $DEV"
blk unmap name=krdmablk0 || fail "unmap"
wait_for 10 test ! -e "$D" || fail "$D still there after unmap"

# ---- bad words ---------------------------------------------------------
for bad in "poll_queues=x" "poll_queues=16" "poll_queues=-1"; do
	ratelimit_pace
	dmesg_mark
	KRDMA_CTL=$BLK_CTL expect_ctl_err EINVAL map name=krdmablk0 addr="$ADDR" \
		export=e0 "$bad"
	dmesg_new | grep -q "krdma_blk: control: map: '${bad#*=}'" ||
		fail "'$bad': no dmesg line names its value"
done
test ! -e "$D" || fail "$D exists after refused maps"

if [ "$KLINE" = 6.1 ] && [ "$DEV" = siw ]; then
	ratelimit_pace
	dmesg_mark
	KRDMA_CTL=$BLK_CTL expect_ctl_err EOPNOTSUPP map name=krdmablk0 \
		addr="$ADDR" export=e0 poll_queues=1
	dmesg_new | grep -q "krdma_blk: control: map: 'poll_queues= (this kernel needs 1 MiB requests; the device's MRs map less)'" ||
		fail "poll_queues=1 on 6.1 over siw: no dmesg line says why"
	test ! -e "$D" || fail "$D exists after a refused map"
	blk unexport name=e0 || fail "unexport"
	rmmod krdma_blk || fail "rmmod krdma_blk"
	echo "PASS"
	exit 0
fi

# ---- one default queue, one poll queue ---------------------------------
before=$(ls "$KRDMA_SYS/conns")
blk map name=krdmablk0 addr="$ADDR" export=e0 queues=1 poll_queues=1 ||
	fail "map with a poll queue"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(cat /sys/block/krdmablk0/queue/io_poll)" 1 "io_poll with a poll queue"
# The map's two client connections: one polled, one not.
polled='' plain=''
for cd in "$KRDMA_SYS"/conns/*; do
	c=${cd##*/}
	grep -qx "$c" <<<"$before" && continue
	[ "$(cat "$cd/role")" = active ] || continue
	case $(cat "$cd/poll") in
	1) polled+=" $c" ;;
	0) plain+=" $c" ;;
	esac
done
expect_eq "$(wc -w <<<"$polled") $(wc -w <<<"$plain")" "1 1" \
	"the map's polled and plain connections ($polled /$plain)"
P=$KRDMA_SYS/conns/${polled# }
N=$KRDMA_SYS/conns/${plain# }
stat() { cat "$1/$2"; }
# Queue i's connection is on completion vector i (opts.comp_vector; rxe
# and siw have one per possible CPU, two here): the default queue's on 0,
# the poll queue's on 1.
expect_eq "$(stat "$N" comp_vector) $(stat "$P" comp_vector)" "0 1" \
	"the completion vectors of the default and the poll queue"

r0=$(stat "$P" recv_ops) k0=$(stat "$P" poll_reaped) n0=$(stat "$N" recv_ops)
log "fio verify, io_uring --hipri"
FIO_ENGINE="--ioengine=io_uring --hipri=1" fio_verify 16M 1M 2 16
r1=$(stat "$P" recv_ops) k1=$(stat "$P" poll_reaped) n1=$(stat "$N" recv_ops)
log "poll queue: $((r1 - r0)) replies, $((k1 - k0)) completions reaped by ->poll; default queue: $((n1 - n0)) replies"
[ $((r1 - r0)) -ge 64 ] || fail "polled I/O: only $((r1 - r0)) replies on the poll queue"
[ $((k1 - k0)) -ge $((r1 - r0)) ] ||
	fail "->poll reaped $((k1 - k0)) completions for $((r1 - r0)) replies"
# Plain I/O on the same disk goes to the default queue.
FIO_ENGINE="--ioengine=libaio" fio_verify 4M 64k 1 4
n2=$(stat "$N" recv_ops) r2=$(stat "$P" recv_ops)
[ $((n2 - n1)) -ge 16 ] || fail "plain I/O: only $((n2 - n1)) replies on the default queue"
expect_eq "$r2" "$r1" "replies on the poll queue during plain I/O"

# Unmap while io_uring polls the poll queue: the unmap takes the
# session away under the poller (which read it with no lock: a NULL or
# freed session in ->poll), the I/O fails, nothing hangs.
log "unmap during polled I/O"
fio --name=pollunmap --filename="$D" --ioengine=io_uring --hipri=1 \
	--direct=1 --rw=randread --bs=4k --iodepth=8 --numjobs=2 \
	--time_based --runtime=30 >"$W/pollunmap.log" 2>&1 &
fpid=$!
sleep 2
kill -0 $fpid 2>/dev/null || { cat "$W/pollunmap.log"; fail "fio ended before the unmap"; }
t0=$SECONDS
blk unmap name=krdmablk0 || fail "unmap during polled I/O"
wait $fpid
log "fio after the unmap: exit $?, unmap took $((SECONDS - t0)) s"
[ $((SECONDS - t0)) -le 20 ] || fail "unmap during polled I/O took $((SECONDS - t0)) s"
wait_for 10 test ! -e "$D" || fail "$D still there after unmap"
blk unexport name=e0 || fail "unexport"
rmmod krdma_blk || fail "rmmod krdma_blk"
echo "PASS"
