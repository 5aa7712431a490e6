/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the device can honour of a registration's rights, and the verbs
 * access flags they become.  Pure functions, so that KUnit tests every
 * right without a device; the callers print the dmesg line.  The public
 * checks (a token's byte range, an atomic's target, the rights asked for)
 * are in include/krdma.h.
 */
#ifndef KRDMA_TOKEN_H
#define KRDMA_TOKEN_H

#include <linux/errno.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <krdma.h>

/* Valid rights the device can honour: atomics need atomic support. */
static inline int krdma_access_supported(int access, bool dev_atomics)
{
	if ((access & KRDMA_ACCESS_REMOTE_ATOMIC) && !dev_atomics)
		return -EOPNOTSUPP;
	return 0;
}

/*
 * Verbs access flags for valid @access.  Local write is always set: the
 * verbs require it with remote write and remote atomic, and the HCA
 * writes into the region for those (and for an iWARP READ sink).
 */
static inline int krdma_ib_access(int access)
{
	int a = IB_ACCESS_LOCAL_WRITE;

	if (access & KRDMA_ACCESS_REMOTE_READ)
		a |= IB_ACCESS_REMOTE_READ;
	if (access & KRDMA_ACCESS_REMOTE_WRITE)
		a |= IB_ACCESS_REMOTE_WRITE;
	if (access & KRDMA_ACCESS_REMOTE_ATOMIC)
		a |= IB_ACCESS_REMOTE_ATOMIC;
	return a;
}

#endif /* KRDMA_TOKEN_H */
