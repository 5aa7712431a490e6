// SPDX-License-Identifier: GPL-2.0
/*
 * krdma's message datapath: receives and the recv callback, sends (plain,
 * gathered, inline, with invalidation or immediate), write-with-immediate
 * notices, credits, the room callback, and the one post-and-wait helper
 * the synchronous calls share.  The queue pair and buffers it runs on are
 * set up in krdma_cq.c.
 *
 * Flow control: each side posts depth + 1 receives.  A sender holds one
 * credit per receive the peer has posted for data, spends one per message,
 * and gets credits back in the header of every message the peer sends.
 * When the peer has nothing to send, it returns credits in a CREDIT
 * message, which lands in the one extra receive.  Only one CREDIT message
 * may be in flight each way (the "ctl token"); the receiver reposts its
 * buffer and acknowledges that in the next header it sends (CTL_ACK).  So a
 * sender never posts a SEND the peer has no receive for: no RNR, ever.
 * A WRITE_WITH_IMM takes a credit too but has no header; while an ack is
 * owed its notice goes as a KRDMA_MSG_IMM message, or a one-way stream of
 * them would keep the peer's token for ever and stall.
 * One more receive on each side takes heartbeats (krdma_hb.c), which stay
 * out of this accounting: at most one ping and one pong are ever in
 * flight, each answered or reposted before the next can come.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <rdma/rw.h>

#include "krdma_core.h"
#include "krdma_dma.h"
#include "krdma_queue.h"
#include "krdma_trace.h"

/*
 * Test knob: a peer that sends a malformed message, with its QP left in
 * RTS (the connection fails with -EPROTO, nothing else happens).
 */
static bool fault_malformed;
module_param(fault_malformed, bool, 0644);
MODULE_PARM_DESC(fault_malformed,
		 "test: send a message starting with \"" KRDMA_FAULT_MALFORMED
		 "\" with a header of unknown type");

static bool krdma_fault_malformed(const void *buf, size_t len)
{
	const size_t n = sizeof(KRDMA_FAULT_MALFORMED) - 1;

	return unlikely(fault_malformed) && len >= n &&
	       !memcmp(buf, KRDMA_FAULT_MALFORMED, n);
}

/*
 * Tests only: the Nth post krdma makes on its own from now on (a receive,
 * first or going back, a credit message, a heartbeat) fails with -ENOMEM
 * before it reaches the device, as from a device whose queue is full;
 * counts down to 0 (test/guest/postfail.sh).
 */
static int fault_post_fail;
module_param(fault_post_fail, int, 0644);
MODULE_PARM_DESC(fault_post_fail,
		 "Tests only: the Nth post of krdma's own from now on fails (0: none)");

/*
 * Tests only: true for the Nth call from when *@knob was set to N (it
 * counts down to 0, in any context); false while it is 0 or less.
 */
bool krdma_fault_nth(int *knob)
{
	int v = READ_ONCE(*knob), old;

	while (unlikely(v > 0)) {
		old = cmpxchg(knob, v, v - 1);
		if (old == v)
			return v == 1;
		v = old;
	}
	return false;
}

/*
 * Tests only: sleep *@knob ms (read once), or less if the test sets
 * *@knob to 0 meanwhile, which ends the sleep within 20 ms: a test that
 * holds a window open for as long as the slowest kernel needs closes it
 * as soon as it is done with it.  Process context.
 */
void krdma_fault_sleep(unsigned int *knob)
{
	unsigned long end = jiffies + msecs_to_jiffies(READ_ONCE(*knob));

	while (READ_ONCE(*knob) && time_before(jiffies, end))
		msleep(20);
}

static bool krdma_fault_post(void)
{
	return krdma_fault_nth(&fault_post_fail);
}

/*
 * Tests only: the Nth post of a consumer's operation from now on (a
 * message, a write-with-immediate notice, a one-sided transfer, an
 * atomic) fails with -ENOTCONN before it reaches the device, as siw's
 * post does on a QP that has just left RTS; counts down to 0
 * (test/guest/postfail.sh).
 */
static int fault_op_post_fail;
module_param(fault_op_post_fail, int, 0644);
MODULE_PARM_DESC(fault_op_post_fail,
		 "Tests only: the Nth post of a consumer's operation from now on fails (0: none)");

bool krdma_fault_op_post(void)
{
	return krdma_fault_nth(&fault_op_post_fail);
}

/* ---- receive ------------------------------------------------------- */

static int krdma_post_recv(struct krdma_conn *conn, struct krdma_rx *rx)
{
	struct ib_sge sge = {
		.addr	= rx->dma,
		.length	= KRDMA_HDR_LEN + conn->max_msg,
		.lkey	= conn->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe		= &rx->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
	};

	krdma_dma_sync_for_device(conn->kdev->ibdev, rx->dma, sge.length,
				  DMA_FROM_DEVICE);
	if (krdma_fault_post())
		return -ENOMEM;
	return ib_post_recv(conn->qp, &wr, NULL);
}

/* Before the connection exists: every receive goes up front. */
int krdma_conn_post_recvs(struct krdma_conn *conn)
{
	u32 i;
	int ret;

	for (i = 0; i < conn->nr_rx; i++) {
		ret = krdma_post_recv(conn, &conn->rx[i]);
		if (ret) {
			pr_warn_ratelimited("%s: ib_post_recv failed: %d\n",
					    conn->name, ret);
			return ret;
		}
	}
	return 0;
}

static int krdma_post_ctl_locked(struct krdma_conn *conn);

/*
 * A receive buffer is free again: repost it and owe the peer a credit.
 * Called with conn->lock held.
 */
static void krdma_repost_locked(struct krdma_conn *conn, struct krdma_rx *rx,
				bool is_credit_msg)
{
	int ret;

	if (!conn->qp_ok)
		return;
	ret = krdma_post_recv(conn, rx);
	if (ret) {
		krdma_conn_fail_locked(conn, ret, "a receive");
		return;
	}
	krdma_credit_reposted(&conn->cr, is_credit_msg);
	if (krdma_credit_should_send_ctl(&conn->cr))
		krdma_post_ctl_locked(conn);
}

static bool krdma_rx_ready_locked(struct krdma_conn *conn,
				  struct krdma_rx *rx);
static void krdma_rx_deliver(struct krdma_conn *conn, struct krdma_rx *rx);

/*
 * Whether the connection has failed already: a breach of the protocol
 * by the peer is then not told again.  Messages already in the CQ still
 * complete after the first, and a peer that breaks the protocol once
 * will often have sent more of the same: one line per connection.
 */
static bool krdma_conn_failed(struct krdma_conn *conn)
{
	bool failed;

	spin_lock_bh(&conn->lock);
	failed = conn->error;
	spin_unlock_bh(&conn->lock);
	return failed;
}

/*
 * The peer broke flow control: fail the connection with @err, and say
 * what it did in one line ("flow control violated by the peer: ...")
 * unless the connection had failed before (@failed: conn->error, read
 * under conn->lock, which the caller has dropped).
 */
static __printf(4, 5) void krdma_rx_flow_violated(struct krdma_conn *conn,
						  bool failed, int err,
						  const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	if (!failed) {
		va_start(args, fmt);
		vaf.fmt = fmt;
		vaf.va = &args;
		pr_warn_ratelimited("%s: flow control violated by the peer: %pV\n",
				    conn->name, &vaf);
		va_end(args);
	}
	atomic64_inc(&conn->stats.errors);
	krdma_conn_set_error(conn, err);
}

/* The peer sent without a credit (krdma_credit_recv()); no lock held. */
static void krdma_rx_uncredited(struct krdma_conn *conn, bool is_credit_msg,
				int err, bool failed)
{
	krdma_rx_flow_violated(conn, failed, err, "%s", is_credit_msg ?
			       "a credit message before its last was acknowledged" :
			       "a message sent without a credit");
}

/* A message krdma cannot take; no lock held. */
static void krdma_rx_malformed(struct krdma_conn *conn, struct ib_wc *wc)
{
	if (!krdma_conn_failed(conn))
		pr_warn_ratelimited("%s: malformed message from the peer (%u bytes%s)\n",
				    conn->name, wc->byte_len,
				    wc->wc_flags & IB_WC_WITH_IMM ?
				    ", with an immediate" : "");
	atomic64_inc(&conn->stats.errors);
	krdma_conn_set_error(conn, -EPROTO);
}

void krdma_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_rx *rx = container_of(wc->wr_cqe, struct krdma_rx, cqe);
	struct krdma_conn *conn = rx->conn;
	struct krdma_msg_info info;
	bool wake = false, deliver = false;
	int ret;

	if (krdma_inject_wc(conn, &conn->inj, cq, wc, KRDMA_INJ_RECV))
		return;
	if (wc->status != IB_WC_SUCCESS) {
		trace_krdma_recv_done(conn->name, 0, wc->status);
		krdma_wc_error(conn, wc, "receive");
		return;
	}
	/* The peer spoke, well or not: an iWARP passive side may go on. */
	if (unlikely(!READ_ONCE(conn->peer_spoke))) {
		spin_lock_bh(&conn->lock);
		krdma_conn_peer_spoke_locked(conn);
		spin_unlock_bh(&conn->lock);
	}
	if (wc->opcode == IB_WC_RECV_RDMA_WITH_IMM) {
		trace_krdma_recv_done(conn->name, 0, wc->status);
		/* The data went to the token; this receive only notifies. */
		spin_lock_bh(&conn->lock);
		ret = krdma_credit_recv(&conn->cr, false);
		if (ret) {
			bool failed = conn->error;

			spin_unlock_bh(&conn->lock);
			krdma_rx_uncredited(conn, false, ret, failed);
			return;
		}
		conn->hb_rx++;
		rx->byte_len = 0;
		rx->has_imm = true;
		rx->notice = true;
		rx->inv_valid = false;
		rx->inv_rkey = 0;
		rx->imm = be32_to_cpu(wc->ex.imm_data);
		deliver = krdma_rx_ready_locked(conn, rx);
		spin_unlock_bh(&conn->lock);
		atomic64_inc(&conn->stats.recv_ops);
		if (deliver)
			krdma_rx_deliver(conn, rx);
		else
			wake_up_all(&conn->wq);
		return;
	}
	krdma_dma_sync_for_cpu(conn->kdev->ibdev, rx->dma, wc->byte_len,
			       DMA_FROM_DEVICE);
	/*
	 * A SEND_WITH_IMM (krdma_sendv_async()) carries a data message;
	 * krdma sends nothing else with an immediate.
	 */
	if (krdma_msg_decode(rx->buf, wc->byte_len, READ_ONCE(conn->max_msg),
			     &info) ||
	    ((wc->wc_flags & IB_WC_WITH_IMM) && info.type != KRDMA_MSG_DATA)) {
		krdma_rx_malformed(conn, wc);
		return;
	}
	/* A credit message or a notice has no payload of the consumer's. */
	trace_krdma_recv_done(conn->name,
			      info.type == KRDMA_MSG_DATA ? info.len : 0,
			      wc->status);

	spin_lock_bh(&conn->lock);
	/*
	 * The active side's max_msg is its offer until the accept's agreed
	 * size is in (krdma_active_established(), under this lock), and the
	 * decode read it without the lock: a message decoded against the
	 * offer is weighed here against what holds now, and one that came
	 * before the accept is weighed there (rx_early_len).
	 */
	if (unlikely(info.len > conn->max_msg)) {
		spin_unlock_bh(&conn->lock);
		krdma_rx_malformed(conn, wc);
		return;
	}
	if (unlikely(!conn->established) && conn->active)
		conn->rx_early_len = max(conn->rx_early_len, info.len);
	/*
	 * A credit message before the connection was established could not
	 * be reposted (no posts before qp_ok) and the peer's next one would
	 * then fail the connection for a missing ack, which is not what the
	 * peer did wrong.  It is a breach where it comes: a credit message
	 * returns credits, and a peer can owe none before then (nothing was
	 * sent to it but a heartbeat); one with credits in it is refused
	 * below already (every credit is in hand), and krdma never sends one
	 * without.  So not reposted as a heartbeat is: -EPROTO, now.
	 */
	if (unlikely(info.type == KRDMA_MSG_CREDIT && !conn->established)) {
		bool failed = conn->error;

		spin_unlock_bh(&conn->lock);
		krdma_rx_flow_violated(conn, failed, -EPROTO,
				       "a credit message before the connection was established");
		return;
	}
	/*
	 * The peer's SEND_WITH_INV: the device invalidated that rkey in our
	 * PD before this completion.  Only a valid registration from this
	 * connection's pool is marked and reported; any other rkey (the peer
	 * is not trusted) marks nothing.
	 */
	rx->inv_valid = (wc->wc_flags & IB_WC_WITH_INVALIDATE) &&
			krdma_pool_remote_inv_locked(conn,
						     wc->ex.invalidate_rkey);
	rx->inv_rkey = rx->inv_valid ? wc->ex.invalidate_rkey : 0;
	/* Heartbeats stay out of flow control: their own receive. */
	if (info.type != KRDMA_MSG_HB) {
		ret = krdma_credit_recv(&conn->cr,
					info.type == KRDMA_MSG_CREDIT);
		if (ret) {
			bool failed = conn->error;

			spin_unlock_bh(&conn->lock);
			krdma_rx_uncredited(conn, info.type == KRDMA_MSG_CREDIT,
					    ret, failed);
			return;
		}
	}
	ret = krdma_credit_grant(&conn->cr, info.credits,
				 info.flags & KRDMA_MSG_F_CTL_ACK);
	if (ret) {
		u32 have = conn->cr.credits;
		bool failed = conn->error;

		spin_unlock_bh(&conn->lock);
		krdma_rx_flow_violated(conn, failed, ret,
				       "%u credits%s returned with %u of %u in hand",
				       info.credits,
				       info.flags & KRDMA_MSG_F_CTL_ACK ?
				       " and a credit ack" : "",
				       have, conn->depth);
		return;
	}
	if (info.type != KRDMA_MSG_HB || !krdma_inject_drop_hb(&conn->inj))
		conn->hb_rx++;
	if (info.credits || (info.flags & KRDMA_MSG_F_CTL_ACK))
		wake = true;
	if (info.type == KRDMA_MSG_HB) {
		/*
		 * Reposted before any answer: the peer may ping again.  On
		 * the passive side a ping may come before the ESTABLISHED
		 * event (qp_ok): its receive goes back all the same.
		 */
		ret = conn->rx_closed ? 0 : krdma_post_recv(conn, rx);
		if (ret)
			krdma_conn_fail_locked(conn, ret, "a receive");
		if (!krdma_inject_drop_hb(&conn->inj))
			krdma_hb_rx_locked(conn,
					   info.flags & KRDMA_MSG_F_PONG);
	} else if (info.type == KRDMA_MSG_CREDIT) {
		atomic64_inc(&conn->stats.credit_msgs);
		krdma_repost_locked(conn, rx, true);
	} else if (info.type == KRDMA_MSG_IMM) {
		__be32 imm;

		/* As if it came as IB_WC_RECV_RDMA_WITH_IMM (above). */
		memcpy(&imm, rx->buf + KRDMA_HDR_LEN, sizeof(imm));
		rx->byte_len = 0;
		rx->has_imm = true;
		rx->notice = true;
		rx->imm = be32_to_cpu(imm);
		deliver = krdma_rx_ready_locked(conn, rx);
		atomic64_inc(&conn->stats.recv_ops);
		wake = true;
	} else {
		rx->byte_len = info.len;
		rx->notice = false;
		rx->has_imm = wc->wc_flags & IB_WC_WITH_IMM;
		rx->imm = rx->has_imm ? be32_to_cpu(wc->ex.imm_data) : 0;
		deliver = krdma_rx_ready_locked(conn, rx);
		atomic64_inc(&conn->stats.recv_ops);
		atomic64_add(info.len, &conn->stats.recv_bytes);
		wake = true;
	}
	/* Credits owed may now go out with the token we got back. */
	if (krdma_credit_should_send_ctl(&conn->cr))
		krdma_post_ctl_locked(conn);
	spin_unlock_bh(&conn->lock);
	if (deliver)
		krdma_rx_deliver(conn, rx);
	if (wake)
		wake_up_all(&conn->wq);
	/* The peer's credits came back with it. */
	krdma_room(conn);
}

/* ---- the recv callback --------------------------------------------- */

/* The consumer gave a recv callback; without one krdma_recv() receives. */
static bool krdma_conn_has_recv_cb(const struct krdma_conn *conn)
{
	return conn->opts.ops && conn->opts.ops->recv;
}

/*
 * A message is ready, with conn->lock held.  Until the consumer's recv
 * callback may run (krdma_rx_cb_start()), it waits on conn->rx_ready
 * (false); else it is marked kept for krdma_rx_deliver(), which runs
 * after the lock is dropped (true).  Until the consumer returns, it has
 * the message as if kept.
 */
static bool krdma_rx_ready_locked(struct krdma_conn *conn,
				  struct krdma_rx *rx)
{
	rx->msg.data = rx->notice ? NULL : rx->buf + KRDMA_HDR_LEN;
	rx->msg.len = rx->byte_len;
	rx->msg.imm_valid = rx->has_imm;
	rx->msg.imm = rx->imm;
	rx->msg.inv_valid = rx->inv_valid;
	rx->msg.inv_rkey = rx->inv_rkey;
	if (!conn->rx_cb && krdma_conn_has_recv_cb(conn)) {
		list_add_tail(&rx->list, &conn->rx_ready);
		return false;
	}
	rx->kept = true;
	conn->rx_kept++;
	return true;
}

/*
 * The recv callback of a connection that has none of its consumer's:
 * the message is kept, in order, until krdma_recv_ex() copies it out and
 * releases it.  Any context the recv callback runs in.
 */
static int krdma_recvq_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct krdma_rx *rx = container_of(msg, struct krdma_rx, msg);
	bool queued = false;

	spin_lock_bh(&conn->lock);
	/* Teardown (after the QP drained) takes what the queue holds. */
	if (!conn->rx_closed) {
		list_add_tail(&rx->list, &conn->recvq);
		queued = true;
	}
	spin_unlock_bh(&conn->lock);
	if (!queued)
		return 0;
	wake_up_all(&conn->wq);
	return KRDMA_MSG_KEEP;
}

/* Without conn->lock, bottom halves off (or the connection's work). */
static void krdma_rx_deliver(struct krdma_conn *conn, struct krdma_rx *rx)
{
	int (*recv)(struct krdma_conn *conn, struct krdma_msg *msg);
	int ret;

	recv = krdma_conn_has_recv_cb(conn) ? conn->opts.ops->recv :
					       krdma_recvq_recv;
	/*
	 * The consumer let go (krdma_close(), krdma_conn_abandon()): no
	 * callback now.  ev_off was set under conn->lock, which the caller
	 * took after it if it is to be seen here.
	 */
	if (recv != krdma_recvq_recv && READ_ONCE(conn->ev_off)) {
		krdma_msg_release(conn, &rx->msg);
		return;
	}
	ret = recv(conn, &rx->msg);
	/* The consumer passes it on to krdma_recv(). */
	if (ret == KRDMA_MSG_QUEUE && recv != krdma_recvq_recv)
		ret = krdma_recvq_recv(conn, &rx->msg);
	if (ret != KRDMA_MSG_KEEP)
		krdma_msg_release(conn, &rx->msg);
}

/*
 * The ESTABLISHED event returned: hand the consumer what came before it,
 * in order, then let the completion handler deliver.  Process context.
 */
void krdma_rx_cb_start(struct krdma_conn *conn)
{
	struct krdma_rx *rx;
	bool bh = !conn->opts.workqueue;

	/* The callback's context: as from the CQ's softirq, or its work. */
	if (bh)
		local_bh_disable();
	for (;;) {
		spin_lock_bh(&conn->lock);
		rx = NULL;
		if (!conn->rx_closed)
			rx = list_first_entry_or_null(&conn->rx_ready,
						      struct krdma_rx, list);
		if (!rx) {
			/* Nothing queued: from now on they go straight. */
			conn->rx_cb = true;
			spin_unlock_bh(&conn->lock);
			break;
		}
		list_del_init(&rx->list);
		rx->kept = true;
		conn->rx_kept++;
		spin_unlock_bh(&conn->lock);
		krdma_rx_deliver(conn, rx);
	}
	if (bh)
		local_bh_enable();
}

/**
 * krdma_msg_release - give back a message the recv callback kept
 * @conn: its connection
 * @msg: the message
 *
 * Its buffer goes back to the peer, with the credit it held.  A kept
 * message stays valid after its connection failed; release every one
 * before krdma_close() of the connection.  The last one released after
 * the connection failed wakes krdma_conn_waitq(), for an owner that
 * closes it once krdma_msgs_kept() says none is left.
 *
 * Context: process or softirq context; does not sleep.
 */
void krdma_msg_release(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct krdma_rx *rx = container_of(msg, struct krdma_rx, msg);
	void *buf = NULL, *arr = NULL;

	spin_lock_bh(&conn->lock);
	if (WARN_ON_ONCE(!rx->kept)) {
		spin_unlock_bh(&conn->lock);
		return;
	}
	rx->kept = false;
	conn->rx_kept--;
	if (rx->gone) {
		/* Teardown took the others: this one goes now. */
		buf = rx->buf;
		rx->buf = NULL;
		rx->gone = false;
		if (!conn->rx_kept) {
			arr = conn->rx_gone;
			conn->rx_gone = NULL;
		}
	} else if (!conn->rx_closed) {
		krdma_repost_locked(conn, rx, false);
	}
	/*
	 * Woken under the lock: an owner that reads krdma_msgs_kept() 0
	 * (under the lock too) may close the connection and free it at
	 * once, so nothing of @conn is touched after the unlock.
	 */
	if (conn->rx_closed && !conn->rx_kept)
		wake_up_all(&conn->wq);
	spin_unlock_bh(&conn->lock);
	kfree(buf);
	kfree(arr);
}
EXPORT_SYMBOL_GPL(krdma_msg_release);

/**
 * krdma_msgs_kept - how many messages of a connection its consumer holds
 * @conn: the connection
 *
 * Counts the messages the recv callback kept (KRDMA_MSG_KEEP) and has not
 * released, a message whose recv callback is running now (it holds it
 * until it returns), and those passed on to krdma_recv() (KRDMA_MSG_QUEUE,
 * or a connection without a recv callback) that it has not taken yet (the
 * teardown of a failed connection drops these).  The count is stable
 * only after krdma_conn_shutdown(), which delivers no message once it
 * returned: from then on it only goes down, by krdma_msg_release(), and
 * 0 stays 0.  Before, a message may arrive, or a recv callback return,
 * at any time.  A consumer that shares a connection between owners (a
 * session) closes a failed one only when this is 0 once it is shut
 * down; the last krdma_msg_release() then wakes krdma_conn_waitq().
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: the number of messages held.
 */
u32 krdma_msgs_kept(struct krdma_conn *conn)
{
	u32 n;

	spin_lock_bh(&conn->lock);
	n = conn->rx_kept;
	spin_unlock_bh(&conn->lock);
	return n;
}
EXPORT_SYMBOL_GPL(krdma_msgs_kept);

/*
 * The connection's memory goes: messages a consumer never released
 * (against krdma_msg_release()'s rule) go with it.
 */
void krdma_conn_free_rx_gone(struct krdma_conn *conn)
{
	u32 i;

	if (!conn->rx_gone)
		return;
	for (i = 0; i < conn->nr_rx; i++)
		kfree(conn->rx_gone[i].buf);
	kfree(conn->rx_gone);
	conn->rx_gone = NULL;
}

static bool krdma_rx_ready(struct krdma_conn *conn)
{
	bool ready;

	spin_lock_bh(&conn->lock);
	ready = !list_empty(&conn->recvq) || !krdma_conn_usable(conn) ||
		conn->rx_closed;
	spin_unlock_bh(&conn->lock);
	return ready;
}

/**
 * krdma_recv_queued - how many messages wait to be received?
 * @conn: the connection (without a recv callback)
 *
 * Counts the messages (and write-with-immediate notices) that arrived and
 * that krdma_recv() has not taken yet.  Each holds one of the peer's
 * credits: a receiver that lets queue depth of them wait has stopped its
 * peer, which is how a test makes a sender meet backpressure.  Wait for a
 * change on krdma_conn_waitq().
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: the number of messages waiting.
 */
u32 krdma_recv_queued(struct krdma_conn *conn)
{
	struct krdma_rx *rx;
	u32 n = 0;

	spin_lock_bh(&conn->lock);
	list_for_each_entry(rx, &conn->recvq, list)
		n++;
	spin_unlock_bh(&conn->lock);
	return n;
}
EXPORT_SYMBOL_GPL(krdma_recv_queued);

/**
 * krdma_recv_ready - is a message waiting to be received?
 * @conn: the connection (without a recv callback)
 *
 * For poll(): neither consumes the message nor sleeps.  Wait for it on
 * krdma_conn_waitq().
 *
 * Context: any but hard interrupt.
 * Return: true when krdma_recv() would return a message at once.
 */
bool krdma_recv_ready(struct krdma_conn *conn)
{
	bool ready;

	spin_lock_bh(&conn->lock);
	ready = !list_empty(&conn->recvq);
	spin_unlock_bh(&conn->lock);
	return ready;
}
EXPORT_SYMBOL_GPL(krdma_recv_ready);

/**
 * krdma_recv_ex - receive the next message or write-with-immediate notice
 * @conn: the connection
 * @buf: where to copy the message
 * @len: size of @buf; a longer message fails with -EMSGSIZE and stays queued
 * @info: filled in: imm_valid and imm for a notice from krdma_write_imm()
 *	(which arrives as an empty message, in order with the others) and
 *	for a message the peer sent with KRDMA_SEND_IMM (its bytes are
 *	returned as any message's); may be NULL
 * @timeout: jiffies to wait (MAX_SCHEDULE_TIMEOUT: forever); interruptible
 *
 * Built on the recv callback: a connection without one of its consumer's
 * gets krdma's own, which keeps each message in order until this copies
 * it out and releases it; on a connection with one, this receives what
 * that callback passed on (KRDMA_MSG_QUEUE), and waits until @timeout
 * where it passes nothing on.  Messages that arrived before the
 * connection failed are still delivered, until krdma_close() (or the
 * teardown of a failed connection) drops what was not taken.
 *
 * Context: process; sleeps, interruptibly, up to @timeout (a polled
 * connection is polled meanwhile).
 * Return: the message length, or -ETIMEDOUT, -ERESTARTSYS, -EMSGSIZE, or
 * the connection's error.
 * A connection can fail with -ETIMEDOUT too (its peer's heartbeats, a
 * completion that never came): a caller that loops on -ETIMEDOUT must ask
 * krdma_conn_error() whether the connection is still there, or it spins.
 */
int krdma_recv_ex(struct krdma_conn *conn, void *buf, size_t len,
		  struct krdma_recv_info *info, long timeout)
{
	struct krdma_rx *rx;
	long left;
	int ret;

	left = krdma_wait_event_interruptible_timeout(conn, conn->wq,
						      krdma_rx_ready(conn),
						      timeout);
	if (left < 0)
		return left;

	spin_lock_bh(&conn->lock);
	rx = list_first_entry_or_null(&conn->recvq, struct krdma_rx, list);
	if (!rx) {
		ret = krdma_conn_usable(conn) ? -ETIMEDOUT :
		      (conn->error ?: -ENOTCONN);
		spin_unlock_bh(&conn->lock);
		return ret;
	}
	if (rx->msg.len > len) {
		spin_unlock_bh(&conn->lock);
		return -EMSGSIZE;
	}
	/* Still kept: teardown leaves its buffer to krdma_msg_release(). */
	list_del_init(&rx->list);
	spin_unlock_bh(&conn->lock);

	if (info) {
		info->imm_valid = rx->msg.imm_valid;
		info->imm = rx->msg.imm;
		info->inv_valid = rx->msg.inv_valid;
		info->inv_rkey = rx->msg.inv_rkey;
	}
	if (rx->msg.len)
		memcpy(buf, rx->msg.data, rx->msg.len);
	ret = rx->msg.len;
	krdma_msg_release(conn, &rx->msg);
	return ret;
}
EXPORT_SYMBOL_GPL(krdma_recv_ex);

/**
 * krdma_recv - receive the next message
 * @conn: the connection
 * @buf: where to copy the message
 * @len: size of @buf; a longer message fails with -EMSGSIZE and stays queued
 * @timeout: jiffies to wait (MAX_SCHEDULE_TIMEOUT: forever); interruptible
 *
 * As krdma_recv_ex() without the immediate data.
 *
 * Context: process; sleeps, as krdma_recv_ex().
 * Return: the message length, or a negative errno.
 */
int krdma_recv(struct krdma_conn *conn, void *buf, size_t len, long timeout)
{
	return krdma_recv_ex(conn, buf, len, NULL, timeout);
}
EXPORT_SYMBOL_GPL(krdma_recv);

/* ---- send ---------------------------------------------------------- */

/*
 * Post a header-only message from @tx (the credit message's buffer, the
 * heartbeat's), with conn->lock held.  A failed post fails the connection.
 */
int krdma_post_hdr_locked(struct krdma_conn *conn, struct krdma_tx *tx,
			  u32 type, u32 flags, u32 credits)
{
	struct ib_sge sge = {
		.addr	= tx->dma,
		.length	= KRDMA_HDR_LEN,
		.lkey	= conn->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe		= &tx->cqe,
		.sg_list	= &sge,
		.num_sge	= 1,
		.opcode		= IB_WR_SEND,
		.send_flags	= IB_SEND_SIGNALED,
	};
	int ret;

	krdma_msg_encode(tx->buf, type, flags, credits, 0);
	krdma_dma_sync_for_device(conn->kdev->ibdev, tx->dma, KRDMA_HDR_LEN,
				  DMA_TO_DEVICE);
	ret = krdma_fault_post() ? -ENOMEM : ib_post_send(conn->qp, &wr, NULL);
	if (ret)
		krdma_conn_fail_locked(conn, ret, type == KRDMA_MSG_HB ?
				       "a heartbeat" : "a credit message");
	return ret;
}

static int krdma_post_ctl_locked(struct krdma_conn *conn)
{
	u32 flags = krdma_credit_hdr_ctl_ack(&conn->cr) ? KRDMA_MSG_F_CTL_ACK : 0;
	int ret;

	if (!conn->qp_ok)
		return -ENOTCONN;
	ret = krdma_post_hdr_locked(conn, &conn->ctl_tx, KRDMA_MSG_CREDIT, flags,
				    krdma_credit_hdr_credits(&conn->cr));
	if (ret)
		return ret;
	krdma_credit_sent(&conn->cr, true);
	return 0;
}

void krdma_credit_msg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_tx *tx = container_of(wc->wr_cqe, struct krdma_tx, cqe);

	if (krdma_inject_wc(tx->conn, &tx->conn->inj, cq, wc, KRDMA_INJ_SEND))
		return;
	if (wc->status != IB_WC_SUCCESS)
		krdma_wc_error(tx->conn, wc, "credit message");
}

/*
 * Room freed on @conn, with conn->lock released (its update was made
 * under it): the consumer's room callback if a nowait call found none
 * since the last one.  The flag is set and cleared under conn->lock, in
 * the same sections that take and free the room, so no -EAGAIN goes
 * without its callback.
 */
void krdma_room(struct krdma_conn *conn)
{
	const struct krdma_conn_ops *ops = conn->opts.ops;
	bool call;

	if (!ops || !ops->room || !READ_ONCE(conn->room_wanted))
		return;
	spin_lock_bh(&conn->lock);
	call = conn->room_wanted;
	conn->room_wanted = false;
	spin_unlock_bh(&conn->lock);
	if (call)
		ops->room(conn);
}

void krdma_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_tx *tx = container_of(wc->wr_cqe, struct krdma_tx, cqe);
	struct krdma_conn *conn = tx->conn;
	struct krdma_req *req;
	int status = 0;
	bool wake;

	if (krdma_inject_wc(conn, &conn->inj, cq, wc, KRDMA_INJ_SEND))
		return;
	trace_krdma_send_done(conn->name,
			      wc->status == IB_WC_SUCCESS ? tx->len : 0,
			      wc->status);
	if (wc->status != IB_WC_SUCCESS) {
		krdma_wc_error(conn, wc, "send");
		status = krdma_op_errno(conn, wc);
	}
	/* The caller's memory is its own again once ->done runs. */
	krdma_tx_unmap(conn, tx);
	spin_lock_bh(&conn->lock);
	req = tx->req;
	tx->req = NULL;
	/*
	 * A free buffer matters only to a sender that found none: waking
	 * conn->wq on every completion would also wake a receiver waiting
	 * for a message and every other sleeper on the connection, for
	 * nothing.
	 */
	wake = list_empty(&conn->tx_free);
	list_add(&tx->list, &conn->tx_free);
	spin_unlock_bh(&conn->lock);
	if (wake)
		wake_up_all(&conn->wq);
	if (req) {
		req->status = status;
		if (status)
			req->len = 0;
		req->done(req);
	}
	krdma_room(conn);
}

/**
 * krdma_send_ready - may a message go now, or will none ever?
 * @conn: the connection
 *
 * A message may go when the peer has given a credit and a send buffer is
 * free: then krdma_send_async() and krdma_sendv_async() with @nowait do
 * not return -EAGAIN.  Also true once the connection is no longer usable,
 * when they fail with its error at once.  For a consumer that posts with
 * @nowait and waits for credits itself, on krdma_conn_waitq(), with a
 * bound of its own (a peer that returns no credit may be gone: give it up
 * with krdma_conn_fail()).
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: true when a send would not have to wait for a credit.
 */
bool krdma_send_ready(struct krdma_conn *conn)
{
	bool ok;

	spin_lock_bh(&conn->lock);
	ok = !krdma_conn_usable(conn) ||
	     (conn->cr.credits && !list_empty(&conn->tx_free));
	spin_unlock_bh(&conn->lock);
	return ok;
}
EXPORT_SYMBOL_GPL(krdma_send_ready);

/*
 * Wait for a credit (or the connection's end) for at most *@left jiffies,
 * and take what was waited off *@left.  Waiting is the receiver's
 * backpressure, not a failure: the connection stays up whatever this
 * returns.  Return: 0 (try again), -EAGAIN (*@left was 0: do not wait),
 * -ETIMEDOUT, -ERESTARTSYS.
 */
static int krdma_credit_wait(struct krdma_conn *conn, long *left)
{
	long t;

	if (!*left)
		return -EAGAIN;
	/* Unlocked reads: what the trace shows may be a moment old. */
	trace_krdma_credit_stall(conn->name, READ_ONCE(conn->cr.credits),
				 conn->depth, !list_empty(&conn->tx_free));
	t = krdma_wait_event_interruptible_timeout(conn, conn->wq,
						   krdma_send_ready(conn), *left);
	if (t < 0)
		return t;
	if (!t)
		return -ETIMEDOUT;
	if (*left != MAX_SCHEDULE_TIMEOUT)
		*left = t;
	return 0;
}

/* What kind of SEND a message goes as (krdma_post_msg_locked()). */
enum krdma_tx_kind {
	KRDMA_TX_PLAIN,
	KRDMA_TX_INV,		/* SEND_WITH_INV of the rkey given */
	KRDMA_TX_IMM,		/* SEND_WITH_IMM of the value given */
};

/*
 * May @v be sent from where it is, mapped for the device as one SGE?
 * Only memory of the kernel's linear map, which is physically contiguous:
 * vmalloc, vmap'ed stacks and module memory are copied instead.
 */
static bool krdma_kvec_mappable(const struct kvec *v)
{
	const char *p = v->iov_base;

	return virt_addr_valid(p) && virt_addr_valid(p + v->iov_len - 1);
}

/*
 * Map the elements of @iov that have bytes into @tx's sge[1..] (tx->nmap
 * of them).  False, with nothing left mapped, when one is not mappable:
 * the message is copied then.
 */
static bool krdma_tx_map(struct krdma_conn *conn, struct krdma_tx *tx,
			 const struct kvec *iov, int nr)
{
	struct ib_sge *sge = tx->sge;
	int i;

	for (i = 0; i < nr; i++)
		if (iov[i].iov_len && !krdma_kvec_mappable(&iov[i]))
			return false;
	for (i = 0; i < nr; i++) {
		struct ib_sge *s = &sge[tx->nmap + 1];
		u64 dma;

		if (!iov[i].iov_len)
			continue;
		if (krdma_dma_map_single(conn->kdev->ibdev, iov[i].iov_base,
					 iov[i].iov_len, DMA_TO_DEVICE,
					 &dma)) {
			krdma_tx_unmap(conn, tx);
			return false;
		}
		s->addr = dma;
		s->length = iov[i].iov_len;
		s->lkey = conn->pd->local_dma_lkey;
		tx->nmap++;
	}
	return true;
}

/*
 * Post a message of @len bytes gathered from @iov in a free tx buffer,
 * with the credit already taken; the header tells the peer what credits
 * and ack we owe.  The payload goes, in this order of preference:
 *  - inline (IB_SEND_INLINE), when header and payload fit in what the
 *    QP grants and it is no SEND_WITH_INV: the device copies from the
 *    kernel addresses while it posts, so nothing is mapped and the
 *    memory is free at return;
 *  - from where it is (@zcopy: the caller keeps it until the send
 *    completes), one SGE per element after the header's, when they are
 *    few enough for the QP and all mappable;
 *  - copied behind the header, one SGE.
 * Called with conn->lock held.  A failed post gives the buffer and the
 * credit back and fails the connection (krdma_conn_fail_locked()).
 */
static int krdma_post_msg_locked(struct krdma_conn *conn, u32 type,
				 const struct kvec *iov, int nr, size_t len,
				 struct krdma_req *req, enum krdma_tx_kind kind,
				 u32 ex, bool zcopy)
{
	u32 lkey = conn->pd->local_dma_lkey;
	struct ib_send_wr wr = {};
	struct krdma_tx *tx;
	struct ib_sge *sge;
	u32 flags, n = 0;
	bool inl, direct;
	int ret, i;

	tx = list_first_entry(&conn->tx_free, struct krdma_tx, list);
	list_del_init(&tx->list);
	sge = tx->sge;
	flags = krdma_credit_hdr_ctl_ack(&conn->cr) ? KRDMA_MSG_F_CTL_ACK : 0;
	if (nr && krdma_fault_malformed(iov[0].iov_base, iov[0].iov_len))
		type = KRDMA_MSG_BAD;
	krdma_msg_encode(tx->buf, type, flags,
			 krdma_credit_hdr_credits(&conn->cr), len);
	for (i = 0; i < nr; i++)
		n += iov[i].iov_len != 0;
	/*
	 * Not a SEND_WITH_INV: siw queues one with inline data, then fails
	 * the post when it starts it (siw_activate_tx_from_sq() takes
	 * inline data for SEND and WRITE only), and later completes the
	 * work request whose post failed.
	 */
	inl = KRDMA_HDR_LEN + len <= conn->max_inline && kind != KRDMA_TX_INV;
	direct = 1 + n <= conn->send_sge &&
		 (inl || (zcopy && krdma_tx_map(conn, tx, iov, nr)));
	if (direct) {
		sge[0].addr = inl ? (uintptr_t)tx->buf : tx->dma;
		sge[0].length = KRDMA_HDR_LEN;
		sge[0].lkey = lkey;
		if (!inl)
			krdma_dma_sync_for_device(conn->kdev->ibdev, tx->dma,
						  KRDMA_HDR_LEN, DMA_TO_DEVICE);
		/* Mapped, the elements are in sge[1..n] already. */
		for (i = 0, n = 0; inl && i < nr; i++) {
			if (!iov[i].iov_len)
				continue;
			n++;
			sge[n].addr = (uintptr_t)iov[i].iov_base;
			sge[n].length = iov[i].iov_len;
			sge[n].lkey = lkey;
		}
		wr.num_sge = 1 + (inl ? n : tx->nmap);
	} else {
		char *p = tx->buf + KRDMA_HDR_LEN;

		for (i = 0; i < nr; i++) {
			memcpy(p, iov[i].iov_base, iov[i].iov_len);
			p += iov[i].iov_len;
		}
		sge[0].addr = inl ? (uintptr_t)tx->buf : tx->dma;
		sge[0].length = KRDMA_HDR_LEN + len;
		sge[0].lkey = lkey;
		if (!inl)
			krdma_dma_sync_for_device(conn->kdev->ibdev, tx->dma,
						  KRDMA_HDR_LEN + len,
						  DMA_TO_DEVICE);
		wr.num_sge = 1;
	}
	if (req)
		req->len = len;
	tx->req = req;
	tx->len = len;
	wr.wr_cqe = &tx->cqe;
	wr.sg_list = sge;
	wr.opcode = IB_WR_SEND;
	if (kind == KRDMA_TX_INV) {
		wr.opcode = IB_WR_SEND_WITH_INV;
		wr.ex.invalidate_rkey = ex;
	} else if (kind == KRDMA_TX_IMM) {
		wr.opcode = IB_WR_SEND_WITH_IMM;
		wr.ex.imm_data = cpu_to_be32(ex);
	}
	wr.send_flags = IB_SEND_SIGNALED | (inl ? IB_SEND_INLINE : 0);
	ret = krdma_fault_op_post() ? -ENOTCONN :
	      ib_post_send(conn->qp, &wr, NULL);
	if (ret) {
		krdma_tx_unmap(conn, tx);
		tx->req = NULL;
		list_add(&tx->list, &conn->tx_free);
		krdma_credit_undo(&conn->cr);
		krdma_conn_fail_locked(conn, ret, type == KRDMA_MSG_IMM ?
				       "a write-with-immediate notice" :
				       "a message");
		return ret;
	}
	krdma_credit_sent(&conn->cr, false);
	if (inl)
		atomic64_inc(&conn->stats.send_inline);
	else if (tx->nmap)
		atomic64_inc(&conn->stats.send_zcopy);
	return 0;
}

/*
 * Post a message (@kind and @ex as krdma_post_msg_locked()'s), waiting
 * for a credit unless @nowait.  @len is the total of @iov, checked by
 * the caller against nothing but the connection's maximum.
 */
static int __krdma_sendv_async(struct krdma_conn *conn,
			       const struct kvec *iov, int nr, size_t len,
			       struct krdma_req *req, bool nowait,
			       enum krdma_tx_kind kind, u32 ex, bool zcopy)
{
	long left = KRDMA_POST_TIMEOUT;
	int ret;

	if (len > conn->max_msg)
		return -EMSGSIZE;
	for (;;) {
		spin_lock_bh(&conn->lock);
		if (!krdma_conn_usable(conn)) {
			ret = conn->error ?: -ENOTCONN;
			spin_unlock_bh(&conn->lock);
			return ret;
		}
		if (!list_empty(&conn->tx_free) && krdma_credit_take(&conn->cr))
			break;
		/*
		 * Counted whether the caller sleeps or takes -EAGAIN: it is
		 * the receiver's backpressure either way.
		 */
		if (!conn->cr.credits)
			atomic64_inc(&conn->stats.credit_waits);
		if (nowait)
			krdma_room_want_locked(conn);
		spin_unlock_bh(&conn->lock);
		if (nowait)
			return -EAGAIN;
		ret = krdma_credit_wait(conn, &left);
		if (ret)
			return ret;
	}
	ret = krdma_post_msg_locked(conn, KRDMA_MSG_DATA, iov, nr, len, req,
				    kind, ex, zcopy);
	spin_unlock_bh(&conn->lock);
	if (ret)
		return ret;
	atomic64_inc(&conn->stats.send_ops);
	atomic64_add(len, &conn->stats.send_bytes);
	return 0;
}

static int __krdma_send_async(struct krdma_conn *conn, const void *buf,
			      size_t len, struct krdma_req *req, bool nowait,
			      enum krdma_tx_kind kind, u32 ex)
{
	struct kvec v = { .iov_base = (void *)buf, .iov_len = len };

	return __krdma_sendv_async(conn, &v, 1, len, req, nowait, kind, ex,
				   false);
}

/**
 * krdma_send_async - send a message, completing through a callback
 * @conn: the connection
 * @buf: the message; copied before this returns, so it may be reused
 * @len: its length, up to krdma_max_msg_size() (0 is a valid message)
 * @req: request whose ->done runs (completion context) when the peer has
 *	the message; or NULL when the sender need not know (a send that
 *	fails still fails the connection)
 * @nowait: fail with -EAGAIN instead of sleeping when no credit is free
 *
 * Context: process or softirq with @nowait (it never sleeps then); process
 * context otherwise, where it waits at most KRDMA_POST_TIMEOUT (30 s) for a
 * credit.
 *
 * Return: 0 if posted (->done will run), else a negative errno and ->done
 * will not run: -EMSGSIZE, -EAGAIN, -ETIMEDOUT (no credit in 30 s; the
 * connection stays up), -ERESTARTSYS, or the connection's error.
 */
int krdma_send_async(struct krdma_conn *conn, const void *buf, size_t len,
		     struct krdma_req *req, bool nowait)
{
	return __krdma_send_async(conn, buf, len, req, nowait, KRDMA_TX_PLAIN,
				  0);
}
EXPORT_SYMBOL_GPL(krdma_send_async);

/**
 * krdma_send_inv_async - send a message that invalidates a peer's rkey
 * @conn: the connection
 * @buf: the message; copied before this returns
 * @len: its length, up to krdma_max_msg_size()
 * @inv_rkey: the rkey of a token the peer gave us on @conn (one from its
 *	MR pool, krdma_reg_sg_nowait(), when the peer is to be told)
 * @req: request whose ->done runs (completion context) when the peer has
 *	the message, or NULL (as krdma_send_async())
 * @nowait: fail with -EAGAIN instead of sleeping when no credit is free
 *
 * A SEND_WITH_INV: the peer's device invalidates @inv_rkey before the
 * peer's krdma sees the message, so the peer can reuse that memory
 * without a LOCAL_INV of its own (nvme-rdma's completion of an I/O).  The
 * peer's recv callback finds struct krdma_msg's inv_valid and inv_rkey
 * set when @inv_rkey was one of its pool registrations.  An rkey the peer
 * does not know in @conn's protection domain fails the peer's receive and
 * the connection.  Once this was posted, use of the token is over: do not
 * start RDMA through it after this call.
 *
 * Context: as krdma_send_async(): with @nowait, any context up to softirq;
 * does not sleep.
 *
 * Return: as krdma_send_async(); -EOPNOTSUPP when the device cannot.
 */
int krdma_send_inv_async(struct krdma_conn *conn, const void *buf, size_t len,
			 u32 inv_rkey, struct krdma_req *req, bool nowait)
{
	if (!conn->dev_inv)
		return -EOPNOTSUPP;
	return __krdma_send_async(conn, buf, len, req, nowait, KRDMA_TX_INV,
				  inv_rkey);
}
EXPORT_SYMBOL_GPL(krdma_send_inv_async);

/*
 * A gather send's arguments: 0 with the total in *@len, or a negative
 * errno and one line saying what is wrong.
 */
static int krdma_sendv_check(struct krdma_conn *conn, const struct kvec *iov,
			     int nr, u32 flags, size_t *len)
{
	size_t total = 0;
	int i;

	if (flags & ~KRDMA_SEND_IMM) {
		pr_warn_ratelimited("%s: gather send: unknown flags %#x\n",
				    conn->name, flags);
		return -EINVAL;
	}
	if (nr < 0 || nr > KRDMA_MAX_SENDV_IOV || (nr && !iov)) {
		pr_warn_ratelimited("%s: gather send: %d elements%s, at most %d\n",
				    conn->name, nr, iov ? "" : " at NULL",
				    KRDMA_MAX_SENDV_IOV);
		return -EINVAL;
	}
	for (i = 0; i < nr; i++) {
		if (iov[i].iov_len && !iov[i].iov_base) {
			pr_warn_ratelimited("%s: gather send: element %d has %zu bytes at NULL\n",
					    conn->name, i, iov[i].iov_len);
			return -EINVAL;
		}
		if (iov[i].iov_len > conn->max_msg - total) {
			pr_warn_ratelimited("%s: gather send: more than %u bytes, the connection's largest message\n",
					    conn->name, conn->max_msg);
			return -EMSGSIZE;
		}
		total += iov[i].iov_len;
	}
	if ((flags & KRDMA_SEND_IMM) && conn->iwarp) {
		pr_warn_ratelimited("%s: gather send: no immediate data on iWARP (%s)\n",
				    conn->name, conn->devname);
		return -EOPNOTSUPP;
	}
	*len = total;
	return 0;
}

/**
 * krdma_sendv_async - send one message gathered from several buffers
 * @conn: the connection
 * @iov: the message's pieces, in order; an element may have 0 bytes
 * @nr: how many, 0 to KRDMA_MAX_SENDV_IOV
 * @flags: 0, or KRDMA_SEND_IMM
 * @imm: with KRDMA_SEND_IMM, the immediate value that goes with the
 *	message (a SEND_WITH_IMM): the peer's recv callback finds it in
 *	struct krdma_msg's imm_valid and imm (krdma_recv_ex(): struct
 *	krdma_recv_info), with the message's bytes in data and len
 * @req: request whose ->done runs (completion context) when the peer has the
 *	message, or NULL
 * @nowait: fail with -EAGAIN instead of sleeping when no credit is free
 *
 * The peer receives one message: the elements' bytes one after the
 * other, at most krdma_max_msg_size() in all, with the same flow control
 * and ordering as krdma_send_async().  How the bytes leave:
 *  - when the message fits in the QP's inline data, the device copies
 *    it while this call posts it;
 *  - else, with @req, when the elements that have bytes are at most
 *    krdma_max_send_sge() and all are in the kernel's linear map
 *    (kmalloc, page allocator; not vmalloc, not a vmap'ed stack, not
 *    module data), each is mapped and sent from where it is, without a
 *    copy: the memory must stay unchanged until ->done runs;
 *  - else it is copied into the connection's send buffer before this
 *    returns.
 * So with @req the elements belong to krdma until ->done; without, they
 * are free at return.  The immediate travels in the work request, beside
 * krdma's own header (which carries the credits): it takes nothing from
 * flow control and the message costs the one credit any message costs.
 * iWARP has no immediate data: KRDMA_SEND_IMM fails there.
 *
 * Context: with @nowait, process or softirq context, or with a spinlock
 * held; it never sleeps (a mapping allocates, if at all, atomically).
 * Without @nowait, process context only: it waits at most
 * KRDMA_POST_TIMEOUT (30 s) for a credit.
 *
 * Return: 0 if posted (->done will run), else a negative errno and ->done
 * will not run: -EINVAL (unknown @flags, @nr out of range, an element
 * with bytes and no address), -EMSGSIZE (more than krdma_max_msg_size()
 * in all; nothing is sent and the connection stays up), -EOPNOTSUPP
 * (KRDMA_SEND_IMM on iWARP), -EAGAIN, -ETIMEDOUT, -ERESTARTSYS, or the
 * connection's error.
 */
int krdma_sendv_async(struct krdma_conn *conn, const struct kvec *iov, int nr,
		      u32 flags, u32 imm, struct krdma_req *req, bool nowait)
{
	size_t len;
	int ret;

	ret = krdma_sendv_check(conn, iov, nr, flags, &len);
	if (ret)
		return ret;
	return __krdma_sendv_async(conn, iov, nr, len, req, nowait,
				   flags & KRDMA_SEND_IMM ? KRDMA_TX_IMM :
				   KRDMA_TX_PLAIN, imm, req);
}
EXPORT_SYMBOL_GPL(krdma_sendv_async);

/**
 * krdma_max_send_sge - elements a gather send sends without a copy
 * @conn: an established connection
 *
 * How many elements with bytes krdma_sendv_async() and krdma_sendv()
 * post from where they are (the QP's send SGEs less the header's; 0: a
 * gather send always copies).  More are copied into one buffer.
 *
 * Context: any; does not sleep.
 * Return: that number of elements.
 */
u32 krdma_max_send_sge(struct krdma_conn *conn)
{
	return conn->send_sge ? conn->send_sge - 1 : 0;
}
EXPORT_SYMBOL_GPL(krdma_max_send_sge);

struct krdma_sync_req {
	struct krdma_req	req;
	struct completion	done;
};

static void krdma_sync_done(struct krdma_req *req)
{
	complete(&container_of(req, struct krdma_sync_req, req)->done);
}

/*
 * Fail @conn with @err at once and flush its QP: tear it down, or with
 * @qp_held (the caller holds a QP reference, which teardown would wait
 * for) move the QP to ERROR, which flushes it all the same.  Process
 * context; sleeps.
 */
static void krdma_conn_fail_now(struct krdma_conn *conn, int err,
				bool qp_held)
{
	krdma_conn_set_error(conn, err);
	if (!qp_held)
		krdma_conn_teardown(conn, err);
	else
		krdma_conn_qp_error(conn);
}

/*
 * The caller's task is being killed while it waits for @what, posted or
 * about to be: it gives up on it.  The connection fails with
 * -ECONNABORTED and its QP is flushed (krdma_conn_fail_now(), @qp_held
 * as there), with one rate-limited line naming the task, so that nothing
 * of the caller's is the device's once the flush is through.  The one
 * place a fatal signal fails a connection.  Returns -EINTR, what the
 * caller returns.  Process context; sleeps.
 */
int krdma_wait_abandon(struct krdma_conn *conn, const char *what,
		       bool qp_held)
{
	pr_warn_ratelimited("%s: %s abandoned: %s[%d] waiting for it is being killed, failing the connection\n",
			    conn->name, what, current->comm,
			    task_pid_nr(current));
	krdma_conn_fail_now(conn, -ECONNABORTED, qp_held);
	return -EINTR;
}

/*
 * Wait for a posted @what: krdma's one "post and wait" helper, for every
 * synchronous call built on an asynchronous one.  The completion always
 * comes, at worst as a flush.  A peer that never acknowledges (iWARP
 * leaves retries to TCP, which takes many minutes) or a send queue that
 * stops moving fails the connection after @timeout (jiffies; 0:
 * KRDMA_POST_TIMEOUT; MAX_SCHEDULE_TIMEOUT: none), and then the flush
 * completes what was posted: the caller's request is its own again when
 * this returns, whatever it returns.  A fatal signal does the same at
 * once, with -ECONNABORTED as the connection's error, so that a process
 * being killed does not wait for a stalled peer (and a caller whose
 * memory the device may be using returns only once it no longer is).
 * Other signals do not end the wait.  @qp_held: the caller holds a QP
 * reference (krdma_conn_qp_get()), which teardown would wait for, so the
 * QP is moved to ERROR here instead, which flushes it all the same.
 * Returns 0, -ETIMEDOUT or (the fatal signal) -EINTR.  Process context.
 */
int __krdma_wait_posted(struct krdma_conn *conn, struct completion *done,
			long timeout, const char *what, bool qp_held)
{
	long left;
	int ret;

	if (!timeout)
		timeout = KRDMA_POST_TIMEOUT;
	left = __krdma_wait_completion(conn, done, timeout, true);
	if (left > 0)
		return 0;
	if (left < 0) {
		ret = krdma_wait_abandon(conn, what, qp_held);
	} else {
		pr_warn_ratelimited("%s: %s not completed by the device in %u ms, failing the connection\n",
				    conn->name, what,
				    jiffies_to_msecs(timeout));
		ret = -ETIMEDOUT;
		krdma_conn_fail_now(conn, ret, qp_held);
	}
	/* Bounded: the flush (teardown's drain) completes it. */
	krdma_wait_completion(conn, done, MAX_SCHEDULE_TIMEOUT);
	return ret;
}

/*
 * Post a message (as __krdma_sendv_async()) and wait for it.  The wait
 * lasts until the device completes the send, so @iov may go out without a
 * copy (@zcopy).
 */
static int __krdma_sendv(struct krdma_conn *conn, const struct kvec *iov,
			 int nr, size_t len, long timeout,
			 enum krdma_tx_kind kind, u32 ex, bool zcopy)
{
	struct krdma_sync_req s;
	long left = timeout;
	int ret;

	if (len > conn->max_msg)
		return -EMSGSIZE;
	init_completion(&s.done);
	s.req.done = krdma_sync_done;
	for (;;) {
		ret = __krdma_sendv_async(conn, iov, nr, len, &s.req, true,
					  kind, ex, zcopy);
		if (ret != -EAGAIN)
			break;
		ret = krdma_credit_wait(conn, &left);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	ret = krdma_wait_posted(conn, &s.done, 0,
				"send");
	return ret ?: s.req.status;
}

static int __krdma_send(struct krdma_conn *conn, const void *buf, size_t len,
			long timeout, enum krdma_tx_kind kind, u32 ex)
{
	struct kvec v = { .iov_base = (void *)buf, .iov_len = len };

	return __krdma_sendv(conn, &v, 1, len, timeout, kind, ex, false);
}

/**
 * krdma_send - send a message and wait until the peer has it
 * @conn: the connection
 * @buf: the message
 * @len: its length, up to krdma_max_msg_size()
 * @timeout: jiffies to wait for a credit (0: do not wait;
 *	MAX_SCHEDULE_TIMEOUT: forever)
 *
 * Context: process; sleeps.  Waiting for a credit is bounded by @timeout
 * and leaves the connection up when it runs out.  Once posted, the send
 * is waited for until the device completes it; one the device has not
 * completed in KRDMA_POST_TIMEOUT fails the connection (-ETIMEDOUT).  A
 * fatal signal ends that wait at once: the connection fails with
 * -ECONNABORTED, and the call returns -EINTR once its teardown flushed
 * the send (its memory is the caller's again).
 *
 * Return: 0, or -EMSGSIZE, -EAGAIN (@timeout 0 and no credit),
 * -ETIMEDOUT, -ERESTARTSYS, -EINTR, or the connection's error
 * (-ECONNRESET after a disconnect, -ENODEV after device removal).
 */
int krdma_send(struct krdma_conn *conn, const void *buf, size_t len,
	       long timeout)
{
	return __krdma_send(conn, buf, len, timeout, KRDMA_TX_PLAIN, 0);
}
EXPORT_SYMBOL_GPL(krdma_send);

/**
 * krdma_sendv - send one message gathered from several buffers, and wait
 * @conn: the connection
 * @iov: the message's pieces, in order
 * @nr: how many, 0 to KRDMA_MAX_SENDV_IOV
 * @flags: 0, or KRDMA_SEND_IMM
 * @imm: with KRDMA_SEND_IMM, the immediate value that goes with it
 * @timeout: jiffies to wait for a credit, as krdma_send()'s
 *
 * krdma_sendv_async() with a request of its own, waited for as
 * krdma_send() waits: the elements are sent from where they are when
 * krdma_sendv_async() says they can be, and are free again at return.
 *
 * Context: process; sleeps.
 *
 * Return: 0, or the errnos of krdma_sendv_async() and krdma_send().
 */
int krdma_sendv(struct krdma_conn *conn, const struct kvec *iov, int nr,
		u32 flags, u32 imm, long timeout)
{
	size_t len;
	int ret;

	ret = krdma_sendv_check(conn, iov, nr, flags, &len);
	if (ret)
		return ret;
	return __krdma_sendv(conn, iov, nr, len, timeout,
			     flags & KRDMA_SEND_IMM ? KRDMA_TX_IMM :
			     KRDMA_TX_PLAIN, imm, true);
}
EXPORT_SYMBOL_GPL(krdma_sendv);

/**
 * krdma_send_inv - send a message that invalidates a peer's rkey, and wait
 * @conn: the connection
 * @buf: the message
 * @len: its length, up to krdma_max_msg_size()
 * @inv_rkey: the rkey of a token the peer gave us on @conn
 * @timeout: jiffies to wait for a credit, as krdma_send()'s
 *
 * krdma_send() with the remote invalidation of krdma_send_inv_async():
 * the answer of a server that is done with the client's token (a storage
 * target completing an I/O), so that the client need not invalidate it
 * itself.
 *
 * Context: process; sleeps.
 *
 * Return: as krdma_send(); -EOPNOTSUPP when the device cannot.
 */
int krdma_send_inv(struct krdma_conn *conn, const void *buf, size_t len,
		   u32 inv_rkey, long timeout)
{
	if (!conn->dev_inv)
		return -EOPNOTSUPP;
	return __krdma_send(conn, buf, len, timeout, KRDMA_TX_INV, inv_rkey);
}
EXPORT_SYMBOL_GPL(krdma_send_inv);

/*
 * Post a zero-length RDMA WRITE with immediate: it consumes one of the
 * peer's receives, so it takes a credit like a message does, and a send
 * queue slot.  While we owe the peer a credit ack
 * (krdma_credit_imm_needs_hdr) the notice goes as a KRDMA_MSG_IMM message
 * instead, which the peer delivers the same way, and *@slot_used is false:
 * the message's send buffer accounts for it.  @take: the caller holds no
 * slot (nowait), and one is taken here, in the same hold of conn->lock as
 * the credit, only for a notice that goes: a call that returns -EAGAIN
 * then never held a slot, which it would have to give back without the
 * room callback (that would run the caller's retry inside this call),
 * owing it to another poster the slot kept out.  Otherwise the caller
 * took a slot and gives it back unless *@slot_used.  -EAGAIN: no slot, no
 * credit, or no send buffer for the message.  Any context but hard
 * interrupt.
 */
static int krdma_imm_post(struct krdma_conn *conn, u64 raddr, u32 rkey,
			  u32 imm, struct krdma_req *req, bool take,
			  bool *slot_used)
{
	__be32 wire = cpu_to_be32(imm);
	struct ib_rdma_wr wr = {};
	struct krdma_xop *x;
	int ret;

	*slot_used = false;
	spin_lock_bh(&conn->lock);
	if (!krdma_conn_usable(conn)) {
		ret = conn->error ?: -ENOTCONN;
		goto out;
	}
	ret = -EAGAIN;
	if (take && conn->rw_slots + 1 > conn->depth) {
		krdma_room_want_locked(conn);
		goto out;
	}
	if (!krdma_credit_take(&conn->cr)) {
		krdma_room_want_locked(conn);
		goto out;
	}
	if (krdma_credit_imm_needs_hdr(&conn->cr)) {
		struct kvec v = { .iov_base = &wire, .iov_len = sizeof(wire) };

		if (list_empty(&conn->tx_free)) {
			krdma_credit_undo(&conn->cr);
			krdma_room_want_locked(conn);
			goto out;
		}
		ret = krdma_post_msg_locked(conn, KRDMA_MSG_IMM, &v, 1,
					    sizeof(wire), req, KRDMA_TX_PLAIN,
					    0, false);
		if (!ret)
			atomic64_inc(&conn->stats.imm_msgs);
		goto out;
	}
	x = krdma_xop_get_locked(conn, KRDMA_TRACE_OP_WRITE_IMM, req);
	if (!x) {
		krdma_credit_undo(&conn->cr);
		goto out;
	}
	wr.wr.wr_cqe = &x->cqe;
	wr.wr.opcode = IB_WR_RDMA_WRITE_WITH_IMM;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.ex.imm_data = wire;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	trace_krdma_rdma_start(conn->name, KRDMA_TRACE_OP_WRITE_IMM, 0);
	if (take)
		conn->rw_slots++;
	ret = krdma_fault_op_post() ? -ENOTCONN :
	      ib_post_send(conn->qp, &wr.wr, NULL);
	if (ret) {
		krdma_credit_undo(&conn->cr);
		krdma_xop_put_locked(conn, x);
		if (take)
			conn->rw_slots--;	/* the connection fails now */
		krdma_conn_fail_locked(conn, ret,
				       "a write-with-immediate notice");
	} else {
		*slot_used = true;
	}
out:
	spin_unlock_bh(&conn->lock);
	return ret;
}

/* As krdma_imm_async(), with @timeout (jiffies) for a credit. */
static int __krdma_imm_async(struct krdma_conn *conn, u64 raddr, u32 rkey,
			     u32 imm, struct krdma_req *req, bool nowait,
			     long timeout)
{
	long left = timeout;
	bool slot_used;
	int ret;

	if (!req || !req->done)
		return -EINVAL;
	if (conn->iwarp)
		return -EOPNOTSUPP;
	/* The slot with the credit, or nothing held (krdma_imm_post()). */
	if (nowait)
		return krdma_imm_post(conn, raddr, rkey, imm, req, true,
				      &slot_used);
	ret = krdma_slots_get(conn, 1, false);
	if (ret)
		return ret;
	for (;;) {
		ret = krdma_imm_post(conn, raddr, rkey, imm, req, false,
				     &slot_used);
		if (ret != -EAGAIN)
			break;
		ret = krdma_credit_wait(conn, &left);
		if (ret)
			break;
	}
	if (ret || !slot_used)
		krdma_slots_put(conn, 1);
	return ret;
}

/**
 * krdma_imm_async - post a write-with-immediate notice without waiting
 * @conn: the connection
 * @token: the peer's region the notice is about (with remote write
 *	right); its rkey goes in the work request, no byte moves
 * @offset: where in the region (at most its length)
 * @imm: 32 bits the peer's recv callback gets as a notice (struct
 *	krdma_msg: data NULL, imm_valid, imm), or krdma_recv_ex()
 * @req: ->done runs once, in completion context, when the notice is
 *	through (->status 0, ->len 4: the immediate) or failed
 * @nowait: fail with -EAGAIN instead of waiting when the peer has no
 *	receive free for it (no credit) or the connection has queue depth
 *	operations in flight
 *
 * The asynchronous half of krdma_write_imm(): post the data with
 * krdma_rdma_post() or krdma_rdma_async() first, then this on the same
 * connection; RC keeps a queue pair's work requests in order, so the
 * peer sees the notice after the data it announces is placed.  The notice
 * takes one of the peer's receives, like a message, and arrives in order
 * with the messages.  Nothing is allocated: it uses one of the
 * connection's preallocated contexts (or, while krdma owes the peer a
 * credit acknowledgment, a send buffer, and goes as a message).
 *
 * Context: with @nowait, any context but hard interrupt (softirq, a
 * timer, under a spinlock); never sleeps.  Without it, process context:
 * it sleeps for a slot and up to KRDMA_POST_TIMEOUT (30 s) for a credit.
 * Return: 0 if posted (->done will run); else ->done will not run and the
 * error is -EINVAL (no @req or ->done), -ERANGE (@offset past the token),
 * -EOPNOTSUPP (iWARP has no immediate data: siw), -EAGAIN, -ETIMEDOUT,
 * -ERESTARTSYS (a signal while it waits for a credit), -EINTR (a fatal
 * signal while it waits for a slot), or the connection's error.
 */
int krdma_imm_async(struct krdma_conn *conn, const struct krdma_token *token,
		    u64 offset, u32 imm, struct krdma_req *req, bool nowait)
{
	if (offset > token->length)
		return -ERANGE;
	return __krdma_imm_async(conn, token->addr + offset, token->rkey, imm,
				 req, nowait, KRDMA_POST_TIMEOUT);
}
EXPORT_SYMBOL_GPL(krdma_imm_async);

/* krdma_write_imm()'s notice: post, then krdma_wait_posted(). */
int krdma_post_imm(struct krdma_conn *conn, u64 raddr, u32 rkey, u32 imm,
		   long timeout)
{
	struct krdma_sync_req s;
	int ret;

	init_completion(&s.done);
	s.req.done = krdma_sync_done;
	ret = __krdma_imm_async(conn, raddr, rkey, imm, &s.req, !timeout,
				timeout);
	if (ret)
		return ret;
	return krdma_wait_posted(conn, &s.done, 0,
				 "write-with-immediate notice") ?:
	       s.req.status;
}

/* Teardown: whoever still waits learns the connection is gone. */
void krdma_conn_flush_waiters(struct krdma_conn *conn)
{
	wake_up_all(&conn->wq);
}
