/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma's tracepoints (events/krdma/ in tracefs): connection state
 * changes with the CM event being handled, message send and receive
 * completions, one-sided operations from start to completion, credit
 * stalls and registrations.  Work completion statuses are recorded by
 * name (ib_wc_status_msg()), CM events too (rdma_event_msg()).  No event
 * records an address: connections are named as in sysfs, registrations
 * by their connection, length and rights, and every byte of an event is
 * set (krdma_trace_clear()).
 *
 * krdma_main.c defines CREATE_TRACE_POINTS; the other files only call
 * trace_krdma_*().
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM krdma

#if !defined(KRDMA_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define KRDMA_TRACE_H

#include <linux/tracepoint.h>
#include <linux/string.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "krdma_state.h"

/* Room for a connection's name (struct krdma_conn.name) and for names. */
#define KRDMA_TRACE_NAME	48
#define KRDMA_TRACE_WORD	40

/*
 * Zero every byte of event @e after its common header, before its fields
 * are set: its strings are shorter than their arrays, some of its fields
 * leave holes, and the ring buffer hands an event its space as an earlier
 * one left it, which a raw reader (trace_pipe_raw, perf) would see.
 * Every event's first field is its connection's name.
 */
#define krdma_trace_clear(e)						\
	do {								\
		typeof(e) __krdma_e = (e);				\
		size_t __krdma_off = offsetof(typeof(*__krdma_e), name);	\
									\
		memset((char *)__krdma_e + __krdma_off, 0,		\
		       sizeof(*__krdma_e) - __krdma_off);		\
	} while (0)

/* One-sided operations, as krdma_rdma_start/krdma_rdma_done show them. */
#define KRDMA_TRACE_OP_WRITE		0
#define KRDMA_TRACE_OP_READ		1
#define KRDMA_TRACE_OP_FADD		2
#define KRDMA_TRACE_OP_CAS		3
#define KRDMA_TRACE_OP_WRITE_IMM	4

#define krdma_show_op(op)						\
	__print_symbolic(op,						\
			 { KRDMA_TRACE_OP_WRITE, "WRITE" },		\
			 { KRDMA_TRACE_OP_READ, "READ" },		\
			 { KRDMA_TRACE_OP_FADD, "FADD" },		\
			 { KRDMA_TRACE_OP_CAS, "CAS" },			\
			 { KRDMA_TRACE_OP_WRITE_IMM, "WRITE_IMM" })

TRACE_DEFINE_ENUM(KRDMA_CONN_CONNECTING);
TRACE_DEFINE_ENUM(KRDMA_CONN_CONNECTED);
TRACE_DEFINE_ENUM(KRDMA_CONN_DISCONNECTED);
TRACE_DEFINE_ENUM(KRDMA_CONN_ERROR);
TRACE_DEFINE_ENUM(KRDMA_CONN_CLOSED);

#define krdma_show_state(st)						\
	__print_symbolic(st,						\
			 { KRDMA_CONN_CONNECTING, "connecting" },	\
			 { KRDMA_CONN_CONNECTED, "connected" },		\
			 { KRDMA_CONN_DISCONNECTED, "disconnected" },	\
			 { KRDMA_CONN_ERROR, "error" },			\
			 { KRDMA_CONN_CLOSED, "closed" })

/* Remote rights of a registration (KRDMA_ACCESS_*). */
#define krdma_show_access(a)						\
	__print_flags(a, "",						\
		      { 0x1, "r" },					\
		      { 0x2, "w" },					\
		      { 0x4, "a" })

/* A CM event for a connection or a listener, before it is handled. */
TRACE_EVENT(krdma_cm_event,
	    TP_PROTO(const char *name, int event, int status),
	    TP_ARGS(name, event, status),
	    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
			     __array(char, event_name, KRDMA_TRACE_WORD)
			     __field(int, event)
			     __field(int, status)),
	    TP_fast_assign(krdma_trace_clear(__entry);
			   strscpy(__entry->name, name, KRDMA_TRACE_NAME);
			   strscpy(__entry->event_name, rdma_event_msg(event),
				   KRDMA_TRACE_WORD);
			   __entry->event = event;
			   __entry->status = status;),
	    TP_printk("conn=%s event=%s (%d) status=%d", __entry->name,
		      __entry->event_name, __entry->event, __entry->status)
);

/*
 * A connection's state changed; @cm_event is the CM event being handled
 * then, or -1 (a completion, a local close or an error).
 */
TRACE_EVENT(krdma_conn_state,
	    TP_PROTO(const char *name, int old, int new, int cm_event),
	    TP_ARGS(name, old, new, cm_event),
	    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
			     __array(char, cm_event, KRDMA_TRACE_WORD)
			     __field(int, old_state)
			     __field(int, new_state)),
	    TP_fast_assign(krdma_trace_clear(__entry);
			   strscpy(__entry->name, name, KRDMA_TRACE_NAME);
			   strscpy(__entry->cm_event, cm_event < 0 ? "none" :
				   rdma_event_msg(cm_event), KRDMA_TRACE_WORD);
			   __entry->old_state = old;
			   __entry->new_state = new;),
	    TP_printk("conn=%s %s -> %s cm_event=%s", __entry->name,
		      krdma_show_state(__entry->old_state),
		      krdma_show_state(__entry->new_state), __entry->cm_event)
);

/* A message's send or receive completed (@len: its payload, 0 if failed). */
DECLARE_EVENT_CLASS(krdma_msg_class,
		    TP_PROTO(const char *name, u32 len, int status),
		    TP_ARGS(name, len, status),
		    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
				     __array(char, status_name, KRDMA_TRACE_WORD)
				     __field(u32, len)
				     __field(int, status)),
		    TP_fast_assign(krdma_trace_clear(__entry);
				   strscpy(__entry->name, name,
					   KRDMA_TRACE_NAME);
				   strscpy(__entry->status_name,
					   ib_wc_status_msg(status),
					   KRDMA_TRACE_WORD);
				   __entry->len = len;
				   __entry->status = status;),
		    TP_printk("conn=%s len=%u status=%s (%d)", __entry->name,
			      __entry->len, __entry->status_name,
			      __entry->status)
);

DEFINE_EVENT(krdma_msg_class, krdma_send_done,
	     TP_PROTO(const char *name, u32 len, int status),
	     TP_ARGS(name, len, status));

DEFINE_EVENT(krdma_msg_class, krdma_recv_done,
	     TP_PROTO(const char *name, u32 len, int status),
	     TP_ARGS(name, len, status));

/* A one-sided operation (KRDMA_TRACE_OP_*) of @len bytes is posted. */
TRACE_EVENT(krdma_rdma_start,
	    TP_PROTO(const char *name, int op, u64 len),
	    TP_ARGS(name, op, len),
	    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
			     __field(u64, len)
			     __field(int, op)),
	    TP_fast_assign(krdma_trace_clear(__entry);
			   strscpy(__entry->name, name, KRDMA_TRACE_NAME);
			   __entry->len = len;
			   __entry->op = op;),
	    TP_printk("conn=%s op=%s len=%llu", __entry->name,
		      krdma_show_op(__entry->op), __entry->len)
);

/* ... and completed, with its (last) work completion's status. */
TRACE_EVENT(krdma_rdma_done,
	    TP_PROTO(const char *name, int op, u64 len, int status),
	    TP_ARGS(name, op, len, status),
	    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
			     __array(char, status_name, KRDMA_TRACE_WORD)
			     __field(u64, len)
			     __field(int, op)
			     __field(int, status)),
	    TP_fast_assign(krdma_trace_clear(__entry);
			   strscpy(__entry->name, name, KRDMA_TRACE_NAME);
			   strscpy(__entry->status_name,
				   ib_wc_status_msg(status), KRDMA_TRACE_WORD);
			   __entry->len = len;
			   __entry->op = op;
			   __entry->status = status;),
	    TP_printk("conn=%s op=%s len=%llu status=%s (%d)", __entry->name,
		      krdma_show_op(__entry->op), __entry->len,
		      __entry->status_name, __entry->status)
);

/* A sender waits: no credit from the peer, or no free send buffer. */
TRACE_EVENT(krdma_credit_stall,
	    TP_PROTO(const char *name, u32 credits, u32 depth, bool tx_free),
	    TP_ARGS(name, credits, depth, tx_free),
	    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
			     __field(u32, credits)
			     __field(u32, depth)
			     __field(u32, tx_free)),
	    TP_fast_assign(krdma_trace_clear(__entry);
			   strscpy(__entry->name, name, KRDMA_TRACE_NAME);
			   __entry->credits = credits;
			   __entry->depth = depth;
			   __entry->tx_free = tx_free;),
	    TP_printk("conn=%s credits=%u depth=%u tx_buffer_free=%d",
		      __entry->name, __entry->credits, __entry->depth,
		      __entry->tx_free)
);

/* A registration for the peer of a connection, and its release. */
DECLARE_EVENT_CLASS(krdma_mr_class,
		    TP_PROTO(const char *name, u64 len, int access),
		    TP_ARGS(name, len, access),
		    TP_STRUCT__entry(__array(char, name, KRDMA_TRACE_NAME)
				     __field(u64, len)
				     __field(int, access)),
		    TP_fast_assign(krdma_trace_clear(__entry);
				   strscpy(__entry->name, name,
					   KRDMA_TRACE_NAME);
				   __entry->len = len;
				   __entry->access = access;),
		    TP_printk("conn=%s len=%llu access=%s", __entry->name,
			      __entry->len, krdma_show_access(__entry->access))
);

DEFINE_EVENT(krdma_mr_class, krdma_mr_reg,
	     TP_PROTO(const char *name, u64 len, int access),
	     TP_ARGS(name, len, access));

DEFINE_EVENT(krdma_mr_class, krdma_mr_dereg,
	     TP_PROTO(const char *name, u64 len, int access),
	     TP_ARGS(name, len, access));

#endif /* KRDMA_TRACE_H */

/* This part must be outside the include guard. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE krdma_trace
#include <trace/define_trace.h>
