#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Two guests over IPv6: each gets a ULA address on the lane's link, B
# listens on [B]:PORT, A connects by B's IPv6 address and runs the
# self-test of WRITE, READ and SEND (single and 7-SGE, sizes across a
# page and 1 MiB); both ends show the IPv6 addresses; disconnect.  Then
# by link-local addresses with their scope ([fe80::...%eth0]:PORT, the
# control grammar's inet_pton_with_scope()): B listens on its own, A
# connects to B's and passes a self-test.
# topo: pair
# dev: rxe siw
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

A6=fd00:78::a B6=fd00:78::b PORT=7070
me=$A6 peer=$B6
[ "$ROLE" = B ] && me=$B6 peer=$A6
trap 'ip -6 addr del $me/64 dev eth0 2>/dev/null' EXIT
ip -6 addr add $me/64 dev eth0 nodad || fail "ip -6 addr add $me"
rdma_dev_up
krdma_load
if [ "$ROLE" = B ]; then
	ctl listen name=l6 addr=[$B6]:$PORT || fail "IPv6 listen"
	barrier listening
	barrier tested
	wait_for 10 test -e $KRDMA_SYS/conns/l6.0/test_status || fail "no l6.0"
	expect_eq "$(cat $KRDMA_SYS/conns/l6.0/peer_addr | sed 's/:[0-9]*$//')" "[$A6]" "l6.0 peer_addr"
	[ "$(cat $KRDMA_SYS/conns/l6.0/write_ops)" = 0 ] || fail "passive side counted writes"
	barrier checked
	barrier closed
	ctl unlisten name=l6 || fail "unlisten"
	ll=$(ip -6 -o addr show dev eth0 scope link | awk '{print $4}' | cut -d/ -f1 | head -n 1)
	[ -n "$ll" ] || fail "no link-local address on eth0"
	ctl listen name=ll addr=[$ll%eth0]:$((PORT + 1)) || fail "listen on [$ll%eth0]"
	put_val ll "$ll"
	barrier lltested
	wait_for 10 test -e $KRDMA_SYS/conns/ll.0/test_status || fail "no ll.0"
	barrier llchecked
	ctl unlisten name=ll || fail "unlisten ll"
	exit 0
fi

barrier listening
# rxe derives its GIDs from the interface's addresses: the new one may take
# a moment to appear, so the first attempt may not find a route.
wait_for 10 ctl connect name=c6 addr=[$B6]:$PORT || fail "IPv6 connect"
c=$KRDMA_SYS/conns/c6
expect_eq "$(cat $c/peer_addr)" "[$B6]:$PORT" "peer_addr"
expect_eq "$(cat $c/local_addr | sed 's/:[0-9]*$//')" "[$A6]" "local_addr"
for args in "op=write,read size=1M count=2" "op=all size=4097 count=2" \
	    "op=write,read size=200001 sge=7 count=1" "op=send size=4096 count=200"; do
	ctl test name=c6 $args || fail "test $args"
	wait_for 120 not_running $c/test_status
	expect_eq "$(cat $c/test_status)" passed "self-test $args over IPv6"
done
[ "$(cat $c/write_ops)" -ge 3 ] || fail "writes not counted: $(cat $c/write_ops)"
expect_eq "$(cat $c/errors)" 0 "errors"
barrier tested
barrier checked
ctl disconnect name=c6 || fail "disconnect"
barrier closed

ll=$(get_val ll)
expect_ctl_err EINVAL connect name=c7 addr=[$ll%nosuchif0]:$((PORT + 1))
wait_for 10 ctl connect name=c7 addr=[$ll%eth0]:$((PORT + 1)) ||
	fail "connect to [$ll%eth0]"
c=$KRDMA_SYS/conns/c7
expect_eq "$(cat $c/peer_addr)" "[$ll]:$((PORT + 1))" "link-local peer_addr"
ctl test name=c7 op=write,read size=64K count=2 || fail "test c7"
wait_for 120 not_running $c/test_status
expect_eq "$(cat $c/test_status)" passed "self-test over link-local"
barrier lltested
barrier llchecked
ctl disconnect name=c7 || fail "disconnect c7"
