// SPDX-License-Identifier: GPL-2.0
/*
 * krdma self-test, in the spirit of krping's validate mode: the initiator
 * asks its peer to expose buffers, then sends, RDMA-writes, RDMA-reads and
 * (where the device has them) runs atomics on patterned data, and each
 * side checks every byte.  It runs on connections made through the control
 * file, a consumer of krdma like any other: its state hangs off the control
 * file's struct krdma_ctl_conn, never off the connection.  Each such
 * connection has a service thread that receives messages, answers the
 * peer's test requests and hands replies to the local test.  It uses
 * include/krdma.h and nothing of the core's own headers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/vmalloc.h>
#include <linux/ktime.h>
#include <linux/random.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <krdma.h>
#include "krdma_ctl.h"
#include "krdma_pattern.h"
#include "krdma_selftest.h"
#include "krdma_st_wire.h"
#include "krdma_bench.h"

/* Each wait of the self-test, unless test timeout_ms= says otherwise. */
#define ST_TIMEOUT	(30 * HZ)
#define ST_MAX_REGIONS	64
/*
 * The service thread's longest wait for a message: it notices
 * kthread_stop() at the latest then.  Its owner ends the connection
 * first, which wakes it at once; krdma knows nothing of the thread.
 */
#define KRDMA_SVC_POLL	(HZ / 2)

/*
 * What the service exposes to a peer is the server's to decide (#22 item
 * 4): at most this many bytes per connection, with at most these rights.
 * With a listener's backlog (KRDMA_DEFAULT_BACKLOG), that bounds what
 * peers can make a listener hold.
 */
static unsigned int svc_expose_max = 16 << 20;
module_param(svc_expose_max, uint, 0644);
MODULE_PARM_DESC(svc_expose_max,
		 "bytes the self-test service exposes to one peer at most (16 MiB)");

static unsigned int svc_rights = KRDMA_ACCESS_REMOTE_READ |
				 KRDMA_ACCESS_REMOTE_WRITE |
				 KRDMA_ACCESS_REMOTE_ATOMIC;
module_param(svc_rights, uint, 0644);
MODULE_PARM_DESC(svc_rights,
		 "rights the self-test service grants at most: KRDMA_ACCESS_* bits (7: read, write, atomic)");

/* ST_F_HOLD (krdma_st_wire.h): how long a receiver holds back. */
#define ST_HOLD_MAX	(5 * HZ)
#define ST_HOLD_MORE	msecs_to_jiffies(100)

/* What the responder side exposed for the peer's current test. */
struct st_exposed {
	void		*buf[ST_MAX_REGIONS];
	struct krdma_mr	*mr[ST_MAX_REGIONS];
	u32		nr;
	u64		len;
	u64		region;
	u64		imm_seed;	/* pattern base for write-with-imm */
	/* ST_F_SINK: notices counted, not checked or answered */
	bool		sink;
	bool		sink_bad;	/* one came out of order */
	u32		sink_next;	/* the immediate due next */
	u64		sink_count;
};

struct krdma_selftest {
	struct krdma_ctl_conn	*ctl;		/* the owner */
	struct krdma_conn	*conn;
	struct work_struct	work;
	struct mutex		lock;		/* parameters and results */
	bool			running;
	u32			ops, size, count, sge;
	long			timeout;	/* each wait of the initiator */
	/* results, read through sysfs; counters under stat_lock */
	char			status[96];
	spinlock_t		stat_lock;	/* taken in softirq too */
	atomic_t		send_inflight;
	int			send_err;
	u32			send_next;	/* the send completing next */
	/* the service: the ST_DATA batch coming in, in order */
	u64			data_next;	/* the seed expected next */
	bool			data_mid;	/* a batch has begun */
	bool			data_bad;	/* one came out of order */
	u64			done_ops;
	u64			bytes;
	u64			usecs;
	u64			lat_min, lat_max, lat_sum;
	/* replies from the peer, queued by the service thread */
	struct st_msg		replies[ST_MAX_REGIONS + 2];
	u32			rhead, rtail;
	/* what we exposed for the peer */
	struct st_exposed	exp;
};

static struct workqueue_struct *krdma_test_wq;

static void st_encode(struct st_msg *m, u8 op, u64 seed, u64 len, u64 off,
		      u32 arg, int status)
{
	memset(m, 0, sizeof(*m));
	m->magic = cpu_to_be32(ST_MAGIC);
	m->op = op;
	m->status = cpu_to_be16((u16)-status);
	m->arg = cpu_to_be32(arg);
	m->seed = cpu_to_be64(seed);
	m->len = cpu_to_be64(len);
	m->off = cpu_to_be64(off);
}

/* ---- responder: what the service thread does for the peer ----------- */

static void st_exp_free(struct st_exposed *e)
{
	u32 i;

	for (i = 0; i < e->nr; i++) {
		if (e->mr[i])
			krdma_mr_free(e->mr[i]);
		vfree(e->buf[i]);
		e->mr[i] = NULL;
		e->buf[i] = NULL;
	}
	e->nr = 0;
	e->len = 0;
}

static int st_send(struct krdma_conn *conn, struct st_msg *m, long timeout)
{
	return krdma_send(conn, m, sizeof(*m), timeout);
}

static int st_reply(struct krdma_conn *conn, int status, u64 off)
{
	struct st_msg m;

	st_encode(&m, ST_REPLY, 0, 0, off, 0, status);
	return st_send(conn, &m, ST_TIMEOUT);
}

static int st_setup(struct krdma_conn *conn, struct st_exposed *e, u64 len,
		    int access)
{
	struct krdma_token tok;
	struct st_msg m;
	u64 region, left;
	int ret;
	u32 i;

	st_exp_free(e);
	if (len > READ_ONCE(svc_expose_max)) {
		pr_warn_ratelimited("%s: self-test service: peer asked for %llu bytes, svc_expose_max is %u\n",
				    krdma_conn_name(conn), len,
				    READ_ONCE(svc_expose_max));
		return -E2BIG;
	}
	if (access & ~READ_ONCE(svc_rights)) {
		pr_warn_ratelimited("%s: self-test service: peer asked for rights 0x%x, svc_rights is 0x%x\n",
				    krdma_conn_name(conn), access,
				    READ_ONCE(svc_rights));
		return -EACCES;
	}
	/* Each region is one MR: the device bounds how large that can be. */
	region = (u64)krdma_max_reg_pages(conn) * PAGE_SIZE;
	region = min_t(u64, region, 1u << 30);
	if (!len || DIV_ROUND_UP(len, region) > ST_MAX_REGIONS)
		return -E2BIG;
	e->region = region;
	e->len = len;
	for (left = len, i = 0; left; i++) {
		u64 this = min(left, region);

		e->buf[i] = vzalloc(this);
		if (!e->buf[i]) {
			e->nr = i;
			return -ENOMEM;
		}
		e->nr = i + 1;
		e->mr[i] = krdma_reg_buf(conn, e->buf[i], this, access);
		if (IS_ERR(e->mr[i])) {
			ret = PTR_ERR(e->mr[i]);
			e->mr[i] = NULL;
			return ret;
		}
		left -= this;
	}
	for (i = 0; i < e->nr; i++) {
		krdma_mr_token(e->mr[i], &tok);
		st_encode(&m, ST_TOKEN, 0, 0, e->nr, i, 0);
		krdma_token_pack(&tok, &m.tok);
		ret = st_send(conn, &m, ST_TIMEOUT);
		if (ret)
			return ret;
	}
	return 0;
}

/* Check (or fill) the exposed regions against pattern(seed). */
static s64 st_exp_pattern(struct st_exposed *e, u64 seed, u64 len, bool fill)
{
	u64 pos = 0, this;
	s64 bad;
	u32 i;

	if (len > e->len)
		return 0;
	for (i = 0; i < e->nr && pos < len; i++) {
		this = min(len - pos, e->region);
		if (fill) {
			krdma_pattern_fill(e->buf[i], this, seed, pos);
		} else {
			bad = krdma_pattern_check(e->buf[i], this, seed, pos);
			if (bad >= 0)
				return bad;
		}
		pos += this;
	}
	return -1;
}

/*
 * Take no message until the peer has filled every other receive buffer
 * (it has no credit left then), and a little longer, so that its next
 * send finds no credit.  Bounded: a slow sender only makes it pass late.
 */
static void st_hold(struct krdma_conn *conn)
{
	u32 want = max_t(u32, krdma_queue_depth(conn), 2) - 1;

	krdma_wait_event_timeout(conn, *krdma_conn_waitq(conn),
				 krdma_recv_queued(conn) >= want ||
				 krdma_conn_error(conn) || kthread_should_stop(),
				 ST_HOLD_MAX);
	if (!krdma_conn_error(conn) && !kthread_should_stop())
		schedule_timeout_interruptible(ST_HOLD_MORE);
}

static void st_serve(struct krdma_conn *conn, struct krdma_selftest *st,
		     const struct st_msg *m, u32 len)
{
	struct st_exposed *e = &st->exp;
	u64 seed = be64_to_cpu(m->seed), mlen = be64_to_cpu(m->len);
	s64 bad;
	int ret;

	switch (m->op) {
	case ST_SETUP:
		e->imm_seed = seed;
		e->sink = m->flags & ST_F_SINK;
		e->sink_bad = false;
		e->sink_next = 0;
		e->sink_count = 0;
		ret = st_setup(conn, e, mlen, be32_to_cpu(m->arg));
		if (ret) {
			pr_warn_ratelimited("%s: self-test setup of %llu bytes failed: %d\n",
					    krdma_conn_name(conn), mlen, ret);
			st_exp_free(e);
			st_reply(conn, ret, 0);
		}
		break;
	case ST_VERIFY:
		bad = e->nr ? st_exp_pattern(e, seed, mlen, false) : 0;
		if (bad >= 0)
			pr_warn_ratelimited("%s: self-test data differs at byte %lld\n",
					    krdma_conn_name(conn), bad);
		st_reply(conn, bad >= 0 ? -EILSEQ : 0, bad >= 0 ? bad : 0);
		break;
	case ST_VERIFY64:
		ret = e->nr && *(u64 *)e->buf[0] == seed ? 0 : -EILSEQ;
		if (ret)
			pr_warn_ratelimited("%s: self-test atomic result %llu, expected %llu\n",
					    krdma_conn_name(conn),
					    e->nr ? *(u64 *)e->buf[0] : 0,
					    seed);
		st_reply(conn, ret, 0);
		break;
	case ST_FILL:
		st_exp_pattern(e, seed, mlen, true);
		st_reply(conn, e->nr ? 0 : -EINVAL, 0);
		break;
	case ST_DATA:
		bad = krdma_pattern_check((const u8 *)m + sizeof(*m),
					  len - sizeof(*m), seed, 0);
		/* A batch's seeds follow each other: the order is checked. */
		if (st->data_mid && seed != st->data_next && !st->data_bad) {
			pr_warn_ratelimited("%s: self-test message %llu came where %llu was due\n",
					    krdma_conn_name(conn), seed,
					    st->data_next);
			st->data_bad = true;
		}
		st->data_next = seed + 1;
		st->data_mid = !be32_to_cpu(m->arg);
		if (bad >= 0 || mlen != len - sizeof(*m)) {
			pr_warn_ratelimited("%s: self-test message %llu bad at byte %lld\n",
					    krdma_conn_name(conn), seed, bad);
			st_reply(conn, -EILSEQ, bad);
		} else if (be32_to_cpu(m->arg)) {
			/* The last of a batch: one reply for all of them. */
			st_reply(conn, st->data_bad ? -EBADMSG : 0, 0);
			st->data_bad = false;
		} else if (m->flags & ST_F_HOLD) {
			st_hold(conn);
		}
		break;
	case ST_SUNK:
		st_reply(conn, e->sink_bad ? -EBADMSG : 0, e->sink_count);
		break;
	case ST_FREE:
		st_exp_free(e);
		e->sink = false;
		st_reply(conn, 0, 0);
		break;
	case ST_REPLY:
	case ST_TOKEN:
		/* Several tokens come back to back: queue, do not overwrite. */
		mutex_lock(&st->lock);
		if (st->rtail - st->rhead < ARRAY_SIZE(st->replies))
			st->replies[st->rtail++ % ARRAY_SIZE(st->replies)] = *m;
		else
			pr_warn_ratelimited("%s: self-test reply dropped\n",
					    krdma_conn_name(conn));
		mutex_unlock(&st->lock);
		wake_up_all(krdma_conn_waitq(conn));
		break;
	}
}

/* A write-with-immediate notice: the data it announces must be in place. */
static void st_serve_imm(struct krdma_conn *conn, struct krdma_selftest *st,
			 u32 imm)
{
	struct st_exposed *e = &st->exp;
	s64 bad;

	if (e->sink) {
		if (imm != e->sink_next && !e->sink_bad) {
			pr_warn_ratelimited("%s: bench notice %u came where %u was due\n",
					    krdma_conn_name(conn), imm,
					    e->sink_next);
			e->sink_bad = true;
		}
		e->sink_next = imm + 1;
		e->sink_count++;
		return;
	}
	bad = e->nr ? st_exp_pattern(e, e->imm_seed + imm, e->len, false) : 0;
	if (bad >= 0)
		pr_warn_ratelimited("%s: data announced by immediate %u differs at byte %lld\n",
				    krdma_conn_name(conn), imm, bad);
	st_reply(conn, bad >= 0 ? -EILSEQ : 0, bad >= 0 ? bad : 0);
}

/**
 * krdma_svc_recv - the recv callback of the control file's connections
 * @conn: the connection
 * @msg: what came
 *
 * A message without a self-test header (the bench's send payload) is
 * dropped here, so that its credit goes back at once, as a perftest
 * server's receive loop returns its receive; a thread that woke for each
 * would bound the bench's send rate and latency by its wake-ups.  The
 * rest (self-test messages, write-with-immediate notices) is passed on,
 * in order, to the service thread's krdma_recv_ex().
 *
 * Context: the recv callback's (softirq, or process context with bottom
 * halves off, or the completion workqueue); does not sleep.
 * Return: 0 or KRDMA_MSG_QUEUE.
 */
int krdma_svc_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	const struct st_msg *m = msg->data;

	if (msg->imm_valid ||
	    (msg->len >= sizeof(*m) && be32_to_cpu(m->magic) == ST_MAGIC))
		return KRDMA_MSG_QUEUE;
	return 0;
}

static int krdma_svc_thread(void *arg)
{
	struct krdma_ctl_conn *ctl = arg;
	struct krdma_conn *conn = ctl->conn;
	struct krdma_selftest *st = ctl->st;
	u32 bufsz = krdma_max_msg_size(conn);
	void *buf;
	int n;

	buf = kvmalloc(bufsz, GFP_KERNEL);
	while (buf && !kthread_should_stop()) {
		struct krdma_recv_info info;

		n = krdma_recv_ex(conn, buf, bufsz, &info, KRDMA_SVC_POLL);
		if (n == 0 && info.imm_valid) {
			st_serve_imm(conn, st, info.imm);
			continue;
		}
		if (n >= (int)sizeof(struct st_msg) &&
		    be32_to_cpu(((struct st_msg *)buf)->magic) == ST_MAGIC) {
			st_serve(conn, st, buf, n);
			continue;
		}
		/*
		 * Dropped (not a self-test message: krdma_svc_recv() drops
		 * those), or idle; but a connection that failed with
		 * -ETIMEDOUT (heartbeats) says so too.
		 */
		if (n >= 0 || (n == -ETIMEDOUT && !krdma_conn_error(conn)))
			continue;
		/*
		 * The connection ended: wait to be stopped (a passive one is
		 * reaped once its end event came, #22 item 4).
		 */
		set_current_state(TASK_INTERRUPTIBLE);
		if (!kthread_should_stop())
			schedule();
		__set_current_state(TASK_RUNNING);
	}
	st_exp_free(&st->exp);
	kvfree(buf);
	return 0;
}

/* ---- initiator ----------------------------------------------------- */

static bool st_reply_ready(struct krdma_selftest *st)
{
	return READ_ONCE(st->rtail) != READ_ONCE(st->rhead) ||
	       krdma_conn_error(st->conn);
}

static int st_wait_reply(struct krdma_selftest *st, struct st_msg *out)
{
	long left;

	left = krdma_wait_event_interruptible_timeout(st->conn,
						      *krdma_conn_waitq(st->conn),
						      st_reply_ready(st),
						      st->timeout);
	mutex_lock(&st->lock);
	if (st->rtail == st->rhead) {
		mutex_unlock(&st->lock);
		if (left < 0)
			return left;
		return krdma_conn_error(st->conn) ?: -ETIMEDOUT;
	}
	*out = st->replies[st->rhead++ % ARRAY_SIZE(st->replies)];
	mutex_unlock(&st->lock);
	return 0;
}

static int st_request(struct krdma_selftest *st, u8 op, u64 seed, u64 len,
		      u32 arg, u64 *bad)
{
	struct st_msg m;
	int ret;

	st_encode(&m, op, seed, len, 0, arg, 0);
	ret = st_send(st->conn, &m, st->timeout);
	if (ret)
		return ret;
	ret = st_wait_reply(st, &m);
	if (ret)
		return ret;
	if (m.op != ST_REPLY)
		return -EPROTO;
	if (bad)
		*bad = be64_to_cpu(m.off);
	return -(int)be16_to_cpu(m.status);
}

struct st_local {
	void			*seg[KRDMA_TEST_MAX_SGE];
	u32			seglen[KRDMA_TEST_MAX_SGE];
	u32			nseg;
	struct sg_table		sgt;
};

static void st_local_free(struct st_local *l)
{
	u32 i;

	sg_free_table(&l->sgt);
	for (i = 0; i < l->nseg; i++)
		vfree(l->seg[i]);
}

/*
 * The local side of a one-sided test: @sge separately allocated segments
 * (so the scatterlist has real gaps), one entry per page piece.
 */
static int st_local_alloc(struct st_local *l, u32 size, u32 sge)
{
	struct scatterlist *sg;
	u32 i, npieces = 0, left = size;
	int ret;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < sge; i++) {
		l->seglen[i] = i == sge - 1 ? left : size / sge;
		left -= l->seglen[i];
		l->seg[i] = vzalloc(max_t(u32, l->seglen[i], 1));
		if (!l->seg[i])
			goto nomem;
		l->nseg = i + 1;
		npieces += DIV_ROUND_UP(l->seglen[i], PAGE_SIZE);
	}
	ret = sg_alloc_table(&l->sgt, npieces, GFP_KERNEL);
	if (ret)
		goto nomem;
	sg = l->sgt.sgl;
	for (i = 0; i < l->nseg; i++) {
		u32 off = 0;

		while (off < l->seglen[i]) {
			u32 plen = min_t(u32, PAGE_SIZE, l->seglen[i] - off);

			sg_set_page(sg, vmalloc_to_page(l->seg[i] + off), plen,
				    0);
			sg = sg_next(sg);
			off += plen;
		}
	}
	return 0;
nomem:
	for (i = 0; i < l->nseg; i++)
		vfree(l->seg[i]);
	l->nseg = 0;
	return -ENOMEM;
}

/*
 * Bytes [@skip, @skip + @len) of @l's scatterlist, in a table of their own
 * (the entries that straddle an end trimmed), to go to krdma_write(),
 * krdma_read() or krdma_write_imm() whole.
 */
static int st_local_range(struct st_local *l, u64 skip, u64 len,
			  struct sg_table *out)
{
	struct scatterlist *sg, *d;
	u64 pos = 0, end = skip + len;
	u32 n = 0;
	int i, ret;

	for_each_sg(l->sgt.sgl, sg, l->sgt.orig_nents, i) {
		if (pos < end && pos + sg->length > skip)
			n++;
		pos += sg->length;
	}
	ret = sg_alloc_table(out, n, GFP_KERNEL);
	if (ret)
		return ret;
	d = out->sgl;
	pos = 0;
	for_each_sg(l->sgt.sgl, sg, l->sgt.orig_nents, i) {
		u64 from = max(pos, skip), to = min(pos + sg->length, end);

		if (from < to) {
			sg_set_page(d, sg_page(sg), to - from,
				    sg->offset + (from - pos));
			d = sg_next(d);
		}
		pos += sg->length;
	}
	return 0;
}

static void st_parts_free(struct sg_table *parts, u32 nr)
{
	u32 r;

	if (!parts)
		return;
	for (r = 0; r < nr; r++)
		sg_free_table(&parts[r]);
	kfree(parts);
}

/* @l cut at the peer's regions of @region bytes: one table each. */
static int st_local_parts(struct st_local *l, u64 size, u64 region, u32 nr,
			  struct sg_table **out)
{
	struct sg_table *parts;
	u32 r;
	int ret;

	parts = kcalloc(nr, sizeof(*parts), GFP_KERNEL);
	if (!parts)
		return -ENOMEM;
	for (r = 0; r < nr; r++) {
		u64 skip = r * region;

		ret = st_local_range(l, skip, min(size - skip, region),
				     &parts[r]);
		if (ret) {
			st_parts_free(parts, r);
			return ret;
		}
	}
	*out = parts;
	return 0;
}

static void st_local_pattern(struct st_local *l, u64 seed, bool fill,
			     s64 *bad)
{
	u64 pos = 0;
	u32 i;

	*bad = -1;
	for (i = 0; i < l->nseg; i++) {
		if (fill) {
			krdma_pattern_fill(l->seg[i], l->seglen[i], seed, pos);
		} else if (*bad < 0) {
			*bad = krdma_pattern_check(l->seg[i], l->seglen[i],
						   seed, pos);
		}
		pos += l->seglen[i];
	}
}

/* Also called from send completions (softirq). */
static void st_lat(struct krdma_selftest *st, ktime_t t0, u64 bytes)
{
	u64 ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	unsigned long flags;

	spin_lock_irqsave(&st->stat_lock, flags);
	st->done_ops++;
	st->bytes += bytes;
	st->lat_sum += ns;
	if (!st->lat_min || ns < st->lat_min)
		st->lat_min = ns;
	if (ns > st->lat_max)
		st->lat_max = ns;
	spin_unlock_irqrestore(&st->stat_lock, flags);
}

static int st_get_tokens(struct krdma_selftest *st, u64 len, int access,
			 u64 seed, struct krdma_token *toks, u32 *nr,
			 u64 *region)
{
	struct st_msg m;
	u32 i, n = 1;
	int ret;

	st_encode(&m, ST_SETUP, seed, len, 0, access, 0);
	ret = st_send(st->conn, &m, st->timeout);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		ret = st_wait_reply(st, &m);
		if (ret)
			return ret;
		if (m.op == ST_REPLY)
			return -(int)be16_to_cpu(m.status) ?: -EPROTO;
		n = be64_to_cpu(m.off);
		if (m.op != ST_TOKEN || !n || n > ST_MAX_REGIONS ||
		    be32_to_cpu(m.arg) != i)
			return -EPROTO;
		krdma_token_unpack(&m.tok, &toks[i]);
	}
	*nr = n;
	*region = toks[0].length;
	return 0;
}

static int st_one_sided(struct krdma_selftest *st, bool write, bool imm,
			u64 seed0)
{
	struct krdma_conn *conn = st->conn;
	struct sg_table *parts = NULL;
	struct krdma_token *toks;
	struct st_local l;
	u64 region, bad;
	u32 nr, i, r;
	s64 lbad;
	int ret;

	toks = kcalloc(ST_MAX_REGIONS, sizeof(*toks), GFP_KERNEL);
	if (!toks)
		return -ENOMEM;
	ret = st_local_alloc(&l, st->size, st->sge);
	if (ret)
		goto out_toks;
	ret = st_get_tokens(st, st->size,
			    write ? KRDMA_ACCESS_REMOTE_WRITE :
				    KRDMA_ACCESS_REMOTE_READ,
			    seed0, toks, &nr, &region);
	if (ret)
		goto out_local;
	ret = st_local_parts(&l, st->size, region, nr, &parts);

	for (i = 0; i < st->count && !ret; i++) {
		u64 seed = seed0 + i;
		ktime_t t0;

		if (write)
			st_local_pattern(&l, seed, true, &lbad);
		else
			ret = st_request(st, ST_FILL, seed, st->size, 0, NULL);
		if (ret)
			break;
		t0 = ktime_get();
		for (r = 0; r < nr && !ret; r++) {
			struct sg_table *p = &parts[r];

			/* The notice follows the data; the peer checks then. */
			if (imm && r == nr - 1)
				ret = krdma_write_imm(conn, p->sgl,
						      p->orig_nents, &toks[r],
						      0, i, st->timeout);
			else if (write)
				ret = krdma_write(conn, p->sgl, p->orig_nents,
						  &toks[r], 0, st->timeout);
			else
				ret = krdma_read(conn, p->sgl, p->orig_nents,
						 &toks[r], 0, st->timeout);
		}
		if (!ret && imm) {
			struct st_msg r;

			ret = st_wait_reply(st, &r);
			if (!ret)
				ret = -(int)be16_to_cpu(r.status);
			if (ret == -EILSEQ)
				snprintf(st->status, sizeof(st->status),
					 "failed: data announced by immediate differs at peer byte %llu",
					 be64_to_cpu(r.off));
			if (!ret)
				st_lat(st, t0, st->size);
			continue;
		}
		if (ret)
			break;
		st_lat(st, t0, st->size);
		if (write) {
			ret = st_request(st, ST_VERIFY, seed, st->size, 0,
					 &bad);
			if (ret == -EILSEQ)
				snprintf(st->status, sizeof(st->status),
					 "failed: write data differs at peer byte %llu",
					 bad);
		} else {
			st_local_pattern(&l, seed, false, &lbad);
			if (lbad >= 0) {
				snprintf(st->status, sizeof(st->status),
					 "failed: read data differs at byte %lld",
					 lbad);
				ret = -EILSEQ;
			}
		}
	}
	if (krdma_conn_error(conn) == 0)
		st_request(st, ST_FREE, 0, 0, 0, NULL);
	st_parts_free(parts, nr);
out_local:
	st_local_free(&l);
out_toks:
	kfree(toks);
	return ret;
}

struct st_sreq {
	struct krdma_req	req;
	ktime_t			t0;
	struct krdma_selftest	*st;
	u32			i;		/* its place in the test */
};

static void st_send_done(struct krdma_req *req)
{
	struct st_sreq *s = container_of(req, struct st_sreq, req);
	struct krdma_selftest *st = s->st;

	if (req->status) {
		cmpxchg(&st->send_err, 0, req->status);
	} else {
		/* A QP's send completions come in order (#18: inject delay=). */
		if (s->i != st->send_next) {
			pr_warn_ratelimited("%s: self-test send %u completed where %u was due\n",
					    krdma_conn_name(st->conn), s->i,
					    st->send_next);
			cmpxchg(&st->send_err, 0, -EBADMSG);
		}
		st_lat(st, s->t0, req->len - sizeof(struct st_msg));
	}
	st->send_next = s->i + 1;
	atomic_dec(&st->send_inflight);
	wake_up_all(krdma_conn_waitq(st->conn));
}

static bool st_send_slot(struct krdma_selftest *st, int max)
{
	return atomic_read(&st->send_inflight) < max ||
	       krdma_conn_error(st->conn);
}

/*
 * Messages go out back to back, up to the queue depth in flight, so that
 * the receiver's credits are what paces the sender.  The peer checks every
 * message and answers once, after the last.
 */
static int st_send_test(struct krdma_selftest *st, u64 seed0)
{
	struct krdma_conn *conn = st->conn;
	wait_queue_head_t *wq = krdma_conn_waitq(conn);
	u32 depth = krdma_queue_depth(conn), nslots = 2 * depth, i;
	u32 payload = min_t(u32, st->size,
			    krdma_max_msg_size(conn) - sizeof(struct st_msg));
	struct st_sreq *reqs;
	struct st_msg *m;
	int ret = 0;
	u64 bad;

	m = kvmalloc(sizeof(*m) + payload, GFP_KERNEL);
	reqs = kcalloc(nslots, sizeof(*reqs), GFP_KERNEL);
	if (!m || !reqs) {
		kvfree(m);
		kfree(reqs);
		return -ENOMEM;
	}
	atomic_set(&st->send_inflight, 0);
	st->send_err = 0;
	st->send_next = 0;
	for (i = 0; i < st->count && !ret; i++) {
		struct st_sreq *s = &reqs[i % nslots];

		/* In-order completions: slot i % nslots is free again. */
		krdma_wait_event_timeout(conn, *wq, st_send_slot(st, depth),
					 MAX_SCHEDULE_TIMEOUT);
		ret = READ_ONCE(st->send_err) ?: krdma_conn_error(conn);
		if (ret)
			break;
		st_encode(m, ST_DATA, seed0 + i, payload, 0,
			  i == st->count - 1, 0);
		if (!i && st->count > depth)
			m->flags = ST_F_HOLD;
		krdma_pattern_fill((u8 *)m + sizeof(*m), payload, seed0 + i, 0);
		s->st = st;
		s->i = i;
		s->req.done = st_send_done;
		s->t0 = ktime_get();
		atomic_inc(&st->send_inflight);
		/*
		 * Wait for a credit with a bound: a dead iWARP peer returns
		 * none and TCP would keep the sends pending for minutes.
		 */
		while ((ret = krdma_send_async(conn, m, sizeof(*m) + payload,
					       &s->req, true)) == -EAGAIN) {
			if (!krdma_wait_event_timeout(conn, *wq,
						      krdma_send_ready(conn),
						      st->timeout)) {
				pr_warn_ratelimited("%s: no credit from the peer in %u ms, failing the connection\n",
						    krdma_conn_name(conn),
						    jiffies_to_msecs(st->timeout));
				krdma_conn_fail(conn, -ETIMEDOUT);
			}
		}
		if (ret)
			atomic_dec(&st->send_inflight);
	}
	if (!krdma_wait_event_timeout(conn, *wq,
				      !atomic_read(&st->send_inflight),
				      st->timeout)) {
		pr_warn_ratelimited("%s: self-test sends not acknowledged, failing the connection\n",
				    krdma_conn_name(conn));
		krdma_conn_fail(conn, -ETIMEDOUT);
		krdma_wait_event_timeout(conn, *wq,
					 !atomic_read(&st->send_inflight),
					 MAX_SCHEDULE_TIMEOUT);
	}
	ret = ret ?: st->send_err;

	if (!ret) {
		struct st_msg r;

		ret = st_wait_reply(st, &r);
		if (!ret) {
			ret = -(int)be16_to_cpu(r.status);
			bad = be64_to_cpu(r.off);
			if (ret == -EILSEQ)
				snprintf(st->status, sizeof(st->status),
					 "failed: message differs at peer byte %llu",
					 bad);
			else if (ret == -EBADMSG)
				snprintf(st->status, sizeof(st->status),
					 "failed: messages out of order at the peer");
		}
	} else if (ret == -EBADMSG) {
		snprintf(st->status, sizeof(st->status),
			 "failed: send completions out of order");
	}
	kfree(reqs);
	kvfree(m);
	return ret;
}

static int st_atomic_test(struct krdma_selftest *st)
{
	struct krdma_conn *conn = st->conn;
	struct krdma_token tok;
	u64 region, old, expect = 0;
	u32 nr, i;
	int ret;

	ret = st_get_tokens(st, sizeof(u64), KRDMA_ACCESS_REMOTE_ATOMIC, 0,
			    &tok, &nr, &region);
	if (ret)
		return ret;
	for (i = 0; i < st->count && !ret; i++) {
		ktime_t t0 = ktime_get();

		ret = krdma_atomic_fadd(conn, &tok, 0, i + 1, &old,
					st->timeout);
		if (!ret && old != expect)
			ret = -EILSEQ;
		expect += i + 1;
		if (!ret) {
			ret = krdma_atomic_cas(conn, &tok, 0, expect,
					       expect * 3, &old, st->timeout);
			if (!ret && old != expect)
				ret = -EILSEQ;
			expect *= 3;
		}
		if (!ret)
			st_lat(st, t0, 16);
	}
	if (!ret)
		ret = st_request(st, ST_VERIFY64, expect, 8, 0, NULL);
	if (ret == -EILSEQ)
		snprintf(st->status, sizeof(st->status),
			 "failed: atomic results wrong");
	if (krdma_conn_error(conn) == 0)
		st_request(st, ST_FREE, 0, 0, 0, NULL);
	return ret;
}

static void krdma_test_work(struct work_struct *work)
{
	struct krdma_selftest *st = container_of(work, struct krdma_selftest,
						 work);
	ktime_t t0 = ktime_get();
	u64 seed = get_random_u32();
	int ret = 0;

	if ((st->ops & KRDMA_TEST_SEND) && !ret)
		ret = st_send_test(st, seed);
	if ((st->ops & KRDMA_TEST_WRITE) && !ret)
		ret = st_one_sided(st, true, false, seed + 1000003);
	if ((st->ops & KRDMA_TEST_READ) && !ret)
		ret = st_one_sided(st, false, false, seed + 2000003);
	if ((st->ops & KRDMA_TEST_IMM) && !ret)
		ret = st_one_sided(st, true, true, seed + 3000017);
	if ((st->ops & KRDMA_TEST_ATOMIC) && !ret)
		ret = st_atomic_test(st);

	mutex_lock(&st->lock);
	st->usecs = ktime_to_us(ktime_sub(ktime_get(), t0));
	if (!ret)
		strscpy(st->status, "passed", sizeof(st->status));
	else if (strncmp(st->status, "failed", 6))
		snprintf(st->status, sizeof(st->status), "failed: %d", ret);
	st->running = false;
	mutex_unlock(&st->lock);
	pr_info_ratelimited("%s: self-test %s\n", krdma_conn_name(st->conn),
			    st->status);
	krdma_ctl_put(st->ctl);
}

/*
 * Under ctl->svc_lock: a test starts only while the service thread runs,
 * so none starts once krdma_svc_stop() ran, and the owner's
 * krdma_test_flush() after that waits for any that did.
 */
static int st_start(struct krdma_ctl_conn *ctl, u32 ops, u32 size, u32 count,
		    u32 sge, u32 timeout_ms)
{
	struct krdma_conn *conn = ctl->conn;
	struct krdma_selftest *st = ctl->st;
	int ret = 0;

	if (!st || !ctl->svc) {
		pr_warn_ratelimited("test: %s: no service thread on this connection\n",
				    krdma_conn_name(conn));
		return -EOPNOTSUPP;
	}
	ret = krdma_conn_error(conn);
	if (ret) {
		pr_warn_ratelimited("test: %s: connection is down: %d\n",
				    krdma_conn_name(conn), ret);
		return ret;
	}
	/* What the device can do, known once the connection has its QP. */
	if ((ops & KRDMA_TEST_ATOMIC) && !krdma_conn_has_atomics(conn)) {
		pr_warn_ratelimited("%s: device %s has no atomics\n",
				    krdma_conn_name(conn),
				    krdma_conn_device_name(conn));
		return -EOPNOTSUPP;
	}
	if ((ops & KRDMA_TEST_IMM) && krdma_conn_is_iwarp(conn)) {
		pr_warn_ratelimited("%s: device %s has no immediate data (iWARP)\n",
				    krdma_conn_name(conn),
				    krdma_conn_device_name(conn));
		return -EOPNOTSUPP;
	}
	mutex_lock(&st->lock);
	if (st->running) {
		pr_warn_ratelimited("test: %s: a self-test or a bench runs on it already\n",
				    krdma_conn_name(conn));
		ret = -EBUSY;
	} else {
		st->running = true;
		st->ops = ops;
		st->size = size;
		st->count = count;
		st->sge = sge;
		st->timeout = timeout_ms ? msecs_to_jiffies(timeout_ms) :
			      ST_TIMEOUT;
		spin_lock_irq(&st->stat_lock);
		st->done_ops = 0;
		st->bytes = 0;
		st->usecs = 0;
		st->lat_min = 0;
		st->lat_max = 0;
		st->lat_sum = 0;
		spin_unlock_irq(&st->stat_lock);
		st->rhead = st->rtail;
		strscpy(st->status, "running", sizeof(st->status));
		krdma_ctl_get(ctl);	/* the work's */
		queue_work(krdma_test_wq, &st->work);
	}
	mutex_unlock(&st->lock);
	return ret;
}

/**
 * krdma_test_start - start the self-test on a control-file connection
 * @ctl: the connection, as the control file holds it
 * @ops: KRDMA_TEST_* to run
 * @size: bytes per operation
 * @count: operations of each kind
 * @sge: local segments of a one-sided operation
 * @timeout_ms: each wait's bound (0: 30 s)
 *
 * Return: 0 once started (results in test_*), -EBUSY if a self-test or a
 * bench runs on it, -EOPNOTSUPP without a service thread or for what the
 * device cannot do, or the connection's error.
 */
int krdma_test_start(struct krdma_ctl_conn *ctl, u32 ops, u32 size,
		     u32 count, u32 sge, u32 timeout_ms)
{
	int ret;

	mutex_lock(&ctl->svc_lock);
	ret = st_start(ctl, ops, size, count, sge, timeout_ms);
	mutex_unlock(&ctl->svc_lock);
	return ret;
}

ssize_t krdma_test_show(struct krdma_ctl_conn *ctl, int what, char *buf)
{
	struct krdma_selftest *st = ctl->st;
	ssize_t n;

	if (!st)
		return sysfs_emit(buf, what == ST_SHOW_STATUS ? "idle\n" : "0\n");
	mutex_lock(&st->lock);
	spin_lock_irq(&st->stat_lock);
	switch (what) {
	case ST_SHOW_STATUS:
		n = sysfs_emit(buf, "%s\n", st->status[0] ? st->status : "idle");
		break;
	case ST_SHOW_OPS:
		n = sysfs_emit(buf, "%llu\n", st->done_ops);
		break;
	case ST_SHOW_BYTES:
		n = sysfs_emit(buf, "%llu\n", st->bytes);
		break;
	case ST_SHOW_USECS:
		n = sysfs_emit(buf, "%llu\n", st->usecs);
		break;
	case ST_SHOW_LAT_MIN:
		n = sysfs_emit(buf, "%llu\n", st->lat_min);
		break;
	case ST_SHOW_LAT_AVG:
		n = sysfs_emit(buf, "%llu\n", st->done_ops ?
			       div64_u64(st->lat_sum, st->done_ops) : 0);
		break;
	default:
		n = sysfs_emit(buf, "%llu\n", st->lat_max);
		break;
	}
	spin_unlock_irq(&st->stat_lock);
	mutex_unlock(&st->lock);
	return n;
}

static DEFINE_MUTEX(krdma_svc_gate);	/* krdma_svc_off */
static bool krdma_svc_off;

/*
 * Unload: no service thread starts after this returns, so the threads
 * that exist are those of the connections in the control file's registry,
 * which krdma_ctl_stop() closes, and of the ones a passive connection's
 * ESTABLISHED event is taking, which it stops itself (krdma_ctl.c).
 */
void krdma_svc_disable(void)
{
	mutex_lock(&krdma_svc_gate);
	krdma_svc_off = true;
	mutex_unlock(&krdma_svc_gate);
}

/*
 * Give a control-file connection its service thread and self-test state;
 * -ESHUTDOWN once krdma_svc_stop() ran or unload began.
 */
int krdma_svc_start(struct krdma_ctl_conn *ctl)
{
	struct krdma_conn *conn = ctl->conn;
	struct krdma_selftest *st;
	struct task_struct *t;
	int ret = 0;

	mutex_lock(&krdma_svc_gate);
	mutex_lock(&ctl->svc_lock);
	if (ctl->svc_closed || krdma_svc_off) {
		ret = -ESHUTDOWN;
		goto out;
	}
	ret = -ENOMEM;
	st = kzalloc(sizeof(*st), GFP_KERNEL);
	if (!st)
		goto out;
	st->ctl = ctl;
	st->conn = conn;
	mutex_init(&st->lock);
	spin_lock_init(&st->stat_lock);
	INIT_WORK(&st->work, krdma_test_work);
	st->timeout = ST_TIMEOUT;
	ctl->st = st;
	t = kthread_run(krdma_svc_thread, ctl, "krdma/%s",
			krdma_conn_name(conn));
	if (IS_ERR(t)) {
		ctl->st = NULL;
		kfree(st);
		ret = PTR_ERR(t);
		goto out;
	}
	get_task_struct(t);
	ctl->svc = t;
	ret = 0;
out:
	mutex_unlock(&ctl->svc_lock);
	mutex_unlock(&krdma_svc_gate);
	return ret;
}

/*
 * Stop the service thread and keep it from being started later.  Only one
 * caller gets the thread to stop.  Called once the connection has ended,
 * which wakes the thread at once; on a live one it takes up to
 * KRDMA_SVC_POLL.
 */
void krdma_svc_stop(struct krdma_ctl_conn *ctl)
{
	struct task_struct *t;

	mutex_lock(&ctl->svc_lock);
	ctl->svc_closed = true;
	t = ctl->svc;
	ctl->svc = NULL;
	mutex_unlock(&ctl->svc_lock);
	if (!t)
		return;
	kthread_stop(t);
	put_task_struct(t);
}

/*
 * After teardown and krdma_svc_stop(): the test sees the error and ends;
 * wait for it.  No test starts after that.
 */
void krdma_test_flush(struct krdma_ctl_conn *ctl)
{
	if (ctl->st)
		flush_work(&ctl->st->work);
}

/* From the release of @ctl: nothing runs any more. */
void krdma_test_free(struct krdma_ctl_conn *ctl)
{
	kfree(ctl->st);
	ctl->st = NULL;
}

/* ---- for the benchmark (krdma_bench.c) ----------------------------- */

/**
 * krdma_peer_expose - have the peer's service thread expose memory
 * @ctl: a connection made through the control file
 * @len: bytes to expose, in one registration
 * @access: KRDMA_ACCESS_* rights
 * @sink: write-with-immediate notices to it are counted, not answered
 *	(krdma_peer_sunk())
 * @tok: the peer's token
 *
 * The self-test's reply queue is the caller's until krdma_peer_unexpose():
 * a self-test started meanwhile fails with -EBUSY, as does this while one
 * runs.
 *
 * Return: 0, -EBUSY, -E2BIG when @len needs more than one registration
 * at the peer, or the peer's or the connection's error.
 */
int krdma_peer_expose(struct krdma_ctl_conn *ctl, u64 len, int access,
		      bool sink, struct krdma_token *tok)
{
	struct krdma_conn *conn = ctl->conn;
	struct krdma_selftest *st = ctl->st;
	struct st_msg m;
	u32 i, n = 1;
	int ret;

	if (!st || !READ_ONCE(ctl->svc))
		return -EOPNOTSUPP;
	mutex_lock(&st->lock);
	if (st->running) {
		mutex_unlock(&st->lock);
		return -EBUSY;
	}
	st->running = true;
	st->timeout = ST_TIMEOUT;
	st->rhead = st->rtail;
	mutex_unlock(&st->lock);

	st_encode(&m, ST_SETUP, 0, len, 0, access, 0);
	if (sink)
		m.flags = ST_F_SINK;
	ret = st_send(conn, &m, st->timeout);
	for (i = 0; !ret && i < n; i++) {
		ret = st_wait_reply(st, &m);
		if (ret)
			break;
		if (m.op == ST_REPLY) {
			ret = -(int)be16_to_cpu(m.status) ?: -EPROTO;
			break;
		}
		n = be64_to_cpu(m.off);
		if (m.op != ST_TOKEN || !n || n > ST_MAX_REGIONS ||
		    be32_to_cpu(m.arg) != i)
			ret = -EPROTO;
		else if (!i)
			krdma_token_unpack(&m.tok, tok);
	}
	if (!ret && n > 1)
		ret = -E2BIG;
	if (ret)
		krdma_peer_unexpose(ctl);
	return ret;
}

/**
 * krdma_peer_sunk - how many notices the peer's sink took
 * @ctl: a connection whose peer exposed a sink (krdma_peer_expose())
 * @count: the number of write-with-immediate notices it counted
 *
 * Ask after the last notice completed: the request goes after them on the
 * same queue pair, so the peer has taken each of them by then.
 *
 * Return: 0, -EBADMSG if one came out of order, or the peer's or the
 * connection's error.
 */
int krdma_peer_sunk(struct krdma_ctl_conn *ctl, u64 *count)
{
	return st_request(ctl->st, ST_SUNK, 0, 0, 0, count);
}

/* Release what krdma_peer_expose() exposed, and the reply queue. */
void krdma_peer_unexpose(struct krdma_ctl_conn *ctl)
{
	struct krdma_selftest *st = ctl->st;

	if (!krdma_conn_error(ctl->conn))
		st_request(st, ST_FREE, 0, 0, 0, NULL);
	mutex_lock(&st->lock);
	st->running = false;
	mutex_unlock(&st->lock);
}

int krdma_selftest_init(void)
{
	krdma_test_wq = alloc_workqueue("krdma_test", WQ_UNBOUND, 0);
	return krdma_test_wq ? 0 : -ENOMEM;
}

void krdma_selftest_exit(void)
{
	destroy_workqueue(krdma_test_wq);
}
