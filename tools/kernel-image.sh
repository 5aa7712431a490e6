#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Unpack (once) a Debian kernel release -- its image and its headers -- into
# the lab cache, never installing either: the lab must not change how the
# host boots (Debian's 6.12 headers depend on the image, whose installation
# writes /boot/vmlinuz and an initramfs).  Prints the directory.
#   kernel-image.sh RELEASE      e.g. 6.12.117+deb12-amd64
#
# ${KRDMA_CACHE:-~/.cache/krdma}/kernels/RELEASE/ holds, as dpkg would lay
# them out below /:
#   boot/vmlinuz-RELEASE                 what the guests boot
#   lib/modules/RELEASE/                 its modules, depmod run
#   usr/src/linux-headers-RELEASE/       KDIR for building against it
#   usr/src/linux-headers-*-common/, usr/lib/linux-kbuild-*/
# .done is written last.
set -euo pipefail
rel=${1:?usage: kernel-image.sh RELEASE}
case "$rel" in
*/*|.*|"") echo "kernel-image: not a release: $rel" >&2; exit 2 ;;
esac
root=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}/kernels
dir=$root/$rel
mkdir -p "$root"
exec 9>"$root/.lock-$rel"
flock 9
[ -f "$dir/.done" ] && { printf '%s\n' "$dir"; exit 0; }

work=$(mktemp -d "$root/.unpack.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The headers package names its -common and kbuild packages.
deps() {
	apt-cache depends "linux-headers-$rel" 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-headers-[^ ]*-common\|linux-kbuild-[^ ]*\)$/\1/p'
}
pkgs=("linux-image-$rel" "linux-headers-$rel")
mapfile -t more < <(deps)
if [ ${#more[@]} -eq 0 ] && [ "$(id -u)" -eq 0 ]; then
	apt-get update >/dev/null 2>&1 || true
	mapfile -t more < <(deps)
fi
[ ${#more[@]} -ge 2 ] ||
	{ echo "kernel-image: apt knows no linux-headers-$rel (apt-get update?)" >&2; exit 1; }
pkgs+=("${more[@]}")

if ! (cd "$work" && apt-get download "${pkgs[@]}") >"$work/log" 2>&1; then
	cat "$work/log" >&2
	echo "kernel-image: cannot download ${pkgs[*]}" >&2
	exit 1
fi
mkdir "$work/root"
for deb in "$work"/*.deb; do
	dpkg-deb -x "$deb" "$work/root"
done
[ -f "$work/root/boot/vmlinuz-$rel" ] ||
	{ echo "kernel-image: linux-image-$rel has no /boot/vmlinuz-$rel" >&2; exit 1; }
hdr=$work/root/usr/src/linux-headers-$rel
[ -f "$hdr/Makefile" ] || { echo "kernel-image: no headers for $rel" >&2; exit 1; }
# The arch Makefile includes the common one by absolute path: point it
# into the cache (the other links in the tree are relative).
sed -i "s|^include /usr/src/|include $dir/usr/src/|" "$hdr/Makefile"
depmod -b "$work/root" "$rel"

rm -rf -- "$dir"
mv "$work/root" "$dir"
touch "$dir/.done"
printf '%s\n' "$dir"
