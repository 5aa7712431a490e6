#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Every allocation call site of krdma fails once, in whatever context it
# runs (debug kernel; make stress).  tools/alloc-sites lists the sites of
# the krdma.ko under test ($BUILD/alloc-sites.txt, written by
# tools/build.sh): each call from krdma's code to an allocator or to a
# kernel or RDMA call that allocates.  For each site in turn, krdma is
# loaded, failslab and fail_page_alloc are armed to fail the first
# allocation whose stack holds that site's return address (require-start
# and require-end around it, no task filter, GFP_ATOMIC and GFP_KERNEL
# alike), and a workload that reaches every site runs: listen, connect
# (and a polled connection), the self-test, a batched READ bench, a SEND
# one and two gathered ones (sge=, one packed), inject's delay=, a session,
# /dev/krdma (serve, client write and read, atomics on rxe), krdma-blk
# (export, map, I/O, unmap: its connections' MR pool), then the device
# removed under its connections and added again, and rmmod; once the
# site has failed the rest is skipped.  Each step may fail with an errno;
# nothing may hang, splat, leak a DMA mapping (dma_check=1) or stop rmmod.  A site whose failure was not injected is named, and must be in
# test/faultsweep-exempt with the reason it cannot be reached.  Sites only
# module init reaches are armed before insmod at the address the last load
# had (a reload of the same module lands there again; checked after load).
# The lane's kmemleak result follows this test.  Ends with
# "failed N of M sites".
#   KRDMA_SWEEP_SITES="FUNC+0xOFF ..."  only these sites
# topo: single
# dev: rxe siw
# kernel: debug
# check-kernel:
. "$(dirname "$0")/../lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
krdmactl=$top/tools/krdmactl
fs=/sys/kernel/debug/failslab
fp=/sys/kernel/debug/fail_page_alloc
[ -d $fs ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
[ -e $fs/require-start ] && [ -e $fp/require-start ] ||
	skip "kernel $(uname -r) has no fault injection stack filter (use --kernels debug)"
sites=$BUILD/alloc-sites.txt
[ -s "$sites" ] || fail "no $sites (tools/build.sh writes it for the debug line)"
exempt=$top/test/faultsweep-exempt
port=7300
tmp=$(mktemp -d)

rdma_dev_up
# The functions module init alone calls (krdma_init): armed before insmod.
init_only="krdma_ctl_init
krdma_selftest_init
krdma_bench_init
krdma_chardev_init
krdma_sysfs_init"

hex() { printf '%#x' "$1"; }

disarm() {
	local d
	for d in $fs $fp; do
		echo 0 >$d/probability
	done
}

# arm ADDR: fail the first slab or page allocation with ADDR on its stack.
arm() {
	local d
	disarm
	for d in $fs $fp; do
		echo "$1" >$d/require-start
		hex $(($1 + 1)) >$d/require-end
		echo 0 >$d/reject-start
		echo 0 >$d/reject-end
		echo 32 >$d/stacktrace-depth
		echo N >$d/task-filter
		echo N >$d/ignore-gfp-wait
		echo 1 >$d/interval
		echo 0 >$d/space
		echo 2 >$d/verbose
		echo 1 >$d/times
	done
	echo N >$fp/ignore-gfp-highmem
	echo 0 >$fp/min-order
	for d in $fs $fp; do
		echo 100 >$d/probability
	done
}

# injected: did the armed failure happen?
injected() { [ "$(cat $fs/times)" = 0 ] || [ "$(cat $fp/times)" = 0 ]; }

# step WHAT CMD...: one workload step, bounded; its status is logged, a
# hang fails the site.
step() {
	local what=$1 rc
	shift
	# Once the site has failed, the rest of the workload is skipped: the
	# unload and the checks after it are what matters then.
	if injected; then
		echo "$what=skipped" >>"$tmp/status"
		return 0
	fi
	must "$what" "$@"
}

# must WHAT CMD...: a step that undoes an earlier one; it runs whatever
# happened before it.
must() {
	local what=$1 rc
	shift
	if declare -F "$1" >/dev/null; then
		"$@" >>"$tmp/steps" 2>&1
	else
		timeout 60 "$@" >>"$tmp/steps" 2>&1
	fi
	rc=$?
	[ $rc = 124 ] && fail "$site: '$what' hung (60 s)"
	echo "$what=$rc" >>"$tmp/status"
}

blk_q() { timeout 60 sh -c 'echo "$1" >"$2"' blk_q "$*" /sys/kernel/krdma_blk/control 2>/dev/null; }
# ctl_q CMD: a control write, bounded (124 when it hangs).
ctl_q() { timeout 60 sh -c 'echo "$1" >"$2"' ctl_q "$*" "$KRDMA_CTL" 2>/dev/null; }
wait_status() {	# wait_status FILE: until not running (30 s), quietly
	local end=$((SECONDS + 30))
	while [ -e "$1" ] && ! not_running "$1"; do
		[ $SECONDS -lt $end ] || return 1
		nap 0.2
	done
}

workload() {
	local p=$((port + 10 * (n % 50))) c=$KRDMA_SYS/conns/c1 spid
	step listen ctl_q listen name=l1 addr=$MY_IP:$p
	step connect ctl_q connect name=c1 addr=$PEER_IP:$p
	# A polled connection: its own CQ (IB_POLL_DIRECT), not the pool's.
	step connect-poll ctl_q connect name=c2 addr=$PEER_IP:$p poll=1
	if [ -e $c ]; then
		step test ctl_q test name=c1 op=send,write,read size=8K count=2
		step test-wait wait_status $c/test_status
		step bench ctl_q bench name=c1 op=read size=8K batch=4 secs=1
		step bench-wait wait_status $c/bench_status
		step bench-send ctl_q bench name=c1 op=send size=1K secs=1
		step bench-send-wait wait_status $c/bench_status
		# Gathered from several pages (sge=), and packed by the CPU.
		step bench-sg-send ctl_q bench name=c1 op=send size=1K sge=2 count=16
		step bench-sg-send-wait wait_status $c/bench_status
		step bench-sg-write ctl_q bench name=c1 op=write size=4K sge=2 pack=1 count=16
		step bench-sg-write-wait wait_status $c/bench_status
		# Completions held back (its ring), then handed on.
		step inject-delay sh -c "echo delay=10 >$c/inject"
		must inject-off sh -c "echo off >$c/inject"
	fi
	step session ctl_q session name=s1 addr=$PEER_IP:$p
	step unsession ctl_q unsession name=s1
	head -c 8192 /dev/urandom >"$tmp/data"
	injected || chardev
	# krdma-blk: its connections have an MR pool, its I/O registers
	# from it (the only user of both here).
	if [ -n "$blk_ko" ] && ! injected; then
		step blk-load insmod "$blk_ko"
		step blk-export blk_q export name=e0 path=/dev/nullb0 addr=$MY_IP:$((p + 3))
		step blk-map blk_q map name=krdmablk0 addr=$MY_IP:$((p + 3)) export=e0 \
			queues=1 loss_tmo_ms=2000
		if ! injected && within 10 test -b /dev/krdmablk0; then
			step blk-write dd if="$tmp/data" of=/dev/krdmablk0 bs=4k oflag=direct status=none
			step blk-read dd if=/dev/krdmablk0 of=/dev/null bs=4k count=2 iflag=direct status=none
		fi
		must blk-unmap blk_q unmap name=krdmablk0
		must blk-unexport blk_q unexport name=e0
		must blk-unload rmmod krdma_blk
	fi
	# The device goes with connections on it, and comes back.
	if ! injected; then
		step link-delete rdma link delete "$IBDEV"
		must link-add rdma link add "$IBDEV" type "$DEV" netdev eth0
	fi
	rdma link show "$IBDEV/1" >/dev/null 2>&1 || fail "$site: $IBDEV not back"
}

# /dev/krdma through krdmactl: a server, a client writing, reading back
# and sending; atomics on rxe.
chardev() {
	local p=$((port + 10 * (n % 50))) spid
	timeout 60 "$krdmactl" serve "$MY_IP:$((p + 1))" --size 64K \
		--access "$access" --clients 1 >"$tmp/serve" 2>&1 &
	spid=$!
	within 10 grep -q listening "$tmp/serve" 2>/dev/null
	if [ "$DEV" = rxe ]; then
		step client "$krdmactl" client "$MY_IP:$((p + 1))" \
			--write "$tmp/data" --expect "$tmp/data" --send hello
	else
		step client "$krdmactl" client "$MY_IP:$((p + 1))" \
			--write "$tmp/data" --expect "$tmp/data"
	fi
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	if [ "$DEV" = rxe ]; then
		timeout 60 "$krdmactl" serve "$MY_IP:$((p + 2))" --size 4K \
			--access rwa --clients 1 >"$tmp/serve2" 2>&1 &
		spid=$!
		within 10 grep -q listening "$tmp/serve2" 2>/dev/null
		step atomic "$krdmactl" atomic fadd "$MY_IP:$((p + 2))" 1 --offset 8
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
}

# hit: the armed failure happened, at this site: the stack fail_dump()
# printed (verbose=2) holds FUNCTION+0xOFF.  An allocation with
# __GFP_NOWARN is failed without a word; the range of one return address
# is the site then (an init site's address is checked after its load).
hit() {
	injected || return 1
	dmesg_new | grep -q 'FAULT_INJECTION: forcing' || return 0
	dmesg_new | grep -qF " ${site%%:*}/"
}

# done_site: unload, disarm, check what came of the site's run.
done_site() {
	local bug how
	timeout 60 rmmod krdma ||
		fail "$site: rmmod failed or hung ($(tr '\n' ' ' <"$tmp/status"))"
	disarm
	bug=$(dmesg_new | grep -F -f "$top/tools/bug-patterns" | head -n 1)
	[ -z "$bug" ] || fail "$site: '$bug' (steps: $(tr '\n' ' ' <"$tmp/status"))"
	if hit; then
		reached+=("$site") how=failed
	else
		missed+=("$site") how="not reached"
		injected && how="not reached (a failure elsewhere: $(dmesg_new |
			grep -m1 -A12 'FAULT_INJECTION: forcing' | grep -m1 -o '[a-z_0-9.]*+0x[0-9a-f]*/[^ ]* \[krdma\]'))"
	fi
	echo "# $site: $how - $(tr '\n' ' ' <"$tmp/status")"
}

# load: insmod krdma (its failure is one of the outcomes here).
load() { insmod "$BUILD/krdma.ko" dma_check=1 >>"$tmp/steps" 2>&1; }

trap 'disarm; rmmod krdma_blk krdma null_blk 2>/dev/null' EXIT
blk_ko=
if [ -f "$BUILD/blk/krdma_blk.ko" ] && modprobe null_blk queue_mode=2 irqmode=1 \
	memory_backed=1 gb=1 nr_devices=1 2>/dev/null && within 10 test -b /dev/nullb0; then
	blk_ko=$BUILD/blk/krdma_blk.ko
fi
access=rw
[ "$DEV" = rxe ] && access=rwa
reached=() missed=()
n=0
mapfile -t lines <"$sites"
echo 2 >$fs/verbose
# The workload's own allocations, once with nothing armed: it must pass.
disarm
echo 1 >$fs/times
echo 1 >$fp/times
load || fail "insmod krdma.ko"
text_base=$(cat /sys/module/krdma/sections/.text)
: >"$tmp/status"
site="(no failure)"
workload
grep -v '=0$' "$tmp/status" && fail "the workload failed with nothing injected: $(tr '\n' ' ' <"$tmp/status")"
timeout 60 rmmod krdma || fail "rmmod after a clean workload"
t0=$SECONDS
for l in "${lines[@]}"; do
	read -r sec off site callee <<<"$l"
	site="$site:$callee"
	if [ -n "${KRDMA_SWEEP_SITES:-}" ] && ! grep -qwF -- "${site%%:*}" <<<"$KRDMA_SWEEP_SITES"; then
		continue
	fi
	n=$((n + 1))
	: >"$tmp/status"
	dmesg_mark
	if [ "$sec" = .text ] && grep -qx -- "${site%%+*}" <<<"$init_only"; then
		# Reached only from module init: armed before the load at the
		# address the last load had, which a reload of the same module
		# takes again, as a rule; a few tries where it did not.
		for try in 1 2 3; do
			arm "$(hex $((text_base + 0x$off)))"
			load
			echo "insmod=$?" >>"$tmp/status"
			lsmod | grep -q '^krdma ' || break
			base=$(cat /sys/module/krdma/sections/.text)
			[ "$base" = "$text_base" ] && break
			disarm
			rmmod krdma
			log "$site: the module loaded at $base, not $text_base (try $try)"
			text_base=$base
		done
		if lsmod | grep -q '^krdma '; then
			done_site
		else
			disarm
			bug=$(dmesg_new | grep -F -f "$top/tools/bug-patterns" | head -n 1)
			[ -z "$bug" ] || fail "$site: '$bug' (insmod)"
			hit || fail "$site: insmod failed, not at this site: $(tr '\n' ' ' <"$tmp/steps" | tail -c 300)"
			reached+=("$site")
			echo "# $site: failed at insmod, which failed cleanly"
		fi
		continue
	fi
	# The CQ pool allocates only on a device whose pool has no room,
	# and its CQs live with the device, past krdma's unload: a run that
	# stopped at its injected failure left the device (and its CQs) in
	# place.  The pool's site runs on a device added afresh.
	if [ "$callee" = ib_cq_pool_get ]; then
		rdma link delete "$IBDEV" && rdma link add "$IBDEV" type "$DEV" netdev eth0 ||
			fail "$site: $IBDEV not added afresh"
		# rxe fills its GIDs in after the add: a listen before fails.
		wait_for 10 grep -q ACTIVE "/sys/class/infiniband/$IBDEV/ports/1/state" ||
			fail "$site: $IBDEV/1 not ACTIVE after the add"
	fi
	load || fail "$site: insmod failed with nothing armed"
	base=$(cat /sys/module/krdma/sections/"$sec")
	[ "$sec" = .text ] && text_base=$base
	arm "$(hex $((base + 0x$off)))"
	workload
	done_site
done
m=${#reached[@]}
total=$((m + ${#missed[@]}))
log "swept $total sites in $((SECONDS - t0)) s"
echo "failed $m of $total sites"
bad=()
for s in "${missed[@]}"; do
	f=${s%%+*} callee=${s##*:}
	if grep -qE "^$f $callee ($DEV|any) " "$exempt" 2>/dev/null; then
		echo "# not reached, exempt: $s: $(grep -E "^$f $callee ($DEV|any) " "$exempt" | head -n 1 | cut -d' ' -f4-)"
	else
		bad+=("$s")
	fi
done
[ -z "$blk_ko" ] || rmmod null_blk
[ ${#bad[@]} = 0 ] || fail "${#bad[@]} sites never failed and not in test/faultsweep-exempt: ${bad[*]}"
rm -rf "$tmp"
