// SPDX-License-Identifier: GPL-2.0
/*
 * Sessions: a connection to one peer that comes back on its own
 * (include/krdma.h, "sessions"), modelled on nvme-rdma's reconnect_delay
 * and ctrl_loss_tmo and on rtrs-clt's reconnect work.
 *
 * A session is a consumer of the connection API like any other: its
 * connections are made by krdma_connect() with the session's ops, and it
 * learns of their end by their event callback.  The core knows nothing of
 * sessions; from krdma_core.h this file takes only krdma's workqueue and
 * the sessions/ directory under /sys/kernel/krdma.
 *
 * Everything that sleeps or closes happens in the session's work, one run
 * at a time under s->mutex: telling the consumer, connecting again, and
 * closing a failed connection (never in the connection's own event
 * callback, where krdma_close() would wait for itself).  A failed
 * connection the consumer still holds (krdma_session_conn_get()) is closed
 * only once it has put it back.  The work is idempotent: whoever has news
 * (a connection's end event, the last put of an old connection) queues it
 * at once, and it works out from the state what is due, then queues
 * itself for the next attempt.
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
	struct list_head	list;		/* s->old */
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

	spinlock_t		lock;		/* everything below */
	enum krdma_sess_state	state;
	bool			stopping;	/* krdma_session_destroy() */
	bool			announce;	/* CONNECTED still to tell */
	struct krdma_sess_conn	*cur;		/* NULL while reconnecting */
	struct list_head	old;		/* failed, waiting to be closed */
	u32			gen;		/* of the last connect request */
	u32			reconnects;	/* connections made again */
	int			last_error;
	enum ib_wc_status	last_wc;	/* its failed completion's */
	int			attempt_error;	/* the last attempt's, or 0 */
	unsigned long		failed_at;	/* jiffies: the failure */
	unsigned long		next_attempt;	/* jiffies */
	u32			delay_ms;	/* settable in sysfs */
	u32			loss_tmo_ms;
	char			conn_name[48];	/* cur's, or "" */
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

static void krdma_sess_tell(struct krdma_session *s,
			    enum krdma_session_event ev, int error)
{
	if (s->opts.ops && s->opts.ops->event)
		s->opts.ops->event(s, ev, error);
}

/* A connect request of generation @gen; sleeps up to opts.conn.timeout_ms. */
static struct krdma_sess_conn *krdma_sess_connect(struct krdma_session *s,
						  u32 gen, u32 timeout_ms)
{
	struct krdma_conn_opts o = s->opts.conn;
	u8 pd[KRDMA_MAX_PRIVATE_DATA];
	struct krdma_sess_conn *sc;
	struct krdma_conn *conn;
	int len;

	len = krdma_sess_pdata_encode(pd, &s->uuid, gen, s->user, s->user_len);
	if (len < 0)
		return ERR_PTR(len);
	sc = kzalloc(sizeof(*sc), GFP_KERNEL);
	if (!sc)
		return ERR_PTR(-ENOMEM);
	sc->s = s;
	INIT_LIST_HEAD(&sc->list);
	o.private_data = pd;
	o.private_data_len = len;
	o.ops = s->opts.ops && s->opts.ops->recv ? &krdma_sess_conn_ops_recv :
						   &krdma_sess_conn_ops;
	o.priv = sc;
	if (timeout_ms)
		o.timeout_ms = timeout_ms;
	conn = krdma_connect((struct sockaddr *)&s->dst,
			     s->has_src ? (struct sockaddr *)&s->src : NULL, &o);
	if (IS_ERR(conn)) {
		kfree(sc);
		return ERR_CAST(conn);
	}
	sc->conn = conn;
	return sc;
}

/* Make @sc the current connection, with s->lock held. */
static void krdma_sess_install_locked(struct krdma_session *s,
				      struct krdma_sess_conn *sc)
{
	s->cur = sc;
	s->state = KRDMA_SESS_CONNECTED;
	s->attempt_error = 0;
	strscpy(s->conn_name, krdma_conn_name(sc->conn), sizeof(s->conn_name));
}

/* Close the failed connections nobody holds any more. */
static void krdma_sess_reap(struct krdma_session *s)
{
	struct krdma_sess_conn *sc, *found;

	for (;;) {
		found = NULL;
		spin_lock_bh(&s->lock);
		list_for_each_entry(sc, &s->old, list) {
			if (!sc->users) {
				list_del_init(&sc->list);
				found = sc;
				break;
			}
		}
		spin_unlock_bh(&s->lock);
		if (!found)
			return;
		krdma_close(found->conn);
		kfree(found);
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
#define KRDMA_SESS_MIN_ATTEMPT_MS	200

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

/* One reconnect attempt, or the loss if its time has come. */
static void krdma_sess_attempt(struct krdma_session *s)
{
	struct krdma_sess_conn *sc;
	u32 gen, attempt_ms;
	int prev, err;
	bool lost;

	spin_lock_bh(&s->lock);
	prev = s->attempt_error;
	lost = s->loss_tmo_ms != KRDMA_SESSION_LOSS_TMO_NEVER &&
	       time_after_eq(jiffies, krdma_sess_lost_at(s));
	gen = lost ? s->gen : ++s->gen;
	attempt_ms = krdma_sess_attempt_ms_locked(s);
	spin_unlock_bh(&s->lock);
	if (lost) {
		krdma_sess_lose(s, prev ?: s->last_error);
		return;
	}
	krdma_sess_tell(s, KRDMA_SESSION_RECONNECTING, prev);
	sc = krdma_sess_connect(s, gen, attempt_ms);
	if (!IS_ERR(sc)) {
		spin_lock_bh(&s->lock);
		krdma_sess_install_locked(s, sc);
		s->reconnects++;
		spin_unlock_bh(&s->lock);
		pr_info_ratelimited("%s: reconnected (%s, generation %u)\n",
				    s->name, krdma_conn_name(sc->conn), gen);
		krdma_sess_tell(s, KRDMA_SESSION_RECONNECTED, 0);
		return;
	}
	err = PTR_ERR(sc);
	spin_lock_bh(&s->lock);
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
	struct krdma_sess_conn *sc;
	enum ib_wc_status wc = IB_WC_SUCCESS;
	bool announce, due;
	int failed = 0;

	mutex_lock(&s->mutex);
	spin_lock_bh(&s->lock);
	if (s->stopping) {
		spin_unlock_bh(&s->lock);
		goto out;
	}
	announce = s->announce;
	s->announce = false;
	sc = s->cur;
	/* s->cur changes only under s->mutex, which we hold. */
	spin_unlock_bh(&s->lock);
	if (sc)
		wc = krdma_conn_wc_status(sc->conn);
	spin_lock_bh(&s->lock);
	if (sc && sc->failed) {
		/* Detach it: closed once its users put it back. */
		s->cur = NULL;
		list_add_tail(&sc->list, &s->old);
		s->state = KRDMA_SESS_RECONNECTING;
		s->last_error = sc->error;
		s->last_wc = wc;
		s->attempt_error = 0;
		s->failed_at = jiffies;
		s->next_attempt = jiffies + msecs_to_jiffies(s->delay_ms);
		s->conn_name[0] = 0;
		failed = sc->error;
	}
	spin_unlock_bh(&s->lock);

	if (announce)
		krdma_sess_tell(s, KRDMA_SESSION_CONNECTED, 0);
	if (failed) {
		if (wc != IB_WC_SUCCESS)
			pr_info_ratelimited("%s: connection failed (%d, work completion: %s), reconnecting\n",
					    s->name, failed, ib_wc_status_msg(wc));
		else
			pr_info_ratelimited("%s: connection failed (%d), reconnecting\n",
					    s->name, failed);
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
	char			conn[48];
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
	strscpy(v->conn, s->conn_name[0] ? s->conn_name : "none",
		sizeof(v->conn));
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
KRDMA_SESS_SHOW(conn, "%s", v.conn)
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
 * /sys/kernel/krdma/sessions/) and its first connection, synchronously:
 * if that fails, nothing is left and its error is returned.  Once the
 * session exists, its connection is replaced whenever it fails
 * (enum krdma_session_event), from krdma's workqueue.  The first event,
 * KRDMA_SESSION_CONNECTED, comes from there too, after this returned.
 *
 * Context: process context; sleeps up to @opts->conn.timeout_ms.
 * Return: the session, or an ERR_PTR: krdma_connect()'s errors, -EINVAL
 * (bad @opts: a reconnect delay out of range, opts.conn.ops, .priv or
 * .name set, more than KRDMA_SESSION_MAX_USER_DATA bytes of private data,
 * a name too long), -EEXIST (a session has @opts->name), -ENOMEM.
 */
struct krdma_session *krdma_session_create(const struct sockaddr *dst,
					   const struct sockaddr *src,
					   const struct krdma_session_opts *opts)
{
	const char *name = opts && opts->name && *opts->name ? opts->name :
							       NULL;
	struct krdma_sess_conn *sc;
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

	sc = krdma_sess_connect(s, 0, 0);
	if (IS_ERR(sc)) {
		ret = PTR_ERR(sc);
		goto fail;
	}
	if (kobject_add(&s->kobj, krdma_sessions_kobj, "%s", s->name))
		pr_warn_ratelimited("%s: sysfs directory failed\n", s->name);
	else
		s->in_sysfs = true;
	spin_lock_bh(&s->lock);
	krdma_sess_install_locked(s, sc);
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

static void krdma_sess_close(struct krdma_session *s,
			     struct krdma_sess_conn *sc)
{
	/* The consumer's krdma_session_conn_put()s come before destroy. */
	WARN_ON_ONCE(READ_ONCE(sc->users));
	krdma_close(sc->conn);
	kfree(sc);
}

/**
 * krdma_session_destroy - stop reconnecting, close, free
 * @s: the session
 *
 * Stops the reconnects (waits for an attempt under way), closes the
 * session's connections and waits for their callbacks and the session's.
 * No event callback of @s runs once this returns, and @s must not be used
 * afterwards.  Every connection taken with krdma_session_conn_get() must
 * have been put back before.
 *
 * Context: process context; sleeps.  Not from @s's own event callback.
 */
void krdma_session_destroy(struct krdma_session *s)
{
	struct krdma_sess_conn *sc, *tmp;

	spin_lock_bh(&s->lock);
	s->stopping = true;
	spin_unlock_bh(&s->lock);
	/* Nobody queues it once stopping is set. */
	cancel_delayed_work_sync(&s->work);

	mutex_lock(&s->mutex);
	if (s->cur)
		krdma_sess_close(s, s->cur);
	s->cur = NULL;
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
 * krdma_session_conn_get - the session's current connection, for a while
 * @s: the session
 *
 * The connection stays open (though it may fail) until
 * krdma_session_conn_put(): a failed connection is closed only once every
 * user has put it back, so take it for each submission, or batch of them,
 * and put it when they completed.
 *
 * Context: any but hard interrupt; does not sleep.
 * Return: the connection, or ERR_PTR(KRDMA_ERR_RETRY) when the session
 * has no working connection now (it failed, even if the session has not
 * been told yet, or a reconnect is under way):
 * retry after KRDMA_SESSION_RECONNECTED; ERR_PTR(KRDMA_ERR_LOST) once
 * the session is lost or being destroyed.
 */
struct krdma_conn *krdma_session_conn_get(struct krdma_session *s)
{
	struct krdma_conn *conn;

	spin_lock_bh(&s->lock);
	if (s->stopping || s->state == KRDMA_SESS_LOST) {
		conn = ERR_PTR(KRDMA_ERR_LOST);
	} else if (!s->cur || s->cur->failed) {
		conn = ERR_PTR(KRDMA_ERR_RETRY);
	} else {
		s->cur->users++;
		conn = s->cur->conn;
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
EXPORT_SYMBOL_GPL(krdma_session_conn_get);

/**
 * krdma_session_conn_put - give back a connection of krdma_session_conn_get()
 * @s: the session
 * @conn: the connection it returned
 *
 * Context: any but hard interrupt; does not sleep.
 */
void krdma_session_conn_put(struct krdma_session *s, struct krdma_conn *conn)
{
	struct krdma_sess_conn *sc = krdma_conn_priv(conn);

	spin_lock_bh(&s->lock);
	if (!WARN_ON_ONCE(sc->s != s || !sc->users) && !--sc->users &&
	    sc != s->cur && !s->stopping)
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
 * own fault: -ERANGE, -EMSGSIZE, a nowait -EAGAIN...); else
 * KRDMA_ERR_RETRY (resubmit on the connection of
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
 * A returning session has the same @id and a higher @gen.  Its consumer's
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
				       req->private_data_len, id, gen);
}
EXPORT_SYMBOL_GPL(krdma_session_id_from_req);
