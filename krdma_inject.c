// SPDX-License-Identifier: GPL-2.0
/*
 * krdma: work completion fault injection, per connection.
 *
 * rxe and siw cannot fail a work completion with a chosen status, so a
 * consumer's recovery from a remote access error, a retry or RNR retry
 * exceeded, a local protection error... cannot be tested on them.  krdma
 * can: conns/NAME/inject makes the Nth (or a random share of the)
 * successful completions of chosen kinds on one connection fail with a
 * chosen status.  The connection then goes the way a device's report
 * would take it: the completion's handler sees the status (its one dmesg
 * line names it, its operation fails with krdma_wc_errno()'s errno, the
 * connection records it as its error and wc_status), every later
 * completion of the connection is flushed, as on a QP in ERROR, and the
 * QP is moved to ERROR and drained in a work item, so the peer is told.
 *
 * The grammar of the file (one line):
 *	off
 *	STATUS [op=KIND[,KIND...]] [nth=N | percent=P]
 *	drop_hb
 * STATUS: the IB_WC_ name in lower case without "ib_wc_" (rem_access_err,
 * retry_exc_err, ...) or its number; KIND: send, recv, rdma, atomic,
 * reg, hb, any (default any); nth=N: the Nth completion of those kinds
 * from now (default 1); percent=P: each with a chance of P in 100.
 * drop_hb: every heartbeat received from now on is ignored, as if lost
 * (not a sign of life, not answered): after the agreed misses the
 * connection fails with -ETIMEDOUT, as for a peer gone silent.
 * Reading it says "off", or the injection and "armed" or "fired".
 */

#define pr_fmt(fmt) "krdma: " fmt

#include <linux/kernel.h>
#include <linux/random.h>
#include <linux/string.h>
#include <linux/sysfs.h>

#include "krdma_core.h"
#include "krdma_inject.h"

static const char * const krdma_inj_status[] = {
	[IB_WC_LOC_LEN_ERR]		= "loc_len_err",
	[IB_WC_LOC_QP_OP_ERR]		= "loc_qp_op_err",
	[IB_WC_LOC_EEC_OP_ERR]		= "loc_eec_op_err",
	[IB_WC_LOC_PROT_ERR]		= "loc_prot_err",
	[IB_WC_WR_FLUSH_ERR]		= "wr_flush_err",
	[IB_WC_MW_BIND_ERR]		= "mw_bind_err",
	[IB_WC_BAD_RESP_ERR]		= "bad_resp_err",
	[IB_WC_LOC_ACCESS_ERR]		= "loc_access_err",
	[IB_WC_REM_INV_REQ_ERR]		= "rem_inv_req_err",
	[IB_WC_REM_ACCESS_ERR]		= "rem_access_err",
	[IB_WC_REM_OP_ERR]		= "rem_op_err",
	[IB_WC_RETRY_EXC_ERR]		= "retry_exc_err",
	[IB_WC_RNR_RETRY_EXC_ERR]	= "rnr_retry_exc_err",
	[IB_WC_LOC_RDD_VIOL_ERR]	= "loc_rdd_viol_err",
	[IB_WC_REM_INV_RD_REQ_ERR]	= "rem_inv_rd_req_err",
	[IB_WC_REM_ABORT_ERR]		= "rem_abort_err",
	[IB_WC_INV_EECN_ERR]		= "inv_eecn_err",
	[IB_WC_INV_EEC_STATE_ERR]	= "inv_eec_state_err",
	[IB_WC_FATAL_ERR]		= "fatal_err",
	[IB_WC_RESP_TIMEOUT_ERR]	= "resp_timeout_err",
	[IB_WC_GENERAL_ERR]		= "general_err",
};

static const char * const krdma_inj_kinds[] = {
	"send", "recv", "rdma", "atomic", "reg", "hb",
};

void krdma_inject_init(struct krdma_inject *inj)
{
	spin_lock_init(&inj->lock);
	inj->state = KRDMA_INJ_OFF;
}

void __krdma_inject_wc(struct krdma_conn *conn, struct krdma_inject *inj,
		       struct ib_wc *wc, unsigned int op)
{
	enum ib_wc_status st = IB_WC_SUCCESS;
	unsigned long flags;
	bool hit = false;

	if (wc->status != IB_WC_SUCCESS)
		return;
	spin_lock_irqsave(&inj->lock, flags);
	if (inj->state == KRDMA_INJ_FIRED) {
		wc->status = IB_WC_WR_FLUSH_ERR;
	} else if (inj->state == KRDMA_INJ_ARMED && (inj->ops & op)) {
		if (inj->percent)
			hit = get_random_u32() % 100 < inj->percent;
		else
			hit = !--inj->nth;
		if (hit) {
			inj->state = KRDMA_INJ_FIRED;
			st = inj->status;
			wc->status = st;
		}
	}
	spin_unlock_irqrestore(&inj->lock, flags);
	if (!hit)
		return;
	pr_info_ratelimited("%s: injected: a %s completion fails with %s\n",
			    conn->name, krdma_inj_kinds[__ffs(op)],
			    ib_wc_status_msg(st));
	/*
	 * The cause first, so that the handler's flush (a placeholder) or
	 * the teardown cannot take its place; then the QP goes to ERROR.
	 */
	if (st != IB_WC_WR_FLUSH_ERR)
		krdma_conn_set_error_wc(conn, krdma_wc_errno(st), st);
	krdma_conn_fail(conn, krdma_wc_errno(st));
}

ssize_t krdma_inject_show(struct krdma_inject *inj, char *buf)
{
	struct krdma_inject v;
	unsigned long flags;
	ssize_t n;
	int i;

	spin_lock_irqsave(&inj->lock, flags);
	v = *inj;
	spin_unlock_irqrestore(&inj->lock, flags);
	if (v.state == KRDMA_INJ_OFF)
		return sysfs_emit(buf, v.drop_hb ? "drop_hb\n" : "off\n");
	n = sysfs_emit(buf, "%s op=", krdma_inj_status[v.status]);
	if (v.ops == KRDMA_INJ_ANY) {
		n += sysfs_emit_at(buf, n, "any");
	} else {
		for (i = 0; i < ARRAY_SIZE(krdma_inj_kinds); i++)
			if (v.ops & BIT(i))
				n += sysfs_emit_at(buf, n, "%s%s",
						   n && buf[n - 1] != '=' ?
						   "," : "", krdma_inj_kinds[i]);
	}
	if (v.percent)
		n += sysfs_emit_at(buf, n, " percent=%u", v.percent);
	else
		n += sysfs_emit_at(buf, n, " nth=%u", v.nth);
	n += sysfs_emit_at(buf, n, " %s\n",
			   v.state == KRDMA_INJ_FIRED ? "fired" : "armed");
	return n;
}

static int krdma_inj_parse_status(const char *w, enum ib_wc_status *st)
{
	unsigned int v;
	int i;

	if (!kstrtouint(w, 0, &v)) {
		if (v && v < ARRAY_SIZE(krdma_inj_status) &&
		    krdma_inj_status[v]) {
			*st = v;
			return 0;
		}
		return -EINVAL;
	}
	for (i = 1; i < ARRAY_SIZE(krdma_inj_status); i++) {
		if (krdma_inj_status[i] && !strcmp(w, krdma_inj_status[i])) {
			*st = i;
			return 0;
		}
	}
	return -EINVAL;
}

static int krdma_inj_parse_kinds(char *s, u8 *ops)
{
	char *k;
	int i;

	*ops = 0;
	while ((k = strsep(&s, ","))) {
		if (!strcmp(k, "any")) {
			*ops |= KRDMA_INJ_ANY;
			continue;
		}
		i = match_string(krdma_inj_kinds, ARRAY_SIZE(krdma_inj_kinds),
				 k);
		if (i < 0)
			return -EINVAL;
		*ops |= BIT(i);
	}
	return *ops ? 0 : -EINVAL;
}

/*
 * A write of conns/NAME/inject.  Process context.  Return: 0, -EINVAL
 * with one rate-limited line naming the bad word, or -EBUSY once the
 * injection fired (the connection has failed; it stays flushed).
 */
int krdma_inject_store(struct krdma_conn *conn, struct krdma_inject *inj,
		       const char *buf)
{
	struct krdma_inject v = { .ops = KRDMA_INJ_ANY, .nth = 1 };
	char line[128], *s = line, *w, *bad = NULL;
	unsigned long flags;
	bool first = true;

	if (strscpy(line, buf, sizeof(line)) < 0) {
		pr_warn_ratelimited("%s: inject: line too long\n", conn->name);
		return -EINVAL;
	}
	strim(line);
	if (!strcmp(line, "off")) {
		v.state = KRDMA_INJ_OFF;
		goto set;
	}
	if (!strcmp(line, "drop_hb")) {
		v.state = KRDMA_INJ_OFF;
		v.drop_hb = true;
		goto set;
	}
	v.state = KRDMA_INJ_ARMED;
	while ((w = strsep(&s, " \t"))) {
		if (!*w)
			continue;
		if (first) {
			first = false;
			if (krdma_inj_parse_status(w, &v.status))
				bad = w;
		} else if (!strncmp(w, "op=", 3)) {
			if (krdma_inj_parse_kinds(w + 3, &v.ops))
				bad = w;
		} else if (!strncmp(w, "nth=", 4)) {
			if (kstrtou32(w + 4, 10, &v.nth) || !v.nth)
				bad = w;
		} else if (!strncmp(w, "percent=", 8)) {
			if (kstrtou32(w + 8, 10, &v.percent) || !v.percent ||
			    v.percent > 100)
				bad = w;
		} else {
			bad = w;
		}
		if (bad)
			break;
	}
	if (first || bad) {
		pr_warn_ratelimited("%s: inject: %s%s%s\n", conn->name,
				    bad ? "bad word '" : "no status given",
				    bad ? bad : "", bad ? "'" : "");
		return -EINVAL;
	}
set:
	spin_lock_irqsave(&inj->lock, flags);
	if (inj->state == KRDMA_INJ_FIRED) {
		/* Its completions must stay flushed: the QP is failing. */
		spin_unlock_irqrestore(&inj->lock, flags);
		pr_warn_ratelimited("%s: inject: it fired; the connection has failed\n",
				    conn->name);
		return -EBUSY;
	}
	inj->state = v.state;
	inj->status = v.status;
	inj->ops = v.ops;
	inj->nth = v.nth;
	inj->percent = v.percent;
	WRITE_ONCE(inj->drop_hb, v.drop_hb);
	spin_unlock_irqrestore(&inj->lock, flags);
	return 0;
}
