#!/usr/bin/env bash
# Build (once) and cache the krdma debug kernel for the qemu test lab.
#
# Source: the installed Debian package linux-source-6.12, unpacked once by
#         tools/kernel-src.sh (checkpatch and the 6.12 siw build share it).
# Config: `make tinyconfig` (x86_64) + test/debug-kernel.config, then olddefconfig; every
#         fragment line is checked against the final .config.
# Patches: the lab's fixes of that source, tools/kernel-patches/linux-source-6.12/
#         (applied by tools/kernel-src.sh; README there).
# Cache:  ${KRDMA_CACHE:-$HOME/.cache/krdma}/debug-kernel/<source-version>-<sha256(options):12>[-p<patches>]/
#         (options: the fragment's lines but comments and blank ones)
#           bzImage   kernel image for qemu -kernel
#           build/    O= build tree, usable as KDIR (make -C build M=/path/to/module modules);
#                     it refers to the source tree of tools/kernel-src.sh
#           modules/  INSTALL_MOD_PATH: modules/lib/modules/<release>/, depmod done
#           release   kernelrelease string
#           build.log full build log
#           .done     written last
# Only the newest cache dir is kept. Stdout: the cache dir path, nothing else.
#
# KRDMA_DEBUG_EXTRA="CONFIG_A=y CONFIG_B=y": a variant with these options on
# top of the fragment (make stress's kobject-release lane).  Its cache dir
# is its own (the options' hash covers them), its release ends in
# -x<hash> so that krdma's builds for it go apart; a variant's build
# prunes nothing, and a standard build keeps the variants it finds built.
#
# Usage: tools/debug-kernel.sh              build if needed, print the dir
#        tools/debug-kernel.sh --print-dir  print the dir, exit 1 if not built
set -euo pipefail

readonly SRC_PKG=linux-source-6.12
readonly ARCH=x86_64
readonly JOBS=3

say() { printf 'debug-kernel: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

print_only=0
case "${1:-}" in
  "") ;;
  --print-dir) print_only=1 ;;
  -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
  *) die "unknown argument: $1 (try --help)" ;;
esac
[[ $# -le 1 ]] || die "too many arguments"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
frag="$repo/test/debug-kernel.config"
[[ -f $frag ]] || die "missing fragment $frag"

src_ver=$(dpkg-query -W -f='${Version}' "$SRC_PKG" 2>/dev/null) ||
  die "package $SRC_PKG is not installed (apt-get install $SRC_PKG)"
[[ -n $src_ver ]] || die "package $SRC_PKG is not installed"
extra=()
for o in ${KRDMA_DEBUG_EXTRA:-}; do
  [[ $o =~ ^CONFIG_[A-Za-z0-9_]+=[^[:space:]]+$ ]] || die "KRDMA_DEBUG_EXTRA: not an option: '$o'"
  extra+=("$o")
done
if (( ${#extra[@]} )); then
  lv=$(sed -n 's/^CONFIG_LOCALVERSION="\(.*\)"$/\1/p' "$frag")
  extra+=("CONFIG_LOCALVERSION=\"$lv-x$(printf '%s\n' "${extra[@]}" | sha256sum | cut -c1-8)\"")
fi
# The options only: a comment changed in the fragment builds no new kernel.
frag_hash=$( { sed -e '/^# CONFIG_[A-Za-z0-9_]* is not set$/b' -e '/^[[:space:]]*#/d' \
  -e '/^[[:space:]]*$/d' "$frag"; (( ${#extra[@]} == 0 )) || printf '%s\n' "${extra[@]}"; } |
  sha256sum | cut -c1-12)
# Debian versions may carry an epoch ("1:") or other odd characters: keep the path plain.
# The lab's fixes of that source (tools/kernel-patches/) are in the key:
# -pHASH, as in tools/kernel-src.sh's tree.
key=$(printf '%s' "$src_ver" | tr -c 'A-Za-z0-9.+~_-' '_')-$frag_hash$("$repo/tools/kernel-src.sh" --patches "$SRC_PKG")

root="${KRDMA_CACHE:-${HOME:?HOME is not set}/.cache/krdma}/debug-kernel"
dir="$root/$key"

if (( print_only )); then
  [[ -f $dir/.done ]] || { say "not built: $dir"; exit 1; }
  printf '%s\n' "$dir"
  exit 0
fi

mkdir -p "$root"
# One builder at a time; a second caller waits, then finds .done.
exec 9>"$root/.lock"
flock 9

prune() {
  local d
  (( ${#extra[@]} == 0 )) || return 0
  for d in "$root"/*/; do
    d=${d%/}
    [[ -d $d && $d != "$dir" ]] || continue
    # A variant stays, for make stress's next run; one left unfinished
    # goes.
    [[ -f $d/variant && -f $d/.done ]] && continue
    say "removing old build $d"
    rm -rf -- "$d"
  done
}

if [[ -f $dir/.done ]]; then
  prune
  printf '%s\n' "$dir"
  exit 0
fi

for tool in make gcc bc bison flex xz depmod perl; do
  command -v "$tool" >/dev/null || die "missing build tool: $tool"
done

mkdir -p "$dir"
(( ${#extra[@]} == 0 )) || printf '%s\n' "${extra[@]}" >"$dir/variant"
log="$dir/build.log"
obj="$dir/build"
start=$SECONDS
: >"$log"

# run STEP-NAME CMD...: output to the log; on failure show its tail and stop.
run() {
  local what=$1; shift
  say "$what"
  printf '\n### %s: %s\n' "$what" "$*" >>"$log"
  if ! "$@" >>"$log" 2>&1; then
    say "FAILED: $what; last lines of $log:"
    tail -n 40 "$log" >&2
    exit 1
  fi
}

say "unpacking $SRC_PKG $src_ver (once, shared)"
src=$("$repo/tools/kernel-src.sh" "$SRC_PKG") || die "cannot unpack $SRC_PKG"

kmake() { make -C "$src" O="$obj" ARCH="$ARCH" "$@"; }

mkdir -p "$obj"
run "configuring: tinyconfig + $frag" kmake tinyconfig
if (( ${#extra[@]} )); then
  # The variant's release replaces the fragment's.
  grep -v '^CONFIG_LOCALVERSION=' "$frag" >"$dir/fragment.config"
  printf '%s\n' "${extra[@]}" >>"$dir/fragment.config"
else
  cp "$frag" "$dir/fragment.config"
fi
run "merging fragment" \
  "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$dir/fragment.config"
run "olddefconfig" kmake olddefconfig

# Every fragment line must survive olddefconfig unchanged.
bad=0
while IFS= read -r line; do
  if [[ $line =~ ^(CONFIG_[A-Za-z0-9_]+)=(.*)$ ]]; then
    sym=${BASH_REMATCH[1]}
    grep -qxF -- "$line" "$obj/.config" && continue
    got=$(grep -E "^(# )?$sym[= ]" "$obj/.config" || true)
  elif [[ $line =~ ^#\ (CONFIG_[A-Za-z0-9_]+)\ is\ not\ set$ ]]; then
    sym=${BASH_REMATCH[1]}
    grep -qE "^$sym=" "$obj/.config" || continue
    got=$(grep -E "^$sym=" "$obj/.config")
  else
    continue
  fi
  say "fragment option not in final .config: want '$line', got '${got:-<absent>}'"
  bad=1
done <"$dir/fragment.config"
(( bad == 0 )) || die "fragment options were dropped by olddefconfig (missing dependencies?)"

run "building bzImage and modules with -j$JOBS (log: $log)" kmake -j"$JOBS" bzImage modules
release=$(kmake -s kernelrelease 2>>"$log")
[[ -n $release ]] || die "empty kernelrelease"
rm -rf -- "$dir/modules"
run "installing modules ($release)" \
  kmake INSTALL_MOD_PATH="$dir/modules" modules_install
[[ -f $dir/modules/lib/modules/$release/modules.dep ]] || die "depmod output missing"
cp "$obj/arch/x86/boot/bzImage" "$dir/bzImage"
printf '%s\n' "$release" >"$dir/release"
touch "$dir/.done"
say "built $release in $(( (SECONDS - start) / 60 ))m$(( (SECONDS - start) % 60 ))s"

prune
printf '%s\n' "$dir"
