// SPDX-License-Identifier: GPL-2.0
/*
 * krdma_blk_evilsrv.ko: a krdma-blk server that breaks the protocol, for
 * test/guest/blk.sh.  It uses include/krdma.h and the krdma-blk wire
 * format (blk/krdma_blk_proto.h) only.  Loading it listens on addr= and
 * port= for clients of export= and answers their HELLO with a disk of
 * 1 MiB (512-byte blocks); then it misbehaves as mode= says, until it is
 * unloaded, which closes every connection it took:
 *
 *   hugesize   the HELLO reply gives a size whose bytes are no loff_t:
 *              the client's map must fail (-EPROTO)
 *   enomem     every command is answered -ENOMEM, a dispatch status and
 *              no device's error: the client's I/O must fail with EIO
 *   garbage    every command is answered with a message that is not
 *              krdma-blk's: the client must fail the connection (and
 *              its session reconnect), not wait for the request's timeout
 *
 * No data moves: a READ's or WRITE's token is never used, so nothing of
 * the client's memory is touched.  Replies go from the recv callback
 * (softirq) with krdma_send_async(); one that finds no credit is dropped
 * (the client's request times out then, which no mode relies on).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/inet.h>
#include <net/net_namespace.h>

#include <krdma.h>
#include "krdma_blk_proto.h"

static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "the IP address to listen on");
static char *port = "";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "the port to listen on");
static char *export = "";
module_param(export, charp, 0444);
MODULE_PARM_DESC(export, "the export name its HELLO replies accept");
static char *mode = "";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "hugesize, enomem or garbage");

#define ES_MAX_CONNS	16
#define ES_SECTORS	2048		/* 1 MiB */

enum es_mode { ES_HUGESIZE, ES_ENOMEM, ES_GARBAGE };

static struct {
	enum es_mode		mode;
	struct krdma_listener	*l;
	spinlock_t		lock;		/* conns, n */
	struct krdma_conn	*conns[ES_MAX_CONNS];
	int			n;
	atomic_t		cmds;		/* commands answered */
} es;

static void es_event(struct krdma_conn *conn, enum krdma_event ev, int error)
{
	bool taken = false;

	if (ev != KRDMA_EVENT_ESTABLISHED)
		return;		/* closed at unload */
	spin_lock_bh(&es.lock);
	if (es.n < ES_MAX_CONNS) {
		es.conns[es.n++] = conn;
		taken = true;
	}
	spin_unlock_bh(&es.lock);
	if (!taken)
		krdma_conn_abandon(conn);
}

/* Softirq: answer as the mode says. */
static int es_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	const struct krdma_blk_hdr *h = msg->data;
	struct krdma_blk_resp r = {};
	u8 junk[sizeof(r)];
	const void *m = &r;
	int ret;

	if (!h || msg->len < sizeof(*h) || !krdma_blk_hdr_ok(h)) {
		pr_err_ratelimited("a message of %u bytes that is not krdma-blk's\n",
				   msg->len);
		return 0;
	}
	krdma_blk_hdr_init(&r.hdr, h->op, 0);
	if (h->op == KRDMA_BLK_OP_HELLO) {
		const struct krdma_blk_hello *hello = msg->data;

		if (msg->len != sizeof(*hello) ||
		    strncmp(hello->export, export, sizeof(hello->export)))
			r.status = cpu_to_be32((u32)-ENOENT);
		r.lbs = cpu_to_be32(512);
		r.sectors = cpu_to_be64(es.mode == ES_HUGESIZE ?
					U64_MAX >> 1 : ES_SECTORS);
		r.max_sectors = cpu_to_be32(256);
	} else {
		const struct krdma_blk_cmd *c = msg->data;

		if (msg->len < sizeof(*c))
			return 0;
		r.tag = c->tag;
		r.status = cpu_to_be32((u32)-ENOMEM);
		if (es.mode == ES_GARBAGE) {
			memset(junk, 0x5a, sizeof(junk));
			m = junk;
		}
		atomic_inc(&es.cmds);
	}
	ret = krdma_send_async(conn, m, sizeof(r), NULL, true);
	if (ret)
		pr_err_ratelimited("reply: %d\n", ret);
	return 0;
}

static const struct krdma_conn_ops es_ops = {
	.event	= es_event,
	.recv	= es_recv,
};

static int __init es_init(void)
{
	struct krdma_conn_opts opts = {
		.ops = &es_ops,
		.max_msg_size = KRDMA_BLK_MSG_MAX,
	};
	struct sockaddr_storage ss;
	int ret;

	if (!strcmp(mode, "hugesize")) {
		es.mode = ES_HUGESIZE;
	} else if (!strcmp(mode, "enomem")) {
		es.mode = ES_ENOMEM;
	} else if (!strcmp(mode, "garbage")) {
		es.mode = ES_GARBAGE;
	} else {
		pr_err("mode= must be hugesize, enomem or garbage\n");
		return -EINVAL;
	}
	if (!*export) {
		pr_err("needs export=\n");
		return -EINVAL;
	}
	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, &ss);
	if (ret) {
		pr_err("bad address '%s' port '%s'\n", addr, port);
		return ret;
	}
	spin_lock_init(&es.lock);
	es.l = krdma_listen((struct sockaddr *)&ss, &opts);
	if (IS_ERR(es.l)) {
		ret = PTR_ERR(es.l);
		pr_err("listen: %d\n", ret);
		return ret;
	}
	pr_info("%s: listening for export %s\n", mode, export);
	return 0;
}
module_init(es_init);

static void __exit es_exit(void)
{
	int i;

	/* Every connection it handed over has had its ESTABLISHED event. */
	krdma_listener_close(es.l);
	for (i = 0; i < es.n; i++)
		krdma_close(es.conns[i]);
	pr_info("%s: %d commands answered\n", mode, atomic_read(&es.cmds));
}
module_exit(es_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("krdma-blk: a server that breaks the protocol (tests only)");
