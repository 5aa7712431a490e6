/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The self-test service's messages (krdma_selftest.c), as they go on the
 * wire after krdma's own header: what the control file's "test" asks of
 * the peer's service, and its answers.  Shared with test/hostile, which
 * speaks it to obtain a real token and to check a region after its
 * attacks.
 */
#ifndef KRDMA_ST_WIRE_H
#define KRDMA_ST_WIRE_H

#include <linux/types.h>
#include <krdma.h>

#define ST_MAGIC	0x4b525354	/* "KRST" */

enum st_op {
	ST_SETUP = 1,	/* expose len bytes (arg: access rights) */
	ST_TOKEN,	/* reply: token arg of off regions */
	ST_VERIFY,	/* check the exposed bytes hold pattern(seed) */
	ST_FILL,	/* fill the exposed bytes with pattern(seed) */
	ST_DATA,	/* a message whose payload is pattern(seed) */
	ST_FREE,	/* release what ST_SETUP exposed */
	ST_REPLY,	/* status (0 ok, else errno), off: first bad byte */
	ST_VERIFY64,	/* the first 8 exposed bytes hold seed */
	ST_SUNK,	/* reply: off = notices sunk since ST_SETUP */
};

/*
 * ST_DATA: the receiver stops taking messages until the sender must have
 * run out of credits, so that a send test always meets backpressure
 * (however fast the receiver is) and flow control is what it exercises.
 * A batch's seeds follow each other; the last has arg 1.  The receiver
 * checks every payload and the order: its one reply, to the last, is 0,
 * -EILSEQ (a payload differs; off: where) or -EBADMSG (one came out of
 * order).
 */
#define ST_F_HOLD	0x01
/*
 * ST_SETUP for the bench's op=imm: the write-with-immediate notices that
 * follow are counted and their order checked (immediates 0, 1, 2, ...),
 * not answered; ST_SUNK's reply says how many came (off) and whether one
 * came out of order (status -EBADMSG).
 */
#define ST_F_SINK	0x02

struct st_msg {
	__be32	magic;
	u8	op;
	u8	flags;	/* ST_F_* */
	__be16	status;
	__be32	arg;
	__be32	rsvd;
	__be64	seed;
	__be64	len;
	__be64	off;
	struct krdma_token_wire tok;
} __packed;

#endif /* KRDMA_ST_WIRE_H */
