/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a connection of a given queue depth asks of its device: send and
 * receive queue sizes and completion queue entries.  A pure function of
 * the depth and the device's attributes, so that KUnit checks the sizes
 * and the refusals without a device.
 *
 * Every work request krdma posts takes a slot that was counted here:
 * - a message (data, or a write-with-immediate notice sent as one): one of
 *   @depth send buffers;
 * - the credit-only message: its one buffer;
 * - a one-sided chunk, an atomic, a registration (REG_MR), an invalidation
 *   (LOCAL_INV) or a write-with-immediate: one of @depth one-sided slots,
 *   each sized for the most work requests rdma_rw posts for a chunk;
 * - the heartbeat (krdma_hb.c): one send (a ping or a pong) and one
 *   receive;
 * - the connection's MR pool (opts.mr_pool, krdma_mr.c): two per pool MR,
 *   outside the one-sided slots, so that a registration from the pool
 *   never waits for a slot.  A pool MR has at most one REG_MR (signaled)
 *   and one LOCAL_INV in the send queue: it goes back to the pool, and can
 *   be registered again, only after both completed.  Each completes;
 * - the drain: one.
 * rdma_rw adds its own share for the MRs it registers (iWARP READs), up to
 * three work requests per context, and silently clamps the sum to the
 * device's maximum: that share is checked here too.
 */
#ifndef KRDMA_QUEUE_H
#define KRDMA_QUEUE_H

#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/minmax.h>
#include <rdma/ib_verbs.h>
#include <krdma.h>

/* rdma_rw_init_qp(): one READ/WRITE plus REG_MR and LOCAL_INV per context */
#define KRDMA_RW_QP_FACTOR	3

struct krdma_queue_sizes {
	u32	chunk_pages;	/* pages per rdma_rw context */
	u32	send_sge;	/* SGEs per send work request */
	u32	rw_wr;		/* work requests per one-sided slot */
	u32	send_wr;	/* asked of the QP, before rdma_rw's share */
	u32	recv_wr;
	u32	cqe;		/* every work request may complete */
	const char *limit;	/* what was too small, on -EINVAL */
	u32	need, have;
};

/* Work requests a pool MR may have in the send queue: REG_MR, LOCAL_INV. */
#define KRDMA_POOL_MR_WR	2

static inline int krdma_queue_sizes(u32 depth, u32 chunk_pages_max,
				    u32 max_sge_send_cap, u32 mr_pool,
				    const struct ib_device_attr *a,
				    struct krdma_queue_sizes *q)
{
	u64 send, rw_share, cqe;

	q->chunk_pages = chunk_pages_max;
	if (a->max_fast_reg_page_list_len &&
	    a->max_fast_reg_page_list_len < q->chunk_pages)
		q->chunk_pages = a->max_fast_reg_page_list_len;
	/*
	 * rdma_rw splits a chunk into work requests of at most the QP's
	 * max_send_sge SGEs (max_sge_rd for a READ).
	 */
	q->send_sge = clamp_t(u32, a->max_send_sge, 1, max_sge_send_cap);
	q->rw_wr = DIV_ROUND_UP(q->chunk_pages,
				min_t(u32, q->send_sge, a->max_sge_rd ?: 1));
	send = (u64)depth + 1 + (u64)depth * q->rw_wr + 1 + 1 +
	       (u64)KRDMA_POOL_MR_WR * mr_pool;
	rw_share = (u64)KRDMA_RW_QP_FACTOR * depth;
	q->recv_wr = depth + 1 + 1 + 1;
	cqe = send + rw_share + q->recv_wr;
	q->send_wr = min_t(u64, send, U32_MAX);
	q->cqe = min_t(u64, cqe, U32_MAX);
	q->limit = NULL;
	if (send + rw_share > (u32)a->max_qp_wr) {
		q->limit = "send queue entries";
		q->need = min_t(u64, send + rw_share, U32_MAX);
		q->have = a->max_qp_wr;
	} else if (q->recv_wr > (u32)a->max_qp_wr) {
		q->limit = "receive queue entries";
		q->need = q->recv_wr;
		q->have = a->max_qp_wr;
	} else if (cqe > (u32)a->max_cqe) {
		q->limit = "completion queue entries";
		q->need = q->cqe;
		q->have = a->max_cqe;
	}
	return q->limit ? -EINVAL : 0;
}

/*
 * Pages per pool MR for opts.mr_pool_pages @asked on a device that maps
 * @dev_max pages in one MR (0: it says no bound): KRDMA_MR_POOL_PAGES_DEV
 * takes the device's, up to @cap; an explicit size more than the device
 * maps is refused (0).
 */
static inline u32 krdma_pool_pages(u32 asked, u32 dev_max, u32 cap)
{
	if (asked == KRDMA_MR_POOL_PAGES_DEV)
		return min_not_zero(dev_max, cap);
	if (dev_max && asked > dev_max)
		return 0;
	return asked;
}

#endif /* KRDMA_QUEUE_H */
