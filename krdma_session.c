// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: a connection to one peer that comes back on its own, or a set
 * of them (opts.nr_conns) that fails and comes back as one
 * (include/krdma.h, "sessions"), modelled on nvme-rdma's reconnect_delay
 * and ctrl_loss_tmo (whose error recovery tears down and remakes every
 * queue of a controller) and on rtrs-clt's reconnect work.
 *
 * A session is a consumer of the connection API like any other: its
 * connections are made by krdma_connect() with the session's ops, and it
 * learns of their end by their event callback.  The core knows nothing of
 * sessions; from krdma_core.h this file takes only krdma's workqueue, the
 * sessions/ directory under /sys/kernel/krdma, and krdma_connect() with a
 * control (__krdma_connect()), so that krdma_session_destroy() calls off
 * an attempt's connect rather than wait out a peer that never answers.
 *
 * Everything that sleeps or closes happens in the session's work, one run
 * at a time under s->mutex: telling the consumer, connecting again, and
 * closing a failed connection (never in the connection's own event
 * callback, where krdma_close() would wait for itself).  A failed
 * connection the consumer still holds (krdma_session_conn_get(), or a
 * message its recv callback kept) is closed only once it has put it back
 * and released them.  The work is idempotent: whoever has news (a
 * connection's end event, the last put of an old connection, the wake of
 * an old connection's wait queue) queues it at once, and it works out
 * from the state what is due, then queues itself for the next attempt.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/uuid.h>
#include <linux/jiffies.h>

#include "krdma_core.h"
#include "krdma_sess.h"

enum krdma_sess_state {
	KRDMA_SESS_CONNECTED,
	KRDMA_SESS_RECONNECTING,
	KRDMA_SESS_LOST,
};

/* One connection of a session: its krdma_conn_priv(). */
struct krdma_sess_conn {
	struct krdma_session	*s;
	struct krdma_conn	*conn;
	struct list_head	list;		/* s->old; empty while current */
	u32			idx;		/* in the session's set */
	bool			abort;		/* to fail with its set (s->mutex) */
	/* On the connection's wait queue while on s->old (s->mutex) */
	struct wait_queue_entry	wait;
	bool			waiting;
	/* Under s->lock: */
	u32			users;		/* krdma_session_conn_get()s */
	bool			failed;		/* its end event came */
	int			error;		/* that event's */
};

struct krdma_session {
	struct kobject		kobj;		/* sessions/<name> */
	bool			in_sysfs;
	struct list_head	names;		/* in krdma_sess_names */
	char			name[KRDMA_SESSION_NAME_MAX];
	struct sockaddr_storage	dst, src;
	bool			has_src;
	struct krdma_session_opts opts;		/* conn.private_data: user[] */
	uuid_t			uuid;
	u8			user[KRDMA_SESSION_MAX_USER_DATA];
	u8			user_len;

	struct mutex		mutex;		/* the work's, and destroy's */
	struct delayed_work	work;
	/* Its connects', which destroy calls off (its own lock) */
	struct krdma_connect_ctl connect;

	spinlock_t		lock;		/* everything below */
	enum krdma_sess_state	state;
	bool			stopping;	/* krdma_session_destroy() */
	bool			announce;	/* CONNECTED still to tell */
	u32			nr;		/* connections in the set */
	/* The set (all nr, or all NULL while reconnecting) */
	struct krdma_sess_conn	*cur[KRDMA_SESSION_MAX_CONNS];
	/* The set being made (s->mutex, or create's own) */
	struct krdma_sess_conn	*next[KRDMA_SESSION_MAX_CONNS];
	struct list_head	old;		/* failed, waiting to be closed */
	u32			gen;		/* of the last connect request */
	u32			reconnects;	/* connections made again */
	int			last_error;
	enum ib_wc_status	last_wc;	/* its failed completion's */
	int			attempt_error;	/* the last attempt's, or 0 */
	unsigned long		failed_at;	/* jiffies: the failure */
	/* The set outlived its RECONNECTED callback: it ends the outage. */
	bool			proven;
	bool			tried;		/* an attempt in this outage */
	unsigned long		next_attempt;	/* jiffies */
	u32			delay_ms;	/* settable in sysfs */
	u32			loss_tmo_ms;
};

static atomic_t krdma_sess_ids = ATOMIC_INIT(0);

/*
 * Every session, by name: a name given in opts.name must not be one in
 * use, and neither may a made one.
 */
static DEFINE_MUTEX(krdma_sess_names_lock);
static LIST_HEAD(krdma_sess_names);

static bool krdma_sess_name_used(const char *name)
{
	struct krdma_session *s;

	lockdep_assert_held(&krdma_sess_names_lock);
	list_for_each_entry(s, &krdma_sess_names, names)
		if (!strcmp(s->name, name))
			return true;
	return false;
}

/* Name @s (@name, or the next free sessN); -EEXIST if @name is taken. */
static int krdma_sess_name_take(struct krdma_session *s, const char *name)
{
	int ret = 0;

	mutex_lock(&krdma_sess_names_lock);
	if (name) {
		if (krdma_sess_name_used(name))
			ret = -EEXIST;
		else
			strscpy(s->name, name, sizeof(s->name));
	} else {
		do {
			snprintf(s->name, sizeof(s->name), "sess%u",
				 atomic_inc_return(&krdma_sess_ids));
		} while (krdma_sess_name_used(s->name));
	}
	if (!ret)
		list_add_tail(&s->names, &krdma_sess_names);
	mutex_unlock(&krdma_sess_names_lock);
	return ret;
}

static void krdma_sess_name_put(struct krdma_session *s)
{
	mutex_lock(&krdma_sess_names_lock);
	list_del_init(&s->names);
	mutex_unlock(&krdma_sess_names_lock);
}

static int krdma_sess_conn_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct krdma_sess_conn *sc = krdma_conn_priv(conn);

	return sc->s->opts.ops->recv(sc->s, conn, msg);
}

/* The end of a connection: the session's work does the rest. */
static void krdma_sess_conn_event(struct krdma_conn *conn,
				  enum krdma_event ev, int error)
{
	struct krdma_sess_conn *sc = krdma_conn_priv(conn);
	struct krdma_session *s = sc->s;

	if (ev == KRDMA_EVENT_ESTABLISHED)
		return;
	spin_lock_bh(&s->lock);
	if (!sc->failed) {
		sc->failed = true;
		sc->error = error ?: -ECONNRESET;
	}
	if (!s->stopping)
		mod_delayed_work(krdma_wq, &s->work, 0);
	spin_unlock_bh(&s->lock);
}

static const struct krdma_conn_ops krdma_sess_conn_ops = {
	.event	= krdma_sess_conn_event,
};

static const struct krdma_conn_ops krdma_sess_conn_ops_recv = {
	.event	= krdma_sess_conn_event,
	.recv	= krdma_sess_conn_recv,
};

/*
 * @conn's session connection, if it is one of @s's; else NULL.  Its priv
 * is read only once its ops say it is a session's: another consumer's
 * pointer is not a struct krdma_sess_conn.
 */
static struct krdma_sess_conn *krdma_sess_conn_of(struct krdma_session *s,
						  struct krdma_conn *conn)
{
	const struct krdma_conn_ops *ops = krdma_conn_ops_of(conn);
	struct krdma_sess_conn *sc;

	if (ops != &krdma_sess_conn_ops && ops != &krdma_sess_conn_ops_recv)
		return NULL;
	sc = krdma_conn_priv(conn);
	return sc && sc->s == s ? sc : NULL;
}

static void krdma_sess_tell(struct krdma_session *s,
			    enum krdma_session_event ev, int error)
{
	if (s->opts.ops && s->opts.ops->event)
		s->opts.ops->event(s, ev, error);
}

/*
 * An old connection's wait queue woke (the last message the consumer kept
 * of it was released, say): the work sees whether it can close it now.
 * With the wait queue's lock held and interrupts off.
 */
static int krdma_sess_conn_wake(struct wait_queue_entry *wait,
				unsigned int mode, int sync, void *key)
{
	struct krdma_sess_conn *sc = container_of(wait, struct krdma_sess_conn,
						  wait);
	struct krdma_session *s = sc->s;

	spin_lock(&s->lock);
	if (!s->stopping)
		mod_delayed_work(krdma_wq, &s->work, 0);
	spin_unlock(&s->lock);
	return 0;
}

/*
 * The connect request of connection @idx of generation @gen; sleeps up to
 * opts.conn.timeout_ms (@timeout_ms if not 0).
 */
static struct krdma_sess_conn *krdma_sess_connect(struct krdma_session *s,
						  u32 gen, u32 idx,
						  u32 timeout_ms)
{
	struct krdma_conn_opts o = s->opts.conn;
	u8 pd[KRDMA_MAX_PRIVATE_DATA];
	struct krdma_sess_conn *sc;
	struct krdma_conn *conn;
	int len;

	len = krdma_sess_pdata_encode(pd, &s->uuid, gen, idx, s->nr, s->user,
				      s->user_len);
	if (len < 0)
		return ERR_PTR(len);
	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc)
		return ERR_PTR(-ENOMEM);
	sc->s = s;
	sc->idx = idx;
	INIT_LIST_HEAD(&sc->list);
	init_waitqueue_func_entry(&sc->wait, krdma_sess_conn_wake);
	/* A set's queues on vectors of their own, as nvme-rdma's. */
	if (s->nr > 1 && o.comp_vector == KRDMA_COMP_VECTOR_ANY)
		o.comp_vector = KRDMA_COMP_VECTOR(idx);
	o.private_data = pd;
	o.private_data_len = len;
	o.ops = s->opts.ops && s->opts.ops->recv ? &krdma_sess_conn_ops_recv :
						   &krdma_sess_conn_ops;
	o.priv = sc;
	if (timeout_ms)
		o.timeout_ms = timeout_ms;
	/* -ECANCELED once destroy called it off (krdma_connect_cancel()). */
	conn = __krdma_connect((struct sockaddr *)&s->dst,
			       s->has_src ? (struct sockaddr *)&s->src : NULL,
			       &o, &s->connect);
	if (IS_ERR(conn)) {
		kfree(sc);
		return ERR_CAST(conn);
	}
	sc->conn = conn;
	return sc;
}

static void krdma_sess_close(struct krdma_session *s,
			     struct krdma_sess_conn *sc)
{
	/* The consumer's krdma_session_conn_put()s come before destroy. */
	WARN_ON_ONCE(READ_ONCE(sc->users));
	if (sc->waiting)
		remove_wait_queue(krdma_conn_waitq(sc->conn), &sc->wait);
	krdma_close(sc->conn);
	kfree(sc);
}

static u32 krdma_sess_attempt_ms_locked(struct krdma_session *s);

/*
 * A connection made of a set whose next connection failed.  The recv
 * callback may have kept messages of it already: it delivers as soon as
 * the connection is up, before the set is told (struct krdma_session_ops).
 * So it is not closed at once.  An attempt's (@attempt, with s->mutex
 * held) leaves the set as a failed set's connections do: on s->old, with
 * its wait entry, failed (its end event queues the work), and the reap
 * closes it once nothing of it is kept; the work reaps whenever it runs,
 * in every state (LOST too), and destroy closes what is left.
 * krdma_session_create()'s (nobody reaps for it: the session never
 * existed) waits here, once it is shut down, for the consumer to release
 * what it kept.
 */
static void krdma_sess_drop_made(struct krdma_session *s,
				 struct krdma_sess_conn *sc, bool attempt)
{
	wait_queue_head_t *wq = krdma_conn_waitq(sc->conn);

	if (attempt) {
		add_wait_queue(wq, &sc->wait);
		sc->waiting = true;
		spin_lock_bh(&s->lock);
		list_add_tail(&sc->list, &s->old);
		spin_unlock_bh(&s->lock);
		krdma_conn_fail(sc->conn, -ECONNABORTED);
		return;
	}
	krdma_conn_shutdown(sc->conn);
	/* The last release after the shutdown wakes the queue. */
	wait_event(*wq, !krdma_msgs_kept(sc->conn));
	krdma_sess_close(s, sc);
}

/*
 * The connections of generation @gen, one after another, into s->next
 * (s->nr of them); an attempt's (@attempt) each within what is left of the
 * loss timeout.  All or nothing: if one fails, those made are dropped
 * (krdma_sess_drop_made()).  Once destroy has called the session's
 * connects off, the one waiting and every later one fail at once
 * (-ECANCELED), so the set ends there.
 * Return: 0 or the failed connect's errno.
 */
static int krdma_sess_connect_set(struct krdma_session *s, u32 gen,
				  bool attempt)
{
	struct krdma_sess_conn **set = s->next;
	u32 i, ms = 0;

	for (i = 0; i < s->nr; i++) {
		if (attempt) {
			spin_lock_bh(&s->lock);
			ms = krdma_sess_attempt_ms_locked(s);
			spin_unlock_bh(&s->lock);
		}
		set[i] = krdma_sess_connect(s, gen, i, ms);
		if (IS_ERR(set[i])) {
			int err = PTR_ERR(set[i]);

			set[i] = NULL;
			while (i--) {
				krdma_sess_drop_made(s, set[i], attempt);
				set[i] = NULL;
			}
			return err;
		}
	}
	return 0;
}

/* Make s->next the current connections, with s->lock held. */
static void krdma_sess_install_locked(struct krdma_session *s)
{
	memcpy(s->cur, s->next, s->nr * sizeof(*s->next));
	memset(s->next, 0, sizeof(s->next));
	s->state = KRDMA_SESS_CONNECTED;
	s->attempt_error = 0;
}

/*
 * Close the failed connections nobody holds any more: no
 * krdma_session_conn_get() of them is out, and, once shut down (no
 * message is delivered after that), the consumer keeps none of their
 * messages (KRDMA_MSG_KEEP: valid until krdma_msg_release(), which
 * krdma_close() would free).  The last release wakes the connection's
 * wait queue, and its entry queues the work again.  With s->mutex held:
 * s->old changes only under it (and under s->lock, for _put()).
 */
static void krdma_sess_reap(struct krdma_session *s)
{
	struct krdma_sess_conn *sc, *tmp;
	bool held;

	list_for_each_entry_safe(sc, tmp, &s->old, list) {
		/* A connection on s->old is never taken again. */
		spin_lock_bh(&s->lock);
		held = sc->users;
		spin_unlock_bh(&s->lock);
		if (held)
			continue;
		krdma_conn_shutdown(sc->conn);
		if (krdma_msgs_kept(sc->conn))
			continue;
		spin_lock_bh(&s->lock);
		list_del_init(&sc->list);
		spin_unlock_bh(&s->lock);
		krdma_sess_close(s, sc);
	}
}

static unsigned long krdma_sess_lost_at(struct krdma_session *s)
{
	return s->failed_at + msecs_to_jiffies(s->loss_tmo_ms);
}

static void krdma_sess_lose(struct krdma_session *s, int err)
{
	spin_lock_bh(&s->lock);
	s->state = KRDMA_SESS_LOST;
	s->last_error = err;
	spin_unlock_bh(&s->lock);
	pr_warn_ratelimited("%s: lost (%d), no more reconnects\n", s->name, err);
	krdma_sess_tell(s, KRDMA_SESSION_LOST, err);
}

/*
 * How long an attempt may take: its connection's timeout, but not past the
 * loss deadline (less KRDMA_SESS_MIN_ATTEMPT_MS at the very end, so that a
 * refusal still comes back as itself), so that the loss comes on time
 * however long a connect to a dead peer blocks.  0: the connection's own.
 * With s->lock held.
 */
static u32 krdma_sess_attempt_ms_locked(struct krdma_session *s)
{
	u32 own = s->opts.conn.timeout_ms ?: KRDMA_DEFAULT_CONNECT_TIMEOUT_MS;
	long left;
	u32 ms;

	if (s->loss_tmo_ms == KRDMA_SESSION_LOSS_TMO_NEVER)
		return 0;
	left = (long)(krdma_sess_lost_at(s) - jiffies);
	ms = left > 0 ? jiffies_to_msecs(left) : 0;
	ms = max_t(u32, ms, KRDMA_SESS_MIN_ATTEMPT_MS);
	return ms < own ? ms : 0;
}

/*
 * After RECONNECTED was told: a set that failed before its callback
 * returned (the consumer found it unusable and failed it there, as
 * krdma-blk does when its greeting times out, or one of its connections
 * failed while the others were made) does not end the outage, so that
 * loss_tmo_ms counts from the failure before it, as nvme-rdma counts a
 * reconnect whose fabric connect fails as a failed attempt.  Else an
 * endless run of such sets would keep the session from being lost.
 * With s->mutex held: only this work and destroy detach s->cur.
 */
static void krdma_sess_prove(struct krdma_session *s)
{
	bool ok = true;
	u32 i;

	for (i = 0; i < s->nr; i++)
		if (krdma_conn_error(s->cur[i]->conn))
			ok = false;
	spin_lock_bh(&s->lock);
	s->proven = ok;
	spin_unlock_bh(&s->lock);
	if (!ok)
		pr_info_ratelimited("%s: the new connection failed before it was taken up: the loss timeout still counts from the failure before\n",
				    s->name);
}

/* One reconnect attempt, or the loss if its time has come. */
static void krdma_sess_attempt(struct krdma_session *s)
{
	struct krdma_sess_conn *first;
	int prev, err;
	bool lost;
	u32 gen;

	spin_lock_bh(&s->lock);
	/* Destroy came since the work looked: no attempt, nothing told. */
	if (s->stopping) {
		spin_unlock_bh(&s->lock);
		return;
	}
	prev = s->attempt_error;
	/* Not before the outage's first attempt, however late that runs. */
	lost = s->tried && s->loss_tmo_ms != KRDMA_SESSION_LOSS_TMO_NEVER &&
	       time_after_eq(jiffies, krdma_sess_lost_at(s));
	gen = lost ? s->gen : ++s->gen;
	s->tried = true;
	spin_unlock_bh(&s->lock);
	if (lost) {
		krdma_sess_lose(s, prev ?: s->last_error);
		return;
	}
	krdma_sess_tell(s, KRDMA_SESSION_RECONNECTING, prev);
	err = krdma_sess_connect_set(s, gen, true);
	if (!err) {
		first = s->next[0];
		spin_lock_bh(&s->lock);
		krdma_sess_install_locked(s);
		s->reconnects++;
		spin_unlock_bh(&s->lock);
		/* Closed only by this work or destroy: s->mutex is ours. */
		if (s->nr == 1)
			pr_info_ratelimited("%s: reconnected (%s, generation %u)\n",
					    s->name, krdma_conn_name(first->conn),
					    gen);
		else
			pr_info_ratelimited("%s: reconnected (%u connections, %s first, generation %u)\n",
					    s->name, s->nr,
					    krdma_conn_name(first->conn), gen);
		krdma_sess_tell(s, KRDMA_SESSION_RECONNECTED, 0);
		krdma_sess_prove(s);
		return;
	}
	spin_lock_bh(&s->lock);
	/*
	 * Called off by destroy (-ECANCELED, or whatever failed first):
	 * nothing to record or tell, no loss for a session going away.
	 */
	if (s->stopping) {
		spin_unlock_bh(&s->lock);
		return;
	}
	s->attempt_error = err;
	s->last_error = err;
	s->last_wc = IB_WC_SUCCESS;
	s->next_attempt = jiffies + msecs_to_jiffies(s->delay_ms);
	spin_unlock_bh(&s->lock);
	if (!krdma_sess_retryable(err))
		krdma_sess_lose(s, err);
	else
		pr_info_ratelimited("%s: reconnect failed (%d), next in %u ms\n",
				    s->name, err, READ_ONCE(s->delay_ms));
}

/* Queue the work for the next attempt (or the loss), with s->lock held. */
static void krdma_sess_schedule_locked(struct krdma_session *s)
{
	unsigned long at = s->next_attempt;

	if (s->stopping || s->state != KRDMA_SESS_RECONNECTING)
		return;
	if (s->loss_tmo_ms != KRDMA_SESSION_LOSS_TMO_NEVER &&
	    time_before(krdma_sess_lost_at(s), at))
		at = krdma_sess_lost_at(s);
	queue_delayed_work(krdma_wq, &s->work,
			   time_after(at, jiffies) ? at - jiffies : 0);
}

static void krdma_sess_work(struct work_struct *work)
{
	struct krdma_session *s = container_of(to_delayed_work(work),
					       struct krdma_session, work);
	struct krdma_sess_conn *sc = NULL, *o;
	enum ib_wc_status wc = IB_WC_SUCCESS;
	bool announce, due;
	int failed = 0;
	u32 i, ms, nr = 0;

	mutex_lock(&s->mutex);
	spin_lock_bh(&s->lock);
	if (s->stopping) {
		spin_unlock_bh(&s->lock);
		goto out;
	}
	announce = s->announce;
	s->announce = false;
	/* s->cur changes only under s->mutex, which we hold. */
	for (i = 0; s->cur[0] && i < s->nr && !sc; i++)
		if (s->cur[i]->failed)
			sc = s->cur[i];
	spin_unlock_bh(&s->lock);
	if (sc)
		wc = krdma_conn_wc_status(sc->conn);
	spin_lock_bh(&s->lock);
	if (sc) {
		/*
		 * Detach the set: each closed once its users put it back.
		 * Those that still work are failed below, so that the set
		 * comes back as one.
		 */
		for (i = 0; i < s->nr; i++) {
			list_add_tail(&s->cur[i]->list, &s->old);
			if (!s->cur[i]->failed) {
				s->cur[i]->abort = true;
				nr++;
			}
			s->cur[i] = NULL;
		}
		s->state = KRDMA_SESS_RECONNECTING;
		s->last_error = sc->error;
		s->last_wc = wc;
		s->attempt_error = 0;
		/*
		 * A set that never worked: the outage goes on (prove()).  A
		 * new one's first attempt comes before its loss deadline.
		 */
		ms = s->delay_ms;
		if (s->proven) {
			s->failed_at = jiffies;
			s->tried = false;
			ms = krdma_sess_first_attempt_ms(ms, s->loss_tmo_ms);
		}
		s->next_attempt = jiffies + msecs_to_jiffies(ms);
		failed = sc->error;
	}
	spin_unlock_bh(&s->lock);
	/* s->old changes only under s->mutex too. */
	list_for_each_entry(o, &s->old, list) {
		if (!o->waiting) {
			/* For the release of its last kept message (reap). */
			add_wait_queue(krdma_conn_waitq(o->conn), &o->wait);
			o->waiting = true;
		}
		if (o->abort) {
			o->abort = false;
			krdma_conn_fail(o->conn, -ECONNABORTED);
		}
	}

	if (announce)
		krdma_sess_tell(s, KRDMA_SESSION_CONNECTED, 0);
	if (failed) {
		if (wc != IB_WC_SUCCESS)
			pr_info_ratelimited("%s: connection failed (%d, work completion: %s), reconnecting\n",
					    s->name, failed, ib_wc_status_msg(wc));
		else
			pr_info_ratelimited("%s: connection failed (%d), reconnecting\n",
					    s->name, failed);
		if (nr)
			pr_info_ratelimited("%s: %u more connections of its set failed with it\n",
					    s->name, nr);
		krdma_sess_tell(s, KRDMA_SESSION_DISCONNECTED, failed);
	}
	krdma_sess_reap(s);

	spin_lock_bh(&s->lock);
	due = s->state == KRDMA_SESS_RECONNECTING &&
	      (time_after_eq(jiffies, s->next_attempt) ||
	       (s->loss_tmo_ms != KRDMA_SESSION_LOSS_TMO_NEVER &&
		time_after_eq(jiffies, krdma_sess_lost_at(s))));
	spin_unlock_bh(&s->lock);
	if (due)
		krdma_sess_attempt(s);

	spin_lock_bh(&s->lock);
	krdma_sess_schedule_locked(s);
	spin_unlock_bh(&s->lock);
out:
	mutex_unlock(&s->mutex);
}

/* ---- sysfs: sessions/<name>/ ----------------------------------------- */

#define to_sess(k) container_of(k, struct krdma_session, kobj)

static const char *krdma_sess_state_str(enum krdma_sess_state st)
{
	switch (st) {
	case KRDMA_SESS_CONNECTED:	return "connected";
	case KRDMA_SESS_RECONNECTING:	return "reconnecting";
	default:			return "lost";
	}
}

/* What the files show, read at once under the session's lock. */
struct krdma_sess_view {
	enum krdma_sess_state	state;
	u32			reconnects, gen, delay_ms, loss_tmo_ms;
	int			last_error;
	enum ib_wc_status	last_wc;
};

static void krdma_sess_view(struct krdma_session *s, struct krdma_sess_view *v)
{
	spin_lock_bh(&s->lock);
	v->state = s->state;
	v->reconnects = s->reconnects;
	v->gen = s->gen;
	v->delay_ms = s->delay_ms;
	v->loss_tmo_ms = s->loss_tmo_ms;
	v->last_error = s->last_error;
	v->last_wc = s->last_wc;
	spin_unlock_bh(&s->lock);
}

#define KRDMA_SESS_SHOW(_name, _fmt, _expr)				\
static ssize_t sess_##_name##_show(struct kobject *kobj,		\
				   struct kobj_attribute *attr, char *buf) \
{									\
	struct krdma_session *s = to_sess(kobj);			\
	struct krdma_sess_view v;					\
									\
	krdma_sess_view(s, &v);						\
	return sysfs_emit(buf, _fmt "\n", _expr);			\
}

KRDMA_SESS_SHOW(state, "%s", krdma_sess_state_str(v.state))
KRDMA_SESS_SHOW(nr_conns, "%u", s->nr)

/* The current connections' names, in index order, or "none". */
static ssize_t sess_conn_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct krdma_session *s = to_sess(kobj);
	int len = 0;
	u32 i;

	/* A connection leaves s->cur under s->lock before it is closed. */
	spin_lock_bh(&s->lock);
	for (i = 0; s->cur[0] && i < s->nr; i++)
		len += sysfs_emit_at(buf, len, "%s%s", i ? " " : "",
				     krdma_conn_name(s->cur[i]->conn));
	spin_unlock_bh(&s->lock);
	if (!len)
		len = sysfs_emit(buf, "none");
	return len + sysfs_emit_at(buf, len, "\n");
}

KRDMA_SESS_SHOW(reconnects, "%u", v.reconnects)
KRDMA_SESS_SHOW(generation, "%u", v.gen)
KRDMA_SESS_SHOW(last_error, "%d", v.last_error)
KRDMA_SESS_SHOW(last_wc_status, "%s", krdma_wc_status_name(v.last_wc))
KRDMA_SESS_SHOW(reconnect_delay_ms, "%u", v.delay_ms)
KRDMA_SESS_SHOW(loss_tmo_ms, "%u", v.loss_tmo_ms)
KRDMA_SESS_SHOW(id, "%pUb", &s->uuid)
KRDMA_SESS_SHOW(peer_addr, "%pISpc", &s->dst)

static int krdma_sess_check_delay(u32 ms)
{
	return ms < KRDMA_SESSION_MIN_DELAY_MS ||
	       ms > KRDMA_SESSION_MAX_DELAY_MS ? -EINVAL : 0;
}

/* A new value applies from the next attempt on (and to the loss time). */
static ssize_t sess_store_u32(struct krdma_session *s, const char *buf,
			      size_t count, u32 *field, bool delay)
{
	u32 v;
	int ret;

	ret = kstrtou32(buf, 0, &v);
	if (!ret && delay)
		ret = krdma_sess_check_delay(v);
	if (!ret && !v)
		ret = -EINVAL;
	if (ret)
		return ret;
	spin_lock_bh(&s->lock);
	*field = v;
	if (!s->stopping && s->state == KRDMA_SESS_RECONNECTING)
		mod_delayed_work(krdma_wq, &s->work, 0);
	spin_unlock_bh(&s->lock);
	return count;
}

static ssize_t sess_reconnect_delay_ms_store(struct kobject *kobj,
					     struct kobj_attribute *attr,
					     const char *buf, size_t count)
{
	return sess_store_u32(to_sess(kobj), buf, count,
			      &to_sess(kobj)->delay_ms, true);
}

static ssize_t sess_loss_tmo_ms_store(struct kobject *kobj,
				      struct kobj_attribute *attr,
				      const char *buf, size_t count)
{
	return sess_store_u32(to_sess(kobj), buf, count,
			      &to_sess(kobj)->loss_tmo_ms, false);
}

#define KRDMA_SESS_ATTR_RO(_name) \
static struct kobj_attribute sess_attr_##_name = \
	__ATTR(_name, 0444, sess_##_name##_show, NULL)
#define KRDMA_SESS_ATTR_RW(_name) \
static struct kobj_attribute sess_attr_##_name = \
	__ATTR(_name, 0644, sess_##_name##_show, sess_##_name##_store)

KRDMA_SESS_ATTR_RO(state);
KRDMA_SESS_ATTR_RO(conn);
KRDMA_SESS_ATTR_RO(nr_conns);
KRDMA_SESS_ATTR_RO(reconnects);
KRDMA_SESS_ATTR_RO(generation);
KRDMA_SESS_ATTR_RO(last_error);
KRDMA_SESS_ATTR_RO(last_wc_status);
KRDMA_SESS_ATTR_RO(id);
KRDMA_SESS_ATTR_RO(peer_addr);
KRDMA_SESS_ATTR_RW(reconnect_delay_ms);
KRDMA_SESS_ATTR_RW(loss_tmo_ms);

static struct attribute *krdma_sess_attrs[] = {
	&sess_attr_state.attr,
	&sess_attr_conn.attr,
	&sess_attr_nr_conns.attr,
	&sess_attr_reconnects.attr,
	&sess_attr_generation.attr,
	&sess_attr_last_error.attr,
	&sess_attr_last_wc_status.attr,
	&sess_attr_id.attr,
	&sess_attr_peer_addr.attr,
	&sess_attr_reconnect_delay_ms.attr,
	&sess_attr_loss_tmo_ms.attr,
	NULL,
};
ATTRIBUTE_GROUPS(krdma_sess);

static void krdma_sess_kobj_release(struct kobject *kobj)
{
	kfree(to_sess(kobj));
	krdma_kobj_released();
}

static const struct kobj_type krdma_sess_ktype = {
	.sysfs_ops	= &kobj_sysfs_ops,
	.release	= krdma_sess_kobj_release,
	.default_groups	= krdma_sess_groups,
};

/* ---- the API --------------------------------------------------------- */

static int krdma_sess_opts_fill(struct krdma_session *s,
				const struct krdma_session_opts *in)
{
	struct krdma_session_opts *o = &s->opts;

	if (in)
		*o = *in;
	/* A pointer of the caller's, valid during krdma_session_create(). */
	o->name = NULL;
	if (o->conn.ops || o->conn.priv) {
		pr_warn_ratelimited("session: opts.conn.ops and .priv are the session's\n");
		return -EINVAL;
	}
	if (o->conn.name) {
		pr_warn_ratelimited("session: opts.conn.name refused: krdma names its connections\n");
		return -EINVAL;
	}
	if (o->conn.private_data_len > KRDMA_SESSION_MAX_USER_DATA ||
	    (o->conn.private_data_len && !o->conn.private_data)) {
		pr_warn_ratelimited("session: %u bytes of private data, at most %u\n",
				    o->conn.private_data_len,
				    (u32)KRDMA_SESSION_MAX_USER_DATA);
		return -EINVAL;
	}
	s->user_len = o->conn.private_data_len;
	if (s->user_len)
		memcpy(s->user, o->conn.private_data, s->user_len);
	o->conn.private_data = NULL;
	o->conn.private_data_len = 0;
	if (!o->reconnect_delay_ms)
		o->reconnect_delay_ms = KRDMA_SESSION_DEFAULT_DELAY_MS;
	if (!o->loss_tmo_ms)
		o->loss_tmo_ms = KRDMA_SESSION_DEFAULT_LOSS_TMO_MS;
	if (krdma_sess_check_delay(o->reconnect_delay_ms)) {
		pr_warn_ratelimited("session: reconnect_delay_ms %u out of [%u, %u]\n",
				    o->reconnect_delay_ms,
				    KRDMA_SESSION_MIN_DELAY_MS,
				    KRDMA_SESSION_MAX_DELAY_MS);
		return -EINVAL;
	}
	s->delay_ms = o->reconnect_delay_ms;
	s->loss_tmo_ms = o->loss_tmo_ms;
	if (o->nr_conns > KRDMA_SESSION_MAX_CONNS) {
		pr_warn_ratelimited("session: %u connections, at most %u\n",
				    o->nr_conns, KRDMA_SESSION_MAX_CONNS);
		return -EINVAL;
	}
	s->nr = o->nr_conns ?: 1;
	return 0;
}

static size_t krdma_sess_addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					  sizeof(struct sockaddr_in);
}

/**
 * krdma_session_create - connect to a peer, for good
 * @dst: the peer's address (IPv4 or IPv6, with port)
 * @src: local address to bind to, or NULL
 * @opts: parameters, or NULL for the defaults
 *
 * Makes a session (a random 16-byte id, its directory under
 * /sys/kernel/krdma/sessions/) and its first connection (its first set of
 * @opts->nr_conns, one after another), synchronously: if one fails,
 * nothing is left, no event is told, and its error is returned.  A
 * message @recv kept of a set that fails is waited for: release it
 * without waiting for an event (the connections made are shut down
 * first, so nothing more is delivered).  Once the
 * session exists, its connection is replaced whenever it fails
 * (enum krdma_session_event), from krdma's workqueue.  The first event,
 * KRDMA_SESSION_CONNECTED, comes from there too, queued as the first set
 * is up, and the work may run at once on another CPU: any event,
 * CONNECTED first, may run before this returns.  The recv callback runs
 * earlier still, as soon as each connection is up, while the others of
 * the set are still being made, and krdma_session_conn_get() may return
 * KRDMA_ERR_RETRY until CONNECTED (the set is the session's only once all
 * of it is up).  So the callbacks must not count on the caller having
 * stored the session: they are given @s, and krdma_session_priv(@s) is
 * opts.priv from the first of them on.
 *
 * Context: process context; sleeps up to @opts->conn.timeout_ms for each
 * connection, and when the set fails until what @recv kept of it is
 * released.
 * Return: the session, or an ERR_PTR: krdma_connect()'s errors, -EINVAL
 * (bad @opts: a reconnect delay out of range, opts.conn.ops, .priv or
 * .name set, more than KRDMA_SESSION_MAX_USER_DATA bytes of private data,
 * more than KRDMA_SESSION_MAX_CONNS connections, a name too long), -EEXIST
 * (a session has @opts->name), -ENOMEM.
 */
struct krdma_session *krdma_session_create(const struct sockaddr *dst,
					   const struct sockaddr *src,
					   const struct krdma_session_opts *opts)
{
	const char *name = opts && opts->name && *opts->name ? opts->name :
							       NULL;
	struct krdma_session *s;
	int ret;

	if (!dst || (dst->sa_family != AF_INET && dst->sa_family != AF_INET6))
		return ERR_PTR(-EINVAL);
	if (name && strlen(name) >= KRDMA_SESSION_NAME_MAX)
		return ERR_PTR(-EINVAL);
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return ERR_PTR(-ENOMEM);
	/* From here on the kobject's release frees s. */
	krdma_kobj_init(&s->kobj, &krdma_sess_ktype);
	mutex_init(&s->mutex);
	spin_lock_init(&s->lock);
	INIT_DELAYED_WORK(&s->work, krdma_sess_work);
	krdma_connect_ctl_init(&s->connect);
	INIT_LIST_HEAD(&s->old);
	INIT_LIST_HEAD(&s->names);
	ret = krdma_sess_name_take(s, name);
	if (ret)
		goto fail;
	uuid_gen(&s->uuid);
	memcpy(&s->dst, dst, krdma_sess_addr_len(dst));
	if (src) {
		memcpy(&s->src, src, krdma_sess_addr_len(src));
		s->has_src = true;
	}
	ret = krdma_sess_opts_fill(s, opts);
	if (ret)
		goto fail;

	ret = krdma_sess_connect_set(s, 0, false);
	if (ret) {
		/*
		 * A connection of the set that failed before it was closed
		 * may have queued the work: nothing is left for it.
		 */
		cancel_delayed_work_sync(&s->work);
		goto fail;
	}
	if (kobject_add(&s->kobj, krdma_sessions_kobj, "%s", s->name))
		pr_warn_ratelimited("%s: sysfs directory failed\n", s->name);
	else
		s->in_sysfs = true;
	spin_lock_bh(&s->lock);
	krdma_sess_install_locked(s);
	s->proven = true;	/* the first set's failure starts an outage */
	s->announce = true;
	mod_delayed_work(krdma_wq, &s->work, 0);
	spin_unlock_bh(&s->lock);
	return s;

fail:
	krdma_sess_name_put(s);
	kobject_put(&s->kobj);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_GPL(krdma_session_create);

/**
 * krdma_session_destroy - stop reconnecting, close, free
 * @s: the session
 *
 * Stops the reconnects: an attempt under way is called off (its connect
 * waiting for a peer that does not answer ends at once, and krdma tears
 * that connection down in the background), the connections the attempt
 * made are closed, and its failure is not told (no LOST).  Closes the
 * session's connections and waits for their callbacks and the session's.
 * No event callback of @s runs once this returns, and @s must not be used
 * afterwards.  Every connection taken with krdma_session_conn_get() must
 * have been put back before, and every message the recv callback kept
 * (KRDMA_MSG_KEEP) released.
 *
 * Context: process context; sleeps, not for a connect's timeout
 * (opts.conn.timeout_ms): for an event callback of @s that is running
 * (RECONNECTED's included, until it returns) and for the teardown of the
 * session's connections (each as krdma_close()).  Not from @s's own
 * event callback, which it waits for.
 */
void krdma_session_destroy(struct krdma_session *s)
{
	struct krdma_sess_conn *sc, *tmp;
	u32 i;

	spin_lock_bh(&s->lock);
	s->stopping = true;
	spin_unlock_bh(&s->lock);
	/*
	 * An attempt's connect waiting for the peer ends now, and a later
	 * one of its set fails at once: the work returns soon.  Not under
	 * s->mutex, which the work holds.
	 */
	krdma_connect_cancel(&s->connect, -ECANCELED);
	/* Nobody queues it once stopping is set. */
	cancel_delayed_work_sync(&s->work);

	mutex_lock(&s->mutex);
	/*
	 * Out of s->cur under s->lock before they are closed, as a failed
	 * set leaves it: sessions/NAME/conn reads it until kobject_del().
	 */
	spin_lock_bh(&s->lock);
	for (i = 0; i < s->nr; i++) {
		if (s->cur[i])
			list_add_tail(&s->cur[i]->list, &s->old);
		s->cur[i] = NULL;
	}
	spin_unlock_bh(&s->lock);
	list_for_each_entry_safe(sc, tmp, &s->old, list) {
		list_del(&sc->list);
		krdma_sess_close(s, sc);
	}
	mutex_unlock(&s->mutex);
	if (s->in_sysfs)
		kobject_del(&s->kobj);
	krdma_sess_name_put(s);
	kobject_put(&s->kobj);
}
EXPORT_SYMBOL_GPL(krdma_session_destroy);

/**
 * krdma_session_conn_get_nth - a connection of the session's set, for a while
 * @s: the session
 * @i: which one: 0 to krdma_session_nr_conns() - 1
 *
 * The connection stays open (though it may fail) until
 * krdma_session_conn_put(): a failed connection is closed only once every
 * user has put it back, so take it for each submission, or batch of them,
 * and put it when they completed.  Connection @i of the set is made with
 * index @i in its connect request (krdma_session_index_from_req()), so
 * the peer knows it as that queue.
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: the connection, or ERR_PTR(KRDMA_ERR_RETRY) when the session
 * has no working connection @i now (it failed, even if the session has not
 * been told yet, or a reconnect is under way, or krdma_session_create() is
 * still making the first set): retry after KRDMA_SESSION_RECONNECTED (or
 * CONNECTED); ERR_PTR(KRDMA_ERR_LOST) once the session is lost or being
 * destroyed; ERR_PTR(-EINVAL) when @i is not below the number of
 * connections.
 */
struct krdma_conn *krdma_session_conn_get_nth(struct krdma_session *s, u32 i)
{
	struct krdma_sess_conn *sc;
	struct krdma_conn *conn;

	if (i >= s->nr)
		return ERR_PTR(-EINVAL);
	spin_lock_bh(&s->lock);
	sc = s->cur[i];
	if (s->stopping || s->state == KRDMA_SESS_LOST) {
		conn = ERR_PTR(KRDMA_ERR_LOST);
	} else if (!sc || sc->failed) {
		conn = ERR_PTR(KRDMA_ERR_RETRY);
	} else {
		sc->users++;
		conn = sc->conn;
	}
	spin_unlock_bh(&s->lock);
	/*
	 * Failed, but its end event has not come yet (it may wait up to a
	 * second for the cause): a submission on it would only fail.
	 */
	if (!IS_ERR(conn) && krdma_conn_error(conn)) {
		krdma_session_conn_put(s, conn);
		conn = ERR_PTR(KRDMA_ERR_RETRY);
	}
	return conn;
}
EXPORT_SYMBOL_GPL(krdma_session_conn_get_nth);

/**
 * krdma_session_conn_get - the session's (first) connection, for a while
 * @s: the session
 *
 * krdma_session_conn_get_nth(@s, 0): the connection of a session of one.
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: as krdma_session_conn_get_nth().
 */
struct krdma_conn *krdma_session_conn_get(struct krdma_session *s)
{
	return krdma_session_conn_get_nth(s, 0);
}
EXPORT_SYMBOL_GPL(krdma_session_conn_get);

/**
 * krdma_session_nr_conns - how many connections a session has
 * @s: the session
 *
 * Context: any.
 * Return: opts.nr_conns of krdma_session_create() (1 for 0).
 */
u32 krdma_session_nr_conns(struct krdma_session *s)
{
	return s->nr;
}
EXPORT_SYMBOL_GPL(krdma_session_nr_conns);

/**
 * krdma_session_conn_index - which of its session's set a connection is
 * @s: the session
 * @conn: a connection of @s (as its recv callback is given, or
 *	krdma_session_conn_get_nth() returned), current or failed
 *
 * Context: any; does not sleep.
 * Return: its index, 0 to krdma_session_nr_conns() - 1, or -EINVAL when
 * @conn is not one of @s's (any other connection may be given: its
 * consumer's krdma_conn_priv() is not read).
 */
int krdma_session_conn_index(struct krdma_session *s, struct krdma_conn *conn)
{
	struct krdma_sess_conn *sc = krdma_sess_conn_of(s, conn);

	return sc ? sc->idx : -EINVAL;
}
EXPORT_SYMBOL_GPL(krdma_session_conn_index);

/**
 * krdma_session_conn_put - give back a connection of krdma_session_conn_get()
 * @s: the session
 * @conn: the connection it returned (one that is not @s's is refused, with
 *	a warning)
 *
 * Context: any but hard interrupt; does not sleep.
 */
void krdma_session_conn_put(struct krdma_session *s, struct krdma_conn *conn)
{
	struct krdma_sess_conn *sc = krdma_sess_conn_of(s, conn);

	if (WARN_ON_ONCE(!sc))
		return;
	spin_lock_bh(&s->lock);
	/* One that left the set (on s->old) is closed by the work. */
	if (!WARN_ON_ONCE(!sc->users) && !--sc->users &&
	    !list_empty(&sc->list) && !s->stopping)
		mod_delayed_work(krdma_wq, &s->work, 0);	/* close it */
	spin_unlock_bh(&s->lock);
}
EXPORT_SYMBOL_GPL(krdma_session_conn_put);

/**
 * krdma_session_errno - what an operation's error means to the consumer
 * @s: the session
 * @conn: the session's connection the operation ran on
 * @err: what the operation returned (or its request's status)
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: 0 for 0; @err itself when @conn still works (the operation's
 * own fault: -ERANGE, -EMSGSIZE, a nowait -EAGAIN...); -EINTR and
 * -ERESTARTSYS always: a signal ended the caller's wait, and a fatal one
 * (krdma_send() and the other synchronous calls) failed @conn itself, so
 * a dying task that resubmitted would fail every new connection in turn;
 * else KRDMA_ERR_RETRY (resubmit on the connection of
 * KRDMA_SESSION_RECONNECTED), or KRDMA_ERR_LOST when the session is lost.
 */
int krdma_session_errno(struct krdma_session *s, struct krdma_conn *conn,
			int err)
{
	bool lost;

	err = krdma_sess_op_errno(err, krdma_conn_error(conn));
	if (err != KRDMA_ERR_RETRY)
		return err;
	spin_lock_bh(&s->lock);
	lost = s->state == KRDMA_SESS_LOST;
	spin_unlock_bh(&s->lock);
	return lost ? KRDMA_ERR_LOST : err;
}
EXPORT_SYMBOL_GPL(krdma_session_errno);

/**
 * krdma_session_priv - the consumer's pointer of a session
 * @s: the session
 *
 * Context: any.
 * Return: opts.priv of krdma_session_create().
 */
void *krdma_session_priv(struct krdma_session *s)
{
	return s->opts.priv;
}
EXPORT_SYMBOL_GPL(krdma_session_priv);

/**
 * krdma_session_name - a session's name
 * @s: the session
 *
 * Context: any.
 * Return: its directory's name under /sys/kernel/krdma/sessions/.
 */
const char *krdma_session_name(struct krdma_session *s)
{
	return s->name;
}
EXPORT_SYMBOL_GPL(krdma_session_name);

/**
 * krdma_session_id_from_req - a listener's view of a session's request
 * @req: what the listener's accept callback was given
 * @id: the session's id (may be NULL)
 * @gen: the request's generation: 0 for the session's first connect
 *	request, one more for each later one (may be NULL)
 *
 * A returning session has the same @id and a higher @gen.  The hook sees
 * it only when the listener let it through: a request that finds a live
 * passive end of the same session and index replaces it when it is newer
 * and from the same host (the old end fails with -ESTALE once the new one
 * is accepted), and is refused without asking the hook otherwise
 * (-ESTALE: not newer; -EBUSY: another host).  Its consumer's
 * own bytes follow the session header in the request's private data, at
 * (const u8 *)req->private_data + KRDMA_SESSION_PDATA_HDR.
 *
 * Context: any.
 * Return: how many of the consumer's bytes follow (0 to
 * KRDMA_SESSION_MAX_USER_DATA), or -EINVAL when @req is not a session's.
 */
int krdma_session_id_from_req(const struct krdma_conn_req *req, uuid_t *id,
			      u32 *gen)
{
	return krdma_sess_pdata_decode(req->private_data,
				       req->private_data_len, id, gen, NULL,
				       NULL);
}
EXPORT_SYMBOL_GPL(krdma_session_id_from_req);

/**
 * krdma_session_index_from_req - which connection of a session's set
 * @req: what the listener's accept callback was given
 * @index: the connection's index in its session's set, from 0 (may be
 *	NULL)
 * @nr_conns: how many connections the set has (may be NULL)
 *
 * A passive side that serves a session's set as queues (one per CPU or
 * blk-mq hardware queue) tells them apart by @index; the set's
 * connections share the session id and generation
 * (krdma_session_id_from_req()).
 *
 * Context: any.
 * Return: 0, or -EINVAL when @req is not a session's.
 */
int krdma_session_index_from_req(const struct krdma_conn_req *req, u32 *index,
				 u32 *nr_conns)
{
	int ret = krdma_sess_pdata_decode(req->private_data,
					  req->private_data_len, NULL, NULL,
					  index, nr_conns);

	return ret < 0 ? ret : 0;
}
EXPORT_SYMBOL_GPL(krdma_session_index_from_req);

/**
 * krdma_conn_session - which session a connection belongs to
 * @conn: the connection, either end
 * @id: the session's id (may be NULL)
 * @gen: the generation of its connect request (may be NULL)
 * @index: its index in the session's set of connections (may be NULL)
 *
 * For a passive side that serves sessions: its connections' callbacks
 * tell which client session, and which queue of it, a connection is, and
 * a returning session's connections have the same @id as the ones they
 * replace (krdma_session_id_from_req() reads the same at accept time).
 * On the active side, the session's own connections answer too.
 *
 * Context: any.
 * Return: 0, or -ENOENT when @conn is no session's (its connect request
 * carried no session header).
 */
int krdma_conn_session(struct krdma_conn *conn, uuid_t *id, u32 *gen,
		       u32 *index)
{
	if (!conn->sess_known)
		return -ENOENT;
	if (id)
		uuid_copy(id, &conn->sess_id);
	if (gen)
		*gen = conn->sess_gen;
	if (index)
		*index = conn->sess_idx;
	return 0;
}
EXPORT_SYMBOL_GPL(krdma_conn_session);

/* ---- the passive side: a session that returns ---------------------- */

/**
 * krdma_sess_claim - a listener's check of a session's connect request
 * @l: the listener
 * @pdata: the consumer's private data of the request (after krdma's
 *	handshake)
 * @len: its length
 * @peer: where the request came from
 * @r: filled with the request's session header and what it replaces
 *
 * A session reconnects when its side of a connection failed, which this
 * side may not have seen (the peer's link went down, or its power was
 * cut): the request of generation N + 1 finds the passive end of
 * generation N still up.  It replaces it, when it comes from the same
 * host: krdma_sess_claim_done() fails the old end with -ESTALE once the
 * new one is accepted, so that its consumer lets go of it at once rather
 * than when heartbeats or traffic find it dead.  A request older than a
 * live end (a late duplicate) is refused with -ESTALE, which its session
 * takes as final; one from another host with -EBUSY, which its session
 * retries until the live end fails by itself.  Requests without a session
 * header pass untouched.
 *
 * Context: process context (the request's CM handler); takes krdma_lock.
 * Return: 0 to go on (@r->old, referenced, is what it replaces, or NULL),
 * or the errno to refuse the request with.
 */
int krdma_sess_claim(struct krdma_listener *l, const void *pdata, u32 len,
		     const struct sockaddr *peer, struct krdma_sess_req *r)
{
	struct krdma_conn *c;
	u32 idx, old_gen = 0;
	int ret = 0;

	memset(r, 0, sizeof(*r));
	if (krdma_sess_pdata_decode(pdata, len, &r->id, &r->gen, &idx,
				    NULL) < 0)
		return 0;
	r->known = true;
	r->idx = idx;
	mutex_lock(&krdma_lock);
	list_for_each_entry(c, &krdma_conns, list) {
		bool same, live;

		if (c->listener != l || !c->sess_known ||
		    c->sess_idx != r->idx || !uuid_equal(&c->sess_id, &r->id))
			continue;
		spin_lock_bh(&c->lock);
		live = !c->dying && (c->state == KRDMA_CONN_CONNECTING ||
				     c->state == KRDMA_CONN_CONNECTED);
		spin_unlock_bh(&c->lock);
		if (!live)
			continue;
		same = krdma_sess_same_host((struct sockaddr *)&c->raddr, peer);
		switch (krdma_sess_verdict(c->sess_gen, r->gen, same)) {
		case KRDMA_SESS_REPLACE:
			/* One failed by an earlier reconnect may linger. */
			if (!r->old || (s32)(c->sess_gen - old_gen) > 0) {
				if (r->old)
					krdma_conn_put(r->old);
				krdma_conn_get(c);
				r->old = c;
				old_gen = c->sess_gen;
			}
			break;
		case KRDMA_SESS_STALE:
			ret = -ESTALE;
			break;
		case KRDMA_SESS_BUSY:
			ret = -EBUSY;
			break;
		}
		if (ret)
			break;
	}
	mutex_unlock(&krdma_lock);
	if (!ret)
		return 0;
	if (r->old) {
		krdma_conn_put(r->old);
		r->old = NULL;
	}
	pr_warn_ratelimited("%s: refused connection %u of session %pUb (generation %u) from %pISc: %s\n",
			    l->name, r->idx, &r->id, r->gen, peer,
			    ret == -ESTALE ?
			    "one of the same or a newer generation is up" :
			    "it is up from another host");
	return ret;
}

/**
 * krdma_sess_claim_done - the end of a request krdma_sess_claim() passed
 * @l: the listener
 * @r: what krdma_sess_claim() filled
 * @accepted: whether the request's connection was accepted
 *
 * Fails the passive end the request replaces (only when the new one was
 * accepted) and drops the reference on it.
 *
 * Context: process context (the request's CM handler).
 */
void krdma_sess_claim_done(struct krdma_listener *l, struct krdma_sess_req *r,
			   bool accepted)
{
	struct krdma_conn *old = r->old;

	if (!old)
		return;
	r->old = NULL;
	if (accepted) {
		pr_info_ratelimited("%s: %s replaced by connection %u of session %pUb (generation %u)\n",
				    l->name, old->name, r->idx, &r->id, r->gen);
		krdma_conn_fail(old, -ESTALE);
	}
	krdma_conn_put(old);
}
