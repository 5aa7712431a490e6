// SPDX-License-Identifier: GPL-2.0
/*
 * krdma_hostile.ko: a peer that speaks rdma_cm and the verbs but not krdma,
 * for test/guest/hostile.sh.  It calls nothing of krdma's: it takes the
 * wire format from krdma_proto.h and include/krdma.h, and the self-test
 * service's messages (krdma_selftest.c) are written out again below.
 * mode= says what it does:
 *
 *   passive    krdma as the active side: listen on addr=:port= and answer
 *              each connect request with the accept reply that the reply=
 *              parameter names at that moment (writable in sysfs):
 *              garbage (not krdma's magic), short (8 bytes of a hello; on
 *              RoCE the CM pads them with zeros), long (a good hello in the
 *              largest reply the CM carries, the rest random), version (a
 *              good magic, the next version), depth0, deeper (a depth
 *              larger than offered), hugemsg (a message size of 4 GiB - 1),
 *              tinymsg (8 bytes, smaller than a token), hb (heartbeats
 *              krdma did not ask for), pdata (255 bytes of consumer data
 *              claimed), good, bigmsg (a message size of half the
 *              offer, then a message of the whole offer),
 *              overdepth (a depth of 2, then 3 messages), credit0 (a
 *              good hello, then a credit message returning nothing):
 *              the last three send 400 ms after their accept, before
 *              krdma's active side reads it (krdma's
 *              fault_established_delay_ms holds it); deaf (a good hello
 *              with the heartbeat interval krdma asked for and every
 *              credit granted, but no receive posted, ever: krdma's
 *              first message meets RNR NAKs over RoCE (rxe's ACK
 *              timer runs through rdma_cm's 655 ms RNR wait, so the
 *              retries run out; rnr_timer= shortens the wait, and
 *              then they do not), while a ping of ours every half
 *              interval keeps krdma's heartbeats content; no ping
 *              over iWARP, where
 *              the passive side may not send first and siw terminates
 *              the connection at krdma's first message); or, instead
 *              of an accept, a krdma reject
 *              carrying an errno: rejN (KRDMA_REJ_APP, the listener's
 *              consumer's refusal, with errno N) and srejN
 *              (KRDMA_REJ_SESSION, krdma's refusal of a session's
 *              request).  The module stays loaded; unload closes what it
 *              accepted.
 *
 *   krdma as the passive side: connect with a good hello, then break the
 *   protocol once the connection is up, and wait up to 10 s for krdma to
 *   end it:
 *   badtype    a header of an unknown type
 *   badlen     a header whose length is one more than what came
 *   random     random bytes (the type byte never a valid one)
 *   hbpayload  a heartbeat carrying 4 bytes
 *   toolong    a message one byte longer than the negotiated maximum
 *   credits    a header returning credits krdma never spent
 *   ctlack     a header acknowledging a credit message never sent
 *   overcredit 2 * depth + 1 messages, the credits krdma returns ignored
 *              (it can return at most depth: its one credit message is
 *              never acknowledged)
 *   mute       (count= connections, and count2= more to port2=, all
 *              started at once) a good hello, heartbeats off as in
 *              every mode's hello, then nothing at all: krdma must end
 *              each one it accepted within 10 s past
 *              KRDMA_HANDOVER_TIMEOUT_MS of its set-up (over iWARP its
 *              passive side waits that long for the first message
 *              before it hands a connection over); a connect it refuses
 *              (count past the listener's backlog) is counted, not an
 *              error
 *   rdatom     (IB transports: rxe) offer 1 READ in flight towards us and
 *              4 from us, and check what krdma accepted: at most 1 from
 *              it, room for our 4 (on iWARP, siw's MPA negotiation mends
 *              a mismatched pair itself, so there is nothing to see)
 *
 *   onesided   RDMA WRITE and READ with keys and ranges that must fail:
 *              a good connection G obtains a token from the self-test
 *              service (ST_SETUP) and has the region filled (ST_FILL);
 *              then each attack comes on a new connection H with a token
 *              of its own: guessed rkeys (rkey ^ 1, rkey + 0x100, random),
 *              the right rkey 8 bytes before the start and 8 before the
 *              end (16 bytes), a WRITE through a read-only token, and G's
 *              real token used from H.  Each must end in an error
 *              completion (H's QP goes to error, as it must); a READ must
 *              leave the sink as it was.  At the end G's region must still
 *              hold the pattern, byte for byte (ST_VERIFY).
 *
 * Every mode but passive runs in module init: the load returns 0 when
 * krdma did what it must (as far as this side sees it; hostile.sh checks
 * krdma's side), else an errno, with a dmesg line saying what went wrong.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/slab.h>
#include <linux/completion.h>
#include <linux/wait.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/inet.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/scatterlist.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <krdma.h>
#include "krdma_proto.h"
#include "krdma_st_wire.h"

static char *mode = "";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "passive, badtype, badlen, random, hbpayload, toolong, credits, ctlack, overcredit, mute, rdatom or onesided");
static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "krdma's address (passive: the address to listen on)");
static char *port = "";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "krdma's port (passive: the port to listen on)");
static char reply[16] = "garbage";
module_param_string(reply, reply, sizeof(reply), 0644);
MODULE_PARM_DESC(reply, "passive: the accept reply for the next connect request");
static uint depth = 4;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "queue depth offered (1 to 6)");
static uint msg = 1024;
module_param(msg, uint, 0444);
MODULE_PARM_DESC(msg, "message size offered (16 to 4096)");
static uint count = 1;
module_param(count, uint, 0444);
MODULE_PARM_DESC(count, "mute: how many connections (1 to 64)");
static char *port2 = "";
module_param(port2, charp, 0444);
MODULE_PARM_DESC(port2, "mute: another listener's port on addr, for count2 connections");
static uint count2;
module_param(count2, uint, 0444);
MODULE_PARM_DESC(count2, "mute: how many connections to port2 (0 to 64)");
static int rnr_timer = -1;
module_param(rnr_timer, int, 0444);
MODULE_PARM_DESC(rnr_timer, "passive, reply deaf: the accepted QP's min_rnr_timer, 0 to 31 (-1: rdma_cm's, 0: 655 ms)");
static uint pace_ms;
module_param(pace_ms, uint, 0444);
MODULE_PARM_DESC(pace_ms, "onesided: pause between attacks, so that krdma's rate-limited lines all show (0)");

#define HP_WAIT		(10 * HZ)
#define HP_HDR		sizeof(struct krdma_msg_hdr)
#define HP_MAX_DEPTH	6
#define HP_MAX_RX	(HP_MAX_DEPTH + 2)
#define HP_RING		64
#define HP_REP_MAX	196	/* an IB REP's private data; iWARP takes more */
#define HP_ST_LEN	8192	/* bytes the self-test service exposes */
#define HP_EARLY_MS	400	/* bigmsg, overdepth, credit0: after the accept */
#define HP_MUTE_MAX	64

struct hp_q;

struct hp_slot {
	struct ib_cqe	cqe;
	struct hp_q	*q;
	void		*buf;
	u64		dma;
	u32		idx;
};

/* One end of a connection: an active one of ours, or a child we accepted. */
struct hp_q {
	struct rdma_cm_id	*id;
	struct ib_pd		*pd;
	struct ib_cq		*cq;
	bool			has_qp;
	struct list_head	entry;		/* passive: hp_children */
	struct mutex		lock;		/* closing vs. the handler's set-up */
	bool			closing;
	struct completion	cm_done;
	int			cm_status;
	bool			ended;		/* disconnected, or an error event */
	int			end_event;
	unsigned long		ended_at;	/* jiffies, when it ended */
	u32			peer_depth, peer_msg;	/* the accept's hello */
	/* reply bigmsg, overdepth, credit0: what goes after the accept */
	u32			early_n, early_len;
	u8			early_type;
	struct delayed_work	early_work;	/* a passive child's: sends them */
	/* reply deaf: a ping every ping_ms, from ping_work (IB only) */
	u32			ping_ms;
	u32			pings;		/* posted */
	struct delayed_work	ping_work;
	u8			rd_init, rd_resp;	/* the accept's, our view */
	/* an active end's buffers, its receives and its one send */
	u32			nrx, bsz;
	struct hp_slot		rx[HP_MAX_RX];
	struct hp_slot		tx;
	u32			ring[HP_RING], ring_len[HP_RING];
	u32			rhead, rtail;
	bool			tx_busy;
	int			tx_status;	/* the last send's, or -1 */
	int			rx_err;		/* first failed receive's status */
	bool			dead;		/* a failed or flushed completion */
	/* krdma's flow control, kept honestly by the modes that need it */
	u32			credits, owed;
	bool			ack_owed;
	/* the READ sink: registered with remote write for iWARP */
	void			*sink;
	struct ib_mr		*sink_mr;
	struct scatterlist	sink_sg;
	bool			sink_mapped;
	struct ib_cqe		reg_cqe;
	int			reg_status;
};

static struct rdma_cm_id *hp_listen_id;
static LIST_HEAD(hp_children);
static DEFINE_MUTEX(hp_children_lock);
static u32 hp_accepted;

/* ---- completions, polled by the caller ----------------------------- */

static void hp_poll(struct hp_q *q)
{
	if (q->cq)
		ib_process_cq_direct(q->cq, -1);
}

static void hp_recv_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hp_slot *s = container_of(wc->wr_cqe, struct hp_slot, cqe);
	struct hp_q *q = s->q;

	if (wc->status != IB_WC_SUCCESS) {
		if (!q->rx_err)
			q->rx_err = wc->status;
		q->dead = true;
		return;
	}
	q->ring[q->rtail % HP_RING] = s->idx;
	q->ring_len[q->rtail % HP_RING] = wc->byte_len;
	q->rtail++;
}

static void hp_send_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hp_slot *s = container_of(wc->wr_cqe, struct hp_slot, cqe);
	struct hp_q *q = s->q;

	q->tx_busy = false;
	q->tx_status = wc->status;
	if (wc->status != IB_WC_SUCCESS)
		q->dead = true;
}

static void hp_reg_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct hp_q *q = container_of(wc->wr_cqe, struct hp_q, reg_cqe);

	q->reg_status = wc->status;
	if (wc->status != IB_WC_SUCCESS)
		q->dead = true;
}

/* Poll until @cond or the deadline: 0, or -ETIME. */
#define hp_wait(q, cond, timeout) ({					\
	unsigned long __end = jiffies + (timeout);			\
	int __ret = 0;							\
	for (;;) {							\
		hp_poll(q);						\
		if (cond)						\
			break;						\
		if (time_after(jiffies, __end)) {			\
			__ret = -ETIME;					\
			break;						\
		}							\
		usleep_range(1000, 2000);				\
	}								\
	__ret;								\
})

/* ---- resources ----------------------------------------------------- */

static int hp_map(struct hp_q *q, struct hp_slot *s, u32 idx,
		  enum dma_data_direction dir,
		  void (*done)(struct ib_cq *cq, struct ib_wc *wc))
{
	struct ib_device *dev = q->id->device;

	s->buf = kzalloc(q->bsz, GFP_KERNEL);
	if (!s->buf)
		return -ENOMEM;
	s->dma = ib_dma_map_single(dev, s->buf, q->bsz, dir);
	if (ib_dma_mapping_error(dev, s->dma)) {
		kfree(s->buf);
		s->buf = NULL;
		return -ENOMEM;
	}
	s->q = q;
	s->idx = idx;
	s->cqe.done = done;
	return 0;
}

static void hp_unmap(struct hp_q *q, struct hp_slot *s,
		     enum dma_data_direction dir)
{
	if (!s->buf)
		return;
	ib_dma_unmap_single(q->id->device, s->dma, q->bsz, dir);
	kfree(s->buf);
	s->buf = NULL;
}

/* PD, CQ and QP on the id's device; @nrx receive buffers when nonzero. */
static int hp_setup(struct hp_q *q, u32 nrx, u32 bsz)
{
	struct ib_qp_init_attr qa = {};
	u32 i;
	int ret;

	q->pd = ib_alloc_pd(q->id->device, 0);
	if (IS_ERR(q->pd)) {
		ret = PTR_ERR(q->pd);
		q->pd = NULL;
		return ret;
	}
	/* The send queue: one send, a READ or WRITE, a REG_MR, the drain. */
	q->cq = ib_alloc_cq(q->id->device, q, HP_MAX_RX + 8, 0,
			    IB_POLL_DIRECT);
	if (IS_ERR(q->cq)) {
		ret = PTR_ERR(q->cq);
		q->cq = NULL;
		return ret;
	}
	qa.qp_context = q;
	qa.send_cq = q->cq;
	qa.recv_cq = q->cq;
	qa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qa.qp_type = IB_QPT_RC;
	qa.cap.max_send_wr = 4;
	qa.cap.max_recv_wr = HP_MAX_RX + 1;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	ret = rdma_create_qp(q->id, q->pd, &qa);
	if (ret)
		return ret;
	q->has_qp = true;
	q->tx_status = -1;
	if (!nrx)
		return 0;
	q->nrx = nrx;
	q->bsz = bsz;
	for (i = 0; i < nrx; i++) {
		ret = hp_map(q, &q->rx[i], i, DMA_FROM_DEVICE, hp_recv_done);
		if (ret)
			return ret;
	}
	return hp_map(q, &q->tx, 0, DMA_TO_DEVICE, hp_send_done);
}

static int hp_post_recv(struct hp_q *q, u32 i)
{
	struct hp_slot *s = &q->rx[i];
	struct ib_sge sge = {
		.addr = s->dma, .length = q->bsz, .lkey = q->pd->local_dma_lkey,
	};
	struct ib_recv_wr wr = {
		.wr_cqe = &s->cqe, .sg_list = &sge, .num_sge = 1,
	};

	ib_dma_sync_single_for_device(q->id->device, s->dma, q->bsz,
				      DMA_FROM_DEVICE);
	return ib_post_recv(q->id->qp, &wr, NULL);
}

static void hp_destroy(struct hp_q *q)
{
	u32 i;

	if (!q)
		return;
	/* A connect given up on: its handler must not set up from here on. */
	mutex_lock(&q->lock);
	q->closing = true;
	mutex_unlock(&q->lock);
	if (q->early_n)		/* a passive child's, set up with it */
		cancel_delayed_work_sync(&q->early_work);
	if (q->ping_ms) {
		cancel_delayed_work_sync(&q->ping_work);
		pr_info_ratelimited("passive: deaf: %u pings sent\n", q->pings);
	}
	if (q->id && q->has_qp) {
		rdma_disconnect(q->id);
		ib_drain_qp(q->id->qp);
		rdma_destroy_qp(q->id);
	}
	if (q->sink_mr)
		ib_dereg_mr(q->sink_mr);
	if (q->sink_mapped)
		ib_dma_unmap_sg(q->id->device, &q->sink_sg, 1,
				DMA_FROM_DEVICE);
	kfree(q->sink);
	for (i = 0; i < q->nrx; i++)
		hp_unmap(q, &q->rx[i], DMA_FROM_DEVICE);
	hp_unmap(q, &q->tx, DMA_TO_DEVICE);
	if (q->cq)
		ib_free_cq(q->cq);
	if (q->pd)
		ib_dealloc_pd(q->pd);
	if (q->id)
		rdma_destroy_id(q->id);
	mutex_destroy(&q->lock);
	kfree(q);
}

/* ---- the handshake --------------------------------------------------- */

static void hp_hello(struct krdma_hello *h, u32 qdepth, u32 max_msg)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(KRDMA_PROTO_MAGIC);
	h->version = KRDMA_PROTO_VERSION;
	h->queue_depth = cpu_to_be16(qdepth);
	h->max_msg_size = cpu_to_be32(max_msg);
}

static void hp_cm_done(struct hp_q *q, int status)
{
	if (completion_done(&q->cm_done))
		return;
	q->cm_status = status;
	complete_all(&q->cm_done);
}

static int hp_connect_locked(struct hp_q *q)
{
	struct rdma_conn_param param = {};
	struct krdma_hello h;
	u32 i;
	int ret;

	ret = hp_setup(q, depth + 2, HP_HDR + msg + 64);
	for (i = 0; !ret && i < q->nrx; i++)
		ret = hp_post_recv(q, i);
	if (ret)
		return ret;
	hp_hello(&h, depth, msg);
	param.private_data = &h;
	param.private_data_len = sizeof(h);
	param.responder_resources = 1;
	param.initiator_depth = strcmp(mode, "rdatom") ? 1 : 4;
	param.retry_count = 7;
	param.rnr_retry_count = 7;
	return rdma_connect_locked(q->id, &param);
}

/* The accept's hello: what krdma settled on. */
static int hp_accepted_hello(struct hp_q *q, const struct rdma_cm_event *ev)
{
	const struct krdma_hello *h = ev->param.conn.private_data;

	if (!h || ev->param.conn.private_data_len < sizeof(*h) ||
	    be32_to_cpu(h->magic) != KRDMA_PROTO_MAGIC ||
	    h->version != KRDMA_PROTO_VERSION)
		return -EPROTO;
	q->peer_depth = be16_to_cpu(h->queue_depth);
	q->peer_msg = be32_to_cpu(h->max_msg_size);
	if (!q->peer_depth || q->peer_depth > depth || q->peer_msg < 16 ||
	    q->peer_msg > msg)
		return -EPROTO;
	return 0;
}

/* ---- passive: the accept replies -------------------------------------- */

/* Build the reply reply= names, to a request that offered @od and @om. */
static int hp_build_reply(u8 *buf, u32 od, u32 om, const char *kind)
{
	struct krdma_hello *h = (struct krdma_hello *)buf;
	int len = sizeof(*h);

	hp_hello(h, od, om);
	if (!strcmp(kind, "garbage")) {
		get_random_bytes(buf, len + 16);
		if (be32_to_cpu(h->magic) == KRDMA_PROTO_MAGIC)
			h->magic = cpu_to_be32(~KRDMA_PROTO_MAGIC);
		len += 16;
	} else if (!strcmp(kind, "short")) {
		len = offsetof(struct krdma_hello, max_msg_size);
	} else if (!strcmp(kind, "long")) {
		get_random_bytes(buf + len, HP_REP_MAX - len);
		len = HP_REP_MAX;
	} else if (!strcmp(kind, "version")) {
		h->version = KRDMA_PROTO_VERSION + 1;
	} else if (!strcmp(kind, "depth0")) {
		h->queue_depth = 0;
	} else if (!strcmp(kind, "deeper")) {
		h->queue_depth = cpu_to_be16(od + 1);
	} else if (!strcmp(kind, "hugemsg")) {
		h->max_msg_size = cpu_to_be32(U32_MAX);
	} else if (!strcmp(kind, "tinymsg")) {
		h->max_msg_size = cpu_to_be32(8);
	} else if (!strcmp(kind, "hb")) {
		h->heartbeat_ms = cpu_to_be32(50);
	} else if (!strcmp(kind, "pdata")) {
		h->pdata_len = 255;
	} else if (!strcmp(kind, "bigmsg")) {
		h->max_msg_size = cpu_to_be32(max(om / 2, 16U));
	} else if (!strcmp(kind, "overdepth")) {
		h->queue_depth = cpu_to_be16(2);
	} else if (strcmp(kind, "good") && strcmp(kind, "credit0") &&
		   strcmp(kind, "deaf")) {
		return -EINVAL;
	}
	return len;
}

/*
 * reply= rejN or srejN: refuse with a krdma reject that carries errno N,
 * any 16-bit value, as krdma's own carries one of its few.  Returns 1
 * when @kind is one (the core destroys the child id), 0 when it is not,
 * -EINVAL for a bad number.
 */
static int hp_reject(struct rdma_cm_id *id, const char *kind)
{
	struct krdma_rej r = {};
	bool sess = !strncmp(kind, "srej", 4);
	u16 err;
	int ret;

	if (!sess && strncmp(kind, "rej", 3))
		return 0;
	if (kstrtou16(kind + (sess ? 4 : 3), 10, &err))
		return -EINVAL;
	r.magic = cpu_to_be32(KRDMA_PROTO_MAGIC);
	r.version = KRDMA_PROTO_VERSION;
	r.reason = sess ? KRDMA_REJ_SESSION : KRDMA_REJ_APP;
	r.app_errno = cpu_to_be16(err);
	ret = rdma_reject(id, &r, sizeof(r), IB_CM_REJ_CONSUMER_DEFINED);
	pr_info_ratelimited("passive: rejected %pISpc with reply '%s' (errno %u): %d\n",
			    &id->route.addr.dst_addr, kind, err, ret);
	return 1;
}

static void hp_early_work(struct work_struct *work);
static void hp_ping_work(struct work_struct *work);
static void hp_hdr(void *buf, u8 type, u8 flags, u16 credits, u32 len);

static int hp_connect_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	const struct krdma_hello *req = ev->param.conn.private_data;
	struct rdma_conn_param param = {};
	u8 buf[HP_REP_MAX] = {};
	char buf_kind[sizeof(reply)], *kind;
	struct hp_q *q;
	u32 od = 1, om = 16, oh = 0;
	int len, ret;

	if (req && ev->param.conn.private_data_len >= sizeof(*req)) {
		od = be16_to_cpu(req->queue_depth);
		om = be32_to_cpu(req->max_msg_size);
		oh = be32_to_cpu(req->heartbeat_ms);
	}
	kernel_param_lock(THIS_MODULE);
	strscpy(buf_kind, reply, sizeof(buf_kind));
	kernel_param_unlock(THIS_MODULE);
	kind = strim(buf_kind);
	ret = hp_reject(id, kind);
	if (ret) {
		if (ret < 0)
			pr_err_ratelimited("passive: bad reject '%s'\n", kind);
		return 1;	/* the core destroys the child id */
	}
	len = hp_build_reply(buf, od, om, kind);
	if (len < 0) {
		pr_err_ratelimited("passive: unknown reply '%s'\n", kind);
		return -EINVAL;	/* the core destroys the child id */
	}
	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return -ENOMEM;
	mutex_init(&q->lock);
	init_completion(&q->cm_done);
	INIT_DELAYED_WORK(&q->early_work, hp_early_work);
	INIT_DELAYED_WORK(&q->ping_work, hp_ping_work);
	q->id = id;
	id->context = q;
	ret = hp_setup(q, 0, 0);
	/* What goes HP_EARLY_MS after the accept (hp_early_send()). */
	q->early_type = KRDMA_MSG_DATA;
	if (!strcmp(kind, "bigmsg")) {
		q->early_n = 1;
		q->early_len = om;
	} else if (!strcmp(kind, "overdepth")) {
		q->early_n = 3;
		q->early_len = 16;
	} else if (!strcmp(kind, "credit0")) {
		q->early_n = 1;
		q->early_type = KRDMA_MSG_CREDIT;
	}
	if (!ret && q->early_n) {
		q->bsz = HP_HDR + q->early_len;
		ret = hp_map(q, &q->tx, 0, DMA_TO_DEVICE, hp_send_done);
	}
	/* deaf: krdma's interval agreed; pings where we may speak first. */
	if (!ret && !strcmp(kind, "deaf")) {
		((struct krdma_hello *)buf)->heartbeat_ms = cpu_to_be32(oh);
		if (oh && !rdma_protocol_iwarp(id->device, id->port_num)) {
			q->bsz = HP_HDR;
			ret = hp_map(q, &q->tx, 0, DMA_TO_DEVICE,
				     hp_send_done);
			if (!ret)
				q->ping_ms = max(oh / 2, 1U);
		}
	}
	if (!ret) {
		param.private_data = buf;
		param.private_data_len = len;
		param.responder_resources = 1;
		param.initiator_depth = 1;
		param.rnr_retry_count = 7;
		ret = rdma_accept(id, &param);
	}
	/*
	 * deaf with rnr_timer: an RNR NAK asks for a wait shorter than the
	 * requester's ACK timeout.  rdma_cm's 0 (655 ms) is longer than
	 * rxe's, whose retransmit timer then fires in every RNR wait and
	 * spends the retry count: the transport ends the connection.  A
	 * short one keeps krdma's message in RNR retry for ever, as a
	 * device that stops its ACK timer for an RNR NAK does.
	 */
	if (!ret && !strcmp(kind, "deaf") && rnr_timer >= 0) {
		struct ib_qp_attr qattr = { .min_rnr_timer = min(rnr_timer, 31) };
		int err = ib_modify_qp(id->qp, &qattr, IB_QP_MIN_RNR_TIMER);

		/* Logged; the test then finds the transport's end. */
		pr_info_ratelimited("passive: deaf: min_rnr_timer %u: %d\n",
				    qattr.min_rnr_timer, err);
	}
	if (ret) {
		pr_err_ratelimited("passive: accept with reply '%s': %d\n",
				   kind, ret);
		hp_unmap(q, &q->tx, DMA_TO_DEVICE);
		q->id = NULL;	/* the core destroys it */
		if (q->has_qp)
			rdma_destroy_qp(id);
		q->has_qp = false;
		hp_destroy(q);
		return ret;
	}
	mutex_lock(&hp_children_lock);
	list_add_tail(&q->entry, &hp_children);
	hp_accepted++;
	mutex_unlock(&hp_children_lock);
	if (q->early_n)
		schedule_delayed_work(&q->early_work,
				      msecs_to_jiffies(HP_EARLY_MS));
	if (q->ping_ms)
		schedule_delayed_work(&q->ping_work,
				      msecs_to_jiffies(q->ping_ms));
	pr_info_ratelimited("passive: accepted %pISpc with reply '%s' (%d bytes; offered depth %u, message %u)\n",
			    &id->route.addr.dst_addr, kind, len, od, om);
	return 0;
}

/*
 * reply= bigmsg, overdepth, credit0: an accepted child sends what its
 * accept did not allow (or what no krdma peer sends before it is
 * established), HP_EARLY_MS after its accept, from a work item of its
 * own (hp_early_work()), while krdma's ESTABLISHED event sleeps before
 * it reads the accept (fault_established_delay_ms).  On IB rdma_accept()
 * moved the child's QP to RTS before its reply went out, and krdma's QP
 * reaches RTS as its CM takes in that reply, before the event that
 * sleeps.  Not from the child's ESTABLISHED event: that waits for
 * krdma's RTU in ib_cm's work, which krdma's sleep may hold on the same
 * CPU until it is over, and the messages would come after the accept
 * was read.  Nobody polls the child's CQ: the completions wait there for
 * hp_destroy()'s drain.
 */
static void hp_early_send(struct hp_q *q)
{
	struct krdma_msg_hdr *h = q->tx.buf;
	struct ib_sge sge = {
		.addr = q->tx.dma, .length = HP_HDR + q->early_len,
		.lkey = q->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &q->tx.cqe, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};
	u32 i;
	int ret = 0;

	h->type = q->early_type;
	h->flags = 0;
	h->credits = 0;
	h->len = cpu_to_be32(q->early_len);
	ib_dma_sync_single_for_device(q->id->device, q->tx.dma, q->bsz,
				      DMA_TO_DEVICE);
	/* The same bytes each time: the device only reads the buffer. */
	for (i = 0; i < q->early_n && !ret; i++)
		ret = ib_post_send(q->id->qp, &wr, NULL);
	pr_info_ratelimited("passive: sent %u messages of %u bytes %u ms after the accept: %d\n",
			    ret ? i - 1 : i, q->early_len, HP_EARLY_MS, ret);
}

static void hp_early_work(struct work_struct *work)
{
	hp_early_send(container_of(to_delayed_work(work), struct hp_q,
				   early_work));
}

/*
 * reply deaf: a heartbeat ping (krdma answers it, and counts it as the
 * peer's sign of life) every ping_ms, until a post fails or the child is
 * destroyed.  Its completions are reaped here: nobody else polls a
 * passive child's CQ, and a ping every half interval would overrun it.
 * The pongs krdma owes never come: they queue behind its stuck sends.
 */
static void hp_ping_work(struct work_struct *work)
{
	struct hp_q *q = container_of(to_delayed_work(work), struct hp_q,
				      ping_work);
	struct ib_sge sge = {
		.addr = q->tx.dma, .length = HP_HDR,
		.lkey = q->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &q->tx.cqe, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	hp_poll(q);
	if (q->dead || READ_ONCE(q->ended))
		return;
	hp_hdr(q->tx.buf, KRDMA_MSG_HB, 0, 0, 0);
	ib_dma_sync_single_for_device(q->id->device, q->tx.dma, HP_HDR,
				      DMA_TO_DEVICE);
	ret = ib_post_send(q->id->qp, &wr, NULL);
	if (ret) {
		pr_info_ratelimited("passive: deaf: ping %u not posted: %d\n",
				    q->pings + 1, ret);
		return;
	}
	q->pings++;
	schedule_delayed_work(&q->ping_work, msecs_to_jiffies(q->ping_ms));
}

/* ---- the rdma_cm handler ------------------------------------------- */

static int hp_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct hp_q *q = id->context;
	int ret;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return hp_connect_request(id, ev);
	if (!q)		/* the listener's own events */
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, 2000);
		if (ret)
			hp_cm_done(q, ret);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		mutex_lock(&q->lock);
		ret = q->closing ? -ECANCELED : hp_connect_locked(q);
		mutex_unlock(&q->lock);
		if (ret)
			hp_cm_done(q, ret);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (q->early_n)	/* a passive child: hp_early_work() sends */
			break;
		q->rd_init = ev->param.conn.initiator_depth;
		q->rd_resp = ev->param.conn.responder_resources;
		hp_cm_done(q, hp_accepted_hello(q, ev));
		break;
	case RDMA_CM_EVENT_REJECTED:
		hp_cm_done(q, -ECONNREFUSED);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		hp_cm_done(q, ev->status ?: -EHOSTUNREACH);
		q->end_event = ev->event;
		q->ended_at = jiffies;
		/* ended_at before ended: pairs with hp_mute()'s acquire. */
		smp_store_release(&q->ended, true);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		hp_cm_done(q, -ECONNRESET);
		q->end_event = ev->event;
		q->ended_at = jiffies;
		/* ended_at before ended: pairs with hp_mute()'s acquire. */
		smp_store_release(&q->ended, true);
		break;
	default:
		break;
	}
	return 0;
}

/* ---- the active side: connect, send, receive -------------------------- */

/*
 * A connect in two halves, so that mute can have many under way at once:
 * hp_connect_start() starts it (address resolution, then the handler
 * goes on), hp_connect_finish() waits for its end.  Each returns the end,
 * or an errno with the end destroyed and a line said.
 */
static struct hp_q *hp_connect_start(const struct sockaddr *dst)
{
	struct hp_q *q;
	int ret;

	q = kzalloc(sizeof(*q), GFP_KERNEL);
	if (!q)
		return ERR_PTR(-ENOMEM);
	mutex_init(&q->lock);
	init_completion(&q->cm_done);
	q->id = rdma_create_id(&init_net, hp_cm_handler, q, RDMA_PS_TCP,
			       IB_QPT_RC);
	if (IS_ERR(q->id)) {
		ret = PTR_ERR(q->id);
		q->id = NULL;
		goto out;
	}
	ret = rdma_resolve_addr(q->id, NULL, (struct sockaddr *)dst, 2000);
	if (!ret)
		return q;
out:
	pr_err("%s: connect to %pISpc: %d\n", mode, dst, ret);
	hp_destroy(q);
	return ERR_PTR(ret);
}

static struct hp_q *hp_connect_finish(struct hp_q *q,
				      const struct sockaddr *dst)
{
	int ret = 0;

	if (IS_ERR(q))
		return q;
	if (!wait_for_completion_timeout(&q->cm_done, HP_WAIT))
		ret = -ETIMEDOUT;
	if (!ret)
		ret = q->cm_status;
	if (!ret) {
		q->credits = q->peer_depth;
		return q;
	}
	pr_err("%s: connect to %pISpc: %d\n", mode, dst, ret);
	hp_destroy(q);
	return ERR_PTR(ret);
}

static struct hp_q *hp_connect(const struct sockaddr *dst)
{
	return hp_connect_finish(hp_connect_start(dst), dst);
}

/*
 * Send @len bytes as they are (header included): 0; -EIO, the send
 * failed; -ENOTCONN, the connection ended first; -EBUSY, an earlier send
 * still owns the buffer; -ETIME, no end in HP_WAIT.
 */
static int hp_send_raw(struct hp_q *q, const void *data, u32 len)
{
	struct ib_sge sge = {
		.addr = q->tx.dma, .length = len, .lkey = q->pd->local_dma_lkey,
	};
	struct ib_send_wr wr = {
		.wr_cqe = &q->tx.cqe, .sg_list = &sge, .num_sge = 1,
		.opcode = IB_WR_SEND, .send_flags = IB_SEND_SIGNALED,
	};
	int ret;

	if (len > q->bsz)
		return -EINVAL;
	/* A send that never completed still owns the buffer. */
	if (q->tx_busy)
		return -EBUSY;
	memcpy(q->tx.buf, data, len);
	ib_dma_sync_single_for_device(q->id->device, q->tx.dma, len,
				      DMA_TO_DEVICE);
	q->tx_busy = true;
	ret = ib_post_send(q->id->qp, &wr, NULL);
	if (ret) {
		q->tx_busy = false;
		return ret;
	}
	/*
	 * Once krdma has ended the connection, a send it will never take
	 * may not complete before this QP is flushed: waiting for it took
	 * the whole HP_WAIT.
	 */
	ret = hp_wait(q, !q->tx_busy || READ_ONCE(q->ended) || q->rx_err,
		      HP_WAIT);
	if (ret)
		return ret;
	if (q->tx_busy)
		return -ENOTCONN;
	return q->tx_status == IB_WC_SUCCESS ? 0 : -EIO;
}

static void hp_hdr(void *buf, u8 type, u8 flags, u16 credits, u32 len)
{
	struct krdma_msg_hdr *h = buf;

	h->type = type;
	h->flags = flags;
	h->credits = cpu_to_be16(credits);
	h->len = cpu_to_be32(len);
}

/* A DATA message as krdma wants it: a credit spent, what we owe returned. */
static int hp_send_msg(struct hp_q *q, const void *data, u32 len)
{
	u8 *buf;
	int ret;

	if (!q->credits) {
		pr_err("%s: no credit left to send\n", mode);
		return -ENOBUFS;
	}
	buf = kmalloc(HP_HDR + len, GFP_KERNEL);
	if (!buf)
		return -ENOMEM;
	hp_hdr(buf, KRDMA_MSG_DATA, q->ack_owed ? KRDMA_MSG_F_CTL_ACK : 0,
	       q->owed, len);
	memcpy(buf + HP_HDR, data, len);
	q->credits--;
	q->owed = 0;
	q->ack_owed = false;
	ret = hp_send_raw(q, buf, HP_HDR + len);
	kfree(buf);
	return ret;
}

/* The next DATA message from krdma into @out; credit messages are taken in. */
static int hp_recv_msg(struct hp_q *q, void *out, u32 outlen)
{
	const struct krdma_msg_hdr *h;
	u32 idx, blen, len;
	u8 type;
	int ret;

	for (;;) {
		ret = hp_wait(q, q->rhead != q->rtail || q->dead ||
			      READ_ONCE(q->ended), HP_WAIT);
		if (ret)
			return ret;
		if (q->rhead == q->rtail)
			return -ECONNRESET;
		idx = q->ring[q->rhead % HP_RING];
		blen = q->ring_len[q->rhead % HP_RING];
		q->rhead++;
		ib_dma_sync_single_for_cpu(q->id->device, q->rx[idx].dma,
					   q->bsz, DMA_FROM_DEVICE);
		h = q->rx[idx].buf;
		if (blen < sizeof(*h))
			return -EPROTO;
		len = be32_to_cpu(h->len);
		type = h->type;
		q->credits += be16_to_cpu(h->credits);
		if (len + sizeof(*h) != blen)
			return -EPROTO;
		if (type == KRDMA_MSG_DATA)
			memcpy(out, h + 1, min(len, outlen));
		/* The buffer is krdma's to fill again from here on. */
		ret = hp_post_recv(q, idx);
		if (ret)
			return ret;
		if (type == KRDMA_MSG_CREDIT) {
			q->ack_owed = true;
			continue;
		}
		q->owed++;
		if (type == KRDMA_MSG_DATA)
			return len;
	}
}

/* ---- the self-test service, from the outside ------------------------- */

static int hp_st_call(struct hp_q *q, u8 op, u32 arg, u64 seed, u64 len,
		      struct st_msg *r)
{
	struct st_msg m = {
		.magic = cpu_to_be32(ST_MAGIC), .op = op,
		.arg = cpu_to_be32(arg), .seed = cpu_to_be64(seed),
		.len = cpu_to_be64(len),
	};
	int ret;

	ret = hp_send_msg(q, &m, sizeof(m));
	if (ret)
		return ret;
	memset(r, 0, sizeof(*r));
	ret = hp_recv_msg(q, r, sizeof(*r));
	if (ret < 0)
		return ret;
	if (ret < (int)sizeof(*r) || be32_to_cpu(r->magic) != ST_MAGIC)
		return -EPROTO;
	if (r->op == ST_REPLY)
		return -(int)be16_to_cpu(r->status);
	return 0;
}

/* Have krdma expose HP_ST_LEN bytes with @access, filled with @seed. */
static int hp_st_region(struct hp_q *q, u32 access, u64 seed,
			struct krdma_token_wire *tok)
{
	struct st_msg r;
	int ret;

	ret = hp_st_call(q, ST_SETUP, access, seed, HP_ST_LEN, &r);
	if (!ret && (r.op != ST_TOKEN || be64_to_cpu(r.off) != 1))
		ret = -EPROTO;
	if (ret) {
		pr_err("%s: self-test setup: %d\n", mode, ret);
		return ret;
	}
	*tok = r.tok;
	ret = hp_st_call(q, ST_FILL, 0, seed, HP_ST_LEN, &r);
	if (ret)
		pr_err("%s: self-test fill: %d\n", mode, ret);
	return ret;
}

/* ---- krdma as the passive side: breaking the protocol ------------------ */

/* Wait for krdma to end the connection: 0, or -ETIME. */
static int hp_wait_end(struct hp_q *q, unsigned long timeout)
{
	return hp_wait(q, READ_ONCE(q->ended) || q->rx_err, timeout);
}

static int hp_break(struct hp_q *q)
{
	u8 buf[HP_HDR + 64] = {};
	u32 i, n = 0, len = HP_HDR + 16;
	u8 *big;
	int ret = 0;

	if (!strcmp(mode, "badtype")) {
		hp_hdr(buf, 9, 0, 0, 16);
	} else if (!strcmp(mode, "badlen")) {
		hp_hdr(buf, KRDMA_MSG_DATA, 0, 0, 17);
	} else if (!strcmp(mode, "random")) {
		len = sizeof(buf);
		get_random_bytes(buf, len);
		buf[0] |= 0x80;	/* never a valid type */
	} else if (!strcmp(mode, "hbpayload")) {
		hp_hdr(buf, KRDMA_MSG_HB, 0, 0, 4);
		len = HP_HDR + 4;
	} else if (!strcmp(mode, "credits")) {
		hp_hdr(buf, KRDMA_MSG_DATA, 0, q->peer_depth + 1, 16);
	} else if (!strcmp(mode, "ctlack")) {
		hp_hdr(buf, KRDMA_MSG_DATA, KRDMA_MSG_F_CTL_ACK, 0, 16);
	} else if (!strcmp(mode, "toolong")) {
		len = HP_HDR + q->peer_msg + 1;
		big = kzalloc(len, GFP_KERNEL);
		if (!big)
			return -ENOMEM;
		hp_hdr(big, KRDMA_MSG_DATA, 0, 0, q->peer_msg + 1);
		ret = hp_send_raw(q, big, len);
		kfree(big);
		n = 1;
		goto wait;
	} else if (!strcmp(mode, "overcredit")) {
		hp_hdr(buf, KRDMA_MSG_DATA, 0, 0, 16);
		for (i = 0; i < 2 * q->peer_depth + 1; i++) {
			if (READ_ONCE(q->ended) || q->dead)
				break;
			ret = hp_send_raw(q, buf, len);
			if (ret)
				break;
			n++;
		}
		goto wait;
	} else {
		pr_err("unknown mode '%s'\n", mode);
		return -EINVAL;
	}
	ret = hp_send_raw(q, buf, len);
	n = 1;
wait:
	if (ret)
		pr_info("%s: send %u failed: %d (status %d)\n", mode, n, ret,
			q->tx_status);
	ret = hp_wait_end(q, HP_WAIT);
	if (ret) {
		pr_err("%s: krdma did not end the connection in %u s (%u messages sent)\n",
		       mode, HP_WAIT / HZ, n);
		return ret;
	}
	pr_info("%s: krdma ended the connection (%u messages sent, %s)\n",
		mode, n, q->ended ? rdma_event_msg(q->end_event) :
				    ib_wc_status_msg(q->rx_err));
	return 0;
}

/* ---- mute: connected, and never a word -------------------------------- */

/*
 * count= connections to addr:port and count2= to addr:port2, all started
 * at once (the listener's backlog, not their order, decides how many are
 * taken), each with a good hello and then silent.  krdma must end every
 * one it took within KRDMA_HANDOVER_TIMEOUT_MS of its set-up, and
 * HP_WAIT more for a slow guest.
 */
static int hp_mute(const struct sockaddr *dst, const struct sockaddr *dst2)
{
	const struct sockaddr *to[2] = { dst, dst2 };
	u32 n = count + count2, i, t, up[2] = {}, ended = 0;
	unsigned long t0, end, slowest = 0, first = ULONG_MAX;
	struct hp_q **qs;
	int ret = 0;

	qs = kcalloc(n, sizeof(*qs), GFP_KERNEL);
	if (!qs)
		return -ENOMEM;
	t0 = jiffies;
	for (i = 0; i < n; i++)
		qs[i] = hp_connect_start(to[i >= count]);
	for (i = 0; i < n; i++) {
		t = i >= count;
		qs[i] = hp_connect_finish(qs[i], to[t]);
		if (IS_ERR(qs[i])) {
			pr_info("mute: connect %u to %pISpc refused: %ld\n",
				i + 1, to[t], PTR_ERR(qs[i]));
			qs[i] = NULL;
			continue;
		}
		up[t]++;
	}
	pr_info("mute: %pISpc: %u of %u connected\n", dst, up[0], count);
	if (count2)
		pr_info("mute: %pISpc: %u of %u connected\n", dst2, up[1],
			count2);
	if (!up[0] && !up[1]) {
		pr_err("mute: none of %u connects made it\n", n);
		ret = -ECONNREFUSED;
		goto out;
	}
	/* Each was set up by now: its deadline is at most this far away. */
	end = jiffies + msecs_to_jiffies(KRDMA_HANDOVER_TIMEOUT_MS) + HP_WAIT;
	for (i = 0; i < n; i++) {
		unsigned long left = time_before(jiffies, end) ? end - jiffies : 0;

		if (!qs[i])
			continue;
		if (hp_wait_end(qs[i], left))
			continue;
		ended++;
		slowest = max(slowest, jiffies - t0);
		/*
		 * When the CM told it ended (pairs with the handler's
		 * release); a failed receive first: now, which is later.
		 */
		if (smp_load_acquire(&qs[i]->ended))
			first = min(first, qs[i]->ended_at - t0);
		else
			first = min(first, jiffies - t0);
	}
	if (ended != up[0] + up[1]) {
		pr_err("mute: krdma ended %u of %u silent connections in %u ms\n",
		       ended, up[0] + up[1],
		       KRDMA_HANDOVER_TIMEOUT_MS + jiffies_to_msecs(HP_WAIT));
		ret = -ETIME;
		goto out;
	}
	pr_info("mute: krdma ended all %u within %u ms of the first connect, the first after %u ms\n",
		ended, jiffies_to_msecs(slowest), jiffies_to_msecs(first));
out:
	for (i = 0; i < n; i++)
		hp_destroy(qs[i]);
	kfree(qs);
	return ret;
}

/* ---- one-sided attacks --------------------------------------------- */

/* The READ sink: a page registered for local and remote write (iWARP). */
static int hp_sink(struct hp_q *q)
{
	struct ib_reg_wr wr = {};
	int ret, n;

	q->sink = kmalloc(PAGE_SIZE, GFP_KERNEL);
	if (!q->sink)
		return -ENOMEM;
	memset(q->sink, 0xa5, PAGE_SIZE);
	sg_init_one(&q->sink_sg, q->sink, PAGE_SIZE);
	if (ib_dma_map_sg(q->id->device, &q->sink_sg, 1, DMA_FROM_DEVICE) != 1)
		return -ENOMEM;
	q->sink_mapped = true;
	q->sink_mr = ib_alloc_mr(q->pd, IB_MR_TYPE_MEM_REG, 1);
	if (IS_ERR(q->sink_mr)) {
		ret = PTR_ERR(q->sink_mr);
		q->sink_mr = NULL;
		return ret;
	}
	n = ib_map_mr_sg(q->sink_mr, &q->sink_sg, 1, NULL, PAGE_SIZE);
	if (n != 1)
		return n < 0 ? n : -EINVAL;
	ib_update_fast_reg_key(q->sink_mr, ib_inc_rkey(q->sink_mr->rkey));
	q->reg_cqe.done = hp_reg_done;
	q->reg_status = -1;
	wr.wr.wr_cqe = &q->reg_cqe;
	wr.wr.opcode = IB_WR_REG_MR;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.mr = q->sink_mr;
	wr.key = q->sink_mr->rkey;
	wr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE;
	ret = ib_post_send(q->id->qp, &wr.wr, NULL);
	if (ret)
		return ret;
	ret = hp_wait(q, q->reg_status != -1, HP_WAIT);
	if (!ret && q->reg_status != IB_WC_SUCCESS)
		ret = -EIO;
	return ret;
}

/* One RDMA WRITE or READ of @len bytes; the completion's status, or < 0. */
static int hp_rdma(struct hp_q *q, bool write, u64 raddr, u32 rkey, u32 len)
{
	struct ib_sge sge = { .length = len };
	struct ib_rdma_wr wr = {};
	int ret;

	if (write) {
		memset(q->tx.buf, 0x5a, len);
		ib_dma_sync_single_for_device(q->id->device, q->tx.dma, len,
					      DMA_TO_DEVICE);
		sge.addr = q->tx.dma;
		sge.lkey = q->pd->local_dma_lkey;
	} else {
		sge.addr = q->sink_mr->iova;
		sge.lkey = q->sink_mr->lkey;
	}
	wr.wr.wr_cqe = &q->tx.cqe;
	wr.wr.opcode = write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_READ;
	wr.wr.send_flags = IB_SEND_SIGNALED;
	wr.wr.sg_list = &sge;
	wr.wr.num_sge = 1;
	wr.remote_addr = raddr;
	wr.rkey = rkey;
	q->tx_busy = true;
	ret = ib_post_send(q->id->qp, &wr.wr, NULL);
	if (ret) {
		q->tx_busy = false;
		return ret;
	}
	ret = hp_wait(q, !q->tx_busy, HP_WAIT);
	return ret ?: q->tx_status;
}

enum hp_key { K_XOR1, K_PLUS, K_RANDOM, K_RIGHT };
enum hp_where { W_START, W_END, W_BEFORE };

struct hp_attack {
	const char	*what;
	bool		write;
	bool		other;		/* G's token, from another connection */
	bool		readonly;	/* the token has only the read right */
	enum hp_key	key;
	enum hp_where	where;
};

static const struct hp_attack hp_attacks[] = {
	{ "WRITE with rkey ^ 1", true, false, false, K_XOR1, W_START },
	{ "WRITE with rkey + 0x100", true, false, false, K_PLUS, W_START },
	{ "WRITE with a random rkey", true, false, false, K_RANDOM, W_START },
	{ "WRITE of 16 bytes 8 before the end", true, false, false, K_RIGHT,
	  W_END },
	{ "WRITE of 16 bytes 8 before the start", true, false, false, K_RIGHT,
	  W_BEFORE },
	{ "WRITE through a read-only token", true, false, true, K_RIGHT,
	  W_START },
	{ "WRITE with another connection's token", true, true, false, K_RIGHT,
	  W_START },
	{ "READ with rkey ^ 1", false, false, false, K_XOR1, W_START },
	{ "READ with a random rkey", false, false, false, K_RANDOM, W_START },
	{ "READ of 16 bytes 8 before the end", false, false, false, K_RIGHT,
	  W_END },
	{ "READ of 16 bytes 8 before the start", false, false, false, K_RIGHT,
	  W_BEFORE },
	{ "READ with another connection's token", false, true, false, K_RIGHT,
	  W_START },
};

static int hp_attack(const struct sockaddr *dst, const struct hp_attack *a,
		     const struct krdma_token *gtok, u64 seed)
{
	struct krdma_token_wire w;
	struct krdma_token t;
	struct st_msg r;
	struct hp_q *q;
	u64 raddr;
	u32 rkey;
	int ret, status;

	q = hp_connect(dst);
	if (IS_ERR(q))
		return PTR_ERR(q);
	ret = hp_st_region(q, KRDMA_ACCESS_REMOTE_READ |
			   (a->readonly ? 0 : KRDMA_ACCESS_REMOTE_WRITE),
			   seed, &w);
	if (!ret && !a->write)
		ret = hp_sink(q);
	if (ret)
		goto out;
	krdma_token_unpack(&w, &t);
	if (a->other)
		t = *gtok;
	rkey = t.rkey;
	if (a->key == K_XOR1)
		rkey ^= 1;
	else if (a->key == K_PLUS)
		rkey += 0x100;
	else if (a->key == K_RANDOM)
		while (rkey == t.rkey || rkey == gtok->rkey)
			rkey = get_random_u32();
	raddr = t.addr;
	if (a->where == W_END)
		raddr = t.addr + t.length - 8;
	else if (a->where == W_BEFORE)
		raddr = t.addr - 8;
	status = hp_rdma(q, a->write, raddr, rkey, 16);
	if (status < 0) {
		ret = status;
		pr_err("onesided: %s: %d\n", a->what, ret);
		goto out;
	}
	if (status == IB_WC_SUCCESS && a->write) {
		/*
		 * iWARP: a WRITE completes once it is sent, and the peer
		 * refuses it by terminating the connection.  A request after
		 * it tells which: answered, the WRITE was taken.
		 */
		ret = hp_st_call(q, ST_VERIFY, 0, seed, HP_ST_LEN, &r);
		if (!ret || ret == -EILSEQ || ret == -ETIME) {
			pr_err("onesided: BREACH: %s was taken (then a verify of the region: %d)\n",
			       a->what, ret);
			ret = -EIO;
			goto out;
		}
		pr_info("onesided: %s: refused (the peer terminated the connection: %d)\n",
			a->what, ret);
		ret = 0;
		goto out;
	}
	if (status == IB_WC_SUCCESS) {
		pr_err("onesided: BREACH: %s succeeded\n", a->what);
		ret = -EIO;
		goto out;
	}
	if (!a->write && memchr_inv(q->sink, 0xa5, PAGE_SIZE)) {
		pr_err("onesided: BREACH: %s failed, but data landed\n",
		       a->what);
		ret = -EIO;
		goto out;
	}
	/* Our QP is in error now; krdma's end learns it as it may. */
	ret = hp_wait_end(q, 3 * HZ);
	pr_info("onesided: %s: refused (%s)%s\n", a->what,
		ib_wc_status_msg(status),
		ret ? "" : ", krdma ended the connection");
	ret = 0;
out:
	hp_destroy(q);
	return ret;
}

static int hp_onesided(const struct sockaddr *dst)
{
	struct krdma_token_wire w;
	struct krdma_token gtok;
	struct st_msg r;
	struct hp_q *g;
	u64 seed = get_random_u64();
	u32 i;
	int ret;

	g = hp_connect(dst);
	if (IS_ERR(g))
		return PTR_ERR(g);
	ret = hp_st_region(g, KRDMA_ACCESS_REMOTE_READ |
			   KRDMA_ACCESS_REMOTE_WRITE, seed, &w);
	if (ret)
		goto out;
	krdma_token_unpack(&w, &gtok);
	for (i = 0; i < ARRAY_SIZE(hp_attacks) && !ret; i++) {
		ret = hp_attack(dst, &hp_attacks[i], &gtok, seed + i + 1);
		if (pace_ms)
			msleep(pace_ms);
	}
	if (ret)
		goto out;
	ret = hp_st_call(g, ST_VERIFY, 0, seed, HP_ST_LEN, &r);
	if (ret) {
		pr_err("onesided: BREACH: the first connection's region changed (verify %d, first bad byte %llu)\n",
		       ret, be64_to_cpu(r.off));
		goto out;
	}
	pr_info("onesided: %zu attacks refused; the first connection's %u bytes unchanged\n",
		ARRAY_SIZE(hp_attacks), HP_ST_LEN);
	ret = hp_st_call(g, ST_FREE, 0, 0, 0, &r);
out:
	hp_destroy(g);
	return ret;
}

/* ---- module ---------------------------------------------------------- */

static int hp_listen(const struct sockaddr *src)
{
	int ret;

	hp_listen_id = rdma_create_id(&init_net, hp_cm_handler, NULL,
				      RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(hp_listen_id)) {
		ret = PTR_ERR(hp_listen_id);
		hp_listen_id = NULL;
		return ret;
	}
	ret = rdma_bind_addr(hp_listen_id, (struct sockaddr *)src);
	if (!ret)
		ret = rdma_listen(hp_listen_id, 8);
	if (ret) {
		rdma_destroy_id(hp_listen_id);
		hp_listen_id = NULL;
		return ret;
	}
	pr_info("passive: listening on %pISpc\n", src);
	return 0;
}

/*
 * What krdma accepted, in our view (the CM's REP, fields swapped): we may
 * have rd_init READs in flight towards it, it rd_resp towards us.  We
 * offered 1 and 4: krdma must not initiate more than our 1, and must
 * take our 4 (its device allows more).
 */
static int hp_rdatom(struct hp_q *q)
{
	pr_info("%s: krdma accepted %u READs in flight from us, %u towards us\n",
		mode, q->rd_init, q->rd_resp);
	if (rdma_protocol_iwarp(q->id->device, q->id->port_num))
		return 0;
	if (q->rd_resp > 1 || q->rd_init != 4) {
		pr_err("%s: krdma accepted %u towards us (we take 1) and %u from us (we asked 4)\n",
		       mode, q->rd_resp, q->rd_init);
		return -EPROTO;
	}
	return 0;
}

static int __init hp_init(void)
{
	struct sockaddr_storage ss;
	struct hp_q *q;
	int ret;

	if (!*mode || depth < 1 || depth > HP_MAX_DEPTH || msg < 16 ||
	    msg > 4096) {
		pr_err("needs mode=, addr=, port=, depth= 1 to %d and msg= 16 to 4096\n",
		       HP_MAX_DEPTH);
		return -EINVAL;
	}
	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, &ss);
	if (ret) {
		pr_err("bad address '%s' port '%s'\n", addr, port);
		return ret;
	}
	if (!strcmp(mode, "passive"))
		return hp_listen((struct sockaddr *)&ss);
	if (!strcmp(mode, "onesided"))
		return hp_onesided((struct sockaddr *)&ss);
	if (!strcmp(mode, "mute")) {
		struct sockaddr_storage ss2 = ss;

		if (!count || count > HP_MUTE_MAX || count2 > HP_MUTE_MAX ||
		    !count2 != !*port2) {
			pr_err("mute: count= 1 to %d, count2= 0 to %d with port2=\n",
			       HP_MUTE_MAX, HP_MUTE_MAX);
			return -EINVAL;
		}
		if (count2 && inet_pton_with_scope(&init_net, AF_UNSPEC, addr,
						   port2, &ss2)) {
			pr_err("bad address '%s' port2 '%s'\n", addr, port2);
			return -EINVAL;
		}
		return hp_mute((struct sockaddr *)&ss, (struct sockaddr *)&ss2);
	}
	q = hp_connect((struct sockaddr *)&ss);
	if (IS_ERR(q))
		return PTR_ERR(q);
	if (!strcmp(mode, "rdatom"))
		ret = hp_rdatom(q);
	else
		ret = hp_break(q);
	hp_destroy(q);
	return ret;
}
module_init(hp_init);

static void __exit hp_exit(void)
{
	struct hp_q *q, *tmp;

	if (!hp_listen_id)
		return;
	/* No new children once the listener is gone. */
	rdma_destroy_id(hp_listen_id);
	list_for_each_entry_safe(q, tmp, &hp_children, entry) {
		list_del(&q->entry);
		hp_destroy(q);
	}
	pr_info("passive: closed, %u connections accepted\n", hp_accepted);
}
module_exit(hp_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("krdma: a peer that breaks the protocol (tests only)");
