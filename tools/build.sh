#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Build krdma (and the kernel modules the lab needs) for one kernel line into
# build/<release>/, so that several kernels can be built from one tree.
#   build.sh 6.1|6.12|debug [EXTRA MAKE ARGS...]
# Prints the build directory on stdout.
#
# Debian's kernels are built without CONFIG_RDMA_SIW, and their rdma_rxe.ko
# lacks the lab's fixes of it, so for those the lab builds siw.ko and
# rdma_rxe.ko out of tree from the matching linux-source package, with the
# lab's fixes of it (tools/kernel-patches/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
line=${1:?usage: build.sh 6.1|6.12|debug [make args]}
shift

rel=$("$here/kver.sh" "$line")
kdir=$("$here/kdir.sh" "$line")
out=$top/build/$rel
mkdir -p "$out"
# One build at a time per release: several lab runs may start together.
exec 9>"$top/build/.lock-$rel"
flock 9

# Symlink farm: kbuild of 6.1 cannot put objects outside M=, so mirror the
# sources into a per-release directory and build there.
find "$out" -type l -delete
for f in "$top"/Kbuild "$top"/*.c "$top"/*.h "$top"/include "$top"/test; do
	[ -e "$f" ] && ln -s "$f" "$out/$(basename "$f")"
done

# Every core: a static (W=1 + sparse) build of krdma alone took 1.5 min
# serially.
jobs=-j$(nproc)
log=$out/build.log
if ! make "$jobs" -C "$kdir" M="$out" "$@" modules >"$log" 2>&1; then
	cat "$log" >&2
	echo "build: krdma failed for $rel" >&2
	exit 1
fi
# Surface compiler warnings even when the build succeeds.
grep -E 'warning:|error:' "$log" >&2 || true

# krdma's allocation call sites, for test/guest/faultsweep.sh (the guest
# has no objdump).
"$here/alloc-sites" "$out/krdma.ko" >"$out/alloc-sites.txt.tmp" &&
	mv -f "$out/alloc-sites.txt.tmp" "$out/alloc-sites.txt"

# The user-space tools the guest tests run (host compiler, see Makefile).
make -s -C "$top" tools >/dev/null

# consumer NAME DIR: an external module in DIR (its Kbuild, *.c, *.h) built
# in $out/NAME against krdma's exported symbols.  Its files are linked
# now, its build is started in the background (each is one to three
# files, which one make cannot spread over the cores: together they took
# 30 s one after another); consumers_wait waits for them all.
consumer_pids=()
consumer() {
	local name=$1 dir=$2 f
	mkdir -p "$out/$name"
	for f in "$dir"/Kbuild "$dir"/*.c "$dir"/*.h; do
		[ -e "$f" ] && ln -sf "$f" "$out/$name/$(basename "$f")"
	done
	consumer_make "$name" &
	consumer_pids+=($!)
}
consumer_make() {
	local name=$1 log=$out/$1/build.log
	# kbuild does not relink a module when the symbols it imports change
	# their CRCs: one built against an older krdma would not load.
	if [ "$out/Module.symvers" -nt "$(ls "$out/$name"/*.ko 2>/dev/null | head -n 1)" ]; then
		make -C "$kdir" M="$out/$name" clean >/dev/null 2>&1 || true
	fi
	if ! make "$jobs" -C "$kdir" M="$out/$name" KBUILD_EXTRA_SYMBOLS="$out/Module.symvers" \
		"${args[@]}" modules >"$log" 2>&1; then
		cat "$log" >&2
		echo "build: $name failed for $rel" >&2
		exit 1
	fi
	grep -E 'warning:|error:' "$log" >&2 || true
}
consumers_wait() {
	local p rc=0
	for p in "${consumer_pids[@]}"; do
		wait "$p" || rc=1
	done
	consumer_pids=()
	[ "$rc" = 0 ] || exit 1
}
args=("$@")

# test/apitest: krdma_apitest.ko, a user of krdma's exported symbols.
consumer apitest "$top/test/apitest"

# test/hostile: krdma_hostile.ko, a peer that speaks rdma_cm and the verbs
# but breaks krdma's protocol (test/guest/hostile.sh); it uses none of
# krdma's symbols.
consumer hostile "$top/test/hostile"

# blk/: krdma_blk.ko, a block device over krdma's exported API; not for a
# kernel without the block layer (CONFIG_BLOCK=n; test/guest/blk.sh skips
# there).
config=$kdir/.config
if grep -q '^CONFIG_BLOCK=y' "$config" 2>/dev/null; then
	consumer blk "$top/blk"
	# test/blkhostile: a krdma-blk client that breaks the protocol
	# (test/guest/blk.sh); it takes the wire format from $out/blk.
	consumer blkhostile "$top/test/blkhostile"
fi

# lab_module NAME SRCDIR CONFIGSYM: build NAME.ko out of tree from the
# matching linux-source package's SRCDIR, with the lab's fixes of it
# (tools/kernel-patches/), into $out/NAME/.  Only for Debian's kernels: the
# debug kernel is built from that patched tree already.  The module does
# not change with krdma: it is kept in the cache, keyed by the source
# package, the patch set (in the tree's name) and the headers it was built
# against (a clean clone, as in CI, saves half a minute of every line's
# first build).  $out/NAME/.key names the cache entry the module there
# came from: a tree whose patch set changed since takes the new one.
lab_module() {
	local name=$1 dir=$2 sym=$3 srcpkg= src ver key cached
	case "$rel" in
	*-krdma-debug*) return 0 ;;
	6.1.*)	srcpkg=linux-source-6.1 ;;
	6.12.*)	srcpkg=linux-source-6.12 ;;
	*)	return 0 ;;
	esac
	ver=$(dpkg-query -W -f='${Version}' "$srcpkg")
	key=$( { cat "$kdir/Module.symvers" "$kdir/.config"
		 echo "$srcpkg $ver $("$here/kernel-src.sh" --patches "$srcpkg")"; } |
		sha256sum | cut -c1-12)
	cached=${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}/$name/$rel-$ver-$key
	[ -f "$out/$name/$name.ko" ] && [ "$(cat "$out/$name/.key" 2>/dev/null)" = "$cached" ] &&
		return 0
	mkdir -p "$(dirname "$cached")"
	exec 8>"$cached.lock"	# clones share the cache
	flock 8
	if [ ! -f "$cached/.done" ]; then
		src=$("$here/kernel-src.sh" "$srcpkg")
		rm -rf "${out:?}/$name" "$cached"
		cp -r "$src/$dir" "$out/$name"
		if ! make "$jobs" -C "$kdir" M="$out/$name" "$sym=m" modules >"$out/$name/build.log" 2>&1; then
			cat "$out/$name/build.log" >&2
			echo "build: $name failed for $rel" >&2
			exit 1
		fi
		mkdir -p "$cached"
		cp "$out/$name/$name.ko" "$out/$name/build.log" "$cached/"
		touch "$cached/.done"
	fi
	mkdir -p "$out/$name"
	cp "$cached/$name.ko" "$cached/build.log" "$out/$name/"
	echo "$cached" >"$out/$name/.key"
	exec 8>&-
}

# Debian's kernels leave siw out: the lab builds it.
grep -q '^CONFIG_RDMA_SIW=[ym]' "$config" 2>/dev/null ||
	lab_module siw drivers/infiniband/sw/siw CONFIG_RDMA_SIW
# Debian's rdma_rxe.ko has bugs krdma's tests meet (tools/kernel-patches/
# README): the lab builds its own from the patched tree, and test/lib.sh
# loads it in place of Debian's.
grep -q '^CONFIG_RDMA_RXE=m' "$config" 2>/dev/null &&
	lab_module rdma_rxe drivers/infiniband/sw/rxe CONFIG_RDMA_RXE

# test/kunit: krdma's KUnit tests, only for a kernel built with KUnit (the
# debug kernel); they #include the tested sources from the farm above.
if grep -q '^CONFIG_KUNIT=y' "$config" 2>/dev/null; then
	mkdir -p "$out/kunit"
	ln -sf "$top/test/kunit/Kbuild" "$top/test/kunit/krdma_kunit.c" "$out/kunit/"
	log=$out/kunit/build.log
	if ! make "$jobs" -C "$kdir" M="$out/kunit" "$@" modules >"$log" 2>&1; then
		cat "$log" >&2
		echo "build: krdma_kunit failed for $rel" >&2
		exit 1
	fi
	grep -E 'warning:|error:' "$log" >&2 || true
fi
consumers_wait
echo "$out"
