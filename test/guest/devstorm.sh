#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# #22 item 7: passive set-up races device removal.  Four writers connect
# to a wildcard listener and disconnect, as fast as they can, while the
# device is deleted and added back again and again.  A connection request
# in set-up when the device goes must be torn down by the removal, not
# hold the device's reference out of its sight: every removal returns
# within 60 s, nothing is left behind, and rmmod is clean (on the debug
# kernel KASAN and lockdep watch too; the suite scans dmesg).
# topo: single
# dev: rxe siw
# check-kernel: 6.12 debug
. "$(dirname "$0")/../lib.sh"

# make check: 4 removals (3 on the debug kernel, where KASAN and lockdep
# watch); make stress (KRDMA_STRESS=1): 100.
rounds=${KRDMA_DEVSTORM_ROUNDS:-4}
[ "$KLINE" = debug ] && rounds=${KRDMA_DEVSTORM_ROUNDS:-3}
[ "${KRDMA_STRESS:-0}" = 1 ] && rounds=${KRDMA_DEVSTORM_ROUNDS:-100}
port=7070
stop=$(mktemp -u)
out=$(mktemp -d)

rdma_dev_up
krdma_load
# Widen the window: each connection request holds its device 200 ms
# before it goes on (Documentation/ABI: fault_accept_delay_ms).
echo 200 >/sys/module/krdma/parameters/fault_accept_delay_ms || fail "fault_accept_delay_ms"
ctl listen name=ls addr=0.0.0.0:$port backlog=64 || fail "listen"

# writer ID: connect, disconnect, again, until told to stop; counts.
writer() {
	local i=0 ok=0 e
	while [ ! -e "$stop" ]; do
		i=$((i + 1))
		e=$(ctl_err connect name=w$1.$i addr=$MY_IP:$port timeout_ms=3000)
		if [ "$e" = OK ]; then
			ok=$((ok + 1))
			ctl disconnect name=w$1.$i 2>/dev/null
		fi
	done
	echo "$i $ok" >"$out/$1"
}
for w in 1 2 3 4; do
	writer $w &
done

for r in $(seq 1 "$rounds"); do
	nap 0.$((RANDOM % 9 + 1))
	timeout 60 rdma link delete "$IBDEV" ||
		{ touch "$stop"; fail "round $r: rdma link delete failed or hung ($?)"; }
	nap 0.$((RANDOM % 5 + 1))
	rdma_dev_up
done
touch "$stop"
wait
echo 0 >/sys/module/krdma/parameters/fault_accept_delay_ms
total=0 ok=0
for w in 1 2 3 4; do
	read -r a b <"$out/$w"
	total=$((total + a)) ok=$((ok + b))
done
log "$rounds removals; $total connects, $ok of them connected"
[ "$ok" -gt 0 ] || fail "no connect ever succeeded"

# Whatever is left (a writer stopped between connect and disconnect)
# goes; the passive ends close themselves.
for c in $(ls $KRDMA_SYS/conns); do
	case $c in w*) ctl disconnect name=$c 2>/dev/null ;; esac
done
# left: each connection still there, with its state and error.
left() {
	local c

	for c in "$KRDMA_SYS"/conns/*; do
		[ -e "$c" ] && echo "$(basename "$c") $(cat "$c/state") $(cat "$c/error")"
	done | paste -sd, -
}
wait_for 30 eval '[ -z "$(ls $KRDMA_SYS/conns)" ]' || fail "connections left: $(left)"
ctl unlisten name=ls || fail "unlisten"
# The device is back and usable.
ctl listen name=l2 addr=$MY_IP:$((port + 1)) || fail "listen after the storm"
ctl connect name=d1 addr=$MY_IP:$((port + 1)) || fail "connect after the storm"
ctl test name=d1 op=send,write,read size=4K count=2 || fail "test after the storm"
wait_for 60 not_running $KRDMA_SYS/conns/d1/test_status
expect_eq "$(cat $KRDMA_SYS/conns/d1/test_status)" passed "self-test after the storm"
ctl disconnect name=d1 || fail "disconnect d1"
ctl unlisten name=l2 || fail "unlisten l2"
rm -rf "$out"
timeout 60 rmmod krdma || fail "rmmod after the storm failed or hung"
