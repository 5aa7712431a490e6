# SPDX-License-Identifier: GPL-2.0
# krdma out-of-tree build, and the lab's entry points.
#
#   make                    build krdma.ko (and tools) for the running kernel
#                           (never another one: stops without its headers)
#   make KVER=6.1|6.12|R    build against that lab kernel line/release
#   make install            modules_install + depmod for the running kernel
#   make check              every test, both kernel lines (see HACKING)
#   make demo               two guests, rxe, krdma moving data A <-> B
#   make bench              benchmarks against perftest and nvme-rdma
#   make shell KVER=6.12    interactive lab guest with krdma built
#   make clean

ifneq ($(KVER),)
KDIR ?= $(shell tools/kdir.sh $(KVER))
else
KDIR ?= $(shell tools/kdir.sh)
endif

all: modules tools

modules:
	@test -n "$(KDIR)" || { echo "make: no kernel build directory (see above)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# User-space tools, with the host compiler: the CLI and the ioctl test
# program the guest tests run.  Built to a temporary name and renamed, so
# that concurrent builds never leave a half-written binary.
TOOLS_CFLAGS := -Wall -Wextra -O2 -I$(CURDIR)/include/uapi
TOOLS := tools/krdmactl build/test/ioctl_fuzz

tools: $(TOOLS)

tools/krdmactl: tools/krdmactl.c include/uapi/linux/krdma.h
	$(CC) $(TOOLS_CFLAGS) -o $@.tmp$$$$ $< && mv -f $@.tmp$$$$ $@

build/test/ioctl_fuzz: test/ioctl_fuzz.c include/uapi/linux/krdma.h
	@mkdir -p $(dir $@)
	$(CC) $(TOOLS_CFLAGS) -pthread -o $@.tmp$$$$ $< && mv -f $@.tmp$$$$ $@

# On a host: the module into /lib/modules/RELEASE/updates, then depmod, so
# that "modprobe krdma" finds it (DKMS does the same for every kernel).
# RELEASE is UTS_RELEASE: Debian's headers say "6.1.192" for kernelrelease.
install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	depmod $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) -a \
		$$(sed -n 's/^#define UTS_RELEASE "\(.*\)"$$/\1/p' \
			$(KDIR)/include/generated/utsrelease.h)

check:
	tools/check

stress:
	tools/stress

demo:
	tools/demo

bench:
	tools/bench

shell:
	tools/guest-run --kernel $(or $(KVER),6.12) --ip 10.10.1.1 --shell

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -rf build tools/krdmactl

.PHONY: all modules tools install check stress demo bench shell clean
