#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# /dev/krdma and krdmactl: the ioctl ABI rejects bad input with exact errno
# values (test/ioctl_fuzz.c errors), pinned pages are charged to
# RLIMIT_MEMLOCK (ioctl_fuzz memlock), LISTEN's backlog bounds the
# connections a listener holds unaccepted (ioctl_fuzz backlog), FADD, CAS
# and WRITE_IMM land exactly as asked in another process and the
# immediate reaches its RECV (ioctl_fuzz atomics; EOPNOTSUPP on siw), a
# device that holds completions back does not let UNREG return before
# the token is dead, a REG whose connection is closed under it leaves
# nothing, and a process killed in a READ the device holds goes at once
# (ioctl_fuzz stalls), two
# krdmactl processes do send/recv, RDMA WRITE and READ checked byte for
# byte, sessions killed mid-transfer clean up, and a bounded random ioctl
# pass leaves the kernel healthy.
# make check runs it on 6.1 over rxe only (the ABI and the pin accounting
# are the kernel line's, and rxe has the atomics and immediates siw
# lacks; 6.12 and the debug kernel run it over both), make stress over
# both there too.
# topo: single
# dev: rxe siw
# check-dev@6.1: rxe
. "$(dirname "$0")/../lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
ctl=$top/tools/krdmactl
fuzz=$top/build/test/ioctl_fuzz
[ -x "$ctl" ] || fail "$ctl is not built (make tools)"
[ -x "$fuzz" ] || fail "$fuzz is not built (make tools)"

tmp=$(mktemp -d)
bg=()
cleanup() {
	local p
	for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

# Start a krdmactl server in the background; wait until it listens.
serve() {	# serve OUT ARGS...
	local out=$1
	shift
	"$ctl" serve "$@" >"$out" 2>"$out.err" &
	spid=$!
	bg+=("$spid")
	within 20 grep -q 'listening' "$out" || fail "serve $*: not listening: $(cat "$out.err")"
}

# Wait until this guest's client connection (conns/connN) did N writes.
client_writes() {	# client_writes N
	local c
	c=$(ls -d "$KRDMA_SYS"/conns/conn* 2>/dev/null | head -n 1)
	[ -n "$c" ] && [ "$(cat "$c/write_ops")" -ge "$1" ]
}

# Nothing of krdma's left: every session closed released everything.
leftovers() {
	ls -A "$KRDMA_SYS/conns" "$KRDMA_SYS/listeners" | grep -v -e '^$' -e ':$'
}

# (Bounded in seconds: under TCG a poll loop's forks take long.)
no_conns_left() {	# no_conns_left WHEN
	local end=$((SECONDS + 20))
	while leftovers >/dev/null; do
		[ $SECONDS -lt $end ] || fail "$1: left behind: $(leftovers | tr '\n' ' ')"
		nap 0.2
	done
}

json_ok() {	# json_ok FILE...: every line of every FILE is a JSON value
	python3 -c 'import json, sys
for f in sys.argv[1:]:
    for n, l in enumerate(open(f), 1):
        try:
            json.loads(l)
        except ValueError as e:
            sys.exit("%s:%d: %s" % (f, n, e))' "$@"
}

rdma_dev_up
krdma_load

# ---- the device node and the CLI's basics -----------------------------
log "the device node and the CLI's basics"
[ -c /dev/krdma ] || fail "/dev/krdma missing"
expect_eq "$(stat -c %a /dev/krdma)" 600 "mode of /dev/krdma"
"$ctl" version || fail "krdmactl version"
"$ctl" --json version >"$tmp/v.json" || fail "version --json"
for c in serve client stat test bench; do	# (each exec is slow under TCG)
	"$ctl" "$c" --help | grep -q "^usage: krdmactl .*$c" || fail "$c --help"
done
"$ctl" bench --addr "$MY_IP:7419" 2>"$tmp/err"
expect_eq $? 2 "bench without --op: exit status"
grep -q "op write, read or send" "$tmp/err" || fail "bench usage message: $(cat "$tmp/err")"
"$ctl" frobnicate 2>/dev/null
expect_eq $? 2 "unknown command exit status"
"$ctl" connect 2>/dev/null
expect_eq $? 2 "connect without an address"
"$ctl" connect "$PEER_IP:7499" --timeout 3000 2>"$tmp/err"
expect_eq $? 1 "connect to a port nobody listens on"
grep -q "connect to $PEER_IP:7499: " "$tmp/err" || fail "connect error message: $(cat "$tmp/err")"

# ---- the ioctl ABI: exact errno values ---------------------------------
log "the ioctl ABI: exact errno values"
ip6=fd00:10::1
ip -6 addr add "$ip6/64" dev eth0 nodad 2>/dev/null
if ip -6 addr show dev eth0 | grep -q "$ip6"; then
	export KRDMA_IP6=$ip6
else
	log "no IPv6 on eth0: IPv6 checks skipped"
fi
before=$(dmesg | wc -l)
"$fuzz" errors "$MY_IP" 7400 >"$tmp/errors.log" 2>&1
rc=$?
cat "$tmp/errors.log"
[ $rc = 0 ] || fail "ioctl_fuzz errors: $(grep -m1 -E '^(not ok|Bail)' "$tmp/errors.log")"
# Each rejected input is named in one (rate limited) line.
dmesg | tail -n +"$((before + 1))" | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: SEND: handle .* is not a connection of this session" ||
	fail "no dmesg line for a SEND on a foreign handle"
no_conns_left "after ioctl_fuzz errors"

# ---- pinned pages against RLIMIT_MEMLOCK -------------------------------
# As root CAP_IPC_LOCK lifts the limit (as for verbs users): drop it from
# the bounding and inheritable sets, so that ioctl_fuzz runs without it.
log "pinned pages against RLIMIT_MEMLOCK"
command -v setpriv >/dev/null || fail "no setpriv (util-linux): cannot drop CAP_IPC_LOCK"
dmesg_mark
(ulimit -l 64 && exec setpriv --inh-caps=-ipc_lock --bounding-set=-ipc_lock \
	"$fuzz" memlock "$MY_IP" 7440) >"$tmp/memlock.log" 2>&1
rc=$?
cat "$tmp/memlock.log"
[ $rc = 0 ] || fail "ioctl_fuzz memlock: $(grep -m1 -E '^(not ok|Bail)' "$tmp/memlock.log")"
dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: REG: pinning 1024 KiB would exceed RLIMIT_MEMLOCK (64 KiB, 0 KiB pinned already)" ||
	fail "no dmesg line for the REG over RLIMIT_MEMLOCK: $(dmesg_new | grep -m1 RLIMIT_MEMLOCK)"
dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: REG: [0-9]* bytes span [0-9]* pages, one registration on $IBDEV maps at most [0-9]*" ||
	fail "no dmesg line for the REG of more pages than a registration maps"
no_conns_left "after ioctl_fuzz memlock"

# ---- KRDMA_IOC_LISTEN's backlog ----------------------------------------
log "KRDMA_IOC_LISTEN's backlog"
dmesg_mark
"$fuzz" backlog "$MY_IP" 7450 >"$tmp/backlog.log" 2>&1
rc=$?
cat "$tmp/backlog.log"
[ $rc = 0 ] || fail "ioctl_fuzz backlog: $(grep -m1 -E '^(not ok|Bail)' "$tmp/backlog.log")"
dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: LISTEN: backlog 1025 above 1024" ||
	fail "no dmesg line for the LISTEN with backlog 1025"
dmesg_new | grep -q ": backlog of 2 full, rejected connection from" ||
	fail "no dmesg line for the connections past a backlog of 2"
no_conns_left "after ioctl_fuzz backlog"

# ---- FADD, CAS and WRITE_IMM between two processes ---------------------
log "FADD, CAS and WRITE_IMM between two processes"
dmesg_mark
"$fuzz" atomics "$MY_IP" 7460 >"$tmp/atomics.log" 2>&1
rc=$?
cat "$tmp/atomics.log"
[ $rc = 0 ] || fail "ioctl_fuzz atomics: $(grep -m1 -E '^(not ok|Bail)' "$tmp/atomics.log")"
dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: FADD: offset 4 in the token is not 8-byte aligned in the peer's memory" ||
	fail "no dmesg line for the misaligned FADD"
dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: CAS: 8 bytes at offset [0-9]* do not fit the token's [0-9]*" ||
	fail "no dmesg line for the CAS outside the token"
if [ "$DEV" = siw ]; then
	dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: FADD: siw0 has no atomics" ||
		fail "no dmesg line for the FADD without atomics"
	dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: WRITE_IMM: siw0 is iWARP, which has no immediate data" ||
		fail "no dmesg line for the WRITE_IMM over iWARP"
	dmesg_new | grep -q "/dev/krdma: ioctl_fuzz\[[0-9]*\]: SEND: siw0 is iWARP, which has no immediate data" ||
		fail "no dmesg line for the SEND_IMM over iWARP"
fi
no_conns_left "after ioctl_fuzz atomics"

# ---- a device that holds completions back -------------------------------
log "a device that holds completions back"
dmesg_mark
"$fuzz" stalls "$MY_IP" 7470 >"$tmp/stalls.log" 2>&1
rc=$?
cat "$tmp/stalls.log"
echo 0 >/sys/module/krdma/parameters/fault_reg_delay_ms
[ $rc = 0 ] || fail "ioctl_fuzz stalls: $(grep -m1 -E '^(not ok|Bail)' "$tmp/stalls.log")"
dmesg_new | grep -q ": RDMA READ abandoned: ioctl_fuzz\[[0-9]*\] waiting for it is being killed, failing the connection" ||
	fail "no dmesg line for the READ abandoned by a killed process"
no_conns_left "after ioctl_fuzz stalls"

# ---- two processes: listen/send, recv, serve/client --------------------
log "two processes: listen/send, recv, serve/client"
"$ctl" listen "$MY_IP:7410" --count 2 >"$tmp/listen.out" 2>&1 &
lpid=$!
bg+=("$lpid")
within 20 grep -q '^listening' "$tmp/listen.out" || fail "listen: not listening"
"$ctl" send "$PEER_IP:7410" "first message" "second" || fail "send"
wait "$lpid" || fail "listen exit status: $(cat "$tmp/listen.out")"
cat "$tmp/listen.out"
grep -q '^message 1, 13 bytes: first message$' "$tmp/listen.out" || fail "listen output"
grep -q '^message 2, 6 bytes: second$' "$tmp/listen.out" || fail "listen output (2)"

# send --imm: SEND_WITH_IMM, which listen shows with its value; iWARP
# refuses it before anything is sent.
"$ctl" listen "$MY_IP:7410" --count 2 >"$tmp/listen2.out" 2>&1 &
lpid=$!
bg+=("$lpid")
within 20 grep -q '^listening' "$tmp/listen2.out" || fail "listen (2): not listening"
"$ctl" send "$PEER_IP:7410" --imm 0xfeedf00d "with imm" "" >"$tmp/sendimm.out" 2>&1
rc=$?
wait "$lpid" || fail "listen exit status: $(cat "$tmp/listen2.out")"
cat "$tmp/sendimm.out" "$tmp/listen2.out"
if [ "$DEV" = siw ]; then
	[ $rc != 0 ] || fail "send --imm over iWARP succeeded"
	grep -q 'send of 8 bytes: .*Operation not supported' "$tmp/sendimm.out" ||
		fail "send --imm over iWARP: $(cat "$tmp/sendimm.out")"
	! grep -q '^message' "$tmp/listen2.out" || fail "a message arrived over iWARP"
else
	[ $rc = 0 ] || fail "send --imm: $(cat "$tmp/sendimm.out")"
	grep -q '^message 1, 8 bytes, immediate 4277006349 (0xfeedf00d): with imm$' "$tmp/listen2.out" ||
		fail "listen output of a SEND_WITH_IMM"
	grep -q '^message 2: immediate 4277006349 (0xfeedf00d)$' "$tmp/listen2.out" ||
		fail "listen output of an empty SEND_WITH_IMM"
fi

head -c 4000 /dev/urandom >"$tmp/msg.bin"
"$ctl" recv "$MY_IP:7411" --out "$tmp/recv.bin" 2>"$tmp/recv.err" &
rpid=$!
bg+=("$rpid")
within 20 sh -c "ls $KRDMA_SYS/listeners | grep -q ." || fail "recv: not listening"
"$ctl" send "$PEER_IP:7411" --file "$tmp/msg.bin" >/dev/null || fail "send --file"
wait "$rpid" || fail "recv exit status: $(cat "$tmp/recv.err")"
cmp "$tmp/msg.bin" "$tmp/recv.bin" || fail "recv: message differs from the one sent"

head -c 300000 /dev/urandom >"$tmp/init.bin"
head -c 200000 /dev/urandom >"$tmp/data.bin"
head -c 3000 /dev/urandom >"$tmp/small.bin"
serve "$tmp/serve.out" "$MY_IP:7412" --file "$tmp/init.bin" --dump "$tmp/after.bin"
"$ctl" client "$PEER_IP:7412" --send "hello, krdma" --send-file "$tmp/small.bin" \
	--expect "$tmp/init.bin" --read "$tmp/got.bin" \
	--offset 4096 --write "$tmp/data.bin" --expect "$tmp/data.bin" \
	>"$tmp/client.out" 2>&1
rc=$?
cat "$tmp/client.out"
[ $rc = 0 ] || fail "client: $(tail -n 1 "$tmp/client.out")"
wait "$spid" || fail "serve exit status: $(cat "$tmp/serve.out.err")"
cat "$tmp/serve.out"
grep -q '^send 12 bytes: echo matches$' "$tmp/client.out" || fail "client: no echo"
grep -q '^write 200000 bytes at offset 4096: verified' "$tmp/client.out" || fail "client: write not verified"
grep -q '^message 1, 12 bytes: hello, krdma$' "$tmp/serve.out" || fail "serve did not see the message"
cmp "$tmp/init.bin" "$tmp/got.bin" || fail "READ: bytes differ from the server's"
{ head -c 4096 "$tmp/init.bin"; cat "$tmp/data.bin"; tail -c +$((4096 + 200000 + 1)) "$tmp/init.bin"; } >"$tmp/want.bin"
cmp "$tmp/want.bin" "$tmp/after.bin" || fail "WRITE: the server's buffer is not what was written"

# The same as JSON lines, and the standalone write/read commands.
serve "$tmp/serve2.out" "$MY_IP:7413" --size 64K --clients 2 --json
"$ctl" --json client "$PEER_IP:7413" --send json --write "$tmp/small.bin" \
	>"$tmp/client2.json" 2>"$tmp/client2.err" || fail "client --json: $(cat "$tmp/client2.err")"
"$ctl" --json stat >"$tmp/stat.json" || fail "stat --json"
"$ctl" stat || fail "stat"
"$ctl" read "$PEER_IP:7413" "$tmp/read.bin" --len 3000 >/dev/null 2>"$tmp/read.err" ||
	fail "read: $(cat "$tmp/read.err"); serve: $(cat "$tmp/serve2.out.err")"
cmp "$tmp/small.bin" "$tmp/read.bin" || fail "read: bytes differ"
wait "$spid" || fail "serve --json exit status"
out=$(json_ok "$tmp/v.json" "$tmp/client2.json" "$tmp/stat.json" "$tmp/serve2.out" 2>&1) ||
	fail "--json output is not JSON: $out"

# A write through a key with an index no MR has fails, and krdmactl says
# why: the connection failed, with the work completion's status by name
# (QUERY's wc_status; RoCE NAKs it as a remote access error, siw's status
# varies).
serve "$tmp/serve3.out" "$MY_IP:7414" --size 64K --clients 2
"$ctl" write "$PEER_IP:7414" "$tmp/small.bin" >"$tmp/good.out" 2>&1 ||
	fail "write before the forged one: $(cat "$tmp/good.out")"
tok=$(grep -o -- '--token [^)]*' "$tmp/good.out" | head -n 1 | cut -d' ' -f2)
[ -n "$tok" ] || fail "the client printed no token: $(cat "$tmp/good.out")"
rkey=${tok#*:}
rkey=${rkey%%:*}
bad="${tok%%:*}:$(printf '0x%x' $((rkey ^ 0x80000000))):${tok##*:}"
"$ctl" write "$PEER_IP:7414" "$tmp/small.bin" --token "$bad" >"$tmp/forged.out" 2>&1 &&
	fail "a write through the forged token $bad succeeded"
cat "$tmp/forged.out"
# (On iWARP a WRITE completes once sent; the READ that checks it fails.)
grep -qE 'RDMA (WRITE of 3000 bytes at offset 0|READ back): .*\(the connection failed: ' "$tmp/forged.out" ||
	fail "the failed write does not say why: $(cat "$tmp/forged.out")"
if [ "$DEV" = rxe ]; then
	grep -q 'work completion: remote access error' "$tmp/forged.out" ||
		fail "no 'remote access error' in: $(cat "$tmp/forged.out")"
fi
kill "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
no_conns_left "after the forged write"

# ---- krdmactl atomic and write-imm ---------------------------------------
log "krdmactl atomic and write-imm"
head -c 5000 /dev/urandom >"$tmp/imm.bin"
if [ "$DEV" = rxe ]; then
	serve "$tmp/serve7.out" "$MY_IP:7420" --size 64K --access rwa --clients 6 \
		--dump "$tmp/after7.bin"
	{
		"$ctl" --json atomic fadd "$PEER_IP:7420" 5 --count 10 --offset 8 &&
		"$ctl" --json atomic cas "$PEER_IP:7420" 49 7 --offset=8 &&
		"$ctl" --json atomic cas "$PEER_IP:7420" 50 7 --offset 8 &&
		"$ctl" --json atomic fadd --offset 8 "$PEER_IP:7420" -- -1 &&
		"$ctl" --json write-imm "$PEER_IP:7420" "$tmp/imm.bin" --imm 0xdeadbeef --offset 4096
	} >"$tmp/atomic.json" 2>"$tmp/atomic.err" || fail "krdmactl atomic/write-imm: $(cat "$tmp/atomic.err")"
	"$ctl" --json atomic fadd "$PEER_IP:7420" 1 --offset 4 >/dev/null 2>"$tmp/mis.err"
	expect_eq $? 1 "atomic fadd at a misaligned offset: exit status"
	wait "$spid" || fail "serve --access rwa exit status: $(cat "$tmp/serve7.out.err")"
	cat "$tmp/atomic.json" "$tmp/mis.err" "$tmp/serve7.out"
	out=$(python3 - "$tmp/atomic.json" "$tmp/mis.err" "$tmp/after7.bin" "$tmp/imm.bin" <<'PY' 2>&1
import json, struct, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
ops = [e for e in ev if e.get("event") in ("fadd", "cas", "write-imm")]
want = [
    {"event": "fadd", "offset": 8, "add": 5, "count": 10, "old": 0, "last_old": 45},
    {"event": "cas", "offset": 8, "compare": 49, "swap": 7, "old": 50, "swapped": False},
    {"event": "cas", "offset": 8, "compare": 50, "swap": 7, "old": 50, "swapped": True},
    {"event": "fadd", "offset": 8, "add": 2**64 - 1, "count": 1, "old": 7, "last_old": 7},
]
assert ops[:4] == want, ops[:4]
w = ops[4]
assert (w["len"], w["offset"], w["imm"]) == (5000, 4096, 0xdeadbeef), w
assert w["result"].startswith("verified"), w
e = json.loads(open(sys.argv[2]).read())
assert e["errno"] == 22 and e["command"] == "atomic" and "8-byte aligned" in e["error"], e
mem = open(sys.argv[3], "rb").read()
assert struct.unpack_from("<Q", mem, 8)[0] == 6, mem[8:16]
assert mem[4096:4096 + 5000] == open(sys.argv[4], "rb").read(), "write-imm bytes"
PY
) || fail "krdmactl atomic/write-imm results: $out"
	grep -q '^message 1: immediate 3735928559 (0xdeadbeef)$' "$tmp/serve7.out" ||
		fail "serve did not print the immediate 0xdeadbeef"
else
	serve "$tmp/serve7.out" "$MY_IP:7420" --size 64K --clients 2
	"$ctl" --json atomic fadd "$PEER_IP:7420" 1 >/dev/null 2>"$tmp/fadd.err"
	expect_eq $? 1 "atomic fadd on $DEV: exit status"
	grep -q '"errno":95,"command":"atomic"' "$tmp/fadd.err" ||
		fail "atomic fadd on $DEV: not EOPNOTSUPP: $(cat "$tmp/fadd.err")"
	"$ctl" --json write-imm "$PEER_IP:7420" "$tmp/imm.bin" --imm 1 >/dev/null 2>"$tmp/wimm.err"
	expect_eq $? 1 "write-imm on $DEV: exit status"
	grep -q '"errno":95,"command":"write-imm"' "$tmp/wimm.err" ||
		fail "write-imm on $DEV: not EOPNOTSUPP: $(cat "$tmp/wimm.err")"
	wait "$spid" || fail "serve exit status: $(cat "$tmp/serve7.out.err")"
fi
no_conns_left "after krdmactl atomic and write-imm"

# ---- sessions closed mid-transfer --------------------------------------
log "sessions closed mid-transfer"
head -c 1048576 /dev/urandom >"$tmp/1m.bin"
# The server dies while the client writes into its buffer.
serve "$tmp/serve3.out" "$MY_IP:7414" --size 1M
"$ctl" client "$PEER_IP:7414" --loop 100000 --no-verify --write "$tmp/1m.bin" \
	>/dev/null 2>"$tmp/client3.err" &
cpid=$!
bg+=("$cpid")
within 60 client_writes 3 || fail "client never got going: $(cat "$tmp/client3.err")"
kill -9 "$spid"
wait "$cpid"
expect_eq $? 1 "client exit status after the server died"
cat "$tmp/client3.err"
grep -q "RDMA WRITE of 1048576 bytes at offset 0: " "$tmp/client3.err" || fail "client error message"
no_conns_left "after killing the server mid-transfer"

# The client dies in the middle of its writes; the server carries on.
serve "$tmp/serve4.out" "$MY_IP:7415" --size 1M
"$ctl" client "$PEER_IP:7415" --loop 100000 --no-verify --write "$tmp/1m.bin" >/dev/null 2>&1 &
cpid=$!
bg+=("$cpid")
within 60 client_writes 3 || fail "client never got going"
kill -9 "$cpid"
wait "$spid" || fail "serve exit status after the client died: $(cat "$tmp/serve4.out.err")"
grep -q '^done ' "$tmp/serve4.out" || fail "serve did not finish the client"
no_conns_left "after killing the client mid-transfer"

# A server killed while waiting for a client, and one with a client.
serve "$tmp/serve5.out" "$MY_IP:7416"
kill -9 "$spid"
serve "$tmp/serve6.out" "$MY_IP:7417"
"$ctl" connect "$PEER_IP:7417" --hold 30 >/dev/null &
cpid=$!
bg+=("$cpid")
within 20 grep -q '^token' "$tmp/serve6.out" || fail "serve: no client"
kill -9 "$spid"
kill -9 "$cpid"
no_conns_left "after killing idle sessions"

# ---- the sysfs self-test through krdmactl ------------------------------
log "the sysfs self-test through krdmactl"
"$ctl" test --addr "$MY_IP:7418" --op send,write,read --size 8K --count 3 ||
	fail "krdmactl test"
no_conns_left "after krdmactl test"
# The benchmark engine through krdmactl: counts exact, JSON for scripts.
"$ctl" --json bench --addr "$MY_IP:7418" --op write --size 8K --count 25 >"$tmp/bench.json" ||
	fail "krdmactl bench: $(cat "$tmp/bench.json")"
for kv in '"bench_status":"passed"' '"bench_ops":25,' '"bench_bytes":204800,'; do
	grep -qF "$kv" "$tmp/bench.json" || fail "krdmactl bench --json lacks $kv: $(cat "$tmp/bench.json")"
done
no_conns_left "after krdmactl bench"

# ---- a bounded random pass ---------------------------------------------
log "a bounded random pass"
seed=${KRDMA_FUZZ_SEED:-20261122}
log "fuzz seed $seed"
# 2000 random ioctls, 1000 on the debug kernel (KASAN), 20,000 in stress.
iters=${KRDMA_FUZZ_ITERS:-$([ "$KLINE" = debug ] && echo 1000 || echo 2000)}
"$fuzz" fuzz "$MY_IP" 7430 "$seed" "$iters" >"$tmp/fuzz.log" 2>&1
rc=$?
cat "$tmp/fuzz.log"
[ $rc = 0 ] || fail "ioctl_fuzz fuzz (seed $seed): $(grep -m1 -E '^(not ok|Bail)' "$tmp/fuzz.log")"
no_conns_left "after the fuzz"
