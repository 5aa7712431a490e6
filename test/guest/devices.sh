#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma gives each RDMA device a directory whose values match the device,
# follows device removal and re-adding, and sees devices present at load.
# A renamed device (rdma dev set OLD name NEW) takes its directory along:
# devices/NEW with name NEW, no devices/OLD, one dmesg line; a connection
# made before keeps the name it was made on, one made after shows NEW, and
# both work; renamed back, all is as before.
# topo: single
# dev: rxe siw
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
d=$KRDMA_SYS/devices/$IBDEV
[ -d "$d" ] || fail "$d missing for a device present at load time"
expect_eq "$(cat $d/name)" "$IBDEV" "name"
expect_eq "$(cat $d/port_state)" active "port_state"
case "$DEV" in
rxe)	expect_eq "$(cat $d/transport)" roce "transport"
	expect_eq "$(cat $d/atomics)" 1 "atomics" ;;
siw)	expect_eq "$(cat $d/transport)" iwarp "transport"
	expect_eq "$(cat $d/atomics)" 0 "atomics" ;;
esac
# The node GUID and limits must be the device's own, as the RDMA core shows them.
guid=$(cat /sys/class/infiniband/$IBDEV/node_guid)
expect_eq "$(cat $d/node_guid)" "$guid" "node_guid"
[ "$(cat $d/max_qp_wr)" -gt 0 ] || fail "max_qp_wr is 0"
[ "$(cat $d/max_send_sge)" -gt 0 ] || fail "max_send_sge is 0"
expect_eq "$(cat $KRDMA_SYS/version)" "$(cat /sys/module/krdma/version)" "version"

# Rename.
ctl listen name=l1 addr=$MY_IP:7090 || fail "listen"
ctl connect name=c1 addr=$PEER_IP:7090 || fail "connect c1"
NEW=krdmarn0
dmesg_mark
rdma dev set "$IBDEV" name $NEW || fail "rdma dev set $IBDEV name $NEW"
wait_for 5 test -d $KRDMA_SYS/devices/$NEW || fail "no devices/$NEW after the rename"
[ ! -e "$d" ] || fail "$d still there after the rename"
expect_eq "$(cat $KRDMA_SYS/devices/$NEW/name)" $NEW "name after the rename"
expect_eq "$(cat $KRDMA_SYS/devices/$NEW/node_guid)" "$guid" "node_guid after the rename"
expect_eq "$(dmesg_new | grep -c "krdma: $IBDEV: renamed to $NEW\$")" 1 "rename lines"
expect_eq "$(cat $KRDMA_SYS/conns/c1/device)" "$IBDEV" "c1's device (made before)"
ctl connect name=c2 addr=$PEER_IP:7090 || fail "connect c2 after the rename"
expect_eq "$(cat $KRDMA_SYS/conns/c2/device)" $NEW "c2's device (made after)"
for c in c1 c2; do
	ctl test name=$c op=all size=4097 count=2 || fail "test $c"
	wait_for 60 not_running $KRDMA_SYS/conns/$c/test_status
	expect_eq "$(cat $KRDMA_SYS/conns/$c/test_status)" passed "$c self-test after the rename"
done
rdma dev set $NEW name "$IBDEV" || fail "rdma dev set $NEW name $IBDEV"
wait_for 5 test -d "$d" || fail "$d not back after renaming back"
[ ! -e $KRDMA_SYS/devices/$NEW ] || fail "devices/$NEW left after renaming back"
expect_eq "$(cat $d/name)" "$IBDEV" "name after renaming back"
ctl disconnect name=c1 || fail "disconnect c1"
ctl disconnect name=c2 || fail "disconnect c2"
ctl unlisten name=l1 || fail "unlisten"

rdma_dev_down
[ ! -e "$d" ] || fail "$d still there after rdma link delete"
rdma_dev_up
wait_for 5 test -d "$d" || fail "$d not back after re-adding the device"

# A device that comes after the module is loaded is seen too.
krdma_unload
rdma_dev_down
krdma_load
[ ! -e "$d" ] || fail "$d present with no device"
rdma_dev_up
wait_for 5 test -d "$d" || fail "$d missing for a device added after load"
krdma_unload
[ ! -e "$KRDMA_SYS" ] || fail "$KRDMA_SYS left behind by rmmod"
