/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma internal definitions shared by the module's files.
 */
#ifndef KRDMA_CORE_H
#define KRDMA_CORE_H

#include <linux/kobject.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/completion.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/socket.h>
#include <linux/uuid.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include <krdma.h>
#include "krdma_compat.h"
#include "krdma_proto.h"
#include "krdma_credit.h"
#include "krdma_state.h"
#include "krdma_inject.h"

#define KRDMA_VERSION	"0.1.0"

/*
 * One-sided transfers are cut into chunks of at most this many pages (less
 * if the device registers fewer per MR); each chunk is one rdma_rw context
 * and takes one of the connection's queue-depth slots while in flight.
 */
#define KRDMA_RW_CHUNK_PAGES	256

/*
 * SGEs per send WR asked of the QP.  rdma_rw puts up to this many in one
 * RDMA WRITE (and max_sge_rd in a READ): fewer would multiply the WRs per
 * chunk, more only grows every send queue entry.
 */
#define KRDMA_MAX_SEND_SGE	32

/*
 * Inline data asked of the QP: a message whose header and payload fit in
 * what the device grants is posted IB_SEND_INLINE (the device copies it
 * at post time; no DMA from the buffer).  siw takes at most 80 bytes and
 * fails a QP that asks for more; rxe grants 512 whatever is asked.
 */
#define KRDMA_INLINE_ASK	80

/*
 * One per RDMA device krdma has seen.  The ib_client holds the first
 * reference; every connection on the device holds another.  Removal of the
 * device tears down the connections, drops the client's reference and waits
 * for the rest, so nothing outlives the ib_device.
 */
struct krdma_device {
	struct ib_device	*ibdev;
	struct kref		ref;
	struct completion	released;
	struct list_head	list;		/* on krdma_devices */
	struct kobject		kobj;		/* devices/<name> */
	bool			removing;
	/*
	 * The ib_device's name, which `rdma dev set NAME name NEW` changes
	 * (krdma_rename_one()): read it with krdma_device_name().
	 */
	spinlock_t		name_lock;
	char			name[IB_DEVICE_NAME_MAX];
	/*
	 * The rdma_cm ids of connections torn down while their port was
	 * down: destroying one sends a DREQ or a REJ, which waits for the
	 * port to be up again (krdma_conn_park()).  The port's events and
	 * a poll while any is parked look for that moment.
	 */
	struct ib_event_handler	event_handler;
	struct mutex		park_mutex;	/* parked, park_closed */
	struct list_head	parked;		/* krdma_conn.park_entry */
	bool			park_closed;	/* removal: none any more */
	struct delayed_work	park_work;
};

/* One receive buffer: header + max_msg_size bytes. */
struct krdma_rx {
	struct ib_cqe		cqe;
	struct krdma_conn	*conn;
	void			*buf;
	u64			dma;
	u32			byte_len;
	bool			has_imm;	/* an immediate came with it */
	bool			notice;		/* write-with-imm: no bytes */
	u32			imm;
	bool			inv_valid;	/* invalidated a pool MR of ours */
	u32			inv_rkey;
	struct list_head	list;		/* conn->rx_ready or ->recvq */
	/* For the recv callback, under conn->lock: */
	struct krdma_msg	msg;
	bool			kept;		/* the consumer has it */
	bool			gone;		/* teardown left it to release */
};

/* One send buffer, with the caller's request while it is in flight. */
struct krdma_tx {
	struct ib_cqe		cqe;
	struct krdma_conn	*conn;
	void			*buf;
	u64			dma;
	struct krdma_req	*req;
	u32			len;		/* payload posted */
	struct list_head	list;		/* conn->tx_free */
	/*
	 * conn->send_sge SGEs for a gather send; the caller's memory
	 * krdma_sendv_async() mapped is sge[1..nmap], unmapped when the
	 * send completes.
	 */
	struct ib_sge		*sge;
	u32			nmap;
};

/*
 * A work request of one of the connection's own contexts: a
 * write-with-immediate notice or an atomic posted without waiting
 * (krdma_imm_async(), krdma_atomic_*_async()).  conn->depth of them are
 * allocated with the buffers, so posting allocates nothing; an atomic's
 * result lands in @res, mapped for the device once at set-up.
 */
struct krdma_xop {
	struct ib_cqe		cqe;
	struct krdma_conn	*conn;
	struct krdma_req	*req;
	u64			*old;		/* atomic: the caller's result */
	u64			*res;		/* atomic: the device's */
	u64			res_dma;
	int			op;		/* KRDMA_TRACE_OP_* */
	struct list_head	list;		/* conn->xop_free */
};

struct krdma_stats {
	atomic64_t	send_ops, send_bytes;
	atomic64_t	recv_ops, recv_bytes;
	atomic64_t	write_ops, write_bytes;
	atomic64_t	read_ops, read_bytes;
	atomic64_t	atomic_ops;
	atomic64_t	credit_msgs;
	atomic64_t	errors;
	atomic64_t	credit_waits;
	atomic64_t	imm_msgs;	/* notices sent as KRDMA_MSG_IMM */
	atomic64_t	send_inline;	/* messages posted IB_SEND_INLINE */
	atomic64_t	send_zcopy;	/* sent from the caller's memory */
	atomic64_t	hb_sent, hb_received;	/* pings and pongs */
	atomic64_t	nudges;		/* iWARP: zero-length WRITEs */
	atomic64_t	poll_reaped;	/* completions krdma_poll() reaped */
};

struct krdma_listener;

/* What an rdma_cm id's context points at. */
enum krdma_cm_ctx_type {
	KRDMA_CTX_CONN = 1,
	KRDMA_CTX_LISTENER,
};

struct krdma_cm_ctx {
	enum krdma_cm_ctx_type	type;
};

/*
 * A connection.  The embedded kobject's reference count is the object's
 * lifetime; the RDMA resources (cm_id, QP, CQ, buffers) are released earlier,
 * by krdma_conn_teardown(), which runs exactly once: on close, on device
 * removal, or on module unload.  It holds no consumer's state: a consumer
 * (the control file, /dev/krdma, another module) keeps its own behind
 * krdma_conn_priv().
 */
struct krdma_conn {
	struct kobject		kobj;		/* conns/<name> */
	bool			in_sysfs;
	u32			id;
	char			name[48];	/* listener name + ".N" fits */
	bool			auto_name;	/* krdma's connN, not the owner's */
	struct list_head	list;		/* krdma_conns, krdma_lock */
	bool			unpublished;	/* off it, krdma_lock */
	struct list_head	accept_entry;	/* listener's accept queue */
	struct krdma_listener	*listener;	/* passive side: where from */
	/*
	 * A session's connection: the session header of its connect
	 * request, sent (active end) or received (passive end,
	 * krdma_sess_claim()).  Set before it is published; fixed.
	 */
	bool			sess_known;
	u8			sess_idx;
	u32			sess_gen;
	uuid_t			sess_id;
	bool			held;		/* in listener->held */
	bool			active;
	struct krdma_conn_opts	opts;
	u8			test_hello;	/* fault injection for tests */
	u8			pdata[KRDMA_MAX_PRIVATE_DATA];	/* opts' copy */

	struct krdma_cm_ctx	ctx;
	struct rdma_cm_id	*cm_id;
	struct ib_device	*ibdev;		/* once the address is resolved */
	bool			dying;		/* CM handler must not act */
	bool			orphan;		/* passive, no owner yet */
	/*
	 * iWARP passive: established, given to its consumer only once the
	 * active side's first message came (krdma_passive_established()).
	 * Under conn->lock.
	 */
	bool			peer_spoke;	/* a receive completed */
	bool			handover_wait;	/* established, not handed */
	unsigned long		handover_by;	/* jiffies: else closed */
	unsigned long		handover_poll;	/* polled: next poll, jiffies */
	struct delayed_work	handover_work;
	struct krdma_device	*kdev;
	char			devname[IB_DEVICE_NAME_MAX];
	u32			qp_num;
	/*
	 * The connection's own PD: its registrations are reachable through
	 * its QP only, never through another connection on the device.
	 */
	struct ib_pd		*pd;
	struct ib_qp		*qp;
	struct ib_cq		*cq;
	u32			cq_size;
	int			comp_vector;	/* cq's; -1: none */
	spinlock_t		poll_lock;	/* one poll at a time (opts.poll) */
	u32			port;
	bool			established;	/* ever reached CONNECTED */
	struct completion	cm_done;
	int			cm_status;
	/* krdma_connect_cancel()'s errno (its ctl's lock), or 0 */
	int			connect_abort;

	struct mutex		teardown_mutex;	/* teardown runs once */
	bool			torn_down;
	struct work_struct	teardown_work;
	/* cm_id left to destroy once the port is up (krdma_conn_park()) */
	struct krdma_device	*park_kdev;
	struct list_head	park_entry;	/* park_kdev->parked */

	spinlock_t		lock;		/* everything below */
	enum krdma_conn_state	state;
	int			error;
	bool			qp_ok;		/* posting allowed */
	int			qp_users;	/* preparing a post outside lock */
	wait_queue_head_t	wq;		/* state, credits, rx, tx slots */

	u32			depth;		/* negotiated */
	u32			max_msg;	/* negotiated */
	/*
	 * Active side only (recv_done() leaves it 0 on a passive one): the
	 * longest message that came before the accept's agreed max_msg was
	 * in (krdma_active_established()).
	 */
	u32			rx_early_len;
	struct sockaddr_storage	laddr, raddr;

	struct krdma_rx		*rx;
	u32			nr_rx;
	struct list_head	rx_ready;	/* before the recv callback */
	struct list_head	recvq;		/* kept for krdma_recv() */
	bool			rx_closed;	/* teardown took the buffers */

	struct krdma_tx		*tx;
	u32			nr_tx;
	struct list_head	tx_free;
	struct krdma_tx		ctl_tx;		/* credit-only messages */
	struct krdma_credit	cr;		/* flow control, krdma_credit.h */
	u32			rw_slots;	/* one-sided chunks in flight */
	u32			rw_waiters;	/* waiting for rw_slots */
	u32			rw_chunk_pages;	/* pages per rdma_rw context */
	u32			max_reg_pages;	/* in one registration */
	bool			dev_atomics;	/* the device does atomics */
	bool			dev_inv;	/* and SEND_WITH_INV */
	bool			iwarp;		/* no immediate data */
	u32			send_sge;	/* SGEs in a send work request */
	u32			max_inline;	/* header + payload sent inline */
	struct ib_sge		*tx_sge;	/* tx[].sge's array */
	struct list_head	rw_ops;		/* one-sided ops posted */
	bool			room_wanted;	/* ops->room, under lock */
	struct krdma_xop	*xops;		/* krdma_rw.c */
	u32			nr_xops;
	struct list_head	xop_free;
	int			qp_event_err;	/* a fatal QP event's errno */
	/* error is a placeholder: a flush's, or the peer's disconnect */
	bool			error_weak;
	bool			peer_left;	/* its DISCONNECTED came */
	/* The failed work completion that gave error, or IB_WC_SUCCESS */
	enum ib_wc_status	error_wc;
	int			cm_event;	/* being handled, or -1 */
	size_t			buf_size;	/* rx/tx buffers' mapped size */

	/* Heartbeats (krdma_hb.c), under conn->lock. */
	u32			hb_ms;		/* agreed interval; 0: none */
	struct delayed_work	hb_work;
	struct krdma_tx		hb_tx;		/* ping or pong, header only */
	bool			hb_tx_busy;	/* hb_tx is posted */
	bool			hb_pong_owed;	/* a ping came while it was */
	bool			hb_ping_out;	/* active: ping not answered */
	/* iWARP, active: nudges until the first pong (krdma_hb_first()) */
	struct delayed_work	nudge_work;
	u32			nudge_count;
	bool			nudge_done;	/* the first pong came */
	bool			hb_stopped;	/* teardown began */
	u32			hb_missed;	/* silent ticks in a row */
	bool			hb_half;	/* polled: a poll-only tick */
	u32			hb_rx;		/* receives completed */
	u32			rw_done;	/* one-sided completions */
	u32			hb_rx_seen;	/* hb_rx at the last tick */
	u32			hb_rw_seen;	/* rw_done at the last tick */

	/* A flush with no cause after KRDMA_FLUSH_QUIET: one warning. */
	struct delayed_work	flush_work;

	/* Completion fault injection, conns/NAME/inject (krdma_inject.c). */
	struct krdma_inject	inj;

	/* Events for opts.ops (include/krdma.h), under conn->lock. */
	struct delayed_work	ev_work;
	u8			ev_pending;	/* KRDMA_EVP_* */
	unsigned long		ev_settle_by;	/* end told by then, in jiffies */
	bool			ev_up;		/* ESTABLISHED queued */
	bool			ev_off;		/* krdma_close() began */
	bool			ev_up_out;	/* ESTABLISHED not told yet */
	bool			rx_cb;		/* recv callback delivers */
	u32			rx_kept;	/* messages the consumer keeps */
	struct krdma_rx		*rx_gone;	/* rx array, kept past teardown */

	struct list_head	mrs;		/* registrations on this conn */
	/*
	 * The MR pool (opts.mr_pool, krdma_mr.c): ib_mr_pool's list of free
	 * MRs, set up with the QP and destroyed before it; and the
	 * preallocated registration handles, free ones on pool_free (under
	 * conn->lock), kept until the connection's memory goes.
	 */
	struct list_head	pool_mrs;
	struct list_head	pool_free;
	struct krdma_mr		*pool;
	u32			pool_n;
	struct krdma_stats	stats;
};

/* A listening rdma_cm id and the connections it accepted, not yet taken. */
struct krdma_listener {
	struct kobject		kobj;		/* listeners/<name> */
	bool			in_sysfs;
	u32			id;
	char			name[32];
	struct list_head	list;		/* krdma_listeners */
	struct krdma_cm_ctx	ctx;
	struct rdma_cm_id	*cm_id;
	int			error;		/* why it stopped listening */
	struct krdma_conn_opts	opts;
	struct sockaddr_storage	addr;
	struct mutex		close_mutex;	/* cm_id vs. device removal */
	spinlock_t		lock;		/* accept_q and counters */
	struct list_head	accept_q;
	wait_queue_head_t	wq;
	bool			closed;
	u32			accepted;
	u32			rejected;
	u32			next_child;
	u32			held;		/* against opts.backlog */
};

static inline bool krdma_conn_usable(struct krdma_conn *conn)
{
	return conn->state == KRDMA_CONN_CONNECTED && conn->qp_ok;
}

extern struct mutex krdma_lock;		/* devices list and removal */
extern struct list_head krdma_devices;
extern struct kobject *krdma_sessions_kobj;	/* krdma_session.c's */
extern struct list_head krdma_conns;
extern struct list_head krdma_listeners;
extern struct workqueue_struct *krdma_wq;

/*
 * A posted work request that the device has not completed by then (a lost
 * completion) fails its connection; waiting for credits or slots never
 * does.
 */
#define KRDMA_POST_TIMEOUT	(30 * HZ)
/*
 * How long teardown lets a waiter for its own work request keep the QP
 * before it moves the QP to ERROR, which flushes that request.
 */
#define KRDMA_TEARDOWN_GRACE	(HZ)
extern atomic64_t krdma_total_conns;

void krdma_device_put(struct krdma_device *kdev);
struct krdma_device *krdma_device_get_by_ib(struct ib_device *ibdev);

/* krdma_conn.c */
const char *krdma_conn_state_str(enum krdma_conn_state state);
void krdma_conn_teardown(struct krdma_conn *conn, int err);
void krdma_conn_qp_error(struct krdma_conn *conn);
void krdma_conn_set_error_flush(struct krdma_conn *conn);
void krdma_conn_set_error(struct krdma_conn *conn, int err);
void krdma_conn_set_error_wc(struct krdma_conn *conn, int err,
			     enum ib_wc_status wc);
void krdma_conn_schedule_teardown(struct krdma_conn *conn, int err);
bool krdma_fault_nth(int *knob);
void krdma_fault_sleep(unsigned int *knob);
bool krdma_fault_op_post(void);
void krdma_conn_fail_locked(struct krdma_conn *conn, int err,
			    const char *what);

/*
 * A connect that another thread may call off: a session's, whose
 * krdma_session_destroy() must not wait out a peer that never answers.
 * Given to __krdma_connect(); krdma_connect_cancel() ends the connect
 * waiting on it now, and every later one at once.
 */
struct krdma_connect_ctl {
	spinlock_t		lock;	/* both below */
	struct krdma_conn	*conn;	/* the connect waiting, or NULL */
	int			err;	/* what it was called off with, or 0 */
};

void krdma_connect_ctl_init(struct krdma_connect_ctl *ctl);
void krdma_connect_cancel(struct krdma_connect_ctl *ctl, int err);
struct krdma_conn *__krdma_connect(const struct sockaddr *dst,
				   const struct sockaddr *src,
				   const struct krdma_conn_opts *opts,
				   struct krdma_connect_ctl *ctl);

/* A session's name: sessN, or its opts.name (1-31 bytes). */
#define KRDMA_SESSION_NAME_MAX	KRDMA_OPTS_NAME_MAX
void krdma_remove_device_users(struct krdma_device *kdev);
void krdma_relisten(void);
void krdma_relisten_stop(void);
void krdma_unpark(struct krdma_device *kdev, bool all);
void krdma_close_all(void);
int __krdma_conn_qp_get(struct krdma_conn *conn, bool failed);

static inline int krdma_conn_qp_get(struct krdma_conn *conn)
{
	return __krdma_conn_qp_get(conn, false);
}

void krdma_conn_qp_put(struct krdma_conn *conn);

/* A message's header, ahead of its payload in every buffer. */
#define KRDMA_HDR_LEN	sizeof(struct krdma_msg_hdr)

/* krdma_cq.c: queue pair, CQ and buffers */
int krdma_conn_create_qp(struct krdma_conn *conn);
void krdma_conn_destroy_qp(struct krdma_conn *conn);
void krdma_tx_unmap(struct krdma_conn *conn, struct krdma_tx *tx);

/* krdma_msg.c: the message datapath */
void krdma_recv_done(struct ib_cq *cq, struct ib_wc *wc);
void krdma_send_done(struct ib_cq *cq, struct ib_wc *wc);
void krdma_credit_msg_done(struct ib_cq *cq, struct ib_wc *wc);
int krdma_conn_post_recvs(struct krdma_conn *conn);
int krdma_post_imm(struct krdma_conn *conn, u64 raddr, u32 rkey, u32 imm,
		   long timeout);
int __krdma_wait_posted(struct krdma_conn *conn, struct completion *done,
			long timeout, const char *what, bool qp_held);
int krdma_wait_abandon(struct krdma_conn *conn, const char *what,
		       bool qp_held);
void krdma_room(struct krdma_conn *conn);

/* krdma_poll.c */
long __krdma_wait_completion(struct krdma_conn *conn,
			     struct completion *done, long timeout,
			     bool killable);

/* A call with nowait found no room: ops->room once some frees. */
static inline void krdma_room_want_locked(struct krdma_conn *conn)
{
	conn->room_wanted = true;
}

static inline int krdma_wait_posted(struct krdma_conn *conn,
				    struct completion *done, long timeout,
				    const char *what)
{
	return __krdma_wait_posted(conn, done, timeout, what, false);
}

void krdma_conn_flush_waiters(struct krdma_conn *conn);
void krdma_rx_cb_start(struct krdma_conn *conn);
void krdma_conn_free_rx_gone(struct krdma_conn *conn);
int krdma_wc_errno(enum ib_wc_status status);
enum ib_wc_status krdma_conn_wc_status(struct krdma_conn *conn);
const char *krdma_wc_status_name(enum ib_wc_status status);
int krdma_op_errno(struct krdma_conn *conn, struct ib_wc *wc);
void krdma_wc_error(struct krdma_conn *conn, struct ib_wc *wc,
		    const char *op);
int krdma_post_hdr_locked(struct krdma_conn *conn, struct krdma_tx *tx,
			  u32 type, u32 flags, u32 credits);

/* krdma_rw.c */
int krdma_slots_get(struct krdma_conn *conn, u32 n, bool nowait);
void krdma_slots_put(struct krdma_conn *conn, u32 n);
void krdma_slots_unget(struct krdma_conn *conn, u32 n);
void krdma_rw_reap(struct krdma_conn *conn);
int krdma_rdma_range(struct krdma_conn *conn, bool write,
		     struct scatterlist *sg, int nents, u64 skip, u64 len,
		     const struct krdma_token *token, u64 offset, long timeout);
int krdma_xops_alloc(struct krdma_conn *conn);
void krdma_xops_free(struct krdma_conn *conn);
struct krdma_xop *krdma_xop_get_locked(struct krdma_conn *conn, int op,
				       struct krdma_req *req);
void krdma_xop_put_locked(struct krdma_conn *conn, struct krdma_xop *x);
void krdma_xop_done(struct ib_cq *cq, struct ib_wc *wc);

/* krdma_poll.c */
int krdma_poll_cq(struct krdma_conn *conn, int budget);
int krdma_cq_create(struct krdma_conn *conn, struct ib_device *ibdev);
void krdma_cq_destroy(struct krdma_conn *conn);
void krdma_drain_qp(struct krdma_conn *conn);

/* krdma_hb.c */
void krdma_hb_init(struct krdma_conn *conn);
void krdma_hb_start(struct krdma_conn *conn);
void krdma_hb_stop(struct krdma_conn *conn);
void krdma_hb_rx_locked(struct krdma_conn *conn, bool pong);
void krdma_hb_sent(struct ib_cq *cq, struct ib_wc *wc);
int krdma_hb_first(struct krdma_conn *conn);
void krdma_conn_peer_spoke_locked(struct krdma_conn *conn);

/* The heartbeat interval a side asks for in its hello (0: none). */
static inline u32 krdma_hb_asked(const struct krdma_conn_opts *o)
{
	return o->heartbeat_ms == KRDMA_HEARTBEAT_OFF ? 0 : o->heartbeat_ms;
}

/* krdma_mr.c */
void krdma_conn_release_mrs(struct krdma_conn *conn);
int krdma_conn_pool_init(struct krdma_conn *conn);
void krdma_conn_pool_destroy(struct krdma_conn *conn);
void krdma_conn_pool_free(struct krdma_conn *conn);
bool krdma_pool_remote_inv_locked(struct krdma_conn *conn, u32 rkey);

int krdma_sysfs_init(void);
void krdma_sysfs_exit(void);
void krdma_kobj_init(struct kobject *kobj, const struct kobj_type *ktype);
void krdma_kobj_released(void);
int krdma_sysfs_add_device(struct krdma_device *kdev);
int krdma_sysfs_rename_device(struct krdma_device *kdev, const char *name);
void krdma_device_name(struct krdma_device *kdev, char *buf, size_t len);
void krdma_sysfs_del_device(struct krdma_device *kdev);
extern const struct kobj_type krdma_conn_ktype;
extern const struct kobj_type krdma_listener_ktype;
int krdma_sysfs_add_conn(struct krdma_conn *conn);
void krdma_sysfs_del_conn(struct krdma_conn *conn);
int krdma_sysfs_add_listener(struct krdma_listener *l);
void krdma_sysfs_del_listener(struct krdma_listener *l);

/* A session's connect request on a listener (krdma_session.c). */
struct krdma_sess_req {
	bool		known;		/* it carried a session header */
	u8		idx;
	u32		gen;
	uuid_t		id;
	struct krdma_conn *old;		/* what it replaces, referenced */
};

int krdma_sess_claim(struct krdma_listener *l, const void *pdata, u32 len,
		     const struct sockaddr *peer, struct krdma_sess_req *r);
void krdma_sess_claim_done(struct krdma_listener *l, struct krdma_sess_req *r,
			   bool accepted);

#endif /* KRDMA_CORE_H */
