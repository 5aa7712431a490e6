// SPDX-License-Identifier: GPL-2.0
/*
 * krdma: kernel RDMA transport.  Module entry points and the ib_client that
 * gives every RDMA device a krdma context.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "krdma_core.h"
#include "krdma_dma.h"
#include "krdma_ctl.h"
#include "krdma_chardev.h"

#define CREATE_TRACE_POINTS
#include "krdma_trace.h"

/* Serialises the device list against device removal. */
DEFINE_MUTEX(krdma_lock);
LIST_HEAD(krdma_devices);

struct workqueue_struct *krdma_wq;
static struct ib_client krdma_ib_client;

/*
 * Exported here, not beside its definition: the KUnit module compiles
 * krdma_cmd.c into itself, and must not export it a second time.
 */
EXPORT_SYMBOL_GPL(krdma_parse_addr);

/* The krdma context of @ibdev with a reference, or NULL if it is going. */
struct krdma_device *krdma_device_get_by_ib(struct ib_device *ibdev)
{
	struct krdma_device *kdev, *found = NULL;

	/*
	 * The device list, not ib_get_client_data(): the core keeps the
	 * client data until after our remove callback has freed it.
	 */
	mutex_lock(&krdma_lock);
	list_for_each_entry(kdev, &krdma_devices, list) {
		if (kdev->ibdev == ibdev && !kdev->removing) {
			kref_get(&kdev->ref);
			found = kdev;
			break;
		}
	}
	mutex_unlock(&krdma_lock);
	return found;
}

static void krdma_device_release(struct kref *ref)
{
	struct krdma_device *kdev = container_of(ref, struct krdma_device, ref);

	complete(&kdev->released);
}

void krdma_device_put(struct krdma_device *kdev)
{
	kref_put(&kdev->ref, krdma_device_release);
}

static void krdma_park_work(struct work_struct *work)
{
	krdma_unpark(container_of(to_delayed_work(work), struct krdma_device,
				  park_work), false);
}

/*
 * A port came up: the ids parked while it was down can go now, and a
 * listener stopped by a device removal may bind its address again.
 */
static void krdma_dev_event(struct ib_event_handler *h, struct ib_event *ev)
{
	struct krdma_device *kdev = container_of(h, struct krdma_device,
						 event_handler);

	if (ev->event == IB_EVENT_PORT_ACTIVE) {
		mod_delayed_work(krdma_wq, &kdev->park_work, 0);
		krdma_relisten();
	}
}

static int krdma_add_one(struct ib_device *ibdev)
{
	struct krdma_device *kdev;
	int ret;

	kdev = kzalloc(sizeof(*kdev), GFP_KERNEL);
	if (!kdev)
		return -ENOMEM;

	kdev->ibdev = ibdev;
	kref_init(&kdev->ref);
	init_completion(&kdev->released);
	spin_lock_init(&kdev->name_lock);
	strscpy(kdev->name, dev_name(&ibdev->dev), sizeof(kdev->name));
	mutex_init(&kdev->park_mutex);
	INIT_LIST_HEAD(&kdev->parked);
	INIT_DELAYED_WORK(&kdev->park_work, krdma_park_work);

	/* From here on the kobject's release frees kdev. */
	ret = krdma_sysfs_add_device(kdev);
	if (ret)
		return ret;

	mutex_lock(&krdma_lock);
	list_add_tail(&kdev->list, &krdma_devices);
	mutex_unlock(&krdma_lock);

	ib_set_client_data(ibdev, &krdma_ib_client, kdev);
	INIT_IB_EVENT_HANDLER(&kdev->event_handler, ibdev, krdma_dev_event);
	ib_register_event_handler(&kdev->event_handler);
	pr_info("%s: added\n", kdev->name);
	/* Listeners its removal stopped may have their address back. */
	krdma_relisten();
	return 0;
}

/**
 * krdma_device_name - the device's current name
 * @kdev: the device
 * @buf: where to copy it
 * @len: @buf's size (IB_DEVICE_NAME_MAX holds any)
 *
 * A rename may change the name at any time; this copies it whole.  Any
 * context.
 */
void krdma_device_name(struct krdma_device *kdev, char *buf, size_t len)
{
	unsigned long flags;

	spin_lock_irqsave(&kdev->name_lock, flags);
	strscpy(buf, kdev->name, len);
	spin_unlock_irqrestore(&kdev->name_lock, flags);
}

/*
 * The device was renamed (`rdma dev set OLD name NEW`): its directory
 * devices/<name> follows.  A connection keeps the name of the device it
 * was made on (conns/NAME/device, its dmesg lines).  The RDMA core calls
 * this in process context, never at the same time as krdma_remove_one().
 */
static void krdma_rename_one(struct ib_device *ibdev, void *client_data)
{
	struct krdma_device *kdev = client_data;
	char old[IB_DEVICE_NAME_MAX], new[IB_DEVICE_NAME_MAX];
	int ret;

	strscpy(new, dev_name(&ibdev->dev), sizeof(new));
	spin_lock_irq(&kdev->name_lock);
	strscpy(old, kdev->name, sizeof(old));
	strscpy(kdev->name, new, sizeof(kdev->name));
	spin_unlock_irq(&kdev->name_lock);
	ret = krdma_sysfs_rename_device(kdev, new);
	if (ret)
		pr_warn("%s: renamed to %s, but devices/%s stays: %d\n", old,
			new, old, ret);
	else
		pr_info("%s: renamed to %s\n", old, new);
}

/*
 * Test knob: the remove callback sleeps this long once it has released
 * krdma's users of the device, before rdma_cm's own remove callback runs,
 * so that a listen can bind to the device in between
 * (test/guest/listen-race.sh); set to 0, it ends a sleep under way.
 */
static unsigned int fault_remove_delay_ms;
module_param(fault_remove_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_remove_delay_ms,
		 "test: sleep this long in device removal after its users are gone (0 ends it)");

static void krdma_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct krdma_device *kdev = client_data;
	char name[IB_DEVICE_NAME_MAX];

	mutex_lock(&krdma_lock);
	kdev->removing = true;
	list_del(&kdev->list);
	mutex_unlock(&krdma_lock);

	krdma_remove_device_users(kdev);
	if (unlikely(fault_remove_delay_ms)) {
		pr_info("%s: removal sleeps %u ms (fault_remove_delay_ms)\n",
			dev_name(&ibdev->dev), fault_remove_delay_ms);
		krdma_fault_sleep(&fault_remove_delay_ms);
	}
	/* Said nothing while the port was down: now or never. */
	ib_unregister_event_handler(&kdev->event_handler);
	krdma_unpark(kdev, true);
	cancel_delayed_work_sync(&kdev->park_work);

	/* Drop the client's reference and wait for every user to let go. */
	krdma_device_put(kdev);
	wait_for_completion(&kdev->released);

	krdma_device_name(kdev, name, sizeof(name));
	pr_info("%s: removed\n", name);
	krdma_sysfs_del_device(kdev);	/* frees kdev */
}

static struct ib_client krdma_ib_client = {
	.name	= "krdma",
	.add	= krdma_add_one,
	.remove	= krdma_remove_one,
	.rename	= krdma_rename_one,
};

static int __init krdma_init(void)
{
	int ret;

	krdma_wq = alloc_workqueue("krdma", WQ_UNBOUND | WQ_MEM_RECLAIM, 0);
	if (!krdma_wq)
		return -ENOMEM;

	ret = krdma_sysfs_init();
	if (ret)
		goto out_wq;
	ret = krdma_ctl_init();
	if (ret)
		goto out_sysfs;

	ret = ib_register_client(&krdma_ib_client);
	if (ret) {
		pr_err("ib_register_client failed: %d\n", ret);
		goto out_ctl;
	}
	ret = krdma_chardev_init();
	if (ret)
		goto out_client;
	pr_info("version %s loaded\n", KRDMA_VERSION);
	return 0;

out_client:
	ib_unregister_client(&krdma_ib_client);
out_ctl:
	krdma_ctl_exit();
out_sysfs:
	krdma_sysfs_exit();
out_wq:
	destroy_workqueue(krdma_wq);
	return ret;
}

static void __exit krdma_exit(void)
{
	krdma_chardev_exit();
	/* Nothing new can start: the control file goes first. */
	krdma_ctl_stop();
	krdma_close_all();
	ib_unregister_client(&krdma_ib_client);
	/* No device event can queue it now; it may hold listeners. */
	krdma_relisten_stop();
	/* Every device is gone: so must every mapping be. */
	krdma_dma_check_exit();
	krdma_ctl_exit();
	krdma_sysfs_exit();
	destroy_workqueue(krdma_wq);
	pr_info("unloaded\n");
}

module_init(krdma_init);
module_exit(krdma_exit);

MODULE_AUTHOR("krdma developers");
MODULE_DESCRIPTION("krdma: kernel RDMA transport over the ib_ verbs API");
MODULE_LICENSE("GPL");
MODULE_VERSION(KRDMA_VERSION);
