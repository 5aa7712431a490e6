/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/krdma (krdma_chardev.c): a consumer of include/krdma.h like any
 * other, started and stopped with the module.
 */
#ifndef KRDMA_CHARDEV_H
#define KRDMA_CHARDEV_H

int krdma_chardev_init(void);
void krdma_chardev_exit(void);

#endif /* KRDMA_CHARDEV_H */
