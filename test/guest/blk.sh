#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma-blk (blk/, krdma_blk.ko), client and server in one guest: a
# memory-backed null_blk exported and mapped over the lane's device as
# /dev/krdmablk0, its protocol and its failures.  Data written through it
# (dd, O_DIRECT and through the page cache, and sub-page at an odd
# sector) is compared byte for byte, and against null_blk itself; fio
# verifies random writes of 512 B to 4 KiB (in-capsule WRITEs,
# test_incapsule_writes; a 4 KiB write with incapsule_data_size 0
# registers its pages), and of 512 B to 64 KiB with every 5th command and
# every 3rd reply finding no credit (test_busy_every and
# test_reply_busy_every); the server's data and replies go from bio
# completions in softirq and, null_blk reloaded with irqmode=2, in
# hardirq context (test_hardirq_ends); fio verifies with every command's
# work on the CPU's high-priority worker (hipri_depth, test_hipri_cmds)
# and dd with none there, with hipri_depth=1 fio's READs one at a time
# take that worker, and a client claiming depth 32 (test/blkhostile mode
# qd) does not where one claiming 1 does (the client's depth in each
# command, not the server's count).  A reply that never comes
# (test_drop_replies) costs a reconnect of its queue and the read is sent
# again (also when its timer fires again while the queue greets the
# export on the new connection, test_hello_delay_ms: the new connection
# is left alone); fio verify runs across such reconnects (not on the
# debug kernel in make check) and across a completion failure injected
# on each queue (conns/NAME/inject) with no error, and a registration
# whose post fails costs a reconnect, not an I/O error.  Bad control
# commands fail with their errno, a read-only export refuses writes, and
# unmap or unexport during I/O fails the I/O without a hang.  A hostile
# client (test/blkhostile) gets each bad command refused with its errno,
# and its connection closed, with one line, for each breach of the
# protocol: no HELLO (or only HELLOs naming another export, which do not
# start the server's deadline again), two, garbage, a bad length,
# in-capsule data on a READ or shorter than its length, more commands
# than its queue depth, replies it never takes, a forged token; a hostile
# server's replies fail the map or the I/O.  Exports and maps work over
# IPv6 and over a long IPv4 address.  dd writes 8 MiB at a time (2 MiB on
# the debug kernel in make check), fio verify 2 MiB of random writes of
# 512 B to 1 MiB.  The data in bulk (fio over 32 MiB and more, ext4) is
# test/guest/blk-fs.sh's.
# A kernel without the block layer (CONFIG_BLOCK=n; tools/build.sh does not
# build the module for it): SKIP.  The debug kernel has it (with null_blk
# and ext4), so KASAN and lockdep watch the block path there, and
# DEBUG_ATOMIC_SLEEP the queue_rq that must not sleep: make check runs it
# there, over rxe only; make stress on every line and device.
# topo: single
# dev: rxe siw
# check-kernel: debug
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need

PORT=7480
ADDR=$MY_IP:$PORT
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/blk-work
SLOW=/sys/kernel/config/nullb/krdmaslow	# the hostile client's slow device
dd_mb=8
if [ "$KLINE" = debug ]; then
	dd_mb=2
	[ "${KRDMA_STRESS:-0}" = 1 ] && dd_mb=8
fi
bgpid=

# blk_err ERRNO CMD...: the command fails with ERRNO, and dmesg names it.
blk_err() {
	local want=$1
	shift
	ratelimit_pace
	dmesg_mark
	KRDMA_CTL=$BLK_CTL expect_ctl_err "$want" "$@"
	dmesg_fetch
	new_has 'krdma_blk: control: ' ||
		fail "'$*': no dmesg line names the bad word"
}

cleanup() {
	set +e
	[ -z "$bgpid" ] || kill "$bgpid" 2>/dev/null
	if [ -w "$BLK_CTL" ]; then
		for m in krdmablk0 krdmablk1 krdmablk2 krdmablk3; do
			echo "unmap name=$m" >"$BLK_CTL" 2>/dev/null
		done
		for e in e0 ero eslow ea1 ea2; do
			echo "unexport name=$e" >"$BLK_CTL" 2>/dev/null
		done
	fi
	for n in "$SLOW" /sys/kernel/config/nullb/krdmaaddr; do
		[ -d "$n" ] || continue
		echo 0 >"$n/power"
		rmdir "$n"
	done
	[ -d /sys/module/krdma_blk_evilsrv ] && rmmod krdma_blk_evilsrv
	blk_unload
}
trap cleanup EXIT

blk_start
mkdir -p "$W"

# ---- the control file ---------------------------------------------------
g=$(cat "$BLK_CTL") || fail "read control"
for v in export unexport map unmap; do
	grep -q "^$v name=" <<<"$g" || fail "grammar lacks '$v': $g"
done
expect_eq "$(wc -l <<<"$g")" 4 "grammar lines"

blk export name=e0 path=$NB addr=$ADDR wq || fail "export e0"
blk map name=krdmablk0 addr=$ADDR export=e0 queues=2 reconnect_delay_ms=200 ||
	fail "map krdmablk0"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(blockdev --getsize64 "$D")" "$(blockdev --getsize64 "$NB")" "size"
expect_eq "$(blockdev --getss "$D")" "$(blockdev --getss "$NB")" "logical block size"

# e0 is made with wq: its completions come in the completion workqueue.
# Every READ and WRITE starts in its completion, however deep the queue
# (the default starts there only a connection's lone command): until the
# credit tests below, the inline paths carry all of the data.  The
# read-only export and e0 made again later are without wq (softirq).
P=/sys/module/krdma_blk/parameters
expect_eq "$(cat $P/inline_depth)" 1 "inline_depth's default"
echo 1000 >$P/inline_depth

# knob_check PARAM DEFAULT ON COUNTER MIN MAXBS SEEK WHAT: a server or
# client knob of the module.  PARAM is at DEFAULT; set to ON, fio verify
# (blocks of 512 B to MAXBS) must add MIN or more to the tests-only
# COUNTER; set to 0, 16 blocks of 4 KiB written at block SEEK read back
# byte for byte and COUNTER stays where it was.
knob_check() {
	local p=$1 dflt=$2 on=$3 ctr=$4 min=$5 bs=$6 seek=$7 what=$8 c0 n
	expect_eq "$(cat $P/$p)" "$dflt" "$p's default"
	c0=$(cat $P/$ctr)
	echo "$on" >$P/$p
	log "fio verify, $p=$on: $what"
	fio_verify 2M "$bs"
	echo "$dflt" >$P/$p
	n=$(($(cat $P/$ctr) - c0))
	log "server: $n $what"
	[ "$n" -ge "$min" ] || fail "$n $what, expected $min or more"
	echo 0 >$P/$p
	c0=$(cat $P/$ctr)
	dd if="$W/rand" of="$D" bs=4k count=16 seek="$seek" oflag=direct status=none ||
		fail "dd 4 KiB blocks, $p=0"
	dd if="$D" of="$W/back" bs=4k count=16 skip="$seek" iflag=direct status=none
	echo "$dflt" >$P/$p
	cmp <(head -c 64k "$W/rand") "$W/back" || fail "4 KiB blocks written with $p=0 differ"
	expect_eq "$(cat $P/$ctr)" "$c0" "$what with $p=0"
}

# ---- data, byte for byte -----------------------------------------------
# Once each way (O_DIRECT, and the page cache with fsync); the offsets,
# sizes and ext4 in bulk are test/guest/blk-fs.sh's.
log "dd and cmp"
head -c ${dd_mb}M /dev/urandom >"$W/rand" || fail "random data"
blk_dd_check 0 oflag=direct "$dd_mb" "$NB"
blk_dd_check 517 conv=fsync "$dd_mb" "$NB"
# Sub-page I/O at an odd sector, both ways.
head -c 1536 /dev/urandom >"$W/small"
dd if="$W/small" of="$D" bs=512 seek=12345 oflag=direct status=none ||
	fail "dd 1536 B"
dd if="$NB" of="$W/nb" bs=512 skip=12345 count=3 iflag=direct status=none
cmp "$W/small" "$W/nb" || fail "1536 B at sector 12345 differs on null_blk"
dd if="$D" of="$W/back" bs=512 skip=12345 count=3 iflag=direct status=none
cmp "$W/small" "$W/back" || fail "1536 B at sector 12345 read back differs"

# ---- fio verify ---------------------------------------------------------
# 2 MiB of random writes of 512 B to 1 MiB, read back and checked: the
# inline starts and submits counted below come mostly from here (fio in
# bulk is blk-fs.sh's).
log "fio verify, 2M"
fio_verify 2M

# ---- in-capsule WRITEs --------------------------------------------------
# In-capsule WRITEs: those of at most incapsule_data_size (4 KiB) carry
# their data in the command; the server copies it into its bio's pages.
# Off, a 4 KiB WRITE registers its pages again.
knob_check incapsule_data_size 4096 4096 test_incapsule_writes 500 4k 777 \
	"in-capsule WRITEs"
# Every reply to a command with a token was a SEND_WITH_INV of it.
expect_eq "$(cat $P/test_local_inv)" 0 "replies that did not invalidate their token"
# null_blk ended every bio in softirq: the server posted from its end_io.
expect_eq "$(cat $P/test_hardirq_ends)" 0 "bios ended in hardirq (irqmode=1)"
# The server's completions come in its workqueue: READs and WRITEs start
# in their recv callback, WRITE bios go from their data's completion.
n=$(cat $P/test_inline_starts)
log "server: $n commands started in their recv callback, $(cat $P/test_inline_submits) WRITE bios submitted from their data's completion"
[ "$n" -ge 50 ] || fail "$n commands started in their completion, expected 50 or more"
n=$(cat $P/test_inline_submits)
[ "$n" -ge 20 ] || fail "$n WRITE bios submitted from their completion, expected 20 or more"

# ---- a command that finds no credit --------------------------------------
# Its registration is invalidated and the request is sent again later.
# The server's side: every 3rd reply finds none and waits in a work item,
# and every 4th command started in its completion finds no RDMA slot and
# starts again from the work item (its pages given back first).
log "fio verify, every 5th command and every 3rd reply without a credit"
echo 5 >$P/test_busy_every
echo 3 >$P/test_reply_busy_every
echo 4 >$P/test_start_busy_every
dmesg_mark
fio_verify 4M 64k
echo 0 >$P/test_busy_every
echo 0 >$P/test_reply_busy_every
echo 0 >$P/test_start_busy_every
seen=$(cat $P/test_start_busy_seen)
[ "$seen" -ge 20 ] || fail "test_start_busy_every deferred $seen starts, expected 20 or more"
echo 1 >$P/inline_depth
seen=$(cat $P/test_busy_seen)
[ "$seen" -ge 20 ] || fail "test_busy_every refused $seen commands, expected 20 or more"
seen=$(cat $P/test_reply_busy_seen)
[ "$seen" -ge 20 ] || fail "test_reply_busy_every held back $seen replies, expected 20 or more"
dmesg_new | grep -q 'krdma_blk' && { dmesg_new; fail "dmesg lines from krdma_blk"; }

# ---- bad commands -------------------------------------------------------
log "bad commands"
blk_err ENOENT "map name=krdmablk1 addr=$ADDR export=nosuch"
test -b /dev/krdmablk1 && fail "krdmablk1 exists after a failed map"
blk_err EEXIST "map name=krdmablk0 addr=$ADDR export=e0"
blk_err EEXIST "export name=e0 path=$NB addr=$MY_IP:$((PORT + 1))"
blk_err EINVAL "map name=krdmablk1 export=e0"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR"
blk_err EINVAL "export name=x addr=$ADDR"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 wq"
blk_err EINVAL "frobnicate name=x"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 queues=lots"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 queues=0"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 colour=red"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 loss_tmo_ms=0"
blk_err EINVAL "map name=krdmablk1 addr=$ADDR export=e0 reconnect_delay_ms=5"
blk_err EINVAL "unmap name=krdmablk0 loss_tmo_ms=1000"
blk_err EINVAL "map name=bad/name addr=$ADDR export=e0"
blk_err EINVAL "map name=krdmablk1 addr=10.1.2.3 export=e0"
blk_err EINVAL "unmap name=krdmablk0 ro"
blk_err ENOENT "unmap name=nosuch"
blk_err ENOENT "unexport name=nosuch"
blk_err ENOENT "export name=e9 path=/dev/nosuch addr=$MY_IP:$((PORT + 2))"
blk_err EBUSY "export name=e9 path=$NB addr=$MY_IP:$((PORT + 2))"
blk_err EINVAL ""

# ---- a reply that never comes -------------------------------------------
# The request times out; that fails its connection (krdma_conn_fail()),
# the queue's session reconnects, and the request is sent again on the new
# connection: the read succeeds, with the right data.
log "a reply that never comes"
echo 2000 >/sys/block/krdmablk0/queue/io_timeout || fail "io_timeout"
echo 1 >$P/test_drop_replies
dmesg_mark
t0=$SECONDS
dd if="$D" of="$W/back" bs=4k skip=77 count=1 iflag=direct status=none ||
	fail "a read whose first reply never came failed"
[ $((SECONDS - t0)) -le 30 ] || fail "the read took $((SECONDS - t0)) s"
dd if="$NB" of="$W/nb" bs=4k skip=77 count=1 iflag=direct status=none
cmp "$W/back" "$W/nb" || fail "the read sent again returned other data"
expect_eq "$(cat $P/test_drop_replies)" 0 "replies left to drop"
dmesg_new | grep -q 'krdmablk0: queue [0-9]*: request timed out; failing the connection' ||
	{ dmesg_new; fail "no dmesg line for the timeout"; }
dmesg_new | grep -q 'krdmablk0: queue [0-9]*: reconnected, 1 requests sent again' ||
	{ dmesg_new; fail "no dmesg line for the reconnect"; }

# ---- a timeout while the queue greets the export ---------------------------
# The same, with every HELLO answered 3 s late and io_timeout 1 s: the
# request's timer fires again and again while its queue greets the export
# on the new connection.  It was sent on the failed one: the new one is
# left alone (one timeout line, one reconnect), and the read succeeds.
log "a timeout while the queue greets the export"
echo 1000 >/sys/block/krdmablk0/queue/io_timeout || fail "io_timeout 1000"
echo 3000 >$P/test_hello_delay_ms
echo 1 >$P/test_drop_replies
dmesg_mark
t0=$SECONDS
dd if="$D" of="$W/back" bs=4k skip=78 count=1 iflag=direct status=none ||
	fail "a read that timed out during the greeting failed"
t=$((SECONDS - t0))
echo 0 >$P/test_hello_delay_ms
echo 2000 >/sys/block/krdmablk0/queue/io_timeout
dd if="$NB" of="$W/nb" bs=4k skip=78 count=1 iflag=direct status=none
cmp "$W/back" "$W/nb" || fail "the read sent again after a slow greeting returned other data"
n=$(dmesg_new | grep -c 'krdmablk0: queue [0-9]*: request timed out; failing the connection')
expect_eq "$n" 1 "timeouts that failed a connection (the new one must be left alone)"
n=$(dmesg_new | grep -c 'krdmablk0: queue [0-9]*: reconnected')
expect_eq "$n" 1 "reconnects"
log "read back after $t s, one reconnect"

# ---- fio verify across reconnects -----------------------------------------
# Replies dropped while fio writes and verifies: each costs a reconnect of
# its queue, and not one I/O error reaches fio.  On the debug kernel in
# make stress only (15 s): make check has the single dropped reply above
# and the injected failures below.
if [ "$KLINE" != debug ] || [ "${KRDMA_STRESS:-0}" = 1 ]; then
	log "fio verify across reconnects"
	echo 3 >$P/test_drop_replies
	dmesg_mark
	fio_verify 4M 64k
	expect_eq "$(cat $P/test_drop_replies)" 0 "replies left to drop"
	n=$(dmesg_new | grep -c 'krdmablk0: queue [0-9]*: reconnected')
	[ "$n" -ge 1 ] || { dmesg_new; fail "fio ran across no reconnect"; }
	log "$n reconnects during fio verify"
fi

# ---- fio verify across injected completion failures -----------------------
# Each queue's connection is armed (conns/NAME/inject) to fail its 10th
# reply's receive with another status, as a device would report it: the
# queue's session reconnects and sends its requests again, and fio sees no
# error.
log "fio verify across injected completion failures"
sts=(rem_access_err retry_exc_err rnr_retry_exc_err loc_prot_err)
dmesg_mark
armed=()
q=0
for sd in $KRDMA_SYS/sessions/*; do
	c=$(cat "$sd/conn")
	[ -e "$KRDMA_SYS/conns/$c/inject" ] || continue
	echo "${sts[$((q % ${#sts[@]}))]} op=recv nth=10" >"$KRDMA_SYS/conns/$c/inject" ||
		fail "arm $c"
	armed+=("$c")
	q=$((q + 1))
done
[ ${#armed[@]} -ge 1 ] || fail "no queue connection to arm: $(ls $KRDMA_SYS/sessions)"
fio_verify 2M 64k
# fio runs on one CPU at a time, and blk-mq sends its I/O to that CPU's
# queue: a queue that gets fewer than 10 replies never fires (make check,
# debug, 2026-12-02: 1 of 2).  At least one must, each one that did must
# cost its queue a reconnect, and fio must see no error.
inj=$(dmesg_new | grep -c 'injected: a recv completion fails with')
[ "$inj" -ge 1 ] && [ "$inj" -le "${#armed[@]}" ] ||
	fail "injected failures: got $inj, expected 1 to ${#armed[@]} (queues armed: ${armed[*]})"
n=$(dmesg_new | grep -c 'krdmablk0: queue [0-9]*: reconnected')
[ "$n" -ge "$inj" ] || { dmesg_new | grep krdma; fail "$n reconnects for $inj injected failures"; }
log "$inj of ${#armed[@]} injected failures fired, $n reconnects, fio clean"

# ---- a registration whose post fails --------------------------------------
# The 3rd pool registration from now fails its post with -ENOTCONN before
# it reaches the device (krdma's fault_reg_post_fail), as siw's post does
# on a QP that left RTS an instant before its connection's failure is
# known: make stress's 6.1 blk-pair over siw, 2026-12-02, saw
# "registration failed (-107)" and an I/O error reach fio during a link
# flap.  The queue's connection must fail, its session reconnect and the
# request be sent again: no I/O error, the data read back intact.
log "a registration whose post fails"
KP=/sys/module/krdma/parameters/fault_reg_post_fail
dmesg_mark
echo 3 >$KP || fail "fault_reg_post_fail"
dd if="$W/rand" of="$D" bs=1M oflag=direct status=none ||
	{ echo 0 >$KP; fail "dd to $D with a registration's post failed"; }
dd if="$D" of="$W/back" bs=1M count=$dd_mb iflag=direct status=none ||
	{ echo 0 >$KP; fail "dd from $D after a registration's post failed"; }
left=$(cat $KP)
echo 0 >$KP
expect_eq "$left" 0 "registration posts left to fail"
cmp "$W/rand" "$W/back" || fail "data read back after the failed post differs"
dmesg_fetch
new_has "I/O error" && fail "an I/O error reached the block layer"
new_count "posting a registration failed (-107): failing the connection"
expect_eq "$NEW_N" 1 "lines of the failed post"
new_count "queue 0: reconnected"
n=$NEW_N
new_count "queue 1: reconnected"
[ $((n + NEW_N)) -ge 1 ] || fail "no queue reconnected after the failed post"

# ---- a hostile client ----------------------------------------------------
# test/blkhostile: a client that breaks the protocol.  Each way of doing it
# is one load of the module, which checks the server's answer from its side
# (see its header); here, the server's one line for each connection it
# closed, and that the export serves krdmablk0 on as before.  overrun
# needs commands that stay unanswered: an export of a null_blk whose
# requests take 2 s each (configfs), and misaligned one whose logical
# blocks are larger than a sector (4 KiB).
log "a hostile client"
hko=$BUILD/blkhostile/krdma_blk_hostile.ko
[ -f "$hko" ] || fail "$hko not built"
CFS=/sys/kernel/config
mountpoint -q $CFS || mount -t configfs none $CFS || fail "mount configfs"
mkdir $SLOW || fail "configfs null_blk"
for a in "size 16" "blocksize 4096" "memory_backed 1" "irqmode 2" "completion_nsec 2000000000" "power 1"; do
	echo "${a#* }" >"$SLOW/${a%% *}" || fail "null_blk $a"
done
SNB=/dev/${SLOW##*/}	# null_blk names it after its configfs item
wait_for 10 test -b "$SNB" || fail "$SNB never appeared"
blk export name=eslow path=$SNB addr=$MY_IP:$((PORT + 3)) || fail "export eslow"
# 4 KiB of 0xa5 for badcmd's READ to find.
head -c 4096 /dev/zero | tr '\0' '\245' >"$W/a5"
dd if="$W/a5" of="$NB" bs=4k seek=1000 oflag=direct status=none || fail "dd a5"
conns0=$(ls $KRDMA_SYS/conns | wc -l)
# hostile MODE EXPORT PORT 'WHY' [PARAMS] (WHY: the server's line, '' for
# none; PARAMS: more of the module's)
hostile() {
	local why=$4 l
	ratelimit_pace
	dmesg_mark
	# shellcheck disable=SC2086	# $5: words
	insmod "$hko" addr=$MY_IP port="$3" export="$2" mode="$1" depth=4 \
		sector=8000 fill=0xa5 ${5:-} ||
		{ dmesg_new; fail "hostile client, $1: the server did not answer as it must"; }
	rmmod krdma_blk_hostile || fail "rmmod krdma_blk_hostile"
	dmesg_fetch
	for l in "${KMSG_NEW[@]}"; do
		[[ $l != *'krdma_blk_hostile: '* ]] || echo "# $l"
	done
	if [ -n "$why" ]; then
		new_count "krdma_blk: export $2: "
		expect_eq "$NEW_N" 1 "$1: lines from the server"
		new_has "krdma_blk: export $2: $why" ||
			{ dmesg_new; fail "$1: the server's line does not say '$why'"; }
	fi
}
hostile badcmd e0 $PORT ''
new_has 'krdma_blk: ' && { dmesg_new; fail "badcmd: lines from the server"; }
hostile early e0 $PORT "command before HELLO from the client; closing its connection"
# A client that connects and says nothing is closed when the server's
# hello_timeout_ms is up (10 s by default; 1 s here).
hto=$(cat /sys/module/krdma_blk/parameters/hello_timeout_ms) || fail "hello_timeout_ms"
echo 1000 >/sys/module/krdma_blk/parameters/hello_timeout_ms || fail "hello_timeout_ms"
hostile silent e0 $PORT "no HELLO from the client in 1000 ms; closing its connection"
echo "$hto" >/sys/module/krdma_blk/parameters/hello_timeout_ms
hostile hello2 e0 $PORT "second HELLO from the client; closing its connection"
hostile garbage e0 $PORT "not a krdma-blk message from the client; closing its connection"
hostile badlen e0 $PORT "bad message length from the client; closing its connection"
hostile capsread e0 $PORT "in-capsule data on a command that is not a WRITE from the client; closing its connection"
hostile capsshort e0 $PORT "bad message length from the client; closing its connection"
hostile noreplies e0 $PORT "the client takes no replies; closing its connection"
hostile forged e0 $PORT ''
hostile overrun eslow $((PORT + 3)) "more commands than the queue depth from the client; closing its connection"
# eslow's blocks are 4 KiB: a READ from sector 1 is refused, not served
# at an address the device truncates.
hostile misaligned eslow $((PORT + 3)) ''
new_has 'krdma_blk: ' && { dmesg_new; fail "misaligned: lines from the server"; }
hostile wrongname e0 $PORT "command before HELLO from the client; closing its connection"
# HELLOs naming another export, every second for 6 s: refused, and the
# connection closed 2 s after its set-up, not 2 s after the last of them
# (the server's deadline is not started again by a refused HELLO): the
# client times the server's last refusal (not the close, whose DREQ can
# come late), and the server's line counts the HELLOs it refused.
echo 2000 >/sys/module/krdma_blk/parameters/hello_timeout_ms || fail "hello_timeout_ms"
hostile rehello e0 $PORT "no HELLO naming it from the client in 2000 ms, " hello_ms=2000
# The server's count: 2 (or 3, one racing its deadline) of the HELLOs
# sent every second; a deadline started again by each would see 6.
new_has "in 2000 ms, 2 refused; closing" || new_has "in 2000 ms, 3 refused; closing" ||
	{ dmesg_new | grep krdma_blk; fail "rehello: the server refused other than 2 or 3 HELLOs"; }
echo "$hto" >/sys/module/krdma_blk/parameters/hello_timeout_ms
# Every connection the server closed is gone on both sides.
conns_back() { [ "$(ls $KRDMA_SYS/conns | wc -l)" = "$conns0" ]; }
wait_for 20 conns_back || fail "connections left: $(ls $KRDMA_SYS/conns)"
blk "unexport name=eslow" || fail "unexport eslow"
echo 0 >$SLOW/power && rmdir $SLOW || fail "remove the slow null_blk"
# krdmablk0 still reads and writes through e0, byte for byte.
dd if="$W/rand" of="$D" bs=1M seek=40 oflag=direct status=none || fail "dd after the hostile client"
dd if="$D" of="$W/back" bs=1M skip=40 count=$dd_mb iflag=direct status=none || fail "dd back after the hostile client"
cmp "$W/rand" "$W/back" || fail "data after the hostile client differs"

# ---- a hostile server ----------------------------------------------------
# test/blkhostile/krdma_blk_evilsrv.ko: a server that answers a HELLO
# with a size whose bytes are no loff_t (the map fails), every command
# with -ENOMEM (a dispatch status, no device's error: the read fails with
# an I/O error), or with garbage (the client fails the connection at
# once, its session reconnects, the read fails after its retries).
log "a hostile server"
eko=$BUILD/blkhostile/krdma_blk_evilsrv.ko
[ -f "$eko" ] || fail "$eko not built"
EADDR=$MY_IP:$((PORT + 8))
evil() {
	insmod "$eko" addr=$MY_IP port=$((PORT + 8)) export=ev mode="$1" ||
		fail "insmod krdma_blk_evilsrv mode=$1"
}
evil_map() {
	blk map name=krdmablk3 addr=$EADDR export=ev "$@" || fail "map of the $mode server"
	wait_for 10 test -b /dev/krdmablk3 || fail "/dev/krdmablk3 never appeared ($mode)"
}
evil_end() {
	blk "unmap name=krdmablk3" || fail "unmap krdmablk3 ($mode)"
	rmmod krdma_blk_evilsrv || fail "rmmod krdma_blk_evilsrv ($mode)"
}
mode=hugesize
evil $mode
blk_err EPROTO "map name=krdmablk3 addr=$EADDR export=ev"
test -b /dev/krdmablk3 && fail "krdmablk3 exists after a map of a size no disk has"
rmmod krdma_blk_evilsrv || fail "rmmod krdma_blk_evilsrv ($mode)"
mode=enomem
evil $mode
evil_map
out=$(dd if=/dev/krdmablk3 of=/dev/null bs=4k count=1 iflag=direct 2>&1) &&
	fail "a read the server answered with -ENOMEM succeeded"
[[ $out == *"Input/output error"* ]] ||
	fail "a read the server answered with -ENOMEM: '$out', expected an I/O error"
evil_end
mode=garbage
evil $mode
evil_map reconnect_delay_ms=100
dmesg_mark
t0=$SECONDS
dd if=/dev/krdmablk3 of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null &&
	fail "a read the server answered with garbage succeeded"
dmesg_fetch
new_has "malformed reply from the server; failing the connection" ||
	{ dmesg_new | tail -n 5; fail "garbage: the client did not fail the connection"; }
log "garbage: the read failed after $((SECONDS - t0)) s"
evil_end

# ---- addresses ------------------------------------------------------------
# krdma-blk reads addresses as the control grammar of krdma does
# (krdma_parse_addr()): an export and a map over IPv6, and over an IPv4
# address longer than 16 characters with its port (both were refused with
# EINVAL before).  A small configfs null_blk backs them.
log "addresses: IPv6, a long IPv4"
ADRB=$CFS/nullb/krdmaaddr
mkdir $ADRB || fail "configfs null_blk for the address exports"
for a in "size 64" "memory_backed 1" "power 1"; do
	echo "${a#* }" >"$ADRB/${a%% *}" || fail "null_blk $a"
done
ANB=/dev/${ADRB##*/}
wait_for 10 test -b "$ANB" || fail "$ANB never appeared"
ip -6 addr add fd00:79::1/64 dev eth0 nodad || fail "ip -6 addr add"
ip addr add 192.168.179.201/24 dev eth0 || fail "ip addr add"
head -c 1M /dev/urandom >"$W/addr" || fail "random data"
i=0
for a in "[fd00:79::1]:$((PORT + 5))" "192.168.179.201:$((PORT + 6))"; do
	i=$((i + 1))
	blk export name=ea$i path=$ANB addr=$a || fail "export at $a"
	blk map name=krdmablk2 addr=$a export=ea$i || fail "map at $a"
	wait_for 10 test -b /dev/krdmablk2 || fail "/dev/krdmablk2 (over $a) never appeared"
	dd if="$W/addr" of=/dev/krdmablk2 bs=1M seek=$i oflag=direct status=none ||
		fail "dd over $a"
	dd if=/dev/krdmablk2 of="$W/back" bs=1M skip=$i count=1 iflag=direct status=none ||
		fail "dd back over $a"
	cmp "$W/addr" "$W/back" || fail "data over $a differs"
	blk "unmap name=krdmablk2" || fail "unmap over $a"
	blk "unexport name=ea$i" || fail "unexport ea$i"
done
blk_err EINVAL "export name=ea9 path=$ANB addr=[fd00:79::1]"
blk_err EINVAL "export name=ea9 path=$ANB addr=[2001:db8::1%lo]:7"
ip -6 addr del fd00:79::1/64 dev eth0
ip addr del 192.168.179.201/24 dev eth0
echo 0 >$ADRB/power && rmdir $ADRB || fail "remove the address null_blk"

# ---- a read-only export -------------------------------------------------
log "read-only export"
# Same null_blk: a second export of it, read-only (the first has it
# exclusively, so export e0 goes first).  Made without wq, it takes its
# completions in softirq: every command starts from its work item.
blk "unmap name=krdmablk0" || fail "unmap krdmablk0"
blk "unexport name=e0" || fail "unexport e0"
blk export name=ero path=$NB addr=$ADDR ro || fail "export ro"
starts=$(cat $P/test_inline_starts)
blk map name=krdmablk1 addr=$ADDR export=ero || fail "map ro"
wait_for 10 test -b /dev/krdmablk1 || fail "/dev/krdmablk1 never appeared"
expect_eq "$(blockdev --getro /dev/krdmablk1)" 1 "ro disk"
dd if=/dev/krdmablk1 of="$W/ro-before" bs=1M count=1 iflag=direct status=none ||
	fail "read the ro export"
dd if="$NB" of="$W/nb" bs=1M count=1 iflag=direct status=none
cmp "$W/ro-before" "$W/nb" || fail "ro export reads other data than null_blk"
expect_eq "$(cat $P/test_inline_starts)" "$starts" "commands an export without wq started in their completion"
dd if=/dev/zero of=/dev/krdmablk1 bs=1M count=1 oflag=direct status=none 2>/dev/null &&
	fail "write to the read-only disk succeeded"
blk "unmap name=krdmablk1" || fail "unmap krdmablk1"
# Mapped read-write anyway (tests only): the server refuses the write with
# -EROFS, which the block layer reports as an I/O error.
echo 1 >/sys/module/krdma_blk/parameters/test_ignore_ro
blk map name=krdmablk2 addr=$ADDR export=ero || fail "map ro (ignore_ro)"
echo 0 >/sys/module/krdma_blk/parameters/test_ignore_ro
wait_for 10 test -b /dev/krdmablk2 || fail "/dev/krdmablk2 never appeared"
err=$(dd if=/dev/zero of=/dev/krdmablk2 bs=1M count=1 oflag=direct status=none 2>&1) &&
	fail "write to the read-only export succeeded"
[[ $err == *"Input/output error"* ]] || fail "write to ro export: '$err', expected EIO"
dd if="$NB" of="$W/nb" bs=1M count=1 iflag=direct status=none
cmp "$W/ro-before" "$W/nb" || fail "the refused write changed the data"
blk "unmap name=krdmablk2" || fail "unmap krdmablk2"
blk "unexport name=ero" || fail "unexport ero"

# during_io WHAT CMD: CMD (a control command) while dd writes (and reads)
# $D in a loop: CMD returns within 60 s, and so does the I/O, with dd's
# failure (exit 3), not a hang.
during_io() {
	local what=$1 cmd=$2 t0
	log "$what during I/O"
	io_loop /dev/null
	nap 3
	kill -0 "$bgpid" 2>/dev/null || fail "I/O ended before $what"
	t0=$SECONDS
	blk "$cmd" || fail "$what during I/O"
	[ $((SECONDS - t0)) -le 60 ] || fail "$what took $((SECONDS - t0)) s"
	bg_wait 60 "$what"
	expect_eq "$BG_RC" 3 "I/O after $what (3: dd failed)"
}

# ---- bios that end in hardirq context -----------------------------------
# null_blk again, completing from a timer: each bio's end_io runs in
# hardirq context, where krdma cannot post, and the server goes on from
# its work item.  The rest of the test runs on it.
log "dd and cmp, bios ending in hardirq"
rmmod null_blk || fail "rmmod null_blk (irqmode=1)"
nullb_load 2
blk export name=e0 path=$NB addr=$ADDR || fail "export e0 again"
blk map name=krdmablk0 addr=$ADDR export=e0 || fail "map again"
wait_for 10 test -b "$D" || fail "$D never appeared (again)"
dd if="$W/rand" of="$D" bs=1M seek=7 oflag=direct status=none ||
	fail "dd to $D (irqmode=2)"
dd if="$D" of="$W/back" bs=1M skip=7 count=$dd_mb iflag=direct status=none ||
	fail "dd from $D (irqmode=2)"
cmp "$W/rand" "$W/back" || fail "data read back (irqmode=2) differs"
n=$(cat $P/test_hardirq_ends)
[ "$n" -ge $((dd_mb * 2)) ] || fail "$n bios ended in hardirq, expected $((dd_mb * 2)) or more"
# e0 is without wq: a command's work goes to the CPU's high-priority
# worker while its queue is at most hipri_depth deep (0, never, by
# default), else to the export's unbound ones.  All of them there, byte
# for byte; then none.
knob_check hipri_depth 0 1000 test_hipri_cmds 100 64k 999 \
	"commands on the high-priority worker"
# Deep or shallow, by the client's count: each command carries its
# queue's depth at sending (krdma_blk_cmd.qd), since a server that
# answers faster than the device delivers finds few unanswered under a
# deep client.  hipri_depth=1: fio's READs one at a time take the
# high-priority worker, nearly every one.  At fio depth 32 how many do
# is the loopback's to say, not the code's (one guest: the server's
# work on the submitter's CPU can hold the client's queue itself one
# deep, README), so that count is logged only; test/blkhostile's qd
# client then checks the choice by the claimed depth, one READ at a time.
# hipri_at DEPTH N: N random 4 KiB READs at DEPTH; HN: how many of them
# took the high-priority worker.
hipri_at() {
	local c0 kb
	c0=$(cat $P/test_hipri_cmds)
	(cd "$W" && fio --name=qd --filename="$D" --direct=1 --ioengine=libaio \
		--rw=randread --bs=4k --iodepth="$1" --size=32M --number_ios="$2" \
		--output-format=terse --terse-version=3 >"$W/fio.out" 2>"$W/fio.err") ||
		{ cat "$W/fio.err"; fail "fio random READs at depth $1"; }
	HN=$(($(cat $P/test_hipri_cmds) - c0))
	# terse v3: field 6 is the KiB read.
	kb=$(grep '^3;' "$W/fio.out" | cut -d';' -f6 | head -n 1)
	expect_eq "$kb" $(($2 * 4)) "KiB fio read at depth $1"
	log "depth $1: $HN of $2 READs on the high-priority worker"
}
echo 1 >$P/hipri_depth
hipri_at 1 200
[ "$HN" -ge 180 ] || fail "$HN of 200 READs at depth 1 on the high-priority worker, expected 180 or more"
# At depth 32 commands go to both workers as the depth moves: fio's
# data and byte count are checked, the count of the high-priority ones
# only logged (2000 READs in make stress, 200 in make check).
hipri_at 32 $([ "${KRDMA_STRESS:-0}" = 1 ] && echo 2000 || echo 200)
# 10 READs each claiming depths 1, 32 and 0 (not told), each answered
# before the next, so that the server counts one unanswered: the 10 at
# 1 and the 10 at 0 (the server's own count then) take the high-priority
# worker, the 10 at 32 do not; each returns its 4 KiB of 0xa5.
dd if="$W/a5" of="$NB" bs=4k seek=1000 oflag=direct status=none || fail "dd a5 for qd"
c0=$(cat $P/test_hipri_cmds)
hostile qd e0 $PORT ''
expect_eq "$(($(cat $P/test_hipri_cmds) - c0))" 20 \
	"READs of the qd client on the high-priority worker"
echo 0 >$P/hipri_depth

# ---- unmap during I/O ---------------------------------------------------
during_io unmap "unmap name=krdmablk0"
test -b "$D" && fail "$D still there after unmap"

# ---- unexport during I/O ------------------------------------------------
# The export is gone for good: the session is lost after 3 s.
blk map name=krdmablk0 addr=$ADDR export=e0 reconnect_delay_ms=500 loss_tmo_ms=3000 ||
	fail "map for unexport"
wait_for 10 test -b "$D" || fail "$D never appeared (unexport)"
during_io unexport "unexport name=e0"
dd if="$D" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null &&
	fail "read from a map whose export is gone succeeded"
blk "unmap name=krdmablk0" || fail "unmap after unexport"
rmmod krdma_blk || fail "rmmod krdma_blk"
rmmod null_blk || fail "rmmod null_blk"
echo "PASS"
