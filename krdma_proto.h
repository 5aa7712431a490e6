/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma wire formats: the handshake carried in rdma_cm private data and the
 * header in front of every message.  Encoding and decoding are pure
 * functions (krdma_proto.c) so that KUnit can test them without a device.
 */
#ifndef KRDMA_PROTO_H
#define KRDMA_PROTO_H

#include <linux/types.h>

#define KRDMA_PROTO_MAGIC	0x4b52444d	/* "KRDM" */
/*
 * 2: KRDMA_MSG_IMM, so that a write-with-immediate notice can carry the
 * credit acknowledgment that a WRITE_WITH_IMM work request cannot.
 * 3: heartbeats: the hello's heartbeat interval, KRDMA_MSG_HB, and one
 * more receive on each side for them; the consumer's private data after
 * the connect request's hello, and the listener consumer's refusal
 * (KRDMA_REJ_APP with an errno) in the reject; later, the listener's
 * refusal of a session's request while that session's connection is up
 * there (KRDMA_REJ_SESSION with an errno, which a peer that predates it
 * takes as an unknown reject, -ECONNREFUSED: it sends no session header).
 * 4: on iWARP the active side speaks first, a ping as soon as it is
 * established, and the passive side posts nothing before a message came
 * (MPA lets only the initiator send the first FPDU); a version 3 active
 * side would leave a version 4 listener waiting.
 */
#define KRDMA_PROTO_VERSION	4

/*
 * Connect request and accept reply.  IB pads CM private data with zeros,
 * iWARP carries it exactly, so the receiver accepts any length >= sizeof.
 */
struct krdma_hello {
	__be32	magic;
	u8	version;
	u8	pdata_len;	/* the consumer's bytes after the hello */
	__be16	queue_depth;
	__be32	max_msg_size;
	__be32	heartbeat_ms;	/* 0: none; the accept's is the agreed one */
} __packed;

/* Reject reasons carried in struct krdma_rej (and shown in dmesg). */
enum krdma_rej_reason {
	KRDMA_REJ_NONE = 0,
	KRDMA_REJ_SHORT,	/* private data shorter than struct krdma_hello */
	KRDMA_REJ_MAGIC,	/* not a krdma peer */
	KRDMA_REJ_VERSION,	/* a krdma peer speaking another version */
	KRDMA_REJ_PARAMS,	/* depth or message size out of range */
	KRDMA_REJ_RESOURCES,	/* passive side could not allocate */
	KRDMA_REJ_DEVICE,	/* device going away */
	KRDMA_REJ_BUSY,		/* the listener's backlog is full */
	KRDMA_REJ_APP,		/* the listener's consumer said no (errno) */
	KRDMA_REJ_SESSION,	/* the session's connection is up there (errno) */
	KRDMA_REJ_MAX,
};

struct krdma_rej {
	__be32	magic;
	u8	version;
	u8	reason;
	__be16	app_errno;	/* KRDMA_REJ_APP, _SESSION: the errno, > 0 */
} __packed;

struct krdma_params {
	u32	version;
	u32	queue_depth;
	u32	max_msg_size;
	u32	heartbeat_ms;	/* 0: no heartbeats */
	u32	pdata_len;	/* private data after the hello */
};

/* Message header: in front of every SEND. */
enum krdma_msg_type {
	KRDMA_MSG_DATA = 1,	/* carries a user message */
	KRDMA_MSG_CREDIT = 2,	/* only returns credits */
	KRDMA_MSG_IMM = 3,	/* a write-with-immediate notice: be32 imm */
	KRDMA_MSG_HB = 4,	/* heartbeat: a ping, or its pong */
	KRDMA_MSG_BAD = 0xff,	/* never valid: the fault_malformed test knob */
};

#define KRDMA_MSG_IMM_LEN	4	/* the payload of a KRDMA_MSG_IMM */

#define KRDMA_MSG_F_CTL_ACK	0x1	/* the peer's credit message was reposted */
#define KRDMA_MSG_F_PONG	0x2	/* KRDMA_MSG_HB: the answer to a ping */

struct krdma_msg_hdr {
	u8	type;
	u8	flags;
	__be16	credits;
	__be32	len;
} __packed;

struct krdma_msg_info {
	u32	type;
	u32	flags;
	u32	credits;
	u32	len;
};

void krdma_hello_encode(struct krdma_hello *h, u32 depth, u32 max_msg,
			u32 heartbeat_ms);
int krdma_hello_decode(const void *data, size_t len, struct krdma_params *p);
int krdma_negotiate(const struct krdma_params *local,
		    const struct krdma_params *remote,
		    struct krdma_params *out);
void krdma_rej_encode(struct krdma_rej *r, int reason);
void krdma_rej_encode_errno(struct krdma_rej *r, int reason, int err);
int krdma_rej_decode(const void *data, size_t len);
int krdma_rej_sent_errno(const void *data, size_t len);
int krdma_rej_carried_errno(const void *data, size_t len);
const char *krdma_rej_str(int reason);
int krdma_rej_errno(int reason);

void krdma_msg_encode(struct krdma_msg_hdr *h, u32 type, u32 flags,
		      u32 credits, u32 len);
int krdma_msg_decode(const void *buf, u32 byte_len, u32 max_msg,
		     struct krdma_msg_info *info);

#endif /* KRDMA_PROTO_H */
