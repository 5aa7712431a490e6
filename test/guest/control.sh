#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The control file: reading prints the grammar; every malformed command
# fails with the right errno and one dmesg line naming the bad word, and
# changes nothing; every refused well-formed command (name in use, busy,
# connection down) names its connection or listener and the reason, and
# so does every failed write of random well-formed and malformed commands
# (KRDMA_CONTROL_CHECKED, default 40; seed KRDMA_CONTROL_SEED, default the
# day of the year), also under failslab where the kernel has it (debug:
# KRDMA_CONTROL_FAILSLAB commands, default 40).  The lines are rate-
# limited: these checks space the refusals out (test/lib.sh
# ratelimit_pace).  A bounded unchecked random-input run at the end leaves
# the module healthy.
# topo: single
# dev: rxe
# check-kernel: debug
. "$(dirname "$0")/../lib.sh"

rdma_dev_up
krdma_load
expect_eq "$(stat -c %a $KRDMA_CTL)" 600 "control mode"
expect_eq "$(stat -c %a $KRDMA_SYS/version)" 444 "version mode"
grep -q '^connect name=NAME addr=IP:PORT' $KRDMA_CTL || fail "grammar not printed"

bad() {	# bad ERRNO 'dmesg words' CMD...
	local want=$1 words=$2
	shift 2
	ratelimit_pace
	dmesg_mark
	expect_ctl_err "$want" "$@"
	dmesg_fetch
	new_count 'krdma: '
	[ "$NEW_N" = 1 ] || fail "'$*': $NEW_N dmesg lines, expected 1: $(dmesg_new | tail -n 3)"
	new_has "$words" || fail "'$*': dmesg does not name '$words': $(dmesg_new)"
}
bad EINVAL "unknown command 'frobnicate'" frobnicate name=x
bad EINVAL "unknown word 'colour' for listen" listen name=x addr=1.2.3.4:5 colour=red
bad EINVAL "listen needs addr=" listen name=x
bad EINVAL "connect needs name=" connect addr=$PEER_IP:7000
bad EINVAL "bad address '1.2.3:77'" connect name=x addr=1.2.3:77
bad EINVAL "bad address '300.1.1.1:7'" connect name=x addr=300.1.1.1:7
bad EINVAL "bad address 'fe80::1:7'" connect name=x addr=fe80::1:7
bad EINVAL "connect needs a port" connect name=x addr=$PEER_IP
bad EINVAL "bad number 'depth=lots'" connect name=x addr=$PEER_IP:7 depth=lots
bad EINVAL "depth=5000 out of range" connect name=x addr=$PEER_IP:7 depth=5000
bad EINVAL "depth must not be 0" connect name=x addr=$PEER_IP:7 depth=0
bad EINVAL "'name' given twice" connect name=x name=y addr=$PEER_IP:7
bad EINVAL "bad name 'a/b'" listen name=a/b addr=$MY_IP:7
bad EINVAL "'depth' is not key=value" listen name=x addr=$MY_IP:7 depth
bad EINVAL "'depth=' needs a value" listen name=x addr=$MY_IP:7 depth=
bad EINVAL "bad op 'jump'" test name=x op=jump
bad EINVAL "size=0 works only with op=send" test name=x op=write size=0
bad EINVAL "size=67108865 out of range" test name=x size=67108865
bad EINVAL "empty command" ""
bad ENOENT "no connection 'nosuch'" disconnect name=nosuch
bad ENOENT "no connection 'nosuch'" test name=nosuch
bad ENOENT "no listener 'nosuch'" unlisten name=nosuch
printf 'listen name=x\001 addr=1.1.1.1:1' >/tmp/cmd
ratelimit_pace
dmesg_mark
( cat /tmp/cmd >$KRDMA_CTL ) 2>/dev/null && fail "non-printable command accepted"
dmesg_new | grep -q "non-printable byte 0x01" || fail "non-printable byte not named"
head -c 300 /dev/zero | tr '\0' a >/tmp/cmd
ratelimit_pace
dmesg_mark
( cat /tmp/cmd >$KRDMA_CTL ) 2>/dev/null && fail "overlong command accepted"
dmesg_new | grep -q "command longer than 255 bytes" || fail "overlong command not named"

# Nothing was created by any of that.
expect_eq "$(ls $KRDMA_SYS/conns | wc -l)" 0 "connections after bad commands"
expect_eq "$(ls $KRDMA_SYS/listeners | wc -l)" 0 "listeners after bad commands"

# IPv6 works where the device has an IPv6 address.
ip -6 addr add fd00:77::1/64 dev eth0 nodad 2>/dev/null
ctl listen name=l6 addr=[fd00:77::1]:7006 || fail "IPv6 listen"
ctl connect name=c6 addr=[fd00:77::1]:7006 || fail "IPv6 connect"
grep -q 'fd00:77::1' $KRDMA_SYS/conns/c6/peer_addr || fail "IPv6 peer_addr: $(cat $KRDMA_SYS/conns/c6/peer_addr)"
ctl disconnect name=c6 || fail "IPv6 disconnect"

# A listener with the longest name: its accepted connections (NAME.<n>,
# longer than a new name may be) can be named, tested and closed.
ln=L123456789012345678901234567890
ctl listen name=$ln addr=$MY_IP:7150 || fail "listen with a 31-character name"
ctl connect name=c31 addr=$PEER_IP:7150 || fail "connect to $ln"
wait_for 5 test -e $KRDMA_SYS/conns/$ln.0/test_status || fail "no $ln.0"
expect_ctl_err OK test name=$ln.0 op=send count=1
wait_for 60 not_running $KRDMA_SYS/conns/$ln.0/test_status
expect_eq "$(cat $KRDMA_SYS/conns/$ln.0/test_status)" passed "$ln.0 self-test"
expect_ctl_err OK disconnect name=$ln.0
expect_ctl_err OK disconnect name=c31
expect_ctl_err OK unlisten name=$ln
bad EINVAL "too long for listen" listen name=${ln}1 addr=$MY_IP:7151

# --- Every refused command names its reason (#22) ---
# refused ERRNO|ANY 'dmesg words' CMD...: a well-formed command the module
# refuses fails the write and logs a line with the words (other lines may
# come meanwhile: the module's own, of other connections).
refused() {
	local want=$1 words=$2 got
	shift 2
	ratelimit_pace
	dmesg_mark
	ctl_err_v "$@"
	got=$CTL_ERR
	case "$want:$got" in
	*:OK)	fail "'$*' was accepted" ;;
	ANY:*)	;;
	*)	[ "$got" = "$want" ] || fail "'$*': got $got, expected $want" ;;
	esac
	dmesg_fetch
	new_has "$words" ||
		fail "'$*' ($got): dmesg does not say '$words': $(dmesg_new | tail -n 3)"
}
not_connected() { local s=; read -r s 2>/dev/null <"$1"; [ "$s" != connected ]; }
ctl listen name=rl addr=$MY_IP:7160 || fail "listen rl"
ctl connect name=rc addr=$PEER_IP:7160 || fail "connect rc"	# its peer: rl.0
ctl connect name=rb addr=$PEER_IP:7160 || fail "connect rb"	# rl.1
refused EEXIST "connect: name 'rc' already in use" connect name=rc addr=$PEER_IP:7160
refused EEXIST "listen: name 'rl' already in use" listen name=rl addr=$MY_IP:7161
ctl test name=rc op=send size=1 count=1000000 || fail "long self-test on rc"
refused EBUSY "test: rc: a self-test or a bench runs on it already" test name=rc op=send
ctl bench name=rb op=send size=1 secs=600 || fail "long bench on rb"
refused EBUSY "bench: rb: a bench runs on it already" bench name=rb op=send size=1
# A connection whose peer left refuses the self-test and the bench.
wait_for 5 test -e $KRDMA_SYS/conns/rl.0/test_status || fail "no rl.0"
ctl disconnect name=rl.0 || fail "disconnect rl.0"
wait_for 20 not_connected $KRDMA_SYS/conns/rc/state || fail "rc still connected after its peer left"
refused ANY "test: rc: connection is down: " test name=rc op=send
refused ANY "bench: rc: connection is down: " bench name=rc op=write size=4K
# rl.1 first: closing rb would have it reaped meanwhile.
for c in rl.1 rc rb; do ctl disconnect name=$c || fail "disconnect $c"; done
ctl unlisten name=rl || fail "unlisten rl"

# Random well-formed and malformed commands (test/lib.sh ctl_random_cmd),
# each written on its own and followed by a marker line in the kernel log
# ("krdma-ctl: I RC NAME"):
# every write that failed must have, between its marker and the one
# before, a krdma line that names the command's connection or listener
# (or the parser's "control: ..." line).  The refusals are spaced out
# (ratelimit_pace), so no line can be rate-limited away.
# run_cmds N: N random commands as above; cmds[] keeps them and errs[]
# how each write failed ("" if it did not), nfailed and nomem count the
# failed writes and those that failed with ENOMEM.
errf=/tmp/krdma-ctl-err.$$
run_cmds() {
	local i rc err
	cmds=() errs=() nfailed=0 nomem=0
	for ((i = 0; i < $1; i++)); do
		ctl_random_cmd
		ratelimit_pace
		[ ${#fs_prob[@]} = 0 ] ||
			echo "${fs_prob[RANDOM % ${#fs_prob[@]}]}" >$fs/probability
		echo "$cmd" >$KRDMA_CTL 2>"$errf"
		rc=$?
		[ ${#fs_prob[@]} = 0 ] || echo 0 >$fs/probability
		echo "krdma-ctl: $i $rc $cname" >/dev/kmsg
		err=
		if [ $rc != 0 ]; then
			read -r err <"$errf"
			err=${err##*: }
			nfailed=$((nfailed + 1))
			[ "$err" != "Cannot allocate memory" ] || nomem=$((nomem + 1))
		fi
		cmds+=("$cmd") errs+=("$err")
	done
}
# unnamed_failures: from the kernel log since dmesg_mark, the numbers of
# the failed writes of run_cmds without their line.
unnamed_failures() {
	dmesg_new | awk '
	function named(l, n,	p, b, a) {
		while ((p = index(l, n)) > 0) {
			b = p > 1 ? substr(l, p - 1, 1) : " "
			a = substr(l, p + length(n), 1)
			if (b !~ /[A-Za-z0-9_.-]/ && a !~ /[A-Za-z0-9_.-]/)
				return 1
			l = substr(l, p + length(n))
		}
		return 0
	}
	/krdma-ctl: [0-9]+ [0-9]+ / {
		split(substr($0, index($0, "krdma-ctl: ") + 11), f, " ")
		if (f[2] != 0) {
			ok = 0
			for (k = 1; k <= nl; k++)
				if (index(L[k], "krdma: control: ") ||
				    (f[3] != "-" && named(L[k], f[3])))
					ok = 1
			if (!ok)
				print f[1]
		}
		nl = 0
		next
	}
	/krdma: / { L[++nl] = $0 }'
}
# check_run WHAT: every failed write of the last run_cmds named its reason.
check_run() {
	local bad i
	bad=$(unnamed_failures)
	for i in $bad; do
		echo "# refused without a line: '${cmds[i]}' (${errs[i]})"
	done
	i=${bad%%[!0-9]*}
	[ -z "$bad" ] || fail "$1: $(wc -w <<<"$bad") of $nfailed failed writes left no line naming the command, the first: '${cmds[i]}' (${errs[i]})"
}
seed=${KRDMA_CONTROL_SEED:-$((10#$(date +%j)))}
fs=/sys/kernel/debug/failslab fs_prob=()

RANDOM=$seed
dmesg_mark
run_cmds "${KRDMA_CONTROL_CHECKED:-40}"
check_run "random commands (seed $seed)"
log "random commands (seed $seed): ${#cmds[@]} written, $nfailed refused, each with its line"
ctl_clean_up

# The same under failslab, on the debug kernel: slab allocations made on
# behalf of krdma's code (any caller within krdma's text in their stack)
# by the writing shell fail with a probability chosen for each write.
# That makes ENOMEM where random input rarely gets it, and every write it
# fails must name its reason too.
[ -d $fs ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
if [ -e $fs/require-start ] && [ -e /proc/self/make-it-fail ]; then
	syms=$(grep -E ' [tT] [^ ]+[[:space:]]+\[krdma\]$' /proc/kallsyms | sort)
	lo=${syms%%[!0-9a-f]*} last=${syms##*$'\n'} hi=${last%%[!0-9a-f]*}
	[ ${#lo} = 16 ] && [ ${#hi} = 16 ] && [ "$lo" != 0000000000000000 ] ||
		fail "no krdma text addresses in /proc/kallsyms ('$lo', '$hi')"
	# The last function's end is not listed: a page more.
	printf -v end '%#x' $((0x$hi + 0x1000))
	fs_files=(probability interval times space verbose task-filter
		  stacktrace-depth require-start require-end ignore-gfp-wait)
	declare -A fs_saved=()
	for f in "${fs_files[@]}"; do read -r "fs_saved[$f]" <$fs/$f; done
	fs_restore() {
		local f
		echo 0 >/proc/self/make-it-fail
		echo 0 >$fs/probability
		for f in "${fs_files[@]}"; do echo "${fs_saved[$f]}" >$fs/$f; done
	}
	trap fs_restore EXIT
	for set in probability=0 require-start=0x$lo require-end=$end \
		   stacktrace-depth=32 task-filter=Y ignore-gfp-wait=N \
		   interval=1 space=0 verbose=0 times=1000000; do
		echo "${set#*=}" >$fs/"${set%%=*}" || fail "failslab: cannot set $set"
	done
	fs_prob=(1 3 10 30)
	# ctl_clean_up's refusals (a connection reaped meanwhile) were not spaced
	# out: a limit they filled starts afresh after 5 s.
	nap 5.5
	RANDOM=$((seed + 1))
	dmesg_mark
	echo 1 >/proc/self/make-it-fail
	run_cmds "${KRDMA_CONTROL_FAILSLAB:-40}"
	echo 0 >/proc/self/make-it-fail
	read -r left <$fs/times
	fs_restore
	trap - EXIT
	fs_prob=()
	injected=$((1000000 - left))
	check_run "random commands under failslab (seed $((seed + 1)))"
	log "under failslab (krdma's text 0x$lo-$end): ${#cmds[@]} written, $injected allocations failed, $nfailed writes refused ($nomem with ENOMEM), each with its line"
	[ "$injected" -gt 0 ] || fail "failslab failed no allocation in krdma's text 0x$lo-$end"
	[ "$nomem" -gt 0 ] || fail "no write failed with ENOMEM under failslab ($injected allocations failed)"
	ctl_clean_up
	# Nothing it did harms the next connection.
	ctl_health 7175 "after failslab"
	ctl_clean_up
else
	log "no failslab with a stack filter in $(uname -r): the fault-injection burst runs on the debug kernel"
fi

# Bounded random input: 1500 commands (KRDMA_CONTROL_RANDOM) built from real
# and random words (bash builtins only: process creation is slow under TCG).
words=(listen unlisten connect disconnect test name=r name= addr=$MY_IP:7100
	addr=x addr=[::1]:1 depth=1 depth=99999 msg=1K msg=2M op=all op=read,
	size=0 size=64K count=3 sge=64 sge=65 hello=9 timeout_ms=1 = == '' ' '
	$'\x01' $'\xff' 'name=r.0' 'addr=0.0.0.0:7100' size=4294967295 'count=1k')
RANDOM=4242
echo "# random control input, seed 4242"
for ((i = 0; i < ${KRDMA_CONTROL_RANDOM:-1500}; i++)); do
	cmd=
	for ((j = RANDOM % 5; j >= 0; j--)); do
		cmd+="${words[RANDOM % ${#words[@]}]} "
	done
	echo "$cmd" >$KRDMA_CTL 2>/dev/null
done
ctl_clean_up
rm -f "$errf"
cat $KRDMA_SYS/version >/dev/null || fail "module unhealthy after random input"
