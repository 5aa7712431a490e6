/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma: work completion fault injection, per connection
 * (conns/NAME/inject; krdma_inject.c).
 */
#ifndef KRDMA_INJECT_H
#define KRDMA_INJECT_H

#include <linux/spinlock.h>
#include <linux/compiler.h>
#include <rdma/ib_verbs.h>

struct krdma_conn;

/* The completions an injection may hit (op= in conns/NAME/inject). */
#define KRDMA_INJ_SEND		BIT(0)	/* messages, credit messages */
#define KRDMA_INJ_RECV		BIT(1)	/* receives */
#define KRDMA_INJ_RDMA		BIT(2)	/* RDMA WRITE/READ, write-with-imm */
#define KRDMA_INJ_ATOMIC	BIT(3)	/* fetch-add, compare-swap */
#define KRDMA_INJ_REG		BIT(4)	/* REG_MR and LOCAL_INV */
#define KRDMA_INJ_HB		BIT(5)	/* heartbeat sends */
#define KRDMA_INJ_ANY		(BIT(6) - 1)

enum krdma_inj_state {
	KRDMA_INJ_OFF,
	KRDMA_INJ_ARMED,	/* the next chosen completion fails */
	KRDMA_INJ_FIRED,	/* it did: every later one is flushed */
};

struct krdma_inject {
	spinlock_t		lock;		/* the rest; any context, irqsave */
	u8			state;		/* enum krdma_inj_state */
	u8			ops;		/* KRDMA_INJ_* */
	enum ib_wc_status	status;
	u32			nth;		/* 1: the next one */
	u32			percent;	/* or each with this chance */
	bool			drop_hb;	/* heartbeats received: ignored */
};

void krdma_inject_init(struct krdma_inject *inj);
void __krdma_inject_wc(struct krdma_conn *conn, struct krdma_inject *inj,
		       struct ib_wc *wc, unsigned int op);
ssize_t krdma_inject_show(struct krdma_inject *inj, char *buf);
int krdma_inject_store(struct krdma_conn *conn, struct krdma_inject *inj,
		       const char *buf);

/*
 * First thing in each completion handler of a connection: an armed
 * injection may turn this successful completion into a failure with the
 * chosen status; once one did, every later one of the connection is
 * flushed, as on a QP the device moved to ERROR.  Any context.
 */
static inline void krdma_inject_wc(struct krdma_conn *conn,
				   struct krdma_inject *inj,
				   struct ib_wc *wc, unsigned int op)
{
	if (unlikely(READ_ONCE(inj->state) != KRDMA_INJ_OFF))
		__krdma_inject_wc(conn, inj, wc, op);
}

/*
 * A heartbeat came: true if it is to be ignored, as if lost on the wire
 * (neither a sign of life nor answered).  Any context.
 */
static inline bool krdma_inject_drop_hb(struct krdma_inject *inj)
{
	return unlikely(READ_ONCE(inj->drop_hb));
}

#endif /* KRDMA_INJECT_H */
