/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma: work completion fault injection, per connection
 * (conns/NAME/inject; krdma_inject.c).
 */
#ifndef KRDMA_INJECT_H
#define KRDMA_INJECT_H

#include <linux/spinlock.h>
#include <linux/mutex.h>
#include <linux/timer.h>
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

/* The longest delay= (ms). */
#define KRDMA_INJ_DELAY_MAX	10000

/* A completion held back by delay= (a copy: the CQ's array is reused). */
struct krdma_inj_wc {
	struct ib_wc		wc;
	struct ib_cq		*cq;
	unsigned long		due;		/* jiffies */
};

struct krdma_inject {
	struct mutex		mutex;		/* writers (store, teardown) */
	spinlock_t		lock;		/* the rest; any context, irqsave */
	u8			state;		/* enum krdma_inj_state */
	u8			ops;		/* KRDMA_INJ_* */
	enum ib_wc_status	status;
	u32			nth;		/* 1: the next one */
	u32			percent;	/* or each with this chance */
	bool			drop_hb;	/* heartbeats received: ignored */

	/*
	 * delay=: completions held back, in arrival order, in a ring sized
	 * for every completion the connection can have outstanding (its
	 * share of the CQ), allocated by the first delay= write.
	 */
	u32			delay_ms;	/* 0: none is delayed any more */
	u32			seen;		/* of the kinds, since the last one */
	struct krdma_inj_wc	*dq;
	u32			dq_size, dq_head, dq_len;
	bool			dq_on;		/* delay_ms, dq_len or busy */
	bool			busy;		/* one is delivering the queue */
	bool			flushing;	/* all go now: the timer keeps off */
	bool			closed;		/* torn down: no delay= any more */
	struct ib_wc		*cur;		/* being delivered: let through */
	u64			delayed;	/* completions delayed so far */
	struct timer_list	timer;		/* the head is due */
};

void krdma_inject_init(struct krdma_inject *inj);
void krdma_inject_drain(struct krdma_inject *inj);
void krdma_inject_free(struct krdma_inject *inj);
bool __krdma_inject_wc(struct krdma_conn *conn, struct krdma_inject *inj,
		       struct ib_cq *cq, struct ib_wc *wc, unsigned int op);
ssize_t krdma_inject_show(struct krdma_inject *inj, char *buf);
int krdma_inject_store(struct krdma_conn *conn, struct krdma_inject *inj,
		       const char *buf);

/*
 * First thing in each completion handler of a connection (@op: its
 * KRDMA_INJ_* kind, 0 for one that is never chosen itself).  An armed
 * injection may turn this successful completion into a failure with the
 * chosen status; once one did, every later one of the connection is
 * flushed, as on a QP the device moved to ERROR.  With delay= it may
 * hold the completion back: true then, and the handler returns at once;
 * krdma_inject.c calls it again later with a copy of @wc (for which this
 * returns false).  Softirq (the CQ's context) or with bottom halves off.
 */
static inline bool __must_check krdma_inject_wc(struct krdma_conn *conn,
						struct krdma_inject *inj,
						struct ib_cq *cq,
						struct ib_wc *wc,
						unsigned int op)
{
	if (unlikely(READ_ONCE(inj->state) != KRDMA_INJ_OFF ||
		     READ_ONCE(inj->dq_on)))
		return __krdma_inject_wc(conn, inj, cq, wc, op);
	return false;
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
