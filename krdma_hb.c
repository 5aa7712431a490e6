// SPDX-License-Identifier: GPL-2.0
/*
 * Heartbeats: noticing a peer that is gone while the connection is idle.
 *
 * An RC connection whose peer vanished (power off, link down, a partition)
 * fails only when something is posted and the transport gives up on it:
 * an idle connection stays "connected" for ever, and on iWARP (siw, TCP
 * underneath) even traffic takes TCP's retransmission timeout, minutes.
 *
 * The two sides agree on an interval in the handshake (the shorter of
 * the two asked for; none if either side turned heartbeats off).  Every
 * interval the active side sends a ping, a header-only KRDMA_MSG_HB, and
 * the passive side answers it with a pong at once, from the receive
 * completion.  Each side has one receive of its own for them and one send
 * buffer, outside flow control: a heartbeat never takes or returns a
 * credit, so it can neither starve the application nor be starved by it.
 * Only the active side pings, and only once its last ping was answered, so
 * at most one ping and one pong are in flight, each landing in a receive
 * that was reposted before the message that let it be sent.
 *
 * Each side counts a tick as silent when nothing arrived from the peer
 * since the previous one (no message, no heartbeat) and no one-sided
 * operation completed (a long transfer may queue a pong behind it, and its
 * progress shows the peer is there).  conn->opts.heartbeat_misses silent
 * ticks in a row (one more on the passive side, whose ticks are not in
 * step with the pings) fail the connection with -ETIMEDOUT; teardown moves
 * the QP to ERROR, which completes everything still posted.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/moduleparam.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "krdma_core.h"
#include "krdma_proto.h"

/*
 * Tests only: pings are received but not answered, as by a peer that
 * stopped (test/guest/heartbeat.sh).
 */
static bool fault_hb_mute;
module_param(fault_hb_mute, bool, 0644);
MODULE_PARM_DESC(fault_hb_mute,
		 "Tests only: receive heartbeats but answer none");

/* Send a ping or a pong from conn->hb_tx, with conn->lock held. */
static int krdma_hb_post_locked(struct krdma_conn *conn, bool pong)
{
	int ret;

	ret = krdma_post_hdr_locked(conn, &conn->hb_tx, KRDMA_MSG_HB,
				    pong ? KRDMA_MSG_F_PONG : 0, 0);
	if (ret)
		return ret;
	conn->hb_tx_busy = true;
	atomic64_inc(&conn->stats.hb_sent);
	return 0;
}

/* The heartbeat send completed: a pong owed meanwhile goes now. */
void krdma_hb_sent(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_tx *tx = container_of(wc->wr_cqe, struct krdma_tx, cqe);
	struct krdma_conn *conn = tx->conn;

	if (krdma_inject_wc(conn, &conn->inj, cq, wc, KRDMA_INJ_HB))
		return;
	if (wc->status != IB_WC_SUCCESS)
		krdma_wc_error(conn, wc, "heartbeat");
	spin_lock_bh(&conn->lock);
	conn->hb_tx_busy = false;
	if (conn->hb_pong_owed && conn->qp_ok) {
		conn->hb_pong_owed = false;
		krdma_hb_post_locked(conn, true);
	}
	spin_unlock_bh(&conn->lock);
}

/*
 * A heartbeat arrived, its receive already reposted; conn->lock held,
 * softirq.  A ping is answered, once the pong buffer is free
 * (krdma_hb_sent()) and the connection established (krdma_hb_start():
 * the passive side may get the first ping before its ESTABLISHED event).
 * A pong lets the active side ping again.
 */
void krdma_hb_rx_locked(struct krdma_conn *conn, bool pong)
{
	atomic64_inc(&conn->stats.hb_received);
	if (pong) {
		conn->hb_ping_out = false;
		conn->nudge_done = true;
		return;
	}
	if (unlikely(READ_ONCE(fault_hb_mute)))
		return;
	if (!conn->qp_ok || conn->hb_tx_busy) {
		conn->hb_pong_owed = true;
		return;
	}
	krdma_hb_post_locked(conn, true);
}

/*
 * The nudges of krdma_hb_first(): the first after KRDMA_NUDGE_FIRST_MS,
 * or half a heartbeat interval if that is shorter (a stuck ping must be
 * nudged out well before the heartbeats give up on its pong: 100 ms x 3
 * would otherwise fail a connection whose ping stuck), each later one
 * after twice as long (at most KRDMA_NUDGE_MAX_MS), at most
 * KRDMA_NUDGE_MAX of them: 15.8 s in all.  An iWARP passive side waits
 * KRDMA_HANDOVER_TIMEOUT_MS for the first ping (krdma_handover_work()):
 * every nudge must be over well before it gives up.
 */
#define KRDMA_NUDGE_FIRST_MS	200
#define KRDMA_NUDGE_MAX_MS	3200
#define KRDMA_NUDGE_MAX		8
static_assert(KRDMA_NUDGE_MAX * KRDMA_NUDGE_MAX_MS < KRDMA_HANDOVER_TIMEOUT_MS);

static void krdma_nudge_queue(struct krdma_conn *conn)
{
	unsigned int first = KRDMA_NUDGE_FIRST_MS;
	unsigned int ms;

	if (conn->hb_ms)
		first = min(first, conn->hb_ms / 2);
	ms = first << min(conn->nudge_count, 4U);

	krdma_conn_get(conn);
	if (!queue_delayed_work(krdma_wq, &conn->nudge_work,
				msecs_to_jiffies(min(ms, KRDMA_NUDGE_MAX_MS))))
		krdma_conn_put(conn);
}

/*
 * A zero-length RDMA WRITE from hb_tx's send queue slot (hb_tx is free):
 * it needs no receive at the peer, and the peer checks no STag for it
 * (RFC 5040, and siw_proc_write()), so it can come at any time.  Its
 * completion is hb_tx's (krdma_hb_sent()).
 */
static int krdma_nudge_post_locked(struct krdma_conn *conn)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe		= &conn->hb_tx.cqe,
			.opcode		= IB_WR_RDMA_WRITE,
			.send_flags	= IB_SEND_SIGNALED,
		},
	};
	int ret;

	ret = ib_post_send(conn->qp, &wr.wr, NULL);
	if (ret) {
		krdma_conn_fail_locked(conn, ret, "a nudge");
		return ret;
	}
	conn->hb_tx_busy = true;
	atomic64_inc(&conn->stats.nudges);
	return 0;
}

static void krdma_nudge_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(to_delayed_work(work),
					       struct krdma_conn, nudge_work);

	spin_lock_bh(&conn->lock);
	if (krdma_conn_usable(conn) && !conn->hb_stopped &&
	    !conn->nudge_done && conn->nudge_count < KRDMA_NUDGE_MAX) {
		/* hb_tx still busy: try again at the next one. */
		if (conn->hb_tx_busy || !conn->qp_ok ||
		    !krdma_nudge_post_locked(conn)) {
			conn->nudge_count++;
			krdma_nudge_queue(conn);
		}
	}
	spin_unlock_bh(&conn->lock);
	krdma_conn_put(conn);	/* this one's */
}

/*
 * iWARP, the active side just established: a ping at once, whether or not
 * heartbeats were agreed, since MPA lets only the initiator send the first
 * FPDU and the passive side hands its connection over once something came
 * (krdma_handover_work()).  Its pong comes back like any other.
 *
 * Until that pong, the ping is followed by nudges (krdma_nudge_work()).
 * siw's passive side leaves an FPDU that arrives between its MPA reply and
 * its socket's hand-over to the QP unread until more data comes
 * (siw_accept()), and this ping arrives just then.  Stuck, it would keep
 * the passive side from handing its connection over, and (no ping goes
 * out while one is unanswered) fail the connection after its heartbeats,
 * as a krdma-blk queue's failed under load (test/guest/soak.sh over siw;
 * not traced).  A later FPDU has the socket read.
 */
int krdma_hb_first(struct krdma_conn *conn)
{
	int ret = 0;

	spin_lock_bh(&conn->lock);
	if (conn->qp_ok && !conn->hb_tx_busy && !conn->hb_ping_out) {
		ret = krdma_hb_post_locked(conn, false);
		if (!ret) {
			conn->hb_ping_out = true;
			krdma_nudge_queue(conn);
		}
	}
	spin_unlock_bh(&conn->lock);
	return ret;
}

/*
 * A polled connection (opts.poll) is reaped by nobody but its consumer,
 * who may not poll while it is idle: the tick polls it.  A ping then
 * waits in the CQ until the peer's tick, and its pong until ours: so a
 * polled connection ticks twice an interval, the second time to poll
 * only, and an answer is at most half an interval late.
 */
static unsigned long krdma_hb_period(struct krdma_conn *conn)
{
	return msecs_to_jiffies(conn->opts.poll ? conn->hb_ms / 2 :
				conn->hb_ms);
}

static void krdma_hb_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(to_delayed_work(work),
					       struct krdma_conn, hb_work);
	bool lost = false, again = false;

	if (conn->opts.poll)
		krdma_poll_cq(conn, conn->cq_size);
	spin_lock_bh(&conn->lock);
	if (!krdma_conn_usable(conn) || conn->hb_stopped)
		goto unlock;
	if (conn->opts.poll) {
		conn->hb_half = !conn->hb_half;
		if (conn->hb_half) {
			again = true;
			goto unlock;
		}
	}
	if (conn->hb_rx != conn->hb_rx_seen ||
	    conn->rw_done != conn->hb_rw_seen) {
		conn->hb_rx_seen = conn->hb_rx;
		conn->hb_rw_seen = conn->rw_done;
		conn->hb_missed = 0;
	} else if (++conn->hb_missed >= conn->opts.heartbeat_misses +
					  !conn->active) {
		/* The passive side's ticks are not in step with the pings. */
		lost = true;
		goto unlock;
	}
	again = true;
	if (conn->active && !conn->hb_ping_out && !conn->hb_tx_busy) {
		/* A failed post failed the connection: no next tick. */
		if (krdma_hb_post_locked(conn, false))
			again = false;
		else
			conn->hb_ping_out = true;
	}
unlock:
	if (again) {
		/* The next tick's reference. */
		krdma_conn_get(conn);
		if (!queue_delayed_work(krdma_wq, &conn->hb_work,
					krdma_hb_period(conn)))
			krdma_conn_put(conn);
	}
	spin_unlock_bh(&conn->lock);

	if (lost) {
		pr_warn_ratelimited("%s: peer %pISpc lost: %u heartbeats of %u ms unanswered\n",
				    conn->name, &conn->raddr,
				    conn->opts.heartbeat_misses, conn->hb_ms);
		krdma_conn_schedule_teardown(conn, -ETIMEDOUT);
	}
	krdma_conn_put(conn);	/* this tick's */
}

/* Set up the heartbeat of a new connection; nothing runs yet. */
void krdma_hb_init(struct krdma_conn *conn)
{
	INIT_DELAYED_WORK(&conn->hb_work, krdma_hb_work);
	INIT_DELAYED_WORK(&conn->nudge_work, krdma_nudge_work);
}

/* The connection is established: tick, if both sides want heartbeats. */
void krdma_hb_start(struct krdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	if (conn->hb_ms && !conn->hb_stopped) {
		conn->hb_rx_seen = conn->hb_rx;
		conn->hb_rw_seen = conn->rw_done;
		krdma_conn_get(conn);
		if (!queue_delayed_work(krdma_wq, &conn->hb_work,
					krdma_hb_period(conn)))
			krdma_conn_put(conn);
		/*
		 * A ping that came before the ESTABLISHED event.  A failed
		 * post fails the connection (krdma_post_hdr_locked()).
		 */
		if (conn->hb_pong_owed && conn->qp_ok && !conn->hb_tx_busy) {
			conn->hb_pong_owed = false;
			krdma_hb_post_locked(conn, true);
		}
	}
	spin_unlock_bh(&conn->lock);
}

/*
 * Teardown: no tick runs once this returns.  A heartbeat still posted is
 * completed by the drain that follows, like every other work request.
 */
void krdma_hb_stop(struct krdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	conn->hb_stopped = true;
	spin_unlock_bh(&conn->lock);
	if (cancel_delayed_work_sync(&conn->hb_work))
		krdma_conn_put(conn);
	if (cancel_delayed_work_sync(&conn->nudge_work))
		krdma_conn_put(conn);
}
