#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Concurrent "disconnect" of one connection (#22 item 9): of several
# writers closing the same connection at once exactly one closes it (0) and
# the others are told it is not there (ENOENT); the service thread is
# stopped once and the connection freed once.  Both ends are raced: the
# active one, and the passive one while its peer is still connecting (the
# window between the connection being published and its service thread
# starting).  The suite's dmesg scan fails the test on any splat.
# KRDMA_DISC_ROUNDS: rounds (default 10; debug kernel 5).
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rounds=${KRDMA_DISC_ROUNDS:-$([ "$KLINE" = debug ] && echo 5 || echo 10)}
rdma_dev_up
krdma_load
ctl listen name=l1 addr=$MY_IP:7500 || fail "listen"
out=$(mktemp -d)

# race NAME: four writers disconnect NAME at once; one must win.
race() {
	local i ok=0 enoent=0 e

	for i in 1 2 3 4; do
		( ctl_err disconnect name=$1 >"$out/$i" ) &
	done
	wait
	for i in 1 2 3 4; do
		read -r e <"$out/$i"
		case $e in
		OK)	ok=$((ok + 1)) ;;
		ENOENT)	enoent=$((enoent + 1)) ;;
		*)	fail "round $r: disconnect $1: $e" ;;
		esac
	done
	[ $ok = 1 ] && [ $enoent = 3 ] ||
		fail "round $r: disconnect $1: $ok closed it, $enoent ENOENT (want 1 and 3)"
	[ ! -d $KRDMA_SYS/conns/$1 ] || fail "round $r: $1 still there"
}

for r in $(seq 1 "$rounds"); do
	ctl connect name=c1 addr=$PEER_IP:7500 || fail "round $r: connect"
	# The passive end is the control file's (a disconnect finds it)
	# once it has its files: its directory comes before (over siw until
	# c1's first message is in), when a disconnect meets ENOENT.
	wait_for 5 test -e $KRDMA_SYS/conns/l1.$((r - 1))/test_status ||
		fail "round $r: no passive end l1.$((r - 1))"
	# The passive end first: once its peer is gone it is reaped.
	race l1.$((r - 1))
	race c1
done
# Racing the passive end's set-up: disconnect it while the connect that
# makes it is still running.
for r in $(seq 1 "$rounds"); do
	n=$((rounds + r - 1))
	ctl connect name=d1 addr=$PEER_IP:7500 &
	wait_for 5 test -d $KRDMA_SYS/conns/l1.$n || fail "round $r: no l1.$n"
	# ENOENT while it is not yet established (not yet sysfs's to close).
	until ctl_err_v disconnect name=l1.$n; e=$CTL_ERR; [ "$e" = OK ]; do
		[ "$e" = ENOENT ] || fail "round $r: disconnect l1.$n during set-up: $e"
		[ -d $KRDMA_SYS/conns/l1.$n ] || break
	done
	wait
	ctl disconnect name=d1 2>/dev/null
	# Closed by us, or reaped once d1 was gone.
	[ ! -d $KRDMA_SYS/conns/l1.$n ] || ctl disconnect name=l1.$n 2>/dev/null ||
		wait_for 10 test ! -d $KRDMA_SYS/conns/l1.$n ||
		fail "round $r: l1.$n cannot be closed"
done
rm -rf "$out"
ctl unlisten name=l1 || fail "unlisten"
wait_for 30 eval '[ -z "$(ls $KRDMA_SYS/conns)" ]' ||
	fail "connections left: $(ls $KRDMA_SYS/conns)"
ps -e -o comm | grep -q '^krdma/' && fail "service threads left: $(ps -e -o comm | grep '^krdma/')"
krdma_unload
log "$rounds rounds each"
