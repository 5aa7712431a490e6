/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The self-test's data pattern (krdma_pattern.c): byte @pos of stream
 * @seed, the same on both sides of a connection.
 */
#ifndef KRDMA_PATTERN_H
#define KRDMA_PATTERN_H

#include <linux/types.h>

void krdma_pattern_fill(void *buf, size_t len, u64 seed, u64 pos);
s64 krdma_pattern_check(const void *buf, size_t len, u64 seed, u64 pos);

#endif /* KRDMA_PATTERN_H */
