#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue 19, krdma-blk across two guests.  B exports a memory-backed
# null_blk, A maps it (2 queues, reconnect every 200 ms), then:
# 1. dd both ways: what A writes (8 MiB and 1536 B at an odd sector) A
#    reads back byte for byte, and B finds on its null_blk (sha256 passed
#    back through the lab directory); what B writes on its null_blk A
#    reads through the map (sha256).
# 2. fio verify across the link: random writes of 512 B to 1 MiB, then
#    random reads and writes mixed, each write checked (verify_backlog):
#    fio exits 0 with 0 errors (terse field 5), no complaint.
# 3. Link flaps during fio verify: A takes its own NIC (eth0, under
#    rxe0/siw0) down for 1 to 3 s and up again, KRDMA_BLK_FLAPS times
#    (default 3; 10 in make stress), while fio verify runs in a
#    loop.  A's side, since a send that finds no route fails A's queue
#    pairs at once on rxe: a flap costs reconnects, B meanwhile seeing
#    nothing until A's deferred disconnects come after link up.  The next
#    flap waits until every session is connected again (else a connect
#    request in flight when the link goes down could break rxe's QP1, see
#    README).  Every fio run exits 0 with 0 errors; no I/O error reaches
#    the block layer; over rxe the flaps cost at least one reconnect
#    (counted by the sessions and by krdma_blk's "reconnected" lines; a
#    flap that finds nothing posted while down is ridden out by rxe's
#    retransmits, as a 3 s one was on 6.1 on 2026-11-29); over siw a flap
#    may cost none (6.12's siw rode every one out on TCP, 6.1's
#    reconnected at each): logged, not required;
#    no "session lost", "request timed out" or bad reply line.
# 3b. The server's link flaps during fio verify: B takes its NIC down for
#    5 s, KRDMA_BLK_SRV_FLAPS times (default 2; 5 in make stress), each
#    once every session of A's is connected again.  A's requests in
#    flight meanwhile are not acknowledged; its queue pairs fail when
#    rxe's retries run out or a session misses its heartbeats, and the
#    sessions reconnect once B is back.  Every fio run exits 0 with 0
#    errors, every session is connected within 60 s of B's link up, and
#    no line says a session was lost or a request failed.  Over rxe the
#    flaps must cost a reconnect (siw's TCP may ride a 5 s outage out).
# 4. Unmap during I/O, unexport (on B) during I/O and rmmod krdma_blk (on
#    B) during I/O, with loss_tmo_ms=3000: the command returns within
#    60 s, A's dd fails with an I/O error within 60 s, A unmaps; after
#    each, A has no session and no connection left; at the end B has no
#    connection and no listener left.
# Sizes: KRDMA_BLK_FIO_SIZE (8M a job; 16M in make stress).
# Not in make check (the empty "# check-kernel:"), make stress only: ten
# flaps take 105 s on 6.12 over rxe with 8M a job; at make stress's 16M
# 120 s over rxe and 124 s over siw, on 6.1 133 and 128 s (2026-11-25).
# And over rxe a READ response that goes missing between the guests can
# trip rxe's WARN_ON_ONCE in rxe_completer (README, known rxe bugs),
# which fails the run whatever krdma does: it did in three boots of four
# on 6.12, in plain fio verify before any flap, the test itself passing.
# topo: pair
# dev: rxe siw
# kernel: 6.1 6.12
# check-kernel:
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../blk-lib.sh"

blk_need

PORT=7482
NB=/dev/nullb0
D=/dev/krdmablk0
W=/tmp/blk-pair
flaps=${KRDMA_BLK_FLAPS:-3} fio_size=${KRDMA_BLK_FIO_SIZE:-8M} dd_mb=8
sflaps=${KRDMA_BLK_SRV_FLAPS:-2}
if [ "${KRDMA_STRESS:-0}" = 1 ]; then
	flaps=${KRDMA_BLK_FLAPS:-10} fio_size=${KRDMA_BLK_FIO_SIZE:-16M}
	sflaps=${KRDMA_BLK_SRV_FLAPS:-5}
fi
bgpid=

region_sha() {	# region_sha DEV OFFSET_MIB MIB
	dd if="$1" bs=1M skip="$2" count="$3" iflag=direct status=none |
		sha256sum | cut -d' ' -f1
}

rdma_dev_up
krdma_load
mkdir -p "$W"

# ---- B: the server --------------------------------------------------------
if [ "$ROLE" = B ]; then
	cleanup() {
		set +e
		ip link set eth0 up
		if [ -w "$BLK_CTL" ]; then
			echo "unexport name=e0" >"$BLK_CTL" 2>/dev/null
		fi
		lsmod | grep -q '^krdma_blk ' && rmmod krdma_blk
		lsmod | grep -q '^null_blk ' && rmmod null_blk
		rm -rf "$W"
		put_val B-done 1
	}
	trap cleanup EXIT
	lsmod | grep -q '^null_blk ' && rmmod null_blk
	modprobe null_blk queue_mode=2 irqmode=0 memory_backed=1 gb=1 nr_devices=1 ||
		fail "modprobe null_blk"
	wait_for 10 test -b "$NB" || fail "$NB never appeared"
	insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
	# B's own data, for A to read through the map.
	head -c 4M /dev/urandom >"$W/b-rand" || fail "random data"
	dd if="$W/b-rand" of="$NB" bs=1M seek=700 oflag=direct status=none ||
		fail "dd to $NB"
	blk export name=e0 path=$NB addr=$MY_IP:$PORT || fail "export e0"
	put_val exported "$(sha256sum <"$W/b-rand" | cut -d' ' -f1)"

	# 1. What A wrote, as B's null_blk holds it.
	wait_val 120 a-wrote
	read -r off mb sector <<<"$VAL"
	put_val b-saw "$(region_sha "$NB" "$off" "$mb") $(dd if="$NB" bs=512 \
		skip="$sector" count=3 iflag=direct status=none | sha256sum | cut -d' ' -f1)"

	# 3b. B's link down for 5 s while A's fio verify runs, when A says.
	for i in $(seq 1 "$sflaps"); do
		wait_val 600 "sflap-$i"
		ip link set eth0 down || fail "B's flap $i: link down"
		nap 5
		ip link set eth0 up || fail "B's flap $i: link up"
		log "B's flap $i: link up again"
		put_val "sflap-up-$i" 1
	done

	# 4. Unexport during A's I/O; export again for the rmmod once A
	# unmapped (A's sessions would find it again before their loss).
	wait_val 600 io-unexport
	t0=$SECONDS
	blk "unexport name=e0" || fail "unexport during I/O"
	t=$((SECONDS - t0))
	log "unexport during I/O took $t s"
	[ $t -le 60 ] || fail "unexport during I/O took $t s"
	put_val unexported 1
	wait_val 120 a-unmapped
	blk export name=e0 path=$NB addr=$MY_IP:$PORT || fail "export e0 again"
	put_val exported-again 1

	# 4. rmmod krdma_blk during A's I/O.
	wait_val 300 io-rmmod
	t0=$SECONDS
	timeout 60 rmmod krdma_blk
	rc=$?
	t=$((SECONDS - t0))
	put_val rmmod-done "$rc $t"
	log "rmmod krdma_blk during I/O: exit $rc after $t s"
	[ $rc = 0 ] || fail "rmmod krdma_blk during I/O: exit $rc after $t s"
	wait_for 30 sysfs_empty $KRDMA_SYS/conns ||
		fail "connections left 30 s after rmmod krdma_blk: $(ls $KRDMA_SYS/conns)"
	sysfs_empty $KRDMA_SYS/listeners ||
		fail "listeners left after rmmod krdma_blk: $(ls $KRDMA_SYS/listeners)"
	wait_val 300 a-finished
	rmmod null_blk || fail "rmmod null_blk"
	echo PASS
	exit 0
fi

# ---- A: the client ----------------------------------------------------------
cleanup() {
	set +e
	ip link set eth0 up
	[ -z "$bgpid" ] || kill "$bgpid" 2>/dev/null
	if [ -w "$BLK_CTL" ]; then
		echo "unmap name=krdmablk0" >"$BLK_CTL" 2>/dev/null
	fi
	lsmod | grep -q '^krdma_blk ' && rmmod krdma_blk
	rm -rf "$W"
	put_val A-done 1
}
trap cleanup EXIT
insmod "$KRDMA_BLK_KO" || fail "insmod krdma_blk.ko"
wait_val 120 exported
b_sha=$VAL
ADDR=$PEER_IP:$PORT
blk map name=krdmablk0 addr=$ADDR export=e0 queues=2 reconnect_delay_ms=200 ||
	fail "map krdmablk0"
wait_for 10 test -b "$D" || fail "$D never appeared"
expect_eq "$(blockdev --getsize64 "$D")" $((1 << 30)) "size"

# ---- 1. dd both ways ------------------------------------------------------
log "dd and cmp"
head -c ${dd_mb}M /dev/urandom >"$W/rand" || fail "random data"
for off in 0 517; do	# in MiB
	for fl in oflag=direct conv=fsync; do
		blk_dd_check "$off" "$fl" "$dd_mb"
	done
done
head -c 1536 /dev/urandom >"$W/small"
dd if="$W/small" of="$D" bs=512 seek=12345 oflag=direct status=none ||
	fail "dd 1536 B"
dd if="$D" of="$W/back" bs=512 skip=12345 count=3 iflag=direct status=none
cmp "$W/small" "$W/back" || fail "1536 B at sector 12345 read back differs"
put_val a-wrote "517 $dd_mb 12345"
want="$(sha256sum <"$W/rand" | cut -d' ' -f1) $(sha256sum <"$W/small" | cut -d' ' -f1)"
wait_val 120 b-saw
expect_eq "$VAL" "$want" "what B's null_blk holds of what A wrote (sha256)"
expect_eq "$(region_sha "$D" 700 4)" "$b_sha" "what A reads of what B wrote (sha256)"

# ---- 2. fio verify ----------------------------------------------------------
log "fio verify, random writes, 2 x $fio_size"
fio_verify "$fio_size"
log "fio verify, random reads and writes mixed, 2 x $fio_size"
fio_verify "$fio_size" 4k 2 16 randrw

# ---- 3. link flaps during fio verify --------------------------------------
S=$KRDMA_SYS/sessions
expect_eq "$(ls "$S" | wc -l)" 2 "sessions (one a queue)"
# fio_loop_end WHAT: stop the fio loop; every run passed, and since
# dmesg_mark no I/O error and no line of a lost session or failed request.
fio_loop_end() {
	local runs recon lines bad
	: >"$W/stop"
	bg_wait 120 "the last of $1"
	[ $BG_RC = 0 ] || { cat "$W/fio-loop.log"; fail "fio verify across $1: $(grep -m1 '^FAIL:' "$W/fio-loop.log")"; }
	runs=$(cat "$W/fio-runs" 2>/dev/null)
	recon=$(( $(sess_sum reconnects) - rc0 ))
	lines=$(dmesg_new | grep -c 'krdmablk0: queue [0-9]*: reconnected, [0-9]* requests sent again')
	log "$runs fio verify runs passed across $1; $recon reconnects, $lines 'reconnected' lines"
	if [ "$DEV" = rxe ]; then
		[ "$recon" -ge 1 ] || fail "no reconnect in $1 (rxe)"
		[ "$lines" -ge 1 ] || fail "no 'reconnected' line from krdma_blk in $1"
	fi
	bad=$(dmesg_new | grep -E 'I/O error.*krdmablk|krdma_blk: .*(session lost|timed out|malformed|no request in flight|registration failed|refused)')
	[ -z "$bad" ] || fail "during $1: $(head -n 3 <<<"$bad" | paste -sd ';')"
	dmesg_new | grep -E 'krdma(_blk)?: ' | grep -vE 'krdma: .*(deferred|port up)' | head -n 12
}
# A's flap I: its own link down 1 to 3 s.
flap_a() {
	FLAP="down $((1 + $1 % 3)) s"
	ip link set eth0 down || fail "link down"
	nap $((1 + $1 % 3))
	ip link set eth0 up || fail "link up"
}
# B's flap I: B takes its link down for 5 s when told.
flap_b() {
	FLAP="B's link down 5 s"
	put_val "sflap-$1" 1
	wait_val 120 "sflap-up-$1"
}
# flaps_during_fio N WHAT FLAP: fio verify loops while FLAP 1 .. FLAP N
# run, each once every session is connected again; then fio_loop_end.
# A flap need not cost a reconnect: one that finds nothing posted until
# link up is ridden out by rxe's retransmits (6.1 rode out a 3 s one of
# A's on 2026-11-29).  Over rxe the flaps together must cost one
# (fio_loop_end), so that they are known to have been felt.
flaps_during_fio() {
	local i before after t0
	log "$1 $2 during fio verify"
	wait_for 60 sess_all_connected || fail "sessions not all connected before the $2"
	dmesg_mark
	fio_loop "$fio_size" 1M 16
	nap 2
	rc0=$(sess_sum reconnects) || fail "reconnects"
	for i in $(seq 1 "$1"); do
		kill -0 "$bgpid" 2>/dev/null ||
			{ cat "$W/fio-loop.log"; fail "fio verify ended before flap $i of the $2"; }
		before=$(sess_sum reconnects)
		"$3" "$i"
		t0=$SECONDS
		# Some I/O, then every session connected again.
		nap 1
		wait_for 60 sess_all_connected ||
			fail "flap $i: sessions not connected 60 s after link up: $(grep . "$S"/*/state "$S"/*/last_error | paste -sd ' ')"
		after=$(sess_sum reconnects)
		log "flap $i: $FLAP; $((after - before)) reconnects; all connected $((SECONDS - t0)) s after link up"
		nap 1
	done
	fio_loop_end "$1 $2"
}
flaps_during_fio "$flaps" "link flaps" flap_a

# ---- 3b. the server's link flaps during fio verify ----------------------
flaps_during_fio "$sflaps" "flaps of B's link" flap_b

# ---- 4. unmap, unexport, rmmod during I/O ----------------------------------
# during_io WHAT CMD: dd writes (and reads) $D in a loop; CMD (a shell
# command) runs; it must return 0 within 60 s, and the I/O must end within
# 60 s after it with dd's failure (exit 3), an I/O error.
during_io() {
	local what=$1 cmd=$2 t0
	log "$what during I/O"
	io_loop "$W/dd.err"
	nap 3
	kill -0 "$bgpid" 2>/dev/null || fail "I/O ended before $what: $(cat "$W/dd.err")"
	t0=$SECONDS
	eval "$cmd" || fail "$what during I/O"
	[ $((SECONDS - t0)) -le 60 ] || fail "$what took $((SECONDS - t0)) s"
	t0=$SECONDS
	bg_wait 60 "$what"
	log "$what: the I/O failed $((SECONDS - t0)) s later"
	expect_eq "$BG_RC" 3 "I/O after $what (3: dd failed)"
	grep -q 'Input/output error' "$W/dd.err" && return
	# An unmap may land between two of the loop's dd runs: nothing in
	# flight to fail, and the next dd finds no device (io_loop).
	if [ "$what" = unmap ] && grep -q 'No such file or directory' "$W/dd.err"; then
		log "unmap: no I/O was in flight (between two dd runs); the next found no device"
		return
	fi
	fail "I/O after $what: '$(cat "$W/dd.err")', expected an I/O error"
}
# All gone: no session, no connection of A's left.
a_clean() {
	wait_for 20 sysfs_empty "$S" || fail "sessions left after $1: $(ls "$S")"
	wait_for 20 sysfs_empty $KRDMA_SYS/conns ||
		fail "connections left after $1: $(ls $KRDMA_SYS/conns)"
}
map_again() {
	blk map name=krdmablk0 addr=$ADDR export=e0 queues=2 reconnect_delay_ms=200 "$@" ||
		fail "map again ($*)"
	wait_for 10 test -b "$D" || fail "$D never appeared (again)"
}

during_io unmap 'blk "unmap name=krdmablk0"'
test -b "$D" && fail "$D still there after unmap"
a_clean unmap

# B unexports while A's I/O runs: the session is lost after 3 s.
map_again loss_tmo_ms=3000
during_io "unexport on B" 'put_val io-unexport 1; wait_val 120 unexported'
dd if="$D" of=/dev/null bs=4k count=1 iflag=direct status=none 2>/dev/null &&
	fail "read from a map whose export is gone succeeded"
blk "unmap name=krdmablk0" || fail "unmap after unexport"
a_clean "unexport on B"
put_val a-unmapped 1
wait_val 120 exported-again

# B's rmmod krdma_blk while A's I/O runs.
map_again loss_tmo_ms=3000
# B's rmmod: exit status and seconds.
b_rmmod() {
	local rc t
	put_val io-rmmod 1
	wait_val 120 rmmod-done
	read -r rc t <<<"$VAL"
	[ "$rc" = 0 ] || fail "rmmod krdma_blk on B: exit $rc after $t s"
}
during_io "rmmod krdma_blk on B" b_rmmod
blk "unmap name=krdmablk0" || fail "unmap after B's rmmod"
a_clean "rmmod krdma_blk on B"
rmmod krdma_blk || fail "rmmod krdma_blk"
put_val a-finished 1
echo PASS
