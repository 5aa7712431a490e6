// SPDX-License-Identifier: GPL-2.0
/*
 * The self-test's data pattern (krdma_selftest.c): what its messages carry
 * and what it writes, reads and checks in the regions its peer exposes.
 * A pure function of (seed, position), so that each side checks what the
 * other wrote without sending it, and KUnit tests it without a device.
 */
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/types.h>

#include "krdma_pattern.h"

/*
 * Test pattern: byte @pos of stream @seed.  A hash of (seed, pos / 4), so
 * that a misplaced, duplicated or stale block never matches by accident.
 */
static u32 krdma_pattern_word(u64 seed, u64 word)
{
	u32 x = (u32)seed * 0x9e3779b1u ^ (u32)(seed >> 32) ^
		(u32)word * 0x85ebca77u ^ (u32)(word >> 32);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	x *= 0x297a2d39u;
	x ^= x >> 15;
	return x;
}

static u8 krdma_pattern_byte(u64 seed, u64 pos)
{
	return krdma_pattern_word(seed, pos >> 2) >> ((pos & 3) * 8);
}

/* Fill @len bytes with the pattern from stream position @pos on. */
void krdma_pattern_fill(void *buf, size_t len, u64 seed, u64 pos)
{
	u8 *p = buf;
	size_t i = 0;

	for (; i < len && ((pos + i) & 3); i++)
		p[i] = krdma_pattern_byte(seed, pos + i);
	for (; i + 4 <= len; i += 4) {
		u32 w = krdma_pattern_word(seed, (pos + i) >> 2);

		p[i] = w;
		p[i + 1] = w >> 8;
		p[i + 2] = w >> 16;
		p[i + 3] = w >> 24;
	}
	for (; i < len; i++)
		p[i] = krdma_pattern_byte(seed, pos + i);
}

/* Stream position of the first byte that differs, or -1 if none does. */
s64 krdma_pattern_check(const void *buf, size_t len, u64 seed, u64 pos)
{
	const u8 *p = buf;
	u8 want[128];
	size_t i = 0, n, j;

	while (i < len) {
		n = min_t(size_t, len - i, sizeof(want));
		krdma_pattern_fill(want, n, seed, pos + i);
		if (memcmp(p + i, want, n)) {
			for (j = 0; p[i + j] == want[j]; j++)
				;
			return pos + i + j;
		}
		i += n;
	}
	return -1;
}
