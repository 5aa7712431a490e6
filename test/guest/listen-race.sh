#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# #21: a listen races device removal (the "refcount_t: addition on 0" in
# siw_create_listen() that threads.sh met once over siw: krdma's remove
# callback destroyed a listener's rdma_cm id while rdma_listen() worked on
# it).  Two windows, each held open by a test knob:
# 1. A listen between its bind and rdma_listen() (fault_listen_delay_ms)
#    when the device goes: the removal waits for the listen, then stops
#    the listener ("stopped -19"); the listen itself succeeds.  Before the
#    fix the removal destroyed the id under the listen: a use-after-free
#    (KASAN on the debug kernel; -EINVAL from rdma_listen() elsewhere).
# 2. A listen that binds to the device after krdma's remove callback let
#    go of its users but before rdma_cm's ran (fault_remove_delay_ms):
#    rdma_cm sends the listener DEVICE_REMOVAL and waits for its id, so
#    the listener must give it up there (its stop line shows the event
#    came: krdma's own callback had run before the listen).  `rdma link delete` must end
#    within 30 s and the listener be stopped; before the fix krdma kept
#    the id and the removal hung until the listener was closed.
# Then the device comes back: both listeners listen again by themselves
# and each carries a connection's self-test.
# topo: single
# dev: rxe siw
# check-kernel: 6.12 debug
. "$(dirname "$0")/../lib.sh"

P=/sys/module/krdma/parameters
knobs_off() {
	echo 0 >$P/fault_listen_delay_ms
	echo 0 >$P/fault_remove_delay_ms
} 2>/dev/null
trap knobs_off EXIT
rdma_dev_up
krdma_load
dmesg_mark

log "1: the device goes while a listen is between bind and listen"
echo 2000 >$P/fault_listen_delay_ms || fail "fault_listen_delay_ms"
r1=/tmp/listen-race.r1
rm -f $r1
( ctl_err_v listen name=r1 addr=$MY_IP:7030; echo "$CTL_ERR" >$r1 ) &
lp=$!
# On the list (its sysfs directory is there): it sleeps before listening.
within 30 test -e $KRDMA_SYS/listeners/r1 || fail "r1 never appeared"
# Still in its sleep, or the removal below would not meet the listen.
kill -0 $lp 2>/dev/null || fail "the listen ended before the removal began"
timeout 60 rdma link delete "$IBDEV" || fail "rdma link delete (1) hung or failed"
wait $lp
echo 0 >$P/fault_listen_delay_ms
r=
read -r r <$r1
expect_eq "$r" OK "listen r1, the device removed during it"
expect_eq "$(<$KRDMA_SYS/listeners/r1/state)" "stopped -19" "r1 after the removal"

log "2: a listen binds to the device between krdma's removal and rdma_cm's"
rdma_dev_up
within 20 grep -q '^listening' $KRDMA_SYS/listeners/r1/state ||
	fail "r1 not listening again: $(<$KRDMA_SYS/listeners/r1/state)"
# The window must outlast the test's own steps to the listen: on the debug
# kernel over siw (make stress, 2026-11-30) 5 s did not, and r2's bind
# came after the device had gone (-ENODEV).  So it is 20 s, and the
# test ends it (the knob set to 0) once r2 is bound.
echo 20000 >$P/fault_remove_delay_ms || fail "fault_remove_delay_ms"
del=/tmp/listen-race.del
rm -f $del
kmsg_open || fail "kmsg_open"
( rdma link delete "$IBDEV"; echo $? >$del ) &
dp=$!
kmsg_wait 60 "*$IBDEV: removal sleeps*" ||
	fail "krdma's remove callback never reached its sleep"
# r1 is stopped by krdma's own callback already; r2 binds after it.
ctl listen name=r2 addr=$MY_IP:7031 || fail "listen r2 during the removal"
# r2 is bound: the window has done its work, the removal goes on now.
echo 0 >$P/fault_remove_delay_ms
if ! within 30 eval '! kill -0 $dp'; then
	# Close it, which lets a hung removal go on, then fail.
	ctl unlisten name=r2
	wait $dp
	fail "rdma link delete hung while r2 listened on the device"
fi
wait $dp
echo 0 >$P/fault_remove_delay_ms
r=
read -r r <$del
expect_eq "$r" 0 "rdma link delete (2)"
expect_eq "$(<$KRDMA_SYS/listeners/r2/state)" "stopped -19" "r2 after the removal"
expect_eq "$(<$KRDMA_SYS/listeners/r1/state)" "stopped -19" "r1 after the second removal"
dmesg_fetch
new_count "r1: device $IBDEV removed, no longer listening"
expect_eq "$NEW_N" 2 "r1's stop lines"
new_count "r2: device $IBDEV removed, no longer listening"
expect_eq "$NEW_N" 1 "r2's stop lines"

log "the device back: both listen again and carry a connection"
rdma_dev_up
for l in r1 r2; do
	within 20 grep -q '^listening' $KRDMA_SYS/listeners/$l/state ||
		fail "$l not listening again: $(<$KRDMA_SYS/listeners/$l/state)"
done
ctl connect name=c1 addr=$MY_IP:7030 || fail "connect c1 (to r1)"
ctl connect name=c2 addr=$MY_IP:7031 || fail "connect c2 (to r2)"
for c in c1 c2; do
	ctl test name=$c op=send,write,read size=64K count=2 || fail "test $c"
done
for c in c1 c2; do
	wait_for 60 not_running $KRDMA_SYS/conns/$c/test_status
	expect_eq "$(<$KRDMA_SYS/conns/$c/test_status)" passed "$c self-test"
	ctl disconnect name=$c || fail "disconnect $c"
done
ctl unlisten name=r1 || fail "unlisten r1"
ctl unlisten name=r2 || fail "unlisten r2"
exit 0
