// SPDX-License-Identifier: GPL-2.0
/*
 * krdma one-sided transfers: RDMA WRITE and READ through rdma_rw, and
 * atomics.  An operation is one or more transfers (a batch), each cut into
 * chunks (krdma_plan.c); each chunk is one rdma_rw context, which splits it
 * further into as many work requests and registrations as the device
 * needs, and takes one queue-depth slot.
 *
 * All the work requests of an operation go to the device in one post, and
 * only the last one is signaled: a send queue completes in order, so its
 * completion says that every earlier one is done too.  That is one
 * completion (and one callback, one CQ event) per operation instead of one
 * per work request.  The last work request of every other chunk carries an
 * unsignaled cqe of its own, so that an error on it (a refused rkey, say)
 * is still seen with its status, not only as the flush that follows.
 *
 * An op is finished (its caller's request completed) exactly once, and
 * freed exactly once, whatever its completions do.  Every posted op is on
 * conn->rw_ops until it is freed.  Its signaled completion finishes it;
 * when that completion succeeded (and no chunk end failed) nothing can
 * refer to the op any more and it is freed at once.  Otherwise it only
 * finishes, and stays listed until teardown has drained the QP, because
 * a provider may report a flushed work request twice: siw does, for a
 * READ activated but not yet sent (it is both in the ORQ and the current
 * WQE, and siw_sq_flush() completes each), which freed a batch of READs
 * twice when a disconnect came in the middle of it.  A provider may also
 * never report one (siw can leave READs unflushed behind a failed READ
 * response), and a chain the device took only in part has no signaled
 * end: teardown finishes, after the drain, whatever is still unfinished,
 * and frees everything listed.  Completions for a finished op are ignored.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/slab.h>
#include <rdma/rw.h>

#include "krdma_core.h"
#include "krdma_dma.h"
#include "krdma_plan.h"
#include "krdma_token.h"
#include "krdma_trace.h"

struct krdma_rw_chunk {
	struct rdma_rw_ctx	ctx;
	struct sg_table		sgt;
	u32			bytes;
	bool			inited;
};

struct krdma_rdma {
	struct krdma_conn	*conn;
	struct krdma_req	*req;
	struct ib_cqe		cqe;		/* the last work request's */
	struct ib_cqe		err_cqe;	/* other chunks' last ones */
	struct list_head	link;		/* conn->rw_ops */
	bool			write;
	bool			finished;	/* req completed; ignore the rest */
	bool			slotted;	/* holds nr_chunks slots */
	int			nr_chunks;
	int			status;
	u32			len;
	struct krdma_rw_chunk	chunks[];
};

/* One transfer of an operation. */
struct krdma_rw_part {
	struct scatterlist		*sg;
	int				nents;
	u64				skip, len;
	const struct krdma_token	*token;
	u64				offset;
};

static enum dma_data_direction krdma_rw_dir(bool write)
{
	return write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

static void krdma_rw_chunk_destroy(struct krdma_rdma *op,
				   struct krdma_rw_chunk *ch)
{
	struct krdma_conn *conn = op->conn;

	if (ch->inited)
		rdma_rw_ctx_destroy(&ch->ctx, conn->qp, conn->port,
				    ch->sgt.sgl, ch->sgt.orig_nents,
				    krdma_rw_dir(op->write));
	ch->inited = false;
	sg_free_table(&ch->sgt);
}

/* Record a failed completion of @op's; the first error is the op's. */
static void krdma_rw_wc_status(struct krdma_rdma *op, struct ib_wc *wc)
{
	struct krdma_conn *conn = op->conn;

	krdma_wc_error(conn, wc, op->write ? "RDMA WRITE" : "RDMA READ");
	cmpxchg(&op->status, 0, krdma_op_errno(conn, wc));
}

/* Test knob: report each failed completion of an op twice, as siw can. */
static bool fault_dup_flush;
module_param(fault_dup_flush, bool, 0644);
MODULE_PARM_DESC(fault_dup_flush,
		 "test: deliver every failed RDMA READ/WRITE completion twice");

/*
 * Every work request of @op is done, flushed or lost: release its contexts
 * and slots and complete the caller's request.  @unlink: take the op off
 * conn->rw_ops too (the caller frees it).
 */
static void krdma_rw_op_complete(struct krdma_rdma *op, bool unlink,
				 enum ib_wc_status wc_status)
{
	struct krdma_conn *conn = op->conn;
	struct krdma_req *req = op->req;
	int i;

	trace_krdma_rdma_done(conn->name, op->write ? KRDMA_TRACE_OP_WRITE :
			      KRDMA_TRACE_OP_READ, op->len, wc_status);
	op->finished = true;
	for (i = 0; i < op->nr_chunks; i++)
		krdma_rw_chunk_destroy(op, &op->chunks[i]);
	if (unlink || !op->status) {
		spin_lock_bh(&conn->lock);
		if (unlink)
			list_del(&op->link);
		/* The peer's side did it: progress, for the heartbeat. */
		if (!op->status)
			conn->rw_done++;
		spin_unlock_bh(&conn->lock);
	}
	krdma_slots_put(conn, op->nr_chunks);

	req->status = op->status;
	req->len = op->status ? 0 : op->len;
	if (!op->status) {
		if (op->write) {
			atomic64_inc(&conn->stats.write_ops);
			atomic64_add(op->len, &conn->stats.write_bytes);
		} else {
			atomic64_inc(&conn->stats.read_ops);
			atomic64_add(op->len, &conn->stats.read_bytes);
		}
	}
	req->done(req);
}

static void __krdma_rw_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_rdma *op = container_of(wc->wr_cqe, struct krdma_rdma,
					      cqe);

	if (op->finished)
		return;		/* reported again: teardown frees it */
	if (wc->status == IB_WC_SUCCESS && !op->status) {
		krdma_rw_op_complete(op, true, wc->status);
		kfree(op);
		return;
	}
	if (wc->status != IB_WC_SUCCESS)
		krdma_rw_wc_status(op, wc);
	krdma_rw_op_complete(op, false, wc->status);
}

/* The op's last (signaled) work request completed or was flushed. */
static void krdma_rw_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_rdma *op = container_of(wc->wr_cqe, struct krdma_rdma,
					      cqe);

	if (!op->finished &&
	    krdma_inject_wc(op->conn, &op->conn->inj, cq, wc, KRDMA_INJ_RDMA))
		return;
	__krdma_rw_done(cq, wc);
	if (unlikely(fault_dup_flush) && wc->status != IB_WC_SUCCESS)
		__krdma_rw_done(cq, wc);
}

/*
 * An unsignaled chunk end failed or was flushed.  It completes before the
 * op's last work request (send queue order), which finishes the op.
 */
static void krdma_rw_err_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_rdma *op = container_of(wc->wr_cqe, struct krdma_rdma,
					      err_cqe);

	/* Never chosen itself, but it keeps its place behind a delayed one. */
	if (!op->finished && krdma_inject_wc(op->conn, &op->conn->inj, cq, wc, 0))
		return;
	if (!op->finished)
		krdma_rw_wc_status(op, wc);
}

/*
 * From teardown, after the QP is drained, so that no completion can come
 * for an op any more: finish the ops that never had their signaled
 * completion (posted in part, or lost by the provider), then free every
 * op still listed.
 */
void krdma_rw_reap(struct krdma_conn *conn)
{
	struct krdma_rdma *op, *tmp;
	bool bh = !conn->opts.workqueue;
	LIST_HEAD(ops);

	spin_lock_bh(&conn->lock);
	list_splice_init(&conn->rw_ops, &ops);
	spin_unlock_bh(&conn->lock);
	list_for_each_entry_safe(op, tmp, &ops, link) {
		if (!op->finished) {
			cmpxchg(&op->status, 0, conn->error ?: -ECONNRESET);
			/*
			 * Never completed: as good as flushed, and ->done
			 * runs where a flush's would (include/krdma.h): with
			 * bottom halves off, or in process context on a
			 * workqueue connection.
			 */
			if (bh)
				local_bh_disable();
			krdma_rw_op_complete(op, false, IB_WC_WR_FLUSH_ERR);
			if (bh)
				local_bh_enable();
		}
		kfree(op);
	}
}

static bool krdma_rw_slots_free(struct krdma_conn *conn, int n)
{
	bool ok;

	spin_lock_bh(&conn->lock);
	ok = !conn->qp_ok || conn->rw_slots + n <= conn->depth;
	spin_unlock_bh(&conn->lock);
	return ok;
}

/**
 * krdma_slots_get - take send queue slots for work requests
 * @conn: the connection
 * @n: slots: one per one-sided chunk, atomic, registration, invalidation
 *     or write-with-immediate (krdma_queue.h sized the QP for @depth)
 * @nowait: fail with -EAGAIN instead of sleeping
 *
 * Context: process context, or any with @nowait.  Works on a connection
 * in the error state as long as teardown has not begun (a revoke posts
 * there).  The wait is bounded: slots come back as work requests
 * complete, and one the device does not complete in KRDMA_POST_TIMEOUT
 * fails the connection, which wakes every waiter.  Only a fatal signal
 * ends it early: -EINTR, as from a wait for the device that a fatal
 * signal ends (__krdma_wait_posted()), but nothing was posted and the
 * connection stays up.
 *
 * Return: 0, -EAGAIN, -EINTR (the calling process is being killed), or
 * the connection's error.
 */
int krdma_slots_get(struct krdma_conn *conn, u32 n, bool nowait)
{
	int ret;

	for (;;) {
		spin_lock_bh(&conn->lock);
		if (!conn->qp_ok) {
			ret = conn->error ?: -ENOTCONN;
			spin_unlock_bh(&conn->lock);
			return ret;
		}
		if (conn->rw_slots + n <= conn->depth) {
			conn->rw_slots += n;
			spin_unlock_bh(&conn->lock);
			return 0;
		}
		if (nowait) {
			krdma_room_want_locked(conn);
			spin_unlock_bh(&conn->lock);
			return -EAGAIN;
		}
		conn->rw_waiters++;
		spin_unlock_bh(&conn->lock);
		/* wait_event_killable(), polling a polled connection */
		ret = min(__krdma_wait_event(conn, conn->wq,
					     krdma_rw_slots_free(conn, n),
					     MAX_SCHEDULE_TIMEOUT, TASK_KILLABLE),
			  0L);
		spin_lock_bh(&conn->lock);
		conn->rw_waiters--;
		spin_unlock_bh(&conn->lock);
		if (ret)
			return -EINTR;	/* -ERESTARTSYS: killed */
	}
}

/*
 * Give back slots of krdma_slots_get() that were never posted: wake a
 * poster sleeping for slots, but call no room callback.  The caller is
 * about to fail its own call (-EAGAIN for want of a credit, a send
 * buffer or an xop; or the post failed, which fails the connection), and
 * whatever it lacked arms and fires the callback when it frees; calling
 * it here would run the consumer's retry inside the very call that is
 * returning -EAGAIN, before the consumer held anything back (and again
 * from that retry, without end while the peer gives no credit).  Any
 * context.
 */
void krdma_slots_unget(struct krdma_conn *conn, u32 n)
{
	bool wake;

	spin_lock_bh(&conn->lock);
	conn->rw_slots -= n;
	/*
	 * Only a poster waiting for slots wants this wakeup: waking conn->wq
	 * on every completion would also wake a receiver waiting for a
	 * message and every other sleeper on the connection, for nothing.
	 */
	wake = conn->rw_waiters;
	spin_unlock_bh(&conn->lock);
	if (wake)
		wake_up_all(&conn->wq);
}

/*
 * Give back slots whose work requests completed (or an operation
 * prepared and discarded): room freed, so the room callback runs too.
 * Any context.
 */
void krdma_slots_put(struct krdma_conn *conn, u32 n)
{
	krdma_slots_unget(conn, n);
	krdma_room(conn);
}

/* Is the one-sided access [offset, offset + len) inside the token? */
static int krdma_token_check(struct krdma_conn *conn,
			     const struct krdma_token *token, u64 offset,
			     u64 len)
{
	if (krdma_token_range(token->length, offset, len)) {
		pr_warn_ratelimited("%s: access %llu+%llu outside the token's %u bytes\n",
				    conn->name, offset, len, token->length);
		return -ERANGE;
	}
	return 0;
}

/* Plan and build the chunks of @nparts transfers; returns the op. */
static struct krdma_rdma *krdma_rw_op_alloc(struct krdma_conn *conn,
					    bool write,
					    const struct krdma_rw_part *parts,
					    int nparts)
{
	struct krdma_chunk_plan *plan;
	struct sg_table *tables;
	struct krdma_rdma *op;
	bool split_gaps;
	int n = 0, p, ret;
	u64 len = 0;

	/* iWARP RDMA READ lands in an MR: chunks must be MR-mappable. */
	split_gaps = !write && rdma_protocol_iwarp(conn->kdev->ibdev,
						    conn->port);
	/* Scratch for the plan and the tables: at most depth chunks. */
	plan = kmalloc_array(conn->depth, sizeof(*plan) + sizeof(*tables),
			     GFP_KERNEL);
	if (!plan)
		return ERR_PTR(-ENOMEM);
	tables = (struct sg_table *)(plan + conn->depth);
	for (p = 0; p < nparts; p++) {
		const struct krdma_rw_part *pt = &parts[p];

		ret = krdma_rw_plan(pt->sg, pt->nents, pt->skip, pt->len,
				    conn->rw_chunk_pages, split_gaps, plan + n,
				    conn->depth - n);
		if (ret < 0)
			goto out_tables;
		ret = krdma_rw_fill(pt->sg, pt->nents, pt->skip, pt->len,
				    plan + n, ret, tables + n, GFP_KERNEL) ?: ret;
		if (ret < 0)
			goto out_tables;
		n += ret;
		len += pt->len;
	}
	ret = -E2BIG;
	if (len > U32_MAX)
		goto out_tables;
	ret = -ENOMEM;
	op = kzalloc(struct_size(op, chunks, n), GFP_KERNEL);
	if (!op)
		goto out_tables;
	op->conn = conn;
	op->write = write;
	op->len = len;
	op->nr_chunks = n;
	op->cqe.done = krdma_rw_done;
	op->err_cqe.done = krdma_rw_err_done;
	INIT_LIST_HEAD(&op->link);
	while (n--) {
		op->chunks[n].sgt = tables[n];
		op->chunks[n].bytes = plan[n].bytes;
	}
	kfree(plan);
	return op;

out_tables:
	while (n--)
		sg_free_table(&tables[n]);
	kfree(plan);
	return ERR_PTR(ret);
}

/*
 * Chain the work requests of every chunk of @op, only the very last one
 * signaled; returns the first.  Every other one (rdma_rw leaves its
 * registrations and all but a chunk's last transfer without a cqe, and
 * the CQ drops failed completions that have none) carries err_cqe, so
 * that a refused key is seen with its status wherever it lands.
 */
static struct ib_send_wr *krdma_rw_op_wrs(struct krdma_rdma *op)
{
	struct krdma_conn *conn = op->conn;
	struct ib_send_wr *first = NULL, *wr;
	int i;

	for (i = op->nr_chunks - 1; i >= 0; i--) {
		struct ib_send_wr *head;

		head = rdma_rw_ctx_wrs(&op->chunks[i].ctx, conn->qp, conn->port,
				       &op->cqe, NULL);
		for (wr = head; wr->next; wr = wr->next)
			if (!wr->wr_cqe)
				wr->wr_cqe = &op->err_cqe;
		if (first) {
			/* Not the last chunk: unsignaled, errors only. */
			wr->wr_cqe = &op->err_cqe;
			wr->send_flags &= ~IB_SEND_SIGNALED;
			wr->next = first;
		}
		first = head;
	}
	return first;
}

/* Undo krdma_rw_prep() of an op never posted.  Any context up to softirq. */
static void krdma_rw_op_discard(struct krdma_rdma *op)
{
	struct krdma_conn *conn = op->conn;
	int i;

	if (op->slotted)
		krdma_slots_put(conn, op->nr_chunks);
	for (i = 0; i < op->nr_chunks; i++)
		krdma_rw_chunk_destroy(op, &op->chunks[i]);
	kfree(op);
	krdma_conn_qp_put(conn);
}

/*
 * An iWARP RDMA READ lands in an MR (rdma_rw registers the sink with
 * remote write access), and its request carries the sink's address to the
 * peer, who writes the data back to it.  rdma_rw registers it at the
 * buffer's DMA address, which on rxe and siw is the buffer's kernel
 * virtual address: give each of @ctx's registrations a random I/O
 * virtual address instead, with the same offset in its page, as krdma's
 * tokens have (krdma_reg_sg()).  Before the post: the REG_MR registers
 * the MR's iova as it is then, and the READ's local SGE is addressed in
 * it.  Context: process, after rdma_rw_ctx_init() took the MR path.
 */
static void krdma_rw_hide_sink(struct rdma_rw_ctx *ctx)
{
	u32 i;

	for (i = 0; i < ctx->nr_ops; i++) {
		struct rdma_rw_reg_ctx *reg = &ctx->reg[i];

		reg->mr->iova = ((u64)get_random_u32() << PAGE_SHIFT) |
				(reg->mr->iova & ~PAGE_MASK);
		reg->sge.addr = reg->mr->iova;
	}
}

/*
 * Everything of an operation but its post: the QP reference, the op and
 * its chunks, their slots (waiting for them unless @nowait) and their
 * rdma_rw contexts (which map the memory and take the registrations).
 * Context: process; sleeps (rdma_rw allocates with GFP_KERNEL).
 */
static struct krdma_rdma *krdma_rw_prep(struct krdma_conn *conn, bool write,
					const struct krdma_rw_part *parts,
					int nparts, bool nowait)
{
	struct krdma_rdma *op;
	int n, i, ret;
	bool sink;

	might_sleep();
	ret = krdma_conn_qp_get(conn);
	if (ret)
		return ERR_PTR(ret);
	/* With the QP: a connection without one may have no device yet. */
	sink = !write && conn->iwarp;
	op = krdma_rw_op_alloc(conn, write, parts, nparts);
	if (IS_ERR(op)) {
		krdma_conn_qp_put(conn);
		return op;
	}

	/* Wait for slots before taking MRs from the QP's pool. */
	ret = krdma_slots_get(conn, op->nr_chunks, nowait);
	if (ret)
		goto out;
	op->slotted = true;

	for (i = 0, n = 0; i < nparts; i++) {
		u64 raddr = parts[i].token->addr + parts[i].offset, done = 0;

		for (; done < parts[i].len; n++) {
			struct krdma_rw_chunk *ch = &op->chunks[n];

			ret = rdma_rw_ctx_init(&ch->ctx, conn->qp, conn->port,
					       ch->sgt.sgl, ch->sgt.orig_nents,
					       0, raddr + done,
					       parts[i].token->rkey,
					       krdma_rw_dir(write));
			if (ret < 0) {
				pr_warn_ratelimited("%s: rdma_rw_ctx_init failed: %d\n",
						    conn->name, ret);
				goto out;
			}
			ch->inited = true;
			if (sink)
				krdma_rw_hide_sink(&ch->ctx);
			done += ch->bytes;
		}
	}
	return op;
out:
	krdma_rw_op_discard(op);
	return ERR_PTR(ret);
}

/*
 * Post a prepared op; its request's ->done runs once it is over.  On
 * failure the op is discarded; a post the device refuses, in whole or in
 * part, fails the connection (krdma_conn_fail_locked()).  Any context up
 * to softirq; never sleeps, never allocates.
 */
static int krdma_rw_post(struct krdma_rdma *op, struct krdma_req *req)
{
	struct krdma_conn *conn = op->conn;
	const struct ib_send_wr *bad = NULL;
	struct ib_send_wr *first;
	bool posted;
	int ret;

	op->req = req;
	first = krdma_rw_op_wrs(op);
	spin_lock_bh(&conn->lock);
	/* Not once the connection failed, even if the QP still takes it. */
	posted = krdma_conn_usable(conn);
	if (posted) {
		/*
		 * Traced only when it goes to the device, and before: the
		 * op may be complete and freed right after the post.
		 */
		trace_krdma_rdma_start(conn->name, op->write ?
				       KRDMA_TRACE_OP_WRITE :
				       KRDMA_TRACE_OP_READ, op->len);
		if (krdma_fault_op_post()) {
			ret = -ENOTCONN;
			bad = first;
		} else {
			ret = ib_post_send(conn->qp, first, &bad);
		}
		/*
		 * Listed under the lock that its completion takes to unlist
		 * it, so before that can happen.  A chain the device took
		 * only in part has lost its signaled end: it stays listed,
		 * and teardown (the connection fails) finishes it once the
		 * QP is drained.
		 */
		posted = !ret || bad != first;
		if (posted) {
			if (ret)
				op->status = ret;
			list_add_tail(&op->link, &conn->rw_ops);
		}
		/* In part or not at all: the QP takes no more. */
		if (ret)
			krdma_conn_fail_locked(conn, ret, op->write ?
					       "an RDMA WRITE" : "an RDMA READ");
	} else {
		ret = conn->error ?: -ENOTCONN;
	}
	spin_unlock_bh(&conn->lock);
	if (!posted) {
		krdma_rw_op_discard(op);
		return ret;
	}
	krdma_conn_qp_put(conn);
	return 0;
}

static int __krdma_rdma_async(struct krdma_conn *conn, bool write,
			      const struct krdma_rw_part *parts, int nparts,
			      struct krdma_req *req, bool nowait)
{
	struct krdma_rdma *op;

	op = krdma_rw_prep(conn, write, parts, nparts, nowait);
	if (IS_ERR(op))
		return PTR_ERR(op);
	return krdma_rw_post(op, req);
}

/**
 * krdma_rdma_chunk_size - how much of a transfer takes one slot
 * @conn: a connection from krdma_connect() or a listener
 *
 * krdma cuts a one-sided transfer into chunks of at most this many bytes
 * (256 pages, fewer if the device maps fewer in one MR), and each chunk
 * in flight takes one of the connection's queue depth slots: a transfer
 * of @len bytes of page-contiguous local memory takes
 * DIV_ROUND_UP(@len, krdma_rdma_chunk_size()) of them, one with gaps may
 * take more.  For a consumer that sizes its own window of asynchronous
 * transfers (krdma_rdma_async(), krdma_rdma_batch_async()) to the depth.
 *
 * Context: any.
 * Return: the chunk size in bytes, or 0 before the connection has a
 * queue pair.
 */
u32 krdma_rdma_chunk_size(struct krdma_conn *conn)
{
	return conn->rw_chunk_pages * PAGE_SIZE;
}
EXPORT_SYMBOL_GPL(krdma_rdma_chunk_size);

/**
 * krdma_rdma_async - RDMA WRITE or READ, completing through a callback
 * @conn: the connection
 * @write: true to write local data to the peer, false to read from it
 * @sg: local memory (source of a write, destination of a read)
 * @nents: entries in @sg
 * @token: the peer's region
 * @offset: where in the peer's region
 * @req: ->done runs (completion context) when the whole transfer is
 *	complete
 * @nowait: fail with -EAGAIN instead of waiting for a free slot
 *
 * The transfer may be at most queue depth chunks long (256 pages each);
 * krdma_write()/krdma_read() take any length.
 *
 * A READ's success says that the peer answered it, not that the answer
 * filled @sg: siw checks a READ response's length only when the response
 * comes in one segment, so a peer that sends it in short segments leaves
 * the rest of @sg as it was.  Memory read into that goes anywhere else
 * (a disk, user space, the peer again) must be initialised before the READ.
 *
 * Context: process context: rdma_rw maps and registers with GFP_KERNEL,
 * and without @nowait this waits for slots.  To start a transfer from a
 * completion, prepare it with krdma_rdma_prep() and post it there with
 * krdma_rdma_post().
 *
 * Return: 0 if started (->done will run), else a negative errno and ->done
 * will not run: -EINVAL (empty), -ERANGE (outside the token), -E2BIG,
 * -EAGAIN, -EINTR (a fatal signal while it waited for slots), or the
 * connection's error.
 */
int krdma_rdma_async(struct krdma_conn *conn, bool write,
		     struct scatterlist *sg, int nents,
		     const struct krdma_token *token, u64 offset,
		     struct krdma_req *req, bool nowait)
{
	struct krdma_rw_part part = {
		.sg = sg, .nents = nents, .token = token, .offset = offset,
	};
	int ret;

	ret = krdma_sg_len(sg, nents, &part.len);
	if (ret || !part.len)
		return -EINVAL;
	ret = krdma_token_check(conn, token, offset, part.len);
	if (ret)
		return ret;
	return __krdma_rdma_async(conn, write, &part, 1, req, nowait);
}
EXPORT_SYMBOL_GPL(krdma_rdma_async);

/**
 * krdma_rdma_prep - get an RDMA WRITE or READ ready to post later
 * @conn: the connection
 * @write: true to write local data to the peer, false to read from it
 * @sg: local memory (source of a write, destination of a read)
 * @nents: entries in @sg
 * @token: the peer's region
 * @offset: where in the peer's region
 * @nowait: fail with -EAGAIN instead of waiting for free slots
 *
 * Does all of krdma_rdma_async() that may sleep or allocate (mapping @sg,
 * the registrations an iWARP READ needs, the send queue slots), so that
 * krdma_rdma_post() can then start the transfer from a completion: a
 * storage server prepares the RDMA WRITE of a READ command's data before
 * it submits the bio, and posts it from the bio's end_io (nvmet-rdma
 * does the same).  The memory behind @sg must not change hands until the
 * transfer is over; for a write, its contents are read when the device
 * sends them, after the post.
 *
 * A prepared transfer holds the connection's QP: post it or discard it
 * soon (after the I/O it waits for, not after anything of the peer's).
 * Teardown of the connection, krdma_close() included, waits for it.
 *
 * Context: process context; sleeps.
 * Return: the prepared transfer, or an ERR_PTR: as krdma_rdma_async().
 */
struct krdma_rdma *krdma_rdma_prep(struct krdma_conn *conn, bool write,
				   struct scatterlist *sg, int nents,
				   const struct krdma_token *token, u64 offset,
				   bool nowait)
{
	struct krdma_rw_part part = {
		.sg = sg, .nents = nents, .token = token, .offset = offset,
	};
	int ret;

	ret = krdma_sg_len(sg, nents, &part.len);
	if (ret || !part.len)
		return ERR_PTR(-EINVAL);
	ret = krdma_token_check(conn, token, offset, part.len);
	if (ret)
		return ERR_PTR(ret);
	return krdma_rw_prep(conn, write, &part, 1, nowait);
}
EXPORT_SYMBOL_GPL(krdma_rdma_prep);

/**
 * krdma_rdma_post - start a transfer that krdma_rdma_prep() got ready
 * @op: from krdma_rdma_prep(); krdma's after this call, whatever it returns
 * @req: ->done runs (completion context) when the whole transfer is
 *	complete
 *
 * Context: any context up to softirq (not hardirq: a bio's end_io that may
 * run there must defer); never sleeps, never allocates.
 * Return: 0 if started (->done will run), else the connection's error
 * (the connection failed after the prep) and ->done will not run.
 */
int krdma_rdma_post(struct krdma_rdma *op, struct krdma_req *req)
{
	return krdma_rw_post(op, req);
}
EXPORT_SYMBOL_GPL(krdma_rdma_post);

/**
 * krdma_rdma_discard - drop a transfer that krdma_rdma_prep() got ready
 * @op: from krdma_rdma_prep(), not posted
 *
 * Context: any context up to softirq; never sleeps.
 */
void krdma_rdma_discard(struct krdma_rdma *op)
{
	krdma_rw_op_discard(op);
}
EXPORT_SYMBOL_GPL(krdma_rdma_discard);

/**
 * krdma_rdma_batch_async - several RDMA WRITEs or READs, one completion
 * @conn: the connection
 * @write: true to write local data to the peer, false to read from it
 * @vec: the transfers, in the order the device runs them
 * @n: entries in @vec
 * @req: ->done runs (completion context) once, when every transfer is
 *	complete; ->len is then their total
 * @nowait: fail with -EAGAIN instead of waiting for free slots
 *
 * The work requests of all the transfers go to the device in one post, and
 * the device signals only the last one: one completion for the batch rather
 * than one per transfer, which is most of the cost of small transfers.
 * Together the transfers may take at most queue depth chunks (256 pages
 * each; a transfer takes at least one).  If the batch fails, ->status is
 * the first error and the data of any transfer of it may or may not be
 * placed.
 *
 * Context: process, as krdma_rdma_async(): mapping and registering
 * allocate with GFP_KERNEL; without @nowait it waits for slots.
 * Return: as krdma_rdma_async(); -EINVAL for an empty batch.
 */
int krdma_rdma_batch_async(struct krdma_conn *conn, bool write,
			   const struct krdma_rdma_vec *vec, int n,
			   struct krdma_req *req, bool nowait)
{
	struct krdma_rw_part *parts;
	int i, ret;

	if (n <= 0)
		return -EINVAL;
	if (n > conn->depth)
		return -E2BIG;
	parts = kcalloc(n, sizeof(*parts), GFP_KERNEL);
	if (!parts)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		parts[i].sg = vec[i].sg;
		parts[i].nents = vec[i].nents;
		parts[i].token = vec[i].token;
		parts[i].offset = vec[i].offset;
		ret = -EINVAL;
		if (!vec[i].token ||
		    krdma_sg_len(vec[i].sg, vec[i].nents, &parts[i].len) ||
		    !parts[i].len)
			goto out;
		ret = krdma_token_check(conn, vec[i].token, vec[i].offset,
					parts[i].len);
		if (ret)
			goto out;
	}
	ret = __krdma_rdma_async(conn, write, parts, n, req, nowait);
out:
	kfree(parts);
	return ret;
}
EXPORT_SYMBOL_GPL(krdma_rdma_batch_async);

struct krdma_rw_sync {
	struct krdma_req	req;
	struct completion	done;
};

static void krdma_rw_sync_done(struct krdma_req *req)
{
	complete(&container_of(req, struct krdma_rw_sync, req)->done);
}

/*
 * Move @len bytes starting @skip bytes into @sg to/from @token at @offset,
 * in windows that fit the queue depth, and wait for each.
 */
int krdma_rdma_range(struct krdma_conn *conn, bool write,
		     struct scatterlist *sg, int nents, u64 skip, u64 len,
		     const struct krdma_token *token, u64 offset, long timeout)
{
	u64 done = 0, window;
	struct krdma_rw_sync s;
	int ret;

	if (!len)
		return -EINVAL;
	ret = krdma_token_check(conn, token, offset, len);
	if (ret)
		return ret;

	/*
	 * Windows of half the queue depth in chunks keep the pipe full
	 * without starving concurrent users of the connection.
	 */
	window = (u64)max_t(u32, conn->depth / 2, 1) * conn->rw_chunk_pages *
		 PAGE_SIZE / 2;
	while (done < len) {
		struct krdma_rw_part part = {
			.sg = sg, .nents = nents, .skip = skip + done,
			.len = min(len - done, window), .token = token,
			.offset = offset + done,
		};

		init_completion(&s.done);
		s.req.done = krdma_rw_sync_done;
		ret = __krdma_rdma_async(conn, write, &part, 1, &s.req, false);
		if (ret == -E2BIG && window > PAGE_SIZE) {
			/* Gappy scatterlist: more chunks than planned. */
			window /= 2;
			continue;
		}
		if (ret)
			return ret;
		/* On a timeout the flush gives our request back. */
		ret = krdma_wait_posted(conn, &s.done, timeout,
					write ? "RDMA WRITE" : "RDMA READ") ?:
		      s.req.status;
		if (ret)
			return ret;
		done += part.len;
	}
	return 0;
}

static int krdma_rdma_sync(struct krdma_conn *conn, bool write,
			   struct scatterlist *sg, int nents,
			   const struct krdma_token *token, u64 offset,
			   long timeout)
{
	u64 len;

	if (krdma_sg_len(sg, nents, &len) || !len)
		return -EINVAL;
	return krdma_rdma_range(conn, write, sg, nents, 0, len, token, offset,
				timeout);
}

/**
 * krdma_write - RDMA WRITE local memory into a peer's region, and wait
 * @conn: the connection
 * @sg: local data, any length within the token
 * @nents: entries in @sg
 * @token: the peer's region (with remote write right)
 * @offset: where in the peer's region
 * @timeout: jiffies; a transfer not done by then fails the connection
 *
 * On iWARP (siw) a WRITE completes once it is sent, and a peer that refuses
 * an access (bad key, missing right) sends a TERMINATE and drops the
 * connection rather than failing the operation: a refused WRITE may return
 * 0 without the data being placed, or -EIO if it was still being sent
 * (siw completes it with a local QP operation error); a refused READ fails
 * with -ECONNRESET; the connection fails either way.  A later READ on the
 * connection, or a reply from the peer, comes back only if the WRITE was
 * placed.
 *
 * A fatal signal abandons the transfer at once, as @timeout running out
 * does: the connection fails (with -ECONNABORTED) and is torn down, and
 * the call returns -EINTR once the flush gave @sg back.  One that comes
 * while a part of the transfer waits for send queue slots (the
 * connection has its depth in flight) returns -EINTR before that part is
 * posted, and the connection stays up.  Other signals do not end the
 * wait.
 *
 * Context: process; sleeps up to @timeout (MAX_SCHEDULE_TIMEOUT: until the
 * device is done, or a fatal signal).
 * Return: 0 once the data is placed at the peer (iWARP: once sent), else
 * -EINVAL, -ERANGE, -EACCES (the peer refused the key or the right; RoCE),
 * -ETIMEDOUT, -EINTR, or the connection's error.
 */
int krdma_write(struct krdma_conn *conn, struct scatterlist *sg, int nents,
		const struct krdma_token *token, u64 offset, long timeout)
{
	return krdma_rdma_sync(conn, true, sg, nents, token, offset, timeout);
}
EXPORT_SYMBOL_GPL(krdma_write);

/**
 * krdma_read - RDMA READ from a peer's region into local memory, and wait
 * @conn: the connection
 * @sg: local destination, any length within the token
 * @nents: entries in @sg
 * @token: the peer's region (with remote read right)
 * @offset: where in the peer's region
 * @timeout: jiffies; a transfer not done by then fails the connection
 *
 * As for krdma_rdma_async(), success does not prove that a hostile iWARP
 * peer filled all of @sg: initialise memory whose content goes elsewhere.
 *
 * Context: process; sleeps as krdma_write() does (a fatal signal ends it).
 * Return: as krdma_write().
 */
int krdma_read(struct krdma_conn *conn, struct scatterlist *sg, int nents,
	       const struct krdma_token *token, u64 offset, long timeout)
{
	return krdma_rdma_sync(conn, false, sg, nents, token, offset, timeout);
}
EXPORT_SYMBOL_GPL(krdma_read);

/**
 * krdma_write_imm - RDMA WRITE and notify the peer with immediate data
 * @conn: the connection
 * @sg: local data, any length within the token
 * @nents: entries in @sg
 * @token: the peer's region (with remote write right)
 * @offset: where in the peer's region
 * @imm: 32 bits the peer gets from krdma_recv_ex() once the data is placed
 * @timeout: jiffies (for the credit and for each part of the transfer)
 *
 * The notice takes one of the peer's receives, like a message, and arrives
 * in order with the messages.  iWARP has no immediate data.
 *
 * Context: process; sleeps as krdma_write() does (a fatal signal ends it),
 * and up to @timeout for the peer's credit for the notice, a wait that any
 * signal ends (-ERESTARTSYS: the data is placed, the notice not sent, and
 * the connection stays up).
 * Return: as krdma_write(), -ERESTARTSYS, or -EOPNOTSUPP on iWARP devices
 * (siw).
 */
int krdma_write_imm(struct krdma_conn *conn, struct scatterlist *sg,
		    int nents, const struct krdma_token *token, u64 offset,
		    u32 imm, long timeout)
{
	struct krdma_device *kdev;
	bool iwarp;
	u64 len;
	int ret;

	if (krdma_sg_len(sg, nents, &len) || !len)
		return -EINVAL;
	ret = krdma_conn_qp_get(conn);
	if (ret)
		return ret;
	kdev = conn->kdev;
	iwarp = rdma_protocol_iwarp(kdev->ibdev, conn->port);
	krdma_conn_qp_put(conn);
	if (iwarp)
		return -EOPNOTSUPP;
	ret = krdma_rdma_range(conn, true, sg, nents, 0, len, token, offset,
			       timeout);
	if (ret)
		return ret;
	/* Same QP, RC: the notice lands after the data it announces. */
	return krdma_post_imm(conn, token->addr + offset, token->rkey, imm,
			      timeout);
}
EXPORT_SYMBOL_GPL(krdma_write_imm);

/* ---- one-off work requests: atomics, write-with-immediate notices -- */

/*
 * The connection's contexts for them, conn->depth of them, allocated
 * with its buffers (krdma_alloc_bufs()), each atomic's 8-byte result
 * buffer mapped once.  Each one in flight holds an rw slot too, so there
 * is always a free context for a caller that got a slot.
 */
int krdma_xops_alloc(struct krdma_conn *conn)
{
	struct ib_device *ibdev = conn->kdev->ibdev;
	u32 i;

	conn->xops = kcalloc(conn->depth, sizeof(*conn->xops), GFP_KERNEL);
	if (!conn->xops)
		return -ENOMEM;
	conn->nr_xops = conn->depth;
	for (i = 0; i < conn->nr_xops; i++) {
		struct krdma_xop *x = &conn->xops[i];

		x->conn = conn;
		x->cqe.done = krdma_xop_done;
		INIT_LIST_HEAD(&x->list);
		if (conn->dev_atomics) {
			x->res = kmalloc(sizeof(*x->res), GFP_KERNEL);
			if (!x->res)
				return -ENOMEM;
			if (krdma_dma_map_single(ibdev, x->res, sizeof(*x->res),
						 DMA_FROM_DEVICE,
						 &x->res_dma)) {
				kfree(x->res);
				x->res = NULL;
				return -ENOMEM;
			}
		}
		list_add_tail(&x->list, &conn->xop_free);
	}
	return 0;
}

/* After the drain: every one posted has completed. */
void krdma_xops_free(struct krdma_conn *conn)
{
	u32 i;

	spin_lock_bh(&conn->lock);
	INIT_LIST_HEAD(&conn->xop_free);
	spin_unlock_bh(&conn->lock);
	for (i = 0; conn->xops && i < conn->nr_xops; i++) {
		struct krdma_xop *x = &conn->xops[i];

		WARN_ON_ONCE(x->req);
		if (!x->res)
			continue;
		krdma_dma_unmap_single(conn->kdev->ibdev, x->res_dma,
				       sizeof(*x->res), DMA_FROM_DEVICE);
		kfree(x->res);
	}
	kfree(conn->xops);
	conn->xops = NULL;
	conn->nr_xops = 0;
}

/* A free context for @req, or NULL.  Under conn->lock, with an rw slot. */
struct krdma_xop *krdma_xop_get_locked(struct krdma_conn *conn, int op,
				       struct krdma_req *req)
{
	struct krdma_xop *x;

	x = list_first_entry_or_null(&conn->xop_free, struct krdma_xop, list);
	if (WARN_ON_ONCE(!x))
		return NULL;
	list_del_init(&x->list);
	x->op = op;
	x->req = req;
	x->old = NULL;
	return x;
}

/* Give back a context whose post failed.  Under conn->lock. */
void krdma_xop_put_locked(struct krdma_conn *conn, struct krdma_xop *x)
{
	x->req = NULL;
	list_add(&x->list, &conn->xop_free);
}

void krdma_xop_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_xop *x = container_of(wc->wr_cqe, struct krdma_xop, cqe);
	struct krdma_conn *conn = x->conn;
	bool atomic = x->op != KRDMA_TRACE_OP_WRITE_IMM;
	struct krdma_req *req;
	int status = 0;

	if (krdma_inject_wc(conn, &conn->inj, cq, wc,
			    atomic ? KRDMA_INJ_ATOMIC : KRDMA_INJ_RDMA))
		return;
	trace_krdma_rdma_done(conn->name, x->op, atomic ? sizeof(u64) : 0,
			      wc->status);
	if (wc->status != IB_WC_SUCCESS) {
		krdma_wc_error(conn, wc, atomic ? "atomic" :
			       "RDMA WRITE with immediate");
		status = krdma_op_errno(conn, wc);
	} else if (atomic) {
		krdma_dma_sync_for_cpu(conn->kdev->ibdev, x->res_dma,
				       sizeof(*x->res), DMA_FROM_DEVICE);
		*x->old = READ_ONCE(*x->res);
		atomic64_inc(&conn->stats.atomic_ops);
	}
	spin_lock_bh(&conn->lock);
	req = x->req;
	krdma_xop_put_locked(conn, x);
	if (!status)
		conn->rw_done++;	/* the peer's progress, for the heartbeat */
	spin_unlock_bh(&conn->lock);
	krdma_slots_put(conn, 1);
	req->status = status;
	/* What it carried: the old value, or the immediate. */
	req->len = status ? 0 : atomic ? sizeof(u64) : sizeof(u32);
	req->done(req);
}

static int krdma_atomic_async(struct krdma_conn *conn,
			      enum ib_wr_opcode opcode,
			      const struct krdma_token *token, u64 offset,
			      u64 compare_add, u64 swap, u64 *old,
			      struct krdma_req *req, bool nowait)
{
	struct ib_atomic_wr wr = {};
	struct krdma_xop *x;
	struct ib_sge sge;
	int op, ret;

	if (!req || !req->done || !old)
		return -EINVAL;
	ret = krdma_token_check(conn, token, offset, sizeof(u64));
	if (ret)
		return ret;
	ret = krdma_atomic_target(token, offset);
	if (ret) {
		pr_warn_ratelimited("%s: atomic target not 8-byte aligned\n",
				    conn->name);
		return ret;
	}
	if (!conn->dev_atomics)
		return krdma_conn_error(conn) ?: -EOPNOTSUPP;
	ret = krdma_slots_get(conn, 1, nowait);
	if (ret)
		return ret;
	op = opcode == IB_WR_ATOMIC_CMP_AND_SWP ? KRDMA_TRACE_OP_CAS :
		KRDMA_TRACE_OP_FADD;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.wr.opcode = opcode;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.remote_addr = token->addr + offset;
	wr.rkey = token->rkey;
	wr.compare_add = compare_add;
	wr.swap = swap;

	spin_lock_bh(&conn->lock);
	/* Failed (its QP perhaps still in RTS): nothing more goes out. */
	if (!krdma_conn_usable(conn)) {
		ret = conn->error ?: -ENOTCONN;
		goto out_unlock;
	}
	ret = -EAGAIN;
	x = krdma_xop_get_locked(conn, op, req);
	if (!x)
		goto out_unlock;
	x->old = old;
	sge.addr = x->res_dma;
	sge.length = sizeof(u64);
	sge.lkey = conn->pd->local_dma_lkey;
	wr.wr.wr_cqe = &x->cqe;
	krdma_dma_sync_for_device(conn->kdev->ibdev, x->res_dma, sizeof(u64),
				  DMA_FROM_DEVICE);
	trace_krdma_rdma_start(conn->name, op, sizeof(u64));
	ret = krdma_fault_op_post() ? -ENOTCONN :
	      ib_post_send(conn->qp, &wr.wr, NULL);
	if (ret) {
		krdma_xop_put_locked(conn, x);
		/* The caller finds the connection failed, not one that is up. */
		krdma_conn_fail_locked(conn, ret, "an atomic");
	}
out_unlock:
	spin_unlock_bh(&conn->lock);
	if (ret)
		krdma_slots_unget(conn, 1);
	return ret;
}

/**
 * krdma_atomic_cas_async - post a compare-and-swap without waiting for it
 * @conn: the connection
 * @token: the peer's region (with remote atomic right)
 * @offset: 8-byte aligned offset in the region
 * @compare: expected value
 * @swap: new value, stored if the old one equals @compare
 * @old: where krdma stores the value before the operation, before ->done
 *	runs (only when ->status is 0); the caller's memory, never the
 *	device's, so it may be on a stack that lives until ->done
 * @req: ->done runs once, in completion context (softirq, the CQ's
 *	workqueue, or the poller of a polled connection), with ->status 0
 *	or the error, ->len 8 on success
 * @nowait: fail with -EAGAIN instead of waiting when the connection has
 *	queue depth operations in flight already
 *
 * Nothing is allocated: the work request uses one of the connection's
 * preallocated contexts, whose result buffer was mapped at set-up.
 *
 * Context: with @nowait, any context but hard interrupt (softirq, a timer,
 * under a spinlock); never sleeps.  Without it, process context: it may
 * sleep for a slot.
 * Return: 0 if posted (->done will run); else ->done will not run and
 * the error is -EINVAL (no @req, ->done or @old; a misaligned target),
 * -ERANGE (outside the token), -EOPNOTSUPP (the device has no atomics:
 * siw), -EAGAIN (@nowait and no slot), -EINTR (a fatal signal while it
 * waited for one), or the connection's error.  A post the device refuses
 * fails the connection first (its ERROR event), and its errno is returned.
 */
int krdma_atomic_cas_async(struct krdma_conn *conn,
			   const struct krdma_token *token, u64 offset,
			   u64 compare, u64 swap, u64 *old,
			   struct krdma_req *req, bool nowait)
{
	return krdma_atomic_async(conn, IB_WR_ATOMIC_CMP_AND_SWP, token,
				  offset, compare, swap, old, req, nowait);
}
EXPORT_SYMBOL_GPL(krdma_atomic_cas_async);

/**
 * krdma_atomic_fadd_async - post a fetch-and-add without waiting for it
 * @conn: the connection
 * @token: the peer's region (with remote atomic right)
 * @offset: 8-byte aligned offset in the region
 * @add: the addend
 * @old: as krdma_atomic_cas_async()'s
 * @req: as krdma_atomic_cas_async()'s
 * @nowait: as krdma_atomic_cas_async()'s
 *
 * Context: as krdma_atomic_cas_async().
 * Return: as krdma_atomic_cas_async().
 */
int krdma_atomic_fadd_async(struct krdma_conn *conn,
			    const struct krdma_token *token, u64 offset,
			    u64 add, u64 *old, struct krdma_req *req,
			    bool nowait)
{
	return krdma_atomic_async(conn, IB_WR_ATOMIC_FETCH_AND_ADD, token,
				  offset, add, 0, old, req, nowait);
}
EXPORT_SYMBOL_GPL(krdma_atomic_fadd_async);

struct krdma_atomic_sync {
	struct krdma_req	req;
	struct completion	done;
};

static void krdma_atomic_sync_done(struct krdma_req *req)
{
	complete(&container_of(req, struct krdma_atomic_sync, req)->done);
}

/* The synchronous atomics: post, then krdma_wait_posted(). */
static int krdma_atomic(struct krdma_conn *conn, enum ib_wr_opcode opcode,
			const struct krdma_token *token, u64 offset,
			u64 compare_add, u64 swap, u64 *old, long timeout)
{
	struct krdma_atomic_sync s;
	u64 val;
	int ret;

	init_completion(&s.done);
	s.req.done = krdma_atomic_sync_done;
	ret = krdma_atomic_async(conn, opcode, token, offset, compare_add,
				 swap, &val, &s.req, false);
	if (ret)
		return ret;
	ret = krdma_wait_posted(conn, &s.done, timeout, "atomic") ?:
	      s.req.status;
	if (!ret)
		*old = val;
	return ret;
}

/**
 * krdma_atomic_cas - compare-and-swap 8 bytes of a peer's region
 * @conn: the connection
 * @token: the peer's region (with remote atomic right)
 * @offset: 8-byte aligned offset in the region
 * @compare: expected value
 * @swap: new value, stored if the old one equals @compare
 * @old: the value before the operation
 * @timeout: jiffies the device has to complete it (0: 30 s); past it the
 *	connection fails
 *
 * A fatal signal abandons the operation at once, as krdma_write()'s: the
 * connection fails with -ECONNABORTED, and -EINTR is returned (the
 * peer's 8 bytes may or may not have changed).  Killed while it waits for
 * a send queue slot, it returns -EINTR with nothing posted, the
 * connection up.
 *
 * Context: process; sleeps up to @timeout (MAX_SCHEDULE_TIMEOUT: until
 * the device is done, or a fatal signal).
 * Return: 0, -EOPNOTSUPP where the device has no atomics (siw), -EINVAL for
 * a misaligned target, -ERANGE, -EACCES, -ETIMEDOUT, -EINTR, or the
 * connection's error.
 */
int krdma_atomic_cas(struct krdma_conn *conn, const struct krdma_token *token,
		     u64 offset, u64 compare, u64 swap, u64 *old, long timeout)
{
	return krdma_atomic(conn, IB_WR_ATOMIC_CMP_AND_SWP, token, offset,
			    compare, swap, old, timeout);
}
EXPORT_SYMBOL_GPL(krdma_atomic_cas);

/**
 * krdma_atomic_fadd - fetch-and-add on 8 bytes of a peer's region
 * @conn: the connection
 * @token: the peer's region (with remote atomic right)
 * @offset: 8-byte aligned offset in the region
 * @add: the addend
 * @old: the value before the operation
 * @timeout: as krdma_atomic_cas()'s
 *
 * Context: process; sleeps as krdma_atomic_cas() does.
 * Return: as krdma_atomic_cas().
 */
int krdma_atomic_fadd(struct krdma_conn *conn, const struct krdma_token *token,
		      u64 offset, u64 add, u64 *old, long timeout)
{
	return krdma_atomic(conn, IB_WR_ATOMIC_FETCH_AND_ADD, token, offset,
			    add, 0, old, timeout);
}
EXPORT_SYMBOL_GPL(krdma_atomic_fadd);

/**
 * krdma_conn_has_atomics - does a connection's device do atomics?
 * @conn: a connection from krdma_connect() or a listener
 *
 * Recorded when the connection's queue pair was made, and kept after it
 * failed.  Without them krdma_atomic_cas() and krdma_atomic_fadd() fail
 * with -EOPNOTSUPP, and so does a registration asking for
 * KRDMA_ACCESS_REMOTE_ATOMIC.
 *
 * Context: any.
 * Return: true when the device has them (rxe), false when not (siw) or
 * before the connection has a queue pair.
 */
bool krdma_conn_has_atomics(struct krdma_conn *conn)
{
	return conn->dev_atomics;
}
EXPORT_SYMBOL_GPL(krdma_conn_has_atomics);
