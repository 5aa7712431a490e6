/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The /sys/kernel/krdma/control command language.  Parsing is a pure
 * function (krdma_cmd.c) so that KUnit can test every form.
 */
#ifndef KRDMA_CMD_H
#define KRDMA_CMD_H

#include <linux/types.h>
#include <linux/socket.h>

enum krdma_cmd_op {
	KRDMA_CMD_LISTEN = 1,
	KRDMA_CMD_UNLISTEN,
	KRDMA_CMD_CONNECT,
	KRDMA_CMD_DISCONNECT,
	KRDMA_CMD_TEST,
	KRDMA_CMD_BENCH,
	KRDMA_CMD_SESSION,
	KRDMA_CMD_UNSESSION,
};

/* Self-test operations (test op=...), a bit mask. */
#define KRDMA_TEST_SEND		0x1
#define KRDMA_TEST_WRITE	0x2
#define KRDMA_TEST_READ		0x4
#define KRDMA_TEST_ATOMIC	0x8
#define KRDMA_TEST_IMM		0x10	/* RDMA WRITE with immediate */
/* The bench's atomics, one kind each (the self-test's op=atomic does both). */
#define KRDMA_TEST_FADD		0x20
#define KRDMA_TEST_CAS		0x40
#define KRDMA_TEST_ALL		0x7	/* atomics only when asked for */

#define KRDMA_TEST_MAX_SIZE	(64u << 20)
#define KRDMA_TEST_MAX_COUNT	1000000u
#define KRDMA_TEST_MAX_SGE	64u

/* bench: count=N is up to this; secs=N up to an hour. */
#define KRDMA_BENCH_MAX_COUNT	1000000000u
#define KRDMA_BENCH_MAX_SECS	3600u
/* bench sge=N stride=S: the blocks' span, (N - 1) * S + size, up to this. */
#define KRDMA_BENCH_MAX_SPAN	(4u << 20)

/*
 * A name given to a new listener or connection is 1-31 characters; names
 * that krdma makes from one (a listener's accepted connections, NAME.<n>)
 * may be longer, and every command that names an object takes those too.
 */
#define KRDMA_NEW_NAME_MAX	32
/* vector=N: at most this N (devices have far fewer). */
#define KRDMA_CMD_MAX_VECTOR	1023
#define KRDMA_NAME_MAX		48

struct krdma_cmd {
	enum krdma_cmd_op	op;
	char			name[KRDMA_NAME_MAX];
	struct sockaddr_storage	addr;
	struct sockaddr_storage	src;
	bool			has_src;
	u32			depth;
	u32			msg;
	u32			timeout_ms;
	u32			tos;
	u32			hello;		/* test hook, see krdma_conn.c */
	u32			test_ops;
	u32			size;
	u32			count;
	u32			sge;
	u32			secs;		/* bench */
	u32			batch;		/* bench */
	u32			stride;		/* bench, with sge */
	u32			pack;		/* bench, with sge */
	u32			backlog;	/* listen */
	u32			hb_ms;		/* heartbeat, listen/connect */
	u32			hb_misses;
	u32			delay_ms;	/* session */
	u32			loss_tmo_ms;	/* session */
	u32			conns;		/* session: opts.nr_conns */
	u32			poll;		/* connect/session: opts.poll */
	u32			wq;		/* opts.workqueue */
	u32			vector;		/* opts.comp_vector */
};

int krdma_cmd_parse(const char *buf, size_t len, struct krdma_cmd *cmd,
		    char *err, size_t errlen);
const char *krdma_cmd_verb(enum krdma_cmd_op op);
extern const char krdma_cmd_usage[];

#endif /* KRDMA_CMD_H */
