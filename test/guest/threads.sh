#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Many threads at once (#21): /dev/krdma ioctls and control-file writes
# racing each other, device removal and rmmod.
#  (a) `ioctl_fuzz mt` (test/ioctl_fuzz.c): random ioctls from 4 threads
#      on live listeners, connections, registrations and transfers, on one
#      shared session and on one each, closing handles and ending
#      sessions under each other; meanwhile 4 shell writers write random
#      well-formed and malformed control lines (test/lib.sh
#      ctl_random_cmd: listeners, connections, self-tests, benches,
#      disconnects, on shared names).  Every ioctl fails only with an
#      errno the ABI allows for it, and every refused control write with
#      one the control file's ABI names (below); a fresh session then
#      works byte for byte.
#  (b) the same while the device is deleted and added back again and
#      again (each removal must return within 60 s).
#  (c) rmmod krdma while the writers write and ioctl threads run: refused
#      as "in use" while /dev/krdma is open, krdma whole afterwards; once
#      the files are closed rmmod succeeds within 60 s under the writers,
#      which see ENODEV while it unloads and then the file gone (ENOENT).
#      Reloaded, krdma works: a control-file connect and self-test pass,
#      an ioctl session moves data, nothing is left, rmmod is clean.
# The guest's dmesg is scanned for kernel bugs (KASAN, lockdep, WARNING,
# hung tasks) by the suite.  Counts: make check 4000 ioctls and 800
# control lines in (a), 2 removals in (b) (6.12, rxe: 22 to 27 s); make
# stress (KRDMA_STRESS=1) 100,000 and 100,000, 20 removals (tools/stress
# sets fewer on the debug kernel, where even 1000 and 200 take 87 s).  (b) and (c) run the ioctls and
# writers for as long as their removals and rmmod take.  Knobs: KRDMA_MT_ITERS,
# KRDMA_MT_LINES, KRDMA_MT_ROUNDS, KRDMA_MT_THREADS, KRDMA_MT_WRITERS,
# KRDMA_MT_SEED.
# topo: single
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
fuzz=$top/build/test/ioctl_fuzz
[ -x "$fuzz" ] || fail "$fuzz is not built (make tools)"

if [ "${KRDMA_STRESS:-0}" = 1 ]; then
	iters=${KRDMA_MT_ITERS:-100000} lines=${KRDMA_MT_LINES:-100000}
	rounds=${KRDMA_MT_ROUNDS:-20}
elif [ "$KLINE" = debug ]; then	# KASAN and lockdep: far slower
	iters=${KRDMA_MT_ITERS:-1000} lines=${KRDMA_MT_LINES:-200}
	rounds=${KRDMA_MT_ROUNDS:-2}
else
	iters=${KRDMA_MT_ITERS:-4000} lines=${KRDMA_MT_LINES:-800}
	rounds=${KRDMA_MT_ROUNDS:-2}
fi
threads=${KRDMA_MT_THREADS:-4} writers=${KRDMA_MT_WRITERS:-4}
seed=${KRDMA_MT_SEED:-20261126}
fport=7500	# ioctl_fuzz: 7500..7503 + 2 ports a thread
cport=7470	# the control writers' listener (7479: nobody)
out=$(mktemp -d)
stop=$out/stop
fpid=
cleanup() {
	[ -z "$fpid" ] || kill -9 "$fpid" 2>/dev/null
	touch "$stop"
	wait 2>/dev/null
	rm -rf "$out"
}
trap cleanup EXIT

# The errnos a refused control write may give (Documentation/ABI/testing/
# sysfs-kernel-krdma): the grammar's and each command's, ENOMEM, ENODEV
# while krdma unloads, and a connection's own error when it is down (those
# that end connections, include/uapi/linux/krdma.h); the file gone after
# rmmod (ENOENT).
ctl_errs='Invalid argument|No such file or directory|File exists|Device or resource busy'
ctl_errs+='|Operation not supported|Connection refused|Connection timed out|No route to host'
ctl_errs+='|Protocol error|Protocol not supported|Message too long|Cannot allocate memory'
ctl_errs+='|Address already in use|Cannot assign requested address|No such device'
ctl_errs+='|Connection reset by peer|Transport endpoint is not connected|Permission denied'
ctl_errs+='|Remote I/O error|Input/output error'

# writer ID N: N random control lines, fewer if $stop appears; bash's
# message of each failed write goes to $out/err.ID, followed by a line
# "<- COMMAND", the count to $out/n.ID.
writer() {
	local i
	RANDOM=$((seed + $1))
	for ((i = 0; i < $2; i++)); do
		[ ! -e "$stop" ] || break
		ctl_random_cmd $cport
		echo "$cmd" >"$KRDMA_CTL" || echo "<- $cmd" >&2
	done 2>>"$out/err.$1"
	echo "$i" >"$out/n.$1"
}
writers_start() {	# writers_start LINES: in all, split among the writers
	local w
	rm -f "$stop" "$out"/n.* "$out"/err.*
	for ((w = 0; w < writers; w++)); do
		writer "$w" $(( $1 / writers + (w < $1 % writers) )) &
	done
}
# writers_check WHAT: wait for the writers; every failed write's errno is
# one the control file may give.  Sets $wlines (lines written), $wfailed.
writers_check() {
	local w n msgs bad
	wait
	wlines=0
	for ((w = 0; w < writers; w++)); do
		read -r n 2>/dev/null <"$out/n.$w" || fail "$1: writer $w did not finish"
		wlines=$((wlines + n))
	done
	msgs=$(grep -hv '^<- ' "$out"/err.* | sed 's/.*: //')
	wfailed=$(grep -c . <<<"$msgs")
	log "$1: $wlines control lines, $wfailed refused:" \
		"$(sort <<<"$msgs" | uniq -c | sort -rn | awk '{n=$1; $1=""; printf "%s%s=%d", s, $0, n; s=","}')"
	bad=$(grep -vxE "$ctl_errs" <<<"$msgs" | grep . | sort | uniq -c)
	[ -z "$bad" ] || fail "$1: control writes failed with errnos the ABI does not name: $bad;" \
		"$(awk -v ok="^($ctl_errs)\$" '/^<- / { if (b) print m, $0; b = 0; next }
			{ m = $0; sub(/.*: /, "", m); b = m !~ ok }' "$out"/err.* | head -n 5)"
}
# fuzz_start SEED ITERS: ioctl_fuzz mt in the background ($fpid).
fuzz_start() {
	"$fuzz" mt "$MY_IP" $fport "$1" "$2" "$threads" >"$out/fuzz.log" 2>&1 &
	fpid=$!
}
# fuzz_check WHAT: its result; it must have passed.
fuzz_check() {
	local rc
	wait "$fpid"
	rc=$?
	fpid=
	grep -E '^# (mt: .*(calls from|sessions)|errors:|succeeded:|.*not in the ABI|.* took [0-9.]+ s:)' "$out/fuzz.log" |
		sed "s/^# /# [$1] /"
	[ $rc = 0 ] || fail "$1: ioctl_fuzz mt: $(grep -m1 -E '^(not ok|Bail)' "$out/fuzz.log")" \
		"$(grep -m3 'not in the ABI' "$out/fuzz.log")"
}
# settle WHAT: close what the control file made; nothing may be left.
settle() {
	ctl_clean_up 2>/dev/null
	wait_for 30 eval '[ -z "$(ls $KRDMA_SYS/conns)$(ls $KRDMA_SYS/listeners)" ]' ||
		fail "$1: left behind: $(ls $KRDMA_SYS/conns; ls $KRDMA_SYS/listeners)"
}
# health WHAT: a fresh /dev/krdma session moves data, and leaves nothing.
health() {
	"$fuzz" health "$MY_IP" $fport >"$out/health.log" 2>&1 ||
		fail "$1: ioctl health check: $(grep -m1 -E '^(not ok|Bail)' "$out/health.log")"
}
# phase_end WHAT: the ioctls and the writes were what the ABI allows,
# nothing is left, krdma is healthy.
phase_end() {
	fuzz_check "$1"
	writers_check "$1"
	settle "$1"
	health "$1"
	log "$1 took $((SECONDS - t0)) s"
}

rdma_dev_up
krdma_load

# ---- (a) ioctl threads and control writers --------------------------------
t0=$SECONDS
log "(a) $iters ioctls from $threads threads, $lines control lines from $writers writers (seed $seed)"
writers_start "$lines"
fuzz_start "$seed" "$iters"
phase_end "(a)"
[ "$wlines" = "$lines" ] || fail "(a): $wlines control lines written, expected $lines"
grep -qE '^# mt: live: [1-9][0-9]* sessions populated, [1-9][0-9]* sends and writes' "$out/fuzz.log" ||
	fail "(a): no live session moved data: $(grep '^# mt: live' "$out/fuzz.log")"

# ---- (b) the same while the device comes and goes ------------------------
t0=$SECONDS
log "(b) the same while $IBDEV is deleted and added $rounds times"
writers_start 1000000000
fuzz_start $((seed + 1)) 1000000000
within 30 grep -q '^# mt: [0-9]* calls$' "$out/fuzz.log" || fail "(b): ioctl_fuzz made no call"
for ((r = 1; r <= rounds; r++)); do
	nap 0.$((RANDOM % 9 + 1))
	timeout 60 rdma link delete "$IBDEV" || fail "(b) round $r: rdma link delete failed or hung"
	nap 0.$((RANDOM % 5 + 1))
	rdma_dev_up
done
kill -USR1 "$fpid" 2>/dev/null
touch "$stop"
phase_end "(b)"

# ---- (c) rmmod under the writers -------------------------------------------
t0=$SECONDS
log "(c) rmmod krdma while control writers write and ioctl threads run"
writers_start 1000000000
# After the writers started: they must not hold it open too.
exec {kfd}<>/dev/krdma || fail "open /dev/krdma"
fuzz_start $((seed + 2)) 1000000000
within 30 grep -q '^# mt: [0-9]* calls$' "$out/fuzz.log" || fail "(c): ioctl_fuzz made no call"
rm_out=$(timeout 60 rmmod krdma 2>&1) && fail "(c): rmmod with /dev/krdma open succeeded"
grep -q 'in use' <<<"$rm_out" || fail "(c): rmmod with /dev/krdma open: $rm_out"
lsmod | grep -q '^krdma ' || fail "(c): krdma gone after rmmod was refused"
[ -c /dev/krdma ] && [ -w $KRDMA_CTL ] || fail "(c): /dev/krdma or the control file gone after rmmod was refused"
kill -USR1 "$fpid" 2>/dev/null
fuzz_check "(c)"
exec {kfd}>&-
timeout 60 rmmod krdma || fail "(c): rmmod under the control writers failed or hung ($?)"
[ ! -e $KRDMA_SYS ] && [ ! -e /dev/krdma ] || fail "(c): krdma's files left after rmmod"
nap 1		# the writers meet the file gone
touch "$stop"
writers_check "(c)"
grep -q 'control: No such file or directory' "$out"/err.* ||
	fail "(c): no writer saw the control file gone"
log "(c) took $((SECONDS - t0)) s"

# ---- healthy after all that --------------------------------------------------
krdma_load
ctl_health 7480 "after reload"
settle "after reload"
health "after reload"
timeout 60 rmmod krdma || fail "rmmod after the test failed or hung"
