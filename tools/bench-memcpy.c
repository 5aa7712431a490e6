// SPDX-License-Identifier: GPL-2.0
/*
 * Memory-copy bandwidth reference for tools/bench: memcpy() between two
 * 64 MiB buffers for about a second, in the guest that runs the RDMA
 * benchmarks.  Prints MiB/s (of bytes copied) on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF	(64u << 20)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0, t0, t;
	char *a = malloc(BUF), *b = malloc(BUF);
	unsigned long long bytes = 0;

	if (!a || !b)
		return 1;
	memset(a, 1, BUF);
	memset(b, 2, BUF);
	t0 = now();
	do {
		memcpy(b, a, BUF);
		bytes += BUF;
		a[bytes % BUF] ^= b[(bytes / 3) % BUF];
		t = now() - t0;
	} while (t < secs);
	printf("%.1f\n", bytes / t / (1 << 20));
	return 0;
}
