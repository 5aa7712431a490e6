// SPDX-License-Identifier: GPL-2.0
/*
 * krdmactl: command line front end of /dev/krdma and /sys/kernel/krdma.
 *
 * Every process is one /dev/krdma session: what it opens is closed when it
 * exits.  So the commands that move data do a whole exchange in one
 * process; "serve" and "client" are the pair for a two-process session:
 *
 *   krdmactl serve 10.0.0.1:7000 --size 1M --dump /tmp/after &
 *   krdmactl client 10.0.0.1:7000 --send hello --write data --read copy
 *
 * serve accepts a connection, registers a buffer, sends its token to the
 * client as the first message, echoes every message, and answers checksum
 * requests; client gets the token, then runs its actions in order and
 * checks each one byte for byte.
 *
 * Exit status: 0 success, 1 failure (message on stderr), 2 usage error.
 * With --json, output is one JSON object a line, and so is an error (on
 * stderr: {"error":"...","errno":N,"command":"..."}).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdnoreturn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/krdma.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define __printf(a, b)	__attribute__((format(printf, a, b)))

#define SYSFS		"/sys/kernel/krdma"
#define TOKEN_TAG	"krdmactl-token"
#define SUM_TAG		"krdmactl-sum"
#define BYE_TAG		"krdmactl-bye"
#define REPLY_MS	30000

/* krdmactl's version: KRDMA_VERSION of the module source (krdma_core.h). */
#define KRDMA_VERSION	"0.1.0"

static const char *prog = "krdmactl";
static const char *cmdname = "";
static const char *devpath = "/dev/krdma";
static bool json;

/* ---- messages and output -------------------------------------------- */

static void json_cstr(FILE *f, const char *s);

/*
 * Errors and warnings go to stderr, as "krdmactl: COMMAND: MESSAGE", or
 * with --json as one JSON object a line:
 *   {"error":"MESSAGE","errno":N,"command":"COMMAND"}
 * ("warning" for a warning; errno is 0 where no system call failed,
 * "command" is left out before there is one).  @err, if not 0, adds
 * ": strerror(err)" to the message, @hint " (hint)".
 */
static void report_msg(const char *kind, int err, const char *hint,
		       const char *fmt, va_list ap)
{
	char *m = NULL, *full = NULL;

	if (vasprintf(&m, fmt, ap) < 0)
		m = NULL;
	if (asprintf(&full, "%s%s%s%s%s%s", m ? m : fmt, err ? ": " : "",
		     err ? strerror(err) : "", hint ? " (" : "",
		     hint ? hint : "", hint ? ")" : "") < 0)
		full = NULL;
	fflush(stdout);
	if (json) {
		fprintf(stderr, "{\"%s\":", kind);
		json_cstr(stderr, full ? full : fmt);
		fprintf(stderr, ",\"errno\":%d", err);
		if (*cmdname) {
			fprintf(stderr, ",\"command\":");
			json_cstr(stderr, cmdname);
		}
		fprintf(stderr, "}\n");
	} else {
		fprintf(stderr, "%s: %s%s%s\n", prog, cmdname,
			*cmdname ? ": " : "", full ? full : fmt);
	}
	free(full);
	free(m);
}

static __printf(1, 2) void warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_msg("warning", 0, NULL, fmt, ap);
	va_end(ap);
}

static __printf(2, 3)
void warn_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_msg("warning", err, NULL, fmt, ap);
	va_end(ap);
}

static __printf(1, 2)
noreturn void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_msg("error", 0, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

/* Fail with errno @err's text and, if not NULL, how to fix it. */
static __printf(3, 4)
noreturn void die_err(int err, const char *hint, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report_msg("error", err, hint, fmt, ap);
	va_end(ap);
	exit(1);
}

static __printf(1, 2)
noreturn void usage_error(const char *fmt, ...)
{
	char hint[64];
	va_list ap;

	snprintf(hint, sizeof(hint), "try '%s%s%s --help'", prog,
		 *cmdname ? " " : "", cmdname);
	va_start(ap, fmt);
	report_msg("error", 0, hint, fmt, ap);
	va_end(ap);
	exit(2);
}

/*
 * Length of the valid UTF-8 sequence at @s (of @n bytes left), or 0: no
 * overlong forms, no surrogates, nothing above U+10FFFF.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	__u32 c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] < 0xc2)
		return 0;
	if (s[0] < 0xe0) {
		len = 2;
		c = s[0] & 0x1f;
	} else if (s[0] < 0xf0) {
		len = 3;
		c = s[0] & 0x0f;
	} else if (s[0] < 0xf5) {
		len = 4;
		c = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		return 0;
	return len;
}

/*
 * A JSON string literal of @len bytes: valid UTF-8 as is, quotes,
 * backslashes and control bytes escaped, and every byte that is not part
 * of valid UTF-8 as \u00XX (so the output is always valid JSON in UTF-8).
 */
static void json_str(FILE *f, const void *p, size_t len)
{
	const unsigned char *s = p;
	size_t i = 0, n;

	fputc('"', f);
	while (i < len) {
		switch (s[i]) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\b':
			fputs("\\b", f);
			break;
		case '\f':
			fputs("\\f", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			n = utf8_len(s + i, len - i);
			if (s[i] < 0x20 || s[i] == 0x7f || !n) {
				fprintf(f, "\\u%04x", s[i]);
				break;
			}
			fwrite(s + i, 1, n, f);
			i += n;
			continue;
		}
		i++;
	}
	fputc('"', f);
}

static void json_cstr(FILE *f, const char *s)
{
	json_str(f, s, strlen(s));
}

/* A decimal number (no exponent) in JSON's own syntax. */
static bool is_json_number(const char *s)
{
	if (*s == '-')
		s++;
	if (!isdigit((unsigned char)*s) ||
	    (*s == '0' && isdigit((unsigned char)s[1])))
		return false;
	while (isdigit((unsigned char)*s))
		s++;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return false;
		while (isdigit((unsigned char)*s))
			s++;
	}
	return !*s;
}

/* A sysfs value: a JSON number if it is a decimal number, else a string. */
static void json_value(FILE *f, const char *s)
{
	if (is_json_number(s))
		fputs(s, f);
	else
		json_cstr(f, s);
}

/* Text output of a message: printable as is, the rest escaped. */
static void text_bytes(FILE *f, const void *p, size_t len)
{
	const unsigned char *s = p;
	size_t i;

	for (i = 0; i < len; i++) {
		if (isprint(s[i]) && s[i] != '\\')
			fputc(s[i], f);
		else
			fprintf(f, "\\x%02x", s[i]);
	}
}

/* ---- parsing -------------------------------------------------------- */

/*
 * A number: decimal, or hexadecimal after 0x; with @suffix, K, M or G
 * (2^10, 2^20, 2^30) may follow.  Anything else (a sign, blanks, junk
 * after it) and anything above @max (including what overflows 64 bits)
 * is a usage error.
 */
static __u64 parse_num(const char *s, const char *what, __u64 max,
		       bool suffix)
{
	const char *p = s;
	unsigned long long v;
	int base = 10, shift = 0;
	char *end;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (base == 10 ? !isdigit((unsigned char)*p) :
			 !isxdigit((unsigned char)*p))
		usage_error("bad %s '%s'", what, s);
	errno = 0;
	v = strtoull(p, &end, base);
	if (suffix && *end && !end[1]) {
		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'm':
		case 'M':
			shift = 20;
			break;
		case 'g':
		case 'G':
			shift = 30;
			break;
		}
		if (shift)
			end++;
	}
	if (*end)
		usage_error("bad %s '%s'", what, s);
	if (errno == ERANGE || v > max >> shift)
		usage_error("%s '%s' is too large (at most %llu)", what, s,
			    (unsigned long long)max);
	return (__u64)v << shift;
}

/* Bytes or a count: K, M, G allowed. */
static __u64 parse_size(const char *s, const char *what, __u64 max)
{
	return parse_num(s, what, max, true);
}

static __u32 parse_u32(const char *s, const char *what)
{
	return (__u32)parse_num(s, what, UINT32_MAX, true);
}

/* Milliseconds, seconds, a port or a scope: a plain number. */
static __u32 parse_plain(const char *s, const char *what)
{
	return (__u32)parse_num(s, what, UINT32_MAX, false);
}

/* A hexadecimal number (0x optional) of @len bytes at @s, at most @max. */
static bool parse_hex(const char *s, size_t len, __u64 max, __u64 *out)
{
	unsigned long long v;
	char buf[24], *end;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = 0;
	s = buf;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!isxdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 16);
	if (*end || errno == ERANGE || v > max)
		return false;
	*out = v;
	return true;
}

/* "IPv4[:PORT]", "[IPv6[%IF]][:PORT]" or a bare IPv6 address. */
static void parse_addr(const char *s, struct krdma_ioc_addr *a, bool need_port)
{
	char host[INET6_ADDRSTRLEN + IF_NAMESIZE + 2];
	const char *port = NULL, *end;
	char *pct;
	size_t hl;

	memset(a, 0, sizeof(*a));
	if (*s == '[') {
		end = strchr(s, ']');
		if (!end)
			usage_error("bad address '%s'", s);
		hl = end - s - 1;
		s++;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			usage_error("bad address '%s'", s - 1);
	} else {
		end = strrchr(s, ':');
		if (end && strchr(s, ':') == end) {
			hl = end - s;
			port = end + 1;
		} else {
			hl = strlen(s);
		}
	}
	if (hl >= sizeof(host))
		usage_error("bad address '%s'", s);
	memcpy(host, s, hl);
	host[hl] = 0;
	pct = strchr(host, '%');
	if (pct) {
		*pct++ = 0;
		a->scope_id = if_nametoindex(pct);
		if (!a->scope_id)
			a->scope_id = parse_plain(pct, "scope");
	}
	if (inet_pton(AF_INET, host, a->addr) == 1 && !pct)
		a->family = AF_INET;
	else if (inet_pton(AF_INET6, host, a->addr) == 1)
		a->family = AF_INET6;
	else
		usage_error("bad address '%s'", host);
	if (port) {
		__u64 p = parse_num(port, "port", 65535, false);

		if (!p)
			usage_error("bad port '%s'", port);
		a->port = (__u16)p;
	} else if (need_port) {
		usage_error("address '%s' needs a port (ADDR:PORT)", host);
	}
}

static const char *addr_str(const struct krdma_ioc_addr *a, char *buf,
			    size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (a->family == AF_INET) {
		inet_ntop(AF_INET, a->addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, a->port);
	} else if (a->family == AF_INET6) {
		inet_ntop(AF_INET6, a->addr, host, sizeof(host));
		if (a->scope_id)
			snprintf(buf, len, "[%s%%%u]:%u", host, a->scope_id,
				 a->port);
		else
			snprintf(buf, len, "[%s]:%u", host, a->port);
	} else {
		snprintf(buf, len, "-");
	}
	return buf;
}

/* 0xADDR:0xRKEY:LENGTH, as serve prints it (0x optional, LENGTH decimal). */
static void parse_token(const char *s, struct krdma_ioc_token *t)
{
	const char *c1 = strchr(s, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
	__u64 addr, rkey, len;
	char *end;

	if (!c2 || !parse_hex(s, c1 - s, UINT64_MAX, &addr) ||
	    !parse_hex(c1 + 1, c2 - c1 - 1, UINT32_MAX, &rkey) ||
	    !isdigit((unsigned char)c2[1]))
		usage_error("bad token '%s' (ADDR:RKEY:LENGTH)", s);
	errno = 0;
	len = strtoull(c2 + 1, &end, 10);
	if (*end || errno == ERANGE || len > UINT32_MAX)
		usage_error("bad token '%s' (ADDR:RKEY:LENGTH)", s);
	t->addr = addr;
	t->rkey = (__u32)rkey;
	t->length = (__u32)len;
}

/* ---- files ---------------------------------------------------------- */

static void *read_file(const char *path, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	ssize_t r;
	int fd;

	fd = strcmp(path, "-") ? open(path, O_RDONLY) : 0;
	if (fd < 0)
		die_err(errno, NULL, "cannot open %s", path);
	if (!buf)
		die("out of memory");
	for (;;) {
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				die("out of memory");
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0)
			die_err(errno, NULL, "cannot read %s", path);
		if (!r)
			break;
		n += r;
	}
	if (fd)
		close(fd);
	*len = n;
	return buf;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t r;
	int fd;

	fd = strcmp(path, "-") ? open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)
			       : 1;
	if (fd < 0)
		die_err(errno, NULL, "cannot create %s", path);
	while (len) {
		r = write(fd, p, len);
		if (r < 0)
			die_err(errno, NULL, "cannot write %s", path);
		p += r;
		len -= r;
	}
	if (fd != 1 && close(fd))
		die_err(errno, NULL, "cannot write %s", path);
}

static __u64 fnv1a(const void *p, size_t len)
{
	const unsigned char *s = p;
	__u64 h = 0xcbf29ce484222325ULL;

	while (len--) {
		h ^= *s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* ---- /dev/krdma ----------------------------------------------------- */

#define LOAD_HINT	"is the krdma module loaded? modprobe krdma"

static int dev_open(void)
{
	struct krdma_ioc_version v;
	int fd, err;

	fd = open(devpath, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		die_err(err, err == ENOENT || err == ENXIO || err == ENODEV ?
			LOAD_HINT : err == EACCES || err == EPERM ?
			"it is root's (mode 0600): run as root" : NULL,
			"cannot open %s", devpath);
	}
	if (ioctl(fd, KRDMA_IOC_VERSION, &v)) {
		err = errno;
		die_err(err, err == ENOTTY ? "not krdma's device? see --dev" :
			NULL, "%s: VERSION", devpath);
	}
	if (v.abi_version != KRDMA_ABI_VERSION)
		die_err(0, "build both from one source tree: make",
			"the module speaks ABI version %u, %s was built for %u",
			v.abi_version, prog, KRDMA_ABI_VERSION);
	return fd;
}

struct conn_opts {
	struct krdma_ioc_addr	addr;
	struct krdma_ioc_addr	src;
	__u32		depth, msg, timeout_ms;
};

static __u32 do_connect(int fd, const struct conn_opts *o)
{
	struct krdma_ioc_connect c = {
		.dst = o->addr, .src = o->src,
		.queue_depth = o->depth, .max_msg_size = o->msg,
		.timeout_ms = o->timeout_ms,
	};
	char a[80];
	int err;

	if (ioctl(fd, KRDMA_IOC_CONNECT, &c)) {
		err = errno;
		die_err(err, err == ECONNREFUSED ? "nobody listens there?" :
			err == ETIMEDOUT ? "no answer within --timeout MS" :
			NULL, "connect to %s", addr_str(&o->addr, a, sizeof(a)));
	}
	return c.handle;
}

static __u32 do_listen(int fd, const struct conn_opts *o)
{
	struct krdma_ioc_listen l = {
		.addr = o->addr, .queue_depth = o->depth,
		.max_msg_size = o->msg,
	};
	char a[80];
	int err;

	if (ioctl(fd, KRDMA_IOC_LISTEN, &l)) {
		err = errno;
		die_err(err, err == EADDRINUSE ?
			"something listens there already" : NULL,
			"listen on %s", addr_str(&o->addr, a, sizeof(a)));
	}
	return l.handle;
}

static __u32 do_accept(int fd, __u32 lh, __u32 timeout_ms)
{
	struct krdma_ioc_accept a = { .handle = lh, .timeout_ms = timeout_ms };

	int err;

	if (ioctl(fd, KRDMA_IOC_ACCEPT, &a)) {
		err = errno;
		die_err(err, err == ETIMEDOUT || err == EAGAIN ?
			"no client within --timeout MS" : NULL, "accept");
	}
	return a.conn;
}

static void do_query(int fd, __u32 h, struct krdma_ioc_query *q)
{
	memset(q, 0, sizeof(*q));
	q->handle = h;
	if (ioctl(fd, KRDMA_IOC_QUERY, q))
		die_err(errno, NULL, "query");
}

/* A message; with @flags KRDMA_IOC_SEND_IMM, with the immediate value @imm. */
static int do_send_ex(int fd, __u32 h, const void *buf, size_t len,
		      __u32 flags, __u32 imm)
{
	struct krdma_ioc_msg m = {
		.handle = h, .flags = flags, .buf = (uintptr_t)buf, .len = len,
		.timeout_ms = REPLY_MS, .imm = imm,
	};

	return ioctl(fd, KRDMA_IOC_SEND, &m) ? -errno : 0;
}

static int do_send(int fd, __u32 h, const void *buf, size_t len)
{
	return do_send_ex(fd, h, buf, len, 0, 0);
}

/*
 * Returns the message length or -errno; *@imm_valid (if @imm_valid is not
 * NULL) says whether an immediate value came with it (the notice of a
 * write-with-immediate, or a message sent with one), *@imm its value.
 */
static long do_recv_ex(int fd, __u32 h, void *buf, size_t len,
		       __u32 timeout_ms, bool *imm_valid, __u32 *imm)
{
	struct krdma_ioc_msg m = {
		.handle = h, .buf = (uintptr_t)buf, .len = len,
		.timeout_ms = timeout_ms,
	};

	if (ioctl(fd, KRDMA_IOC_RECV, &m))
		return -errno;
	if (imm_valid) {
		*imm_valid = m.msg_flags & KRDMA_IOC_MSG_IMM;
		*imm = m.imm;
	}
	return m.msg_len;
}

static long do_recv(int fd, __u32 h, void *buf, size_t len,
		    __u32 timeout_ms)
{
	return do_recv_ex(fd, h, buf, len, timeout_ms, NULL, NULL);
}

static int do_rdma(int fd, __u32 h, bool write, void *buf, size_t len,
		   const struct krdma_ioc_token *t, __u64 off)
{
	struct krdma_ioc_rdma r = {
		.handle = h, .buf = (uintptr_t)buf, .len = len, .token = *t,
		.offset = off,
	};

	return ioctl(fd, write ? KRDMA_IOC_WRITE : KRDMA_IOC_READ, &r) ?
	       -errno : 0;
}

static int do_write_imm(int fd, __u32 h, void *buf, size_t len,
			const struct krdma_ioc_token *t, __u64 off, __u32 imm)
{
	struct krdma_ioc_rdma r = {
		.handle = h, .buf = (uintptr_t)buf, .len = len, .token = *t,
		.offset = off, .imm = imm,
	};

	return ioctl(fd, KRDMA_IOC_WRITE_IMM, &r) ? -errno : 0;
}

/* FADD (@cas false) or CAS; the old value in *@old.  0 or -errno. */
static int do_atomic(int fd, __u32 h, bool cas,
		     const struct krdma_ioc_token *t, __u64 off,
		     __u64 compare_add, __u64 swap, __u64 *old)
{
	struct krdma_ioc_atomic x = {
		.handle = h, .token = *t, .offset = off,
		.compare_add = compare_add, .swap = swap,
	};

	if (ioctl(fd, cas ? KRDMA_IOC_CAS : KRDMA_IOC_FADD, &x))
		return -errno;
	*old = x.old;
	return 0;
}

static const char *state_str(__u32 st)
{
	switch (st) {
	case KRDMA_IOC_STATE_CONNECTING:	return "connecting";
	case KRDMA_IOC_STATE_CONNECTED:		return "connected";
	case KRDMA_IOC_STATE_DISCONNECTED:	return "disconnected";
	case KRDMA_IOC_STATE_ERROR:		return "error";
	case KRDMA_IOC_STATE_CLOSED:		return "closed";
	case KRDMA_IOC_STATE_LISTENING:		return "listening";
	case KRDMA_IOC_STATE_STOPPED:		return "stopped";
	}
	return "unknown";
}

/*
 * The kernel's name of a work completion status (ib_wc_status_msg(), which
 * libibverbs' ibv_wc_status_str() shares): QUERY's wc_status, "none" for 0.
 */
static const char *wc_status_str(__u32 st)
{
	static const char * const names[] = {
		"none", "local length error", "local QP operation error",
		"local EE context operation error", "local protection error",
		"WR flushed", "memory bind operation error",
		"bad response error", "local access error",
		"remote invalid request error", "remote access error",
		"remote operation error", "transport retry counter exceeded",
		"RNR retry counter exceeded", "local RDD violation error",
		"remote invalid RD request", "operation aborted",
		"invalid EE context number", "invalid EE context state",
		"fatal error", "response timeout error", "general error",
	};

	return st < ARRAY_SIZE(names) ? names[st] : "unknown";
}

static void print_conn(const char *event, const struct krdma_ioc_query *q)
{
	char la[80], pa[80];

	addr_str(&q->local, la, sizeof(la));
	addr_str(&q->peer, pa, sizeof(pa));
	if (json) {
		printf("{\"event\":\"%s\",\"name\":", event);
		json_cstr(stdout, q->name);
		printf(",\"state\":\"%s\",\"error\":%d", state_str(q->state),
		       q->error);
		printf(",\"wc_status\":\"%s\"", wc_status_str(q->wc_status));
		printf(",\"local\":");
		json_cstr(stdout, la);
		printf(",\"peer\":");
		json_cstr(stdout, pa);
		printf(",\"device\":");
		json_cstr(stdout, q->device);
		printf(",\"queue_depth\":%u,\"max_msg_size\":%u,\"credits\":%u",
		       q->queue_depth, q->max_msg_size, q->credits);
		printf(",\"send_ops\":%llu,\"recv_ops\":%llu",
		       (unsigned long long)q->send_ops,
		       (unsigned long long)q->recv_ops);
		printf(",\"write_ops\":%llu,\"read_ops\":%llu,\"errors\":%llu}\n",
		       (unsigned long long)q->write_ops,
		       (unsigned long long)q->read_ops,
		       (unsigned long long)q->errors);
	} else {
		printf("%s %s: %s %s -> %s on %s, depth %u, max message %u",
		       event, q->name, state_str(q->state), la, pa,
		       q->device[0] ? q->device : "-", q->queue_depth,
		       q->max_msg_size);
		if (q->error)
			printf(", failed: %s%s%s", strerror(-q->error),
			       q->wc_status ? ", work completion: " : "",
			       q->wc_status ? wc_status_str(q->wc_status) : "");
		printf("\n");
	}
}

static void print_token(const char *event, const struct krdma_ioc_token *t,
			__u32 mr)
{
	if (json) {
		printf("{\"event\":\"%s\",\"mr\":%u,\"addr\":\"0x%llx\"",
		       event, mr, (unsigned long long)t->addr);
		printf(",\"rkey\":\"0x%x\",\"length\":%u", t->rkey, t->length);
		printf(",\"token\":\"0x%llx:0x%x:%u\"}\n",
		       (unsigned long long)t->addr, t->rkey, t->length);
		return;
	}
	printf("%s addr=0x%llx rkey=0x%x length=%u (--token 0x%llx:0x%x:%u)\n",
	       event, (unsigned long long)t->addr, t->rkey, t->length,
	       (unsigned long long)t->addr, t->rkey, t->length);
}

/* The notice of the peer's write-with-immediate (krdmactl write-imm). */
static void print_imm(__u64 n, __u32 imm)
{
	if (json)
		printf("{\"event\":\"immediate\",\"n\":%llu,\"imm\":%u}\n",
		       (unsigned long long)n, imm);
	else
		printf("message %llu: immediate %u (0x%x)\n",
		       (unsigned long long)n, imm, imm);
}

/* A message; @imm_valid: one sent with an immediate value, @imm. */
static void print_msg(__u64 n, const void *buf, size_t len, bool imm_valid,
		      __u32 imm)
{
	if (json) {
		printf("{\"event\":\"message\",\"n\":%llu,\"len\":%zu,",
		       (unsigned long long)n, len);
		if (imm_valid)
			printf("\"imm\":%u,", imm);
		printf("\"data\":");
		json_str(stdout, buf, len);
		printf("}\n");
	} else {
		printf("message %llu, %zu bytes", (unsigned long long)n, len);
		if (imm_valid)
			printf(", immediate %u (0x%x)", imm, imm);
		printf(": ");
		text_bytes(stdout, buf, len > 64 ? 64 : len);
		printf("%s\n", len > 64 ? "..." : "");
	}
}

/* ---- option parsing shared by the commands -------------------------- */

struct cmd {
	const char	*name;
	int		(*fn)(int argc, char **argv);
	const char	*usage;
};

static const struct cmd *cur;

static const char common_help[] =
	"Connection options: --src IP, -t|--depth N (queue depth), --msg BYTES\n"
	"(largest message), --timeout MS (connecting: default 5000; waiting for\n"
	"a client: default forever).  Every timeout is in milliseconds.\n"
	"Options take '--opt=value' or '--opt value'; '--' ends them.  BYTES and\n"
	"counts take a K, M or G suffix (2^10, 2^20, 2^30).  Every command takes\n"
	"-h|--help and -j|--json.\n";

static noreturn void help(void)
{
	printf("usage: %s [-j|--json] [--dev PATH] %s\n\n%s", prog, cur->usage,
	       common_help);
	exit(0);
}

/*
 * Each command's options go through getopt_long: "--opt=value" and
 * "--opt value", short aliases (perftest's where it has one: -s size,
 * -n count, -D seconds, -t depth), "--" ends the options.  The short
 * option strings start with "-:", so that operands come back in order (as
 * 1, whatever POSIXLY_CORRECT says) and a missing value as ':'.
 */
enum {
	O_SRC = 256, O_MSG, O_TIMEOUT, O_HOLD, O_FILE, O_OUT, O_DUMP,
	O_CLIENTS, O_ACCESS, O_TOKEN, O_OFFSET, O_LEN, O_NO_VERIFY, O_LOOP,
	O_SEND, O_SEND_FILE, O_WRITE, O_READ, O_EXPECT, O_ADDR, O_OP,
	O_BATCH, O_DEV, O_WRITE_IMM, O_IMM,
};

static const struct option common_lo[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{}
};

/* Connection options: --src, --depth (-t), --msg, --timeout. */
static const struct option conn_lo[] = {
	{ "src", required_argument, NULL, O_SRC },
	{ "depth", required_argument, NULL, 't' },
	{ "msg", required_argument, NULL, O_MSG },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{}
};

#define CONN_SHORT	"-:jht:"

static const char *o_short;
static struct option o_long[48];	/* common_lo and the command's */
static bool o_rest;		/* after "--": operands only */

static const char *opt_name(char *const *argv, int at)
{
	static char buf[64];
	const char *a = argv[at], *eq;

	if (a[0] == '-' && a[1] == '-') {
		eq = strchr(a, '=');
		snprintf(buf, sizeof(buf), "%.*s",
			 eq ? (int)(eq - a) : (int)strlen(a), a);
	} else {
		snprintf(buf, sizeof(buf), "-%c", optopt);
	}
	return buf;
}

/*
 * Start on a command's options: common_lo and the NULL-terminated list of
 * tables @tabs.  --json is looked for first, so that an error in the
 * options before it is reported as JSON too.
 */
static void opt_begin(int argc, char **argv, const char *shortopts,
		      const struct option *const *tabs)
{
	const struct option *t = common_lo;
	size_t n = 0;
	int c;

	for (; t; t = *tabs++)
		for (; t->name; t++) {
			if (n + 1 >= ARRAY_SIZE(o_long))
				die("too many options");
			o_long[n++] = *t;
		}
	memset(&o_long[n], 0, sizeof(o_long[n]));
	o_short = shortopts;
	o_rest = false;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, o_short, o_long, NULL)) != -1)
		if (c == 'j')
			json = true;
	optind = 0;
}

/*
 * The next option (its short letter or O_*, value in optarg), 1 for an
 * operand (in optarg), -1 at the end.  --json and --help are handled here,
 * unknown options and missing values are usage errors.
 */
static int opt_next(int argc, char **argv)
{
	int c, at;

	for (;;) {
		if (o_rest) {
			if (optind >= argc)
				return -1;
			optarg = argv[optind++];
			return 1;
		}
		at = optind ? optind : 1;
		c = getopt_long(argc, argv, o_short, o_long, NULL);
		switch (c) {
		case -1:
			o_rest = true;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			help();
		case '?':
			usage_error("unknown option '%s'", opt_name(argv, at));
		case ':':
			usage_error("%s needs a value", opt_name(argv, at));
		default:
			return c;
		}
	}
}

/* A connection option: true if @c was one. */
static bool conn_opt(int c, struct conn_opts *o)
{
	switch (c) {
	case O_SRC:
		parse_addr(optarg, &o->src, false);
		return true;
	case 't':
		o->depth = parse_u32(optarg, "--depth");
		return true;
	case O_MSG:
		o->msg = parse_u32(optarg, "--msg");
		return true;
	case O_TIMEOUT:
		o->timeout_ms = parse_plain(optarg, "--timeout");
		return true;
	}
	return false;
}

/* ---- connect, send, listen, recv ------------------------------------ */

static int cmd_connect(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "hold", required_argument, NULL, O_HOLD },
		{}
	};
	struct conn_opts o = {};
	struct krdma_ioc_query q;
	const char *addr = NULL;
	unsigned int hold = 0;
	__u32 h;
	int fd, c;

	opt_begin(argc, argv, CONN_SHORT,
		  (const struct option *[]){ conn_lo, lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		if (conn_opt(c, &o))
			continue;
		if (c == O_HOLD)
			hold = parse_plain(optarg, "--hold");
		else if (addr)
			usage_error("unexpected '%s'", optarg);
		else
			addr = optarg;
	}
	if (!addr)
		usage_error("missing ADDR:PORT");
	parse_addr(addr, &o.addr, true);
	fd = dev_open();
	h = do_connect(fd, &o);
	do_query(fd, h, &q);
	print_conn("connected", &q);
	fflush(stdout);
	sleep(hold);
	close(fd);
	return 0;
}

static int cmd_send(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "file", required_argument, NULL, O_FILE },
		{ "imm", required_argument, NULL, O_IMM },
		{}
	};
	struct conn_opts o = {};
	const char *addr = NULL, *file = NULL;
	char **msgs = calloc(argc, sizeof(*msgs));
	int fd, i, c, n = 0, ret;
	__u32 h, flags = 0, imm = 0;

	if (!msgs)
		die("out of memory");
	opt_begin(argc, argv, CONN_SHORT,
		  (const struct option *[]){ conn_lo, lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		if (conn_opt(c, &o))
			continue;
		if (c == O_FILE) {
			file = optarg;
		} else if (c == O_IMM) {
			imm = parse_plain(optarg, "--imm");
			flags = KRDMA_IOC_SEND_IMM;
		} else if (!addr) {
			addr = optarg;
		} else {
			msgs[n++] = optarg;
		}
	}
	if (!addr)
		usage_error("missing ADDR:PORT");
	if (!n && !file)
		usage_error("nothing to send (MESSAGE... or --file FILE)");
	parse_addr(addr, &o.addr, true);
	fd = dev_open();
	h = do_connect(fd, &o);
	for (i = 0; i <= n; i++) {
		size_t len = 0;
		void *buf;

		if (i == n && !file)
			break;
		if (i < n) {
			buf = strdup(msgs[i]);
			len = strlen(msgs[i]);
		} else {
			buf = read_file(file, &len);
		}
		ret = do_send_ex(fd, h, buf, len, flags, imm);
		if (ret)
			die_err(-ret, NULL, "send of %zu bytes", len);
		if (json)
			printf("{\"event\":\"sent\",\"len\":%zu}\n", len);
		else
			printf("sent %zu bytes\n", len);
		free(buf);
	}
	close(fd);
	free(msgs);
	return 0;
}

/* listen (print messages) and recv (raw payloads to a file). */
static int listen_or_recv(int argc, char **argv, bool raw)
{
	struct conn_opts o = { .timeout_ms = KRDMA_IOC_TIMEOUT_INF };
	const char *addr = NULL, *out = "-";
	__u64 count = raw ? 1 : 0, n = 0;
	struct krdma_ioc_query q;
	__u32 lh, h;
	char *buf;
	static const struct option listen_lo[] = {
		{ "count", required_argument, NULL, 'n' },
		{}
	}, recv_lo[] = {
		{ "out", required_argument, NULL, O_OUT },
		{}
	};
	long len;
	int fd, c;
	FILE *f = stdout;

	opt_begin(argc, argv, CONN_SHORT "n:", (const struct option *[]){
		  conn_lo, listen_lo, raw ? recv_lo : NULL, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		if (conn_opt(c, &o))
			continue;
		if (c == 'n')
			count = parse_size(optarg, "--count", UINT64_MAX);
		else if (c == O_OUT)
			out = optarg;
		else if (addr)
			usage_error("unexpected '%s'", optarg);
		else
			addr = optarg;
	}
	if (!addr)
		usage_error("missing ADDR:PORT");
	parse_addr(addr, &o.addr, true);
	if (raw && strcmp(out, "-")) {
		f = fopen(out, "w");
		if (!f)
			die_err(errno, NULL, "cannot create %s", out);
	}
	fd = dev_open();
	lh = do_listen(fd, &o);
	if (!raw) {
		char a[80];

		if (json) {
			printf("{\"event\":\"listening\",\"addr\":");
			json_cstr(stdout, addr_str(&o.addr, a, sizeof(a)));
			printf("}\n");
		} else {
			printf("listening on %s\n",
			       addr_str(&o.addr, a, sizeof(a)));
		}
		fflush(stdout);
	}
	h = do_accept(fd, lh, o.timeout_ms);
	do_query(fd, h, &q);
	if (!raw) {
		print_conn("accepted", &q);
		fflush(stdout);
	}
	buf = malloc(q.max_msg_size);
	if (!buf)
		die("out of memory");
	while (!count || n < count) {
		bool imm_valid = false;
		__u32 imm = 0;

		len = do_recv_ex(fd, h, buf, q.max_msg_size,
				 KRDMA_IOC_TIMEOUT_INF, &imm_valid, &imm);
		if (len == -ECONNRESET && !raw)
			break;
		if (len < 0)
			die_err(-len, NULL, "receive");
		n++;
		if (imm_valid && !len && !raw) {
			print_imm(n, imm);
		} else if (raw) {
			if (fwrite(buf, 1, len, f) != (size_t)len)
				die_err(errno, NULL, "cannot write %s", out);
		} else {
			print_msg(n, buf, len, imm_valid, imm);
		}
		fflush(f);
	}
	if (!raw) {
		if (json)
			printf("{\"event\":\"closed\",\"messages\":%llu}\n",
			       (unsigned long long)n);
		else
			printf("peer closed after %llu messages\n",
			       (unsigned long long)n);
	}
	if (f != stdout && fclose(f))
		die_err(errno, NULL, "cannot write %s", out);
	free(buf);
	close(fd);
	return 0;
}

static int cmd_listen(int argc, char **argv)
{
	return listen_or_recv(argc, argv, false);
}

static int cmd_recv(int argc, char **argv)
{
	return listen_or_recv(argc, argv, true);
}

/* ---- serve ---------------------------------------------------------- */

static int serve_one(int fd, __u32 h, char *mem, size_t size,
		     __u32 access)
{
	struct krdma_ioc_reg r = {
		.handle = h, .access = access, .buf = (uintptr_t)mem,
		.len = size,
	};
	struct krdma_ioc_handle u = {};
	struct krdma_ioc_query q;
	char *buf, reply[128];
	__u64 n = 0;
	long len;
	int ret;

	do_query(fd, h, &q);
	print_conn("accepted", &q);
	if (ioctl(fd, KRDMA_IOC_REG, &r))
		die_err(errno, errno == EOPNOTSUPP ?
			"the device has no atomics (siw): leave 'a' out of --access" :
			NULL, "register %zu bytes", size);
	print_token("token", &r.token, r.mr);
	fflush(stdout);
	snprintf(reply, sizeof(reply), TOKEN_TAG " 0x%llx 0x%x %u",
		 (unsigned long long)r.token.addr, r.token.rkey,
		 r.token.length);
	ret = do_send(fd, h, reply, strlen(reply));
	if (ret)
		die_err(-ret, NULL, "sending the token");

	buf = malloc(q.max_msg_size + 1);
	if (!buf)
		die("out of memory");
	for (;;) {
		unsigned long long off, cnt;
		bool imm_valid = false;
		__u32 imm = 0;

		len = do_recv_ex(fd, h, buf, q.max_msg_size,
				 KRDMA_IOC_TIMEOUT_INF, &imm_valid, &imm);
		if (len < 0) {
			if (len != -ECONNRESET)
				warn_err(-len, "receive");
			ret = len == -ECONNRESET ? 0 : 1;
			break;
		}
		n++;
		/* A write-imm's notice: printed, not echoed. */
		if (imm_valid && !len) {
			print_imm(n, imm);
			fflush(stdout);
			continue;
		}
		buf[len] = 0;
		if (!strcmp(buf, BYE_TAG)) {
			ret = 0;
			break;
		}
		if (sscanf(buf, SUM_TAG " %llu %llu", &off, &cnt) == 2) {
			if (off > size || cnt > size - off)
				snprintf(reply, sizeof(reply), SUM_TAG " range");
			else
				snprintf(reply, sizeof(reply),
					 SUM_TAG " %llu %llu %016llx", off, cnt,
					 (unsigned long long)fnv1a(mem + off,
								   cnt));
			ret = do_send(fd, h, reply, strlen(reply));
		} else {
			print_msg(n, buf, len, imm_valid, imm);
			ret = do_send(fd, h, buf, len);
		}
		fflush(stdout);
		if (ret) {
			warn_err(-ret, "reply");
			ret = 1;
			break;
		}
	}
	free(buf);
	u.handle = r.mr;
	if (ioctl(fd, KRDMA_IOC_UNREG, &u))
		die_err(errno, NULL, "unregister");
	do_query(fd, h, &q);
	print_conn("done", &q);
	u.handle = h;
	if (ioctl(fd, KRDMA_IOC_CLOSE, &u))
		die_err(errno, NULL, "close");
	fflush(stdout);
	return ret;
}

/* Letters r, w and a (atomic): the rights the peer gets. */
static __u32 parse_access(const char *v)
{
	__u32 a = (strchr(v, 'r') ? KRDMA_IOC_ACCESS_REMOTE_READ : 0) |
		  (strchr(v, 'w') ? KRDMA_IOC_ACCESS_REMOTE_WRITE : 0) |
		  (strchr(v, 'a') ? KRDMA_IOC_ACCESS_REMOTE_ATOMIC : 0);

	if (!a || strspn(v, "rwa") != strlen(v))
		usage_error("--access takes r, w, a or a combination (rw, rwa)");
	return a;
}

static int cmd_serve(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "file", required_argument, NULL, O_FILE },
		{ "dump", required_argument, NULL, O_DUMP },
		{ "clients", required_argument, NULL, O_CLIENTS },
		{ "access", required_argument, NULL, O_ACCESS },
		{}
	};
	struct conn_opts o = { .timeout_ms = KRDMA_IOC_TIMEOUT_INF };
	__u32 access = KRDMA_IOC_ACCESS_REMOTE_READ |
			  KRDMA_IOC_ACCESS_REMOTE_WRITE;
	const char *addr = NULL, *file = NULL, *dump = NULL;
	__u64 size = 0, clients = 1, served = 0;
	size_t flen = 0;
	char *mem, *fdata = NULL, a[80];
	int fd, c, ret = 0;
	__u32 lh;

	opt_begin(argc, argv, CONN_SHORT "s:",
		  (const struct option *[]){ conn_lo, lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		if (conn_opt(c, &o))
			continue;
		switch (c) {
		case 's':
			size = parse_size(optarg, "--size", KRDMA_IOC_MAX_XFER);
			break;
		case O_FILE:
			file = optarg;
			break;
		case O_DUMP:
			dump = optarg;
			break;
		case O_CLIENTS:
			clients = parse_size(optarg, "--clients", UINT64_MAX);
			break;
		case O_ACCESS:
			access = parse_access(optarg);
			break;
		default:
			if (addr)
				usage_error("unexpected '%s'", optarg);
			addr = optarg;
		}
	}
	if (!addr)
		usage_error("missing ADDR:PORT");
	parse_addr(addr, &o.addr, true);
	if (file)
		fdata = read_file(file, &flen);
	if (!size)
		size = flen ? flen : 1 << 20;
	if (flen > size)
		usage_error("--file is larger than --size");
	if (size > KRDMA_IOC_MAX_XFER)	/* --size is checked already */
		usage_error("%s is larger than %llu bytes", file,
			    KRDMA_IOC_MAX_XFER);
	/* Page aligned: BYTES take the fewest pages of a memory region. */
	mem = aligned_alloc(4096, (size + 4095) & ~4095ULL);
	if (!mem)
		die("out of memory");
	memset(mem, 0, size);
	if (flen)
		memcpy(mem, fdata, flen);

	fd = dev_open();
	lh = do_listen(fd, &o);
	if (json) {
		printf("{\"event\":\"listening\",\"addr\":");
		json_cstr(stdout, addr_str(&o.addr, a, sizeof(a)));
		printf(",\"size\":%llu}\n", (unsigned long long)size);
	} else {
		printf("listening on %s, exposing %llu bytes\n",
		       addr_str(&o.addr, a, sizeof(a)),
		       (unsigned long long)size);
	}
	fflush(stdout);
	while (!clients || served < clients) {
		__u32 h = do_accept(fd, lh, o.timeout_ms);

		ret |= serve_one(fd, h, mem, size, access);
		served++;
		if (dump)
			write_file(dump, mem, size);
	}
	close(fd);
	free(mem);
	free(fdata);
	return ret;
}

/* ---- client, write, read -------------------------------------------- */

enum act_type {
	A_SEND, A_SEND_FILE, A_WRITE, A_READ, A_EXPECT, A_WRITE_IMM, A_FADD,
	A_CAS,
};

struct action {
	enum act_type	type;
	const char	*arg;
	__u64	offset;
	__u64	len;		/* 0: the rest of the token */
	bool		verify;
	__u32	imm;		/* A_WRITE_IMM */
	__u64	val, swap;	/* A_FADD: addend; A_CAS: compare, swap */
	__u64	count;		/* A_FADD: how many times */
};

struct session {
	int			fd;
	__u32		h;
	__u32		max_msg;
	struct krdma_ioc_token	tok;
	bool			have_tok;
	char			*msg;
};

/* The token from --token, or the first message of a krdmactl server. */
static void get_token(struct session *s)
{
	unsigned long long addr, rkey, len;
	long n;

	if (s->have_tok)
		return;
	n = do_recv(s->fd, s->h, s->msg, s->max_msg, REPLY_MS);
	if (n < 0)
		die_err(-n, NULL, "waiting for the server's token");
	s->msg[n] = 0;
	if (sscanf(s->msg, TOKEN_TAG " %llx %llx %llu", &addr, &rkey, &len) != 3 ||
	    rkey > UINT32_MAX || len > UINT32_MAX)
		die("the peer's first message is not a token (is it 'krdmactl serve'?)");
	s->tok.addr = addr;
	s->tok.rkey = (__u32)rkey;
	s->tok.length = (__u32)len;
	s->have_tok = true;
	print_token("token", &s->tok, 0);
}

static void report(const char *what, const struct action *a, __u64 len,
		   const char *result)
{
	if (json) {
		printf("{\"event\":\"%s\",\"len\":%llu,\"offset\":%llu,",
		       what, (unsigned long long)len,
		       (unsigned long long)a->offset);
		if (a->type == A_WRITE_IMM)
			printf("\"imm\":%u,", a->imm);
		printf("\"result\":");
		json_cstr(stdout, result);	/* may be a file name */
		printf("}\n");
	} else {
		printf("%s %llu bytes", what, (unsigned long long)len);
		if (a->type != A_SEND && a->type != A_SEND_FILE)
			printf(" at offset %llu", (unsigned long long)a->offset);
		if (a->type == A_WRITE_IMM)
			printf(", immediate %u (0x%x)", a->imm, a->imm);
		printf(": %s\n", result);
	}
	fflush(stdout);
}

/* Where two buffers first differ, or -1. */
static long long first_diff(const char *a, const char *b, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (a[i] != b[i])
			return (long long)i;
	return -1;
}

static __u64 act_len(struct session *s, const struct action *a)
{
	if (a->offset > s->tok.length)
		die("offset %llu beyond the token's %u bytes",
		    (unsigned long long)a->offset, s->tok.length);
	return a->len ? a->len : s->tok.length - a->offset;
}

static void act_send(struct session *s, const struct action *a)
{
	size_t len;
	char *buf;
	long n;
	int ret;

	if (a->type == A_SEND) {
		buf = strdup(a->arg);
		len = strlen(buf);
	} else {
		buf = read_file(a->arg, &len);
	}
	ret = do_send(s->fd, s->h, buf, len);
	if (ret)
		die_err(-ret, NULL, "send of %zu bytes", len);
	if (!a->verify) {
		report("send", a, len, "sent");
		free(buf);
		return;
	}
	n = do_recv(s->fd, s->h, s->msg, s->max_msg, REPLY_MS);
	if (n < 0)
		die_err(-n, NULL, "waiting for the echo");
	if ((size_t)n != len || first_diff(buf, s->msg, len) >= 0)
		die("echo of %zu bytes differs (got %ld bytes, first difference at %lld)",
		    len, n, (size_t)n == len ? first_diff(buf, s->msg, len) : 0LL);
	report("send", a, len, "echo matches");
	free(buf);
}

/* Ask the server for the checksum of [off, off + len) of its buffer. */
static __u64 server_sum(struct session *s, __u64 off, __u64 len)
{
	unsigned long long o2, l2, sum;
	char req[96];
	long n;
	int ret;

	snprintf(req, sizeof(req), SUM_TAG " %llu %llu",
		 (unsigned long long)off, (unsigned long long)len);
	ret = do_send(s->fd, s->h, req, strlen(req));
	if (ret)
		die_err(-ret, NULL, "checksum request");
	n = do_recv(s->fd, s->h, s->msg, s->max_msg, REPLY_MS);
	if (n < 0)
		die_err(-n, NULL, "waiting for the checksum");
	s->msg[n] = 0;
	if (sscanf(s->msg, SUM_TAG " %llu %llu %llx", &o2, &l2, &sum) != 3 ||
	    o2 != off || l2 != len)
		die("bad checksum reply '%s'", s->msg);
	return sum;
}

/* How to fix what a one-sided operation failed with, if we know. */
static const char *rdma_hint(int err, bool atomic)
{
	switch (err) {
	case EOPNOTSUPP:
		return atomic ? "the device has no atomics (siw, iWARP)" :
				"iWARP (siw) has no immediate data";
	case EACCES:
		return atomic ? "the region must allow atomics: serve --access rwa" :
				"does the region allow it? see serve --access";
	case ERANGE:
		return "outside the token: check --offset and --len";
	case EINVAL:
		return atomic ? "token address plus --offset must be 8-byte aligned" :
				NULL;
	}
	return NULL;
}

/*
 * The hint for a failed one-sided operation: what ended the connection, if
 * it has ended (its errno and the failed work completion's status), then
 * rdma_hint()'s advice.
 */
static const char *rdma_fail_hint(const struct session *s, int err,
				  bool atomic)
{
	const char *advice = rdma_hint(err, atomic);
	static char buf[256];
	struct krdma_ioc_query q = { .handle = s->h };

	if (ioctl(s->fd, KRDMA_IOC_QUERY, &q) || !q.error)
		return advice;
	snprintf(buf, sizeof(buf), "the connection failed: %s%s%s%s%s",
		 strerror(-q.error),
		 q.wc_status ? ", work completion: " : "",
		 q.wc_status ? wc_status_str(q.wc_status) : "",
		 advice ? "; " : "", advice ? advice : "");
	return buf;
}

static void act_write(struct session *s, const struct action *a)
{
	bool imm = a->type == A_WRITE_IMM;
	const char *what = imm ? "write-imm" : "write";
	size_t len;
	char *data = read_file(a->arg, &len), *back;
	long long d;
	int ret;

	if (a->len && a->len < len)
		len = a->len;
	if (!len)
		die("%s is empty", a->arg);
	if (imm)
		ret = do_write_imm(s->fd, s->h, data, len, &s->tok, a->offset,
				   a->imm);
	else
		ret = do_rdma(s->fd, s->h, true, data, len, &s->tok, a->offset);
	if (ret)
		die_err(-ret, rdma_fail_hint(s, -ret, false),
			"RDMA WRITE%s of %zu bytes at offset %llu",
			imm ? " with immediate" : "", len,
			(unsigned long long)a->offset);
	if (!a->verify) {
		report(what, a, len, "written");
		free(data);
		return;
	}
	/* Check it both ways: read it back, and the server's own view. */
	back = malloc(len);
	if (!back)
		die("out of memory");
	ret = do_rdma(s->fd, s->h, false, back, len, &s->tok, a->offset);
	if (ret)
		die_err(-ret, rdma_fail_hint(s, -ret, false), "RDMA READ back");
	d = first_diff(data, back, len);
	if (d >= 0)
		die("read back differs from what was written at byte %lld", d);
	if (server_sum(s, a->offset, len) != fnv1a(data, len))
		die("the server's checksum of the written range differs");
	report(what, a, len, "verified (read back, server checksum)");
	free(back);
	free(data);
}

static void act_read(struct session *s, const struct action *a)
{
	__u64 len = act_len(s, a);
	char *buf = malloc(len ? len : 1), *want = NULL;
	size_t wlen;
	long long d;
	int ret;

	if (!buf)
		die("out of memory");
	if (a->type == A_EXPECT) {
		want = read_file(a->arg, &wlen);
		if (!a->len)
			len = wlen;
		if (wlen != len)
			die("%s has %zu bytes, expected %llu", a->arg, wlen,
			    (unsigned long long)len);
	}
	ret = do_rdma(s->fd, s->h, false, buf, len, &s->tok, a->offset);
	if (ret)
		die_err(-ret, rdma_fail_hint(s, -ret, false),
			"RDMA READ of %llu bytes at offset %llu",
			(unsigned long long)len, (unsigned long long)a->offset);
	if (a->type == A_EXPECT) {
		d = first_diff(buf, want, len);
		if (d >= 0)
			die("remote bytes differ from %s at byte %lld", a->arg,
			    d);
		free(want);
		report("read", a, len, "matches");
	} else {
		write_file(a->arg, buf, len);
		report("read", a, len, strcmp(a->arg, "-") ? a->arg : "stdout");
	}
	free(buf);
}

static void act_atomic(struct session *s, const struct action *a)
{
	bool cas = a->type == A_CAS;
	__u64 i, old = 0, first = 0;
	int ret;

	for (i = 0; i < (cas ? 1 : a->count); i++) {
		ret = do_atomic(s->fd, s->h, cas, &s->tok, a->offset, a->val,
				a->swap, &old);
		if (ret)
			die_err(-ret, rdma_fail_hint(s, -ret, true),
				"%s at offset %llu", cas ? "compare-and-swap" :
				"fetch-and-add", (unsigned long long)a->offset);
		if (!i)
			first = old;
	}
	if (json) {
		printf("{\"event\":\"%s\",\"offset\":%llu,", cas ? "cas" : "fadd",
		       (unsigned long long)a->offset);
		if (cas)
			printf("\"compare\":%llu,\"swap\":%llu,\"old\":%llu,\"swapped\":%s}\n",
			       (unsigned long long)a->val,
			       (unsigned long long)a->swap,
			       (unsigned long long)old,
			       old == a->val ? "true" : "false");
		else
			printf("\"add\":%llu,\"count\":%llu,\"old\":%llu,\"last_old\":%llu}\n",
			       (unsigned long long)a->val,
			       (unsigned long long)a->count,
			       (unsigned long long)first,
			       (unsigned long long)old);
	} else if (cas) {
		printf("cas %llu -> %llu at offset %llu: old %llu, %s\n",
		       (unsigned long long)a->val, (unsigned long long)a->swap,
		       (unsigned long long)a->offset, (unsigned long long)old,
		       old == a->val ? "swapped" : "not swapped");
	} else if (a->count == 1) {
		printf("fadd %llu at offset %llu: old %llu\n",
		       (unsigned long long)a->val,
		       (unsigned long long)a->offset, (unsigned long long)old);
	} else {
		printf("fadd %llu at offset %llu, %llu times: old %llu first, %llu last\n",
		       (unsigned long long)a->val,
		       (unsigned long long)a->offset,
		       (unsigned long long)a->count,
		       (unsigned long long)first, (unsigned long long)old);
	}
	fflush(stdout);
}

static void client_run(struct conn_opts *o, struct action *acts, int nacts,
		       __u64 loops, bool have_tok,
		       const struct krdma_ioc_token *tok)
{
	struct krdma_ioc_query q;
	struct session s = {};
	__u64 l;
	int i;

	s.fd = dev_open();
	s.h = do_connect(s.fd, o);
	do_query(s.fd, s.h, &q);
	print_conn("connected", &q);
	s.max_msg = q.max_msg_size;
	s.msg = malloc(s.max_msg + 1);
	if (!s.msg)
		die("out of memory");
	s.have_tok = have_tok;
	if (have_tok)
		s.tok = *tok;
	for (i = 0; i < nacts; i++)
		if (acts[i].type != A_SEND && acts[i].type != A_SEND_FILE)
			get_token(&s);
	for (l = 0; l < loops; l++) {
		for (i = 0; i < nacts; i++) {
			switch (acts[i].type) {
			case A_SEND:
			case A_SEND_FILE:
				if (acts[i].verify)
					get_token(&s);	/* not an echo */
				act_send(&s, &acts[i]);
				break;
			case A_WRITE:
			case A_WRITE_IMM:
				act_write(&s, &acts[i]);
				break;
			case A_READ:
			case A_EXPECT:
				act_read(&s, &acts[i]);
				break;
			case A_FADD:
			case A_CAS:
				act_atomic(&s, &acts[i]);
				break;
			}
		}
	}
	/* A krdmactl server (it sent the token) ends our turn on "bye". */
	if (!have_tok && s.have_tok)
		do_send(s.fd, s.h, BYE_TAG, strlen(BYE_TAG));
	do_query(s.fd, s.h, &q);
	print_conn("done", &q);
	free(s.msg);
	close(s.fd);
}

/*
 * client: any sequence of actions.  write/read: one action, with the token
 * from --token or from a krdmactl server.
 */
static int client_like(int argc, char **argv, int fixed)
{
	static const struct option rw_lo[] = {
		{ "token", required_argument, NULL, O_TOKEN },
		{ "offset", required_argument, NULL, O_OFFSET },
		{ "len", required_argument, NULL, O_LEN },
		{ "no-verify", no_argument, NULL, O_NO_VERIFY },
		{}
	}, client_lo[] = {
		{ "loop", required_argument, NULL, O_LOOP },
		{ "send", required_argument, NULL, O_SEND },
		{ "send-file", required_argument, NULL, O_SEND_FILE },
		{ "write", required_argument, NULL, O_WRITE },
		{ "write-imm", required_argument, NULL, O_WRITE_IMM },
		{ "read", required_argument, NULL, O_READ },
		{ "expect", required_argument, NULL, O_EXPECT },
		{ "imm", required_argument, NULL, O_IMM },
		{}
	}, imm_lo[] = {
		{ "imm", required_argument, NULL, O_IMM },
		{}
	};
	struct conn_opts o = {};
	struct krdma_ioc_token tok = {};
	struct action *acts = calloc(argc, sizeof(*acts));
	__u64 offset = 0, len = 0, loops = 1;
	const char *addr = NULL;
	bool have_tok = false, verify = true;
	__u32 imm = 0;
	int i, c, n = 0;

	if (!acts)
		die("out of memory");
	opt_begin(argc, argv, CONN_SHORT, (const struct option *[]){
		  conn_lo, rw_lo, fixed < 0 ? client_lo :
		  fixed == A_WRITE_IMM ? imm_lo : NULL, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		struct action *x = &acts[n];

		if (conn_opt(c, &o))
			continue;
		switch (c) {
		case O_TOKEN:
			parse_token(optarg, &tok);
			have_tok = true;
			break;
		case O_OFFSET:
			offset = parse_size(optarg, "--offset", UINT64_MAX);
			break;
		case O_LEN:
			len = parse_size(optarg, "--len", KRDMA_IOC_MAX_XFER);
			break;
		case O_NO_VERIFY:
			verify = false;
			break;
		case O_LOOP:
			loops = parse_size(optarg, "--loop", UINT64_MAX);
			break;
		case O_IMM:
			imm = parse_plain(optarg, "--imm");
			break;
		case O_SEND:
		case O_SEND_FILE:
		case O_WRITE:
		case O_WRITE_IMM:
		case O_READ:
		case O_EXPECT:
			x->type = c == O_SEND ? A_SEND :
				  c == O_SEND_FILE ? A_SEND_FILE :
				  c == O_WRITE ? A_WRITE :
				  c == O_WRITE_IMM ? A_WRITE_IMM :
				  c == O_READ ? A_READ : A_EXPECT;
			x->arg = optarg;
			x->offset = offset;
			x->len = len;
			x->verify = verify;
			x->imm = imm;
			n++;
			break;
		default:
			if (!addr) {
				addr = optarg;
			} else if (fixed >= 0 && !n) {
				x->type = fixed;
				x->arg = optarg;
				n++;
			} else {
				usage_error("unexpected '%s'", optarg);
			}
		}
	}
	if (!addr)
		usage_error("missing ADDR:PORT");
	if (!n)
		usage_error(fixed < 0 ? "no actions (--send, --write, --read, --expect)" :
			    "missing FILE");
	/* write/read: options may come after the file. */
	for (i = 0; fixed >= 0 && i < n; i++) {
		acts[i].offset = offset;
		acts[i].len = len;
		acts[i].verify = verify;
		acts[i].imm = imm;
	}
	if (have_tok && fixed < 0) {
		for (i = 0; i < n; i++)
			if (acts[i].type == A_SEND || acts[i].type == A_SEND_FILE)
				acts[i].verify = false;	/* not a krdmactl server */
	}
	if (!loops)
		usage_error("--loop must be at least 1");
	parse_addr(addr, &o.addr, true);
	client_run(&o, acts, n, loops, have_tok, &tok);
	free(acts);
	return 0;
}

static int cmd_client(int argc, char **argv)
{
	return client_like(argc, argv, -1);
}

static int cmd_write(int argc, char **argv)
{
	return client_like(argc, argv, A_WRITE);
}

static int cmd_read(int argc, char **argv)
{
	return client_like(argc, argv, A_READ);
}

static int cmd_write_imm(int argc, char **argv)
{
	return client_like(argc, argv, A_WRITE_IMM);
}

/* A 64-bit operand; "-N" is 2^64 - N (a fetch-and-add that subtracts). */
static __u64 parse_u64_op(const char *s, const char *what)
{
	if (s[0] == '-') {
		if (!isdigit((unsigned char)s[1]))
			usage_error("bad %s '%s'", what, s);
		return -parse_num(s + 1, what, UINT64_MAX, false);
	}
	return parse_num(s, what, UINT64_MAX, false);
}

/* atomic fadd|cas ADDR:PORT VALUE... */
static int cmd_atomic(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "token", required_argument, NULL, O_TOKEN },
		{ "offset", required_argument, NULL, O_OFFSET },
		{ "count", required_argument, NULL, 'n' },
		{}
	};
	struct conn_opts o = {};
	struct krdma_ioc_token tok = {};
	struct action a = { .count = 1 };
	const char *ops[4];
	bool have_tok = false, cas, count_set = false;
	int c, n = 0;

	opt_begin(argc, argv, CONN_SHORT "n:",
		  (const struct option *[]){ conn_lo, lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		if (conn_opt(c, &o))
			continue;
		switch (c) {
		case O_TOKEN:
			parse_token(optarg, &tok);
			have_tok = true;
			break;
		case O_OFFSET:
			a.offset = parse_size(optarg, "--offset", UINT64_MAX);
			break;
		case 'n':
			a.count = parse_size(optarg, "--count", UINT64_MAX);
			count_set = true;
			break;
		default:
			if (n == (int)ARRAY_SIZE(ops))
				usage_error("unexpected '%s'", optarg);
			ops[n++] = optarg;
		}
	}
	if (!n)
		usage_error("missing fadd or cas");
	if (strcmp(ops[0], "fadd") && strcmp(ops[0], "cas"))
		usage_error("unknown operation '%s' (fadd or cas)", ops[0]);
	cas = !strcmp(ops[0], "cas");
	if (n < 2)
		usage_error("missing ADDR:PORT");
	if (n != (cas ? 4 : 3))
		usage_error(cas ? "cas takes COMPARE and SWAP" :
			    "fadd takes one ADD");
	if (cas && count_set)
		usage_error("--count is fadd's");
	if (!a.count)
		usage_error("--count must be at least 1");
	a.type = cas ? A_CAS : A_FADD;
	a.val = parse_u64_op(ops[2], cas ? "COMPARE" : "ADD");
	if (cas)
		a.swap = parse_u64_op(ops[3], "SWAP");
	parse_addr(ops[1], &o.addr, true);
	client_run(&o, &a, 1, 1, have_tok, &tok);
	return 0;
}

/* ---- sysfs: stat and test ------------------------------------------- */

static bool sys_read(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f) {
		snprintf(buf, len, "?");
		return false;
	}
	n = fread(buf, 1, len - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return true;
}

static int sys_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char * const *)a, *(char * const *)b);
}

/* The sorted entries of @dir (no dot files); the caller frees them. */
static int list_dir(const char *dir, char ***out)
{
	struct dirent *de;
	char **v = NULL;
	int n = 0;
	DIR *d = opendir(dir);

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		if (!v)
			die("out of memory");
		v[n++] = strdup(de->d_name);
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), name_cmp);
	*out = v;
	return n;
}

static void free_list(char **v, int n)
{
	while (n--)
		free(v[n]);
	free(v);
}

/* One object (directory) as a JSON object of its files, or as text. */
static void stat_obj(const char *dir, const char *name, const char *const *keys,
		     bool all)
{
	char path[PATH_MAX], val[512];
	char **files = NULL;
	int i, n = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (all) {
		n = list_dir(path, &files);
		if (n < 0)
			die("no %s", path);
	} else {
		while (keys[n])
			n++;
	}
	if (json) {
		printf("{\"name\":");
		json_cstr(stdout, name);
	} else {
		printf("  %s", name);
	}
	for (i = 0; i < n; i++) {
		const char *k = all ? files[i] : keys[i];

		if (!sys_read(path, k, val, sizeof(val)))
			continue;
		if (json) {
			printf(",");
			json_cstr(stdout, k);
			printf(":");
			json_value(stdout, val);
		} else {
			printf(all ? "\n    %s: %s" : " %s=%s", k, val);
		}
	}
	printf(json ? "}" : "\n");
	if (all)
		free_list(files, n);
}

static void stat_group(const char *group, const char *const *keys, bool first)
{
	char dir[PATH_MAX];
	char **names;
	int i, n;

	snprintf(dir, sizeof(dir), SYSFS "/%s", group);
	n = list_dir(dir, &names);
	if (n < 0)
		n = 0;
	if (json)
		printf("%s\"%s\":[", first ? "" : ",", group);
	else
		printf("%s: %d\n", group, n);
	for (i = 0; i < n; i++) {
		if (json && i)
			printf(",");
		stat_obj(dir, names[i], keys, false);
	}
	if (json)
		printf("]");
	free_list(names, n);
}

static int cmd_stat(int argc, char **argv)
{
	static const char *const dev_keys[] = {
		"transport", "port_state", "atomics", NULL };
	static const char *const lis_keys[] = {
		"addr", "state", "accepted", "rejected", NULL };
	static const char *const conn_keys[] = {
		"state", "role", "local_addr", "peer_addr", "device",
		"send_ops", "recv_ops", "write_ops", "read_ops", "errors",
		NULL };
	const char *name = NULL;
	char v[64], t[64];

	opt_begin(argc, argv, "-:jh", (const struct option *[]){ NULL });
	while (opt_next(argc, argv) != -1) {
		if (name)
			usage_error("unexpected '%s'", optarg);
		name = optarg;
	}
	if (access(SYSFS, F_OK))
		die_err(errno, LOAD_HINT, SYSFS);
	if (name) {
		char p[PATH_MAX];

		snprintf(p, sizeof(p), SYSFS "/conns/%s", name);
		if (!access(p, F_OK)) {
			stat_obj(SYSFS "/conns", name, NULL, true);
		} else {
			snprintf(p, sizeof(p), SYSFS "/listeners/%s", name);
			if (access(p, F_OK))
				die("no connection or listener '%s'", name);
			stat_obj(SYSFS "/listeners", name, NULL, true);
		}
		if (json)
			printf("\n");
		return 0;
	}
	sys_read(SYSFS, "version", v, sizeof(v));
	sys_read(SYSFS, "conns_total", t, sizeof(t));
	if (json) {
		printf("{\"version\":");
		json_cstr(stdout, v);
		printf(",\"conns_total\":");
		json_value(stdout, t);
		printf(",");
	} else {
		printf("krdma %s, %s connections made since load\n", v, t);
	}
	stat_group("devices", dev_keys, true);
	stat_group("listeners", lis_keys, false);
	stat_group("conns", conn_keys, false);
	if (json)
		printf("}\n");
	return 0;
}

/* Wait up to @ms milliseconds for @file to be (or to leave) @want. */
static int wait_sys(const char *dir, const char *file, const char *want,
		    bool equal, __u64 ms)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	char v[128];
	__u64 t;

	for (t = 0;; t += 100) {
		if (sys_read(dir, file, v, sizeof(v)) &&
		    (!strcmp(v, want)) == equal)
			return 0;
		if (t >= ms)
			return -1;
		nanosleep(&ts, NULL);
	}
}

/*
 * Run VERB (test or bench) with ARGS on sysfs connection @name, or on a
 * connection made for it to a listener made for it at @addr (both sides
 * in this kernel, removed afterwards); wait up to @ms for
 * PREFIX_status to leave "running" and print the PREFIX_* values @res.
 */
static int sysfs_run(const char *verb, const char *name, const char *addr,
		     const char *args, const char *const *res, __u64 ms)
{
	char lname[32], cname[32], cmd[320], dir[PATH_MAX], st[128], sf[32];
	int ret, rc, err;

	/* One word each in the control command. */
	if (name && strpbrk(name, "\t\n\r /"))
		usage_error("bad connection name");
	if (access(SYSFS "/control", W_OK)) {
		err = errno;
		die_err(err, err == EACCES ? "run as root" :
			err == ENOENT ? LOAD_HINT : NULL, SYSFS "/control");
	}
	if (addr) {
		struct krdma_ioc_addr a;

		parse_addr(addr, &a, true);	/* check it here */
		snprintf(lname, sizeof(lname), "krdmactl-l%d", getpid());
		snprintf(cname, sizeof(cname), "krdmactl-c%d", getpid());
		snprintf(cmd, sizeof(cmd), "listen name=%s addr=%s", lname,
			 addr);
		ret = sys_write(SYSFS "/control", cmd);
		if (ret)
			die_err(-ret, NULL, "'%s'", cmd);
		snprintf(cmd, sizeof(cmd), "connect name=%s addr=%s", cname,
			 addr);
		ret = sys_write(SYSFS "/control", cmd);
		if (ret) {
			snprintf(cmd, sizeof(cmd), "unlisten name=%s", lname);
			sys_write(SYSFS "/control", cmd);
			die_err(-ret, NULL, "'connect name=%s addr=%s'", cname,
				addr);
		}
		name = cname;
		/* The passive side answers once it is established. */
		snprintf(dir, sizeof(dir), SYSFS "/conns/%s.0", lname);
		if (wait_sys(dir, "state", "connected", true, 10000))
			warnx("%s.0 is not connected", lname);
	}
	snprintf(dir, sizeof(dir), SYSFS "/conns/%s", name);
	snprintf(sf, sizeof(sf), "%s_status", verb);
	snprintf(cmd, sizeof(cmd), "%s name=%s %s", verb, name, args);
	ret = sys_write(SYSFS "/control", cmd);
	if (ret)
		warn_err(-ret, "'%s'", cmd);
	else if (wait_sys(dir, sf, "running", false, ms))
		warnx("%s still running after %llu ms (raise --timeout MS)",
		      verb, (unsigned long long)ms);
	sys_read(dir, sf, st, sizeof(st));
	rc = !ret && !strcmp(st, "passed") ? 0 : 1;
	if (!ret) {
		if (json) {
			stat_obj(SYSFS "/conns", name, res, false);
			printf("\n");
		} else {
			printf("%s", verb);
			stat_obj(SYSFS "/conns", name, res, false);
		}
	}
	if (addr) {
		/* Both ends were made through sysfs: both go. */
		snprintf(cmd, sizeof(cmd), "disconnect name=%s", cname);
		sys_write(SYSFS "/control", cmd);
		snprintf(cmd, sizeof(cmd), "disconnect name=%s.0", lname);
		sys_write(SYSFS "/control", cmd);
		snprintf(cmd, sizeof(cmd), "unlisten name=%s", lname);
		sys_write(SYSFS "/control", cmd);
	}
	if (rc && !ret)
		warnx("%s %s: %s", verb, name, st);
	return rc;
}

static int cmd_test(int argc, char **argv)
{
	static const char *const res[] = {
		"test_status", "test_ops", "test_bytes", "test_usecs",
		"test_lat_min_ns", "test_lat_avg_ns", "test_lat_max_ns", NULL };
	const char *name = NULL, *addr = NULL, *op = "send,write,read";
	__u64 size = 4096, count = 10;
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, O_ADDR },
		{ "op", required_argument, NULL, O_OP },
		{ "size", required_argument, NULL, 's' },
		{ "count", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{}
	};
	__u64 ms = 120000;
	char args[160];
	int c;

	opt_begin(argc, argv, "-:jhs:n:", (const struct option *[]){ lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		switch (c) {
		case O_ADDR:
			addr = optarg;
			break;
		case O_OP:
			op = optarg;
			break;
		case 's':
			size = parse_u32(optarg, "--size");
			break;
		case 'n':
			count = parse_u32(optarg, "--count");
			break;
		case O_TIMEOUT:
			ms = parse_plain(optarg, "--timeout");
			break;
		default:
			if (name)
				usage_error("unexpected '%s'", optarg);
			name = optarg;
		}
	}
	if (!name == !addr)
		usage_error("give a sysfs connection NAME or --addr IP:PORT");
	if (strpbrk(op, "\t\n\r "))
		usage_error("bad --op");
	snprintf(args, sizeof(args), "op=%s size=%llu count=%llu", op,
		 (unsigned long long)size, (unsigned long long)count);
	return sysfs_run("test", name, addr, args, res, ms);
}

static int cmd_bench(int argc, char **argv)
{
	static const char *const res[] = {
		"bench_status", "bench_ops", "bench_bytes", "bench_usecs",
		"bench_bw_mbps", "bench_msg_rate", "bench_lat_min_ns",
		"bench_lat_p50_ns", "bench_lat_p99_ns", "bench_lat_max_ns",
		NULL };
	const char *name = NULL, *addr = NULL, *op = NULL;
	__u64 size = 4096, count = 0, depth = 0, batch = 0, bsecs = 0;
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, O_ADDR },
		{ "op", required_argument, NULL, O_OP },
		{ "size", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, O_BATCH },
		{ "count", required_argument, NULL, 'n' },
		{ "secs", required_argument, NULL, 'D' },
		{ "duration", required_argument, NULL, 'D' },
		{ "timeout", required_argument, NULL, O_TIMEOUT },
		{}
	};
	__u64 ms = 0;
	char args[160];
	int c, n;

	opt_begin(argc, argv, "-:jhs:t:n:D:",
		  (const struct option *[]){ lo, NULL });
	while ((c = opt_next(argc, argv)) != -1) {
		switch (c) {
		case O_ADDR:
			addr = optarg;
			break;
		case O_OP:
			op = optarg;
			break;
		case 's':
			size = parse_u32(optarg, "--size");
			break;
		case 't':
			depth = parse_u32(optarg, "--depth");
			break;
		case O_BATCH:
			batch = parse_u32(optarg, "--batch");
			break;
		case 'n':
			count = parse_u32(optarg, "--count");
			break;
		case 'D':
			bsecs = parse_plain(optarg, "--secs");
			break;
		case O_TIMEOUT:
			ms = parse_plain(optarg, "--timeout");
			break;
		default:
			if (name)
				usage_error("unexpected '%s'", optarg);
			name = optarg;
		}
	}
	if (!name == !addr)
		usage_error("give a sysfs connection NAME or --addr IP:PORT");
	if (!op || (strcmp(op, "write") && strcmp(op, "read") &&
		    strcmp(op, "send")))
		usage_error("--op write, read or send");
	if (count && bsecs)
		usage_error("--count or --secs, not both");
	n = snprintf(args, sizeof(args), "op=%s size=%llu", op,
		     (unsigned long long)size);
	if (depth)
		n += snprintf(args + n, sizeof(args) - n, " depth=%llu",
			      (unsigned long long)depth);
	if (batch)
		n += snprintf(args + n, sizeof(args) - n, " batch=%llu",
			      (unsigned long long)batch);
	if (count)
		snprintf(args + n, sizeof(args) - n, " count=%llu",
			 (unsigned long long)count);
	else if (bsecs)
		snprintf(args + n, sizeof(args) - n, " secs=%llu",
			 (unsigned long long)bsecs);
	/* A timed run ends by itself; give a counted one two minutes. */
	if (!ms)
		ms = bsecs ? (bsecs + 60) * 1000 : 120000;
	return sysfs_run("bench", name, addr, args, res, ms);
}

static int cmd_version(int argc, char **argv)
{
	struct krdma_ioc_version v;
	int fd;

	opt_begin(argc, argv, "-:jh", (const struct option *[]){ NULL });
	if (opt_next(argc, argv) != -1)
		usage_error("unexpected '%s'", optarg);
	fd = dev_open();
	if (ioctl(fd, KRDMA_IOC_VERSION, &v))
		die_err(errno, NULL, "VERSION");
	if (json) {
		printf("{\"abi_version\":%u,\"max_handles\":%u",
		       v.abi_version, v.max_handles);
		printf(",\"max_msg_size\":%u,\"max_depth\":%u,\"max_xfer\":%llu}\n",
		       v.max_msg_size, v.max_depth,
		       (unsigned long long)v.max_xfer);
	} else {
		printf("ABI version %u; up to %u handles per session\n",
		       v.abi_version, v.max_handles);
		printf("messages up to %u bytes, depth up to %u, transfers up to %llu bytes\n",
		       v.max_msg_size, v.max_depth,
		       (unsigned long long)v.max_xfer);
	}
	close(fd);
	return 0;
}

static const struct cmd cmds[] = {
	{ "listen", cmd_listen,
	  "listen ADDR:PORT [-n|--count N] [connection options]\n"
	  "  Accept one connection and print its messages until the peer closes\n"
	  "  (or N messages came)." },
	{ "connect", cmd_connect,
	  "connect ADDR:PORT [--hold SECONDS] [connection options]\n"
	  "  Connect, print the connection, keep it SECONDS (default 0), close." },
	{ "send", cmd_send,
	  "send ADDR:PORT [--] MESSAGE... [--file FILE] [--imm N] [connection options]\n"
	  "  Connect and send each MESSAGE (and FILE's contents) as one message;\n"
	  "  --imm: each with the 32-bit immediate value N (SEND_WITH_IMM; not\n"
	  "  over iWARP)." },
	{ "recv", cmd_recv,
	  "recv ADDR:PORT [-n|--count N] [--out FILE] [connection options]\n"
	  "  Accept one connection, write the payload of N messages (default 1)\n"
	  "  to FILE or stdout." },
	{ "serve", cmd_serve,
	  "serve ADDR:PORT [-s|--size BYTES] [--file FILE] [--dump FILE]\n"
	  "      [--access RIGHTS] [--clients N] [connection options]\n"
	  "  Accept N clients (default 1, 0: forever), one at a time.  For each,\n"
	  "  register BYTES (default: FILE's size, else 1M) holding FILE, send the\n"
	  "  token as the first message, echo messages, print write-imm notices,\n"
	  "  answer checksum requests; write the buffer to --dump FILE after each\n"
	  "  client.  RIGHTS: r (read), w (write), a (atomic) or several, such as\n"
	  "  rwa (default rw; a needs a device with atomics, not siw)." },
	{ "client", cmd_client,
	  "client ADDR:PORT [--token ADDR:RKEY:LEN] [--loop N] ACTION...\n"
	  "  ACTION: --send TEXT | --send-file FILE   send, check the echo\n"
	  "          --write FILE    RDMA WRITE FILE, read it back and compare,\n"
	  "                          compare with the server's checksum\n"
	  "          --read FILE     RDMA READ into FILE ('-': stdout)\n"
	  "          --expect FILE   RDMA READ and compare with FILE\n"
	  "          --write-imm FILE  as --write, with the immediate of --imm\n"
	  "  --offset N, --len N, --imm VALUE and --no-verify apply to the actions\n"
	  "  after them.\n"
	  "  Without --token the token is the first message of 'krdmactl serve'.\n"
	  "  A token is written 0xADDR:0xRKEY:LENGTH, as serve prints it." },
	{ "write", cmd_write,
	  "write ADDR:PORT FILE [--offset N] [--len N] [--token ADDR:RKEY:LEN]\n"
	  "      [--no-verify]\n"
	  "  RDMA WRITE FILE into the peer's region (client --write)." },
	{ "read", cmd_read,
	  "read ADDR:PORT FILE [--offset N] [--len N] [--token ADDR:RKEY:LEN]\n"
	  "  RDMA READ from the peer's region into FILE ('-': stdout)." },
	{ "write-imm", cmd_write_imm,
	  "write-imm ADDR:PORT FILE [--imm VALUE] [--offset N] [--len N]\n"
	  "      [--token ADDR:RKEY:LEN] [--no-verify]\n"
	  "  RDMA WRITE FILE into the peer's region, then notify the peer with\n"
	  "  the 32-bit immediate VALUE (default 0): its RECV reports it after\n"
	  "  the data is in place ('krdmactl serve' prints it).  Verified as\n"
	  "  write does.  Not over iWARP (siw): no immediate data there." },
	{ "atomic", cmd_atomic,
	  "atomic fadd ADDR:PORT ADD [-n|--count N] [--offset N]\n"
	  "       [--token ADDR:RKEY:LEN] [connection options]\n"
	  "atomic cas ADDR:PORT COMPARE SWAP [--offset N] [--token ADDR:RKEY:LEN]\n"
	  "  Fetch-and-add ADD (N times, default once) to, or compare-and-swap\n"
	  "  (store SWAP if the value is COMPARE) the 64-bit value at --offset\n"
	  "  (default 0; token address plus offset must be 8-byte aligned) of the\n"
	  "  peer's region, which must allow atomics ('krdmactl serve --access\n"
	  "  rwa').  Prints the value before (fadd: the first and the last).\n"
	  "  Numbers are decimal or 0x hex; -N is 2^64 - N (after '--', as in\n"
	  "  'atomic fadd ADDR:PORT -- -1', which subtracts 1).\n"
	  "  Not on devices without atomics (siw)." },
	{ "stat", cmd_stat,
	  "stat [NAME]\n"
	  "  krdma's devices, listeners and connections (from sysfs), or every\n"
	  "  value of one connection or listener." },
	{ "test", cmd_test,
	  "test NAME|--addr IP:PORT [--op send,write,read,atomic]\n"
	  "     [-s|--size BYTES] [-n|--count N] [--timeout MS]\n"
	  "  Run the in-kernel self-test on sysfs connection NAME, or on a\n"
	  "  connection made for it to a listener made for it at IP:PORT.\n"
	  "  --timeout: how long to wait for the result (default 120000)." },
	{ "bench", cmd_bench,
	  "bench NAME|--addr IP:PORT --op write|read|send [-s|--size BYTES]\n"
	  "      [-t|--depth N] [--batch N] [-n|--count N | -D|--secs SECONDS]\n"
	  "      [--timeout MS]\n"
	  "  Run the in-kernel benchmark on sysfs connection NAME (or on a\n"
	  "  connection made for it, as test does): bandwidth, message rate and\n"
	  "  latency (min, median, p99, max) of --op at --size (default 4K),\n"
	  "  --depth operations in flight (default: the queue depth); write and\n"
	  "  read post --batch operations at a time with one completion\n"
	  "  (default 1).  --duration is --secs.  --timeout: how long to wait for\n"
	  "  the result (default: --secs plus a minute, else 120000)." },
	{ "version", cmd_version,
	  "version\n"
	  "  The module's ABI version and limits (-V: krdmactl's own version)." },
};

static noreturn void main_usage(FILE *f, int status)
{
	size_t i;

	fprintf(f, "usage: %s [-j|--json] [--dev PATH] COMMAND [ARGS]\n"
		"       %s -V|--version\n\ncommands:\n", prog, prog);
	for (i = 0; i < ARRAY_SIZE(cmds); i++)
		fprintf(f, "  %s\n", cmds[i].usage);
	fprintf(f, "\n%s", common_help);
	fprintf(f, "Exit status: 0 success, 1 failure, 2 usage.  With --json an\n"
		"error is a JSON object on stderr:\n"
		"  {\"error\":\"...\",\"errno\":N,\"command\":\"...\"}\n");
	exit(status);
}

/* krdmactl's own version, without /dev/krdma. */
static int print_version(void)
{
	if (json)
		printf("{\"version\":\"%s\",\"abi_version\":%u}\n",
		       KRDMA_VERSION, KRDMA_ABI_VERSION);
	else
		printf("%s %s (ABI version %u)\n", prog, KRDMA_VERSION,
		       KRDMA_ABI_VERSION);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "dev", required_argument, NULL, O_DEV },
		{}
	};
	bool version = false;
	size_t i;
	int c, at;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* '+': the options before COMMAND; the command's own come after. */
	opterr = 0;
	for (;;) {
		at = optind;
		c = getopt_long(argc, argv, "+:jhV", lo, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'h':
			main_usage(stdout, 0);
		case 'V':
			version = true;
			break;
		case O_DEV:
			devpath = optarg;
			break;
		case '?':
			usage_error("unknown option '%s'", opt_name(argv, at));
		default:
			usage_error("%s needs a value", opt_name(argv, at));
		}
	}
	if (version)
		return print_version();
	if (optind >= argc) {
		if (json)
			usage_error("no COMMAND");
		main_usage(stderr, 2);
	}
	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (!strcmp(argv[optind], cmds[i].name)) {
			cur = &cmds[i];
			cmdname = cur->name;
			return cur->fn(argc - optind, argv + optind);
		}
	}
	usage_error("unknown command '%s'", argv[optind]);
}
