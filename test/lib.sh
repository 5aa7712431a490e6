# SPDX-License-Identifier: GPL-2.0
# Helpers for krdma guest tests.  Sourced by every test under test/guest/.
#
# Environment (set by tools/guest-run and test/run-suite.sh):
#   BUILD     krdma build directory for the running kernel
#   DEV       rxe | siw           the soft RDMA device under test
#   ROLE      A | B               this guest's role in a two-guest test
#   MY_IP     this guest's address on eth0
#   PEER_IP   the other guest's address (== MY_IP in the one-guest lab)
#   LAB       run directory shared with the host (and the other guest)
#   KLINE     6.1 | 6.12 | debug
# A test exits 0 on pass, 77 on skip (with a reason on stdout), else fails.

KRDMA_SYS=/sys/kernel/krdma
KRDMA_CTL=$KRDMA_SYS/control
IBDEV=${DEV:-rxe}0

# nap SECONDS: sleep without a fork.  Under TCG a fork and exec of sleep(1)
# costs the guest milliseconds of CPU, and the waiting loops below poll ten
# times a second, often in both guests at once: a guest that only waits
# must not take the host's CPU from the one doing the work.  A read with a
# timeout from a FIFO that nobody writes is a sleep inside bash.
KRDMA_NAP=/tmp/krdma-nap.$$
if mkfifo "$KRDMA_NAP" 2>/dev/null && exec {KRDMA_NAP_FD}<>"$KRDMA_NAP"; then
	nap() { read -r -t "$1" -u "$KRDMA_NAP_FD" _; return 0; }
else
	nap() { sleep "$1"; }
fi
rm -f "$KRDMA_NAP"

# not_running FILE: a status file (test_status, bench_status) that no longer
# says "running"; without a fork, for the same reason.
not_running() {
	local l=
	read -r l 2>/dev/null <"$1"
	[ -n "$l" ] && [[ $l != *running* ]]
}

# dmesg_mark, then dmesg_new: the kernel's lines since the mark.  Never
# dmesg -C in a test: the suite scans each test's dmesg for kernel bugs.
# dmesg_fetch puts those lines in the array KMSG_NEW, where new_has WORDS
# finds a line holding WORDS (a fixed string) and new_count WORDS counts
# them (in NEW_N), with no command more.  Under KASAN and TCG each command
# costs a quarter of a second of the guest's CPU, and the tests check
# hundreds of lines.  (Not mapfile of the whole log: bash reading
# thousands of lines there is slower than a fork.)
dmesg_mark() { KRDMA_DMESG_MARK=$(dmesg | wc -l); }
dmesg_new() { dmesg | tail -n +"$((${KRDMA_DMESG_MARK:-0} + 1))"; }
dmesg_fetch() { mapfile -t KMSG_NEW < <(dmesg_new); }
new_has() {
	local l
	for l in "${KMSG_NEW[@]}"; do
		[[ $l == *"$1"* ]] && return 0
	done
	return 1
}
new_count() {
	local l
	NEW_N=0
	for l in "${KMSG_NEW[@]}"; do
		[[ $l == *"$1"* ]] && NEW_N=$((NEW_N + 1))
	done
	return 0
}

# ratelimit_pace: every krdma log line that a peer or a user can repeat is
# rate-limited, each line on its own with the kernel's default: 10 in 5 s,
# then nothing until the 5 s are over (a later "callbacks suppressed" line
# counts what was dropped).  A test that expects the line of each refused
# command calls this before each one: it waits until 0.6 s have passed
# since its last call, so at most 9 lines come in any 5 s and none is
# dropped.  A burst of refusals without it (random input) fills the limit:
# nap 5.5 s after one before counting lines again.  Without a fork.
KRDMA_PACE_NEXT=0
ratelimit_pace() {
	local now wait t
	if [ -z "${EPOCHREALTIME:-}" ]; then	# bash before 5.0
		nap 0.6
		return
	fi
	now=${EPOCHREALTIME//[!0-9]/}
	wait=$((KRDMA_PACE_NEXT - now))
	if [ "$wait" -gt 0 ]; then
		printf -v t '%d.%06d' $((wait / 1000000)) $((wait % 1000000))
		nap "$t"
	fi
	KRDMA_PACE_NEXT=$((${EPOCHREALTIME//[!0-9]/} + 600000))
}

# fail MSG: the test fails with MSG.  The kernel's last RDMA lines since
# the test began follow as "DMESG:" lines, which test/run-suite.sh adds to
# the result: CI keeps only the results, and a rare failure must be
# readable from them alone.
fail() {
	local r

	echo "FAIL: $*"
	[ -n "${KRDMA_DMESG_BEFORE:-}" ] &&
		dmesg | tail -n +"$((KRDMA_DMESG_BEFORE + 1))" |
		grep -E 'krdma|siw|rxe|rdma|iw_cm|ib_' |
		grep -v 'self-test passed' | tail -n 4 |
		sed 's/^\[ *[0-9.]*\] /DMESG: /'
	# Lost frames show here first: over the lab's UDP link a busy qemu
	# drops them, and rxe's retries may run out (HACKING).
	r=$(rxe_retries)
	[ -z "$r" ] || echo "DMESG: $IBDEV counters since it was added: $r"
	exit 1
}

# rxe_retries: rxe's counters of lost or repeated packets that are not 0,
# as "name=N ..." (nothing on siw, which has none).
rxe_retries() {
	local f=/sys/class/infiniband/${IBDEV:-none}/ports/1/hw_counters c v out=

	[ -d "$f" ] || return 0
	for c in out_of_seq_request duplicate_request rcvd_seq_err \
		 completer_retry_err retry_exceeded_err; do
		v=$(cat "$f/$c" 2>/dev/null) || continue
		[ "$v" = 0 ] || out+="${out:+ }$c=$v"
	done
	echo "$out"
}
skip() { echo "SKIP: $*"; exit 77; }
log() { echo "# [${SECONDS} s] $*"; }

expect_eq() {	# expect_eq ACTUAL EXPECTED WHAT
	[ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

# Load the RDMA core and bring up $IBDEV on eth0 (idempotent).  What is
# loaded already is seen in /sys, without a command: under KASAN and TCG
# each one costs a quarter of a second, and every test starts here.
rdma_dev_up() {
	[ -e /sys/module/rdma_cm ] || modprobe rdma_cm || fail "modprobe rdma_cm"
	case "$DEV" in
	rxe)	lab_driver rdma_rxe ;;
	siw)	lab_driver siw ;;
	esac
	if [ ! -e "/sys/class/infiniband/$IBDEV" ]; then
		rdma link add "$IBDEV" type "$DEV" netdev eth0 ||
			fail "rdma link add $IBDEV"
	fi
}

# lab_driver MOD: load the soft device's driver.  On Debian's kernels the
# lab builds it from the patched source (tools/build.sh: siw.ko, which
# Debian leaves out, and rdma_rxe.ko, whose fixes Debian lacks); that one
# is loaded, and a driver already loaded must be it (out of tree, "O" in
# its taint), or the tests would run on Debian's unfixed module.
lab_driver() {
	local mod=$1 ko=$BUILD/$1/$1.ko m
	if [ ! -e "/sys/module/$mod" ]; then
		if [ -f "$ko" ]; then
			for m in $(modinfo -F depends "$ko" | tr , ' '); do
				modprobe "$m" || fail "modprobe $m (for $mod)"
			done
			insmod "$ko" || fail "insmod $ko"
		else
			modprobe "$mod" || fail "modprobe $mod"
		fi
	fi
	if [ -f "$ko" ]; then
		grep -q O "/sys/module/$mod/taint" ||
			fail "$mod loaded is not the lab's $ko (taint '$(cat "/sys/module/$mod/taint")')"
	fi
}

rdma_dev_down() {
	rdma link delete "$IBDEV" 2>/dev/null
	true
}

# krdma_load [PARAM=VALUE...]: tests load krdma with dma_check=1, so that
# every mapping it makes is held to its unmap and syncs (krdma_dma.c) and a
# breach is a "krdma: DMA check:" line the bug scan fails on; rxe and siw
# are invisible to CONFIG_DMA_API_DEBUG.  KRDMA_DMA_CHECK=0: without it
# (benchmarks; failslab, whose injected failures it would take).
# Tests also turn on krdma's dynamic debug lines (pr_debug: a connection's
# and a listener's life, quiet by default), so that a failed test's dmesg
# tells the story and the tests that wait for those lines see them;
# KRDMA_DYNDBG= (empty) loads it as a user would (smoke.sh checks both).
krdma_load() {
	local dd=${KRDMA_DYNDBG-+p}

	[ -e /sys/module/krdma ] && return 0
	insmod "$BUILD/krdma.ko" dma_check="${KRDMA_DMA_CHECK:-1}" \
		${dd:+dyndbg="$dd"} "$@" || fail "insmod krdma.ko"
}

krdma_unload() {
	[ -e /sys/module/krdma ] || return 0
	rmmod krdma || fail "rmmod krdma"
}

# ctl CMD: write one command to the control file; returns write's status.
ctl() {
	echo "$*" >"$KRDMA_CTL"
}

# ctl_err CMD: the errno name a rejected command fails with ("OK" if none).
# ctl_err_v CMD: the same in CTL_ERR, without a fork.
ctl_err() {
	ctl_err_v "$@"
	echo "$CTL_ERR"
}
# The write's error message goes through a file of the calling process
# ($BASHPID: callers may run in parallel subshells).
ctl_err_v() {
	local out= f=/tmp/krdma-ctl-err.$BASHPID
	CTL_ERR=OK
	{ echo "$*" >"$KRDMA_CTL"; } 2>"$f" && return 0
	read -r out <"$f"
	: >"$f"
	ctl_errno_name "$out"
}
# ctl_errno_name MSG: CTL_ERR, the errno name of a write's error message.
ctl_errno_name() {
	local out=$1
	case "$out" in
	*"Invalid argument"*)		CTL_ERR=EINVAL ;;
	*"No such file"*)		CTL_ERR=ENOENT ;;
	*"File exists"*)		CTL_ERR=EEXIST ;;
	*"No such device"*)		CTL_ERR=ENODEV ;;
	*"Device or resource busy"*)	CTL_ERR=EBUSY ;;
	*"Operation not supported"*)	CTL_ERR=EOPNOTSUPP ;;
	*"Connection refused"*)		CTL_ERR=ECONNREFUSED ;;
	*"Connection reset"*)		CTL_ERR=ECONNRESET ;;
	*"timed out"*)			CTL_ERR=ETIMEDOUT ;;
	*"Numerical result"*)		CTL_ERR=ERANGE ;;
	*"Bad address"*)		CTL_ERR=EFAULT ;;
	*"Permission denied"*)		CTL_ERR=EACCES ;;
	*"Protocol not supported"*)	CTL_ERR=EPROTONOSUPPORT ;;
	*"Protocol error"*)		CTL_ERR=EPROTO ;;
	*"No route to host"*)		CTL_ERR=EHOSTUNREACH ;;
	*"Message too long"*)		CTL_ERR=EMSGSIZE ;;
	*"temporarily unavailable"*)	CTL_ERR=EAGAIN ;;
	*"Argument list too long"*)	CTL_ERR=E2BIG ;;
	*"Cannot allocate memory"*)	CTL_ERR=ENOMEM ;;
	*"Operation not permitted"*)	CTL_ERR=EPERM ;;
	*"Address already in use"*)	CTL_ERR=EADDRINUSE ;;
	*"Cannot assign requested"*)	CTL_ERR=EADDRNOTAVAIL ;;
	*"Stale file handle"*)		CTL_ERR=ESTALE ;;
	*)				CTL_ERR="OTHER($out)" ;;
	esac
}

expect_ctl_err() {	# expect_ctl_err ERRNO CMD...
	local want=$1
	shift
	ctl_err_v "$@"
	[ "$CTL_ERR" = "$want" ] || fail "'$*': got $CTL_ERR, expected $want"
}

# wait_for SECONDS CMD...: poll until CMD succeeds.
wait_for() {
	local t=$(( $1 * 10 ))
	shift
	while ! "$@" 2>/dev/null; do
		t=$((t - 1))
		[ $t -gt 0 ] || return 1
		nap 0.1
	done
}

# kmsg_open, then kmsg_wait SECONDS GLOB: wait for a kernel line matching
# GLOB logged after kmsg_open, in a blocking read of /dev/kmsg: no fork
# per poll (under KASAN and TCG a "dmesg | grep" costs a quarter of a
# second of a vCPU, and a loop of them takes it from the code under test).
# kmsg_wait returns 1 at the timeout; a caller checks the outcome in dmesg
# as before, so that lines lost to a wrapped buffer cost time, not truth.
kmsg_open() {
	local mark="krdma-test: kmsg_open $$.$RANDOM" end=$((SECONDS + 60)) l rc
	exec {KRDMA_KMSG_FD}</dev/kmsg || return 1
	# Past every record there is: up to a line of our own.  Not "until a
	# read times out": under TCG a short timeout can end the skip early,
	# and kmsg_wait then reads the thousands of records left one by one
	# while its window closes (listen-race over siw, 2026-12-01: 18 s).
	echo "$mark" >/dev/kmsg || return 1
	while [ $SECONDS -lt $end ]; do
		read -r -t 5 -u "$KRDMA_KMSG_FD" l
		rc=$?
		if [ $rc = 0 ]; then
			[[ ${l#*;} == "$mark" ]] && return 0
		elif [ $rc -gt 128 ]; then
			return 1	# the mark never came
		else		# EPIPE: records overwritten
			nap 0.1
		fi
	done
	return 1
}
kmsg_wait() {
	local end=$((SECONDS + $1)) l rc
	[ -n "${KRDMA_KMSG_FD:-}" ] || return 1
	while [ $SECONDS -lt $end ]; do
		read -r -t 1 -u "$KRDMA_KMSG_FD" l
		rc=$?
		if [ $rc = 0 ]; then
			[[ ${l#*;} == $2 ]] && return 0
		elif [ $rc -le 128 ]; then	# EPIPE: records overwritten
			nap 0.1
		fi
	done
	return 1
}

# within SECONDS CMD...: poll until CMD succeeds, bounded by the clock
# (wait_for counts polls, and under TCG each poll that forks runs late).
within() {
	local end=$((SECONDS + $1))
	shift
	until "$@" 2>/dev/null; do
		[ $SECONDS -lt $end ] || return 1
		nap 0.2
	done
}

# ops_going CONN: CONN's self-test has done an operation (no fork).
ops_going() {
	local n=0
	read -r n 2>/dev/null <"$KRDMA_SYS/conns/$1/test_ops"
	[ "${n:-0}" -gt 0 ] 2>/dev/null
}

# peer_gone NAME: guest NAME has ended (tools/guest-run marks it when its
# qemu exits, a crash included): whatever it had not written by then will
# never come, so waiting for it is pointless.
peer_gone() { [ -e "$LAB/gone-$1" ]; }

# Two-guest rendezvous through the shared lab directory.
barrier() {	# barrier NAME [TIMEOUT]
	local name=$1 t=$(( ${2:-120} * 10 )) other
	[ "${TOPO:-single}" = pair ] || return 0
	other=$([ "$ROLE" = A ] && echo B || echo A)
	mkdir -p "$LAB/sync"
	: >"$LAB/sync/$TEST_ID.$name.$ROLE"
	while [ ! -e "$LAB/sync/$TEST_ID.$name.$other" ]; do
		t=$((t - 1))
		[ $t -gt 0 ] || fail "barrier $name: guest $other never came"
		! peer_gone "$other" || fail "barrier $name: guest $other is gone"
		nap 0.1
	done
}

# Pass a small value to the other guest (pair) or to ourselves (single).
put_val() { printf '%s\n' "$2" >"$LAB/sync/$TEST_ID.val.$1.tmp" && mv "$LAB/sync/$TEST_ID.val.$1.tmp" "$LAB/sync/$TEST_ID.val.$1"; }
# has_val NAME: NAME was put (put_val), by either guest.
has_val() { [ -e "$LAB/sync/$TEST_ID.val.$1" ]; }
# wait_val SECONDS NAME: VAL is NAME's value, once the other guest put
# it; fails when it does not come or the other guest ended first (saying
# OTHER-done, or its qemu gone; B just exits then: A's log says why).
# Not in $(...): fail must end the test.
wait_val() {
	local end=$((SECONDS + $1)) other
	other=$([ "$ROLE" = A ] && echo B || echo A)
	until has_val "$2"; do
		if has_val "$other-done" || peer_gone "$other"; then
			[ "$ROLE" = A ] || exit 0
			fail "guest $other ended before it said '$2'"
		fi
		[ $SECONDS -lt $end ] || fail "guest $other never said '$2' ($1 s)"
		nap 0.2
	done
	VAL=$(cat "$LAB/sync/$TEST_ID.val.$2")
}
# sysfs_empty DIR: no entry in DIR.
sysfs_empty() { [ -z "$(ls -A "$1" 2>/dev/null)" ]; }
get_val() {
	local t=1200 other
	other=$([ "$ROLE" = A ] && echo B || echo A)
	while [ ! -e "$LAB/sync/$TEST_ID.val.$1" ]; do
		t=$((t - 1)); [ $t -gt 0 ] || fail "value $1 never came"
		[ "${TOPO:-single}" != pair ] || ! peer_gone "$other" ||
			fail "value $1: guest $other is gone"
		nap 0.1
	done
	cat "$LAB/sync/$TEST_ID.val.$1"
}

# ctl_random_cmd [PORT]: a random control command, well-formed or not, in
# $cmd, and the name it gives in $cname ("-": none).  The well-formed ones
# make and use real objects: listener ql on PORT (default 7170),
# connections q1..q3 to it (and to PORT+9, where nobody listens), self-tests
# and benches on them and on ql's accepted ones, disconnects of both.
# Bash builtins only (a fork costs milliseconds under TCG); seeded by
# RANDOM.
ctl_random_cmd() {
	local p=${1:-7170} q=q$((RANDOM % 3 + 1)) j
	case $((RANDOM % 16)) in
	0)	cmd="listen name=ql addr=$MY_IP:$p depth=$((1 << RANDOM % 7))" ;;
	1)	cmd="unlisten name=ql" ;;
	2|3|4)	cmd="connect name=$q addr=$PEER_IP:$p depth=$((1 << RANDOM % 7)) msg=4K timeout_ms=3000" ;;
	5)	cmd="connect name=$q addr=$PEER_IP:$((p + 9)) timeout_ms=3000" ;;	# nobody listens
	6|7)	cmd="disconnect name=$q" ;;
	8)	cmd="disconnect name=ql.$((RANDOM % 4))" ;;
	9|10)	j=(send write read all send,write)
		cmd="test name=$q op=${j[RANDOM % 5]} size=$((1 << RANDOM % 17)) count=$((RANDOM % 3 + 1))" ;;
	11)	cmd="test name=ql.$((RANDOM % 4)) op=send count=1" ;;
	12|13)	j=(write read send)
		cmd="bench name=$q op=${j[RANDOM % 3]} size=$((64 << RANDOM % 8)) count=$((RANDOM % 200 + 1))" ;;
	*)	local w=(listen unlisten connect disconnect test bench name=q1
			 name=ql.0 name= addr=$MY_IP:$p addr=x depth=99999 depth=4
			 msg=2M op=read, op=all size=0 size=4K count=0 sge=65
			 timeout_ms=1 "=" '' $'\x01' 'count=1k')
		cmd=
		for ((j = RANDOM % 4; j >= 0; j--)); do
			cmd+="${w[RANDOM % ${#w[@]}]} "
		done ;;
	esac
	cname=-
	[[ " $cmd" =~ \ name=([A-Za-z0-9_.-]+)( |$) ]] && cname=${BASH_REMATCH[1]}
}

# ctl_clean_up: close every connection and listener (the control file's;
# a write for any other fails and says so on stderr).
ctl_clean_up() {
	local o
	for o in "$KRDMA_SYS"/conns/*; do
		[ ! -e "$o" ] || ctl disconnect name="${o##*/}"
	done
	for o in "$KRDMA_SYS"/listeners/*; do
		[ ! -e "$o" ] || ctl unlisten name="${o##*/}"
	done
}

# ctl_health PORT WHEN: a control-file listener (hl) on PORT and a
# connection to it (hc) pass a self-test of send, write and read; the
# connection is closed after (the listener's accepted one closes itself).
ctl_health() {
	ctl listen name=hl addr=$MY_IP:$1 || fail "listen $2"
	ctl connect name=hc addr=$PEER_IP:$1 || fail "connect $2"
	ctl test name=hc op=send,write,read size=8K count=2 || fail "test $2"
	wait_for 120 not_running $KRDMA_SYS/conns/hc/test_status
	expect_eq "$(cat $KRDMA_SYS/conns/hc/test_status)" passed "self-test $2"
	ctl disconnect name=hc || fail "disconnect hc $2"
	ctl unlisten name=hl || fail "unlisten hl $2"
}
