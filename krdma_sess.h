/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sessions' pure logic (krdma_session.c), apart for KUnit: the private
 * data of a session's connect request (layout in include/krdma.h), which
 * errors of a connect are worth another attempt, and what an operation's
 * error means to a session's consumer.
 */
#ifndef KRDMA_SESS_H
#define KRDMA_SESS_H

#include <linux/errno.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/minmax.h>
#include <linux/socket.h>
#include <linux/string.h>
#include <linux/uuid.h>

#include <krdma.h>

/*
 * Fill @buf (KRDMA_MAX_PRIVATE_DATA bytes) with the session header of
 * connection @idx of @nr and the consumer's @ulen bytes.  Return: the
 * bytes to send, or -EINVAL when the consumer's do not fit or @idx, @nr
 * are out of range.
 */
static inline int krdma_sess_pdata_encode(u8 *buf, const uuid_t *id, u32 gen,
					  u32 idx, u32 nr, const void *user,
					  u8 ulen)
{
	if (ulen > KRDMA_SESSION_MAX_USER_DATA || (ulen && !user) ||
	    !nr || nr > KRDMA_SESSION_MAX_CONNS || idx >= nr)
		return -EINVAL;
	buf[0] = KRDMA_SESSION_PDATA_MAGIC >> 8;
	buf[1] = KRDMA_SESSION_PDATA_MAGIC & 0xff;
	memcpy(buf + 2, id->b, UUID_SIZE);
	buf[18] = (gen >> 24) & 0xff;
	buf[19] = (gen >> 16) & 0xff;
	buf[20] = (gen >> 8) & 0xff;
	buf[21] = gen & 0xff;
	buf[22] = idx;
	buf[23] = nr;
	if (ulen)
		memcpy(buf + KRDMA_SESSION_PDATA_HDR, user, ulen);
	return KRDMA_SESSION_PDATA_HDR + ulen;
}

/*
 * Read a session header from @len bytes at @buf (any of @id, @gen, @idx,
 * @nr may be NULL).  Return: how many of the consumer's bytes follow it
 * (from @buf + KRDMA_SESSION_PDATA_HDR), or -EINVAL when these are not a
 * session's (a header whose index is not below its count, or whose count
 * is 0 or past KRDMA_SESSION_MAX_CONNS, is not).
 */
static inline int krdma_sess_pdata_decode(const u8 *buf, u32 len, uuid_t *id,
					  u32 *gen, u32 *idx, u32 *nr)
{
	if (!buf || len < KRDMA_SESSION_PDATA_HDR ||
	    len > KRDMA_MAX_PRIVATE_DATA ||
	    buf[0] != KRDMA_SESSION_PDATA_MAGIC >> 8 ||
	    buf[1] != (KRDMA_SESSION_PDATA_MAGIC & 0xff) ||
	    !buf[23] || buf[23] > KRDMA_SESSION_MAX_CONNS ||
	    buf[22] >= buf[23])
		return -EINVAL;
	if (id)
		memcpy(id->b, buf + 2, UUID_SIZE);
	if (gen)
		*gen = (u32)buf[18] << 24 | (u32)buf[19] << 16 |
		       (u32)buf[20] << 8 | buf[21];
	if (idx)
		*idx = buf[22];
	if (nr)
		*nr = buf[23];
	return len - KRDMA_SESSION_PDATA_HDR;
}

/*
 * What a listener does with a session's connect request of generation
 * @gen when a passive connection of the same session and index, of
 * generation @live_gen, is still up there (a session reconnects when its
 * side of a connection failed, which the other side may not have seen:
 * a link that went down, a peer whose power was cut).
 */
enum krdma_sess_verdict {
	KRDMA_SESS_REPLACE,	/* the live one is the session's past: fail it */
	KRDMA_SESS_STALE,	/* the request is older: refuse it, -ESTALE */
	KRDMA_SESS_BUSY,	/* from another host: refuse it, -EBUSY */
};

/*
 * Only the host the live connection's peer is on may replace it: another
 * one (a guess of the id, or the same session over another path) is
 * refused with -EBUSY, which a session retries, until the live one fails
 * by itself (its heartbeats).  Generations compare as serial numbers.
 */
static inline enum krdma_sess_verdict krdma_sess_verdict(u32 live_gen, u32 gen,
							 bool same_host)
{
	if (!same_host)
		return KRDMA_SESS_BUSY;
	return (s32)(gen - live_gen) > 0 ? KRDMA_SESS_REPLACE : KRDMA_SESS_STALE;
}

/* Are @a and @b addresses of one host (family and address; not ports)? */
static inline bool krdma_sess_same_host(const struct sockaddr *a,
					const struct sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
		       ((const struct sockaddr_in *)b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
			       &((const struct sockaddr_in6 *)b)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

/*
 * The least time an attempt near the loss deadline gets (so that a
 * refusal still comes back as itself), and the least time before the
 * deadline at which an outage's first attempt starts.
 */
#define KRDMA_SESS_MIN_ATTEMPT_MS	200

/*
 * When an outage's first reconnect attempt is due, in ms after the
 * failure: after @delay_ms, but no later than KRDMA_SESS_MIN_ATTEMPT_MS
 * before the loss deadline (@loss_ms after the failure), and at once when
 * the loss timeout is shorter than that.  A loss timeout below the delay
 * gets one attempt, and the loss still comes on time.
 */
static inline u32 krdma_sess_first_attempt_ms(u32 delay_ms, u32 loss_ms)
{
	if (loss_ms == KRDMA_SESSION_LOSS_TMO_NEVER)
		return delay_ms;
	if (loss_ms <= KRDMA_SESS_MIN_ATTEMPT_MS)
		return 0;
	return min_t(u32, delay_ms, loss_ms - KRDMA_SESS_MIN_ATTEMPT_MS);
}

/*
 * Is a failed connect worth another attempt?  Yes for what the network,
 * the device or a busy peer cause (krdma_connect()'s errors of the
 * transport); no for a peer that will never take us (another protocol
 * version, not krdma, bad parameters) and for an accept hook's refusal,
 * whose errno is the consumer's (-EBUSY and -EAGAIN ask for a retry).
 */
static inline bool krdma_sess_retryable(int err)
{
	switch (err) {
	case -ECONNREFUSED:
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -ENETUNREACH:
	case -ENETDOWN:
	case -EADDRNOTAVAIL:
	case -ENODEV:
	case -ENXIO:
	case -EBUSY:
	case -EAGAIN:
	case -ENOMEM:
	case -EIO:
	case -EINTR:
		return true;
	default:
		return false;
	}
}

/*
 * An operation on a session's connection returned @err; @conn_err is
 * krdma_conn_error() of that connection afterwards.  An error that left
 * the connection working (-ERANGE, -EMSGSIZE, a nowait -EAGAIN...) is the
 * caller's to see; one on a failed connection means "retry after
 * reconnect", whatever the device said.  But for -EINTR and -ERESTARTSYS:
 * a signal ended the caller's wait, and a fatal one may be what failed
 * the connection (krdma_wait_abandon()); a dying task told to resubmit
 * would fail every new connection in turn.
 */
static inline int krdma_sess_op_errno(int err, int conn_err)
{
	if (!err || !conn_err || err == -EINTR || err == -ERESTARTSYS)
		return err;
	return KRDMA_ERR_RETRY;
}

#endif /* KRDMA_SESS_H */
