// SPDX-License-Identifier: GPL-2.0
/*
 * The control file, /sys/kernel/krdma/control: listen, connect, unlisten,
 * disconnect, test and bench written as text (grammar in krdma_cmd.c,
 * descriptions in Documentation/ABI/testing/sysfs-kernel-krdma).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sysfs.h>

#include "krdma_core.h"
#include "krdma_cmd.h"
#include "krdma_ctl.h"
#include "krdma_selftest.h"
#include "krdma_bench.h"

/* Held by control-file writers; module exit takes it to shut them out. */
static DECLARE_RWSEM(krdma_ctl_rwsem);
static bool krdma_ctl_stopped;

/*
 * Close a sysfs-made connection.  Ending it first wakes its service thread
 * and fails whatever its self-test or bench waits for; then they stop.
 */
static void krdma_sysfs_close_conn(struct krdma_conn *conn)
{
	krdma_conn_teardown(conn, 0);
	krdma_svc_stop(conn);
	krdma_test_flush(conn);
	krdma_bench_flush(conn);
	krdma_close(conn);
}

/*
 * Take the close of @conn; false if a "disconnect" (or a reap) has it.
 * Of concurrent closers, exactly one gets it.
 */
static bool krdma_sysfs_take_close(struct krdma_conn *conn)
{
	bool mine;

	spin_lock_bh(&conn->lock);
	mine = !conn->sysfs_closing;
	conn->sysfs_closing = true;
	spin_unlock_bh(&conn->lock);
	return mine;
}

struct krdma_reap {
	struct work_struct	work;
	struct krdma_conn	*conn;
};

static void krdma_sysfs_reap_work(struct work_struct *work)
{
	struct krdma_reap *r = container_of(work, struct krdma_reap, work);
	struct krdma_conn *conn = r->conn;

	/* Unload closes it otherwise (krdma_ctl_stop()). */
	down_read(&krdma_ctl_rwsem);
	if (!krdma_ctl_stopped && krdma_sysfs_take_close(conn)) {
		pr_info_ratelimited("%s: peer gone (%d), connection closed\n",
				    conn->name, krdma_conn_error(conn));
		krdma_sysfs_close_conn(conn);
	}
	up_read(&krdma_ctl_rwsem);
	krdma_conn_put(conn);
	kfree(r);
}

/**
 * krdma_sysfs_reap - close a passive connection whose peer left
 * @conn: a connection accepted by a listener made through the control file
 *
 * Nobody else would close it: without this, each connection a peer opens
 * and leaves would keep its QP, buffers and service thread until unload,
 * and count against the listener's backlog for good.  Called from the
 * connection's event callback once the connection has ended.
 *
 * Context: process context.
 */
static void krdma_sysfs_reap(struct krdma_conn *conn)
{
	struct krdma_reap *r;

	/* Without memory it stays until "disconnect" or unload. */
	r = kmalloc(sizeof(*r), GFP_KERNEL);
	if (!r)
		return;
	krdma_conn_get(conn);
	r->conn = conn;
	INIT_WORK(&r->work, krdma_sysfs_reap_work);
	queue_work(krdma_wq, &r->work);
}

static int krdma_ctl_connect(struct krdma_cmd *cmd)
{
	struct krdma_conn_opts opts = {
		.queue_depth = cmd->depth,
		.max_msg_size = cmd->msg,
		.timeout_ms = cmd->timeout_ms,
		.tos = cmd->tos,
	};
	struct krdma_conn *conn;
	int ret;

	conn = krdma_conn_find(cmd->name);
	if (conn) {
		krdma_conn_put(conn);
		pr_warn_ratelimited("connect: name '%s' already in use\n",
				    cmd->name);
		return -EEXIST;
	}
	conn = __krdma_connect((struct sockaddr *)&cmd->addr,
			       cmd->has_src ? (struct sockaddr *)&cmd->src :
					      NULL,
			       &opts, cmd->name, cmd->hello);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = krdma_svc_start(conn);
	if (ret) {
		pr_warn_ratelimited("connect: %s: no service thread: %d\n",
				    cmd->name, ret);
		krdma_close(conn);
		return ret;
	}
	/* Only now can a "disconnect" find it and close it. */
	WRITE_ONCE(conn->sysfs_owned, true);
	return 0;
}

/*
 * The connections of a listener made through the control file: on
 * ESTABLISHED each is the control file's (a "disconnect" may close it) and
 * gets its self-test service thread; when it ends (its peer left, it
 * failed, its device went), it is closed, since nobody else would.
 */
static void krdma_ctl_passive_event(struct krdma_conn *conn,
				    enum krdma_event ev, int error)
{
	int ret;

	if (ev != KRDMA_EVENT_ESTABLISHED) {
		krdma_sysfs_reap(conn);
		return;
	}
	WRITE_ONCE(conn->sysfs_owned, true);
	/* -ESHUTDOWN: a "disconnect", or unload, closes it already. */
	ret = krdma_svc_start(conn);
	if (ret && ret != -ESHUTDOWN)
		pr_warn_ratelimited("%s: no service thread, self-test will not answer: %d\n",
				    conn->name, ret);
}

static const struct krdma_conn_ops krdma_ctl_passive_ops = {
	.event	= krdma_ctl_passive_event,
};

static int krdma_ctl_listen(struct krdma_cmd *cmd)
{
	struct krdma_conn_opts opts = {
		.queue_depth = cmd->depth,
		.max_msg_size = cmd->msg,
		.backlog = cmd->backlog,
		.ops = &krdma_ctl_passive_ops,
	};
	struct krdma_listener *l;

	l = krdma_listener_find(cmd->name);
	if (l) {
		krdma_listener_put(l);
		pr_warn_ratelimited("listen: name '%s' already in use\n",
				    cmd->name);
		return -EEXIST;
	}
	l = __krdma_listen((struct sockaddr *)&cmd->addr, &opts, cmd->name);
	if (IS_ERR(l))
		return PTR_ERR(l);
	l->sysfs_owned = true;
	return 0;
}

static int krdma_ctl_exec(struct krdma_cmd *cmd)
{
	struct krdma_listener *l;
	struct krdma_conn *conn;
	int ret;

	switch (cmd->op) {
	case KRDMA_CMD_LISTEN:
		return krdma_ctl_listen(cmd);
	case KRDMA_CMD_CONNECT:
		return krdma_ctl_connect(cmd);
	case KRDMA_CMD_UNLISTEN:
		l = krdma_listener_find(cmd->name);
		if (!l || !l->sysfs_owned) {
			if (l)
				krdma_listener_put(l);
			pr_warn_ratelimited("unlisten: no listener '%s'\n",
					    cmd->name);
			return -ENOENT;
		}
		krdma_listener_close(l);
		krdma_listener_put(l);
		return 0;
	case KRDMA_CMD_DISCONNECT:
	case KRDMA_CMD_TEST:
	case KRDMA_CMD_BENCH:
		conn = krdma_conn_find(cmd->name);
		if (!conn || !conn->sysfs_owned) {
			if (conn)
				krdma_conn_put(conn);
			pr_warn_ratelimited("%s: no connection '%s' made through sysfs\n",
					    krdma_cmd_verb(cmd->op), cmd->name);
			return -ENOENT;
		}
		if (cmd->op == KRDMA_CMD_DISCONNECT) {
			/* Of concurrent disconnects, one closes. */
			ret = krdma_sysfs_take_close(conn) ? 0 : -ENOENT;
			if (ret)
				pr_warn_ratelimited("disconnect: '%s' is being closed already\n",
						    cmd->name);
			else
				krdma_sysfs_close_conn(conn);
		} else if (cmd->op == KRDMA_CMD_BENCH) {
			ret = krdma_bench_start(conn, cmd);
		} else {
			ret = krdma_test_start(conn, cmd->test_ops, cmd->size,
					       cmd->count, cmd->sge,
					       cmd->timeout_ms);
		}
		krdma_conn_put(conn);
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

/* ---- module level -------------------------------------------------- */

int krdma_ctl_init(void)
{
	int ret;

	ret = krdma_selftest_init();
	if (ret)
		return ret;
	ret = krdma_bench_init();
	if (ret)
		goto out_test;
	ret = sysfs_create_file(krdma_kobj, &krdma_attr_control.attr);
	if (ret)
		goto out_bench;
	return 0;

out_bench:
	krdma_bench_exit();
out_test:
	krdma_selftest_exit();
	return ret;
}

/*
 * Module exit, first step: no control command runs or starts any more, and
 * the connections made through sysfs lose their service threads.
 */
void krdma_ctl_stop(void)
{
	struct krdma_conn *conn, *found;

	down_write(&krdma_ctl_rwsem);
	krdma_ctl_stopped = true;
	up_write(&krdma_ctl_rwsem);
	/*
	 * A passive connection can still be established (and would start
	 * its thread) while this runs: from here on none starts, and every
	 * thread that did is on its conn->svc, set under the same gate.
	 */
	krdma_svc_disable();

	do {
		found = NULL;
		mutex_lock(&krdma_lock);
		list_for_each_entry(conn, &krdma_conns, list) {
			if (READ_ONCE(conn->svc)) {
				found = conn;
				krdma_conn_get(found);
				break;
			}
		}
		mutex_unlock(&krdma_lock);
		if (found) {
			krdma_conn_teardown(found, 0);
			krdma_svc_stop(found);
			krdma_test_flush(found);
			krdma_bench_flush(found);
			krdma_conn_put(found);
		}
	} while (found);
}

void krdma_ctl_exit(void)
{
	sysfs_remove_file(krdma_kobj, &krdma_attr_control.attr);
	krdma_bench_exit();
	krdma_selftest_exit();
}
