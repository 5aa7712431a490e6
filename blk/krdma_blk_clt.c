// SPDX-License-Identifier: GPL-2.0
/*
 * krdma-blk client: maps an export as a blk-mq disk.
 *
 * One krdma session (of one connection) per hardware queue, each
 * connection with an MR pool of one MR per tag.  queue_rq never sleeps and
 * allocates nothing: it maps the request's pages (blk_rq_map_sg()),
 * registers them from the pool (krdma_reg_sg_nowait(): remote read for a
 * write, remote write for a read; the REG_MR goes ahead of the command in
 * the send queue) and sends the command with the token
 * (krdma_send_async(), no waiting for a credit).  The reply arrives in the
 * recv callback (softirq), a SEND_WITH_INV of the token's rkey: the pages
 * are the block layer's again, the MR goes back to the pool
 * (krdma_mr_put()) and the request ends there.  A reply without the
 * invalidation gets a LOCAL_INV first (krdma_mr_invalidate_async()).  A
 * request ends once both its reply and its send's completion were seen
 * (@ref), so that its send request is never reused while the device still
 * has it.  No credit for the command: the registration is invalidated,
 * and then the request goes back to the requeue list.
 *
 * A WRITE of at most incapsule_data_size bytes (4 KiB) registers nothing:
 * its data goes in the command's message (krdma_sendv_async(): the
 * command, then the request's segments, gathered by the device from where
 * they are), the server copies it into its bio's pages and answers with a
 * plain SEND.  One message instead of a REG_MR, an RDMA READ and a remote
 * invalidation: what nvme-rdma's in-capsule data saves on small writes.
 *
 * Recovery (krdma sessions): when a queue's connection fails (the peer
 * went away, the link, a request that timed out: krdma_conn_fail()), the
 * session tells DISCONNECTED and the disk's queue is quiesced, so that
 * nothing holds the old connection and the session closes it, which
 * releases every registration still out.  On RECONNECTED the queue greets
 * the export on the new connection, requeues its in-flight requests (at
 * most KRDMA_BLK_MAX_RETRIES times each) and runs again: no error reaches
 * the filesystem.  When the session is lost (its loss timeout), the
 * queue's I/O fails with BLK_STS_IOERR, new I/O fails at once, and the
 * disk can still be unmapped.
 *
 * Who ends a request: queue_rq hands it over in INFLIGHT; the reply moves
 * it on (DONE, or INV while its LOCAL_INV runs); a failure of the
 * connection leaves it INFLIGHT for the session's RECONNECTED or LOST,
 * which come after the old connection was closed, when no callback of it
 * runs any more.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/completion.h>
#include <linux/llist.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/string.h>
#include <linux/mutex.h>
#include <linux/moduleparam.h>
#include <linux/sysfs.h>

#include <krdma.h>
#include "krdma_blk.h"
#include "krdma_blk_proto.h"
#include "krdma_blk_compat.h"

/* Segments of the largest request, partial first page. */
#define KRDMA_BLK_MAX_SEGS	(KRDMA_BLK_MAX_IO / PAGE_SIZE + 1)
#define KRDMA_BLK_HELLO_TIMEOUT	(10 * HZ)
/* Tags per hardware queue, and pool MRs per connection. */
#define KRDMA_BLK_DEPTH		KRDMA_DEFAULT_DEPTH
/* Reconnects a request rides out before it fails (nvme's max_retries). */
#define KRDMA_BLK_MAX_RETRIES	5
/* Data segments of an in-capsule WRITE (one element of its message each). */
#define KRDMA_BLK_CAPSULE_SEGS	8

enum {
	KRDMA_BLK_RQ_IDLE,	/* the block layer's, or in queue_rq */
	KRDMA_BLK_RQ_INFLIGHT,	/* the command is out: the reply or a failure */
	KRDMA_BLK_RQ_INV,	/* replied; its LOCAL_INV is running */
	KRDMA_BLK_RQ_REQUEUE,	/* no credit; its LOCAL_INV is running */
	KRDMA_BLK_RQ_DONE,
};

struct krdma_blk_map;

/* One hardware queue: one session. */
struct krdma_blk_queue {
	struct krdma_blk_map	*map;
	/* NULL once destroyed (under @lock and @sess_lock; ->poll: RCU) */
	struct krdma_session	*sess;
	u32			idx;
	bool			polled;		/* a poll queue (opts.poll) */
	struct llist_head	done;		/* ended, for ->poll to end */
	bool			dead;		/* lost: new I/O fails */
	atomic_t		gen;		/* tells replies to reused tags apart */
	atomic_t		cgen;		/* one more at each DISCONNECTED */
	atomic_t		qd;		/* requests queue_rq started, not ended */
	struct mutex		lock;		/* @sess, @quiesced, the greeting */
	spinlock_t		sess_lock;	/* @sess, for the timeout handler */
	bool			quiesced;	/* by this queue's DISCONNECTED */
	struct completion	hs_done;
	bool			hs_got;
	bool			stopping;	/* unmapping: a greeting ends */
	struct krdma_blk_resp	hs;
};

struct krdma_blk_map {
	char			name[KRDMA_BLK_NAME_LEN];
	char			export[KRDMA_BLK_NAME_LEN];
	u32			nq;		/* poll queues included */
	u32			npq;		/* the last npq are polled */
	struct krdma_blk_queue	*qs;
	struct blk_mq_tag_set	set;
	bool			set_ready;
	struct mutex		lock;		/* @disk's setting */
	struct gendisk		*disk;
	bool			dead;		/* unmapping: new I/O fails */
	/*
	 * What the disk was made with, set before @disk: a reconnect's HELLO
	 * is held to it.  @ro: read-only as the client made it (under @lock).
	 */
	struct krdma_blk_limits	lim;
	u32			pages;
	bool			ignore_ro;
	bool			ro;
};

/* A request's driver data. */
struct krdma_blk_rq {
	atomic_t		state;
	atomic_t		ref;		/* the outcome and the send */
	u32			gen;
	u32			cgen;		/* q->cgen when it was sent */
	int			status;
	u32			rkey;
	u32			retries;
	bool			in_qd;		/* counted in the queue's @qd */
	struct krdma_mr		*mr;
	struct krdma_req	send_req;
	struct krdma_req	inv_req;
	/* Sent from here (an in-capsule WRITE's, without a copy). */
	struct krdma_blk_cmd	cmd;
	struct llist_node	done;		/* on q->done (poll queues) */
	int			end_status;
	struct scatterlist	sg[KRDMA_BLK_MAX_SEGS];
};

/*
 * Tests only: every Nth command finds no credit, and test_busy_seen counts
 * how many did (the path that invalidates and requeues).
 */
static struct krdma_blk_every krdma_blk_test_busy;
module_param_named(test_busy_every, krdma_blk_test_busy.every, uint, 0644);
MODULE_PARM_DESC(test_busy_every,
		 "Tests only: every Nth I/O command finds no send credit (0: off)");
/*
 * WRITEs of at most this many bytes carry their data in the command's
 * message (nvme-rdma's in-capsule data, its target's inline_data_size).
 */
static unsigned int krdma_blk_incapsule = KRDMA_BLK_INCAPSULE_MAX;
module_param_named(incapsule_data_size, krdma_blk_incapsule, uint, 0644);
MODULE_PARM_DESC(incapsule_data_size,
		 "A client's WRITEs of at most this many bytes (up to 4096) send their data in the command's message: no registration, no RDMA READ (default 4096; 0: never)");

/* Replies that did not invalidate the token: a LOCAL_INV of our own. */
static atomic_t krdma_blk_test_local_inv = ATOMIC_INIT(0);

static int krdma_blk_counter_get(char *buf, const struct kernel_param *kp)
{
	return sysfs_emit(buf, "%d\n", atomic_read((atomic_t *)kp->arg));
}

/* A read-only module parameter over an atomic_t counter (tests only). */
const struct kernel_param_ops krdma_blk_counter_ops = {
	.get	= krdma_blk_counter_get,
};
module_param_cb(test_busy_seen, &krdma_blk_counter_ops,
		&krdma_blk_test_busy.seen, 0444);
MODULE_PARM_DESC(test_busy_seen,
		 "Tests only: I/O commands test_busy_every refused so far");
module_param_cb(test_local_inv, &krdma_blk_counter_ops,
		&krdma_blk_test_local_inv, 0444);
MODULE_PARM_DESC(test_local_inv,
		 "Tests only: replies that did not invalidate their token, so far");

/* Tests only: whether this is the Nth time (struct krdma_blk_every). */
bool krdma_blk_every(struct krdma_blk_every *e)
{
	unsigned int every = READ_ONCE(e->every);

	if (!every || atomic_inc_return(&e->n) % every)
		return false;
	atomic_inc(&e->seen);
	return true;
}

/*
 * The queue's depth as the client sees it: requests between queue_rq's
 * blk_mq_start_request() and their end or requeue.  Each command carries
 * the count at its sending (krdma_blk_cmd.qd), so that a server that
 * answers faster than the device delivers still knows a deep queue from
 * a shallow one.  A hint only: nothing but the choice of a worker
 * depends on it.
 */
static u32 krdma_blk_qd_get(struct krdma_blk_queue *q,
			    struct krdma_blk_rq *pdu)
{
	WARN_ON_ONCE(pdu->in_qd);
	pdu->in_qd = true;
	return atomic_inc_return(&q->qd);
}

/* Whoever owns @rq: it ends or goes back to the block layer. */
static void krdma_blk_qd_put(struct request *rq)
{
	struct krdma_blk_queue *q = rq->mq_hctx->driver_data;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);

	if (pdu->in_qd) {
		pdu->in_qd = false;
		atomic_dec(&q->qd);
	}
}

/*
 * End @rq with @status; its next life starts with no retries.  A request
 * of a poll queue ends in its submitter's ->poll (krdma_blk_poll()) when
 * this runs with bottom halves off, as every completion of a polled
 * connection does: it is I/O that io_uring polls for, and the bio cache
 * it comes from (REQ_ALLOC_CACHE) must be put back in task context (6.1's
 * bio_put() warns in interrupt context).
 */
static void krdma_blk_rq_end(struct request *rq, int status)
{
	struct krdma_blk_queue *q = rq->mq_hctx->driver_data;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);

	pdu->retries = 0;
	krdma_blk_qd_put(rq);
	if (q->polled && in_interrupt()) {
		pdu->end_status = status;
		llist_add(&pdu->done, &q->done);
		return;
	}
	blk_mq_end_request(rq, errno_to_blk_status(status));
}

/* One of the request's two references (outcome, send) is gone. */
static void krdma_blk_rq_put(struct request *rq)
{
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);

	if (atomic_dec_and_test(&pdu->ref))
		krdma_blk_rq_end(rq, pdu->status);
}

/* The command's send completed (or was flushed). */
static void krdma_blk_send_done(struct krdma_req *req)
{
	struct krdma_blk_rq *pdu = container_of(req, struct krdma_blk_rq,
						send_req);

	krdma_blk_rq_put(blk_mq_rq_from_pdu(pdu));
}

/*
 * The registration's LOCAL_INV is over.  On success the pages are ours
 * again; on failure (the connection failed) they stay the device's until
 * the session closed the connection, and the request waits in INFLIGHT
 * for RECONNECTED or LOST.
 */
static void krdma_blk_inv_done(struct krdma_req *req)
{
	struct krdma_blk_rq *pdu = container_of(req, struct krdma_blk_rq,
						inv_req);
	struct request *rq = blk_mq_rq_from_pdu(pdu);
	int state = atomic_read(&pdu->state);

	if (req->status) {
		atomic_set(&pdu->state, KRDMA_BLK_RQ_INFLIGHT);
		return;
	}
	pdu->mr = NULL;
	atomic_set(&pdu->state, KRDMA_BLK_RQ_DONE);
	if (state == KRDMA_BLK_RQ_INV) {
		krdma_blk_rq_put(rq);
	} else if (pdu->status == -EAGAIN) {
		/* Back to the block layer; queue_rq again in a moment. */
		krdma_blk_qd_put(rq);
		blk_mq_requeue_request(rq, false);
		blk_mq_delay_kick_requeue_list(rq->q, 1);
	} else {
		krdma_blk_rq_end(rq, pdu->status);
	}
}

/*
 * Start the invalidation of @pdu's registration, in state @state.  If the
 * connection can post no more, the request waits for RECONNECTED or LOST.
 */
static void krdma_blk_rq_invalidate(struct krdma_blk_rq *pdu, int state)
{
	atomic_set(&pdu->state, state);
	if (krdma_mr_invalidate_async(pdu->mr, &pdu->inv_req))
		atomic_set(&pdu->state, KRDMA_BLK_RQ_INFLIGHT);
}

struct krdma_blk_iter_arg {
	struct krdma_blk_queue	*q;	/* NULL: every queue */
	int			status;	/* 0: requeue */
	u32			n;
};

static bool krdma_blk_iter_one(struct request *rq, void *data)
{
	struct krdma_blk_iter_arg *a = data;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);

	if (a->q && rq->mq_hctx->queue_num != a->q->idx)
		return true;
	if (atomic_cmpxchg(&pdu->state, KRDMA_BLK_RQ_INFLIGHT,
			   KRDMA_BLK_RQ_DONE) != KRDMA_BLK_RQ_INFLIGHT)
		return true;
	/* The connection was closed: that released the registration. */
	pdu->mr = NULL;
	a->n++;
	if (!a->status && ++pdu->retries <= KRDMA_BLK_MAX_RETRIES) {
		krdma_blk_qd_put(rq);
		blk_mq_requeue_request(rq, false);
	} else {
		krdma_blk_rq_end(rq, a->status ?: -EIO);
	}
	return true;
}

/*
 * Requeue (@status 0) or end with @status the in-flight requests of @q
 * (NULL: of every queue).  Only once their connections are closed: no
 * callback of theirs runs any more, their sends are all completed, their
 * registrations released.  Return: how many.
 */
static u32 krdma_blk_inflight_do(struct krdma_blk_map *map,
				 struct krdma_blk_queue *q, int status)
{
	struct krdma_blk_iter_arg a = { .q = q, .status = status };

	if (!READ_ONCE(map->set_ready))
		return 0;
	blk_mq_tagset_busy_iter(&map->set, krdma_blk_iter_one, &a);
	if (!status && map->disk)
		blk_mq_kick_requeue_list(map->disk->queue);
	return a.n;
}

/*
 * The queue's connection failed: keep queue_rq out (the whole disk's
 * queue is quiesced; blk-mq has no per-queue quiesce on 6.1), so that
 * nothing holds the old connection once this returns and the session
 * closes it.
 */
static void krdma_blk_queue_stop(struct krdma_blk_queue *q)
{
	struct krdma_blk_map *map = q->map;

	mutex_lock(&q->lock);
	mutex_lock(&map->lock);
	/* A dead queue's queue_rq fails at once, connection or not. */
	if (map->disk && !q->quiesced && !READ_ONCE(q->dead)) {
		blk_mq_quiesce_queue(map->disk->queue);
		q->quiesced = true;
	}
	mutex_unlock(&map->lock);
	mutex_unlock(&q->lock);
}

static void krdma_blk_queue_start(struct krdma_blk_queue *q)
{
	mutex_lock(&q->lock);
	if (q->quiesced) {
		blk_mq_unquiesce_queue(q->map->disk->queue);
		q->quiesced = false;
	}
	mutex_unlock(&q->lock);
}

/*
 * Greet the export on @conn, with q->lock held: 0, the server's refusal
 * (-ENOENT: no such export), a transport error, or -ESHUTDOWN once the
 * map is being removed (krdma_blk_map_stop_sessions() ends the wait, so
 * that it does not wait out a server slow to answer for q->lock).
 */
static int krdma_blk_hello(struct krdma_blk_queue *q, struct krdma_conn *conn)
{
	struct krdma_blk_hello h = {};
	int ret;

	lockdep_assert_held(&q->lock);
	if (krdma_max_msg_size(conn) < sizeof(struct krdma_blk_cmd))
		return -EPROTO;
	q->hs_got = false;
	reinit_completion(&q->hs_done);
	/* Pairs with krdma_blk_map_stop_sessions(): its complete() or this. */
	smp_mb();
	if (READ_ONCE(q->stopping))
		return -ESHUTDOWN;
	krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
	strscpy(h.export, q->map->export, sizeof(h.export));
	ret = krdma_send(conn, &h, sizeof(h), KRDMA_BLK_HELLO_TIMEOUT);
	if (ret)
		return ret;
	/* A poll queue's reply comes when it is polled: this polls it. */
	if (!krdma_wait_completion(conn, &q->hs_done,
				   KRDMA_BLK_HELLO_TIMEOUT))
		return -ETIMEDOUT;
	if (!READ_ONCE(q->hs_got)) {
		if (READ_ONCE(q->stopping))
			return -ESHUTDOWN;
		return krdma_conn_error(conn) ?: -ECONNRESET;
	}
	ret = (s32)be32_to_cpu(q->hs.status);
	if (ret > 0 || ret < -MAX_ERRNO)
		return -EPROTO;
	return ret;
}

static int krdma_blk_limits(const struct krdma_blk_resp *r, u32 pages,
			    struct krdma_blk_limits *l, u64 *sectors, bool *ro);

/*
 * The export as a reconnect's HELLO (@r) found it, on a connection whose
 * pool MRs map @pages pages, which may have been
 * exported again meanwhile: a new size is the disk's (grown or shrunk, as
 * nvme takes a namespace's new capacity), read-only follows the export,
 * and another block size or a smaller request size than the disk was made
 * with, which the block layer would go on using, fail the queue (-ESTALE)
 * with one line (discard and write-zeroes are not looked at again: the
 * server refuses them with -EOPNOTSUPP where it has none).  Context:
 * process, from the session's event work.
 */
static int krdma_blk_reexamine(struct krdma_blk_queue *q,
			       const struct krdma_blk_resp *r, u32 pages)
{
	struct krdma_blk_map *map = q->map;
	struct krdma_blk_limits lim;
	u64 sectors;
	bool ro;
	int ret = 0;

	mutex_lock(&map->lock);
	/* Not made yet: krdma_blk_map_create() takes queue 0's reply. */
	if (!map->disk)
		goto out;
	ret = krdma_blk_limits(r, min(map->pages, pages), &lim, &sectors, &ro);
	if (ret) {
		pr_warn_ratelimited("%s: queue %u: a bad HELLO reply from export %s after the reconnect; failing its I/O\n",
				    map->name, q->idx, map->export);
		goto out;
	}
	if (lim.lbs != map->lim.lbs ||
	    lim.max_sectors < map->lim.max_sectors) {
		pr_warn_ratelimited("%s: queue %u: export %s has %u-byte blocks and requests of %u sectors after the reconnect, the disk %u and %u; failing its I/O\n",
				    map->name, q->idx, map->export, lim.lbs,
				    lim.max_sectors, map->lim.lbs,
				    map->lim.max_sectors);
		ret = -ESTALE;
		goto out;
	}
	/* It says so itself ("detected capacity change"). */
	set_capacity_and_notify(map->disk, sectors);
	ro = ro && !map->ignore_ro;
	if (ro != map->ro) {
		pr_info_ratelimited("%s: export %s is read-%s now\n", map->name,
				    map->export, ro ? "only" : "write");
		set_disk_ro(map->disk, ro);
		map->ro = ro;
	}
out:
	mutex_unlock(&map->lock);
	return ret;
}

/* A new connection: greet the export on it, then run the queue again. */
static void krdma_blk_reconnected(struct krdma_blk_queue *q,
				  struct krdma_session *s)
{
	struct krdma_blk_map *map = q->map;
	struct krdma_blk_resp hs;
	struct krdma_conn *conn;
	bool refused;
	u32 n, pages;
	int ret;

	conn = krdma_session_conn_get(s);
	if (IS_ERR(conn))
		return;		/* failed again: DISCONNECTED comes */
	mutex_lock(&q->lock);
	ret = krdma_blk_hello(q, conn);
	refused = READ_ONCE(q->hs_got) && ret;
	hs = q->hs;
	mutex_unlock(&q->lock);
	if (ret == -ESHUTDOWN) {
		/* Unmapping: the session and its connection go now. */
		krdma_session_conn_put(s, conn);
		return;
	}
	/* 0 once a failure tore the pool down: that reconnects anyway. */
	pages = krdma_mr_pool_pages(conn) ?: map->pages;
	if (ret && !refused)
		krdma_conn_fail(conn, ret);	/* and try again */
	krdma_session_conn_put(s, conn);
	if (ret && !refused)
		return;
	if (refused) {
		pr_warn_ratelimited("%s: queue %u: the server refused export %s after the reconnect (%d); failing its I/O\n",
				    map->name, q->idx, map->export, ret);
	} else if (krdma_blk_reexamine(q, &hs, pages)) {
		refused = true;
	}
	if (refused)
		WRITE_ONCE(q->dead, true);
	n = krdma_blk_inflight_do(map, q, refused ? -EIO : 0);
	pr_info_ratelimited("%s: queue %u: reconnected, %u requests %s\n",
			    map->name, q->idx, n, refused ? "failed" : "sent again");
	krdma_blk_queue_start(q);
}

/* Context: process, from krdma's workqueue, in order per session. */
static void krdma_blk_sess_event(struct krdma_session *s,
				 enum krdma_session_event ev, int error)
{
	struct krdma_blk_queue *q = krdma_session_priv(s);
	struct krdma_blk_map *map = q->map;

	switch (ev) {
	case KRDMA_SESSION_DISCONNECTED:
		pr_warn_ratelimited("%s: queue %u: connection lost (%d); reconnecting\n",
				    map->name, q->idx, error);
		/* What was sent so far went on the failed connection. */
		atomic_inc(&q->cgen);
		complete(&q->hs_done);
		krdma_blk_queue_stop(q);
		/* A timeout handler holding the old connection has put it. */
		spin_lock_bh(&q->sess_lock);
		spin_unlock_bh(&q->sess_lock);
		break;
	case KRDMA_SESSION_RECONNECTED:
		krdma_blk_reconnected(q, s);
		break;
	case KRDMA_SESSION_LOST:
		pr_warn_ratelimited("%s: queue %u: session lost (%d); failing its I/O\n",
				    map->name, q->idx, error);
		WRITE_ONCE(q->dead, true);
		krdma_blk_inflight_do(map, q, -EIO);
		krdma_blk_queue_start(q);
		break;
	default:
		break;
	}
}

/*
 * A server's status as a request may end with: 0 or an error a device
 * gives; anything else (a dispatch status such as -ENOMEM, -EBUSY or
 * -EAGAIN, which the block layer would take for BLK_STS_RESOURCE and the
 * like, or what no errno is) is -EIO.
 */
static int krdma_blk_wire_status(s32 status)
{
	switch (status) {
	case 0:
	case -EIO:
	case -ENOSPC:
	case -EOPNOTSUPP:
	case -EROFS:
	case -EINVAL:
	case -ENODATA:
		return status;
	default:
		return -EIO;
	}
}

/* Context: softirq (or BHs off). */
static int krdma_blk_clt_recv(struct krdma_session *s, struct krdma_conn *conn,
			      struct krdma_msg *msg)
{
	struct krdma_blk_queue *q = krdma_session_priv(s);
	struct krdma_blk_map *map = q->map;
	const struct krdma_blk_resp *r = msg->data;
	struct krdma_blk_rq *pdu;
	struct request *rq;
	u32 unique, tag;
	s32 status;
	u64 wtag;

	if (!r || msg->len != sizeof(*r) || !krdma_blk_hdr_ok(&r->hdr))
		goto bad;
	if (r->hdr.op == KRDMA_BLK_OP_HELLO) {
		if (READ_ONCE(q->hs_got))
			goto bad;
		memcpy(&q->hs, r, sizeof(*r));
		WRITE_ONCE(q->hs_got, true);
		complete(&q->hs_done);
		return 0;
	}
	if (!READ_ONCE(map->set_ready))
		goto bad;
	wtag = be64_to_cpu(r->tag);
	unique = lower_32_bits(wtag);
	tag = blk_mq_unique_tag_to_tag(unique);
	if (blk_mq_unique_tag_to_hwq(unique) != q->idx ||
	    tag >= map->set.queue_depth)
		goto bad;
	rq = blk_mq_tag_to_rq(map->set.tags[q->idx], tag);
	if (!rq)
		goto bad;
	pdu = blk_mq_rq_to_pdu(rq);
	/*
	 * A request sent before the last DISCONNECTED went on a connection
	 * that is closed by now, or will be before RECONNECTED resends it:
	 * its registration is that connection's, and a reply for it (a late
	 * one on the old connection, or a server's on the new one) is not
	 * taken.
	 */
	if (READ_ONCE(pdu->gen) != upper_32_bits(wtag) ||
	    READ_ONCE(pdu->cgen) != (u32)atomic_read(&q->cgen) ||
	    atomic_read(&pdu->state) != KRDMA_BLK_RQ_INFLIGHT)
		goto stale;
	status = be32_to_cpu(r->status);
	pdu->status = krdma_blk_wire_status(status);
	if (pdu->mr && msg->inv_valid && msg->inv_rkey == pdu->rkey &&
	    !krdma_mr_put(pdu->mr))
		pdu->mr = NULL;
	if (pdu->mr) {
		/* Not invalidated by the server: our own LOCAL_INV first. */
		atomic_inc(&krdma_blk_test_local_inv);
		krdma_blk_rq_invalidate(pdu, KRDMA_BLK_RQ_INV);
		return 0;
	}
	atomic_set(&pdu->state, KRDMA_BLK_RQ_DONE);
	krdma_blk_rq_put(rq);
	return 0;
bad:
	pr_warn_ratelimited("%s: queue %u: malformed reply from the server; failing the connection\n",
			    map->name, q->idx);
	krdma_conn_fail(conn, -EPROTO);
	return 0;
stale:
	/*
	 * A late reply on a connection that failed is ordinary (its request
	 * goes again on the next); on a working one the server answered
	 * what it was not asked there.
	 */
	if (!krdma_conn_error(conn))
		pr_warn_ratelimited("%s: queue %u: reply to no request in flight\n",
				    map->name, q->idx);
	return 0;
}

static const struct krdma_session_ops krdma_blk_sess_ops = {
	.event	= krdma_blk_sess_event,
	.recv	= krdma_blk_clt_recv,
};

static blk_status_t krdma_blk_cmd_op(struct request *rq, u8 *op)
{
	switch (req_op(rq)) {
	case REQ_OP_READ:
		*op = KRDMA_BLK_OP_READ;
		break;
	case REQ_OP_WRITE:
		*op = KRDMA_BLK_OP_WRITE;
		break;
	case REQ_OP_FLUSH:
		*op = KRDMA_BLK_OP_FLUSH;
		break;
	case REQ_OP_DISCARD:
		*op = KRDMA_BLK_OP_DISCARD;
		break;
	case REQ_OP_WRITE_ZEROES:
		*op = KRDMA_BLK_OP_WRITE_ZEROES;
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	return BLK_STS_OK;
}

/*
 * The elements of an in-capsule WRITE's message: the command, then the data
 * where the block layer has it, one per segment.  Return: how many, or 0
 * when @rq is larger than incapsule_data_size or @conn's messages allow,
 * or has more segments (or a page out of the linear map).
 */
static int krdma_blk_capsule_iov(struct krdma_conn *conn, struct request *rq,
				 struct krdma_blk_rq *pdu, struct kvec *iov)
{
	u32 max = min(READ_ONCE(krdma_blk_incapsule), KRDMA_BLK_INCAPSULE_MAX);
	struct req_iterator it;
	struct bio_vec bv;
	int n = 1;

	if (blk_rq_bytes(rq) > max ||
	    sizeof(pdu->cmd) + blk_rq_bytes(rq) > krdma_max_msg_size(conn))
		return 0;
	iov[0].iov_base = &pdu->cmd;
	iov[0].iov_len = sizeof(pdu->cmd);
	rq_for_each_segment(bv, rq, it) {
		if (n > KRDMA_BLK_CAPSULE_SEGS || PageHighMem(bv.bv_page))
			return 0;
		iov[n].iov_base = bvec_virt(&bv);
		iov[n].iov_len = bv.bv_len;
		n++;
	}
	return n;
}

/*
 * Send @rq's command on @conn: a READ or WRITE with its pages registered,
 * or a small WRITE with its data in the message.
 */
static blk_status_t krdma_blk_submit(struct krdma_blk_queue *q,
				     struct krdma_conn *conn,
				     struct request *rq, u8 op, u32 qd)
{
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct kvec iov[1 + KRDMA_BLK_CAPSULE_SEGS];
	struct krdma_blk_cmd *c = &pdu->cmd;
	u16 fl = rq->cmd_flags & REQ_FUA ? KRDMA_BLK_F_FUA : 0;
	struct krdma_token tok;
	struct krdma_mr *mr;
	int nents, niov = 0, ret;

	memset(c, 0, sizeof(*c));
	if (op == KRDMA_BLK_OP_WRITE)
		niov = krdma_blk_capsule_iov(conn, rq, pdu, iov);
	if (niov) {
		fl |= KRDMA_BLK_F_INCAPSULE;
	} else if (op == KRDMA_BLK_OP_READ || op == KRDMA_BLK_OP_WRITE) {
		sg_init_table(pdu->sg, KRDMA_BLK_MAX_SEGS);
		nents = blk_rq_map_sg(rq->q, rq, pdu->sg);
		mr = krdma_reg_sg_nowait(conn, pdu->sg, nents,
					 op == KRDMA_BLK_OP_WRITE ?
					 KRDMA_ACCESS_REMOTE_READ :
					 KRDMA_ACCESS_REMOTE_WRITE);
		if (IS_ERR(mr)) {
			ret = PTR_ERR(mr);
			/*
			 * A pool MR per tag: -EAGAIN only while one is
			 * invalidating.  A failed connection: its session
			 * is told, and the queue stops.
			 */
			if (ret == -EAGAIN || ret == -ENOMEM ||
			    krdma_conn_error(conn))
				return BLK_STS_RESOURCE;
			pr_warn_ratelimited("%s: registration failed (%d)\n",
					    q->map->name, ret);
			return BLK_STS_IOERR;
		}
		pdu->mr = mr;
		krdma_mr_token(mr, &tok);
		pdu->rkey = tok.rkey;
		krdma_token_pack(&tok, &c->token);
	}
	krdma_blk_hdr_init(&c->hdr, op, fl);
	c->len = cpu_to_be32(op == KRDMA_BLK_OP_FLUSH ? 0 : blk_rq_bytes(rq));
	c->qd = cpu_to_be32(qd);
	c->sector = cpu_to_be64(blk_rq_pos(rq));
	WRITE_ONCE(pdu->gen, (u32)atomic_inc_return(&q->gen));
	c->tag = cpu_to_be64((u64)pdu->gen << 32 | blk_mq_unique_tag(rq));
	/* The reply may come before the send returns. */
	atomic_set(&pdu->ref, 2);
	atomic_set(&pdu->state, KRDMA_BLK_RQ_INFLIGHT);
	pdu->send_req.done = krdma_blk_send_done;
	if (krdma_blk_every(&krdma_blk_test_busy))
		ret = -EAGAIN;
	else if (niov)	/* the pages stay the device's until send_done */
		ret = krdma_sendv_async(conn, iov, niov, 0, 0, &pdu->send_req,
					true);
	else
		ret = krdma_send_async(conn, c, sizeof(*c), &pdu->send_req,
				       true);
	if (!ret)
		return BLK_STS_OK;
	/* Not sent: no reply, no send completion, the request is ours. */
	atomic_set(&pdu->state, KRDMA_BLK_RQ_IDLE);
	if (!pdu->mr)
		return ret == -EAGAIN || krdma_conn_error(conn) ?
			BLK_STS_RESOURCE : BLK_STS_IOERR;
	/*
	 * The REG_MR went out ahead: the pages are the block layer's again
	 * only after the invalidation, whose completion requeues the request
	 * (no credit, or a connection that failed: the session reconnects)
	 * or fails it; or, if the invalidation cannot complete, after
	 * RECONNECTED or LOST.
	 */
	pdu->status = ret == -EAGAIN || krdma_conn_error(conn) ? -EAGAIN : ret;
	atomic_set(&pdu->ref, 1);
	krdma_blk_rq_invalidate(pdu, KRDMA_BLK_RQ_REQUEUE);
	return BLK_STS_OK;
}

/* Context: process, not sleeping (no BLK_MQ_F_BLOCKING). */
static blk_status_t krdma_blk_queue_rq(struct blk_mq_hw_ctx *hctx,
				       const struct blk_mq_queue_data *bd)
{
	struct krdma_blk_queue *q = hctx->driver_data;
	struct request *rq = bd->rq;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct krdma_conn *conn;
	blk_status_t sts;
	u32 qd;
	u8 op;

	sts = BLK_STS_IOERR;
	if (READ_ONCE(q->map->dead) || READ_ONCE(q->dead))
		goto out;
	sts = krdma_blk_cmd_op(rq, &op);
	if (sts)
		goto out;
	/*
	 * Before the connection: a DISCONNECTED after this read waits for
	 * us in its quiesce, so we hold the connection the number names.
	 */
	WRITE_ONCE(pdu->cgen, atomic_read(&q->cgen));
	conn = krdma_session_conn_get(q->sess);
	if (IS_ERR(conn)) {
		/* Reconnecting: the queue stops soon, and runs again after. */
		if (PTR_ERR(conn) == KRDMA_ERR_RETRY)
			return BLK_STS_RESOURCE;
		goto out;
	}
	atomic_set(&pdu->state, KRDMA_BLK_RQ_IDLE);
	pdu->mr = NULL;
	pdu->status = 0;
	blk_mq_start_request(rq);
	qd = krdma_blk_qd_get(q, pdu);
	sts = krdma_blk_submit(q, conn, rq, op, qd);
	krdma_session_conn_put(q->sess, conn);
	/* Not ours any more: blk-mq requeues or ends it. */
	if (sts != BLK_STS_OK)
		krdma_blk_qd_put(rq);
out:
	/* The block layer ends it: its next life starts with no retries. */
	if (sts != BLK_STS_OK && sts != BLK_STS_RESOURCE)
		pdu->retries = 0;
	return sts;
}

/*
 * The server may still write into the pages: only closing the connection
 * makes them ours again.  Fail it; the session reconnects, and the
 * request is sent again on the new connection (or fails with the queue).
 * A request sent on a connection that has failed since is already on its
 * way there: its timer restarts, and the new connection (perhaps greeting
 * the export right now) is left alone.  Never sleeps: blk-mq's timeout
 * work serves every request of the disk.
 */
static enum blk_eh_timer_return krdma_blk_timeout(struct request *rq)
{
	struct krdma_blk_queue *q = rq->mq_hctx->driver_data;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct krdma_conn *conn;

	/* Once DISCONNECTED returned, nothing here holds the old one. */
	spin_lock_bh(&q->sess_lock);
	if (q->sess && !READ_ONCE(q->dead) &&
	    READ_ONCE(pdu->cgen) == (u32)atomic_read(&q->cgen)) {
		conn = krdma_session_conn_get(q->sess);
		/* Failed already: DISCONNECTED is on its way. */
		if (!IS_ERR(conn) && !krdma_conn_error(conn)) {
			pr_warn_ratelimited("%s: queue %u: request timed out; failing the connection\n",
					    q->map->name, q->idx);
			krdma_conn_fail(conn, -ETIMEDOUT);
		}
		if (!IS_ERR(conn))
			krdma_session_conn_put(q->sess, conn);
	}
	spin_unlock_bh(&q->sess_lock);
	return BLK_EH_RESET_TIMER;
}

static int krdma_blk_init_hctx(struct blk_mq_hw_ctx *hctx, void *data,
			       unsigned int idx)
{
	struct krdma_blk_map *map = data;

	hctx->driver_data = &map->qs[idx];
	return 0;
}

static int krdma_blk_init_request(struct blk_mq_tag_set *set,
				  struct request *rq, unsigned int hctx_idx,
				  unsigned int numa_node)
{
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);

	atomic_set(&pdu->state, KRDMA_BLK_RQ_IDLE);
	pdu->in_qd = false;
	pdu->inv_req.done = krdma_blk_inv_done;
	return 0;
}

/*
 * The first nq - npq hardware queues are the default ones (reads go there
 * too); the last npq, over polled connections, are blk-mq's poll queues:
 * REQ_POLLED I/O (io_uring with IORING_SETUP_IOPOLL, fio --hipri) goes
 * there, and its submitter reaps it through ->poll.
 */
static void krdma_blk_map_queues(struct blk_mq_tag_set *set)
{
	struct krdma_blk_map *map = set->driver_data;
	struct blk_mq_queue_map *m = &set->map[HCTX_TYPE_DEFAULT];

	m->nr_queues = map->nq - map->npq;
	m->queue_offset = 0;
	blk_mq_map_queues(m);
	if (set->nr_maps <= HCTX_TYPE_POLL)
		return;
	/* No read queues of their own: blk-mq uses the default ones. */
	set->map[HCTX_TYPE_READ].nr_queues = 0;
	m = &set->map[HCTX_TYPE_POLL];
	m->nr_queues = map->npq;
	m->queue_offset = map->nq - map->npq;
	blk_mq_map_queues(m);
}

/*
 * blk-mq's poll of a poll queue, from the task that waits for its I/O:
 * the replies reaped complete their requests from here.  Never sleeps.
 */
static int krdma_blk_poll(struct blk_mq_hw_ctx *hctx,
			  struct io_comp_batch *iob)
{
	struct krdma_blk_queue *q = hctx->driver_data;
	struct krdma_blk_rq *pdu, *next;
	struct krdma_session *s;
	struct llist_node *list;
	struct krdma_conn *conn;
	int n = 0;

	/*
	 * Unmap takes the session away and waits for an RCU grace period
	 * before it destroys it (krdma_blk_map_stop_sessions()).  Not
	 * sess_lock: pollers of one queue would spin on it, each behind the
	 * other's whole poll, where krdma_poll() lets one return at once.
	 */
	rcu_read_lock();
	s = READ_ONCE(q->sess);
	if (s) {
		conn = krdma_session_conn_get(s);
		if (!IS_ERR(conn)) {
			krdma_poll(conn, 0);
			krdma_session_conn_put(s, conn);
		}
	}
	rcu_read_unlock();
	/* What this poll, an earlier one or the heartbeat tick reaped. */
	list = llist_reverse_order(llist_del_all(&q->done));
	llist_for_each_entry_safe(pdu, next, list, done) {
		blk_mq_end_request(blk_mq_rq_from_pdu(pdu),
				   errno_to_blk_status(pdu->end_status));
		n++;
	}
	return n;
}

static const struct blk_mq_ops krdma_blk_mq_ops = {
	.queue_rq	= krdma_blk_queue_rq,
	.timeout	= krdma_blk_timeout,
	.init_hctx	= krdma_blk_init_hctx,
	.init_request	= krdma_blk_init_request,
	.map_queues	= krdma_blk_map_queues,
	.poll		= krdma_blk_poll,
};

static const struct block_device_operations krdma_blk_fops = {
	.owner		= THIS_MODULE,
};

/*
 * Start queue @q's session and greet the export: 0 or a negative errno.
 * @depth becomes the smaller of itself and the connection's depth, @pages
 * of itself and the pages its pool MRs map.  The pool MRs map as many
 * pages as the device does (rxe 512, siw 256), which sizes a request
 * (krdma_blk_limits()); a reconnect to a device that maps fewer than the
 * first did would fail the largest requests with -E2BIG (an I/O error).
 */
static int krdma_blk_queue_connect(struct krdma_blk_queue *q,
				   const struct krdma_blk_map_args *a,
				   u32 *depth, u32 *pages)
{
	struct krdma_session_opts so = {
		.conn = {
			.queue_depth	= KRDMA_BLK_DEPTH,
			.mr_pool	= KRDMA_BLK_DEPTH,
			.mr_pool_pages	= KRDMA_MR_POOL_PAGES_DEV,
			.max_msg_size	= KRDMA_BLK_MSG_MAX,
			.poll		= q->polled,
			/* Each hardware queue's completions on a vector. */
			.comp_vector	= KRDMA_COMP_VECTOR(q->idx),
		},
		.reconnect_delay_ms	= a->reconnect_delay_ms,
		.loss_tmo_ms		= a->loss_tmo_ms,
		.ops			= &krdma_blk_sess_ops,
		.priv			= q,
	};
	struct krdma_session *s;
	struct krdma_conn *conn;
	int ret;

	s = krdma_session_create((const struct sockaddr *)&a->addr, NULL, &so);
	if (IS_ERR(s))
		return PTR_ERR(s);
	mutex_lock(&q->lock);
	spin_lock_bh(&q->sess_lock);
	q->sess = s;
	spin_unlock_bh(&q->sess_lock);
	conn = krdma_session_conn_get(s);
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
	} else {
		ret = krdma_blk_hello(q, conn);
		*depth = min(*depth, krdma_queue_depth(conn));
		*pages = min(*pages, krdma_mr_pool_pages(conn));
		krdma_session_conn_put(s, conn);
	}
	mutex_unlock(&q->lock);
	return ret;
}

/*
 * The disk's limits from the export's HELLO reply and @pages, what one
 * pool MR maps: a request spans at most that many pages, so it holds one
 * page less (it may start in the middle of one), and at most
 * KRDMA_BLK_MAX_IO, as nvme-rdma sizes its requests by min(256, the
 * device's pages - 1).  Return: 0 or -EPROTO.
 */
static int krdma_blk_limits(const struct krdma_blk_resp *r, u32 pages,
			    struct krdma_blk_limits *l, u64 *sectors, bool *ro)
{
	u32 xflags = be32_to_cpu(r->xflags);
	u32 lbs = be32_to_cpu(r->lbs);
	u32 ms = be32_to_cpu(r->max_sectors);
	u32 md = be32_to_cpu(r->max_discard);
	u32 io;

	if (lbs < SECTOR_SIZE || lbs > PAGE_SIZE || !is_power_of_2(lbs) ||
	    ms < (lbs >> SECTOR_SHIFT) || pages < 2)
		return -EPROTO;
	io = min_t(u32, KRDMA_BLK_MAX_IO, (pages - 1) * PAGE_SIZE);
	memset(l, 0, sizeof(*l));
	l->lbs = lbs;
	l->max_sectors = min_t(u32, ms, io >> SECTOR_SHIFT);
	l->max_segments = min_t(u32, KRDMA_BLK_MAX_SEGS, pages);
	/* The wire's length is 32 bits of bytes. */
	md = min_t(u32, md, U32_MAX >> SECTOR_SHIFT) &
		~((lbs >> SECTOR_SHIFT) - 1);
	if (xflags & KRDMA_BLK_X_DISCARD)
		l->max_discard = md;
	if (xflags & KRDMA_BLK_X_WRITE_ZEROES)
		l->max_write_zeroes = md;
	*sectors = be64_to_cpu(r->sectors);
	/* Its size in bytes must be a loff_t. */
	if (*sectors > (u64)LLONG_MAX >> SECTOR_SHIFT)
		return -EPROTO;
	*ro = xflags & KRDMA_BLK_X_RO;
	return 0;
}

/*
 * After this no callback of the map's sessions runs, their connections
 * are closed and every registration released.
 */
static void krdma_blk_map_stop_sessions(struct krdma_blk_map *map)
{
	struct krdma_session *s;
	u32 i;

	for (i = 0; i < map->nq; i++) {
		struct krdma_blk_queue *q = &map->qs[i];

		/*
		 * A RECONNECTED callback greeting the export holds q->lock
		 * until the server answers: end its wait first.  The
		 * barrier pairs with the one in krdma_blk_hello(), which
		 * either sees @stopping or has its completion completed.
		 */
		WRITE_ONCE(q->stopping, true);
		/* @stopping, then the completion: see krdma_blk_hello() */
		smp_mb();
		complete(&q->hs_done);
		mutex_lock(&q->lock);
		spin_lock_bh(&q->sess_lock);
		WRITE_ONCE(q->dead, true);
		s = q->sess;
		WRITE_ONCE(q->sess, NULL);
		spin_unlock_bh(&q->sess_lock);
		mutex_unlock(&q->lock);
		/* ->poll reads the session under RCU only. */
		if (s && q->polled)
			synchronize_rcu();
		/* Not under q->lock: it waits for the event callback. */
		if (s)
			krdma_session_destroy(s);
	}
}

static void krdma_blk_map_free(struct krdma_blk_map *map)
{
	if (map->qs)
		krdma_blk_map_stop_sessions(map);
	kfree(map->qs);
	kfree(map);
}

/**
 * krdma_blk_map_create - map an export as a disk
 * @a: the parsed command
 *
 * Starts @a->queues sessions to the server and greets the export on each
 * connection, then adds the disk, named @a->name, with the export's size
 * and limits.
 *
 * Context: process context; sleeps.
 * Return: the map, or an ERR_PTR: -ENOENT (the server has no such export),
 * -EOPNOTSUPP (poll queues, on a kernel where a request cannot hold a whole
 * polled bio over this device: 6.1 over siw),
 * a connect error (-ECONNREFUSED, -ETIMEDOUT, ...), -EPROTO (a bad reply),
 * -ENOMEM, or the block layer's error.
 */
struct krdma_blk_map *krdma_blk_map_create(const struct krdma_blk_map_args *a)
{
	struct krdma_blk_limits lim;
	struct krdma_blk_map *map;
	struct gendisk *disk;
	u32 i, depth = KRDMA_MAX_DEPTH, pages = KRDMA_MAX_MR_POOL_PAGES;
	u64 sectors;
	bool ro;
	int ret;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	strscpy(map->name, a->name, sizeof(map->name));
	strscpy(map->export, a->export, sizeof(map->export));
	mutex_init(&map->lock);
	map->nq = a->queues + a->poll_queues;
	map->npq = a->poll_queues;
	map->qs = kcalloc(map->nq, sizeof(*map->qs), GFP_KERNEL);
	if (!map->qs) {
		ret = -ENOMEM;
		goto free;
	}
	for (i = 0; i < map->nq; i++) {
		map->qs[i].map = map;
		map->qs[i].idx = i;
		map->qs[i].polled = i >= a->queues;
		init_llist_head(&map->qs[i].done);
		mutex_init(&map->qs[i].lock);
		spin_lock_init(&map->qs[i].sess_lock);
		init_completion(&map->qs[i].hs_done);
	}
	for (i = 0; i < map->nq; i++) {
		/* The control file's line names the failure. */
		ret = krdma_blk_queue_connect(&map->qs[i], a, &depth, &pages);
		if (ret)
			goto free;
	}
	ret = krdma_blk_limits(&map->qs[0].hs, pages, &lim, &sectors, &ro);
	if (ret)
		goto free;
	map->lim = lim;
	map->pages = pages;
	map->ignore_ro = krdma_blk_test_ignore_ro;
	map->ro = ro && !map->ignore_ro;
	/* 6.1 ends a polled bio that needs a split (krdma_blk_compat.h). */
	if (map->npq &&
	    lim.max_sectors < KRDMA_BLK_POLL_MIN_IO >> SECTOR_SHIFT) {
		ret = -EOPNOTSUPP;
		goto free;
	}

	map->set.ops = &krdma_blk_mq_ops;
	map->set.nr_hw_queues = map->nq;
	map->set.nr_maps = map->npq ? HCTX_MAX_TYPES : 1;
	map->set.queue_depth = depth;
	map->set.numa_node = NUMA_NO_NODE;
	map->set.cmd_size = sizeof(struct krdma_blk_rq);
	map->set.flags = BLK_MQ_F_SHOULD_MERGE;
	map->set.driver_data = map;
	map->set.timeout = KRDMA_BLK_IO_TIMEOUT;
	ret = blk_mq_alloc_tag_set(&map->set);
	if (ret)
		goto free;
	WRITE_ONCE(map->set_ready, true);

	disk = krdma_blk_alloc_disk(&map->set, &lim, map);
	if (IS_ERR(disk)) {
		ret = PTR_ERR(disk);
		goto free_set;
	}
	disk->fops = &krdma_blk_fops;
	disk->private_data = map;
	disk->flags |= GENHD_FL_NO_PART;
	strscpy(disk->disk_name, map->name, sizeof(disk->disk_name));
	set_capacity(disk, sectors);
	if (map->ro)
		set_disk_ro(disk, true);
	/*
	 * From here a DISCONNECTED quiesces the disk's queue, also while
	 * add_disk() runs and udev probes the new disk: nothing is sent on
	 * a new connection before RECONNECTED greeted the export on it.
	 */
	mutex_lock(&map->lock);
	map->disk = disk;
	mutex_unlock(&map->lock);
	ret = add_disk(disk);
	if (ret)
		goto put_disk;
	return map;
put_disk:
	krdma_blk_map_stop_sessions(map);
	mutex_lock(&map->lock);
	map->disk = NULL;
	mutex_unlock(&map->lock);
	put_disk(disk);
free_set:
	krdma_blk_map_stop_sessions(map);
	WRITE_ONCE(map->set_ready, false);
	blk_mq_free_tag_set(&map->set);
free:
	krdma_blk_map_free(map);
	return ERR_PTR(ret);
}

/**
 * krdma_blk_map_destroy - remove a mapped disk
 * @map: from krdma_blk_map_create()
 *
 * Works with I/O in flight, and with sessions reconnecting: new I/O fails
 * at once; the sessions are destroyed (which closes their connections and
 * releases every registration still out), then in-flight I/O fails with
 * BLK_STS_IOERR and the disk is deleted.
 *
 * Context: process context; sleeps.
 */
void krdma_blk_map_destroy(struct krdma_blk_map *map)
{
	u32 i;

	WRITE_ONCE(map->dead, true);
	/* queue_rq uses the sessions: keep it out while they go. */
	blk_mq_quiesce_queue(map->disk->queue);
	krdma_blk_map_stop_sessions(map);
	krdma_blk_inflight_do(map, NULL, -EIO);
	/* Queues a DISCONNECTED stopped get no RECONNECTED any more. */
	for (i = 0; i < map->nq; i++)
		krdma_blk_queue_start(&map->qs[i]);
	blk_mq_unquiesce_queue(map->disk->queue);
	del_gendisk(map->disk);
	put_disk(map->disk);
	WRITE_ONCE(map->set_ready, false);
	blk_mq_free_tag_set(&map->set);
	krdma_blk_map_free(map);
}
