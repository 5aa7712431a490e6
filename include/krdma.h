/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma: kernel RDMA transport -- the API for other kernel code.
 *
 * A connection (struct krdma_conn) is a reliable-connected queue pair to one
 * peer, set up through rdma_cm.  On it krdma offers:
 *  - messages: krdma_send()/krdma_recv(), whole and in order, up to the
 *    negotiated maximum size, with credit-based flow control so that a sender
 *    never overruns the receiver; krdma_sendv_async() gathers one message
 *    from several buffers (sent from where they are, without a copy, where
 *    the device allows) and may carry a 32-bit immediate (SEND_WITH_IMM);
 *    small messages go as the device's inline data;
 *  - memory exposure: krdma_reg_buf()/krdma_reg_sg() register local memory
 *    for remote access and give a token (addr, rkey, length) to send to the
 *    peer; krdma_mr_revoke() invalidates it.  For an I/O path that must
 *    not sleep, krdma_reg_sg_nowait() registers from a pool of MRs the
 *    connection allocated at setup (opts.mr_pool), and
 *    krdma_mr_invalidate_async() or the peer's krdma_send_inv_async()
 *    invalidates it;
 *  - one-sided transfers: krdma_write()/krdma_read() between a local
 *    scatterlist and a peer's token, of any length (split into as many work
 *    requests and registrations as the device needs); prepared in process
 *    context with krdma_rdma_prep() and posted from anywhere up to softirq
 *    with krdma_rdma_post();
 *  - write-with-immediate notices and atomics: krdma_write_imm(),
 *    krdma_atomic_cas()/_fadd(), and without waiting krdma_imm_async()
 *    and krdma_atomic_cas_async()/_fadd_async(), callable up to softirq;
 *  - for every call with nowait that returns -EAGAIN, the connection's
 *    room callback (struct krdma_conn_ops) once something frees.
 *
 * Unless stated otherwise, functions sleep and must be called from process
 * context.  Completion callbacks (struct krdma_req.done, recv callbacks) run
 * in softirq context and must not sleep; on a polled connection
 * (opts.poll) they run in the task that polls, with bottom halves off,
 * under the same rules.  On a connection made with opts.workqueue they run
 * in process context, from the completion workqueue: they may allocate
 * with GFP_NOIO and submit bios, but must not wait for a completion (see
 * &struct krdma_conn_opts).
 */
#ifndef _KRDMA_H
#define _KRDMA_H

#include <linux/types.h>
#include <linux/socket.h>
#include <linux/scatterlist.h>
#include <linux/uio.h>
#include <linux/uuid.h>
#include <linux/completion.h>
#include <linux/sched.h>
#include <linux/wait.h>
#include <rdma/ib_verbs.h>

struct krdma_conn;
struct krdma_listener;
struct krdma_mr;
struct krdma_rdma;
struct kobject;
struct attribute_group;

/* Defaults and limits of the negotiated connection parameters. */
#define KRDMA_DEFAULT_DEPTH	32
#define KRDMA_MAX_DEPTH		1024
#define KRDMA_DEFAULT_MSG_SIZE	4096
#define KRDMA_MAX_MSG_SIZE	(1024 * 1024)
#define KRDMA_DEFAULT_BACKLOG	16
#define KRDMA_MAX_BACKLOG	1024
#define KRDMA_DEFAULT_CONNECT_TIMEOUT_MS	5000
/*
 * iWARP: how long a connection a listener accepted may wait, from its
 * ESTABLISHED event, for the peer's first message, which it is handed
 * over on; past that it is closed with -ETIMEDOUT and never handed over.
 * A krdma peer sends its first ping at once and nudges a stuck one for
 * about 16 s (krdma_hb.c): the bound is well past that, TCG included.
 */
#define KRDMA_HANDOVER_TIMEOUT_MS	30000
/* Heartbeats: a dead peer is noticed within interval x (misses + 1). */
#define KRDMA_DEFAULT_HEARTBEAT_MS	2000
#define KRDMA_MIN_HEARTBEAT_MS		100
#define KRDMA_MAX_HEARTBEAT_MS		600000
#define KRDMA_HEARTBEAT_OFF		U32_MAX
#define KRDMA_DEFAULT_HEARTBEAT_MISSES	4
#define KRDMA_MAX_HEARTBEAT_MISSES	100
/*
 * opts.comp_vector: the RDMA core's choice (round robin over the device's
 * vectors), or completion vector N modulo the device's number of vectors.
 */
#define KRDMA_COMP_VECTOR_ANY	0
#define KRDMA_COMP_VECTOR(n)	((u32)(n) + 1)
/* The consumer's bytes in a connect request (opts.private_data). */
#define KRDMA_MAX_PRIVATE_DATA		32
/*
 * A connection's pool of fast-registration MRs (opts.mr_pool), for
 * krdma_reg_sg_nowait(): how many, and pages per MR.  KRDMA_MR_POOL_PAGES_DEV
 * asks for as many pages as the device maps in one MR, up to
 * KRDMA_MAX_MR_POOL_PAGES (rxe 512, siw 256); krdma_mr_pool_pages() says
 * how many that was.
 */
#define KRDMA_MAX_MR_POOL		1024
#define KRDMA_DEFAULT_MR_POOL_PAGES	32
#define KRDMA_MAX_MR_POOL_PAGES		512
#define KRDMA_MR_POOL_PAGES_DEV		U32_MAX
/*
 * A name a consumer gives (opts.name): 1 to KRDMA_OPTS_NAME_MAX - 1 bytes.
 * A listener's connections are named after it: NAME.<n>, up to
 * KRDMA_CONN_NAME_MAX - 1 bytes.
 */
#define KRDMA_OPTS_NAME_MAX		32

/**
 * enum krdma_test_hello - a wrong handshake, for tests only (opts.test_hello)
 * @KRDMA_TEST_HELLO_NONE: the right one (what everybody but a test uses)
 * @KRDMA_TEST_HELLO_BAD_MAGIC: a magic that is not krdma's
 * @KRDMA_TEST_HELLO_NEXT_VERSION: the next protocol version
 * @KRDMA_TEST_HELLO_SHORT: a handshake cut short
 * @KRDMA_TEST_HELLO_ZERO_DEPTH: a queue depth of 0
 * @KRDMA_TEST_HELLO_MAX: the last one
 *
 * What krdma_connect() sends the listener to exercise its checks: the
 * peer refuses each (the connect fails).
 */
enum krdma_test_hello {
	KRDMA_TEST_HELLO_NONE,
	KRDMA_TEST_HELLO_BAD_MAGIC,
	KRDMA_TEST_HELLO_NEXT_VERSION,
	KRDMA_TEST_HELLO_SHORT,
	KRDMA_TEST_HELLO_ZERO_DEPTH,
	KRDMA_TEST_HELLO_MAX = KRDMA_TEST_HELLO_ZERO_DEPTH,
};

/**
 * enum krdma_event - what a connection's event callback is told
 * @KRDMA_EVENT_ESTABLISHED: the connection is usable.  First, and once.
 *	On the passive side it hands the connection over: the listener's
 *	consumer owns it from here on and must krdma_close() it.  On iWARP
 *	that is once the active side's first message arrived (krdma sends
 *	one itself as soon as it is established: MPA lets only the
 *	initiator send the first FPDU), so a listener's consumer may send
 *	at once without breaking the peer's connect.
 * @KRDMA_EVENT_DISCONNECTED: the peer disconnected, or the connection was
 *	reset with no other cause reported (error -ECONNRESET).
 * @KRDMA_EVENT_ERROR: the connection failed; the error says why (the work
 *	completion's status as an errno, -ETIMEDOUT, -EPROTO, ...).
 * @KRDMA_EVENT_DEVICE_REMOVAL: its RDMA device is going away (error
 *	-ENODEV); krdma releases the connection's RDMA resources itself,
 *	without waiting for the consumer.
 *
 * After ESTABLISHED at most one of the other three comes: the first thing
 * that ended the connection, with its cause.  When all that is known at
 * first is a reset or the peer's disconnect, the event waits (up to a
 * second) for the completions of the work requests still in flight, so
 * that an error of ours the peer disconnected for (a remote access error)
 * is reported as ERROR with that cause, not as DISCONNECTED.  Past that
 * second, krdma_conn_error() may still name a more precise cause later;
 * once krdma has seen the peer's disconnect, a transport, RNR or response
 * timeout is not named as the cause (the peer's leaving explains it; on
 * IB and RoCE the QP stays in RTS until the connection is closed).
 * A connection closed by its owner gets none of them.
 */
enum krdma_event {
	KRDMA_EVENT_ESTABLISHED,
	KRDMA_EVENT_DISCONNECTED,
	KRDMA_EVENT_ERROR,
	KRDMA_EVENT_DEVICE_REMOVAL,
};

/**
 * struct krdma_msg - a received message, as the recv callback sees it
 * @data: the message's bytes (NULL for a krdma_write_imm() notice)
 * @len: how many
 * @imm_valid: @imm is valid: a krdma_write_imm() notice (@data NULL, no
 *	bytes), or a message the peer sent with KRDMA_SEND_IMM
 *	(krdma_sendv_async(); @data and @len are its bytes)
 * @imm: the immediate value
 * @inv_valid: the message came with a remote invalidation
 *	(krdma_send_inv_async() on the peer) of @inv_rkey, and that is the
 *	rkey of a registration from this connection's MR pool
 *	(krdma_reg_sg_nowait()) that was valid: the device has invalidated
 *	it, krdma marked it so, and krdma_mr_put() gives it back to the pool
 *	without a LOCAL_INV.  An invalidation of any other rkey (the peer is
 *	not trusted) marks nothing and leaves this false.
 * @inv_rkey: the invalidated rkey when @inv_valid, else 0
 */
struct krdma_msg {
	const void	*data;
	u32		len;
	bool		imm_valid;
	u32		imm;
	bool		inv_valid;
	u32		inv_rkey;
};

/* The recv callback keeps the message until krdma_msg_release(). */
#define KRDMA_MSG_KEEP	1
/* The recv callback passes the message on to krdma_recv(), in order. */
#define KRDMA_MSG_QUEUE	2

/**
 * struct krdma_conn_req - a connection request, as a listener's accept
 *	callback sees it
 * @private_data: the bytes the peer gave in its opts.private_data (NULL
 *	when none)
 * @private_data_len: how many, at most KRDMA_MAX_PRIVATE_DATA
 * @peer: the peer's address
 * @listener_priv: the listener's opts.priv
 */
struct krdma_conn_req {
	const void		*private_data;
	u8			private_data_len;
	const struct sockaddr	*peer;
	void			*listener_priv;
};

/**
 * struct krdma_conn_ops - a consumer's callbacks
 * @event: a connection's state changed (enum krdma_event); @error is 0
 *	for ESTABLISHED, else the negative errno that ended it.
 *	Runs in process context, from krdma's workqueue, one call at a
 *	time per connection and in order.  It may sleep and may call any
 *	krdma function but krdma_close() of @conn itself, which waits for
 *	it (schedule the close instead).
 * @recv: a message (or a write-with-immediate notice) arrived; messages
 *	come in order, and only once the ESTABLISHED event has returned
 *	(those that came earlier are held until then).  Return 0 when done
 *	with @msg: its buffer goes back to the peer at once.  Return
 *	KRDMA_MSG_KEEP to keep @msg and its bytes until
 *	krdma_msg_release() (a server can answer from them without a
 *	copy); a kept message holds one of the peer's credits, so keeping
 *	queue-depth messages stops the peer until one is released.  It is
 *	the consumer's from the moment @recv is called: it may be released
 *	before @recv returns KRDMA_MSG_KEEP (by @recv itself, or by a
 *	context @recv handed it to).
 *	Runs in softirq, or process context with bottom halves disabled;
 *	must not sleep.  On a workqueue connection (opts.workqueue):
 *	process context, from the completion workqueue; may sleep to
 *	allocate or submit I/O, never to wait for a completion.  Messages
 *	that came before the connection failed
 *	may still be delivered after its end event.  Return
 *	KRDMA_MSG_QUEUE to pass @msg on to krdma_recv(): krdma keeps it on
 *	the connection's receive queue, after those passed on before, as
 *	it keeps every message of a connection without @recv (a consumer
 *	handles its fast path here and the rest in a thread); krdma_recv()
 *	copies it out and releases it, and until then it holds its credit
 *	as a kept one does.  With @recv, krdma_recv() sees only the
 *	messages passed on so.
 *
 * @accept: a listener's only: a peer asks to connect.  Return 0 to accept
 *	(the connection is then set up and handed over by its ESTABLISHED
 *	event), or a negative errno to refuse: the peer's krdma_connect()
 *	returns it if it is one of -EPERM, -ENOENT, -ENOMEM, -EACCES,
 *	-EBUSY, -EINVAL, -ENOSPC, -EAGAIN, -EOPNOTSUPP and -ECONNREFUSED,
 *	else -ECONNREFUSED (a connect passes on no other errno from a
 *	peer, which is not trusted to choose one that means something else
 *	to its caller).  On iWARP the reject may reach the peer as a reset,
 *	and its connect then returns -ECONNREFUSED.  Called before anything is
 *	allocated for the request, so refusing costs nothing; @req and its
 *	bytes are valid during the call only.  Without @accept every
 *	request within the backlog is accepted.
 *	Runs in process context, from the RDMA CM's handler of the
 *	listener; it may sleep, but requests to the listener wait for it.
 *	It must not call krdma_listener_close() of this listener.
 *
 * @room: a call with @nowait (or krdma_reg_sg_nowait()) on this
 *	connection returned -EAGAIN, and since then what it lacked may have
 *	freed: a credit from the peer, a send buffer, a send queue slot, a
 *	pool registration.  Called once per -EAGAIN episode (the next
 *	-EAGAIN arms it again), as blk-mq reruns a queue when a tag frees
 *	and rtrs a permit; the consumer retries what it held back, and a
 *	retry that meets -EAGAIN again arms it again, so nothing is lost.
 *	Runs where the room freed: completion context (softirq, the
 *	completion workqueue, a polled connection's poller), or the process
 *	context of a krdma_rdma_discard() or krdma_mr_put(); must not sleep;
 *	may post.
 *
 * No callback runs once krdma_close() has returned.
 */
struct krdma_conn_ops {
	void	(*event)(struct krdma_conn *conn, enum krdma_event ev,
			 int error);
	int	(*recv)(struct krdma_conn *conn, struct krdma_msg *msg);
	int	(*accept)(const struct krdma_conn_req *req);
	void	(*room)(struct krdma_conn *conn);
};

/**
 * struct krdma_conn_opts - connection parameters
 * @queue_depth: messages in flight each way (0: KRDMA_DEFAULT_DEPTH); the
 *	two sides settle on the smaller of their values
 * @max_msg_size: largest message (0: KRDMA_DEFAULT_MSG_SIZE); negotiated
 *	to the smaller of the two sides' values
 * @timeout_ms: how long krdma_connect() may take (0:
 *	KRDMA_DEFAULT_CONNECT_TIMEOUT_MS, 5000); a listener's is not used
 *	(its iWARP connections wait KRDMA_HANDOVER_TIMEOUT_MS for the peer's
 *	first message)
 * @tos: type of service of the connection (0: default)
 * @backlog: a listener's bound on the connections it holds for nobody yet
 *	(0: KRDMA_DEFAULT_BACKLOG, at most KRDMA_MAX_BACKLOG): those being
 *	set up and those waiting in the accept queue; for a listener made
 *	through the control file, every connection it accepted that is still
 *	open.  A connection request past it is rejected and the peer's
 *	krdma_connect() returns -EBUSY.  A listener with @ops counts each
 *	connection it handed over until that is closed.
 * @ops: callbacks for the connection, or for every connection a listener
 *	accepts (NULL: none; connections then wait for krdma_accept()).
 *	The table must outlive the connections.
 * @priv: the consumer's pointer, for krdma_conn_priv(); a listener's
 *	connections start with the listener's.
 * @private_data: krdma_connect(): bytes for the listener's accept callback
 *	(an export name, a session id, credentials...), or NULL
 * @private_data_len: how many, at most KRDMA_MAX_PRIVATE_DATA (-EINVAL)
 * @heartbeat_ms: how often an established connection checks that its
 *	peer is there (0: KRDMA_DEFAULT_HEARTBEAT_MS; KRDMA_HEARTBEAT_OFF:
 *	never).  The two sides use the shorter of their intervals, and none
 *	if either side has them off.  The active side pings, the passive
 *	side's krdma answers; heartbeats have a receive and a send buffer of
 *	their own on each side and never take a credit.
 * @heartbeat_misses: intervals in a row in which nothing came from the
 *	peer (no message, no heartbeat, no one-sided completion) after which
 *	the connection fails with -ETIMEDOUT, a KRDMA_EVENT_ERROR (0:
 *	KRDMA_DEFAULT_HEARTBEAT_MISSES; the passive side allows one more).
 *	With the defaults a vanished peer is noticed within 10 seconds.
 * @mr_pool: fast-registration MRs allocated with the connection, in its
 *	PD, for krdma_reg_sg_nowait() (0: none; at most KRDMA_MAX_MR_POOL).
 *	The send and completion queues grow by two entries per MR.  A
 *	listener's connections each get a pool of their own.
 * @mr_pool_pages: pages each pool MR maps (0: KRDMA_DEFAULT_MR_POOL_PAGES;
 *	at most KRDMA_MAX_MR_POOL_PAGES and the device's
 *	max_fast_reg_page_list_len, else the connection fails to set up with
 *	-EINVAL; KRDMA_MR_POOL_PAGES_DEV: the device's, up to
 *	KRDMA_MAX_MR_POOL_PAGES, as a storage transport sizes its largest
 *	request by it; krdma_mr_pool_pages() tells)
 * @poll: a polled connection: its completion queue is its own, allocated
 *	with IB_POLL_DIRECT instead of taken from the device's CQ pool, and
 *	nothing reaps it in the background.  Completions (and the callbacks
 *	they run: &struct krdma_req.done, @ops' recv) come when the consumer
 *	calls krdma_poll(), or while a synchronous call of krdma's on the
 *	connection waits (it polls instead of sleeping on an interrupt), and
 *	once per heartbeat interval, so that heartbeats hold.  Received
 *	messages, and the credits they return to the peer, wait in the
 *	completion queue until then.  For a listener: every connection it
 *	accepts is polled.
 * @workqueue: completions are reaped in process context, by the RDMA
 *	core's completion workqueue (IB_POLL_WORKQUEUE, as nvmet-rdma's
 *	queues), not in softirq.  The callbacks (&struct krdma_req.done,
 *	@ops' recv) run in a kworker with bottom halves and
 *	preemption on: they may sleep to allocate (GFP_NOIO) and may submit
 *	bios, so that a server starts a command's I/O in its completion
 *	rather than handing it to a work item of its own.  They must not wait
 *	for a completion (a synchronous krdma call on any connection, a
 *	krdma_close()): the device's completion queues are shared, and one
 *	callback that waits holds up the completions of every connection on
 *	its queue.  Not with @poll (-EINVAL).  Completions held back by a
 *	delay= fault injection would come from a timer, in softirq: a
 *	workqueue connection refuses delay= with -EOPNOTSUPP.  For a
 *	listener: every connection it accepts.
 * @comp_vector: which of the device's completion vectors (interrupts,
 *	and so CPUs) reaps the connection's completions:
 *	KRDMA_COMP_VECTOR_ANY (0), the RDMA core's round robin over them, or
 *	KRDMA_COMP_VECTOR(n), vector n modulo the device's number of vectors
 *	(a block driver passes its hardware queue's index, so that each
 *	queue's completions come on a CPU of its own, as nvme-rdma's do).
 *	Connections on one vector share completion queues from the device's
 *	pool.  For a listener: every connection it accepts (the default
 *	spreads them).  A polled connection's own CQ is made on that vector
 *	too, though nothing reaps it by interrupt.  krdma_conn_query() and
 *	conns/NAME/comp_vector say which vector it got.
 * @name: the name of the connection or listener: its directory under
 *	/sys/kernel/krdma/conns/ or listeners/, and how dmesg calls it.
 *	NULL or "": krdma makes one (connN, listenN; a connN that a
 *	connection was given by its owner is skipped, never -EEXIST).  At
 *	most KRDMA_OPTS_NAME_MAX - 1 bytes (-EINVAL); -EEXIST if a
 *	connection (or a listener) has it already.  Read during the call
 *	only.
 * @test_hello: tests only (enum krdma_test_hello): krdma_connect() sends
 *	a wrong handshake, so that a test sees the peer refuse it.  0 for
 *	everybody else; above KRDMA_TEST_HELLO_MAX: -EINVAL.
 */
struct krdma_conn_opts {
	u32	queue_depth;
	u32	max_msg_size;
	u32	timeout_ms;
	u8	tos;
	u32	backlog;
	const struct krdma_conn_ops	*ops;
	void	*priv;
	u32	heartbeat_ms;
	u32	heartbeat_misses;
	const void	*private_data;
	u8	private_data_len;
	u32	mr_pool;
	u32	mr_pool_pages;
	bool	poll;
	bool	workqueue;
	u32	comp_vector;
	const char	*name;
	u8	test_hello;
};

/**
 * struct krdma_token - remote access to a registered region
 * @addr: address to use in the peer's RDMA operations
 * @rkey: remote key
 * @length: bytes accessible from @addr
 *
 * Plain data: send it to the peer in a message (see krdma_token_pack()).
 */
struct krdma_token {
	u64	addr;
	u32	rkey;
	u32	length;
};

/* The token on the wire: 16 bytes, big endian. */
struct krdma_token_wire {
	__be64	addr;
	__be32	rkey;
	__be32	length;
};

/**
 * krdma_token_range - is a byte range inside a token?
 * @length: the token's length
 * @offset: where the range starts, from the token's start
 * @len: the range's length
 *
 * Written so that nothing overflows (offset + len need not fit 64 bits);
 * an empty range at the very end is inside.  For a server that checks the
 * offsets a peer's command names before it posts anything.
 *
 * Context: any.
 * Return: 0, or -ERANGE.
 */
static inline int krdma_token_range(u32 length, u64 offset, u64 len)
{
	if (offset > length || len > length - offset)
		return -ERANGE;
	return 0;
}

/**
 * krdma_atomic_target - may an atomic work on @offset in @t?
 * @t: the token
 * @offset: the target's offset in it
 *
 * The 8 bytes must lie inside the token and be naturally aligned in the
 * peer's address space (the token's address plus @offset).
 *
 * Context: any.
 * Return: 0, -ERANGE (outside the token) or -EINVAL (misaligned).
 */
static inline int krdma_atomic_target(const struct krdma_token *t,
				      u64 offset)
{
	if (krdma_token_range(t->length, offset, sizeof(u64)))
		return -ERANGE;
	if ((t->addr + offset) & (sizeof(u64) - 1))
		return -EINVAL;
	return 0;
}

static inline void krdma_token_pack(const struct krdma_token *t,
				    struct krdma_token_wire *w)
{
	w->addr = cpu_to_be64(t->addr);
	w->rkey = cpu_to_be32(t->rkey);
	w->length = cpu_to_be32(t->length);
}

static inline void krdma_token_unpack(const struct krdma_token_wire *w,
				      struct krdma_token *t)
{
	t->addr = be64_to_cpu(w->addr);
	t->rkey = be32_to_cpu(w->rkey);
	t->length = be32_to_cpu(w->length);
}

/* Access rights of a registration (combine with |). */
#define KRDMA_ACCESS_REMOTE_READ	0x1
#define KRDMA_ACCESS_REMOTE_WRITE	0x2
#define KRDMA_ACCESS_REMOTE_ATOMIC	0x4
#define KRDMA_ACCESS_ALL	(KRDMA_ACCESS_REMOTE_READ |		\
				 KRDMA_ACCESS_REMOTE_WRITE |		\
				 KRDMA_ACCESS_REMOTE_ATOMIC)

/**
 * krdma_access_valid - are these rights a registration may ask for?
 * @access: KRDMA_ACCESS_* combined
 *
 * At least one, and only known ones.  Whether the device can honour
 * them (atomics) is the registration's own check.
 *
 * Context: any.
 * Return: 0, or -EINVAL.
 */
static inline int krdma_access_valid(int access)
{
	if (!access || (access & ~KRDMA_ACCESS_ALL))
		return -EINVAL;
	return 0;
}

/**
 * struct krdma_req - an asynchronous operation
 * @done: called once when the operation ends, in the connection's
 *	completion context: softirq; the polling task with bottom halves off
 *	(opts.poll); a kworker in process context (opts.workqueue)
 * @status: 0, or a negative errno saying why the operation failed
 * @len: bytes moved
 * @priv: for the caller
 *
 * The caller owns the request and the memory it names until @done runs.
 */
struct krdma_req {
	void	(*done)(struct krdma_req *req);
	int	status;
	u32	len;
	void	*priv;
};

/**
 * struct krdma_rdma_vec - one transfer of krdma_rdma_batch_async()
 * @sg: local memory (source of a write, destination of a read)
 * @nents: entries in @sg
 * @token: the peer's region
 * @offset: where in the peer's region
 */
struct krdma_rdma_vec {
	struct scatterlist		*sg;
	int				nents;
	const struct krdma_token	*token;
	u64				offset;
};

/* What krdma_recv_ex() received besides the bytes. */
struct krdma_recv_info {
	/* a krdma_write_imm() notice (no bytes), or KRDMA_SEND_IMM's */
	bool	imm_valid;
	u32	imm;
	bool	inv_valid;	/* as in struct krdma_msg */
	u32	inv_rkey;
};

/* Addresses: "IP:PORT" or "[IPv6]:PORT", as the control file reads them. */
int krdma_parse_addr(const char *s, struct sockaddr_storage *ss);

/* Connections */
struct krdma_conn *krdma_connect(const struct sockaddr *dst,
				 const struct sockaddr *src,
				 const struct krdma_conn_opts *opts);
struct krdma_listener *krdma_listen(const struct sockaddr *addr,
				    const struct krdma_conn_opts *opts);
struct krdma_conn *krdma_accept(struct krdma_listener *l, long timeout);
void krdma_listener_close(struct krdma_listener *l);
void krdma_close(struct krdma_conn *conn);
int krdma_conn_error(struct krdma_conn *conn);
u32 krdma_max_msg_size(struct krdma_conn *conn);
u32 krdma_queue_depth(struct krdma_conn *conn);
void krdma_conn_abandon(struct krdma_conn *conn);
void krdma_conn_fail(struct krdma_conn *conn, int err);
void *krdma_conn_priv(struct krdma_conn *conn);
void krdma_conn_set_priv(struct krdma_conn *conn, void *priv);
const struct krdma_conn_ops *krdma_conn_ops_of(struct krdma_conn *conn);

/* Messages */
int krdma_send(struct krdma_conn *conn, const void *buf, size_t len,
	       long timeout);
int krdma_send_async(struct krdma_conn *conn, const void *buf, size_t len,
		     struct krdma_req *req, bool nowait);
int krdma_send_inv(struct krdma_conn *conn, const void *buf, size_t len,
		   u32 inv_rkey, long timeout);
int krdma_send_inv_async(struct krdma_conn *conn, const void *buf, size_t len,
			 u32 inv_rkey, struct krdma_req *req, bool nowait);
/* Gather sends: krdma_sendv_async()'s flags. */
#define KRDMA_SEND_IMM		0x1	/* SEND_WITH_IMM of the imm given */
#define KRDMA_MAX_SENDV_IOV	1024	/* elements in one gather send */
int krdma_sendv(struct krdma_conn *conn, const struct kvec *iov, int nr,
		u32 flags, u32 imm, long timeout);
int krdma_sendv_async(struct krdma_conn *conn, const struct kvec *iov, int nr,
		      u32 flags, u32 imm, struct krdma_req *req, bool nowait);
u32 krdma_max_send_sge(struct krdma_conn *conn);
bool krdma_send_ready(struct krdma_conn *conn);
int krdma_recv(struct krdma_conn *conn, void *buf, size_t len, long timeout);
int krdma_recv_ex(struct krdma_conn *conn, void *buf, size_t len,
		  struct krdma_recv_info *info, long timeout);
void krdma_msg_release(struct krdma_conn *conn, struct krdma_msg *msg);
u32 krdma_msgs_kept(struct krdma_conn *conn);
u32 krdma_recv_queued(struct krdma_conn *conn);

/*
 * Tests only: with krdma's fault_malformed module parameter set, a message
 * whose payload starts with these bytes goes out with a malformed header,
 * as from a broken or hostile peer (Documentation/ABI/testing/
 * sysfs-kernel-krdma).
 */
#define KRDMA_FAULT_MALFORMED	"krdma-fault:malformed"

/* Memory exposure */
struct krdma_mr *krdma_reg_buf(struct krdma_conn *conn, void *buf,
			       size_t len, int access);
struct krdma_mr *krdma_reg_sg(struct krdma_conn *conn, struct scatterlist *sg,
			      int nents, int access);
void krdma_mr_token(struct krdma_mr *mr, struct krdma_token *token);
int krdma_mr_revoke(struct krdma_mr *mr);
void krdma_mr_free(struct krdma_mr *mr);
u32 krdma_max_reg_pages(struct krdma_conn *conn);
/* Registration from the connection's MR pool: never sleeps */
struct krdma_mr *krdma_reg_sg_nowait(struct krdma_conn *conn,
				     struct scatterlist *sg, int nents,
				     int access);
int krdma_mr_invalidate_async(struct krdma_mr *mr, struct krdma_req *req);
int krdma_mr_put(struct krdma_mr *mr);
u32 krdma_mr_pool_pages(struct krdma_conn *conn);

/* One-sided transfers */
int krdma_buf_to_sgt(void *buf, size_t len, struct sg_table *sgt, gfp_t gfp);
int krdma_write(struct krdma_conn *conn, struct scatterlist *sg, int nents,
		const struct krdma_token *token, u64 offset, long timeout);
int krdma_read(struct krdma_conn *conn, struct scatterlist *sg, int nents,
	       const struct krdma_token *token, u64 offset, long timeout);
int krdma_write_imm(struct krdma_conn *conn, struct scatterlist *sg,
		    int nents, const struct krdma_token *token, u64 offset,
		    u32 imm, long timeout);
int krdma_rdma_async(struct krdma_conn *conn, bool write,
		     struct scatterlist *sg, int nents,
		     const struct krdma_token *token, u64 offset,
		     struct krdma_req *req, bool nowait);
int krdma_rdma_batch_async(struct krdma_conn *conn, bool write,
			   const struct krdma_rdma_vec *vec, int n,
			   struct krdma_req *req, bool nowait);
/* Prepare in process context, post from a completion: never sleeps */
struct krdma_rdma *krdma_rdma_prep(struct krdma_conn *conn, bool write,
				   struct scatterlist *sg, int nents,
				   const struct krdma_token *token, u64 offset,
				   bool nowait);
int krdma_rdma_post(struct krdma_rdma *op, struct krdma_req *req);
void krdma_rdma_discard(struct krdma_rdma *op);
u32 krdma_rdma_chunk_size(struct krdma_conn *conn);
int krdma_atomic_cas(struct krdma_conn *conn, const struct krdma_token *token,
		     u64 offset, u64 compare, u64 swap, u64 *old, long timeout);
int krdma_atomic_fadd(struct krdma_conn *conn, const struct krdma_token *token,
		      u64 offset, u64 add, u64 *old, long timeout);
/* Posted without waiting, from any context with @nowait: never sleep */
int krdma_imm_async(struct krdma_conn *conn, const struct krdma_token *token,
		    u64 offset, u32 imm, struct krdma_req *req, bool nowait);
int krdma_atomic_cas_async(struct krdma_conn *conn,
			   const struct krdma_token *token, u64 offset,
			   u64 compare, u64 swap, u64 *old,
			   struct krdma_req *req, bool nowait);
int krdma_atomic_fadd_async(struct krdma_conn *conn,
			    const struct krdma_token *token, u64 offset,
			    u64 add, u64 *old, struct krdma_req *req,
			    bool nowait);
bool krdma_conn_has_atomics(struct krdma_conn *conn);

/* ---- polled connections (opts.poll) ----------------------------------- */

/* Completions krdma_poll() reaps at most per call when asked for 0. */
#define KRDMA_POLL_BUDGET	16

/*
 * A polled wait polls the completion queue again at once while completions
 * come, and for KRDMA_POLL_BUSY_NS after the last (the device may be
 * finishing the next one on another CPU), with cond_resched() between
 * polls (which yields only when the scheduler asks: this window costs a
 * CPU, and on a 2-CPU soft device rate at full depth, README); then an
 * empty poll naps KRDMA_POLL_NAP_US (a soft device, rxe or siw, does its
 * work on these CPUs: a waiter that kept spinning would keep it from the
 * completion it waits for), for up to
 * KRDMA_POLL_SPIN_NS after the last completion; then it polls once a
 * jiffy, asleep in between, so that waiting on an idle connection costs
 * no CPU.
 */
#define KRDMA_POLL_BUSY_NS	(50 * NSEC_PER_USEC)
#define KRDMA_POLL_SPIN_NS	(1000 * NSEC_PER_USEC)
#define KRDMA_POLL_NAP_US	10

/**
 * struct krdma_wait - one wait of krdma_wait_event_timeout() and its kin
 * @conn: the connection waited on
 * @wq: what a task sleeps on when @conn is not polled
 * @entry: its entry there
 * @left: jiffies left, MAX_SCHEDULE_TIMEOUT for no end, or -ERESTARTSYS
 * @end: the deadline, in jiffies
 * @idle_since: local_clock() of the first empty poll since the last
 *	completion, or 0
 * @state: TASK_UNINTERRUPTIBLE, TASK_INTERRUPTIBLE or TASK_KILLABLE
 * @polled: @conn is polled
 *
 * Private to the macros below, which keep it on their stack.
 */
struct krdma_wait {
	struct krdma_conn	*conn;
	wait_queue_head_t	*wq;
	struct wait_queue_entry	entry;
	long			left;
	unsigned long		end;
	u64			idle_since;
	unsigned int		state;
	bool			polled;
};

int krdma_poll(struct krdma_conn *conn, int budget);
bool krdma_conn_polled(struct krdma_conn *conn);
long krdma_wait_completion(struct krdma_conn *conn, struct completion *done,
			   long timeout);
void krdma_wait_begin(struct krdma_wait *w, struct krdma_conn *conn,
		      wait_queue_head_t *wq, long timeout, unsigned int state);
void krdma_wait_prepare(struct krdma_wait *w);
void krdma_wait_step(struct krdma_wait *w);
long krdma_wait_end(struct krdma_wait *w, bool done);

/*
 * __krdma_wait_event - the loop of the waits below: ___wait_event()'s,
 * with a poll of a polled connection in place of the sleep.  @condition
 * is evaluated once more after the time ran out or a signal came.
 */
#define __krdma_wait_event(conn, wq, condition, timeout, state)	\
({									\
	struct krdma_wait __kw;						\
	bool __kdone;							\
									\
	krdma_wait_begin(&__kw, conn, &(wq), timeout, state);		\
	for (;;) {							\
		krdma_wait_prepare(&__kw);				\
		__kdone = (condition);					\
		if (__kdone || __kw.left <= 0)				\
			break;						\
		krdma_wait_step(&__kw);					\
	}								\
	krdma_wait_end(&__kw, __kdone);					\
})

/**
 * krdma_wait_event_timeout - wait for @condition on a connection
 * @conn: the connection
 * @wq: what to sleep on if @conn is not polled (*krdma_conn_waitq(), or
 *	the consumer's own queue, woken by its callbacks)
 * @condition: a C expression, evaluated again and again
 * @timeout: in jiffies (MAX_SCHEDULE_TIMEOUT: none)
 *
 * wait_event_timeout() on @wq; but on a polled connection (opts.poll) the
 * task polls instead of sleeping: completions, and the callbacks they run,
 * come in the waiting task, with bottom halves off.  It polls again at
 * once while they come and for KRDMA_POLL_BUSY_NS after the last, naps
 * KRDMA_POLL_NAP_US between empty polls for KRDMA_POLL_SPIN_NS after the
 * last, then polls once a jiffy, asleep in between, so that a wait on an
 * idle connection costs no CPU.
 *
 * Context: process context; sleeps.
 * Return: as wait_event_timeout(): 0 if @condition was false when
 * @timeout ran out, else the jiffies left, at least 1.
 */
#define krdma_wait_event_timeout(conn, wq, condition, timeout)		\
	__krdma_wait_event(conn, wq, condition, timeout, TASK_UNINTERRUPTIBLE)

/**
 * krdma_wait_event_interruptible_timeout - the same, interruptible
 * @conn: the connection
 * @wq: what to sleep on if @conn is not polled
 * @condition: a C expression
 * @timeout: in jiffies (MAX_SCHEDULE_TIMEOUT: none)
 *
 * Context: process context; sleeps.
 * Return: as wait_event_interruptible_timeout(), -ERESTARTSYS included.
 */
#define krdma_wait_event_interruptible_timeout(conn, wq, condition,	\
					       timeout)			\
	__krdma_wait_event(conn, wq, condition, timeout, TASK_INTERRUPTIBLE)

/* ---- sessions (krdma_session.c) -------------------------------------- */

/*
 * A session is a connection to one peer that comes back on its own (or a
 * set of them, opts.nr_conns: one per CPU or blk-mq hardware queue, made,
 * failed and made again together).  When
 * its connection fails (the peer left, a heartbeat went unanswered, the
 * device went away...) the session closes it and connects again every
 * reconnect_delay_ms until it succeeds or loss_tmo_ms have passed since
 * the failure (like nvme-rdma's reconnect_delay and ctrl_loss_tmo).  It is
 * built on the connection API above only: its connections are ordinary
 * ones, whose opts.ops and opts.priv are the session's.
 */
struct krdma_session;

#define KRDMA_SESSION_DEFAULT_DELAY_MS	1000
#define KRDMA_SESSION_MIN_DELAY_MS	100
#define KRDMA_SESSION_MAX_DELAY_MS	3600000
#define KRDMA_SESSION_DEFAULT_LOSS_TMO_MS	60000
/* Never lost: reconnect until krdma_session_destroy(). */
#define KRDMA_SESSION_LOSS_TMO_NEVER	U32_MAX

/*
 * "Retry after reconnect": what krdma_session_conn_get() returns while the
 * session has no working connection, and what krdma_session_errno() makes
 * of the error of an operation on a connection that failed.  Not -EAGAIN,
 * which the nowait submissions return for "no free slot now".
 */
#define KRDMA_ERR_RETRY		(-ENOLINK)
/* What krdma_session_conn_get() returns once the session is lost. */
#define KRDMA_ERR_LOST		(-ENOTCONN)

/*
 * The private data of a session's connect request: a session header of
 * KRDMA_SESSION_PDATA_HDR bytes (a 2-byte magic, big endian
 * KRDMA_SESSION_PDATA_MAGIC; the 16-byte session id; the 4-byte big endian
 * generation, 0 for the first set of connect requests and one more for
 * each later one; the connection's index in the session, from 0; the
 * session's number of connections), then the consumer's own
 * opts.conn.private_data, at most KRDMA_SESSION_MAX_USER_DATA bytes.
 * krdma_session_id_from_req() and krdma_session_index_from_req() read it.
 * A listener acts on it before its accept hook: a newer generation of a
 * session index whose passive end is still up replaces that end (which
 * fails with -ESTALE) when it comes from the same host (address); one of
 * the same or an older generation is refused with -ESTALE, which the
 * session takes as final (LOST), and a newer one from another host with
 * -EBUSY, which it retries.  Those refusals are krdma's, not the accept
 * hook's: the connecting side's dmesg says "the session's connection is
 * up at the listener" (krdma_session_id_from_req()).
 */
#define KRDMA_SESSION_PDATA_MAGIC	0x6b53	/* "kS" */
#define KRDMA_SESSION_PDATA_HDR		24
/* The most connections a session has (opts.nr_conns). */
#define KRDMA_SESSION_MAX_CONNS		64
#define KRDMA_SESSION_MAX_USER_DATA	\
	(KRDMA_MAX_PRIVATE_DATA - KRDMA_SESSION_PDATA_HDR)

/**
 * enum krdma_session_event - what a session's event callback is told
 * @KRDMA_SESSION_CONNECTED: the first connection is up (once, first).
 * @KRDMA_SESSION_DISCONNECTED: the connection failed; error is its cause
 *	(the connection's end event's error).  The session will reconnect.
 *	Operations on the old connection fail; krdma_session_errno() makes
 *	their errors KRDMA_ERR_RETRY.  If the consumer holds the old
 *	connection nowhere (krdma_session_conn_get()) and keeps none of its
 *	messages (KRDMA_MSG_KEEP) once this callback returned, the session
 *	closes it before it tells RECONNECTED or LOST: by then none of its
 *	callbacks runs any more, every operation on it has completed, and
 *	its registrations are released (their memory is the consumer's
 *	again).  Else it closes it once the last is put back and released.
 * @KRDMA_SESSION_RECONNECTING: an attempt starts; error is the previous
 *	attempt's error, 0 for the first attempt after a disconnect.
 * @KRDMA_SESSION_RECONNECTED: a new connection is up.  The consumer must
 *	register again what it exposed (the old connection's tokens are dead,
 *	and a token is valid on its own connection only) and resubmit what
 *	failed.  A consumer that finds the new connection unusable (its own
 *	greeting failed) fails it here, with krdma_conn_fail(): a set that
 *	failed before this callback returned does not end the outage, and
 *	the loss timeout goes on counting from the failure before it.
 * @KRDMA_SESSION_LOST: the session gave up, for good: the loss timeout
 *	passed (error: the last attempt's error), or an attempt failed with
 *	an error retrying cannot cure (-EPROTONOSUPPORT, -EPROTO, -EINVAL,
 *	-ESTALE when the listener holds a newer generation of the session,
 *	or the peer's accept hook refusing with any errno but -EBUSY and
 *	-EAGAIN).  It stays lost until krdma_session_destroy().
 */
enum krdma_session_event {
	KRDMA_SESSION_CONNECTED,
	KRDMA_SESSION_DISCONNECTED,
	KRDMA_SESSION_RECONNECTING,
	KRDMA_SESSION_RECONNECTED,
	KRDMA_SESSION_LOST,
};

/**
 * struct krdma_session_ops - a session consumer's callbacks
 * @event: the session's state changed (enum krdma_session_event).  It
 *	may sleep and may call krdma_session_conn_get()/_put() and any
 *	connection function, but not krdma_session_destroy() of @s, which
 *	waits for it.
 * @recv: a message arrived on one of the session's connections: @conn
 *	says which (a failed one may still deliver what came before its
 *	failure after DISCONNECTED, and a new one before its RECONNECTED).
 *	The connection's own recv callback, forwarded: same rules and
 *	return values as struct krdma_conn_ops.recv (KRDMA_MSG_QUEUE puts
 *	@msg on @conn's receive queue, for krdma_recv() on @conn).  A
 *	message kept (KRDMA_MSG_KEEP) keeps @conn open after it failed:
 *	the session closes a failed connection only once every message
 *	kept of it was given back with krdma_msg_release() (the last one
 *	wakes the session), so release each, on the connection @recv was
 *	given, before krdma_session_destroy().
 *
 * Context: @event runs in process context, from krdma's workqueue, one
 * call at a time per session and in order.  @recv runs where the
 * connection's recv callback does (see struct krdma_conn_ops).  Both may
 * run before krdma_session_create() has returned the session (any event,
 * CONNECTED first; @recv even before CONNECTED, when
 * krdma_session_conn_get() may still return KRDMA_ERR_RETRY): they get it
 * as @s.
 */
struct krdma_session_ops {
	void	(*event)(struct krdma_session *s, enum krdma_session_event ev,
			 int error);
	int	(*recv)(struct krdma_session *s, struct krdma_conn *conn,
			struct krdma_msg *msg);
};

/**
 * struct krdma_session_opts - session parameters
 * @conn: the parameters of each connection.  Its @ops, @priv and @name
 *	must be NULL (the session's own are used: see @ops and @priv here;
 *	its connections are named by krdma, connN); its
 *	@private_data (at most KRDMA_SESSION_MAX_USER_DATA bytes, else
 *	-EINVAL) follows the session header in every connect request.
 * @reconnect_delay_ms: from a failed attempt to the next, and from a
 *	failure to its first attempt unless the loss deadline comes sooner
 *	(see @loss_tmo_ms) (0: KRDMA_SESSION_DEFAULT_DELAY_MS; at least
 *	KRDMA_SESSION_MIN_DELAY_MS, at most KRDMA_SESSION_MAX_DELAY_MS)
 * @loss_tmo_ms: how long after a failure the session keeps trying before
 *	it is lost (0: KRDMA_SESSION_DEFAULT_LOSS_TMO_MS;
 *	KRDMA_SESSION_LOSS_TMO_NEVER: never lost).  No attempt outlasts
 *	it: one that starts near the end gets only the time left (but at
 *	least 200 ms) instead of @conn.timeout_ms, so that the loss comes
 *	on time, at most those 200 ms late, however long a connect to a
 *	dead peer would block.  A failure's first attempt starts
 *	@reconnect_delay_ms after it or 200 ms before the loss deadline,
 *	whichever is sooner (at once if @loss_tmo_ms is 200 or less), and
 *	the session is not lost before that attempt was made: a loss
 *	timeout below the reconnect delay gets one attempt, not none, and
 *	that attempt gets what is left before the deadline (at least
 *	200 ms).  A value written to sessions/NAME/loss_tmo_ms during an
 *	outage applies to the failure under way: a first attempt not made
 *	by the new deadline is made at the deadline, with 200 ms.
 * @ops: the callbacks, or NULL
 * @priv: the consumer's pointer, for krdma_session_priv()
 * @name: the session's name, its directory under
 *	/sys/kernel/krdma/sessions/ (krdma_session_name()).  NULL or "":
 *	krdma makes one (sessN).  At most KRDMA_OPTS_NAME_MAX - 1 bytes
 *	(-EINVAL); -EEXIST if a session has it already.  Read during the
 *	call only.
 * @nr_conns: how many connections (0 or 1: one; at most
 *	KRDMA_SESSION_MAX_CONNS, else -EINVAL), each with @conn's
 *	parameters, and with completion vector i for connection i when
 *	@conn.comp_vector is KRDMA_COMP_VECTOR_ANY.  They are made together
 *	(a session exists, CONNECTED and RECONNECTED are told, only once
 *	all are up), and when one fails the others are failed too
 *	(-ECONNABORTED) and the whole set is made again: one DISCONNECTED
 *	(with the first failure's cause), one RECONNECTED.
 *	krdma_session_conn_get_nth() gives connection i.
 */
struct krdma_session_opts {
	struct krdma_conn_opts	conn;
	u32			reconnect_delay_ms;
	u32			loss_tmo_ms;
	const struct krdma_session_ops	*ops;
	void			*priv;
	const char		*name;
	u32			nr_conns;
};

struct krdma_session *krdma_session_create(const struct sockaddr *dst,
					   const struct sockaddr *src,
					   const struct krdma_session_opts *opts);
void krdma_session_destroy(struct krdma_session *s);
struct krdma_conn *krdma_session_conn_get(struct krdma_session *s);
struct krdma_conn *krdma_session_conn_get_nth(struct krdma_session *s, u32 i);
u32 krdma_session_nr_conns(struct krdma_session *s);
int krdma_session_conn_index(struct krdma_session *s, struct krdma_conn *conn);
void krdma_session_conn_put(struct krdma_session *s, struct krdma_conn *conn);
int krdma_session_errno(struct krdma_session *s, struct krdma_conn *conn,
			int err);
void *krdma_session_priv(struct krdma_session *s);
const char *krdma_session_name(struct krdma_session *s);
int krdma_session_id_from_req(const struct krdma_conn_req *req, uuid_t *id,
			      u32 *gen);
int krdma_conn_session(struct krdma_conn *conn, uuid_t *id, u32 *gen,
		       u32 *index);
int krdma_session_index_from_req(const struct krdma_conn_req *req, u32 *index,
				 u32 *nr_conns);
const char *krdma_conn_name(struct krdma_conn *conn);
const char *krdma_conn_device_name(struct krdma_conn *conn);
bool krdma_conn_is_iwarp(struct krdma_conn *conn);

/* ---- looking at connections and listeners, and waiting on them -------- */

/**
 * enum krdma_conn_state - where a connection is
 * @KRDMA_CONN_CONNECTING: the handshake is under way
 * @KRDMA_CONN_CONNECTED: usable
 * @KRDMA_CONN_DISCONNECTED: the peer or its owner disconnected
 * @KRDMA_CONN_ERROR: failed; krdma_conn_error() says why
 * @KRDMA_CONN_CLOSED: resources released (not reported yet)
 *
 * DISCONNECTED and ERROR are final.
 */
enum krdma_conn_state {
	KRDMA_CONN_CONNECTING,
	KRDMA_CONN_CONNECTED,
	KRDMA_CONN_DISCONNECTED,
	KRDMA_CONN_ERROR,
	KRDMA_CONN_CLOSED,
};

#define KRDMA_CONN_NAME_MAX	48

/**
 * struct krdma_conn_info - a snapshot of a connection (krdma_conn_query())
 * @state: where it is
 * @error: 0, or the negative errno that ended it
 * @wc_status: the failed work completion's status behind @error, or
 *	IB_WC_SUCCESS when no completion failed
 * @credits: the messages it may send now
 * @queue_depth: negotiated depth
 * @max_msg_size: negotiated largest message
 * @iwarp: on an iWARP device (no immediate data, READ targets need remote
 *	write rights)
 * @local: its own address
 * @peer: the peer's
 * @name: its name (its directory under /sys/kernel/krdma/conns/)
 * @device: its RDMA device's name, "" before address resolution
 * @comp_vector: the completion vector its completions come on (see
 *	&struct krdma_conn_opts), -1 before it had a completion queue
 * @send_ops: messages sent (and so on for the other counters: operations
 *	completed and their bytes)
 * @send_bytes: bytes of @send_ops
 * @recv_ops: messages received
 * @recv_bytes: bytes of @recv_ops
 * @write_ops: RDMA WRITEs
 * @write_bytes: bytes of @write_ops
 * @read_ops: RDMA READs
 * @read_bytes: bytes of @read_ops
 * @atomic_ops: atomics
 * @errors: operations that failed
 */
struct krdma_conn_info {
	enum krdma_conn_state	state;
	int			error;
	enum ib_wc_status	wc_status;
	u32			credits;
	u32			queue_depth;
	u32			max_msg_size;
	bool			iwarp;
	struct sockaddr_storage	local, peer;
	char			name[KRDMA_CONN_NAME_MAX];
	char			device[IB_DEVICE_NAME_MAX];
	int			comp_vector;
	u64			send_ops, send_bytes;
	u64			recv_ops, recv_bytes;
	u64			write_ops, write_bytes;
	u64			read_ops, read_bytes;
	u64			atomic_ops, errors;
};

/**
 * struct krdma_listener_info - a snapshot of a listener
 *	(krdma_listener_query())
 * @error: 0 while it listens, else why it stopped (-ENODEV: its device
 *	went away; 0 is also what a closed listener reports, see @listening)
 * @listening: it still takes connections
 * @queue_depth: the depth it offers
 * @max_msg_size: the largest message it offers
 * @local: the address it listens on
 * @name: its name (its directory under /sys/kernel/krdma/listeners/)
 */
struct krdma_listener_info {
	int			error;
	bool			listening;
	u32			queue_depth;
	u32			max_msg_size;
	struct sockaddr_storage	local;
	char			name[KRDMA_CONN_NAME_MAX];
};

void krdma_conn_query(struct krdma_conn *conn, struct krdma_conn_info *info);
void krdma_listener_query(struct krdma_listener *l,
			  struct krdma_listener_info *info);
bool krdma_recv_ready(struct krdma_conn *conn);
bool krdma_accept_ready(struct krdma_listener *l);
wait_queue_head_t *krdma_conn_waitq(struct krdma_conn *conn);
wait_queue_head_t *krdma_listener_waitq(struct krdma_listener *l);
void krdma_conn_shutdown(struct krdma_conn *conn);
void krdma_listener_get(struct krdma_listener *l);
void krdma_listener_put(struct krdma_listener *l);
void krdma_conn_get(struct krdma_conn *conn);
void krdma_conn_put(struct krdma_conn *conn);
struct krdma_conn *krdma_conn_find(const char *name);
struct krdma_listener *krdma_listener_find(const char *name);

/* ---- a consumer's files in /sys/kernel/krdma --------------------------- */

int krdma_sysfs_add_group(const struct attribute_group *grp);
void krdma_sysfs_remove_group(const struct attribute_group *grp);
int krdma_conn_add_group(struct krdma_conn *conn,
			 const struct attribute_group *grp);
void krdma_conn_remove_group(struct krdma_conn *conn,
			     const struct attribute_group *grp);
struct krdma_conn *krdma_conn_from_kobj(struct kobject *kobj);

#endif /* _KRDMA_H */
