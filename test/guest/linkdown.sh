#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue #18, one guest: connections that fail while their link is down
# (ip link set eth0 down) must not make the CM send anything then.  On
# rxe a CM message (a DREQ) posted with the netdev down finds no route;
# rxe moves its GSI QP (QP1) to the error state and the MAD layer never
# takes a message again, so no connection to this device could be made
# until it is re-created.  krdma parks the rdma_cm ids while the port is
# down and destroys them when it is up again ("disconnect deferred",
# "port up, disconnected").  Checks: QP1 still in RTS after the flap and a
# new connection moving verified data; device removal with ids parked
# (rdma link delete while down) destroys them without waiting for the
# port; so does rmmod krdma.
# topo: single
# dev: rxe
# check-kernel: 6.12 debug
. "$(dirname "$0")/../lib.sh"

port=7495
rdma_dev_up
krdma_load
# Whatever happens, the next test needs the link and a working rxe0.
trap 'ip link set eth0 up' EXIT

state_is() { [ "$(cat "$KRDMA_SYS/conns/$1/state" 2>/dev/null)" = "$2" ]; }
not_connected() { ! state_is "$1" connected; }
new_lines() { dmesg_new | grep -c "$1"; }
lines_ge() { [ "$(new_lines "$1")" -ge "$2" ]; }
qp1_state() { rdma resource show qp lqpn 1 | grep -o 'state [A-Z]*'; }

# up_and_connect NAME: a connection over loopback, with fast heartbeats.
up_and_connect() {
	ctl connect name="$1" addr="$MY_IP:$port" hb_ms=500 hb_misses=2 ||
		fail "connect $1"
	state_is "$1" connected || fail "$1 not connected"
}

# link_down_close NAME: the link goes down, NAME fails, its owner closes
# it (a failed connection keeps its QP and id until then): its id is
# parked.  Its passive end, which closes itself, too.
link_down_close() {
	dmesg_mark
	ip link set eth0 down || fail "link down"
	within 20 not_connected "$1" || fail "$1 still connected 20 s after link down"
	ctl disconnect name="$1" || fail "disconnect $1"
	lines_ge "$1: port 1 of $IBDEV is down: disconnect deferred" 1 ||
		fail "$1 closed but no disconnect deferred: $(dmesg_new | grep krdma | tail -n 3)"
	within 20 lines_ge "srv\.[0-9]*: port 1 of $IBDEV is down: disconnect deferred" 1 ||
		fail "$1's passive end: no disconnect deferred"
}

# Fast heartbeats on both ends, so that each end notices the link down
# within seconds (the passive ends take the listener's; c2 runs a
# self-test under them, so 3 misses, not c1's and c3's 2).
ctl listen name=srv addr="$MY_IP:$port" hb_ms=500 hb_misses=3 || fail "listen"

# 1. A flap: the parked ids go once the port is up, and the CM works.
up_and_connect c1
link_down_close c1
[ "$(qp1_state)" = "state RTS" ] || fail "QP1 while down: $(qp1_state)"
ip link set eth0 up || fail "link up"
within 20 lines_ge "c1: port up, disconnected" 1 ||
	fail "c1's id not destroyed 20 s after link up"
within 20 lines_ge "port up, disconnected" 2 ||
	fail "its passive end's id not destroyed 20 s after link up"
[ "$(qp1_state)" = "state RTS" ] || fail "QP1 after the flap: $(qp1_state)"
# The new connection's handshake needs QP1 to receive.
within 20 ctl connect name=c2 addr="$MY_IP:$port" hb_ms=500 hb_misses=3 ||
	fail "no connection 20 s after link up"
ctl test name=c2 op=send,write,read size=64K count=4 || fail "test c2"
within 60 not_running "$KRDMA_SYS/conns/c2/test_status" || fail "c2's test still running"
expect_eq "$(cat "$KRDMA_SYS/conns/c2/test_status")" passed "c2's test"

# 2. Device removal while ids are parked: destroyed at once.
link_down_close c2
dmesg_mark
timeout 60 rdma link delete "$IBDEV" || fail "rdma link delete with ids parked: $?"
lines_ge "c2: device removed, disconnected" 1 || fail "c2's parked id not destroyed on removal"
ip link set eth0 up || fail "link up"
rdma_dev_up

# 3. rmmod with ids parked.  Their goodbye then goes out with the link
# down, which breaks this rxe0's QP1: re-create it for the next tests.
ctl unlisten name=srv 2>/dev/null
ctl listen name=srv addr="$MY_IP:$port" hb_ms=500 hb_misses=3 || fail "listen again"
within 20 ctl connect name=c3 addr="$MY_IP:$port" hb_ms=500 hb_misses=2 ||
	fail "connect c3 on the new $IBDEV"
link_down_close c3
timeout 60 rmmod krdma || fail "rmmod krdma with ids parked: $?"
ip link set eth0 up || fail "link up"
rdma_dev_down
rdma_dev_up
krdma_load
