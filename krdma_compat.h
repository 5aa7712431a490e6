/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one place for differences between the kernel lines krdma supports
 * (Debian 6.1 and 6.12).  Everything else uses the helpers below.
 */
#ifndef KRDMA_COMPAT_H
#define KRDMA_COMPAT_H

#include <linux/version.h>

#endif /* KRDMA_COMPAT_H */
