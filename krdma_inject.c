// SPDX-License-Identifier: GPL-2.0
/*
 * krdma: work completion fault injection, per connection.
 *
 * rxe and siw cannot fail a work completion with a chosen status, so a
 * consumer's recovery from a remote access error, a retry or RNR retry
 * exceeded, a local protection error... cannot be tested on them.  krdma
 * can: conns/NAME/inject makes the Nth (or a random share of the)
 * successful completions of chosen kinds on one connection fail with a
 * chosen status.  The connection then goes the way a device's report
 * would take it: the completion's handler sees the status (its one dmesg
 * line names it, its operation fails with krdma_wc_errno()'s errno, the
 * connection records it as its error and wc_status), every later
 * completion of the connection is flushed, as on a QP in ERROR, and the
 * QP is moved to ERROR and drained in a work item, so the peer is told.
 *
 * The grammar of the file (one line):
 *	off
 *	STATUS [op=KIND[,KIND...]] [nth=N | percent=P]
 *	delay=MS [op=KIND[,KIND...]] [nth=N | percent=P]
 *	drop_hb
 * STATUS: the IB_WC_ name in lower case without "ib_wc_" (rem_access_err,
 * retry_exc_err, ...) or its number; KIND: send, recv, rdma, atomic,
 * reg, hb, any (default any); nth=N: the Nth completion of those kinds
 * from now (default 1); percent=P: each with a chance of P in 100.
 * drop_hb: every heartbeat received from now on is ignored, as if lost
 * (not a sign of life, not answered): after the agreed misses the
 * connection fails with -ETIMEDOUT, as for a peer gone silent.
 * Reading it says "off", or the injection and "armed" or "fired".
 *
 * delay=MS (1..10000), a slow peer: every successful completion of those
 * kinds (every Nth with nth=N, a share with percent=P) reaches its handler
 * MS ms late (at least MS; at most a jiffy and the timer's latency
 * more).  Order is kept: while one is held back, every later completion
 * of the connection (any kind, any status) queues behind it,
 * as the credits and the message protocol need.  The queue is a ring
 * allocated by the write, sized for every completion the connection can
 * have outstanding (its share of the CQ, conn->cq_size): the completion
 * path allocates nothing.  A timer delivers what is due: the handlers run
 * in softirq context, as from the CQ's own polling (IB_POLL_SOFTIRQ).
 * Any other line, krdma moving the QP to ERROR (a device flushes what it
 * has not done then), and teardown right after ib_drain_qp() (before the
 * buffers, ops and MRs the completions point to are freed) deliver
 * what is queued at once, in order, as it was (with bottom halves off,
 * from process context).  ib_drain_qp()'s own drain completion has its
 * own handler, not one of krdma's, and is never held: it comes after the
 * QP's last real completion, so what is queued then is all there is.
 */

#define pr_fmt(fmt) "krdma: " fmt

#include <linux/kernel.h>
#include <linux/bottom_half.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "krdma_core.h"
#include "krdma_inject.h"

static const char * const krdma_inj_status[] = {
	[IB_WC_LOC_LEN_ERR]		= "loc_len_err",
	[IB_WC_LOC_QP_OP_ERR]		= "loc_qp_op_err",
	[IB_WC_LOC_EEC_OP_ERR]		= "loc_eec_op_err",
	[IB_WC_LOC_PROT_ERR]		= "loc_prot_err",
	[IB_WC_WR_FLUSH_ERR]		= "wr_flush_err",
	[IB_WC_MW_BIND_ERR]		= "mw_bind_err",
	[IB_WC_BAD_RESP_ERR]		= "bad_resp_err",
	[IB_WC_LOC_ACCESS_ERR]		= "loc_access_err",
	[IB_WC_REM_INV_REQ_ERR]		= "rem_inv_req_err",
	[IB_WC_REM_ACCESS_ERR]		= "rem_access_err",
	[IB_WC_REM_OP_ERR]		= "rem_op_err",
	[IB_WC_RETRY_EXC_ERR]		= "retry_exc_err",
	[IB_WC_RNR_RETRY_EXC_ERR]	= "rnr_retry_exc_err",
	[IB_WC_LOC_RDD_VIOL_ERR]	= "loc_rdd_viol_err",
	[IB_WC_REM_INV_RD_REQ_ERR]	= "rem_inv_rd_req_err",
	[IB_WC_REM_ABORT_ERR]		= "rem_abort_err",
	[IB_WC_INV_EECN_ERR]		= "inv_eecn_err",
	[IB_WC_INV_EEC_STATE_ERR]	= "inv_eec_state_err",
	[IB_WC_FATAL_ERR]		= "fatal_err",
	[IB_WC_RESP_TIMEOUT_ERR]	= "resp_timeout_err",
	[IB_WC_GENERAL_ERR]		= "general_err",
};

static const char * const krdma_inj_kinds[] = {
	"send", "recv", "rdma", "atomic", "reg", "hb",
};

static void krdma_inj_timer(struct timer_list *t);

void krdma_inject_init(struct krdma_inject *inj)
{
	mutex_init(&inj->mutex);
	spin_lock_init(&inj->lock);
	inj->state = KRDMA_INJ_OFF;
	timer_setup(&inj->timer, krdma_inj_timer, 0);
}

/* With inj->lock. */
static void krdma_inj_update_on(struct krdma_inject *inj)
{
	WRITE_ONCE(inj->dq_on, inj->delay_ms || inj->dq_len || inj->busy);
}

/* With inj->lock: whether this completion of the kinds is delayed. */
static bool krdma_inj_pick(struct krdma_inject *inj)
{
	if (inj->percent)
		return get_random_u32() % 100 < inj->percent;
	if (++inj->seen < inj->nth)
		return false;
	inj->seen = 0;
	return true;
}

/*
 * delay=: hold @wc back if it is chosen, or if one is queued or being
 * delivered (so that it cannot overtake it).  True if it was.
 */
static bool krdma_inj_hold(struct krdma_conn *conn, struct krdma_inject *inj,
			   struct ib_cq *cq, struct ib_wc *wc,
			   unsigned int op)
{
	unsigned long flags, delay = 0;
	struct krdma_inj_wc *e;
	bool held = false;

	/* The copy krdma_inj_run() hands on: its turn came. */
	if (wc == READ_ONCE(inj->cur))
		return false;
	spin_lock_irqsave(&inj->lock, flags);
	/* A jiffy more: now may be late in its tick, and MS is a minimum. */
	if (inj->delay_ms && wc->status == IB_WC_SUCCESS && (inj->ops & op) &&
	    krdma_inj_pick(inj))
		delay = msecs_to_jiffies(inj->delay_ms) + 1;
	if (!delay && !inj->dq_len && !inj->busy)
		goto out;
	if (inj->dq_len == inj->dq_size) {
		/*
		 * Cannot be: every completion the connection can have
		 * outstanding has a slot.  Handled now, out of order, loud.
		 */
		spin_unlock_irqrestore(&inj->lock, flags);
		WARN_ONCE(1, "krdma: %s: inject: delay queue of %u full\n",
			  conn->name, inj->dq_size);
		return false;
	}
	e = &inj->dq[(inj->dq_head + inj->dq_len) % inj->dq_size];
	e->wc = *wc;
	e->cq = cq;
	e->due = jiffies + delay;
	if (delay)
		inj->delayed++;
	/* Else the timer is set for the head already, or busy sets it. */
	if (!inj->dq_len++ && !inj->busy && !inj->flushing)
		mod_timer(&inj->timer, e->due);
	krdma_inj_update_on(inj);
	held = true;
out:
	spin_unlock_irqrestore(&inj->lock, flags);
	return held;
}

/*
 * The one deliverer (inj->busy, set by the caller): hand the queued
 * completions to their handlers in order, all of them or those due, then
 * set the timer for the next.  Softirq, or bottom halves off.
 */
static void krdma_inj_run(struct krdma_inject *inj, bool all)
{
	struct krdma_inj_wc e;
	unsigned long flags;

	spin_lock_irqsave(&inj->lock, flags);
	while (inj->dq_len &&
	       (all || time_after_eq(jiffies, inj->dq[inj->dq_head].due))) {
		e = inj->dq[inj->dq_head];
		inj->dq_head = (inj->dq_head + 1) % inj->dq_size;
		inj->dq_len--;
		WRITE_ONCE(inj->cur, &e.wc);
		spin_unlock_irqrestore(&inj->lock, flags);
		e.wc.wr_cqe->done(e.cq, &e.wc);
		spin_lock_irqsave(&inj->lock, flags);
	}
	WRITE_ONCE(inj->cur, NULL);
	inj->busy = false;
	if (inj->dq_len && !inj->flushing)
		mod_timer(&inj->timer, inj->dq[inj->dq_head].due);
	krdma_inj_update_on(inj);
	spin_unlock_irqrestore(&inj->lock, flags);
}

/* Softirq: the head of the queue is due. */
static void krdma_inj_timer(struct timer_list *t)
{
	struct krdma_inject *inj = from_timer(inj, t, timer);
	unsigned long flags;

	spin_lock_irqsave(&inj->lock, flags);
	if (inj->busy || inj->flushing) {
		spin_unlock_irqrestore(&inj->lock, flags);
		return;
	}
	inj->busy = true;
	spin_unlock_irqrestore(&inj->lock, flags);
	krdma_inj_run(inj, false);
}

/*
 * No more delays; what is queued goes to its handlers now, in order, as
 * it came.  With inj->mutex; process context.
 */
static void krdma_inj_flush(struct krdma_inject *inj, bool close)
{
	unsigned long flags;

	spin_lock_irqsave(&inj->lock, flags);
	inj->delay_ms = 0;
	inj->flushing = true;
	if (close)
		inj->closed = true;
	spin_unlock_irqrestore(&inj->lock, flags);
	/* A running timer ends its turn; it is not set again. */
	timer_delete_sync(&inj->timer);
	spin_lock_irqsave(&inj->lock, flags);
	inj->busy = true;
	spin_unlock_irqrestore(&inj->lock, flags);
	local_bh_disable();
	krdma_inj_run(inj, true);
	local_bh_enable();
	spin_lock_irqsave(&inj->lock, flags);
	inj->flushing = false;
	krdma_inj_update_on(inj);
	spin_unlock_irqrestore(&inj->lock, flags);
}

/*
 * The QP went to ERROR (krdma_conn_qp_error(): a device would flush what
 * it had not done), and teardown after ib_drain_qp(), before anything a
 * completion points to is freed: the completions held back by delay=
 * reach their handlers now, and none is held any more.  Process context;
 * sleeps.
 */
void krdma_inject_drain(struct krdma_inject *inj)
{
	mutex_lock(&inj->mutex);
	krdma_inj_flush(inj, true);
	mutex_unlock(&inj->mutex);
}

/* The connection's release: after its teardown drained the queue. */
void krdma_inject_free(struct krdma_inject *inj)
{
	WARN_ON_ONCE(inj->dq_len || timer_pending(&inj->timer));
	kvfree(inj->dq);
	inj->dq = NULL;
}

bool __krdma_inject_wc(struct krdma_conn *conn, struct krdma_inject *inj,
		       struct ib_cq *cq, struct ib_wc *wc, unsigned int op)
{
	enum ib_wc_status st = IB_WC_SUCCESS;
	unsigned long flags;
	bool hit = false;

	if (READ_ONCE(inj->dq_on) && krdma_inj_hold(conn, inj, cq, wc, op))
		return true;
	if (wc->status != IB_WC_SUCCESS ||
	    READ_ONCE(inj->state) == KRDMA_INJ_OFF)
		return false;
	spin_lock_irqsave(&inj->lock, flags);
	if (inj->state == KRDMA_INJ_FIRED) {
		wc->status = IB_WC_WR_FLUSH_ERR;
	} else if (inj->state == KRDMA_INJ_ARMED && (inj->ops & op)) {
		if (inj->percent)
			hit = get_random_u32() % 100 < inj->percent;
		else
			hit = !--inj->nth;
		if (hit) {
			inj->state = KRDMA_INJ_FIRED;
			st = inj->status;
			wc->status = st;
		}
	}
	spin_unlock_irqrestore(&inj->lock, flags);
	if (!hit)
		return false;
	pr_info_ratelimited("%s: injected: a %s completion fails with %s\n",
			    conn->name, krdma_inj_kinds[__ffs(op)],
			    ib_wc_status_msg(st));
	/*
	 * The cause first, so that the handler's flush (a placeholder) or
	 * the teardown cannot take its place; then the QP goes to ERROR.
	 */
	if (st != IB_WC_WR_FLUSH_ERR)
		krdma_conn_set_error_wc(conn, krdma_wc_errno(st), st);
	krdma_conn_fail(conn, krdma_wc_errno(st));
	return false;
}

/* What a line sets, and what show reads. */
struct krdma_inj_conf {
	u8			state;
	u8			ops;
	enum ib_wc_status	status;
	u32			nth;
	u32			percent;
	u32			delay_ms;
	u32			dq_len;
	u64			delayed;
	bool			drop_hb;
};

static ssize_t krdma_inj_show_kinds(char *buf, ssize_t n, u8 ops)
{
	int i;

	if (ops == KRDMA_INJ_ANY)
		return n + sysfs_emit_at(buf, n, "any");
	for (i = 0; i < ARRAY_SIZE(krdma_inj_kinds); i++)
		if (ops & BIT(i))
			n += sysfs_emit_at(buf, n, "%s%s",
					   buf[n - 1] != '=' ? "," : "",
					   krdma_inj_kinds[i]);
	return n;
}

ssize_t krdma_inject_show(struct krdma_inject *inj, char *buf)
{
	struct krdma_inj_conf v;
	unsigned long flags;
	ssize_t n;

	spin_lock_irqsave(&inj->lock, flags);
	v.state = inj->state;
	v.ops = inj->ops;
	v.status = inj->status;
	v.nth = inj->nth;
	v.percent = inj->percent;
	v.drop_hb = inj->drop_hb;
	v.delay_ms = inj->delay_ms;
	v.dq_len = inj->dq_len;
	v.delayed = inj->delayed;
	spin_unlock_irqrestore(&inj->lock, flags);
	if (v.delay_ms) {
		n = sysfs_emit(buf, "delay=%u op=", v.delay_ms);
		n = krdma_inj_show_kinds(buf, n, v.ops);
		if (v.percent)
			n += sysfs_emit_at(buf, n, " percent=%u", v.percent);
		else
			n += sysfs_emit_at(buf, n, " nth=%u", v.nth);
		return n + sysfs_emit_at(buf, n, " queued=%u delayed=%llu\n",
					 v.dq_len, v.delayed);
	}
	if (v.state == KRDMA_INJ_OFF)
		return sysfs_emit(buf, v.drop_hb ? "drop_hb\n" : "off\n");
	n = sysfs_emit(buf, "%s op=", krdma_inj_status[v.status]);
	n = krdma_inj_show_kinds(buf, n, v.ops);
	if (v.percent)
		n += sysfs_emit_at(buf, n, " percent=%u", v.percent);
	else
		n += sysfs_emit_at(buf, n, " nth=%u", v.nth);
	n += sysfs_emit_at(buf, n, " %s\n",
			   v.state == KRDMA_INJ_FIRED ? "fired" : "armed");
	return n;
}

static int krdma_inj_parse_status(const char *w, enum ib_wc_status *st)
{
	unsigned int v;
	int i;

	if (!kstrtouint(w, 0, &v)) {
		if (v && v < ARRAY_SIZE(krdma_inj_status) &&
		    krdma_inj_status[v]) {
			*st = v;
			return 0;
		}
		return -EINVAL;
	}
	for (i = 1; i < ARRAY_SIZE(krdma_inj_status); i++) {
		if (krdma_inj_status[i] && !strcmp(w, krdma_inj_status[i])) {
			*st = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int krdma_inj_parse_kinds(char *s, u8 *ops)
{
	char *k;
	int i;

	*ops = 0;
	while ((k = strsep(&s, ","))) {
		if (!strcmp(k, "any")) {
			*ops |= KRDMA_INJ_ANY;
			continue;
		}
		i = match_string(krdma_inj_kinds, ARRAY_SIZE(krdma_inj_kinds),
				 k);
		if (i < 0)
			return -EINVAL;
		*ops |= BIT(i);
	}
	return *ops ? 0 : -EINVAL;
}

/*
 * delay= on: its ring, allocated once (sized by the connection's CQ
 * share, known once its QP exists).  With inj->mutex; process context.
 */
static int krdma_inj_ring(struct krdma_conn *conn, struct krdma_inject *inj)
{
	struct krdma_inj_wc *dq;
	unsigned long flags;
	u32 size;

	if (inj->dq)
		return 0;
	size = READ_ONCE(conn->cq_size);
	if (!size)
		return -ENOTCONN;
	dq = kvcalloc(size, sizeof(*dq), GFP_KERNEL);
	if (!dq)
		return -ENOMEM;
	spin_lock_irqsave(&inj->lock, flags);
	inj->dq = dq;
	inj->dq_size = size;
	spin_unlock_irqrestore(&inj->lock, flags);
	return 0;
}

/*
 * A write of conns/NAME/inject.  Process context.  Return: 0, -EINVAL
 * with one rate-limited line naming the bad word, -EBUSY once the
 * injection fired (the connection has failed; it stays flushed),
 * -ENOTCONN for a delay= on a connection without a QP or torn down,
 * -ENOMEM.
 */
int krdma_inject_store(struct krdma_conn *conn, struct krdma_inject *inj,
		       const char *buf)
{
	struct krdma_inj_conf v = { .ops = KRDMA_INJ_ANY, .nth = 1 };
	char line[128], *s = line, *w, *bad = NULL;
	unsigned long flags;
	bool first = true;
	int ret = 0;

	if (strscpy(line, buf, sizeof(line)) < 0) {
		pr_warn_ratelimited("%s: inject: line too long\n", conn->name);
		return -EINVAL;
	}
	strim(line);
	if (!strcmp(line, "off")) {
		v.state = KRDMA_INJ_OFF;
		goto set;
	}
	if (!strcmp(line, "drop_hb")) {
		v.state = KRDMA_INJ_OFF;
		v.drop_hb = true;
		goto set;
	}
	v.state = KRDMA_INJ_ARMED;
	while ((w = strsep(&s, " \t"))) {
		if (!*w)
			continue;
		if (first) {
			first = false;
			if (!strncmp(w, "delay=", 6)) {
				v.state = KRDMA_INJ_OFF;
				if (kstrtou32(w + 6, 10, &v.delay_ms) ||
				    !v.delay_ms ||
				    v.delay_ms > KRDMA_INJ_DELAY_MAX)
					bad = w;
			} else if (krdma_inj_parse_status(w, &v.status)) {
				bad = w;
			}
		} else if (!strncmp(w, "op=", 3)) {
			if (krdma_inj_parse_kinds(w + 3, &v.ops))
				bad = w;
		} else if (!strncmp(w, "nth=", 4)) {
			if (kstrtou32(w + 4, 10, &v.nth) || !v.nth)
				bad = w;
		} else if (!strncmp(w, "percent=", 8)) {
			if (kstrtou32(w + 8, 10, &v.percent) || !v.percent ||
			    v.percent > 100)
				bad = w;
		} else {
			bad = w;
		}
		if (bad)
			break;
	}
	if (first || bad) {
		pr_warn_ratelimited("%s: inject: %s%s%s\n", conn->name,
				    bad ? "bad word '" : "no status given",
				    bad ? bad : "", bad ? "'" : "");
		return -EINVAL;
	}
	/* Held completions come back from a timer: softirq, not a kworker. */
	if (v.delay_ms && conn->opts.workqueue) {
		pr_warn_ratelimited("%s: inject: delay: not on a workqueue connection (its callbacks run in process context)\n",
				    conn->name);
		return -EOPNOTSUPP;
	}
set:
	mutex_lock(&inj->mutex);
	spin_lock_irqsave(&inj->lock, flags);
	if (inj->state == KRDMA_INJ_FIRED) {
		/* Its completions must stay flushed: the QP is failing. */
		spin_unlock_irqrestore(&inj->lock, flags);
		pr_warn_ratelimited("%s: inject: it fired; the connection has failed\n",
				    conn->name);
		ret = -EBUSY;
		goto out;
	}
	if (v.delay_ms && inj->closed) {
		spin_unlock_irqrestore(&inj->lock, flags);
		ret = -ENOTCONN;
		goto out_delay;
	}
	if (!v.delay_ms && (inj->delay_ms || inj->dq_len)) {
		/* The end of delay=: what is held back goes now. */
		spin_unlock_irqrestore(&inj->lock, flags);
		krdma_inj_flush(inj, false);
	} else {
		spin_unlock_irqrestore(&inj->lock, flags);
	}
	if (v.delay_ms) {
		ret = krdma_inj_ring(conn, inj);
		if (ret)
			goto out_delay;
	}
	spin_lock_irqsave(&inj->lock, flags);
	inj->state = v.state;
	inj->status = v.status;
	inj->ops = v.ops;
	inj->nth = v.nth;
	inj->percent = v.percent;
	inj->seen = 0;
	if (v.delay_ms)
		inj->delayed = 0;
	inj->delay_ms = v.delay_ms;
	krdma_inj_update_on(inj);
	WRITE_ONCE(inj->drop_hb, v.drop_hb);
	spin_unlock_irqrestore(&inj->lock, flags);
	goto out;
out_delay:
	pr_warn_ratelimited("%s: inject: delay: %s\n", conn->name,
			    ret == -ENOMEM ? "no memory for its queue" :
			    "the connection has no queue pair");
out:
	mutex_unlock(&inj->mutex);
	return ret;
}
