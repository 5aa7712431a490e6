// SPDX-License-Identifier: GPL-2.0
/*
 * DMA mappings of krdma's own memory, and a check of them that works on the
 * devices a lab has.
 *
 * rxe and siw have no DMA device (ib_uses_virt_dma()): the ib_dma_* calls
 * hand back kernel addresses and never reach the DMA API, so
 * CONFIG_DMA_API_DEBUG sees none of their mappings, and a mapping unmapped
 * with another size than it was made with goes unnoticed until krdma meets
 * a real HCA behind an IOMMU.  With the module parameter dma_check=1 (set
 * at load, for tests) krdma keeps a record of every mapping it makes, on any
 * device, and holds each unmap and sync against it as DMA_API_DEBUG would:
 * the same size (the same nents for a scatterlist) and direction, a sync
 * within the mapping, nothing mapped twice or unmapped that was not mapped,
 * and at unload no mapping left.  As DMA_API_DEBUG, it lets memory the
 * device only reads be mapped several times at once (DMA_TO_DEVICE: one
 * buffer sent by two sends in flight); on a device without DMA those
 * mappings share one address, and an unmap or sync is held to the one of
 * them it fits.  Each breach is one "krdma: DMA check:"
 * line naming the callers (the address hashed, as %p does); the test
 * suite's bug scan fails on it.
 *
 * Every mapping krdma makes goes through the helpers below.  They may be
 * called from any context a mapping may be made in (the MR pool maps from
 * a blk-mq queue_rq); the record is allocated GFP_ATOMIC, and one that
 * cannot be allocated only makes the check blind to that mapping.
 */
#include <linux/hashtable.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "krdma_dma.h"

bool krdma_dma_check;
module_param_named(dma_check, krdma_dma_check, bool, 0444);
MODULE_PARM_DESC(dma_check,
		 "Record every DMA mapping and check each unmap and sync against it, as CONFIG_DMA_API_DEBUG does for devices it sees (tests only; default off)");

struct krdma_dma_rec {
	struct hlist_node	node;
	const struct ib_device	*ibdev;
	u64			key;	/* DMA address, or the scatterlist's */
	u64			len;	/* bytes, or the nents mapped */
	enum dma_data_direction	dir;
	bool			sg;
	unsigned long		caller;
};

static DEFINE_HASHTABLE(krdma_dma_recs, 10);
static DEFINE_SPINLOCK(krdma_dma_lock);
/* Records that could not be allocated: an unknown unmap is no breach. */
static unsigned long krdma_dma_untracked;

static const char *const krdma_dma_dirs[] = {
	[DMA_BIDIRECTIONAL]	= "bidirectional",
	[DMA_TO_DEVICE]		= "to device",
	[DMA_FROM_DEVICE]	= "from device",
	[DMA_NONE]		= "none",
};

static const char *krdma_dma_dir(enum dma_data_direction dir)
{
	return (unsigned int)dir < ARRAY_SIZE(krdma_dma_dirs) ?
		krdma_dma_dirs[dir] : "?";
}

/*
 * The record of @key that an unmap (@sync false) or sync of @len in @dir
 * fits, else any record of @key, else NULL.  Under krdma_dma_lock.
 */
static struct krdma_dma_rec *krdma_dma_find(const struct ib_device *ibdev,
					    u64 key, bool sg, u64 len,
					    enum dma_data_direction dir,
					    bool sync)
{
	struct krdma_dma_rec *r, *any = NULL;

	/*
	 * A scatterlist holds its DMA addresses itself: mapped on two
	 * devices at once, it is one mapping too many, whichever device.
	 */
	hash_for_each_possible(krdma_dma_recs, r, node, key) {
		if (r->key != key || r->sg != sg || (!sg && r->ibdev != ibdev))
			continue;
		if (r->dir == dir && (sync ? len <= r->len : len == r->len))
			return r;
		if (!any)
			any = r;
	}
	return any;
}

static void krdma_dma_record(const struct ib_device *ibdev, u64 key, u64 len,
			     enum dma_data_direction dir, bool sg,
			     unsigned long caller)
{
	struct krdma_dma_rec *r, *old;
	unsigned long flags;

	r = kmalloc(sizeof(*r), GFP_ATOMIC | __GFP_NOWARN);
	spin_lock_irqsave(&krdma_dma_lock, flags);
	old = krdma_dma_find(ibdev, key, sg, len, dir, false);
	/* Read-only by the device: overlapping mappings are fine. */
	if (old && !sg && dir == DMA_TO_DEVICE && old->dir == DMA_TO_DEVICE)
		old = NULL;
	if (old) {
		/* The first stays: its unmap is the one expected. */
		pr_err_ratelimited("krdma: DMA check: %s: %s %p mapped again by %pS (first by %pS)\n",
				   dev_name(&ibdev->dev),
				   sg ? "scatterlist" : "address",
				   (void *)(uintptr_t)key, (void *)caller,
				   (void *)old->caller);
		kfree(r);
	} else if (r) {
		r->ibdev = ibdev;
		r->key = key;
		r->len = len;
		r->dir = dir;
		r->sg = sg;
		r->caller = caller;
		hash_add(krdma_dma_recs, &r->node, key);
	} else {
		krdma_dma_untracked++;
	}
	spin_unlock_irqrestore(&krdma_dma_lock, flags);
}

/* An unmap (@sync false) or a sync of @len from @key's start. */
static void krdma_dma_held(const struct ib_device *ibdev, u64 key, u64 len,
			   enum dma_data_direction dir, bool sg, bool sync,
			   unsigned long caller)
{
	const char *what = sg ? "scatterlist" : "address";
	struct krdma_dma_rec *r;
	unsigned long flags;

	spin_lock_irqsave(&krdma_dma_lock, flags);
	r = krdma_dma_find(ibdev, key, sg, len, dir, sync);
	if (!r) {
		if (!krdma_dma_untracked)
			pr_err_ratelimited("krdma: DMA check: %s: %s of %s %p that is not mapped, by %pS\n",
					   dev_name(&ibdev->dev),
					   sync ? "sync" : "unmap", what,
					   (void *)(uintptr_t)key, (void *)caller);
		goto out;
	}
	if (sync ? len > r->len : len != r->len)
		pr_err_ratelimited("krdma: DMA check: %s: %s of %s %p with %s %llu, mapped with %llu by %pS; %s by %pS\n",
				   dev_name(&ibdev->dev),
				   sync ? "sync" : "unmap", what,
				   (void *)(uintptr_t)key,
				   sg ? "nents" : "size", len, r->len,
				   (void *)r->caller,
				   sync ? "synced" : "unmapped",
				   (void *)caller);
	if (dir != r->dir)
		pr_err_ratelimited("krdma: DMA check: %s: %s of %s %p %s, mapped %s by %pS; %s by %pS\n",
				   dev_name(&ibdev->dev),
				   sync ? "sync" : "unmap", what,
				   (void *)(uintptr_t)key,
				   krdma_dma_dir(dir), krdma_dma_dir(r->dir),
				   (void *)r->caller,
				   sync ? "synced" : "unmapped",
				   (void *)caller);
	if (!sync) {
		hash_del(&r->node);
		kfree(r);
	}
out:
	spin_unlock_irqrestore(&krdma_dma_lock, flags);
}

int krdma_dma_map_single(struct ib_device *ibdev, void *buf, size_t len,
			 enum dma_data_direction dir, u64 *dma)
{
	u64 addr = ib_dma_map_single(ibdev, buf, len, dir);

	if (ib_dma_mapping_error(ibdev, addr))
		return -ENOMEM;
	if (krdma_dma_check)
		krdma_dma_record(ibdev, addr, len, dir, false, _RET_IP_);
	*dma = addr;
	return 0;
}

void krdma_dma_unmap_single(struct ib_device *ibdev, u64 dma, size_t len,
			    enum dma_data_direction dir)
{
	if (krdma_dma_check)
		krdma_dma_held(ibdev, dma, len, dir, false, false, _RET_IP_);
	ib_dma_unmap_single(ibdev, dma, len, dir);
}

void krdma_dma_sync_for_cpu(struct ib_device *ibdev, u64 dma, size_t len,
			    enum dma_data_direction dir)
{
	if (krdma_dma_check)
		krdma_dma_held(ibdev, dma, len, dir, false, true, _RET_IP_);
	ib_dma_sync_single_for_cpu(ibdev, dma, len, dir);
}

void krdma_dma_sync_for_device(struct ib_device *ibdev, u64 dma, size_t len,
			       enum dma_data_direction dir)
{
	if (krdma_dma_check)
		krdma_dma_held(ibdev, dma, len, dir, false, true, _RET_IP_);
	ib_dma_sync_single_for_device(ibdev, dma, len, dir);
}

int krdma_dma_map_sg(struct ib_device *ibdev, struct scatterlist *sg,
		     int nents, enum dma_data_direction dir)
{
	int mapped = ib_dma_map_sg(ibdev, sg, nents, dir);

	if (mapped && krdma_dma_check)
		krdma_dma_record(ibdev, (uintptr_t)sg, nents, dir, true,
				 _RET_IP_);
	return mapped;
}

void krdma_dma_unmap_sg(struct ib_device *ibdev, struct scatterlist *sg,
			int nents, enum dma_data_direction dir)
{
	if (krdma_dma_check)
		krdma_dma_held(ibdev, (uintptr_t)sg, nents, dir, true, false,
			       _RET_IP_);
	ib_dma_unmap_sg(ibdev, sg, nents, dir);
}

/*
 * At unload, after every device is gone: a record left is a mapping never
 * unmapped.  Say how many and name the first few makers, then forget them.
 */
void krdma_dma_check_exit(void)
{
	struct krdma_dma_rec *r;
	struct hlist_node *tmp;
	unsigned int bkt, left = 0;

	spin_lock_irq(&krdma_dma_lock);
	hash_for_each_safe(krdma_dma_recs, bkt, tmp, r, node) {
		if (left++ < 4)
			pr_err("krdma: DMA check: %s %p (%llu) mapped by %pS never unmapped\n",
			       r->sg ? "scatterlist" : "address",
			       (void *)(uintptr_t)r->key, r->len,
			       (void *)r->caller);
		hash_del(&r->node);
		kfree(r);
	}
	if (krdma_dma_untracked)
		pr_info("krdma: dma_check: %lu mappings were not recorded (no memory for their record)\n",
			krdma_dma_untracked);
	krdma_dma_untracked = 0;
	spin_unlock_irq(&krdma_dma_lock);
	if (left)
		pr_err("krdma: DMA check: %u mappings left at unload\n", left);
}
