/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control file (krdma_ctl.c) and what it drives, the self-test
 * (krdma_selftest.c) and the bench (krdma_bench.c): consumers of krdma, as
 * rnbd is of rtrs.  krdma keeps none of their state and calls none of
 * their functions; they find theirs through krdma_conn_priv().
 */
#ifndef KRDMA_CTL_H
#define KRDMA_CTL_H

#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/workqueue.h>

struct krdma_conn;
struct krdma_selftest;
struct krdma_bench;
struct task_struct;

/**
 * struct krdma_ctl_conn - a connection the control file owns
 * @ref: the owner's reference (dropped when the control file closed the
 *	connection), and one for each lookup, queued self-test, bench or
 *	reap in progress
 * @conn: the connection; krdma_conn_priv() of it is this object, and a
 *	reference of this object's keeps it readable after krdma_close()
 * @list: on the control file's registry (krdma_ctl_conns, krdma_ctl_lock),
 *	where "disconnect", "test" and "bench" find it by name
 * @closing: a "disconnect", the reap or unload owns the close
 *	(krdma_ctl_lock); of concurrent closers, one gets it
 * @files: the test_* and bench_* files are in the connection's directory
 * @reap_work: closes a passive connection whose peer left
 * @svc_lock: @svc and @svc_closed; held while a self-test or bench starts
 * @svc: the self-test service thread
 * @svc_closed: the thread was stopped: it never starts again
 * @st: the self-test's state (krdma_selftest.c), made with the thread
 * @bench: the bench's (krdma_bench.c), made by the first bench
 *
 * Freed with the last reference, after the control file closed @conn:
 * by then the thread is stopped, the self-test and bench work flushed and
 * the files removed, so nothing reaches it any more.
 */
struct krdma_ctl_conn {
	struct kref		ref;
	struct krdma_conn	*conn;
	struct list_head	list;
	bool			closing;
	bool			files;
	struct work_struct	reap_work;
	struct mutex		svc_lock;	/* svc, svc_closed */
	struct task_struct	*svc;
	bool			svc_closed;
	struct krdma_selftest	*st;
	struct krdma_bench	*bench;
};

void krdma_ctl_get(struct krdma_ctl_conn *ctl);
void krdma_ctl_put(struct krdma_ctl_conn *ctl);

int krdma_ctl_init(void);
void krdma_ctl_stop(void);
void krdma_ctl_exit(void);

#endif /* KRDMA_CTL_H */
