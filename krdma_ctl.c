// SPDX-License-Identifier: GPL-2.0
/*
 * The control file, /sys/kernel/krdma/control: listen, connect, unlisten,
 * disconnect, session, unsession, test and bench written as text (grammar in krdma_cmd.c,
 * descriptions in Documentation/ABI/testing/sysfs-kernel-krdma).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sysfs.h>

#include <krdma.h>
#include "krdma_cmd.h"
#include "krdma_ctl.h"
#include "krdma_selftest.h"
#include "krdma_bench.h"

/* A name the grammar takes for a new object is one krdma takes. */
static_assert(KRDMA_NEW_NAME_MAX <= KRDMA_OPTS_NAME_MAX);

/* Held by control-file writers; module exit takes it to shut them out. */
static DECLARE_RWSEM(krdma_ctl_rwsem);
static bool krdma_ctl_stopped;

/*
 * The connections and listeners the control file owns, by name: its own
 * registry, since krdma's lists have everybody's (/dev/krdma's, other
 * modules').
 */
static DEFINE_MUTEX(krdma_ctl_lock);
static LIST_HEAD(krdma_ctl_conns);
static LIST_HEAD(krdma_ctl_listeners);
static LIST_HEAD(krdma_ctl_sessions);
static bool krdma_ctl_off;		/* unload: the registry takes no more */
static struct workqueue_struct *krdma_ctl_wq;	/* reaps */

/* ---- the control file's connections --------------------------------- */

static void krdma_ctl_reap_work(struct work_struct *work);

static struct krdma_ctl_conn *krdma_ctl_alloc(void)
{
	struct krdma_ctl_conn *ctl;

	/* Not the allocator's warning: the callers' lines say what failed. */
	ctl = kzalloc(sizeof(*ctl), GFP_KERNEL | __GFP_NOWARN);
	if (!ctl)
		return NULL;
	kref_init(&ctl->ref);
	INIT_LIST_HEAD(&ctl->list);
	INIT_WORK(&ctl->reap_work, krdma_ctl_reap_work);
	mutex_init(&ctl->svc_lock);
	return ctl;
}

/* @ctl holds @conn, with a reference of its own. */
static void krdma_ctl_attach(struct krdma_ctl_conn *ctl,
			     struct krdma_conn *conn)
{
	krdma_conn_get(conn);
	ctl->conn = conn;
}

static void krdma_ctl_release(struct kref *ref)
{
	struct krdma_ctl_conn *ctl = container_of(ref, struct krdma_ctl_conn,
						  ref);

	krdma_test_free(ctl);
	krdma_bench_free(ctl);
	if (ctl->conn)
		krdma_conn_put(ctl->conn);
	kfree(ctl);
}

void krdma_ctl_get(struct krdma_ctl_conn *ctl)
{
	kref_get(&ctl->ref);
}

void krdma_ctl_put(struct krdma_ctl_conn *ctl)
{
	kref_put(&ctl->ref, krdma_ctl_release);
}

/* test_* and bench_* in conns/<name>/ (Documentation/ABI). */

static struct krdma_ctl_conn *krdma_ctl_of(struct kobject *kobj)
{
	/* The files exist only while the connection's priv is its ctl. */
	return krdma_conn_priv(krdma_conn_from_kobj(kobj));
}

#define KRDMA_CTL_TEST(_name, _what)					\
static ssize_t ctl_##_name##_show(struct kobject *kobj,		\
				  struct kobj_attribute *attr, char *buf) \
{									\
	return krdma_test_show(krdma_ctl_of(kobj), _what, buf);	\
}									\
static struct kobj_attribute ctl_attr_##_name =			\
	__ATTR(_name, 0444, ctl_##_name##_show, NULL)

KRDMA_CTL_TEST(test_status, ST_SHOW_STATUS);
KRDMA_CTL_TEST(test_ops, ST_SHOW_OPS);
KRDMA_CTL_TEST(test_bytes, ST_SHOW_BYTES);
KRDMA_CTL_TEST(test_usecs, ST_SHOW_USECS);
KRDMA_CTL_TEST(test_lat_min_ns, ST_SHOW_LAT_MIN);
KRDMA_CTL_TEST(test_lat_avg_ns, ST_SHOW_LAT_AVG);
KRDMA_CTL_TEST(test_lat_max_ns, ST_SHOW_LAT_MAX);

#define KRDMA_CTL_BENCH(_name, _what)					\
static ssize_t ctl_##_name##_show(struct kobject *kobj,		\
				  struct kobj_attribute *attr, char *buf) \
{									\
	return krdma_bench_show(krdma_ctl_of(kobj), _what, buf);	\
}									\
static struct kobj_attribute ctl_attr_##_name =			\
	__ATTR(_name, 0444, ctl_##_name##_show, NULL)

KRDMA_CTL_BENCH(bench_status, KB_SHOW_STATUS);
KRDMA_CTL_BENCH(bench_ops, KB_SHOW_OPS);
KRDMA_CTL_BENCH(bench_bytes, KB_SHOW_BYTES);
KRDMA_CTL_BENCH(bench_usecs, KB_SHOW_USECS);
KRDMA_CTL_BENCH(bench_bw_mbps, KB_SHOW_BW);
KRDMA_CTL_BENCH(bench_msg_rate, KB_SHOW_RATE);
KRDMA_CTL_BENCH(bench_lat_min_ns, KB_SHOW_LAT_MIN);
KRDMA_CTL_BENCH(bench_lat_p50_ns, KB_SHOW_LAT_P50);
KRDMA_CTL_BENCH(bench_lat_p99_ns, KB_SHOW_LAT_P99);
KRDMA_CTL_BENCH(bench_lat_max_ns, KB_SHOW_LAT_MAX);

static struct attribute *krdma_ctl_conn_attrs[] = {
	&ctl_attr_test_status.attr,
	&ctl_attr_test_ops.attr,
	&ctl_attr_test_bytes.attr,
	&ctl_attr_test_usecs.attr,
	&ctl_attr_test_lat_min_ns.attr,
	&ctl_attr_test_lat_avg_ns.attr,
	&ctl_attr_test_lat_max_ns.attr,
	&ctl_attr_bench_status.attr,
	&ctl_attr_bench_ops.attr,
	&ctl_attr_bench_bytes.attr,
	&ctl_attr_bench_usecs.attr,
	&ctl_attr_bench_bw_mbps.attr,
	&ctl_attr_bench_msg_rate.attr,
	&ctl_attr_bench_lat_min_ns.attr,
	&ctl_attr_bench_lat_p50_ns.attr,
	&ctl_attr_bench_lat_p99_ns.attr,
	&ctl_attr_bench_lat_max_ns.attr,
	NULL,
};

static const struct attribute_group krdma_ctl_conn_group = {
	.attrs	= krdma_ctl_conn_attrs,
};

static int krdma_ctl_add_files(struct krdma_ctl_conn *ctl)
{
	int ret;

	ret = krdma_conn_add_group(ctl->conn, &krdma_ctl_conn_group);
	ctl->files = !ret;
	return ret;
}

/* Waits for show() calls in progress: none reaches @ctl after this. */
static void krdma_ctl_del_files(struct krdma_ctl_conn *ctl)
{
	if (ctl->files)
		krdma_conn_remove_group(ctl->conn, &krdma_ctl_conn_group);
	ctl->files = false;
}

/*
 * Enter @ctl in the registry: only now can a "disconnect", a test or a
 * bench find it.  False once unload began (krdma_ctl_stop()).
 */
static bool krdma_ctl_register(struct krdma_ctl_conn *ctl)
{
	bool ok;

	mutex_lock(&krdma_ctl_lock);
	ok = !krdma_ctl_off;
	if (ok)
		list_add_tail(&ctl->list, &krdma_ctl_conns);
	mutex_unlock(&krdma_ctl_lock);
	return ok;
}

/*
 * A passive connection's registration: its files are made and it is
 * entered in the registry in one hold of the registry's lock, so that a
 * command naming it once its test_status file is there finds it
 * (krdma_ctl_find() waits for the lock), and a "disconnect" that finds it
 * removes files that are all there.  False once unload began (no files
 * then).
 */
static bool krdma_ctl_register_files(struct krdma_ctl_conn *ctl)
{
	bool ok;
	int ret;

	mutex_lock(&krdma_ctl_lock);
	ok = !krdma_ctl_off;
	if (ok) {
		ret = krdma_ctl_add_files(ctl);
		if (ret)
			pr_warn_ratelimited("%s: no test and bench files: %d\n",
					    krdma_conn_name(ctl->conn), ret);
		list_add_tail(&ctl->list, &krdma_ctl_conns);
	}
	mutex_unlock(&krdma_ctl_lock);
	return ok;
}

/*
 * The control file's connection named @name, with a reference; one not
 * being closed if there is one (the name is free for a new connection as
 * soon as krdma_close() returned, before its closer drops the old entry).
 */
static struct krdma_ctl_conn *krdma_ctl_find(const char *name)
{
	struct krdma_ctl_conn *c, *found = NULL;

	mutex_lock(&krdma_ctl_lock);
	list_for_each_entry(c, &krdma_ctl_conns, list) {
		if (strcmp(krdma_conn_name(c->conn), name))
			continue;
		found = c;
		if (!c->closing)
			break;
	}
	if (found)
		krdma_ctl_get(found);
	mutex_unlock(&krdma_ctl_lock);
	return found;
}

/*
 * Take the close of @ctl; false if a "disconnect" (or a reap) has it.
 * Of concurrent closers, exactly one gets it.
 */
static bool krdma_ctl_take_close(struct krdma_ctl_conn *ctl)
{
	bool mine;

	mutex_lock(&krdma_ctl_lock);
	mine = !ctl->closing;
	ctl->closing = true;
	mutex_unlock(&krdma_ctl_lock);
	return mine;
}

/*
 * Close a connection of the control file and drop the owner's reference;
 * the caller took the close, or never registered @ctl.  Ending the
 * connection first wakes its service thread and fails whatever its
 * self-test or bench waits for; then they stop, the files go, and only
 * then does krdma_close() release the connection.
 */
static void krdma_ctl_close(struct krdma_ctl_conn *ctl)
{
	struct krdma_conn *conn = ctl->conn;

	krdma_conn_shutdown(conn);
	krdma_svc_stop(ctl);
	krdma_test_flush(ctl);
	krdma_bench_flush(ctl);
	krdma_ctl_del_files(ctl);
	krdma_close(conn);
	mutex_lock(&krdma_ctl_lock);
	list_del_init(&ctl->list);
	mutex_unlock(&krdma_ctl_lock);
	krdma_ctl_put(ctl);
}

static void krdma_ctl_reap_work(struct work_struct *work)
{
	struct krdma_ctl_conn *ctl = container_of(work, struct krdma_ctl_conn,
						  reap_work);

	/* Unload closes it otherwise (krdma_ctl_stop()). */
	down_read(&krdma_ctl_rwsem);
	if (!krdma_ctl_stopped && krdma_ctl_take_close(ctl)) {
		int err = krdma_conn_error(ctl->conn);

		/* A peer that disconnected is ordinary life; a failure is not. */
		if (err == -ECONNRESET)
			pr_debug_ratelimited("%s: peer gone (%d), connection closed\n",
					     krdma_conn_name(ctl->conn), err);
		else
			pr_info_ratelimited("%s: peer gone (%d), connection closed\n",
					    krdma_conn_name(ctl->conn), err);
		krdma_ctl_close(ctl);
	}
	up_read(&krdma_ctl_rwsem);
	krdma_ctl_put(ctl);	/* the work's */
}

/**
 * krdma_ctl_reap - close a passive connection whose peer left
 * @ctl: a connection accepted by a listener made through the control file
 *
 * Nobody else would close it: without this, each connection a peer opens
 * and leaves would keep its QP, buffers and service thread until unload,
 * and count against the listener's backlog for good.  Called from the
 * connection's event callback once the connection has ended, which must
 * not close it itself.
 *
 * Context: process context.
 */
static void krdma_ctl_reap(struct krdma_ctl_conn *ctl)
{
	krdma_ctl_get(ctl);
	if (!queue_work(krdma_ctl_wq, &ctl->reap_work))
		krdma_ctl_put(ctl);
}

/* The control file's active connections: the service's recv callback. */
static const struct krdma_conn_ops krdma_ctl_active_ops = {
	.recv	= krdma_svc_recv,
};

static int krdma_ctl_connect(struct krdma_cmd *cmd)
{
	struct krdma_conn_opts opts = {
		.ops = &krdma_ctl_active_ops,
		.queue_depth = cmd->depth,
		.max_msg_size = cmd->msg,
		.timeout_ms = cmd->timeout_ms,
		.tos = cmd->tos,
		.heartbeat_ms = cmd->hb_ms,
		.heartbeat_misses = cmd->hb_misses,
		.poll = cmd->poll,
		.workqueue = cmd->wq,
		.comp_vector = cmd->vector,
		.name = cmd->name,
		.test_hello = cmd->hello,
	};
	struct krdma_ctl_conn *ctl;
	struct krdma_conn *conn;
	int ret;

	conn = krdma_conn_find(cmd->name);
	if (conn) {
		krdma_conn_put(conn);
		pr_warn_ratelimited("connect: name '%s' already in use\n",
				    cmd->name);
		return -EEXIST;
	}
	ctl = krdma_ctl_alloc();
	if (!ctl) {
		pr_warn_ratelimited("connect: %s: no memory\n", cmd->name);
		return -ENOMEM;
	}
	opts.priv = ctl;
	conn = krdma_connect((struct sockaddr *)&cmd->addr,
			     cmd->has_src ? (struct sockaddr *)&cmd->src : NULL,
			     &opts);
	if (IS_ERR(conn)) {
		krdma_ctl_put(ctl);
		return PTR_ERR(conn);
	}
	krdma_ctl_attach(ctl, conn);
	ret = krdma_svc_start(ctl);
	if (ret) {
		pr_warn_ratelimited("connect: %s: no service thread: %d\n",
				    cmd->name, ret);
		goto out_close;
	}
	ret = krdma_ctl_add_files(ctl);
	if (ret) {
		pr_warn_ratelimited("connect: %s: no test and bench files: %d\n",
				    cmd->name, ret);
		goto out_close;
	}
	/* Only now can a "disconnect" find it and close it. */
	if (krdma_ctl_register(ctl))
		return 0;
	ret = -ENODEV;		/* not while krdma_ctl_rwsem is held */
out_close:
	krdma_ctl_close(ctl);
	return ret;
}

/*
 * A passive connection is established: the control file takes it (its
 * state, its service thread, its files) and enters it in the registry,
 * where a "disconnect" can find it.  Unless unload began: then nothing
 * of the control file's stays on it, and it is refused
 * (krdma_conn_abandon()), as when there is no memory to take it: the
 * control file closes what it took, like any consumer.
 */
static void krdma_ctl_take(struct krdma_conn *conn)
{
	struct krdma_ctl_conn *ctl;
	int ret;

	ctl = krdma_ctl_alloc();
	if (!ctl) {
		pr_warn_ratelimited("%s: no memory to take it, disconnected\n",
				    krdma_conn_name(conn));
		krdma_conn_abandon(conn);
		return;
	}
	krdma_ctl_attach(ctl, conn);
	krdma_conn_set_priv(conn, ctl);
	/* -ESHUTDOWN: unload began. */
	ret = krdma_svc_start(ctl);
	if (ret && ret != -ESHUTDOWN)
		pr_warn_ratelimited("%s: no service thread, self-test will not answer: %d\n",
				    krdma_conn_name(conn), ret);
	if (ret != -ESHUTDOWN && krdma_ctl_register_files(ctl))
		return;
	/* The thread sees no end of the connection: up to KRDMA_SVC_POLL. */
	krdma_svc_stop(ctl);
	krdma_ctl_del_files(ctl);
	krdma_conn_set_priv(conn, NULL);
	krdma_ctl_put(ctl);
	krdma_conn_abandon(conn);
}

/*
 * The connections of a listener made through the control file: on
 * ESTABLISHED each is the control file's (a "disconnect" may close it) and
 * gets its self-test service thread; when it ends (its peer left, it
 * failed, its device went), it is closed, since nobody else would.
 * One call at a time per connection: the end comes after ESTABLISHED
 * returned.
 */
static void krdma_ctl_passive_event(struct krdma_conn *conn,
				    enum krdma_event ev, int error)
{
	struct krdma_ctl_conn *ctl;

	if (ev == KRDMA_EVENT_ESTABLISHED) {
		krdma_ctl_take(conn);
		return;
	}
	/* None: the control file could not take it, and abandoned it. */
	ctl = krdma_conn_priv(conn);
	if (ctl)
		krdma_ctl_reap(ctl);
}

static const struct krdma_conn_ops krdma_ctl_passive_ops = {
	.event	= krdma_ctl_passive_event,
	.recv	= krdma_svc_recv,
};

/* ---- the control file's listeners ------------------------------------ */

/*
 * A listener or a session the control file made, in its registry list by
 * name: "unlisten"/"unsession" or unload takes it off and ends it.
 */
struct krdma_ctl_entry {
	struct list_head	list;
	char			name[KRDMA_NEW_NAME_MAX];
};

static void krdma_ctl_entry_add(struct krdma_ctl_entry *e, const char *name,
				struct list_head *head)
{
	strscpy(e->name, name, sizeof(e->name));
	/* Unload waits for this command (krdma_ctl_rwsem) before it sweeps. */
	mutex_lock(&krdma_ctl_lock);
	list_add_tail(&e->list, head);
	mutex_unlock(&krdma_ctl_lock);
}

/*
 * The entry named @name (NULL: any) of @head, taken off the registry: of
 * concurrent takers, one gets it.
 */
static struct krdma_ctl_entry *krdma_ctl_entry_take(struct list_head *head,
						    const char *name)
{
	struct krdma_ctl_entry *e, *found = NULL;

	mutex_lock(&krdma_ctl_lock);
	list_for_each_entry(e, head, list) {
		if (!name || !strcmp(e->name, name)) {
			list_del_init(&e->list);
			found = e;
			break;
		}
	}
	mutex_unlock(&krdma_ctl_lock);
	return found;
}

/* A listener the control file made. */
struct krdma_ctl_listener {
	struct krdma_ctl_entry	e;		/* krdma_ctl_listeners */
	struct krdma_listener	*l;		/* the owner's reference */
};

static int krdma_ctl_listen(struct krdma_cmd *cmd)
{
	struct krdma_conn_opts opts = {
		.queue_depth = cmd->depth,
		.max_msg_size = cmd->msg,
		.backlog = cmd->backlog,
		.heartbeat_ms = cmd->hb_ms,
		.heartbeat_misses = cmd->hb_misses,
		.workqueue = cmd->wq,
		.comp_vector = cmd->vector,
		.ops = &krdma_ctl_passive_ops,
		.name = cmd->name,
	};
	struct krdma_ctl_listener *cl;
	struct krdma_listener *l;

	l = krdma_listener_find(cmd->name);
	if (l) {
		krdma_listener_put(l);
		pr_warn_ratelimited("listen: name '%s' already in use\n",
				    cmd->name);
		return -EEXIST;
	}
	cl = kzalloc(sizeof(*cl), GFP_KERNEL | __GFP_NOWARN);
	if (!cl) {
		pr_warn_ratelimited("listen: %s: no memory\n", cmd->name);
		return -ENOMEM;
	}
	l = krdma_listen((struct sockaddr *)&cmd->addr, &opts);
	if (IS_ERR(l)) {
		kfree(cl);
		return PTR_ERR(l);
	}
	cl->l = l;
	krdma_ctl_entry_add(&cl->e, cmd->name, &krdma_ctl_listeners);
	return 0;
}

static struct krdma_ctl_listener *krdma_ctl_listener_take(const char *name)
{
	struct krdma_ctl_entry *e;

	e = krdma_ctl_entry_take(&krdma_ctl_listeners, name);
	return e ? container_of(e, struct krdma_ctl_listener, e) : NULL;
}

static void krdma_ctl_listener_close(struct krdma_ctl_listener *cl)
{
	krdma_listener_close(cl->l);
	kfree(cl);
}

/* ---- the control file's sessions ------------------------------------- */

/* A session the control file made. */
struct krdma_ctl_session {
	struct krdma_ctl_entry	e;		/* krdma_ctl_sessions */
	struct krdma_session	*s;
};

/*
 * A session: a connection that comes back on its own (krdma_session.c),
 * under sessions/NAME.  The write returns once the first connection is up
 * (or with its error, as connect's).
 */
static int krdma_ctl_session(struct krdma_cmd *cmd)
{
	struct krdma_session_opts opts = {
		.conn = {
			.queue_depth = cmd->depth,
			.max_msg_size = cmd->msg,
			.timeout_ms = cmd->timeout_ms,
			.tos = cmd->tos,
			.heartbeat_ms = cmd->hb_ms,
			.heartbeat_misses = cmd->hb_misses,
			.poll = cmd->poll,
			.workqueue = cmd->wq,
			.comp_vector = cmd->vector,
		},
		.reconnect_delay_ms = cmd->delay_ms,
		.loss_tmo_ms = cmd->loss_tmo_ms,
		.name = cmd->name,
		.nr_conns = cmd->conns,
	};
	struct krdma_ctl_session *cs;
	struct krdma_session *s;

	cs = kzalloc(sizeof(*cs), GFP_KERNEL | __GFP_NOWARN);
	if (!cs) {
		pr_warn_ratelimited("session: %s: no memory\n", cmd->name);
		return -ENOMEM;
	}
	s = krdma_session_create((struct sockaddr *)&cmd->addr,
				 cmd->has_src ? (struct sockaddr *)&cmd->src :
						NULL, &opts);
	if (IS_ERR(s)) {
		kfree(cs);
		if (PTR_ERR(s) == -EEXIST)
			pr_warn_ratelimited("session: name '%s' already in use\n",
					    cmd->name);
		else
			pr_warn_ratelimited("session: %s: first connection%s failed: %ld\n",
					    cmd->name, cmd->conns > 1 ? "s" : "",
					    PTR_ERR(s));
		return PTR_ERR(s);
	}
	cs->s = s;
	krdma_ctl_entry_add(&cs->e, cmd->name, &krdma_ctl_sessions);
	return 0;
}

static struct krdma_ctl_session *krdma_ctl_session_take(const char *name)
{
	struct krdma_ctl_entry *e;

	e = krdma_ctl_entry_take(&krdma_ctl_sessions, name);
	return e ? container_of(e, struct krdma_ctl_session, e) : NULL;
}

static void krdma_ctl_session_destroy(struct krdma_ctl_session *cs)
{
	krdma_session_destroy(cs->s);
	kfree(cs);
}

static int krdma_ctl_exec(struct krdma_cmd *cmd)
{
	struct krdma_ctl_session *cs;
	struct krdma_ctl_listener *cl;
	struct krdma_ctl_conn *ctl;
	int ret;

	switch (cmd->op) {
	case KRDMA_CMD_LISTEN:
		return krdma_ctl_listen(cmd);
	case KRDMA_CMD_CONNECT:
		return krdma_ctl_connect(cmd);
	case KRDMA_CMD_SESSION:
		return krdma_ctl_session(cmd);
	case KRDMA_CMD_UNSESSION:
		cs = krdma_ctl_session_take(cmd->name);
		if (!cs) {
			pr_warn_ratelimited("unsession: no session '%s' made through sysfs\n",
					    cmd->name);
			return -ENOENT;
		}
		krdma_ctl_session_destroy(cs);
		return 0;
	case KRDMA_CMD_UNLISTEN:
		cl = krdma_ctl_listener_take(cmd->name);
		if (!cl) {
			pr_warn_ratelimited("unlisten: no listener '%s'\n",
					    cmd->name);
			return -ENOENT;
		}
		krdma_ctl_listener_close(cl);
		return 0;
	case KRDMA_CMD_DISCONNECT:
	case KRDMA_CMD_TEST:
	case KRDMA_CMD_BENCH:
		ctl = krdma_ctl_find(cmd->name);
		if (!ctl) {
			pr_warn_ratelimited("%s: no connection '%s' made through sysfs\n",
					    krdma_cmd_verb(cmd->op), cmd->name);
			return -ENOENT;
		}
		if (cmd->op == KRDMA_CMD_DISCONNECT) {
			/* Of concurrent disconnects, one closes. */
			ret = krdma_ctl_take_close(ctl) ? 0 : -ENOENT;
			if (ret)
				pr_warn_ratelimited("disconnect: '%s' is being closed already\n",
						    cmd->name);
			else
				krdma_ctl_close(ctl);
		} else if (cmd->op == KRDMA_CMD_BENCH) {
			ret = krdma_bench_start(ctl, cmd);
		} else {
			ret = krdma_test_start(ctl, cmd->test_ops, cmd->size,
					       cmd->count, cmd->sge,
					       cmd->timeout_ms);
		}
		krdma_ctl_put(ctl);
		return ret;
	}
	pr_warn_ratelimited("control: command %d not handled\n", cmd->op);
	return -EINVAL;
}

static ssize_t control_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	struct krdma_cmd *cmd;
	char err[128];
	int ret;

	/* Not the allocator's warning: the line below says what failed. */
	cmd = kzalloc(sizeof(*cmd), GFP_KERNEL | __GFP_NOWARN);
	if (!cmd) {
		pr_warn_ratelimited("control: no memory for the command\n");
		return -ENOMEM;
	}
	ret = krdma_cmd_parse(buf, count, cmd, err, sizeof(err));
	if (ret) {
		pr_warn_ratelimited("control: %s\n", err);
		goto out;
	}
	down_read(&krdma_ctl_rwsem);
	if (krdma_ctl_stopped) {
		pr_warn_ratelimited("%s: %s: krdma is being unloaded\n",
				    krdma_cmd_verb(cmd->op), cmd->name);
		ret = -ENODEV;
	} else {
		ret = krdma_ctl_exec(cmd);
	}
	up_read(&krdma_ctl_rwsem);
out:
	kfree(cmd);
	return ret ?: count;
}

static ssize_t control_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	/* The grammar is several lines; the format supplies the last newline. */
	return sysfs_emit(buf, "%.*s\n", (int)strlen(krdma_cmd_usage) - 1,
			  krdma_cmd_usage);
}

/*
 * Root only.  0600 rather than 0200: sysfs refuses reads of a file with no
 * read bit even to root, and reading the control file prints the grammar.
 */
static struct kobj_attribute krdma_attr_control =
	__ATTR(control, 0600, control_show, control_store);

static struct attribute *krdma_ctl_attrs[] = {
	&krdma_attr_control.attr,
	NULL,
};

static const struct attribute_group krdma_ctl_group = {
	.attrs	= krdma_ctl_attrs,
};

/* ---- module level -------------------------------------------------- */

int krdma_ctl_init(void)
{
	int ret;

	krdma_ctl_wq = alloc_workqueue("krdma_ctl", WQ_UNBOUND, 0);
	if (!krdma_ctl_wq)
		return -ENOMEM;
	ret = krdma_selftest_init();
	if (ret)
		goto out_wq;
	ret = krdma_bench_init();
	if (ret)
		goto out_test;
	ret = krdma_sysfs_add_group(&krdma_ctl_group);
	if (ret)
		goto out_bench;
	return 0;

out_bench:
	krdma_bench_exit();
out_test:
	krdma_selftest_exit();
out_wq:
	destroy_workqueue(krdma_ctl_wq);
	return ret;
}

/*
 * Module exit, first step: no control command runs or starts any more, and
 * the control file closes every listener and connection it owns (their
 * service threads stopped, self-tests and benches flushed); krdma's own
 * exit then closes everybody else's.
 */
void krdma_ctl_stop(void)
{
	struct krdma_ctl_session *cs;
	struct krdma_ctl_listener *cl;
	struct krdma_ctl_conn *ctl, *c;

	/* Waits for the commands and reaps in progress; later ones do nothing. */
	down_write(&krdma_ctl_rwsem);
	krdma_ctl_stopped = true;
	up_write(&krdma_ctl_rwsem);
	/*
	 * A passive connection can still be established (its ESTABLISHED
	 * event runs on krdma's workqueue) while this runs: from here on it
	 * starts no service thread and does not join the registry, so the
	 * registry holds every connection left to close here.
	 */
	krdma_svc_disable();
	mutex_lock(&krdma_ctl_lock);
	krdma_ctl_off = true;
	mutex_unlock(&krdma_ctl_lock);

	/* No new connection comes in, then. */
	while ((cl = krdma_ctl_listener_take(NULL)))
		krdma_ctl_listener_close(cl);
	/* Nor goes out. */
	while ((cs = krdma_ctl_session_take(NULL))) {
		pr_debug("%s: session destroyed by module unload\n", cs->e.name);
		krdma_ctl_session_destroy(cs);
	}

	for (;;) {
		ctl = NULL;
		mutex_lock(&krdma_ctl_lock);
		list_for_each_entry(c, &krdma_ctl_conns, list) {
			if (!c->closing) {
				c->closing = true;
				ctl = c;
				break;
			}
		}
		mutex_unlock(&krdma_ctl_lock);
		if (!ctl)
			break;
		pr_debug("%s: closed by module unload\n",
			 krdma_conn_name(ctl->conn));
		krdma_ctl_close(ctl);
	}
}

void krdma_ctl_exit(void)
{
	krdma_sysfs_remove_group(&krdma_ctl_group);
	/* Reaps still queued only drop their references. */
	destroy_workqueue(krdma_ctl_wq);
	krdma_bench_exit();
	krdma_selftest_exit();
}
