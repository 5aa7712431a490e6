/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma-blk: the block layer differences between Debian's 6.1 and 6.12
 * kernels, in one place.
 *  - opening a block device: blkdev_get_by_path() and FMODE_* (6.1) against
 *    bdev_file_open_by_path() and BLK_OPEN_* (6.9+);
 *  - queue limits: blk_queue_*() setters after blk_mq_alloc_disk(set, data)
 *    (6.1) against a struct queue_limits given to
 *    blk_mq_alloc_disk(set, lim, data) (6.11+), write cache and FUA as
 *    BLK_FEAT_* features.
 * krdma supports Debian's 6.1 and 6.12 lines only, so one test tells them
 * apart: BLK_FEAT_WRITE_CACHE (a macro since 6.11) stands for both changes
 * (checkpatch rejects LINUX_VERSION_CODE).
 */
#ifndef _KRDMA_BLK_COMPAT_H
#define _KRDMA_BLK_COMPAT_H

#include <linux/bio.h>
#include <linux/blkdev.h>
#include <linux/blk-mq.h>
#include <linux/fs.h>
#include <linux/file.h>

#ifdef BLK_FEAT_WRITE_CACHE
#define KRDMA_BLK_NEW_API	1	/* 6.12 */
#else
#define KRDMA_BLK_NEW_API	0	/* 6.1 */
#endif

/*
 * Poll queues (map poll_queues=N): the smallest request that takes them.
 * 6.1 marks every polled bio REQ_NOWAIT and ends a REQ_NOWAIT bio that
 * needs a split with BLK_STS_AGAIN, which io_uring's worker retries for
 * ever: fio's 1 MiB polled writes stalled in iou-wrk with nothing in
 * flight while a request was 512 KiB.  A polled bio is at most
 * BIO_MAX_VECS pages (6.1 polls only an I/O that fits one bio), so on 6.1
 * a map takes poll queues when a request holds 1 MiB: over rxe (MRs of
 * 512 pages), not siw (256, one of them for an unaligned start), where the
 * map fails with -EOPNOTSUPP.  6.12 splits polled bios.
 */
#define KRDMA_BLK_POLL_MIN_IO	(KRDMA_BLK_NEW_API ? 0 : \
				 BIO_MAX_VECS * PAGE_SIZE)
#define KRDMA_BLK_POLL_REFUSED	\
	"poll_queues= (this kernel needs 1 MiB requests; the device's MRs map less)"

/* An open backing device. */
struct krdma_blk_bdev {
#if KRDMA_BLK_NEW_API
	struct file		*file;
#else
	fmode_t			mode;
#endif
	struct block_device	*bdev;
};

/* Open @path exclusively for @holder; read-only if @ro.  0 or an errno. */
static inline int krdma_blk_bdev_open(struct krdma_blk_bdev *b,
				      const char *path, bool ro, void *holder)
{
#if KRDMA_BLK_NEW_API
	blk_mode_t mode = BLK_OPEN_READ | (ro ? 0 : BLK_OPEN_WRITE);
	struct file *f;

	f = bdev_file_open_by_path(path, mode, holder, NULL);
	if (IS_ERR(f))
		return PTR_ERR(f);
	b->file = f;
	b->bdev = file_bdev(f);
#else
	struct block_device *bdev;

	b->mode = FMODE_READ | FMODE_EXCL | (ro ? 0 : FMODE_WRITE);
	bdev = blkdev_get_by_path(path, b->mode, holder);
	if (IS_ERR(bdev))
		return PTR_ERR(bdev);
	b->bdev = bdev;
#endif
	return 0;
}

static inline void krdma_blk_bdev_close(struct krdma_blk_bdev *b)
{
#if KRDMA_BLK_NEW_API
	bdev_fput(b->file);
	b->file = NULL;
#else
	blkdev_put(b->bdev, b->mode);
#endif
	b->bdev = NULL;
}

/* The limits a krdma-blk disk is made with. */
struct krdma_blk_limits {
	u32	lbs;		/* logical block size, bytes */
	u32	max_sectors;	/* per READ/WRITE */
	u16	max_segments;
	u32	max_discard;	/* sectors; 0: no discard */
	u32	max_write_zeroes;	/* sectors; 0: none */
};

static inline struct gendisk *
krdma_blk_alloc_disk(struct blk_mq_tag_set *set,
		     const struct krdma_blk_limits *l, void *data)
{
#if KRDMA_BLK_NEW_API
	struct queue_limits lim = {
		.logical_block_size	= l->lbs,
		.physical_block_size	= l->lbs,
		.io_min			= l->lbs,
		.max_hw_sectors		= l->max_sectors,
		.max_segments		= l->max_segments,
		.virt_boundary_mask	= PAGE_SIZE - 1,
		.max_hw_discard_sectors	= l->max_discard,
		.discard_granularity	= l->max_discard ? l->lbs : 0,
		.max_write_zeroes_sectors = l->max_write_zeroes,
		.features		= BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA,
	};

	return blk_mq_alloc_disk(set, &lim, data);
#else
	struct request_queue *q;
	struct gendisk *disk;

	disk = blk_mq_alloc_disk(set, data);
	if (IS_ERR(disk))
		return disk;
	q = disk->queue;
	blk_queue_logical_block_size(q, l->lbs);
	blk_queue_physical_block_size(q, l->lbs);
	blk_queue_io_min(q, l->lbs);
	blk_queue_max_hw_sectors(q, l->max_sectors);
	blk_queue_max_segments(q, l->max_segments);
	blk_queue_virt_boundary(q, PAGE_SIZE - 1);
	if (l->max_discard) {
		blk_queue_max_discard_sectors(q, l->max_discard);
		q->limits.discard_granularity = l->lbs;
	}
	blk_queue_max_write_zeroes_sectors(q, l->max_write_zeroes);
	blk_queue_write_cache(q, true, true);
	return disk;
#endif
}

#endif /* _KRDMA_BLK_COMPAT_H */
