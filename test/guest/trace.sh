#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# krdma's tracepoints (krdma_trace.h) fire with plausible fields: with
# events/krdma enabled through tracefs, a krdmactl server and client do
# a connection, messages, RDMA WRITE and READ (rxe: also FADD, WRITE_IMM
# and an atomic the peer refuses), and a sender that runs out of credits
# against a stopped receiver.  The trace buffer must then hold: the CM
# events (connect request, established, disconnected), the state changes
# with the CM event that made them (established) or none (a local close,
# a failed completion), send and receive completions with their lengths and
# "success", each one-sided operation's start and completion with its
# length and work completion status by name ("remote access error" for
# the refused one), a credit stall, and the registrations with their
# length and rights; and nothing that looks like an address.  On iWARP
# every passive connection's first completion is a receive (the active
# side speaks first).  Not on the
# debug kernel: it is built without tracing.
# topo: single
# dev: rxe siw
# kernel: 6.1 6.12
# check-kernel: 6.12
. "$(dirname "$0")/../lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
ctl=$top/tools/krdmactl
[ -x "$ctl" ] || fail "$ctl is not built (make tools)"

tmp=$(mktemp -d)
bg=()
T=
cleanup() {
	local p
	for p in "${bg[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	if [ -n "$T" ]; then
		echo 0 >"$T/events/krdma/enable"
		echo >"$T/trace"
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

rdma_dev_up
krdma_load

# ---- tracefs ------------------------------------------------------------
grep -qw tracefs /proc/filesystems || skip "this kernel has no tracefs (CONFIG_TRACING)"
for d in /sys/kernel/tracing /sys/kernel/debug/tracing; do
	if [ -d "$d/events" ]; then
		T=$d
		break
	fi
done
if [ -z "$T" ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && T=/sys/kernel/tracing
fi
if [ -z "$T" ] || [ ! -d "$T/events" ]; then
	mount -t debugfs nodev /sys/kernel/debug 2>/dev/null
	[ -d /sys/kernel/debug/tracing/events ] && T=/sys/kernel/debug/tracing
fi
[ -n "$T" ] && [ -d "$T/events" ] || fail "no tracefs (mount -t tracefs nodev /sys/kernel/tracing failed)"
log "tracefs at $T"
[ -d "$T/events/krdma" ] || fail "no events/krdma in $T: krdma has no tracepoints"
for e in krdma_cm_event krdma_conn_state krdma_send_done krdma_recv_done \
	 krdma_rdma_start krdma_rdma_done krdma_credit_stall krdma_mr_reg \
	 krdma_mr_dereg; do
	[ -d "$T/events/krdma/$e" ] || fail "no event krdma:$e"
done
echo 0 >"$T/tracing_on"
echo 8192 >"$T/buffer_size_kb"
echo >"$T/trace"
echo 1 >"$T/events/krdma/enable" || fail "cannot enable events/krdma"
echo 1 >"$T/tracing_on"

# ---- traffic --------------------------------------------------------------
head -c 3000 /dev/urandom >"$tmp/data.bin"
access=rw clients=1
if [ "$DEV" = rxe ]; then
	access=rwa clients=3
fi
"$ctl" serve "$MY_IP:7470" --size 64K --access "$access" --clients "$clients" \
	>"$tmp/serve.out" 2>&1 &
spid=$!
bg+=("$spid")
within 20 grep -q listening "$tmp/serve.out" || fail "serve: $(cat "$tmp/serve.out")"
"$ctl" client "$PEER_IP:7470" --send hello --write "$tmp/data.bin" --expect "$tmp/data.bin" \
	>"$tmp/client.out" 2>&1 || fail "client: $(cat "$tmp/client.out")"
if [ "$DEV" = rxe ]; then
	"$ctl" atomic fadd "$PEER_IP:7470" 1 --offset 8 >"$tmp/fadd.out" 2>&1 ||
		fail "atomic fadd: $(cat "$tmp/fadd.out")"
	"$ctl" write-imm "$PEER_IP:7470" "$tmp/data.bin" --imm 7 >"$tmp/wimm.out" 2>&1 ||
		fail "write-imm: $(cat "$tmp/wimm.out")"
fi
wait "$spid" || fail "serve exit status: $(cat "$tmp/serve.out")"
if [ "$DEV" = rxe ]; then
	# A region without the atomic right: the peer refuses the FADD.
	"$ctl" serve "$MY_IP:7471" --size 4K --access rw >"$tmp/serve2.out" 2>&1 &
	spid=$!
	bg+=("$spid")
	within 20 grep -q listening "$tmp/serve2.out" || fail "serve 2: $(cat "$tmp/serve2.out")"
	"$ctl" atomic fadd "$PEER_IP:7471" 1 >/dev/null 2>"$tmp/refused.err"
	expect_eq $? 1 "a FADD the peer refuses: exit status"
	wait "$spid"
fi

# A receiver that does not receive: the sender stalls for credits.
"$ctl" listen "$MY_IP:7472" --count 3 >"$tmp/listen.out" 2>&1 &
lpid=$!
bg+=("$lpid")
within 20 grep -q '^listening' "$tmp/listen.out" || fail "listen: $(cat "$tmp/listen.out")"
kill -STOP "$lpid"
"$ctl" send "$PEER_IP:7472" --depth 1 one two three >"$tmp/send.out" 2>&1 &
sndpid=$!
bg+=("$sndpid")
within 30 grep -q krdma_credit_stall "$T/trace" || log "no credit stall seen yet"
kill -CONT "$lpid"
wait "$sndpid" || fail "send: $(cat "$tmp/send.out")"
wait "$lpid" || fail "listen: $(cat "$tmp/listen.out")"

# Every connection gone: their disconnects are in the buffer too.
end=$((SECONDS + 20))
while ls -A "$KRDMA_SYS/conns" | grep -q .; do
	[ $SECONDS -lt $end ] || fail "connections left: $(ls "$KRDMA_SYS/conns")"
	nap 0.2
done
echo 0 >"$T/tracing_on"
grep ' krdma_' "$T/trace" >"$tmp/trace.txt"
log "$(wc -l <"$tmp/trace.txt") krdma events"
for e in krdma_cm_event krdma_conn_state krdma_send_done krdma_recv_done \
	 krdma_rdma_start krdma_rdma_done krdma_credit_stall krdma_mr_reg \
	 krdma_mr_dereg; do
	log "$e: $(grep -c " $e: " "$tmp/trace.txt")"
	grep -m 2 " $e: " "$tmp/trace.txt"
done

# ---- the events and their fields ---------------------------------------
has() {	# has WHAT REGEX: some event line matches REGEX
	grep -qE -- "$2" "$tmp/trace.txt" && return
	cat "$tmp/trace.txt"
	fail "no $1 in the trace (${2})"
}
name='conn=[A-Za-z0-9_.-]+'
has "CM connect request (listener)" " krdma_cm_event: $name event=connect request \\(4\\) status=0"
has "CM established" " krdma_cm_event: $name event=established \\(9\\) status=0"
has "CM disconnected" " krdma_cm_event: $name event=disconnected \\(10\\) status=0"
has "state change on established" " krdma_conn_state: $name connecting -> connected cm_event=established"
# Both ends close here at once: the local close usually beats the CM event.
has "state change at the end" " krdma_conn_state: $name connected -> disconnected cm_event=(none|disconnected)"
has "send completion of 'hello'" " krdma_send_done: $name len=5 status=success \\(0\\)"
has "receive completion of 'hello'" " krdma_recv_done: $name len=5 status=success \\(0\\)"
has "RDMA WRITE start" " krdma_rdma_start: $name op=WRITE len=3000$"
has "RDMA WRITE completion" " krdma_rdma_done: $name op=WRITE len=3000 status=success \\(0\\)"
has "RDMA READ start" " krdma_rdma_start: $name op=READ len=3000$"
has "RDMA READ completion" " krdma_rdma_done: $name op=READ len=3000 status=success \\(0\\)"
has "credit stall" " krdma_credit_stall: $name credits=0 depth=1 tx_buffer_free=[01]"
has "registration" " krdma_mr_reg: $name len=65536 access=$access$"
has "its release" " krdma_mr_dereg: $name len=65536 access=$access$"
if [ "$DEV" = rxe ]; then
	has "FADD start" " krdma_rdma_start: $name op=FADD len=8$"
	has "FADD completion" " krdma_rdma_done: $name op=FADD len=8 status=success \\(0\\)"
	has "WRITE_IMM notice start" " krdma_rdma_start: $name op=WRITE_IMM len=0$"
	has "WRITE_IMM notice completion" " krdma_rdma_done: $name op=WRITE_IMM len=0 status=success \\(0\\)"
	has "the refused FADD, by status name" " krdma_rdma_done: $name op=FADD len=8 status=remote [a-z ]+ error \\([0-9]+\\)"
	has "receive of the notice" " krdma_recv_done: $name len=0 status=success \\(0\\)"
	has "the refused FADD's state change" " krdma_conn_state: $name connected -> error cm_event=none"
fi
# iWARP: MPA lets only the initiator send the first FPDU, so a passive
# connection (LISTENER.N) completes a receive (the active side's first
# ping) before anything it sent or read: the server's token went out only
# after it.  siw fails a connect whose MPA reply has data behind it.
if [ "$DEV" = siw ]; then
	bad=$(awk '
		match($0, / krdma_(send_done|recv_done|rdma_start|rdma_done): conn=[A-Za-z0-9_-]+\.[0-9]+ /) {
			split(substr($0, RSTART + 1, RLENGTH - 2), f, /: conn=/)
			if (!(f[2] in first)) { first[f[2]] = f[1]; n++ }
		}
		END {
			for (c in first)
				if (first[c] != "krdma_recv_done")
					print c " began with " first[c]
			if (!n)
				print "no passive connection in the trace"
		}' "$tmp/trace.txt")
	[ -z "$bad" ] || fail "a passive connection spoke first: $bad"
	log "every passive connection received before it sent"
fi
# The names are the sysfs names of connections and listeners.
bad=$(grep -E ' krdma_' "$tmp/trace.txt" | grep -vE " krdma_[a-z_]+: $name " | head -n 3)
[ -z "$bad" ] || fail "events without a connection name: $bad"
# Never an address: no long hexadecimal number in any event.
bad=$(grep -E '0x[0-9a-fA-F]{6,}|[0-9a-f]{12,}' "$tmp/trace.txt" | head -n 3)
[ -z "$bad" ] || fail "an event shows what looks like an address: $bad"
log "every krdma event fired with plausible fields"
