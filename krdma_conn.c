// SPDX-License-Identifier: GPL-2.0
/*
 * krdma connections: rdma_cm listen/connect/accept, the versioned handshake,
 * and the connection lifecycle (teardown on close, device removal, unload).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/inet.h>
#include <linux/delay.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>

#include "krdma_core.h"
#include "krdma_trace.h"
#include "krdma_sess.h"

LIST_HEAD(krdma_conns);
/*
 * Connections taken off krdma_conns whose sysfs directory is still there:
 * their names stay taken until it is gone (krdma_conn_unpublish()).
 */
static LIST_HEAD(krdma_conns_dying);
LIST_HEAD(krdma_listeners);
atomic64_t krdma_total_conns;
static atomic_t krdma_next_id = ATOMIC_INIT(0);

#define KRDMA_RESOLVE_TIMEOUT_MS	2000
#define KRDMA_LISTEN_BACKLOG		128

static int krdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

const char *krdma_conn_state_str(enum krdma_conn_state state)
{
	switch (state) {
	case KRDMA_CONN_CONNECTING:	return "connecting";
	case KRDMA_CONN_CONNECTED:	return "connected";
	case KRDMA_CONN_DISCONNECTED:	return "disconnected";
	case KRDMA_CONN_ERROR:		return "error";
	case KRDMA_CONN_CLOSED:		return "closed";
	}
	return "unknown";
}

/**
 * krdma_conn_get - keep a connection's memory
 * @conn: the connection
 *
 * For a consumer that may still look at @conn after krdma_close() (a
 * registry of its own that finds it by name, say): @conn stays valid,
 * closed, until the matching krdma_conn_put().  A closed connection is
 * good for krdma_conn_name() and krdma_conn_priv() only.
 *
 * Context: any.
 */
void krdma_conn_get(struct krdma_conn *conn)
{
	kobject_get(&conn->kobj);
}
EXPORT_SYMBOL_GPL(krdma_conn_get);

/**
 * krdma_conn_put - drop what krdma_conn_get() or krdma_conn_find() took
 * @conn: the connection
 *
 * Context: process context (the last one frees @conn).
 */
void krdma_conn_put(struct krdma_conn *conn)
{
	kobject_put(&conn->kobj);
}
EXPORT_SYMBOL_GPL(krdma_conn_put);

/**
 * krdma_listener_get - keep a listener's memory
 * @l: the listener
 *
 * For a consumer whose other threads may still wait on @l (krdma_accept(),
 * krdma_listener_waitq()) after krdma_listener_close(): @l stays valid,
 * closed, until the matching krdma_listener_put().
 *
 * Context: any.
 */
void krdma_listener_get(struct krdma_listener *l)
{
	kobject_get(&l->kobj);
}
EXPORT_SYMBOL_GPL(krdma_listener_get);

/**
 * krdma_listener_put - drop what krdma_listener_get() took
 * @l: the listener
 *
 * Context: process context (the last one frees @l).
 */
void krdma_listener_put(struct krdma_listener *l)
{
	kobject_put(&l->kobj);
}
EXPORT_SYMBOL_GPL(krdma_listener_put);

static void krdma_conn_opts_fill(struct krdma_conn_opts *o,
				 const struct krdma_conn_opts *in)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->queue_depth)
		o->queue_depth = KRDMA_DEFAULT_DEPTH;
	if (!o->max_msg_size)
		o->max_msg_size = KRDMA_DEFAULT_MSG_SIZE;
	if (!o->timeout_ms)
		o->timeout_ms = KRDMA_DEFAULT_CONNECT_TIMEOUT_MS;
	if (!o->backlog)
		o->backlog = KRDMA_DEFAULT_BACKLOG;
	if (!o->heartbeat_ms)
		o->heartbeat_ms = KRDMA_DEFAULT_HEARTBEAT_MS;
	if (!o->heartbeat_misses)
		o->heartbeat_misses = KRDMA_DEFAULT_HEARTBEAT_MISSES;
	if (o->mr_pool && !o->mr_pool_pages)
		o->mr_pool_pages = KRDMA_DEFAULT_MR_POOL_PAGES;
}

static int krdma_conn_opts_check(const struct krdma_conn_opts *o)
{
	if (o->name && strlen(o->name) >= KRDMA_OPTS_NAME_MAX) {
		pr_warn_ratelimited("name '%s' too long (at most %u bytes)\n",
				    o->name, KRDMA_OPTS_NAME_MAX - 1);
		return -EINVAL;
	}
	if (o->test_hello > KRDMA_TEST_HELLO_MAX) {
		pr_warn_ratelimited("test_hello %u out of range 0..%u\n",
				    o->test_hello, KRDMA_TEST_HELLO_MAX);
		return -EINVAL;
	}
	if (o->queue_depth < 1 || o->queue_depth > KRDMA_MAX_DEPTH) {
		pr_warn_ratelimited("queue depth %u out of range 1..%u\n",
				    o->queue_depth, KRDMA_MAX_DEPTH);
		return -EINVAL;
	}
	if (o->max_msg_size < sizeof(struct krdma_token_wire) ||
	    o->max_msg_size > KRDMA_MAX_MSG_SIZE) {
		pr_warn_ratelimited("message size %u out of range %zu..%u\n",
				    o->max_msg_size,
				    sizeof(struct krdma_token_wire),
				    KRDMA_MAX_MSG_SIZE);
		return -EINVAL;
	}
	if (o->backlog > KRDMA_MAX_BACKLOG) {
		pr_warn_ratelimited("backlog %u out of range 1..%u\n",
				    o->backlog, KRDMA_MAX_BACKLOG);
		return -EINVAL;
	}
	if (o->heartbeat_ms != KRDMA_HEARTBEAT_OFF &&
	    (o->heartbeat_ms < KRDMA_MIN_HEARTBEAT_MS ||
	     o->heartbeat_ms > KRDMA_MAX_HEARTBEAT_MS)) {
		pr_warn_ratelimited("heartbeat interval %u ms out of range %u..%u\n",
				    o->heartbeat_ms, KRDMA_MIN_HEARTBEAT_MS,
				    KRDMA_MAX_HEARTBEAT_MS);
		return -EINVAL;
	}
	if (o->private_data_len > KRDMA_MAX_PRIVATE_DATA ||
	    (o->private_data_len && !o->private_data)) {
		pr_warn_ratelimited("private data of %u bytes refused (at most %u)\n",
				    o->private_data_len, KRDMA_MAX_PRIVATE_DATA);
		return -EINVAL;
	}
	if (o->mr_pool > KRDMA_MAX_MR_POOL ||
	    (o->mr_pool_pages > KRDMA_MAX_MR_POOL_PAGES &&
	     o->mr_pool_pages != KRDMA_MR_POOL_PAGES_DEV)) {
		pr_warn_ratelimited("MR pool of %u x %u pages out of range (at most %u x %u)\n",
				    o->mr_pool, o->mr_pool_pages,
				    KRDMA_MAX_MR_POOL, KRDMA_MAX_MR_POOL_PAGES);
		return -EINVAL;
	}
	if (o->poll && o->workqueue) {
		pr_warn_ratelimited("a connection is polled or reaped by a workqueue, not both\n");
		return -EINVAL;
	}
	if (o->heartbeat_misses > KRDMA_MAX_HEARTBEAT_MISSES) {
		pr_warn_ratelimited("heartbeat misses %u out of range 1..%u\n",
				    o->heartbeat_misses,
				    KRDMA_MAX_HEARTBEAT_MISSES);
		return -EINVAL;
	}
	return 0;
}

static void krdma_teardown_work(struct work_struct *work);
static void krdma_conn_ev_work(struct work_struct *work);
static void krdma_handover_work(struct work_struct *work);
static void krdma_handover_kick(struct krdma_conn *conn);
static void krdma_conn_flush_work(struct work_struct *work);

static struct krdma_conn *krdma_conn_alloc(const struct krdma_conn_opts *opts,
					   const char *name)
{
	struct krdma_conn *conn;
	u32 idx;

	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return NULL;
	krdma_kobj_init(&conn->kobj, &krdma_conn_ktype);
	conn->id = atomic_inc_return(&krdma_next_id);
	if (name && *name) {
		strscpy(conn->name, name, sizeof(conn->name));
	} else {
		snprintf(conn->name, sizeof(conn->name), "conn%u", conn->id);
		conn->auto_name = true;
	}
	conn->ctx.type = KRDMA_CTX_CONN;
	conn->opts = *opts;
	/* The caller's string need not outlive krdma_connect(). */
	conn->opts.name = NULL;
	/* The caller's bytes need not outlive krdma_connect(): a copy. */
	if (opts->private_data_len)
		memcpy(conn->pdata, opts->private_data, opts->private_data_len);
	conn->opts.private_data = NULL;
	/* A session's own connection knows it (krdma_conn_session()). */
	if (krdma_sess_pdata_decode(conn->pdata, opts->private_data_len,
				    &conn->sess_id, &conn->sess_gen, &idx,
				    NULL) >= 0) {
		conn->sess_known = true;
		conn->sess_idx = idx;
	}
	conn->depth = opts->queue_depth;
	conn->max_msg = opts->max_msg_size;
	conn->state = KRDMA_CONN_CONNECTING;
	conn->cm_event = -1;
	conn->comp_vector = -1;
	INIT_LIST_HEAD(&conn->list);
	INIT_LIST_HEAD(&conn->accept_entry);
	INIT_LIST_HEAD(&conn->rx_ready);
	INIT_LIST_HEAD(&conn->recvq);
	INIT_LIST_HEAD(&conn->tx_free);
	INIT_LIST_HEAD(&conn->mrs);
	INIT_LIST_HEAD(&conn->pool_mrs);
	INIT_LIST_HEAD(&conn->pool_free);
	INIT_LIST_HEAD(&conn->rw_ops);
	INIT_LIST_HEAD(&conn->xop_free);
	INIT_LIST_HEAD(&conn->park_entry);
	init_completion(&conn->cm_done);
	mutex_init(&conn->teardown_mutex);
	INIT_WORK(&conn->teardown_work, krdma_teardown_work);
	INIT_DELAYED_WORK(&conn->ev_work, krdma_conn_ev_work);
	INIT_DELAYED_WORK(&conn->flush_work, krdma_conn_flush_work);
	krdma_inject_init(&conn->inj);
	krdma_hb_init(conn);
	INIT_DELAYED_WORK(&conn->handover_work, krdma_handover_work);
	spin_lock_init(&conn->lock);
	spin_lock_init(&conn->poll_lock);
	init_waitqueue_head(&conn->wq);
	return conn;
}

static bool krdma_conn_name_used_locked(const char *name)
{
	struct krdma_conn *c;

	lockdep_assert_held(&krdma_lock);
	list_for_each_entry(c, &krdma_conns, list)
		if (!strcmp(c->name, name))
			return true;
	list_for_each_entry(c, &krdma_conns_dying, list)
		if (!strcmp(c->name, name))
			return true;
	return false;
}

/*
 * Make the connection visible (list and sysfs); names are unique.  A name
 * krdma made (connN, conn->auto_name) that an owner gave another
 * connection (the control file's connect name=connN) is made again from
 * the next id, so a krdma_connect() without a name, a session's reconnect
 * among them, never fails on a name it did not choose.  Any other name
 * is -EEXIST when taken: an owner's own, and a passive end's, which its
 * listener makes (its name and a count, listenN.K) and which is not made
 * again here (an owner who named a connection listenN.K makes that
 * listener refuse the request of that count).
 */
static int krdma_conn_publish(struct krdma_conn *conn)
{
	int ret;

	mutex_lock(&krdma_lock);
	while (krdma_conn_name_used_locked(conn->name)) {
		if (!conn->auto_name)
			goto taken;
		conn->id = atomic_inc_return(&krdma_next_id);
		snprintf(conn->name, sizeof(conn->name), "conn%u", conn->id);
	}
	ret = krdma_sysfs_add_conn(conn);
	if (!ret) {
		list_add_tail(&conn->list, &krdma_conns);
		atomic64_inc(&krdma_total_conns);
	}
	mutex_unlock(&krdma_lock);
	return ret;

taken:
	mutex_unlock(&krdma_lock);
	pr_warn_ratelimited("connection name '%s' already in use\n", conn->name);
	return -EEXIST;
}

/*
 * The connection is no longer its listener's to hold (krdma_accept() took
 * it, or it is gone): it stops counting against the backlog.
 */
static void krdma_conn_unhold(struct krdma_conn *conn)
{
	struct krdma_listener *l = conn->listener;

	if (!l)
		return;
	spin_lock_bh(&l->lock);
	if (conn->held) {
		conn->held = false;
		l->held--;
	}
	spin_unlock_bh(&l->lock);
}

/* Returns true for the one caller that took @conn off the list. */
static bool krdma_conn_unpublish(struct krdma_conn *conn)
{
	bool was = false;

	krdma_conn_unhold(conn);

	/*
	 * Off the list, so that nobody finds it by name any more, but its
	 * name stays taken until its directory is gone: a connection of the
	 * same name made meanwhile would meet the old directory in sysfs.
	 * The directory goes outside krdma_lock, which kobject_del() could
	 * wait on through a sysfs handler.
	 */
	mutex_lock(&krdma_lock);
	if (!list_empty(&conn->list) && !conn->unpublished) {
		conn->unpublished = true;
		list_move_tail(&conn->list, &krdma_conns_dying);
		was = true;
	}
	mutex_unlock(&krdma_lock);
	if (!was)
		return false;
	krdma_sysfs_del_conn(conn);
	mutex_lock(&krdma_lock);
	list_del_init(&conn->list);
	mutex_unlock(&krdma_lock);
	return true;
}

/**
 * krdma_conn_find - look a connection up by name
 * @name: its name (krdma_conn_name(), its directory under
 *	/sys/kernel/krdma/conns/)
 *
 * Every consumer's connections are there, not only the caller's: a
 * consumer looks up its own in a registry of its own, and uses this to
 * tell whether a name is free before it gives it (opts.name).  A
 * connection krdma_close() closed is not found.
 *
 * Context: process context; sleeps (krdma's lock).
 * Return: the connection, with a reference the caller drops with
 * krdma_conn_put(), or NULL if none has @name.
 */
struct krdma_conn *krdma_conn_find(const char *name)
{
	struct krdma_conn *c, *found = NULL;

	mutex_lock(&krdma_lock);
	list_for_each_entry(c, &krdma_conns, list) {
		if (!strcmp(c->name, name)) {
			found = c;
			krdma_conn_get(c);
			break;
		}
	}
	mutex_unlock(&krdma_lock);
	return found;
}
EXPORT_SYMBOL_GPL(krdma_conn_find);

/**
 * krdma_listener_find - look a listener up by name
 * @name: its name (its directory under /sys/kernel/krdma/listeners/)
 *
 * Every consumer's listeners are there, not only the caller's.
 *
 * Context: process context; sleeps (krdma's lock).
 * Return: the listener, with a reference the caller drops with
 * krdma_listener_put(), or NULL if none has @name.
 */
struct krdma_listener *krdma_listener_find(const char *name)
{
	struct krdma_listener *l, *found = NULL;

	mutex_lock(&krdma_lock);
	list_for_each_entry(l, &krdma_listeners, list) {
		if (!strcmp(l->name, name)) {
			found = l;
			kobject_get(&l->kobj);
			break;
		}
	}
	mutex_unlock(&krdma_lock);
	return found;
}
EXPORT_SYMBOL_GPL(krdma_listener_find);

/* ---- the consumer's event callback --------------------------------- */

#define KRDMA_EVP_UP	BIT(0)	/* KRDMA_EVENT_ESTABLISHED */
#define KRDMA_EVP_END	BIT(1)	/* what ended it */
/* How long the end waits for its cause (krdma_conn_ev_work()). */
#define KRDMA_EV_SETTLE	(HZ)
/* How long a flush waits for its cause before it is told as having none. */
#define KRDMA_FLUSH_QUIET	(HZ)

static void krdma_conn_ev_kick_locked(struct krdma_conn *conn,
				      unsigned long delay);

/*
 * Queue an event for the consumer's callback, with conn->lock held.  The
 * end of a connection is told only to a consumer that was told it was
 * established (a passive one that failed in set-up was nobody's), and a
 * connection that ended before that is told both, in order.
 */
static void krdma_conn_ev_queue_locked(struct krdma_conn *conn, u8 what)
{
	if (!conn->opts.ops || conn->ev_off)
		return;
	if (what == KRDMA_EVP_UP) {
		conn->ev_up = true;
		conn->ev_up_out = true;
		if (conn->state != KRDMA_CONN_CONNECTED)
			what |= KRDMA_EVP_END;
	} else if (!conn->ev_up) {
		return;
	}
	if ((what & KRDMA_EVP_END) && !(conn->ev_pending & KRDMA_EVP_END))
		conn->ev_settle_by = jiffies + KRDMA_EV_SETTLE;
	conn->ev_pending |= what;
	krdma_conn_ev_kick_locked(conn, 0);
}

/* Run the event work after @delay; it holds a reference while queued. */
static void krdma_conn_ev_kick_locked(struct krdma_conn *conn,
				      unsigned long delay)
{
	krdma_conn_get(conn);
	if (!queue_delayed_work(krdma_wq, &conn->ev_work, delay))
		krdma_conn_put(conn);
}

/*
 * Work requests posted and not completed yet, with conn->lock held.  One
 * of them may carry the cause of a failure whose placeholder (the peer's
 * disconnect, a flush) was seen first.
 */
static bool krdma_conn_sq_busy_locked(struct krdma_conn *conn)
{
	struct list_head *pos;
	u32 free = 0;

	if (conn->rw_slots)
		return true;
	if (conn->rx_closed)
		return false;	/* teardown finished the sends */
	list_for_each(pos, &conn->tx_free)
		free++;
	return free != conn->nr_tx;
}

static void krdma_conn_ev_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(to_delayed_work(work),
					       struct krdma_conn, ev_work);
	const struct krdma_conn_ops *ops = conn->opts.ops;
	enum krdma_event ev;
	u8 pending;
	int err;

	spin_lock_bh(&conn->lock);
	pending = conn->ev_off ? 0 : conn->ev_pending;
	conn->ev_pending = 0;
	/*
	 * The end is told with its cause: if all that is known yet is a
	 * placeholder, the completions of what was in flight (a remote
	 * access error the peer disconnected for) come first, for up to
	 * KRDMA_EV_SETTLE.  On iWARP the QP is in ERROR, so they come soon;
	 * on IB and RoCE it is still in RTS, and only completions already
	 * on their way (a NAK) can name another cause in that time.
	 */
	if ((pending & KRDMA_EVP_END) && conn->error_weak &&
	    krdma_conn_sq_busy_locked(conn) &&
	    time_before(jiffies, conn->ev_settle_by)) {
		pending &= ~KRDMA_EVP_END;
		conn->ev_pending |= KRDMA_EVP_END;
		krdma_conn_ev_kick_locked(conn, msecs_to_jiffies(5));
	}
	err = conn->error ?: -ECONNRESET;
	/*
	 * Reset with no cause reported (only a flush, or the peer's DREQ)
	 * is the peer leaving: siw flushes the receives before the CM
	 * reports the disconnect.
	 */
	if (err == -ENODEV)
		ev = KRDMA_EVENT_DEVICE_REMOVAL;
	else if (conn->state == KRDMA_CONN_DISCONNECTED ||
		 (conn->error_weak && err == -ECONNRESET))
		ev = KRDMA_EVENT_DISCONNECTED;
	else
		ev = KRDMA_EVENT_ERROR;
	spin_unlock_bh(&conn->lock);

	if (pending & KRDMA_EVP_UP) {
		if (ops->event)
			ops->event(conn, KRDMA_EVENT_ESTABLISHED, 0);
		/*
		 * The consumer may have refused it in that callback
		 * (krdma_conn_abandon()): then no callback follows, neither
		 * of the messages that came before nor of its end.
		 */
		spin_lock_bh(&conn->lock);
		if (conn->ev_off)
			pending = 0;
		spin_unlock_bh(&conn->lock);
		/* Messages go to the consumer from now on. */
		if ((pending & KRDMA_EVP_UP) && ops->recv)
			krdma_rx_cb_start(conn);
	}
	if ((pending & KRDMA_EVP_END) && ops->event)
		ops->event(conn, ev, err);
	/* The ESTABLISHED event, if it was queued, is told or dropped. */
	spin_lock_bh(&conn->lock);
	conn->ev_up_out = false;
	spin_unlock_bh(&conn->lock);
	krdma_conn_put(conn);	/* the work's reference */
}

/* The consumer established @conn (or took it from its listener). */
static void krdma_conn_ev_up(struct krdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	conn->orphan = false;
	krdma_conn_ev_queue_locked(conn, KRDMA_EVP_UP);
	spin_unlock_bh(&conn->lock);
}

/* krdma_close(): no callback runs once this returns. */
static void krdma_conn_ev_stop(struct krdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->ev_off, true);
	spin_unlock_bh(&conn->lock);
	if (cancel_delayed_work_sync(&conn->ev_work))
		krdma_conn_put(conn);
	spin_lock_bh(&conn->lock);
	conn->ev_up_out = false;
	spin_unlock_bh(&conn->lock);
}

/**
 * krdma_conn_abandon - refuse a connection a listener handed over
 * @conn: a connection from a listener's KRDMA_EVENT_ESTABLISHED
 *
 * For a consumer that cannot take the connection (out of memory, say):
 * krdma disconnects it and frees it, and @conn must not be used
 * afterwards.  Called from its ESTABLISHED callback, no other callback
 * comes for it (not even for a message that arrived meanwhile); called
 * elsewhere, none starts after this returned, but a recv callback that
 * began on another CPU before may still be running.
 *
 * Context: any process context, its ESTABLISHED callback included.
 */
void krdma_conn_abandon(struct krdma_conn *conn)
{
	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->ev_off, true);
	conn->orphan = true;
	spin_unlock_bh(&conn->lock);
	krdma_conn_schedule_teardown(conn, -ECONNABORTED);
}
EXPORT_SYMBOL_GPL(krdma_conn_abandon);

/**
 * krdma_conn_priv - the consumer's pointer of a connection
 * @conn: the connection
 *
 * Context: any.
 * Return: what krdma_conn_opts.priv (of the connection, or of the listener
 * that accepted it) or krdma_conn_set_priv() gave.
 */
void *krdma_conn_priv(struct krdma_conn *conn)
{
	return READ_ONCE(conn->opts.priv);
}
EXPORT_SYMBOL_GPL(krdma_conn_priv);

/**
 * krdma_conn_set_priv - set the consumer's pointer of a connection
 * @conn: the connection
 * @priv: the pointer
 *
 * A passive consumer sets its own per-connection state from the
 * ESTABLISHED event.
 *
 * Context: any; krdma never reads the pointer itself.
 */
void krdma_conn_set_priv(struct krdma_conn *conn, void *priv)
{
	WRITE_ONCE(conn->opts.priv, priv);
}
EXPORT_SYMBOL_GPL(krdma_conn_set_priv);

/**
 * krdma_conn_ops_of - a connection's callbacks
 * @conn: the connection
 *
 * For a consumer handed connections that may be another's (a session's
 * krdma_session_conn_index()): the connection is its own when it has
 * its ops, and only then is krdma_conn_priv() its pointer.
 *
 * Context: any.
 * Return: krdma_conn_opts.ops of the connection (of the listener that
 * accepted it), or NULL.
 */
const struct krdma_conn_ops *krdma_conn_ops_of(struct krdma_conn *conn)
{
	return conn->opts.ops;
}
EXPORT_SYMBOL_GPL(krdma_conn_ops_of);

/**
 * krdma_conn_name - a connection's name
 * @conn: the connection
 *
 * Context: any.
 * Return: its directory's name under /sys/kernel/krdma/conns/ (and in
 * dmesg), valid until the connection is closed, or with a reference of
 * krdma_conn_get() until krdma_conn_put().
 */
const char *krdma_conn_name(struct krdma_conn *conn)
{
	return conn->name;
}
EXPORT_SYMBOL_GPL(krdma_conn_name);

/**
 * krdma_conn_device_name - the name of a connection's RDMA device
 * @conn: a connection from krdma_connect() or a listener
 *
 * Context: any.
 * Return: "rxe0", say; valid until the connection is closed.
 */
const char *krdma_conn_device_name(struct krdma_conn *conn)
{
	return conn->devname;
}
EXPORT_SYMBOL_GPL(krdma_conn_device_name);

/**
 * krdma_conn_is_iwarp - is a connection on an iWARP device?
 * @conn: a connection from krdma_connect() or a listener
 *
 * iWARP has no immediate data (krdma_write_imm() fails with -EOPNOTSUPP)
 * and needs remote write rights on a READ's target.
 *
 * Context: any.
 * Return: true on an iWARP device (siw), false on RoCE or InfiniBand.
 */
bool krdma_conn_is_iwarp(struct krdma_conn *conn)
{
	return conn->iwarp;
}
EXPORT_SYMBOL_GPL(krdma_conn_is_iwarp);

/* Set conn->state, with conn->lock held, and trace a change. */
static void krdma_conn_set_state_locked(struct krdma_conn *conn,
					enum krdma_conn_state st)
{
	if (conn->state != st)
		trace_krdma_conn_state(conn->name, conn->state, st,
				       READ_ONCE(conn->cm_event));
	conn->state = st;
}

/*
 * Every change of conn->state: the move krdma_conn_next_state() allows,
 * or none (false).  Called with conn->lock held.  A connection that ends
 * other than by its owner's krdma_close() tells its consumer (a revoke
 * that tears a connection down does too).
 */
static bool krdma_conn_event_locked(struct krdma_conn *conn,
				    enum krdma_conn_event ev)
{
	int next = krdma_conn_next_state(conn->state, ev);

	if (next < 0)
		return false;
	krdma_conn_set_state_locked(conn, next);
	/* Not for the owner's krdma_close(): it stopped events first. */
	if (next == KRDMA_CONN_DISCONNECTED || next == KRDMA_CONN_ERROR)
		krdma_conn_ev_queue_locked(conn, KRDMA_EVP_END);
	return true;
}

/*
 * Record @err as the connection's error, with conn->lock held: when
 * krdma_cause_replaces() says so, and then a cause given after a
 * placeholder makes a "disconnected" connection "error" (the disconnect
 * was only the peer's reaction).  @wc: the failed work completion's
 * status, or IB_WC_SUCCESS.
 */
static bool krdma_conn_cause_locked(struct krdma_conn *conn, int err,
				    bool weak, enum ib_wc_status wc)
{
	if (!krdma_cause_replaces(conn->error, conn->error_weak,
				  conn->peer_left, weak, wc))
		return false;
	if (conn->error && conn->state == KRDMA_CONN_DISCONNECTED)
		krdma_conn_set_state_locked(conn, KRDMA_CONN_ERROR);
	conn->error = err;
	conn->error_weak = weak;
	conn->error_wc = wc;
	return true;
}

/*
 * Returns whether the connection had no error before.  @wc: the status of
 * the failed work completion that is the cause, or IB_WC_SUCCESS.
 */
static bool __krdma_conn_set_error(struct krdma_conn *conn, int err,
				   bool weak, enum ib_wc_status wc)
{
	bool first;

	spin_lock_bh(&conn->lock);
	first = !conn->error;
	krdma_conn_cause_locked(conn, err, weak, wc);
	krdma_conn_event_locked(conn, KRDMA_CONN_EV_FAILED);
	/* Not handed over yet (iWARP): nobody else would close it. */
	if (first && conn->handover_wait)
		krdma_handover_kick(conn);
	spin_unlock_bh(&conn->lock);
	wake_up_all(&conn->wq);
	return first;
}

/* Record the first error and move to the error state; wakes every waiter. */
void krdma_conn_set_error(struct krdma_conn *conn, int err)
{
	__krdma_conn_set_error(conn, err, false, IB_WC_SUCCESS);
}

/* The same, for a failed work completion of status @wc (not a flush). */
void krdma_conn_set_error_wc(struct krdma_conn *conn, int err,
			     enum ib_wc_status wc)
{
	__krdma_conn_set_error(conn, err, false, wc);
}

/*
 * The status of the failed work completion that ended @conn, or
 * IB_WC_SUCCESS when its end had another cause (or it has not ended).
 */
enum ib_wc_status krdma_conn_wc_status(struct krdma_conn *conn)
{
	enum ib_wc_status wc;

	spin_lock_bh(&conn->lock);
	wc = conn->error_wc;
	spin_unlock_bh(&conn->lock);
	return wc;
}

/*
 * A flushed work request: the QP left RTS for a reason not seen yet.  The
 * connection fails now (-ECONNRESET), and the cause, when its completion
 * comes after the flush (a receive flushed before the failed send lands
 * in the CQ), replaces that.
 */
void krdma_conn_set_error_flush(struct krdma_conn *conn)
{
	/*
	 * The first sign of trouble on a working connection.  Usually its
	 * cause follows: the peer's disconnect (siw flushes the receives
	 * before the CM reports it, so every peer leaving starts so), or
	 * the failed completion.  If none has come after KRDMA_FLUSH_QUIET,
	 * say so, or a device that moves its QP to ERROR without an error
	 * completion (rxe after a failed local operation it re-ran) fails
	 * the connection silently.
	 */
	if (!__krdma_conn_set_error(conn, -ECONNRESET, true,
				    IB_WC_WR_FLUSH_ERR))
		return;
	krdma_conn_get(conn);	/* the work's */
	if (!queue_delayed_work(krdma_wq, &conn->flush_work, KRDMA_FLUSH_QUIET))
		krdma_conn_put(conn);
}

/* The one line for a flush whose cause never came. */
static void krdma_conn_flush_check(struct krdma_conn *conn)
{
	bool silent;

	spin_lock_bh(&conn->lock);
	silent = conn->error_weak && conn->error_wc == IB_WC_WR_FLUSH_ERR &&
		 conn->state == KRDMA_CONN_ERROR;
	spin_unlock_bh(&conn->lock);
	if (silent)
		pr_warn_ratelimited("%s: work requests flushed: the QP left RTS, no cause reported\n",
				    conn->name);
}

static void krdma_conn_flush_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(to_delayed_work(work),
					       struct krdma_conn, flush_work);

	krdma_conn_flush_check(conn);
	krdma_conn_put(conn);	/* the work's */
}

/**
 * krdma_conn_fail_locked - a post under conn->lock failed: fail the connection
 * @conn: the connection
 * @err: what the post returned
 * @what: what was being posted, for the one dmesg line
 *
 * The connection posts nothing more, fails with @err (its ERROR event),
 * and its teardown is queued, so that the peer is told at once rather
 * than by its heartbeats, and whoever waits on it wakes.  For every post
 * the device refuses: krdma's own (a credit message, a heartbeat, a
 * receive going back) and its consumers' (a message, a transfer, an
 * atomic, a registration or an invalidation).  On a connection that had
 * failed already (krdma_mr_revoke() posts on one; siw refuses posts once
 * its QP left RTS) the refusal is the failure's consequence: it says
 * nothing and does not replace the cause recorded, even a placeholder.
 *
 * Context: conn->lock held, any context up to softirq; does not sleep.
 */
void krdma_conn_fail_locked(struct krdma_conn *conn, int err,
			    const char *what)
{
	bool first = !conn->error;

	lockdep_assert_held(&conn->lock);
	if (first)
		pr_warn_ratelimited("%s: posting %s failed (%d): failing the connection\n",
				    conn->name, what, err);
	conn->qp_ok = false;
	krdma_conn_cause_locked(conn, err, !first, IB_WC_SUCCESS);
	krdma_conn_event_locked(conn, KRDMA_CONN_EV_FAILED);
	/* The caller's context holds a reference: not the last put. */
	krdma_conn_get(conn);
	if (!queue_work(krdma_wq, &conn->teardown_work))
		krdma_conn_put(conn);
	wake_up_all(&conn->wq);
}

/*
 * A reference on the QP for a post: 0, or why there is none.  @failed: a
 * connection in the error state will do, as long as teardown has not
 * begun (krdma_mr_revoke(): its QP may still admit remote access).
 */
int __krdma_conn_qp_get(struct krdma_conn *conn, bool failed)
{
	int ret = 0;

	spin_lock_bh(&conn->lock);
	if (krdma_conn_usable(conn) || (failed && conn->qp_ok))
		conn->qp_users++;
	else
		ret = conn->error ?: -ENOTCONN;
	spin_unlock_bh(&conn->lock);
	return ret;
}

void krdma_conn_qp_put(struct krdma_conn *conn)
{
	bool wake;

	spin_lock_bh(&conn->lock);
	wake = --conn->qp_users == 0 && !conn->qp_ok;
	spin_unlock_bh(&conn->lock);
	if (wake)
		wake_up_all(&conn->wq);
}

static bool krdma_conn_idle(struct krdma_conn *conn)
{
	bool idle;

	spin_lock_bh(&conn->lock);
	idle = conn->qp_users == 0;
	spin_unlock_bh(&conn->lock);
	return idle;
}

/*
 * On RoCE the CM's messages (MADs) go out of the device's GSI QP (QP1)
 * through the IP stack.  rxe fails a MAD it finds no route for, as it is
 * when its netdev is down, and moves QP1 to the error state; that flushes
 * the receives of the MAD layer, which never posts them again (it expects
 * a send error to leave QP1 in SQE, from where it takes it back to RTS):
 * from then on the device takes no CM message, no connection request
 * included, until it is removed.  rdma_disconnect() and rdma_destroy_id()
 * of a connected or connecting id send one (a DREQ, a REJ), and a
 * connection fails when its link goes down.  So on a port that is down
 * the CM says nothing: teardown drains and destroys the QP as always, and
 * leaves the id, with its goodbye, to krdma_unpark() once the port is up.
 */
static bool krdma_id_port_down(struct rdma_cm_id *id)
{
	const struct rdma_dev_addr *da = &id->route.addr.dev_addr;
	struct net_device *ndev;
	enum ib_port_state st;
	bool down = false;

	if (!ib_get_cached_port_state(id->device, id->port_num, &st) &&
	    st != IB_PORT_ACTIVE)
		return true;
	/* The port's state follows its netdev's from a work item. */
	if (!da->bound_dev_if)
		return false;
	ndev = dev_get_by_index(da->net ?: &init_net, da->bound_dev_if);
	if (ndev) {
		down = !netif_running(ndev);
		dev_put(ndev);
	}
	return down;
}

/* Whether @conn's CM goodbye must wait for its port. */
static bool krdma_conn_must_park(struct krdma_conn *conn)
{
	struct rdma_cm_id *id = conn->cm_id;

	return id && conn->kdev && id->device &&
	       rdma_cap_ib_cm(id->device, id->port_num) &&
	       krdma_id_port_down(id);
}

/*
 * Park @conn's cm_id on its device instead of destroying it, once its QP
 * is gone: true if so.
 */
static bool krdma_conn_park(struct krdma_conn *conn)
{
	struct krdma_device *kdev = conn->kdev;
	struct rdma_cm_id *id = conn->cm_id;
	bool parked = false;

	mutex_lock(&kdev->park_mutex);
	if (!kdev->park_closed) {
		kref_get(&kdev->ref);
		conn->park_kdev = kdev;
		krdma_conn_get(conn);	/* the id's context */
		list_add_tail(&conn->park_entry, &kdev->parked);
		parked = true;
	}
	mutex_unlock(&kdev->park_mutex);
	if (!parked)
		return false;
	pr_debug_ratelimited("%s: port %u of %s is down: disconnect deferred until it is up\n",
			     conn->name, id->port_num, conn->devname);
	/* It may be up again already; the work polls while any is parked. */
	mod_delayed_work(krdma_wq, &kdev->park_work, 0);
	return true;
}

/**
 * krdma_unpark - destroy the cm_ids parked on a device
 * @kdev: the device
 * @all: every one, and none parked any more (device removal); else those
 *	whose port is up again
 *
 * Context: process context; sleeps.
 */
void krdma_unpark(struct krdma_device *kdev, bool all)
{
	struct krdma_conn *conn, *tmp;
	LIST_HEAD(todo);
	bool more;

	mutex_lock(&kdev->park_mutex);
	if (all)
		kdev->park_closed = true;
	list_for_each_entry_safe(conn, tmp, &kdev->parked, park_entry)
		if (all || !krdma_id_port_down(conn->cm_id))
			list_move_tail(&conn->park_entry, &todo);
	more = !list_empty(&kdev->parked);
	mutex_unlock(&kdev->park_mutex);

	list_for_each_entry_safe(conn, tmp, &todo, park_entry) {
		list_del_init(&conn->park_entry);
		mutex_lock(&conn->teardown_mutex);
		/* Its handler ignores every event: conn->dying. */
		rdma_destroy_id(conn->cm_id);
		conn->cm_id = NULL;
		conn->park_kdev = NULL;
		mutex_unlock(&conn->teardown_mutex);
		pr_debug_ratelimited("%s: %s, disconnected\n", conn->name,
				     all ? "device removed" : "port up");
		krdma_device_put(kdev);
		krdma_conn_put(conn);
	}
	/* Not mod_: that would put off a port event's immediate run. */
	if (more)
		queue_delayed_work(krdma_wq, &kdev->park_work, HZ);
}

/*
 * Move @conn's QP to ERROR: the device flushes every work request still
 * posted, and the completions inject's delay= holds back go to their
 * handlers now (as a device would flush them), so whoever waits for one
 * hears at once.  A device that refuses says so in one line: whoever
 * waits then waits for the device.  Process context; sleeps.
 */
void krdma_conn_qp_error(struct krdma_conn *conn)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	int ret;

	ret = ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
	if (ret)
		pr_warn_ratelimited("%s: cannot move the QP to ERROR (%d), still waiting for the device\n",
				    conn->name, ret);
	krdma_inject_drain(&conn->inj);
}

/*
 * The end of an active connect's handshake, @status: krdma_connect() waits
 * for cm_done on conn->wq, where krdma_connect_cancel() wakes it too.
 */
static void krdma_connect_complete(struct krdma_conn *conn, int status)
{
	conn->cm_status = status;
	complete_all(&conn->cm_done);
	wake_up_all(&conn->wq);
}

/*
 * Release every RDMA resource of @conn, in the order the verbs want:
 * stop the CM handler, stop new posts, disconnect, drain, deregister,
 * destroy the QP and CQ, then the cm_id.  Runs once; later calls return at
 * once.  Waiters see @err (or -ECONNRESET).  Never called from the CM
 * handler of @conn's own id.
 */
void krdma_conn_teardown(struct krdma_conn *conn, int err)
{
	bool park;

	mutex_lock(&conn->teardown_mutex);
	if (conn->torn_down)
		goto out;
	if (err == -ENODEV)
		pr_warn_ratelimited("%s: RDMA device removed, connection closed\n",
				    conn->name);

	if (conn->cm_id) {
		rdma_lock_handler(conn->cm_id);
		conn->dying = true;
		rdma_unlock_handler(conn->cm_id);
	}
	/*
	 * Like the CM handler, a handover acts no more (it checks dying),
	 * and nothing queues it again: a receive completion or an error
	 * queues it only while handover_wait is set (under conn->lock).
	 * Else one queued after this cancel would run on a destroyed id.
	 */
	spin_lock_bh(&conn->lock);
	conn->handover_wait = false;
	spin_unlock_bh(&conn->lock);
	if (cancel_delayed_work_sync(&conn->handover_work))
		krdma_conn_put(conn);

	spin_lock_bh(&conn->lock);
	/* A cause (device removal, say) replaces a placeholder. */
	krdma_conn_cause_locked(conn, err ?: -ECONNRESET, !err, IB_WC_SUCCESS);
	krdma_conn_event_locked(conn, err ? KRDMA_CONN_EV_TEARDOWN_ERR :
					    KRDMA_CONN_EV_TEARDOWN_OK);
	conn->qp_ok = false;
	conn->rx_closed = true;
	spin_unlock_bh(&conn->lock);
	wake_up_all(&conn->wq);
	krdma_hb_stop(conn);
	/*
	 * A poster lets go of the QP at once; a waiter for its own work
	 * request (a registration, an invalidation: krdma_mr.c) only when
	 * that completes.  A device that left the request hanging completes
	 * it when the QP goes to ERROR (siw, its socket gone, keeps the QP
	 * in RTS with its send queue stopped), which the drain below would
	 * do but for that reference: after a grace, go to ERROR now rather
	 * than wait out the waiter's KRDMA_POST_TIMEOUT.
	 */
	if (!wait_event_timeout(conn->wq, krdma_conn_idle(conn),
				KRDMA_TEARDOWN_GRACE) && conn->qp) {
		pr_warn_ratelimited("%s: teardown: a work request outstanding after %u ms; moving the QP to ERROR\n",
				    conn->name,
				    jiffies_to_msecs(KRDMA_TEARDOWN_GRACE));
		krdma_conn_qp_error(conn);
	}
	wait_event(conn->wq, krdma_conn_idle(conn));

	if (!completion_done(&conn->cm_done))
		krdma_connect_complete(conn, conn->error);

	/*
	 * iWARP (siw): rdma_disconnect() takes the QP to CLOSING, which
	 * flushes nothing while no WQE is in progress, and the move to ERROR
	 * in ib_drain_qp() then flushes the SQ only if one is: WQEs still
	 * queued are flushed later by siw's CM work, after its drain WR
	 * completed at once.  So ib_drain_qp() returned with one-sided chunks
	 * and sends outstanding, their callbacks never ran before
	 * krdma_close() returned, and rdma_rw's MRs were still in use when
	 * the QP was destroyed (WARN in ib_destroy_qp_user).  From RTS, ERROR
	 * flushes the whole SQ at once: go there first.
	 */
	if (conn->qp && conn->established &&
	    rdma_protocol_iwarp(conn->kdev->ibdev, conn->port))
		krdma_conn_qp_error(conn);
	park = krdma_conn_must_park(conn);
	if (conn->qp && conn->established && !park)
		rdma_disconnect(conn->cm_id);
	/*
	 * Drain before the handshake is done too: receives are posted from
	 * the start, and their flushes land in a shared (pooled) CQ after
	 * the QP and the buffers are gone.
	 */
	if (conn->qp)
		krdma_drain_qp(conn);
	/*
	 * Completions inject's delay= holds back go to their handlers now,
	 * before the ops, MRs and buffers they point to are freed.  The
	 * drain's own completion is not krdma's and was never held: every
	 * completion of the QP came before it, so none can come after.
	 */
	krdma_inject_drain(&conn->inj);
	krdma_rw_reap(conn);
	krdma_conn_release_mrs(conn);
	krdma_conn_destroy_qp(conn);
	if (conn->cm_id && !(park && krdma_conn_park(conn))) {
		rdma_destroy_id(conn->cm_id);
		conn->cm_id = NULL;
	}
	if (conn->kdev) {
		krdma_device_put(conn->kdev);
		conn->kdev = NULL;
	}
	conn->torn_down = true;
	krdma_conn_flush_waiters(conn);
	wake_up_all(&conn->wq);
out:
	mutex_unlock(&conn->teardown_mutex);
}

/*
 * After teardown: a passive connection nobody took yet (in set-up, not in
 * an accept queue) has nobody to close it, so it goes now.
 */
static void krdma_conn_reap_orphan(struct krdma_conn *conn)
{
	bool reap;

	spin_lock_bh(&conn->lock);
	reap = conn->orphan && list_empty(&conn->accept_entry);
	spin_unlock_bh(&conn->lock);
	if (reap && krdma_conn_unpublish(conn))
		krdma_conn_put(conn);	/* the owner's (nobody's) reference */
}

static void krdma_teardown_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(work, struct krdma_conn,
					       teardown_work);

	krdma_conn_teardown(conn, conn->error ?: -ECONNRESET);
	krdma_conn_reap_orphan(conn);
	krdma_conn_put(conn);	/* the work's reference */
}

/*
 * Queue teardown from a context that must not block (the CM handler) or
 * that holds the QP (krdma_conn_qp_get()).
 */
void krdma_conn_schedule_teardown(struct krdma_conn *conn, int err)
{
	krdma_conn_set_error(conn, err);
	krdma_conn_get(conn);
	if (!queue_work(krdma_wq, &conn->teardown_work))
		krdma_conn_put(conn);
}

/**
 * krdma_close - disconnect and release a connection
 * @conn: connection from krdma_connect(), krdma_accept() or a listener's
 *	ESTABLISHED event
 *
 * Outstanding operations complete with an error before this returns, and
 * no event callback of @conn runs any more.  @conn must not be used
 * afterwards.
 *
 * Context: process context; sleeps.  Not from @conn's own event callback.
 */
void krdma_close(struct krdma_conn *conn)
{
	/* Its owner saw the failure: a flush waiting for a cause is not told. */
	if (cancel_delayed_work_sync(&conn->flush_work))
		krdma_conn_put(conn);
	krdma_conn_ev_stop(conn);
	krdma_conn_teardown(conn, 0);
	/* krdma_msg_release() after this would touch freed memory. */
	WARN_ON_ONCE(READ_ONCE(conn->rx_kept));
	if (krdma_conn_unpublish(conn))
		krdma_conn_put(conn);
}
EXPORT_SYMBOL_GPL(krdma_close);

/**
 * krdma_conn_fail - fail a connection, as an error of the transport would
 * @conn: the connection
 * @err: the cause, a negative errno (-ETIMEDOUT for a consumer's own
 *	timeout, say)
 *
 * For a consumer that gave up on its peer (a request that timed out, a
 * reply it cannot parse): the connection fails with @err unless it had
 * failed already, its waiters wake, and its QP goes to the error state
 * and is drained in a work item, so the peer is told and every operation
 * still out completes with an error.  The consumer gets the end event
 * (KRDMA_EVENT_ERROR with @err), and a session reconnects as after any
 * failure.  The connection still has to be closed by its owner.
 *
 * Context: any context up to softirq; does not sleep.
 */
void krdma_conn_fail(struct krdma_conn *conn, int err)
{
	if (WARN_ON_ONCE(err >= 0 || err < -MAX_ERRNO))
		err = -EIO;
	krdma_conn_schedule_teardown(conn, err);
}
EXPORT_SYMBOL_GPL(krdma_conn_fail);

/**
 * krdma_conn_shutdown - stop a connection now, without releasing it
 * @conn: the connection
 *
 * Disconnects: every operation still out completes with an error, and
 * every waiter (krdma_recv(), a synchronous transfer) returns, before
 * this returns.  For a consumer whose other threads may still hold @conn:
 * they get errors from here on, and its owner calls krdma_close() once
 * they are done.
 *
 * Context: process context; sleeps.  Not from @conn's own callbacks.
 */
void krdma_conn_shutdown(struct krdma_conn *conn)
{
	krdma_conn_teardown(conn, 0);
}
EXPORT_SYMBOL_GPL(krdma_conn_shutdown);

/**
 * krdma_conn_waitq - where a connection's waiters sleep
 * @conn: the connection
 *
 * Woken when a message is ready for krdma_recv(), when the connection
 * changes state (fails, disconnects) and when the last message its
 * consumer kept is released after it failed (krdma_msgs_kept()): for a
 * consumer that waits on several objects at once (poll() of /dev/krdma,
 * a session's failed connections) with its own wait entry, or that waits
 * with wait_event() for a condition that mixes the connection's state
 * with its own (the self-test waits there for its peer's replies, and
 * wakes it itself when one came: krdma's own waiters take a spurious
 * wakeup in their stride).  Remove the entry before krdma_close().
 *
 * A wake function of an entry of one's own may run with the connection's
 * lock held (krdma wakes the queue under it where what it tells must not
 * outlive the lock: a failure, the last kept message's release), with
 * interrupts off: it must not sleep, and must not call krdma on that
 * connection, krdma_msgs_kept() included; it may take a lock of its own
 * that is never held around a call of krdma's on the connection, and
 * queue work.
 *
 * Context: any.
 * Return: the wait queue head.
 */
wait_queue_head_t *krdma_conn_waitq(struct krdma_conn *conn)
{
	return &conn->wq;
}
EXPORT_SYMBOL_GPL(krdma_conn_waitq);

/**
 * krdma_conn_query - a snapshot of a connection
 * @conn: the connection
 * @info: filled in
 *
 * Context: any but hard interrupt; does not sleep.
 */
void krdma_conn_query(struct krdma_conn *conn, struct krdma_conn_info *info)
{
	struct krdma_stats *st = &conn->stats;

	memset(info, 0, sizeof(*info));
	spin_lock_bh(&conn->lock);
	info->state = conn->state;
	info->error = conn->error;
	info->wc_status = conn->error_wc;
	info->credits = conn->cr.credits;
	spin_unlock_bh(&conn->lock);
	info->queue_depth = conn->depth;
	info->max_msg_size = conn->max_msg;
	info->iwarp = conn->iwarp;
	memcpy(&info->local, &conn->laddr, sizeof(info->local));
	memcpy(&info->peer, &conn->raddr, sizeof(info->peer));
	strscpy(info->name, conn->name, sizeof(info->name));
	strscpy(info->device, conn->devname, sizeof(info->device));
	info->comp_vector = READ_ONCE(conn->comp_vector);
	info->send_ops = atomic64_read(&st->send_ops);
	info->send_bytes = atomic64_read(&st->send_bytes);
	info->recv_ops = atomic64_read(&st->recv_ops);
	info->recv_bytes = atomic64_read(&st->recv_bytes);
	info->write_ops = atomic64_read(&st->write_ops);
	info->write_bytes = atomic64_read(&st->write_bytes);
	info->read_ops = atomic64_read(&st->read_ops);
	info->read_bytes = atomic64_read(&st->read_bytes);
	info->atomic_ops = atomic64_read(&st->atomic_ops);
	info->errors = atomic64_read(&st->errors);
}
EXPORT_SYMBOL_GPL(krdma_conn_query);

/**
 * krdma_conn_error - why a connection stopped working
 * @conn: the connection
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: 0 while the connection is usable, else the negative errno that
 * ended it (-ECONNRESET for a disconnect, -ENODEV for device removal, the
 * work completion's error for a failed operation).
 */
int krdma_conn_error(struct krdma_conn *conn)
{
	int ret;

	spin_lock_bh(&conn->lock);
	ret = conn->state == KRDMA_CONN_CONNECTED ? 0 :
	      (conn->error ?: -ENOTCONN);
	spin_unlock_bh(&conn->lock);
	return ret;
}
EXPORT_SYMBOL_GPL(krdma_conn_error);

/**
 * krdma_max_msg_size - negotiated largest message
 * @conn: the connection
 *
 * Context: any; does not sleep (fixed once connected).
 * Return: the size in bytes.
 */
u32 krdma_max_msg_size(struct krdma_conn *conn)
{
	return conn->max_msg;
}
EXPORT_SYMBOL_GPL(krdma_max_msg_size);

/**
 * krdma_queue_depth - negotiated queue depth
 * @conn: the connection
 *
 * Context: any; does not sleep (fixed once connected).
 * Return: how many messages (and one-sided operations) may be in flight.
 */
u32 krdma_queue_depth(struct krdma_conn *conn)
{
	return conn->depth;
}
EXPORT_SYMBOL_GPL(krdma_queue_depth);

/* ---- handshake ----------------------------------------------------- */

static void krdma_fill_conn_param(struct krdma_conn *conn,
				  struct rdma_conn_param *param,
				  const void *pdata, u8 plen)
{
	const struct ib_device_attr *a = &conn->kdev->ibdev->attrs;

	memset(param, 0, sizeof(*param));
	param->private_data = pdata;
	param->private_data_len = plen;
	/*
	 * As many RDMA READs and atomics in flight as the device takes, each
	 * way (nvme-rdma asks the same): a connection's queue depth of READs
	 * must not wait for one another's round trips.  The accepting side
	 * lowers each to what the peer offers (krdma_connect_request()): a
	 * peer gets at most the device's own limit of responder state.
	 */
	param->responder_resources = min_t(u32, a->max_qp_rd_atom, U8_MAX);
	param->initiator_depth = min_t(u32, a->max_qp_init_rd_atom, U8_MAX);
	/* rxe treats 7 as "retry forever": a dead peer would never be noticed. */
	param->retry_count = 6;
	param->rnr_retry_count = 7;
	param->flow_control = 1;
}

static int krdma_conn_prepare(struct krdma_conn *conn)
{
	int ret;

	conn->kdev = krdma_device_get_by_ib(conn->cm_id->device);
	if (!conn->kdev)
		return -ENODEV;
	krdma_device_name(conn->kdev, conn->devname, sizeof(conn->devname));
	conn->port = conn->cm_id->port_num;
	/*
	 * A lost peer must be noticed in bounded time: 2^17 * 4.096 us (~537
	 * ms, the order of the RDMA CM's own RoCE default) per try, times the
	 * retry count: under 4 s.  The heartbeats notice a vanished peer
	 * anyway; 134 ms a try made rxe between two busy guests give up on
	 * live peers (test/guest/soak.sh).  iWARP leaves this to TCP.
	 */
	rdma_set_ack_timeout(conn->cm_id, 17);
	ret = krdma_conn_create_qp(conn);
	if (ret)
		return ret;
	conn->qp_num = conn->qp->qp_num;
	return krdma_conn_post_recvs(conn);
}

static int krdma_conn_do_connect(struct krdma_conn *conn)
{
	struct rdma_conn_param param;
	struct {
		struct krdma_hello hello;
		u8 pdata[KRDMA_MAX_PRIVATE_DATA];
	} __packed req;
	struct krdma_hello *h = &req.hello;
	u8 len = sizeof(*h) + conn->opts.private_data_len;

	krdma_hello_encode(h, conn->depth, conn->max_msg,
			   krdma_hb_asked(&conn->opts));
	h->pdata_len = conn->opts.private_data_len;
	memcpy(req.pdata, conn->pdata, conn->opts.private_data_len);
	/* Test hooks: speak a wrong handshake to exercise the peer's checks. */
	switch (conn->test_hello) {
	case KRDMA_TEST_HELLO_BAD_MAGIC:
		h->magic = cpu_to_be32(0xdeadbeef);
		break;
	case KRDMA_TEST_HELLO_NEXT_VERSION:
		h->version = KRDMA_PROTO_VERSION + 1;
		break;
	case KRDMA_TEST_HELLO_SHORT:
		len = 4;
		break;
	case KRDMA_TEST_HELLO_ZERO_DEPTH:
		h->queue_depth = cpu_to_be16(0);
		break;
	}
	/*
	 * What the peer may send from the start: our offer until its accept
	 * says what was agreed (krdma_active_established()), as a message
	 * may come before that event.
	 */
	krdma_credit_init(&conn->cr, conn->depth);
	krdma_fill_conn_param(conn, &param, &req, len);
	return rdma_connect_locked(conn->cm_id, &param);
}

/*
 * The handshake ended: @status 0 if the CM established the connection.
 * Returns what the connect ends with, which is the connection's error if
 * it failed meanwhile (a receive flushed by device removal, ...): it must
 * not become usable then.
 */
static int krdma_connect_done(struct krdma_conn *conn, int status)
{
	if (status) {
		krdma_conn_set_error(conn, status);
	} else {
		spin_lock_bh(&conn->lock);
		/* The CM connection exists either way: teardown ends it. */
		conn->established = true;
		if (krdma_conn_event_locked(conn, KRDMA_CONN_EV_ESTABLISHED))
			conn->qp_ok = true;
		else
			status = conn->error ?: -ECONNRESET;
		spin_unlock_bh(&conn->lock);
		/* iWARP: the passive side waits for our first word. */
		if (!status && conn->active && conn->iwarp) {
			status = krdma_hb_first(conn);
			if (status)
				krdma_conn_set_error(conn, status);
		}
		wake_up_all(&conn->wq);
		if (!status)
			krdma_hb_start(conn);
	}
	if (conn->active)
		krdma_connect_complete(conn, status);
	return status;
}

static int krdma_active_established(struct krdma_conn *conn,
				    struct rdma_cm_event *ev)
{
	struct krdma_params remote, local = {
		.queue_depth = conn->depth, .max_msg_size = conn->max_msg,
		.heartbeat_ms = krdma_hb_asked(&conn->opts),
	};
	const char *why = NULL;
	int reason, ret = -EPROTO;

	reason = krdma_hello_decode(ev->param.conn.private_data,
				    ev->param.conn.private_data_len, &remote);
	/*
	 * The accept carries what the passive side settled on: never more
	 * than we offered, and never less than any krdma offers (a message
	 * must hold a token).  On IB a short reply reads as zeros.
	 */
	if (!reason && (remote.queue_depth > local.queue_depth ||
			remote.max_msg_size > local.max_msg_size ||
			remote.max_msg_size < sizeof(struct krdma_token_wire) ||
			!remote.queue_depth ||
			remote.heartbeat_ms > local.heartbeat_ms ||
			(remote.heartbeat_ms &&
			 remote.heartbeat_ms < KRDMA_MIN_HEARTBEAT_MS)))
		reason = KRDMA_REJ_PARAMS;
	if (reason) {
		why = krdma_rej_str(reason);
		ret = krdma_rej_errno(reason);
		goto bad;
	}
	/*
	 * The QP is in RTS and receiving already (the CM moved it before
	 * this event), and the peer may have sent (on IB its QP is in RTS
	 * from its accept on, before its reply went out): conn->lock, as
	 * recv_done() takes it, and what its messages took (and the
	 * receives reposted for them) stays counted.
	 * Those messages were checked against our offer, the most the peer
	 * may accept with: one longer than it accepted, or more of them than
	 * the depth it accepted, is a breach of its own accept (else the
	 * consumer would get a message past krdma_max_msg_size(), or a
	 * connection whose peer has no credit it knows of).  Later ones
	 * meet the agreed values in recv_done(), under this lock.
	 */
	spin_lock_bh(&conn->lock);
	if (conn->rx_early_len > remote.max_msg_size)
		why = "a message longer than agreed came before it";
	else if (krdma_credit_agreed(&conn->cr, remote.queue_depth))
		why = "more messages than the agreed depth came before it";
	if (!why) {
		conn->depth = remote.queue_depth;
		WRITE_ONCE(conn->max_msg, remote.max_msg_size);
		conn->hb_ms = remote.heartbeat_ms;
	}
	spin_unlock_bh(&conn->lock);
	if (!why)
		return 0;
bad:
	pr_warn_ratelimited("%s: peer %pISpc accepted with a bad handshake: %s\n",
			    conn->name, &conn->raddr, why);
	return ret;
}

/*
 * Give an established passive connection to its listener's accept queue
 * or consumer.  In the CM handler of its id, or holding that handler's
 * lock (krdma_handover_work()), with conn->dying false.
 */
static void krdma_passive_handover(struct krdma_conn *conn)
{
	struct krdma_listener *l = conn->listener;
	bool queued = false, handed = false;

	spin_lock_bh(&l->lock);
	if (!l->closed) {
		l->accepted++;
		if (!conn->opts.ops) {
			list_add_tail(&conn->accept_entry, &l->accept_q);
			queued = true;
		} else {
			/*
			 * The consumer's from its ESTABLISHED event on,
			 * queued before the listener can be closed: its
			 * close waits for that event (ev_up_out).
			 */
			krdma_conn_ev_up(conn);
			handed = true;
		}
	}
	spin_unlock_bh(&l->lock);
	if (handed)
		return;
	if (!queued) {
		/*
		 * The listener closed meanwhile and nobody will take this
		 * one.  It stays an orphan, so that the teardown work also
		 * unpublishes and frees it.
		 */
		krdma_conn_schedule_teardown(conn, -ECONNABORTED);
		return;
	}
	/* Owned now, by the accept queue. */
	conn->orphan = false;
	wake_up_all(&l->wq);
}

/*
 * Queue the handover after @delay jiffies, with a reference for it; one
 * queued already keeps its time (a kick is never put off).
 */
static void krdma_handover_queue(struct krdma_conn *conn, unsigned long delay)
{
	krdma_conn_get(conn);
	if (!queue_delayed_work(krdma_wq, &conn->handover_work, delay))
		krdma_conn_put(conn);
}

/* Run the handover now, also when it is queued for its deadline. */
static void krdma_handover_kick(struct krdma_conn *conn)
{
	krdma_conn_get(conn);
	/* Pending: it had its reference already. */
	if (mod_delayed_work(krdma_wq, &conn->handover_work, 0))
		krdma_conn_put(conn);
}

/*
 * How often the handover polls a polled connection that waits: from one
 * jiffy, twice as long each time, up to this.
 */
#define KRDMA_HANDOVER_POLL_MAX_MS	50

/*
 * iWARP: MPA lets the initiator alone send the first FPDU (RFC 6581,
 * section 1), and siw fails a connect whose MPA reply arrives with data
 * behind it (CONNECT_ERROR, -EINVAL: "connect error (-22)"), as happened
 * when a listener's consumer sent at once.  So the active side sends a
 * heartbeat ping as soon as it is established (krdma_hb_first()), and the
 * passive side, which itself sends only in answer to what came, gives the
 * connection to its consumer once the first message arrived: at once when
 * it came before the ESTABLISHED event, else from the receive completion
 * (krdma_conn_peer_spoke_locked()) through this work, or, polled, from
 * polling here.  Until then the connection counts against the listener's
 * backlog.  Its heartbeats or the peer's disconnect may end it, but a
 * peer that turned heartbeats off and says nothing would hold its place
 * for ever (a krdma-blk export never sees it, so its HELLO timeout never
 * starts): so the first message must come within
 * KRDMA_HANDOVER_TIMEOUT_MS (30 s) of the ESTABLISHED event
 * (handover_by), else the connection is closed with -ETIMEDOUT, never
 * handed over.  A krdma peer sends its ping at once, and nudges a stuck
 * one from 200 ms on for 15.8 s (krdma_hb.c); under TCG iw_cm's one
 * ordered workqueue runs every CONNECT_REQUEST and ESTABLISHED handler
 * of the host in turn.  So the bound is a constant of its own, well past
 * both, and not the listener's timeout_ms, which bounds a connect.
 *
 * The work is queued for that deadline, and run at once by the receive
 * (or a failure) that ends the wait (krdma_handover_kick()).  A polled
 * connection has no completion to run it: the work polls, and comes
 * back after handover_poll jiffies, twice as long each time up to
 * KRDMA_HANDOVER_POLL_MAX_MS.
 */
static void krdma_handover_work(struct work_struct *work)
{
	struct krdma_conn *conn = container_of(to_delayed_work(work),
					       struct krdma_conn,
					       handover_work);
	bool wait, go, late = false;
	unsigned long now, left;

	/* Nobody else polls a polled connection that nobody owns yet. */
	if (conn->opts.poll)
		krdma_poll_cq(conn, conn->cq_size);
	rdma_lock_handler(conn->cm_id);
	spin_lock_bh(&conn->lock);
	now = jiffies;
	wait = !conn->dying && conn->handover_wait;
	/* A connection that failed first goes too: its owner closes it. */
	go = wait && (conn->peer_spoke || conn->error);
	if (wait && !go)
		late = !time_before(now, conn->handover_by);
	if (go || late) {
		conn->handover_wait = false;
	} else if (wait) {
		left = conn->handover_by - now;
		if (conn->opts.poll) {
			left = min(left, conn->handover_poll);
			conn->handover_poll =
				min(2 * conn->handover_poll,
				    msecs_to_jiffies(KRDMA_HANDOVER_POLL_MAX_MS));
		}
		krdma_handover_queue(conn, left);
	}
	spin_unlock_bh(&conn->lock);
	if (go) {
		krdma_passive_handover(conn);
	} else if (late) {
		/* Still an orphan: the teardown work frees it. */
		pr_warn_ratelimited("%s: no word from %pISpc in %u ms since it connected, connection closed\n",
				    conn->name, &conn->raddr,
				    KRDMA_HANDOVER_TIMEOUT_MS);
		krdma_conn_schedule_teardown(conn, -ETIMEDOUT);
	}
	rdma_unlock_handler(conn->cm_id);
	krdma_conn_put(conn);	/* the work's reference */
}

/*
 * A receive completed (conn->lock held; softirq, a kworker or the
 * poller): an iWARP passive connection waiting for it is handed over.
 */
void krdma_conn_peer_spoke_locked(struct krdma_conn *conn)
{
	WRITE_ONCE(conn->peer_spoke, true);
	if (conn->handover_wait)
		krdma_handover_kick(conn);
}

static void krdma_passive_established(struct krdma_conn *conn)
{
	bool wait = false;
	int ret;

	ret = krdma_connect_done(conn, 0);
	if (ret) {
		/* Still an orphan: the teardown work frees it. */
		pr_warn_ratelimited("%s: failed before it was established: %d\n",
				    conn->name, ret);
		krdma_conn_schedule_teardown(conn, ret);
		return;
	}
	if (conn->iwarp) {
		spin_lock_bh(&conn->lock);
		/*
		 * An error set before handover_wait is not queued by
		 * __krdma_conn_set_error(): hand such a connection over now.
		 */
		wait = !conn->peer_spoke && !conn->error;
		conn->handover_wait = wait;
		if (wait) {
			/* The peer's first word is due by then. */
			unsigned long tmo =
				msecs_to_jiffies(KRDMA_HANDOVER_TIMEOUT_MS);

			conn->handover_by = jiffies + tmo;
			conn->handover_poll = 1;
			krdma_handover_queue(conn, conn->opts.poll ? 1 : tmo);
		}
		spin_unlock_bh(&conn->lock);
	}
	if (!wait)
		krdma_passive_handover(conn);
}

/*
 * Test knob: the active side sleeps this long in its ESTABLISHED event
 * before it takes in the accept, which widens the window in which a
 * passive peer's messages are taken against the offer
 * (test/guest/hostile.sh).  The sleep is in the CM's event handler: on
 * IB it holds ib_cm's work on that CPU, every other connection's CM
 * events queued behind it included, and a peer that waits for an event
 * of its own to send may find it held too.
 */
static unsigned int fault_established_delay_ms;
module_param(fault_established_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_established_delay_ms,
		 "test: sleep this long in an active connection's ESTABLISHED event, before reading the accept (stalls the CM's events on that CPU)");

static int krdma_conn_event(struct krdma_conn *conn, struct rdma_cm_id *id,
			    struct rdma_cm_event *ev)
{
	int ret, reason;

	trace_krdma_cm_event(conn->name, ev->event, ev->status);
	if (conn->dying)
		return 0;

	/* For the state changes the event makes (trace_krdma_conn_state). */
	WRITE_ONCE(conn->cm_event, ev->event);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		conn->ibdev = id->device;
		ret = rdma_resolve_route(id, KRDMA_RESOLVE_TIMEOUT_MS);
		if (ret) {
			pr_warn_ratelimited("%s: cannot resolve a route to %pISpc: %d\n",
					    conn->name, &conn->raddr, ret);
			krdma_connect_done(conn, ret);
		}
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		memcpy(&conn->laddr, &id->route.addr.src_addr,
		       sizeof(conn->laddr));
		ret = krdma_conn_prepare(conn);
		if (!ret)
			ret = krdma_conn_do_connect(conn);
		if (ret) {
			pr_warn_ratelimited("%s: cannot connect to %pISpc: %d\n",
					    conn->name, &conn->raddr, ret);
			krdma_connect_done(conn, ret);
		}
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (conn->active) {
			if (unlikely(fault_established_delay_ms))
				msleep(fault_established_delay_ms);
			ret = krdma_active_established(conn, ev);
			if (ret) {
				krdma_connect_done(conn, ret);
				break;
			}
			ret = krdma_connect_done(conn, 0);
			if (ret)
				pr_warn_ratelimited("%s: failed before it was established: %d\n",
						    conn->name, ret);
		} else {
			krdma_passive_established(conn);
		}
		break;
	case RDMA_CM_EVENT_REJECTED: {
		const void *pdata;
		u8 plen = 0;

		pdata = rdma_consumer_reject_data(id, ev, &plen);
		reason = krdma_rej_decode(pdata, plen);
		if (reason == KRDMA_REJ_APP || reason == KRDMA_REJ_SESSION) {
			int sent = krdma_rej_sent_errno(pdata, plen);
			char what[64];

			/* Only an errno a krdma listener refuses with. */
			ret = krdma_rej_carried_errno(pdata, plen);
			if (ret == sent)
				snprintf(what, sizeof(what), "%d", ret);
			else if (!sent)
				snprintf(what, sizeof(what),
					 "it carried no errno: %d", ret);
			else
				snprintf(what, sizeof(what),
					 "%d, which no krdma listener sends: %d",
					 sent, ret);
			pr_warn_ratelimited("%s: %pISpc rejected the connection: %s (%s)\n",
					    conn->name, &conn->raddr,
					    krdma_rej_str(reason), what);
		} else if (reason) {
			pr_warn_ratelimited("%s: %pISpc rejected the connection: %s\n",
					    conn->name, &conn->raddr,
					    krdma_rej_str(reason));
			ret = krdma_rej_errno(reason);
		} else {
			pr_warn_ratelimited("%s: %pISpc rejected the connection: %s\n",
					    conn->name, &conn->raddr,
					    rdma_reject_msg(id, ev->status));
			ret = -ECONNREFUSED;
		}
		krdma_connect_done(conn, ret);
		/* A passive side the peer gave up on: nobody will take it. */
		if (conn->orphan)
			krdma_conn_schedule_teardown(conn, ret);
		break;
	}
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		pr_warn_ratelimited("%s: %s (%d) for %pISpc\n",
				    conn->name, rdma_event_msg(ev->event),
				    ev->status, &conn->raddr);
		ret = ev->event == RDMA_CM_EVENT_ADDR_ERROR ? -EHOSTUNREACH :
		      ev->status == -ETIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
		/*
		 * A connect still waiting ends now, also when a flush moved
		 * the connection out of CONNECTING first (siw, whose QP left
		 * RTR before the MPA reply came: CONNECT_ERROR -EINVAL);
		 * it would otherwise sit out its whole timeout.
		 */
		if (conn->state == KRDMA_CONN_CONNECTING ||
		    (conn->active && !completion_done(&conn->cm_done)))
			krdma_connect_done(conn, ret);
		else
			krdma_conn_set_error(conn, -ECONNRESET);
		if (conn->orphan)
			krdma_conn_schedule_teardown(conn, ret);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		spin_lock_bh(&conn->lock);
		/*
		 * On iWARP the QP has usually left RTS by the time the CM
		 * reports the peer's disconnect (siw flushes the receives
		 * when the stream closes; iw_cm queues the event): if that
		 * flush is all that failed the connection, the disconnect is
		 * what happened.  It is a placeholder itself: the peer may
		 * have disconnected because of an error of ours whose
		 * completion is still to come.  On IB and RoCE the CM leaves
		 * the QP in RTS, and what is in flight may fail later when
		 * its retries run out, which replaces nothing
		 * (krdma_cause_replaces()).
		 */
		if (conn->error_weak && conn->state == KRDMA_CONN_ERROR)
			krdma_conn_set_state_locked(conn,
						    KRDMA_CONN_DISCONNECTED);
		krdma_conn_cause_locked(conn, -ECONNRESET, true, IB_WC_SUCCESS);
		conn->peer_left = true;
		krdma_conn_event_locked(conn, KRDMA_CONN_EV_PEER_DISCONNECTED);
		spin_unlock_bh(&conn->lock);
		wake_up_all(&conn->wq);
		pr_debug_ratelimited("%s: disconnected by %pISpc\n", conn->name,
				     &conn->raddr);
		if (conn->orphan)
			krdma_conn_schedule_teardown(conn, -ECONNRESET);
		break;
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		/* rdma_cm waits for this id to go: release it from a worker. */
		krdma_conn_schedule_teardown(conn, -ENODEV);
		break;
	default:
		break;
	}
	WRITE_ONCE(conn->cm_event, -1);
	return 0;
}

/* ---- passive side -------------------------------------------------- */

static int krdma_reject(struct rdma_cm_id *id, int reason)
{
	struct krdma_rej rej;

	krdma_rej_encode(&rej, reason);
	return rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/* The listener's consumer (KRDMA_REJ_APP) or krdma refused with @err. */
static int krdma_reject_errno(struct rdma_cm_id *id, int reason, int err)
{
	struct krdma_rej rej;

	krdma_rej_encode_errno(&rej, reason, err);
	return rdma_reject(id, &rej, sizeof(rej), IB_CM_REJ_CONSUMER_DEFINED);
}

/*
 * Test knob: a passive connection sleeps this long once it holds its
 * device, so that device removal meets it there (test/guest/devstorm.sh).
 */
static unsigned int fault_accept_delay_ms;
module_param(fault_accept_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_accept_delay_ms,
		 "test: sleep this long in a connection request after taking the device");

/* A request is refused: counted, and what it would replace left alone. */
static void krdma_request_refused(struct krdma_listener *l,
				  struct krdma_sess_req *sr)
{
	krdma_sess_claim_done(l, sr, false);
	spin_lock_bh(&l->lock);
	l->rejected++;
	spin_unlock_bh(&l->lock);
}

static int krdma_connect_request(struct krdma_listener *l,
				 struct rdma_cm_id *id,
				 struct rdma_cm_event *ev)
{
	struct krdma_params remote, neg, local = {
		.queue_depth = l->opts.queue_depth,
		.max_msg_size = l->opts.max_msg_size,
		.heartbeat_ms = krdma_hb_asked(&l->opts),
	};
	struct sockaddr *peer = (struct sockaddr *)&id->route.addr.dst_addr;
	struct rdma_conn_param param;
	struct krdma_conn_opts opts;
	struct krdma_sess_req sr = {};
	struct krdma_hello hello;
	struct krdma_conn *conn;
	const u8 *pdata = NULL;
	char name[48];
	int reason, ret;
	bool full;

	reason = krdma_hello_decode(ev->param.conn.private_data,
				    ev->param.conn.private_data_len, &remote);
	if (!reason)
		reason = krdma_negotiate(&local, &remote, &neg);
	if (reason) {
		pr_warn_ratelimited("%s: rejected connection from %pISpc: %s\n",
				    l->name, &id->route.addr.dst_addr,
				    krdma_rej_str(reason));
		goto reject;
	}

	if (remote.pdata_len)
		pdata = (const u8 *)ev->param.conn.private_data +
			sizeof(struct krdma_hello);
	/* A session's request may replace, or lose to, a live connection. */
	ret = krdma_sess_claim(l, pdata, remote.pdata_len, peer, &sr);
	if (ret) {
		krdma_request_refused(l, &sr);
		krdma_reject_errno(id, KRDMA_REJ_SESSION, ret);
		return 1;
	}
	/* The consumer's say, before anything is held for the request. */
	if (l->opts.ops && l->opts.ops->accept) {
		struct krdma_conn_req req = {
			.private_data = pdata,
			.private_data_len = remote.pdata_len,
			.peer = peer,
			.listener_priv = l->opts.priv,
		};

		ret = l->opts.ops->accept(&req);
		if (ret)
			pr_info_ratelimited("%s: connection from %pISpc refused by its consumer: %d\n",
					    l->name, peer, ret);
	}
	if (ret) {
		krdma_request_refused(l, &sr);
		krdma_reject_errno(id, KRDMA_REJ_APP, ret);
		return 1;
	}

	opts = l->opts;
	opts.queue_depth = neg.queue_depth;
	opts.max_msg_size = neg.max_msg_size;
	opts.private_data = NULL;
	opts.private_data_len = 0;
	/* A peer cannot make the listener hold more than its backlog. */
	spin_lock_bh(&l->lock);
	full = l->held >= l->opts.backlog;
	if (!full) {
		l->held++;
		snprintf(name, sizeof(name), "%s.%u", l->name,
			 l->next_child++);
	}
	spin_unlock_bh(&l->lock);
	if (full) {
		pr_warn_ratelimited("%s: backlog of %u full, rejected connection from %pISpc\n",
				    l->name, l->opts.backlog,
				    &id->route.addr.dst_addr);
		reason = KRDMA_REJ_BUSY;
		goto reject;
	}

	reason = KRDMA_REJ_RESOURCES;
	conn = krdma_conn_alloc(&opts, name);
	if (!conn) {
		spin_lock_bh(&l->lock);
		l->held--;
		spin_unlock_bh(&l->lock);
		goto reject;
	}
	conn->cm_id = id;
	conn->ibdev = id->device;
	conn->orphan = true;
	conn->listener = l;
	conn->held = true;
	conn->sess_known = sr.known;
	conn->sess_idx = sr.idx;
	conn->sess_gen = sr.gen;
	conn->sess_id = sr.id;
	kobject_get(&l->kobj);
	krdma_credit_init(&conn->cr, conn->depth);
	conn->hb_ms = neg.heartbeat_ms;
	memcpy(&conn->laddr, &id->route.addr.src_addr, sizeof(conn->laddr));
	memcpy(&conn->raddr, &id->route.addr.dst_addr, sizeof(conn->raddr));

	/*
	 * Visible before it takes the device's reference (#22 item 7):
	 * device removal finds it by conn->ibdev and tears it down, which
	 * waits for this handler (the core holds the child id's handler
	 * mutex while it runs).  Had it taken the reference first, a
	 * removal between the two would have waited for it for good.
	 */
	ret = krdma_conn_publish(conn);
	if (ret) {
		krdma_conn_unhold(conn);
		krdma_conn_put(conn);
		goto reject;
	}
	/* Events on the child id now go to the connection. */
	id->context = &conn->ctx;

	ret = krdma_conn_prepare(conn);
	if (ret) {
		if (ret == -ENODEV)
			reason = KRDMA_REJ_DEVICE;
		pr_warn_ratelimited("%s: cannot accept %pISpc: %d\n", l->name,
				    &conn->raddr, ret);
		goto fail;
	}
	if (unlikely(fault_accept_delay_ms))
		msleep(fault_accept_delay_ms);
	krdma_hello_encode(&hello, conn->depth, conn->max_msg, conn->hb_ms);
	krdma_fill_conn_param(conn, &param, &hello, sizeof(hello));
	/*
	 * The request's fields are in our view already (the CM swaps the
	 * wire's): responder_resources is what the peer will have in flight
	 * towards us, initiator_depth what it takes from us.
	 */
	param.responder_resources = min_t(u32, param.responder_resources,
					  ev->param.conn.responder_resources);
	param.initiator_depth = min_t(u32, param.initiator_depth,
				      ev->param.conn.initiator_depth);
	ret = rdma_accept(id, &param);
	if (ret) {
		pr_warn_ratelimited("%s: rdma_accept failed: %d\n", conn->name,
				    ret);
		goto fail;
	}
	krdma_sess_claim_done(l, &sr, true);
	return 0;

fail:
	/*
	 * The id is the connection's now, and device removal may be
	 * waiting to tear it down: never hand it back to the core (which
	 * would destroy it under that waiter).  Reject the peer and let
	 * the connection's teardown, which device removal serializes with,
	 * release the QP, the device and the id; the orphan goes with it.
	 */
	krdma_request_refused(l, &sr);
	krdma_reject(id, reason);
	krdma_conn_schedule_teardown(conn, ret);
	return 0;

reject:
	krdma_request_refused(l, &sr);
	krdma_reject(id, reason);
	return 1;
}

/*
 * DEVICE_REMOVAL on a listener's id.  krdma's remove callback runs before
 * rdma_cm's and stops every listener it finds on the device
 * (krdma_remove_device_users()); this one bound to the device after that,
 * and rdma_cm waits for its id before the removal can end.  If the id is
 * the listener's, it is taken from the listener under close_mutex, so that
 * a close does not destroy it too, and rdma_cm destroys it (return 1).
 * Otherwise it is one that a close is destroying already, or one whose
 * krdma_listen() has not made it the listener's yet: that rdma_listen()
 * fails (the id is in rdma_cm's removal state), and l->error says why.
 * The listener listens again once a device for its address is back.
 */
static int krdma_listener_device_removal(struct krdma_listener *l,
					 struct rdma_cm_id *id)
{
	bool mine;

	mutex_lock(&l->close_mutex);
	mine = l->cm_id == id;
	if (mine)
		l->cm_id = NULL;
	if (!l->cm_id && !l->error && !READ_ONCE(l->closed))
		WRITE_ONCE(l->error, -ENODEV);
	/*
	 * Under the mutex: once the id is not the listener's, a close no
	 * longer waits for this handler and may free @l.
	 */
	if (mine) {
		/* One per listener, and users make listeners. */
		pr_warn_ratelimited("%s: device %s removed, no longer listening\n",
				    l->name, dev_name(&id->device->dev));
		wake_up_all(&l->wq);
	}
	mutex_unlock(&l->close_mutex);
	return mine;
}

static int krdma_listener_event(struct krdma_listener *l,
				struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	trace_krdma_cm_event(l->name, ev->event, ev->status);
	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return krdma_connect_request(l, id, ev);
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		return krdma_listener_device_removal(l, id);
	default:
		return 0;
	}
}

static int krdma_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct krdma_cm_ctx *ctx = id->context;

	if (ctx->type == KRDMA_CTX_LISTENER)
		return krdma_listener_event(container_of(ctx,
					    struct krdma_listener, ctx),
					    id, ev);
	return krdma_conn_event(container_of(ctx, struct krdma_conn, ctx),
				id, ev);
}

/* ---- connect ------------------------------------------------------- */

/*
 * A connect that timed out (or was interrupted, or called off:
 * krdma_connect_cancel()) may have its CM handler still running: on
 * iWARP, rdma_connect() makes the TCP connection before it returns, and
 * siw's takes as long as TCP takes to give up on a host that is gone (66
 * s measured, test/guest/poweroff.sh), and the teardown would wait for it
 * (rdma_lock_handler(), rdma_destroy_id()).  So the caller's timeout
 * holds: the connection becomes an orphan, with no callback, and the
 * teardown work closes and frees it when the handler lets it (the
 * module's exit waits for that work).
 */
static void krdma_connect_give_up(struct krdma_conn *conn, int err)
{
	spin_lock_bh(&conn->lock);
	WRITE_ONCE(conn->ev_off, true);
	conn->orphan = true;
	spin_unlock_bh(&conn->lock);
	krdma_conn_schedule_teardown(conn, err);
}

/**
 * krdma_connect_ctl_init - a connect control, not called off
 * @ctl: the control
 *
 * Context: any.
 */
void krdma_connect_ctl_init(struct krdma_connect_ctl *ctl)
{
	spin_lock_init(&ctl->lock);
	ctl->conn = NULL;
	ctl->err = 0;
}

/*
 * The connect of @ctl waits on @conn now, or (NULL) no longer.  Under
 * ctl->lock, so that krdma_connect_cancel() finds @conn only while it is
 * alive: the connect takes it off before it gives @conn up or returns it.
 */
static void krdma_connect_track(struct krdma_connect_ctl *ctl,
				struct krdma_conn *conn)
{
	if (!ctl)
		return;
	spin_lock(&ctl->lock);
	/* One connect at a time per control: a second would go unseen. */
	WARN_ON_ONCE(conn && ctl->conn);
	ctl->conn = conn;
	/* Called off since __krdma_connect() looked: it ends at once. */
	if (conn)
		WRITE_ONCE(conn->connect_abort, ctl->err);
	spin_unlock(&ctl->lock);
}

/**
 * krdma_connect_cancel - call off the connects of a control, for good
 * @ctl: the control given to __krdma_connect()
 * @err: what they fail with, a negative errno (-ECANCELED, say)
 *
 * A connect waiting on @ctl for its handshake returns @err now, as if its
 * timeout had run out: its connection, whose CM handler may still be
 * running (siw makes the TCP connection there), becomes an orphan that
 * the teardown work closes and frees (krdma_connect_give_up()).  One
 * whose handshake had ended already returns as it would have: with the
 * handshake's error, or, had it come up, with @err once the connect has
 * torn it down (a short, synchronous teardown in the connecting task).
 * A fatal signal of the connecting task still gives -ERESTARTSYS.  Every
 * later connect given @ctl fails with @err at once.  Does not wait for
 * the connect to return.
 *
 * Context: process context; does not sleep.
 */
void krdma_connect_cancel(struct krdma_connect_ctl *ctl, int err)
{
	if (WARN_ON_ONCE(err >= 0 || err < -MAX_ERRNO))
		err = -ECANCELED;
	spin_lock(&ctl->lock);
	ctl->err = err;
	if (ctl->conn) {
		WRITE_ONCE(ctl->conn->connect_abort, err);
		wake_up_all(&ctl->conn->wq);
	}
	spin_unlock(&ctl->lock);
}

/*
 * krdma_connect(), which another thread may call off through @ctl
 * (krdma_connect_cancel(); NULL: none), one connect at a time per @ctl.
 */
struct krdma_conn *__krdma_connect(const struct sockaddr *dst,
				   const struct sockaddr *src,
				   const struct krdma_conn_opts *opts,
				   struct krdma_connect_ctl *ctl)
{
	struct krdma_conn_opts o;
	struct rdma_cm_id *id;
	struct krdma_conn *conn;
	long left;
	int ret, abort;

	krdma_conn_opts_fill(&o, opts);
	ret = krdma_conn_opts_check(&o);
	if (ret)
		return ERR_PTR(ret);
	/* Called off before it began: nothing is made. */
	if (ctl) {
		spin_lock(&ctl->lock);
		ret = ctl->err;
		spin_unlock(&ctl->lock);
		if (ret)
			return ERR_PTR(ret);
	}

	conn = krdma_conn_alloc(&o, o.name);
	if (!conn) {
		pr_warn_ratelimited("%s: no memory for a connection\n",
				    o.name && *o.name ? o.name : "connect");
		return ERR_PTR(-ENOMEM);
	}
	conn->active = true;
	conn->test_hello = o.test_hello;
	memcpy(&conn->raddr, dst, dst->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));

	id = rdma_create_id(&init_net, krdma_cm_handler, &conn->ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		pr_warn_ratelimited("%s: cannot create an rdma_cm id: %ld\n",
				    conn->name, PTR_ERR(id));
		krdma_conn_put(conn);
		return ERR_CAST(id);
	}
	conn->cm_id = id;
	if (o.tos)
		rdma_set_service_type(id, o.tos);

	ret = krdma_conn_publish(conn);
	if (ret) {
		rdma_destroy_id(id);
		conn->cm_id = NULL;
		conn->torn_down = true;
		krdma_conn_put(conn);
		return ERR_PTR(ret);
	}

	/*
	 * rdma_cm leaves it to its caller not to destroy an id under
	 * rdma_resolve_addr(), and with a source address the id is on a
	 * device within the call, where that device's DEVICE_REMOVAL
	 * schedules a teardown: which takes this mutex first.
	 */
	mutex_lock(&conn->teardown_mutex);
	if (conn->torn_down)
		ret = -ENODEV;
	else
		ret = rdma_resolve_addr(id, (struct sockaddr *)src,
					(struct sockaddr *)dst,
					KRDMA_RESOLVE_TIMEOUT_MS);
	mutex_unlock(&conn->teardown_mutex);
	if (ret) {
		pr_warn_ratelimited("%s: cannot resolve %pISpc: %d\n",
				    conn->name, dst, ret);
		goto fail;
	}

	krdma_connect_track(ctl, conn);
	left = wait_event_killable_timeout(conn->wq,
					   completion_done(&conn->cm_done) ||
					   READ_ONCE(conn->connect_abort),
					   msecs_to_jiffies(o.timeout_ms));
	krdma_connect_track(ctl, NULL);
	abort = READ_ONCE(conn->connect_abort);
	if (left <= 0 || !completion_done(&conn->cm_done)) {
		ret = left < 0 ? left : abort ?: -ETIMEDOUT;
		if (left < 0)
			pr_warn_ratelimited("%s: connecting to %pISpc interrupted\n",
					    conn->name, dst);
		else if (abort)
			pr_info_ratelimited("%s: connecting to %pISpc called off (%d)\n",
					    conn->name, dst, abort);
		else
			pr_warn_ratelimited("%s: connecting to %pISpc timed out\n",
					    conn->name, dst);
		krdma_connect_give_up(conn, ret);
		return ERR_PTR(ret);
	}
	/* Up just as it was called off: closed here, never returned. */
	ret = conn->cm_status ?: abort;
	if (ret)
		goto fail;
	pr_debug_ratelimited("%s: connected to %pISpc on %s (depth %u, max message %u)\n",
			     conn->name, dst, conn->devname, conn->depth,
			     conn->max_msg);
	krdma_conn_ev_up(conn);
	return conn;

fail:
	krdma_conn_teardown(conn, ret);
	if (krdma_conn_unpublish(conn))
		krdma_conn_put(conn);
	return ERR_PTR(ret);
}

/**
 * krdma_connect - open a connection to a peer
 * @dst: the peer's address (IPv4 or IPv6, with port)
 * @src: local address to bind to, or NULL
 * @opts: parameters, or NULL for the defaults
 *
 * Resolves the address to an RDMA device, creates the queue pair and
 * exchanges the handshake.  Sleeps up to @opts->timeout_ms.
 *
 * Return: the connection, or an ERR_PTR: -ECONNREFUSED (nobody listens),
 * -EPROTONOSUPPORT (peer speaks another krdma version), -EPROTO (not a krdma
 * peer), -EINVAL (bad parameters), -ETIMEDOUT, -EHOSTUNREACH, -ENODEV,
 * -EBUSY (the listener's backlog is full), -ENOMEM (the peer was out of
 * resources), -EEXIST (a connection has @opts->name).
 *
 * Context: process context; sleeps.
 */
struct krdma_conn *krdma_connect(const struct sockaddr *dst,
				 const struct sockaddr *src,
				 const struct krdma_conn_opts *opts)
{
	return __krdma_connect(dst, src, opts, NULL);
}
EXPORT_SYMBOL_GPL(krdma_connect);

/* ---- listen -------------------------------------------------------- */

/*
 * Test knob: krdma_listen() sleeps this long once its listener is on the
 * list, before rdma_listen(), so that device removal meets a listen in
 * progress (test/guest/listen-race.sh); set to 0, it ends a sleep under
 * way.
 */
static unsigned int fault_listen_delay_ms;
module_param(fault_listen_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_listen_delay_ms,
		 "test: sleep this long in a listen before rdma_listen()");

static void krdma_listener_free_id(struct krdma_listener *l, int err)
{
	struct rdma_cm_id *id;

	mutex_lock(&l->close_mutex);
	id = l->cm_id;
	l->cm_id = NULL;
	if (!l->error)
		l->error = err;
	mutex_unlock(&l->close_mutex);
	/* Waits for a CONNECT_REQUEST handler in progress on it. */
	if (id)
		rdma_destroy_id(id);
}

/**
 * krdma_listen - listen for connections
 * @addr: local address and port (a wildcard address listens on every device)
 * @opts: parameters offered to peers, or NULL for the defaults; with
 *	@opts->ops, each connection accepted is handed to the consumer by
 *	its KRDMA_EVENT_ESTABLISHED event instead of krdma_accept()
 *
 * A listener bound to one device's address stops listening when that
 * device is removed (krdma_listener_query()'s error is -ENODEV, and
 * krdma_accept() fails with -ENODEV), and listens again by itself once a
 * device for the address is added or a port comes up.  Either way the
 * owner closes it with krdma_listener_close().
 *
 * Context: process; sleeps.
 *
 * Return: the listener, or an ERR_PTR (-EADDRINUSE, -EADDRNOTAVAIL,
 * -EEXIST: a listener has @opts->name, -ENODEV: the device of the
 * address went away during the call, ...).  A device removal that meets
 * the call once the listener is listed (listeners/NAME) waits for it and
 * then stops the listener, as above.
 */
struct krdma_listener *krdma_listen(const struct sockaddr *addr,
				    const struct krdma_conn_opts *opts)
{
	const char *name = opts ? opts->name : NULL;
	struct krdma_listener *l, *o;
	struct rdma_cm_id *id;
	bool bound;
	int ret;

	/* Not the allocator's warning: the line below names the listener. */
	l = kzalloc(sizeof(*l), GFP_KERNEL | __GFP_NOWARN);
	if (!l) {
		pr_warn_ratelimited("%s: no memory for a listener\n",
				    name && *name ? name : "listen");
		return ERR_PTR(-ENOMEM);
	}
	krdma_kobj_init(&l->kobj, &krdma_listener_ktype);
	krdma_conn_opts_fill(&l->opts, opts);
	ret = krdma_conn_opts_check(&l->opts);
	if (ret)
		goto out_put;
	/* The caller's string need not outlive krdma_listen(). */
	l->opts.name = NULL;
	l->id = atomic_inc_return(&krdma_next_id);
	if (name && *name)
		strscpy(l->name, name, sizeof(l->name));
	else
		snprintf(l->name, sizeof(l->name), "listen%u", l->id);
	l->ctx.type = KRDMA_CTX_LISTENER;
	INIT_LIST_HEAD(&l->list);
	INIT_LIST_HEAD(&l->accept_q);
	mutex_init(&l->close_mutex);
	spin_lock_init(&l->lock);
	init_waitqueue_head(&l->wq);
	memcpy(&l->addr, addr, addr->sa_family == AF_INET6 ?
	       sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));

	id = rdma_create_id(&init_net, krdma_cm_handler, &l->ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		pr_warn_ratelimited("%s: cannot create an rdma_cm id: %d\n",
				    l->name, ret);
		goto out_put;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)addr);
	if (ret) {
		pr_warn_ratelimited("%s: cannot bind %pISpc: %d\n",
				    l->name, addr, ret);
		goto out_id;
	}

	mutex_lock(&krdma_lock);
	list_for_each_entry(o, &krdma_listeners, list) {
		if (!strcmp(o->name, l->name)) {
			mutex_unlock(&krdma_lock);
			pr_warn_ratelimited("listener name '%s' already in use\n",
					    l->name);
			ret = -EEXIST;
			goto out_id;
		}
	}
	/*
	 * rdma_cm leaves it to its caller not to destroy an id under
	 * rdma_listen().  Once on the list, a listener bound to a device is
	 * found by that device's removal, which takes its id under
	 * close_mutex (as does the id's DEVICE_REMOVAL event): the id is the
	 * listener's only once rdma_listen() is done with it, and the
	 * mutex is held until then (krdma_lock, then close_mutex, as in
	 * krdma_remove_device_users()).  A wildcard listen is not held:
	 * nothing but its owner destroys its id, and rdma_listen() there
	 * may wait for a connection request's handler, which may wait for
	 * krdma_lock, which device removal may hold while it waits for
	 * close_mutex.
	 */
	bound = !!id->device;
	ret = krdma_sysfs_add_listener(l);
	if (!ret) {
		list_add_tail(&l->list, &krdma_listeners);
		if (bound)
			mutex_lock(&l->close_mutex);
	}
	mutex_unlock(&krdma_lock);
	if (ret)
		goto out_id;

	if (unlikely(fault_listen_delay_ms))
		krdma_fault_sleep(&fault_listen_delay_ms);
	ret = rdma_listen(id, KRDMA_LISTEN_BACKLOG);
	if (!bound)
		mutex_lock(&l->close_mutex);
	if (!ret)
		l->cm_id = id;
	mutex_unlock(&l->close_mutex);
	if (ret) {
		/* Waits for a DEVICE_REMOVAL handler, which sets l->error. */
		rdma_destroy_id(id);
		mutex_lock(&l->close_mutex);
		if (l->error)
			ret = l->error;	/* the device went during the listen */
		mutex_unlock(&l->close_mutex);
		pr_warn_ratelimited("%s: cannot listen on %pISpc: %d\n",
				    l->name, addr, ret);
		krdma_listener_close(l);
		return ERR_PTR(ret);
	}
	pr_debug_ratelimited("%s: listening on %pISpc\n", l->name, addr);
	return l;

out_id:
	rdma_destroy_id(id);
out_put:
	kobject_put(&l->kobj);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(krdma_listen);

/**
 * krdma_accept - take the next established connection of a listener
 * @l: the listener
 * @timeout: jiffies to wait, or MAX_SCHEDULE_TIMEOUT
 *
 * Context: process; sleeps, interruptibly, up to @timeout.
 * Return: the connection (close it with krdma_close()), or an ERR_PTR:
 * -ETIMEDOUT, -ERESTARTSYS on a signal, -ENODEV if the listener was closed
 * or its device went away, -EINVAL if the listener has an event callback
 * (its connections are handed over by their ESTABLISHED event).
 */
struct krdma_conn *krdma_accept(struct krdma_listener *l, long timeout)
{
	struct krdma_conn *conn = NULL;
	long left;

	if (l->opts.ops) {
		pr_warn_ratelimited("%s: has an event callback: accept refused\n",
				    l->name);
		return ERR_PTR(-EINVAL);
	}

	left = wait_event_interruptible_timeout(l->wq,
						!list_empty_careful(&l->accept_q) ||
						READ_ONCE(l->closed) ||
						READ_ONCE(l->error), timeout);
	if (left < 0)
		return ERR_PTR(left);
	spin_lock_bh(&l->lock);
	conn = list_first_entry_or_null(&l->accept_q, struct krdma_conn,
					accept_entry);
	if (conn) {
		list_del_init(&conn->accept_entry);
		/* The caller's now: it no longer counts against the backlog. */
		if (conn->held) {
			conn->held = false;
			l->held--;
		}
	}
	spin_unlock_bh(&l->lock);
	if (conn)
		return conn;
	if (l->closed || l->error)
		return ERR_PTR(-ENODEV);
	return ERR_PTR(-ETIMEDOUT);
}
EXPORT_SYMBOL_GPL(krdma_accept);

/**
 * krdma_accept_ready - is a connection waiting for krdma_accept()?
 * @l: the listener
 *
 * For poll(): takes nothing off the queue and does not sleep.
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: true when krdma_accept() would return a connection at once.
 */
bool krdma_accept_ready(struct krdma_listener *l)
{
	bool ready;

	spin_lock_bh(&l->lock);
	ready = !list_empty(&l->accept_q);
	spin_unlock_bh(&l->lock);
	return ready;
}
EXPORT_SYMBOL_GPL(krdma_accept_ready);

/**
 * krdma_listener_waitq - where a listener's waiters sleep
 * @l: the listener
 *
 * Woken when a connection is ready for krdma_accept() and when @l stops
 * listening: for a consumer that waits on several objects at once (poll()
 * of /dev/krdma) with its own wait entry.  Remove the entry before the
 * last krdma_listener_put().
 *
 * Context: any.
 * Return: the wait queue head.
 */
wait_queue_head_t *krdma_listener_waitq(struct krdma_listener *l)
{
	return &l->wq;
}
EXPORT_SYMBOL_GPL(krdma_listener_waitq);

/**
 * krdma_listener_query - a snapshot of a listener
 * @l: the listener
 * @info: filled in
 *
 * Context: any but hard interrupt; does not sleep.
 */
void krdma_listener_query(struct krdma_listener *l,
			  struct krdma_listener_info *info)
{
	memset(info, 0, sizeof(*info));
	spin_lock_bh(&l->lock);
	info->error = l->error;
	info->listening = !l->closed && !l->error;
	spin_unlock_bh(&l->lock);
	info->queue_depth = l->opts.queue_depth;
	info->max_msg_size = l->opts.max_msg_size;
	memcpy(&info->local, &l->addr, sizeof(info->local));
	strscpy(info->name, l->name, sizeof(info->name));
}
EXPORT_SYMBOL_GPL(krdma_listener_query);

/**
 * krdma_listener_close - stop listening and release the listener
 * @l: the listener
 *
 * Connections already accepted are not affected; established connections
 * not yet taken with krdma_accept() are closed.  With callbacks, every
 * connection handed over has had its ESTABLISHED event when this returns.
 *
 * Context: process context; sleeps.  Not from an event callback of one
 * of the listener's connections.
 */
void krdma_listener_close(struct krdma_listener *l)
{
	struct krdma_conn *conn;

	spin_lock_bh(&l->lock);
	l->closed = true;
	spin_unlock_bh(&l->lock);
	wake_up_all(&l->wq);
	krdma_listener_free_id(l, 0);

	/*
	 * Passive connections still in their handshake have nobody to take
	 * them now; do not leave them to the CM's timeouts (tens of seconds
	 * on RoCE when the active side gave up).
	 */
	mutex_lock(&krdma_lock);
	list_for_each_entry(conn, &krdma_conns, list) {
		if (conn->listener == l && READ_ONCE(conn->orphan) &&
		    (READ_ONCE(conn->state) == KRDMA_CONN_CONNECTING ||
		     READ_ONCE(conn->handover_wait)))
			krdma_conn_schedule_teardown(conn, -ECONNABORTED);
	}
	mutex_unlock(&krdma_lock);

	/*
	 * With callbacks: a connection handed over before the close (its
	 * ESTABLISHED event queued, or its callback running) reaches the
	 * consumer before this returns, so that the consumer, which may go
	 * away next, knows every connection it owns.  None is handed over
	 * now: handover queues the event under l->lock, and l->closed is
	 * set.
	 */
	while (l->opts.ops) {
		struct krdma_conn *c, *busy = NULL;

		mutex_lock(&krdma_lock);
		list_for_each_entry(c, &krdma_conns, list) {
			if (c->listener == l && READ_ONCE(c->ev_up_out)) {
				busy = c;
				krdma_conn_get(busy);
				break;
			}
		}
		mutex_unlock(&krdma_lock);
		if (!busy)
			break;
		flush_delayed_work(&busy->ev_work);
		krdma_conn_put(busy);
	}

	for (;;) {
		spin_lock_bh(&l->lock);
		conn = list_first_entry_or_null(&l->accept_q,
						struct krdma_conn,
						accept_entry);
		if (conn)
			list_del_init(&conn->accept_entry);
		spin_unlock_bh(&l->lock);
		if (!conn)
			break;
		krdma_close(conn);
	}

	/*
	 * Its directory first: the name stays taken (on the list) until it
	 * is gone, or a listener of the same name made meanwhile would meet
	 * it in sysfs.
	 */
	krdma_sysfs_del_listener(l);
	mutex_lock(&krdma_lock);
	if (!list_empty(&l->list))
		list_del_init(&l->list);
	mutex_unlock(&krdma_lock);
	pr_debug_ratelimited("%s: closed\n", l->name);
	kobject_put(&l->kobj);
}
EXPORT_SYMBOL_GPL(krdma_listener_close);

/* ---- device removal and unload ------------------------------------- */

/*
 * Called from the ib_client remove callback: release everything krdma has
 * on @kdev, synchronously.  Connections stay visible, in the error state
 * with -ENODEV, until their owner closes them.
 */
void krdma_remove_device_users(struct krdma_device *kdev)
{
	struct krdma_conn *conn, **conns;
	struct krdma_listener *l, **ls;
	char name[IB_DEVICE_NAME_MAX];
	int n = 0, nl = 0, i, cap;

again:
	mutex_lock(&krdma_lock);
	cap = 0;
	list_for_each_entry(conn, &krdma_conns, list)
		cap++;
	list_for_each_entry(l, &krdma_listeners, list)
		cap++;
	mutex_unlock(&krdma_lock);

	conns = kcalloc(cap + 1, sizeof(*conns), GFP_KERNEL);
	ls = kcalloc(cap + 1, sizeof(*ls), GFP_KERNEL);
	if (!conns || !ls) {
		kfree(conns);
		kfree(ls);
		msleep(20);
		goto again;
	}

	mutex_lock(&krdma_lock);
	list_for_each_entry(conn, &krdma_conns, list) {
		if (n == cap)
			break;
		if (conn->kdev == kdev || conn->ibdev == kdev->ibdev) {
			krdma_conn_get(conn);
			conns[n++] = conn;
		}
	}
	list_for_each_entry(l, &krdma_listeners, list) {
		if (n + nl == cap)
			break;
		bool on;

		/* Listener close frees the id under close_mutex. */
		mutex_lock(&l->close_mutex);
		on = l->cm_id && l->cm_id->device == kdev->ibdev;
		mutex_unlock(&l->close_mutex);
		if (on) {
			kobject_get(&l->kobj);
			ls[nl++] = l;
		}
	}
	mutex_unlock(&krdma_lock);

	krdma_device_name(kdev, name, sizeof(name));
	for (i = 0; i < nl; i++) {
		/* One per listener, and users make listeners. */
		pr_warn_ratelimited("%s: device %s removed, no longer listening\n",
				    ls[i]->name, name);
		krdma_listener_free_id(ls[i], -ENODEV);
		wake_up_all(&ls[i]->wq);
		kobject_put(&ls[i]->kobj);
	}
	for (i = 0; i < n; i++) {
		krdma_conn_teardown(conns[i], -ENODEV);
		/* One in set-up when its device went (devstorm.sh). */
		krdma_conn_reap_orphan(conns[i]);
		krdma_conn_put(conns[i]);
	}
	kfree(conns);
	kfree(ls);
}

/*
 * A listener that krdma_remove_device_users() stopped (-ENODEV, bound to
 * the removed device's address) listens again once a device for its
 * address is back.  Under close_mutex, as krdma_listener_free_id() takes
 * it after l->closed is set: a close either comes first (and this does
 * nothing) or destroys what this made; the id becomes the listener's
 * only once rdma_listen() is done with it, as in krdma_listen().  The
 * connection request handler does not take the mutex, so a request
 * arriving at once does not wait on it (DEVICE_REMOVAL's does, and waits
 * for the listen to be done).
 */
static void krdma_listener_rebind(struct krdma_listener *l)
{
	char dev[IB_DEVICE_NAME_MAX];
	struct rdma_cm_id *id;
	int ret;

	mutex_lock(&l->close_mutex);
	if (READ_ONCE(l->closed) || l->cm_id || l->error != -ENODEV)
		goto out;
	id = rdma_create_id(&init_net, krdma_cm_handler, &l->ctx,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id))
		goto out;
	ret = rdma_bind_addr(id, (struct sockaddr *)&l->addr);
	if (!ret)
		ret = rdma_listen(id, KRDMA_LISTEN_BACKLOG);
	if (ret) {
		mutex_unlock(&l->close_mutex);
		/* No device for the address yet: the next add or port up. */
		pr_debug("%s: %pISpc not back yet: %d\n", l->name, &l->addr,
			 ret);
		rdma_destroy_id(id);
		return;
	}
	strscpy(dev, dev_name(&id->device->dev), sizeof(dev));
	l->cm_id = id;
	WRITE_ONCE(l->error, 0);
	mutex_unlock(&l->close_mutex);
	/* One per listener, as the line of its stop. */
	pr_info_ratelimited("%s: listening again on %pISpc (%s)\n", l->name,
			    &l->addr, dev);
	return;
out:
	mutex_unlock(&l->close_mutex);
}

static void krdma_relisten_fn(struct work_struct *work)
{
	struct krdma_listener *l, **ls;
	int n = 0, cap = 0, i;

	mutex_lock(&krdma_lock);
	list_for_each_entry(l, &krdma_listeners, list)
		cap += READ_ONCE(l->error) == -ENODEV;
	mutex_unlock(&krdma_lock);
	if (!cap)
		return;
	ls = kcalloc(cap, sizeof(*ls), GFP_KERNEL);
	if (!ls) {
		pr_warn("no memory to bring %d stopped listeners back\n", cap);
		return;
	}
	mutex_lock(&krdma_lock);
	list_for_each_entry(l, &krdma_listeners, list) {
		if (n == cap)
			break;
		if (READ_ONCE(l->error) == -ENODEV) {
			kobject_get(&l->kobj);
			ls[n++] = l;
		}
	}
	mutex_unlock(&krdma_lock);
	for (i = 0; i < n; i++) {
		krdma_listener_rebind(ls[i]);
		kobject_put(&ls[i]->kobj);
	}
	kfree(ls);
}

static DECLARE_WORK(krdma_relisten_work, krdma_relisten_fn);

/**
 * krdma_relisten - a device came, or a port came up: revive listeners
 *
 * Queues the work that has every listener stopped by a device removal try
 * its address again.  Any context.
 */
void krdma_relisten(void)
{
	queue_work(krdma_wq, &krdma_relisten_work);
}

/* Module unload, once no device can come or go: none is left running. */
void krdma_relisten_stop(void)
{
	cancel_work_sync(&krdma_relisten_work);
}

/* Module unload: close every listener and connection krdma still has. */
void krdma_close_all(void)
{
	struct krdma_listener *l;
	struct krdma_conn *conn;

	for (;;) {
		mutex_lock(&krdma_lock);
		l = list_first_entry_or_null(&krdma_listeners,
					     struct krdma_listener, list);
		if (l)
			kobject_get(&l->kobj);
		mutex_unlock(&krdma_lock);
		if (!l)
			break;
		krdma_listener_close(l);
		kobject_put(&l->kobj);
	}
	flush_workqueue(krdma_wq);
	for (;;) {
		mutex_lock(&krdma_lock);
		conn = list_first_entry_or_null(&krdma_conns,
						struct krdma_conn, list);
		if (conn)
			krdma_conn_get(conn);
		mutex_unlock(&krdma_lock);
		if (!conn)
			break;
		pr_debug("%s: closed by module unload\n", conn->name);
		krdma_close(conn);
		krdma_conn_put(conn);	/* ours */
	}
	flush_workqueue(krdma_wq);
}
