// SPDX-License-Identifier: GPL-2.0
/*
 * Splitting a one-sided transfer into chunks.
 *
 * A transfer is seen as a run of pieces, each inside one page.  A chunk
 * holds at most chunk_pages pieces, so that it fits one fast-registration
 * MR when the device needs one (iWARP RDMA READ), and a bounded number of
 * work requests otherwise.  When split_gaps is set, a chunk also ends where
 * the pieces are not page-contiguous (an MR cannot map a gap).
 */
#include <linux/errno.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>
#include <linux/slab.h>

#include "krdma_plan.h"

struct krdma_piece_iter {
	struct scatterlist	*sg;
	int			left;	/* entries not yet entered */
	struct page		*page;
	u32			off;	/* in the current entry, from its page */
	u32			rem;	/* bytes left in the current entry */
};

static void krdma_iter_init(struct krdma_piece_iter *it,
			    struct scatterlist *sgl, int nents)
{
	it->sg = sgl;
	it->left = nents;
	it->rem = 0;
}

/* Next piece (at most to the end of its page), or false at the end. */
static bool krdma_iter_next(struct krdma_piece_iter *it, u64 maxlen,
			    struct page **page, u32 *off, u32 *len)
{
	while (!it->rem) {
		if (!it->sg || it->left <= 0)
			return false;
		it->page = nth_page(sg_page(it->sg), it->sg->offset >> PAGE_SHIFT);
		it->off = it->sg->offset & ~PAGE_MASK;
		it->rem = it->sg->length;
		it->left--;
		it->sg = it->left ? sg_next(it->sg) : NULL;
	}
	*page = it->page;
	*off = it->off;
	*len = min_t(u64, min_t(u32, it->rem, PAGE_SIZE - it->off), maxlen);
	it->rem -= *len;
	it->off += *len;
	if (it->off == PAGE_SIZE) {
		it->page = nth_page(it->page, 1);
		it->off = 0;
	}
	return true;
}

/* Total bytes of a scatterlist; -EINVAL for an empty or overlong one. */
int krdma_sg_len(struct scatterlist *sgl, int nents, u64 *len)
{
	struct scatterlist *sg;
	u64 total = 0;
	int i;

	if (!sgl || nents <= 0)
		return -EINVAL;
	for_each_sg(sgl, sg, nents, i) {
		if (!sg)
			return -EINVAL;
		total += sg->length;
	}
	*len = total;
	return 0;
}

static int krdma_skip(struct krdma_piece_iter *it, u64 skip)
{
	struct page *page;
	u32 off, len;

	while (skip) {
		if (!krdma_iter_next(it, skip, &page, &off, &len))
			return -EINVAL;
		skip -= len;
	}
	return 0;
}

/*
 * Plan the chunks of the @len bytes that start @skip bytes into @sgl.
 * Returns the number of chunks (filling @plan), -E2BIG if more than
 * @max_chunks are needed, -EINVAL if the scatterlist is shorter than
 * @skip + @len.
 */
int krdma_rw_plan(struct scatterlist *sgl, int nents, u64 skip, u64 len,
		  u32 chunk_pages, bool split_gaps,
		  struct krdma_chunk_plan *plan, int max_chunks)
{
	struct krdma_piece_iter it;
	struct page *page;
	u32 off, plen;
	bool prev_ends_page = true;
	int n = -1;

	if (!len || !chunk_pages)
		return -EINVAL;
	krdma_iter_init(&it, sgl, nents);
	if (krdma_skip(&it, skip))
		return -EINVAL;
	while (len) {
		if (!krdma_iter_next(&it, len, &page, &off, &plen))
			return -EINVAL;
		if (n < 0 || plan[n].pieces == chunk_pages ||
		    (split_gaps && (off || !prev_ends_page))) {
			if (++n == max_chunks)
				return -E2BIG;
			plan[n].pieces = 0;
			plan[n].bytes = 0;
		}
		plan[n].pieces++;
		plan[n].bytes += plen;
		prev_ends_page = off + plen == PAGE_SIZE;
		len -= plen;
	}
	return n + 1;
}

/* Build one sg_table per planned chunk (pieces as entries). */
int krdma_rw_fill(struct scatterlist *sgl, int nents, u64 skip, u64 len,
		  const struct krdma_chunk_plan *plan, int nchunks,
		  struct sg_table *tables, gfp_t gfp)
{
	struct krdma_piece_iter it;
	struct scatterlist *sg;
	struct page *page;
	u32 off, plen, p;
	int c, ret;

	krdma_iter_init(&it, sgl, nents);
	if (krdma_skip(&it, skip))
		return -EINVAL;
	for (c = 0; c < nchunks; c++) {
		ret = sg_alloc_table(&tables[c], plan[c].pieces, gfp);
		if (ret)
			goto fail;
		sg = tables[c].sgl;
		for (p = 0; p < plan[c].pieces; p++) {
			if (!krdma_iter_next(&it, len, &page, &off, &plen)) {
				c++;
				ret = -EINVAL;
				goto fail;
			}
			sg_set_page(sg, page, plen, off);
			sg = sg_next(sg);
			len -= plen;
		}
	}
	return 0;
fail:
	while (c--)
		sg_free_table(&tables[c]);
	return ret;
}

/**
 * krdma_buf_to_sgt - describe a kernel buffer as a scatterlist
 * @buf: the buffer: kmalloc'ed, vmalloc'ed (kvmalloc) or in the linear map
 * @len: its length in bytes
 * @sgt: filled in, one entry per piece of a page; free it with
 *	sg_free_table()
 * @gfp: for the table
 *
 * For krdma_write(), krdma_read() and the other calls that take a
 * scatterlist, when the data is in a kernel buffer.  The buffer must stay
 * allocated until the transfer is done; a vmalloc'ed one is never
 * contiguous in memory, so expect one entry per page.
 *
 * Context: any context @gfp allows.
 * Return: 0, -EINVAL for a NULL @buf or an empty @len, or -ENOMEM.
 */
int krdma_buf_to_sgt(void *buf, size_t len, struct sg_table *sgt, gfp_t gfp)
{
	unsigned long start = (unsigned long)buf;
	u32 npages = (offset_in_page(start) + len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	bool vm = is_vmalloc_addr(buf);
	struct scatterlist *sg;
	int ret;
	u32 i;

	if (!buf || !len)
		return -EINVAL;
	ret = sg_alloc_table(sgt, npages, gfp);
	if (ret)
		return ret;
	for_each_sg(sgt->sgl, sg, npages, i) {
		u32 off = offset_in_page(start);
		u32 plen = min_t(size_t, PAGE_SIZE - off, len);
		struct page *page = vm ? vmalloc_to_page((void *)start) :
					 virt_to_page((void *)start);

		sg_set_page(sg, page, plen, off);
		start += plen;
		len -= plen;
	}
	return 0;
}
EXPORT_SYMBOL_GPL(krdma_buf_to_sgt);
