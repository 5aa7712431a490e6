// SPDX-License-Identifier: GPL-2.0
/*
 * krdma-blk: a block device over krdma, the first slice (issue 19).
 *
 * A server exports a local block device (null_blk, loop, a ram disk) on an
 * address; a client maps it as a blk-mq disk.  The client registers each
 * request's pages for the server (krdma_reg_sg()) and sends a command with
 * the token; the server RDMA-READs a write's data straight into the pages
 * of the bio it submits to the backing device, and RDMA-WRITEs a read's
 * data straight from them, then replies.  It uses nothing of krdma but
 * include/krdma.h.
 *
 * This slice uses krdma's sleeping calls: queue_rq registers and sends in
 * process context (BLK_MQ_F_BLOCKING), the client's MR is revoked and
 * freed after the reply in a work item, and a failed connection fails its
 * I/O (no reconnect).  A later slice moves to the non-sleeping submission
 * API, MR pools with REG_MR chained before the command, SEND_WITH_INV and
 * sessions with reconnect, when krdma has them.
 *
 * This file: the control file, /sys/kernel/krdma_blk/control, and the
 * registry of exports and maps by name.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/kobject.h>
#include <linux/sysfs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/mutex.h>

#include "krdma_blk.h"
#include "krdma_blk_proto.h"
#include "krdma_blk_compat.h"

bool krdma_blk_test_ignore_ro;
module_param_named(test_ignore_ro, krdma_blk_test_ignore_ro, bool, 0644);
MODULE_PARM_DESC(test_ignore_ro,
		 "Tests only: map a read-only export read-write, so that the server's refusal is what stops a write");

#define KRDMA_BLK_CMD_MAX	512	/* bytes of one control command */
#define KRDMA_BLK_MAX_QUEUES	16

/* One name of the registry: an export or a map. */
struct krdma_blk_entry {
	struct list_head		list;
	bool				is_map;
	char				name[KRDMA_BLK_NAME_LEN];
	struct krdma_blk_export		*exp;
	struct krdma_blk_map		*map;
};

static DEFINE_MUTEX(krdma_blk_lock);	/* the registry; one command at a time */
static LIST_HEAD(krdma_blk_entries);
static struct kobject *krdma_blk_kobj;

static const char krdma_blk_grammar[] =
	"export name=NAME path=/dev/BLOCKDEV addr=IP:PORT [ro] [wq]\n"
	"unexport name=NAME\n"
	"map name=NAME addr=IP:PORT export=NAME [queues=N] [poll_queues=N] [reconnect_delay_ms=MS] [loss_tmo_ms=MS|never]\n"
	"unmap name=NAME";

static struct krdma_blk_entry *krdma_blk_find(const char *name, bool is_map)
{
	struct krdma_blk_entry *e;

	list_for_each_entry(e, &krdma_blk_entries, list)
		if (e->is_map == is_map && !strcmp(e->name, name))
			return e;
	return NULL;
}

/* Names: 1..31 of [A-Za-z0-9_-], starting with a letter or digit. */
static bool krdma_blk_name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n >= KRDMA_BLK_NAME_LEN || !isalnum(s[0]))
		return false;
	for (i = 0; i < n; i++)
		if (!isalnum(s[i]) && s[i] != '_' && s[i] != '-')
			return false;
	return true;
}

/* "IPv4:PORT" or "[IPv6]:PORT", port required. */
static int krdma_blk_parse_addr(const char *s, struct sockaddr_storage *ss)
{
	int ret = krdma_parse_addr(s, ss);

	if (ret)
		return ret;
	/* An export listens on a port, a map connects to one: never 0. */
	switch (ss->ss_family) {
	case AF_INET:
		return ((struct sockaddr_in *)ss)->sin_port ? 0 : -EINVAL;
	case AF_INET6:
		return ((struct sockaddr_in6 *)ss)->sin6_port ? 0 : -EINVAL;
	}
	return -EINVAL;
}

/* A parsed command: the verb and its key=value words. */
struct krdma_blk_cmdline {
	const char	*verb;
	const char	*name, *path, *addr, *export, *queues;
	const char	*delay, *loss, *pollq;
	bool		ro;
	bool		wq;
	const char	*bad;		/* the offending word */
};

static int krdma_blk_split(char *buf, struct krdma_blk_cmdline *c)
{
	char *w, *v;
	const char **slot;

	memset(c, 0, sizeof(*c));
	while ((w = strsep(&buf, " \t\n")) != NULL) {
		if (!*w)
			continue;
		if (!c->verb) {
			c->verb = w;
			continue;
		}
		if (!strcmp(w, "ro")) {
			c->ro = true;
			continue;
		}
		if (!strcmp(w, "wq")) {
			c->wq = true;
			continue;
		}
		v = strchr(w, '=');
		if (!v) {
			c->bad = w;
			return -EINVAL;
		}
		*v++ = '\0';
		if (!strcmp(w, "name"))
			slot = &c->name;
		else if (!strcmp(w, "path"))
			slot = &c->path;
		else if (!strcmp(w, "addr"))
			slot = &c->addr;
		else if (!strcmp(w, "export"))
			slot = &c->export;
		else if (!strcmp(w, "queues"))
			slot = &c->queues;
		else if (!strcmp(w, "poll_queues"))
			slot = &c->pollq;
		else if (!strcmp(w, "reconnect_delay_ms"))
			slot = &c->delay;
		else if (!strcmp(w, "loss_tmo_ms"))
			slot = &c->loss;
		else
			slot = NULL;
		if (!slot || *slot || !*v) {
			v[-1] = '=';	/* name the whole word */
			c->bad = w;
			return -EINVAL;
		}
		*slot = v;
	}
	if (!c->verb) {
		c->bad = "(empty)";
		return -EINVAL;
	}
	return 0;
}

/* Each verb takes only its own keys. */
static int krdma_blk_keys(struct krdma_blk_cmdline *c, bool path, bool addr,
			  bool export, bool mapopts, bool ro)
{
	if (!c->name) {
		c->bad = "name=";
		return -EINVAL;
	}
	if (!path != !c->path) {
		c->bad = c->path ? "path=" : "path= (missing)";
		return -EINVAL;
	}
	if (!addr != !c->addr) {
		c->bad = c->addr ? "addr=" : "addr= (missing)";
		return -EINVAL;
	}
	if (!export != !c->export) {
		c->bad = c->export ? "export=" : "export= (missing)";
		return -EINVAL;
	}
	if (!mapopts && (c->queues || c->delay || c->loss || c->pollq)) {
		c->bad = c->queues ? "queues=" : c->delay ?
			"reconnect_delay_ms=" : c->loss ? "loss_tmo_ms=" :
			"poll_queues=";
		return -EINVAL;
	}
	if (!ro && (c->ro || c->wq)) {
		c->bad = c->ro ? "ro" : "wq";
		return -EINVAL;
	}
	if (!krdma_blk_name_ok(c->name)) {
		c->bad = c->name;
		return -EINVAL;
	}
	return 0;
}

static int krdma_blk_do_export(struct krdma_blk_cmdline *c)
{
	struct krdma_blk_export_args a = { .name = c->name, .path = c->path,
					   .ro = c->ro, .wq = c->wq };
	struct krdma_blk_entry *e;
	int ret;

	ret = krdma_blk_keys(c, true, true, false, false, true);
	if (ret)
		return ret;
	if (c->path[0] != '/') {
		c->bad = c->path;
		return -EINVAL;
	}
	if (krdma_blk_parse_addr(c->addr, &a.addr)) {
		c->bad = c->addr;
		return -EINVAL;
	}
	if (krdma_blk_find(c->name, false)) {
		c->bad = c->name;
		return -EEXIST;
	}
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	strscpy(e->name, c->name, sizeof(e->name));
	e->exp = krdma_blk_export_create(&a);
	if (IS_ERR(e->exp)) {
		ret = PTR_ERR(e->exp);
		kfree(e);
		c->bad = a.failed == c->path ? c->path : c->addr;
		return ret;
	}
	list_add_tail(&e->list, &krdma_blk_entries);
	return 0;
}

static int krdma_blk_do_map(struct krdma_blk_cmdline *c)
{
	struct krdma_blk_map_args a = {
		.name		= c->name,
		.export		= c->export,
		.queues		= 1,
		.reconnect_delay_ms = KRDMA_SESSION_DEFAULT_DELAY_MS,
		.loss_tmo_ms	= KRDMA_SESSION_DEFAULT_LOSS_TMO_MS,
	};
	struct krdma_blk_entry *e;
	int ret;

	ret = krdma_blk_keys(c, false, true, true, true, false);
	if (ret)
		return ret;
	if (!krdma_blk_name_ok(c->export)) {
		c->bad = c->export;
		return -EINVAL;
	}
	if (krdma_blk_parse_addr(c->addr, &a.addr)) {
		c->bad = c->addr;
		return -EINVAL;
	}
	if (c->queues && (kstrtou32(c->queues, 10, &a.queues) ||
			  !a.queues || a.queues > KRDMA_BLK_MAX_QUEUES)) {
		c->bad = c->queues;
		return -EINVAL;
	}
	if (c->pollq && (kstrtou32(c->pollq, 10, &a.poll_queues) ||
			 a.poll_queues > KRDMA_BLK_MAX_QUEUES - a.queues)) {
		c->bad = c->pollq;
		return -EINVAL;
	}
	if (c->delay && (kstrtou32(c->delay, 10, &a.reconnect_delay_ms) ||
			 a.reconnect_delay_ms < KRDMA_SESSION_MIN_DELAY_MS ||
			 a.reconnect_delay_ms > KRDMA_SESSION_MAX_DELAY_MS)) {
		c->bad = c->delay;
		return -EINVAL;
	}
	if (c->loss && !strcmp(c->loss, "never")) {
		a.loss_tmo_ms = KRDMA_SESSION_LOSS_TMO_NEVER;
	} else if (c->loss && (kstrtou32(c->loss, 10, &a.loss_tmo_ms) ||
			       !a.loss_tmo_ms ||
			       a.loss_tmo_ms == KRDMA_SESSION_LOSS_TMO_NEVER)) {
		c->bad = c->loss;
		return -EINVAL;
	}
	if (krdma_blk_find(c->name, true)) {
		c->bad = c->name;
		return -EEXIST;
	}
	e = kzalloc(sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	e->is_map = true;
	strscpy(e->name, c->name, sizeof(e->name));
	e->map = krdma_blk_map_create(&a);
	if (IS_ERR(e->map)) {
		ret = PTR_ERR(e->map);
		kfree(e);
		if (ret == -ENOENT)
			c->bad = c->export;
		else if (ret == -EOPNOTSUPP)
			c->bad = KRDMA_BLK_POLL_REFUSED;
		else
			c->bad = c->addr;
		return ret;
	}
	list_add_tail(&e->list, &krdma_blk_entries);
	return 0;
}

static int krdma_blk_do_remove(struct krdma_blk_cmdline *c, bool is_map)
{
	struct krdma_blk_entry *e;
	int ret;

	ret = krdma_blk_keys(c, false, false, false, false, false);
	if (ret)
		return ret;
	e = krdma_blk_find(c->name, is_map);
	if (!e) {
		c->bad = c->name;
		return -ENOENT;
	}
	list_del(&e->list);
	if (is_map)
		krdma_blk_map_destroy(e->map);
	else
		krdma_blk_export_destroy(e->exp);
	kfree(e);
	return 0;
}

static ssize_t control_show(struct kobject *kobj, struct kobj_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%s\n", krdma_blk_grammar);
}

static ssize_t control_store(struct kobject *kobj, struct kobj_attribute *attr,
			     const char *buf, size_t count)
{
	struct krdma_blk_cmdline c;
	char *copy;
	int ret;

	if (count > KRDMA_BLK_CMD_MAX) {
		pr_warn_ratelimited("control: command longer than %d bytes\n",
				    KRDMA_BLK_CMD_MAX);
		return -EINVAL;
	}
	copy = kmemdup_nul(buf, count, GFP_KERNEL);
	if (!copy)
		return -ENOMEM;
	ret = krdma_blk_split(copy, &c);
	if (ret)
		goto out;
	mutex_lock(&krdma_blk_lock);
	if (!strcmp(c.verb, "export")) {
		ret = krdma_blk_do_export(&c);
	} else if (!strcmp(c.verb, "unexport")) {
		ret = krdma_blk_do_remove(&c, false);
	} else if (!strcmp(c.verb, "map")) {
		ret = krdma_blk_do_map(&c);
	} else if (!strcmp(c.verb, "unmap")) {
		ret = krdma_blk_do_remove(&c, true);
	} else {
		c.bad = c.verb;
		ret = -EINVAL;
	}
	mutex_unlock(&krdma_blk_lock);
out:
	if (ret)
		pr_warn_ratelimited("control: %s: '%s' (%d)\n",
				    c.verb ?: "command", c.bad ?: "", ret);
	kfree(copy);
	return ret ?: count;
}

static struct kobj_attribute krdma_blk_control_attr = __ATTR_RW_MODE(control, 0600);

static struct attribute *krdma_blk_attrs[] = {
	&krdma_blk_control_attr.attr,
	NULL,
};

static const struct attribute_group krdma_blk_group = {
	.attrs = krdma_blk_attrs,
};

static int __init krdma_blk_init(void)
{
	int ret;

	BUILD_BUG_ON(sizeof(struct krdma_blk_hdr) != 8);
	BUILD_BUG_ON(sizeof(struct krdma_blk_hello) != 40);
	BUILD_BUG_ON(sizeof(struct krdma_blk_cmd) != 48);
	BUILD_BUG_ON(sizeof(struct krdma_blk_resp) != 48);

	krdma_blk_kobj = kobject_create_and_add("krdma_blk", kernel_kobj);
	if (!krdma_blk_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(krdma_blk_kobj, &krdma_blk_group);
	if (ret) {
		kobject_put(krdma_blk_kobj);
		return ret;
	}
	return 0;
}

static void __exit krdma_blk_exit(void)
{
	struct krdma_blk_entry *e, *tmp;

	/* Waits for writers of the control file that are in it. */
	sysfs_remove_group(krdma_blk_kobj, &krdma_blk_group);
	kobject_put(krdma_blk_kobj);

	mutex_lock(&krdma_blk_lock);
	/* Maps first: a map of a local export is the export's client. */
	list_for_each_entry_safe(e, tmp, &krdma_blk_entries, list) {
		if (!e->is_map)
			continue;
		list_del(&e->list);
		krdma_blk_map_destroy(e->map);
		kfree(e);
	}
	list_for_each_entry_safe(e, tmp, &krdma_blk_entries, list) {
		list_del(&e->list);
		krdma_blk_export_destroy(e->exp);
		kfree(e);
	}
	mutex_unlock(&krdma_blk_lock);
}

module_init(krdma_blk_init);
module_exit(krdma_blk_exit);

MODULE_AUTHOR("krdma developers");
MODULE_DESCRIPTION("krdma-blk: a block device over krdma");
MODULE_LICENSE("GPL");
