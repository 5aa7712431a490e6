/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma credit accounting (the flow-control comment at the top of
 * krdma_msg.c describes the protocol).  Pure state and rules, no device and
 * no locking: the caller holds conn->lock around every helper, posts the
 * work requests itself, and KUnit drives the same helpers in a simulation
 * of two endpoints.
 */
#ifndef KRDMA_CREDIT_H
#define KRDMA_CREDIT_H

#include <linux/errno.h>
#include <linux/minmax.h>
#include <linux/types.h>

struct krdma_credit {
	u32	depth;		/* data receives each side keeps posted */
	u32	credits;	/* sends the peer can take */
	u32	owed;		/* receives reposted, not yet told */
	bool	ctl_token;	/* the peer's credit receive is posted */
	bool	owe_ctl_ack;	/* we reposted the peer's credit message */
	/* What the peer may send, as far as we told it: checked on receive. */
	u32	peer_credits;	/* messages it may still send */
	bool	peer_ctl_token;	/* it may send a CREDIT message */
};

/* Both sides start with every receive posted and the token in hand. */
static inline void krdma_credit_init(struct krdma_credit *c, u32 depth)
{
	c->depth = depth;
	c->credits = depth;
	c->owed = 0;
	c->ctl_token = true;
	c->owe_ctl_ack = false;
	c->peer_credits = depth;
	c->peer_ctl_token = true;
}

/*
 * The active side learns the agreed depth from the accept (@depth, at
 * most its offer, which krdma_credit_init() counted with at connect
 * time).  The peer may have sent before that event: what its messages
 * took, and the receives already reposted for them (owed), stay counted,
 * or a credit owed would never go back.  Nothing was sent to the peer yet,
 * so our own credits are the agreed depth.  A peer that already sent more
 * than @depth broke the depth it agreed to: -EPROTO, and nothing changes
 * (the connect fails).
 */
static inline int krdma_credit_agreed(struct krdma_credit *c, u32 depth)
{
	u32 used = c->depth - c->peer_credits;	/* taken, not yet told back */

	if (used > depth)
		return -EPROTO;
	c->depth = depth;
	c->credits = depth;
	c->peer_credits = depth - used;
	return 0;
}

/* One credit for a SEND or WRITE_WITH_IMM; false: the peer has no receive. */
static inline bool krdma_credit_take(struct krdma_credit *c)
{
	if (!c->credits)
		return false;
	c->credits--;
	return true;
}

/* The post that took a credit failed: the peer's receive is still free. */
static inline void krdma_credit_undo(struct krdma_credit *c)
{
	c->credits++;
}

/*
 * A message header from the peer: @n credits back, and @ctl_ack when the
 * peer reposted the receive our last CREDIT message used.  Every credit
 * stands for one of the peer's depth data receives, so more than depth in
 * hand, or an ack for a CREDIT message we never sent, means the peer does
 * not follow the protocol: -EPROTO, and nothing is applied.
 */
static inline int krdma_credit_grant(struct krdma_credit *c, u32 n,
				     bool ctl_ack)
{
	if (n > c->depth - c->credits)
		return -EPROTO;
	if (ctl_ack && c->ctl_token)
		return -EPROTO;
	c->credits += n;
	if (ctl_ack)
		c->ctl_token = true;
	return 0;
}

/* A receive went back on the queue: the peer may use it again. */
static inline void krdma_credit_reposted(struct krdma_credit *c,
					 bool is_credit_msg)
{
	if (is_credit_msg)
		c->owe_ctl_ack = true;
	else
		c->owed++;
}

/*
 * Should credits go out in a CREDIT message now?  Only with the token (the
 * peer's one credit receive is free), and only when there are credits to
 * return: an ack alone would make the peer ack our CREDIT message in turn,
 * and the two sides would bounce empty messages for ever.  Half the depth
 * owed is enough to send before the peer stalls; an ack owed sends at
 * once, because the peer cannot return credits until it has the token.
 */
static inline bool krdma_credit_should_send_ctl(const struct krdma_credit *c)
{
	return c->ctl_token && c->owed &&
	       (c->owed >= max_t(u32, c->depth / 2, 1) || c->owe_ctl_ack);
}

/*
 * May a WRITE_WITH_IMM notice go as such?  It spends a credit but has no
 * header, so it cannot carry an ack.  While one is owed, the notice goes as
 * a KRDMA_MSG_IMM message instead (same credit, with a header): otherwise a
 * one-way stream of notices never gives the peer its token back, the peer
 * can never return the credits the stream spends, and the stream stalls.
 * A CREDIT message returns at least one credit, and while its ack is owed
 * only messages with a header (which carry the ack) spend credits: an ack
 * owed always has a credit to go with.
 */
static inline bool krdma_credit_imm_needs_hdr(const struct krdma_credit *c)
{
	return c->owe_ctl_ack;
}

/* What the next header carries (credits returned); see krdma_credit_sent. */
static inline u32 krdma_credit_hdr_credits(const struct krdma_credit *c)
{
	return c->owed;
}

/* Whether the next header acknowledges the peer's CREDIT message. */
static inline bool krdma_credit_hdr_ctl_ack(const struct krdma_credit *c)
{
	return c->owe_ctl_ack;
}

/*
 * A header built from krdma_credit_hdr_*() was posted: its credits and ack
 * are told.  A CREDIT message (@ctl) also uses up the token until the peer
 * acknowledges it.
 */
static inline void krdma_credit_sent(struct krdma_credit *c, bool ctl)
{
	if (ctl)
		c->ctl_token = false;
	c->peer_credits += c->owed;
	if (c->owe_ctl_ack)
		c->peer_ctl_token = true;
	c->owed = 0;
	c->owe_ctl_ack = false;
}

/*
 * A message from the peer took one of our receives: a CREDIT message
 * (@is_credit_msg) needs the peer's token, which it has back once we
 * acknowledged its last one; anything else that takes a receive of ours
 * (a message with a header but a heartbeat, a write-with-immediate) needs
 * a credit, one of the depth we started with or returned since.  A peer
 * sending without either does not follow the protocol, and would take
 * receives we keep for other messages (ours would then go unanswered, or
 * its own meet RNR): -EPROTO.  Checked at the receiver, since the sender
 * is the one not to trust; credits counted when the header carrying them
 * was posted, under the same lock as this.
 */
static inline int krdma_credit_recv(struct krdma_credit *c,
				    bool is_credit_msg)
{
	if (is_credit_msg) {
		if (!c->peer_ctl_token)
			return -EPROTO;
		c->peer_ctl_token = false;
		return 0;
	}
	if (!c->peer_credits)
		return -EPROTO;
	c->peer_credits--;
	return 0;
}

#endif /* KRDMA_CREDIT_H */
