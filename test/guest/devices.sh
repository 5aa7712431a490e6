#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma gives each RDMA device a directory whose values match the device,
# follows device removal and re-adding, and sees devices present at load.
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
