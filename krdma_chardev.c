// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/krdma: the krdma API for user space (include/uapi/linux/krdma.h).
 *
 * Each open file is a session.  What a session creates (listeners,
 * connections, registrations) lives in an xarray of small handles local to
 * the file; a handle number means nothing in another session, where it
 * fails with -EBADF like any handle the session does not have.  Closing the
 * file closes everything the session still owns, even in the middle of a
 * transfer: connections are torn down first (in-flight operations end with
 * an error), then registrations are released and their pages unpinned.
 *
 * Pinned pages are charged to the registering process's RLIMIT_MEMLOCK
 * (mm->pinned_vm, as ib_umem does for verbs users) for as long as they stay
 * pinned, unless it has CAP_IPC_LOCK.
 *
 * Lifetime of a handle's object: the xarray holds one reference and every
 * ioctl using the object holds another for its duration.  Taking a handle
 * out of the table (CLOSE, UNREG, release) also shuts the object down, so
 * that other threads of the session blocked on it return at once; the
 * krdma object itself is released when the last reference goes.  For a
 * registration, shutting down is revoking: UNREG and CLOSE of it return
 * once its token is dead, whoever else still holds the object (a REVOKE
 * waiting for a send queue slot, a QUERY), and what is left for the last
 * reference is the release of the pages.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/delay.h>
#include <linux/miscdevice.h>
#include <linux/fs.h>
#include <linux/poll.h>
#include <linux/xarray.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/sched/signal.h>
#include <linux/sched/mm.h>
#include <linux/capability.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <uapi/linux/krdma.h>
#include <krdma.h>

#include "krdma_chardev.h"
#include "krdma_abi.h"

/*
 * SEND, RECV, WRITE and READ copy through a kernel bounce buffer, at most
 * this much at a time.  That costs a copy, and is acceptable for now; a
 * zero-copy path would pin the user pages as REG does.
 */
#define KRDMA_CD_BOUNCE		(1024 * 1024)
#define KRDMA_CD_RW_TIMEOUT_MS	30000

/*
 * Test knob: REG sleeps this long between its registration and its
 * handle, so that a CLOSE of the connection meets it there
 * (ioctl_fuzz stalls).
 */
static unsigned int fault_reg_delay_ms;
module_param(fault_reg_delay_ms, uint, 0644);
MODULE_PARM_DESC(fault_reg_delay_ms,
		 "test: /dev/krdma's REG sleeps this long before its handle is made");

struct krdma_cd_session {
	struct xarray		handles;
	u32			next;		/* cyclic handle allocation */
	wait_queue_head_t	wq;		/* poll */
};

struct krdma_cd_obj {
	struct kref			ref;
	u32				type;	/* KRDMA_IOC_TYPE_* */
	u32				handle;
	struct krdma_cd_session		*s;
	struct list_head		dead;	/* being closed */
	/* Forwards wake-ups of the conn/listener wait queue to poll(). */
	struct wait_queue_entry		wait;
	wait_queue_head_t		*wqh;
	union {
		struct krdma_listener	*l;
		struct krdma_conn	*conn;
		struct {
			struct krdma_mr		*kmr;
			struct krdma_cd_obj	*conn_obj;
			struct page		**pages;
			unsigned long		npages;
			/* pinned_vm of @mm charged with @charged pages */
			struct mm_struct	*mm;
			unsigned long		charged;
			bool			dirty;
			struct sg_table		sgt;
			/* REVOKE, UNREG and CLOSE: one revoke at a time */
			struct mutex		lock;
		} mr;
	};
};

union krdma_cd_arg {
	struct krdma_ioc_version	version;
	struct krdma_ioc_listen		listen;
	struct krdma_ioc_accept		accept;
	struct krdma_ioc_connect	connect;
	struct krdma_ioc_handle		handle;
	struct krdma_ioc_msg		msg;
	struct krdma_ioc_reg		reg;
	struct krdma_ioc_rdma		rdma;
	struct krdma_ioc_query		query;
	struct krdma_ioc_atomic		atomic;
};

struct krdma_cd_cmd {
	unsigned int	cmd;
	const char	*name;
	/* @created: a handle made by the command, closed if copy-out fails */
	long (*fn)(struct krdma_cd_session *s, union krdma_cd_arg *a,
		   u32 *created);
};

/* ---- objects ------------------------------------------------------- */

static int krdma_cd_wake(struct wait_queue_entry *wait, unsigned int mode,
			 int sync, void *key)
{
	struct krdma_cd_obj *obj = container_of(wait, struct krdma_cd_obj,
						wait);

	wake_up_all(&obj->s->wq);
	return 0;
}

static struct krdma_cd_obj *krdma_cd_obj_alloc(struct krdma_cd_session *s,
					       u32 type)
{
	struct krdma_cd_obj *obj;

	obj = kzalloc(sizeof(*obj), GFP_KERNEL);
	if (!obj)
		return NULL;
	kref_init(&obj->ref);
	obj->type = type;
	obj->s = s;
	INIT_LIST_HEAD(&obj->dead);
	init_waitqueue_func_entry(&obj->wait, krdma_cd_wake);
	return obj;
}

static void krdma_cd_watch(struct krdma_cd_obj *obj, wait_queue_head_t *wqh)
{
	obj->wqh = wqh;
	add_wait_queue(wqh, &obj->wait);
}

static void krdma_cd_unwatch(struct krdma_cd_obj *obj)
{
	if (obj->wqh)
		remove_wait_queue(obj->wqh, &obj->wait);
	obj->wqh = NULL;
}

static void krdma_cd_obj_put(struct krdma_cd_obj *obj);
static void krdma_cd_unpin(struct krdma_cd_obj *obj, bool dirty);

/* The last reference: release the krdma object.  Process context. */
static void krdma_cd_obj_release(struct kref *ref)
{
	struct krdma_cd_obj *obj = container_of(ref, struct krdma_cd_obj, ref);

	switch (obj->type) {
	case KRDMA_IOC_TYPE_LISTENER:
		krdma_cd_unwatch(obj);
		/* krdma_listener_close() ran at shutdown; this is our ref. */
		krdma_listener_put(obj->l);
		break;
	case KRDMA_IOC_TYPE_CONN:
		krdma_cd_unwatch(obj);
		krdma_close(obj->conn);
		break;
	case KRDMA_IOC_TYPE_MR:
		/* Revoked and unmapped before the pages go back. */
		krdma_mr_free(obj->mr.kmr);
		krdma_cd_unpin(obj, obj->mr.dirty);
		krdma_cd_obj_put(obj->mr.conn_obj);
		break;
	}
	kfree(obj);
}

static void krdma_cd_obj_put(struct krdma_cd_obj *obj)
{
	kref_put(&obj->ref, krdma_cd_obj_release);
}

/*
 * REVOKE, and UNREG or CLOSE of a registration: the token is dead when
 * this returns 0.  One at a time per registration: a second one waits for
 * the first's invalidation (which may wait for a send queue slot, and for
 * the device), and then finds nothing left to do.  A fatal signal ends
 * that wait (-EINTR); the registration is revoked by whoever holds the
 * lock, or at the latest by its release.
 */
static int krdma_cd_mr_revoke(struct krdma_cd_obj *obj)
{
	int ret;

	if (mutex_lock_killable(&obj->mr.lock))
		return -EINTR;
	ret = krdma_mr_revoke(obj->mr.kmr);
	mutex_unlock(&obj->mr.lock);
	return ret;
}

/*
 * The object left the handle table: make everyone still using it return.
 * Connections stop (pending transfers fail, registrations lose remote
 * access); listeners stop listening and wake their ACCEPT waiters;
 * registrations are revoked.
 */
static int krdma_cd_obj_shutdown(struct krdma_cd_obj *obj)
{
	switch (obj->type) {
	case KRDMA_IOC_TYPE_LISTENER:
		krdma_listener_close(obj->l);
		break;
	case KRDMA_IOC_TYPE_CONN:
		krdma_conn_shutdown(obj->conn);
		break;
	case KRDMA_IOC_TYPE_MR:
		return krdma_cd_mr_revoke(obj);
	}
	return 0;
}

static int krdma_cd_install(struct krdma_cd_session *s,
			    struct krdma_cd_obj *obj, const char *cmd)
{
	int ret;

	ret = xa_alloc_cyclic(&s->handles, &obj->handle, obj,
			      XA_LIMIT(1, KRDMA_IOC_MAX_HANDLES), &s->next,
			      GFP_KERNEL);
	if (ret == -EBUSY) {
		krdma_cd_warn("%s: session has %u handles already\n", cmd,
			      KRDMA_IOC_MAX_HANDLES);
		return -EMFILE;
	}
	return ret < 0 ? ret : 0;
}

/* A reference to the session's handle @h if it is of @type (0: any). */
static struct krdma_cd_obj *krdma_cd_get(struct krdma_cd_session *s, u32 h,
					 u32 type, const char *cmd)
{
	struct krdma_cd_obj *obj;

	xa_lock(&s->handles);
	obj = xa_load(&s->handles, h);
	if (obj && (!type || obj->type == type))
		kref_get(&obj->ref);
	else
		obj = NULL;
	xa_unlock(&s->handles);
	if (!obj)
		krdma_cd_warn("%s: handle %u is not a %s of this session\n",
			      cmd, h,
			      type == KRDMA_IOC_TYPE_LISTENER ? "listener" :
			      type == KRDMA_IOC_TYPE_CONN ? "connection" :
			      type == KRDMA_IOC_TYPE_MR ? "registration" :
			      "handle");
	return obj;
}

/* Take the registrations made on @conn_obj out of the table, onto @dead. */
static void krdma_cd_take_mrs(struct krdma_cd_session *s,
			      struct krdma_cd_obj *conn_obj,
			      struct list_head *dead)
{
	struct krdma_cd_obj *obj;
	unsigned long h;

	xa_lock(&s->handles);
	xa_for_each(&s->handles, h, obj) {
		if (obj->type == KRDMA_IOC_TYPE_MR &&
		    obj->mr.conn_obj == conn_obj) {
			__xa_erase(&s->handles, h);
			list_add_tail(&obj->dead, dead);
		}
	}
	xa_unlock(&s->handles);
}

/* CLOSE/UNREG: take @h (of @type, 0: any) out of the table and close it. */
static int krdma_cd_close_handle(struct krdma_cd_session *s, u32 h, u32 type,
				 const char *cmd)
{
	struct krdma_cd_obj *obj, *mr, *tmp;
	LIST_HEAD(dead);
	int ret;

	xa_lock(&s->handles);
	obj = xa_load(&s->handles, h);
	if (obj && (!type || obj->type == type))
		__xa_erase(&s->handles, h);
	else
		obj = NULL;
	xa_unlock(&s->handles);
	if (!obj) {
		krdma_cd_warn("%s: handle %u is not a %s of this session\n",
			      cmd, h, type ? "registration" : "handle");
		return -EBADF;
	}
	/*
	 * A connection's shutdown deregisters its registrations too: they
	 * only wait for their pages to go back.
	 */
	ret = krdma_cd_obj_shutdown(obj);
	if (obj->type == KRDMA_IOC_TYPE_CONN)
		krdma_cd_take_mrs(s, obj, &dead);
	list_for_each_entry_safe(mr, tmp, &dead, dead)
		krdma_cd_obj_put(mr);
	krdma_cd_obj_put(obj);
	return ret;
}

/* ---- argument conversion (the checks are in krdma_abi.c) ---------- */

static void krdma_cd_addr_out(const struct sockaddr_storage *ss,
			      struct krdma_ioc_addr *a)
{
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;

	memset(a, 0, sizeof(*a));
	if (ss->ss_family == AF_INET) {
		a->family = AF_INET;
		a->port = ntohs(sin->sin_port);
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		a->family = AF_INET6;
		a->port = ntohs(sin6->sin6_port);
		a->scope_id = sin6->sin6_scope_id;
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

/* timeout_ms to jiffies: 0 stays 0, KRDMA_IOC_TIMEOUT_INF is forever. */
static long krdma_cd_timeout(u32 ms)
{
	if (ms == KRDMA_IOC_TIMEOUT_INF)
		return MAX_SCHEDULE_TIMEOUT;
	return msecs_to_jiffies(ms);
}

/* ---- commands ------------------------------------------------------- */

static long krdma_cd_version(struct krdma_cd_session *s,
			     union krdma_cd_arg *a, u32 *created)
{
	struct krdma_ioc_version *v = &a->version;

	memset(v, 0, sizeof(*v));
	v->abi_version = KRDMA_ABI_VERSION;
	v->max_handles = KRDMA_IOC_MAX_HANDLES;
	v->max_msg_size = KRDMA_MAX_MSG_SIZE;
	v->max_depth = KRDMA_MAX_DEPTH;
	v->max_xfer = KRDMA_IOC_MAX_XFER;
	return 0;
}

static long krdma_cd_listen(struct krdma_cd_session *s, union krdma_cd_arg *a,
			    u32 *created)
{
	struct krdma_ioc_listen *la = &a->listen;
	struct krdma_conn_opts opts = {
		.queue_depth = la->queue_depth,
		.max_msg_size = la->max_msg_size,
		.backlog = la->backlog,
	};
	struct sockaddr_storage ss;
	struct krdma_listener *l;
	struct krdma_cd_obj *obj;
	int ret;

	ret = krdma_abi_listen(la, &ss);
	if (ret)
		return ret;

	obj = krdma_cd_obj_alloc(s, KRDMA_IOC_TYPE_LISTENER);
	if (!obj)
		return -ENOMEM;
	l = krdma_listen((struct sockaddr *)&ss, &opts);
	if (IS_ERR(l)) {
		kfree(obj);
		return PTR_ERR(l);
	}
	/* Ours, beyond the owner's that krdma_listener_close() drops. */
	krdma_listener_get(l);
	obj->l = l;
	krdma_cd_watch(obj, krdma_listener_waitq(l));
	ret = krdma_cd_install(s, obj, "LISTEN");
	if (ret) {
		krdma_cd_obj_shutdown(obj);
		krdma_cd_obj_put(obj);
		return ret;
	}
	la->handle = obj->handle;
	*created = obj->handle;
	return 0;
}

static int krdma_cd_add_conn(struct krdma_cd_session *s,
			     struct krdma_conn *conn, u32 *handle,
			     const char *cmd)
{
	struct krdma_cd_obj *obj;
	int ret;

	obj = krdma_cd_obj_alloc(s, KRDMA_IOC_TYPE_CONN);
	if (!obj) {
		krdma_close(conn);
		return -ENOMEM;
	}
	obj->conn = conn;
	krdma_cd_watch(obj, krdma_conn_waitq(conn));
	ret = krdma_cd_install(s, obj, cmd);
	if (ret) {
		krdma_cd_obj_shutdown(obj);
		krdma_cd_obj_put(obj);
		return ret;
	}
	*handle = obj->handle;
	return 0;
}

static long krdma_cd_accept(struct krdma_cd_session *s, union krdma_cd_arg *a,
			    u32 *created)
{
	struct krdma_ioc_accept *aa = &a->accept;
	struct krdma_cd_obj *lobj;
	struct krdma_conn *conn;
	int ret;

	ret = krdma_abi_accept(aa);
	if (ret)
		return ret;
	lobj = krdma_cd_get(s, aa->handle, KRDMA_IOC_TYPE_LISTENER, "ACCEPT");
	if (!lobj)
		return -EBADF;
	conn = krdma_accept(lobj->l, krdma_cd_timeout(aa->timeout_ms));
	krdma_cd_obj_put(lobj);
	if (IS_ERR(conn)) {
		ret = PTR_ERR(conn);
		return ret == -ETIMEDOUT && !aa->timeout_ms ? -EAGAIN : ret;
	}
	ret = krdma_cd_add_conn(s, conn, &aa->conn, "ACCEPT");
	if (!ret)
		*created = aa->conn;
	return ret;
}

static long krdma_cd_connect(struct krdma_cd_session *s,
			     union krdma_cd_arg *a, u32 *created)
{
	struct krdma_ioc_connect *ca = &a->connect;
	struct krdma_conn_opts opts = {
		.queue_depth = ca->queue_depth,
		.max_msg_size = ca->max_msg_size,
		.timeout_ms = ca->timeout_ms,
	};
	struct sockaddr_storage dst, src;
	struct krdma_conn *conn;
	bool has_src;
	int ret;

	ret = krdma_abi_connect(ca, &dst, &src, &has_src);
	if (ret)
		return ret;

	conn = krdma_connect((struct sockaddr *)&dst,
			     has_src ? (struct sockaddr *)&src : NULL, &opts);
	if (IS_ERR(conn))
		return PTR_ERR(conn);
	ret = krdma_cd_add_conn(s, conn, &ca->handle, "CONNECT");
	if (!ret)
		*created = ca->handle;
	return ret;
}

static long krdma_cd_close(struct krdma_cd_session *s, union krdma_cd_arg *a,
			   u32 *created)
{
	int ret = krdma_abi_handle(&a->handle, "CLOSE");

	if (ret)
		return ret;
	return krdma_cd_close_handle(s, a->handle.handle, 0, "CLOSE");
}

static long krdma_cd_unreg(struct krdma_cd_session *s, union krdma_cd_arg *a,
			   u32 *created)
{
	int ret = krdma_abi_handle(&a->handle, "UNREG");

	if (ret)
		return ret;
	return krdma_cd_close_handle(s, a->handle.handle, KRDMA_IOC_TYPE_MR,
				     "UNREG");
}

static long krdma_cd_revoke(struct krdma_cd_session *s, union krdma_cd_arg *a,
			    u32 *created)
{
	struct krdma_cd_obj *obj;
	int ret;

	ret = krdma_abi_handle(&a->handle, "REVOKE");
	if (ret)
		return ret;
	obj = krdma_cd_get(s, a->handle.handle, KRDMA_IOC_TYPE_MR, "REVOKE");
	if (!obj)
		return -EBADF;
	ret = krdma_cd_mr_revoke(obj);
	krdma_cd_obj_put(obj);
	return ret;
}

static long krdma_cd_send(struct krdma_cd_session *s, union krdma_cd_arg *a,
			  u32 *created)
{
	struct krdma_ioc_msg *m = &a->msg;
	struct krdma_cd_obj *obj;
	void *kbuf;
	int ret;

	ret = krdma_abi_send(m);
	if (ret)
		return ret;
	obj = krdma_cd_get(s, m->handle, KRDMA_IOC_TYPE_CONN, "SEND");
	if (!obj)
		return -EBADF;
	if ((m->flags & KRDMA_IOC_SEND_IMM) &&
	    krdma_conn_is_iwarp(obj->conn)) {
		krdma_cd_warn("SEND: %s is iWARP, which has no immediate data\n",
			      krdma_conn_device_name(obj->conn));
		ret = -EOPNOTSUPP;
		goto out;
	}
	ret = -ENOMEM;
	kbuf = kvmalloc(max_t(u64, m->len, 1), GFP_KERNEL);
	if (!kbuf)
		goto out;
	if (copy_from_user(kbuf, u64_to_user_ptr(m->buf), m->len)) {
		krdma_cd_warn("SEND: bad buffer pointer 0x%llx\n", m->buf);
		ret = -EFAULT;
		goto out_free;
	}
	if (m->flags & KRDMA_IOC_SEND_IMM) {
		struct kvec iov = { .iov_base = kbuf, .iov_len = m->len };

		ret = krdma_sendv(obj->conn, &iov, 1, KRDMA_SEND_IMM, m->imm,
				  krdma_cd_timeout(m->timeout_ms));
	} else {
		ret = krdma_send(obj->conn, kbuf, m->len,
				 krdma_cd_timeout(m->timeout_ms));
	}
out_free:
	kvfree(kbuf);
out:
	krdma_cd_obj_put(obj);
	return ret;
}

static long krdma_cd_recv(struct krdma_cd_session *s, union krdma_cd_arg *a,
			  u32 *created)
{
	struct krdma_ioc_msg *m = &a->msg;
	struct krdma_recv_info info = {};
	struct krdma_cd_obj *obj;
	size_t blen;
	void *kbuf;
	int ret;

	ret = krdma_abi_recv(m);
	if (ret)
		return ret;
	obj = krdma_cd_get(s, m->handle, KRDMA_IOC_TYPE_CONN, "RECV");
	if (!obj)
		return -EBADF;
	ret = -ENOMEM;
	blen = min_t(u64, m->len, krdma_max_msg_size(obj->conn));
	kbuf = kvmalloc(max_t(size_t, blen, 1), GFP_KERNEL);
	if (!kbuf)
		goto out;
	ret = krdma_recv_ex(obj->conn, kbuf, blen, &info,
			    krdma_cd_timeout(m->timeout_ms));
	if (ret == -ETIMEDOUT && !m->timeout_ms)
		ret = -EAGAIN;
	if (ret >= 0) {
		m->msg_len = ret;
		m->msg_flags = info.imm_valid ? KRDMA_IOC_MSG_IMM : 0;
		m->imm = info.imm_valid ? info.imm : 0;
		ret = 0;
		/* The message is consumed: a bad buffer loses it. */
		if (copy_to_user(u64_to_user_ptr(m->buf), kbuf, m->msg_len)) {
			krdma_cd_warn("RECV: bad buffer pointer 0x%llx, message of %u bytes lost\n",
				      m->buf, m->msg_len);
			ret = -EFAULT;
		}
	}
	kvfree(kbuf);
out:
	krdma_cd_obj_put(obj);
	return ret;
}

/*
 * Charge @npages to the caller's RLIMIT_MEMLOCK before pinning them, as
 * ib_umem does: mm->pinned_vm, unless the caller has CAP_IPC_LOCK.  The
 * charge stays on this mm (held by mmgrab()) until krdma_cd_uncharge(),
 * whichever process or context releases the registration.
 */
static int krdma_cd_charge(struct krdma_cd_obj *obj, unsigned long npages)
{
	struct mm_struct *mm = current->mm;
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long pinned;

	pinned = atomic64_add_return(npages, &mm->pinned_vm);
	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		krdma_cd_warn("REG: pinning %lu KiB would exceed RLIMIT_MEMLOCK (%lu KiB, %lu KiB pinned already)\n",
			      npages << (PAGE_SHIFT - 10),
			      rlimit(RLIMIT_MEMLOCK) >> 10,
			      (pinned - npages) << (PAGE_SHIFT - 10));
		return -ENOMEM;
	}
	mmgrab(mm);
	obj->mr.mm = mm;
	obj->mr.charged = npages;
	return 0;
}

/* Give back exactly what krdma_cd_charge() took, to the mm it took it from. */
static void krdma_cd_uncharge(struct krdma_cd_obj *obj)
{
	if (!obj->mr.mm)
		return;
	atomic64_sub(obj->mr.charged, &obj->mr.mm->pinned_vm);
	mmdrop(obj->mr.mm);
	obj->mr.mm = NULL;
	obj->mr.charged = 0;
}

/* The pages [buf, buf + len) spans; @len is at most KRDMA_IOC_MAX_XFER. */
static unsigned long krdma_cd_npages(u64 buf, u64 len)
{
	return (offset_in_page(buf) + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
}

/* Pin [buf, buf + len) of the caller for as long as a registration lives. */
static int krdma_cd_pin(struct krdma_cd_obj *obj, u64 buf, u64 len,
			bool write)
{
	unsigned long start = buf & PAGE_MASK;
	unsigned long npages, done = 0;
	unsigned int gup = FOLL_LONGTERM | (write ? FOLL_WRITE : 0);
	int ret;

	npages = krdma_cd_npages(buf, len);
	ret = krdma_cd_charge(obj, npages);
	if (ret)
		return ret;
	ret = -ENOMEM;
	obj->mr.pages = kvmalloc_array(npages, sizeof(struct page *),
				       GFP_KERNEL);
	if (!obj->mr.pages)
		goto uncharge;
	while (done < npages) {
		ret = pin_user_pages_fast(start + done * PAGE_SIZE,
					  min_t(unsigned long, npages - done,
						INT_MAX >> PAGE_SHIFT),
					  gup, obj->mr.pages + done);
		if (ret <= 0) {
			ret = ret ?: -EFAULT;
			goto unpin;
		}
		done += ret;
	}
	obj->mr.npages = npages;
	obj->mr.dirty = write;
	ret = sg_alloc_table_from_pages(&obj->mr.sgt, obj->mr.pages, npages,
					offset_in_page(buf), len, GFP_KERNEL);
	if (ret)
		goto unpin;
	return 0;

unpin:
	unpin_user_pages(obj->mr.pages, done);
	kvfree(obj->mr.pages);
	obj->mr.pages = NULL;
	obj->mr.npages = 0;
uncharge:
	krdma_cd_uncharge(obj);
	return ret;
}

/* Undo krdma_cd_pin() (@dirty: the peer may have written to the pages). */
static void krdma_cd_unpin(struct krdma_cd_obj *obj, bool dirty)
{
	sg_free_table(&obj->mr.sgt);
	unpin_user_pages_dirty_lock(obj->mr.pages, obj->mr.npages, dirty);
	kvfree(obj->mr.pages);
	krdma_cd_uncharge(obj);
}

/*
 * REG: give the registration @obj a handle, but only while its connection
 * still has one, so that a CLOSE of the connection (krdma_cd_take_mrs())
 * always takes the registration with it.  The check is made under the
 * table's lock after the handle was allocated: a CLOSE that took the
 * connection out before that either found @obj there and took it too, or
 * leaves it to be taken out here.  Returns 0, -EMFILE or -ENOMEM (no
 * handle), or -EBADF (the connection was closed meanwhile); after an error
 * the table's reference to @obj is gone and the caller's is left.
 */
static int krdma_cd_install_mr(struct krdma_cd_session *s,
			       struct krdma_cd_obj *obj)
{
	struct krdma_cd_obj *cobj = obj->mr.conn_obj;
	bool mine;
	int ret;

	ret = krdma_cd_install(s, obj, "REG");
	if (ret) {
		krdma_cd_obj_put(obj);
		return ret;
	}
	xa_lock(&s->handles);
	if (xa_load(&s->handles, cobj->handle) == cobj) {
		xa_unlock(&s->handles);
		return 0;
	}
	mine = xa_load(&s->handles, obj->handle) == obj;
	if (mine)
		__xa_erase(&s->handles, obj->handle);
	xa_unlock(&s->handles);
	krdma_cd_warn("REG: connection %u was closed during the registration\n",
		      cobj->handle);
	if (mine)
		krdma_cd_obj_put(obj);
	return -EBADF;
}

static long krdma_cd_reg(struct krdma_cd_session *s, union krdma_cd_arg *a,
			 u32 *created)
{
	struct krdma_ioc_reg *r = &a->reg;
	struct krdma_cd_obj *cobj, *obj;
	unsigned long npages;
	struct krdma_token tok;
	struct krdma_mr *kmr;
	u32 max_pages;
	int ret;

	ret = krdma_abi_reg(r);
	if (ret)
		return ret;
	cobj = krdma_cd_get(s, r->handle, KRDMA_IOC_TYPE_CONN, "REG");
	if (!cobj)
		return -EBADF;
	/*
	 * Before anything is pinned or charged: krdma_reg_sg() would refuse
	 * it only once every page was (0 before the connection has a QP:
	 * krdma_reg_sg() says why it fails then).
	 */
	npages = krdma_cd_npages(r->buf, r->len);
	max_pages = krdma_max_reg_pages(cobj->conn);
	if (max_pages && npages > max_pages) {
		krdma_cd_warn("REG: %llu bytes span %lu pages, one registration on %s maps at most %u\n",
			      r->len, npages,
			      krdma_conn_device_name(cobj->conn), max_pages);
		ret = -E2BIG;
		goto out_conn;
	}

	ret = -ENOMEM;
	obj = krdma_cd_obj_alloc(s, KRDMA_IOC_TYPE_MR);
	if (!obj)
		goto out_conn;
	mutex_init(&obj->mr.lock);
	ret = krdma_cd_pin(obj, r->buf, r->len,
			   r->access & (KRDMA_IOC_ACCESS_REMOTE_WRITE |
					KRDMA_IOC_ACCESS_REMOTE_ATOMIC));
	if (ret) {
		if (ret == -EFAULT)
			krdma_cd_warn("REG: cannot pin 0x%llx+%llu\n", r->buf,
				      r->len);
		goto out_obj;
	}
	kmr = krdma_reg_sg(cobj->conn, obj->mr.sgt.sgl, obj->mr.sgt.orig_nents,
			   r->access);
	if (IS_ERR(kmr)) {
		ret = PTR_ERR(kmr);
		goto out_unpin;
	}
	if (unlikely(fault_reg_delay_ms)) {
		krdma_cd_info("REG: registered, sleeping %u ms (fault_reg_delay_ms)\n",
			      fault_reg_delay_ms);
		msleep_interruptible(fault_reg_delay_ms);
	}
	obj->mr.kmr = kmr;
	obj->mr.conn_obj = cobj;	/* our reference moves to the MR */
	/* A copy, whatever a teardown does to the MR from here on. */
	krdma_mr_token(kmr, &tok);
	/* Ours, for obj->handle: from the install on, others may close it. */
	kref_get(&obj->ref);
	ret = krdma_cd_install_mr(s, obj);
	if (!ret) {
		r->mr = obj->handle;
		r->token.addr = tok.addr;
		r->token.rkey = tok.rkey;
		r->token.length = tok.length;
		*created = obj->handle;
	}
	krdma_cd_obj_put(obj);
	return ret;

out_unpin:
	krdma_cd_unpin(obj, false);
out_obj:
	kfree(obj);
out_conn:
	krdma_cd_obj_put(cobj);
	return ret;
}

/*
 * WRITE, READ and WRITE_IMM (@write and @imm), through the bounce buffer
 * a chunk at a time; WRITE_IMM's notice goes with the last chunk.
 */
static long krdma_cd_rdma(struct krdma_cd_session *s, union krdma_cd_arg *a,
			  bool write, bool imm)
{
	const char *cmd = imm ? "WRITE_IMM" : write ? "WRITE" : "READ";
	struct krdma_ioc_rdma *r = &a->rdma;
	void __user *ubuf = u64_to_user_ptr(r->buf);
	struct krdma_token tok = {
		.addr = r->token.addr,
		.rkey = r->token.rkey,
		.length = r->token.length,
	};
	struct krdma_cd_obj *obj;
	size_t chunk, this;
	struct sg_table sgt;
	u64 done = 0;
	long timeout;
	bool zero;
	void *kbuf;
	int ret;

	ret = krdma_abi_rdma(r, cmd, imm);
	if (ret)
		return ret;
	obj = krdma_cd_get(s, r->handle, KRDMA_IOC_TYPE_CONN, cmd);
	if (!obj)
		return -EBADF;
	/* Before any byte moves: krdma_write_imm() would refuse only the last. */
	if (imm && krdma_conn_is_iwarp(obj->conn)) {
		krdma_cd_warn("%s: %s is iWARP, which has no immediate data\n",
			      cmd, krdma_conn_device_name(obj->conn));
		ret = -EOPNOTSUPP;
		goto out;
	}
	timeout = krdma_cd_timeout(r->timeout_ms ?: KRDMA_CD_RW_TIMEOUT_MS);

	ret = -ENOMEM;
	chunk = min_t(u64, r->len, KRDMA_CD_BOUNCE);
	/*
	 * Over iWARP a READ can succeed without filling its sink, leaving the
	 * rest as it was (krdma_read()): zeroed before each step, or a short
	 * answer would hand the caller the previous step's bytes, or the
	 * allocator's.  A RoCE READ completes only once all of it is in.
	 */
	zero = !write && krdma_conn_is_iwarp(obj->conn);
	kbuf = kvmalloc(chunk, GFP_KERNEL);
	if (!kbuf)
		goto out;
	ret = 0;
	while (done < r->len) {
		this = min_t(u64, r->len - done, chunk);
		if (signal_pending(current)) {
			ret = -ERESTARTSYS;
			break;
		}
		if (zero)
			memset(kbuf, 0, this);
		if (write && copy_from_user(kbuf, ubuf + done, this)) {
			krdma_cd_warn("WRITE: bad buffer pointer 0x%llx\n",
				      r->buf + done);
			ret = -EFAULT;
			break;
		}
		ret = krdma_buf_to_sgt(kbuf, this, &sgt, GFP_KERNEL);
		if (ret)
			break;
		if (imm && done + this == r->len)
			ret = krdma_write_imm(obj->conn, sgt.sgl,
					      sgt.orig_nents, &tok,
					      r->offset + done, r->imm,
					      timeout);
		else if (write)
			ret = krdma_write(obj->conn, sgt.sgl, sgt.orig_nents,
					  &tok, r->offset + done, timeout);
		else
			ret = krdma_read(obj->conn, sgt.sgl, sgt.orig_nents,
					 &tok, r->offset + done, timeout);
		sg_free_table(&sgt);
		if (ret)
			break;
		if (!write && copy_to_user(ubuf + done, kbuf, this)) {
			krdma_cd_warn("READ: bad buffer pointer 0x%llx\n",
				      r->buf + done);
			ret = -EFAULT;
			break;
		}
		done += this;
		cond_resched();
	}
	kvfree(kbuf);
out:
	krdma_cd_obj_put(obj);
	return ret;
}

static long krdma_cd_write(struct krdma_cd_session *s, union krdma_cd_arg *a,
			   u32 *created)
{
	return krdma_cd_rdma(s, a, true, false);
}

static long krdma_cd_read(struct krdma_cd_session *s, union krdma_cd_arg *a,
			  u32 *created)
{
	return krdma_cd_rdma(s, a, false, false);
}

static long krdma_cd_write_imm(struct krdma_cd_session *s,
			       union krdma_cd_arg *a, u32 *created)
{
	return krdma_cd_rdma(s, a, true, true);
}

/* FADD and CAS (@cas): the old value goes back in @old. */
static long krdma_cd_atomic(struct krdma_cd_session *s, union krdma_cd_arg *a,
			    bool cas)
{
	const char *cmd = cas ? "CAS" : "FADD";
	struct krdma_ioc_atomic *x = &a->atomic;
	struct krdma_token tok = {
		.addr = x->token.addr,
		.rkey = x->token.rkey,
		.length = x->token.length,
	};
	struct krdma_cd_obj *obj;
	long timeout;
	u64 old = 0;
	int ret;

	ret = krdma_abi_atomic(x, cmd, cas);
	if (ret)
		return ret;
	obj = krdma_cd_get(s, x->handle, KRDMA_IOC_TYPE_CONN, cmd);
	if (!obj)
		return -EBADF;
	timeout = krdma_cd_timeout(x->timeout_ms ?: KRDMA_CD_RW_TIMEOUT_MS);
	if (cas)
		ret = krdma_atomic_cas(obj->conn, &tok, x->offset,
				       x->compare_add, x->swap, &old, timeout);
	else
		ret = krdma_atomic_fadd(obj->conn, &tok, x->offset,
					x->compare_add, &old, timeout);
	if (ret == -EOPNOTSUPP)
		krdma_cd_warn("%s: %s has no atomics\n", cmd,
			      krdma_conn_device_name(obj->conn));
	if (!ret)
		x->old = old;
	krdma_cd_obj_put(obj);
	return ret;
}

static long krdma_cd_fadd(struct krdma_cd_session *s, union krdma_cd_arg *a,
			  u32 *created)
{
	return krdma_cd_atomic(s, a, false);
}

static long krdma_cd_cas(struct krdma_cd_session *s, union krdma_cd_arg *a,
			 u32 *created)
{
	return krdma_cd_atomic(s, a, true);
}

static u32 krdma_cd_state(enum krdma_conn_state st)
{
	switch (st) {
	case KRDMA_CONN_CONNECTING:	return KRDMA_IOC_STATE_CONNECTING;
	case KRDMA_CONN_CONNECTED:	return KRDMA_IOC_STATE_CONNECTED;
	case KRDMA_CONN_DISCONNECTED:	return KRDMA_IOC_STATE_DISCONNECTED;
	case KRDMA_CONN_ERROR:		return KRDMA_IOC_STATE_ERROR;
	case KRDMA_CONN_CLOSED:		return KRDMA_IOC_STATE_CLOSED;
	}
	return KRDMA_IOC_STATE_ERROR;
}

static void krdma_cd_query_conn(struct krdma_conn *conn,
				struct krdma_ioc_query *q)
{
	struct krdma_conn_info *i;

	/* About 400 bytes: not on the ioctl's stack. */
	i = kmalloc(sizeof(*i), GFP_KERNEL);
	if (!i) {
		q->state = KRDMA_IOC_STATE_ERROR;
		q->error = krdma_conn_error(conn);
		return;
	}
	krdma_conn_query(conn, i);
	q->state = krdma_cd_state(i->state);
	q->error = i->error;
	q->wc_status = i->wc_status;
	q->credits = i->credits;
	q->queue_depth = i->queue_depth;
	q->max_msg_size = i->max_msg_size;
	krdma_cd_addr_out(&i->local, &q->local);
	krdma_cd_addr_out(&i->peer, &q->peer);
	strscpy(q->name, i->name, sizeof(q->name));
	strscpy(q->device, i->device, sizeof(q->device));
	q->send_ops = i->send_ops;
	q->send_bytes = i->send_bytes;
	q->recv_ops = i->recv_ops;
	q->recv_bytes = i->recv_bytes;
	q->write_ops = i->write_ops;
	q->write_bytes = i->write_bytes;
	q->read_ops = i->read_ops;
	q->read_bytes = i->read_bytes;
	q->atomic_ops = i->atomic_ops;
	q->errors = i->errors;
	kfree(i);
}

static void krdma_cd_query_listener(struct krdma_listener *l,
				    struct krdma_ioc_query *q)
{
	struct krdma_listener_info i;

	krdma_listener_query(l, &i);
	q->state = i.error ? KRDMA_IOC_STATE_STOPPED : KRDMA_IOC_STATE_LISTENING;
	q->error = i.error;
	q->queue_depth = i.queue_depth;
	q->max_msg_size = i.max_msg_size;
	krdma_cd_addr_out(&i.local, &q->local);
	strscpy(q->name, i.name, sizeof(q->name));
}

static long krdma_cd_query(struct krdma_cd_session *s, union krdma_cd_arg *a,
			   u32 *created)
{
	struct krdma_ioc_query *q = &a->query;
	struct krdma_cd_obj *obj;
	u32 h = q->handle;
	int ret;

	ret = krdma_abi_query(q);
	if (ret)
		return ret;
	obj = krdma_cd_get(s, h, 0, "QUERY");
	if (!obj)
		return -EBADF;
	memset(q, 0, sizeof(*q));
	q->handle = h;
	q->type = obj->type;
	if (obj->type == KRDMA_IOC_TYPE_CONN)
		krdma_cd_query_conn(obj->conn, q);
	else if (obj->type == KRDMA_IOC_TYPE_LISTENER)
		krdma_cd_query_listener(obj->l, q);
	krdma_cd_obj_put(obj);
	return 0;
}

/* Indexed by _IOC_NR(). */
static const struct krdma_cd_cmd krdma_cd_cmds[] = {
	{ KRDMA_IOC_VERSION,	"VERSION",	krdma_cd_version },
	{ KRDMA_IOC_LISTEN,	"LISTEN",	krdma_cd_listen },
	{ KRDMA_IOC_ACCEPT,	"ACCEPT",	krdma_cd_accept },
	{ KRDMA_IOC_CONNECT,	"CONNECT",	krdma_cd_connect },
	{ KRDMA_IOC_CLOSE,	"CLOSE",	krdma_cd_close },
	{ KRDMA_IOC_SEND,	"SEND",		krdma_cd_send },
	{ KRDMA_IOC_RECV,	"RECV",		krdma_cd_recv },
	{ KRDMA_IOC_REG,	"REG",		krdma_cd_reg },
	{ KRDMA_IOC_UNREG,	"UNREG",	krdma_cd_unreg },
	{ KRDMA_IOC_REVOKE,	"REVOKE",	krdma_cd_revoke },
	{ KRDMA_IOC_WRITE,	"WRITE",	krdma_cd_write },
	{ KRDMA_IOC_READ,	"READ",		krdma_cd_read },
	{ KRDMA_IOC_QUERY,	"QUERY",	krdma_cd_query },
	{ KRDMA_IOC_FADD,	"FADD",		krdma_cd_fadd },
	{ KRDMA_IOC_CAS,	"CAS",		krdma_cd_cas },
	{ KRDMA_IOC_WRITE_IMM,	"WRITE_IMM",	krdma_cd_write_imm },
};

static long krdma_cd_ioctl(struct file *file, unsigned int cmd,
			   unsigned long arg)
{
	struct krdma_cd_session *s = file->private_data;
	void __user *uarg = (void __user *)arg;
	const struct krdma_cd_cmd *c;
	union krdma_cd_arg a;
	unsigned int nr = _IOC_NR(cmd);
	u32 created = 0;
	long ret;

	if (_IOC_TYPE(cmd) != KRDMA_IOC_MAGIC ||
	    nr >= ARRAY_SIZE(krdma_cd_cmds)) {
		krdma_cd_warn("unknown ioctl 0x%x\n", cmd);
		return -ENOTTY;
	}
	c = &krdma_cd_cmds[nr];
	if (cmd != c->cmd) {
		krdma_cd_warn("%s: argument of %u bytes (direction %u), ABI version %d has %u (direction %u)\n",
			      c->name, _IOC_SIZE(cmd), _IOC_DIR(cmd),
			      KRDMA_ABI_VERSION, _IOC_SIZE(c->cmd),
			      _IOC_DIR(c->cmd));
		return -EINVAL;
	}
	memset(&a, 0, sizeof(a));
	if ((_IOC_DIR(cmd) & _IOC_WRITE) &&
	    copy_from_user(&a, uarg, _IOC_SIZE(cmd))) {
		krdma_cd_warn("%s: bad argument pointer 0x%lx\n", c->name, arg);
		return -EFAULT;
	}
	ret = c->fn(s, &a, &created);
	if (ret || !(_IOC_DIR(cmd) & _IOC_READ))
		return ret;
	if (copy_to_user(uarg, &a, _IOC_SIZE(cmd))) {
		krdma_cd_warn("%s: bad argument pointer 0x%lx\n", c->name, arg);
		/* Nobody learnt the new handle: do not leave it behind. */
		if (created)
			krdma_cd_close_handle(s, created, 0, c->name);
		return -EFAULT;
	}
	return 0;
}

static __poll_t krdma_cd_poll(struct file *file, poll_table *wait)
{
	struct krdma_cd_session *s = file->private_data;
	struct krdma_cd_obj *obj;
	unsigned long h;
	__poll_t mask = 0;

	poll_wait(file, &s->wq, wait);
	xa_lock(&s->handles);
	xa_for_each(&s->handles, h, obj) {
		if (obj->type == KRDMA_IOC_TYPE_CONN) {
			if (krdma_recv_ready(obj->conn))
				mask |= EPOLLIN | EPOLLRDNORM;
			if (krdma_conn_error(obj->conn))
				mask |= EPOLLHUP;
		} else if (obj->type == KRDMA_IOC_TYPE_LISTENER) {
			if (krdma_accept_ready(obj->l))
				mask |= EPOLLIN | EPOLLRDNORM;
		}
	}
	xa_unlock(&s->handles);
	return mask;
}

static int krdma_cd_open(struct inode *inode, struct file *file)
{
	struct krdma_cd_session *s;

	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	xa_init_flags(&s->handles, XA_FLAGS_ALLOC1);
	init_waitqueue_head(&s->wq);
	file->private_data = s;
	return nonseekable_open(inode, file);
}

/* The last reference to the file: close everything the session owns. */
static int krdma_cd_release(struct inode *inode, struct file *file)
{
	struct krdma_cd_session *s = file->private_data;
	struct krdma_cd_obj *obj;
	unsigned long h;

	/* Stop every connection first: transfers in flight end now. */
	xa_for_each(&s->handles, h, obj)
		if (obj->type != KRDMA_IOC_TYPE_MR)
			krdma_cd_obj_shutdown(obj);
	xa_for_each(&s->handles, h, obj) {
		xa_erase(&s->handles, h);
		krdma_cd_obj_put(obj);
	}
	xa_destroy(&s->handles);
	kfree(s);
	return 0;
}

static const struct file_operations krdma_cd_fops = {
	.owner		= THIS_MODULE,
	.open		= krdma_cd_open,
	.release	= krdma_cd_release,
	.unlocked_ioctl	= krdma_cd_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.poll		= krdma_cd_poll,
};

static struct miscdevice krdma_miscdev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "krdma",
	.fops	= &krdma_cd_fops,
	.mode	= 0600,
};

int krdma_chardev_init(void)
{
	int ret;

	/* The ABI: no implicit padding, same layout for 32-bit callers. */
	BUILD_BUG_ON(sizeof(struct krdma_ioc_addr) != 24);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_token) != 16);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_version) != 40);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_listen) != 56);
	/* backlog and reserved32 were the first half of __u64 reserved[2]. */
	BUILD_BUG_ON(offsetof(struct krdma_ioc_listen, backlog) != 40);
	BUILD_BUG_ON(offsetof(struct krdma_ioc_listen, reserved) != 48);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_accept) != 32);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_connect) != 88);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_handle) != 16);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_msg) != 40);
	/* msg_flags and imm were __u64 reserved. */
	BUILD_BUG_ON(offsetof(struct krdma_ioc_msg, msg_flags) != 32);
	BUILD_BUG_ON(offsetof(struct krdma_ioc_msg, imm) != 36);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_reg) != 64);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_rdma) != 72);
	/* imm was __u32 reserved32. */
	BUILD_BUG_ON(offsetof(struct krdma_ioc_rdma, imm) != 52);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_atomic) != 80);
	BUILD_BUG_ON(offsetof(struct krdma_ioc_atomic, old) != 48);
	BUILD_BUG_ON(sizeof(struct krdma_ioc_query) != 288);
	BUILD_BUG_ON(KRDMA_IOC_ACCESS_REMOTE_READ != KRDMA_ACCESS_REMOTE_READ);
	BUILD_BUG_ON(KRDMA_IOC_ACCESS_REMOTE_WRITE !=
		     KRDMA_ACCESS_REMOTE_WRITE);
	BUILD_BUG_ON(KRDMA_IOC_ACCESS_REMOTE_ATOMIC !=
		     KRDMA_ACCESS_REMOTE_ATOMIC);
	BUILD_BUG_ON(KRDMA_IOC_MAX_MSG != KRDMA_MAX_MSG_SIZE);
	BUILD_BUG_ON(KRDMA_IOC_MAX_BACKLOG != KRDMA_MAX_BACKLOG);

	ret = misc_register(&krdma_miscdev);
	if (ret)
		pr_err("cannot register /dev/krdma: %d\n", ret);
	return ret;
}

void krdma_chardev_exit(void)
{
	/* Open files hold the module: no session is left by now. */
	misc_deregister(&krdma_miscdev);
}
