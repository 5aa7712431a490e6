/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * krdma: the /dev/krdma ioctl ABI.
 *
 * Every open file of /dev/krdma is a session.  Listeners, connections and
 * registrations created through a session are named by small integer
 * handles (1..KRDMA_IOC_MAX_HANDLES) that only mean something in that
 * session; closing the file closes everything it still owns, even in the
 * middle of a transfer.
 *
 * Layout rules, so that 32- and 64-bit processes share one ABI: every
 * structure has a fixed size that is a multiple of 8, every field sits at a
 * multiple of its size, padding is explicit, and user pointers travel as
 * __u64.  Fields named reserved* and every flags word must be zero (no flag
 * is defined yet); anything else fails with EINVAL, so that a later ABI can
 * give them a meaning.  Fields marked "out" are ignored on input.
 *
 * Versioning: KRDMA_IOC_VERSION reports KRDMA_ABI_VERSION, and its structure
 * never changes.  Every command number encodes the size of its structure;
 * a known command with a different size (a program built against another
 * version of this header) fails with EINVAL.  Unknown commands fail with
 * ENOTTY.  The ABI grows without a new version: a command added later
 * (FADD, CAS, WRITE_IMM) fails with ENOTTY on a module that predates it,
 * and a field made from reserved space is refused (EINVAL) there when
 * set, as any nonzero reserved field is.
 *
 * Errors common to all commands:
 *   EFAULT   the argument or a buffer pointer is not readable/writable
 *   EINVAL   wrong structure size, reserved field or flag set, bad value
 *   ENOTTY   unknown command
 *   EBADF    the handle is not one of this session's handles of the kind
 *            the command needs (a handle from another session is EBADF)
 *   E2BIG    a length above the limits below
 *   EMFILE   the session has KRDMA_IOC_MAX_HANDLES handles already
 *
 * Signals: ACCEPT, RECV, and the wait of SEND and of WRITE_IMM's notice
 * for the peer's credit return EINTR (or restart) on a signal; READ, WRITE
 * and WRITE_IMM do between their 1 MiB steps; CONNECT ends early on a
 * fatal signal only (its timeout_ms bounds it).  What the device has been
 * given (a step of READ, WRITE or WRITE_IMM, FADD and CAS, a SEND once
 * posted, REG's registration, REVOKE's invalidation) is waited for through
 * other signals, since the memory is the device's until it is done; a
 * fatal signal ends that wait too, and at once: the operation is
 * abandoned, its connection fails with ECONNABORTED (its queue pair is
 * flushed, which gives the memory back) and the process goes.  Whoever
 * else uses the connection (another process of the session) then gets
 * ECONNABORTED on it, and its peer loses it.  A fatal signal that comes
 * while the command still waits for room in the connection's send queue,
 * nothing given to the device yet, ends it with the connection up; but
 * for an invalidation (REVOKE, UNREG or CLOSE of a registration), whose
 * token must die all the same: its connection fails with ECONNABORTED as
 * above.
 *
 * A command on a connection that has ended (SEND, RECV once the messages
 * that came before are taken, REG, WRITE, READ, WRITE_IMM, FADD, CAS)
 * fails with the errno that ended it, the one KRDMA_IOC_QUERY reports in
 * @error: ECONNRESET (a disconnect), ENODEV (its device was removed),
 * ETIMEDOUT, ECONNREFUSED, EHOSTUNREACH, EPROTO (the peer broke krdma's
 * protocol), ECONNABORTED (a process was killed while the device worked
 * for it, above), or that of a failed operation (EACCES, EREMOTEIO, EIO);
 * ENOTCONN when it has no error to tell.
 *
 * poll()/epoll on the file: EPOLLIN | EPOLLRDNORM while a message waits on
 * one of the session's connections or an established connection waits on
 * one of its listeners for ACCEPT; EPOLLHUP while one of its connections
 * has ended (KRDMA_IOC_QUERY tells which; CLOSE it to clear this).
 */
#ifndef _UAPI_LINUX_KRDMA_H
#define _UAPI_LINUX_KRDMA_H

#include <linux/types.h>
#include <linux/ioctl.h>

#define KRDMA_ABI_VERSION	1

#define KRDMA_IOC_MAGIC		0xDA

/* Limits. */
#define KRDMA_IOC_MAX_HANDLES	4096
#define KRDMA_IOC_MAX_XFER	(1ULL << 30)	/* REG, READ, WRITE, RECV */
#define KRDMA_IOC_MAX_MSG	(1024 * 1024)	/* SEND; see also max_msg_size */
#define KRDMA_IOC_MAX_BACKLOG	1024		/* LISTEN */

/* timeout_ms: wait forever (signals end the wait as said above). */
#define KRDMA_IOC_TIMEOUT_INF	0xffffffffU

/* Access rights of a registration (krdma_ioc_reg.access). */
#define KRDMA_IOC_ACCESS_REMOTE_READ	0x1
#define KRDMA_IOC_ACCESS_REMOTE_WRITE	0x2
#define KRDMA_IOC_ACCESS_REMOTE_ATOMIC	0x4

/* Kind of a handle (krdma_ioc_query.type). */
#define KRDMA_IOC_TYPE_LISTENER		1
#define KRDMA_IOC_TYPE_CONN		2
#define KRDMA_IOC_TYPE_MR		3

/* krdma_ioc_query.state */
#define KRDMA_IOC_STATE_CONNECTING	1
#define KRDMA_IOC_STATE_CONNECTED	2
#define KRDMA_IOC_STATE_DISCONNECTED	3
#define KRDMA_IOC_STATE_ERROR		4
#define KRDMA_IOC_STATE_CLOSED		5
#define KRDMA_IOC_STATE_LISTENING	6
#define KRDMA_IOC_STATE_STOPPED		7	/* listener lost its device */

/**
 * struct krdma_ioc_addr - an IPv4 or IPv6 address and port
 * @family: AF_INET (2) or AF_INET6 (10); 0 means "none" where a field is
 *	optional (CONNECT's source), and then the whole structure is zero
 * @port: port, host byte order
 * @scope_id: IPv6 scope (interface index of a link-local address); 0 for
 *	IPv4
 * @addr: the address in network byte order; IPv4 uses addr[0..3] and the
 *	other twelve bytes must be zero
 */
struct krdma_ioc_addr {
	__u16	family;
	__u16	port;
	__u32	scope_id;
	__u8	addr[16];
};

/**
 * struct krdma_ioc_token - remote access to a peer's registered region
 * @addr: address for RDMA operations
 * @rkey: remote key
 * @length: bytes accessible from @addr
 */
struct krdma_ioc_token {
	__u64	addr;
	__u32	rkey;
	__u32	length;
};

/**
 * struct krdma_ioc_version - KRDMA_IOC_VERSION (out only, never changes)
 * @abi_version: KRDMA_ABI_VERSION of the running module
 * @max_handles: KRDMA_IOC_MAX_HANDLES
 * @max_msg_size: largest message a connection can negotiate
 * @max_depth: largest queue depth a connection can negotiate
 * @max_xfer: KRDMA_IOC_MAX_XFER
 * @reserved: zero
 */
struct krdma_ioc_version {
	__u32	abi_version;
	__u32	max_handles;
	__u32	max_msg_size;
	__u32	max_depth;
	__u64	max_xfer;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_listen - KRDMA_IOC_LISTEN: listen for connections
 * @addr: in: local address (may be the wildcard) and port (not 0)
 * @queue_depth: in: messages in flight each way offered to peers (0: 32)
 * @max_msg_size: in: largest message offered to peers (0: 4096)
 * @flags: in: 0
 * @handle: out: the listener
 * @backlog: in: how many connections the listener holds for nobody at
 *	most: those being set up and those waiting for ACCEPT (ACCEPT takes
 *	one off the count).  0: 16, the default (and what programs built
 *	when this was reserved pass); at most KRDMA_IOC_MAX_BACKLOG.  A
 *	connection request past it is refused: the peer's CONNECT fails with
 *	EBUSY (over iWARP, often ECONNREFUSED).
 * @reserved32: in: 0
 * @reserved: in: 0
 *
 * Errors: EADDRINUSE, EADDRNOTAVAIL, ENODEV (no RDMA device has the
 * address, e.g. while its device is being removed), EAFNOSUPPORT (unknown
 * family), EINVAL.
 */
struct krdma_ioc_listen {
	struct krdma_ioc_addr	addr;
	__u32	queue_depth;
	__u32	max_msg_size;
	__u32	flags;
	__u32	handle;
	__u32	backlog;
	__u32	reserved32;
	__u64	reserved;
};

/**
 * struct krdma_ioc_accept - KRDMA_IOC_ACCEPT: take an established connection
 * @handle: in: a listener
 * @timeout_ms: in: how long to wait; 0: do not wait (EAGAIN if none is
 *	queued); KRDMA_IOC_TIMEOUT_INF: forever
 * @flags: in: 0
 * @conn: out: the connection
 * @reserved: in: 0
 *
 * Errors: EAGAIN, ETIMEDOUT, ENODEV (the listener was closed or lost its
 * device).
 */
struct krdma_ioc_accept {
	__u32	handle;
	__u32	timeout_ms;
	__u32	flags;
	__u32	conn;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_connect - KRDMA_IOC_CONNECT: connect to a listener
 * @dst: in: the peer's address and port (not 0)
 * @src: in: local address to use, or all zero
 * @queue_depth: in: as for LISTEN (0: 32)
 * @max_msg_size: in: as for LISTEN (0: 4096)
 * @timeout_ms: in: how long connecting may take (0: 5000)
 * @flags: in: 0
 * @handle: out: the connection
 * @reserved32: in: 0
 * @reserved: in: 0
 *
 * Errors: ECONNREFUSED, EBUSY (the listener's backlog is full, or its
 * consumer refused with it), ETIMEDOUT, EHOSTUNREACH, ENODEV, EPROTO,
 * EPROTONOSUPPORT, EAFNOSUPPORT, EINVAL, ECONNRESET (the connection failed
 * as it came up: its peer closed it); from a krdma listener's refusal,
 * what its consumer refused with (EPERM, ENOENT, ENOMEM, EACCES, EBUSY,
 * EINVAL, ENOSPC, EAGAIN, EOPNOTSUPP, ECONNREFUSED), or for a session's
 * request EBUSY (the session's connection is up at the listener) or ESTALE
 * (a late duplicate).  Any other errno a peer's reject carries is
 * ECONNREFUSED.
 */
struct krdma_ioc_connect {
	struct krdma_ioc_addr	dst;
	struct krdma_ioc_addr	src;
	__u32	queue_depth;
	__u32	max_msg_size;
	__u32	timeout_ms;
	__u32	flags;
	__u32	handle;
	__u32	reserved32;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_handle - CLOSE, UNREG and REVOKE
 * @handle: in: the handle
 * @flags: in: 0
 * @reserved: in: 0
 *
 * KRDMA_IOC_CLOSE closes a handle of any kind; closing a connection also
 * closes the registrations made on it, and closing a listener closes the
 * connections it accepted that were not taken with ACCEPT yet.
 * KRDMA_IOC_UNREG revokes and releases a registration (a CLOSE that only
 * takes registrations).  KRDMA_IOC_REVOKE invalidates a registration's
 * token but keeps the handle (UNREG or CLOSE still release it).  All
 * three return once the token is dead: no access of the peer's through
 * it succeeds after that, even while another thread of the session still
 * uses the registration; one that finds a REVOKE of it under way in
 * another thread (waiting for room in the connection's send queue) waits
 * for it.  The pages are released when the last of those threads is done.
 */
struct krdma_ioc_handle {
	__u32	handle;
	__u32	flags;
	__u64	reserved;
};

/**
 * struct krdma_ioc_msg - KRDMA_IOC_SEND and KRDMA_IOC_RECV
 * @handle: in: a connection
 * @flags: in: SEND: 0, or KRDMA_IOC_SEND_IMM; RECV: 0
 * @buf: in: user pointer to the message (SEND) or the buffer (RECV)
 * @len: in: the message's length (SEND, up to the connection's
 *	max_msg_size) or the buffer's size (RECV)
 * @timeout_ms: in: SEND: how long to wait for the peer's credit; RECV: for
 *	a message.  0: do not wait (EAGAIN); KRDMA_IOC_TIMEOUT_INF: forever
 * @msg_len: out (RECV): the message's length
 * @msg_flags: out (RECV): KRDMA_IOC_MSG_IMM for the notice of a
 *	KRDMA_IOC_WRITE_IMM (no bytes; @imm is its value) and for a message
 *	sent with KRDMA_IOC_SEND_IMM (its bytes, and @imm), else 0.
 *	SEND: in: 0
 * @imm: out (RECV): the immediate value that came with it, else 0.
 *	SEND: in: with KRDMA_IOC_SEND_IMM the immediate value to send, else 0
 *
 * SEND returns once the peer has the message.  With KRDMA_IOC_SEND_IMM it
 * goes as one SEND_WITH_IMM: the message and the 32-bit @imm together (on
 * iWARP, which has no immediate data, EOPNOTSUPP before anything is sent).
 * RECV takes the next message; one longer than @len fails with EMSGSIZE
 * and stays queued.  The peer's KRDMA_IOC_WRITE_IMM arrives as an empty
 * message, in order with the others, with KRDMA_IOC_MSG_IMM set in
 * @msg_flags.
 * Messages that arrived before the connection ended are still delivered,
 * then RECV fails with the connection's error (ECONNRESET after a
 * disconnect).  Errors: EMSGSIZE, EAGAIN, ETIMEDOUT, ECONNRESET, ENOTCONN,
 * ENODEV; SEND also EOPNOTSUPP.
 *
 * @msg_flags and @imm were __u64 reserved; the size and the command
 * numbers are unchanged, and RECV now ignores them on input.  A module
 * that predates KRDMA_IOC_SEND_IMM fails such a SEND with EINVAL.
 */
struct krdma_ioc_msg {
	__u32	handle;
	__u32	flags;
	__u64	buf;
	__u64	len;
	__u32	timeout_ms;
	__u32	msg_len;
	__u32	msg_flags;
	__u32	imm;
};

/* krdma_ioc_msg.flags (SEND) */
#define KRDMA_IOC_SEND_IMM	0x1	/* SEND_WITH_IMM of @imm */

/* krdma_ioc_msg.msg_flags (RECV) */
#define KRDMA_IOC_MSG_IMM	0x1	/* @imm holds an immediate value */

/**
 * struct krdma_ioc_reg - KRDMA_IOC_REG: expose user memory to the peer
 * @handle: in: the connection whose peer gets access
 * @access: in: KRDMA_IOC_ACCESS_* (at least one)
 * @buf: in: start of the memory (any alignment)
 * @len: in: its length (1..KRDMA_IOC_MAX_XFER, and what one memory region
 *	of the device can map)
 * @flags: in: 0
 * @mr: out: the registration's handle
 * @token: out: what the peer needs for READ/WRITE; send it over
 * @reserved: in: 0
 *
 * The pages stay pinned until the registration is released (UNREG, CLOSE
 * of it or of its connection, or the end of the session), and are charged
 * to the registering process's RLIMIT_MEMLOCK (mm->pinned_vm, VmPin in
 * /proc/PID/status) for that long, as verbs memory registrations are.
 * Errors: E2BIG (more pages than one region maps: refused before a page is
 * pinned or charged), EOPNOTSUPP (atomic access on a device without
 * atomics), ENOMEM (the pages would pass RLIMIT_MEMLOCK and the caller
 * lacks CAP_IPC_LOCK), EFAULT; EBADF also when another thread closes the
 * connection before REG gives the registration a handle (nothing of it is
 * left then).  A CLOSE of the connection after that takes the
 * registration with it: REG may still return 0, with a handle that is
 * already gone (EBADF for it).
 */
struct krdma_ioc_reg {
	__u32	handle;
	__u32	access;
	__u64	buf;
	__u64	len;
	__u32	flags;
	__u32	mr;
	struct krdma_ioc_token	token;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_rdma - KRDMA_IOC_WRITE and KRDMA_IOC_READ
 * @handle: in: a connection
 * @flags: in: 0
 * @buf: in: local user memory (source of WRITE, destination of READ)
 * @len: in: bytes to move (1..KRDMA_IOC_MAX_XFER)
 * @token: in: the peer's region
 * @offset: in: where in the peer's region
 * @timeout_ms: in: a transfer step not done by then fails the connection
 *	(0: 30000; KRDMA_IOC_TIMEOUT_INF: no bound but a fatal signal)
 * @imm: in: KRDMA_IOC_WRITE_IMM: the immediate value the peer's RECV
 *	reports; WRITE and READ: 0 (it was __u32 reserved32)
 * @reserved: in: 0
 *
 * KRDMA_IOC_WRITE_IMM is a WRITE, then a notice that takes one of the
 * peer's receives like a message (it waits for a credit as SEND does) and
 * reaches the peer's RECV after the data is in place.  iWARP (siw) has no
 * immediate data: there it fails with EOPNOTSUPP before moving a byte.
 *
 * Errors: ERANGE (outside the token), EACCES (the peer refused the key or
 * the right), ETIMEDOUT, ECONNRESET, ENOTCONN; WRITE_IMM also EOPNOTSUPP.
 */
struct krdma_ioc_rdma {
	__u32	handle;
	__u32	flags;
	__u64	buf;
	__u64	len;
	struct krdma_ioc_token	token;
	__u64	offset;
	__u32	timeout_ms;
	__u32	imm;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_atomic - KRDMA_IOC_FADD and KRDMA_IOC_CAS
 * @handle: in: a connection
 * @flags: in: 0
 * @token: in: the peer's region, registered with
 *	KRDMA_IOC_ACCESS_REMOTE_ATOMIC
 * @offset: in: where in the region: the 8 bytes there must lie inside the
 *	token (else ERANGE) and token.addr + @offset must be a multiple of 8
 *	(else EINVAL)
 * @compare_add: in: FADD: the addend (modulo 2^64); CAS: the expected value
 * @swap: in: CAS: the value stored if the old one equals @compare_add;
 *	FADD: 0
 * @old: out: the 8 bytes' value before the operation (CAS swapped if and
 *	only if it equals @compare_add)
 * @timeout_ms: in: an operation not done by then fails the connection
 *	(0: 30000; KRDMA_IOC_TIMEOUT_INF: no bound but a fatal signal)
 * @reserved32: in: 0
 * @reserved: in: 0
 *
 * The peer's 8 bytes are one 64-bit integer, in the byte order the device
 * uses for atomics (the host's for rxe).
 * Errors: ERANGE, EINVAL (misaligned), EOPNOTSUPP (the connection's device
 * has no atomics: siw), EACCES (the peer refused the key or the right),
 * ETIMEDOUT, ECONNRESET, ENOTCONN.
 */
struct krdma_ioc_atomic {
	__u32	handle;
	__u32	flags;
	struct krdma_ioc_token	token;
	__u64	offset;
	__u64	compare_add;
	__u64	swap;
	__u64	old;
	__u32	timeout_ms;
	__u32	reserved32;
	__u64	reserved[2];
};

/**
 * struct krdma_ioc_query - KRDMA_IOC_QUERY: state of a connection/listener
 * @handle: in: a connection or a listener
 * @flags: in: 0
 * @type: out: KRDMA_IOC_TYPE_*
 * @state: out: KRDMA_IOC_STATE_*
 * @error: out: 0, or the negative errno that ended the connection
 * @queue_depth: out: negotiated (listener: offered) queue depth
 * @max_msg_size: out: negotiated (listener: offered) largest message
 * @credits: out: messages the peer can take now
 * @local: out: local address (listener: the one it listens on)
 * @peer: out: peer's address (listener: zero)
 * @name: out: the directory under /sys/kernel/krdma/conns (or listeners)
 * @device: out: RDMA device name, empty if none
 * @send_ops: out: counters, as in sysfs
 * @send_bytes: out
 * @recv_ops: out
 * @recv_bytes: out
 * @write_ops: out
 * @write_bytes: out
 * @read_ops: out
 * @read_bytes: out
 * @atomic_ops: out
 * @errors: out
 * @wc_status: out: the status of the failed work completion that gave
 *	@error (enum ib_wc_status, whose values are libibverbs' enum
 *	ibv_wc_status: 10 is a remote access error, 5 a flush); 0 when there
 *	is no error or its cause was no work completion (a disconnect, a
 *	heartbeat timeout).  Added without a version change: a module that
 *	predates it leaves it 0.  The same as conns/NAME/wc_status in sysfs.
 * @reserved32: in: 0; out: 0
 * @reserved: in: 0; out: 0
 *
 * The out fields are ignored on input.
 */
struct krdma_ioc_query {
	__u32	handle;
	__u32	flags;
	__u32	type;
	__u32	state;
	__s32	error;
	__u32	queue_depth;
	__u32	max_msg_size;
	__u32	credits;
	struct krdma_ioc_addr	local;
	struct krdma_ioc_addr	peer;
	char	name[32];
	char	device[64];
	__u64	send_ops;
	__u64	send_bytes;
	__u64	recv_ops;
	__u64	recv_bytes;
	__u64	write_ops;
	__u64	write_bytes;
	__u64	read_ops;
	__u64	read_bytes;
	__u64	atomic_ops;
	__u64	errors;
	__u32	wc_status;
	__u32	reserved32;
	__u64	reserved[3];
};

#define KRDMA_IOC_VERSION _IOR(KRDMA_IOC_MAGIC, 0x00, struct krdma_ioc_version)
#define KRDMA_IOC_LISTEN  _IOWR(KRDMA_IOC_MAGIC, 0x01, struct krdma_ioc_listen)
#define KRDMA_IOC_ACCEPT  _IOWR(KRDMA_IOC_MAGIC, 0x02, struct krdma_ioc_accept)
#define KRDMA_IOC_CONNECT _IOWR(KRDMA_IOC_MAGIC, 0x03, struct krdma_ioc_connect)
#define KRDMA_IOC_CLOSE   _IOW(KRDMA_IOC_MAGIC, 0x04, struct krdma_ioc_handle)
#define KRDMA_IOC_SEND    _IOW(KRDMA_IOC_MAGIC, 0x05, struct krdma_ioc_msg)
#define KRDMA_IOC_RECV    _IOWR(KRDMA_IOC_MAGIC, 0x06, struct krdma_ioc_msg)
#define KRDMA_IOC_REG     _IOWR(KRDMA_IOC_MAGIC, 0x07, struct krdma_ioc_reg)
#define KRDMA_IOC_UNREG   _IOW(KRDMA_IOC_MAGIC, 0x08, struct krdma_ioc_handle)
#define KRDMA_IOC_REVOKE  _IOW(KRDMA_IOC_MAGIC, 0x09, struct krdma_ioc_handle)
#define KRDMA_IOC_WRITE   _IOW(KRDMA_IOC_MAGIC, 0x0a, struct krdma_ioc_rdma)
#define KRDMA_IOC_READ    _IOW(KRDMA_IOC_MAGIC, 0x0b, struct krdma_ioc_rdma)
#define KRDMA_IOC_QUERY   _IOWR(KRDMA_IOC_MAGIC, 0x0c, struct krdma_ioc_query)
#define KRDMA_IOC_FADD    _IOWR(KRDMA_IOC_MAGIC, 0x0d, struct krdma_ioc_atomic)
#define KRDMA_IOC_CAS     _IOWR(KRDMA_IOC_MAGIC, 0x0e, struct krdma_ioc_atomic)
#define KRDMA_IOC_WRITE_IMM _IOW(KRDMA_IOC_MAGIC, 0x0f, struct krdma_ioc_rdma)

#endif /* _UAPI_LINUX_KRDMA_H */
