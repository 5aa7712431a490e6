// SPDX-License-Identifier: GPL-2.0
/*
 * Parser of /sys/kernel/krdma/control commands: one command per write,
 * "VERB key=value ...", in the style of rnbd's map_device.  On error the
 * parser says which word is wrong; nothing is acted on.
 */
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/string.h>
#include <linux/ctype.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/if.h>
#include <net/ipv6.h>
#include <net/net_namespace.h>

#include <krdma.h>
#include "krdma_cmd.h"

const char krdma_cmd_usage[] =
"listen name=NAME addr=IP:PORT [depth=N] [msg=BYTES] [backlog=N]\n"
"       [hb_ms=MS|off] [hb_misses=N] [wq=0|1] [vector=N|any]\n"
"unlisten name=NAME\n"
"connect name=NAME addr=IP:PORT [src=IP] [depth=N] [msg=BYTES] [timeout_ms=MS] [tos=N]\n"
"        [hb_ms=MS|off] [hb_misses=N] [poll=0|1] [wq=0|1] [vector=N|any]\n"
"disconnect name=NAME\n"
"session name=NAME addr=IP:PORT [src=IP] [depth=N] [msg=BYTES] [timeout_ms=MS] [tos=N]\n"
"        [hb_ms=MS|off] [hb_misses=N] [reconnect_delay_ms=MS] [loss_tmo_ms=MS|never]\n"
"        [poll=0|1] [wq=0|1] [vector=N|any] [conns=N]\n"
"unsession name=NAME\n"
"test name=CONN [op=send,write,read,atomic,imm|all] [size=BYTES] [count=N]\n"
"     [sge=N] [timeout_ms=MS]\n"
"bench name=CONN op=write|read|send|imm|fadd|cas size=BYTES [depth=N] [batch=N] [count=N | secs=N]\n"
"      [sge=N [stride=BYTES] [pack=0|1]]\n"
"IPv6 addresses are written [ADDR]:PORT, a link-local one with its scope:\n"
"[fe80::1%eth0]:PORT.  BYTES take a K or M suffix.\n";

enum krdma_key {
	K_NAME, K_ADDR, K_SRC, K_DEPTH, K_MSG, K_TIMEOUT, K_TOS, K_HELLO,
	K_OP, K_SIZE, K_COUNT, K_SGE, K_SECS, K_BATCH, K_BACKLOG, K_HB_MS,
	K_HB_MISSES, K_DELAY, K_LOSS, K_POLL, K_WQ, K_VECTOR, K_CONNS, K_STRIDE,
	K_PACK, K_NR,
};

static const char * const krdma_keys[K_NR] = {
	[K_NAME] = "name", [K_ADDR] = "addr", [K_SRC] = "src",
	[K_DEPTH] = "depth", [K_MSG] = "msg", [K_TIMEOUT] = "timeout_ms",
	[K_TOS] = "tos", [K_HELLO] = "hello", [K_OP] = "op",
	[K_SIZE] = "size", [K_COUNT] = "count", [K_SGE] = "sge",
	[K_SECS] = "secs", [K_BATCH] = "batch", [K_BACKLOG] = "backlog",
	[K_HB_MS] = "hb_ms", [K_HB_MISSES] = "hb_misses",
	[K_DELAY] = "reconnect_delay_ms", [K_LOSS] = "loss_tmo_ms",
	[K_POLL] = "poll", [K_WQ] = "wq", [K_VECTOR] = "vector",
	[K_CONNS] = "conns", [K_STRIDE] = "stride", [K_PACK] = "pack",
};

struct krdma_verb {
	const char	*verb;
	enum krdma_cmd_op op;
	u32		allowed;	/* 1 << key */
	u32		required;
};

#define B(k) (1u << (k))
static const struct krdma_verb krdma_verbs[] = {
	{ "listen", KRDMA_CMD_LISTEN,
	  B(K_NAME) | B(K_ADDR) | B(K_DEPTH) | B(K_MSG) | B(K_BACKLOG) |
	  B(K_HB_MS) | B(K_HB_MISSES) | B(K_WQ) | B(K_VECTOR),
	  B(K_NAME) | B(K_ADDR) },
	{ "unlisten", KRDMA_CMD_UNLISTEN, B(K_NAME), B(K_NAME) },
	{ "connect", KRDMA_CMD_CONNECT,
	  B(K_NAME) | B(K_ADDR) | B(K_SRC) | B(K_DEPTH) | B(K_MSG) |
	  B(K_TIMEOUT) | B(K_TOS) | B(K_HELLO) | B(K_HB_MS) | B(K_HB_MISSES) |
	  B(K_POLL) | B(K_WQ) | B(K_VECTOR),
	  B(K_NAME) | B(K_ADDR) },
	{ "disconnect", KRDMA_CMD_DISCONNECT, B(K_NAME), B(K_NAME) },
	{ "session", KRDMA_CMD_SESSION,
	  B(K_NAME) | B(K_ADDR) | B(K_SRC) | B(K_DEPTH) | B(K_MSG) |
	  B(K_TIMEOUT) | B(K_TOS) | B(K_HB_MS) | B(K_HB_MISSES) | B(K_DELAY) |
	  B(K_LOSS) | B(K_POLL) | B(K_WQ) | B(K_VECTOR) | B(K_CONNS),
	  B(K_NAME) | B(K_ADDR) },
	{ "unsession", KRDMA_CMD_UNSESSION, B(K_NAME), B(K_NAME) },
	{ "test", KRDMA_CMD_TEST,
	  B(K_NAME) | B(K_OP) | B(K_SIZE) | B(K_COUNT) | B(K_SGE) | B(K_TIMEOUT),
	  B(K_NAME) },
	{ "bench", KRDMA_CMD_BENCH,
	  B(K_NAME) | B(K_OP) | B(K_SIZE) | B(K_DEPTH) | B(K_COUNT) | B(K_SECS) |
	  B(K_BATCH) | B(K_SGE) | B(K_STRIDE) | B(K_PACK),
	  B(K_NAME) | B(K_OP) | B(K_SIZE) },
};

/* The verb of @op, for log lines. */
const char *krdma_cmd_verb(enum krdma_cmd_op op)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(krdma_verbs); i++)
		if (krdma_verbs[i].op == op)
			return krdma_verbs[i].verb;
	return "control";
}

/**
 * krdma_parse_addr - read an address as krdma's control grammar writes it
 * @s: "IPv4:PORT" or "[IPv6]:PORT", or the address alone (port 0).  An
 *	IPv6 link-local address may carry its scope as "%IFNAME" or
 *	"%INDEX" ([fe80::1%eth0]:7000), as inet_pton_with_scope() reads it;
 *	a scope on any other address is refused, where the kernel would
 *	ignore it.  PORT is decimal.
 * @ss: the address; its contents are undefined on failure
 *
 * For consumers with a control grammar of their own (krdma-blk), so
 * that every krdma address reads the same.
 *
 * Context: process context (a scope's interface name is looked up in
 * init_net).
 * Return: 0, or -EINVAL for anything else.
 */
int krdma_parse_addr(const char *s, struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN + IFNAMSIZ + 2];
	const char *port = NULL, *end;
	size_t hl;
	u16 p = 0;

	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			return -EINVAL;
		hl = end - s - 1;
		s++;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			return -EINVAL;
	} else {
		end = strrchr(s, ':');
		if (end && strchr(s, ':') != end)
			return -EINVAL;	/* bare IPv6 needs brackets */
		hl = end ? (size_t)(end - s) : strlen(s);
		if (end)
			port = end + 1;
	}
	if (!hl || hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (port && (!*port || kstrtou16(port, 10, &p)))
		return -EINVAL;

	memset(ss, 0, sizeof(*ss));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;

		if (inet_pton_with_scope(&init_net, AF_INET6, host, NULL, ss))
			return -EINVAL;
		if (strchr(host, '%') &&
		    !(ipv6_addr_type(&a6->sin6_addr) & IPV6_ADDR_LINKLOCAL))
			return -EINVAL;
		a6->sin6_port = htons(p);
	} else {
		if (inet_pton_with_scope(&init_net, AF_INET, host, NULL, ss))
			return -EINVAL;
		((struct sockaddr_in *)ss)->sin_port = htons(p);
	}
	return 0;
}

/* Decimal, with an optional K or M suffix. */
static int krdma_parse_size(const char *s, u32 *out)
{
	char num[16];
	size_t n = strlen(s);
	u32 mult = 1, v;

	if (!n || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	if (num[n - 1] == 'K' || num[n - 1] == 'k')
		mult = 1024;
	else if (num[n - 1] == 'M' || num[n - 1] == 'm')
		mult = 1024 * 1024;
	if (mult != 1)
		num[--n] = '\0';
	if (!n || kstrtou32(num, 10, &v))
		return -EINVAL;
	if (v > U32_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

static int krdma_parse_ops(char *s, u32 *ops)
{
	char *w;

	*ops = 0;
	if (!strcmp(s, "all")) {
		*ops = KRDMA_TEST_ALL;
		return 0;
	}
	while ((w = strsep(&s, ","))) {
		if (!strcmp(w, "send"))
			*ops |= KRDMA_TEST_SEND;
		else if (!strcmp(w, "write"))
			*ops |= KRDMA_TEST_WRITE;
		else if (!strcmp(w, "read"))
			*ops |= KRDMA_TEST_READ;
		else if (!strcmp(w, "atomic"))
			*ops |= KRDMA_TEST_ATOMIC;
		else if (!strcmp(w, "imm"))
			*ops |= KRDMA_TEST_IMM;
		else if (!strcmp(w, "fadd"))
			*ops |= KRDMA_TEST_FADD;
		else if (!strcmp(w, "cas"))
			*ops |= KRDMA_TEST_CAS;
		else
			return -EINVAL;
	}
	return *ops ? 0 : -EINVAL;
}

/* A name becomes a sysfs directory: never "." or "..". */
static bool krdma_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n >= KRDMA_NAME_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (!isalnum(*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

/* Say which word is wrong; the caller returns -EINVAL. */
static __printf(3, 4) int krdma_cmd_err(char *err, size_t errlen,
					const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#define ERR(fmt, ...) krdma_cmd_err(err, errlen, fmt, ##__VA_ARGS__)

static int krdma_cmd_value(struct krdma_cmd *cmd, enum krdma_key k, char *v,
			   char *err, size_t errlen)
{
	u32 lim;
	int ret;

	switch (k) {
	case K_NAME:
		if (!krdma_name_ok(v))
			return ERR("bad name '%s' (1-%d of A-Za-z0-9_-.)", v,
			    KRDMA_NAME_MAX - 1);
		strscpy(cmd->name, v, sizeof(cmd->name));
		return 0;
	case K_ADDR:
		if (krdma_parse_addr(v, &cmd->addr))
			return ERR("bad address '%s' (IP:PORT or [IPv6]:PORT)", v);
		return 0;
	case K_SRC:
		if (krdma_parse_addr(v, &cmd->src))
			return ERR("bad source address '%s'", v);
		cmd->has_src = true;
		return 0;
	case K_OP:
		if (krdma_parse_ops(v, &cmd->test_ops))
			return ERR("bad op '%s' (send,write,read,atomic,imm or all)", v);
		return 0;
	case K_DEPTH:
	case K_MSG:
	case K_TIMEOUT:
	case K_TOS:
	case K_HELLO:
	case K_SIZE:
	case K_COUNT:
	case K_SGE:
	case K_SECS:
	case K_BATCH:
	case K_BACKLOG:
	case K_HB_MS:
	case K_HB_MISSES:
	case K_DELAY:
	case K_LOSS:
	case K_POLL:
	case K_WQ:
	case K_VECTOR:
	case K_CONNS:
	case K_STRIDE:
	case K_PACK: {
		u32 val;

		if (k == K_HB_MS && !strcmp(v, "off")) {
			cmd->hb_ms = KRDMA_HEARTBEAT_OFF;
			return 0;
		}
		if (k == K_VECTOR && !strcmp(v, "any")) {
			cmd->vector = KRDMA_COMP_VECTOR_ANY;
			return 0;
		}
		if (k == K_LOSS && !strcmp(v, "never")) {
			cmd->loss_tmo_ms = KRDMA_SESSION_LOSS_TMO_NEVER;
			return 0;
		}
		ret = krdma_parse_size(v, &val);
		if (ret)
			return ERR("bad number '%s=%s'", krdma_keys[k], v);
		switch (k) {
		case K_DEPTH:
			lim = KRDMA_MAX_DEPTH;
			cmd->depth = val;
			break;
		case K_MSG:
			lim = KRDMA_MAX_MSG_SIZE;
			cmd->msg = val;
			break;
		case K_TIMEOUT:
			lim = 600000;
			cmd->timeout_ms = val;
			break;
		case K_TOS:
			lim = 255;
			cmd->tos = val;
			break;
		case K_HELLO:
			lim = 4;
			cmd->hello = val;
			break;
		case K_SIZE:
			lim = KRDMA_TEST_MAX_SIZE;
			cmd->size = val;
			break;
		case K_COUNT:
			lim = cmd->op == KRDMA_CMD_BENCH ?
			      KRDMA_BENCH_MAX_COUNT : KRDMA_TEST_MAX_COUNT;
			cmd->count = val;
			break;
		case K_SECS:
			lim = KRDMA_BENCH_MAX_SECS;
			cmd->secs = val;
			break;
		case K_BATCH:
			lim = KRDMA_MAX_DEPTH;
			cmd->batch = val;
			break;
		case K_BACKLOG:
			lim = KRDMA_MAX_BACKLOG;
			cmd->backlog = val;
			break;
		case K_HB_MS:
			lim = KRDMA_MAX_HEARTBEAT_MS;
			cmd->hb_ms = val;
			if (val && val < KRDMA_MIN_HEARTBEAT_MS)
				return ERR("hb_ms=%u out of range (at least %u)",
				    val, KRDMA_MIN_HEARTBEAT_MS);
			break;
		case K_HB_MISSES:
			lim = KRDMA_MAX_HEARTBEAT_MISSES;
			cmd->hb_misses = val;
			break;
		case K_POLL:
			lim = 1;
			cmd->poll = val;
			break;
		case K_WQ:
			lim = 1;
			cmd->wq = val;
			break;
		case K_VECTOR:
			lim = KRDMA_CMD_MAX_VECTOR;
			cmd->vector = KRDMA_COMP_VECTOR(val);
			break;
		case K_DELAY:
			lim = KRDMA_SESSION_MAX_DELAY_MS;
			cmd->delay_ms = val;
			if (val && val < KRDMA_SESSION_MIN_DELAY_MS)
				return ERR("reconnect_delay_ms=%u out of range (at least %u)",
				    val, KRDMA_SESSION_MIN_DELAY_MS);
			break;
		case K_LOSS:
			lim = KRDMA_SESSION_LOSS_TMO_NEVER - 1;
			cmd->loss_tmo_ms = val;
			break;
		case K_CONNS:
			lim = KRDMA_SESSION_MAX_CONNS;
			cmd->conns = val;
			break;
		case K_STRIDE:
			lim = KRDMA_BENCH_MAX_SPAN;
			cmd->stride = val;
			break;
		case K_PACK:
			lim = 1;
			cmd->pack = val;
			break;
		default:
			lim = KRDMA_TEST_MAX_SGE;
			cmd->sge = val;
			break;
		}
		if (val > lim)
			return ERR("%s=%u out of range (at most %u)", krdma_keys[k],
			    val, lim);
		if (!val && k != K_HELLO && k != K_TOS && k != K_SIZE &&
		    k != K_POLL && k != K_WQ && k != K_VECTOR && k != K_PACK)
			return ERR("%s must not be 0", krdma_keys[k]);
		return 0;
	}
	default:
		return ERR("internal error");
	}
}

/**
 * krdma_cmd_parse - parse one control command
 * @buf: what was written (need not be NUL-terminated; one trailing newline ok)
 * @len: its length
 * @cmd: the result
 * @err: room for a message naming the bad word
 * @errlen: size of @err
 *
 * Return: 0, or -EINVAL with @err filled in.
 */
int krdma_cmd_parse(const char *buf, size_t len, struct krdma_cmd *cmd,
		    char *err, size_t errlen)
{
	const struct krdma_verb *verb = NULL;
	char line[256], *p, *w, *v;
	u32 seen = 0;
	size_t i;
	int k, ret;

	memset(cmd, 0, sizeof(*cmd));
	err[0] = '\0';
	if (len && buf[len - 1] == '\n')
		len--;
	if (!len)
		return ERR("empty command");
	if (len >= sizeof(line))
		return ERR("command longer than %zu bytes", sizeof(line) - 1);
	memcpy(line, buf, len);
	line[len] = '\0';
	/* Printable ASCII and tabs; the kernel's isprint() passes Latin-1. */
	for (i = 0; i < len; i++)
		if (!isascii(line[i]) || (!isprint(line[i]) && line[i] != '\t'))
			return ERR("non-printable byte 0x%02x at %zu",
			    (unsigned char)line[i], i);

	p = line;
	do {
		w = strsep(&p, " \t");
	} while (w && !*w);
	if (!w)
		return ERR("empty command");
	for (i = 0; i < ARRAY_SIZE(krdma_verbs); i++)
		if (!strcmp(w, krdma_verbs[i].verb))
			verb = &krdma_verbs[i];
	if (!verb)
		return ERR("unknown command '%s'", w);
	cmd->op = verb->op;

	while ((w = strsep(&p, " \t"))) {
		if (!*w)
			continue;
		v = strchr(w, '=');
		if (!v)
			return ERR("'%s' is not key=value", w);
		*v++ = '\0';
		k = match_string(krdma_keys, K_NR, w);
		if (k < 0 || !(verb->allowed & B(k)))
			return ERR("unknown word '%s' for %s", w, verb->verb);
		if (seen & B(k))
			return ERR("'%s' given twice", w);
		seen |= B(k);
		if (!*v)
			return ERR("'%s=' needs a value", w);
		ret = krdma_cmd_value(cmd, k, v, err, errlen);
		if (ret)
			return ret;
	}
	for (k = 0; k < K_NR; k++)
		if ((verb->required & B(k)) && !(seen & B(k)))
			return ERR("%s needs %s=", verb->verb, krdma_keys[k]);

	if (cmd->op == KRDMA_CMD_CONNECT || cmd->op == KRDMA_CMD_SESSION) {
		if (!((struct sockaddr_in *)&cmd->addr)->sin_port)
			return ERR("%s needs a port in addr=", verb->verb);
		if (cmd->has_src && cmd->src.ss_family != cmd->addr.ss_family)
			return ERR("src= and addr= are of different families");
	}
	if (cmd->poll && cmd->wq)
		return ERR("poll=1 and wq=1 together: polled or workqueue, not both");
	if (cmd->op == KRDMA_CMD_LISTEN &&
	    !((struct sockaddr_in *)&cmd->addr)->sin_port)
		return ERR("listen needs a port in addr=");
	if ((cmd->op == KRDMA_CMD_LISTEN || cmd->op == KRDMA_CMD_CONNECT ||
	     cmd->op == KRDMA_CMD_SESSION || cmd->op == KRDMA_CMD_UNSESSION) &&
	    strlen(cmd->name) >= KRDMA_NEW_NAME_MAX)
		return ERR("name '%s' is too long for %s (1-%d characters)",
		    cmd->name, verb->verb, KRDMA_NEW_NAME_MAX - 1);
	if (cmd->op == KRDMA_CMD_TEST) {
		if (!cmd->test_ops)
			cmd->test_ops = KRDMA_TEST_ALL;
		if (!(seen & B(K_SIZE)))
			cmd->size = 4096;
		if (!cmd->count)
			cmd->count = 1;
		if (!cmd->sge)
			cmd->sge = 1;
		if (cmd->sge > 1 && cmd->size < cmd->sge)
			return ERR("sge=%u needs size of at least %u", cmd->sge,
			    cmd->sge);
		if (!cmd->size && cmd->test_ops != KRDMA_TEST_SEND)
			return ERR("size=0 works only with op=send");
		if (cmd->test_ops & (KRDMA_TEST_FADD | KRDMA_TEST_CAS))
			return ERR("op=fadd and op=cas are bench's (the self-test's: op=atomic)");
	}
	if (cmd->op == KRDMA_CMD_BENCH) {
		bool atomic = cmd->test_ops == KRDMA_TEST_FADD ||
			      cmd->test_ops == KRDMA_TEST_CAS;

		if (cmd->test_ops != KRDMA_TEST_WRITE &&
		    cmd->test_ops != KRDMA_TEST_READ &&
		    cmd->test_ops != KRDMA_TEST_SEND &&
		    cmd->test_ops != KRDMA_TEST_IMM && !atomic)
			return ERR("bench takes one op: write, read, send, imm, fadd or cas");
		if (cmd->count && cmd->secs)
			return ERR("bench takes count= or secs=, not both");
		if (!cmd->count && !cmd->secs)
			cmd->count = 1000;
		/* An atomic works on 8 bytes, one per work request. */
		if (atomic && cmd->size != 8)
			return ERR("op=fadd and op=cas work on 8 bytes, not size=%u",
			    cmd->size);
		if (atomic && (cmd->batch > 1 || cmd->sge))
			return ERR("op=fadd and op=cas take neither batch= nor sge=");
		if (!cmd->size && cmd->test_ops != KRDMA_TEST_SEND &&
		    cmd->test_ops != KRDMA_TEST_IMM)
			return ERR("size=0 works only with op=send and op=imm");
		if (!cmd->batch)
			cmd->batch = 1;
		if (cmd->depth && cmd->batch > cmd->depth)
			return ERR("batch=%u is more than depth=%u", cmd->batch,
			    cmd->depth);
		if (seen & (B(K_STRIDE) | B(K_PACK)) && !cmd->sge)
			return ERR("stride= and pack= go with sge=");
		/* sge= (0 without it: the plain path), blocks side by side. */
		if (cmd->sge) {
			u64 span;

			if (!cmd->stride)
				cmd->stride = cmd->size;
			span = (u64)(cmd->sge - 1) * cmd->stride + cmd->size;

			if (cmd->test_ops == KRDMA_TEST_READ ||
			    cmd->test_ops == KRDMA_TEST_IMM)
				return ERR("sge= works with op=send and op=write");
			if (cmd->batch > 1)
				return ERR("sge= and batch= together: one or the other");
			if (!cmd->size)
				return ERR("sge= needs size= of at least 1");
			if (cmd->stride < cmd->size)
				return ERR("stride=%u is less than size=%u",
				    cmd->stride, cmd->size);
			if (span > KRDMA_BENCH_MAX_SPAN)
				return ERR("sge= blocks span %llu bytes (at most %u)",
				    span, KRDMA_BENCH_MAX_SPAN);
		}
	}
	return 0;
}
