# SPDX-License-Identifier: GPL-2.0
# krdma out-of-tree build, and the lab's entry points.
#
#   make                    build krdma.ko (and tools) for KDIR
#   make KVER=6.1|6.12|R    build against that Debian kernel line/release
#   make check              every test, both kernel lines (see README)
#   make demo               two guests, rxe, krdma moving data A <-> B
#   make bench              benchmarks against perftest
#   make shell KVER=6.12    interactive lab guest with krdma built
#   make clean

ifneq ($(KVER),)
KDIR ?= $(shell tools/kdir.sh $(KVER))
else
KDIR ?= $(shell tools/kdir.sh)
endif

all: modules

modules:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

check:
	tools/check

demo:
	tools/demo

shell:
	tools/guest-run --kernel $(or $(KVER),6.12) --ip 10.10.1.1 --shell

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) clean 2>/dev/null || true
	rm -rf build

.PHONY: all modules check demo bench shell clean
