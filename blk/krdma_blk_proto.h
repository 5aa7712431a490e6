/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma-blk wire format: every message is one krdma message of a fixed
 * size, big endian, starting with a common header.
 *
 *   client -> server   HELLO (names the export), then commands
 *   server -> client   HELLO reply (geometry), then one reply per command
 *
 * A command carries the client's token for the data: the server
 * RDMA-READs a WRITE's data from it, RDMA-WRITEs a READ's data to it.
 * No kernel address is on the wire; a token's addr is krdma's random I/O
 * virtual address.  A WRITE of at most KRDMA_BLK_INCAPSULE_MAX bytes may
 * carry its data in the command's message instead (KRDMA_BLK_F_INCAPSULE,
 * no token), as nvme-rdma's in-capsule data: one message, no
 * registration, no RDMA READ.
 */
#ifndef _KRDMA_BLK_PROTO_H
#define _KRDMA_BLK_PROTO_H

#include <linux/types.h>
#include <krdma.h>

#define KRDMA_BLK_MAGIC		0x6b726231	/* "krb1" */
#define KRDMA_BLK_VERSION	2	/* 2: in-capsule WRITE data */
#define KRDMA_BLK_NAME_LEN	32		/* with its NUL */

enum krdma_blk_op {
	KRDMA_BLK_OP_HELLO = 1,
	KRDMA_BLK_OP_READ,
	KRDMA_BLK_OP_WRITE,
	KRDMA_BLK_OP_FLUSH,
	KRDMA_BLK_OP_DISCARD,
	KRDMA_BLK_OP_WRITE_ZEROES,
};

/* Command flags. */
#define KRDMA_BLK_F_FUA		0x1
#define KRDMA_BLK_F_INCAPSULE	0x2	/* WRITE: the data follows the command */

/* The most data an in-capsule WRITE carries. */
#define KRDMA_BLK_INCAPSULE_MAX	4096

/* HELLO reply flags: what the export supports. */
#define KRDMA_BLK_X_RO		0x1
#define KRDMA_BLK_X_DISCARD	0x2
#define KRDMA_BLK_X_WRITE_ZEROES	0x4

/**
 * struct krdma_blk_hdr - what every message starts with
 * @magic: KRDMA_BLK_MAGIC
 * @version: KRDMA_BLK_VERSION
 * @op: enum krdma_blk_op
 * @flags: KRDMA_BLK_F_* (commands), 0 otherwise
 */
struct krdma_blk_hdr {
	__be32	magic;
	u8	version;
	u8	op;
	__be16	flags;
};

/**
 * struct krdma_blk_hello - client -> server, first message
 * @hdr: op HELLO
 * @export: the export's name, NUL terminated
 */
struct krdma_blk_hello {
	struct krdma_blk_hdr	hdr;
	char			export[KRDMA_BLK_NAME_LEN];
};

/**
 * struct krdma_blk_cmd - client -> server, one I/O
 * @hdr: op READ, WRITE, FLUSH, DISCARD or WRITE_ZEROES
 * @len: bytes (0 for FLUSH); a WRITE with KRDMA_BLK_F_INCAPSULE has them
 *	right behind the command, in the same message, which is then
 *	exactly sizeof(struct krdma_blk_cmd) + @len bytes long
 * @qd: the client's queue depth when it sent this command: its requests
 *	on this connection's queue, this one included (0: not told).  A hint
 *	for where the server does the work (see hipri_depth); nothing else
 *	depends on it
 * @tag: the client's, echoed in the reply
 * @sector: first 512-byte sector
 * @token: the client's data (READ, WRITE without KRDMA_BLK_F_INCAPSULE; zero
 *	otherwise)
 */
struct krdma_blk_cmd {
	struct krdma_blk_hdr	hdr;
	__be32			len;
	__be32			qd;
	__be64			tag;
	__be64			sector;
	struct krdma_token_wire	token;
};

/**
 * struct krdma_blk_resp - server -> client, one per HELLO or command
 * @hdr: op of what it answers, flags 0
 * @status: 0 or a negative errno
 * @lbs: HELLO: logical block size in bytes
 * @tag: the command's tag (HELLO: 0)
 * @sectors: HELLO: the export's size in 512-byte sectors
 * @max_sectors: HELLO: largest READ/WRITE in sectors
 * @max_discard: HELLO: largest DISCARD/WRITE_ZEROES in sectors
 * @xflags: HELLO: KRDMA_BLK_X_*
 * @rsvd: 0
 */
struct krdma_blk_resp {
	struct krdma_blk_hdr	hdr;
	__be32			status;
	__be32			lbs;
	__be64			tag;
	__be64			sectors;
	__be32			max_sectors;
	__be32			max_discard;
	__be32			xflags;
	__be32			rsvd;
};

/* The largest message: an in-capsule WRITE's (both sides' max_msg_size). */
#define KRDMA_BLK_MSG_MAX	(sizeof(struct krdma_blk_cmd) + \
				 KRDMA_BLK_INCAPSULE_MAX)

static inline void krdma_blk_hdr_init(struct krdma_blk_hdr *h, u8 op, u16 fl)
{
	h->magic = cpu_to_be32(KRDMA_BLK_MAGIC);
	h->version = KRDMA_BLK_VERSION;
	h->op = op;
	h->flags = cpu_to_be16(fl);
}

static inline bool krdma_blk_hdr_ok(const struct krdma_blk_hdr *h)
{
	return be32_to_cpu(h->magic) == KRDMA_BLK_MAGIC &&
	       h->version == KRDMA_BLK_VERSION;
}

#endif /* _KRDMA_BLK_PROTO_H */
