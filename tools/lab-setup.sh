#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the krdma lab needs, with apt-get.  Idempotent, and
# silent when everything is already there.  Kernel versions are chosen by
# Debian's meta-packages (never a pinned patch version): the archive moves on.
set -euo pipefail

pkgs=(
	build-essential make gcc perl bc bison flex libelf-dev libssl-dev
	xz-utils cpio kmod busybox-static qemu-system-x86 iproute2
	rdma-core ibverbs-utils rdmacm-utils perftest sparse
	linux-image-amd64 linux-headers-amd64
	linux-image-6.12-amd64 linux-headers-6.12-amd64
	linux-source-6.1 linux-source-6.12
)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "lab-setup: need root to install: ${missing[*]}" >&2
	exit 1
fi

echo "lab-setup: installing ${missing[*]}" >&2
log=$(mktemp /tmp/krdma-lab-setup.XXXXXX.log)
export DEBIAN_FRONTEND=noninteractive
# The guests boot our own busybox initramfs; Debian's initrd is never used,
# so skip generating one for each kernel (it costs a minute per kernel).
export INITRD=No
if ! { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "lab-setup: apt-get failed, full log in $log" >&2
	exit 1
fi
rm -f "$log"
echo "lab-setup: done" >&2
