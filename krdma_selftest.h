/* SPDX-License-Identifier: GPL-2.0 */
#ifndef KRDMA_SELFTEST_H
#define KRDMA_SELFTEST_H

#include <linux/types.h>
#include "krdma_cmd.h"

struct krdma_conn;

enum {
	ST_SHOW_STATUS,
	ST_SHOW_OPS,
	ST_SHOW_BYTES,
	ST_SHOW_USECS,
	ST_SHOW_LAT_MIN,
	ST_SHOW_LAT_AVG,
	ST_SHOW_LAT_MAX,
};

ssize_t krdma_test_show(struct krdma_conn *conn, int what, char *buf);
void krdma_test_flush(struct krdma_conn *conn);
void krdma_test_free(struct krdma_conn *conn);
int krdma_selftest_init(void);
void krdma_selftest_exit(void);

#endif /* KRDMA_SELFTEST_H */
