#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The guest side of tools/bench-profile: one bandwidth cell of krdma's bench
# and the same cell of perftest, one after the other on rxe in one guest,
# each under `perf record` (cpu-clock: TCG has no PMU), and a flat profile
# of each, by symbol, in $LAB/profile-krdma.txt and $LAB/profile-perftest.txt.
#   KRDMA_PROF_OP     write | read | send (default send)
#   KRDMA_PROF_SIZE   bytes (default 64)
#   KRDMA_PROF_SECS   seconds of krdma bench (default 4)
#   KRDMA_PROF_DEPTH  operations in flight, both tools (default 32)
#   KRDMA_PROF_POLL   1: krdma's connection is polled (poll=1), its
#                     completions reaped by the bench's own waits
export TOPO=single DEV=rxe ROLE=$GUEST TEST_ID=profile PEER_IP=$MY_IP
. "$(dirname "$0")/lib.sh"

op=${KRDMA_PROF_OP:-send}
size=${KRDMA_PROF_SIZE:-64}
secs=${KRDMA_PROF_SECS:-4}
depth=${KRDMA_PROF_DEPTH:-32}
poll=${KRDMA_PROF_POLL:-0}
command -v perf >/dev/null || fail "no perf on the host root (apt-get install linux-perf)"

# Kernel symbols for perf report; its build-id cache goes to tmpfs (the
# host root is read-only here).
echo 0 >/proc/sys/kernel/kptr_restrict
export HOME=/tmp

rdma_dev_up
modprobe ib_uverbs || fail "modprobe ib_uverbs"
# A profile of krdma, not of its test-only DMA check.
KRDMA_DMA_CHECK=0 krdma_load

# report NAME: the flat profile of $LAB/perf-NAME.data.
report() {
	perf report -i "$LAB/perf-$1.data" --kallsyms=/proc/kallsyms --stdio \
		--no-children -g none --sort comm,dso,sym --percent-limit 0.7 \
		2>/dev/null |
		grep -v '^$' >"$LAB/profile-$1.txt"
	perf report -i "$LAB/perf-$1.data" --kallsyms=/proc/kallsyms --stdio \
		--no-children -g none --sort comm,dso --percent-limit 0.5 \
		2>/dev/null |
		grep -v '^$' >"$LAB/profile-$1-dso.txt"
}

ctl listen name=prof addr=$MY_IP:7300 depth=$depth msg=1M || fail "listen"
ctl connect name=p addr=$MY_IP:7300 depth=$depth msg=1M poll=$poll ||
	fail "connect"
c=$KRDMA_SYS/conns/p
expect_eq "$(cat $c/poll)" "$poll" "conns/p/poll"

perf record -e cpu-clock -F 2000 -a -g -o "$LAB/perf-krdma.data" \
	-- sleep $((secs + 1)) 2>"$LAB/perf-krdma.err" &
prec=$!
nap 0.5
ctl bench name=p op=$op size=$size depth=$depth secs=$secs || fail "bench refused"
until not_running "$c/bench_status"; do nap 0.2; done
wait $prec
ops=$(cat $c/bench_ops)
echo "krdma (poll=$poll): $(cat $c/bench_status), $ops ops, $(cat $c/bench_msg_rate) msg/s, $(cat $c/bench_bw_mbps) MiB/s, p50 $(cat $c/bench_lat_p50_ns) ns"
ctl disconnect name=p
ctl unlisten name=prof
report krdma

args="-d $IBDEV -F -p 18700 -s $size -n $ops -t $depth"
# shellcheck disable=SC2086
timeout 120 ib_${op}_bw $args >"$LAB/perftest-server.log" 2>&1 &
srv=$!
listening() { ss -Hltn "sport = :18700" | grep -q .; }
wait_for 30 listening || fail "ib_${op}_bw server did not listen"
perf record -e cpu-clock -F 2000 -a -g -o "$LAB/perf-perftest.data" \
	-- timeout 120 ib_${op}_bw $args "$MY_IP" >"$LAB/perftest-client.log" \
	2>"$LAB/perf-perftest.err"
wait $srv
echo "perftest: $(awk -v s="$size" '$1 == s && $2 ~ /^[0-9]+$/ { print $5 * 1e6 " msg/s, " $4 " MiB/s" }' "$LAB/perftest-client.log")"
report perftest
exit 0
