/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Splitting a one-sided transfer into rdma_rw chunks.  Pure functions over
 * scatterlists, so that KUnit can test them without a device.
 */
#ifndef KRDMA_PLAN_H
#define KRDMA_PLAN_H

#include <linux/scatterlist.h>
#include <krdma.h>	/* krdma_buf_to_sgt() */

struct krdma_chunk_plan {
	u32	pieces;		/* scatterlist entries, each within one page */
	u32	bytes;
};

int krdma_sg_len(struct scatterlist *sgl, int nents, u64 *len);
int krdma_rw_plan(struct scatterlist *sgl, int nents, u64 skip, u64 len,
		  u32 chunk_pages, bool split_gaps,
		  struct krdma_chunk_plan *plan, int max_chunks);
int krdma_rw_fill(struct scatterlist *sgl, int nents, u64 skip, u64 len,
		  const struct krdma_chunk_plan *plan, int nchunks,
		  struct sg_table *tables, gfp_t gfp);

#endif /* KRDMA_PLAN_H */
