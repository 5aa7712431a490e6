#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Second stage of a lab guest, run inside the host root (read-only, over 9p)
# with tmpfs scratch space and the run's lab directory at /tmp/lab.
# Reads /tmp/lab/env-NAME (written by tools/guest-run), sets up the network,
# runs the requested script (or a shell) and leaves its exit status, output
# and full dmesg in the lab directory before ending the guest.
name=${1:?name}
lab=/tmp/lab
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LAB=$lab GUEST=$name
# shellcheck disable=SC1090
set -a
. "$lab/env-$name"
set +a

finish() {
	dmesg >"$lab/dmesg-$name.txt" 2>&1
	echo "$1" >"$lab/rc-$name"
	sync
	echo "guest-stage2: $name done, status $1" >/dev/console
	reboot -f -d
}

# devtmpfs has no /dev/fd and friends; bash process substitution needs them.
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t configfs none /sys/kernel/config 2>/dev/null
hostname "$name"
ip link set lo up

# No udev here: load the NIC driver by hand.
modprobe virtio_net

# eth0: the link to the other guest (or to nowhere, in the one-guest lab).
if [ -n "${MY_IP:-}" ]; then
	ip link set eth0 up && ip addr add "$MY_IP/24" dev eth0 ||
		finish 90
fi

cd "$TOP" || finish 91
if [ "${SHELL_MODE:-0}" = 1 ]; then
	echo "krdma lab guest $name ($(uname -r)); 'exit' ends the guest"
	setsid -c bash -i </dev/ttyS0 >/dev/ttyS0 2>&1
	finish 0
fi

# The script's output goes to the lab directory and to the console log.
bash -c "$SCRIPT" > >(tee "$lab/out-$name.log" >/dev/console) 2>&1
rc=$?
sleep 0.2
finish "$rc"
