#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Host-side test of tools/krdmactl's command line: no module, no guest,
# no /dev/krdma (every run points --dev at a path that does not exist).
# It builds the CLI from tools/krdmactl.c with the host compiler into a
# temporary directory, then checks option parsing (--opt=value, --opt
# value, short aliases, --), -V, numbers that overflow, JSON escaping of
# error objects, and that every krdmactl command line of the guest tests
# and the README still parses.  One line per check, "ok N - ..." or
# "not ok N - ..."; exit status 1 if any failed.  A second or two.
#   krdmactl-cli-test.sh
# Environment: KRDMACTL_SRC (source to build, default tools/krdmactl.c),
# CC (default cc).
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
src=${KRDMACTL_SRC:-$top/tools/krdmactl.c}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ctl=$tmp/krdmactl
nodev=$tmp/no-such-dev

command -v python3 >/dev/null || { echo "Bail out! no python3"; exit 1; }
"${CC:-cc}" -Wall -Wextra -O2 -I"$top/include/uapi" -o "$ctl" "$src" ||
	{ echo "Bail out! cannot build $src"; exit 1; }

n=0 failed=0
out= err= rc=
# run ARGS...: krdmactl with --dev $nodev; sets out, err, rc.
run() {
	out=$("$ctl" --dev "$nodev" "$@" 2>"$tmp/err")
	rc=$?
	err=$(cat "$tmp/err")
}
# t DESC: the status of the command before it is the check's result.
t() {
	local st=$?

	n=$((n + 1))
	if [ $st = 0 ]; then
		echo "ok $n - $1"
	else
		echo "not ok $n - $1"
		failed=$((failed + 1))
		printf '#   exit %s\n#   stdout: %s\n#   stderr: %s\n' "$rc" \
			"${out//$'\n'/ | }" "${err//$'\n'/ | }"
	fi
}
has() { grep -qF -- "$1" <<<"$2"; }	# has NEEDLE HAYSTACK
is_json() { python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$1"; }
# Parsing got through to opening the (missing) device: exit 1, that error.
opened() { [ "$rc" = 1 ] && has "cannot open $nodev: No such file" "$err"; }
usage() { [ "$rc" = 2 ] && has "$1" "$err"; }	# usage MESSAGE-PART

# ---- -V / --version: krdmactl's version, no /dev/krdma ------------------
want=$(sed -n 's/^#define KRDMA_VERSION[[:space:]]*"\(.*\)"/\1/p' \
	"$top/krdma_core.h")
run -V
[ "$rc" = 0 ] && [ -n "$want" ] && has "krdmactl $want" "$out" && [ -z "$err" ]
t "-V prints KRDMA_VERSION ($want) of krdma_core.h without /dev/krdma"
run --version
[ "$rc" = 0 ] && has "krdmactl $want" "$out"
t "--version"
run --json -V
[ "$rc" = 0 ] && python3 -c 'import json, sys
v = json.load(sys.stdin)
assert v["version"] == sys.argv[1] and type(v["abi_version"]) is int
' "$want" <<<"$out"
t "--json -V: JSON, abi_version a number"

# ---- option syntax -------------------------------------------------------
run serve 10.0.0.1:7000 --size=2G
usage "--size '2G' is too large"
t "--size=2G parsed (too large: exit 2)"
run serve 10.0.0.1:7000 --size 2G
usage "--size '2G' is too large"
t "--size 2G parsed"
run serve -s 2G 10.0.0.1:7000
usage "--size '2G' is too large"
t "-s 2G parsed, option before the address"
run serve 10.0.0.1:7000 -s2G
usage "--size '2G' is too large"
t "-s2G parsed"
run serve 10.0.0.1:7000 --size=1M
opened
t "--size=1M accepted"
run serve 10.0.0.1:7000 --file="$tmp/a file"
[ "$rc" = 1 ] && has "cannot open $tmp/a file: No such file" "$err"
t "--file=PATH"
run serve 10.0.0.1:7000 --file "$tmp/a file"
[ "$rc" = 1 ] && has "cannot open $tmp/a file: No such file" "$err"
t "--file PATH"
run bench --addr=10.0.0.1:7000 --op=send -n 5 -D 5
usage "--count or --secs, not both"
t "bench -n and -D are --count and --secs"
run bench --addr 10.0.0.1:7000 --op send --count=5 --duration=5
usage "--count or --secs, not both"
t "bench --duration is --secs"
run bench --addr 10.0.0.1:7000 --op send -t 4294967296
usage "--depth '4294967296' is too large"
t "bench -t is --depth"
run connect 10.0.0.1:7000 -t 4294967296
usage "--depth '4294967296' is too large"
t "connect -t is --depth"
run send 10.0.0.1:7000 -- -not-an-option
opened
t "-- ends the options: send ADDR -- -not-an-option"
run send 10.0.0.1:7000 --imm 0x100000000 x
usage "--imm '0x100000000' is too large"
t "send --imm takes 32 bits"
run send 10.0.0.1:7000 --imm=0xffffffff x
opened
t "send --imm=0xffffffff"
run send 10.0.0.1:7000 -not-an-option
usage "unknown option '-n'"
t "without --, -not-an-option is an unknown option"
run recv 10.0.0.1:7000 -- --out x
usage "unexpected '--out'"
t "after --, --out is an operand"
run serve 10.0.0.1:7000 --size
usage "--size needs a value"
t "a missing value: exit 2"
run client 10.0.0.1:7000 --send -j --read x
opened && [[ $err != "{"* ]]
t "an option's value may start with '-' (--send -j is not --json)"

# ---- numbers -------------------------------------------------------------
for v in 17179869184G 18446744073709551616 99999999999999999999K; do
	run serve 10.0.0.1:7000 --size "$v"
	usage "too large"
	t "serve --size $v: too large, exit 2"
done
for o in "listen 10.0.0.1:7000 --count" "client 10.0.0.1:7000 --read x --loop"; do
	run $o 18446744073709551616
	usage "too large"
	t "${o##* } 2^64 (a u64 field): too large, exit 2"
done
for v in -1 ' 1' 1x 1KB 0x ''; do
	run serve 10.0.0.1:7000 --size "$v"
	usage "bad --size"
	t "serve --size '$v': bad, exit 2"
done
run bench --addr 10.0.0.1:7000 --op write --size 4G
usage "--size '4G' is too large (at most 4294967295)"
t "bench --size 4G: above the u32 field, exit 2"
run test --addr 10.0.0.1:7000 --count 4294967296
usage "--count '4294967296' is too large"
t "test --count 2^32: exit 2"
run client 10.0.0.1:7000 --len 2G --read x
usage "--len '2G' is too large"
t "client --len 2G: above KRDMA_IOC_MAX_XFER, exit 2"
run connect 10.0.0.1:7000 --timeout 4294967296
usage "--timeout '4294967296' is too large"
t "--timeout 2^32 ms: exit 2"
run read 10.0.0.1:7000 x --token 0x1000:0x100000000:4096
usage "bad token"
t "a token's rkey above 32 bits: exit 2"
for v in 4294967296 -1 18446744073709551616; do
	run read 10.0.0.1:7000 x --token 0x1000:0x10:$v
	usage "bad token"
	t "a token's length $v: exit 2"
done
run read 10.0.0.1:7000 x --token 0x1000:0x10:4096
opened
t "a good token parses"

# ---- atomic and write-imm ------------------------------------------------
run atomic fadd 10.0.0.1:7000 5
opened
t "atomic fadd ADDR ADD"
run atomic cas 10.0.0.1:7000 0x10 18446744073709551615 --offset=8 --token 0x1000:0x10:4096
opened
t "atomic cas ADDR COMPARE SWAP (hex, 2^64 - 1), --offset=, --token"
run atomic fadd -n 1K --offset 16 10.0.0.1:7000 1
opened
t "atomic fadd: options before the operands, -n with a suffix"
run atomic fadd 10.0.0.1:7000 -- -1
opened
t "atomic fadd ADDR -- -1 (2^64 - 1)"
run atomic fadd 10.0.0.1:7000 -1
usage "unknown option '-1'"
t "atomic fadd ADDR -1 without --: an unknown option"
for v in -- --1 0x 1x '' ' 1'; do
	run atomic fadd 10.0.0.1:7000 -- "$v"
	usage "bad ADD '$v'"
	t "atomic fadd ADD '$v': bad, exit 2"
done
run atomic fadd 10.0.0.1:7000 18446744073709551616
usage "ADD '18446744073709551616' is too large"
t "atomic fadd ADD 2^64: too large, exit 2"
run atomic cas 10.0.0.1:7000 1 -- -18446744073709551616
usage "SWAP '18446744073709551616' is too large"
t "atomic cas SWAP -2^64: too large, exit 2"
run atomic
usage "missing fadd or cas"
t "atomic without an operation: exit 2"
run atomic xadd 10.0.0.1:7000 1
usage "unknown operation 'xadd' (fadd or cas)"
t "atomic xadd: exit 2"
run atomic fadd
usage "missing ADDR:PORT"
t "atomic fadd without an address: exit 2"
run atomic fadd 10.0.0.1:7000
usage "fadd takes one ADD"
t "atomic fadd without ADD: exit 2"
run atomic fadd 10.0.0.1:7000 1 2
usage "fadd takes one ADD"
t "atomic fadd with two values: exit 2"
run atomic cas 10.0.0.1:7000 1
usage "cas takes COMPARE and SWAP"
t "atomic cas without SWAP: exit 2"
run atomic cas 10.0.0.1:7000 1 2 3
usage "unexpected '3'"
t "atomic cas with three values: exit 2"
run atomic cas 10.0.0.1:7000 1 2 -n 3
usage "--count is fadd's"
t "atomic cas --count: exit 2"
run atomic fadd 10.0.0.1:7000 1 --count 0
usage "--count must be at least 1"
t "atomic fadd --count 0: exit 2"
run atomic fadd 10.0.0.1 1
usage "needs a port"
t "atomic fadd ADDR without a port: exit 2"
run atomic fadd 10.0.0.1:7000 1 --offset 18446744073709551616
usage "--offset '18446744073709551616' is too large"
t "atomic --offset 2^64: exit 2"
run atomic fadd 10.0.0.1:7000 1 --token 0x1000:0x10
usage "bad token"
t "atomic --token without a length: exit 2"
run atomic fadd 10.0.0.1:7000 1 --len 8
usage "unknown option '--len'"
t "atomic takes no --len"
run --json atomic cas 10.0.0.1:7000 1
[ "$rc" = 2 ] && is_json "$err" && has '"command":"atomic"' "$err"
t "--json atomic usage error: JSON, exit 2"
run write-imm 10.0.0.1:7000 x --imm 0xdeadbeef --offset 4096 --len 100
opened
t "write-imm ADDR FILE --imm 0xdeadbeef --offset --len"
run write-imm 10.0.0.1:7000 x
opened
t "write-imm without --imm (0)"
run write-imm --imm=4294967295 10.0.0.1:7000 x --token 0x1000:0x10:4096 --no-verify
opened
t "write-imm --imm=2^32 - 1 before the operands, --token, --no-verify"
run write-imm 10.0.0.1:7000 x --imm 4294967296
usage "--imm '4294967296' is too large (at most 4294967295)"
t "write-imm --imm 2^32: exit 2"
for v in -1 1K 0x ''; do
	run write-imm 10.0.0.1:7000 x --imm "$v"
	usage "bad --imm"
	t "write-imm --imm '$v': bad, exit 2"
done
run write-imm 10.0.0.1:7000
usage "missing FILE"
t "write-imm without FILE: exit 2"
run write-imm 10.0.0.1:7000 x --imm
usage "--imm needs a value"
t "write-imm --imm without a value: exit 2"
run write 10.0.0.1:7000 x --imm 1
usage "unknown option '--imm'"
t "write takes no --imm (write-imm does)"
run client 10.0.0.1:7000 --imm 7 --write-imm x --write x
opened
t "client --imm 7 --write-imm FILE"
run serve 10.0.0.1:7000 --access rwa
opened
t "serve --access rwa"
run serve 10.0.0.1:7000 --access=a
opened
t "serve --access=a"
for v in x rwx '' A; do
	run serve 10.0.0.1:7000 --access "$v"
	usage "--access takes r, w, a"
	t "serve --access '$v': exit 2"
done
for c in atomic write-imm; do
	run "$c" --help
	[ "$rc" = 0 ] && grep -q "^usage: krdmactl .*$c" <<<"$out"
	t "$c --help"
done
run atomic --help
[ "$rc" = 0 ] && has "atomic cas ADDR:PORT COMPARE SWAP" "$out" &&
	has "8-byte aligned" "$out"
t "atomic --help names cas and the alignment"
run --help
[ "$rc" = 0 ] && has "atomic fadd ADDR:PORT ADD" "$out" && has "write-imm ADDR:PORT FILE" "$out"
t "krdmactl --help lists atomic and write-imm"

# ---- timeouts in milliseconds, errors that say what to do ----------------
for c in test bench connect; do
	run "$c" --help
	[ "$rc" = 0 ] && grep -q -- "--timeout MS[] ]" <<<"$out" &&
		grep -q "Every timeout is in milliseconds" <<<"$out" &&
		! grep -q -- "--timeout SEC" <<<"$out"
	t "$c --help: --timeout MS, in milliseconds"
done
run version
[ "$rc" = 1 ] && has "is the krdma module loaded? modprobe krdma" "$err"
t "no device: the error says to load the module"

# ---- JSON: error objects, escaping ---------------------------------------
# A file name with a quote, a backslash, control bytes, UTF-8 (2, 3 and 4
# bytes) and bytes that are not UTF-8 (0xff, an overlong, a surrogate,
# a cut sequence).
name=$tmp/$(printf 'q"b\\c\tt\001\033[1m\nn \303\251 \342\202\254 \360\237\230\200 \377 \300\257 \355\240\200 \342\202 end')
run --json serve 10.0.0.1:7000 --file "$name"
[ "$rc" = 1 ] && [ -z "$out" ] && NAME=$name python3 -c '
import codecs, json, os, sys
e = json.loads(sys.stdin.buffer.read().decode("utf-8"))
codecs.register_error("u00", lambda x: ("".join(chr(b) for b in
	x.object[x.start:x.end]), x.end))
name = os.environb[b"NAME"].decode("utf-8", "u00")
want = "cannot open " + name + ": No such file or directory"
assert e == {"error": want, "errno": 2, "command": "serve"}, (e, want)
' <"$tmp/err"
t "--json: an error with a crafted file name is one exact JSON object"
is_json "$err"
t "... and json.load takes it"
run serve 10.0.0.1:7000 --size "$(printf '1"\\\t\377')" --json
[ "$rc" = 2 ] && is_json "$err" && has '"errno":0' "$err"
t "--json after a bad option: the usage error is JSON too"
run --json frobnicate
[ "$rc" = 2 ] && is_json "$err"
t "--json unknown command: JSON, exit 2"
run -j version
[ "$rc" = 1 ] && is_json "$err" && has '"errno":2' "$err"
t "-j: the device error is JSON, errno a number"

# The encoder itself on what no error reaches: sysfs values that are
# numbers become JSON numbers, the rest strings.
cat >"$tmp/enc.c" <<EOF
#define main krdmactl_main
#include "$src"
#undef main
int main(int argc, char **argv)
{
	int i;

	printf("[");
	for (i = 1; i < argc; i++) {
		printf(i > 1 ? "," : "");
		json_value(stdout, argv[i]);
	}
	printf("]\n");
	return 0;
}
EOF
vals=(25 0 -3 38.24 007 1.2.3 0x10 1e5 5. passed '' 18446744073709551615 "$name")
"${CC:-cc}" -w -I"$top/include/uapi" -o "$tmp/enc" "$tmp/enc.c" &&
	"$tmp/enc" "${vals[@]}" >"$tmp/enc.out" &&
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1], encoding="utf-8"))
assert v[:5] == [25, 0, -3, 38.24, "007"], v
assert v[5:12] == ["1.2.3", "0x10", "1e5", "5.", "passed", "",
		  18446744073709551615], v
assert isinstance(v[12], str), v' "$tmp/enc.out"
t "sysfs values: decimal numbers as JSON numbers, the rest as strings"

# ---- every command line of the guest tests and the README still parses --
# (Their addresses, a small file for theirs, --dev pointing nowhere: each
# must get as far as opening the device, exit 1; the sysfs commands as far
# as /sys/kernel/krdma, unless this host has krdma loaded.)
f=$tmp/f
head -c 3000 /dev/zero >"$f"
cmds=(
	"version" "--json version" "listen 10.0.0.1:7410 --count 2"
	"send 10.0.0.1:7410 'first message' second"
	"recv 10.0.0.1:7411 --out $tmp/recv.bin"
	"send 10.0.0.1:7411 --file $f"
	"serve 10.0.0.1:7412 --file $f --dump $tmp/after.bin"
	"serve 10.0.0.1:7413 --size 64K --clients 2 --json"
	"serve 10.10.1.1:7001 --size 1M"
	"client 10.0.0.1:7412 --send 'hello, krdma' --send-file $f --expect $f --read $tmp/got --offset 4096 --write $f --expect $f"
	"--json client 10.0.0.1:7413 --send json --write $f"
	"read 10.0.0.1:7413 $tmp/read.bin --len 3000"
	"client 10.0.0.1:7414 --loop 100000 --no-verify --write $f"
	"connect 10.0.0.1:7417 --hold 30"
	"connect 10.0.0.1:7499 --timeout 3000"
	"client 10.10.1.1:7001 --send hello --write data --read copy"
	"serve 10.0.0.1:7420 --size 64K --access rwa --clients 6 --dump $tmp/after7.bin"
	"--json atomic fadd 10.0.0.1:7420 5 --count 10 --offset 8"
	"--json atomic cas 10.0.0.1:7420 49 7 --offset=8"
	"--json atomic fadd --offset 8 10.0.0.1:7420 -- -1"
	"--json write-imm 10.0.0.1:7420 $f --imm 0xdeadbeef --offset 4096"
	"--json atomic fadd 10.0.0.1:7420 1 --offset 4"
	"serve 10.0.0.1:7420 --size 64K --clients 2"
	"--json write-imm 10.0.0.1:7420 $f --imm 1"
	"serve 10.10.1.1:7005 --size 64K --access rwa --clients 3"
	"atomic fadd 10.10.1.1:7005 5 --count 10 --offset 8"
	"--json atomic cas 10.10.1.1:7005 50 7 --offset 8"
	"write-imm 10.10.1.1:7005 data --len 4K --imm 0xdeadbeef"
)
for c in "${cmds[@]}"; do
	eval "run $c"
	opened
	t "parses: krdmactl ${c//$tmp/\$tmp}"
done
for c in serve client stat test bench; do
	run "$c" --help
	[ "$rc" = 0 ] && grep -q "^usage: krdmactl .*$c" <<<"$out"
	t "$c --help"
done
run bench --addr 10.0.0.1:7419
usage "op write, read or send"
t "bench without --op: exit 2"
run frobnicate
[ "$rc" = 2 ]
t "unknown command: exit 2"
run connect
[ "$rc" = 2 ]
t "connect without an address: exit 2"
run listen 10.0.0.1:7000 --out x
usage "unknown option '--out'"
t "listen takes no --out (recv does)"
run write 10.0.0.1:7000 x --loop 2
usage "unknown option '--loop'"
t "write takes no --loop (client does)"
sys=(
	"test --addr 10.0.0.1:7418 --op send,write,read --size 8K --count 3"
	"--json bench --addr 10.0.0.1:7418 --op write --size 8K --count 25"
	"test --addr 10.10.1.1:7002 --op send,write,read --size 64K --count 10"
	"bench --addr 10.10.1.1:7003 --op send --size 64 --secs 2"
	"--json bench --addr 10.10.1.1:7004 --op read --size 1M --count 50"
	"stat" "--json stat"
)
for c in "${sys[@]}"; do
	if [ -e /sys/kernel/krdma ]; then
		n=$((n + 1))
		echo "ok $n - # SKIP krdma is loaded here: krdmactl $c"
		continue
	fi
	eval "run $c"
	[ "$rc" = 1 ] && has "/sys/kernel/krdma" "$err"
	t "parses: krdmactl $c"
done

echo "1..$n"
[ $failed = 0 ] || { echo "# $failed of $n failed"; exit 1; }
