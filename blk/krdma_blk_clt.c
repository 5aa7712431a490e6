// SPDX-License-Identifier: GPL-2.0
/*
 * krdma-blk client: maps an export as a blk-mq disk.
 *
 * One krdma connection per hardware queue.  queue_rq maps the request's
 * pages (blk_rq_map_sg()), registers them for the server (krdma_reg_sg():
 * remote read for a write, remote write for a read) and sends the command
 * with the token.  The reply arrives in the recv callback (softirq), which
 * finds the request by its tag and hands it to a work item: revoking and
 * freeing the registration sleep.  Then the request ends with the server's
 * status.
 *
 * This slice: queue_rq sleeps (BLK_MQ_F_BLOCKING: krdma_reg_sg() and
 * krdma_send() wait), registration is per request and not chained with
 * the command, the server's reply is a plain SEND (no SEND_WITH_INV), and
 * a failed connection fails its in-flight I/O with BLK_STS_IOERR and new
 * I/O fast: there is no reconnect until krdma has sessions.
 *
 * A request's state decides who ends it: queue_rq sets INFLIGHT before the
 * command goes out; the reply, the timeout handler, a connection failure
 * and unmap race to move it to DONE, and the winner queues its work.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/completion.h>
#include <linux/workqueue.h>
#include <linux/scatterlist.h>
#include <linux/string.h>

#include <krdma.h>
#include "krdma_blk.h"
#include "krdma_blk_proto.h"
#include "krdma_blk_compat.h"

/* Segments of the largest request, with a partial first page. */
#define KRDMA_BLK_MAX_SEGS	(KRDMA_BLK_MAX_IO / PAGE_SIZE + 1)
#define KRDMA_BLK_HELLO_TIMEOUT	(10 * HZ)

enum {
	KRDMA_BLK_RQ_IDLE,
	KRDMA_BLK_RQ_INFLIGHT,
	KRDMA_BLK_RQ_DONE,
};

struct krdma_blk_map;

/* One hardware queue: one connection. */
struct krdma_blk_queue {
	struct krdma_blk_map	*map;
	struct krdma_conn	*conn;
	u32			idx;
	bool			dead;		/* failed: new I/O fails */
	atomic_t		gen;		/* tells replies to reused tags apart */
	struct completion	hs_done;
	bool			hs_got;
	struct krdma_blk_resp	hs;
};

struct krdma_blk_map {
	char			name[KRDMA_BLK_NAME_LEN];
	u32			nq;
	struct krdma_blk_queue	*qs;
	struct blk_mq_tag_set	set;
	bool			set_ready;
	struct gendisk		*disk;
	struct workqueue_struct	*wq;
	bool			dead;		/* unmapping: new I/O fails */
};

/* A request's driver data. */
struct krdma_blk_rq {
	atomic_t		state;
	u32			gen;
	int			status;
	struct krdma_mr		*mr;
	struct work_struct	work;
	struct scatterlist	sg[KRDMA_BLK_MAX_SEGS];
};

/* Move @rq to DONE with @status, unless someone else got there first. */
static bool krdma_blk_rq_finish(struct request *rq, int status)
{
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct krdma_blk_map *map = rq->q->queuedata;

	if (atomic_cmpxchg(&pdu->state, KRDMA_BLK_RQ_INFLIGHT,
			   KRDMA_BLK_RQ_DONE) != KRDMA_BLK_RQ_INFLIGHT)
		return false;
	pdu->status = status;
	queue_work(map->wq, &pdu->work);
	return true;
}

static void krdma_blk_rq_work(struct work_struct *work)
{
	struct krdma_blk_rq *pdu = container_of(work, struct krdma_blk_rq,
						work);
	struct request *rq = blk_mq_rq_from_pdu(pdu);

	/* The token is dead before the pages go back to the block layer. */
	if (pdu->mr) {
		krdma_mr_revoke(pdu->mr);
		krdma_mr_free(pdu->mr);
		pdu->mr = NULL;
	}
	blk_mq_end_request(rq, errno_to_blk_status(pdu->status));
}

struct krdma_blk_fail_arg {
	struct krdma_blk_queue	*q;	/* NULL: every queue */
	int			status;
};

static bool krdma_blk_fail_one(struct request *rq, void *data)
{
	struct krdma_blk_fail_arg *a = data;

	if (!a->q || rq->mq_hctx->queue_num == a->q->idx)
		krdma_blk_rq_finish(rq, a->status);
	return true;
}

/* End the in-flight requests of @q (NULL: of every queue) with @status. */
static void krdma_blk_fail_inflight(struct krdma_blk_map *map,
				    struct krdma_blk_queue *q, int status)
{
	struct krdma_blk_fail_arg a = { .q = q, .status = status };

	blk_mq_tagset_busy_iter(&map->set, krdma_blk_fail_one, &a);
}

static void krdma_blk_clt_event(struct krdma_conn *conn, enum krdma_event ev,
				int error)
{
	struct krdma_blk_queue *q = krdma_conn_priv(conn);
	struct krdma_blk_map *map = q->map;

	if (ev == KRDMA_EVENT_ESTABLISHED)
		return;
	pr_warn_ratelimited("%s: queue %u connection lost (%d); failing its I/O\n",
			    map->name, q->idx, error);
	WRITE_ONCE(q->dead, true);
	complete(&q->hs_done);
	if (READ_ONCE(map->set_ready))
		krdma_blk_fail_inflight(map, q, -EIO);
}

/* Context: softirq (or BHs off). */
static int krdma_blk_clt_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct krdma_blk_queue *q = krdma_conn_priv(conn);
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
		if (q->hs_got)
			goto bad;
		memcpy(&q->hs, r, sizeof(*r));
		q->hs_got = true;
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
	if (READ_ONCE(pdu->gen) != upper_32_bits(wtag))
		goto stale;
	status = be32_to_cpu(r->status);
	if (status > 0 || status < -MAX_ERRNO)
		status = -EIO;
	if (!krdma_blk_rq_finish(rq, status))
		goto stale;
	return 0;
bad:
	pr_warn_ratelimited("%s: queue %u: malformed reply from the server\n",
			    map->name, q->idx);
	return 0;
stale:
	pr_warn_ratelimited("%s: queue %u: reply to no request in flight (failed or timed out)\n",
			    map->name, q->idx);
	return 0;
}

static const struct krdma_conn_ops krdma_blk_clt_ops = {
	.event	= krdma_blk_clt_event,
	.recv	= krdma_blk_clt_recv,
};

static blk_status_t krdma_blk_queue_rq(struct blk_mq_hw_ctx *hctx,
				       const struct blk_mq_queue_data *bd)
{
	struct krdma_blk_queue *q = hctx->driver_data;
	struct request *rq = bd->rq;
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct krdma_blk_cmd c = {};
	struct krdma_token tok;
	u16 flags = 0;
	int nents, ret;
	u8 op;

	if (READ_ONCE(q->map->dead) || READ_ONCE(q->dead))
		return BLK_STS_IOERR;
	switch (req_op(rq)) {
	case REQ_OP_READ:
		op = KRDMA_BLK_OP_READ;
		break;
	case REQ_OP_WRITE:
		op = KRDMA_BLK_OP_WRITE;
		break;
	case REQ_OP_FLUSH:
		op = KRDMA_BLK_OP_FLUSH;
		break;
	case REQ_OP_DISCARD:
		op = KRDMA_BLK_OP_DISCARD;
		break;
	case REQ_OP_WRITE_ZEROES:
		op = KRDMA_BLK_OP_WRITE_ZEROES;
		break;
	default:
		return BLK_STS_NOTSUPP;
	}
	if (rq->cmd_flags & REQ_FUA)
		flags |= KRDMA_BLK_F_FUA;
	atomic_set(&pdu->state, KRDMA_BLK_RQ_IDLE);
	pdu->mr = NULL;
	blk_mq_start_request(rq);

	if (op == KRDMA_BLK_OP_READ || op == KRDMA_BLK_OP_WRITE) {
		sg_init_table(pdu->sg, KRDMA_BLK_MAX_SEGS);
		nents = blk_rq_map_sg(rq->q, rq, pdu->sg);
		pdu->mr = krdma_reg_sg(q->conn, pdu->sg, nents,
				       op == KRDMA_BLK_OP_WRITE ?
				       KRDMA_ACCESS_REMOTE_READ :
				       KRDMA_ACCESS_REMOTE_WRITE);
		if (IS_ERR(pdu->mr)) {
			ret = PTR_ERR(pdu->mr);
			pdu->mr = NULL;
			pr_warn_ratelimited("%s: registration failed (%d)\n",
					    q->map->name, ret);
			return ret == -ENOMEM ? BLK_STS_RESOURCE :
				BLK_STS_IOERR;
		}
		krdma_mr_token(pdu->mr, &tok);
		krdma_token_pack(&tok, &c.token);
	}
	krdma_blk_hdr_init(&c.hdr, op, flags);
	c.len = cpu_to_be32(op == KRDMA_BLK_OP_FLUSH ? 0 : blk_rq_bytes(rq));
	c.sector = cpu_to_be64(blk_rq_pos(rq));
	WRITE_ONCE(pdu->gen, (u32)atomic_inc_return(&q->gen));
	c.tag = cpu_to_be64((u64)pdu->gen << 32 | blk_mq_unique_tag(rq));
	/* The reply may come before krdma_send() returns. */
	atomic_set(&pdu->state, KRDMA_BLK_RQ_INFLIGHT);
	ret = krdma_send(q->conn, &c, sizeof(c), KRDMA_BLK_IO_TIMEOUT);
	if (!ret)
		return BLK_STS_OK;
	/* Unless a failure or unmap took it, it ends here. */
	if (atomic_cmpxchg(&pdu->state, KRDMA_BLK_RQ_INFLIGHT,
			   KRDMA_BLK_RQ_IDLE) != KRDMA_BLK_RQ_INFLIGHT)
		return BLK_STS_OK;
	if (pdu->mr) {
		krdma_mr_revoke(pdu->mr);
		krdma_mr_free(pdu->mr);
		pdu->mr = NULL;
	}
	return BLK_STS_IOERR;
}

static enum blk_eh_timer_return krdma_blk_timeout(struct request *rq)
{
	struct krdma_blk_rq *pdu = blk_mq_rq_to_pdu(rq);
	struct krdma_blk_map *map = rq->q->queuedata;

	/* Still in queue_rq (a send waiting for a credit): wait for it. */
	if (atomic_read(&pdu->state) == KRDMA_BLK_RQ_IDLE)
		return BLK_EH_RESET_TIMER;
	if (krdma_blk_rq_finish(rq, -ETIMEDOUT))
		pr_warn_ratelimited("%s: request timed out\n", map->name);
	return BLK_EH_DONE;
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

	INIT_WORK(&pdu->work, krdma_blk_rq_work);
	atomic_set(&pdu->state, KRDMA_BLK_RQ_IDLE);
	return 0;
}

static const struct blk_mq_ops krdma_blk_mq_ops = {
	.queue_rq	= krdma_blk_queue_rq,
	.timeout	= krdma_blk_timeout,
	.init_hctx	= krdma_blk_init_hctx,
	.init_request	= krdma_blk_init_request,
};

static const struct block_device_operations krdma_blk_fops = {
	.owner		= THIS_MODULE,
};

/* Connect queue @q and greet the export: 0 or a negative errno. */
static int krdma_blk_queue_connect(struct krdma_blk_queue *q,
				   const struct krdma_blk_map_args *a)
{
	struct krdma_conn_opts opts = { .ops = &krdma_blk_clt_ops, .priv = q };
	struct krdma_blk_hello h = {};
	struct krdma_conn *conn;
	int ret;

	init_completion(&q->hs_done);
	conn = krdma_connect((const struct sockaddr *)&a->addr, NULL, &opts);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	q->conn = conn;
	if (krdma_max_msg_size(conn) < sizeof(struct krdma_blk_cmd))
		return -EPROTO;
	krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
	strscpy(h.export, a->export, sizeof(h.export));
	ret = krdma_send(conn, &h, sizeof(h), KRDMA_BLK_HELLO_TIMEOUT);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&q->hs_done, KRDMA_BLK_HELLO_TIMEOUT))
		return -ETIMEDOUT;
	if (!q->hs_got)
		return krdma_conn_error(conn) ?: -ECONNRESET;
	ret = (s32)be32_to_cpu(q->hs.status);
	if (ret > 0 || ret < -MAX_ERRNO)
		return -EPROTO;
	return ret;
}

/* The disk's limits from the export's HELLO reply: 0 or -EPROTO. */
static int krdma_blk_limits(const struct krdma_blk_resp *r,
			    struct krdma_blk_limits *l, u64 *sectors, bool *ro)
{
	u32 xflags = be32_to_cpu(r->xflags);
	u32 lbs = be32_to_cpu(r->lbs);
	u32 ms = be32_to_cpu(r->max_sectors);
	u32 md = be32_to_cpu(r->max_discard);

	if (lbs < SECTOR_SIZE || lbs > PAGE_SIZE || !is_power_of_2(lbs) ||
	    ms < (lbs >> SECTOR_SHIFT))
		return -EPROTO;
	memset(l, 0, sizeof(*l));
	l->lbs = lbs;
	l->max_sectors = min_t(u32, ms, KRDMA_BLK_MAX_IO >> SECTOR_SHIFT);
	l->max_segments = KRDMA_BLK_MAX_SEGS;
	/* The wire's length is 32 bits of bytes. */
	md = min_t(u32, md, U32_MAX >> SECTOR_SHIFT) &
		~((lbs >> SECTOR_SHIFT) - 1);
	if (xflags & KRDMA_BLK_X_DISCARD)
		l->max_discard = md;
	if (xflags & KRDMA_BLK_X_WRITE_ZEROES)
		l->max_write_zeroes = md;
	*sectors = be64_to_cpu(r->sectors);
	*ro = xflags & KRDMA_BLK_X_RO;
	return 0;
}

/* After this no callback of the map's connections runs. */
static void krdma_blk_map_close_conns(struct krdma_blk_map *map)
{
	u32 i;

	for (i = 0; i < map->nq; i++) {
		if (!IS_ERR_OR_NULL(map->qs[i].conn))
			krdma_close(map->qs[i].conn);
		map->qs[i].conn = NULL;
	}
}

static void krdma_blk_map_free(struct krdma_blk_map *map)
{
	if (map->qs)
		krdma_blk_map_close_conns(map);
	if (map->wq)
		destroy_workqueue(map->wq);
	kfree(map->qs);
	kfree(map);
}

/**
 * krdma_blk_map_create - map an export as a disk
 * @a: the parsed command
 *
 * Connects @a->queues times to the server and greets the export on each
 * connection, then adds the disk, named @a->name, with the export's size
 * and limits.
 *
 * Context: process context; sleeps.
 * Return: the map, or an ERR_PTR: -ENOENT (the server has no such export),
 * a connect error (-ECONNREFUSED, -ETIMEDOUT, ...), -EPROTO (a bad reply),
 * -ENOMEM, or the block layer's error.
 */
struct krdma_blk_map *krdma_blk_map_create(const struct krdma_blk_map_args *a)
{
	struct krdma_blk_limits lim;
	struct krdma_blk_map *map;
	struct gendisk *disk;
	u32 i, depth = KRDMA_MAX_DEPTH;
	u64 sectors;
	bool ro;
	int ret;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return ERR_PTR(-ENOMEM);
	strscpy(map->name, a->name, sizeof(map->name));
	map->nq = a->queues;
	map->qs = kcalloc(map->nq, sizeof(*map->qs), GFP_KERNEL);
	map->wq = alloc_workqueue("krdma_blk_%s", WQ_MEM_RECLAIM | WQ_HIGHPRI,
				  0, map->name);
	if (!map->qs || !map->wq) {
		ret = -ENOMEM;
		goto free;
	}
	for (i = 0; i < map->nq; i++) {
		map->qs[i].map = map;
		map->qs[i].idx = i;
		/* The control file's line names the failure. */
		ret = krdma_blk_queue_connect(&map->qs[i], a);
		if (ret)
			goto free;
		depth = min(depth, krdma_queue_depth(map->qs[i].conn));
	}
	ret = krdma_blk_limits(&map->qs[0].hs, &lim, &sectors, &ro);
	if (ret)
		goto free;

	map->set.ops = &krdma_blk_mq_ops;
	map->set.nr_hw_queues = map->nq;
	map->set.queue_depth = depth;
	map->set.numa_node = NUMA_NO_NODE;
	map->set.cmd_size = sizeof(struct krdma_blk_rq);
	map->set.flags = BLK_MQ_F_SHOULD_MERGE | BLK_MQ_F_BLOCKING;
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
	if (ro && !krdma_blk_test_ignore_ro)
		set_disk_ro(disk, true);
	map->disk = disk;
	ret = add_disk(disk);
	if (ret)
		goto put_disk;
	return map;
put_disk:
	krdma_blk_map_close_conns(map);
	put_disk(disk);
free_set:
	krdma_blk_map_close_conns(map);
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
 * Works with I/O in flight: new I/O fails at once, in-flight I/O fails
 * with BLK_STS_IOERR (its registrations revoked first), then the disk is
 * deleted and the connections closed.
 *
 * Context: process context; sleeps.
 */
void krdma_blk_map_destroy(struct krdma_blk_map *map)
{
	struct request_queue *q = map->disk->queue;

	/* No queue_rq runs from here until unquiesce. */
	blk_mq_quiesce_queue(q);
	WRITE_ONCE(map->dead, true);
	krdma_blk_fail_inflight(map, NULL, -EIO);
	/* Their registrations are revoked while the connections are open. */
	flush_workqueue(map->wq);
	blk_mq_unquiesce_queue(q);
	del_gendisk(map->disk);
	/* No event callback walks the tag set after this. */
	krdma_blk_map_close_conns(map);
	put_disk(map->disk);
	WRITE_ONCE(map->set_ready, false);
	blk_mq_free_tag_set(&map->set);
	krdma_blk_map_free(map);
}
