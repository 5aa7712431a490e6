#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Issue #18: a session rides out link flaps and its peer's reload.  B
# serves krdma_apitest's generic server; A runs its session_flap scenario:
# a session (heartbeats every 500 ms, 4 misses; reconnect every 500 ms;
# never lost) doing verified rounds (the server registers, A WRITEs, the
# server checks every byte) and resubmitting each round that failed with
# "retry after reconnect".  Three times (ten in make stress), each once a
# round was verified on the connection A's session made after the flap
# before, B flaps: an odd flap takes its link down (ip link set eth0 down)
# for 5 s; an even one reloads its modules (rmmod krdma_apitest and krdma,
# insmod both again, a new server with nothing of the old one's), so
# that the session carries data across its peer's reload too.  After each
# link up (or server up), A must have a
# new connection with a verified round on it within $limit_ms; at the end
# the scenario must have seen no other error, one verified connection per
# flap plus the first, and 3 verified rounds after the last reconnect.
# On rxe this needs krdma to keep the CM quiet on a port that is down
# (krdma_conn_park()): a DREQ sent then kills rxe's QP1 for good.
# topo: pair
# dev: rxe siw
# check-kernel: 6.12
# check-dev: rxe
. "$(dirname "$0")/../lib.sh"

ko=$BUILD/apitest/krdma_apitest.ko
[ -f "$ko" ] || fail "$ko not built"
# make check flaps 3 times, make stress 10 (KRDMA_FLAPS sets it).
flaps=${KRDMA_FLAPS:-3}
[ "${KRDMA_STRESS:-0}" = 1 ] && flaps=${KRDMA_FLAPS:-10}
# From link up to a round verified on the new connection.  The attempt
# under way at link up may have sent its request into the void: it ends
# at the connect timeout (3 s), the next one comes 500 ms later, and a
# connect and a round take about a second under TCG.
limit_ms=10000
args=(port=7481 "dev=$DEV" scenarios=session_flap "flaps=$flaps")

rdma_dev_up
krdma_load
other=$([ "$ROLE" = A ] && echo B || echo A)
val_or_gone() { has_val "$1" || has_val "$2" || peer_gone "$other"; }
start=$(dmesg | wc -l)
at_log() { dmesg | tail -n +"$((start + 1))" | grep -o 'krdma_apitest: .*'; }
at_done() { dmesg | tail -n +"$((start + 1))" | grep -q 'krdma_apitest: DONE '; }
verified_ge() {
	[ "$(dmesg | tail -n +"$((start + 1))" |
	     grep -c 'session_flap: round verified on ')" -ge "$1" ]
}
now_ms() { local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); }

# B says when each link up was done and A when B may flap next, through
# the lab directory; A's end (a-done, whatever the outcome) releases B.
if [ "$ROLE" = B ]; then
	insmod "$ko" role=server "addr=$MY_IP" "${args[@]}" || fail "insmod (server)"
	# A failed run must not leave the link down or the module loaded
	# for the next device's tests.
	trap 'ip link set eth0 up; rmmod krdma_apitest 2>/dev/null' EXIT
	put_val server-up 1
	for i in $(seq 1 $flaps); do
		within 180 val_or_gone "go-$i" a-done || fail "A never said go $i"
		has_val "go-$i" || exit 0	# A is done: it tells why
		if [ $((i % 2)) = 1 ]; then
			ip link set eth0 down || fail "link down"
			nap 5
			ip link set eth0 up || fail "link up"
			log "flap $i: link up again"
		else
			rmmod krdma_apitest || fail "flap $i: rmmod krdma_apitest"
			krdma_unload
			krdma_load
			insmod "$ko" role=server "addr=$MY_IP" "${args[@]}" ||
				fail "flap $i: insmod (server) after the reload"
			log "flap $i: krdma and the server reloaded"
		fi
		put_val "linkup-$i" "$i"
	done
	within 200 val_or_gone a-done a-done || fail "A never finished"
	dmesg | tail -n +"$((start + 1))" | grep -E 'krdma: .*(deferred|port up)' | head -n 20
	exit 0
fi

within 120 val_or_gone server-up server-up && has_val server-up ||
	fail "B's server never came up"
insmod "$ko" role=client "addr=$PEER_IP" "${args[@]}" || fail "insmod (client)"
trap 'rmmod krdma_apitest 2>/dev/null; put_val a-done 1' EXIT
within 60 verified_ge 1 || fail "no round verified on the first connection; $(at_log | tail -n 1)"
all=()
for i in $(seq 1 $flaps); do
	put_val "go-$i" 1
	within 120 val_or_gone "linkup-$i" "linkup-$i" && has_val "linkup-$i" ||
		fail "flap $i: B never came back"
	t0=$(now_ms)
	within 60 verified_ge $((i + 1)) ||
		fail "flap $i: no round verified on a new connection 60 s after link up; $(at_log | tail -n 1)"
	ms=$(( $(now_ms) - t0 ))
	log "flap $i: verified on a new connection $ms ms after $([ $((i % 2)) = 1 ] && echo link || echo server) up"
	all+=("$ms")
	[ "$ms" -le "$limit_ms" ] ||
		fail "flap $i: $ms ms from link up to a verified round, over $limit_ms"
done
read -r lo hi < <(printf '%s\n' "${all[@]}" | sort -n | sed -n '1p;$p' | paste -sd ' ')
log "$flaps flaps survived: a round verified on the new connection $lo to ${hi:-$lo} ms after link (or server) up"
within 120 at_done || fail "no DONE line in 120 s; last: $(at_log | tail -n 1)"
rmmod krdma_apitest || fail "rmmod krdma_apitest"
at_log
at_log | grep -q '^krdma_apitest: DONE passed=1 failed=0 ' ||
	fail "$(at_log | grep -E '^krdma_apitest: (FAIL|DONE)' | paste -sd ';')"
