#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# rmmod with live listeners, connections and a running self-test cleans up
# everything: the module goes, the device stays usable, reload works.
# While /dev/krdma is open (a bare open, and a krdmactl server with its
# listener) rmmod is refused as "in use", and the server still serves a
# client afterwards; once the file is closed, rmmod goes.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
for round in 1 2; do
	dmesg_mark
	krdma_load
	ctl listen name=l1 addr=$MY_IP:7020 || fail "listen"
	ctl listen name=l2 addr=0.0.0.0:7021 || fail "listen wildcard"
	for i in 1 2 3 4; do
		ctl connect name=c$i addr=$PEER_IP:$((7020 + i % 2)) || fail "connect c$i"
	done
	ctl test name=c1 op=write,read size=128K count=100000 || fail "test start"
	ctl test name=c2 op=send size=512 count=1000000 || fail "test start"
	within 20 ops_going c1 && within 20 ops_going c2 ||
		fail "the tests did not get going in 20 s (round $round)"
	timeout 60 rmmod krdma || fail "rmmod with live connections failed or hung (round $round)"
	[ ! -e $KRDMA_SYS ] || fail "sysfs left after rmmod"
	[ -e /sys/module/krdma ] && fail "module still loaded"
	dmesg_new | grep -q 'c1: closed by module unload' ||
		fail "no close message for c1 (round $round)"
done
# /dev/krdma open: the module is in use.
top=$(cd "$(dirname "$0")/../.." && pwd)
krdmactl=$top/tools/krdmactl
[ -x "$krdmactl" ] || fail "$krdmactl is not built (make tools)"
tmp=$(mktemp -d)
spid=
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; rm -rf "$tmp"' EXIT
krdma_load
refused() {	# refused WHAT: rmmod krdma is refused, krdma stays whole
	local out

	out=$(timeout 60 rmmod krdma 2>&1) && fail "rmmod with $1 succeeded"
	echo "$out" | grep -q 'in use' || fail "rmmod with $1: $out"
	[ -e /sys/module/krdma ] || fail "krdma gone after rmmod refused ($1)"
	[ -c /dev/krdma ] || fail "/dev/krdma gone after rmmod refused ($1)"
	[ -d $KRDMA_SYS ] || fail "$KRDMA_SYS gone after rmmod refused ($1)"
}
exec 3<>/dev/krdma || fail "open /dev/krdma"
refused "/dev/krdma open"
exec 3>&-
"$krdmactl" serve "$MY_IP:7022" >"$tmp/serve.out" 2>"$tmp/serve.err" &
spid=$!
within 20 grep -q listening "$tmp/serve.out" ||
	fail "serve: not listening: $(cat "$tmp/serve.err")"
refused "a krdmactl server listening"
"$krdmactl" client "$PEER_IP:7022" --send "before rmmod" >"$tmp/client.out" 2>&1 ||
	fail "client while rmmod was refused: $(cat "$tmp/client.out")"
timeout 60 tail --pid=$spid -f /dev/null || fail "serve did not end after its client"
wait $spid || fail "serve exit status: $(cat "$tmp/serve.err")"
spid=
grep -q '^message 1, 12 bytes: before rmmod$' "$tmp/serve.out" ||
	fail "server did not receive the message: $(cat "$tmp/serve.out" "$tmp/serve.err")"
timeout 60 rmmod krdma || fail "rmmod after /dev/krdma was closed"
[ ! -e /dev/krdma ] || fail "/dev/krdma left after rmmod"

# The device itself is unharmed.
rdma link show $IBDEV/1 | grep -q 'state ACTIVE' || fail "device not active after unload"
