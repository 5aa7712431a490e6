#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Install everything the krdma lab needs.  Idempotent, and silent when
# everything is already there.  Kernel versions are chosen by Debian's
# meta-packages (never a pinned patch version): the archive moves on.
#
# The lab never changes how the host boots.  The guests' kernels -- image,
# modules and headers -- are downloaded and unpacked into the cache
# (tools/kernel-image.sh), never installed; apt-get installs only user-space
# tools and the linux-source tarballs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}

pkgs=(
	build-essential make gcc gcc-12 perl bc bison flex libelf-dev libssl-dev
	xz-utils cpio kmod busybox-static qemu-system-x86 iproute2
	rdma-core ibverbs-utils rdmacm-utils perftest sparse dkms python3
	dwarves patch
	linux-source-6.1 linux-source-6.12
	fio e2fsprogs
)
# Kernel line -> the meta-package that names its current release.
declare -A meta=([6.1]=linux-headers-amd64 [6.12]=linux-headers-6.12-amd64)

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
lines=()
for line in 6.1 6.12; do
	rel=$(cat "$cache/kernels/line-$line" 2>/dev/null || true)
	[ -n "$rel" ] && [ -f "$cache/kernels/$rel/.done" ] || lines+=("$line")
done
# The guests see the host root read-only and mount their kernel's modules
# over /lib/modules, which a host that never installed a kernel lacks.
modmnt=
[ -d /lib/modules ] || modmnt=/lib/modules
[ ${#missing[@]} -eq 0 ] && [ ${#lines[@]} -eq 0 ] && [ -z "$modmnt" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "lab-setup: need root to install: ${missing[*]} ${lines[*]/#/kernel } $modmnt" >&2
	exit 1
fi
[ -z "$modmnt" ] || mkdir -p "$modmnt"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp /tmp/krdma-lab-setup.XXXXXX.log)
if ! apt-get update >"$log" 2>&1; then
	tail -n 30 "$log" >&2
	echo "lab-setup: apt-get update failed, full log in $log" >&2
	exit 1
fi
if [ ${#missing[@]} -gt 0 ]; then
	echo "lab-setup: installing ${missing[*]} (no kernel package: /boot is not touched)" >&2
	if ! apt-get install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		echo "lab-setup: apt-get failed, full log in $log" >&2
		exit 1
	fi
fi
rm -f "$log"

mkdir -p "$cache/kernels"
for line in "${lines[@]}"; do
	rel=$(apt-cache depends "${meta[$line]}" 2>/dev/null |
		sed -n 's/^ *Depends: linux-headers-\([^ ]*\)$/\1/p' | head -n 1)
	[ -n "$rel" ] || { echo "lab-setup: apt knows no ${meta[$line]}" >&2; exit 1; }
	echo "lab-setup: unpacking Debian kernel $rel (image, modules, headers) into $cache/kernels, not installing it" >&2
	"$here/kernel-image.sh" "$rel" >/dev/null
	echo "$rel" >"$cache/kernels/line-$line"
done
