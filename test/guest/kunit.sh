#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# KUnit: krdma's control parser, wire formats, chunk planning, credit
# accounting, connection state machine, token checks and ioctl argument
# checks (test/kunit, krdma_kunit.ko) on a kernel built with KUnit, i.e. the
# debug kernel (skipped on others).  Every KUnit case also counts as a
# result of its own in make check: one line "PASS|FAIL|SKIP
# kunit.SUITE.CASE" each, appended to $LAB/results-$GUEST-$DEV.  The KTAP
# of each suite is read from /sys/kernel/debug/kunit/SUITE/results and kept
# in this test's log.
# topo: single
# dev: rxe
# kernel: debug
. "$(dirname "$0")/../lib.sh"

suites="krdma_cmd krdma_proto krdma_plan krdma_credit krdma_state krdma_token
	krdma_abi krdma_queue krdma_sess"
ko=$BUILD/kunit/krdma_kunit.ko
[ -e /sys/module/kunit ] || skip "kernel $(uname -r) has no KUnit (use --kernels debug)"
[ -f "$ko" ] || fail "$ko not built (tools/build.sh builds it when the KDIR has CONFIG_KUNIT)"
[ -d /sys/kernel/debug/kunit ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
lsmod | grep -q '^krdma_kunit ' && rmmod krdma_kunit

# The suites run inside insmod; their results stay in debugfs until rmmod.
insmod "$ko" || fail "insmod krdma_kunit.ko"
tmp=$(mktemp -d)
for s in $suites; do
	cat "/sys/kernel/debug/kunit/$s/results" >"$tmp/$s" 2>/dev/null ||
		echo "missing /sys/kernel/debug/kunit/$s/results" >"$tmp/$s.missing"
done
rmmod krdma_kunit || fail "rmmod krdma_kunit"

results=$LAB/results-$GUEST-$DEV
total=0 passed=0 failed=0 skipped=0 bad=()
for s in $suites; do
	if [ -e "$tmp/$s.missing" ]; then
		bad+=("suite $s did not run")
		continue
	fi
	echo "--- $s"
	cat "$tmp/$s"
	# The plan "1..N" and N test lines (indented, at the suite's level).
	plan=$(sed -n 's/^    1\.\.\([0-9]*\)$/\1/p' "$tmp/$s" | head -n 1)
	n=0
	first_fail=
	while IFS= read -r line; do
		case "$line" in
		"    # "*": EXPECTATION FAILED at "*|"    # "*": ASSERTION FAILED at "*)
			[ -n "$first_fail" ] || first_fail=${line#*FAILED at }
			continue ;;
		"    ok "*|"    not ok "*) ;;
		*)	continue ;;
		esac
		read -r st num name rest <<<"${line/not ok/not_ok}"
		n=$((n + 1))
		total=$((total + 1))
		label=kunit.$s.$name
		if [ "$st" = ok ] && [[ "$rest" == "# SKIP"* ]]; then
			echo "SKIP $label: ${rest#\# SKIP}" >>"$results"
			skipped=$((skipped + 1))
		elif [ "$st" = ok ]; then
			echo "PASS $label" >>"$results"
			passed=$((passed + 1))
		else
			echo "FAIL $label: ${first_fail:-failed} (see tests/*-kunit-*.log)" >>"$results"
			failed=$((failed + 1))
			bad+=("$label")
		fi
		first_fail=
		: "$num"
	done <"$tmp/$s"
	[ -n "$plan" ] && [ "$plan" = "$n" ] || bad+=("suite $s: planned ${plan:-?} cases, ran $n")
done
rm -rf "$tmp"
log "KUnit: $total cases, $passed passed, $failed failed, $skipped skipped"
[ ${#bad[@]} = 0 ] || fail "${bad[*]}"
[ "$total" -gt 0 ] || fail "no KUnit cases ran"
