/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma internal definitions shared by the module's files.
 */
#ifndef KRDMA_CORE_H
#define KRDMA_CORE_H

#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/completion.h>
#include <rdma/ib_verbs.h>

#include "krdma_compat.h"

#define KRDMA_VERSION	"0.1.0"

/*
 * One per RDMA device krdma has seen.  The ib_client holds the first
 * reference; every connection on the device holds another.  Removal of the
 * device tears down the connections, drops the client's reference and waits
 * for the rest before releasing the PD, so nothing outlives the ib_device.
 */
struct krdma_device {
	struct ib_device	*ibdev;
	struct ib_pd		*pd;
	struct kref		ref;
	struct completion	released;
	struct list_head	list;		/* on krdma_devices */
	struct kobject		kobj;		/* devices/<name> */
	bool			removing;
	char			name[IB_DEVICE_NAME_MAX];
};

extern struct mutex krdma_lock;		/* devices list and removal */
extern struct list_head krdma_devices;
extern struct kobject *krdma_kobj;	/* /sys/kernel/krdma */

void krdma_device_put(struct krdma_device *kdev);

int krdma_sysfs_init(void);
void krdma_sysfs_exit(void);
int krdma_sysfs_add_device(struct krdma_device *kdev);
void krdma_sysfs_del_device(struct krdma_device *kdev);

#endif /* KRDMA_CORE_H */
