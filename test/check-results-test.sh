#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side self-test of tools/check-results, the rules by which make check
# counts, and of tools/emulator-fault.sh, which bug lines it calls TCG's: fake lab directories under a temporary directory, fake tests
# (their header lines only), and the exact lines and exit status expected
# of each.  No guest, no build; a second or two.  tools/check runs it
# first ("static: check-results self-test").
#   check-results-test.sh [-v]     -v: print every case, not only failures
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cr=$top/tools/check-results
verbose=0
[ "${1:-}" = -v ] && verbose=1
# The fake lanes below are held against fixed expectations: nothing of the
# caller's run may narrow them (tools/check exports KRDMA_DEBUG_RXE in make
# check, KRDMA_TESTS with --tests).
unset KRDMA_DEBUG_RXE KRDMA_STRESS KRDMA_TESTS
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The fake tests: header lines are all test/list-tests.sh reads.
mkdir -p "$tmp/guest"
mktest() {	# mktest NAME TOPOS DEVS [KLINES]
	{
		echo "# topo: $2"
		echo "# dev: $3"
		[ -z "${4:-}" ] || echo "# kernel: $4"
	} >"$tmp/guest/$1.sh"
}
mktest t1 "single pair" "rxe siw"
mktest t2 "single pair" "rxe"
mktest t3 "pair" "rxe siw"
mktest kunit "single" "rxe" "debug"
# Expected: single rxe: t1 t2; pair rxe: t1 t2 t3; single siw: t1;
# debug single rxe: kunit t1 t2 kmemleak.

pass=0 fail=0
n=0
# lab: a fresh lab directory; results GUEST DEV LINES... fill one file.
lab() { n=$((n + 1)); L=$tmp/lab$n; mkdir -p "$L"; }
results() {
	local g=$1 d=$2
	shift 2
	printf '%s\n' "$@" >"$L/results-$g-$d"
}

# expect NAME RC "LINE..." -- CHECK-RESULTS ARGS: the exact output and
# exit status of tools/check-results.
expect() {
	local name=$1 want_rc=$2 want=$3 got rc
	shift 4
	got=$("$cr" --test-dir "$tmp/guest" "$@" 2>&1)
	rc=$?
	if [ "$got" = "$want" ] && [ "$rc" = "$want_rc" ]; then
		pass=$((pass + 1))
		[ "$verbose" = 0 ] || echo "ok - $name"
		return 0
	fi
	fail=$((fail + 1))
	echo "not ok - $name (exit $rc, expected $want_rc)"
	diff <(echo "$want") <(echo "$got") | sed 's/^/	/'
}

# --- merging over the guests of a pair
lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1" "PASS t2" "PASS t3"
expect "PASS+PASS is PASS" 0 "PASS [6.12 rxe pair] t1
PASS [6.12 rxe pair] t2
PASS [6.12 rxe pair] t3" -- "$L" 6.12 pair rxe A:0 B:0

lab
results A rxe "PASS t1" "SKIP t2: no foo on A" "PASS t3"
results B rxe "SKIP t1: no foo on B" "PASS t2" "PASS t3"
expect "PASS+SKIP is SKIP, either way round" 0 "SKIP [6.12 rxe pair] t1: guest B: no foo on B
SKIP [6.12 rxe pair] t2: guest A: no foo on A
PASS [6.12 rxe pair] t3" -- "$L" 6.12 pair rxe A:0 B:0

lab
results A rxe "FAIL t1: broke on A" "PASS t2" "SKIP t3: x"
results B rxe "PASS t1" "FAIL t2: broke on B" "FAIL t3: broke on B"
expect "FAIL on either guest is FAIL, over PASS and SKIP" 1 "FAIL [6.12 rxe pair] t1: guest A: broke on A
FAIL [6.12 rxe pair] t2: guest B: broke on B
FAIL [6.12 rxe pair] t3: guest B: broke on B" -- "$L" 6.12 pair rxe A:0 B:0

lab
results A rxe "FAIL t1: one" "PASS t2" "PASS t3"
results B rxe "FAIL t1: two" "PASS t2" "PASS t3"
expect "FAIL on both guests names both" 1 "FAIL [6.12 rxe pair] t1: guest A: one; guest B: two
PASS [6.12 rxe pair] t2
PASS [6.12 rxe pair] t3" -- "$L" 6.12 pair rxe A:0 B:0

# --- what a line may say
lab
results A rxe "OK t1" "PASSED t2: fine"
expect "an unknown status word is a FAIL naming it" 1 "FAIL [6.12 rxe single] t1: guest A: unknown status 'OK'
FAIL [6.12 rxe single] t2: guest A: unknown status 'PASSED'" -- "$L" 6.12 single rxe A:0

lab
results A rxe "PASS t1"
expect "an expected test without a result did not run" 1 "PASS [6.12 rxe single] t1
FAIL [6.12 rxe single] t2: guest A: did not run" -- "$L" 6.12 single rxe A:0

lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1" "PASS t3"
expect "in a pair both guests must report every test" 1 "PASS [6.12 rxe pair] t1
FAIL [6.12 rxe pair] t2: guest B: did not run
PASS [6.12 rxe pair] t3" -- "$L" 6.12 pair rxe A:0 B:0

lab
results A rxe "PASS t1" "PASS t2" "PASS t9" "PASS t3" "FAIL device-removal: rmmod rdma_rxe"
expect "an unexpected name is a FAIL" 1 "PASS [6.12 rxe single] t1
PASS [6.12 rxe single] t2
FAIL [6.12 rxe single] t9: guest A: not an expected test (PASS)
FAIL [6.12 rxe single] t3: guest A: not an expected test (PASS)
FAIL [6.12 rxe single] device-removal: guest A: not an expected test (FAIL: rmmod rdma_rxe)" -- "$L" 6.12 single rxe A:0

# --- kunit.SUITE.CASE and kmemleak (debug line)
lab
results A rxe "PASS kunit.s1.c1" "SKIP kunit.s1.c2: no hw" "PASS kunit" "PASS t1" "PASS t2" "PASS kmemleak"
expect "kunit.* lines are allowed with kunit expected" 0 "PASS [debug rxe single] kunit.s1.c1
SKIP [debug rxe single] kunit.s1.c2: no hw
PASS [debug rxe single] kunit
PASS [debug rxe single] t1
PASS [debug rxe single] t2
PASS [debug rxe single] kmemleak" -- "$L" debug single rxe A:0

lab
results A rxe "PASS kunit.s1.c1" "PASS t1" "PASS t2"
expect "kunit.* lines without kunit expected fail" 1 "FAIL [6.12 rxe single] kunit.s1.c1: guest A: not an expected test (PASS)
PASS [6.12 rxe single] t1
PASS [6.12 rxe single] t2" -- "$L" 6.12 single rxe A:0

lab
results A rxe "PASS kunit.s1.c1" "PASS t1" "PASS t2"
expect "kunit.* lines do not stand for kunit itself, nor for kmemleak" 1 "PASS [debug rxe single] kunit.s1.c1
PASS [debug rxe single] t1
PASS [debug rxe single] t2
FAIL [debug rxe single] kunit: guest A: did not run
FAIL [debug rxe single] kmemleak: guest A: did not run" -- "$L" debug single rxe A:0

# --- crashed guests, empty lanes
lab
echo "guest-run: A (6.12.0): kernel bug pattern in dmesg: BUG: oops" >"$L/guest-run.log"
expect "a crashed guest without a results file fails every expected test" 1 "FAIL [6.12 rxe single] t1: guest A: did not run (no results-A-rxe)
FAIL [6.12 rxe single] t2: guest A: did not run (no results-A-rxe)
FAIL [6.12 siw single] t1: guest A: did not run (no results-A-siw)
FAIL [6.12 rxe+siw single] results: no result from the lane
FAIL [6.12 rxe+siw single] guest A: guest-run: A (6.12.0): kernel bug pattern in dmesg: BUG: oops" -- "$L" 6.12 single "rxe siw" A:125

lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1"
expect "a pair whose guest B crashed mid-suite" 1 "PASS [6.12 rxe pair] t1
FAIL [6.12 rxe pair] t2: guest B: did not run
FAIL [6.12 rxe pair] t3: guest B: did not run
FAIL [6.12 rxe pair] guest B: exit 124" -- "$L" 6.12 pair rxe A:0 B:124

lab
: >"$L/results-A-rxe"
expect "a booted lane with no result at all is a FAIL" 1 "FAIL [6.12 rxe single] t1: guest A: did not run
FAIL [6.12 rxe single] t2: guest A: did not run
FAIL [6.12 rxe single] results: no result from the lane" -- "$L" 6.12 single rxe A:0

lab
: >"$L/results-A-rxe"
expect "a lane with no result fails even with nothing expected" 1 "FAIL [6.12 rxe single] results: no result from the lane" -- --tests t3 "$L" 6.12 single rxe A:0

# --- --tests
lab
results A rxe "PASS t2"
expect "the filter narrows the expected list" 0 "PASS [6.12 rxe single] t2" --  --tests t2 "$L" 6.12 single rxe A:0

lab
results A rxe "PASS t1" "PASS t2"
expect "a test run outside the filter is unexpected" 1 "PASS [6.12 rxe single] t1
FAIL [6.12 rxe single] t2: guest A: not an expected test (PASS)" -- --tests "t1 t3" "$L" 6.12 single rxe A:0

# --- an emulator fault: attempt 1's own FAILs stand
lab
a1=$L
results A rxe "PASS t1" "FAIL t2: real bug"
results B rxe "FAIL t1: flaky on B" "PASS t2" "FAIL t3: guest A is gone"
lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1" "PASS t2" "PASS t3"
expect "emufault: attempt 1 FAILs before the fault stand, the rest is attempt 2's" 1 "FAIL [6.12 rxe pair] t1: guest B: flaky on B (attempt 1)
FAIL [6.12 rxe pair] t2: guest A: real bug (attempt 1)
PASS [6.12 rxe pair] t3" -- --attempt1 "$a1" "A:123 B:0" "$L" 6.12 pair rxe A:0 B:0

lab
a1=$L
results A rxe "FAIL t1: real bug" "OK t2"
lab
results A rxe "PASS t1" "PASS t2"
expect "emufault, one guest: attempt 1's FAIL and unknown word stand" 1 "FAIL [6.12 rxe single] t1: guest A: real bug (attempt 1)
FAIL [6.12 rxe single] t2: guest A: unknown status 'OK' (attempt 1)" -- --attempt1 "$a1" "A:123" "$L" 6.12 single rxe A:0

lab
a1=$L
results A rxe "PASS t1"
lab
results A rxe "FAIL t1: now broken" "FAIL t2: also broken"
expect "emufault: attempt 2's FAILs count too" 1 "FAIL [6.12 rxe single] t1: guest A: now broken
FAIL [6.12 rxe single] t2: guest A: also broken" -- --attempt1 "$a1" "A:123" "$L" 6.12 single rxe A:0

lab
a1=$L
results A rxe "PASS t1"
results B rxe "PASS t1"
echo "guest-run: B (6.12.0): kernel bug pattern in dmesg: WARNING: at x" >"$a1/guest-run-B.log"
lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1" "PASS t2" "PASS t3"
expect "emufault: the other guest's failed guest-run in attempt 1 stands" 1 "PASS [6.12 rxe pair] t1
PASS [6.12 rxe pair] t2
PASS [6.12 rxe pair] t3
FAIL [6.12 rxe pair] guest B: guest-run: B (6.12.0): kernel bug pattern in dmesg: WARNING: at x (attempt 1)" -- --attempt1 "$a1" "A:123 B:125" "$L" 6.12 pair rxe A:0 B:0

# A fault the guest lived through (exc_debug_kernel's warning): the test
# it showed in, and everything after it, are attempt 2's.
emu="EMULATOR FAULT: kernel-mode #DB that no kernel code asked for (exc_debug_kernel's warning): WARNING: CPU: 1 PID: 37 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160"
lab
a1=$L
results A rxe "PASS t1" "FAIL t2: $emu" "FAIL t3: after it"
results B rxe "FAIL t1: real on B" "FAIL t2: A went odd" "PASS t3"
lab
results A rxe "PASS t1" "PASS t2" "PASS t3"
results B rxe "PASS t1" "PASS t2" "PASS t3"
expect "emufault lived through: FAILs from its test on are attempt 2's" 1 "FAIL [6.12 rxe pair] t1: guest B: real on B (attempt 1)
PASS [6.12 rxe pair] t2
PASS [6.12 rxe pair] t3" -- --attempt1 "$a1" "A:123 B:0" "$L" 6.12 pair rxe A:0 B:0

lab
a1=$L
results A rxe "FAIL t1: before it" "FAIL t2: $emu"
results A siw "FAIL t1: on the next device"
lab
results A rxe "PASS t1" "PASS t2"
results A siw "PASS t1"
expect "emufault lived through: the devices after its own are attempt 2's" 1 "FAIL [6.12 rxe single] t1: guest A: before it (attempt 1)
PASS [6.12 rxe single] t2
PASS [6.12 siw single] t1" -- --attempt1 "$a1" "A:123" "$L" 6.12 single "rxe siw" A:0

lab
a1=$L
results A rxe "PASS t1" "FAIL t2: $emu"
lab
results A rxe "PASS t1" "FAIL t2: $emu"
expect "emufault lived through twice: attempt 2's stands" 1 "PASS [6.12 rxe single] t1
FAIL [6.12 rxe single] t2: guest A: $emu" -- --attempt1 "$a1" "A:123" "$L" 6.12 single rxe A:0

# --- usage: a pair needs both guests' exit status
lab
out=$("$cr" --test-dir "$tmp/guest" "$L" 6.12 pair rxe A:0 2>&1)
if [ $? = 2 ] && [[ "$out" == usage:* ]]; then
	pass=$((pass + 1))
	[ "$verbose" = 0 ] || echo "ok - usage: a pair needs both guests' exit status"
else
	fail=$((fail + 1))
	echo "not ok - usage: a pair needs both guests' exit status: $out"
fi

# --- the real tests' list (test/list-tests.sh on test/guest)
# (Captured first: grep -q may leave early, and pipefail would see SIGPIPE.)
dbg=$("$top/test/list-tests.sh" single "rxe siw" debug)
std=$("$top/test/list-tests.sh" single rxe 6.12)
got=$(tail -n 1 <<<"$dbg")
if [ "$got" = "siw kmemleak" ] && grep -qx "rxe kunit" <<<"$dbg" &&
   grep -qx "rxe smoke" <<<"$std" && ! grep -q kunit <<<"$std"; then
	pass=$((pass + 1))
	[ "$verbose" = 0 ] || echo "ok - test/list-tests.sh on test/guest"
else
	fail=$((fail + 1))
	echo "not ok - test/list-tests.sh on test/guest (last debug line: '$got')"
fi

# make check leaves to the debug lane what it runs over rxe in one guest
# (KRDMA_DEBUG_RXE): 6.12 then lists unload over siw only, debug over both,
# and a 6.12-only rxe test (trace) stays; make stress lists it again.
dedup=$(KRDMA_DEBUG_RXE=1 "$top/test/list-tests.sh" single "rxe siw" 6.12)
dbg2=$(KRDMA_DEBUG_RXE=1 "$top/test/list-tests.sh" single "rxe siw" debug)
stress=$(KRDMA_DEBUG_RXE=1 KRDMA_STRESS=1 "$top/test/list-tests.sh" single rxe 6.12)
if ! grep -qx "rxe unload" <<<"$dedup" && grep -qx "siw unload" <<<"$dedup" &&
   grep -qx "rxe trace" <<<"$dedup" && grep -qx "rxe unload" <<<"$dbg2" &&
   grep -qx "rxe unload" <<<"$stress"; then
	pass=$((pass + 1))
	[ "$verbose" = 0 ] || echo "ok - KRDMA_DEBUG_RXE leaves rxe's one-guest tests to debug"
else
	fail=$((fail + 1))
	echo "not ok - KRDMA_DEBUG_RXE leaves rxe's one-guest tests to debug"
fi

# "# check-dev@6.1: rxe" (chardev): make check runs it over rxe alone on
# 6.1, over both devices on 6.12; make stress over both on 6.1 too.
c61=$("$top/test/list-tests.sh" single "rxe siw" 6.1 chardev)
c612=$("$top/test/list-tests.sh" single "rxe siw" 6.12 chardev)
c61s=$(KRDMA_STRESS=1 "$top/test/list-tests.sh" single "rxe siw" 6.1 chardev)
if [ "$c61" = "rxe chardev" ] && [ "$c612" = "rxe chardev
siw chardev" ] && [ "$c61s" = "$c612" ]; then
	pass=$((pass + 1))
	[ "$verbose" = 0 ] || echo "ok - check-dev@LINE limits one kernel line's devices"
else
	fail=$((fail + 1))
	echo "not ok - check-dev@LINE limits one kernel line's devices: '$c61' '$c612' '$c61s'"
fi

# A test that needs its boot alone ("# alone: yes", poweroff) runs only
# when named, in make stress too.
al=$(KRDMA_STRESS=1 "$top/test/list-tests.sh" pair "rxe siw" 6.12)
aln=$("$top/test/list-tests.sh" pair "rxe siw" 6.12 "poweroff")
if ! grep -q poweroff <<<"$al" && [ "$aln" = "rxe poweroff
siw poweroff" ]; then
	pass=$((pass + 1))
	[ "$verbose" = 0 ] || echo "ok - an alone test runs only when named"
else
	fail=$((fail + 1))
	echo "not ok - an alone test runs only when named: '$aln'"
fi

# --- tools/emulator-fault.sh: which bug lines are the emulator's
. "$top/tools/emulator-fault.sh"
efault() {	# efault NAME WANT(yes|no) "BUG LINES" [LOG LINES]
	local log=$tmp/efault.log got=no
	printf '%s\n' "${4:-}" >"$log"
	emulator_fault "$3" "$log" >/dev/null && got=yes
	if [ "$got" = "$2" ]; then
		pass=$((pass + 1))
		[ "$verbose" = 0 ] || echo "ok - emulator-fault: $1"
	else
		fail=$((fail + 1))
		echo "not ok - emulator-fault: $1 (got $got, expected $2)"
	fi
}
dbw="[   49.691293] WARNING: CPU: 1 PID: 37 at arch/x86/kernel/traps.c:1120 exc_debug_kernel+0xca/0x160"
efault "exc_debug_kernel's warning alone" yes "$dbw"
efault "exc_debug_kernel's warning, twice (dmesg and console)" yes "$dbw
$dbw"
efault "exc_debug_kernel's warning and another bug" no "$dbw
[   50.1] BUG: KASAN: slab-use-after-free in krdma_x+0x1/0x2"
efault "another bug, then exc_debug_kernel's warning" no "[   50.1] WARNING: CPU: 0 PID: 9 at krdma_conn.c:10 krdma_y+0x1/0x2
$dbw"
efault "a warning elsewhere in traps.c" no "[   1.0] WARNING: CPU: 0 PID: 1 at arch/x86/kernel/traps.c:1137 exc_debug_user+0x1/0x2"
efault "a double fault with EFLAGS no CPU saves" yes "[   9.0] traps: double fault" "[   9.0] traps: double fault
[   9.0] RSP: 0018:ffffc90000003e58 EFLAGS: 85e35202"
efault "a double fault with sane EFLAGS" no "[   9.0] traps: double fault" "[   9.0] traps: double fault
[   9.0] RSP: 0018:ffffc90000003e58 EFLAGS: 00010246"
efault "an int3 Oops on text that no longer holds the int3" yes "[   3.0] Oops: int3: 0000 [#1]" "[   3.0] Oops: int3: 0000 [#1]
[   3.0] Code: 48 89 e5 66 <90> 41 55"
efault "an int3 Oops on a real int3" no "[   3.0] Oops: int3: 0000 [#1]" "[   3.0] Oops: int3: 0000 [#1]
[   3.0] Code: 48 89 e5 cc <90> 41 55"

echo "check-results self-test: $pass passed, $fail failed"
[ "$fail" = 0 ]
