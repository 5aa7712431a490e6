/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KRDMA_SELFTEST_H
#define KRDMA_SELFTEST_H

#include <linux/types.h>
#include "krdma_cmd.h"

struct krdma_ctl_conn;

enum {
	ST_SHOW_STATUS,
	ST_SHOW_OPS,
	ST_SHOW_BYTES,
	ST_SHOW_USECS,
	ST_SHOW_LAT_MIN,
	ST_SHOW_LAT_AVG,
	ST_SHOW_LAT_MAX,
};

int krdma_test_start(struct krdma_ctl_conn *ctl, u32 ops, u32 size,
		     u32 count, u32 sge, u32 timeout_ms);
ssize_t krdma_test_show(struct krdma_ctl_conn *ctl, int what, char *buf);
void krdma_test_flush(struct krdma_ctl_conn *ctl);
void krdma_test_free(struct krdma_ctl_conn *ctl);
int krdma_svc_recv(struct krdma_conn *conn, struct krdma_msg *msg);
int krdma_svc_start(struct krdma_ctl_conn *ctl);
void krdma_svc_stop(struct krdma_ctl_conn *ctl);
void krdma_svc_disable(void);
int krdma_selftest_init(void);
void krdma_selftest_exit(void);

#endif /* KRDMA_SELFTEST_H */
