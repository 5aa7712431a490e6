// SPDX-License-Identifier: GPL-2.0
/*
 * krdma_blk_hostile.ko: a krdma-blk client that breaks the protocol, for
 * test/guest/blk.sh.  It uses include/krdma.h and the krdma-blk wire
 * format (blk/krdma_blk_proto.h) only.  Loading it connects to an export
 * (addr=, port=, export=, queue depth depth=), misbehaves as mode= says,
 * and checks what the server does about it, all in its init: the load
 * fails (an errno and a dmesg line) when the server did not do what it
 * must, and succeeds with nothing left open when it did:
 *
 *   badcmd     commands the server must refuse (unknown op, no length, a
 *              length that is not a multiple of the block size, past the
 *              end, an overflowing sector, longer than the token, longer
 *              than the export's maximum, a FLUSH with a length) are each
 *              answered with their errno, and the connection stays up: a
 *              READ of @sector after them returns @fill in every byte;
 *              then an in-capsule WRITE past the end is refused, and one
 *              of 4 KiB next to @sector reads back byte for byte
 *   early      a command before HELLO: the server closes the connection
 *   silent     nothing at all: the server closes the connection when its
 *              hello_timeout_ms is up (blk.sh sets 1000)
 *   hello2     a second HELLO: closed
 *   garbage    a message that is not krdma-blk's: closed
 *   badlen     a command one byte too long: closed
 *   capsread   a READ flagged in-capsule, with 4 KiB behind it: closed
 *   capsshort  an in-capsule WRITE one byte shorter than its length: closed
 *   overrun    depth + 1 READs sent before any is answered (the export's
 *              device takes seconds per request): closed at the last one,
 *              nothing answered
 *   noreplies  FLUSHes one after the other, every reply kept (so the
 *              server gets no credit back): the server sends @depth
 *              replies, holds at most @depth more, and closes at the next
 *   forged     a READ whose token has a forged rkey: the server's RDMA
 *              WRITE fails, the connection with it, and nothing lands
 *   qd         READs one at a time, each answered before the next (the
 *              server counts one unanswered), claiming client queue
 *              depths (krdma_blk_cmd.qd) of 1, 32 and 0 (not told),
 *              HB_QD_READS each: every one returns @fill from @sector;
 *              which worker each took is blk.sh's to check
 *   misaligned a READ of one block from sector 1 of an export whose
 *              logical block is larger than a sector: refused with
 *              -EINVAL (not served at a truncated address), the
 *              connection stays up
 *   wrongname  a HELLO naming an export the server does not have:
 *              -ENOENT; then a FLUSH: closed as a command before HELLO
 *              (a refused HELLO opens nothing)
 *   rehello    a HELLO naming another export every @hello_ms / 2, for
 *              3 x @hello_ms (the server's hello_timeout_ms, which
 *              blk.sh sets): each refused with -ENOENT, and the server
 *              must close the connection @hello_ms after it was set up
 *              (within twice that), not start its deadline again at
 *              each refused HELLO
 *
 * The server's dmesg line for each closing mode is blk.sh's to check.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/slab.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <linux/delay.h>
#include <linux/random.h>
#include <linux/inet.h>
#include <net/net_namespace.h>

#include <krdma.h>
#include "krdma_blk_proto.h"

static char *addr = "";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "the export's IP address");
static char *port = "";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "the export's port");
static char *export = "";
module_param(export, charp, 0444);
MODULE_PARM_DESC(export, "the export's name");
static char *mode = "";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "badcmd, early, silent, hello2, garbage, badlen, capsread, capsshort, overrun, noreplies, forged, qd, misaligned, wrongname or rehello");
static uint depth = 4;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "queue depth asked for (2 to 16)");
static ulong sector;
module_param(sector, ulong, 0444);
MODULE_PARM_DESC(sector, "badcmd, qd: the sector whose 4 KiB hold @fill");
static uint fill;
module_param(fill, uint, 0444);
MODULE_PARM_DESC(fill, "badcmd, qd: the byte those 4 KiB hold");
static uint hello_ms = 1000;
module_param(hello_ms, uint, 0444);
MODULE_PARM_DESC(hello_ms, "rehello: the server's hello_timeout_ms (100 to 60000)");

#define HB_WAIT		(10 * HZ)
#define HB_IO		4096
#define HB_MAX_DEPTH	16
#define HB_QD_READS	10

struct hb {
	struct krdma_conn	*conn;
	struct completion	ended;		/* the connection's end event */
	int			end_err;
	spinlock_t		lock;		/* below */
	struct completion	got;		/* a reply came */
	struct krdma_blk_resp	last;		/* the last reply */
	u32			nreplies;	/* replies but HELLO's */
	bool			keep;		/* keep every reply */
	u32			nkept;
	struct krdma_msg	*kept[HB_MAX_DEPTH];
	u32			lbs;
	u64			sectors;
	u32			max_sectors;
};

static void hb_event(struct krdma_conn *conn, enum krdma_event ev, int error)
{
	struct hb *hb = krdma_conn_priv(conn);

	if (ev == KRDMA_EVENT_ESTABLISHED)
		return;
	hb->end_err = error;
	complete_all(&hb->ended);
}

/* Softirq: note the reply, and keep it if told to. */
static int hb_recv(struct krdma_conn *conn, struct krdma_msg *msg)
{
	struct hb *hb = krdma_conn_priv(conn);
	struct krdma_blk_resp r;
	bool keep = false;

	if (!msg->data || msg->len != sizeof(r)) {
		pr_err_ratelimited("a message of %u bytes from the server\n",
				   msg->len);
		return 0;
	}
	memcpy(&r, msg->data, sizeof(r));
	spin_lock(&hb->lock);
	hb->last = r;
	if (r.hdr.op != KRDMA_BLK_OP_HELLO) {
		hb->nreplies++;
		if (hb->keep && hb->nkept < HB_MAX_DEPTH) {
			hb->kept[hb->nkept++] = msg;
			keep = true;
		}
	}
	spin_unlock(&hb->lock);
	complete(&hb->got);
	return keep ? KRDMA_MSG_KEEP : 0;
}

static const struct krdma_conn_ops hb_ops = {
	.event	= hb_event,
	.recv	= hb_recv,
};

static u32 hb_nreplies(struct hb *hb)
{
	u32 n;

	spin_lock_bh(&hb->lock);
	n = hb->nreplies;
	spin_unlock_bh(&hb->lock);
	return n;
}

/* Send @len bytes of @m and wait for the reply: its status, or an errno. */
static int hb_call(struct hb *hb, const void *m, size_t len, int *status)
{
	int ret;

	reinit_completion(&hb->got);
	ret = krdma_send(hb->conn, m, len, HB_WAIT);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&hb->got, HB_WAIT))
		return -ETIMEDOUT;
	spin_lock_bh(&hb->lock);
	*status = (s32)be32_to_cpu(hb->last.status);
	spin_unlock_bh(&hb->lock);
	return 0;
}

static int hb_hello(struct hb *hb)
{
	struct krdma_blk_hello h = {};
	int ret, status;

	krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
	strscpy(h.export, export, sizeof(h.export));
	ret = hb_call(hb, &h, sizeof(h), &status);
	if (ret || status) {
		pr_err("HELLO to export %s: %d, status %d\n", export, ret,
		       status);
		return ret ?: -EPROTO;
	}
	spin_lock_bh(&hb->lock);
	hb->lbs = be32_to_cpu(hb->last.lbs);
	hb->sectors = be64_to_cpu(hb->last.sectors);
	hb->max_sectors = be32_to_cpu(hb->last.max_sectors);
	spin_unlock_bh(&hb->lock);
	if (hb->lbs < 512 || !hb->sectors || !hb->max_sectors)
		return -EPROTO;
	return 0;
}

static void hb_cmd(struct krdma_blk_cmd *c, u8 op, u32 len, u64 sect,
		   u64 tag, const struct krdma_token *t)
{
	memset(c, 0, sizeof(*c));
	krdma_blk_hdr_init(&c->hdr, op, 0);
	c->len = cpu_to_be32(len);
	c->sector = cpu_to_be64(sect);
	c->tag = cpu_to_be64(tag);
	if (t)
		krdma_token_pack(t, &c->token);
}

/*
 * A message of command @op with @flags, @len and @sect, and @n bytes of
 * @v behind it (in-capsule data): kfree() it.
 */
static u8 *hb_capsule(u8 op, u16 flags, u32 len, u64 sect, u32 n, u8 v)
{
	struct krdma_blk_cmd *c;
	u8 *m;

	m = kmalloc(sizeof(*c) + n, GFP_KERNEL);
	if (!m)
		return NULL;
	c = (struct krdma_blk_cmd *)m;
	hb_cmd(c, op, len, sect, 7, NULL);
	krdma_blk_hdr_init(&c->hdr, op, flags);
	memset(m + sizeof(*c), v, n);
	return m;
}

/* The server closed the connection, with no reply past @replies. */
static int hb_closed(struct hb *hb, u32 replies)
{
	if (!wait_for_completion_timeout(&hb->ended, HB_WAIT)) {
		pr_err("%s: the server did not close the connection\n", mode);
		return -ETIME;
	}
	if (hb_nreplies(hb) != replies) {
		pr_err("%s: %u replies, expected %u\n", mode, hb_nreplies(hb),
		       replies);
		return -EPROTO;
	}
	pr_info("%s: the server closed the connection (%d)\n", mode,
		hb->end_err);
	return 0;
}

/* A registered 4 KiB buffer the server may write into. */
struct hb_buf {
	u8			*p;
	struct krdma_mr		*mr;
	struct krdma_token	tok;
};

static int hb_buf_get(struct hb *hb, struct hb_buf *b)
{
	b->p = kzalloc(HB_IO, GFP_KERNEL);
	if (!b->p)
		return -ENOMEM;
	b->mr = krdma_reg_buf(hb->conn, b->p, HB_IO, KRDMA_ACCESS_REMOTE_WRITE);
	if (IS_ERR(b->mr)) {
		kfree(b->p);
		b->p = NULL;
		return PTR_ERR(b->mr);
	}
	krdma_mr_token(b->mr, &b->tok);
	return 0;
}

static void hb_buf_put(struct hb_buf *b)
{
	if (!b->p)
		return;
	krdma_mr_free(b->mr);
	kfree(b->p);
	b->p = NULL;
}

static bool hb_all(const u8 *p, size_t n, u8 v)
{
	return !memchr_inv(p, v, n);
}

/*
 * An in-capsule WRITE past the end: -EINVAL, the connection up.  Then
 * 4 KiB of ~@fill in-capsule at @sector + 8, read back into a buffer of
 * its own (a reply ends the token it answers).
 */
static int hb_badcmd_capsule(struct hb *hb)
{
	struct hb_buf b = {};
	int ret, status = 0;
	u8 v = ~fill;
	u8 *m;

	m = hb_capsule(KRDMA_BLK_OP_WRITE, KRDMA_BLK_F_INCAPSULE, HB_IO,
		       hb->sectors, HB_IO, v);
	if (!m)
		return -ENOMEM;
	ret = hb_call(hb, m, sizeof(struct krdma_blk_cmd) + HB_IO, &status);
	if (ret || status != -EINVAL) {
		pr_err("badcmd: in-capsule WRITE past the end: %d, status %d, expected %d\n",
		       ret, status, -EINVAL);
		ret = ret ?: -EPROTO;
		goto out;
	}
	kfree(m);
	m = hb_capsule(KRDMA_BLK_OP_WRITE, KRDMA_BLK_F_INCAPSULE, HB_IO,
		       sector + 8, HB_IO, v);
	if (!m)
		return -ENOMEM;
	ret = hb_call(hb, m, sizeof(struct krdma_blk_cmd) + HB_IO, &status);
	if (!ret && status)
		ret = status;
	if (ret) {
		pr_err("badcmd: in-capsule WRITE: %d\n", ret);
		goto out;
	}
	ret = hb_buf_get(hb, &b);
	if (ret)
		goto out;
	hb_cmd((struct krdma_blk_cmd *)m, KRDMA_BLK_OP_READ, HB_IO, sector + 8,
	       101, &b.tok);
	ret = hb_call(hb, m, sizeof(struct krdma_blk_cmd), &status);
	if (!ret && status)
		ret = status;
	if (!ret && !hb_all(b.p, HB_IO, v)) {
		pr_err("badcmd: the in-capsule WRITE's 4 KiB did not read back as 0x%02x\n",
		       v);
		ret = -EIO;
	}
out:
	hb_buf_put(&b);
	kfree(m);
	return ret;
}

/* Commands to refuse one by one, then a READ that works. */
static int hb_badcmd(struct hb *hb)
{
	struct krdma_token tok = { .length = HB_IO };	/* never used */
	u32 big = (hb->max_sectors + hb->lbs / 512) * 512;
	struct krdma_token bigtok = { .length = big };
	struct {
		const char *what;
		u8 op;
		u32 len;
		u64 sect;
		const struct krdma_token *t;
		int want;
	} bad[] = {
		{ "unknown op", 99, 0, 0, NULL, -EOPNOTSUPP },
		{ "READ of 0 bytes", KRDMA_BLK_OP_READ, 0, 0, &tok, -EINVAL },
		{ "READ of a part of a block", KRDMA_BLK_OP_READ,
		  hb->lbs + 1, 0, &tok, -EINVAL },
		{ "READ past the end", KRDMA_BLK_OP_READ, HB_IO,
		  hb->sectors, &tok, -EINVAL },
		{ "READ at an overflowing sector", KRDMA_BLK_OP_READ, HB_IO,
		  U64_MAX - 7, &tok, -EINVAL },
		{ "READ longer than its token", KRDMA_BLK_OP_READ, 2 * HB_IO,
		  0, &tok, -EINVAL },
		{ "READ past the maximum", KRDMA_BLK_OP_READ, big, 0, &bigtok,
		  -EINVAL },
		{ "FLUSH with a length", KRDMA_BLK_OP_FLUSH, HB_IO, 0, NULL,
		  -EINVAL },
	};
	struct krdma_blk_cmd c;
	struct hb_buf b = {};
	int i, ret, status = 0;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		hb_cmd(&c, bad[i].op, bad[i].len, bad[i].sect, i, bad[i].t);
		ret = hb_call(hb, &c, sizeof(c), &status);
		if (ret || status != bad[i].want) {
			pr_err("badcmd: %s: %d, status %d, expected %d\n",
			       bad[i].what, ret, status, bad[i].want);
			return ret ?: -EPROTO;
		}
	}
	ret = hb_buf_get(hb, &b);
	if (ret)
		return ret;
	hb_cmd(&c, KRDMA_BLK_OP_READ, HB_IO, sector, 100, &b.tok);
	ret = hb_call(hb, &c, sizeof(c), &status);
	if (!ret && status)
		ret = status;
	if (!ret && !hb_all(b.p, HB_IO, fill)) {
		pr_err("badcmd: the READ after them did not return 0x%02x\n",
		       fill);
		ret = -EIO;
	}
	if (!ret)
		ret = hb_badcmd_capsule(hb);
	if (!ret && krdma_conn_error(hb->conn))
		ret = krdma_conn_error(hb->conn);
	hb_buf_put(&b);
	if (!ret)
		pr_info("badcmd: %zu commands refused, each with its errno; the READ after them returned its data; an in-capsule WRITE past the end refused, one of 4 KiB read back\n",
			ARRAY_SIZE(bad));
	return ret;
}

static int hb_overrun(struct hb *hb)
{
	struct hb_buf *b;
	struct krdma_blk_cmd c;
	u32 i, sent = 0;
	int ret = 0;

	b = kcalloc(depth + 1, sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	for (i = 0; i <= depth && !ret; i++)
		ret = hb_buf_get(hb, &b[i]);
	for (i = 0; i <= depth && !ret; i++) {
		hb_cmd(&c, KRDMA_BLK_OP_READ, HB_IO, i * (HB_IO >> 9), i,
		       &b[i].tok);
		ret = krdma_send(hb->conn, &c, sizeof(c), HB_WAIT);
		if (ret) {
			pr_err("overrun: command %u: %d\n", i + 1, ret);
			break;
		}
		sent++;
	}
	if (!ret)
		ret = hb_closed(hb, 0);
	for (i = 0; i <= depth; i++)
		hb_buf_put(&b[i]);
	kfree(b);
	if (!ret)
		pr_info("overrun: %u commands sent, none answered\n", sent);
	return ret;
}

static int hb_noreplies(struct hb *hb)
{
	struct krdma_blk_cmd c;
	u32 sent = 0;
	int ret = 0;

	spin_lock_bh(&hb->lock);
	hb->keep = true;
	spin_unlock_bh(&hb->lock);
	while (sent < 4 * depth && !completion_done(&hb->ended)) {
		hb_cmd(&c, KRDMA_BLK_OP_FLUSH, 0, 0, sent, NULL);
		ret = krdma_send(hb->conn, &c, sizeof(c), HB_WAIT);
		if (ret)
			break;
		sent++;
		/* Each is answered (and its reply kept or held) first. */
		msleep(100);
	}
	ret = hb_closed(hb, depth);
	if (!ret && sent < 2 * depth + 1) {
		pr_err("noreplies: closed after %u commands, before %u\n",
		       sent, 2 * depth + 1);
		ret = -EPROTO;
	}
	if (!ret)
		pr_info("noreplies: %u replies came and were kept, the connection closed after %u commands\n",
			depth, sent);
	return ret;
}

static int hb_forged(struct hb *hb)
{
	struct krdma_blk_cmd c;
	struct hb_buf b = {};
	struct krdma_token t;
	int ret;

	ret = hb_buf_get(hb, &b);
	if (ret)
		return ret;
	t = b.tok;
	t.rkey ^= 0xff;
	hb_cmd(&c, KRDMA_BLK_OP_READ, HB_IO, 0, 1, &t);
	ret = krdma_send(hb->conn, &c, sizeof(c), HB_WAIT);
	if (!ret)
		ret = hb_closed(hb, 0);
	if (!ret && !hb_all(b.p, HB_IO, 0)) {
		pr_err("forged: data landed through a forged rkey\n");
		ret = -EIO;
	}
	hb_buf_put(&b);
	return ret;
}

/* Mode qd: READs claiming depths they do not have, one at a time. */
static int hb_qd(struct hb *hb)
{
	static const u32 qds[] = { 1, 32, 0 };
	struct krdma_blk_cmd c;
	struct hb_buf b = {};
	int i, j, ret = 0, status = 0;

	for (i = 0; i < ARRAY_SIZE(qds) && !ret; i++) {
		for (j = 0; j < HB_QD_READS && !ret; j++) {
			/* A reply ends the token it answers: one each. */
			ret = hb_buf_get(hb, &b);
			if (ret)
				break;
			hb_cmd(&c, KRDMA_BLK_OP_READ, HB_IO, sector,
			       i * HB_QD_READS + j, &b.tok);
			c.qd = cpu_to_be32(qds[i]);
			ret = hb_call(hb, &c, sizeof(c), &status);
			if (!ret && status)
				ret = status;
			if (!ret && !hb_all(b.p, HB_IO, fill)) {
				pr_err("qd: a READ claiming depth %u did not return 0x%02x\n",
				       qds[i], fill);
				ret = -EIO;
			}
			hb_buf_put(&b);
		}
	}
	if (!ret)
		pr_info("qd: %d READs claiming depths 1, 32 and 0, one at a time, each returned its data\n",
			(int)ARRAY_SIZE(qds) * HB_QD_READS);
	return ret;
}

/* A READ from inside a logical block: -EINVAL, and the connection stays. */
static int hb_misaligned(struct hb *hb)
{
	struct krdma_token tok = { .length = HB_IO };	/* never used */
	struct krdma_blk_cmd c;
	int ret, status = 0;

	if (hb->lbs <= 512 || hb->lbs > HB_IO) {
		pr_err("misaligned: needs an export of a block size from 1 to 8 sectors, not %u bytes\n",
		       hb->lbs);
		return -EINVAL;
	}
	hb_cmd(&c, KRDMA_BLK_OP_READ, hb->lbs, 1, 1, &tok);
	ret = hb_call(hb, &c, sizeof(c), &status);
	if (ret || status != -EINVAL) {
		pr_err("misaligned: a READ of %u bytes from sector 1: %d, status %d, expected -EINVAL\n",
		       hb->lbs, ret, status);
		return ret ?: -EPROTO;
	}
	if (krdma_conn_error(hb->conn)) {
		pr_err("misaligned: the connection failed: %d\n",
		       krdma_conn_error(hb->conn));
		return -EPROTO;
	}
	pr_info("misaligned: a READ from sector 1 of a %u-byte block refused with -EINVAL\n",
		hb->lbs);
	return 0;
}

/* A HELLO the server refuses, then a command: closed. */
static int hb_wrongname(struct hb *hb)
{
	struct krdma_blk_hello h = {};
	struct krdma_blk_cmd c;
	int ret, status = 0;

	krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
	snprintf(h.export, sizeof(h.export), "%.20s-not", export);
	ret = hb_call(hb, &h, sizeof(h), &status);
	if (ret || status != -ENOENT) {
		pr_err("wrongname: HELLO to export %s: %d, status %d, expected -ENOENT\n",
		       h.export, ret, status);
		return ret ?: -EPROTO;
	}
	hb_cmd(&c, KRDMA_BLK_OP_FLUSH, 0, 0, 1, NULL);
	ret = krdma_send(hb->conn, &c, sizeof(c), HB_WAIT);
	return ret ?: hb_closed(hb, 0);
}

/*
 * Mode rehello: HELLOs the server refuses, every @hello_ms / 2, for
 * 3 x @hello_ms or until the server closes the connection, which it must
 * do @hello_ms after the connection was set up: within 2 x @hello_ms of
 * this start, which comes just before the server's (our connect returned
 * when the RTU went; the server's clock starts when it arrives).
 *
 * What times the server's close here is its last refusal, not the end of
 * the connection: the close's DREQ can be lost or come late (rxe on the
 * debug kernel, 2026-12-02: 5.8 s after set-up, once with the send after
 * the close running out of retries first, once after it), but a server
 * that closed on time answers nothing past its deadline, and one that
 * started its deadline again at each refusal answers them all.
 */
static int hb_rehello(struct hb *hb)
{
	unsigned long t0 = jiffies, end, next, until, now, last = t0;
	struct krdma_blk_hello h = {};
	u32 refused = 0, ms;
	int status;

	if (hello_ms < 100 || hello_ms > 60000) {
		pr_err("rehello: hello_ms= 100 to 60000\n");
		return -EINVAL;
	}
	end = t0 + msecs_to_jiffies(3 * hello_ms);
	krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
	snprintf(h.export, sizeof(h.export), "%.20s-not", export);
	while (time_before(jiffies, end) && !completion_done(&hb->ended)) {
		next = jiffies + msecs_to_jiffies(hello_ms / 2);
		reinit_completion(&hb->got);
		if (krdma_send(hb->conn, &h, sizeof(h), HB_WAIT))
			break;	/* the connection is going */
		/* Its reply, or the server's close, whichever comes. */
		until = jiffies + HB_WAIT;
		while (!completion_done(&hb->got) &&
		       !completion_done(&hb->ended) && time_before(jiffies, until))
			usleep_range(5000, 10000);
		if (!completion_done(&hb->got))
			break;
		last = jiffies;
		spin_lock_bh(&hb->lock);
		status = (s32)be32_to_cpu(hb->last.status);
		spin_unlock_bh(&hb->lock);
		if (status != -ENOENT) {
			pr_err("rehello: HELLO to export %s: status %d, expected -ENOENT\n",
			       h.export, status);
			return -EPROTO;
		}
		refused++;
		now = jiffies;
		if (time_before(now, next))
			wait_for_completion_timeout(&hb->ended, next - now);
	}
	if (!wait_for_completion_timeout(&hb->ended, HB_WAIT / 2)) {
		pr_err("rehello: the server kept the connection for %u ms through %u refused HELLOs (its timeout: %u ms)\n",
		       jiffies_to_msecs(jiffies - t0), refused, hello_ms);
		return -ETIME;
	}
	ms = jiffies_to_msecs(last - t0);
	if (ms > 2 * hello_ms) {
		pr_err("rehello: the server still refused a HELLO %u ms after its set-up, %u refused in all (its timeout: %u ms)\n",
		       ms, refused, hello_ms);
		return -ETIME;
	}
	pr_info("rehello: %u HELLOs refused, the last %u ms and the end %u ms after set-up (%d)\n",
		refused, ms, jiffies_to_msecs(jiffies - t0), hb->end_err);
	return 0;
}

static int hb_run(struct hb *hb)
{
	struct krdma_blk_cmd c;
	u8 raw[sizeof(c) + 1];
	int ret;

	if (!strcmp(mode, "early")) {
		hb_cmd(&c, KRDMA_BLK_OP_FLUSH, 0, 0, 1, NULL);
		ret = krdma_send(hb->conn, &c, sizeof(c), HB_WAIT);
		return ret ?: hb_closed(hb, 0);
	}
	if (!strcmp(mode, "wrongname"))
		return hb_wrongname(hb);
	if (!strcmp(mode, "rehello"))
		return hb_rehello(hb);
	if (!strcmp(mode, "silent"))
		return hb_closed(hb, 0);
	ret = hb_hello(hb);
	if (ret)
		return ret;
	if (!strcmp(mode, "hello2")) {
		struct krdma_blk_hello h = {};

		krdma_blk_hdr_init(&h.hdr, KRDMA_BLK_OP_HELLO, 0);
		strscpy(h.export, export, sizeof(h.export));
		ret = krdma_send(hb->conn, &h, sizeof(h), HB_WAIT);
		return ret ?: hb_closed(hb, 0);
	}
	if (!strcmp(mode, "garbage")) {
		get_random_bytes(raw, sizeof(c));
		raw[0] = ~(KRDMA_BLK_MAGIC >> 24);	/* never the magic */
		ret = krdma_send(hb->conn, raw, sizeof(c), HB_WAIT);
		return ret ?: hb_closed(hb, 0);
	}
	if (!strcmp(mode, "badlen")) {
		hb_cmd(&c, KRDMA_BLK_OP_FLUSH, 0, 0, 1, NULL);
		memcpy(raw, &c, sizeof(c));
		raw[sizeof(c)] = 0;
		ret = krdma_send(hb->conn, raw, sizeof(raw), HB_WAIT);
		return ret ?: hb_closed(hb, 0);
	}
	if (!strcmp(mode, "capsread") || !strcmp(mode, "capsshort")) {
		bool rd = !strcmp(mode, "capsread");
		u8 *m = hb_capsule(rd ? KRDMA_BLK_OP_READ : KRDMA_BLK_OP_WRITE,
				   KRDMA_BLK_F_INCAPSULE, HB_IO, 0,
				   rd ? HB_IO : HB_IO - 1, 0x77);

		if (!m)
			return -ENOMEM;
		ret = krdma_send(hb->conn, m, sizeof(c) + (rd ? HB_IO : HB_IO - 1),
				 HB_WAIT);
		kfree(m);
		return ret ?: hb_closed(hb, 0);
	}
	if (!strcmp(mode, "badcmd"))
		return hb_badcmd(hb);
	if (!strcmp(mode, "overrun"))
		return hb_overrun(hb);
	if (!strcmp(mode, "noreplies"))
		return hb_noreplies(hb);
	if (!strcmp(mode, "forged"))
		return hb_forged(hb);
	if (!strcmp(mode, "qd"))
		return hb_qd(hb);
	if (!strcmp(mode, "misaligned"))
		return hb_misaligned(hb);
	return -EINVAL;
}

static int __init hb_init(void)
{
	struct krdma_conn_opts opts = { .ops = &hb_ops };
	struct sockaddr_storage ss;
	struct hb *hb;
	u32 i, nkept;
	int ret;

	if (depth < 2 || depth > HB_MAX_DEPTH || !*export || !*mode) {
		pr_err("needs addr=, port=, export=, mode= and depth= from 2 to %d\n",
		       HB_MAX_DEPTH);
		return -EINVAL;
	}
	ret = inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, &ss);
	if (ret) {
		pr_err("bad address '%s' port '%s'\n", addr, port);
		return ret;
	}
	hb = kzalloc(sizeof(*hb), GFP_KERNEL);
	if (!hb)
		return -ENOMEM;
	init_completion(&hb->ended);
	init_completion(&hb->got);
	spin_lock_init(&hb->lock);
	opts.priv = hb;
	opts.queue_depth = depth;
	opts.max_msg_size = KRDMA_BLK_MSG_MAX;
	hb->conn = krdma_connect((struct sockaddr *)&ss, NULL, &opts);
	if (IS_ERR(hb->conn)) {
		ret = PTR_ERR(hb->conn);
		pr_err("connect: %d\n", ret);
		goto free;
	}
	if (krdma_queue_depth(hb->conn) != depth) {
		pr_err("queue depth %u, asked for %u\n",
		       krdma_queue_depth(hb->conn), depth);
		ret = -EPROTO;
	} else {
		ret = hb_run(hb);
	}
	/* Nothing is kept from here on; give back what was. */
	spin_lock_bh(&hb->lock);
	hb->keep = false;
	nkept = hb->nkept;
	spin_unlock_bh(&hb->lock);
	for (i = 0; i < nkept; i++)
		krdma_msg_release(hb->conn, hb->kept[i]);
	krdma_close(hb->conn);
	if (ret)
		pr_err("%s: %d\n", mode, ret);
free:
	kfree(hb);
	return ret;
}
module_init(hb_init);

/* Everything was done, and undone, in hb_init(). */
static void __exit hb_exit(void)
{
}
module_exit(hb_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("krdma-blk: a client that breaks the protocol (tests only)");
