/* SPDX-License-Identifier: GPL-2.0 */
/*
 * krdma-blk: what its files share.  krdma_blk_main.c has the control file
 * and the registry of exports and maps, krdma_blk_srv.c the server side
 * (exports), krdma_blk_clt.c the client side (blk-mq disks).
 */
#ifndef _KRDMA_BLK_H
#define _KRDMA_BLK_H

#include <linux/types.h>
#include <linux/list.h>
#include <linux/socket.h>
#include <linux/moduleparam.h>

struct krdma_blk_export;
struct krdma_blk_map;

/*
 * The largest READ/WRITE either side does (bytes): a whole bio (BIO_MAX_VECS
 * pages).  A client takes less where its device's MRs map fewer pages
 * (siw: 255 of them, as nvme-rdma does).
 */
#define KRDMA_BLK_MAX_IO	(1024 * 1024)
/* How long one RDMA transfer or reply may take before the conn fails. */
#define KRDMA_BLK_IO_TIMEOUT	(30 * HZ)

/**
 * struct krdma_blk_export_args - a parsed "export" command
 * @name: the export's name
 * @path: the block device's path
 * @addr: where to listen
 * @ro: refuse writes
 * @wq: take the connections' completions in the completion workqueue
 *	(opts.workqueue) and start the READs and WRITEs of a shallow queue
 *	there (the default takes them in softirq and starts every command
 *	from a work item)
 * @failed: set on failure: the word to name (the path, or "addr=")
 */
struct krdma_blk_export_args {
	const char		*name;
	const char		*path;
	struct sockaddr_storage	addr;
	bool			ro;
	bool			wq;
	const char		*failed;
};

/**
 * struct krdma_blk_map_args - a parsed "map" command
 * @name: the map's name, also the disk's
 * @export: the export's name on the server
 * @addr: the server's address
 * @queues: sessions (of one connection each), one per hardware queue
 * @poll_queues: more of them, polled (opts.poll), for blk-mq's poll queues
 *	(HCTX_TYPE_POLL: io_uring's IOPOLL, fio --hipri); 0: none.  At most
 *	KRDMA_BLK_MAX_QUEUES with @queues
 * @reconnect_delay_ms: a session's delay between reconnect attempts
 * @loss_tmo_ms: how long a session keeps trying before its queue's I/O
 *	fails (KRDMA_SESSION_LOSS_TMO_NEVER: for ever)
 */
struct krdma_blk_map_args {
	const char		*name;
	const char		*export;
	struct sockaddr_storage	addr;
	u32			queues;
	u32			poll_queues;
	u32			reconnect_delay_ms;
	u32			loss_tmo_ms;
};

extern bool krdma_blk_test_ignore_ro;
extern const struct kernel_param_ops krdma_blk_counter_ops;

/**
 * struct krdma_blk_every - tests only: a fault every Nth time
 * @every: N, a module parameter (0: never)
 * @n: times asked
 * @seen: times it said yes, a counter parameter (krdma_blk_counter_ops)
 */
struct krdma_blk_every {
	unsigned int	every;
	atomic_t	n;
	atomic_t	seen;
};

bool krdma_blk_every(struct krdma_blk_every *e);

struct krdma_blk_export *krdma_blk_export_create(struct krdma_blk_export_args *a);
void krdma_blk_export_destroy(struct krdma_blk_export *exp);

struct krdma_blk_map *krdma_blk_map_create(const struct krdma_blk_map_args *a);
void krdma_blk_map_destroy(struct krdma_blk_map *map);

#endif /* _KRDMA_BLK_H */
