// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/krdma: module totals and one directory per device, listener
 * and connection; the control file is krdma_ctl.c's.  Documentation/ABI
 * style descriptions of every file are in
 * Documentation/ABI/testing/sysfs-kernel-krdma.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/sysfs.h>
#include <linux/wait_bit.h>

#include "krdma_core.h"

static struct kobject *krdma_kobj;
static struct kobject *krdma_devices_kobj;
static struct kobject *krdma_conns_kobj;
static struct kobject *krdma_listeners_kobj;
struct kobject *krdma_sessions_kobj;

/* ---- per device ---------------------------------------------------- */

#define to_kdev(k) container_of(k, struct krdma_device, kobj)

static const char *krdma_transport_name(struct ib_device *ibdev, u32 port)
{
	if (rdma_protocol_roce(ibdev, port))
		return "roce";
	if (rdma_protocol_iwarp(ibdev, port))
		return "iwarp";
	if (rdma_protocol_ib(ibdev, port))
		return "ib";
	return "unknown";
}

static ssize_t name_show(struct kobject *kobj, struct kobj_attribute *attr,
			 char *buf)
{
	char name[IB_DEVICE_NAME_MAX];

	krdma_device_name(to_kdev(kobj), name, sizeof(name));
	return sysfs_emit(buf, "%s\n", name);
}

static ssize_t node_guid_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	u64 guid = be64_to_cpu(to_kdev(kobj)->ibdev->node_guid);

	return sysfs_emit(buf, "%04llx:%04llx:%04llx:%04llx\n",
			  (guid >> 48) & 0xffff, (guid >> 32) & 0xffff,
			  (guid >> 16) & 0xffff, guid & 0xffff);
}

static ssize_t transport_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct ib_device *ibdev = to_kdev(kobj)->ibdev;

	return sysfs_emit(buf, "%s\n",
			  krdma_transport_name(ibdev, rdma_start_port(ibdev)));
}

static const char *krdma_port_state_name(enum ib_port_state state)
{
	switch (state) {
	case IB_PORT_DOWN:		return "down";
	case IB_PORT_INIT:		return "init";
	case IB_PORT_ARMED:		return "armed";
	case IB_PORT_ACTIVE:		return "active";
	case IB_PORT_ACTIVE_DEFER:	return "active_defer";
	default:			return "nop";
	}
}

static ssize_t port_state_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct ib_device *ibdev = to_kdev(kobj)->ibdev;
	struct ib_port_attr pattr;
	int ret;

	ret = ib_query_port(ibdev, rdma_start_port(ibdev), &pattr);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%s\n", krdma_port_state_name(pattr.state));
}

#define KRDMA_DEV_ATTR_U(_name, _expr)					\
static ssize_t _name##_show(struct kobject *kobj,			\
			    struct kobj_attribute *attr, char *buf)	\
{									\
	const struct ib_device_attr *a = &to_kdev(kobj)->ibdev->attrs;	\
									\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)(_expr));	\
}									\
static struct kobj_attribute dev_attr_##_name = __ATTR_RO(_name)

KRDMA_DEV_ATTR_U(max_qp_wr, a->max_qp_wr);
KRDMA_DEV_ATTR_U(max_cqe, a->max_cqe);
KRDMA_DEV_ATTR_U(max_send_sge, a->max_send_sge);
KRDMA_DEV_ATTR_U(max_recv_sge, a->max_recv_sge);
KRDMA_DEV_ATTR_U(max_sge_rd, a->max_sge_rd);
KRDMA_DEV_ATTR_U(max_mr_size, a->max_mr_size);
KRDMA_DEV_ATTR_U(max_fast_reg_page_list_len, a->max_fast_reg_page_list_len);
KRDMA_DEV_ATTR_U(atomics, a->atomic_cap != IB_ATOMIC_NONE);

static struct kobj_attribute dev_attr_name = __ATTR_RO(name);
static struct kobj_attribute dev_attr_node_guid = __ATTR_RO(node_guid);
static struct kobj_attribute dev_attr_transport = __ATTR_RO(transport);
static struct kobj_attribute dev_attr_port_state = __ATTR_RO(port_state);

static struct attribute *krdma_dev_attrs[] = {
	&dev_attr_name.attr,
	&dev_attr_node_guid.attr,
	&dev_attr_transport.attr,
	&dev_attr_port_state.attr,
	&dev_attr_max_qp_wr.attr,
	&dev_attr_max_cqe.attr,
	&dev_attr_max_send_sge.attr,
	&dev_attr_max_recv_sge.attr,
	&dev_attr_max_sge_rd.attr,
	&dev_attr_max_mr_size.attr,
	&dev_attr_max_fast_reg_page_list_len.attr,
	&dev_attr_atomics.attr,
	NULL,
};
ATTRIBUTE_GROUPS(krdma_dev);

/*
 * krdma's own kobjects (devices, connections, listeners, sessions) whose
 * release, code of this module, has not run yet.  The last put may run a
 * release later than it returns: CONFIG_DEBUG_KOBJECT_RELEASE defers every
 * one by a second or more, as anything that holds a reference a while
 * would.  So the module's exit waits for the count to reach zero
 * (krdma_sysfs_exit()), and never leaves a release to run in freed text.
 */
static atomic_t krdma_kobjs_live = ATOMIC_INIT(0);

/**
 * krdma_kobj_init - kobject_init() for a kobject of one of krdma's ktypes
 * @kobj: the object's kobject
 * @ktype: its type, whose release ends with krdma_kobj_released()
 *
 * Process context.  Counts @kobj until its release has run.
 */
void krdma_kobj_init(struct kobject *kobj, const struct kobj_type *ktype)
{
	atomic_inc(&krdma_kobjs_live);
	kobject_init(kobj, ktype);
}

/**
 * krdma_kobj_released - the last thing each of krdma's releases does
 *
 * Any context a kobject's release runs in.
 */
void krdma_kobj_released(void)
{
	/*
	 * With preemption off, so that the synchronize_rcu() after the
	 * wait in krdma_sysfs_exit() lets this finish before the module's
	 * text goes; what is left are the returns of this call and of the
	 * release that made it.
	 */
	preempt_disable();
	if (atomic_dec_and_test(&krdma_kobjs_live))
		wake_up_var(&krdma_kobjs_live);
	preempt_enable();
}

/*
 * The last reference to the kobject frees the device: the ib_client's
 * remove callback drops it once every connection has let go of the device
 * (kdev->ref), or the add callback when the directory cannot be made.
 */
static void krdma_dev_kobj_release(struct kobject *kobj)
{
	kfree(to_kdev(kobj));
	krdma_kobj_released();
}

static const struct kobj_type krdma_dev_ktype = {
	.sysfs_ops	= &kobj_sysfs_ops,
	.release	= krdma_dev_kobj_release,
	.default_groups	= krdma_dev_groups,
};

/* On failure @kdev is freed: its kobject's release did it. */
int krdma_sysfs_add_device(struct krdma_device *kdev)
{
	int ret;

	krdma_kobj_init(&kdev->kobj, &krdma_dev_ktype);
	ret = kobject_add(&kdev->kobj, krdma_devices_kobj, "%s", kdev->name);
	if (ret) {
		pr_err("%s: sysfs directory failed: %d\n", kdev->name, ret);
		kobject_put(&kdev->kobj);
	}
	return ret;
}

/* The device's new name: its directory follows (kobject_rename()). */
int krdma_sysfs_rename_device(struct krdma_device *kdev, const char *name)
{
	return kobject_rename(&kdev->kobj, name);
}

/* Removes the directory and drops the last reference: frees @kdev. */
void krdma_sysfs_del_device(struct krdma_device *kdev)
{
	kobject_del(&kdev->kobj);
	kobject_put(&kdev->kobj);
}

/* ---- connections --------------------------------------------------- */

#define to_conn(k) container_of(k, struct krdma_conn, kobj)

static ssize_t conn_state_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct krdma_conn *conn = to_conn(kobj);
	enum krdma_conn_state st;

	spin_lock_bh(&conn->lock);
	st = conn->state;
	spin_unlock_bh(&conn->lock);
	return sysfs_emit(buf, "%s\n", krdma_conn_state_str(st));
}

static ssize_t conn_error_show(struct kobject *kobj,
			       struct kobj_attribute *attr, char *buf)
{
	struct krdma_conn *conn = to_conn(kobj);
	int err;

	spin_lock_bh(&conn->lock);
	err = conn->error;
	spin_unlock_bh(&conn->lock);
	return sysfs_emit(buf, "%d\n", err);
}

static ssize_t conn_wc_status_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	enum ib_wc_status wc = krdma_conn_wc_status(to_conn(kobj));

	return sysfs_emit(buf, "%s\n", krdma_wc_status_name(wc));
}

static ssize_t conn_heartbeat_ms_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_conn(kobj)->hb_ms));
}

static ssize_t conn_role_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%s\n", to_conn(kobj)->active ? "active" :
							      "passive");
}

static ssize_t conn_local_addr_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pISpc\n", &to_conn(kobj)->laddr);
}

static ssize_t conn_peer_addr_show(struct kobject *kobj,
				   struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pISpc\n", &to_conn(kobj)->raddr);
}

static ssize_t conn_device_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	struct krdma_conn *conn = to_conn(kobj);
	struct ib_device *ibdev = READ_ONCE(conn->ibdev);

	/* Only the name, kept in case the device is gone. */
	return sysfs_emit(buf, "%s\n", conn->devname[0] ? conn->devname :
			  (ibdev ? "resolving" : "none"));
}

static ssize_t conn_qp_num_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_conn(kobj)->qp_num);
}

static ssize_t conn_queue_depth_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_conn(kobj)->depth);
}

static ssize_t conn_max_msg_size_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_conn(kobj)->max_msg);
}

static ssize_t conn_max_inline_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_conn(kobj)->max_inline);
}

static ssize_t conn_max_send_sge_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", krdma_max_send_sge(to_conn(kobj)));
}

static ssize_t conn_poll_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", krdma_conn_polled(to_conn(kobj)));
}

static ssize_t conn_completions_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	const struct krdma_conn_opts *o = &to_conn(kobj)->opts;

	return sysfs_emit(buf, "%s\n", o->poll ? "poll" :
			  o->workqueue ? "workqueue" : "softirq");
}

static ssize_t conn_comp_vector_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", READ_ONCE(to_conn(kobj)->comp_vector));
}

/* The session's id (sessions/NAME/id of its client), or "none". */
static ssize_t conn_session_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct krdma_conn *conn = to_conn(kobj);

	if (!conn->sess_known)
		return sysfs_emit(buf, "none\n");
	return sysfs_emit(buf, "%pUb\n", &conn->sess_id);
}

static ssize_t conn_credits_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	struct krdma_conn *conn = to_conn(kobj);
	u32 c;

	spin_lock_bh(&conn->lock);
	c = conn->cr.credits;
	spin_unlock_bh(&conn->lock);
	return sysfs_emit(buf, "%u\n", c);
}

static ssize_t krdma_stat_show(struct kobject *kobj, char *buf, size_t off)
{
	atomic64_t *v = (void *)&to_conn(kobj)->stats + off;

	return sysfs_emit(buf, "%lld\n", atomic64_read(v));
}

#define KRDMA_CONN_STAT(_name, _off)					\
static ssize_t conn_##_name##_show(struct kobject *kobj,		\
				   struct kobj_attribute *attr, char *buf) \
{									\
	return krdma_stat_show(kobj, buf, _off);			\
}									\
static struct kobj_attribute conn_attr_##_name =			\
	__ATTR(_name, 0444, conn_##_name##_show, NULL)

#define KRDMA_STAT_OFF(f) offsetof(struct krdma_stats, f)

KRDMA_CONN_STAT(send_ops, KRDMA_STAT_OFF(send_ops));
KRDMA_CONN_STAT(send_bytes, KRDMA_STAT_OFF(send_bytes));
KRDMA_CONN_STAT(recv_ops, KRDMA_STAT_OFF(recv_ops));
KRDMA_CONN_STAT(recv_bytes, KRDMA_STAT_OFF(recv_bytes));
KRDMA_CONN_STAT(write_ops, KRDMA_STAT_OFF(write_ops));
KRDMA_CONN_STAT(write_bytes, KRDMA_STAT_OFF(write_bytes));
KRDMA_CONN_STAT(read_ops, KRDMA_STAT_OFF(read_ops));
KRDMA_CONN_STAT(read_bytes, KRDMA_STAT_OFF(read_bytes));
KRDMA_CONN_STAT(atomic_ops, KRDMA_STAT_OFF(atomic_ops));
KRDMA_CONN_STAT(credit_msgs, KRDMA_STAT_OFF(credit_msgs));
KRDMA_CONN_STAT(credit_waits, KRDMA_STAT_OFF(credit_waits));
KRDMA_CONN_STAT(imm_msgs, KRDMA_STAT_OFF(imm_msgs));
KRDMA_CONN_STAT(send_inline, KRDMA_STAT_OFF(send_inline));
KRDMA_CONN_STAT(send_zcopy, KRDMA_STAT_OFF(send_zcopy));
KRDMA_CONN_STAT(hb_sent, KRDMA_STAT_OFF(hb_sent));
KRDMA_CONN_STAT(hb_received, KRDMA_STAT_OFF(hb_received));
KRDMA_CONN_STAT(nudges, KRDMA_STAT_OFF(nudges));
KRDMA_CONN_STAT(poll_reaped, KRDMA_STAT_OFF(poll_reaped));
KRDMA_CONN_STAT(errors, KRDMA_STAT_OFF(errors));

static ssize_t conn_inject_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return krdma_inject_show(&to_conn(kobj)->inj, buf);
}

static ssize_t conn_inject_store(struct kobject *kobj,
				 struct kobj_attribute *attr, const char *buf,
				 size_t count)
{
	struct krdma_conn *conn = to_conn(kobj);
	int ret = krdma_inject_store(conn, &conn->inj, buf);

	return ret ?: count;
}

static struct kobj_attribute conn_attr_inject =
	__ATTR(inject, 0600, conn_inject_show, conn_inject_store);

#define KRDMA_CONN_ATTR(_name) \
static struct kobj_attribute conn_attr_##_name = \
	__ATTR(_name, 0444, conn_##_name##_show, NULL)

KRDMA_CONN_ATTR(state);
KRDMA_CONN_ATTR(error);
KRDMA_CONN_ATTR(wc_status);
KRDMA_CONN_ATTR(role);
KRDMA_CONN_ATTR(local_addr);
KRDMA_CONN_ATTR(peer_addr);
KRDMA_CONN_ATTR(device);
KRDMA_CONN_ATTR(qp_num);
KRDMA_CONN_ATTR(queue_depth);
KRDMA_CONN_ATTR(max_msg_size);
KRDMA_CONN_ATTR(credits);
KRDMA_CONN_ATTR(max_inline);
KRDMA_CONN_ATTR(max_send_sge);
KRDMA_CONN_ATTR(heartbeat_ms);
KRDMA_CONN_ATTR(poll);
KRDMA_CONN_ATTR(completions);
KRDMA_CONN_ATTR(comp_vector);
KRDMA_CONN_ATTR(session);

static struct attribute *krdma_conn_attrs[] = {
	&conn_attr_state.attr,
	&conn_attr_error.attr,
	&conn_attr_wc_status.attr,
	&conn_attr_role.attr,
	&conn_attr_local_addr.attr,
	&conn_attr_peer_addr.attr,
	&conn_attr_device.attr,
	&conn_attr_qp_num.attr,
	&conn_attr_queue_depth.attr,
	&conn_attr_max_msg_size.attr,
	&conn_attr_credits.attr,
	&conn_attr_send_ops.attr,
	&conn_attr_send_bytes.attr,
	&conn_attr_recv_ops.attr,
	&conn_attr_recv_bytes.attr,
	&conn_attr_write_ops.attr,
	&conn_attr_write_bytes.attr,
	&conn_attr_read_ops.attr,
	&conn_attr_read_bytes.attr,
	&conn_attr_atomic_ops.attr,
	&conn_attr_credit_msgs.attr,
	&conn_attr_imm_msgs.attr,
	&conn_attr_max_inline.attr,
	&conn_attr_max_send_sge.attr,
	&conn_attr_send_inline.attr,
	&conn_attr_send_zcopy.attr,
	&conn_attr_credit_waits.attr,
	&conn_attr_heartbeat_ms.attr,
	&conn_attr_poll.attr,
	&conn_attr_completions.attr,
	&conn_attr_comp_vector.attr,
	&conn_attr_session.attr,
	&conn_attr_hb_sent.attr,
	&conn_attr_hb_received.attr,
	&conn_attr_nudges.attr,
	&conn_attr_poll_reaped.attr,
	&conn_attr_errors.attr,
	&conn_attr_inject.attr,
	NULL,
};
ATTRIBUTE_GROUPS(krdma_conn);

static void krdma_conn_kobj_release(struct kobject *kobj)
{
	struct krdma_conn *conn = to_conn(kobj);

	krdma_conn_free_rx_gone(conn);
	krdma_conn_pool_free(conn);
	krdma_inject_free(&conn->inj);
	if (conn->listener)
		kobject_put(&conn->listener->kobj);
	kfree(conn);
	krdma_kobj_released();
}

const struct kobj_type krdma_conn_ktype = {
	.sysfs_ops	= &kobj_sysfs_ops,
	.release	= krdma_conn_kobj_release,
	.default_groups	= krdma_conn_groups,
};

int krdma_sysfs_add_conn(struct krdma_conn *conn)
{
	int ret;

	ret = kobject_add(&conn->kobj, krdma_conns_kobj, "%s", conn->name);
	if (ret)
		pr_warn_ratelimited("%s: sysfs directory failed: %d\n",
				    conn->name, ret);
	else
		conn->in_sysfs = true;
	return ret;
}

void krdma_sysfs_del_conn(struct krdma_conn *conn)
{
	if (conn->in_sysfs)
		kobject_del(&conn->kobj);
	conn->in_sysfs = false;
}

/**
 * krdma_conn_add_group - a consumer's files in conns/<name>/
 * @conn: a connection the consumer owns, not closed yet
 * @grp: the files (the control file's test_* and bench_*), struct
 *	kobj_attribute ones
 *
 * Their show() and store() get the connection's kobject:
 * krdma_conn_from_kobj() makes it the connection, and krdma_conn_priv()
 * of that is the consumer's state.  The consumer removes them with
 * krdma_conn_remove_group() before it closes @conn.
 *
 * Context: process context; sleeps.
 * Return: 0, or -ENOENT when @conn has no directory, or sysfs's error.
 */
int krdma_conn_add_group(struct krdma_conn *conn,
			 const struct attribute_group *grp)
{
	if (!conn->in_sysfs)
		return -ENOENT;
	return sysfs_create_group(&conn->kobj, grp);
}
EXPORT_SYMBOL_GPL(krdma_conn_add_group);

/**
 * krdma_conn_remove_group - undo krdma_conn_add_group()
 * @conn: the connection, not closed yet
 * @grp: the files krdma_conn_add_group() added
 *
 * Waits for the show() and store() calls in progress: none of @grp's
 * runs once this returned.
 *
 * Context: process context; sleeps.  Not from a show() or store() of
 * @grp.
 */
void krdma_conn_remove_group(struct krdma_conn *conn,
			     const struct attribute_group *grp)
{
	if (conn->in_sysfs)
		sysfs_remove_group(&conn->kobj, grp);
}
EXPORT_SYMBOL_GPL(krdma_conn_remove_group);

/**
 * krdma_conn_from_kobj - the connection of a consumer's file
 * @kobj: what a show() or store() of a group that krdma_conn_add_group()
 *	added gets
 *
 * Context: any.
 * Return: the connection whose directory @kobj is.
 */
struct krdma_conn *krdma_conn_from_kobj(struct kobject *kobj)
{
	return to_conn(kobj);
}
EXPORT_SYMBOL_GPL(krdma_conn_from_kobj);

/* ---- listeners ----------------------------------------------------- */

#define to_listener(k) container_of(k, struct krdma_listener, kobj)

static ssize_t lis_addr_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%pISpc\n", &to_listener(kobj)->addr);
}

static ssize_t lis_state_show(struct kobject *kobj,
			      struct kobj_attribute *attr, char *buf)
{
	struct krdma_listener *l = to_listener(kobj);

	if (l->error)
		return sysfs_emit(buf, "stopped %d\n", l->error);
	return sysfs_emit(buf, "%s\n", l->closed ? "closed" : "listening");
}

static ssize_t lis_accepted_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_listener(kobj)->accepted);
}

static ssize_t lis_rejected_show(struct kobject *kobj,
				 struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_listener(kobj)->rejected);
}

static ssize_t lis_queue_depth_show(struct kobject *kobj,
				    struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_listener(kobj)->opts.queue_depth);
}

static ssize_t lis_max_msg_size_show(struct kobject *kobj,
				     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_listener(kobj)->opts.max_msg_size);
}

static ssize_t lis_backlog_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", to_listener(kobj)->opts.backlog);
}

static ssize_t lis_held_show(struct kobject *kobj,
			     struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(to_listener(kobj)->held));
}

static struct kobj_attribute lis_attr_addr =
	__ATTR(addr, 0444, lis_addr_show, NULL);
static struct kobj_attribute lis_attr_state =
	__ATTR(state, 0444, lis_state_show, NULL);
static struct kobj_attribute lis_attr_accepted =
	__ATTR(accepted, 0444, lis_accepted_show, NULL);
static struct kobj_attribute lis_attr_rejected =
	__ATTR(rejected, 0444, lis_rejected_show, NULL);
static struct kobj_attribute lis_attr_queue_depth =
	__ATTR(queue_depth, 0444, lis_queue_depth_show, NULL);
static struct kobj_attribute lis_attr_max_msg_size =
	__ATTR(max_msg_size, 0444, lis_max_msg_size_show, NULL);
static struct kobj_attribute lis_attr_backlog =
	__ATTR(backlog, 0444, lis_backlog_show, NULL);
static struct kobj_attribute lis_attr_held =
	__ATTR(held, 0444, lis_held_show, NULL);

static struct attribute *krdma_lis_attrs[] = {
	&lis_attr_addr.attr,
	&lis_attr_state.attr,
	&lis_attr_accepted.attr,
	&lis_attr_rejected.attr,
	&lis_attr_queue_depth.attr,
	&lis_attr_max_msg_size.attr,
	&lis_attr_backlog.attr,
	&lis_attr_held.attr,
	NULL,
};
ATTRIBUTE_GROUPS(krdma_lis);

static void krdma_lis_kobj_release(struct kobject *kobj)
{
	kfree(to_listener(kobj));
	krdma_kobj_released();
}

const struct kobj_type krdma_listener_ktype = {
	.sysfs_ops	= &kobj_sysfs_ops,
	.release	= krdma_lis_kobj_release,
	.default_groups	= krdma_lis_groups,
};

int krdma_sysfs_add_listener(struct krdma_listener *l)
{
	int ret;

	ret = kobject_add(&l->kobj, krdma_listeners_kobj, "%s", l->name);
	if (ret)
		pr_warn_ratelimited("%s: sysfs directory failed: %d\n",
				    l->name, ret);
	else
		l->in_sysfs = true;
	return ret;
}

void krdma_sysfs_del_listener(struct krdma_listener *l)
{
	if (l->in_sysfs)
		kobject_del(&l->kobj);
	l->in_sysfs = false;
}

/* ---- module level -------------------------------------------------- */

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", KRDMA_VERSION);
}

static struct kobj_attribute krdma_attr_version = __ATTR_RO(version);

static ssize_t conns_total_show(struct kobject *kobj,
				struct kobj_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%lld\n", atomic64_read(&krdma_total_conns));
}

static struct kobj_attribute krdma_attr_conns_total = __ATTR_RO(conns_total);

static struct attribute *krdma_top_attrs[] = {
	&krdma_attr_version.attr,
	&krdma_attr_conns_total.attr,
	NULL,
};

static const struct attribute_group krdma_top_group = {
	.attrs = krdma_top_attrs,
};

/*
 * The directories go from sysfs now, not when their last reference does:
 * their release may run later (DEBUG_KOBJECT_RELEASE), and a file of
 * /sys/kernel/krdma/ read then would run a show() of an unloaded module.
 */
static void krdma_sysfs_put_dir(struct kobject *kobj)
{
	if (!kobj)
		return;
	kobject_del(kobj);
	kobject_put(kobj);
}

/**
 * krdma_sysfs_add_group - a consumer's files in /sys/kernel/krdma/
 * @grp: the files (the control file, krdma_ctl.c's)
 *
 * The consumer removes them with krdma_sysfs_remove_group() before it
 * goes (its module's exit).
 *
 * Context: process context; sleeps.
 * Return: 0, or sysfs's error (-EEXIST for a name in use).
 */
int krdma_sysfs_add_group(const struct attribute_group *grp)
{
	return sysfs_create_group(krdma_kobj, grp);
}
EXPORT_SYMBOL_GPL(krdma_sysfs_add_group);

/**
 * krdma_sysfs_remove_group - undo krdma_sysfs_add_group()
 * @grp: the files krdma_sysfs_add_group() added
 *
 * Waits for the show() and store() calls in progress.
 *
 * Context: process context; sleeps.  Not from a show() or store() of
 * @grp.
 */
void krdma_sysfs_remove_group(const struct attribute_group *grp)
{
	sysfs_remove_group(krdma_kobj, grp);
}
EXPORT_SYMBOL_GPL(krdma_sysfs_remove_group);

int krdma_sysfs_init(void)
{
	int ret;

	krdma_kobj = kobject_create_and_add("krdma", kernel_kobj);
	if (!krdma_kobj)
		return -ENOMEM;

	ret = sysfs_create_group(krdma_kobj, &krdma_top_group);
	if (ret)
		goto out_put;

	ret = -ENOMEM;
	krdma_devices_kobj = kobject_create_and_add("devices", krdma_kobj);
	krdma_conns_kobj = kobject_create_and_add("conns", krdma_kobj);
	krdma_listeners_kobj = kobject_create_and_add("listeners", krdma_kobj);
	krdma_sessions_kobj = kobject_create_and_add("sessions", krdma_kobj);
	if (!krdma_devices_kobj || !krdma_conns_kobj || !krdma_listeners_kobj ||
	    !krdma_sessions_kobj)
		goto out_dirs;
	return 0;

out_dirs:
	krdma_sysfs_put_dir(krdma_sessions_kobj);
	krdma_sysfs_put_dir(krdma_listeners_kobj);
	krdma_sysfs_put_dir(krdma_conns_kobj);
	krdma_sysfs_put_dir(krdma_devices_kobj);
out_put:
	krdma_sysfs_put_dir(krdma_kobj);
	return ret;
}

void krdma_sysfs_exit(void)
{
	int left;

	krdma_sysfs_put_dir(krdma_sessions_kobj);
	krdma_sysfs_put_dir(krdma_listeners_kobj);
	krdma_sysfs_put_dir(krdma_conns_kobj);
	krdma_sysfs_put_dir(krdma_devices_kobj);
	krdma_sysfs_put_dir(krdma_kobj);
	/*
	 * Every object is closed: wait for the releases still to run.  One
	 * that never comes is a reference leaked; say so while waiting.
	 */
	while (!wait_var_event_timeout(&krdma_kobjs_live,
				       !atomic_read(&krdma_kobjs_live),
				       30 * HZ)) {
		left = atomic_read(&krdma_kobjs_live);
		pr_warn("unload waits for %d objects still referenced\n",
			left);
	}
	synchronize_rcu();
}
