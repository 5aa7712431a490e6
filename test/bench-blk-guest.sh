#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The block section of `make bench` (tools/bench), over the rxe device the
# rest of the bench used, in a one-guest boot (KRDMA_BENCH_TOPO=single:
# server and client in the guest, over loopback) and in the two-guest boot
# (pair: guest B the server, null_blk and the exports, guest A the client,
# fio; A's own null_blk is the bound there): the same fio jobs against
#   null_blk    /dev/nullb0 itself, the bound;
#   krdma-blk   krdma_blk.ko's export of /dev/nullb0 mapped over rxe;
#   krdma-blk-wq  the same with the export's "wq" word: the server's
#               completions in the completion workqueue, a shallow queue's
#               commands started there;
#   krdma-blk-nocapsule  (not by default) krdma-blk with the module's
#               incapsule_data_size=0: every write's data by RDMA READ;
#   krdma-blk-hipri  (not by default) krdma-blk with the module's
#               hipri_depth=1: a lone READ's or WRITE's work on the CPU's
#               high-priority worker, not the export's unbound ones;
#   nvme-rdma   the kernel's nvmet-rdma target (configfs) on /dev/nullb0 and
#               its nvme-rdma host (/dev/nvme-fabrics), over the same rxe;
# one after the other, each torn down before the next.  The null_blk is
# memory-backed (queue_mode=2 irqmode=0 memory_backed=1 gb=1, as
# test/guest/blk.sh) and its first KRDMA_BENCH_BLK_SIZE is written once
# before the first job, so that reads find data.  Each target has one
# poll queue besides its queues (null_blk poll_queues=1, krdma-blk's map
# poll_queues=1, nvme-rdma nr_poll_queues=1): the jobs marked hipri run
# polled, through io_uring with --hipri (IORING_SETUP_IOPOLL: the
# submitter reaps its completions through the driver's ->poll), the
# others through libaio on the interrupt-driven queues.
#   KRDMA_BENCH_BLK_SECS     seconds each fio job runs (default 5), after
#                            KRDMA_BENCH_BLK_RAMP (1) not counted
#   KRDMA_BENCH_BLK_RUNS     runs of each job on each target (default 3;
#                            the table takes their median)
#   KRDMA_BENCH_BLK_SIZE     the region fio works on (default 128M)
#   KRDMA_BENCH_BLK_QUEUES   hardware queues of krdma-blk and I/O queues of
#                            nvme-rdma (default 2, one per vCPU)
#   KRDMA_BENCH_BLK_TARGETS  which, in order (default "null_blk krdma-blk
#                            krdma-blk-wq nvme-rdma"; nvme-rdma-noinline,
#                            not by default: nvme-rdma with the port's
#                            param_inline_data_size=0, so that a write's
#                            data comes by RDMA READ, as krdma-blk-nocapsule's
#                            does)
#   KRDMA_BENCH_BLK_PROFILE  a job name (randread-4k-qd32, ...): after the
#                            measured runs, that job runs once more on each
#                            target under `perf record -a` (cpu-clock; TCG
#                            has no PMU), flat profile in
#                            bench-blk/profile-TARGET.txt; not in the table
# Guest A writes fio's JSON to $LAB/bench-blk/TARGET-JOB-rRUN.json and one
# line per cell ("TARGET JOB ok|failed WHY", tab separated) to
# $LAB/bench-blk.tsv; tools/bench-report.py reads both.  A step that fails
# marks its cells failed and the script goes on with the next target;
# every step that can block runs under timeout.  Between two guests, B
# sets a target's server up, says so (put_val up-TARGET: ok or why not),
# and takes it down once A says down-TARGET.
export TOPO=${KRDMA_BENCH_TOPO:-single} DEV=rxe ROLE=${GUEST:-A} TEST_ID=bench-blk
[ "$TOPO" = single ] && export PEER_IP=$MY_IP
. "$(dirname "$0")/lib.sh"

secs=${KRDMA_BENCH_BLK_SECS:-5}
ramp=${KRDMA_BENCH_BLK_RAMP:-1}
size=${KRDMA_BENCH_BLK_SIZE:-128M}
runs=${KRDMA_BENCH_BLK_RUNS:-3}
queues=${KRDMA_BENCH_BLK_QUEUES:-2}
targets=${KRDMA_BENCH_BLK_TARGETS:-null_blk krdma-blk krdma-blk-wq nvme-rdma}
profile=${KRDMA_BENCH_BLK_PROFILE:-}
out=$LAB/bench-blk.tsv
dir=$LAB/bench-blk
NB=/dev/nullb0
BLK_CTL=/sys/kernel/krdma_blk/control
KB=kbench0
# The server listens on its own address, the client maps the peer's (the
# same address in one guest).
KB_PORT=7490
NQN=nqn.2026-11.org.krdma:bench
CFS=/sys/kernel/config
NVMET=$CFS/nvmet
# JOB RW BS IODEPTH ENGINE (libaio, or hipri: io_uring polled)
JOBS="randread-4k-qd32 randread 4k 32 libaio
randwrite-4k-qd32 randwrite 4k 32 libaio
read-128k-qd8 read 128k 8 libaio
write-128k-qd8 write 128k 8 libaio
randread-4k-qd1 randread 4k 1 libaio
randread-4k-qd1-hipri randread 4k 1 hipri"
mkdir -p "$dir"
[ "$ROLE" = A ] && : >"$out"
cell() { printf '%s\t%s\t%s\t%s\n' "$@" >>"$out"; }
# fail_all TARGET WHY: every cell of TARGET failed, for this reason.
fail_all() {
	local job rest why=${2//$'\n'/; }
	echo "$1: $why"
	while read -r job rest; do cell "$1" "$job" failed "$why"; done <<<"$JOBS"
}
# t SECONDS CMD...: CMD, killed if it takes longer (a hung step must not
# hang the guest; a task stuck in the kernel stays, but the script goes on).
t() { timeout -k 5 "$@"; }

# engine_opts ENGINE: fio's options for a job's ENGINE column, in eopts.
engine_opts() {
	case $1 in
	hipri) eopts=(--ioengine=io_uring --hipri=1) ;;
	*) eopts=("--ioengine=$1") ;;
	esac
}

# cpu_ticks: the guest's total and idle jiffies, all CPUs (no fork).
cpu_ticks() {
	local _c u n s i w q sq st
	read -r _c u n s i w q sq st _ </proc/stat
	echo "$((u + n + s + i + w + q + sq + st)) $i"
}

# run_fio TARGET DEV: the jobs, one after the other, on DEV, each $runs
# times.  With each cell goes the share of the guest's CPU time that was
# idle while fio ran, over its runs (a target bound by latency leaves it
# idle, one bound by CPU does not).
run_fio() {
	local target=$1 dev=$2 job rw bs qd eng f r rc why t0 i0 t1 i1 eopts
	local hi=/sys/module/krdma_blk/parameters/test_hipri_cmds h0=
	while read -r job rw bs qd eng; do
		log "$target: $job ($runs runs)"
		rm -f "$dir/$target-$job"-r*.json
		why=
		h0=
		[[ $target == krdma-blk* ]] && [ "$TOPO" = single ] &&
			[ -r $hi ] && h0=$(cat $hi)
		read -r t0 i0 < <(cpu_ticks)
		engine_opts "$eng"
		for ((r = 1; r <= runs; r++)); do
			f=$dir/$target-$job-r$r.json
			t $((secs + ramp + 120)) fio --name="$job" \
				--filename="$dev" --direct=1 "${eopts[@]}" \
				--rw="$rw" --bs="$bs" --iodepth="$qd" --numjobs=1 \
				--size="$size" --time_based --runtime="$secs" \
				--ramp_time="$ramp" --norandommap --randrepeat=0 \
				--lat_percentiles=1 --output-format=json \
				--output="$f" 2>"$dir/$target-$job.err" </dev/null
			rc=$?
			if [ $rc != 0 ] || [ ! -s "$f" ]; then
				why="fio exit $rc (run $r)"
				break
			fi
		done
		read -r t1 i1 < <(cpu_ticks)
		# A server's commands on the CPU's high-priority worker
		# (hipri_depth), in the log only.
		[ -n "$h0" ] && log "$target: $job: $(($(cat $hi) - h0)) commands on the high-priority worker"
		if [ -z "$why" ]; then
			cell "$target" "$job" ok "idle=$(( (i1 - i0) * 100 / (t1 - t0 + 1) ))"
		else
			cell "$target" "$job" failed "$why"
			echo "$target $job: $why"
			cat "$dir/$target-$job.err"
		fi
	done <<<"$JOBS"
	[ -n "$profile" ] && grep -q "^$profile " <<<"$JOBS" && prof_fio "$@"
	true
}

# prof_fio TARGET DEV: job $profile once more, under perf.
prof_fio() {
	local target=$1 dev=$2 job rw bs qd eng eopts d=$dir/perf-$1.data
	command -v perf >/dev/null || { echo "no perf on the host root"; return 1; }
	read -r job rw bs qd eng < <(grep "^$profile " <<<"$JOBS")
	log "$target: $job under perf"
	engine_opts "$eng"
	echo 0 >/proc/sys/kernel/kptr_restrict
	HOME=/tmp t $((secs + ramp + 120)) perf record -e cpu-clock -F 1000 -a -g \
		-o "$d" -- fio --name="$job" --filename="$dev" --direct=1 \
		"${eopts[@]}" --rw="$rw" --bs="$bs" --iodepth="$qd" \
		--numjobs=1 --size="$size" --time_based --runtime="$secs" \
		--norandommap --randrepeat=0 --output="$dir/perf-$target-fio.txt" \
		>"$dir/perf-$target.log" 2>&1 </dev/null
	HOME=/tmp perf report -i "$d" --kallsyms=/proc/kallsyms --stdio \
		--no-children -g none --sort comm,dso,sym --percent-limit 0.7 \
		2>/dev/null | grep -v '^$' >"$dir/profile-$target.txt"
	HOME=/tmp perf report -i "$d" --kallsyms=/proc/kallsyms --stdio \
		--no-children -g none --sort comm --percent-limit 0.5 \
		2>/dev/null | grep -v '^$' >"$dir/profile-$target-comm.txt"
}

# ---- krdma-blk --------------------------------------------------------------
# kb_load [PARAMS]: the module, with PARAMS (NAME=VALUE ... of its
# parameters; kb_unload resets them).
kb_load() {
	local ko=$BUILD/blk/krdma_blk.ko p
	[ -f "$ko" ] || { echo "$ko not built"; return 1; }
	lsmod | grep -q '^krdma_blk ' || insmod "$ko" || { echo "insmod krdma_blk"; return 1; }
	for p in ${1:-}; do
		echo "${p#*=}" >"/sys/module/krdma_blk/parameters/${p%%=*}" ||
			{ echo "$p"; return 1; }
	done
}
kb_unload() {
	lsmod | grep -q '^krdma_blk ' || return 0
	t 30 rmmod krdma_blk
	true
}
# kb_export [WORD [PARAMS]]: the server, its export line with WORD.
kb_export() {
	kb_load "${2:-}" || return 1
	t 60 bash -c "echo 'export name=bench path=$NB addr=$MY_IP:$KB_PORT ${1:-}' >$BLK_CTL" ||
		{ echo "krdma-blk export"; return 1; }
}
kb_unexport() {
	[ -w "$BLK_CTL" ] || return 0
	t 60 bash -c "echo 'unexport name=bench' >$BLK_CTL" 2>/dev/null
	true
}
# kb_map: the client, mapping the server's export.
kb_map() {
	kb_load || return 1
	t 60 bash -c "echo 'map name=$KB addr=$PEER_IP:$KB_PORT export=bench queues=$queues poll_queues=1' >$BLK_CTL" ||
		{ echo "krdma-blk map"; return 1; }
	wait_for 10 test -b /dev/$KB || { echo "/dev/$KB never appeared"; return 1; }
}
kb_unmap() {
	[ -w "$BLK_CTL" ] || return 0
	t 60 bash -c "echo 'unmap name=$KB' >$BLK_CTL" 2>/dev/null
	true
}

# ---- nvmet-rdma and nvme-rdma ----------------------------------------------
NVME_CTRL=
# nvmet_up [INLINE]: nvmet-rdma's port with param_inline_data_size INLINE
# (default: nvmet-rdma's, a page: a 4 KiB write goes in its command
# capsule, with no RDMA READ), on this guest's address.
nvmet_up() {
	local m s=$NVMET/subsystems/$NQN p=$NVMET/ports/1
	for m in nvmet nvmet-rdma; do
		modprobe "$m" || { echo "modprobe $m"; return 1; }
	done
	# configfs is a module: mount it once nvmet (which needs it) is in.
	mountpoint -q $CFS || mount -t configfs none $CFS ||
		{ echo "mount configfs"; return 1; }
	[ -d $NVMET ] || { echo "no $NVMET"; return 1; }
	mkdir $s && echo 1 >$s/attr_allow_any_host &&
		mkdir $s/namespaces/1 &&
		echo -n $NB >$s/namespaces/1/device_path &&
		echo 1 >$s/namespaces/1/enable ||
		{ echo "nvmet subsystem $NQN"; return 1; }
	mkdir $p && echo rdma >$p/addr_trtype && echo ipv4 >$p/addr_adrfam &&
		echo "$MY_IP" >$p/addr_traddr && echo 4420 >$p/addr_trsvcid &&
		{ [ -z "${1:-}" ] || echo "$1" >$p/param_inline_data_size; } &&
		ln -s $s $p/subsystems/$NQN ||
		{ echo "nvmet port"; return 1; }
}
# nvme_connect: the host, connected to the target's port.
nvme_connect() {
	local uuid r
	modprobe nvme-rdma || { echo "modprobe nvme-rdma"; return 1; }
	# nvme-fabrics refuses a hostnqn whose hostid is not its uuid.
	uuid=$(cat /proc/sys/kernel/random/uuid)
	r=$(t 90 bash -c 'exec 3<>/dev/nvme-fabrics &&
		echo "$1" >&3 && read -r l <&3 && echo "$l"' _ \
		"transport=rdma,traddr=$PEER_IP,trsvcid=4420,nqn=$NQN,hostnqn=nqn.2014-08.org.nvmexpress:uuid:$uuid,hostid=$uuid,nr_io_queues=$queues,nr_poll_queues=1,ctrl_loss_tmo=10") ||
		{ echo "nvme-rdma connect"; return 1; }
	NVME_CTRL=nvme$(sed -n 's/.*instance=\([0-9]*\).*/\1/p' <<<"$r")
	[ "$NVME_CTRL" != nvme ] || { echo "connect said '$r'"; NVME_CTRL=; return 1; }
	echo "nvme-rdma: $r"
	wait_for 20 nvme_dev >/dev/null || { echo "no namespace of $NVME_CTRL"; return 1; }
}
# nvme_dev: the namespace's block device (with native multipath the head
# disk nvmeXnY, not the path nvmeXcZnY).
nvme_dev() {
	local d
	for d in /sys/block/nvme*n1; do
		[ -e "$d" ] && [[ ${d##*/} != *c* ]] && [ -b "/dev/${d##*/}" ] &&
			{ echo "/dev/${d##*/}"; return 0; }
	done
	return 1
}
nvme_disconnect() {
	local c n
	# Every controller of the subsystem: also one whose connect came
	# through after its write was given up on (NVME_CTRL not known).
	for c in /sys/class/nvme/nvme*; do
		[ -e "$c/delete_controller" ] || continue
		n=
		read -r n 2>/dev/null <"$c/subsysnqn"
		[ "$n" = "$NQN" ] || [ "${c##*/}" = "$NVME_CTRL" ] || continue
		t 60 bash -c "echo 1 >$c/delete_controller"
	done
	NVME_CTRL=
}
nvmet_down() {
	local s=$NVMET/subsystems/$NQN p=$NVMET/ports/1
	[ -d $NVMET ] || return 0
	[ -L $p/subsystems/$NQN ] && rm -f $p/subsystems/$NQN
	[ -d $p ] && rmdir $p
	[ -e $s/namespaces/1/enable ] && echo 0 >$s/namespaces/1/enable
	[ -d $s/namespaces/1 ] && rmdir $s/namespaces/1
	[ -d $s ] && rmdir $s
	true
}

cleanup() {
	set +e
	# B waits for this (or for A's qemu to go) whatever became of A.
	[ "$TOPO" = pair ] && [ "$ROLE" = A ] && put_val A-done 1
	nvme_disconnect
	kb_unmap
	nvmet_down
	kb_unexport
	kb_unload
} 2>/dev/null
trap cleanup EXIT

# ---- targets ----------------------------------------------------------------
# target_parts TARGET: a krdma-blk target's export word and module
# parameters (both sides load the module with them), in word and params.
target_parts() {
	word= params=
	case $1 in
	krdma-blk-wq)		word=wq ;;
	krdma-blk-nocapsule)	params=incapsule_data_size=0 ;;
	krdma-blk-hipri)	params=hipri_depth=1 ;;
	esac
}
# server_up TARGET: its server side on this guest; says why not.
server_up() {
	case $1 in
	krdma-blk|krdma-blk-wq|krdma-blk-nocapsule|krdma-blk-hipri)
		target_parts "$1"
		kb_export "$word" "$params" ;;
	nvme-rdma)		nvmet_up ;;
	nvme-rdma-noinline)	nvmet_up 0 ;;
	*)	echo "unknown target $1"; return 1 ;;
	esac
}
server_down() {
	case $1 in
	krdma-blk*)	kb_unexport; kb_unload ;;
	nvme-rdma*)	nvmet_down ;;
	esac
}
# client_up TARGET: its client side, in this shell (nvme_connect sets
# NVME_CTRL); the block device in CDEV.
client_up() {
	CDEV=
	case $1 in
	krdma-blk*)
		target_parts "$1"
		kb_map "$params" && CDEV=/dev/$KB ;;
	nvme-rdma*)
		nvme_connect || return 1
		CDEV=$(nvme_dev) ||
			{ echo "no namespace of $NVME_CTRL"; return 1; } ;;
	esac
}
client_down() {
	case $1 in
	krdma-blk*)	kb_unmap; [ "$TOPO" = single ] || kb_unload ;;
	nvme-rdma*)	nvme_disconnect ;;
	esac
}
# describe TARGET: what the log says it is.
describe() {
	target_parts "$1"
	case $1 in
	krdma-blk*) log "$1: export${word:+ ($word)} and map over $IBDEV${params:+, $params}" ;;
	*) log "$1: nvmet-rdma target and host over $IBDEV" ;;
	esac
}

rdma_dev_up
# A bench measures krdma, not its test-only DMA check.
KRDMA_DMA_CHECK=0 krdma_load
[ "$TOPO" = pair ] && mkdir -p "$LAB/sync"
log "null_blk, $size written once"
lsmod | grep -q '^null_blk ' && rmmod null_blk
if ! modprobe null_blk queue_mode=2 irqmode=0 memory_backed=1 gb=1 nr_devices=1 \
	poll_queues=1 ||
	! wait_for 10 test -b $NB; then
	if [ "$ROLE" = A ]; then
		for target in $targets; do fail_all "$target" "no null_blk"; done
	else
		for target in $targets; do put_val "up-$target" "no null_blk on B"; done
	fi
	exit 1
fi
t 300 fio --name=fill --filename=$NB --direct=1 --ioengine=libaio --rw=write \
	--bs=1M --iodepth=8 --size="$size" --output=/dev/null </dev/null ||
	echo "filling $NB failed"

# Guest B of the pair: each target's server, up until A is done with it.
if [ "$ROLE" = B ]; then
	for target in $targets; do
		[ "$target" = null_blk ] && continue
		describe "$target"
		if server_up "$target" >"$dir/up-B-$target.log" 2>&1; then
			put_val "up-$target" ok
		else
			put_val "up-$target" "B: $(tail -n 1 "$dir/up-B-$target.log")"
		fi
		cat "$dir/up-B-$target.log"
		# As long as A's fio takes (wait_val ends when A is done or gone).
		wait_val 86400 "down-$target"
		server_down "$target"
	done
	put_val B-done 1
	log "done"
	exit 0
fi

{
	printf 'info\tnull_blk\tsize\t%s\n' "$size"
	printf 'info\tfio\tsecs\t%s\n' "$secs"
	printf 'info\tfio\truns\t%s\n' "$runs"
	printf 'info\tfio\tversion\t%s\n' "$(fio --version)"
	printf 'info\tblk\tqueues\t%s\n' "$queues"
	printf 'info\tblk\ttopo\t%s\n' "$TOPO"
} >>"$out"

rc=0
for target in $targets; do
	if [ "$target" = null_blk ]; then
		run_fio null_blk $NB
		continue
	fi
	describe "$target"
	up=$dir/up-A-$target.log
	: >"$up"
	if [ "$TOPO" = pair ]; then
		# Not wait_val, which would end the script: the target's cells
		# fail and the next target is tried.
		VAL="B never said its server was up"
		w=$((SECONDS + 600))
		until has_val "up-$target"; do
			{ has_val B-done || peer_gone B ||
				[ $SECONDS -ge $w ]; } && break
			nap 0.2
		done
		has_val "up-$target" && read -r VAL <"$LAB/sync/$TEST_ID.val.up-$target"
		[ "$VAL" = ok ] || echo "$VAL" >"$up"
	else
		server_up "$target" >"$up" 2>&1 && VAL=ok || VAL=
	fi
	if [ "$VAL" = ok ] && client_up "$target" >>"$up" 2>&1 &&
		[ -n "$CDEV" ]; then
		cat "$up"
		run_fio "$target" "$CDEV"
	else
		cat "$up"
		fail_all "$target" "set-up: $(tail -n 1 "$up")"
		rc=1
	fi
	client_down "$target"
	if [ "$TOPO" = pair ]; then
		put_val "down-$target" 1
	else
		server_down "$target"
	fi
done
grep -q 'failed' "$out" && rc=1
log "done"
exit $rc
