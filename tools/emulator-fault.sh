# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Sourced by tools/guest-run and test/run-suite.sh: tell a kernel bug
# pattern that TCG caused from one the guest kernel did.
#
#   emulator_fault BUGS LOG
#
# BUGS: every bug-pattern line (tools/bug-patterns) of the run or test,
# first first; LOG: the console log or dmesg they came from.  When they
# are an emulator fault, prints why in one line and returns 0; else 1.
# Each rule names what no CPU and no kernel code of ours would do:
#
# - A double fault whose saved EFLAGS no x86 CPU saves.  The exception
#   frame of a double fault is written by the CPU, so its EFLAGS is what
#   the CPU had: reserved bits 3, 5, 15 or 22-63 set, or bit 1 clear,
#   means the emulator delivered the exception wrong.  Seen twice on 6.12
#   guests, in rxe's work item while it sent at full rate (EFLAGS
#   85e35202 and 31ba0a02, the latter the upper half of a pointer in RAX).
# - An int3 Oops whose breakpoint is no longer in memory: text_poke_bp()
#   puts an int3 on the first byte of an instruction it patches (a jump
#   label, a tracepoint being enabled), and takes the int3 handler away
#   only after every CPU has synchronized; a CPU that traps on it later
#   ran stale text, which TCG's cross-modifying code handling can do.  The
#   Oops's RIP is just after the int3, so the "Code:" byte before the
#   marked one is where the int3 was: anything but cc means it was gone.
#   Seen once in 6.12's ttwu_do_activate(), the sched_wakeup tracepoint
#   that enabling trace events switches on (trace.sh), with "66 <90>".
# - exc_debug_kernel()'s warning, and nothing else: a #DB taken in kernel
#   mode with the single-step bit (TF) set, or a user-mode #DB delivered
#   on the kernel's path.  Nothing in the kernel sets TF outside kprobes
#   and kgdb, whose handlers consume the trap before the warning, and the
#   lab uses neither; the kernel's own comment there names QEMU as the
#   known cause.  The kernel clears TF and goes on, so the guest lives and
#   its tests go on: the test during which it fired is marked, and the
#   warning must be the only bug line, or the run is not called a fault.
#   Seen once, 6.12 rxe pair lane, ipv6 test, PID 37 (a kworker), at
#   traps.c:1120 (2026-12-02).

emulator_fault_dblflags() {
	local f

	f=$(sed -n '/double fault/,$ s/.* EFLAGS: \([0-9a-f]\{1,16\}\).*/\1/p' "$1" 2>/dev/null | head -n 1)
	[ -n "$f" ] && (( (0x$f & ~0x3f7fd7) != 0 || (0x$f & 2) == 0 )) &&
		echo "$f"
}

emulator_fault_int3() {
	local code prev

	code=$(sed -n '/Oops: int3/,$ { /Code: /{ s/.*Code: //; p; q } }' "$1" 2>/dev/null)
	[[ $code == *'<'* ]] || return 1
	prev=${code%%<*}
	prev=${prev% }
	prev=${prev##* }
	[ -n "$prev" ] && [ "$prev" != cc ] && echo "$prev"
}

emulator_fault() {
	local bugs=$1 log=$2 first x
	local db='WARNING: CPU: [0-9]+ PID: [0-9]+ at arch/x86/kernel/traps\.c:[0-9]+ exc_debug_kernel\+'

	first=$(head -n 1 <<<"$bugs")
	[ -n "$first" ] || return 1
	if [[ $first == *"double fault"* ]] && x=$(emulator_fault_dblflags "$log"); then
		echo "double fault with EFLAGS $x, which no x86 CPU saves"
		return 0
	fi
	if [[ $first == *"Oops: int3"* ]] && x=$(emulator_fault_int3 "$log"); then
		echo "int3 trap where the text holds $x, not the int3 (a CPU ran text another was patching)"
		return 0
	fi
	if grep -q -E "$db" <<<"$bugs" && ! grep -v -E "$db" <<<"$bugs" | grep -q .; then
		echo "kernel-mode #DB that no kernel code asked for (exc_debug_kernel's warning)"
		return 0
	fi
	return 1
}
