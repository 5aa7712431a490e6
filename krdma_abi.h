/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Validation of the /dev/krdma ioctl arguments (include/uapi/linux/krdma.h),
 * apart from the work the commands do: each check takes the copied-in
 * structure and returns 0 or the errno the command fails with, after one
 * dmesg line naming the bad field.  Pure but for access_ok(), so that
 * KUnit runs them on crafted structures.
 */
#ifndef KRDMA_ABI_H
#define KRDMA_ABI_H

#include <linux/printk.h>
#include <linux/sched.h>
#include <linux/socket.h>
#include <uapi/linux/krdma.h>

/* A rate-limited line of /dev/krdma's about the calling process. */
#define krdma_cd_log(pr_ratelimited, fmt, ...)				\
	pr_ratelimited("/dev/krdma: %s[%d]: " fmt, current->comm,	\
		       task_pid_nr(current), ##__VA_ARGS__)
#define krdma_cd_warn(fmt, ...)						\
	krdma_cd_log(pr_warn_ratelimited, fmt, ##__VA_ARGS__)
#define krdma_cd_info(fmt, ...)						\
	krdma_cd_log(pr_info_ratelimited, fmt, ##__VA_ARGS__)

int krdma_abi_addr_in(const struct krdma_ioc_addr *a,
		      struct sockaddr_storage *ss, bool optional,
		      const char *cmd);
int krdma_abi_listen(const struct krdma_ioc_listen *la,
		     struct sockaddr_storage *ss);
int krdma_abi_accept(const struct krdma_ioc_accept *aa);
int krdma_abi_connect(const struct krdma_ioc_connect *ca,
		      struct sockaddr_storage *dst,
		      struct sockaddr_storage *src, bool *has_src);
int krdma_abi_handle(const struct krdma_ioc_handle *h, const char *cmd);
int krdma_abi_send(const struct krdma_ioc_msg *m);
int krdma_abi_recv(const struct krdma_ioc_msg *m);
int krdma_abi_reg(const struct krdma_ioc_reg *r);
int krdma_abi_rdma(const struct krdma_ioc_rdma *r, const char *cmd, bool imm);
int krdma_abi_atomic(const struct krdma_ioc_atomic *a, const char *cmd,
		     bool cas);
int krdma_abi_query(const struct krdma_ioc_query *q);

#endif /* KRDMA_ABI_H */
