// SPDX-License-Identifier: GPL-2.0
/*
 * krdma memory exposure: fast registration (IB_WR_REG_MR) of local memory
 * for remote access, tokens, and invalidation (IB_WR_LOCAL_INV).
 *
 * Every registration has its own MR and a fresh key, in its connection's
 * own PD: nothing else of this host's memory is reachable by the peer, no
 * other connection can use the token, and a revoked token's rkey is never
 * valid again (ib_inc_rkey on each registration).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/random.h>
#include <linux/ratelimit.h>
#include <linux/slab.h>

#include "krdma_core.h"
#include "krdma_plan.h"
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
	bool			valid;		/* registered, not revoked */
	bool			released;	/* verbs resources gone */
	struct ib_cqe		cqe;
	struct completion	done;
	int			status;
};

static void krdma_mr_wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct krdma_mr *kmr = container_of(wc->wr_cqe, struct krdma_mr, cqe);

	kmr->status = 0;
	if (wc->status != IB_WC_SUCCESS) {
		krdma_wc_error(kmr->conn, wc, "memory registration");
		kmr->status = krdma_wc_errno(wc->status);
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
 * returns with it.
 */
static int krdma_mr_post_wait(struct krdma_mr *kmr, struct ib_send_wr *wr)
{
	struct krdma_conn *conn = kmr->conn;
	int ret;

	ret = krdma_slots_get(conn, 1, false);
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
	ret = conn->qp_ok ? ib_post_send(conn->qp, wr, NULL) : -ENOTCONN;
	spin_unlock_bh(&conn->lock);
	if (ret)
		return ret;
	/*
	 * It completes, successfully or flushed by teardown's drain.  But a
	 * send queue that stops moving must not leave the caller in D state
	 * for good, with every user of the connection behind it (suspected,
	 * not proven, in one lab hang on 6.1 rxe).  Fail the connection
	 * then, and move the QP to ERROR: that flushes the WR, so its cqe is
	 * done with before kmr can be freed.  Teardown cannot do the flush
	 * for us: it waits for our QP reference.  The owner's close tears the
	 * rest down as usual.
	 */
	if (!wait_for_completion_timeout(&kmr->done, KRDMA_POST_TIMEOUT)) {
		/* One rate limit for both lines: the second explains the first. */
		static DEFINE_RATELIMIT_STATE(rs, DEFAULT_RATELIMIT_INTERVAL,
					      DEFAULT_RATELIMIT_BURST);
		struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
		bool say = __ratelimit(&rs);

		if (say)
			pr_warn("%s: memory %s not completed in %u ms, failing the connection\n",
				conn->name, wr->opcode == IB_WR_REG_MR ?
				"registration" : "invalidation",
				jiffies_to_msecs(KRDMA_POST_TIMEOUT));
		krdma_conn_set_error(conn, -ETIMEDOUT);
		ret = ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
		if (ret && say)
			pr_warn("%s: cannot move the QP to ERROR (%d), still waiting for the device\n",
				conn->name, ret);
		wait_for_completion(&kmr->done);
		return -ETIMEDOUT;
	}
	return kmr->status;
}

static void krdma_mr_release(struct krdma_mr *kmr)
{
	struct ib_device *ibdev = kmr->conn->kdev->ibdev;

	if (kmr->released)
		return;
	if (kmr->mr)
		ib_dereg_mr(kmr->mr);
	if (kmr->mapped)
		ib_dma_unmap_sg(ibdev, kmr->sg, kmr->nents,
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
void krdma_conn_release_mrs(struct krdma_conn *conn)
{
	struct krdma_mr *kmr;

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
 * Return: the registration, or an ERR_PTR: -EINVAL (bad rights or a gap),
 * -E2BIG (too large for one MR), -ENOMEM, or the connection's error.
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

	kmr->mapped = ib_dma_map_sg(ibdev, sg, nents, DMA_BIDIRECTIONAL);
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
 * krdma_mr_token - the token that gives the peer access to a registration
 * @kmr: the registration
 * @token: filled in
 */
void krdma_mr_token(struct krdma_mr *kmr, struct krdma_token *token)
{
	token->addr = kmr->mr ? kmr->mr->iova : 0;
	token->rkey = kmr->mr ? kmr->mr->rkey : 0;
	token->length = kmr->mr ? kmr->mr->length : 0;
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
 * ERROR and drained, its registrations deregistered.  The connection's
 * owner still closes it as usual.
 *
 * Context: process context; sleeps until the device has done it (at most
 * 30 s, and teardown's drain).
 *
 * Return: 0; the token is dead then.
 */
int krdma_mr_revoke(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	struct ib_send_wr wr = {};
	int ret;

	ret = __krdma_conn_qp_get(conn, true);
	if (ret)
		goto teardown;
	if (!kmr->valid || kmr->released) {
		krdma_conn_qp_put(conn);
		return 0;
	}
	wr.opcode = IB_WR_LOCAL_INV;
	wr.ex.invalidate_rkey = kmr->mr->rkey;
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
 * @kmr: the registration
 */
void krdma_mr_free(struct krdma_mr *kmr)
{
	struct krdma_conn *conn = kmr->conn;
	bool mine;

	trace_krdma_mr_dereg(conn->name, kmr->mr ? kmr->mr->length : 0,
			     kmr->access);
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
