/*
 * util.c - x-alloc, fd I/O loops and number parsing shared by every module.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

static void die_oom(void) __attribute__((noreturn));

static void die_oom(void)
{
	static const char msg[] = "sandbox-mcp: out of memory\n";
	ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		die_oom();
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		die_oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *r = realloc(p, n ? n : 1);
	if (!r)
		die_oom();
	return r;
}

void *xreallocarray(void *p, size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		die_oom();
	return xrealloc(p, nmemb * size);
}

char *xstrdup(const char *s)
{
	char *r = strdup(s);
	if (!r)
		die_oom();
	return r;
}

char *xstrndup(const char *s, size_t n)
{
	char *r = strndup(s, n);
	if (!r)
		die_oom();
	return r;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *r;

	va_start(ap, fmt);
	int n = vasprintf(&r, fmt, ap);
	va_end(ap);
	if (n < 0)
		die_oom();
	return r;
}

static void *json_xmalloc(size_t n)
{
	return xmalloc(n);
}

void util_json_init(void)
{
	json_set_alloc_funcs(json_xmalloc, free);
}

int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n = read(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EPIPE;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		return -errno;
	int e = fstat(fd, &st) < 0	      ? -errno
		: S_ISDIR(st.st_mode)	      ? -EISDIR
		: !S_ISREG(st.st_mode)	      ? -ENXIO
		: (uintmax_t)st.st_size > max ? -EFBIG
					      : 0;
	if (e < 0) {
		close(fd);
		return e;
	}
	char *b = xmalloc(max + 1);
	size_t got = 0;
	for (;;) {
		/* one byte past max is asked for: a file that grew since fstat is refused, not cut */
		ssize_t k = read(fd, b + got, max + 1 - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			e = -errno;
		if (k <= 0)
			break;
		if ((got += (size_t)k) > max) {
			e = -EFBIG;
			break;
		}
	}
	close(fd);
	if (e < 0) {
		explicit_bzero(b, got < max + 1 ? got : max + 1);
		free(b);
		return e;
	}
	b[got] = '\0';
	*ret = b;
	*ret_len = got;
	return 0;
}

int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		unsigned d = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

int parse_double(const char *s, double min, double max, double *ret)
{
	char *end;

	if (!s || !*s || *s == ' ' || *s == '+' || *s == '-')
		return -EINVAL;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

struct timespec realtime_after_ms(int64_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

int64_t now_ms(void)
{
	return now_us() / 1000;
}

int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool is_hex(const char *s, size_t len)
{
	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return false;
	}
	return true;
}

int hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

json_t *json_string_lossy(const char *p, size_t n)
{
	json_t *s = json_stringn(p, n);
	if (s)
		return s;
	/* invalid UTF-8: copy valid sequences, replace each bad byte with U+FFFD (3 bytes at most per byte) */
	char *out = xmalloc(n * 3 + 1);
	size_t i = 0, o = 0;
	while (i < n) {
		unsigned char c = (unsigned char)p[i];
		size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = ((unsigned char)p[i + k] >> 6) == 2;
		if (ok && len > 1) {
			/* overlong forms and surrogates: let jansson judge */
			json_t *probe = json_stringn(p + i, len);
			ok = probe != NULL;
			json_decref(probe);
		}
		if (ok) {
			memcpy(out + o, p + i, len);
			o += len;
			i += len;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	s = json_stringn(out, o);
	free(out);
	return s ? s : json_string("");
}

int thread_create_nosig(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int r = pthread_create(t, attr, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r;
}

static void *closer_main(void *arg)
{
	close((int)(intptr_t)arg);
	return NULL;
}

void close_later(int fd)
{
	pthread_attr_t attr;
	pthread_t t;

	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		(void)pthread_attr_setstacksize(&attr, 64 * 1024);
		int r = thread_create_nosig(&t, &attr, closer_main, (void *)(intptr_t)fd);
		pthread_attr_destroy(&attr);
		if (r == 0)
			return;
	}
	close(fd);
}

int thread_start_detached(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	int r = pthread_attr_init(&attr);
	if (r != 0)
		return r;
	(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	r = thread_create_nosig(&t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return r;
}

void accept_until_woken(int lfd, int wake_fd, void (*take)(void *arg, int fd), void *arg)
{
	struct pollfd pfd[2] = { { .fd = lfd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return;
		if (pfd[1].revents)
			return;
		if (!pfd[0].revents)
			continue;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			take(arg, fd);
		else if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			usleep(100 * 1000);
	}
}

/* Depth past which json_real_digits stops looking (and answers 17, always exact). */
#define REAL_DIGITS_DEPTH 64

static int real_digits(const json_t *j, int depth)
{
	char b[40];
	int most = 15;

	if (depth > REAL_DIGITS_DEPTH)
		return 17;
	if (json_is_real(j)) {
		double v = json_real_value(j);
		for (int p = 15; p < 17; p++) {
			snprintf(b, sizeof(b), "%.*g", p, v);
			if (strtod(b, NULL) == v)
				return p;
		}
		return 17;
	}
	if (json_is_object(j)) {
		const char *k;
		json_t *v;
		json_object_foreach ((json_t *)j, k, v) {
			int d = real_digits(v, depth + 1);
			most = d > most ? d : most;
		}
	} else if (json_is_array(j)) {
		size_t i;
		json_t *v;
		json_array_foreach (j, i, v) {
			int d = real_digits(v, depth + 1);
			most = d > most ? d : most;
		}
	}
	return most;
}

int json_real_digits(const json_t *j)
{
	return real_digits(j, 0);
}
