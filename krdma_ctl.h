/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control file (krdma_ctl.c): a consumer of krdma, as the self-test
 * (krdma_selftest.c) and the bench (krdma_bench.c) that it drives.
 */
#ifndef KRDMA_CTL_H
#define KRDMA_CTL_H

int krdma_ctl_init(void);
void krdma_ctl_stop(void);
void krdma_ctl_exit(void);

#endif /* KRDMA_CTL_H */
