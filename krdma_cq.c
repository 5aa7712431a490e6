// SPDX-License-Identifier: GPL-2.0
/*
 * krdma queue pairs, completion queues and their buffers: what a connection
 * sets up before its first message and takes down after its last, and the
 * work completion status helpers every datapath shares.  The message
 * datapath that runs on them is krdma_msg.c.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sched/signal.h>
#include <rdma/rw.h>

#include "krdma_core.h"
#include "krdma_dma.h"
#include "krdma_queue.h"
#include "krdma_trace.h"

int krdma_wc_errno(enum ib_wc_status status)
{
	switch (status) {
	case IB_WC_SUCCESS:
		return 0;
	case IB_WC_REM_ACCESS_ERR:
	case IB_WC_LOC_ACCESS_ERR:
		return -EACCES;
	case IB_WC_LOC_PROT_ERR:
	case IB_WC_MW_BIND_ERR:
		return -EFAULT;
	case IB_WC_RETRY_EXC_ERR:
	case IB_WC_RNR_RETRY_EXC_ERR:
	case IB_WC_RESP_TIMEOUT_ERR:
		return -ETIMEDOUT;
	case IB_WC_REM_INV_REQ_ERR:
	case IB_WC_LOC_LEN_ERR:
		return -EINVAL;
	case IB_WC_REM_OP_ERR:
	case IB_WC_REM_ABORT_ERR:
		return -EREMOTEIO;
	case IB_WC_WR_FLUSH_ERR:
		return -ECONNRESET;
	default:
		return -EIO;
	}
}

/*
 * A failed work completion: the QP has left RTS, and the connection errors
 * out with the first cause seen.  A flush is the echo of an earlier error
 * (perhaps one the CQ never delivered: rdma_rw's inner work requests had no
 * cqe) or of teardown, and is not logged; anything else is the first sign
 * of trouble: one dmesg line naming the status.
 */
void krdma_wc_error(struct krdma_conn *conn, struct ib_wc *wc, const char *op)
{
	int err = krdma_wc_errno(wc->status);

	if (wc->status == IB_WC_WR_FLUSH_ERR) {
		/* A fatal QP event's cause, else a placeholder. */
		err = READ_ONCE(conn->qp_event_err);
		if (err)
			krdma_conn_set_error(conn, err);
		else
			krdma_conn_set_error_flush(conn);
		return;
	}
	atomic64_inc(&conn->stats.errors);
	pr_warn_ratelimited("%s: %s failed: %s (%d)\n", conn->name, op,
			    ib_wc_status_msg(wc->status), wc->status);
	krdma_conn_set_error_wc(conn, err, wc->status);
}

/* What the sysfs files say of a failed work completion's status. */
const char *krdma_wc_status_name(enum ib_wc_status status)
{
	return status == IB_WC_SUCCESS ? "none" : ib_wc_status_msg(status);
}

/*
 * QP events, in any context (an interrupt on real hardware): nothing that
 * takes conn->lock here.  A passive side whose first receive came before
 * the CM's RTU tells the CM (COMM_EST), as nvmet-rdma and isert do.  A
 * fatal event is logged and recorded; the QP is in ERROR then, and the
 * flushed work requests fail the connection (krdma_wc_error()), with this
 * event's errno as their cause.
 */
static void krdma_qp_event(struct ib_event *ev, void *ctx)
{
	struct krdma_conn *conn = ctx;
	int err;

	switch (ev->event) {
	case IB_EVENT_COMM_EST:
		rdma_notify(conn->cm_id, IB_EVENT_COMM_EST);
		return;
	case IB_EVENT_QP_ACCESS_ERR:
		err = -EACCES;
		break;
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_DEVICE_FATAL:
		err = -EIO;
		break;
	default:
		return;
	}
	pr_warn_ratelimited("%s: QP event: %s\n", conn->name,
			    ib_event_msg(ev->event));
	cmpxchg(&conn->qp_event_err, 0, err);
}

/* A failed operation's errno; a flush stands for the connection's error. */
int krdma_op_errno(struct krdma_conn *conn, struct ib_wc *wc)
{
	int err;

	if (wc->status != IB_WC_WR_FLUSH_ERR)
		return krdma_wc_errno(wc->status);
	spin_lock_bh(&conn->lock);
	err = conn->error ?: -ECONNRESET;
	spin_unlock_bh(&conn->lock);
	return err;
}

/* ---- buffers ------------------------------------------------------- */

static void krdma_free_hdr_tx(struct krdma_conn *conn, struct krdma_tx *tx)
{
	if (!tx->buf)
		return;
	krdma_dma_unmap_single(conn->kdev->ibdev, tx->dma, KRDMA_HDR_LEN,
			       DMA_TO_DEVICE);
	kfree(tx->buf);
	tx->buf = NULL;
}

/* The caller's memory a gather send mapped (krdma_post_msg_locked()). */
void krdma_tx_unmap(struct krdma_conn *conn, struct krdma_tx *tx)
{
	u32 i;

	for (i = 1; i <= tx->nmap; i++)
		krdma_dma_unmap_single(conn->kdev->ibdev, tx->sge[i].addr,
				       tx->sge[i].length, DMA_TO_DEVICE);
	tx->nmap = 0;
}

static void krdma_free_bufs(struct krdma_conn *conn)
{
	struct ib_device *ibdev = conn->kdev->ibdev;
	struct krdma_rx *rx_arr, *rx, *tmp;
	void *buf;
	u32 i;

	spin_lock_bh(&conn->lock);
	INIT_LIST_HEAD(&conn->rx_ready);
	INIT_LIST_HEAD(&conn->tx_free);
	/* What krdma_recv() did not take goes with the buffers. */
	list_for_each_entry_safe(rx, tmp, &conn->recvq, list) {
		list_del_init(&rx->list);
		rx->kept = false;
		conn->rx_kept--;
	}
	conn->rx_closed = true;
	spin_unlock_bh(&conn->lock);

	/*
	 * A message the recv callback's consumer keeps stays valid until
	 * it releases it (krdma_msg_release() frees it then), and so does
	 * the array it lives in.
	 */
	for (i = 0; conn->rx && i < conn->nr_rx; i++) {
		rx = &conn->rx[i];
		if (!rx->buf)
			continue;
		krdma_dma_unmap_single(ibdev, rx->dma, conn->buf_size,
				       DMA_FROM_DEVICE);
		spin_lock_bh(&conn->lock);
		buf = rx->kept ? NULL : rx->buf;
		rx->gone = rx->kept;
		if (buf)
			rx->buf = NULL;
		spin_unlock_bh(&conn->lock);
		kfree(buf);
	}
	spin_lock_bh(&conn->lock);
	rx_arr = conn->rx;
	if (conn->rx_kept) {
		conn->rx_gone = rx_arr;
		rx_arr = NULL;
	}
	conn->rx = NULL;
	spin_unlock_bh(&conn->lock);
	kfree(rx_arr);
	for (i = 0; conn->tx && i < conn->nr_tx; i++) {
		/* Every send completed, flushed at worst: none is mapped. */
		krdma_tx_unmap(conn, &conn->tx[i]);
		if (!conn->tx[i].buf)
			continue;
		krdma_dma_unmap_single(ibdev, conn->tx[i].dma, conn->buf_size,
				       DMA_TO_DEVICE);
		kfree(conn->tx[i].buf);
	}
	kfree(conn->tx);
	conn->tx = NULL;
	kvfree(conn->tx_sge);
	conn->tx_sge = NULL;
	krdma_free_hdr_tx(conn, &conn->ctl_tx);
	krdma_free_hdr_tx(conn, &conn->hb_tx);
	krdma_xops_free(conn);
}

/* A header-only send buffer: the credit message's, the heartbeat's. */
static int krdma_alloc_hdr_tx(struct krdma_conn *conn, struct krdma_tx *tx,
			      void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	struct ib_device *ibdev = conn->kdev->ibdev;

	tx->buf = kmalloc(KRDMA_HDR_LEN, GFP_KERNEL);
	if (!tx->buf)
		return -ENOMEM;
	if (krdma_dma_map_single(ibdev, tx->buf, KRDMA_HDR_LEN,
				 DMA_TO_DEVICE, &tx->dma)) {
		kfree(tx->buf);
		tx->buf = NULL;
		return -ENOMEM;
	}
	tx->conn = conn;
	tx->cqe.done = done;
	return 0;
}

/*
 * rxe and siw have no DMA device: buffers come from kmalloc and are mapped
 * through krdma_dma.c's ib_dma_* wrappers, right for soft and real HCAs.
 */
static int krdma_alloc_bufs(struct krdma_conn *conn)
{
	struct ib_device *ibdev = conn->kdev->ibdev;
	size_t sz = KRDMA_HDR_LEN + conn->max_msg;
	u32 i;

	/*
	 * The size every buffer is mapped with, kept for the unmap: the
	 * active side maps before the handshake, and conn->max_msg may then
	 * shrink to what the peer accepts.
	 */
	conn->buf_size = sz;

	/* depth data receives, the credit message's, the heartbeat's */
	conn->nr_rx = conn->depth + 2;
	conn->nr_tx = conn->depth;
	conn->rx = kcalloc(conn->nr_rx, sizeof(*conn->rx), GFP_KERNEL);
	conn->tx = kcalloc(conn->nr_tx, sizeof(*conn->tx), GFP_KERNEL);
	conn->tx_sge = kvcalloc((size_t)conn->nr_tx * conn->send_sge,
				sizeof(*conn->tx_sge), GFP_KERNEL);
	if (!conn->rx || !conn->tx || !conn->tx_sge)
		return -ENOMEM;

	for (i = 0; i < conn->nr_rx; i++) {
		struct krdma_rx *rx = &conn->rx[i];

		rx->buf = kmalloc(sz, GFP_KERNEL);
		if (!rx->buf)
			return -ENOMEM;
		if (krdma_dma_map_single(ibdev, rx->buf, sz, DMA_FROM_DEVICE,
					 &rx->dma)) {
			kfree(rx->buf);
			rx->buf = NULL;
			return -ENOMEM;
		}
		rx->conn = conn;
		rx->cqe.done = krdma_recv_done;
		INIT_LIST_HEAD(&rx->list);
	}
	for (i = 0; i < conn->nr_tx; i++) {
		struct krdma_tx *tx = &conn->tx[i];

		tx->buf = kmalloc(sz, GFP_KERNEL);
		if (!tx->buf)
			return -ENOMEM;
		if (krdma_dma_map_single(ibdev, tx->buf, sz, DMA_TO_DEVICE,
					 &tx->dma)) {
			kfree(tx->buf);
			tx->buf = NULL;
			return -ENOMEM;
		}
		tx->conn = conn;
		tx->cqe.done = krdma_send_done;
		tx->sge = &conn->tx_sge[(size_t)i * conn->send_sge];
		list_add_tail(&tx->list, &conn->tx_free);
	}
	if (krdma_alloc_hdr_tx(conn, &conn->ctl_tx, krdma_credit_msg_done) ||
	    krdma_alloc_hdr_tx(conn, &conn->hb_tx, krdma_hb_sent))
		return -ENOMEM;
	return krdma_xops_alloc(conn);
}

/* ---- QP and CQ ------------------------------------------------------ */

int krdma_conn_create_qp(struct krdma_conn *conn)
{
	struct ib_device *ibdev = conn->kdev->ibdev;
	const struct ib_device_attr *a = &ibdev->attrs;
	struct ib_qp_init_attr qa = {};
	struct krdma_queue_sizes q;
	u32 inline_ask;
	int ret;

	/* Every kind of work request has its slots (krdma_queue.h). */
	ret = krdma_queue_sizes(conn->depth, KRDMA_RW_CHUNK_PAGES,
				KRDMA_MAX_SEND_SGE, conn->opts.mr_pool, a, &q);
	if (ret) {
		pr_warn_ratelimited("%s: depth %u needs %u %s, %s has %u\n",
				    conn->name, conn->depth, q.need, q.limit,
				    conn->devname, q.have);
		return ret;
	}
	conn->rw_chunk_pages = q.chunk_pages;
	conn->max_reg_pages = a->max_fast_reg_page_list_len;
	conn->dev_atomics = a->atomic_cap != IB_ATOMIC_NONE;
	conn->dev_inv = a->device_cap_flags & IB_DEVICE_MEM_MGT_EXTENSIONS;
	conn->iwarp = rdma_protocol_iwarp(ibdev, conn->port);
	conn->send_sge = q.send_sge;

	/*
	 * A PD per connection (#22 item 2): rxe and siw, like HCAs, admit a
	 * remote access only through a QP of the MR's PD, so a token works on
	 * the connection it was issued on and nowhere else.
	 */
	conn->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(conn->pd)) {
		ret = PTR_ERR(conn->pd);
		conn->pd = NULL;
		pr_warn_ratelimited("%s: no protection domain: %d\n",
				    conn->name, ret);
		return ret;
	}

	ret = krdma_alloc_bufs(conn);
	if (ret)
		goto out_bufs;

	conn->cq_size = q.cqe;
	ret = krdma_cq_create(conn, ibdev);
	if (ret)
		goto out_bufs;

	qa.event_handler = krdma_qp_event;
	qa.qp_context = conn;
	qa.send_cq = conn->cq;
	qa.recv_cq = conn->cq;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	qa.port_num = conn->port;
	/*
	 * Inline data: ib_device_attr does not say how much a device takes,
	 * so ask for KRDMA_INLINE_ASK and, refused, for none.  The QP's
	 * capabilities say what was granted (rxe grants more than asked).
	 */
	for (inline_ask = KRDMA_INLINE_ASK; ; inline_ask = 0) {
		qa.cap.max_send_wr = q.send_wr;
		qa.cap.max_recv_wr = q.recv_wr;
		qa.cap.max_send_sge = q.send_sge;
		qa.cap.max_recv_sge = 1;
		qa.cap.max_inline_data = inline_ask;
		qa.cap.max_rdma_ctxs = conn->depth;
		ret = rdma_create_qp(conn->cm_id, conn->pd, &qa);
		if (!ret || !inline_ask)
			break;
		pr_debug("%s: no QP with %u bytes of inline data (%d), asking for none\n",
			 conn->name, inline_ask, ret);
	}
	if (ret) {
		pr_warn_ratelimited("%s: rdma_create_qp failed: %d\n",
				    conn->name, ret);
		goto out_cq;
	}
	conn->qp = conn->cm_id->qp;
	conn->max_inline = qa.cap.max_inline_data;
	conn->rw_slots = 0;
	/* The MR pool's MRs, in the connection's PD, listed on the QP. */
	ret = krdma_conn_pool_init(conn);
	if (ret) {
		rdma_destroy_qp(conn->cm_id);
		conn->qp = NULL;
		goto out_cq;
	}
	return 0;

out_cq:
	krdma_cq_destroy(conn);
out_bufs:
	krdma_free_bufs(conn);
	ib_dealloc_pd(conn->pd);
	conn->pd = NULL;
	return ret;
}

void krdma_conn_destroy_qp(struct krdma_conn *conn)
{
	if (conn->qp) {
		/* Teardown gave every pool MR back after the drain. */
		krdma_conn_pool_destroy(conn);
		rdma_destroy_qp(conn->cm_id);
		conn->qp = NULL;
	}
	if (conn->cq)
		krdma_cq_destroy(conn);
	if (conn->kdev)
		krdma_free_bufs(conn);
	/* After the QP, its rdma_rw MRs and the registrations (teardown). */
	if (conn->pd) {
		ib_dealloc_pd(conn->pd);
		conn->pd = NULL;
	}
}
