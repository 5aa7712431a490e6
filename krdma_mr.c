// SPDX-License-Identifier: GPL-2.0
/*
 * krdma memory exposure: fast registration (IB_WR_REG_MR) of local memory
 * for remote access, tokens, and invalidation (IB_WR_LOCAL_INV).
 *
 * Every registration has its own MR and a fresh key, in its connection's
 * own PD: nothing else of this host's memory is reachable by the peer, no
 * other connection can use the token, and a revoked token's rkey is never
 * valid again (ib_inc_rkey on each registration).
 *
 * A connection may also have a pool of MRs allocated at setup
 * (opts.mr_pool), for krdma_reg_sg_nowait(): registration and
 * invalidation that never sleep and never allocate, for an I/O path such
 * as a blk-mq ->queue_rq that must not block (the nvme-rdma and xprtrdma
 * FRWR model).  Its MRs are in the connection's PD too; each registration
 * takes a fresh key (ib_inc_rkey) and a fresh random I/O virtual address.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>

#include <rdma/mr_pool.h>

#include "krdma_core.h"
#include "krdma_dma.h"
#include "krdma_plan.h"
#include "krdma_queue.h"
#include "krdma_token.h"
#include "krdma_trace.h"

struct krdma_mr {
	struct krdma_conn	*conn;
	struct list_head	list;		/* conn->mrs */
	struct ib_mr		*mr;
	struct sg_table		own;		/* from krdma_reg_buf() */
	bool			own_sgt;
	struct scatterlist	*sg;
	int			nents;
	int			mapped;
	int			access;
	/*
	 * What krdma_mr_token() gives, copied from @mr while it exists: a
	 * concurrent teardown deregisters @mr (krdma_mr_release()), and
	 * the owner may still ask for the token.
	 */
	struct krdma_token	token;
	bool			valid;		/* registered, not revoked */
	bool			released;	/* verbs resources gone */
	struct ib_cqe		cqe;
	struct completion	done;
	int			status;
	/*
	 * A pool registration (one of conn->pool[]), under conn->lock.  It
	 * goes back to the pool once the consumer let go of it (@letgo) and
	 * the work requests it posted (@wr_out: its REG_MR, its LOCAL_INV)
	 * completed, provided its rkey is known to be invalid.
	 */
	bool			pool;
	bool			in_use;		/* taken from the pool */
	bool			letgo;		/* invalidate_async() or put() */
	bool			gone;		/* teardown released it */
	u8			wr_out;
	int			inv_status;	/* of the LOCAL_INV */
	struct krdma_req	*inv_req;	/* krdma_mr_invalidate_async()'s */
	struct ib_cqe		inv_cqe;
};

/*
 * Tests only: the Nth registration from a connection's MR pool from now on
 * fails its post with -ENOTCONN before it reaches the device, as siw's
 * post does on a QP that has just left RTS; counts down to 0
 * (test/guest/blk.sh).
 */
static int fault_reg_post_fail;
module_param(fault_reg_post_fail, int, 0644);
MODULE_PARM_DESC(fault_reg_post_fail,
		 "Tests only: the Nth pool registration's post from now on fails (0: none)");

/*
 * Tests only: the same for the registrations and invalidations a caller
 * waits for (krdma_reg_sg(), krdma_mr_revoke()): the Nth post of one from
 * now on fails with -ENOTCONN; counts down to 0 (test/guest/postfail.sh).
 */
static int fault_mr_post_fail;
module_param(fault_mr_post_fail, int, 0644);
MODULE_PARM_DESC(fault_mr_post_fail,
		 "Tests only: the Nth post of a waited registration or invalidation from now on fails (0: none)");

static void krdma_mr_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_mr *kmr = container_of(wc->wr_cqe, struct krdma_mr, cqe);

	if (krdma_inject_wc(kmr->conn, &kmr->conn->inj, cq, wc, KRDMA_INJ_REG))
		return;
	kmr->status = 0;
	if (wc->status != IB_WC_SUCCESS) {
		krdma_wc_error(kmr->conn, wc, "memory registration");
		kmr->status = krdma_op_errno(kmr->conn, wc);
	}
	complete(&kmr->done);
}

/*
 * Bound on a registration or invalidation.  Both are local work requests
 * and complete in microseconds, behind whatever the send queue holds.
 */

static int __krdma_mr_post_wait(struct krdma_mr *kmr,
				struct ib_send_wr *wr);

/*
 * Post one registration or invalidation WR and wait for it, in a send
 * queue slot.  Called with a QP reference (krdma_conn_qp_get()), and
 * returns with it.  A fatal signal in the wait for the slot returns
 * -EINTR with nothing posted; for an invalidation, whose token must die
 * all the same, the connection fails then as when the signal comes once
 * it is posted (krdma_wait_abandon(): -ECONNABORTED, the QP in ERROR).
 */
static int krdma_mr_post_wait(struct krdma_mr *kmr, struct ib_send_wr *wr)
{
	struct krdma_conn *conn = kmr->conn;
	int ret;

	ret = krdma_slots_get(conn, 1, false);
	if (ret == -EINTR && wr->opcode == IB_WR_LOCAL_INV)
		return krdma_wait_abandon(conn, "memory invalidation", true);
	if (ret)
		return ret;
	ret = __krdma_mr_post_wait(kmr, wr);
	krdma_slots_put(conn, 1);
	return ret;
}

static int __krdma_mr_post_wait(struct krdma_mr *kmr, struct ib_send_wr *wr)
{
	struct krdma_conn *conn = kmr->conn;
	int ret;

	reinit_completion(&kmr->done);
	kmr->cqe.done = krdma_mr_wr_done;
	wr->wr_cqe = &kmr->cqe;
	wr->send_flags = IB_SEND_SIGNALED;
	spin_lock_bh(&conn->lock);
	if (conn->qp_ok) {
		ret = krdma_fault_nth(&fault_mr_post_fail) ? -ENOTCONN :
		      ib_post_send(conn->qp, wr, NULL);
		/*
		 * As krdma_reg_sg_nowait()'s: a QP that takes no more (siw:
		 * -ENOTCONN once it left RTS, before its error reaches us)
		 * fails the connection now, so that the caller finds it
		 * failed rather than a working one that refused one request.
		 */
		if (ret)
			krdma_conn_fail_locked(conn, ret,
					       wr->opcode == IB_WR_REG_MR ?
					       "a registration" :
					       "an invalidation");
	} else {
		ret = conn->error ?: -ENOTCONN;
	}
	spin_unlock_bh(&conn->lock);
	if (ret)
		return ret;
	/*
	 * It completes, successfully or flushed by teardown's drain.  But a
	 * send queue that stops moving must not leave the caller in D state
	 * for good, with every user of the connection behind it (suspected,
	 * not proven, in one lab hang on 6.1 rxe): the wait fails the
	 * connection then and moves the QP to ERROR, which flushes the WR, so
	 * its cqe is done with before kmr can be freed (teardown cannot do
	 * the flush for us: it waits for our QP reference).
	 */
	return __krdma_wait_posted(conn, &kmr->done, KRDMA_POST_TIMEOUT,
				   wr->opcode == IB_WR_REG_MR ?
				   "memory registration" : "memory invalidation",
				   true) ?: kmr->status;
}

static void krdma_mr_release(struct krdma_mr *kmr)
{
	struct ib_device *ibdev = kmr->conn->kdev->ibdev;

	if (kmr->released)
		return;
	if (kmr->mr)
		ib_dereg_mr(kmr->mr);
	if (kmr->mapped)
		krdma_dma_unmap_sg(ibdev, kmr->sg, kmr->nents,
				   DMA_BIDIRECTIONAL);
	kmr->mr = NULL;
	kmr->mapped = 0;
	kmr->valid = false;
	kmr->released = true;
}

/*
 * Teardown: the QP is drained, so no registration WR is in flight.  Whoever
 * takes a registration off conn->mrs (here or krdma_mr_free()) releases it.
 */
static void krdma_pool_release_all(struct krdma_conn *conn);

void krdma_conn_release_mrs(struct krdma_conn *conn)
{
	struct krdma_mr *kmr;

	krdma_pool_release_all(conn);

	for (;;) {
		spin_lock_bh(&conn->lock);
		kmr = list_first_entry_or_null(&conn->mrs, struct krdma_mr,
					       list);
		if (kmr)
			list_del_init(&kmr->list);
		spin_unlock_bh(&conn->lock);
		if (!kmr)
			break;
		krdma_mr_release(kmr);
	}
}

/**
 * krdma_reg_sg - register a scatterlist for remote access
 * @conn: the connection whose peer will use the token
 * @sg: the memory; must stay valid until krdma_mr_free()
 * @nents: entries in @sg
 * @access: KRDMA_ACCESS_* rights granted to the peer (at least one)
 *
 * The token works on @conn only: its MR is in the connection's own PD, and
 * an access through any other QP (another peer, or another connection of
 * the same peer) fails with a remote access error.
 *
 * The region must fit one MR (the device's max_fast_reg_page_list_len
 * pages) and have no gaps between entries (all but the first start on a
 * page, all but the last end on one).
 *
 * Context: process; sleeps for a send queue slot, then until the device
 * has done the registration (at most 30 s, then the connection fails with
 * -ETIMEDOUT).  A fatal signal ends either wait with -EINTR: in the first
 * nothing was posted yet and the connection stays up; in the second the
 * registration is abandoned and the connection fails at once, with
 * -ECONNABORTED (its QP moved to ERROR; its owner closes it).  For the
 * I/O path, krdma_reg_sg_nowait().
 * Return: the registration, or an ERR_PTR: -EINVAL (bad rights or a gap),
 * -E2BIG (too large for one MR), -ENOMEM, -EINTR (the fatal signal), or
 * the connection's error.  A post the device refuses fails the connection
 * first (its ERROR event; krdma_conn_error() is then set), and its errno
 * is returned.
 */
struct krdma_mr *krdma_reg_sg(struct krdma_conn *conn, struct scatterlist *sg,
			      int nents, int access)
{
	struct ib_reg_wr wr = {};
	struct krdma_mr *kmr;
	struct ib_device *ibdev;
	u64 len;
	u32 npages;
	int ret, n;

	ret = krdma_access_valid(access);
	if (ret) {
		pr_warn_ratelimited("%s: bad access rights 0x%x\n",
				    conn->name, access);
		return ERR_PTR(ret);
	}
	ret = krdma_sg_len(sg, nents, &len);
	if (ret || !len || len > U32_MAX)
		return ERR_PTR(-EINVAL);

	ret = krdma_conn_qp_get(conn);
	if (ret)
		return ERR_PTR(ret);
	ibdev = conn->kdev->ibdev;
	ret = krdma_access_supported(access,
				     ibdev->attrs.atomic_cap != IB_ATOMIC_NONE);
	if (ret)
		goto out_put;
	npages = (offset_in_page(sg->offset) + len + PAGE_SIZE - 1) >>
		 PAGE_SHIFT;
	if (npages > ibdev->attrs.max_fast_reg_page_list_len) {
		pr_warn_ratelimited("%s: %llu bytes do not fit one MR (%u pages max)\n",
				    conn->name, len,
				    ibdev->attrs.max_fast_reg_page_list_len);
		ret = -E2BIG;
		goto out_put;
	}

	ret = -ENOMEM;
	kmr = kzalloc(sizeof(*kmr), GFP_KERNEL);
	if (!kmr)
		goto out_put;
	kmr->conn = conn;
	kmr->sg = sg;
	kmr->nents = nents;
	kmr->access = access;
	INIT_LIST_HEAD(&kmr->list);
	init_completion(&kmr->done);

	kmr->mapped = krdma_dma_map_sg(ibdev, sg, nents, DMA_BIDIRECTIONAL);
	if (!kmr->mapped)
		goto out_free;
	kmr->mr = ib_alloc_mr(conn->pd, IB_MR_TYPE_MEM_REG, npages);
	if (IS_ERR(kmr->mr)) {
		ret = PTR_ERR(kmr->mr);
		kmr->mr = NULL;
		goto out_release;
	}
	ib_update_fast_reg_key(kmr->mr, ib_inc_rkey(kmr->mr->rkey));
	n = ib_map_mr_sg(kmr->mr, sg, kmr->mapped, NULL, PAGE_SIZE);
	if (n != kmr->mapped) {
		pr_warn_ratelimited("%s: scatterlist has gaps, cannot register it as one region\n",
				    conn->name);
		ret = n < 0 ? n : -EINVAL;
		goto out_release;
	}
	/*
	 * The MR's address is what the token gives the peer (and /dev/krdma
	 * its user), and on rxe and siw the DMA address is the buffer's
	 * kernel virtual address.  Register it at a random I/O virtual
	 * address instead (xprtrdma rewrites the iova too), below the kernel
	 * half and with the same offset in its page: the device resolves
	 * addresses relative to the iova, and alignment stays what it is.
	 */
	kmr->mr->iova = ((u64)get_random_u32() << PAGE_SHIFT) |
			(kmr->mr->iova & ~PAGE_MASK);

	wr.wr.opcode = IB_WR_REG_MR;
	wr.mr = kmr->mr;
	wr.key = kmr->mr->rkey;
	wr.access = krdma_ib_access(access);
	ret = krdma_mr_post_wait(kmr, &wr.wr);
	if (ret)
		goto out_release;

	/* With the QP held: teardown cannot deregister the MR meanwhile. */
	kmr->token.addr = kmr->mr->iova;
	kmr->token.rkey = kmr->mr->rkey;
	kmr->token.length = kmr->mr->length;
	kmr->valid = true;
	krdma_conn_get(conn);
	/* Before qp_put: teardown cannot have passed its wait for users. */
	spin_lock_bh(&conn->lock);
	list_add_tail(&kmr->list, &conn->mrs);
	spin_unlock_bh(&conn->lock);
	krdma_conn_qp_put(conn);
	trace_krdma_mr_reg(conn->name, len, access);
	return kmr;

out_release:
	krdma_mr_release(kmr);
out_free:
	kfree(kmr);
out_put:
	krdma_conn_qp_put(conn);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(krdma_reg_sg);

/**
 * krdma_reg_buf - register a kernel virtual range for remote access
 * @conn: the connection whose peer will use the token
 * @buf: kmalloc'ed, page-allocator or vmalloc'ed memory
 * @len: its length
 * @access: KRDMA_ACCESS_* rights
 *
 * Context: process; sleeps, as krdma_reg_sg().
 * Return: as krdma_reg_sg().
 */
struct krdma_mr *krdma_reg_buf(struct krdma_conn *conn, void *buf,
			       size_t len, int access)
{
	struct krdma_mr *kmr;
	struct sg_table sgt;
	int ret;

	if (is_vmalloc_addr(buf) && offset_in_page(buf))
		return ERR_PTR(-EINVAL);
	ret = krdma_buf_to_sgt(buf, len, &sgt, GFP_KERNEL);
	if (ret)
		return ERR_PTR(ret);
	kmr = krdma_reg_sg(conn, sgt.sgl, sgt.orig_nents, access);
	if (IS_ERR(kmr)) {
		sg_free_table(&sgt);
		return kmr;
	}
	kmr->own = sgt;
	kmr->own_sgt = true;
	kmr->sg = kmr->own.sgl;
	return kmr;
}
EXPORT_SYMBOL_GPL(krdma_reg_buf);

/**
 * krdma_max_reg_pages - the most pages one registration maps
 * @conn: a connection from krdma_connect() or a listener
 *
 * The device's bound on one MR (max_fast_reg_page_list_len): a region
 * given to krdma_reg_buf() or krdma_reg_sg() that spans more pages fails
 * with -E2BIG.  A consumer exposing more memory than that registers it
 * in pieces, one token each.
 *
 * Context: any.
 * Return: the number of pages, or 0 before the connection has a queue
 * pair.
 */
u32 krdma_max_reg_pages(struct krdma_conn *conn)
{
	return conn->max_reg_pages;
}
EXPORT_SYMBOL_GPL(krdma_max_reg_pages);

/**
 * krdma_mr_pool_pages - the most pages a registration from the pool maps
 * @conn: a connection with an MR pool (opts.mr_pool)
 *
 * opts.mr_pool_pages as the connection's device took it: with
 * KRDMA_MR_POOL_PAGES_DEV, the device's bound up to KRDMA_MAX_MR_POOL_PAGES.
 * krdma_reg_sg_nowait() of a scatterlist that spans more pages fails with
 * -E2BIG.  A storage transport sizes its largest request by it (one page
 * less, for a request that starts in the middle of a page).
 *
 * Context: any.
 * Return: the number of pages, or 0 when the connection has no pool (yet:
 * it is made with the queue pair, before KRDMA_EVENT_ESTABLISHED).
 */
u32 krdma_mr_pool_pages(struct krdma_conn *conn)
{
	return conn->pool_n ? conn->opts.mr_pool_pages : 0;
}
EXPORT_SYMBOL_GPL(krdma_mr_pool_pages);

/**
 * krdma_mr_token - the token that gives the peer access to a registration
 * @kmr: the registration
 * @token: filled in
 *
 * The token as the registration made it, kept with @kmr: it reads the same
 * after the registration was revoked, or released by its connection's
 * teardown (a disconnect, device removal), when it gives the peer access
 * to nothing any more.
 *
 * Context: any; does not sleep.
 */
void krdma_mr_token(struct krdma_mr *kmr, struct krdma_token *token)
{
	*token = kmr->token;
}
EXPORT_SYMBOL_GPL(krdma_mr_token);

/**
 * krdma_mr_revoke - invalidate a registration's token
 * @kmr: the registration
 *
 * When this returns, every remote access with the token fails (and puts
 * the peer's connection into the error state).  On a working connection
 * that is a LOCAL_INV.  A connection that failed may still have its QP in
 * RTS (a malformed message from the peer fails the connection but moves
 * nothing), so the invalidation is posted there too; if it cannot be, or
 * does not complete, the connection is torn down here: its QP moved to
 * ERROR and drained, its registrations deregistered (a post the device
 * refuses fails the connection with that errno first, unless it had
 * failed already: then its first cause stays).  The connection's
 * owner still closes it as usual.
 *
 * Context: process context; sleeps until the device has done it (at most
 * 30 s, and teardown's drain).  A fatal signal ends the wait for the
 * invalidation, or for a send queue slot to post it in: the connection
 * fails with -ECONNABORTED (one line says who abandoned it) and is torn
 * down, so the token is dead all the same.
 *
 * Not for a pool registration (krdma_reg_sg_nowait()): -EINVAL.
 *
 * Return: 0; the token is dead then.
 */
int krdma_mr_revoke(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	struct ib_send_wr wr = {};
	int ret;

	if (WARN_ON_ONCE(kmr->pool))
		return -EINVAL;

	ret = __krdma_conn_qp_get(conn, true);
	if (ret)
		goto teardown;
	if (!kmr->valid || kmr->released) {
		krdma_conn_qp_put(conn);
		return 0;
	}
	wr.opcode = IB_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = kmr->token.rkey;
	ret = krdma_mr_post_wait(kmr, &wr);
	krdma_conn_qp_put(conn);
	if (!ret) {
		kmr->valid = false;
		return 0;
	}
teardown:
	/*
	 * No QP to post on (teardown runs or ran: it deregisters the MR), or
	 * the invalidation failed: the QP is in ERROR, but only the drain
	 * says the responder is done with what arrived before.
	 */
	krdma_conn_teardown(conn, 0);
	kmr->valid = false;
	return 0;
}
EXPORT_SYMBOL_GPL(krdma_mr_revoke);

/**
 * krdma_mr_free - revoke and release a registration
 * @kmr: the registration, from krdma_reg_sg() or krdma_reg_buf() (a pool
 *	registration ends with krdma_mr_invalidate_async() or krdma_mr_put())
 *
 * Context: process context; sleeps (krdma_mr_revoke()).
 */
void krdma_mr_free(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	bool mine;

	if (WARN_ON_ONCE(kmr->pool))
		return;

	trace_krdma_mr_dereg(conn->name, kmr->token.length, kmr->access);
	krdma_mr_revoke(kmr);
	spin_lock_bh(&conn->lock);
	mine = !list_empty(&kmr->list);
	list_del_init(&kmr->list);
	spin_unlock_bh(&conn->lock);
	if (mine)
		krdma_mr_release(kmr);
	if (kmr->own_sgt)
		sg_free_table(&kmr->own);
	kfree(kmr);
	krdma_conn_put(conn);
}
EXPORT_SYMBOL_GPL(krdma_mr_free);

/* ---- the connection's MR pool ---------------------------------------- */

/*
 * At QP creation (krdma_conn_create_qp()), process context: the MRs, in
 * the connection's PD, on a list of the QP's (ib_mr_pool_init(); not
 * qp->rdma_mrs, which rdma_rw uses), and the registration handles.
 */
int krdma_conn_pool_init(struct krdma_conn *conn)
{
	u32 n = conn->opts.mr_pool, pages, i;
	u32 max = conn->kdev->ibdev->attrs.max_fast_reg_page_list_len;
	int ret;

	if (!n)
		return 0;
	pages = krdma_pool_pages(conn->opts.mr_pool_pages, max,
				 KRDMA_MAX_MR_POOL_PAGES);
	if (!pages) {
		pr_warn_ratelimited("%s: MR pool of %u pages per MR, %s maps at most %u\n",
				    conn->name, conn->opts.mr_pool_pages,
				    conn->devname, max);
		return -EINVAL;
	}
	/* What krdma_reg_sg_nowait() and krdma_mr_pool_pages() see. */
	conn->opts.mr_pool_pages = pages;
	if (WARN_ON_ONCE(conn->pool))
		return -EINVAL;
	conn->pool = kcalloc(n, sizeof(*conn->pool), GFP_KERNEL);
	if (!conn->pool)
		return -ENOMEM;
	ret = ib_mr_pool_init(conn->qp, &conn->pool_mrs, n, IB_MR_TYPE_MEM_REG,
			      pages, 0);
	if (ret) {
		pr_warn_ratelimited("%s: no MR pool of %u x %u pages: %d\n",
				    conn->name, n, pages, ret);
		kfree(conn->pool);
		conn->pool = NULL;
		return ret;
	}
	for (i = 0; i < n; i++) {
		struct krdma_mr *kmr = &conn->pool[i];

		kmr->conn = conn;
		kmr->pool = true;
		init_completion(&kmr->done);
		list_add_tail(&kmr->list, &conn->pool_free);
	}
	conn->pool_n = n;
	return 0;
}

/* Before the QP goes; every pool MR is back (krdma_pool_release_all()). */
void krdma_conn_pool_destroy(struct krdma_conn *conn)
{
	if (conn->pool_n)
		ib_mr_pool_destroy(conn->qp, &conn->pool_mrs);
}

/* With the connection's memory: the handles the consumer may still hold. */
void krdma_conn_pool_free(struct krdma_conn *conn)
{
	kfree(conn->pool);
	conn->pool = NULL;
}

/* Take the MR and the DMA mapping off a pool registration (conn->lock). */
static struct ib_mr *krdma_pool_detach_locked(struct krdma_mr *kmr,
					      int *mapped)
{
	struct ib_mr *mr = kmr->mr;

	*mapped = kmr->mapped;
	kmr->mr = NULL;
	kmr->mapped = 0;
	return mr;
}

/*
 * Undo the DMA mapping and give the MR and then the handle back (the
 * handle last: a free handle always finds a free MR).  The caller took
 * @mr and @mapped off @kmr under conn->lock.
 */
static void krdma_pool_return(struct krdma_mr *kmr, struct ib_mr *mr,
			      int mapped)
{
	struct krdma_conn *conn = kmr->conn;

	if (mapped)
		krdma_dma_unmap_sg(conn->kdev->ibdev, kmr->sg, kmr->nents,
				   DMA_BIDIRECTIONAL);
	ib_mr_pool_put(conn->qp, &conn->pool_mrs, mr);
	spin_lock_bh(&conn->lock);
	kmr->in_use = false;
	list_add_tail(&kmr->list, &conn->pool_free);
	spin_unlock_bh(&conn->lock);
	krdma_room(conn);
}

/*
 * Teardown, after the drain: every completion was seen, nothing is in
 * flight.  Registrations the consumer still holds are released here; its
 * handles stay (gone) until the connection's memory goes.
 */
static void krdma_pool_release_all(struct krdma_conn *conn)
{
	u32 i;

	for (i = 0; i < conn->pool_n; i++) {
		struct krdma_mr *kmr = &conn->pool[i];
		struct ib_mr *mr = NULL;
		int mapped = 0;

		spin_lock_bh(&conn->lock);
		WARN_ON_ONCE(kmr->wr_out);
		if (kmr->in_use && !kmr->gone) {
			kmr->gone = true;
			kmr->valid = false;
			mr = krdma_pool_detach_locked(kmr, &mapped);
		}
		spin_unlock_bh(&conn->lock);
		if (mapped)
			krdma_dma_unmap_sg(conn->kdev->ibdev, kmr->sg,
					   kmr->nents, DMA_BIDIRECTIONAL);
		if (mr)
			ib_mr_pool_put(conn->qp, &conn->pool_mrs, mr);
	}
}

/*
 * A work request of a pool registration completed.  When it was the last
 * and the consumer let go, the registration goes back to the pool if its
 * rkey is invalid, and krdma_mr_invalidate_async()'s ->done runs after
 * that.  Softirq (the CQ's), or process context with bottom halves off.
 */
static void krdma_pool_wr_done(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	struct krdma_req *req = NULL;
	struct ib_mr *mr = NULL;
	int mapped = 0, status = 0;

	spin_lock_bh(&conn->lock);
	if (!WARN_ON_ONCE(!kmr->wr_out))
		kmr->wr_out--;
	if (!kmr->wr_out && kmr->letgo && !kmr->gone) {
		req = kmr->inv_req;
		kmr->inv_req = NULL;
		status = kmr->inv_status;
		if (!status && !kmr->valid)
			mr = krdma_pool_detach_locked(kmr, &mapped);
	}
	spin_unlock_bh(&conn->lock);
	if (mr)
		krdma_pool_return(kmr, mr, mapped);
	if (req) {
		req->status = status;
		req->len = 0;
		req->done(req);
	}
}

static void krdma_pool_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_mr *kmr = container_of(wc->wr_cqe, struct krdma_mr, cqe);

	if (krdma_inject_wc(kmr->conn, &kmr->conn->inj, cq, wc, KRDMA_INJ_REG))
		return;
	/* The connection fails with the cause, an ERROR event. */
	if (wc->status != IB_WC_SUCCESS)
		krdma_wc_error(kmr->conn, wc, "memory registration");
	krdma_pool_wr_done(kmr);
}

static void krdma_pool_inv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_mr *kmr = container_of(wc->wr_cqe, struct krdma_mr,
					    inv_cqe);
	struct krdma_conn *conn = kmr->conn;
	int status = 0;

	if (krdma_inject_wc(conn, &conn->inj, cq, wc, KRDMA_INJ_REG))
		return;
	if (wc->status != IB_WC_SUCCESS) {
		krdma_wc_error(conn, wc, "memory invalidation");
		status = krdma_op_errno(conn, wc);
	}
	spin_lock_bh(&conn->lock);
	kmr->inv_status = status;
	if (!status)
		kmr->valid = false;
	spin_unlock_bh(&conn->lock);
	krdma_pool_wr_done(kmr);
}

/**
 * krdma_reg_sg_nowait - register a scatterlist from the connection's MR pool
 * @conn: the connection whose peer will use the token; made with
 *	opts.mr_pool
 * @sg: the memory; must stay valid, and not be touched by the CPU while
 *	the peer may write it, until the registration went back to the pool
 * @nents: entries in @sg
 * @access: KRDMA_ACCESS_* rights granted to the peer (at least one)
 *
 * Takes a preallocated MR and handle from the pool, maps @sg for DMA and
 * posts its registration (IB_WR_REG_MR) with a fresh key and a random I/O
 * virtual address, under the connection's lock: a message sent on @conn
 * after this returns (the token, krdma_mr_token()) is behind the
 * registration in the send queue, so the peer can use the token as soon
 * as it has the message.  The REG_MR is signaled: its completion frees its
 * send queue entry whatever the consumer posts next (the queue has two
 * entries per pool MR, krdma_queue.h), and a failed registration is
 * reported as such; it fails the connection (a KRDMA_EVENT_ERROR with the
 * completion's errno).  Nothing is allocated.
 *
 * The token works on @conn only (its PD), with the rights of @access, for
 * krdma_mr_token()'s range.  It ends with krdma_mr_invalidate_async(), or
 * with the peer's krdma_send_inv_async() followed by krdma_mr_put(), or
 * with the connection (krdma_close() releases whatever is left).  An MR's
 * 8-bit key wraps after 256 registrations, as for every FRWR user; the
 * random I/O virtual address, new each time, keeps a stale token's
 * address out of the new range all the same.
 *
 * Context: any context up to softirq (a recv or ->done callback, a
 * timer); does not sleep.
 *
 * Return: the registration, or an ERR_PTR: -EINVAL (@conn has no pool,
 * bad rights, or @sg has gaps), -E2BIG (more than opts.mr_pool_pages
 * pages), -EAGAIN (every pool MR is in use), -EOPNOTSUPP (atomics on a
 * device without them), -ENOMEM (the DMA mapping failed), or the
 * connection's error.  A post the device refuses fails the connection
 * first (its ERROR event; krdma_conn_error() is then set), and its errno
 * is returned.
 */
struct krdma_mr *krdma_reg_sg_nowait(struct krdma_conn *conn,
				     struct scatterlist *sg, int nents,
				     int access)
{
	struct ib_reg_wr wr = {};
	struct krdma_mr *kmr;
	struct ib_device *ibdev;
	struct ib_mr *mr;
	int ret, n, mapped;
	u32 npages;
	u64 len;

	if (!conn->opts.mr_pool)
		return ERR_PTR(-EINVAL);
	ret = krdma_access_valid(access);
	if (ret)
		return ERR_PTR(ret);
	ret = krdma_sg_len(sg, nents, &len);
	if (ret || !len || len > U32_MAX)
		return ERR_PTR(-EINVAL);
	npages = (offset_in_page(sg->offset) + len + PAGE_SIZE - 1) >>
		 PAGE_SHIFT;
	if (npages > conn->opts.mr_pool_pages)
		return ERR_PTR(-E2BIG);

	/* A QP reference: teardown waits for it before the drain. */
	ret = krdma_conn_qp_get(conn);
	if (ret)
		return ERR_PTR(ret);
	ret = krdma_access_supported(access, conn->dev_atomics);
	if (ret)
		goto out_put;
	spin_lock_bh(&conn->lock);
	kmr = list_first_entry_or_null(&conn->pool_free, struct krdma_mr,
				       list);
	if (kmr) {
		list_del_init(&kmr->list);
		kmr->in_use = true;
	} else {
		krdma_room_want_locked(conn);
	}
	spin_unlock_bh(&conn->lock);
	ret = -EAGAIN;
	if (!kmr)
		goto out_put;
	mr = ib_mr_pool_get(conn->qp, &conn->pool_mrs);
	if (WARN_ON_ONCE(!mr))
		goto out_handle;
	ibdev = conn->kdev->ibdev;
	kmr->sg = sg;
	kmr->nents = nents;
	ret = -ENOMEM;
	mapped = krdma_dma_map_sg(ibdev, sg, nents, DMA_BIDIRECTIONAL);
	if (!mapped)
		goto out_mr;
	n = ib_map_mr_sg(mr, sg, mapped, NULL, PAGE_SIZE);
	if (n != mapped) {
		pr_warn_ratelimited("%s: scatterlist has gaps, cannot register it as one region\n",
				    conn->name);
		ret = n < 0 ? n : -EINVAL;
		goto out_unmap;
	}
	ib_update_fast_reg_key(mr, ib_inc_rkey(mr->rkey));
	/* As krdma_reg_sg(): never the kernel address as the token's. */
	mr->iova = ((u64)get_random_u32() << PAGE_SHIFT) |
		   (mr->iova & ~PAGE_MASK);

	kmr->access = access;
	kmr->letgo = false;
	kmr->inv_status = 0;
	kmr->inv_req = NULL;
	kmr->cqe.done = krdma_pool_reg_done;
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.wr_cqe = &kmr->cqe;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = mr;
	wr.key = mr->rkey;
	wr.access = krdma_ib_access(access);
	spin_lock_bh(&conn->lock);
	if (conn->qp_ok) {
		kmr->mr = mr;
		kmr->token.addr = mr->iova;
		kmr->token.rkey = mr->rkey;
		kmr->token.length = mr->length;
		kmr->mapped = mapped;
		kmr->valid = true;
		kmr->wr_out = 1;
		ret = krdma_fault_nth(&fault_reg_post_fail) ? -ENOTCONN :
		      ib_post_send(conn->qp, &wr.wr, NULL);
		if (ret) {
			kmr->mr = NULL;
			kmr->mapped = 0;
			kmr->valid = false;
			kmr->wr_out = 0;
			/*
			 * The QP takes no more (siw: -ENOTCONN once it left
			 * RTS, before its error reaches us): the connection
			 * fails now, so that the caller sees it failed and
			 * waits for a reconnect instead of failing its I/O.
			 */
			krdma_conn_fail_locked(conn, ret, "a registration");
		}
	} else {
		ret = conn->error ?: -ENOTCONN;
	}
	spin_unlock_bh(&conn->lock);
	if (ret)
		goto out_unmap;
	krdma_conn_qp_put(conn);
	trace_krdma_mr_reg(conn->name, len, access);
	return kmr;

out_unmap:
	krdma_dma_unmap_sg(ibdev, sg, nents, DMA_BIDIRECTIONAL);
	mapped = 0;
out_mr:
	ib_mr_pool_put(conn->qp, &conn->pool_mrs, mr);
out_handle:
	spin_lock_bh(&conn->lock);
	kmr->in_use = false;
	list_add(&kmr->list, &conn->pool_free);
	spin_unlock_bh(&conn->lock);
out_put:
	krdma_conn_qp_put(conn);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(krdma_reg_sg_nowait);

/**
 * krdma_mr_invalidate_async - invalidate a pool registration, then give it back
 * @kmr: a registration from krdma_reg_sg_nowait()
 * @req: request whose ->done runs when it is over
 *
 * Posts a signaled LOCAL_INV of the registration's rkey.  On success ->done
 * runs (completion context) with status 0 only after the device completed
 * the invalidation, so every later remote access with the token fails (and
 * fails the peer's connection); before ->done runs, the DMA mapping was
 * undone and the MR went back to the pool: the memory is the caller's
 * again, and @kmr must not be used any more.  If the invalidation fails
 * (the connection failed: ->done gets its error), the registration stays
 * mapped and its rkey may still be valid on a QP that is not in the error
 * state: the memory stays the device's until krdma_close() of the
 * connection returned (its teardown drains the QP and releases the pool).
 *
 * Context: any context up to softirq; does not sleep.
 *
 * Return: 0 if posted (->done will run); else ->done will not run:
 * -EINVAL (not a pool registration in use, or already let go), or the
 * connection's error when it can post no more (the registration is then
 * released by krdma_close()).
 */
int krdma_mr_invalidate_async(struct krdma_mr *kmr, struct krdma_req *req)
{
	struct krdma_conn *conn = kmr->conn;
	struct ib_send_wr wr = {};
	int ret;

	if (!kmr->pool)
		return -EINVAL;
	spin_lock_bh(&conn->lock);
	if (!kmr->in_use || kmr->letgo) {
		ret = -EINVAL;
	} else if (kmr->gone || !conn->qp_ok) {
		ret = conn->error ?: -ENOTCONN;
	} else {
		kmr->inv_cqe.done = krdma_pool_inv_done;
		wr.opcode = IB_WR_LOCAL_INV;
		wr.ex.invalidate_rkey = kmr->mr->rkey;
		wr.wr_cqe = &kmr->inv_cqe;
		wr.send_flags = IB_SEND_SIGNALED;
		ret = ib_post_send(conn->qp, &wr, NULL);
		if (!ret) {
			kmr->wr_out++;
			kmr->letgo = true;
			kmr->inv_req = req;
		} else {
			krdma_conn_fail_locked(conn, ret, "an invalidation");
		}
	}
	spin_unlock_bh(&conn->lock);
	if (!ret)
		trace_krdma_mr_dereg(conn->name, 0, kmr->access);
	return ret;
}
EXPORT_SYMBOL_GPL(krdma_mr_invalidate_async);

/**
 * krdma_mr_put - give back a pool registration the peer invalidated
 * @kmr: a registration from krdma_reg_sg_nowait() whose rkey came back in
 *	a message's inv_rkey (struct krdma_msg, krdma_recv_ex())
 *
 * The device invalidated the rkey when the peer's SEND_WITH_INV arrived,
 * so no LOCAL_INV is needed: the DMA mapping is undone and the MR goes
 * back to the pool (once its own registration work request completed,
 * which it has by the time a message of the peer's could answer the
 * token).  A registration whose rkey is still valid is refused: only an
 * invalidation makes the memory the caller's again.
 *
 * Context: any context up to softirq; does not sleep.
 *
 * Return: 0 (after the connection failed too: its teardown releases the
 * registration); -EBUSY when the rkey is still valid (use
 * krdma_mr_invalidate_async()); -EINVAL when @kmr is not a pool
 * registration in use.  @kmr belongs to its connection: call this before
 * krdma_close(), which frees it.
 */
int krdma_mr_put(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	struct ib_mr *mr = NULL;
	int mapped = 0, ret = 0;

	if (!kmr->pool)
		return -EINVAL;
	spin_lock_bh(&conn->lock);
	if (!kmr->in_use || kmr->letgo) {
		ret = -EINVAL;
	} else if (kmr->gone) {
		kmr->letgo = true;
	} else if (kmr->valid) {
		ret = -EBUSY;
	} else {
		kmr->letgo = true;
		/*
		 * Giving the MR back uses the QP and the device: hold the QP
		 * (teardown waits for its users) or, once teardown began,
		 * leave the registration to krdma_pool_release_all().
		 */
		if (!kmr->wr_out && conn->qp_ok) {
			conn->qp_users++;
			mr = krdma_pool_detach_locked(kmr, &mapped);
		}
	}
	spin_unlock_bh(&conn->lock);
	if (mr) {
		krdma_pool_return(kmr, mr, mapped);
		krdma_conn_qp_put(conn);
	}
	return ret;
}
EXPORT_SYMBOL_GPL(krdma_mr_put);

/*
 * The peer's SEND_WITH_INV invalidated @rkey (softirq, conn->lock held):
 * if that is a valid registration from this connection's pool, mark it
 * invalid and say so.  Anything else marks nothing.
 */
bool krdma_pool_remote_inv_locked(struct krdma_conn *conn, u32 rkey)
{
	u32 i;

	for (i = 0; i < conn->pool_n; i++) {
		struct krdma_mr *kmr = &conn->pool[i];

		if (kmr->in_use && kmr->valid && kmr->mr &&
		    kmr->mr->rkey == rkey) {
			kmr->valid = false;
			/* Already let go: its LOCAL_INV returns it. */
			return !kmr->letgo;
		}
	}
	return false;
}
