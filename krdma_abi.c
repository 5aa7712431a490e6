// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krdma argument checks (see krdma_abi.h).  The order of the checks
 * within a command is part of the ABI: with several bad fields, the errno
 * is that of the first one checked (test/ioctl_fuzz.c relies on it).
 */
#undef pr_fmt
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <krdma.h>

#include "krdma_abi.h"

static bool krdma_cd_zero(const void *p, size_t len, const char *cmd,
			  const char *what)
{
	if (!memchr_inv(p, 0, len))
		return true;
	krdma_cd_warn("%s: %s must be zero\n", cmd, what);
	return false;
}

#define KRDMA_CD_ZERO(cmd, field) \
	krdma_cd_zero(&(field), sizeof(field), cmd, #field)

/*
 * A user address to a sockaddr.  Returns 1 for an all-zero address where
 * @optional allows one ("none"), 0 for an address, else a negative errno.
 */
int krdma_abi_addr_in(const struct krdma_ioc_addr *a,
		      struct sockaddr_storage *ss, bool optional,
		      const char *cmd)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	switch (a->family) {
	case 0:
		if (!optional) {
			krdma_cd_warn("%s: address family missing\n", cmd);
			return -EAFNOSUPPORT;
		}
		if (!krdma_cd_zero(a, sizeof(*a), cmd, "unused source address"))
			return -EINVAL;
		return 1;
	case AF_INET:
		if (a->scope_id || memchr_inv(a->addr + 4, 0, 12)) {
			krdma_cd_warn("%s: IPv4 address with IPv6 bytes or a scope id set\n",
				      cmd);
			return -EINVAL;
		}
		sin->sin_family = AF_INET;
		sin->sin_port = htons(a->port);
		memcpy(&sin->sin_addr, a->addr, 4);
		break;
	case AF_INET6:
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(a->port);
		sin6->sin6_scope_id = a->scope_id;
		memcpy(&sin6->sin6_addr, a->addr, 16);
		break;
	default:
		krdma_cd_warn("%s: address family %u is neither AF_INET nor AF_INET6\n",
			      cmd, a->family);
		return -EAFNOSUPPORT;
	}
	if (!optional && !a->port) {
		krdma_cd_warn("%s: port 0\n", cmd);
		return -EINVAL;
	}
	return 0;
}

/* A queue depth / message size within what krdma negotiates (0: default). */
static bool krdma_cd_opts_ok(u32 depth, u32 msg, const char *cmd)
{
	if (depth > KRDMA_MAX_DEPTH) {
		krdma_cd_warn("%s: queue depth %u above %u\n", cmd, depth,
			      KRDMA_MAX_DEPTH);
		return false;
	}
	if (msg && (msg < sizeof(struct krdma_token_wire) ||
		    msg > KRDMA_MAX_MSG_SIZE)) {
		krdma_cd_warn("%s: message size %u out of range %zu..%u\n",
			      cmd, msg, sizeof(struct krdma_token_wire),
			      KRDMA_MAX_MSG_SIZE);
		return false;
	}
	return true;
}

static int krdma_cd_len_ok(u64 len, u64 max, bool zero_ok, const char *cmd)
{
	if (len > max) {
		krdma_cd_warn("%s: length %llu above the limit %llu\n", cmd,
			      len, max);
		return -E2BIG;
	}
	if (!len && !zero_ok) {
		krdma_cd_warn("%s: length 0\n", cmd);
		return -EINVAL;
	}
	return 0;
}

static int krdma_cd_user_ok(u64 buf, u64 len, const char *cmd)
{
	if (access_ok(u64_to_user_ptr(buf), len))
		return 0;
	krdma_cd_warn("%s: buffer 0x%llx+%llu is not user memory\n", cmd, buf,
		      len);
	return -EFAULT;
}

int krdma_abi_listen(const struct krdma_ioc_listen *la,
		     struct sockaddr_storage *ss)
{
	if (!KRDMA_CD_ZERO("LISTEN", la->flags) ||
	    !KRDMA_CD_ZERO("LISTEN", la->reserved32) ||
	    !KRDMA_CD_ZERO("LISTEN", la->reserved) ||
	    !krdma_cd_opts_ok(la->queue_depth, la->max_msg_size, "LISTEN"))
		return -EINVAL;
	/* 0 is the default: what programs built before the field pass. */
	if (la->backlog > KRDMA_MAX_BACKLOG) {
		krdma_cd_warn("LISTEN: backlog %u above %u\n", la->backlog,
			      KRDMA_MAX_BACKLOG);
		return -EINVAL;
	}
	return krdma_abi_addr_in(&la->addr, ss, false, "LISTEN");
}

int krdma_abi_accept(const struct krdma_ioc_accept *aa)
{
	if (!KRDMA_CD_ZERO("ACCEPT", aa->flags) ||
	    !KRDMA_CD_ZERO("ACCEPT", aa->reserved))
		return -EINVAL;
	return 0;
}

/* @has_src: whether @src was given (CONNECT's source is optional). */
int krdma_abi_connect(const struct krdma_ioc_connect *ca,
		      struct sockaddr_storage *dst,
		      struct sockaddr_storage *src, bool *has_src)
{
	int ret;

	if (!KRDMA_CD_ZERO("CONNECT", ca->flags) ||
	    !KRDMA_CD_ZERO("CONNECT", ca->reserved32) ||
	    !KRDMA_CD_ZERO("CONNECT", ca->reserved) ||
	    !krdma_cd_opts_ok(ca->queue_depth, ca->max_msg_size, "CONNECT"))
		return -EINVAL;
	ret = krdma_abi_addr_in(&ca->dst, dst, false, "CONNECT");
	if (ret)
		return ret;
	ret = krdma_abi_addr_in(&ca->src, src, true, "CONNECT");
	if (ret < 0)
		return ret;
	*has_src = !ret;
	if (*has_src && src->ss_family != dst->ss_family) {
		krdma_cd_warn("CONNECT: source and destination families differ\n");
		return -EINVAL;
	}
	return 0;
}

/* CLOSE, UNREG, REVOKE */
int krdma_abi_handle(const struct krdma_ioc_handle *h, const char *cmd)
{
	if (!KRDMA_CD_ZERO(cmd, h->flags) || !KRDMA_CD_ZERO(cmd, h->reserved))
		return -EINVAL;
	return 0;
}

/* The buffer is checked by the copy: it is read only after the handle. */
int krdma_abi_send(const struct krdma_ioc_msg *m)
{
	if (m->flags & ~KRDMA_IOC_SEND_IMM) {
		krdma_cd_warn("SEND: unknown flags 0x%x\n",
			      m->flags & ~KRDMA_IOC_SEND_IMM);
		return -EINVAL;
	}
	if (!KRDMA_CD_ZERO("SEND", m->msg_flags))
		return -EINVAL;
	/* The value is what SEND_IMM sends; without it, it is reserved. */
	if (!(m->flags & KRDMA_IOC_SEND_IMM) && !KRDMA_CD_ZERO("SEND", m->imm))
		return -EINVAL;
	return krdma_cd_len_ok(m->len, KRDMA_IOC_MAX_MSG, true, "SEND");
}

/*
 * RECV's buffer is checked up front: the message is lost if it is bad.
 * msg_flags and imm are RECV's output: what comes in there is ignored.
 */
int krdma_abi_recv(const struct krdma_ioc_msg *m)
{
	int ret;

	if (!KRDMA_CD_ZERO("RECV", m->flags))
		return -EINVAL;
	ret = krdma_cd_len_ok(m->len, KRDMA_IOC_MAX_XFER, true, "RECV");
	if (ret)
		return ret;
	return krdma_cd_user_ok(m->buf, m->len, "RECV");
}

int krdma_abi_reg(const struct krdma_ioc_reg *r)
{
	int ret;

	if (!KRDMA_CD_ZERO("REG", r->flags) ||
	    !KRDMA_CD_ZERO("REG", r->reserved))
		return -EINVAL;
	ret = krdma_access_valid(r->access);
	if (ret) {
		krdma_cd_warn("REG: access 0x%x is not a set of KRDMA_IOC_ACCESS_* rights\n",
			      r->access);
		return ret;
	}
	ret = krdma_cd_len_ok(r->len, KRDMA_IOC_MAX_XFER, false, "REG");
	if (ret)
		return ret;
	return krdma_cd_user_ok(r->buf, r->len, "REG");
}

/* WRITE, READ and (@imm: any immediate value) WRITE_IMM */
int krdma_abi_rdma(const struct krdma_ioc_rdma *r, const char *cmd, bool imm)
{
	int ret;

	if (!KRDMA_CD_ZERO(cmd, r->flags) ||
	    (!imm && !KRDMA_CD_ZERO(cmd, r->imm)) ||
	    !KRDMA_CD_ZERO(cmd, r->reserved))
		return -EINVAL;
	ret = krdma_cd_len_ok(r->len, KRDMA_IOC_MAX_XFER, false, cmd);
	if (ret)
		return ret;
	ret = krdma_cd_user_ok(r->buf, r->len, cmd);
	if (ret)
		return ret;
	ret = krdma_token_range(r->token.length, r->offset, r->len);
	if (ret)
		krdma_cd_warn("%s: %llu bytes at offset %llu do not fit the token's %u\n",
			      cmd, r->len, r->offset, r->token.length);
	return ret;
}

/*
 * FADD and CAS (@cas).  The target's checks are the core's own
 * (krdma_atomic_target()): outside the token is ERANGE, a misaligned
 * address EINVAL.
 */
int krdma_abi_atomic(const struct krdma_ioc_atomic *a, const char *cmd,
		     bool cas)
{
	struct krdma_token t = {
		.addr = a->token.addr,
		.rkey = a->token.rkey,
		.length = a->token.length,
	};
	int ret;

	if (!KRDMA_CD_ZERO(cmd, a->flags) ||
	    !KRDMA_CD_ZERO(cmd, a->reserved32) ||
	    !KRDMA_CD_ZERO(cmd, a->reserved) ||
	    (!cas && !KRDMA_CD_ZERO(cmd, a->swap)))
		return -EINVAL;
	ret = krdma_atomic_target(&t, a->offset);
	if (ret == -ERANGE)
		krdma_cd_warn("%s: 8 bytes at offset %llu do not fit the token's %u\n",
			      cmd, a->offset, a->token.length);
	else if (ret)
		krdma_cd_warn("%s: offset %llu in the token is not 8-byte aligned in the peer's memory\n",
			      cmd, a->offset);
	return ret;
}

int krdma_abi_query(const struct krdma_ioc_query *q)
{
	if (!KRDMA_CD_ZERO("QUERY", q->flags) ||
	    !KRDMA_CD_ZERO("QUERY", q->reserved32) ||
	    !KRDMA_CD_ZERO("QUERY", q->reserved))
		return -EINVAL;
	return 0;
}
