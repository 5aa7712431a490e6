#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# The control file: reading prints the grammar; every malformed command
# fails with the right errno and one dmesg line naming the bad word, and
# changes nothing (the lines are rate-limited: the checks space the
# refusals out, test/lib.sh ratelimit_pace); a bounded random-input run
# leaves the module healthy.
# topo: single
# dev: rxe
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
	n=$(dmesg_new | grep -c 'krdma: ')
	[ "$n" = 1 ] || fail "'$*': $n dmesg lines, expected 1: $(dmesg_new | tail -n 3)"
	dmesg_new | grep -qF -- "$words" || fail "'$*': dmesg does not name '$words': $(dmesg_new)"
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
wait_for 5 test -d $KRDMA_SYS/conns/$ln.0 || fail "no $ln.0"
expect_ctl_err OK test name=$ln.0 op=send count=1
wait_for 60 not_running $KRDMA_SYS/conns/$ln.0/test_status
expect_eq "$(cat $KRDMA_SYS/conns/$ln.0/test_status)" passed "$ln.0 self-test"
expect_ctl_err OK disconnect name=$ln.0
expect_ctl_err OK disconnect name=c31
expect_ctl_err OK unlisten name=$ln
bad EINVAL "too long for listen" listen name=${ln}1 addr=$MY_IP:7151

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
for c in $(ls $KRDMA_SYS/conns); do ctl disconnect name=$c; done
for l in $(ls $KRDMA_SYS/listeners); do ctl unlisten name=$l; done
cat $KRDMA_SYS/version >/dev/null || fail "module unhealthy after random input"
