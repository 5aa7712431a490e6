// SPDX-License-Identifier: GPL-2.0
/*
 * Polled connections (opts.poll): completion queues that nobody reaps in
 * the background.
 *
 * A connection normally takes its CQ from the device's CQ pool, polled in
 * softirq context after an interrupt: every completion then costs a wake-up
 * of whoever waits for it, and on a virtual machine an idle vCPU wakes
 * slowly.  A polled connection allocates a CQ of its own with
 * IB_POLL_DIRECT, as nvme-rdma does for its poll queues, and reaps it from
 * the task that wants the completion: the consumer's krdma_poll(), and
 * krdma's own synchronous calls, which spin on the CQ while they wait
 * (krdma_poll_step()).  The heartbeat tick polls too (krdma_hb.c), so that
 * an idle polled connection still answers its peer's pings.
 *
 * Completion handlers run in softirq (the pool's IB_POLL_SOFTIRQ CQs) or
 * in a kworker (opts.workqueue, IB_POLL_WORKQUEUE), so they take
 * conn->lock with spin_lock_bh().  The consumer's callbacks on a polled
 * connection are promised softirq's rules and company, though: every poll
 * runs with bottom halves off, and one at a time per connection
 * (conn->poll_lock), so a handler never runs beside another of its
 * connection, in order, as from the pool's softirq.  A poll that finds
 * another in progress returns at once.  ib_drain_qp() would run the
 * handlers with bottom halves on, from its own loop, beside a poll: a
 * polled QP is drained here instead (krdma_drain_qp()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <rdma/ib_verbs.h>

#include "krdma_core.h"

/*
 * Allocate the connection's CQ: from the pool, reaped in softirq or (for
 * opts.workqueue) by the completion workqueue, or its own if polled.
 */
int krdma_cq_create(struct krdma_conn *conn, struct ib_device *ibdev)
{
	int nvec = max(ibdev->num_comp_vectors, 1);
	int vector = -1;	/* the pool's round robin */
	struct ib_cq *cq;

	if (conn->opts.comp_vector != KRDMA_COMP_VECTOR_ANY)
		vector = (conn->opts.comp_vector - 1) % nvec;
	if (conn->opts.poll)
		cq = ib_alloc_cq(ibdev, conn, conn->cq_size, max(vector, 0),
				 IB_POLL_DIRECT);
	else
		cq = ib_cq_pool_get(ibdev, conn->cq_size, vector,
				    conn->opts.workqueue ? IB_POLL_WORKQUEUE :
							   IB_POLL_SOFTIRQ);
	if (IS_ERR(cq)) {
		pr_warn_ratelimited("%s: no completion queue: %ld\n",
				    conn->name, PTR_ERR(cq));
		return PTR_ERR(cq);
	}
	conn->cq = cq;
	WRITE_ONCE(conn->comp_vector, cq->comp_vector);
	return 0;
}

/* Give the CQ back; a poll in progress finishes first. */
void krdma_cq_destroy(struct krdma_conn *conn)
{
	struct ib_cq *cq;

	if (!conn->opts.poll) {
		ib_cq_pool_put(conn->cq, conn->cq_size);
		conn->cq = NULL;
		return;
	}
	spin_lock_bh(&conn->poll_lock);
	cq = conn->cq;
	conn->cq = NULL;
	spin_unlock_bh(&conn->poll_lock);
	ib_free_cq(cq);
}

/*
 * Reap up to @budget completions of a polled connection's CQ, for krdma
 * itself (its waits, the heartbeat tick, the drain).
 */
int krdma_poll_cq(struct krdma_conn *conn, int budget)
{
	int n = 0;

	if (!spin_trylock_bh(&conn->poll_lock))
		return 0;
	if (conn->cq)
		n = ib_process_cq_direct(conn->cq, budget);
	spin_unlock_bh(&conn->poll_lock);
	return n;
}

/**
 * krdma_poll - reap the completions of a polled connection
 * @conn: a connection made with opts.poll (krdma_connect(), or accepted by
 *	a listener made with it)
 * @budget: completions to reap at most (0: KRDMA_POLL_BUDGET)
 *
 * Runs the handlers of the completions it reaps in the calling task, with
 * bottom halves off: the &struct krdma_req.done callbacks of requests
 * that completed, and the recv callback (or the queueing for krdma_recv())
 * of messages that arrived, in order.  One poll at a time runs on a
 * connection: a call that finds another in progress (in another task, or
 * from a callback of this one) returns 0 at once.
 *
 * Context: process or softirq context, not hard interrupt context; does
 * not sleep.  Callable from a completion callback.
 * Return: the number of completions reaped (0 after the connection was
 * torn down), or -EINVAL if @conn is not polled.
 */
int krdma_poll(struct krdma_conn *conn, int budget)
{
	int n;

	if (!conn->opts.poll)
		return -EINVAL;
	n = krdma_poll_cq(conn, budget > 0 ? budget : KRDMA_POLL_BUDGET);
	if (n > 0)
		atomic64_add(n, &conn->stats.poll_reaped);
	return n;
}
EXPORT_SYMBOL_GPL(krdma_poll);

/**
 * krdma_conn_polled - whether a connection is polled
 * @conn: the connection
 *
 * Context: any.
 * Return: true if its completions come only through krdma_poll() and
 * krdma's polled waits (opts.poll).
 */
bool krdma_conn_polled(struct krdma_conn *conn)
{
	return conn->opts.poll;
}
EXPORT_SYMBOL_GPL(krdma_conn_polled);

/**
 * krdma_wait_begin - start a wait of krdma_wait_event_timeout()
 * @w: the wait, on the caller's stack
 * @conn: the connection waited on
 * @wq: where a task sleeps if @conn is not polled
 * @timeout: in jiffies (MAX_SCHEDULE_TIMEOUT: none)
 * @state: TASK_UNINTERRUPTIBLE, TASK_INTERRUPTIBLE or TASK_KILLABLE
 *
 * For the macros of include/krdma.h only.
 *
 * Context: process context.
 */
void krdma_wait_begin(struct krdma_wait *w, struct krdma_conn *conn,
		      wait_queue_head_t *wq, long timeout, unsigned int state)
{
	might_sleep();
	w->conn = conn;
	w->wq = wq;
	w->left = timeout;
	w->end = jiffies + (timeout == MAX_SCHEDULE_TIMEOUT ? 0 : timeout);
	w->idle_since = 0;
	w->state = state;
	w->polled = conn->opts.poll;
	init_wait_entry(&w->entry, 0);
}
EXPORT_SYMBOL_GPL(krdma_wait_begin);

/**
 * krdma_wait_prepare - before the condition is evaluated
 * @w: the wait
 *
 * Not polled: queue the task on the wait queue, as prepare_to_wait_event()
 * does, so that a wake-up between the condition and the sleep is not lost;
 * a signal that @w->state admits ends the wait (-ERESTARTSYS in @w->left).
 * For the macros of include/krdma.h only.
 *
 * Context: process context.
 */
void krdma_wait_prepare(struct krdma_wait *w)
{
	long ret;

	if (w->polled)
		return;
	ret = prepare_to_wait_event(w->wq, &w->entry, w->state);
	if (ret && w->left > 0)
		w->left = ret;
}
EXPORT_SYMBOL_GPL(krdma_wait_prepare);

/**
 * krdma_wait_step - wait a little: sleep, or poll
 * @w: the wait
 *
 * Not polled: sleep until woken or @w->left runs out.  Polled: poll the
 * connection once; if that found nothing, return at once (for
 * KRDMA_POLL_BUSY_NS after the last completion), nap KRDMA_POLL_NAP_US
 * (for KRDMA_POLL_SPIN_NS after it) or, after that, a jiffy.
 * Updates @w->left: what is left, 0, or -ERESTARTSYS.
 * For the macros of include/krdma.h only.
 *
 * Context: process context; sleeps.
 */
void krdma_wait_step(struct krdma_wait *w)
{
	ktime_t nap = ns_to_ktime(KRDMA_POLL_NAP_US * NSEC_PER_USEC);
	u64 now;

	if (!w->polled) {
		w->left = schedule_timeout(w->left);
		return;
	}
	if (krdma_poll_cq(w->conn, KRDMA_POLL_BUDGET) > 0) {
		w->idle_since = 0;
		cond_resched();
	} else {
		now = local_clock();
		if (!w->idle_since)
			w->idle_since = now;
		if (now - w->idle_since < KRDMA_POLL_BUSY_NS) {
			/* The device may be finishing on another CPU. */
			cpu_relax();
			cond_resched();
			goto out;
		}
		__set_current_state(w->state);
		if (now - w->idle_since < KRDMA_POLL_SPIN_NS)
			schedule_hrtimeout_range(&nap, KRDMA_POLL_NAP_US *
						 NSEC_PER_USEC,
						 HRTIMER_MODE_REL);
		else
			schedule_timeout(1);
	}
out:
	if (signal_pending_state(w->state, current))
		w->left = -ERESTARTSYS;
	else if (w->left != MAX_SCHEDULE_TIMEOUT)
		w->left = time_before(jiffies, w->end) ? w->end - jiffies : 0;
}
EXPORT_SYMBOL_GPL(krdma_wait_step);

/**
 * krdma_wait_end - the end of a wait
 * @w: the wait
 * @done: the condition was true
 *
 * For the macros of include/krdma.h only.
 *
 * Context: process context.
 * Return: what wait_event_timeout() returns: the jiffies left (at least
 * 1) if @done, else 0 or -ERESTARTSYS.
 */
long krdma_wait_end(struct krdma_wait *w, bool done)
{
	if (!w->polled)
		finish_wait(w->wq, &w->entry);
	if (done)
		return max(w->left, 1L);
	return w->left;
}
EXPORT_SYMBOL_GPL(krdma_wait_end);

/**
 * krdma_wait_completion - wait_for_completion_timeout() that polls
 * @conn: the connection whose callback completes @done
 * @done: the completion
 * @timeout: in jiffies (MAX_SCHEDULE_TIMEOUT: none)
 *
 * On a polled connection the task polls @conn while it waits, as
 * krdma_wait_event_timeout() does; otherwise this is
 * wait_for_completion_timeout().  For a consumer that waits for an answer
 * its recv callback signals (krdma-blk's greeting).
 *
 * Context: process context; sleeps.
 * Return: 0 if @timeout ran out first, else the jiffies left (at least 1).
 */
long krdma_wait_completion(struct krdma_conn *conn, struct completion *done,
			   long timeout)
{
	return __krdma_wait_completion(conn, done, timeout, false);
}
EXPORT_SYMBOL_GPL(krdma_wait_completion);

/*
 * krdma_wait_completion(), or with @killable a wait that a fatal signal
 * ends with -ERESTARTSYS (unless @done completed too), polled or not.
 * Process context; sleeps.
 */
long __krdma_wait_completion(struct krdma_conn *conn,
			     struct completion *done, long timeout,
			     bool killable)
{
	if (!conn->opts.poll)
		return killable ?
		       wait_for_completion_killable_timeout(done, timeout) :
		       wait_for_completion_timeout(done, timeout);
	/* Polled: conn->wq is not slept on. */
	return __krdma_wait_event(conn, conn->wq,
				  try_wait_for_completion(done), timeout,
				  killable ? TASK_KILLABLE :
					     TASK_UNINTERRUPTIBLE);
}

struct krdma_drain {
	struct ib_cqe	cqe;
	bool		done;
};

static void krdma_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	WRITE_ONCE(container_of(wc->wr_cqe, struct krdma_drain, cqe)->done,
		   true);
}

/* Post the marker of a drain; a failed post has nothing to wait for. */
static void krdma_drain_post(struct krdma_conn *conn, struct krdma_drain *s,
			     struct krdma_drain *r)
{
	struct ib_rdma_wr swr = {
		.wr = {
			.opcode = IB_WR_RDMA_WRITE,
			.send_flags = IB_SEND_SIGNALED,
			.wr_cqe = &s->cqe,
		},
	};
	struct ib_recv_wr rwr = { .wr_cqe = &r->cqe };
	int ret;

	s->cqe.done = krdma_drain_done;
	r->cqe.done = krdma_drain_done;
	ret = ib_post_send(conn->qp, &swr.wr, NULL);
	if (ret) {
		pr_warn_ratelimited("%s: cannot drain the send queue: %d\n",
				    conn->name, ret);
		s->done = true;
	}
	ret = ib_post_recv(conn->qp, &rwr, NULL);
	if (ret) {
		pr_warn_ratelimited("%s: cannot drain the receive queue: %d\n",
				    conn->name, ret);
		r->done = true;
	}
}

/*
 * Teardown: move the QP to ERROR and wait until every work request posted
 * before has completed, its handler run.  As ib_drain_qp(), whose generic
 * form this is for a polled CQ: a marker is posted on each queue behind
 * the flushed ones, and the CQ polled until both came.
 */
void krdma_drain_qp(struct krdma_conn *conn)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct krdma_drain s = {}, r = {};
	unsigned long warn = jiffies + KRDMA_POST_TIMEOUT;
	bool warned = false;
	int ret;

	if (!conn->opts.poll) {
		ib_drain_qp(conn->qp);
		return;
	}
	ret = ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
	if (ret) {
		pr_warn_ratelimited("%s: cannot move the QP to ERROR for the drain: %d\n",
				    conn->name, ret);
		return;
	}
	krdma_drain_post(conn, &s, &r);
	while (!READ_ONCE(s.done) || !READ_ONCE(r.done)) {
		if (krdma_poll_cq(conn, KRDMA_POLL_BUDGET))
			continue;
		if (!warned && time_after(jiffies, warn)) {
			pr_warn_ratelimited("%s: drain not done in %u ms, still polling\n",
					    conn->name,
					    jiffies_to_msecs(KRDMA_POST_TIMEOUT));
			warned = true;
		}
		schedule_timeout_uninterruptible(1);
	}
}
