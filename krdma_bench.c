// SPDX-License-Identifier: GPL-2.0
/*
 * krdma benchmark engine: "bench name=CONN op=write|read|send|imm|fadd|cas
 * size=BYTES [depth=N] [batch=N] [count=N | secs=N] [sge=N [stride=BYTES]
 * [pack=0|1]]" on the control file.
 *
 * One bench runs per connection at a time, in a work item.  It keeps up to
 * depth operations in flight (at most the connection's queue depth) and
 * verifies no data but the atomics':
 *  - write/read: krdma_rdma_batch_async() of batch transfers of one local
 *    buffer against a region the peer's service thread exposes for the run
 *    (krdma_peer_expose()): one post and one completion per batch;
 *  - send: krdma_send_async() of a zeroed message, which the peer's service
 *    thread receives and drops;
 *  - with sge=N (send and write; the scatter-gather experiment of issue
 *    #20): each operation carries N blocks of size bytes that lie stride
 *    bytes apart in one zeroed buffer, either gathered by the work request
 *    (pack=0: krdma_sendv_async() of N elements, or a write from an
 *    N-entry scatterlist) or first copied by the CPU into one buffer of the
 *    operation's own and sent as one element (pack=1); the copy is part of
 *    the operation's time;
 *  - imm: an RDMA WRITE of size bytes (none with size=0) and after it a
 *    write-with-immediate notice (krdma_imm_async()) carrying the
 *    operation's number; the operation is done when its notice is.  The
 *    peer's service thread counts the notices without answering them
 *    (a sink, krdma_peer_expose()); at the end the bench asks how many
 *    came, which must be the number that completed here, in order;
 *  - fadd/cas: krdma_atomic_fadd_async()/krdma_atomic_cas_async() on one
 *    word the peer's service thread exposes, each result checked (the only
 *    ops whose data is: every old value is known in advance).
 * Each operation is timed from its post call to its completion callback,
 * which for a transfer in a batch is the batch's (the device does not
 * signal the others); latencies go into a log-linear histogram (32 buckets
 * per power of two, so a percentile is within 3% of the true value), exact
 * minimum and maximum besides.  Several connections are benchmarked by starting one bench on
 * each; tools/bench adds their results up.
 *
 * Like the self-test, the bench is a consumer of krdma: it uses
 * include/krdma.h and nothing of the core's own headers.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/bitops.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/sysfs.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include <krdma.h>
#include "krdma_cmd.h"
#include "krdma_ctl.h"
#include "krdma_bench.h"

#define KB_TIMEOUT		(30 * HZ)
/* Local buffers are built from blocks of up to 1 MiB of contiguous pages. */
#define KB_BLOCK_ORDER		min(8, 20 - PAGE_SHIFT)

/* Histogram: values below KB_SUB exact, then KB_SUB buckets per octave. */
#define KB_SUB_BITS		5
#define KB_SUB			BIT(KB_SUB_BITS)
#define KB_HIST			((64 - KB_SUB_BITS + 1) * KB_SUB)

enum kb_op { KB_WRITE, KB_READ, KB_SEND, KB_IMM, KB_FADD, KB_CAS };

static const char * const kb_op_names[] = {
	[KB_WRITE] = "write", [KB_READ] = "read", [KB_SEND] = "send",
	[KB_IMM] = "imm", [KB_FADD] = "fadd", [KB_CAS] = "cas",
};

struct krdma_bench;

/* One operation (write/read: one batch of them) in flight. */
struct kb_slot {
	struct krdma_req	req;
	struct krdma_bench	*b;
	u64			t0;
	u32			nops;
	bool			busy;
	/* imm: the WRITE before the notice; refs: requests in flight */
	struct krdma_req	wreq;
	atomic_t		refs;
	/* fadd/cas: the value the target held before, and what it must be */
	u64			old;
	u64			want;
	/* sge=: the slot's own packed buffer, scatterlist and transfer */
	void			*pbuf;
	struct scatterlist	*sg;
	struct krdma_rdma_vec	v;
};

struct krdma_bench {
	struct krdma_ctl_conn	*ctl;		/* the owner */
	struct krdma_conn	*conn;
	struct work_struct	work;
	struct mutex		lock;		/* parameters, results, running */
	bool			running;
	enum kb_op		op;
	u32			size, count, secs, batch;
	u32			sge, stride;	/* sge=N blocks; 0: not asked */
	bool			pack;
	char			status[80];

	/* Counted by the completions, under stat_lock. */
	spinlock_t		stat_lock;
	u64			ops, bytes;
	u64			lat_min, lat_max;
	u64			t_last;		/* ns of the last completion */
	u32			*hist;

	/* Results of the last run (stat_lock too). */
	u64			usecs, p50, p99;
	/* fadd/cas: operations whose old value was not the one expected */
	u64			bad, bad_op, bad_old, bad_want;

	/* The run. */
	wait_queue_head_t	wq;
	atomic_t		inflight;
	int			wake_at;	/* wake the poster at this many */
	int			err;
	u32			window;		/* slots */
	u64			post_ns;	/* in the post calls */
	u32			sleeps;		/* the poster waited */
	struct kb_slot		*slots;
	struct sg_table		sgt;		/* write/read: local buffer */
	struct krdma_token	tok;		/* write/read/atomics: the peer's */
	u64			tok_v0;		/* atomics: the word at the start */
	struct krdma_rdma_vec	*vec;		/* write/read: a batch */
	void			*msg;		/* send: the message */
	void			*src;		/* sge=: the blocks' buffer */
	size_t			span;		/* its length */
	struct kvec		*iov;		/* sge= send: its blocks */
};

static struct workqueue_struct *krdma_bench_wq;
static DEFINE_MUTEX(krdma_bench_alloc_lock);

static u32 kb_bucket(u64 ns)
{
	u32 e;

	if (ns < KB_SUB)
		return ns;
	e = fls64(ns) - 1 - KB_SUB_BITS;
	return (e + 1) * KB_SUB + ((ns >> e) & (KB_SUB - 1));
}

/* The middle of bucket @i's range. */
static u64 kb_bucket_value(u32 i)
{
	u32 e;

	if (i < KB_SUB)
		return i;
	e = i / KB_SUB - 1;
	return ((u64)(KB_SUB + i % KB_SUB) << e) + ((1ull << e) >> 1);
}

/* The @pct percentile, kept inside [lat_min, lat_max]. */
static u64 kb_percentile(struct krdma_bench *b, u32 pct)
{
	u64 rank = div_u64(b->ops * pct + 99, 100), seen = 0, v = 0;
	u32 i;

	if (!b->ops)
		return 0;
	for (i = 0; i < KB_HIST; i++) {
		seen += b->hist[i];
		if (seen >= rank) {
			v = kb_bucket_value(i);
			break;
		}
	}
	return clamp(v, b->lat_min, b->lat_max);
}

static bool kb_atomic(const struct krdma_bench *b)
{
	return b->op == KB_FADD || b->op == KB_CAS;
}

/*
 * One request of slot @s is through: the last frees the slot (the stats
 * are in before the poster may reuse it) and wakes the poster when it
 * waits for room, or with @wake.
 */
static void kb_slot_put(struct krdma_bench *b, struct kb_slot *s, bool wake)
{
	if (!atomic_dec_and_test(&s->refs))
		goto out;
	/* Pairs with the acquires in kb_loop() and kb_can_post(). */
	smp_store_release(&s->busy, false);
	if (atomic_dec_return(&b->inflight) <= b->wake_at)
		wake = true;
out:
	/* wq_has_sleeper() orders the stores above before the check. */
	if (wake && wq_has_sleeper(&b->wq))
		wake_up(&b->wq);
}

/* Completion of one operation: softirq, or process context on errors. */
static void kb_done(struct krdma_req *req)
{
	struct kb_slot *s = container_of(req, struct kb_slot, req);
	struct krdma_bench *b = s->b;
	u64 now = ktime_get_ns(), ns = now - s->t0;
	unsigned long flags;
	bool wake = false;
	u32 len = b->op == KB_IMM ? b->size : req->len;

	if (req->status) {
		cmpxchg(&b->err, 0, req->status);
		wake = true;
	} else {
		spin_lock_irqsave(&b->stat_lock, flags);
		/* Every atomic's result is known in advance (kb_post_fadd()). */
		if (kb_atomic(b) && s->old != s->want) {
			if (!b->bad) {
				b->bad_op = s->want - b->tok_v0;
				b->bad_old = s->old;
				b->bad_want = s->want;
			}
			b->bad++;
		}
		b->ops += s->nops;
		b->bytes += len;
		if (ns < b->lat_min)
			b->lat_min = ns;
		if (ns > b->lat_max)
			b->lat_max = ns;
		b->hist[kb_bucket(ns)] += s->nops;
		b->t_last = now;
		spin_unlock_irqrestore(&b->stat_lock, flags);
	}
	kb_slot_put(b, s, wake);
}

/* imm: the WRITE before a notice; the notice's kb_done() times both. */
static void kb_wdone(struct krdma_req *req)
{
	struct kb_slot *s = container_of(req, struct kb_slot, wreq);
	struct krdma_bench *b = s->b;

	if (req->status)
		cmpxchg(&b->err, 0, req->status);
	kb_slot_put(b, s, req->status);
}

/*
 * May the poster reuse slot @s?  Once the window is full it waits until a
 * quarter of it has drained (wake_at), so that it wakes once per batch of
 * completions, not once per completion.
 */
static bool kb_can_post(struct krdma_bench *b, struct kb_slot *s)
{
	/* Pairs with the release in kb_done(). */
	return (!smp_load_acquire(&s->busy) &&
		atomic_read(&b->inflight) <= b->wake_at) ||
	       READ_ONCE(b->err);
}

static bool kb_idle(struct krdma_bench *b, struct kb_slot *s)
{
	return !atomic_read(&b->inflight);
}

/*
 * Wait for @cond with a bound: a peer that stopped answering (iWARP leaves
 * that to TCP, which takes minutes) fails the connection after KB_TIMEOUT,
 * which flushes every operation in flight.
 */
static bool kb_wait(struct krdma_bench *b,
		    bool (*cond)(struct krdma_bench *b, struct kb_slot *s),
		    struct kb_slot *s)
{
	if (krdma_wait_event_timeout(b->conn, b->wq, cond(b, s), KB_TIMEOUT))
		return true;
	pr_warn_ratelimited("%s: bench: no completion in %d s, failing the connection\n",
			    krdma_conn_name(b->conn), KB_TIMEOUT / HZ);
	krdma_conn_fail(b->conn, -ETIMEDOUT);
	krdma_wait_event_timeout(b->conn, b->wq, cond(b, s),
				 MAX_SCHEDULE_TIMEOUT);
	return false;
}

static int kb_post_rw(struct krdma_bench *b, struct kb_slot *s)
{
	return krdma_rdma_batch_async(b->conn, b->op == KB_WRITE, b->vec,
				      s->nops, &s->req, false);
}

/*
 * Send b->msg, or with @iov a message gathered from its @nr elements,
 * waiting (bounded) for the peer's credits.
 */
static int kb_send(struct krdma_bench *b, struct kb_slot *s,
		   const struct kvec *iov, int nr)
{
	struct krdma_conn *conn = b->conn;
	wait_queue_head_t *wq = krdma_conn_waitq(conn);
	int ret;

	while ((ret = iov ? krdma_sendv_async(conn, iov, nr, 0, 0, &s->req, true) :
		      krdma_send_async(conn, b->msg, b->size, &s->req,
				       true)) == -EAGAIN) {
		if (!krdma_wait_event_timeout(conn, *wq, krdma_send_ready(conn),
					      KB_TIMEOUT)) {
			pr_warn_ratelimited("%s: bench: no credit from the peer in %d s, failing the connection\n",
					    krdma_conn_name(conn),
					    KB_TIMEOUT / HZ);
			krdma_conn_fail(conn, -ETIMEDOUT);
		}
	}
	return ret;
}

static int kb_post_send(struct krdma_bench *b, struct kb_slot *s)
{
	return kb_send(b, s, NULL, 0);
}

/*
 * imm: the WRITE (its own request, a second reference on the slot), then
 * the notice numbered by the operation.  A notice takes one of the peer's
 * receives: krdma_imm_async() waits for its credit (bounded, 30 s).
 */
static int kb_post_imm(struct krdma_bench *b, struct kb_slot *s)
{
	int ret;

	if (b->size) {
		atomic_inc(&s->refs);
		ret = krdma_rdma_batch_async(b->conn, true, b->vec, 1, &s->wreq,
					     false);
		if (ret) {
			atomic_dec(&s->refs);
			return ret;
		}
	}
	return krdma_imm_async(b->conn, &b->tok, 0, (u32)s->want, &s->req,
			       false);
}

/* sge=, pack=1: the CPU copies the blocks into the slot's buffer. */
static void kb_pack(struct krdma_bench *b, struct kb_slot *s)
{
	u32 i;

	for (i = 0; i < b->sge; i++)
		memcpy(s->pbuf + i * b->size, b->src + i * b->stride, b->size);
}

static int kb_post_sg_send(struct krdma_bench *b, struct kb_slot *s)
{
	struct kvec one;

	if (!b->pack)
		return kb_send(b, s, b->iov, b->sge);
	kb_pack(b, s);
	one.iov_base = s->pbuf;
	one.iov_len = b->sge * b->size;
	return kb_send(b, s, &one, 1);
}

static int kb_post_sg_write(struct krdma_bench *b, struct kb_slot *s)
{
	if (b->pack)
		kb_pack(b, s);
	return krdma_rdma_batch_async(b->conn, true, &s->v, 1, &s->req, false);
}

/*
 * fadd adds 1 to the peer's word; cas swaps in one more than it compares
 * with.  Both see the word advance by one per operation in the order they
 * were posted (an RC QP executes them in order), so operation k finds
 * tok_v0 + k, whichever completes first: kb_done() checks it.
 */
static int kb_post_fadd(struct krdma_bench *b, struct kb_slot *s)
{
	return krdma_atomic_fadd_async(b->conn, &b->tok, 0, 1, &s->old,
				       &s->req, false);
}

static int kb_post_cas(struct krdma_bench *b, struct kb_slot *s)
{
	return krdma_atomic_cas_async(b->conn, &b->tok, 0, s->want,
				      s->want + 1, &s->old, &s->req, false);
}

/* The timed loop.  Returns 0 or the first error. */
static int kb_loop(struct krdma_bench *b)
{
	int (*post)(struct krdma_bench *b, struct kb_slot *s);
	u64 seq, t_start, deadline = 0;
	struct kb_slot *s;
	u32 idx = 0;
	int ret = 0;

	if (b->op == KB_FADD)
		post = kb_post_fadd;
	else if (b->op == KB_CAS)
		post = kb_post_cas;
	else if (b->op == KB_IMM)
		post = kb_post_imm;
	else if (b->sge)
		post = b->op == KB_SEND ? kb_post_sg_send : kb_post_sg_write;
	else
		post = b->op == KB_SEND ? kb_post_send : kb_post_rw;
	b->wake_at = b->window - max_t(u32, b->window / 4, 1);
	atomic_set(&b->inflight, 0);
	b->err = 0;
	b->post_ns = 0;
	b->sleeps = 0;

	t_start = ktime_get_ns();
	if (b->secs)
		deadline = t_start + (u64)b->secs * NSEC_PER_SEC;
	spin_lock_bh(&b->stat_lock);
	b->t_last = t_start;
	spin_unlock_bh(&b->stat_lock);

	for (seq = 0; !b->count || seq < b->count; seq += s->nops) {
		if (deadline && ktime_get_ns() >= deadline)
			break;
		s = &b->slots[idx];
		if (++idx == b->window)
			idx = 0;
		/* Pairs with the release in kb_done(). */
		if (smp_load_acquire(&s->busy)) {
			b->sleeps++;
			if (!kb_wait(b, kb_can_post, s))
				break;
		}
		ret = READ_ONCE(b->err);
		if (ret)
			break;
		s->busy = true;
		s->nops = b->batch;
		if (b->count)
			s->nops = min_t(u64, s->nops, b->count - seq);
		s->want = b->tok_v0 + seq;
		atomic_set(&s->refs, 1);
		atomic_inc(&b->inflight);
		s->t0 = ktime_get_ns();
		ret = post(b, s);
		b->post_ns += ktime_get_ns() - s->t0;
		if (ret) {
			/* imm: a WRITE posted before its notice failed holds on */
			kb_slot_put(b, s, false);
			break;
		}
	}
	kb_wait(b, kb_idle, NULL);

	spin_lock_bh(&b->stat_lock);
	b->usecs = div_u64(b->t_last - t_start, NSEC_PER_USEC);
	spin_unlock_bh(&b->stat_lock);
	return ret ?: READ_ONCE(b->err) ?: krdma_conn_error(b->conn);
}

static void kb_buf_free(struct krdma_bench *b)
{
	struct scatterlist *sg;
	int i;

	if (!b->sgt.sgl)
		return;
	for_each_sg(b->sgt.sgl, sg, b->sgt.orig_nents, i)
		if (sg_page(sg))
			__free_pages(sg_page(sg), get_order(sg->length));
	sg_free_table(&b->sgt);
	memset(&b->sgt, 0, sizeof(b->sgt));
}

/*
 * The local buffer of a write/read bench: blocks of up to 1 MiB of
 * contiguous pages (so a 1 MiB operation is one SGE, as perftest's is),
 * single pages if memory is too fragmented for that.
 */
static int kb_buf_alloc(struct krdma_bench *b)
{
	u32 order = min_t(u32, get_order(b->size), KB_BLOCK_ORDER), n, i;
	struct scatterlist *sg;
	struct page *page;
	u32 left, len;

retry:
	n = DIV_ROUND_UP(b->size, PAGE_SIZE << order);
	if (sg_alloc_table(&b->sgt, n, GFP_KERNEL))
		return -ENOMEM;
	left = b->size;
	for_each_sg(b->sgt.sgl, sg, n, i) {
		len = min_t(u32, left, PAGE_SIZE << order);
		page = alloc_pages(GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN,
				   get_order(len));
		if (!page) {
			kb_buf_free(b);
			if (!order)
				return -ENOMEM;
			order = 0;
			goto retry;
		}
		sg_set_page(sg, page, len, 0);
		left -= len;
	}
	return 0;
}

static int kb_run_rw(struct krdma_bench *b)
{
	u32 depth = krdma_queue_depth(b->conn);
	u32 chunk = krdma_rdma_chunk_size(b->conn), per_op, i;
	int ret;

	ret = kb_buf_alloc(b);
	if (ret)
		return ret;
	ret = krdma_peer_expose(b->ctl, b->size,
				b->op == KB_WRITE ? KRDMA_ACCESS_REMOTE_WRITE :
						    KRDMA_ACCESS_REMOTE_READ,
				false, &b->tok);
	if (ret == -E2BIG)
		snprintf(b->status, sizeof(b->status),
			 "failed: size is more than one peer registration spans");
	if (ret)
		goto out_buf;
	/*
	 * Each transfer takes one queue-depth slot per chunk; a slot of the
	 * bench is a batch.  (Fewer slots than were allocated, never more.)
	 */
	per_op = DIV_ROUND_UP(b->size, chunk);
	b->batch = clamp_t(u32, b->batch, 1, max_t(u32, depth / per_op, 1));
	b->window = clamp_t(u32, b->window / b->batch, 1,
			    max_t(u32, depth / (per_op * b->batch), 1));
	ret = -ENOMEM;
	b->vec = kcalloc(b->batch, sizeof(*b->vec), GFP_KERNEL);
	if (b->vec) {
		for (i = 0; i < b->batch; i++) {
			b->vec[i].sg = b->sgt.sgl;
			b->vec[i].nents = b->sgt.orig_nents;
			b->vec[i].token = &b->tok;
		}
		ret = kb_loop(b);
	}
	kfree(b->vec);
	b->vec = NULL;
	krdma_peer_unexpose(b->ctl);
out_buf:
	kb_buf_free(b);
	return ret;
}

static int kb_run_send(struct krdma_bench *b)
{
	int ret;

	/* Zeroes: no self-test magic, so the peer's service thread drops it. */
	b->msg = kvzalloc(max_t(u32, b->size, 1), GFP_KERNEL);
	if (!b->msg)
		return -ENOMEM;
	ret = kb_loop(b);
	kvfree(b->msg);
	b->msg = NULL;
	return ret;
}

/*
 * imm: the peer's service exposes size bytes (8 with size=0: a notice
 * names a region too) as a sink; what it counted must be every notice
 * that completed here.
 */
static int kb_run_imm(struct krdma_bench *b)
{
	u32 depth = krdma_queue_depth(b->conn), per_op = 1;
	struct krdma_rdma_vec v = {};
	u64 sunk = 0;
	int ret;

	if (b->size) {
		ret = kb_buf_alloc(b);
		if (ret)
			return ret;
		v.sg = b->sgt.sgl;
		v.nents = b->sgt.orig_nents;
		v.token = &b->tok;
		b->vec = &v;
		per_op += DIV_ROUND_UP(b->size, krdma_rdma_chunk_size(b->conn));
	}
	ret = krdma_peer_expose(b->ctl, max_t(u32, b->size, sizeof(u64)),
				KRDMA_ACCESS_REMOTE_WRITE, true, &b->tok);
	if (ret == -E2BIG)
		snprintf(b->status, sizeof(b->status),
			 "failed: size is more than one peer registration spans");
	if (ret)
		goto out_buf;
	/* A slot is a WRITE's chunks and its notice. */
	b->window = clamp_t(u32, b->window, 1, max_t(u32, depth / per_op, 1));
	b->tok_v0 = 0;
	ret = kb_loop(b);
	if (!ret) {
		ret = krdma_peer_sunk(b->ctl, &sunk);
		if (ret == -EBADMSG)
			snprintf(b->status, sizeof(b->status),
				 "failed: the peer took notices out of order");
		else if (!ret && sunk != b->ops) {
			snprintf(b->status, sizeof(b->status),
				 "failed: the peer took %llu notices, %llu completed",
				 sunk, b->ops);
			ret = -EILSEQ;
		}
	}
	krdma_peer_unexpose(b->ctl);
out_buf:
	b->vec = NULL;
	kb_buf_free(b);
	return ret;
}

/*
 * fadd/cas on one 8-byte word the peer's service thread exposes; a first
 * fetch-add of 0, not timed, reads what it holds.
 */
static int kb_run_atomic(struct krdma_bench *b)
{
	int ret;

	ret = krdma_peer_expose(b->ctl, sizeof(u64),
				KRDMA_ACCESS_REMOTE_ATOMIC, false, &b->tok);
	if (ret)
		return ret;
	ret = krdma_atomic_fadd(b->conn, &b->tok, 0, 0, &b->tok_v0, KB_TIMEOUT);
	if (!ret)
		ret = kb_loop(b);
	if (!ret && b->bad) {
		snprintf(b->status, sizeof(b->status),
			 "failed: %llu results wrong, op %llu found %llu, not %llu",
			 b->bad, b->bad_op, b->bad_old, b->bad_want);
		ret = -EILSEQ;
	}
	krdma_peer_unexpose(b->ctl);
	return ret;
}

static void kb_sg_free(struct krdma_bench *b)
{
	u32 i, len = b->sge * b->size;

	for (i = 0; i < b->window; i++) {
		struct kb_slot *s = &b->slots[i];

		if (s->pbuf)
			free_pages_exact(s->pbuf, len);
		kfree(s->sg);
		s->pbuf = NULL;
		s->sg = NULL;
	}
	kfree(b->iov);
	b->iov = NULL;
	if (b->src)
		free_pages_exact(b->src, b->span);
	b->src = NULL;
}

/*
 * sge=: the blocks' buffer and, per slot, its own scatterlist (a write's
 * is mapped while it is in flight) and with pack=1 its own buffer; all in
 * the linear map, so a gather send goes out without a copy where it can.
 */
static int kb_sg_alloc(struct krdma_bench *b)
{
	const gfp_t gfp = GFP_KERNEL | __GFP_ZERO | __GFP_NOWARN;
	u32 i, j, len = b->sge * b->size;

	b->span = (size_t)(b->sge - 1) * b->stride + b->size;
	b->src = alloc_pages_exact(b->span, gfp);
	if (!b->src)
		return -ENOMEM;
	if (b->op == KB_SEND && !b->pack) {
		b->iov = kcalloc(b->sge, sizeof(*b->iov), GFP_KERNEL);
		if (!b->iov)
			return -ENOMEM;
		for (i = 0; i < b->sge; i++) {
			b->iov[i].iov_base = b->src + i * b->stride;
			b->iov[i].iov_len = b->size;
		}
	}
	for (i = 0; i < b->window; i++) {
		struct kb_slot *s = &b->slots[i];

		if (b->pack) {
			s->pbuf = alloc_pages_exact(len, gfp);
			if (!s->pbuf)
				return -ENOMEM;
		}
		if (b->op != KB_WRITE)
			continue;
		s->sg = kcalloc(b->pack ? 1 : b->sge, sizeof(*s->sg),
				GFP_KERNEL);
		if (!s->sg)
			return -ENOMEM;
		if (b->pack) {
			sg_init_one(s->sg, s->pbuf, len);
			s->v.nents = 1;
		} else {
			sg_init_table(s->sg, b->sge);
			for (j = 0; j < b->sge; j++)
				sg_set_buf(&s->sg[j], b->src + j * b->stride,
					   b->size);
			s->v.nents = b->sge;
		}
		s->v.sg = s->sg;
		s->v.token = &b->tok;
	}
	return 0;
}

/* sge=: as kb_run_rw() and kb_run_send(), from strided blocks. */
static int kb_run_sg(struct krdma_bench *b)
{
	u32 len = b->sge * b->size;
	int ret;

	if (b->op == KB_WRITE) {
		u32 depth = krdma_queue_depth(b->conn);
		u32 per_op = DIV_ROUND_UP(len, krdma_rdma_chunk_size(b->conn));

		b->window = clamp_t(u32, b->window, 1,
				    max_t(u32, depth / per_op, 1));
		ret = krdma_peer_expose(b->ctl, len, KRDMA_ACCESS_REMOTE_WRITE,
					false, &b->tok);
		if (ret == -E2BIG)
			snprintf(b->status, sizeof(b->status),
				 "failed: sge * size is more than one peer registration spans");
		if (ret)
			return ret;
	}
	ret = kb_sg_alloc(b);
	if (!ret)
		ret = kb_loop(b);
	kb_sg_free(b);
	if (b->op == KB_WRITE)
		krdma_peer_unexpose(b->ctl);
	return ret;
}

static void kb_work(struct work_struct *work)
{
	struct krdma_bench *b = container_of(work, struct krdma_bench, work);
	struct krdma_conn *conn = b->conn;
	int ret = -ENOMEM;
	u32 i;

	b->slots = kcalloc(b->window, sizeof(*b->slots), GFP_KERNEL);
	if (b->slots) {
		for (i = 0; i < b->window; i++) {
			b->slots[i].b = b;
			b->slots[i].req.done = kb_done;
			b->slots[i].wreq.done = kb_wdone;
		}
		if (kb_atomic(b))
			ret = kb_run_atomic(b);
		else if (b->op == KB_IMM)
			ret = kb_run_imm(b);
		else if (b->sge)
			ret = kb_run_sg(b);
		else if (b->op == KB_SEND)
			ret = kb_run_send(b);
		else
			ret = kb_run_rw(b);
	}
	kfree(b->slots);
	b->slots = NULL;

	mutex_lock(&b->lock);
	spin_lock_bh(&b->stat_lock);
	if (!b->ops)
		b->lat_min = 0;
	b->p50 = kb_percentile(b, 50);
	b->p99 = kb_percentile(b, 99);
	spin_unlock_bh(&b->stat_lock);
	if (!ret)
		strscpy(b->status, "passed", sizeof(b->status));
	else if (strncmp(b->status, "failed", 6))
		snprintf(b->status, sizeof(b->status), "failed: %d", ret);
	b->running = false;
	mutex_unlock(&b->lock);
	pr_info_ratelimited("%s: bench %s size=%u depth=%u batch=%u sge=%u pack=%u: %s, %llu ops in %llu us (posting %llu ns/op, %u waits)\n",
			    krdma_conn_name(conn), kb_op_names[b->op], b->size,
			    b->window * b->batch, b->batch, max_t(u32, b->sge, 1),
			    b->pack, b->status,
			    b->ops, b->usecs,
			    b->ops ? div64_u64(b->post_ns, b->ops) : 0,
			    b->sleeps);
	krdma_ctl_put(b->ctl);
}

static struct krdma_bench *kb_get(struct krdma_ctl_conn *ctl)
{
	struct krdma_bench *b;

	mutex_lock(&krdma_bench_alloc_lock);
	b = ctl->bench;
	if (b)
		goto out;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		goto out;
	b->hist = kvcalloc(KB_HIST, sizeof(*b->hist), GFP_KERNEL);
	if (!b->hist) {
		kfree(b);
		b = NULL;
		goto out;
	}
	b->ctl = ctl;
	b->conn = ctl->conn;
	mutex_init(&b->lock);
	spin_lock_init(&b->stat_lock);
	init_waitqueue_head(&b->wq);
	INIT_WORK(&b->work, kb_work);
	/* Initialised before readers of ctl->bench (no lock) see it. */
	smp_store_release(&ctl->bench, b);
out:
	mutex_unlock(&krdma_bench_alloc_lock);
	return b;
}

/* Under ctl->svc_lock, as st_start() (krdma_selftest.c) and for its reasons. */
static int kb_start(struct krdma_ctl_conn *ctl, const struct krdma_cmd *cmd)
{
	struct krdma_conn *conn = ctl->conn;
	struct krdma_bench *b;
	enum kb_op op;
	int ret;

	if (!ctl->st || !ctl->svc) {
		pr_warn_ratelimited("bench: %s: no service thread on this connection\n",
				    krdma_conn_name(conn));
		return -EOPNOTSUPP;
	}
	ret = krdma_conn_error(conn);
	if (ret) {
		pr_warn_ratelimited("bench: %s: connection is down: %d\n",
				    krdma_conn_name(conn), ret);
		return ret;
	}
	switch (cmd->test_ops) {
	case KRDMA_TEST_WRITE:
		op = KB_WRITE;
		break;
	case KRDMA_TEST_READ:
		op = KB_READ;
		break;
	case KRDMA_TEST_SEND:
		op = KB_SEND;
		break;
	case KRDMA_TEST_IMM:
		op = KB_IMM;
		break;
	case KRDMA_TEST_FADD:
		op = KB_FADD;
		break;
	case KRDMA_TEST_CAS:
		op = KB_CAS;
		break;
	default:
		pr_warn_ratelimited("bench: %s: takes one op: write, read, send, imm, fadd or cas\n",
				    krdma_conn_name(conn));
		return -EINVAL;
	}
	if (op == KB_SEND &&
	    (u64)max_t(u32, cmd->sge, 1) * cmd->size > krdma_max_msg_size(conn)) {
		pr_warn_ratelimited("%s: bench size %u (times sge=%u) is more than the connection's %u-byte messages\n",
				    krdma_conn_name(conn), cmd->size,
				    max_t(u32, cmd->sge, 1),
				    krdma_max_msg_size(conn));
		return -EMSGSIZE;
	}
	if ((op == KB_FADD || op == KB_CAS) && !krdma_conn_has_atomics(conn)) {
		pr_warn_ratelimited("bench: %s: %s has no atomics\n",
				    krdma_conn_name(conn),
				    krdma_conn_device_name(conn));
		return -EOPNOTSUPP;
	}
	if (op != KB_SEND && op != KB_IMM && !cmd->size) {
		pr_warn_ratelimited("bench: %s: size=0 works only with op=send and op=imm\n",
				    krdma_conn_name(conn));
		return -EINVAL;
	}
	if ((op == KB_SEND || op == KB_IMM) && cmd->batch > 1) {
		pr_warn_ratelimited("%s: bench batch= works with op=write and op=read\n",
				    krdma_conn_name(conn));
		return -EINVAL;
	}
	if (op == KB_IMM && krdma_conn_is_iwarp(conn)) {
		pr_warn_ratelimited("bench: %s: %s has no immediate data (iWARP)\n",
				    krdma_conn_name(conn),
				    krdma_conn_device_name(conn));
		return -EOPNOTSUPP;
	}

	b = kb_get(ctl);
	if (!b) {
		pr_warn_ratelimited("bench: %s: no memory for the bench\n",
				    krdma_conn_name(conn));
		return -ENOMEM;
	}
	mutex_lock(&b->lock);
	if (b->running) {
		pr_warn_ratelimited("bench: %s: a bench runs on it already\n",
				    krdma_conn_name(conn));
		ret = -EBUSY;
		goto out;
	}
	b->running = true;
	b->op = op;
	b->size = cmd->size;
	b->count = cmd->count;
	b->secs = cmd->secs;
	b->window = min_not_zero(cmd->depth, krdma_queue_depth(conn));
	b->batch = max_t(u32, cmd->batch, 1);
	b->sge = cmd->sge;
	b->stride = cmd->stride;
	b->pack = cmd->pack;
	spin_lock_bh(&b->stat_lock);
	b->ops = 0;
	b->bytes = 0;
	b->usecs = 0;
	b->lat_min = U64_MAX;
	b->lat_max = 0;
	b->bad = 0;
	b->p50 = 0;
	b->p99 = 0;
	memset(b->hist, 0, KB_HIST * sizeof(*b->hist));
	spin_unlock_bh(&b->stat_lock);
	strscpy(b->status, "running", sizeof(b->status));
	krdma_ctl_get(ctl);	/* the work's */
	queue_work(krdma_bench_wq, &b->work);
out:
	mutex_unlock(&b->lock);
	return ret;
}

/**
 * krdma_bench_start - start a benchmark on a connection of the control file
 * @ctl: the connection, as the control file holds it
 * @cmd: the parsed "bench" command
 *
 * Return: 0 once started (results in bench_*), -EBUSY if a bench or the
 * self-test runs on it, -EMSGSIZE for a send larger than the connection's
 * messages, -EOPNOTSUPP without a service thread, or the connection's
 * error.
 */
int krdma_bench_start(struct krdma_ctl_conn *ctl, const struct krdma_cmd *cmd)
{
	int ret;

	mutex_lock(&ctl->svc_lock);
	ret = kb_start(ctl, cmd);
	mutex_unlock(&ctl->svc_lock);
	return ret;
}

/* bench_bw_mbps: MiB/s (perftest's "MB/sec") with two decimals. */
static u64 kb_bw_centi(struct krdma_bench *b)
{
	if (!b->usecs)
		return 0;
	return mul_u64_u64_div_u64(b->bytes, 100 * USEC_PER_SEC,
				   b->usecs << 20);
}

ssize_t krdma_bench_show(struct krdma_ctl_conn *ctl, int what, char *buf)
{
	/* Pairs with the release in kb_get(). */
	struct krdma_bench *b = smp_load_acquire(&ctl->bench);
	ssize_t n;
	u64 v = 0;

	if (!b)
		return sysfs_emit(buf, what == KB_SHOW_STATUS ? "idle\n" :
				  what == KB_SHOW_BW ? "0.00\n" : "0\n");
	mutex_lock(&b->lock);
	if (what == KB_SHOW_STATUS) {
		n = sysfs_emit(buf, "%s\n", b->status[0] ? b->status : "idle");
		goto out;
	}
	spin_lock_bh(&b->stat_lock);
	/* Counts are live; the rest is of the last finished run. */
	if (what == KB_SHOW_OPS)
		v = b->ops;
	else if (what == KB_SHOW_BYTES)
		v = b->bytes;
	else if (b->running)
		v = 0;
	else if (what == KB_SHOW_USECS)
		v = b->usecs;
	else if (what == KB_SHOW_BW)
		v = kb_bw_centi(b);
	else if (what == KB_SHOW_RATE)
		v = b->usecs ? div64_u64(b->ops * USEC_PER_SEC, b->usecs) : 0;
	else if (what == KB_SHOW_LAT_MIN)
		v = b->lat_min;
	else if (what == KB_SHOW_LAT_P50)
		v = b->p50;
	else if (what == KB_SHOW_LAT_P99)
		v = b->p99;
	else
		v = b->lat_max;
	spin_unlock_bh(&b->stat_lock);
	if (what == KB_SHOW_BW) {
		u32 centi;
		u64 whole = div_u64_rem(v, 100, &centi);

		n = sysfs_emit(buf, "%llu.%02u\n", whole, centi);
	} else {
		n = sysfs_emit(buf, "%llu\n", v);
	}
out:
	mutex_unlock(&b->lock);
	return n;
}

/*
 * After teardown and krdma_svc_stop(): a running bench sees the error and
 * ends; wait for it.  No bench starts after that.
 */
void krdma_bench_flush(struct krdma_ctl_conn *ctl)
{
	/* Pairs with the release in kb_get(). */
	struct krdma_bench *b = smp_load_acquire(&ctl->bench);

	if (b)
		flush_work(&b->work);
}

/* From the release of @ctl: nothing runs any more. */
void krdma_bench_free(struct krdma_ctl_conn *ctl)
{
	struct krdma_bench *b = ctl->bench;

	if (!b)
		return;
	kvfree(b->hist);
	kfree(b);
	ctl->bench = NULL;
}

int krdma_bench_init(void)
{
	krdma_bench_wq = alloc_workqueue("krdma_bench", WQ_UNBOUND, 0);
	return krdma_bench_wq ? 0 : -ENOMEM;
}

void krdma_bench_exit(void)
{
	destroy_workqueue(krdma_bench_wq);
}
