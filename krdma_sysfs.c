// SPDX-License-Identifier: GPL-2.0
/*
 * /sys/kernel/krdma: module totals, the control file, and one directory per
 * device, listener and connection.  Documentation/ABI style descriptions of
 * every file are in Documentation/ABI/testing/sysfs-kernel-krdma.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/slab.h>
#include <linux/sysfs.h>

#include "krdma_core.h"

struct kobject *krdma_kobj;
static struct kobject *krdma_devices_kobj;

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
	return sysfs_emit(buf, "%s\n", to_kdev(kobj)->name);
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
 * The device's memory belongs to krdma_remove_one(), which frees it only
 * after kobject_del(): kernfs has drained every reader by then.
 */
static void krdma_dev_kobj_release(struct kobject *kobj)
{
}

static const struct kobj_type krdma_dev_ktype = {
	.sysfs_ops	= &kobj_sysfs_ops,
	.release	= krdma_dev_kobj_release,
	.default_groups	= krdma_dev_groups,
};

int krdma_sysfs_add_device(struct krdma_device *kdev)
{
	int ret;

	ret = kobject_init_and_add(&kdev->kobj, &krdma_dev_ktype,
				   krdma_devices_kobj, "%s", kdev->name);
	if (ret) {
		kobject_put(&kdev->kobj);
		pr_err("%s: sysfs directory failed: %d\n", kdev->name, ret);
	}
	return ret;
}

void krdma_sysfs_del_device(struct krdma_device *kdev)
{
	kobject_del(&kdev->kobj);
	kobject_put(&kdev->kobj);
}

/* ---- module level -------------------------------------------------- */

static ssize_t version_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", KRDMA_VERSION);
}

static struct kobj_attribute krdma_attr_version = __ATTR_RO(version);

static struct attribute *krdma_top_attrs[] = {
	&krdma_attr_version.attr,
	NULL,
};

static const struct attribute_group krdma_top_group = {
	.attrs = krdma_top_attrs,
};

int krdma_sysfs_init(void)
{
	int ret;

	krdma_kobj = kobject_create_and_add("krdma", kernel_kobj);
	if (!krdma_kobj)
		return -ENOMEM;

	ret = sysfs_create_group(krdma_kobj, &krdma_top_group);
	if (ret)
		goto out_put;

	krdma_devices_kobj = kobject_create_and_add("devices", krdma_kobj);
	if (!krdma_devices_kobj) {
		ret = -ENOMEM;
		goto out_put;
	}
	return 0;

out_put:
	kobject_put(krdma_kobj);
	return ret;
}

void krdma_sysfs_exit(void)
{
	kobject_put(krdma_devices_kobj);
	kobject_put(krdma_kobj);
}
