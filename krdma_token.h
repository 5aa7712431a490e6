/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Checks on what a token allows: the byte range of a one-sided access, the
 * target of an atomic, the rights of a registration and the verbs access
 * flags they become.  Pure functions, so that KUnit tests the corner cases
 * (offsets near U64_MAX, the last byte, every right) without a device; the
 * callers print the dmesg line.
 */
#ifndef KRDMA_TOKEN_H
#define KRDMA_TOKEN_H

#include <linux/errno.h>
#include <linux/types.h>
#include <rdma/ib_verbs.h>
#include <krdma.h>

#define KRDMA_ACCESS_ALL	(KRDMA_ACCESS_REMOTE_READ |		\
				 KRDMA_ACCESS_REMOTE_WRITE |		\
				 KRDMA_ACCESS_REMOTE_ATOMIC)

/*
 * Is [offset, offset + len) inside a region of @length bytes?  Written so
 * that nothing overflows: offset + len may not fit 64 bits.  An empty
 * access at the very end is inside; callers refuse empty transfers
 * themselves.  Returns 0 or -ERANGE.
 */
static inline int krdma_token_range(u32 length, u64 offset, u64 len)
{
	if (offset > length || len > length - offset)
		return -ERANGE;
	return 0;
}

/*
 * An atomic works on the 8 bytes at @offset in the token: they must lie
 * inside it (-ERANGE) and be naturally aligned in the peer's address space,
 * which is the token's address plus the offset (-EINVAL).
 */
static inline int krdma_atomic_target(const struct krdma_token *t,
				      u64 offset)
{
	if (krdma_token_range(t->length, offset, sizeof(u64)))
		return -ERANGE;
	if ((t->addr + offset) & (sizeof(u64) - 1))
		return -EINVAL;
	return 0;
}

/* Rights for a registration: at least one, and only known ones. */
static inline int krdma_access_valid(int access)
{
	if (!access || (access & ~KRDMA_ACCESS_ALL))
		return -EINVAL;
	return 0;
}

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
