// SPDX-License-Identifier: GPL-2.0
/*
 * krdma-blk server: exports a local block device on an address.
 *
 * A connection's first message is a HELLO naming the export; the reply
 * gives its geometry.  Then each command arrives in the recv callback: it
 * is copied into one of the connection's queue-depth I/O slots and
 * started.  Nothing waits for the client or for the device on the way;
 * each step starts the next from its completion:
 *
 *   WRITE: pages, RDMA READ of the data from the client's token
 *          -> READ done: the bio over those very pages -> end_io: the reply
 *   in-capsule WRITE (the data came in the command's message, at most
 *          KRDMA_BLK_INCAPSULE_MAX bytes): pages, the data copied into them
 *          from the message (kept by the recv callback until then), the
 *          bio -> end_io: the reply (a plain SEND: no token to end)
 *   READ:  pages, the RDMA WRITE prepared (krdma_rdma_prep()), the bio
 *          -> end_io: the RDMA WRITE posted, the reply right behind it in
 *          the send queue -> WRITE done: pages and slot free
 *
 * Where the steps run: by default the connections take their completions
 * in softirq, and every step that needs process context (a command's
 * start, a WRITE's bio) goes to the command's work item, one hand-off
 * each, on the export's unbound workers, which spread a deep queue over
 * the CPUs; or, with hipri_depth set (0, off, by default), a READ or
 * WRITE of a queue at most that deep (the client's count in the command,
 * or the server's of commands unanswered) goes to a high-priority worker
 * of the CPU whose completion queues it, so that no idle CPU is woken for
 * it.  An export made with "wq" takes them in the completion
 * workqueue (opts.workqueue, as nvmet-rdma's IB_POLL_WORKQUEUE queues), so
 * a READ or WRITE can start in its recv callback and a WRITE's bio go
 * from its RDMA READ's completion, in process context, with no hand-off.
 * They do while the connection's queue is shallow (at most inline_depth
 * commands unanswered, 1 by default); a deeper queue hands them to the
 * work item, which spreads them over the CPUs, where the completion work
 * of the device's CQ runs on one.  make bench measured both (README): the
 * workqueue's wake-ups cost more at depth than the hand-offs they save.
 * Nothing in a completion waits for one: the RDMA is posted with nowait,
 * and a command that finds no RDMA slot goes to its work item, which may
 * wait.
 *
 * The reply is a SEND_WITH_INV of the token's rkey: the client's pages are
 * its own again when the reply arrives.  Since a READ's slot outlives its
 * reply, a connection has twice its queue depth of slots; the client's
 * commands not yet answered are held to the queue depth.  A reply that finds no credit
 * waits in a work item.  An end_io in hardirq context hands over to the
 * work item (krdma posts from softirq at most).  FLUSH, DISCARD and
 * WRITE_ZEROES are rare and wait for the device in the work item.
 *
 * A command with no free slot (a client past the queue depth) fails the
 * connection: a peer cannot make the server allocate without bound.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/workqueue.h>
#include <linux/wait.h>
#include <linux/string.h>
#include <linux/moduleparam.h>
#include <linux/spinlock.h>
#include <linux/delay.h>
#include <linux/sched/mm.h>

#include <krdma.h>
#include "krdma_blk.h"
#include "krdma_blk_proto.h"
#include "krdma_blk_compat.h"

#define KRDMA_BLK_MAX_PAGES	(KRDMA_BLK_MAX_IO / PAGE_SIZE)

/*
 * The connections an export holds at most (its listener's backlog, which
 * counts every connection it handed over until it is closed): four
 * clients of 16 queues each (KRDMA_BLK_MAX_QUEUES, krdma_blk_main.c),
 * where krdma's default of 16 would let one client's map take them all.  Each costs twice its queue
 * depth of command slots (about 10 KiB each) while it lasts.
 */
#define KRDMA_BLK_EXPORT_CONNS	64

/*
 * How deep a connection's queue may be for a command to start in the
 * completion that brought it.  Inline saves a hand-off per step, which is
 * what a shallow queue waits on; a deep queue gains more from the export's
 * unbound work item, which spreads its commands over the CPUs, where the
 * completion work of the device's CQ runs on one.
 */
static unsigned int krdma_blk_inline_depth = 1;
module_param_named(inline_depth, krdma_blk_inline_depth, uint, 0644);
MODULE_PARM_DESC(inline_depth,
		 "A server starts a READ or WRITE in its recv callback while its connection has at most this many commands unanswered, the new one included (default 1; 0: never)");

/*
 * How deep a connection's queue may be for a command's work to go to this
 * CPU's high-priority worker rather than to the export's unbound ones.
 * The CPU's own worker runs as soon as the completion that queued it is
 * over, where an unbound one is woken on whichever CPU the scheduler
 * picks, an idle one at QD1, which a virtual machine wakes slowly (as
 * nvmet-rdma's completions in ib_comp_wq, WQ_HIGHPRI and per CPU); a deep
 * queue gains more from the spread.  The depth is the client's, carried
 * in each command (krdma_blk_cmd.qd), or the server's count of commands
 * unanswered if that is more (a server that answers faster than the
 * device delivers counts few under a deep client).  Off by default: in
 * one guest over rxe loopback the server's work then runs on the CPU
 * that submitted the command, the submitter waits for it, and the
 * client's queue itself stays one deep (make bench, 6.1: random read at
 * QD32 0.48x of the unbound hand-off's rate, README).  For latency-bound
 * users (QD1).
 */
static unsigned int krdma_blk_hipri_depth;
module_param_named(hipri_depth, krdma_blk_hipri_depth, uint, 0644);
MODULE_PARM_DESC(hipri_depth,
		 "A server hands a READ's or WRITE's work to the CPU's high-priority worker while its queue is at most this deep: the client's count in the command, or the commands unanswered, the new one included (default 0: never)");

/*
 * How long a new connection may go without its HELLO: a client that
 * connects and says nothing would hold one of the export's connections
 * (KRDMA_BLK_EXPORT_CONNS) for as long as it likes.
 */
static unsigned int krdma_blk_hello_timeout_ms = 10000;
module_param_named(hello_timeout_ms, krdma_blk_hello_timeout_ms, uint, 0644);
MODULE_PARM_DESC(hello_timeout_ms,
		 "A server closes a connection whose HELLO has not come this many milliseconds after it was set up (default 10000; at least 100)");

/* Tests only: the next N replies to commands are not sent. */
static int krdma_blk_test_drop_replies;
module_param_named(test_drop_replies, krdma_blk_test_drop_replies, int, 0644);
MODULE_PARM_DESC(test_drop_replies,
		 "Tests only: do not send the next N replies to I/O commands, as a server that never answers");
static DEFINE_SPINLOCK(krdma_blk_test_lock);

/*
 * Tests only: a HELLO is answered this much later; past the client's 10 s,
 * a greeting that always times out (test/guest/blk-reexport.sh).
 */
#define KRDMA_BLK_TEST_HELLO_DELAY_MAX	20000U
static unsigned int krdma_blk_test_hello_delay_ms;
module_param_named(test_hello_delay_ms, krdma_blk_test_hello_delay_ms, uint,
		   0644);
MODULE_PARM_DESC(test_hello_delay_ms,
		 "Tests only: answer each HELLO this many milliseconds late (at most 20000)");

/*
 * Tests only: every Nth reply finds no credit and goes from the reply
 * work item; test_reply_busy_seen counts them, and test_hardirq_ends the
 * bios that ended in hardirq context and went on from the work item.
 */
static struct krdma_blk_every krdma_blk_test_reply_busy;
module_param_named(test_reply_busy_every,
		   krdma_blk_test_reply_busy.every, uint, 0644);
MODULE_PARM_DESC(test_reply_busy_every,
		 "Tests only: every Nth reply to a command finds no send credit (0: off)");
module_param_cb(test_reply_busy_seen, &krdma_blk_counter_ops,
		&krdma_blk_test_reply_busy.seen, 0444);
MODULE_PARM_DESC(test_reply_busy_seen,
		 "Tests only: replies test_reply_busy_every held back so far");
static atomic_t krdma_blk_test_hardirq_ends = ATOMIC_INIT(0);
module_param_cb(test_hardirq_ends, &krdma_blk_counter_ops,
		&krdma_blk_test_hardirq_ends, 0444);
MODULE_PARM_DESC(test_hardirq_ends,
		 "Tests only: bios of the server that ended in hardirq context, so far");

/*
 * Tests only: every Nth READ or WRITE started in its completion finds no
 * RDMA slot (as -EAGAIN from a full connection) and goes on from the work
 * item; test_start_busy_seen counts them.
 */
static struct krdma_blk_every krdma_blk_test_start_busy;
module_param_named(test_start_busy_every,
		   krdma_blk_test_start_busy.every, uint, 0644);
MODULE_PARM_DESC(test_start_busy_every,
		 "Tests only: every Nth READ or WRITE started in its completion finds no RDMA slot (0: off)");
module_param_cb(test_start_busy_seen, &krdma_blk_counter_ops,
		&krdma_blk_test_start_busy.seen, 0444);
MODULE_PARM_DESC(test_start_busy_seen,
		 "Tests only: starts test_start_busy_every sent to the work item so far");

/*
 * Tests only: commands started in the completion (opts.workqueue), and
 * WRITE bios submitted from their RDMA READ's completion, so far.
 */
static atomic_t krdma_blk_test_inline_starts = ATOMIC_INIT(0);
module_param_cb(test_inline_starts, &krdma_blk_counter_ops,
		&krdma_blk_test_inline_starts, 0444);
MODULE_PARM_DESC(test_inline_starts,
		 "Tests only: READs and WRITEs the server started in their recv callback, so far");
static atomic_t krdma_blk_test_hipri_cmds = ATOMIC_INIT(0);
module_param_cb(test_hipri_cmds, &krdma_blk_counter_ops,
		&krdma_blk_test_hipri_cmds, 0444);
MODULE_PARM_DESC(test_hipri_cmds,
		 "Tests only: READs and WRITEs the server started on a CPU's high-priority worker (hipri_depth), so far");
static atomic_t krdma_blk_test_incapsule_writes = ATOMIC_INIT(0);
module_param_cb(test_incapsule_writes, &krdma_blk_counter_ops,
		&krdma_blk_test_incapsule_writes, 0444);
MODULE_PARM_DESC(test_incapsule_writes,
		 "Tests only: WRITEs whose data came in the command (in-capsule) the server submitted, so far");
static atomic_t krdma_blk_test_inline_submits = ATOMIC_INIT(0);
module_param_cb(test_inline_submits, &krdma_blk_counter_ops,
		&krdma_blk_test_inline_submits, 0444);
MODULE_PARM_DESC(test_inline_submits,
		 "Tests only: WRITE bios the server submitted from their data's completion, so far");

/* Tests only: is this reply one to drop? */
static bool krdma_blk_test_drop(void)
{
	bool drop = false;

	spin_lock_bh(&krdma_blk_test_lock);
	if (krdma_blk_test_drop_replies > 0) {
		krdma_blk_test_drop_replies--;
		drop = true;
	}
	spin_unlock_bh(&krdma_blk_test_lock);
	return drop;
}

struct krdma_blk_export {
	char			name[KRDMA_BLK_NAME_LEN];
	bool			ro;
	bool			inline_io;	/* steps run in completions */
	struct krdma_blk_bdev	bd;
	struct krdma_listener	*l;
	struct workqueue_struct	*wq;		/* unbound */
	struct workqueue_struct	*hiwq;		/* per CPU, WQ_HIGHPRI */
	struct mutex		lock;		/* @conns, @dying */
	struct list_head	conns;
	bool			dying;
	/* What a HELLO reply says. */
	u64			sectors;
	u32			lbs;
	u32			max_sectors;
	u32			max_discard;
	u32			xflags;
};

struct krdma_blk_sconn;

/* Where a command's work item takes it up. */
enum krdma_blk_sio_stage {
	KRDMA_BLK_SIO_START,	/* a new command */
	KRDMA_BLK_SIO_SUBMIT,	/* a WRITE's data is in: its bio */
	KRDMA_BLK_SIO_BIO_DONE,	/* its bio ended in hardirq context */
};

/* One command being served. */
struct krdma_blk_sio {
	struct list_head	free;
	struct krdma_blk_sconn	*sc;
	struct work_struct	work;
	struct workqueue_struct	*wq;		/* @work's, for the command */
	u32			qd;		/* the client's queue depth, or ours */
	union {
		struct krdma_blk_hdr	hdr;
		struct krdma_blk_hello	hello;
		struct krdma_blk_cmd	cmd;
	} msg;
	enum krdma_blk_sio_stage stage;
	int			status;		/* the bio's */
	struct krdma_token	tok;		/* READ, WRITE: the client's */
	struct krdma_msg	*capsule;	/* an in-capsule WRITE's, kept */
	struct krdma_req	req;		/* the RDMA transfer's */
	struct krdma_rdma	*rdma;		/* a READ's, until its bio ends */
	struct krdma_blk_resp	resp;
	unsigned int		npages;
	struct page		*pages[KRDMA_BLK_MAX_PAGES];
	struct scatterlist	sg[KRDMA_BLK_MAX_PAGES];
};

/* A reply waiting for a credit. */
struct krdma_blk_reply {
	struct krdma_blk_resp	r;
	u32			rkey;		/* to invalidate, or 0 */
};

/* One client connection of an export. */
struct krdma_blk_sconn {
	struct list_head	list;		/* in exp->conns */
	struct krdma_blk_export	*exp;
	struct krdma_conn	*conn;
	spinlock_t		lock;		/* below, but @list */
	struct list_head	free;
	u32			depth;		/* the client's queue depth */
	u32			unanswered;	/* commands not yet replied to */
	u32			inflight;	/* commands, data out, reply_work */
	bool			greeted;	/* its HELLO came */
	bool			hello_ok;	/* and named this export */
	bool			closing;	/* takes no more; close queued */
	wait_queue_head_t	wait;		/* @inflight reached 0 */
	struct work_struct	close_work;
	struct work_struct	reply_work;
	struct delayed_work	hello_work;	/* no HELLO in time: close */
	u32			hello_ms;	/* the time it was given */
	unsigned long		hello_by;	/* jiffies: its deadline */
	u32			hellos_refused;	/* another export's name */
	u32			npending;
	struct krdma_blk_reply	*pending;	/* @depth of them */
	u32			nios;		/* 2 * @depth */
	struct krdma_blk_sio	*ios;
};

static void krdma_blk_sconn_close_work(struct work_struct *work);
static void krdma_blk_hello_work(struct work_struct *work);
static void krdma_blk_sio_work(struct work_struct *work);
static void krdma_blk_reply_work(struct work_struct *work);

/*
 * Stop taking commands and, unless already done, fail @sc's connection
 * (a client that broke the protocol is stopped at once, and a reply
 * waiting for a credit it will never give wakes up) and close @sc from a
 * work item.  Context: any up to softirq.
 */
static void krdma_blk_sconn_fail(struct krdma_blk_sconn *sc)
{
	bool queue;

	spin_lock_bh(&sc->lock);
	queue = !sc->closing;
	sc->closing = true;
	spin_unlock_bh(&sc->lock);
	if (!queue)
		return;
	krdma_conn_fail(sc->conn, -ECONNABORTED);
	queue_work(sc->exp->wq, &sc->close_work);
}

static bool krdma_blk_sconn_closing(struct krdma_blk_sconn *sc)
{
	bool closing;

	spin_lock_bh(&sc->lock);
	closing = sc->closing;
	spin_unlock_bh(&sc->lock);
	return closing;
}

static bool krdma_blk_sconn_idle(struct krdma_blk_sconn *sc)
{
	bool idle;

	spin_lock_bh(&sc->lock);
	idle = !sc->inflight;
	spin_unlock_bh(&sc->lock);
	return idle;
}

/*
 * @sc is off the export's list: fail its connection, so that what is still
 * out ends now, wait for its work, and free it.
 */
static void krdma_blk_sconn_teardown(struct krdma_blk_sconn *sc,
				     bool from_close_work)
{
	spin_lock_bh(&sc->lock);
	sc->closing = true;
	spin_unlock_bh(&sc->lock);
	/* It may be queueing close_work right now: after it, nothing does. */
	cancel_delayed_work_sync(&sc->hello_work);
	krdma_conn_fail(sc->conn, -ECONNABORTED);
	wait_event(sc->wait, krdma_blk_sconn_idle(sc));
	krdma_close(sc->conn);
	/*
	 * No callback of the connection runs any more; one that failed it
	 * (krdma_blk_sconn_fail()) may have queued close_work after
	 * unexport's cancel: it finds @sc off the list, but must not run
	 * after the free.  (close_work cannot wait for itself.)
	 */
	if (!from_close_work)
		cancel_work_sync(&sc->close_work);
	kfree(sc->pending);
	kvfree(sc->ios);
	kfree(sc);
}

/*
 * A HELLO was refused (another export's name): the connection is not
 * greeted (a command now closes it, a HELLO may come again), and the
 * deadline it was given when it was set up still stands: a HELLO that
 * opens nothing must not buy it more time, or a client that sends one
 * every hello_timeout_ms would hold the connection for ever.  The
 * deadline's work may have run while this HELLO was taken for a greeting
 * (sc->greeted): then it runs again at once.
 */
static void krdma_blk_hello_refused(struct krdma_blk_sconn *sc)
{
	unsigned long now = jiffies;

	spin_lock_bh(&sc->lock);
	sc->greeted = false;
	sc->hellos_refused++;
	/* Teardown sets closing under the lock before it cancels. */
	if (!sc->closing)
		mod_delayed_work(sc->exp->wq, &sc->hello_work,
				 time_before(now, sc->hello_by) ?
				 sc->hello_by - now : 0);
	spin_unlock_bh(&sc->lock);
}

/* hello_timeout_ms after the connection was set up: greeted yet? */
static void krdma_blk_hello_work(struct work_struct *work)
{
	struct krdma_blk_sconn *sc = container_of(to_delayed_work(work),
						  struct krdma_blk_sconn,
						  hello_work);
	bool greeted;
	u32 refused;

	spin_lock_bh(&sc->lock);
	greeted = sc->greeted || sc->closing;
	refused = sc->hellos_refused;
	spin_unlock_bh(&sc->lock);
	if (greeted)
		return;
	if (refused)
		pr_warn_ratelimited("export %s: no HELLO naming it from the client in %u ms, %u refused; closing its connection\n",
				    sc->exp->name, sc->hello_ms, refused);
	else
		pr_warn_ratelimited("export %s: no HELLO from the client in %u ms; closing its connection\n",
				    sc->exp->name, sc->hello_ms);
	krdma_blk_sconn_fail(sc);
}

static void krdma_blk_sconn_close_work(struct work_struct *work)
{
	struct krdma_blk_sconn *sc = container_of(work, struct krdma_blk_sconn,
						  close_work);
	struct krdma_blk_export *exp = sc->exp;
	bool mine;

	mutex_lock(&exp->lock);
	mine = !list_empty(&sc->list);
	list_del_init(&sc->list);
	mutex_unlock(&exp->lock);
	/* Else unexport took it and closes it. */
	if (mine)
		krdma_blk_sconn_teardown(sc, true);
}

static struct krdma_blk_sconn *krdma_blk_sconn_alloc(struct krdma_blk_export *exp,
						     struct krdma_conn *conn)
{
	struct krdma_blk_sconn *sc;
	u32 i;

	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc)
		return NULL;
	/*
	 * A READ's slot stays taken after its reply, until its data's RDMA
	 * WRITE completes; those are at most depth too (each holds a send
	 * queue slot of the connection).
	 */
	sc->depth = krdma_queue_depth(conn);
	sc->nios = 2 * sc->depth;
	sc->ios = kvcalloc(sc->nios, sizeof(*sc->ios), GFP_KERNEL);
	sc->pending = kcalloc(sc->depth, sizeof(*sc->pending), GFP_KERNEL);
	if (!sc->ios || !sc->pending) {
		kfree(sc->pending);
		kvfree(sc->ios);
		kfree(sc);
		return NULL;
	}
	INIT_LIST_HEAD(&sc->list);
	INIT_LIST_HEAD(&sc->free);
	spin_lock_init(&sc->lock);
	init_waitqueue_head(&sc->wait);
	INIT_WORK(&sc->close_work, krdma_blk_sconn_close_work);
	INIT_WORK(&sc->reply_work, krdma_blk_reply_work);
	INIT_DELAYED_WORK(&sc->hello_work, krdma_blk_hello_work);
	sc->exp = exp;
	sc->conn = conn;
	for (i = 0; i < sc->nios; i++) {
		sc->ios[i].sc = sc;
		INIT_WORK(&sc->ios[i].work, krdma_blk_sio_work);
		list_add_tail(&sc->ios[i].free, &sc->free);
	}
	return sc;
}

static void krdma_blk_srv_event(struct krdma_conn *conn, enum krdma_event ev,
				int error)
{
	struct krdma_blk_export *exp;
	struct krdma_blk_sconn *sc;

	if (ev != KRDMA_EVENT_ESTABLISHED) {
		krdma_blk_sconn_fail(krdma_conn_priv(conn));
		return;
	}
	/* The listener's priv until we set our own. */
	exp = krdma_conn_priv(conn);
	sc = krdma_blk_sconn_alloc(exp, conn);
	if (!sc) {
		pr_warn_ratelimited("export %s: no memory for a connection\n",
				    exp->name);
		krdma_conn_abandon(conn);
		return;
	}
	mutex_lock(&exp->lock);
	if (exp->dying) {
		mutex_unlock(&exp->lock);
		kfree(sc->pending);
		kvfree(sc->ios);
		kfree(sc);
		krdma_conn_abandon(conn);
		return;
	}
	krdma_conn_set_priv(conn, sc);
	list_add_tail(&sc->list, &exp->conns);
	/*
	 * Under exp->lock: unexport (dying, then every connection on the
	 * list cancelled) and close_work (off the list) take it before they
	 * cancel, so it is never queued after them.
	 */
	sc->hello_ms = max(READ_ONCE(krdma_blk_hello_timeout_ms), 100U);
	sc->hello_by = jiffies + msecs_to_jiffies(sc->hello_ms);
	queue_delayed_work(exp->wq, &sc->hello_work,
			   msecs_to_jiffies(sc->hello_ms));
	mutex_unlock(&exp->lock);
}

/*
 * Whether a step may run in the completion that starts it: process
 * context, from the completion workqueue (an export made "wq"),
 * and a queue no deeper than inline_depth (a hint: read unlocked).  The
 * server's own count, as make bench measured it (README), not the
 * client's.
 */
static bool krdma_blk_sio_inline(struct krdma_blk_sconn *sc)
{
	return sc->exp->inline_io && in_task() &&
	       READ_ONCE(sc->unanswered) <= READ_ONCE(krdma_blk_inline_depth);
}

static void krdma_blk_sio_start(struct krdma_blk_sio *io, bool nowait);

/*
 * Context: softirq (the completion workqueue for a "wq" export):
 * copy the command, then start a READ or WRITE here or queue its work.
 */
static int krdma_blk_srv_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct krdma_blk_sconn *sc = krdma_conn_priv(conn);
	const struct krdma_blk_hdr *h = msg->data;
	struct krdma_blk_sio *io;
	bool hello, capsule = false;
	const char *why;
	u32 unanswered;
	size_t want;

	if (!h || msg->len < sizeof(*h) || !krdma_blk_hdr_ok(h)) {
		why = "not a krdma-blk message";
		goto bad;
	}
	hello = h->op == KRDMA_BLK_OP_HELLO;
	want = hello ? sizeof(struct krdma_blk_hello) :
		       sizeof(struct krdma_blk_cmd);
	if (!hello && msg->len >= want &&
	    (be16_to_cpu(h->flags) & KRDMA_BLK_F_INCAPSULE)) {
		const struct krdma_blk_cmd *c = msg->data;

		if (h->op != KRDMA_BLK_OP_WRITE) {
			why = "in-capsule data on a command that is not a WRITE";
			goto bad;
		}
		capsule = true;
		want += be32_to_cpu(c->len);
	}
	if (msg->len != want) {
		why = "bad message length";
		goto bad;
	}
	spin_lock_bh(&sc->lock);
	if (sc->closing) {
		spin_unlock_bh(&sc->lock);
		return 0;
	}
	if (hello == sc->greeted) {
		spin_unlock_bh(&sc->lock);
		why = hello ? "second HELLO" : "command before HELLO";
		goto bad;
	}
	io = list_first_entry_or_null(&sc->free, struct krdma_blk_sio, free);
	if (!io || sc->unanswered >= sc->depth) {
		spin_unlock_bh(&sc->lock);
		why = "more commands than the queue depth";
		goto bad;
	}
	list_del(&io->free);
	unanswered = ++sc->unanswered;
	sc->inflight++;
	sc->greeted = true;
	spin_unlock_bh(&sc->lock);
	memcpy(&io->msg, msg->data, hello ? sizeof(io->msg.hello) :
					    sizeof(io->msg.cmd));
	/*
	 * An in-capsule WRITE's data stays in the message (and the message
	 * holds its credit) until it is copied into the bio's pages, which
	 * may happen before this returns KRDMA_MSG_KEEP.
	 */
	io->capsule = capsule ? msg : NULL;
	io->stage = KRDMA_BLK_SIO_START;
	/*
	 * How deep the queue is: the client's count when it sent the command
	 * (a server that answers faster than the device delivers counts few
	 * unanswered under a deep client), or ours if that is more.
	 */
	io->qd = unanswered;
	if (!hello)
		io->qd = max(unanswered, be32_to_cpu(io->msg.cmd.qd));
	/*
	 * A READ or WRITE of a shallow queue takes this CPU's high-priority
	 * worker; the rest (deeper, or a HELLO, FLUSH, DISCARD or
	 * WRITE_ZEROES, which may wait long) the unbound ones.  No step
	 * touches @io once it has handed it on, so a slot's next command
	 * may take the other queue while this one's last work returns; and
	 * every step of a command takes the queue it picked here, so that
	 * the workqueue's own non-reentrancy holds within a command too.
	 */
	io->wq = sc->exp->wq;
	if (io->qd <= READ_ONCE(krdma_blk_hipri_depth) &&
	    (io->msg.hdr.op == KRDMA_BLK_OP_READ ||
	     io->msg.hdr.op == KRDMA_BLK_OP_WRITE))
		io->wq = sc->exp->hiwq;
	/* In the completion workqueue a READ or WRITE starts right here. */
	if (!hello && krdma_blk_sio_inline(sc) &&
	    (io->msg.hdr.op == KRDMA_BLK_OP_READ ||
	     io->msg.hdr.op == KRDMA_BLK_OP_WRITE)) {
		/* A task (krdma_blk_sio_inline()): as in the work item. */
		unsigned int noio = memalloc_noio_save();

		atomic_inc(&krdma_blk_test_inline_starts);
		krdma_blk_sio_start(io, true);
		memalloc_noio_restore(noio);
		return capsule ? KRDMA_MSG_KEEP : 0;
	}
	queue_work(io->wq, &io->work);
	return capsule ? KRDMA_MSG_KEEP : 0;
bad:
	pr_warn_ratelimited("export %s: %s from the client; closing its connection\n",
			    sc->exp->name, why);
	krdma_blk_sconn_fail(sc);
	return 0;
}

static const struct krdma_conn_ops krdma_blk_srv_ops = {
	.event	= krdma_blk_srv_event,
	.recv	= krdma_blk_srv_recv,
};

static int krdma_blk_srv_hello(struct krdma_blk_sio *io,
			       struct krdma_blk_resp *r)
{
	struct krdma_blk_export *exp = io->sc->exp;
	char name[KRDMA_BLK_NAME_LEN];

	strscpy(name, io->msg.hello.export, sizeof(name));
	if (strcmp(name, exp->name))
		return -ENOENT;
	r->lbs = cpu_to_be32(exp->lbs);
	r->sectors = cpu_to_be64(exp->sectors);
	r->max_sectors = cpu_to_be32(exp->max_sectors);
	r->max_discard = cpu_to_be32(exp->max_discard);
	r->xflags = cpu_to_be32(exp->xflags);
	return 0;
}

/* Give back @io's pages. */
static void krdma_blk_sio_free_pages(struct krdma_blk_sio *io)
{
	while (io->npages)
		__free_page(io->pages[--io->npages]);
}

/*
 * Pages, and a scatterlist over them, for @len bytes of data; zeroed when
 * @zero.  A WRITE's data comes by an RDMA READ, and over iWARP a READ can
 * succeed without filling its pages (krdma_rdma_async()): a hostile
 * client would have the rest, the server's old memory, written to the
 * disk and read it back.
 */
static int krdma_blk_sio_alloc_pages(struct krdma_blk_sio *io, u32 len,
				     bool zero)
{
	unsigned int i, n = DIV_ROUND_UP(len, PAGE_SIZE);
	gfp_t gfp = GFP_NOIO | (zero ? __GFP_ZERO : 0);

	sg_init_table(io->sg, n);
	for (i = 0; i < n; i++) {
		io->pages[i] = alloc_page(gfp);
		if (!io->pages[i])
			return -ENOMEM;
		io->npages++;
		sg_set_page(&io->sg[i], io->pages[i],
			    min_t(u32, PAGE_SIZE, len - i * PAGE_SIZE), 0);
	}
	return 0;
}

/* The connection's part in a command is over; @sc may go after this. */
static void krdma_blk_sconn_put(struct krdma_blk_sconn *sc)
{
	spin_lock_bh(&sc->lock);
	if (!--sc->inflight)
		wake_up(&sc->wait);
	spin_unlock_bh(&sc->lock);
}

/*
 * Post a reply.  The answer to a READ or WRITE ends the client's token
 * (success or not): a SEND_WITH_INV, so the client's pages are its own
 * again when the reply arrives, with no invalidation of its own.
 */
static int krdma_blk_reply_post(struct krdma_blk_sconn *sc,
				const struct krdma_blk_reply *rp, bool nowait)
{
	int ret = -EOPNOTSUPP;

	if (rp->rkey) {
		if (nowait)
			ret = krdma_send_inv_async(sc->conn, &rp->r,
						   sizeof(rp->r), rp->rkey,
						   NULL, true);
		else
			ret = krdma_send_inv(sc->conn, &rp->r, sizeof(rp->r),
					     rp->rkey, KRDMA_BLK_IO_TIMEOUT);
	}
	/* A device without it: the client invalidates it on its own. */
	if (ret == -EOPNOTSUPP) {
		if (nowait)
			ret = krdma_send_async(sc->conn, &rp->r, sizeof(rp->r),
					       NULL, true);
		else
			ret = krdma_send(sc->conn, &rp->r, sizeof(rp->r),
					 KRDMA_BLK_IO_TIMEOUT);
	}
	if (ret && ret != -EAGAIN) {
		/* Once closing, every reply still out fails: no line. */
		if (!krdma_blk_sconn_closing(sc))
			pr_warn_ratelimited("export %s: reply failed (%d); closing the connection\n",
					    sc->exp->name, ret);
		krdma_blk_sconn_fail(sc);
	}
	return ret;
}

/*
 * Replies that found no credit free, sent by a work item that may wait for
 * one.  Each holds its command's count in @inflight; the work holds one of
 * its own while it runs.
 */
static void krdma_blk_reply_work(struct work_struct *work)
{
	struct krdma_blk_sconn *sc = container_of(work, struct krdma_blk_sconn,
						  reply_work);
	unsigned int noio = memalloc_noio_save();
	struct krdma_blk_reply rp;
	bool closing;

	for (;;) {
		spin_lock_bh(&sc->lock);
		if (!sc->npending) {
			spin_unlock_bh(&sc->lock);
			break;
		}
		rp = sc->pending[--sc->npending];
		closing = sc->closing;
		spin_unlock_bh(&sc->lock);
		if (!closing)
			krdma_blk_reply_post(sc, &rp, false);
		krdma_blk_sconn_put(sc);
	}
	memalloc_noio_restore(noio);
	krdma_blk_sconn_put(sc);
}

/* An in-capsule WRITE's message goes back to the client, with its credit. */
static void krdma_blk_sio_capsule_put(struct krdma_blk_sio *io)
{
	if (io->capsule) {
		krdma_msg_release(io->sc->conn, io->capsule);
		io->capsule = NULL;
	}
}

/*
 * @io's pages, message and slot are free again.  Any context up to
 * softirq.
 */
static void krdma_blk_sio_release(struct krdma_blk_sio *io)
{
	struct krdma_blk_sconn *sc = io->sc;

	krdma_blk_sio_free_pages(io);
	krdma_blk_sio_capsule_put(io);
	spin_lock_bh(&sc->lock);
	list_add(&io->free, &sc->free);
	spin_unlock_bh(&sc->lock);
}

/*
 * Send @rp, the answer to a command, and use up the command's count in
 * @inflight.  The command stops counting against the client's queue
 * depth first: the client may send its next one as soon as it has the
 * reply.  Context: any up to softirq; never sleeps.
 */
static void krdma_blk_reply_send(struct krdma_blk_sconn *sc,
				 const struct krdma_blk_reply *rp)
{
	bool overrun = false;

	spin_lock_bh(&sc->lock);
	sc->unanswered--;
	spin_unlock_bh(&sc->lock);
	if (rp->r.hdr.op != KRDMA_BLK_OP_HELLO && krdma_blk_test_drop()) {
		krdma_blk_sconn_put(sc);
		return;
	}
	if (!krdma_blk_every(&krdma_blk_test_reply_busy) &&
	    krdma_blk_reply_post(sc, rp, true) != -EAGAIN) {
		krdma_blk_sconn_put(sc);
		return;
	}
	/*
	 * No credit: the client has not yet said that it reposted the
	 * receives of earlier replies.  Each pending reply answers a command
	 * the client still counts, so a client within its queue depth never
	 * overruns @pending.
	 */
	spin_lock_bh(&sc->lock);
	if (sc->npending < sc->depth) {
		sc->pending[sc->npending++] = *rp;
		sc->inflight++;		/* the work's own */
	} else {
		overrun = true;
	}
	spin_unlock_bh(&sc->lock);
	if (!overrun && !queue_work(sc->exp->wq, &sc->reply_work))
		krdma_blk_sconn_put(sc);	/* queued already */
	if (overrun) {
		pr_warn_ratelimited("export %s: the client takes no replies; closing its connection\n",
				    sc->exp->name);
		krdma_blk_sconn_fail(sc);
		krdma_blk_sconn_put(sc);
	}
}

/* Answer @io's command with @status, its slot free first. */
static void krdma_blk_sio_reply(struct krdma_blk_sio *io, int status)
{
	struct krdma_blk_sconn *sc = io->sc;
	struct krdma_blk_reply rp = { .r = io->resp, .rkey = io->tok.rkey };

	rp.r.status = cpu_to_be32(status);
	krdma_blk_sio_release(io);
	/* @io is the next command's now. */
	krdma_blk_reply_send(sc, &rp);
}

/*
 * A READ's data is at the client (or the connection failed): its pages
 * and slot are free, and its count in @inflight goes.  Context: softirq.
 */
static void krdma_blk_sio_data_done(struct krdma_req *req)
{
	struct krdma_blk_sio *io = container_of(req, struct krdma_blk_sio, req);
	struct krdma_blk_sconn *sc = io->sc;

	krdma_blk_sio_release(io);
	krdma_blk_sconn_put(sc);
}

/*
 * @io's bio is over.  A READ's data goes to the client: the RDMA WRITE was
 * prepared before the bio, so it is posted from here without sleeping.
 * Context: any up to softirq.
 */
static void krdma_blk_sio_bio_done(struct krdma_blk_sio *io)
{
	struct krdma_blk_sconn *sc = io->sc;
	struct krdma_rdma *op = io->rdma;
	struct krdma_blk_reply rp;
	int ret;

	io->rdma = NULL;
	if (!op) {
		krdma_blk_sio_reply(io, io->status);
		return;
	}
	if (io->status) {
		krdma_rdma_discard(op);
		krdma_blk_sio_reply(io, io->status);
		return;
	}
	/*
	 * The reply follows the data in the send queue rather than waiting
	 * for its completion (nvmet-rdma's way): the client places the data
	 * before it sees the reply, and a failed WRITE fails the
	 * connection, which flushes the reply behind it.  The pages and the
	 * slot stay until the WRITE's completion, which holds a count of its
	 * own in @inflight.
	 */
	rp.r = io->resp;
	rp.r.status = 0;
	rp.rkey = io->tok.rkey;
	spin_lock_bh(&sc->lock);
	sc->inflight++;
	spin_unlock_bh(&sc->lock);
	io->req.done = krdma_blk_sio_data_done;
	ret = krdma_rdma_post(op, &io->req);
	if (ret) {
		krdma_blk_sconn_put(sc);
		krdma_blk_sio_reply(io, ret);
		return;
	}
	/* @io may be free already. */
	krdma_blk_reply_send(sc, &rp);
}

static void krdma_blk_sio_end_io(struct bio *bio)
{
	struct krdma_blk_sio *io = bio->bi_private;

	io->status = blk_status_to_errno(bio->bi_status);
	bio_put(bio);
	/* krdma posts from softirq at most: a hardirq completion defers. */
	if (in_hardirq() || irqs_disabled()) {
		atomic_inc(&krdma_blk_test_hardirq_ends);
		io->stage = KRDMA_BLK_SIO_BIO_DONE;
		queue_work(io->wq, &io->work);
		return;
	}
	krdma_blk_sio_bio_done(io);
}

/* Submit @io's bio, over its pages.  Process context. */
static void krdma_blk_sio_submit(struct krdma_blk_sio *io)
{
	struct krdma_blk_export *exp = io->sc->exp;
	const struct krdma_blk_cmd *c = &io->msg.cmd;
	blk_opf_t opf = REQ_OP_READ;
	struct bio *bio;
	unsigned int i;

	if (c->hdr.op == KRDMA_BLK_OP_WRITE) {
		opf = REQ_OP_WRITE | REQ_SYNC;
		if (be16_to_cpu(c->hdr.flags) & KRDMA_BLK_F_FUA)
			opf |= REQ_FUA;
	}
	/* From the bio_set's mempool: GFP_NOIO waits, it does not fail. */
	bio = bio_alloc(exp->bd.bdev, io->npages, opf, GFP_NOIO);
	bio->bi_iter.bi_sector = be64_to_cpu(c->sector);
	bio->bi_private = io;
	bio->bi_end_io = krdma_blk_sio_end_io;
	for (i = 0; i < io->npages; i++)
		__bio_add_page(bio, io->pages[i], io->sg[i].length, 0);
	submit_bio(bio);
}

/*
 * The RDMA READ of a WRITE's data is over: its bio goes from here in the
 * completion workqueue, else from the work item.  Context: completion.
 */
static void krdma_blk_sio_rdma_done(struct krdma_req *req)
{
	struct krdma_blk_sio *io = container_of(req, struct krdma_blk_sio, req);

	if (req->status) {
		krdma_blk_sio_reply(io, req->status);
		return;
	}
	io->stage = KRDMA_BLK_SIO_SUBMIT;
	if (krdma_blk_sio_inline(io->sc)) {
		atomic_inc(&krdma_blk_test_inline_submits);
		krdma_blk_sio_submit(io);
		return;
	}
	queue_work(io->wq, &io->work);
}

/*
 * Start a READ or WRITE: data straight between the client's token and the
 * bio's pages.  A WRITE reads the data in first, then submits its bio when
 * that is over (an in-capsule WRITE copies it from its message and submits
 * at once); a READ prepares the RDMA WRITE of its data, then submits
 * its bio.  @nowait: in a completion, where nothing may wait for an RDMA
 * slot.  Return: -EINPROGRESS when started (the reply comes later),
 * -EAGAIN (@nowait) for no RDMA slot free, nothing kept.
 */
static int krdma_blk_srv_rw(struct krdma_blk_sio *io, bool write, u32 len,
			    bool nowait)
{
	struct krdma_blk_sconn *sc = io->sc;
	struct krdma_rdma *op;
	int ret;

	if (!io->capsule && io->tok.length < len)
		return -EINVAL;
	ret = krdma_blk_sio_alloc_pages(io, len, write && !io->capsule &&
					krdma_conn_is_iwarp(sc->conn));
	if (ret)
		return ret;
	if (io->capsule) {
		const u8 *data = io->capsule->data;

		/* @len is what the message holds (the recv callback's check). */
		sg_copy_from_buffer(io->sg, io->npages,
				    data + sizeof(struct krdma_blk_cmd), len);
		krdma_blk_sio_capsule_put(io);
		atomic_inc(&krdma_blk_test_incapsule_writes);
		krdma_blk_sio_submit(io);
		return -EINPROGRESS;
	}
	if (nowait && krdma_blk_every(&krdma_blk_test_start_busy)) {
		ret = -EAGAIN;
		goto out;
	}
	if (write) {
		io->req.done = krdma_blk_sio_rdma_done;
		ret = krdma_rdma_async(sc->conn, false, io->sg, io->npages,
				       &io->tok, 0, &io->req, nowait);
		goto out;
	}
	op = krdma_rdma_prep(sc->conn, true, io->sg, io->npages, &io->tok, 0,
			     nowait);
	if (IS_ERR(op)) {
		ret = PTR_ERR(op);
		goto out;
	}
	io->rdma = op;
	krdma_blk_sio_submit(io);
	return -EINPROGRESS;
out:
	/* The work item starts it again, with pages of its own. */
	if (ret == -EAGAIN)
		krdma_blk_sio_free_pages(io);
	return ret ?: -EINPROGRESS;
}

static int krdma_blk_srv_cmd(struct krdma_blk_sio *io, bool nowait)
{
	struct krdma_blk_export *exp = io->sc->exp;
	const struct krdma_blk_cmd *c = &io->msg.cmd;
	u64 sector = be64_to_cpu(c->sector);
	u32 len = be32_to_cpu(c->len);
	u8 op = c->hdr.op;
	u64 nr = len >> SECTOR_SHIFT;

	if (op < KRDMA_BLK_OP_READ || op > KRDMA_BLK_OP_WRITE_ZEROES)
		return -EOPNOTSUPP;
	if (op != KRDMA_BLK_OP_READ && exp->ro)
		return -EROFS;
	if (op == KRDMA_BLK_OP_FLUSH)
		return len ? -EINVAL : blkdev_issue_flush(exp->bd.bdev);
	/* Whole logical blocks, from a block's start, within the device. */
	if (!len || len % exp->lbs ||
	    sector & ((exp->lbs >> SECTOR_SHIFT) - 1) ||
	    sector > exp->sectors || nr > exp->sectors - sector)
		return -EINVAL;
	switch (op) {
	case KRDMA_BLK_OP_DISCARD:
		if (!(exp->xflags & KRDMA_BLK_X_DISCARD))
			return -EOPNOTSUPP;
		if (nr > exp->max_discard)
			return -EINVAL;
		return blkdev_issue_discard(exp->bd.bdev, sector, nr,
					    GFP_NOIO);
	case KRDMA_BLK_OP_WRITE_ZEROES:
		if (!(exp->xflags & KRDMA_BLK_X_WRITE_ZEROES))
			return -EOPNOTSUPP;
		if (nr > exp->max_discard)
			return -EINVAL;
		return blkdev_issue_zeroout(exp->bd.bdev, sector, nr,
					    GFP_NOIO, BLKDEV_ZERO_NOUNMAP);
	default:
		if (nr > exp->max_sectors)
			return -EINVAL;
		return krdma_blk_srv_rw(io, op == KRDMA_BLK_OP_WRITE, len,
					nowait);
	}
}

/*
 * A new command: a HELLO's answer, a READ or WRITE started, or the other
 * commands done (they wait for the device).  @nowait: in the recv
 * callback, where a READ or WRITE that finds no RDMA slot free goes on
 * from the work item instead, which waits for one.
 */
static void krdma_blk_sio_start(struct krdma_blk_sio *io, bool nowait)
{
	u8 op = io->msg.hdr.op;
	int status;

	memset(&io->resp, 0, sizeof(io->resp));
	memset(&io->tok, 0, sizeof(io->tok));
	krdma_blk_hdr_init(&io->resp.hdr, op, 0);
	io->rdma = NULL;
	if (op == KRDMA_BLK_OP_HELLO) {
		msleep(min(READ_ONCE(krdma_blk_test_hello_delay_ms),
			   KRDMA_BLK_TEST_HELLO_DELAY_MAX));
		status = krdma_blk_srv_hello(io, &io->resp);
		/* Before its reply: the client sends nothing before that. */
		if (!status)
			WRITE_ONCE(io->sc->hello_ok, true);
		else
			krdma_blk_hello_refused(io->sc);
	} else if (!READ_ONCE(io->sc->hello_ok)) {
		/* A refused HELLO (another export's name) opens nothing. */
		pr_warn_ratelimited("export %s: a command after a HELLO that was refused or not answered yet; closing the connection\n",
				    io->sc->exp->name);
		krdma_blk_sconn_fail(io->sc);
		io->resp.tag = io->msg.cmd.tag;
		status = -EACCES;
	} else {
		io->resp.tag = io->msg.cmd.tag;
		if (op == KRDMA_BLK_OP_READ || op == KRDMA_BLK_OP_WRITE)
			krdma_token_unpack(&io->msg.cmd.token, &io->tok);
		status = krdma_blk_srv_cmd(io, nowait);
	}
	if (status == -EAGAIN && nowait) {
		queue_work(io->wq, &io->work);
		return;
	}
	if (status != -EINPROGRESS)
		krdma_blk_sio_reply(io, status);
}

/*
 * A command's steps that need process context, when they cannot run in
 * their completion: a HELLO, FLUSH, DISCARD and WRITE_ZEROES (they wait
 * for the device here), a READ or WRITE that found no RDMA slot, every
 * start and WRITE bio of an export without "wq", and what follows a bio that
 * ended in hardirq context.  None of them waits for the client or for a
 * READ or WRITE's bio.
 */
static void krdma_blk_sio_work(struct work_struct *work)
{
	struct krdma_blk_sio *io = container_of(work, struct krdma_blk_sio,
						work);
	unsigned int noio = memalloc_noio_save();

	if (io->stage == KRDMA_BLK_SIO_START && io->wq == io->sc->exp->hiwq)
		atomic_inc(&krdma_blk_test_hipri_cmds);
	switch (io->stage) {
	case KRDMA_BLK_SIO_SUBMIT:
		krdma_blk_sio_submit(io);
		break;
	case KRDMA_BLK_SIO_BIO_DONE:
		krdma_blk_sio_bio_done(io);
		break;
	default:
		krdma_blk_sio_start(io, false);
		break;
	}
	memalloc_noio_restore(noio);
}

/**
 * krdma_blk_export_create - export a block device on an address
 * @a: the parsed command; @a->failed names the word of a failure
 *
 * Opens the device exclusively (read-only for a read-only export) and
 * listens on @a->addr; clients map it by name.
 *
 * Context: process context; sleeps.
 * Return: the export, or an ERR_PTR: the open's error (-ENOENT, -EBUSY,
 * -ENOTBLK, ...) or the listen's (-EADDRINUSE, -EADDRNOTAVAIL, ...).
 */
struct krdma_blk_export *krdma_blk_export_create(struct krdma_blk_export_args *a)
{
	struct krdma_conn_opts opts = { .ops = &krdma_blk_srv_ops,
					.workqueue = a->wq,
					.max_msg_size = KRDMA_BLK_MSG_MAX,
					.backlog = KRDMA_BLK_EXPORT_CONNS };
	struct krdma_blk_export *exp;
	struct block_device *bdev;
	u32 maxd;
	int ret;

	exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	if (!exp)
		return ERR_PTR(-ENOMEM);
	strscpy(exp->name, a->name, sizeof(exp->name));
	exp->ro = a->ro;
	exp->inline_io = a->wq;
	mutex_init(&exp->lock);
	INIT_LIST_HEAD(&exp->conns);
	/* The control file's line names what failed (a->failed). */
	a->failed = a->path;
	ret = krdma_blk_bdev_open(&exp->bd, a->path, a->ro, exp);
	if (ret)
		goto free;
	a->failed = NULL;
	bdev = exp->bd.bdev;
	exp->sectors = bdev_nr_sectors(bdev);
	exp->lbs = bdev_logical_block_size(bdev);
	exp->max_sectors = KRDMA_BLK_MAX_IO >> SECTOR_SHIFT;
	/* The wire's length is 32 bits of bytes. */
	maxd = (U32_MAX >> SECTOR_SHIFT) & ~((exp->lbs >> SECTOR_SHIFT) - 1);
	exp->max_discard = maxd;
	if (exp->ro)
		exp->xflags |= KRDMA_BLK_X_RO;
	if (bdev_max_discard_sectors(bdev))
		exp->xflags |= KRDMA_BLK_X_DISCARD;
	if (bdev_write_zeroes_sectors(bdev))
		exp->xflags |= KRDMA_BLK_X_WRITE_ZEROES;

	exp->wq = alloc_workqueue("krdma_blk_%s", WQ_MEM_RECLAIM | WQ_UNBOUND,
				  0, exp->name);
	if (!exp->wq) {
		ret = -ENOMEM;
		goto close;
	}
	exp->hiwq = alloc_workqueue("krdma_blk_%s_hi",
				    WQ_MEM_RECLAIM | WQ_HIGHPRI, 0, exp->name);
	if (!exp->hiwq) {
		ret = -ENOMEM;
		goto wq;
	}
	opts.priv = exp;
	exp->l = krdma_listen((const struct sockaddr *)&a->addr, &opts);
	if (IS_ERR(exp->l)) {
		ret = PTR_ERR(exp->l);
		a->failed = "addr=";
		goto hiwq;
	}
	return exp;
hiwq:
	destroy_workqueue(exp->hiwq);
wq:
	destroy_workqueue(exp->wq);
close:
	krdma_blk_bdev_close(&exp->bd);
free:
	kfree(exp);
	return ERR_PTR(ret);
}

/**
 * krdma_blk_export_destroy - stop exporting
 * @exp: from krdma_blk_export_create()
 *
 * Closes the listener and every connection of the export (their clients'
 * I/O fails), after the commands being served have finished, then closes
 * the block device.
 *
 * Context: process context; sleeps.
 */
void krdma_blk_export_destroy(struct krdma_blk_export *exp)
{
	struct krdma_blk_sconn *sc;

	mutex_lock(&exp->lock);
	exp->dying = true;
	mutex_unlock(&exp->lock);
	/* Every connection handed over has had its ESTABLISHED event. */
	krdma_listener_close(exp->l);

	for (;;) {
		mutex_lock(&exp->lock);
		sc = list_first_entry_or_null(&exp->conns,
					      struct krdma_blk_sconn, list);
		if (sc)
			list_del_init(&sc->list);
		mutex_unlock(&exp->lock);
		if (!sc)
			break;
		spin_lock_bh(&sc->lock);
		sc->closing = true;
		spin_unlock_bh(&sc->lock);
		/* A close work already queued finds @sc off the list. */
		cancel_work_sync(&sc->close_work);
		krdma_blk_sconn_teardown(sc, false);
	}
	/*
	 * Close works of connections that took themselves off the list:
	 * each waits for its commands, whose steps are queued here from
	 * completions and end_io, which a draining workqueue would refuse
	 * (destroy_workqueue() takes work only from its own items then).
	 * So flush first; after it every connection is closed and nothing
	 * from outside queues here any more.
	 */
	flush_workqueue(exp->wq);
	destroy_workqueue(exp->wq);
	/* The last steps of commands: their connections are gone. */
	destroy_workqueue(exp->hiwq);
	krdma_blk_bdev_close(&exp->bd);
	kfree(exp);
}
