/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every DMA mapping krdma makes, and the dma_check record of them
 * (krdma_dma.c).  Process or softirq context; none of them sleeps.
 */
#ifndef KRDMA_DMA_H
#define KRDMA_DMA_H

#include <linux/scatterlist.h>
#include <rdma/ib_verbs.h>

extern bool krdma_dma_check;

/* 0 and *@dma set, or -ENOMEM when the device cannot map @buf. */
int krdma_dma_map_single(struct ib_device *ibdev, void *buf, size_t len,
			 enum dma_data_direction dir, u64 *dma);
/* @len and @dir as mapped. */
void krdma_dma_unmap_single(struct ib_device *ibdev, u64 dma, size_t len,
			    enum dma_data_direction dir);
/* @len from the mapping's start, at most its size. */
void krdma_dma_sync_for_cpu(struct ib_device *ibdev, u64 dma, size_t len,
			    enum dma_data_direction dir);
void krdma_dma_sync_for_device(struct ib_device *ibdev, u64 dma, size_t len,
			       enum dma_data_direction dir);
/* The entries mapped (0: failed), as ib_dma_map_sg(). */
int krdma_dma_map_sg(struct ib_device *ibdev, struct scatterlist *sg,
		     int nents, enum dma_data_direction dir);
/* @nents as passed to krdma_dma_map_sg(), not as it returned. */
void krdma_dma_unmap_sg(struct ib_device *ibdev, struct scatterlist *sg,
			int nents, enum dma_data_direction dir);
void krdma_dma_check_exit(void);

#endif /* KRDMA_DMA_H */
