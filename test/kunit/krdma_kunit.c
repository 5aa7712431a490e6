// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests of krdma's pure logic, no RDMA device needed:
 *   krdma_cmd    the control-file command parser (krdma_cmd.c)
 *   krdma_proto  handshake, reject and message header codecs, test pattern
 *                (krdma_proto.c, krdma_pattern.c)
 *   krdma_plan   splitting a transfer into rdma_rw chunks (krdma_plan.c)
 *   krdma_credit flow-control credit rules, and a simulation of two
 *                endpoints exchanging messages (krdma_credit.h)
 *   krdma_state  the connection state machine, every (state, event) pair
 *                (krdma_state.h)
 *   krdma_token  one-sided access ranges, atomic targets, registration
 *                rights and their verbs access flags (krdma_token.h)
 *   krdma_abi    /dev/krdma ioctl argument checks: reserved fields, flags,
 *                lengths, addresses, and which errno comes first
 *                (krdma_abi.c)
 *   krdma_sess   a session's connect request (id, generation, the
 *                consumer's bytes), which connect errors are retried and
 *                what an operation's error means to a session's consumer
 *                (krdma_sess.h)
 *
 * The tested files are compiled into this module (included below), so the
 * module stands alone: krdma.ko need not be loaded.  Inputs are copied into
 * buffers of their exact size, so that KASAN reports any read past them.
 */
#include <kunit/test.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/flow.h>
#include <net/ipv6.h>

#include "krdma_cmd.c"
#include "krdma_proto.c"
#include "krdma_pattern.c"
#include "krdma_plan.c"
#include "krdma_credit.h"
#include "krdma_state.h"
#include "krdma_token.h"
#include "krdma_queue.h"
#include "krdma_abi.c"
#include "krdma_sess.h"

/* ------------------------------------------------------------------ */
/* krdma_cmd: the control-file parser                                  */
/* ------------------------------------------------------------------ */

#define ERRLEN 128

struct cmd_ctx {
	struct krdma_cmd cmd;
	char err[ERRLEN];
};

/* Parse @len bytes of @s from a buffer of exactly that size. */
static int parse_n(struct kunit *test, const char *s, size_t len)
{
	struct cmd_ctx *c = test->priv;
	char *buf = kunit_kmalloc(test, len ?: 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, s, len);
	return krdma_cmd_parse(buf, len, &c->cmd, c->err, sizeof(c->err));
}

static int parse(struct kunit *test, const char *s)
{
	return parse_n(test, s, strlen(s));
}

#define CMD(test)	(&((struct cmd_ctx *)(test)->priv)->cmd)
#define ERRMSG(test)	(((struct cmd_ctx *)(test)->priv)->err)

static void expect_ok(struct kunit *test, const char *s)
{
	KUNIT_EXPECT_EQ_MSG(test, parse(test, s), 0, "'%s': %s", s, ERRMSG(test));
	KUNIT_EXPECT_STREQ(test, ERRMSG(test), "");
}

/* @s is refused with -EINVAL and the message contains @why. */
static void expect_bad(struct kunit *test, const char *s, const char *why)
{
	KUNIT_EXPECT_EQ_MSG(test, parse(test, s), -EINVAL, "'%s' was accepted", s);
	KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(ERRMSG(test), why),
				  "'%s': message '%s' lacks '%s'", s, ERRMSG(test), why);
}

static int cmd_init(struct kunit *test)
{
	test->priv = kunit_kzalloc(test, sizeof(struct cmd_ctx), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

static const struct sockaddr_in *in4(const struct sockaddr_storage *ss)
{
	return (const struct sockaddr_in *)ss;
}

static const struct sockaddr_in6 *in6(const struct sockaddr_storage *ss)
{
	return (const struct sockaddr_in6 *)ss;
}

static void cmd_listen_ok(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "listen name=l1 addr=10.1.2.3:7000\n");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_LISTEN);
	KUNIT_EXPECT_STREQ(test, cmd->name, "l1");
	KUNIT_EXPECT_EQ(test, cmd->addr.ss_family, AF_INET);
	KUNIT_EXPECT_EQ(test, ntohs(in4(&cmd->addr)->sin_port), 7000);
	KUNIT_EXPECT_EQ(test, ntohl(in4(&cmd->addr)->sin_addr.s_addr), 0x0a010203u);
	KUNIT_EXPECT_EQ(test, cmd->depth, 0u);
	KUNIT_EXPECT_EQ(test, cmd->msg, 0u);
	KUNIT_EXPECT_FALSE(test, cmd->has_src);

	expect_ok(test, "listen name=l2 addr=0.0.0.0:1 depth=32 msg=64K");
	KUNIT_EXPECT_EQ(test, cmd->depth, 32u);
	KUNIT_EXPECT_EQ(test, cmd->msg, 65536u);
	KUNIT_EXPECT_EQ(test, ntohl(in4(&cmd->addr)->sin_addr.s_addr), 0u);
	KUNIT_EXPECT_EQ(test, cmd->backlog, 0u);

	expect_ok(test, "listen name=l3 addr=10.1.2.3:7000 backlog=1024");
	KUNIT_EXPECT_EQ(test, cmd->backlog, 1024u);
	expect_ok(test, "listen name=l3 addr=10.1.2.3:7000 backlog=1");
	KUNIT_EXPECT_EQ(test, cmd->backlog, 1u);
	KUNIT_EXPECT_EQ(test, cmd->hb_ms, 0u);
	KUNIT_EXPECT_EQ(test, cmd->hb_misses, 0u);

	/* Heartbeats: an interval, off, or out of range. */
	expect_ok(test, "listen name=l4 addr=10.1.2.3:7000 hb_ms=500 hb_misses=3");
	KUNIT_EXPECT_EQ(test, cmd->hb_ms, 500u);
	KUNIT_EXPECT_EQ(test, cmd->hb_misses, 3u);
	expect_ok(test, "connect name=c4 addr=10.1.2.3:7000 hb_ms=off");
	KUNIT_EXPECT_EQ(test, cmd->hb_ms, KRDMA_HEARTBEAT_OFF);
	expect_ok(test, "connect name=c4 addr=10.1.2.3:7000 hb_ms=600000 hb_misses=100");
	KUNIT_EXPECT_EQ(test, cmd->hb_ms, 600000u);
	KUNIT_EXPECT_EQ(test, cmd->hb_misses, 100u);
	expect_bad(test, "connect name=c4 addr=1.2.3.4:5 hb_ms=99",
		   "hb_ms=99 out of range (at least 100)");
	expect_bad(test, "connect name=c4 addr=1.2.3.4:5 hb_ms=600001",
		   "hb_ms=600001 out of range (at most 600000)");
	expect_bad(test, "connect name=c4 addr=1.2.3.4:5 hb_misses=101",
		   "hb_misses=101 out of range (at most 100)");
	expect_bad(test, "connect name=c4 addr=1.2.3.4:5 hb_misses=0",
		   "hb_misses must not be 0");
	expect_bad(test, "connect name=c4 addr=1.2.3.4:5 hb_ms=0",
		   "hb_ms must not be 0");

	/* Polled connections: connect and session only, 0 or 1. */
	expect_ok(test, "connect name=c5 addr=10.1.2.3:7000 poll=1");
	KUNIT_EXPECT_EQ(test, cmd->poll, 1u);
	expect_ok(test, "connect name=c5 addr=10.1.2.3:7000 poll=0");
	KUNIT_EXPECT_EQ(test, cmd->poll, 0u);
	expect_ok(test, "session name=s5 addr=10.1.2.3:7000 poll=1");
	KUNIT_EXPECT_EQ(test, cmd->poll, 1u);
	expect_bad(test, "connect name=c5 addr=1.2.3.4:5 poll=2",
		   "poll=2 out of range (at most 1)");
	expect_bad(test, "listen name=l5 addr=1.2.3.4:5 poll=1",
		   "unknown word 'poll' for listen");

	/* Workqueue completions: listen, connect and session; not polled. */
	expect_ok(test, "listen name=l6 addr=10.1.2.3:7000 wq=1");
	KUNIT_EXPECT_EQ(test, cmd->wq, 1u);
	expect_ok(test, "connect name=c6 addr=10.1.2.3:7000 wq=1 poll=0");
	KUNIT_EXPECT_EQ(test, cmd->wq, 1u);
	KUNIT_EXPECT_EQ(test, cmd->poll, 0u);
	expect_ok(test, "session name=s6 addr=10.1.2.3:7000 wq=0");
	KUNIT_EXPECT_EQ(test, cmd->wq, 0u);
	expect_bad(test, "connect name=c6 addr=1.2.3.4:5 wq=2",
		   "wq=2 out of range (at most 1)");
	expect_bad(test, "connect name=c6 addr=1.2.3.4:5 poll=1 wq=1",
		   "poll=1 and wq=1 together");
	expect_bad(test, "test name=c6 wq=1", "unknown word 'wq' for test");

	/* Completion vectors: listen, connect and session; 0..1023 or any. */
	expect_ok(test, "connect name=c7 addr=10.1.2.3:7000 vector=0");
	KUNIT_EXPECT_EQ(test, cmd->vector, KRDMA_COMP_VECTOR(0));
	expect_ok(test, "listen name=l7 addr=10.1.2.3:7000 vector=1023");
	KUNIT_EXPECT_EQ(test, cmd->vector, KRDMA_COMP_VECTOR(1023));
	expect_ok(test, "session name=s7 addr=10.1.2.3:7000 vector=any");
	KUNIT_EXPECT_EQ(test, cmd->vector, (u32)KRDMA_COMP_VECTOR_ANY);
	expect_ok(test, "connect name=c7 addr=10.1.2.3:7000");
	KUNIT_EXPECT_EQ(test, cmd->vector, (u32)KRDMA_COMP_VECTOR_ANY);
	expect_bad(test, "connect name=c7 addr=1.2.3.4:5 vector=1024",
		   "vector=1024 out of range (at most 1023)");
	expect_bad(test, "connect name=c7 addr=1.2.3.4:5 vector=4294967295",
		   "vector=4294967295 out of range (at most 1023)");
	expect_bad(test, "connect name=c7 addr=1.2.3.4:5 vector=some",
		   "bad number 'vector=some'");
	expect_bad(test, "test name=c7 vector=1", "unknown word 'vector' for test");
	expect_bad(test, "test name=c4 hb_ms=500", "unknown word 'hb_ms'");
}

static void cmd_unlisten_disconnect_ok(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "unlisten name=l1");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_UNLISTEN);
	KUNIT_EXPECT_STREQ(test, cmd->name, "l1");
	expect_ok(test, "disconnect name=l1.0\n");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_DISCONNECT);
	KUNIT_EXPECT_STREQ(test, cmd->name, "l1.0");
	/* Only name= belongs to these verbs. */
	expect_bad(test, "unlisten name=l1 addr=1.2.3.4:5", "unknown word 'addr'");
	expect_bad(test, "disconnect name=c1 depth=3", "unknown word 'depth'");
	expect_bad(test, "disconnect", "disconnect needs name=");
	expect_bad(test, "unlisten", "unlisten needs name=");
	/*
	 * A 31-character listener's accepted connections (NAME.<n>) can be
	 * named; a new listener or connection is 1-31 characters.
	 */
	expect_ok(test, "listen name=L123456789012345678901234567890 addr=0.0.0.0:1");
	expect_ok(test, "disconnect name=L123456789012345678901234567890.4294967295");
	expect_ok(test, "test name=L123456789012345678901234567890.12 op=send");
	expect_bad(test, "listen name=L1234567890123456789012345678901 addr=0.0.0.0:1",
		   "too long for listen");
	expect_bad(test, "connect name=C1234567890123456789012345678901 addr=1.2.3.4:5",
		   "too long for connect");
}

static void cmd_connect_all_keys(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "connect name=c1 addr=192.0.2.1:7 src=192.0.2.9 depth=1024 msg=1M");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_CONNECT);
	KUNIT_EXPECT_EQ(test, ntohl(in4(&cmd->addr)->sin_addr.s_addr), 0xc0000201u);
	KUNIT_EXPECT_EQ(test, ntohs(in4(&cmd->addr)->sin_port), 7);
	KUNIT_EXPECT_TRUE(test, cmd->has_src);
	KUNIT_EXPECT_EQ(test, cmd->src.ss_family, AF_INET);
	KUNIT_EXPECT_EQ(test, ntohl(in4(&cmd->src)->sin_addr.s_addr), 0xc0000209u);
	KUNIT_EXPECT_EQ(test, cmd->depth, 1024u);
	KUNIT_EXPECT_EQ(test, cmd->msg, 1024u * 1024);
	expect_ok(test, "connect name=c1 addr=192.0.2.1:7 timeout_ms=600000 tos=255 hello=4");
	KUNIT_EXPECT_EQ(test, cmd->timeout_ms, 600000u);
	KUNIT_EXPECT_EQ(test, cmd->tos, 255u);
	KUNIT_EXPECT_EQ(test, cmd->hello, 4u);
	/* Listener-only and test-only words are not connect's. */
	expect_bad(test, "connect name=c1 addr=1.2.3.4:5 size=1", "unknown word 'size'");
	expect_bad(test, "listen name=l1 addr=1.2.3.4:5 src=1.2.3.4", "unknown word 'src'");
	expect_bad(test, "listen name=l1 addr=1.2.3.4:5 hello=1", "unknown word 'hello'");
	expect_bad(test, "connect name=c1 addr=1.2.3.4:5 backlog=4", "unknown word 'backlog'");
	expect_bad(test, "listen name=l1 addr=1.2.3.4:5 backlog=1025",
		   "backlog=1025 out of range (at most 1024)");
	expect_bad(test, "listen name=l1 addr=1.2.3.4:5 backlog=0", "backlog must not be 0");
}

/* A session: connect's words and the two of reconnecting. */
static void cmd_session(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "session name=s1 addr=192.0.2.1:7 src=192.0.2.9 depth=64 hb_ms=500");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_SESSION);
	KUNIT_EXPECT_STREQ(test, cmd->name, "s1");
	KUNIT_EXPECT_EQ(test, ntohs(in4(&cmd->addr)->sin_port), 7);
	KUNIT_EXPECT_TRUE(test, cmd->has_src);
	KUNIT_EXPECT_EQ(test, cmd->depth, 64u);
	KUNIT_EXPECT_EQ(test, cmd->hb_ms, 500u);
	expect_ok(test, "session name=s1 addr=192.0.2.1:7 reconnect_delay_ms=250 loss_tmo_ms=3000");
	KUNIT_EXPECT_EQ(test, cmd->delay_ms, 250u);
	KUNIT_EXPECT_EQ(test, cmd->loss_tmo_ms, 3000u);
	expect_ok(test, "session name=s1 addr=192.0.2.1:7 loss_tmo_ms=never");
	KUNIT_EXPECT_EQ(test, cmd->loss_tmo_ms, KRDMA_SESSION_LOSS_TMO_NEVER);
	KUNIT_EXPECT_EQ(test, cmd->delay_ms, 0u);	/* the default */
	KUNIT_EXPECT_EQ(test, cmd->conns, 0u);		/* one */
	expect_ok(test, "session name=s1 addr=192.0.2.1:7 conns=64");
	KUNIT_EXPECT_EQ(test, cmd->conns, 64u);
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 conns=65",
		   "conns=65 out of range (at most 64)");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 conns=0",
		   "conns must not be 0");
	expect_bad(test, "connect name=c1 addr=192.0.2.1:7 conns=2",
		   "unknown word 'conns'");
	expect_ok(test, "unsession name=s1");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_UNSESSION);
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 reconnect_delay_ms=99",
		   "reconnect_delay_ms=99 out of range (at least 100)");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 reconnect_delay_ms=3600001",
		   "reconnect_delay_ms=3600001 out of range (at most 3600000)");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 loss_tmo_ms=0",
		   "loss_tmo_ms must not be 0");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 loss_tmo_ms=4294967295",
		   "loss_tmo_ms=4294967295 out of range (at most 4294967294)");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 loss_tmo_ms=forever",
		   "bad number 'loss_tmo_ms=forever'");
	expect_bad(test, "session name=s1 addr=192.0.2.1", "session needs a port in addr=");
	expect_bad(test, "session addr=192.0.2.1:7", "session needs name=");
	expect_bad(test, "session name=s1 addr=192.0.2.1:7 hello=1", "unknown word 'hello'");
	expect_bad(test, "connect name=c1 addr=192.0.2.1:7 loss_tmo_ms=1",
		   "unknown word 'loss_tmo_ms'");
	expect_bad(test, "unsession name=s1 addr=192.0.2.1:7", "unknown word 'addr'");
	expect_bad(test, "session name=abcdefghijabcdefghijabcdefghij123 addr=192.0.2.1:7",
		   "is too long for session");
}

/* Every parse starts from a zeroed command: nothing leaks from the last one. */
static void cmd_no_leftovers(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "connect name=c1 addr=1.2.3.4:5 src=1.2.3.5 depth=9 tos=3");
	expect_ok(test, "connect name=c2 addr=1.2.3.4:5");
	KUNIT_EXPECT_FALSE(test, cmd->has_src);
	KUNIT_EXPECT_EQ(test, cmd->src.ss_family, 0);
	KUNIT_EXPECT_EQ(test, cmd->depth, 0u);
	KUNIT_EXPECT_EQ(test, cmd->tos, 0u);
	/* A failed parse leaves no half-filled command that looks valid. */
	expect_bad(test, "connect name=c3 addr=1.2.3.4:5 depth=x", "bad number");
	expect_ok(test, "unlisten name=u");
	KUNIT_EXPECT_EQ(test, cmd->addr.ss_family, 0);
}

static void cmd_test_defaults(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "test name=c1");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_TEST);
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_ALL);
	KUNIT_EXPECT_EQ(test, cmd->test_ops & KRDMA_TEST_ATOMIC, 0u);
	KUNIT_EXPECT_EQ(test, cmd->size, 4096u);
	KUNIT_EXPECT_EQ(test, cmd->count, 1u);
	KUNIT_EXPECT_EQ(test, cmd->sge, 1u);
	/* 0: the self-test's own default for each wait (30 s). */
	KUNIT_EXPECT_EQ(test, cmd->timeout_ms, 0u);

	expect_ok(test, "test name=c1 op=write size=1 count=1000000 sge=1");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_WRITE);
	KUNIT_EXPECT_EQ(test, cmd->size, 1u);
	KUNIT_EXPECT_EQ(test, cmd->count, 1000000u);

	expect_ok(test, "test name=c1 timeout_ms=2000");
	KUNIT_EXPECT_EQ(test, cmd->timeout_ms, 2000u);
	expect_ok(test, "test name=c1 timeout_ms=600000");
	KUNIT_EXPECT_EQ(test, cmd->timeout_ms, 600000u);
	expect_bad(test, "test name=c1 timeout_ms=0", "timeout_ms must not be 0");
	expect_bad(test, "test name=c1 timeout_ms=600001", "out of range");
	expect_bad(test, "test name=c1 timeout_ms=5s", "bad number");
}

static void cmd_test_ops(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "test name=c op=send,read");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)(KRDMA_TEST_SEND | KRDMA_TEST_READ));
	expect_ok(test, "test name=c op=atomic");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_ATOMIC);
	expect_ok(test, "test name=c op=all");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_ALL);
	expect_ok(test, "test name=c op=send,write,read,atomic");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)(KRDMA_TEST_ALL | KRDMA_TEST_ATOMIC));

	expect_bad(test, "test name=c op=frob", "bad op 'frob'");
	expect_bad(test, "test name=c op=send,frob", "bad op");
	expect_bad(test, "test name=c op=send,,write", "bad op");
	expect_bad(test, "test name=c op=send,", "bad op");
	expect_bad(test, "test name=c op=,", "bad op");
	expect_bad(test, "test name=c op=SEND", "bad op");
	expect_bad(test, "test name=c op=all,send", "bad op");
	expect_bad(test, "test name=c op=", "'op=' needs a value");
}

static void cmd_test_size_sge_rules(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "test name=c op=send size=0");
	KUNIT_EXPECT_EQ(test, cmd->size, 0u);
	expect_bad(test, "test name=c size=0", "size=0 works only with op=send");
	expect_bad(test, "test name=c op=write size=0", "size=0 works only with op=send");
	expect_bad(test, "test name=c op=send,read size=0", "size=0 works only");

	expect_ok(test, "test name=c size=4 sge=4");
	KUNIT_EXPECT_EQ(test, cmd->sge, 4u);
	expect_bad(test, "test name=c size=3 sge=4", "sge=4 needs size of at least 4");
	expect_ok(test, "test name=c size=64 sge=64");
	expect_bad(test, "test name=c sge=65", "sge=65 out of range");
	expect_bad(test, "test name=c sge=0", "sge must not be 0");
	expect_bad(test, "test name=c count=0", "count must not be 0");
	expect_bad(test, "test name=c count=1000001", "out of range");
	expect_ok(test, "test name=c size=64M");
	KUNIT_EXPECT_EQ(test, cmd->size, 64u << 20);
	expect_ok(test, "test name=c size=65536K");
	expect_bad(test, "test name=c size=65537K", "size=67109888 out of range");
	expect_bad(test, "test name=c size=67108865", "out of range");
}

static void cmd_bench_ok(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "bench name=c op=write size=4K");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_BENCH);
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_WRITE);
	KUNIT_EXPECT_EQ(test, cmd->size, 4096u);
	/* Neither count= nor secs=: a counted run of 1000. */
	KUNIT_EXPECT_EQ(test, cmd->count, 1000u);
	KUNIT_EXPECT_EQ(test, cmd->secs, 0u);
	KUNIT_EXPECT_EQ(test, cmd->depth, 0u);
	/* No batch=: one operation per post. */
	KUNIT_EXPECT_EQ(test, cmd->batch, 1u);

	expect_ok(test, "bench name=c op=send size=0 secs=5 depth=8");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_SEND);
	KUNIT_EXPECT_EQ(test, cmd->size, 0u);
	KUNIT_EXPECT_EQ(test, cmd->secs, 5u);
	KUNIT_EXPECT_EQ(test, cmd->count, 0u);
	KUNIT_EXPECT_EQ(test, cmd->depth, 8u);

	/* A bench may count far beyond a self-test. */
	expect_ok(test, "bench name=c op=read size=1M count=1000000000");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_READ);
	KUNIT_EXPECT_EQ(test, cmd->count, 1000000000u);
	expect_ok(test, "bench name=c op=read size=1M secs=3600");
	KUNIT_EXPECT_EQ(test, cmd->secs, 3600u);

	expect_ok(test, "bench name=c op=write size=64 depth=32 batch=32");
	KUNIT_EXPECT_EQ(test, cmd->batch, 32u);
	/* Without depth= the connection's depth bounds it, at run time. */
	expect_ok(test, "bench name=c op=read size=64 batch=1024");
	KUNIT_EXPECT_EQ(test, cmd->batch, 1024u);
	/* No sge=: the plain path (0), no stride. */
	KUNIT_EXPECT_EQ(test, cmd->sge, 0u);
	KUNIT_EXPECT_EQ(test, cmd->stride, 0u);

	/* The atomics (issue #20's matrix): 8 bytes, one kind per bench. */
	expect_ok(test, "bench name=c op=fadd size=8 secs=2 depth=16");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_FADD);
	KUNIT_EXPECT_EQ(test, cmd->size, 8u);
	KUNIT_EXPECT_EQ(test, cmd->batch, 1u);
	expect_ok(test, "bench name=c op=cas size=8");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_CAS);
	KUNIT_EXPECT_EQ(test, cmd->count, 1000u);

	/* Write-with-immediate: a WRITE and its notice, or the notice alone. */
	expect_ok(test, "bench name=c op=imm size=4K secs=2");
	KUNIT_EXPECT_EQ(test, cmd->test_ops, (u32)KRDMA_TEST_IMM);
	KUNIT_EXPECT_EQ(test, cmd->size, 4096u);
	expect_ok(test, "bench name=c op=imm size=0 depth=1 count=50");
	KUNIT_EXPECT_EQ(test, cmd->size, 0u);
	KUNIT_EXPECT_EQ(test, cmd->count, 50u);
}

/* The scatter-gather experiment's words (issue #20). */
static void cmd_bench_sge(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "bench name=c op=send size=64 sge=8");
	KUNIT_EXPECT_EQ(test, cmd->sge, 8u);
	KUNIT_EXPECT_EQ(test, cmd->stride, 64u);	/* blocks side by side */
	KUNIT_EXPECT_EQ(test, cmd->pack, 0u);
	expect_ok(test, "bench name=c op=write size=1K sge=16 stride=4K pack=1");
	KUNIT_EXPECT_EQ(test, cmd->sge, 16u);
	KUNIT_EXPECT_EQ(test, cmd->stride, 4096u);
	KUNIT_EXPECT_EQ(test, cmd->pack, 1u);
	expect_ok(test, "bench name=c op=write size=4K sge=1 pack=0");
	KUNIT_EXPECT_EQ(test, cmd->sge, 1u);
	KUNIT_EXPECT_EQ(test, cmd->pack, 0u);
	/* The span at its limit: 3 * 1M + 1M = 4 MiB. */
	expect_ok(test, "bench name=c op=write size=1M sge=4");
	expect_bad(test, "bench name=c op=write size=1M sge=4 stride=1052672",
		   "span 4206592 bytes (at most 4194304)");
	expect_bad(test, "bench name=c op=read size=64 sge=2",
		   "sge= works with op=send and op=write");
	expect_bad(test, "bench name=c op=write size=64 sge=2 batch=2",
		   "sge= and batch= together");
	expect_bad(test, "bench name=c op=send size=0 sge=2",
		   "sge= needs size= of at least 1");
	expect_bad(test, "bench name=c op=send size=64 sge=2 stride=63",
		   "stride=63 is less than size=64");
	expect_bad(test, "bench name=c op=send size=64 stride=128",
		   "stride= and pack= go with sge=");
	expect_bad(test, "bench name=c op=send size=64 pack=1",
		   "stride= and pack= go with sge=");
	expect_bad(test, "bench name=c op=send size=64 sge=2 pack=2",
		   "pack=2 out of range");
	expect_bad(test, "bench name=c op=send size=64 sge=65", "sge=65 out of range");
	expect_bad(test, "test name=c sge=2 pack=1", "unknown word 'pack' for test");
	expect_bad(test, "test name=c sge=2 stride=8", "unknown word 'stride' for test");
}

static void cmd_bench_bad(struct kunit *test)
{
	expect_bad(test, "bench name=c size=4K", "bench needs op=");
	expect_bad(test, "bench name=c op=write", "bench needs size=");
	expect_bad(test, "bench op=write size=4K", "bench needs name=");
	expect_bad(test, "bench name=c op=write,read size=4K", "bench takes one op");
	expect_bad(test, "bench name=c op=atomic size=8", "bench takes one op");
	expect_bad(test, "bench name=c op=all size=8", "bench takes one op");
	expect_bad(test, "bench name=c op=fadd,cas size=8", "bench takes one op");
	expect_bad(test, "bench name=c op=fadd size=16",
		   "op=fadd and op=cas work on 8 bytes, not size=16");
	expect_bad(test, "bench name=c op=cas size=0",
		   "op=fadd and op=cas work on 8 bytes, not size=0");
	expect_bad(test, "bench name=c op=fadd size=8 batch=2",
		   "take neither batch= nor sge=");
	expect_bad(test, "bench name=c op=cas size=8 sge=2",
		   "take neither batch= nor sge=");
	expect_bad(test, "test name=c op=fadd", "op=fadd and op=cas are bench's");
	expect_bad(test, "test name=c op=send,cas", "op=fadd and op=cas are bench's");
	expect_bad(test, "bench name=c op=write size=4K count=5 secs=1", "not both");
	expect_bad(test, "bench name=c op=read size=0",
		   "size=0 works only with op=send and op=imm");
	expect_bad(test, "bench name=c op=imm,write size=64", "bench takes one op");
	expect_bad(test, "bench name=c op=imm size=64 sge=2",
		   "sge= works with op=send and op=write");
	expect_bad(test, "bench name=c op=send size=64 count=1000000001", "out of range");
	expect_bad(test, "bench name=c op=send size=64 secs=3601", "out of range");
	expect_bad(test, "bench name=c op=send size=64 secs=0", "secs must not be 0");
	expect_bad(test, "bench name=c op=send size=64 depth=0", "depth must not be 0");
	expect_bad(test, "bench name=c op=write size=64 batch=0", "batch must not be 0");
	expect_bad(test, "bench name=c op=write size=64 batch=1025", "out of range");
	expect_bad(test, "bench name=c op=write size=64 depth=8 batch=9",
		   "batch=9 is more than depth=8");
	expect_bad(test, "test name=c batch=2", "unknown word 'batch' for test");
	/* The self-test's larger count is a bench's only, not the reverse. */
	expect_bad(test, "test name=c count=1000001", "out of range");
	expect_bad(test, "test name=c secs=1", "unknown word 'secs' for test");
}

static void cmd_unknown_verb(struct kunit *test)
{
	expect_bad(test, "frobnicate name=x", "unknown command 'frobnicate'");
	expect_bad(test, "LISTEN name=x addr=1.2.3.4:5", "unknown command 'LISTEN'");
	expect_bad(test, "listen2 name=x addr=1.2.3.4:5", "unknown command");
	expect_bad(test, "liste name=x addr=1.2.3.4:5", "unknown command");
	expect_bad(test, "name=x listen", "unknown command 'name=x'");
	expect_bad(test, "", "empty command");
	expect_bad(test, "\n", "empty command");
	expect_bad(test, "   \t ", "empty command");
	KUNIT_EXPECT_EQ(test, parse_n(test, "", 0), -EINVAL);
}

static void cmd_unknown_word(struct kunit *test)
{
	expect_bad(test, "listen name=x addr=1.2.3.4:5 colour=red",
		   "unknown word 'colour' for listen");
	expect_bad(test, "test name=c1 NAME=c2", "unknown word 'NAME'");
	expect_bad(test, "test name=c1 =x", "unknown word ''");
	expect_bad(test, "test name=c1 sizes=4", "unknown word 'sizes'");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth", "'depth' is not key=value");
	expect_bad(test, "listen name=x addr", "'addr' is not key=value");
	expect_bad(test, "listen name=x addr=", "'addr=' needs a value");
	expect_bad(test, "listen name= addr=1.2.3.4:5", "'name=' needs a value");
}

static void cmd_duplicate_key(struct kunit *test)
{
	expect_bad(test, "listen name=x name=y addr=1.2.3.4:5", "'name' given twice");
	/* The same value twice is still a mistake. */
	expect_bad(test, "listen name=x addr=1.2.3.4:5 addr=1.2.3.4:5", "'addr' given twice");
	expect_bad(test, "connect name=x addr=1.2.3.4:5 depth=4 depth=4", "'depth' given twice");
	expect_bad(test, "test name=c op=send op=read", "'op' given twice");
	/* Even when the first value was empty (refused) or the second is bad. */
	expect_bad(test, "test name=c count=1 count=", "'count' given twice");
}

static void cmd_missing_required(struct kunit *test)
{
	expect_bad(test, "listen name=x", "listen needs addr=");
	expect_bad(test, "listen addr=1.2.3.4:5", "listen needs name=");
	expect_bad(test, "connect addr=1.2.3.4:5", "connect needs name=");
	expect_bad(test, "connect name=c", "connect needs addr=");
	expect_bad(test, "test op=send", "test needs name=");
	expect_bad(test, "listen", "listen needs name=");
}

static void cmd_bad_numbers(struct kunit *test)
{
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth=lots", "bad number 'depth=lots'");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth=-1", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth=1.5", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth=0x10", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 depth=1e3", "bad number");
	/* Longer than any u32, also with leading zeros. */
	expect_bad(test, "test name=c count=000000000000000001", "bad number");
	expect_bad(test, "test name=c count=4294967296", "bad number");
	expect_bad(test, "test name=c count=99999999999", "bad number");
}

static void cmd_whitespace(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "listen name=x addr=1.2.3.4:5 depth=16 ");
	KUNIT_EXPECT_EQ(test, cmd->depth, 16u);
	expect_ok(test, "  \tlisten \t name=x\taddr=1.2.3.4:5 \t");
	KUNIT_EXPECT_EQ(test, cmd->op, KRDMA_CMD_LISTEN);
	KUNIT_EXPECT_STREQ(test, cmd->name, "x");
	/* One trailing newline is the echo's; a second is a stray control byte. */
	expect_bad(test, "unlisten name=x\n\n", "non-printable byte 0x0a");
	expect_bad(test, "unlisten name=x\r\n", "non-printable byte 0x0d");
	expect_bad(test, "unlisten\vname=x", "non-printable byte 0x0b");
}

static void cmd_size_suffixes(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "listen name=x addr=1.2.3.4:5 msg=4K");
	KUNIT_EXPECT_EQ(test, cmd->msg, 4096u);
	expect_ok(test, "listen name=x addr=1.2.3.4:5 msg=4k");
	KUNIT_EXPECT_EQ(test, cmd->msg, 4096u);
	expect_ok(test, "listen name=x addr=1.2.3.4:5 msg=1M");
	KUNIT_EXPECT_EQ(test, cmd->msg, 1048576u);
	expect_ok(test, "listen name=x addr=1.2.3.4:5 msg=1m");
	KUNIT_EXPECT_EQ(test, cmd->msg, 1048576u);
	expect_ok(test, "listen name=x addr=1.2.3.4:5 msg=1024K");
	KUNIT_EXPECT_EQ(test, cmd->msg, 1048576u);
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=1025K", "msg=1049600 out of range");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=2M", "out of range");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=K", "bad number 'msg=K'");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=M", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=1KK", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=1MK", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=1G", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=1KB", "bad number");
	expect_bad(test, "listen name=x addr=1.2.3.4:5 msg=0K", "msg must not be 0");
	/* The multiplication must not wrap: 4194304K and 4096M are 2^32. */
	expect_bad(test, "test name=c size=4194304K", "bad number");
	expect_bad(test, "test name=c size=4096M", "bad number");
	expect_bad(test, "test name=c count=4294967295M", "bad number");
	/* Just below the wrap it is a number, and too big. */
	expect_bad(test, "test name=c size=4194303K", "out of range");
}

static void cmd_number_limits(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "connect name=c addr=1.2.3.4:5 depth=1");
	KUNIT_EXPECT_EQ(test, cmd->depth, 1u);
	expect_bad(test, "connect name=c addr=1.2.3.4:5 depth=1025",
		   "depth=1025 out of range (at most 1024)");
	expect_bad(test, "connect name=c addr=1.2.3.4:5 depth=0", "depth must not be 0");
	expect_bad(test, "connect name=c addr=1.2.3.4:5 msg=0", "msg must not be 0");
	expect_bad(test, "connect name=c addr=1.2.3.4:5 timeout_ms=0", "timeout_ms must not be 0");
	expect_bad(test, "connect name=c addr=1.2.3.4:5 timeout_ms=600001", "out of range");
	expect_ok(test, "connect name=c addr=1.2.3.4:5 tos=0 hello=0");
	KUNIT_EXPECT_EQ(test, cmd->tos, 0u);
	KUNIT_EXPECT_EQ(test, cmd->hello, 0u);
	expect_bad(test, "connect name=c addr=1.2.3.4:5 tos=256", "tos=256 out of range");
	expect_bad(test, "connect name=c addr=1.2.3.4:5 hello=5", "hello=5 out of range");
}

static void addr_ok(struct kunit *test, const char *s, int family, u16 port)
{
	struct sockaddr_storage ss;
	size_t len = strlen(s);
	char *buf = kunit_kmalloc(test, len + 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, s, len + 1);
	memset(&ss, 0xa5, sizeof(ss));
	KUNIT_ASSERT_EQ_MSG(test, krdma_parse_addr(buf, &ss), 0, "'%s' refused", s);
	KUNIT_EXPECT_EQ_MSG(test, ss.ss_family, family, "'%s'", s);
	KUNIT_EXPECT_EQ_MSG(test, ntohs(in4(&ss)->sin_port), port, "'%s'", s);
}

static void addr_bad(struct kunit *test, const char *s)
{
	struct sockaddr_storage ss;
	size_t len = strlen(s);
	char *buf = kunit_kmalloc(test, len + 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, s, len + 1);
	KUNIT_EXPECT_EQ_MSG(test, krdma_parse_addr(buf, &ss), -EINVAL, "'%s' accepted", s);
}

static void cmd_addr_ipv4(struct kunit *test)
{
	struct sockaddr_storage ss;

	addr_ok(test, "1.2.3.4:7", AF_INET, 7);
	addr_ok(test, "1.2.3.4", AF_INET, 0);
	addr_ok(test, "255.255.255.255:65535", AF_INET, 65535);
	addr_ok(test, "0.0.0.0:1", AF_INET, 1);
	KUNIT_ASSERT_EQ(test, krdma_parse_addr("10.20.30.40:8080", &ss), 0);
	KUNIT_EXPECT_EQ(test, ntohl(in4(&ss)->sin_addr.s_addr), 0x0a141e28u);
	/* Nothing but the address may be left in the sockaddr. */
	KUNIT_EXPECT_TRUE(test, !memchr_inv(in4(&ss)->sin_zero, 0, sizeof(in4(&ss)->sin_zero)));

	addr_bad(test, "");
	addr_bad(test, ":7");
	addr_bad(test, "1.2.3:77");
	addr_bad(test, "300.1.1.1:7");
	addr_bad(test, "1.2.3.4.5:7");
	addr_bad(test, "1.2.3.4:");
	addr_bad(test, "1.2.3.4:65536");
	addr_bad(test, "1.2.3.4:-1");
	addr_bad(test, "1.2.3.4:0x10");
	addr_bad(test, "1.2.3.4:7x");
	addr_bad(test, "1.2.3.4x:7");
	addr_bad(test, "a.b.c.d:7");
	addr_bad(test, "localhost:7");
	addr_bad(test, "1.2.3.4:5:6");
}

static void cmd_addr_ipv6(struct kunit *test)
{
	struct sockaddr_storage ss;
	static const u8 db8[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 0x01 };

	addr_ok(test, "[::1]:7000", AF_INET6, 7000);
	addr_ok(test, "[::1]", AF_INET6, 0);
	addr_ok(test, "[::]:1", AF_INET6, 1);
	addr_ok(test, "[::ffff:1.2.3.4]:9", AF_INET6, 9);
	addr_ok(test, "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535", AF_INET6, 65535);
	KUNIT_ASSERT_EQ(test, krdma_parse_addr("[::1]:1", &ss), 0);
	KUNIT_EXPECT_TRUE(test, ipv6_addr_loopback(&in6(&ss)->sin6_addr));
	KUNIT_ASSERT_EQ(test, krdma_parse_addr("[2001:db8::1]:443", &ss), 0);
	KUNIT_EXPECT_MEMEQ(test, in6(&ss)->sin6_addr.s6_addr, db8, 16);
	KUNIT_EXPECT_TRUE(test, !in6(&ss)->sin6_flowinfo);
	KUNIT_EXPECT_EQ(test, in6(&ss)->sin6_scope_id, 0u);

	/* A link-local address's scope, by interface name or index. */
	addr_ok(test, "[fe80::1%lo]:7000", AF_INET6, 7000);
	KUNIT_ASSERT_EQ(test, krdma_parse_addr("[fe80::1%lo]:7000", &ss), 0);
	KUNIT_EXPECT_EQ(test, in6(&ss)->sin6_scope_id, (u32)LOOPBACK_IFINDEX);
	KUNIT_ASSERT_EQ(test, krdma_parse_addr("[fe80::abcd%42]", &ss), 0);
	KUNIT_EXPECT_EQ(test, in6(&ss)->sin6_scope_id, 42u);
	addr_bad(test, "[fe80::1%nosuchif0]:7");
	addr_bad(test, "[fe80::1%]:7");
	addr_bad(test, "[2001:db8::1%lo]:7");	/* a scope only on link-local */
	addr_bad(test, "[::1%1]:7");
	addr_bad(test, "1.2.3.4%lo:7");
	addr_bad(test, "::1:7000");	/* bare IPv6 needs brackets */
	addr_bad(test, "::1");
	addr_bad(test, "2001:db8::1");
	addr_bad(test, "[::1");
	addr_bad(test, "[::1]7000");
	addr_bad(test, "[::1]:");
	addr_bad(test, "[::1]:70000");
	addr_bad(test, "[]:7");
	addr_bad(test, "[]");
	addr_bad(test, "[::g]:7");
	addr_bad(test, "[1:2:3:4:5:6:7:8:9]:7");
	addr_bad(test, "[::1]]:7");
	/* Longer than any IPv6 address: must not overflow the host buffer. */
	addr_bad(test, "[0000:0000:0000:0000:0000:0000:0000:0000:0000:0000]:7");
	addr_bad(test, "0000000000000000000000000000000000000000000000000000000.1:7");
}

static void cmd_port_required(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_bad(test, "connect name=c addr=1.2.3.4", "connect needs a port in addr=");
	expect_bad(test, "connect name=c addr=1.2.3.4:0", "connect needs a port");
	expect_bad(test, "connect name=c addr=[::1]", "connect needs a port");
	expect_bad(test, "listen name=l addr=1.2.3.4", "listen needs a port in addr=");
	expect_bad(test, "listen name=l addr=[::]:0", "listen needs a port");
	expect_ok(test, "connect name=c addr=[fe80::1]:7471");
	KUNIT_EXPECT_EQ(test, cmd->addr.ss_family, AF_INET6);
	KUNIT_EXPECT_EQ(test, ntohs(in6(&cmd->addr)->sin6_port), 7471);
	expect_bad(test, "connect name=c addr=1.2.3.4:7 src=[::1]",
		   "src= and addr= are of different families");
	expect_bad(test, "connect name=c addr=[::1]:7 src=1.2.3.4", "different families");
	expect_ok(test, "connect name=c addr=[::1]:7 src=[::1]");
	KUNIT_EXPECT_EQ(test, cmd->src.ss_family, AF_INET6);
	expect_bad(test, "connect name=c addr=1.2.3.4:7 src=1.2.3", "bad source address '1.2.3'");
	expect_bad(test, "connect name=c addr=1.2.3:7", "bad address '1.2.3:7'");
}

static void cmd_name_charset(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);

	expect_ok(test, "unlisten name=Az09_-.x");
	KUNIT_EXPECT_STREQ(test, cmd->name, "Az09_-.x");
	/* 47 characters fit, 48 do not (KRDMA_NAME_MAX with its NUL). */
	expect_ok(test, "unlisten name=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJK");
	KUNIT_EXPECT_EQ(test, strlen(cmd->name), (size_t)KRDMA_NAME_MAX - 1);
	expect_bad(test, "unlisten name=abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKL",
		   "bad name");
	expect_bad(test, "unlisten name=a/b", "bad name 'a/b'");
	expect_bad(test, "unlisten name=a:b", "bad name");
	expect_bad(test, "unlisten name=a=b", "bad name");
	expect_bad(test, "unlisten name=a,b", "bad name");
	expect_bad(test, "unlisten name=a*", "bad name");
	expect_bad(test, "unlisten name=a b", "'b' is not key=value");
	/* Names become sysfs directories: "." and ".." would shadow real ones. */
	expect_bad(test, "unlisten name=.", "bad name");
	expect_bad(test, "unlisten name=..", "bad name");
	expect_ok(test, "unlisten name=...");
}

/* The charset is ASCII: the kernel's isalnum() says Latin-1 letters are letters. */
static void cmd_name_ascii_only(struct kunit *test)
{
	expect_bad(test, "unlisten name=caf\xe9", "byte 0xe9 at 17");
	expect_bad(test, "unlisten name=\xc0\xff", "byte 0xc0 at 14");
	expect_bad(test, "unlisten name=x\xaa", "byte 0xaa at 15");
	expect_bad(test, "connect name=\xc9t\xe9 addr=1.2.3.4:5", "byte 0xc9");
}

static void cmd_non_printable(struct kunit *test)
{
	expect_bad(test, "unlisten name=x\x01", "non-printable byte 0x01 at 15");
	expect_bad(test, "\x1b[0munlisten name=x", "non-printable byte 0x1b at 0");
	expect_bad(test, "unlisten name=x\x7f", "non-printable byte 0x7f");
	expect_bad(test, "unlisten name=x\x80", "non-printable byte 0x80");
	/* Bytes above 0x7f are not printable ASCII, whatever Latin-1 says. */
	expect_bad(test, "unlisten name=x \xa0", "non-printable byte 0xa0");
	expect_bad(test, "test name=c size=1\xb5", "non-printable byte 0xb5");
	/* An embedded NUL is a byte like any other. */
	KUNIT_EXPECT_EQ(test, parse_n(test, "unlisten name=x\0y", 17), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, strstr(ERRMSG(test), "non-printable byte 0x00 at 15"));
	KUNIT_EXPECT_EQ(test, parse_n(test, "unlisten name=x\0", 16), -EINVAL);
}

static void cmd_overlong_line(struct kunit *test)
{
	char *line = kunit_kmalloc(test, 300, GFP_KERNEL);
	static const char head[] = "unlisten name=x";

	KUNIT_ASSERT_NOT_NULL(test, line);
	memset(line, ' ', 300);
	memcpy(line, head, sizeof(head) - 1);
	/* 255 bytes is the longest command, with or without its newline. */
	KUNIT_EXPECT_EQ(test, parse_n(test, line, 255), 0);
	line[255] = '\n';
	KUNIT_EXPECT_EQ(test, parse_n(test, line, 256), 0);
	line[255] = ' ';
	KUNIT_EXPECT_EQ(test, parse_n(test, line, 256), -EINVAL);
	KUNIT_EXPECT_NOT_NULL(test, strstr(ERRMSG(test), "command longer than 255 bytes"));
	KUNIT_EXPECT_EQ(test, parse_n(test, line, 300), -EINVAL);
	line[256] = '\n';
	KUNIT_EXPECT_EQ(test, parse_n(test, line, 257), -EINVAL);
}

/* A tiny error buffer is filled, truncated and terminated, never overrun. */
static void cmd_small_err_buffer(struct kunit *test)
{
	struct krdma_cmd *cmd = CMD(test);
	char *err = kunit_kmalloc(test, 8, GFP_KERNEL);
	static const char s[] = "listen name=x addr=1.2.3.4:5 colour=red";

	KUNIT_ASSERT_NOT_NULL(test, err);
	KUNIT_EXPECT_EQ(test, krdma_cmd_parse(s, sizeof(s) - 1, cmd, err, 8), -EINVAL);
	KUNIT_EXPECT_EQ(test, strnlen(err, 8), (size_t)7);
	KUNIT_EXPECT_STREQ(test, err, "unknown");
	KUNIT_EXPECT_EQ(test, krdma_cmd_parse("unlisten name=x", 15, cmd, err, 8), 0);
	KUNIT_EXPECT_STREQ(test, err, "");
}

/* The usage text read from the control file names every verb and key. */
static void cmd_usage_complete(struct kunit *test)
{
	int i;

	for (i = 0; i < ARRAY_SIZE(krdma_verbs); i++) {
		char verb[16];

		snprintf(verb, sizeof(verb), "%s name=", krdma_verbs[i].verb);
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(krdma_cmd_usage, verb),
					  "usage lacks '%s'", verb);
	}
	for (i = 0; i < K_NR; i++) {
		char key[32];

		if (i == K_HELLO)	/* a test hook, deliberately undocumented */
			continue;
		snprintf(key, sizeof(key), "%s=", krdma_keys[i]);
		KUNIT_EXPECT_NOT_NULL_MSG(test, strstr(krdma_cmd_usage, key),
					  "usage lacks '%s'", key);
	}
}

static struct kunit_case krdma_cmd_cases[] = {
	KUNIT_CASE(cmd_listen_ok),
	KUNIT_CASE(cmd_unlisten_disconnect_ok),
	KUNIT_CASE(cmd_connect_all_keys),
	KUNIT_CASE(cmd_session),
	KUNIT_CASE(cmd_no_leftovers),
	KUNIT_CASE(cmd_test_defaults),
	KUNIT_CASE(cmd_test_ops),
	KUNIT_CASE(cmd_test_size_sge_rules),
	KUNIT_CASE(cmd_bench_ok),
	KUNIT_CASE(cmd_bench_bad),
	KUNIT_CASE(cmd_bench_sge),
	KUNIT_CASE(cmd_unknown_verb),
	KUNIT_CASE(cmd_unknown_word),
	KUNIT_CASE(cmd_duplicate_key),
	KUNIT_CASE(cmd_missing_required),
	KUNIT_CASE(cmd_bad_numbers),
	KUNIT_CASE(cmd_whitespace),
	KUNIT_CASE(cmd_size_suffixes),
	KUNIT_CASE(cmd_number_limits),
	KUNIT_CASE(cmd_addr_ipv4),
	KUNIT_CASE(cmd_addr_ipv6),
	KUNIT_CASE(cmd_port_required),
	KUNIT_CASE(cmd_name_charset),
	KUNIT_CASE(cmd_name_ascii_only),
	KUNIT_CASE(cmd_non_printable),
	KUNIT_CASE(cmd_overlong_line),
	KUNIT_CASE(cmd_small_err_buffer),
	KUNIT_CASE(cmd_usage_complete),
	{}
};

static struct kunit_suite krdma_cmd_suite = {
	.name = "krdma_cmd",
	.init = cmd_init,
	.test_cases = krdma_cmd_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_proto: wire formats and the test pattern                      */
/* ------------------------------------------------------------------ */

/* A copy of @len bytes of @src in a buffer of exactly that size. */
static void *exact(struct kunit *test, const void *src, size_t len)
{
	void *p = kunit_kmalloc(test, len ?: 1, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	memcpy(p, src, len);
	return p;
}

static void proto_hello_roundtrip(struct kunit *test)
{
	struct krdma_hello h;
	struct krdma_params p = {};
	const u8 *b = (const u8 *)&h;

	KUNIT_EXPECT_EQ(test, sizeof(h), (size_t)16);
	memset(&h, 0xee, sizeof(h));
	krdma_hello_encode(&h, 1024, 1048576, 0);
	/* Big-endian "KRDM", version, flags 0, depth, size, heartbeat. */
	KUNIT_EXPECT_EQ(test, b[0], 'K');
	KUNIT_EXPECT_EQ(test, b[1], 'R');
	KUNIT_EXPECT_EQ(test, b[2], 'D');
	KUNIT_EXPECT_EQ(test, b[3], 'M');
	KUNIT_EXPECT_EQ(test, b[4], KRDMA_PROTO_VERSION);
	KUNIT_EXPECT_EQ(test, b[5], 0);
	KUNIT_EXPECT_EQ(test, b[6], 0x04);
	KUNIT_EXPECT_EQ(test, b[7], 0x00);
	KUNIT_EXPECT_EQ(test, be32_to_cpu(h.max_msg_size), 1048576u);
	KUNIT_EXPECT_TRUE(test, !h.heartbeat_ms);

	KUNIT_EXPECT_EQ(test, krdma_hello_decode(exact(test, &h, sizeof(h)), sizeof(h), &p), 0);
	KUNIT_EXPECT_EQ(test, p.version, (u32)KRDMA_PROTO_VERSION);
	KUNIT_EXPECT_EQ(test, p.queue_depth, 1024u);
	KUNIT_EXPECT_EQ(test, p.max_msg_size, 1048576u);
}

static void proto_hello_short(struct kunit *test)
{
	struct krdma_hello h;
	struct krdma_params p;
	size_t len;

	krdma_hello_encode(&h, 16, 4096, 2000);
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(NULL, 16, &p), KRDMA_REJ_SHORT);
	for (len = 0; len < sizeof(h); len++)
		KUNIT_EXPECT_EQ_MSG(test, krdma_hello_decode(exact(test, &h, len), len, &p),
				    KRDMA_REJ_SHORT, "len %zu", len);
}

static void proto_hello_bad_magic(struct kunit *test)
{
	struct krdma_hello h;
	struct krdma_params p;

	krdma_hello_encode(&h, 16, 4096, 2000);
	h.magic = (__force __be32)cpu_to_le32(KRDMA_PROTO_MAGIC);	/* wrong byte order */
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_MAGIC);
	h.magic = 0;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_MAGIC);
	/* Magic is checked before the version. */
	h.version = 9;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_MAGIC);
}

static void proto_hello_wrong_version(struct kunit *test)
{
	struct krdma_hello h;
	struct krdma_params p;

	krdma_hello_encode(&h, 16, 4096, 2000);
	h.version = 0;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_VERSION);
	h.version = KRDMA_PROTO_VERSION + 1;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_VERSION);
	/* Version 1 had no KRDMA_MSG_IMM: its peers would stall on notices. */
	h.version = 1;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_VERSION);
	/* Version 2 had no heartbeat receive: a ping would take a credit's. */
	h.version = 2;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_VERSION);
	h.version = 0xff;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(&h, sizeof(h), &p), KRDMA_REJ_VERSION);
}

/* IB CM pads private data with zeros up to 56 bytes; iWARP carries it exactly. */
static void proto_hello_ib_padding(struct kunit *test)
{
	u8 *pd = kunit_kzalloc(test, 56, GFP_KERNEL);
	struct krdma_params p = {};

	KUNIT_ASSERT_NOT_NULL(test, pd);
	krdma_hello_encode((struct krdma_hello *)pd, 32, 8192, 500);
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(pd, 56, &p), 0);
	KUNIT_EXPECT_EQ(test, p.queue_depth, 32u);
	KUNIT_EXPECT_EQ(test, p.max_msg_size, 8192u);
	KUNIT_EXPECT_EQ(test, p.heartbeat_ms, 500u);
	/* A padded buffer of zeros is not a hello. */
	memset(pd, 0, 56);
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(pd, 56, &p), KRDMA_REJ_MAGIC);
}

static void proto_negotiate_min(struct kunit *test)
{
	struct krdma_params a = { 1, 64, 4096 }, b = { 1, 32, 65536 }, out;

	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.queue_depth, 32u);
	KUNIT_EXPECT_EQ(test, out.max_msg_size, 4096u);
	KUNIT_EXPECT_EQ(test, out.version, (u32)KRDMA_PROTO_VERSION);
	/* Symmetric: both ends settle on the same values. */
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&b, &a, &out), 0);
	KUNIT_EXPECT_EQ(test, out.queue_depth, 32u);
	KUNIT_EXPECT_EQ(test, out.max_msg_size, 4096u);
	/* Limits themselves are fine. */
	b.queue_depth = KRDMA_MAX_DEPTH;
	b.max_msg_size = sizeof(struct krdma_token_wire);
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.queue_depth, 64u);
	KUNIT_EXPECT_EQ(test, out.max_msg_size, (u32)sizeof(struct krdma_token_wire));
	b.max_msg_size = KRDMA_MAX_MSG_SIZE;
	b.queue_depth = 1;
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.queue_depth, 1u);
}

/* Heartbeats: the shorter interval, none if either side wants none. */
static void proto_negotiate_heartbeat(struct kunit *test)
{
	struct krdma_params a = { 1, 64, 4096, 2000 }, b = { 1, 64, 4096, 500 };
	struct krdma_params out;

	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.heartbeat_ms, 500u);
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&b, &a, &out), 0);
	KUNIT_EXPECT_EQ(test, out.heartbeat_ms, 500u);
	b.heartbeat_ms = 0;
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.heartbeat_ms, 0u);
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&b, &a, &out), 0);
	KUNIT_EXPECT_EQ(test, out.heartbeat_ms, 0u);
	b.heartbeat_ms = KRDMA_MAX_HEARTBEAT_MS;
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), 0);
	KUNIT_EXPECT_EQ(test, out.heartbeat_ms, 2000u);
	/* A peer asking for more than krdma allows is refused. */
	b.heartbeat_ms = KRDMA_MIN_HEARTBEAT_MS - 1;
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), KRDMA_REJ_PARAMS);
	b.heartbeat_ms = KRDMA_MAX_HEARTBEAT_MS + 1;
	KUNIT_EXPECT_EQ(test, krdma_negotiate(&a, &b, &out), KRDMA_REJ_PARAMS);
}

static void proto_negotiate_out_of_range(struct kunit *test)
{
	struct krdma_params a = { 1, 64, 4096 }, b, out;
	static const struct { u32 depth, msg; } bad[] = {
		{ 0, 4096 }, { KRDMA_MAX_DEPTH + 1, 4096 }, { 0xffff, 4096 },
		{ 16, 0 }, { 16, sizeof(struct krdma_token_wire) - 1 },
		{ 16, KRDMA_MAX_MSG_SIZE + 1 }, { 16, 0xffffffff },
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		b = (struct krdma_params){ 1, bad[i].depth, bad[i].msg };
		KUNIT_EXPECT_EQ_MSG(test, krdma_negotiate(&a, &b, &out), KRDMA_REJ_PARAMS,
				    "depth %u msg %u", bad[i].depth, bad[i].msg);
	}
}

static void proto_rej_roundtrip(struct kunit *test)
{
	struct krdma_rej r;
	int reason;

	KUNIT_EXPECT_EQ(test, sizeof(r), (size_t)8);
	for (reason = KRDMA_REJ_SHORT; reason < KRDMA_REJ_MAX; reason++) {
		krdma_rej_encode(&r, reason);
		KUNIT_EXPECT_EQ(test, krdma_rej_decode(exact(test, &r, sizeof(r)), sizeof(r)),
				reason);
		KUNIT_EXPECT_STRNEQ(test, krdma_rej_str(reason), "unknown");
		KUNIT_EXPECT_LT(test, krdma_rej_errno(reason), 0);
	}
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_SHORT), -EPROTO);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_MAGIC), -EPROTO);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_VERSION), -EPROTONOSUPPORT);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_PARAMS), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_RESOURCES), -ENOMEM);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_DEVICE), -ENODEV);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(KRDMA_REJ_BUSY), -EBUSY);
	KUNIT_EXPECT_EQ(test, krdma_rej_errno(0), -ECONNREFUSED);
	KUNIT_EXPECT_STREQ(test, krdma_rej_str(-1), "unknown");
	KUNIT_EXPECT_STREQ(test, krdma_rej_str(KRDMA_REJ_MAX), "unknown");
	KUNIT_EXPECT_STREQ(test, krdma_rej_str(1000), "unknown");
}

/* The listener's consumer refused: its errno reaches the peer's connect. */
static void proto_rej_app(struct kunit *test)
{
	struct krdma_rej r;

	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, -ENOENT);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(exact(test, &r, sizeof(r)), sizeof(r)),
			KRDMA_REJ_APP);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ENOENT);
	/* An errno no accept hook is documented to give: -ECONNREFUSED. */
	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, -MAX_ERRNO);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	/* Not an errno: refused all the same. */
	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, 0);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, 5);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, -MAX_ERRNO - 1);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	/* A forged errno past MAX_ERRNO, a reject of another reason. */
	krdma_rej_encode_errno(&r, KRDMA_REJ_APP, -EACCES);
	r.app_errno = cpu_to_be16(MAX_ERRNO + 1);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	krdma_rej_encode(&r, KRDMA_REJ_BUSY);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(NULL, 0), -ECONNREFUSED);
	/* krdma's own refusal of a session's request carries its errno too. */
	krdma_rej_encode_errno(&r, KRDMA_REJ_SESSION, -EBUSY);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(exact(test, &r, sizeof(r)), sizeof(r)),
			KRDMA_REJ_SESSION);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -EBUSY);
	krdma_rej_encode_errno(&r, KRDMA_REJ_SESSION, -ESTALE);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ESTALE);
}

/* proto_rej_errno_whitelist()'s tally: how many checks failed, the first. */
struct rej_wl {
	unsigned int	bad;
	const char	*what;
	int		e, got, want;
};

static void rej_wl_check(struct rej_wl *w, const char *what, int e, int got,
			 int want)
{
	if (got == want)
		return;
	if (!w->bad++) {
		w->what = what;
		w->e = e;
		w->got = got;
		w->want = want;
	}
}

/*
 * What a peer's reject may make krdma_connect() return: only the errnos a
 * krdma listener refuses with for that reason (-EBUSY and -ESTALE from
 * krdma_sess_claim(), the accept hook's documented ones), whatever a
 * hostile peer writes on the wire; everything else is -ECONNREFUSED.
 */
static void proto_rej_errno_whitelist(struct kunit *test)
{
	static const int app[] = {
		-EPERM, -ENOENT, -ENOMEM, -EACCES, -EBUSY, -EINVAL, -ENOSPC,
		-EAGAIN, -EOPNOTSUPP, -ECONNREFUSED,
	};
	static const int sess[] = { -EBUSY, -ESTALE };
	struct rej_wl w = { .what = "" };
	struct krdma_rej r;
	int e, i, want;

	/*
	 * 65,536 values, five checks each: one expectation for them all, so
	 * that a regression prints one line (how many, and the first), not
	 * thousands.
	 */
	for (e = 0; e <= U16_MAX; e++) {
		/* Written on the wire as a hostile peer would: any u16. */
		krdma_rej_encode(&r, KRDMA_REJ_APP);
		r.app_errno = cpu_to_be16(e);
		want = -ECONNREFUSED;
		for (i = 0; i < ARRAY_SIZE(app); i++)
			if (-e == app[i])
				want = app[i];
		rej_wl_check(&w, "KRDMA_REJ_APP carrying ", e,
			     krdma_rej_carried_errno(&r, sizeof(r)), want);
		rej_wl_check(&w, "KRDMA_REJ_APP's raw errno of ", e,
			     krdma_rej_sent_errno(&r, sizeof(r)), -e);
		/* The listener's side sends nothing the peer would not take. */
		if (e <= MAX_ERRNO) {
			krdma_rej_encode_errno(&r, KRDMA_REJ_APP, -e);
			rej_wl_check(&w, "KRDMA_REJ_APP encoding -", e,
				     krdma_rej_sent_errno(&r, sizeof(r)), want);
		}

		krdma_rej_encode(&r, KRDMA_REJ_SESSION);
		r.app_errno = cpu_to_be16(e);
		want = -ECONNREFUSED;
		for (i = 0; i < ARRAY_SIZE(sess); i++)
			if (-e == sess[i])
				want = sess[i];
		rej_wl_check(&w, "KRDMA_REJ_SESSION carrying ", e,
			     krdma_rej_carried_errno(&r, sizeof(r)), want);
		if (e <= MAX_ERRNO) {
			krdma_rej_encode_errno(&r, KRDMA_REJ_SESSION, -e);
			rej_wl_check(&w, "KRDMA_REJ_SESSION encoding -", e,
				     krdma_rej_sent_errno(&r, sizeof(r)), want);
		}
	}
	KUNIT_EXPECT_EQ_MSG(test, w.bad, 0u,
			    "%u checks failed; the first: %s%d gave %d, expected %d",
			    w.bad, w.what, w.e, w.got, w.want);
	/* The ones the review named, each way. */
	krdma_rej_encode(&r, KRDMA_REJ_APP);
	r.app_errno = cpu_to_be16(ERESTARTSYS);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	r.app_errno = cpu_to_be16(-KRDMA_ERR_RETRY);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	r.app_errno = cpu_to_be16(-KRDMA_ERR_LOST);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	r.app_errno = cpu_to_be16(ESTALE);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	krdma_rej_encode(&r, KRDMA_REJ_SESSION);
	r.app_errno = cpu_to_be16(EACCES);
	KUNIT_EXPECT_EQ(test, krdma_rej_carried_errno(&r, sizeof(r)), -ECONNREFUSED);
	/* No errno in other rejects, and none in a short one. */
	krdma_rej_encode(&r, KRDMA_REJ_BUSY);
	KUNIT_EXPECT_EQ(test, krdma_rej_sent_errno(&r, sizeof(r)), 0);
	KUNIT_EXPECT_EQ(test, krdma_rej_sent_errno(&r, sizeof(r) - 1), 0);
	KUNIT_EXPECT_EQ(test, krdma_rej_sent_errno(NULL, 0), 0);
}

/* The consumer's bytes after the hello: bounded, and all of them there. */
static void proto_hello_private_data(struct kunit *test)
{
	u8 *pd = kunit_kzalloc(test, 64, GFP_KERNEL);
	struct krdma_hello *h = (struct krdma_hello *)pd;
	struct krdma_params p = {};
	size_t n = sizeof(*h);

	KUNIT_ASSERT_NOT_NULL(test, pd);
	krdma_hello_encode(h, 16, 4096, 0);
	h->pdata_len = KRDMA_MAX_PRIVATE_DATA;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(exact(test, pd, n + KRDMA_MAX_PRIVATE_DATA),
						 n + KRDMA_MAX_PRIVATE_DATA, &p), 0);
	KUNIT_EXPECT_EQ(test, p.pdata_len, (u32)KRDMA_MAX_PRIVATE_DATA);
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(exact(test, pd, n + KRDMA_MAX_PRIVATE_DATA - 1),
						 n + KRDMA_MAX_PRIVATE_DATA - 1, &p),
			KRDMA_REJ_SHORT);
	h->pdata_len = KRDMA_MAX_PRIVATE_DATA + 1;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(pd, 64, &p), KRDMA_REJ_PARAMS);
	h->pdata_len = 0;
	KUNIT_EXPECT_EQ(test, krdma_hello_decode(exact(test, pd, n), n, &p), 0);
	KUNIT_EXPECT_EQ(test, p.pdata_len, 0u);
}

/* A reject that krdma did not write (another ULP, the CM itself) reads as 0. */
static void proto_rej_foreign(struct kunit *test)
{
	struct krdma_rej r;
	u8 *pad = kunit_kzalloc(test, 148, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, pad);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(NULL, 8), 0);
	krdma_rej_encode(&r, KRDMA_REJ_PARAMS);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(exact(test, &r, 7), 7), 0);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(pad, 148), 0);	/* all zeros */
	r.magic = cpu_to_be32(0x12345678);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(&r, sizeof(r)), 0);
	krdma_rej_encode(&r, 0);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(&r, sizeof(r)), 0);
	krdma_rej_encode(&r, KRDMA_REJ_MAX);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(&r, sizeof(r)), 0);
	krdma_rej_encode(&r, 0xff);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(&r, sizeof(r)), 0);
	/* A krdma reject padded by IB is still read. */
	krdma_rej_encode((struct krdma_rej *)pad, KRDMA_REJ_DEVICE);
	KUNIT_EXPECT_EQ(test, krdma_rej_decode(pad, 148), KRDMA_REJ_DEVICE);
}

#define MAXMSG 4096

static int msg_dec(struct kunit *test, u32 type, u32 flags, u32 credits, u32 len,
		   u32 byte_len, struct krdma_msg_info *info)
{
	u8 *buf = kunit_kzalloc(test, byte_len < 8 ? 8 : byte_len, GFP_KERNEL);
	struct krdma_msg_hdr h;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	krdma_msg_encode(&h, type, flags, credits, len);
	memcpy(buf, &h, sizeof(h));
	/* Only byte_len bytes arrived: decode from an exact-size copy. */
	return krdma_msg_decode(exact(test, buf, byte_len), byte_len, MAXMSG, info);
}

static void proto_msg_roundtrip(struct kunit *test)
{
	struct krdma_msg_info info;
	struct krdma_msg_hdr h;
	const u8 *b = (const u8 *)&h;

	KUNIT_EXPECT_EQ(test, sizeof(h), (size_t)8);
	krdma_msg_encode(&h, KRDMA_MSG_DATA, 0, 0x1234, 0x00010203);
	KUNIT_EXPECT_EQ(test, b[0], KRDMA_MSG_DATA);
	KUNIT_EXPECT_EQ(test, b[2], 0x12);
	KUNIT_EXPECT_EQ(test, b[3], 0x34);
	KUNIT_EXPECT_EQ(test, b[5], 0x01);
	KUNIT_EXPECT_EQ(test, b[7], 0x03);

	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 65535, 100, 108, &info), 0);
	KUNIT_EXPECT_EQ(test, info.type, (u32)KRDMA_MSG_DATA);
	KUNIT_EXPECT_EQ(test, info.flags, 0u);
	KUNIT_EXPECT_EQ(test, info.credits, 65535u);
	KUNIT_EXPECT_EQ(test, info.len, 100u);
	/* Zero-length and maximal data messages are fine. */
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 0, 0, 8, &info), 0);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, MAXMSG, 8 + MAXMSG, &info), 0);
	KUNIT_EXPECT_EQ(test, info.len, (u32)MAXMSG);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_CREDIT, KRDMA_MSG_F_CTL_ACK, 7, 0, 8,
				      &info), 0);
	KUNIT_EXPECT_EQ(test, info.type, (u32)KRDMA_MSG_CREDIT);
	KUNIT_EXPECT_EQ(test, info.flags, (u32)KRDMA_MSG_F_CTL_ACK);
	KUNIT_EXPECT_EQ(test, info.credits, 7u);
}

static void proto_msg_truncated(struct kunit *test)
{
	struct krdma_msg_info info;
	u32 n;

	for (n = 0; n < 8; n++)
		KUNIT_EXPECT_EQ_MSG(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 0, n, &info),
				    -EPROTO, "byte_len %u", n);
	/* The header claims more, or less, than arrived. */
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 100, 107, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 100, 109, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 0, 9, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 0xffffffff, 8, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 0xfffffff8, 8, &info), -EPROTO);
}

static void proto_msg_bad_type_flags(struct kunit *test)
{
	struct krdma_msg_info info;
	static const u32 types[] = { 0, 5, 0x80, 0xff };
	static const u32 flags[] = { 0x2, 0x4, 0x80, 0xff };
	int i;

	for (i = 0; i < ARRAY_SIZE(types); i++)
		KUNIT_EXPECT_EQ_MSG(test, msg_dec(test, types[i], 0, 1, 0, 8, &info), -EPROTO,
				    "type %u", types[i]);
	for (i = 0; i < ARRAY_SIZE(flags); i++)
		KUNIT_EXPECT_EQ_MSG(test, msg_dec(test, KRDMA_MSG_DATA, flags[i], 1, 0, 8, &info),
				    -EPROTO, "flags 0x%x", flags[i]);
}

/* A heartbeat is a bare header: no payload, no credits, only F_PONG. */
static void proto_msg_heartbeat(struct kunit *test)
{
	struct krdma_msg_info info;

	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, 0, 0, 0, 8, &info), 0);
	KUNIT_EXPECT_EQ(test, info.type, (u32)KRDMA_MSG_HB);
	KUNIT_EXPECT_EQ(test, info.flags, 0u);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, KRDMA_MSG_F_PONG, 0, 0, 8, &info), 0);
	KUNIT_EXPECT_EQ(test, info.flags, (u32)KRDMA_MSG_F_PONG);
	/* Credits or an ack would put it into flow control. */
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, 0, 1, 0, 8, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, KRDMA_MSG_F_CTL_ACK, 0, 0, 8, &info),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, 0x4, 0, 0, 8, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_HB, 0, 0, 4, 12, &info), -EPROTO);
	/* F_PONG means nothing on other messages. */
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, KRDMA_MSG_F_PONG, 1, 0, 8, &info),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_CREDIT, KRDMA_MSG_F_PONG, 1, 0, 8, &info),
			-EPROTO);
}

static void proto_msg_credit_payload(struct kunit *test)
{
	struct krdma_msg_info info;

	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_CREDIT, 0, 3, 1, 9, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_CREDIT, 0, 3, MAXMSG, 8 + MAXMSG, &info),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_CREDIT, 0, 3, 0, 8, &info), 0);
}

/* A notice carries exactly its 32-bit immediate, nothing more or less. */
static void proto_msg_imm_payload(struct kunit *test)
{
	struct krdma_msg_info info;
	static const u32 bad[] = { 0, 3, 5, 8, MAXMSG };
	int i;

	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_IMM, KRDMA_MSG_F_CTL_ACK, 5,
				      KRDMA_MSG_IMM_LEN, 8 + KRDMA_MSG_IMM_LEN, &info), 0);
	KUNIT_EXPECT_EQ(test, info.type, (u32)KRDMA_MSG_IMM);
	KUNIT_EXPECT_EQ(test, info.flags, (u32)KRDMA_MSG_F_CTL_ACK);
	KUNIT_EXPECT_EQ(test, info.credits, 5u);
	KUNIT_EXPECT_EQ(test, info.len, (u32)KRDMA_MSG_IMM_LEN);
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, msg_dec(test, KRDMA_MSG_IMM, 0, 1, bad[i], 8 + bad[i],
						  &info), -EPROTO, "len %u", bad[i]);
	/* The header says 4, fewer arrived. */
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_IMM, 0, 1, KRDMA_MSG_IMM_LEN, 10, &info),
			-EPROTO);
}

static void proto_msg_over_max(struct kunit *test)
{
	struct krdma_msg_info info;

	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, MAXMSG + 1, 9 + MAXMSG, &info),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, msg_dec(test, KRDMA_MSG_DATA, 0, 1, 2 * MAXMSG, 8 + 2 * MAXMSG,
				      &info), -EPROTO);
}

static void proto_pattern_roundtrip(struct kunit *test)
{
	static const u64 pos[] = { 0, 1, 2, 3, 5, 4093, 4097, (1ULL << 32) + 3, U64_MAX - 1000 };
	static const size_t lens[] = { 1, 2, 3, 4, 5, 7, 127, 128, 129, 300, 1000 };
	int i, j;

	for (i = 0; i < ARRAY_SIZE(pos); i++) {
		for (j = 0; j < ARRAY_SIZE(lens); j++) {
			u8 *buf = kunit_kmalloc(test, lens[j], GFP_KERNEL);

			KUNIT_ASSERT_NOT_NULL(test, buf);
			krdma_pattern_fill(buf, lens[j], 42, pos[i]);
			KUNIT_EXPECT_EQ_MSG(test, krdma_pattern_check(buf, lens[j], 42, pos[i]),
					    -1LL, "pos %llu len %zu", pos[i], lens[j]);
			kunit_kfree(test, buf);
		}
	}
	KUNIT_EXPECT_EQ(test, krdma_pattern_check(NULL, 0, 1, 7), -1LL);
}

/* Byte N of a stream is the same whichever fill wrote it: slices line up. */
static void proto_pattern_stream(struct kunit *test)
{
	u8 *full = kunit_kmalloc(test, 300, GFP_KERNEL);
	u8 *part = kunit_kmalloc(test, 300, GFP_KERNEL);
	int k;

	KUNIT_ASSERT_NOT_NULL(test, full);
	KUNIT_ASSERT_NOT_NULL(test, part);
	krdma_pattern_fill(full, 300, 0xdeadbeefcafeULL, 1001);
	for (k = 0; k < 17; k++) {
		memset(part, 0, 300);
		krdma_pattern_fill(part, 300 - k, 0xdeadbeefcafeULL, 1001 + k);
		KUNIT_EXPECT_MEMEQ_MSG(test, part, full + k, 300 - k, "slice at +%d", k);
		/* fill writes exactly len bytes */
		if (k)
			KUNIT_EXPECT_EQ(test, part[300 - k], 0);
		KUNIT_EXPECT_EQ(test, krdma_pattern_check(full + k, 300 - k,
							  0xdeadbeefcafeULL, 1001 + k), -1LL);
	}
	/* Not a constant or short-period stream. */
	KUNIT_EXPECT_NE(test, memcmp(full, full + 4, 8), 0);
	KUNIT_EXPECT_NE(test, memcmp(full, full + 128, 64), 0);
	KUNIT_EXPECT_NOT_NULL(test, memchr_inv(full, full[0], 300));
}

static void proto_pattern_flip_found(struct kunit *test)
{
	static const size_t offs[] = { 0, 1, 2, 3, 126, 127, 128, 129, 255, 256, 998, 999 };
	static const u8 bits[] = { 0x01, 0x80, 0xff };
	u8 *buf = kunit_kmalloc(test, 1000, GFP_KERNEL);
	int i, j;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	krdma_pattern_fill(buf, 1000, 7, 77);
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		for (j = 0; j < ARRAY_SIZE(bits); j++) {
			buf[offs[i]] ^= bits[j];
			KUNIT_EXPECT_EQ_MSG(test, krdma_pattern_check(buf, 1000, 7, 77),
					    (s64)(77 + offs[i]), "flip 0x%02x at %zu",
					    bits[j], offs[i]);
			buf[offs[i]] ^= bits[j];
		}
	}
	KUNIT_EXPECT_EQ(test, krdma_pattern_check(buf, 1000, 7, 77), -1LL);
	/* Two flips: the first one is reported. */
	buf[500] ^= 1;
	buf[300] ^= 1;
	KUNIT_EXPECT_EQ(test, krdma_pattern_check(buf, 1000, 7, 77), 377LL);
}

/* Data from another stream or another place does not pass. */
static void proto_pattern_mismatch(struct kunit *test)
{
	u8 *buf = kunit_kzalloc(test, 4096, GFP_KERNEL);
	s64 r;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	r = krdma_pattern_check(buf, 4096, 1, 0);	/* zeros */
	KUNIT_EXPECT_TRUE(test, r >= 0 && r < 8);
	krdma_pattern_fill(buf, 4096, 1, 0);
	r = krdma_pattern_check(buf, 4096, 2, 0);	/* other seed */
	KUNIT_EXPECT_TRUE(test, r >= 0 && r < 8);
	r = krdma_pattern_check(buf, 4096, 1ULL << 32 | 1, 0);	/* other high seed */
	KUNIT_EXPECT_TRUE(test, r >= 0 && r < 8);
	r = krdma_pattern_check(buf, 4096, 1, 4096);	/* block in the wrong place */
	KUNIT_EXPECT_TRUE(test, r >= 4096 && r < 4096 + 8);
	r = krdma_pattern_check(buf, 4096, 1, 4);	/* shifted by one word */
	KUNIT_EXPECT_TRUE(test, r >= 4 && r < 4 + 8);
	/* The same block at the same place in a stream 4 GiB on differs. */
	r = krdma_pattern_check(buf, 4096, 1, 1ULL << 34);
	KUNIT_EXPECT_TRUE(test, r >= 1LL << 34 && r < (1LL << 34) + 8);
}

static struct kunit_case krdma_proto_cases[] = {
	KUNIT_CASE(proto_hello_roundtrip),
	KUNIT_CASE(proto_hello_short),
	KUNIT_CASE(proto_hello_bad_magic),
	KUNIT_CASE(proto_hello_wrong_version),
	KUNIT_CASE(proto_hello_ib_padding),
	KUNIT_CASE(proto_negotiate_min),
	KUNIT_CASE(proto_negotiate_heartbeat),
	KUNIT_CASE(proto_rej_app),
	KUNIT_CASE(proto_rej_errno_whitelist),
	KUNIT_CASE(proto_hello_private_data),
	KUNIT_CASE(proto_negotiate_out_of_range),
	KUNIT_CASE(proto_rej_roundtrip),
	KUNIT_CASE(proto_rej_foreign),
	KUNIT_CASE(proto_msg_roundtrip),
	KUNIT_CASE(proto_msg_truncated),
	KUNIT_CASE(proto_msg_bad_type_flags),
	KUNIT_CASE(proto_msg_credit_payload),
	KUNIT_CASE(proto_msg_imm_payload),
	KUNIT_CASE(proto_msg_heartbeat),
	KUNIT_CASE(proto_msg_over_max),
	KUNIT_CASE(proto_pattern_roundtrip),
	KUNIT_CASE(proto_pattern_stream),
	KUNIT_CASE(proto_pattern_flip_found),
	KUNIT_CASE(proto_pattern_mismatch),
	{}
};

static struct kunit_suite krdma_proto_suite = {
	.name = "krdma_proto",
	.test_cases = krdma_proto_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_plan: chunk planning over scatterlists                        */
/* ------------------------------------------------------------------ */

#define NPAGES		16
#define MAXCHUNKS	64

/* A physically contiguous, page-aligned area of NPAGES pages, patterned. */
struct plan_ctx {
	u8 *base;
	struct krdma_chunk_plan plan[MAXCHUNKS + 1];
};

static int plan_init(struct kunit *test)
{
	struct plan_ctx *c = kunit_kzalloc(test, sizeof(*c), GFP_KERNEL);

	if (!c)
		return -ENOMEM;
	/* kmalloc of a power of two is naturally aligned. */
	c->base = kunit_kmalloc(test, NPAGES * PAGE_SIZE, GFP_KERNEL);
	if (!c->base)
		return -ENOMEM;
	krdma_pattern_fill(c->base, NPAGES * PAGE_SIZE, 99, 0);
	test->priv = c;
	return 0;
}

#define BASE(test)	(((struct plan_ctx *)(test)->priv)->base)
#define PLAN(test)	(((struct plan_ctx *)(test)->priv)->plan)

struct seg {
	u32 off;	/* from BASE */
	u32 len;
};

static struct scatterlist *mk_sgl(struct kunit *test, const struct seg *s, int n)
{
	struct scatterlist *sgl = kunit_kmalloc_array(test, n, sizeof(*sgl), GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, sgl);
	KUNIT_ASSERT_TRUE(test, IS_ALIGNED((unsigned long)BASE(test), PAGE_SIZE));
	sg_init_table(sgl, n);
	for (i = 0; i < n; i++)
		sg_set_buf(&sgl[i], BASE(test) + s[i].off, s[i].len);
	return sgl;
}

/* Plan, then check the chunk count and each chunk's (pieces, bytes). */
static void expect_plan(struct kunit *test, struct scatterlist *sgl, int nents, u64 skip,
			u64 len, u32 chunk_pages, bool split, int max,
			const struct krdma_chunk_plan *want, int nwant)
{
	struct krdma_chunk_plan *plan = PLAN(test);
	int n, i;

	memset(plan, 0x5a, sizeof(*plan) * (MAXCHUNKS + 1));
	n = krdma_rw_plan(sgl, nents, skip, len, chunk_pages, split, plan, max);
	KUNIT_ASSERT_EQ_MSG(test, n, nwant, "skip %llu len %llu chunk_pages %u split %d",
			    skip, len, chunk_pages, split);
	for (i = 0; i < n; i++) {
		KUNIT_EXPECT_EQ_MSG(test, plan[i].pieces, want[i].pieces, "chunk %d", i);
		KUNIT_EXPECT_EQ_MSG(test, plan[i].bytes, want[i].bytes, "chunk %d", i);
	}
	/* Nothing written past the chunks it returned. */
	KUNIT_EXPECT_EQ(test, plan[n].pieces, 0x5a5a5a5au);
}

static void plan_sg_len(struct kunit *test)
{
	static const struct seg s[] = { { 0, 100 }, { 4096, 4096 }, { 10000, 1 } };
	struct scatterlist *sgl = mk_sgl(test, s, 3);
	u64 len = 0;

	KUNIT_EXPECT_EQ(test, krdma_sg_len(sgl, 3, &len), 0);
	KUNIT_EXPECT_EQ(test, len, 4197ULL);
	KUNIT_EXPECT_EQ(test, krdma_sg_len(sgl, 2, &len), 0);
	KUNIT_EXPECT_EQ(test, len, 4196ULL);
	KUNIT_EXPECT_EQ(test, krdma_sg_len(sgl, 4, &len), -EINVAL);	/* past the end mark */
	KUNIT_EXPECT_EQ(test, krdma_sg_len(sgl, 0, &len), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sg_len(sgl, -1, &len), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sg_len(NULL, 1, &len), -EINVAL);
}

/* One entry from a page boundary: ceil(len / PAGE_SIZE) pieces, one chunk. */
static void plan_page_boundary_sizes(struct kunit *test)
{
	static const u32 sizes[] = {
		1, PAGE_SIZE - 1, PAGE_SIZE, PAGE_SIZE + 1, 2 * PAGE_SIZE,
		3 * PAGE_SIZE - 1, NPAGES * PAGE_SIZE,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct seg s = { 0, sizes[i] };
		struct krdma_chunk_plan want = { DIV_ROUND_UP(sizes[i], PAGE_SIZE), sizes[i] };

		expect_plan(test, mk_sgl(test, &s, 1), 1, 0, sizes[i], NPAGES, false, MAXCHUNKS,
			    &want, 1);
		expect_plan(test, mk_sgl(test, &s, 1), 1, 0, sizes[i], NPAGES, true, MAXCHUNKS,
			    &want, 1);
	}
}

/* An entry starting inside a page ends its first piece at the page end. */
static void plan_unaligned_entry(struct kunit *test)
{
	struct seg s = { 100, PAGE_SIZE };
	struct krdma_chunk_plan two = { 2, PAGE_SIZE };
	struct krdma_chunk_plan split[] = { { 1, PAGE_SIZE - 100 }, { 1, 100 } };

	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, PAGE_SIZE, 16, false, MAXCHUNKS, &two, 1);
	/* MR-mappable too: the first piece may start late, the last end early. */
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, PAGE_SIZE, 16, true, MAXCHUNKS, &two, 1);
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, PAGE_SIZE, 1, true, MAXCHUNKS, split, 2);
}

static void plan_chunk_pages_limit(struct kunit *test)
{
	struct seg s = { 0, 10 * PAGE_SIZE };
	struct krdma_chunk_plan w4[] = {
		{ 4, 4 * PAGE_SIZE }, { 4, 4 * PAGE_SIZE }, { 2, 2 * PAGE_SIZE },
	};
	struct krdma_chunk_plan w1[10], w10 = { 10, 10 * PAGE_SIZE };
	int i;

	for (i = 0; i < 10; i++)
		w1[i] = (struct krdma_chunk_plan){ 1, PAGE_SIZE };
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, 10 * PAGE_SIZE, 4, false, MAXCHUNKS, w4, 3);
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, 10 * PAGE_SIZE, 4, true, MAXCHUNKS, w4, 3);
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, 10 * PAGE_SIZE, 1, false, MAXCHUNKS, w1, 10);
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, 10 * PAGE_SIZE, 10, false, MAXCHUNKS, &w10, 1);
	/* A piece straddling no page: 5 pieces for 4 pages from offset 1. */
	s = (struct seg){ 1, 4 * PAGE_SIZE };
	w4[0] = (struct krdma_chunk_plan){ 4, 4 * PAGE_SIZE - 1 };
	w4[1] = (struct krdma_chunk_plan){ 1, 1 };
	expect_plan(test, mk_sgl(test, &s, 1), 1, 0, 4 * PAGE_SIZE, 4, false, MAXCHUNKS, w4, 2);
}

static void plan_e2big(struct kunit *test)
{
	struct seg s = { 0, 10 * PAGE_SIZE };
	struct krdma_chunk_plan w[] = {
		{ 4, 4 * PAGE_SIZE }, { 4, 4 * PAGE_SIZE }, { 2, 2 * PAGE_SIZE },
	};
	struct scatterlist *sgl = mk_sgl(test, &s, 1);
	struct krdma_chunk_plan *plan = PLAN(test);

	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 1, 0, 10 * PAGE_SIZE, 4, false, plan, 2), -E2BIG);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 1, 0, 10 * PAGE_SIZE, 4, false, plan, 0), -E2BIG);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 1, 0, 10 * PAGE_SIZE, 1, false, plan, 9), -E2BIG);
	/* Exactly as many as allowed is fine, and writes no more than that. */
	expect_plan(test, sgl, 1, 0, 10 * PAGE_SIZE, 4, false, 3, w, 3);
	expect_plan(test, sgl, 1, 0, 8 * PAGE_SIZE, 4, false, 2, w, 2);
}

static void plan_einval(struct kunit *test)
{
	static const struct seg s[] = { { 0, PAGE_SIZE }, { 2 * PAGE_SIZE, 100 } };
	struct scatterlist *sgl = mk_sgl(test, s, 2);
	struct krdma_chunk_plan *plan = PLAN(test);
	u64 total = PAGE_SIZE + 100;

	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, 0, 0, 4, false, plan, MAXCHUNKS), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, 0, 1, 0, false, plan, MAXCHUNKS), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, 0, total + 1, 4, false, plan, MAXCHUNKS),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, 1, total, 4, false, plan, MAXCHUNKS),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, total, 1, 4, false, plan, MAXCHUNKS),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, total + 5, 1, 4, false, plan, MAXCHUNKS),
			-EINVAL);
	/* nents bounds the list even if more entries follow. */
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 1, 0, PAGE_SIZE + 1, 4, false, plan, MAXCHUNKS),
			-EINVAL);
	/* The last byte is reachable. */
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, total - 1, 1, 4, false, plan, MAXCHUNKS), 1);
	KUNIT_EXPECT_EQ(test, plan[0].bytes, 1u);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 2, 0, total, 4, false, plan, MAXCHUNKS), 1);
}

/* skip/len select a window; the window's first piece starts where skip lands. */
static void plan_skip_len_window(struct kunit *test)
{
	static const struct seg s[] = { { 0, 4 * PAGE_SIZE } };
	struct krdma_chunk_plan w1 = { 3, 2 * PAGE_SIZE };
	struct krdma_chunk_plan w2[] = { { 1, PAGE_SIZE - 100 }, { 1, PAGE_SIZE }, { 1, 100 } };
	struct krdma_chunk_plan w3 = { 1, 10 };
	struct krdma_chunk_plan w4[] = { { 2, PAGE_SIZE + 1 }, { 1, 1 } };

	expect_plan(test, mk_sgl(test, s, 1), 1, 100, 2 * PAGE_SIZE, 8, false, MAXCHUNKS, &w1, 1);
	expect_plan(test, mk_sgl(test, s, 1), 1, 100, 2 * PAGE_SIZE, 8, true, MAXCHUNKS, &w1, 1);
	expect_plan(test, mk_sgl(test, s, 1), 1, 100, 2 * PAGE_SIZE, 1, false, MAXCHUNKS, w2, 3);
	/* A window inside one page. */
	expect_plan(test, mk_sgl(test, s, 1), 1, PAGE_SIZE + 5, 10, 8, true, MAXCHUNKS, &w3, 1);
	/* A window from the last byte of a page. */
	expect_plan(test, mk_sgl(test, s, 1), 1, 2 * PAGE_SIZE - 1, PAGE_SIZE + 2, 2, false,
		    MAXCHUNKS, w4, 2);
}

static void plan_skip_across_entries(struct kunit *test)
{
	static const struct seg s[] = {
		{ 0, 1000 }, { PAGE_SIZE, 2000 }, { 3 * PAGE_SIZE, PAGE_SIZE },
	};
	struct krdma_chunk_plan w1 = { 2, 2000 + PAGE_SIZE };
	struct krdma_chunk_plan w2 = { 2, 1500 + PAGE_SIZE };
	struct krdma_chunk_plan w3 = { 1, 10 };

	/* skip ends exactly at an entry boundary */
	expect_plan(test, mk_sgl(test, s, 3), 3, 1000, 2000 + PAGE_SIZE, 8, false, MAXCHUNKS,
		    &w1, 1);
	/* skip ends inside the second entry */
	expect_plan(test, mk_sgl(test, s, 3), 3, 1500, 1500 + PAGE_SIZE, 8, false, MAXCHUNKS,
		    &w2, 1);
	/* skip passes two entries */
	expect_plan(test, mk_sgl(test, s, 3), 3, 3000 + 20, 10, 8, false, MAXCHUNKS, &w3, 1);
}

/* For an MR (split_gaps), only the first piece may start, and the last end, inside a page. */
static void plan_split_gaps(struct kunit *test)
{
	static const struct seg s[] = {
		{ 0, 1000 },			/* ends mid-page: gap after */
		{ PAGE_SIZE, PAGE_SIZE },	/* full page */
		{ 3 * PAGE_SIZE - 512, 512 },	/* starts mid-page, ends at its end */
		{ 3 * PAGE_SIZE, PAGE_SIZE },	/* continues from a page end */
		{ 5 * PAGE_SIZE, 2 * PAGE_SIZE },	/* not adjacent, but page-aligned */
	};
	u32 total = 1000 + PAGE_SIZE + 512 + 3 * PAGE_SIZE;
	struct krdma_chunk_plan all = { 6, total };
	struct krdma_chunk_plan gaps[] = {
		{ 1, 1000 }, { 1, PAGE_SIZE }, { 4, 512 + 3 * PAGE_SIZE },
	};
	struct krdma_chunk_plan gaps2[] = {
		{ 1, 1000 }, { 1, PAGE_SIZE }, { 2, 512 + PAGE_SIZE }, { 2, 2 * PAGE_SIZE },
	};

	expect_plan(test, mk_sgl(test, s, 5), 5, 0, total, 16, false, MAXCHUNKS, &all, 1);
	expect_plan(test, mk_sgl(test, s, 5), 5, 0, total, 16, true, MAXCHUNKS, gaps, 3);
	expect_plan(test, mk_sgl(test, s, 5), 5, 0, total, 2, true, MAXCHUNKS, gaps2, 4);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(mk_sgl(test, s, 5), 5, 0, total, 16, true,
					    PLAN(test), 2), -E2BIG);
}

/* Several entries within one page: pieces, and a gap between each for an MR. */
static void plan_same_page_entries(struct kunit *test)
{
	static const struct seg s[] = { { 0, 100 }, { 200, 100 }, { 400, 100 } };
	struct krdma_chunk_plan one = { 3, 300 };
	struct krdma_chunk_plan w[] = { { 1, 100 }, { 1, 100 }, { 1, 100 } };

	expect_plan(test, mk_sgl(test, s, 3), 3, 0, 300, 16, false, MAXCHUNKS, &one, 1);
	expect_plan(test, mk_sgl(test, s, 3), 3, 0, 300, 16, true, MAXCHUNKS, w, 3);
}

/* Zero-length entries produce no pieces; offsets past the first page are followed. */
static void plan_odd_entries(struct kunit *test)
{
	struct scatterlist *sgl = kunit_kmalloc_array(test, 3, sizeof(*sgl), GFP_KERNEL);
	struct krdma_chunk_plan w = { 2, 2 * PAGE_SIZE };
	struct krdma_chunk_plan w2 = { 2, PAGE_SIZE };

	KUNIT_ASSERT_NOT_NULL(test, sgl);
	sg_init_table(sgl, 3);
	sg_set_buf(&sgl[0], BASE(test), PAGE_SIZE);
	sg_set_buf(&sgl[1], BASE(test) + PAGE_SIZE, 0);
	sg_set_buf(&sgl[2], BASE(test) + PAGE_SIZE, PAGE_SIZE);
	expect_plan(test, sgl, 3, 0, 2 * PAGE_SIZE, 16, true, MAXCHUNKS, &w, 1);

	/* page + offset 2 * PAGE_SIZE + 100 is the same memory as sg_set_buf gives. */
	sg_init_table(sgl, 1);
	sg_set_page(&sgl[0], virt_to_page(BASE(test)), PAGE_SIZE, 2 * PAGE_SIZE + 100);
	expect_plan(test, sgl, 1, 0, PAGE_SIZE, 16, true, MAXCHUNKS, &w2, 1);
	KUNIT_EXPECT_EQ(test, krdma_rw_plan(sgl, 1, 0, PAGE_SIZE, 1, true, PLAN(test),
					    MAXCHUNKS), 2);
	KUNIT_EXPECT_EQ(test, PLAN(test)[0].bytes, (u32)(PAGE_SIZE - 100));
}

static void free_tables(struct sg_table *t, int n)
{
	while (n--)
		sg_free_table(&t[n]);
}

/*
 * Plan and fill; each table has the planned entries and bytes, every entry
 * lies within one page, and the tables read back exactly the window's bytes.
 */
static void check_fill(struct kunit *test, struct scatterlist *sgl, int nents, u64 skip,
		       u64 len, u32 chunk_pages, bool split)
{
	struct krdma_chunk_plan *plan = PLAN(test);
	struct sg_table *t = kunit_kcalloc(test, MAXCHUNKS, sizeof(*t), GFP_KERNEL);
	u8 *want = kunit_kmalloc(test, len, GFP_KERNEL);
	struct scatterlist *sg;
	u64 at = 0;
	int n, c, i;

	KUNIT_ASSERT_NOT_NULL(test, t);
	KUNIT_ASSERT_NOT_NULL(test, want);
	KUNIT_ASSERT_EQ(test, sg_pcopy_to_buffer(sgl, nents, want, len, skip), (size_t)len);
	n = krdma_rw_plan(sgl, nents, skip, len, chunk_pages, split, plan, MAXCHUNKS);
	KUNIT_ASSERT_GT(test, n, 0);
	KUNIT_ASSERT_EQ(test, krdma_rw_fill(sgl, nents, skip, len, plan, n, t, GFP_KERNEL), 0);
	for (c = 0; c < n; c++) {
		u32 bytes = 0;

		KUNIT_EXPECT_EQ_MSG(test, t[c].nents, plan[c].pieces, "chunk %d", c);
		KUNIT_EXPECT_LE(test, t[c].nents, chunk_pages);
		for_each_sg(t[c].sgl, sg, t[c].nents, i) {
			KUNIT_EXPECT_GT(test, sg->length, 0u);
			KUNIT_EXPECT_LE_MSG(test, sg->offset + sg->length, (u32)PAGE_SIZE,
					    "chunk %d entry %d crosses a page", c, i);
			if (split && i > 0)
				KUNIT_EXPECT_EQ(test, sg->offset, 0u);
			if (split && !sg_is_last(sg))
				KUNIT_EXPECT_EQ(test, sg->offset + sg->length, (u32)PAGE_SIZE);
			KUNIT_EXPECT_MEMEQ_MSG(test, sg_virt(sg), want + at, sg->length,
					       "chunk %d entry %d", c, i);
			at += sg->length;
			bytes += sg->length;
		}
		KUNIT_EXPECT_EQ_MSG(test, bytes, plan[c].bytes, "chunk %d", c);
	}
	KUNIT_EXPECT_EQ(test, at, len);
	free_tables(t, n);
}

static void plan_fill_matches_plan(struct kunit *test)
{
	static const struct seg s[] = {
		{ 0, 1000 }, { PAGE_SIZE, PAGE_SIZE }, { 2 * PAGE_SIZE + 512, 512 },
		{ 3 * PAGE_SIZE, 3 * PAGE_SIZE + 7 }, { 8 * PAGE_SIZE + 1, 3 },
		{ 9 * PAGE_SIZE + 100, 4 * PAGE_SIZE },
	};
	u64 total = 1000 + PAGE_SIZE + 512 + 3 * PAGE_SIZE + 7 + 3 + 4 * PAGE_SIZE;
	struct scatterlist *sgl = mk_sgl(test, s, ARRAY_SIZE(s));
	static const u32 cps[] = { 1, 2, 3, 16 };
	int i, split;

	for (split = 0; split < 2; split++) {
		for (i = 0; i < ARRAY_SIZE(cps); i++) {
			check_fill(test, sgl, ARRAY_SIZE(s), 0, total, cps[i], split);
			check_fill(test, sgl, ARRAY_SIZE(s), 999, total - 999 - 2, cps[i], split);
			check_fill(test, sgl, ARRAY_SIZE(s), 1000 + 17, 3 * PAGE_SIZE, cps[i],
				   split);
			check_fill(test, sgl, ARRAY_SIZE(s), total - 1, 1, cps[i], split);
		}
	}
}

/* A plan that asks for more than the list holds fails and frees what it built. */
static void plan_fill_past_end(struct kunit *test)
{
	struct seg s = { 0, 2 * PAGE_SIZE };
	struct scatterlist *sgl = mk_sgl(test, &s, 1);
	struct krdma_chunk_plan plan[2] = { { 1, PAGE_SIZE }, { 2, 2 * PAGE_SIZE } };
	struct sg_table t[2] = {};

	KUNIT_EXPECT_EQ(test, krdma_rw_fill(sgl, 1, 0, 3 * PAGE_SIZE, plan, 2, t, GFP_KERNEL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_rw_fill(sgl, 1, 2 * PAGE_SIZE + 1, 1, plan, 1, t,
					    GFP_KERNEL), -EINVAL);
	/* (kmemleak, run after the suite, sees any table left behind) */
}

static void buf_to_sgt_check(struct kunit *test, u8 *buf, size_t len)
{
	struct sg_table sgt;
	struct scatterlist *sg;
	u32 want_n = DIV_ROUND_UP(offset_in_page(buf) + len, PAGE_SIZE);
	size_t at = 0;
	int i;

	KUNIT_ASSERT_EQ(test, krdma_buf_to_sgt(buf, len, &sgt, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, sgt.nents, want_n);
	for_each_sg(sgt.sgl, sg, sgt.nents, i) {
		KUNIT_EXPECT_EQ(test, sg->offset, i ? 0u : (u32)offset_in_page(buf));
		KUNIT_EXPECT_LE(test, sg->offset + sg->length, (u32)PAGE_SIZE);
		KUNIT_EXPECT_MEMEQ_MSG(test, (u8 *)page_address(sg_page(sg)) + sg->offset,
				       buf + at, sg->length, "entry %d", i);
		at += sg->length;
	}
	KUNIT_EXPECT_EQ(test, at, len);
	sg_free_table(&sgt);
}

KUNIT_DEFINE_ACTION_WRAPPER(vfree_action, vfree, const void *);
KUNIT_DEFINE_ACTION_WRAPPER(sg_free_table_action, sg_free_table, struct sg_table *);

/* vmalloc memory freed when the test ends, however it ends. */
static u8 *test_vmalloc(struct kunit *test, size_t size)
{
	u8 *v = vmalloc(size);

	KUNIT_ASSERT_NOT_NULL(test, v);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, vfree_action, v), 0);
	return v;
}

static void plan_buf_to_sgt(struct kunit *test)
{
	u8 *v = test_vmalloc(test, 4 * PAGE_SIZE);
	struct sg_table sgt;

	buf_to_sgt_check(test, BASE(test), 1);
	buf_to_sgt_check(test, BASE(test) + 100, 2 * PAGE_SIZE);
	buf_to_sgt_check(test, BASE(test) + PAGE_SIZE - 1, 2);
	buf_to_sgt_check(test, BASE(test), 3 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, krdma_buf_to_sgt(NULL, 10, &sgt, GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_buf_to_sgt(BASE(test), 0, &sgt, GFP_KERNEL), -EINVAL);

	/* vmalloc memory: pages are not contiguous, each entry finds its own. */
	krdma_pattern_fill(v, 4 * PAGE_SIZE, 5, 0);
	buf_to_sgt_check(test, v + 5, 4 * PAGE_SIZE - 5);
	buf_to_sgt_check(test, v + PAGE_SIZE, PAGE_SIZE);
}

/* A vmalloc buffer's list is one MR-mappable chunk: page-contiguous, not physically. */
static void plan_vmalloc_one_mr(struct kunit *test)
{
	u8 *v = test_vmalloc(test, 8 * PAGE_SIZE);
	struct sg_table *sgt = kunit_kzalloc(test, sizeof(*sgt), GFP_KERNEL);
	struct krdma_chunk_plan w = { 8, 8 * PAGE_SIZE - 300 };

	KUNIT_ASSERT_NOT_NULL(test, sgt);
	krdma_pattern_fill(v, 8 * PAGE_SIZE, 3, 0);
	KUNIT_ASSERT_EQ(test, krdma_buf_to_sgt(v + 100, 8 * PAGE_SIZE - 300, sgt, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, sg_free_table_action, sgt), 0);
	expect_plan(test, sgt->sgl, sgt->nents, 0, 8 * PAGE_SIZE - 300, 8, true, MAXCHUNKS, &w, 1);
	check_fill(test, sgt->sgl, sgt->nents, 0, 8 * PAGE_SIZE - 300, 8, true);
	check_fill(test, sgt->sgl, sgt->nents, 4000, 3 * PAGE_SIZE, 2, true);
}

static struct kunit_case krdma_plan_cases[] = {
	KUNIT_CASE(plan_sg_len),
	KUNIT_CASE(plan_page_boundary_sizes),
	KUNIT_CASE(plan_unaligned_entry),
	KUNIT_CASE(plan_chunk_pages_limit),
	KUNIT_CASE(plan_e2big),
	KUNIT_CASE(plan_einval),
	KUNIT_CASE(plan_skip_len_window),
	KUNIT_CASE(plan_skip_across_entries),
	KUNIT_CASE(plan_split_gaps),
	KUNIT_CASE(plan_same_page_entries),
	KUNIT_CASE(plan_odd_entries),
	KUNIT_CASE(plan_fill_matches_plan),
	KUNIT_CASE(plan_fill_past_end),
	KUNIT_CASE(plan_buf_to_sgt),
	KUNIT_CASE(plan_vmalloc_one_mr),
	{}
};

static struct kunit_suite krdma_plan_suite = {
	.name = "krdma_plan",
	.init = plan_init,
	.test_cases = krdma_plan_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_credit: flow-control accounting                               */
/* ------------------------------------------------------------------ */

static void credit_init_full(struct kunit *test)
{
	struct krdma_credit c;

	memset(&c, 0xa5, sizeof(c));
	krdma_credit_init(&c, 16);
	KUNIT_EXPECT_EQ(test, c.depth, 16u);
	KUNIT_EXPECT_EQ(test, c.credits, 16u);
	KUNIT_EXPECT_EQ(test, c.owed, 0u);
	KUNIT_EXPECT_TRUE(test, c.ctl_token);
	KUNIT_EXPECT_FALSE(test, c.owe_ctl_ack);
	KUNIT_EXPECT_FALSE(test, krdma_credit_should_send_ctl(&c));
}

/*
 * The receiver's side: a message takes one of the credits we gave, a
 * CREDIT message the token we gave back; more is a peer breaking the
 * protocol (test/guest/hostile.sh, overcredit).
 */
static void credit_recv_bounds(struct kunit *test)
{
	struct krdma_credit c;
	int i;

	krdma_credit_init(&c, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), -EPROTO);
	/* Two reposted and told in a header: two more, not three. */
	krdma_credit_reposted(&c, false);
	krdma_credit_reposted(&c, false);
	krdma_credit_sent(&c, false);
	KUNIT_EXPECT_EQ(test, c.peer_credits, 2u);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), -EPROTO);

	/* One CREDIT message, then none until its ack went out. */
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, true), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, true), -EPROTO);
	krdma_credit_reposted(&c, true);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, true), -EPROTO);
	krdma_credit_sent(&c, false);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, true), 0);
}

/*
 * The active side counts with its offer from connect time until the
 * accept's agreed depth; messages may come before that: a receive
 * reposted for one is still owed afterwards, and what the peer took
 * still counts against it.
 */
static void credit_agreed_keeps_owed(struct kunit *test)
{
	struct krdma_credit c;
	int i;

	krdma_credit_init(&c, 32);		/* the offer */
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	krdma_credit_reposted(&c, false);	/* one consumed and back */
	KUNIT_EXPECT_EQ(test, krdma_credit_agreed(&c, 16), 0);	/* the accept */
	KUNIT_EXPECT_EQ(test, c.depth, 16u);
	KUNIT_EXPECT_EQ(test, c.credits, 16u);
	KUNIT_EXPECT_EQ(test, c.owed, 1u);
	KUNIT_EXPECT_EQ(test, krdma_credit_hdr_credits(&c), 1u);
	/* The peer has 14 of the 16 left: the 15th is a breach. */
	KUNIT_EXPECT_EQ(test, c.peer_credits, 14u);
	for (i = 0; i < 14; i++)
		KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), -EPROTO);
	/* The owed one goes back: one more. */
	krdma_credit_sent(&c, false);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), -EPROTO);

	/* A peer that sent the whole agreed depth has nothing left. */
	krdma_credit_init(&c, 8);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_agreed(&c, 4), 0);
	KUNIT_EXPECT_EQ(test, c.peer_credits, 0u);
	KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), -EPROTO);
}

/*
 * A peer that sent more than the depth it then accepted with broke its
 * own accept: the accept is refused, and nothing of it is applied.  (It
 * was taken before, with the peer left without credits: the connection
 * came up with more messages in it than its depth.)
 */
static void credit_agreed_overrun(struct kunit *test)
{
	struct krdma_credit c;
	int i;

	krdma_credit_init(&c, 8);
	for (i = 0; i < 5; i++)
		KUNIT_EXPECT_EQ(test, krdma_credit_recv(&c, false), 0);
	KUNIT_EXPECT_EQ(test, krdma_credit_agreed(&c, 4), -EPROTO);
	KUNIT_EXPECT_EQ(test, c.depth, 8u);
	KUNIT_EXPECT_EQ(test, c.peer_credits, 3u);
	/* The offer, taken back by an accept of less: the same. */
	KUNIT_EXPECT_EQ(test, krdma_credit_agreed(&c, 1), -EPROTO);
	KUNIT_EXPECT_EQ(test, krdma_credit_agreed(&c, 5), 0);
	KUNIT_EXPECT_EQ(test, c.peer_credits, 0u);
}

static void credit_take_until_empty(struct kunit *test)
{
	struct krdma_credit c;
	int i;

	krdma_credit_init(&c, 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_TRUE(test, krdma_credit_take(&c));
	KUNIT_EXPECT_EQ(test, c.credits, 0u);
	/* No receive left at the peer: refused, and no wrap to U32_MAX. */
	KUNIT_EXPECT_FALSE(test, krdma_credit_take(&c));
	KUNIT_EXPECT_EQ(test, c.credits, 0u);
	krdma_credit_undo(&c);
	KUNIT_EXPECT_EQ(test, c.credits, 1u);
	KUNIT_EXPECT_TRUE(test, krdma_credit_take(&c));
	KUNIT_EXPECT_FALSE(test, krdma_credit_take(&c));
}

static void credit_grant_bounds(struct kunit *test)
{
	struct krdma_credit c;

	krdma_credit_init(&c, 8);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 1, false), -EPROTO);
	KUNIT_EXPECT_EQ(test, c.credits, 8u);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 0, false), 0);

	c.credits = 2;
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 7, false), -EPROTO);
	KUNIT_EXPECT_EQ(test, c.credits, 2u);	/* nothing applied */
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, U32_MAX, false), -EPROTO);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 0xffff, false), -EPROTO);
	KUNIT_EXPECT_EQ(test, c.credits, 2u);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 4, false), 0);
	KUNIT_EXPECT_EQ(test, c.credits, 6u);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 2, false), 0);	/* full */
	KUNIT_EXPECT_EQ(test, c.credits, 8u);
}

static void credit_grant_ctl_ack(struct kunit *test)
{
	struct krdma_credit c;

	krdma_credit_init(&c, 4);
	/* An ack for a CREDIT message we never sent. */
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 0, true), -EPROTO);

	c.credits = 0;
	c.owed = 2;
	krdma_credit_sent(&c, true);
	KUNIT_EXPECT_FALSE(test, c.ctl_token);
	/* A bad grant applies neither the credits nor the ack. */
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 5, true), -EPROTO);
	KUNIT_EXPECT_FALSE(test, c.ctl_token);
	KUNIT_EXPECT_EQ(test, c.credits, 0u);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 3, true), 0);
	KUNIT_EXPECT_TRUE(test, c.ctl_token);
	KUNIT_EXPECT_EQ(test, c.credits, 3u);
	KUNIT_EXPECT_EQ(test, krdma_credit_grant(&c, 0, true), -EPROTO);
}

static void credit_reposted_kinds(struct kunit *test)
{
	struct krdma_credit c;

	krdma_credit_init(&c, 8);
	krdma_credit_reposted(&c, false);
	krdma_credit_reposted(&c, false);
	KUNIT_EXPECT_EQ(test, c.owed, 2u);
	KUNIT_EXPECT_FALSE(test, c.owe_ctl_ack);
	/* The credit receive is not a credit: the peer never spent one. */
	krdma_credit_reposted(&c, true);
	KUNIT_EXPECT_EQ(test, c.owed, 2u);
	KUNIT_EXPECT_TRUE(test, c.owe_ctl_ack);
	KUNIT_EXPECT_EQ(test, krdma_credit_hdr_credits(&c), 2u);
	KUNIT_EXPECT_TRUE(test, krdma_credit_hdr_ctl_ack(&c));
}

static void credit_ctl_threshold(struct kunit *test)
{
	static const struct {
		u32 depth, threshold;
	} t[] = { { 1, 1 }, { 2, 1 }, { 3, 1 }, { 4, 2 }, { 5, 2 },
		  { 16, 8 }, { 1024, 512 } };
	struct krdma_credit c;
	int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		krdma_credit_init(&c, t[i].depth);
		c.credits = 0;
		c.owed = t[i].threshold - 1;
		KUNIT_EXPECT_FALSE_MSG(test, krdma_credit_should_send_ctl(&c),
				       "depth %u owed %u", t[i].depth, c.owed);
		c.owed = t[i].threshold;
		KUNIT_EXPECT_TRUE_MSG(test, krdma_credit_should_send_ctl(&c),
				      "depth %u owed %u", t[i].depth, c.owed);
		/* Without the token the peer's credit receive may be in use. */
		c.ctl_token = false;
		KUNIT_EXPECT_FALSE(test, krdma_credit_should_send_ctl(&c));
	}
}

static void credit_ctl_ack_rule(struct kunit *test)
{
	struct krdma_credit c;

	krdma_credit_init(&c, 16);
	krdma_credit_reposted(&c, true);
	/* An ack alone would ping-pong empty CREDIT messages for ever. */
	KUNIT_EXPECT_FALSE(test, krdma_credit_should_send_ctl(&c));
	/* One credit owed with an ack owed goes at once. */
	krdma_credit_reposted(&c, false);
	KUNIT_EXPECT_TRUE(test, krdma_credit_should_send_ctl(&c));
	c.ctl_token = false;
	KUNIT_EXPECT_FALSE(test, krdma_credit_should_send_ctl(&c));
}

static void credit_sent_clears(struct kunit *test)
{
	struct krdma_credit c;

	krdma_credit_init(&c, 8);
	krdma_credit_reposted(&c, false);
	krdma_credit_reposted(&c, true);
	KUNIT_EXPECT_TRUE(test, krdma_credit_take(&c));
	/* Piggybacked on data: told, and the token stays with us. */
	krdma_credit_sent(&c, false);
	KUNIT_EXPECT_EQ(test, c.owed, 0u);
	KUNIT_EXPECT_FALSE(test, c.owe_ctl_ack);
	KUNIT_EXPECT_TRUE(test, c.ctl_token);
	KUNIT_EXPECT_EQ(test, c.credits, 7u);	/* a CREDIT costs none */

	krdma_credit_reposted(&c, false);
	krdma_credit_sent(&c, true);
	KUNIT_EXPECT_EQ(test, c.owed, 0u);
	KUNIT_EXPECT_FALSE(test, c.ctl_token);
	KUNIT_EXPECT_EQ(test, c.credits, 7u);
	/* No second CREDIT message while the first is unacknowledged. */
	c.owed = 8;
	KUNIT_EXPECT_FALSE(test, krdma_credit_should_send_ctl(&c));
}

/*
 * Two endpoints exchanging messages through the helpers, as krdma_cq.c
 * drives them, with the receive queues and the wire modelled: each side
 * posts depth data receives and one credit receive; a link is a FIFO (RC
 * delivers in order).  The actions (send, a post that fails, delivery,
 * the application taking a message) interleave in an order drawn from a
 * fixed-seed generator.  A send may be a write-with-immediate notice: it
 * spends a credit like a message, with no header, unless an ack is owed
 * (krdma_credit_imm_needs_hdr), when krdma_post_imm() sends it as a
 * KRDMA_MSG_IMM message with a header.  It reports the first broken
 * property: a message with no receive for it (RNR), credits above the
 * depth, a conservation law broken, an ack owed with no credit to carry
 * it, a grant refused, or no action possible with work left (deadlock).
 */
enum sim_result {
	SIM_OK, SIM_RNR, SIM_OVER_DEPTH, SIM_LOST, SIM_PROTO, SIM_DEADLOCK,
	SIM_LIMIT, SIM_ACK_STRANDED,
};

enum sim_fault {
	SIM_FAULT_NONE,
	SIM_FAULT_NO_CREDIT_CHECK,	/* sender ignores credits */
	SIM_FAULT_NO_CTL,		/* never sends CREDIT messages */
	SIM_FAULT_IMM_NO_HDR,		/* notices never carry a header */
};

enum sim_imm {
	SIM_IMM_NONE,			/* every send is a message */
	SIM_IMM_MIXED,			/* half are notices, at random */
	SIM_IMM_ALL,			/* every send is a notice */
};

enum sim_kind { SIM_DATA, SIM_CREDIT };

#define SIM_WIRE	2100

struct sim_msg {
	u8	kind;
	bool	ack;
	u16	credits;
};

struct sim_end {
	struct krdma_credit	cr;
	u32	data_posted, ctl_posted;
	u32	rx_ready;	/* delivered, not taken by the application */
	u32	to_send, received;
	/* The wire from this end to the other. */
	struct sim_msg	wire[SIM_WIRE];
	u32	head, tail;
};

struct sim {
	struct sim_end	e[2];
	u32		depth;
	u64		rng;
	enum sim_fault	fault;
	enum sim_imm	imm;
	u32		ctl_msgs;
	u32		imm_msgs;	/* notices that went with a header */
	u32		imm_bare;	/* notices that went without */
};

static u32 sim_rand(struct sim *s, u32 n)
{
	s->rng = s->rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (u32)(s->rng >> 33) % n;
}

static u32 sim_inflight(const struct sim_end *e)
{
	return e->tail - e->head;
}

static int sim_push(struct sim *s, int from, u8 kind, bool hdr)
{
	struct sim_end *e = &s->e[from];
	struct sim_msg *m;

	if (sim_inflight(e) >= SIM_WIRE)
		return SIM_LIMIT;
	m = &e->wire[e->tail++ % SIM_WIRE];
	m->kind = kind;
	m->ack = hdr && krdma_credit_hdr_ctl_ack(&e->cr);
	m->credits = hdr ? krdma_credit_hdr_credits(&e->cr) : 0;
	if (hdr)
		krdma_credit_sent(&e->cr, kind == SIM_CREDIT);
	if (kind == SIM_CREDIT)
		s->ctl_msgs++;
	return SIM_OK;
}

/* krdma_post_ctl_locked() behind krdma_credit_should_send_ctl(). */
static int sim_maybe_ctl(struct sim *s, int side)
{
	if (s->fault == SIM_FAULT_NO_CTL ||
	    !krdma_credit_should_send_ctl(&s->e[side].cr))
		return SIM_OK;
	return sim_push(s, side, SIM_CREDIT, true);
}

/*
 * krdma_send_async(), or krdma_post_imm() for a notice, on @side; a failed
 * post gives the credit back.
 */
static int sim_send(struct sim *s, int side, bool post_fails, bool imm)
{
	struct sim_end *e = &s->e[side];
	bool hdr = true;

	/* The faulty sender goes ahead without a credit. */
	if (!krdma_credit_take(&e->cr) &&
	    s->fault != SIM_FAULT_NO_CREDIT_CHECK)
		return SIM_OK;
	if (post_fails) {
		krdma_credit_undo(&e->cr);
		return SIM_OK;
	}
	if (imm) {
		hdr = krdma_credit_imm_needs_hdr(&e->cr) &&
		      s->fault != SIM_FAULT_IMM_NO_HDR;
		if (hdr)
			s->imm_msgs++;
		else
			s->imm_bare++;
	}
	e->to_send--;
	return sim_push(s, side, SIM_DATA, hdr);
}

/* krdma_recv_done() on the side the head of @from's wire reaches. */
static int sim_deliver(struct sim *s, int from)
{
	struct sim_end *src = &s->e[from], *dst = &s->e[!from];
	struct sim_msg m = src->wire[src->head++ % SIM_WIRE];
	int ret;

	if (m.kind == SIM_CREDIT) {
		if (!dst->ctl_posted)
			return SIM_RNR;
		dst->ctl_posted--;
	} else {
		if (!dst->data_posted)
			return SIM_RNR;
		dst->data_posted--;
	}
	if (krdma_credit_recv(&dst->cr, m.kind == SIM_CREDIT))
		return SIM_PROTO;
	if (krdma_credit_grant(&dst->cr, m.credits, m.ack))
		return SIM_PROTO;
	if (m.kind == SIM_CREDIT) {
		dst->ctl_posted++;
		krdma_credit_reposted(&dst->cr, true);
		ret = sim_maybe_ctl(s, !from);
		if (ret)
			return ret;
	} else {
		dst->rx_ready++;
		dst->received++;
	}
	return sim_maybe_ctl(s, !from);
}

/* krdma_recv_ex(): the application takes a message, the buffer reposts. */
static int sim_take(struct sim *s, int side)
{
	struct sim_end *e = &s->e[side];

	e->rx_ready--;
	e->data_posted++;
	krdma_credit_reposted(&e->cr, false);
	return sim_maybe_ctl(s, side);
}

/* Laws that hold between any two steps. */
static int sim_check(struct sim *s)
{
	int i;

	for (i = 0; i < 2; i++) {
		const struct sim_end *a = &s->e[i], *b = &s->e[!i];
		u32 sends = 0, back = 0, ctl = 0, acks = 0, k;

		if (a->cr.credits > s->depth || a->data_posted > s->depth ||
		    a->ctl_posted > 1)
			return SIM_OVER_DEPTH;
		/* An ack owed can always go (krdma_credit_imm_needs_hdr). */
		if (a->cr.owe_ctl_ack && !a->cr.credits)
			return SIM_ACK_STRANDED;
		for (k = a->head; k != a->tail; k++) {
			const struct sim_msg *m = &a->wire[k % SIM_WIRE];

			sends += m->kind != SIM_CREDIT;
			ctl += m->kind == SIM_CREDIT;
		}
		for (k = b->head; k != b->tail; k++) {
			back += b->wire[k % SIM_WIRE].credits;
			acks += b->wire[k % SIM_WIRE].ack;
		}
		/* Each of b's data receives is in exactly one place. */
		if (a->cr.credits + sends + b->rx_ready + b->cr.owed + back !=
		    s->depth)
			return SIM_LOST;
		/* And so is its one credit receive. */
		if (a->cr.ctl_token + ctl + b->cr.owe_ctl_ack + acks != 1)
			return SIM_LOST;
	}
	return SIM_OK;
}

static bool sim_done(const struct sim *s)
{
	int i;

	for (i = 0; i < 2; i++)
		if (s->e[i].to_send || s->e[i].rx_ready ||
		    sim_inflight(&s->e[i]))
			return false;
	return true;
}

static enum sim_result sim_run_imm(struct sim *s, u32 depth, u64 seed,
				   u32 n0, u32 n1, enum sim_fault fault,
				   enum sim_imm imm)
{
	u32 steps;
	int i, ret;

	memset(s, 0, sizeof(*s));
	s->depth = depth;
	s->rng = seed;
	s->fault = fault;
	s->imm = imm;
	for (i = 0; i < 2; i++) {
		krdma_credit_init(&s->e[i].cr, depth);
		s->e[i].data_posted = depth;
		s->e[i].ctl_posted = 1;
	}
	s->e[0].to_send = n0;
	s->e[1].to_send = n1;

	for (steps = 0; steps < 1000000; steps++) {
		u32 acts[6], n = 0, a;

		if (sim_done(s))
			return SIM_OK;
		for (i = 0; i < 2; i++) {
			if (s->e[i].to_send &&
			    (s->e[i].cr.credits ||
			     fault == SIM_FAULT_NO_CREDIT_CHECK))
				acts[n++] = 0 + i;
			if (sim_inflight(&s->e[i]))
				acts[n++] = 2 + i;
			if (s->e[i].rx_ready)
				acts[n++] = 4 + i;
		}
		if (!n)
			return SIM_DEADLOCK;
		a = acts[sim_rand(s, n)];
		i = a & 1;
		switch (a >> 1) {
		case 0: {
			bool notice = imm == SIM_IMM_ALL ||
				      (imm == SIM_IMM_MIXED && sim_rand(s, 2));

			/* Now and then a post fails before the real one. */
			ret = 0;
			if (sim_rand(s, 8) == 0 && s->e[i].cr.credits)
				ret = sim_send(s, i, true, notice);
			if (!ret)
				ret = sim_send(s, i, false, notice);
			break;
		}
		case 1:
			ret = sim_deliver(s, i);
			break;
		default:
			ret = sim_take(s, i);
			break;
		}
		/* A faulty sender breaks the laws; let delivery catch it. */
		if (!ret && fault == SIM_FAULT_NONE)
			ret = sim_check(s);
		if (ret)
			return ret;
	}
	return SIM_LIMIT;
}

static enum sim_result sim_run(struct sim *s, u32 depth, u64 seed,
			       u32 n0, u32 n1, enum sim_fault fault)
{
	return sim_run_imm(s, depth, seed, n0, n1, fault, SIM_IMM_NONE);
}

/*
 * Seeds 1..@seeds at several depths, traffic both ways (one way for every
 * third seed); @bare and @msgs add up the two forms of notice.
 */
static void sim_sweep(struct kunit *test, enum sim_imm imm, u64 seeds,
		      u32 *bare, u32 *msgs)
{
	static const u32 depths[] = { 1, 2, 3, 4, 7, 16, 64 };
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	u64 seed;
	int d;

	KUNIT_ASSERT_NOT_NULL(test, s);
	for (d = 0; d < ARRAY_SIZE(depths); d++) {
		for (seed = 1; seed <= seeds; seed++) {
			u32 n0 = 50 + seed * 7, n1 = seed % 3 ? 300 - seed : 0;

			KUNIT_ASSERT_EQ_MSG(test,
					    sim_run_imm(s, depths[d], seed, n0, n1,
							SIM_FAULT_NONE, imm),
					    SIM_OK, "depth %u seed %llu",
					    depths[d], seed);
			KUNIT_EXPECT_EQ(test, s->e[1].received, n0);
			KUNIT_EXPECT_EQ(test, s->e[0].received, n1);
			*bare += s->imm_bare;
			*msgs += s->imm_msgs;
		}
	}
}

static void credit_sim_seeds(struct kunit *test)
{
	u32 bare = 0, msgs = 0;

	sim_sweep(test, SIM_IMM_NONE, 40, &bare, &msgs);
	KUNIT_EXPECT_EQ(test, bare + msgs, 0u);
}

/* Messages and write-with-immediate notices mixed, both ways. */
static void credit_sim_seeds_imm(struct kunit *test)
{
	u32 bare = 0, msgs = 0;

	sim_sweep(test, SIM_IMM_MIXED, 20, &bare, &msgs);
	/* Both forms of notice were exercised. */
	KUNIT_EXPECT_GT(test, bare, 0u);
	KUNIT_EXPECT_GT(test, msgs, 0u);
}

/*
 * One-way traffic: the receiver never sends data, so every credit comes
 * back in CREDIT messages.  Without them (or with the ack rule wrong) the
 * sender stalls for good.  A stream of notices (SIM_IMM_ALL) is the hard
 * case: only a notice can give the receiver its token back.  Before
 * KRDMA_MSG_IMM it stalled after depth + depth / 2 notices.
 */
static void sim_one_way(struct kunit *test, enum sim_imm imm)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);
	u32 depth;

	KUNIT_ASSERT_NOT_NULL(test, s);
	for (depth = 1; depth <= 9; depth++) {
		KUNIT_ASSERT_EQ_MSG(test, sim_run_imm(s, depth, depth, 1000, 0,
						      SIM_FAULT_NONE, imm),
				    SIM_OK, "depth %u", depth);
		KUNIT_EXPECT_EQ(test, s->e[1].received, 1000u);
		/* Credits in batches: not one CREDIT message per message. */
		if (depth >= 4)
			KUNIT_EXPECT_LT(test, s->ctl_msgs, 1000u);
		KUNIT_EXPECT_GT(test, s->ctl_msgs, 0u);
		if (imm != SIM_IMM_ALL)
			continue;
		KUNIT_EXPECT_EQ(test, s->imm_msgs + s->imm_bare, 1000u);
		/* One header per CREDIT message, no more. */
		KUNIT_EXPECT_LE(test, s->imm_msgs, s->ctl_msgs);
		KUNIT_EXPECT_GT(test, s->imm_msgs, 0u);
		/* The rest go as real WRITE_WITH_IMMs. */
		if (depth >= 8)
			KUNIT_EXPECT_GT(test, s->imm_bare, 500u);
	}
}

static void credit_sim_one_way(struct kunit *test)
{
	sim_one_way(test, SIM_IMM_NONE);
}

static void credit_sim_one_way_imm(struct kunit *test)
{
	sim_one_way(test, SIM_IMM_ALL);
}

/* The simulation itself notices the failures it is there to find. */
static void credit_sim_catches_faults(struct kunit *test)
{
	struct sim *s = kunit_kzalloc(test, sizeof(*s), GFP_KERNEL);

	enum sim_result r;

	KUNIT_ASSERT_NOT_NULL(test, s);
	/*
	 * A sender past its credits: the receiver sees it (SIM_PROTO,
	 * krdma_credit_recv()) when a receive was free for the message,
	 * else the device would have (SIM_RNR).
	 */
	r = sim_run(s, 4, 7, 100, 0, SIM_FAULT_NO_CREDIT_CHECK);
	KUNIT_EXPECT_TRUE_MSG(test, r == SIM_PROTO || r == SIM_RNR,
			      "result %d", r);
	KUNIT_EXPECT_EQ(test, sim_run(s, 4, 7, 100, 0, SIM_FAULT_NO_CTL),
			SIM_DEADLOCK);
	KUNIT_EXPECT_EQ(test, s->e[0].cr.credits, 0u);
	/* Notices that never carry the ack: the old stall. */
	KUNIT_EXPECT_EQ(test, sim_run_imm(s, 4, 7, 100, 0, SIM_FAULT_IMM_NO_HDR,
					  SIM_IMM_ALL), SIM_DEADLOCK);
	KUNIT_EXPECT_LT(test, s->e[1].received, 100u);
}

static struct kunit_case krdma_credit_cases[] = {
	KUNIT_CASE(credit_recv_bounds),
	KUNIT_CASE(credit_init_full),
	KUNIT_CASE(credit_take_until_empty),
	KUNIT_CASE(credit_agreed_keeps_owed),
	KUNIT_CASE(credit_agreed_overrun),
	KUNIT_CASE(credit_grant_bounds),
	KUNIT_CASE(credit_grant_ctl_ack),
	KUNIT_CASE(credit_reposted_kinds),
	KUNIT_CASE(credit_ctl_threshold),
	KUNIT_CASE(credit_ctl_ack_rule),
	KUNIT_CASE(credit_sent_clears),
	KUNIT_CASE(credit_sim_seeds),
	KUNIT_CASE(credit_sim_one_way),
	KUNIT_CASE(credit_sim_seeds_imm),
	KUNIT_CASE(credit_sim_one_way_imm),
	KUNIT_CASE(credit_sim_catches_faults),
	{}
};

static struct kunit_suite krdma_credit_suite = {
	.name = "krdma_credit",
	.test_cases = krdma_credit_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_state: the connection state machine                           */
/* ------------------------------------------------------------------ */

#define ST_REFUSED	-1
#define NR_STATES	(KRDMA_CONN_CLOSED + 1)
#define NEXT(st, ev)	krdma_conn_next_state(st, KRDMA_CONN_EV_##ev)

/*
 * The table written out, one row per state, one column per event in
 * enum order: ESTABLISHED, FAILED, PEER_DISCONNECTED, TEARDOWN_OK,
 * TEARDOWN_ERR.
 */
static const int state_table[NR_STATES][KRDMA_CONN_EV_MAX] = {
	[KRDMA_CONN_CONNECTING] = {
		KRDMA_CONN_CONNECTED, KRDMA_CONN_ERROR, ST_REFUSED,
		KRDMA_CONN_DISCONNECTED, KRDMA_CONN_ERROR,
	},
	[KRDMA_CONN_CONNECTED] = {
		ST_REFUSED, KRDMA_CONN_ERROR, KRDMA_CONN_DISCONNECTED,
		KRDMA_CONN_DISCONNECTED, KRDMA_CONN_ERROR,
	},
	[KRDMA_CONN_DISCONNECTED] = {
		ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED,
	},
	[KRDMA_CONN_ERROR] = {
		ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED,
	},
	[KRDMA_CONN_CLOSED] = {
		ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED, ST_REFUSED,
	},
};

static void state_every_pair(struct kunit *test)
{
	int st, ev, next;

	for (st = 0; st < NR_STATES; st++) {
		for (ev = 0; ev < KRDMA_CONN_EV_MAX; ev++) {
			next = krdma_conn_next_state(st, ev);
			if (state_table[st][ev] == ST_REFUSED)
				KUNIT_EXPECT_LT_MSG(test, next, 0,
						    "state %d event %d", st, ev);
			else
				KUNIT_EXPECT_EQ_MSG(test, next,
						    state_table[st][ev],
						    "state %d event %d", st, ev);
		}
	}
}

/* The bug the table fixed: a handshake ending after a failure. */
static void state_established_only_from_connecting(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, NEXT(KRDMA_CONN_CONNECTING, ESTABLISHED),
			KRDMA_CONN_CONNECTED);
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_ERROR, ESTABLISHED), 0);
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_DISCONNECTED, ESTABLISHED), 0);
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_CONNECTED, ESTABLISHED), 0);
}

/*
 * What an owner sees is what ended the connection first: device removal
 * (devremove.sh wants "error", -ENODEV) stays an error when the peer's
 * DISCONNECTED or the final teardown follow; a peer's disconnect stays a
 * disconnect when flushes fail the operations in flight.
 */
static void state_first_end_wins(struct kunit *test)
{
	int st;

	st = NEXT(KRDMA_CONN_CONNECTED, FAILED);
	KUNIT_ASSERT_EQ(test, st, KRDMA_CONN_ERROR);
	KUNIT_EXPECT_LT(test, NEXT(st, PEER_DISCONNECTED), 0);
	KUNIT_EXPECT_LT(test, NEXT(st, TEARDOWN_OK), 0);

	st = NEXT(KRDMA_CONN_CONNECTED, PEER_DISCONNECTED);
	KUNIT_ASSERT_EQ(test, st, KRDMA_CONN_DISCONNECTED);
	KUNIT_EXPECT_LT(test, NEXT(st, FAILED), 0);
	KUNIT_EXPECT_LT(test, NEXT(st, TEARDOWN_ERR), 0);
}

/* krdma_close() ends "disconnected", a teardown for an error "error". */
static void state_teardown_kinds(struct kunit *test)
{
	int st;

	for (st = KRDMA_CONN_CONNECTING; st <= KRDMA_CONN_CONNECTED; st++) {
		KUNIT_EXPECT_EQ(test, NEXT(st, TEARDOWN_OK),
				KRDMA_CONN_DISCONNECTED);
		KUNIT_EXPECT_EQ(test, NEXT(st, TEARDOWN_ERR), KRDMA_CONN_ERROR);
	}
	/* A peer's DISCONNECTED before ESTABLISHED is left to the CM. */
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_CONNECTING, PEER_DISCONNECTED),
			0);
}

/* CLOSED is in the uAPI but no event leads there. */
static void state_closed_unreachable(struct kunit *test)
{
	int st, ev;

	for (st = 0; st < NR_STATES; st++)
		for (ev = 0; ev < KRDMA_CONN_EV_MAX; ev++)
			KUNIT_EXPECT_NE(test, krdma_conn_next_state(st, ev),
					KRDMA_CONN_CLOSED);
}

/* Values outside the enums (a corrupted conn->state) change nothing. */
static void state_out_of_range(struct kunit *test)
{
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_CONNECTED, MAX), 0);
	KUNIT_EXPECT_LT(test, NEXT(KRDMA_CONN_CONNECTING, MAX), 0);
	KUNIT_EXPECT_LT(test, NEXT(NR_STATES, FAILED), 0);
	KUNIT_EXPECT_LT(test, NEXT(NR_STATES, TEARDOWN_OK), 0);
}

/* Which later cause replaces the error a connection recorded. */
static const struct {
	int old;
	bool old_weak, peer_left, weak;
	enum ib_wc_status wc;
	bool replaces;
} cause_cases[] = {
	/* No error yet: any. */
	{ 0, false, false, true, IB_WC_WR_FLUSH_ERR, true },
	/* A cause stays, whatever comes after it. */
	{ -EREMOTEIO, false, false, false, IB_WC_REM_ACCESS_ERR, false },
	{ -ETIMEDOUT, false, true, false, IB_WC_REM_ACCESS_ERR, false },
	/* A placeholder stays against another placeholder. */
	{ -ECONNRESET, true, false, true, IB_WC_WR_FLUSH_ERR, false },
	{ -ECONNRESET, true, true, true, IB_WC_SUCCESS, false },
	/* A flush: the failed completion behind it replaces it, any. */
	{ -ECONNRESET, true, false, false, IB_WC_RETRY_EXC_ERR, true },
	{ -ECONNRESET, true, false, false, IB_WC_REM_ACCESS_ERR, true },
	/*
	 * The peer's disconnect: an error of ours it may have left for, a
	 * live peer's NAK, device removal (no completion) replace it...
	 */
	{ -ECONNRESET, true, true, false, IB_WC_REM_ACCESS_ERR, true },
	{ -ECONNRESET, true, true, false, IB_WC_REM_OP_ERR, true },
	{ -ECONNRESET, true, true, false, IB_WC_SUCCESS, true },
	/* ...but not a timeout that its leaving explains. */
	{ -ECONNRESET, true, true, false, IB_WC_RETRY_EXC_ERR, false },
	{ -ECONNRESET, true, true, false, IB_WC_RNR_RETRY_EXC_ERR, false },
	{ -ECONNRESET, true, true, false, IB_WC_RESP_TIMEOUT_ERR, false },
};

static void state_cause_replaces(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cause_cases); i++)
		KUNIT_EXPECT_EQ_MSG(test,
				    krdma_cause_replaces(cause_cases[i].old,
							 cause_cases[i].old_weak,
							 cause_cases[i].peer_left,
							 cause_cases[i].weak,
							 cause_cases[i].wc),
				    cause_cases[i].replaces, "case %u", i);
}

static struct kunit_case krdma_state_cases[] = {
	KUNIT_CASE(state_every_pair),
	KUNIT_CASE(state_established_only_from_connecting),
	KUNIT_CASE(state_first_end_wins),
	KUNIT_CASE(state_teardown_kinds),
	KUNIT_CASE(state_closed_unreachable),
	KUNIT_CASE(state_out_of_range),
	KUNIT_CASE(state_cause_replaces),
	{}
};

static struct kunit_suite krdma_state_suite = {
	.name = "krdma_state",
	.test_cases = krdma_state_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_token: ranges, atomic targets, rights                         */
/* ------------------------------------------------------------------ */

static void token_range_inside(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 0, 4096), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 0, 1), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 4095, 1), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 100, 3996), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(U32_MAX, 0, U32_MAX), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(U32_MAX, U32_MAX - 1, 1), 0);
	/* Empty at the very end is inside: callers refuse empty transfers. */
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 4096, 0), 0);
	KUNIT_EXPECT_EQ(test, krdma_token_range(0, 0, 0), 0);
}

static void token_range_outside(struct kunit *test)
{
	/* One byte past the end, at either edge. */
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 0, 4097), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 4096, 1), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 4095, 2), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 4097, 0), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(0, 0, 1), -ERANGE);
	/* Sums that wrap 64 bits must not come out small. */
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, U64_MAX, 1), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, U64_MAX - 7, 16),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 8, U64_MAX), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(4096, 1, U64_MAX - 1),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(U32_MAX, (u64)U32_MAX + 1, 0),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_token_range(U32_MAX, 1ULL << 32,
						1ULL << 63), -ERANGE);
}

static void token_atomic_target(struct kunit *test)
{
	struct krdma_token t = { .addr = 0x10000, .rkey = 1, .length = 64 };

	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 0), 0);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 56), 0);	/* last 8 */
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 57), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 64), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, U64_MAX - 3), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 4), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 1), -EINVAL);
	/* Alignment is of the peer's address, not of the offset. */
	t.addr = 0x10004;
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 4), 0);
	/* A token shorter than 8 bytes has no target at all. */
	t.addr = 0x10000;
	t.length = 7;
	KUNIT_EXPECT_EQ(test, krdma_atomic_target(&t, 0), -ERANGE);
}

static void token_access_valid(struct kunit *test)
{
	int a;

	KUNIT_EXPECT_EQ(test, krdma_access_valid(0), -EINVAL);
	for (a = 1; a <= KRDMA_ACCESS_ALL; a++)
		KUNIT_EXPECT_EQ_MSG(test, krdma_access_valid(a), 0,
				    "rights 0x%x", a);
	KUNIT_EXPECT_EQ(test, krdma_access_valid(0x8), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_access_valid(KRDMA_ACCESS_REMOTE_READ | 0x8),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_access_valid(1 << 30), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_access_valid(-1), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_access_valid(INT_MIN |
						 KRDMA_ACCESS_REMOTE_WRITE),
			-EINVAL);
}

static void token_access_atomics(struct kunit *test)
{
	int a;

	for (a = 1; a <= KRDMA_ACCESS_ALL; a++) {
		bool atomic = a & KRDMA_ACCESS_REMOTE_ATOMIC;

		KUNIT_EXPECT_EQ(test, krdma_access_supported(a, true), 0);
		KUNIT_EXPECT_EQ_MSG(test, krdma_access_supported(a, false),
				    atomic ? -EOPNOTSUPP : 0, "rights 0x%x", a);
	}
}

static void token_ib_access(struct kunit *test)
{
	const int remote = IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_ATOMIC;
	int a, ib;

	KUNIT_EXPECT_EQ(test, krdma_ib_access(KRDMA_ACCESS_REMOTE_READ),
			IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ);
	KUNIT_EXPECT_EQ(test, krdma_ib_access(KRDMA_ACCESS_REMOTE_WRITE),
			IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	KUNIT_EXPECT_EQ(test, krdma_ib_access(KRDMA_ACCESS_REMOTE_ATOMIC),
			IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_ATOMIC);
	for (a = 1; a <= KRDMA_ACCESS_ALL; a++) {
		ib = krdma_ib_access(a);
		/* Exactly the rights asked for reach the peer. */
		KUNIT_EXPECT_EQ_MSG(test,
				    !!(ib & IB_ACCESS_REMOTE_READ),
				    !!(a & KRDMA_ACCESS_REMOTE_READ),
				    "rights 0x%x", a);
		KUNIT_EXPECT_EQ_MSG(test,
				    !!(ib & IB_ACCESS_REMOTE_WRITE),
				    !!(a & KRDMA_ACCESS_REMOTE_WRITE),
				    "rights 0x%x", a);
		KUNIT_EXPECT_EQ_MSG(test,
				    !!(ib & IB_ACCESS_REMOTE_ATOMIC),
				    !!(a & KRDMA_ACCESS_REMOTE_ATOMIC),
				    "rights 0x%x", a);
		/* The verbs refuse remote write or atomic without it. */
		KUNIT_EXPECT_TRUE(test, ib & IB_ACCESS_LOCAL_WRITE);
		KUNIT_EXPECT_EQ(test, ib & ~(remote | IB_ACCESS_LOCAL_WRITE),
				0);
	}
}

/* krdma_queue.h: what a depth asks of the device, and what is refused */

/* rxe's limits as 6.1 and 6.12 report them */
static const struct ib_device_attr queue_rxe = {
	.max_qp_wr = 0x4000, .max_cqe = 0x7fff, .max_send_sge = 32,
	.max_sge_rd = 32, .max_fast_reg_page_list_len = 512,
};

/* siw's: one SGE per READ, 256 pages per MR */
static const struct ib_device_attr queue_siw = {
	.max_qp_wr = 0x8000, .max_cqe = 0x8000 * 100, .max_send_sge = 6,
	.max_sge_rd = 1, .max_fast_reg_page_list_len = 256,
};

static void queue_sizes_rxe(struct kunit *test)
{
	struct krdma_queue_sizes q;

	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(1, 256, 32, 0, &queue_rxe, &q), 0);
	KUNIT_EXPECT_EQ(test, q.chunk_pages, 256u);
	KUNIT_EXPECT_EQ(test, q.send_sge, 32u);
	KUNIT_EXPECT_EQ(test, q.rw_wr, 8u);
	/* a message, the credit message, a slot of 8 WRs, heartbeat, drain */
	KUNIT_EXPECT_EQ(test, q.send_wr, 1u + 1 + 8 + 1 + 1);
	KUNIT_EXPECT_EQ(test, q.recv_wr, 4u);
	KUNIT_EXPECT_EQ(test, q.cqe, 12u + 3 + 4);
	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(1024, 256, 32, 0, &queue_rxe, &q), 0);
	KUNIT_EXPECT_EQ(test, q.send_wr, 1024u + 1 + 1024 * 8 + 1 + 1);
	KUNIT_EXPECT_EQ(test, q.cqe, q.send_wr + 3 * 1024 + 1027);
}

static void queue_sizes_siw(struct kunit *test)
{
	struct krdma_queue_sizes q;
	u32 d;

	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(32, 256, 32, 0, &queue_siw, &q), 0);
	KUNIT_EXPECT_EQ(test, q.send_sge, 6u);
	KUNIT_EXPECT_EQ(test, q.rw_wr, 256u);
	KUNIT_EXPECT_EQ(test, q.send_wr, 32u + 1 + 32 * 256 + 1 + 1);
	/* The deepest queue siw holds: (0x8000 - 3) / (1 + 256 + 3). */
	d = (0x8000 - 3) / 260;
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(d, 256, 32, 0, &queue_siw, &q), 0);
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(d + 1, 256, 32, 0, &queue_siw, &q),
			-EINVAL);
	KUNIT_EXPECT_STREQ(test, q.limit, "send queue entries");
	KUNIT_EXPECT_EQ(test, q.need, (d + 1) * 260 + 3);
	KUNIT_EXPECT_EQ(test, q.have, 0x8000u);
}

/* A depth whose completions do not fit the device's CQ is refused. */
static void queue_sizes_cq_refused(struct kunit *test)
{
	struct ib_device_attr a = queue_rxe;
	struct krdma_queue_sizes q;

	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(64, 256, 32, 0, &a, &q), 0);
	a.max_cqe = q.cqe;
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(64, 256, 32, 0, &a, &q), 0);
	a.max_cqe = q.cqe - 1;
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(64, 256, 32, 0, &a, &q), -EINVAL);
	KUNIT_EXPECT_STREQ(test, q.limit, "completion queue entries");
	KUNIT_EXPECT_EQ(test, q.need, a.max_cqe + 1);
	KUNIT_EXPECT_EQ(test, q.have, a.max_cqe);
}

/* Nothing wraps at the largest depth on a device with tiny limits. */
static void queue_sizes_no_overflow(struct kunit *test)
{
	struct ib_device_attr a = queue_siw;
	struct krdma_queue_sizes q;

	a.max_qp_wr = 16;
	a.max_fast_reg_page_list_len = 0;	/* no limit: 256 pages */
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(1, 256, 32, 0, &a, &q), -EINVAL);
	KUNIT_EXPECT_EQ(test, q.chunk_pages, 256u);
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(U32_MAX, 256, 32, 0, &a, &q),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, q.need, U32_MAX);
	a.max_qp_wr = 1 << 30;
	a.max_cqe = 1 << 30;
	a.max_sge_rd = 0;	/* taken as 1 */
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(4, 256, 32, 0, &a, &q), 0);
	KUNIT_EXPECT_EQ(test, q.rw_wr, 256u);
}

/*
 * The MR pool: two send queue entries per pool MR (its REG_MR and its
 * LOCAL_INV), and so two completions, on top of everything else; a pool
 * the send queue cannot hold is refused like a depth.
 */
static void queue_sizes_mr_pool(struct kunit *test)
{
	struct ib_device_attr a = queue_siw;
	struct krdma_queue_sizes q0, q;
	u32 room;

	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(32, 256, 32, 0, &a, &q0), 0);
	KUNIT_ASSERT_EQ(test, krdma_queue_sizes(32, 256, 32, 128, &a, &q), 0);
	KUNIT_EXPECT_EQ(test, q.send_wr, q0.send_wr + 2 * 128);
	KUNIT_EXPECT_EQ(test, q.cqe, q0.cqe + 2 * 128);
	KUNIT_EXPECT_EQ(test, q.recv_wr, q0.recv_wr);
	KUNIT_EXPECT_EQ(test, q.rw_wr, q0.rw_wr);
	KUNIT_EXPECT_EQ(test, KRDMA_POOL_MR_WR, 2);
	/* The largest pool that fits next to depth 32 on siw, and one more. */
	room = a.max_qp_wr - (q0.send_wr + KRDMA_RW_QP_FACTOR * 32);
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(32, 256, 32, room / 2, &a, &q),
			0);
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(32, 256, 32, room / 2 + 1, &a,
						&q), -EINVAL);
	KUNIT_EXPECT_STREQ(test, q.limit, "send queue entries");
	KUNIT_EXPECT_EQ(test, q.need, a.max_qp_wr - room % 2 + 2);
	/* No wrap with the largest pool and depth either. */
	KUNIT_EXPECT_EQ(test, krdma_queue_sizes(U32_MAX, 256, 32, U32_MAX, &a,
						&q), -EINVAL);
	KUNIT_EXPECT_EQ(test, q.need, U32_MAX);
}

/*
 * Pages per pool MR: KRDMA_MR_POOL_PAGES_DEV takes the device's bound (rxe
 * 512, siw 256) up to the cap; an explicit size the device cannot map is
 * refused, one it can is kept.
 */
static void queue_pool_pages(struct kunit *test)
{
	const u32 dev = KRDMA_MR_POOL_PAGES_DEV, cap = KRDMA_MAX_MR_POOL_PAGES;

	KUNIT_EXPECT_EQ(test, cap, 512u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(dev, 512, cap), 512u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(dev, 256, cap), 256u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(dev, 4096, cap), cap);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(dev, 0, cap), cap);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(32, 256, cap), 32u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(256, 256, cap), 256u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(257, 256, cap), 0u);
	KUNIT_EXPECT_EQ(test, krdma_pool_pages(512, 0, cap), 512u);
}

static struct kunit_case krdma_queue_cases[] = {
	KUNIT_CASE(queue_sizes_rxe),
	KUNIT_CASE(queue_sizes_mr_pool),
	KUNIT_CASE(queue_pool_pages),
	KUNIT_CASE(queue_sizes_siw),
	KUNIT_CASE(queue_sizes_cq_refused),
	KUNIT_CASE(queue_sizes_no_overflow),
	{}
};

static struct kunit_suite krdma_queue_suite = {
	.name = "krdma_queue",
	.test_cases = krdma_queue_cases,
};

static struct kunit_case krdma_token_cases[] = {
	KUNIT_CASE(token_range_inside),
	KUNIT_CASE(token_range_outside),
	KUNIT_CASE(token_atomic_target),
	KUNIT_CASE(token_access_valid),
	KUNIT_CASE(token_access_atomics),
	KUNIT_CASE(token_ib_access),
	{}
};

static struct kunit_suite krdma_token_suite = {
	.name = "krdma_token",
	.test_cases = krdma_token_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_abi: /dev/krdma ioctl argument checks                         */
/* ------------------------------------------------------------------ */

#define UBUF		0x10000ULL		/* a user address */
#define KBUF		0xffff888000000000ULL	/* a kernel one */

static void abi_v4(struct krdma_ioc_addr *a, u16 port)
{
	memset(a, 0, sizeof(*a));
	a->family = AF_INET;
	a->port = port;
	a->addr[0] = 10;
	a->addr[3] = 1;
}

static void abi_listen_good(struct kunit *test)
{
	struct krdma_ioc_listen la = { .queue_depth = 16,
				       .max_msg_size = 4096 };
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	abi_v4(&la.addr, 7000);
	KUNIT_ASSERT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	KUNIT_EXPECT_EQ(test, ss.ss_family, AF_INET);
	KUNIT_EXPECT_EQ(test, ntohs(sin->sin_port), 7000);
	KUNIT_EXPECT_EQ(test, ntohl(sin->sin_addr.s_addr), 0x0a000001);
	/* Depth and size 0 mean the defaults; the limits themselves pass. */
	la.queue_depth = 0;
	la.max_msg_size = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	la.queue_depth = KRDMA_MAX_DEPTH;
	la.max_msg_size = KRDMA_MAX_MSG_SIZE;
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	la.max_msg_size = sizeof(struct krdma_token_wire);
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	/* Backlog 0 is the default; the limit itself passes. */
	la.backlog = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	la.backlog = KRDMA_MAX_BACKLOG;
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), 0);

	memset(&la.addr, 0, sizeof(la.addr));
	la.addr.family = AF_INET6;
	la.addr.port = 1;
	la.addr.scope_id = 3;
	la.addr.addr[15] = 1;
	KUNIT_ASSERT_EQ(test, krdma_abi_listen(&la, &ss), 0);
	KUNIT_EXPECT_EQ(test, ss.ss_family, AF_INET6);
	KUNIT_EXPECT_EQ(test, sin6->sin6_scope_id, 3u);
	KUNIT_EXPECT_TRUE(test, ipv6_addr_loopback(&sin6->sin6_addr));
}

static void abi_listen_bad(struct kunit *test)
{
	struct krdma_ioc_listen good = {}, la;
	struct sockaddr_storage ss;

	abi_v4(&good.addr, 7000);
#define LISTEN_EXPECT(field, val, err) do {				\
		la = good;						\
		la.field = (val);					\
		KUNIT_EXPECT_EQ_MSG(test, krdma_abi_listen(&la, &ss), err, \
				    #field " = " #val);			\
	} while (0)
	LISTEN_EXPECT(flags, 1, -EINVAL);
	LISTEN_EXPECT(reserved32, 1, -EINVAL);
	LISTEN_EXPECT(reserved, 1ULL << 63, -EINVAL);
	LISTEN_EXPECT(backlog, KRDMA_MAX_BACKLOG + 1, -EINVAL);
	LISTEN_EXPECT(backlog, U32_MAX, -EINVAL);
	LISTEN_EXPECT(queue_depth, KRDMA_MAX_DEPTH + 1, -EINVAL);
	LISTEN_EXPECT(queue_depth, U32_MAX, -EINVAL);
	LISTEN_EXPECT(max_msg_size, sizeof(struct krdma_token_wire) - 1,
		      -EINVAL);
	LISTEN_EXPECT(max_msg_size, KRDMA_MAX_MSG_SIZE + 1, -EINVAL);
	LISTEN_EXPECT(addr.family, 0, -EAFNOSUPPORT);
	LISTEN_EXPECT(addr.family, AF_UNIX, -EAFNOSUPPORT);
	LISTEN_EXPECT(addr.family, 0xffff, -EAFNOSUPPORT);
	LISTEN_EXPECT(addr.port, 0, -EINVAL);
	LISTEN_EXPECT(addr.scope_id, 1, -EINVAL);	/* IPv4 */
	LISTEN_EXPECT(addr.addr[4], 1, -EINVAL);	/* IPv6 bytes */
	LISTEN_EXPECT(addr.addr[15], 1, -EINVAL);
	/* The first bad field decides: flags before the family. */
	la = good;
	la.flags = 2;
	la.addr.family = 99;
	KUNIT_EXPECT_EQ(test, krdma_abi_listen(&la, &ss), -EINVAL);
#undef LISTEN_EXPECT
}

static void abi_connect_src(struct kunit *test)
{
	struct krdma_ioc_connect ca = {};
	struct sockaddr_storage dst, src;
	bool has_src = true;

	abi_v4(&ca.dst, 7000);
	/* An all-zero source is "none". */
	KUNIT_ASSERT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			0);
	KUNIT_EXPECT_FALSE(test, has_src);
	/* A source may have port 0 (any). */
	abi_v4(&ca.src, 0);
	KUNIT_ASSERT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			0);
	KUNIT_EXPECT_TRUE(test, has_src);
	KUNIT_EXPECT_EQ(test, src.ss_family, AF_INET);
	/* "None" must be all zero, not a family 0 with bytes behind it. */
	memset(&ca.src, 0, sizeof(ca.src));
	ca.src.port = 5;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);
	memset(&ca.src, 0, sizeof(ca.src));
	ca.src.family = AF_INET6;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);	/* families differ */
	ca.src.family = 77;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EAFNOSUPPORT);
	memset(&ca.src, 0, sizeof(ca.src));
	ca.dst.port = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);
	abi_v4(&ca.dst, 7000);
	ca.reserved32 = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);
	ca.reserved32 = 0;
	ca.reserved[1] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);
	ca.reserved[1] = 0;
	ca.queue_depth = KRDMA_MAX_DEPTH + 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_connect(&ca, &dst, &src, &has_src),
			-EINVAL);
}

static void abi_handle_reserved(struct kunit *test)
{
	static const char * const cmds[] = { "CLOSE", "UNREG", "REVOKE" };
	struct krdma_ioc_handle h = { .handle = 7 };
	struct krdma_ioc_accept aa = { .handle = 1, .timeout_ms = 5 };
	struct krdma_ioc_query q = { .handle = 1 };
	int i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		h.flags = 0;
		h.reserved = 0;
		KUNIT_EXPECT_EQ(test, krdma_abi_handle(&h, cmds[i]), 0);
		h.flags = 1U << 31;
		KUNIT_EXPECT_EQ(test, krdma_abi_handle(&h, cmds[i]), -EINVAL);
		h.flags = 0;
		h.reserved = 1;
		KUNIT_EXPECT_EQ(test, krdma_abi_handle(&h, cmds[i]), -EINVAL);
	}
	KUNIT_EXPECT_EQ(test, krdma_abi_accept(&aa), 0);
	aa.reserved[1] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_accept(&aa), -EINVAL);
	aa.reserved[1] = 0;
	aa.flags = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_accept(&aa), -EINVAL);

	KUNIT_EXPECT_EQ(test, krdma_abi_query(&q), 0);
	q.reserved[2] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_query(&q), -EINVAL);
	q.reserved[2] = 0;
	q.reserved32 = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_query(&q), -EINVAL);
	q.reserved32 = 0;
	q.flags = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_query(&q), -EINVAL);
	/* QUERY fills in the rest: what the caller left there is ignored. */
	q.flags = 0;
	q.credits = 99;
	q.error = -1;
	q.wc_status = 10;
	KUNIT_EXPECT_EQ(test, krdma_abi_query(&q), 0);
}

static void abi_msg(struct kunit *test)
{
	struct krdma_ioc_msg m = { .handle = 1, .buf = UBUF, .len = 100 };

	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), 0);
	m.len = 0;		/* empty messages are messages */
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), 0);
	m.len = KRDMA_IOC_MAX_MSG;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
	m.len = KRDMA_IOC_MAX_MSG + 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), -E2BIG);
	/* RECV may offer a larger buffer than any message. */
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), 0);
	m.len = KRDMA_IOC_MAX_XFER + 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), -E2BIG);
	m.len = U64_MAX;
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), -E2BIG);

	/* RECV checks its buffer first; SEND's copy does it later. */
	m.len = 100;
	m.buf = KBUF;
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), -EFAULT);
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
	m.buf = UBUF;
	/* SEND takes KRDMA_IOC_SEND_IMM, RECV no flag; no other bit. */
	m.flags = KRDMA_IOC_SEND_IMM;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), -EINVAL);
	m.flags = 2;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), -EINVAL);
	m.flags = KRDMA_IOC_SEND_IMM | 0x80000000;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), -EINVAL);
	m.flags = 0;
	/* msg_flags: SEND's is reserved, RECV's is output. */
	m.msg_flags = KRDMA_IOC_MSG_IMM;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), 0);
	m.msg_flags = 0;
	/* imm: SEND_IMM's value, else reserved; RECV's is output. */
	m.imm = 0xdeadbeef;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_abi_recv(&m), 0);
	m.flags = KRDMA_IOC_SEND_IMM;
	KUNIT_EXPECT_EQ(test, krdma_abi_send(&m), 0);
}

static void abi_reg(struct kunit *test)
{
	struct krdma_ioc_reg good = {
		.handle = 1, .access = KRDMA_IOC_ACCESS_REMOTE_WRITE,
		.buf = UBUF, .len = 4096,
	}, r;

	r = good;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), 0);
	r.access = KRDMA_IOC_ACCESS_REMOTE_READ | KRDMA_IOC_ACCESS_REMOTE_WRITE |
		   KRDMA_IOC_ACCESS_REMOTE_ATOMIC;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), 0);
	r.access = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -EINVAL);
	r.access = 0x8;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -EINVAL);
	r = good;
	r.len = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -EINVAL);
	r.len = KRDMA_IOC_MAX_XFER + 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -E2BIG);
	r.buf = KBUF;		/* too long is reported before not user */
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -E2BIG);
	r.len = 4096;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -EFAULT);
	r = good;
	r.reserved[0] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), -EINVAL);
	/* The output fields may hold anything on the way in. */
	r = good;
	r.mr = 5;
	r.token.rkey = 0x1234;
	KUNIT_EXPECT_EQ(test, krdma_abi_reg(&r), 0);
}

static void abi_rdma(struct kunit *test)
{
	struct krdma_ioc_rdma good = {
		.handle = 1, .buf = UBUF, .len = 4096,
		.token = { .addr = 0x1000, .rkey = 9, .length = 8192 },
		.offset = 4096,
	}, r;

	r = good;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), 0);
	r.offset = 4097;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), -ERANGE);
	r.offset = U64_MAX - 100;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "READ", false), -ERANGE);
	r.offset = 0;
	r.len = 8193;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "READ", false), -ERANGE);
	r.len = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "READ", false), -EINVAL);
	r.len = KRDMA_IOC_MAX_XFER + 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "READ", false), -E2BIG);
	/* Not user memory is found before the token's range. */
	r = good;
	r.buf = KBUF;
	r.offset = 1ULL << 40;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), -EFAULT);
	/* imm is WRITE_IMM's alone; any value goes there. */
	r = good;
	r.imm = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "READ", false), -EINVAL);
	r.imm = U32_MAX;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE_IMM", true), 0);
	r.reserved[0] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE_IMM", true), -EINVAL);
	r = good;
	r.len = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE_IMM", true), -EINVAL);
	r = good;
	r.reserved[1] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), -EINVAL);
	r = good;
	r.flags = 1;
	r.len = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_rdma(&r, "WRITE", false), -EINVAL);
}

static void abi_atomic(struct kunit *test)
{
	struct krdma_ioc_atomic good = {
		.handle = 1,
		.token = { .addr = 0x1000, .rkey = 9, .length = 64 },
		.offset = 56, .compare_add = 1,
	}, x;

	x = good;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), 0);
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), 0);
	/* swap is CAS's: FADD wants it zero. */
	x.swap = 5;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), 0);
	/* The output may hold anything on the way in. */
	x = good;
	x.old = U64_MAX;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), 0);
	/* Outside the token, also where offset + 8 overflows. */
	x.offset = 57;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -ERANGE);
	x.offset = 64;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), -ERANGE);
	x.offset = U64_MAX - 3;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), -ERANGE);
	x.offset = 0;
	x.token.length = 7;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -ERANGE);
	/* Alignment is the peer's address: token address plus offset. */
	x = good;
	x.offset = 4;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -EINVAL);
	x.token.addr = 0x1004;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), 0);
	x.offset = 0;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), -EINVAL);
	/* Reserved fields and flags, before the target. */
	x = good;
	x.flags = 1;
	x.offset = 3;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -EINVAL);
	x = good;
	x.reserved32 = 1;
	x.offset = 1ULL << 40;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "CAS", true), -EINVAL);
	x = good;
	x.reserved[1] = 1;
	KUNIT_EXPECT_EQ(test, krdma_abi_atomic(&x, "FADD", false), -EINVAL);
}

static struct kunit_case krdma_abi_cases[] = {
	KUNIT_CASE(abi_listen_good),
	KUNIT_CASE(abi_listen_bad),
	KUNIT_CASE(abi_connect_src),
	KUNIT_CASE(abi_handle_reserved),
	KUNIT_CASE(abi_msg),
	KUNIT_CASE(abi_reg),
	KUNIT_CASE(abi_rdma),
	KUNIT_CASE(abi_atomic),
	{}
};

static struct kunit_suite krdma_abi_suite = {
	.name = "krdma_abi",
	.test_cases = krdma_abi_cases,
};

/* ------------------------------------------------------------------ */
/* krdma_sess: a session's connect request and its retry decisions     */
/* ------------------------------------------------------------------ */

static const uuid_t sess_id = UUID_INIT(0x01234567, 0x89ab, 0xcdef, 0x01,
					0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
					0xef);

/* Encode, then decode from a buffer of exactly the encoded length. */
static void sess_pdata_round_trip(struct kunit *test)
{
	static const u8 user[KRDMA_SESSION_MAX_USER_DATA] = {
		1, 2, 3, 4, 5, 6, 7, 8 };
	u8 buf[KRDMA_MAX_PRIVATE_DATA], *exact;
	static const u32 gens[] = { 0, 1, 0x01020304, U32_MAX };
	/* index, count */
	static const u32 sets[][2] = {
		{ 0, 1 }, { 0, 4 }, { 3, 4 },
		{ KRDMA_SESSION_MAX_CONNS - 1, KRDMA_SESSION_MAX_CONNS },
	};
	int g, k, ulen, len, n;
	u32 gen, idx, nr;
	uuid_t id;

	KUNIT_EXPECT_EQ(test, KRDMA_SESSION_PDATA_HDR + KRDMA_SESSION_MAX_USER_DATA,
			KRDMA_MAX_PRIVATE_DATA);
	for (g = 0; g < ARRAY_SIZE(gens); g++) {
		for (k = 0; k < ARRAY_SIZE(sets); k++) {
			for (ulen = 0; ulen <= KRDMA_SESSION_MAX_USER_DATA; ulen++) {
				len = krdma_sess_pdata_encode(buf, &sess_id, gens[g],
							      sets[k][0], sets[k][1],
							      user, ulen);
				KUNIT_ASSERT_EQ(test, len, KRDMA_SESSION_PDATA_HDR + ulen);
				exact = kunit_kmalloc(test, len, GFP_KERNEL);
				KUNIT_ASSERT_NOT_NULL(test, exact);
				memcpy(exact, buf, len);
				n = krdma_sess_pdata_decode(exact, len, &id, &gen,
							    &idx, &nr);
				KUNIT_EXPECT_EQ(test, n, ulen);
				KUNIT_EXPECT_TRUE(test, uuid_equal(&id, &sess_id));
				KUNIT_EXPECT_EQ(test, gen, gens[g]);
				KUNIT_EXPECT_EQ(test, idx, sets[k][0]);
				KUNIT_EXPECT_EQ(test, nr, sets[k][1]);
				KUNIT_EXPECT_EQ(test,
						memcmp(exact + KRDMA_SESSION_PDATA_HDR,
						       user, ulen), 0);
			}
		}
	}
}

/*
 * The wire layout is fixed: magic, id, big endian generation, the
 * connection's index and the set's count, bytes.
 */
static void sess_pdata_layout(struct kunit *test)
{
	u8 buf[KRDMA_MAX_PRIVATE_DATA];

	KUNIT_ASSERT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0x0a0b0c0d,
						      5, 9, "xy", 2), 26);
	KUNIT_EXPECT_EQ(test, buf[0], 0x6b);
	KUNIT_EXPECT_EQ(test, buf[1], 0x53);
	KUNIT_EXPECT_EQ(test, memcmp(buf + 2, sess_id.b, UUID_SIZE), 0);
	KUNIT_EXPECT_EQ(test, buf[18], 0x0a);
	KUNIT_EXPECT_EQ(test, buf[19], 0x0b);
	KUNIT_EXPECT_EQ(test, buf[20], 0x0c);
	KUNIT_EXPECT_EQ(test, buf[21], 0x0d);
	KUNIT_EXPECT_EQ(test, buf[22], 5);
	KUNIT_EXPECT_EQ(test, buf[23], 9);
	KUNIT_EXPECT_EQ(test, memcmp(buf + 24, "xy", 2), 0);
}

static void sess_pdata_bad(struct kunit *test)
{
	const u32 hdr = KRDMA_SESSION_PDATA_HDR, max = KRDMA_MAX_PRIVATE_DATA;
	u8 buf[KRDMA_MAX_PRIVATE_DATA + 1] = {};
	u32 gen = 7, idx = 7, nr = 7;

	/* The consumer's bytes must fit; NULL with a length is refused. */
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0, 0, 1, buf,
						      KRDMA_SESSION_MAX_USER_DATA + 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0, 0, 1,
						      NULL, 1),
			-EINVAL);
	/* An index past the set, an empty set, one past the most. */
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0, 4, 4,
						      NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0, 0, 0,
						      NULL, 0),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 0, 0,
						      KRDMA_SESSION_MAX_CONNS + 1,
						      NULL, 0),
			-EINVAL);
	KUNIT_ASSERT_EQ(test, krdma_sess_pdata_encode(buf, &sess_id, 3, 1, 2,
						      NULL, 0),
			KRDMA_SESSION_PDATA_HDR);
	/* Too short, too long, no data, a wrong magic byte: no session. */
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr - 1, NULL, &gen,
						      NULL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, max + 1, NULL, &gen,
						      NULL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(NULL, 0, NULL, &gen,
						      NULL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, gen, 7);
	buf[1] ^= 1;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, NULL,
						      NULL, NULL),
			-EINVAL);
	buf[1] ^= 1;
	buf[0] ^= 0x80;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, NULL,
						      NULL, NULL),
			-EINVAL);
	buf[0] ^= 0x80;
	/* A peer's index past its count, a count of 0 or past the most. */
	buf[22] = 2;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, NULL,
						      &idx, &nr),
			-EINVAL);
	buf[22] = 0;
	buf[23] = 0;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, NULL,
						      &idx, &nr),
			-EINVAL);
	buf[23] = KRDMA_SESSION_MAX_CONNS + 1;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, NULL,
						      &idx, &nr),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, idx, 7);
	KUNIT_EXPECT_EQ(test, nr, 7);
	buf[22] = 1;
	buf[23] = 2;
	KUNIT_EXPECT_EQ(test, krdma_sess_pdata_decode(buf, hdr, NULL, &gen,
						      &idx, &nr), 0);
	KUNIT_EXPECT_EQ(test, gen, 3);
	KUNIT_EXPECT_EQ(test, idx, 1);
	KUNIT_EXPECT_EQ(test, nr, 2);
}

static void sess_retryable(struct kunit *test)
{
	static const int yes[] = {
		-ECONNREFUSED, -ECONNRESET, -ETIMEDOUT, -EHOSTUNREACH,
		-ENETUNREACH, -ENODEV, -EBUSY, -EAGAIN, -ENOMEM, -EADDRNOTAVAIL,
	};
	/* Another protocol, not krdma, bad parameters, a hook's refusal. */
	static const int no[] = {
		-EPROTONOSUPPORT, -EPROTO, -EINVAL, -EACCES, -EPERM, -ENOENT,
		-EKEYREJECTED, -ESTALE, 0, 1,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(yes); i++)
		KUNIT_EXPECT_TRUE_MSG(test, krdma_sess_retryable(yes[i]),
				      "errno %d", yes[i]);
	for (i = 0; i < ARRAY_SIZE(no); i++)
		KUNIT_EXPECT_FALSE_MSG(test, krdma_sess_retryable(no[i]),
				       "errno %d", no[i]);
}

static void sess_op_errno(struct kunit *test)
{
	/* Success stays success, whatever the connection. */
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(0, 0), 0);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(0, -ECONNRESET), 0);
	/* The caller's own fault on a working connection is the caller's. */
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-ERANGE, 0), -ERANGE);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-EAGAIN, 0), -EAGAIN);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-EMSGSIZE, 0), -EMSGSIZE);
	/* Anything on a failed connection means retry after reconnect. */
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-EACCES, -EACCES),
			KRDMA_ERR_RETRY);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-ECONNRESET, -ECONNRESET),
			KRDMA_ERR_RETRY);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-ERANGE, -ETIMEDOUT),
			KRDMA_ERR_RETRY);
	/* But a caller being killed, whose signal failed it, is told so. */
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-EINTR, -ECONNABORTED),
			-EINTR);
	KUNIT_EXPECT_EQ(test, krdma_sess_op_errno(-ERESTARTSYS, -ECONNRESET),
			-ERESTARTSYS);
	/* Distinct from the nowait "no slot now". */
	KUNIT_EXPECT_NE(test, KRDMA_ERR_RETRY, -EAGAIN);
	KUNIT_EXPECT_NE(test, KRDMA_ERR_RETRY, KRDMA_ERR_LOST);
}

static void sess_verdict(struct kunit *test)
{
	/* A reconnect from the same host replaces the live end. */
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(0, 1, true), KRDMA_SESS_REPLACE);
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(4, 9, true), KRDMA_SESS_REPLACE);
	/* Serial numbers: generation 0 after U32_MAX is newer. */
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(U32_MAX, 0, true),
			KRDMA_SESS_REPLACE);
	/* The same or an older generation is a late duplicate. */
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(3, 3, true), KRDMA_SESS_STALE);
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(3, 2, true), KRDMA_SESS_STALE);
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(0, U32_MAX, true),
			KRDMA_SESS_STALE);
	/* Another host never replaces, newer or not: it waits. */
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(0, 1, false), KRDMA_SESS_BUSY);
	KUNIT_EXPECT_EQ(test, krdma_sess_verdict(3, 2, false), KRDMA_SESS_BUSY);
	/* What the session makes of the two refusals. */
	KUNIT_EXPECT_TRUE(test, krdma_sess_retryable(-EBUSY));
	KUNIT_EXPECT_FALSE(test, krdma_sess_retryable(-ESTALE));
}

static void sess_same_host(struct kunit *test)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(1) };
	struct sockaddr_in b = { .sin_family = AF_INET, .sin_port = htons(2) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in6 b6 = { .sin6_family = AF_INET6, .sin6_port = htons(9) };
	struct sockaddr *sa = (struct sockaddr *)&a, *sb = (struct sockaddr *)&b;
	struct sockaddr *sa6 = (struct sockaddr *)&a6;
	struct sockaddr *sb6 = (struct sockaddr *)&b6;

	a.sin_addr.s_addr = htonl(0x0a0a0101);
	b.sin_addr.s_addr = htonl(0x0a0a0101);
	/* Ports differ: a reconnect comes from another port. */
	KUNIT_EXPECT_TRUE(test, krdma_sess_same_host(sa, sb));
	b.sin_addr.s_addr = htonl(0x0a0a0102);
	KUNIT_EXPECT_FALSE(test, krdma_sess_same_host(sa, sb));
	ipv6_addr_set(&a6.sin6_addr, htonl(0xfd000079), 0, 0, htonl(1));
	ipv6_addr_set(&b6.sin6_addr, htonl(0xfd000079), 0, 0, htonl(1));
	KUNIT_EXPECT_TRUE(test, krdma_sess_same_host(sa6, sb6));
	b6.sin6_addr.s6_addr[15] = 2;
	KUNIT_EXPECT_FALSE(test, krdma_sess_same_host(sa6, sb6));
	/* An IPv4 peer is never an IPv6 one, whatever the bytes. */
	KUNIT_EXPECT_FALSE(test, krdma_sess_same_host(sa, sa6));
	a6.sin6_family = AF_UNSPEC;
	KUNIT_EXPECT_FALSE(test, krdma_sess_same_host(sa6, sa6));
}

/* An outage's first attempt: after the delay, before the loss deadline. */
static void sess_first_attempt(struct kunit *test)
{
	const u32 never = KRDMA_SESSION_LOSS_TMO_NEVER;

	/* The delay, when it leaves the attempt its time. */
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(1000, 60000), 1000);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(1500, 2000), 1500);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(1800, 2000), 1800);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(3600000, never),
			3600000);
	/* 200 ms before the deadline at the latest: a delay past it. */
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(1900, 2000), 1800);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(5000, 1500), 1300);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(3600000, 201), 1);
	/* A loss timeout shorter than that: at once. */
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(100, 200), 0);
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(1000, 1), 0);
	/* Never below the delay's own minimum when the deadline is far. */
	KUNIT_EXPECT_EQ(test, krdma_sess_first_attempt_ms(100, never - 1), 100);
}

static struct kunit_case krdma_sess_cases[] = {
	KUNIT_CASE(sess_pdata_round_trip),
	KUNIT_CASE(sess_pdata_layout),
	KUNIT_CASE(sess_pdata_bad),
	KUNIT_CASE(sess_retryable),
	KUNIT_CASE(sess_op_errno),
	KUNIT_CASE(sess_verdict),
	KUNIT_CASE(sess_same_host),
	KUNIT_CASE(sess_first_attempt),
	{}
};

static struct kunit_suite krdma_sess_suite = {
	.name = "krdma_sess",
	.test_cases = krdma_sess_cases,
};

kunit_test_suites(&krdma_cmd_suite, &krdma_proto_suite, &krdma_plan_suite,
		  &krdma_credit_suite, &krdma_state_suite, &krdma_token_suite,
		  &krdma_abi_suite, &krdma_queue_suite, &krdma_sess_suite);

MODULE_DESCRIPTION("KUnit tests of krdma's pure logic");
MODULE_LICENSE("GPL");
