/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma benchmark engine (krdma_bench.c), driven by the control file's
 * "bench" verb; results in conns/<name>/bench_*.
 */
#ifndef KRDMA_BENCH_H
#define KRDMA_BENCH_H

#include <linux/types.h>

struct krdma_ctl_conn;
struct krdma_cmd;
struct krdma_token;

enum {
	KB_SHOW_STATUS,
	KB_SHOW_OPS,
	KB_SHOW_BYTES,
	KB_SHOW_USECS,
	KB_SHOW_BW,
	KB_SHOW_RATE,
	KB_SHOW_LAT_MIN,
	KB_SHOW_LAT_P50,
	KB_SHOW_LAT_P99,
	KB_SHOW_LAT_MAX,
};

int krdma_bench_start(struct krdma_ctl_conn *ctl, const struct krdma_cmd *cmd);
ssize_t krdma_bench_show(struct krdma_ctl_conn *ctl, int what, char *buf);
void krdma_bench_flush(struct krdma_ctl_conn *ctl);
void krdma_bench_free(struct krdma_ctl_conn *ctl);
int krdma_bench_init(void);
void krdma_bench_exit(void);

/* krdma_selftest.c: the peer's service thread exposes memory for us */
int krdma_peer_expose(struct krdma_ctl_conn *ctl, u64 len, int access,
		      bool sink, struct krdma_token *tok);
int krdma_peer_sunk(struct krdma_ctl_conn *ctl, u64 *count);
void krdma_peer_unexpose(struct krdma_ctl_conn *ctl);

#endif /* KRDMA_BENCH_H */
