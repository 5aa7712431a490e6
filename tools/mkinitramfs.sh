#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build the lab's busybox initramfs for one kernel release.
#   mkinitramfs.sh RELEASE MODROOT OUT
# MODROOT is the directory holding lib/modules/RELEASE ("/" for Debian's
# kernels, the cache's modules/ for the debug kernel).  Only what is needed
# to reach the host root over 9p goes in; the rest is loaded from there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rel=${1:?release}
modroot=${2:?modroot}
out=${3:?output}

stamp="$rel $(md5sum "$here/guest-init" "$0" | cut -c1-32 | tr '\n' ' ')"
# Lab runs start in parallel: one builder at a time, and readers never see
# a half-written image (a torn busybox segfaults as init).
exec 9>"$out.lock"
flock 9
[ -f "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work"/{bin,dev,proc,sys,host,mods,lab}
cp /bin/busybox "$work/bin/busybox"
cp "$here/guest-init" "$work/init"
chmod 755 "$work/init"

: >"$work/mods/order"
for m in virtio_pci 9pnet_virtio 9p; do
	modprobe -d "$modroot" -S "$rel" --show-depends "$m" 2>/dev/null |
		sed -n 's/^insmod \([^ ]*\).*/\1/p'
done | awk '!seen[$0]++' | while read -r ko; do
	base=$(basename "$ko")
	case "$base" in
	*.xz)	xz -dc "$ko" >"$work/mods/${base%.xz}"; base=${base%.xz} ;;
	*.zst)	zstd -qdc "$ko" >"$work/mods/${base%.zst}"; base=${base%.zst} ;;
	*)	cp "$ko" "$work/mods/$base" ;;
	esac
	echo "$base" >>"$work/mods/order"
done

tmp=$(mktemp "$out.XXXXXX")
(cd "$work" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp"
mv "$tmp" "$out"
echo "$stamp" >"$out.stamp"
