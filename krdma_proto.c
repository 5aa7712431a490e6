// SPDX-License-Identifier: GPL-2.0
/*
 * krdma wire formats: encode and decode, no side effects.
 */
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/kernel.h>
#include <linux/export.h>
#include <linux/string.h>
#include <asm/byteorder.h>

#include <krdma.h>
#include "krdma_proto.h"

void krdma_hello_encode(struct krdma_hello *h, u32 depth, u32 max_msg,
			u32 heartbeat_ms)
{
	memset(h, 0, sizeof(*h));
	h->magic = cpu_to_be32(KRDMA_PROTO_MAGIC);
	h->version = KRDMA_PROTO_VERSION;
	h->queue_depth = cpu_to_be16(depth);
	h->max_msg_size = cpu_to_be32(max_msg);
	h->heartbeat_ms = cpu_to_be32(heartbeat_ms);
}

/*
 * Returns 0 with @p filled in, or a KRDMA_REJ_* reason (> 0) saying why the
 * peer's hello is unacceptable.  Range checks are left to krdma_negotiate().
 */
int krdma_hello_decode(const void *data, size_t len, struct krdma_params *p)
{
	const struct krdma_hello *h = data;

	if (!data || len < sizeof(*h))
		return KRDMA_REJ_SHORT;
	if (be32_to_cpu(h->magic) != KRDMA_PROTO_MAGIC)
		return KRDMA_REJ_MAGIC;
	if (h->version != KRDMA_PROTO_VERSION)
		return KRDMA_REJ_VERSION;
	p->version = h->version;
	p->queue_depth = be16_to_cpu(h->queue_depth);
	p->max_msg_size = be32_to_cpu(h->max_msg_size);
	p->heartbeat_ms = be32_to_cpu(h->heartbeat_ms);
	/* The consumer's bytes must be there, and within the bound. */
	p->pdata_len = h->pdata_len;
	if (p->pdata_len > KRDMA_MAX_PRIVATE_DATA)
		return KRDMA_REJ_PARAMS;
	if (len < sizeof(*h) + p->pdata_len)
		return KRDMA_REJ_SHORT;
	return 0;
}

/*
 * Both sides settle on the smaller depth and message size, and on the
 * shorter heartbeat interval if both want heartbeats (none if either does
 * not).  A peer offering a value outside krdma's limits is refused rather
 * than clamped: it would size its own buffers by what it offered.
 */
int krdma_negotiate(const struct krdma_params *local,
		    const struct krdma_params *remote,
		    struct krdma_params *out)
{
	if (!remote->queue_depth || remote->queue_depth > KRDMA_MAX_DEPTH)
		return KRDMA_REJ_PARAMS;
	if (remote->max_msg_size < sizeof(struct krdma_token_wire) ||
	    remote->max_msg_size > KRDMA_MAX_MSG_SIZE)
		return KRDMA_REJ_PARAMS;
	if (remote->heartbeat_ms &&
	    (remote->heartbeat_ms < KRDMA_MIN_HEARTBEAT_MS ||
	     remote->heartbeat_ms > KRDMA_MAX_HEARTBEAT_MS))
		return KRDMA_REJ_PARAMS;
	out->version = KRDMA_PROTO_VERSION;
	out->heartbeat_ms = 0;
	if (local->heartbeat_ms && remote->heartbeat_ms)
		out->heartbeat_ms = min(local->heartbeat_ms,
					remote->heartbeat_ms);
	out->queue_depth = min(local->queue_depth, remote->queue_depth);
	out->max_msg_size = min(local->max_msg_size, remote->max_msg_size);
	return 0;
}

void krdma_rej_encode(struct krdma_rej *r, int reason)
{
	memset(r, 0, sizeof(*r));
	r->magic = cpu_to_be32(KRDMA_PROTO_MAGIC);
	r->version = KRDMA_PROTO_VERSION;
	r->reason = reason;
}

/*
 * The errnos a refusal carries to the peer's krdma_connect(), which hands
 * them on to its caller (/dev/krdma's CONNECT and the control file give
 * them to userspace, a session decides by them whether to retry):
 * krdma_sess_claim()'s two for KRDMA_REJ_SESSION, and for KRDMA_REJ_APP
 * the refusals an accept hook is documented to give (include/krdma.h,
 * struct krdma_conn_ops).  Anything else, at either end, is -ECONNREFUSED:
 * the peer is not trusted to pick an errno that means something else here
 * (-ERESTARTSYS and the other kernel-internal ones, which must never reach
 * userspace; KRDMA_ERR_RETRY and KRDMA_ERR_LOST; -ESTALE, which makes a
 * session give up, outside krdma's own session refusal).
 */
static bool krdma_rej_errno_ok(int reason, int err)
{
	switch (err) {
	case -EBUSY:
		return reason == KRDMA_REJ_APP || reason == KRDMA_REJ_SESSION;
	case -ESTALE:
		return reason == KRDMA_REJ_SESSION;
	case -EPERM:
	case -ENOENT:
	case -ENOMEM:
	case -EACCES:
	case -EINVAL:
	case -ENOSPC:
	case -EAGAIN:
	case -EOPNOTSUPP:
	case -ECONNREFUSED:
		return reason == KRDMA_REJ_APP;
	default:
		return false;
	}
}

/*
 * A refusal that carries an errno back to the peer's connect:
 * KRDMA_REJ_APP (the listener's consumer's) or KRDMA_REJ_SESSION (krdma's
 * own, krdma_sess_claim()).  One the peer would not pass on goes as
 * -ECONNREFUSED, which is what the peer would make of it.
 */
void krdma_rej_encode_errno(struct krdma_rej *r, int reason, int err)
{
	krdma_rej_encode(r, reason);
	if (!krdma_rej_errno_ok(reason, err))
		err = -ECONNREFUSED;
	r->app_errno = cpu_to_be16(-err);
}

/*
 * The errno a KRDMA_REJ_APP or KRDMA_REJ_SESSION reject carries as it came
 * (negative; 0 for any other reject), for the line that reports it.
 */
int krdma_rej_sent_errno(const void *data, size_t len)
{
	const struct krdma_rej *r = data;
	int reason = krdma_rej_decode(data, len);

	if (reason != KRDMA_REJ_APP && reason != KRDMA_REJ_SESSION)
		return 0;
	return -(int)be16_to_cpu(r->app_errno);
}

/*
 * The errno of a KRDMA_REJ_APP or KRDMA_REJ_SESSION reject (negative), if
 * it is one a krdma listener refuses with for that reason
 * (krdma_rej_errno_ok()); -ECONNREFUSED for any other errno, any other
 * reject, or one that carries none.
 */
int krdma_rej_carried_errno(const void *data, size_t len)
{
	int reason = krdma_rej_decode(data, len);
	int err = krdma_rej_sent_errno(data, len);

	if (!err || !krdma_rej_errno_ok(reason, err))
		return -ECONNREFUSED;
	return err;
}

/* The reason in a krdma reject, or 0 when the reject did not come from krdma. */
int krdma_rej_decode(const void *data, size_t len)
{
	const struct krdma_rej *r = data;

	if (!data || len < sizeof(*r) ||
	    be32_to_cpu(r->magic) != KRDMA_PROTO_MAGIC)
		return 0;
	if (r->reason == KRDMA_REJ_NONE || r->reason >= KRDMA_REJ_MAX)
		return 0;
	return r->reason;
}

const char *krdma_rej_str(int reason)
{
	static const char * const names[KRDMA_REJ_MAX] = {
		[KRDMA_REJ_NONE]	= "none",
		[KRDMA_REJ_SHORT]	= "handshake too short",
		[KRDMA_REJ_MAGIC]	= "not a krdma peer (bad magic)",
		[KRDMA_REJ_VERSION]	= "unsupported protocol version",
		[KRDMA_REJ_PARAMS]	= "queue depth or message size out of range",
		[KRDMA_REJ_RESOURCES]	= "out of resources",
		[KRDMA_REJ_DEVICE]	= "device going away",
		[KRDMA_REJ_BUSY]	= "listener backlog full",
		[KRDMA_REJ_APP]		= "refused by the listener's consumer",
		[KRDMA_REJ_SESSION]	= "the session's connection is up at the listener",
	};

	if (reason < 0 || reason >= KRDMA_REJ_MAX)
		return "unknown";
	return names[reason];
}

int krdma_rej_errno(int reason)
{
	switch (reason) {
	case KRDMA_REJ_SHORT:
	case KRDMA_REJ_MAGIC:
		return -EPROTO;
	case KRDMA_REJ_VERSION:
		return -EPROTONOSUPPORT;
	case KRDMA_REJ_PARAMS:
		return -EINVAL;
	case KRDMA_REJ_RESOURCES:
		return -ENOMEM;
	case KRDMA_REJ_DEVICE:
		return -ENODEV;
	case KRDMA_REJ_BUSY:
		return -EBUSY;
	default:
		return -ECONNREFUSED;
	}
}

void krdma_msg_encode(struct krdma_msg_hdr *h, u32 type, u32 flags,
		      u32 credits, u32 len)
{
	h->type = type;
	h->flags = flags;
	h->credits = cpu_to_be16(credits);
	h->len = cpu_to_be32(len);
}

/*
 * Check a received message: the header must fit in what arrived, name a
 * known type, and claim exactly the payload that arrived (never more than
 * the negotiated maximum).  Returns 0 or -EPROTO.
 */
int krdma_msg_decode(const void *buf, u32 byte_len, u32 max_msg,
		     struct krdma_msg_info *info)
{
	const struct krdma_msg_hdr *h = buf;

	if (byte_len < sizeof(*h))
		return -EPROTO;
	info->type = h->type;
	info->flags = h->flags;
	info->credits = be16_to_cpu(h->credits);
	info->len = be32_to_cpu(h->len);
	if (info->type != KRDMA_MSG_DATA && info->type != KRDMA_MSG_CREDIT &&
	    info->type != KRDMA_MSG_IMM && info->type != KRDMA_MSG_HB)
		return -EPROTO;
	/* A heartbeat stays out of flow control: no credits, no ack. */
	if (info->flags & ~(info->type == KRDMA_MSG_HB ? KRDMA_MSG_F_PONG :
							 KRDMA_MSG_F_CTL_ACK))
		return -EPROTO;
	if (info->type == KRDMA_MSG_HB && (info->credits || info->len))
		return -EPROTO;
	if (info->len > max_msg || info->len != byte_len - sizeof(*h))
		return -EPROTO;
	if (info->type == KRDMA_MSG_CREDIT && info->len)
		return -EPROTO;
	if (info->type == KRDMA_MSG_IMM && info->len != KRDMA_MSG_IMM_LEN)
		return -EPROTO;
	return 0;
}
