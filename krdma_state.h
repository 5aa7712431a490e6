/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The connection state machine: which events move a connection from which
 * state, as a pure function, so that every change of conn->state goes
 * through one table that KUnit checks pair by pair.  The callers hold
 * conn->lock and do the work the new state calls for.
 */
#ifndef KRDMA_STATE_H
#define KRDMA_STATE_H

#include <linux/errno.h>
#include <krdma.h>	/* enum krdma_conn_state */

enum krdma_conn_event {
	KRDMA_CONN_EV_ESTABLISHED,	/* the CM finished the handshake */
	KRDMA_CONN_EV_FAILED,		/* an operation or the CM failed */
	KRDMA_CONN_EV_PEER_DISCONNECTED, /* the CM's DISCONNECTED */
	KRDMA_CONN_EV_TEARDOWN_OK,	/* closed by its owner */
	KRDMA_CONN_EV_TEARDOWN_ERR,	/* torn down for an error */
	KRDMA_CONN_EV_MAX,
};

/*
 * The state @ev moves a connection in @cur to, or -EINVAL when the event
 * has no effect there and the connection stays in @cur.  DISCONNECTED and
 * ERROR are final: what ended the connection first is what its owner
 * sees, so a flush or a peer's disconnect after device removal does not
 * turn "error" into "disconnected", and a handshake that completes after
 * the connection failed (a receive flushed, an allocation that failed)
 * does not bring it back to CONNECTED.
 */
static inline int krdma_conn_next_state(enum krdma_conn_state cur,
					enum krdma_conn_event ev)
{
	if (cur != KRDMA_CONN_CONNECTING && cur != KRDMA_CONN_CONNECTED)
		return -EINVAL;
	switch (ev) {
	case KRDMA_CONN_EV_ESTABLISHED:
		return cur == KRDMA_CONN_CONNECTING ? KRDMA_CONN_CONNECTED :
		       -EINVAL;
	case KRDMA_CONN_EV_FAILED:
	case KRDMA_CONN_EV_TEARDOWN_ERR:
		return KRDMA_CONN_ERROR;
	case KRDMA_CONN_EV_PEER_DISCONNECTED:
		/* Before ESTABLISHED the connect fails by its own event. */
		return cur == KRDMA_CONN_CONNECTED ? KRDMA_CONN_DISCONNECTED :
		       -EINVAL;
	case KRDMA_CONN_EV_TEARDOWN_OK:
		return KRDMA_CONN_DISCONNECTED;
	default:
		return -EINVAL;
	}
}

/*
 * Whether a cause replaces the error a connection recorded (@old, 0 for
 * none).  The first error stays, but for a placeholder (@old_weak: a
 * flush, or the peer's disconnect, both of which may be reported before
 * what caused them), which a cause given later (@weak false) replaces:
 * a remote access error of ours that the peer disconnected for, say.  Not
 * a transport, RNR or response timeout (@wc) once krdma has handled the
 * peer's disconnect (@peer_left): on IB and RoCE the CM leaves the QP in
 * RTS then, and a peer that left acknowledges nothing, so that is its
 * leaving, not why it left (an idle connection's heartbeat in flight at
 * the peer's rmmod turned its -ECONNRESET into -ETIMEDOUT seconds later).
 * A timeout handled before the disconnect stays the cause; so does one
 * the peer's own heartbeat answered with its leaving when packets were
 * lost one way only (the other end records the timeout).  siw's failure
 * on a reset stream (IB_WC_LOC_QP_OP_ERR) is not in the list: a device
 * reports that status for local errors too.
 */
static inline bool krdma_cause_replaces(int old, bool old_weak,
					bool peer_left, bool weak,
					enum ib_wc_status wc)
{
	if (!old)
		return true;
	if (!old_weak || weak)
		return false;
	return !(peer_left && (wc == IB_WC_RETRY_EXC_ERR ||
			       wc == IB_WC_RNR_RETRY_EXC_ERR ||
			       wc == IB_WC_RESP_TIMEOUT_ERR));
}

#endif /* KRDMA_STATE_H */
