/*
 * util.h - allocation that aborts on OOM, cleanup attributes, fd I/O helpers
 * and strict number parsing.
 *
 * Every input the server accepts is capped (see the *_MAX constants at the top
 * of each module), so running out of memory is a bug rather than a condition
 * to recover from: the x-alloc family aborts, and jansson is routed through it.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))

/* Allocate or abort. Sizes are checked for overflow. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* Returns a newly allocated formatted string; the caller frees it. */
char *xasprintf(const char *fmt, ...) PRINTF_LIKE(1, 2);

/* Routes jansson's allocations through xmalloc. Call once before any json_*. */
void util_json_init(void);

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0)
		close(*fd);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)

/* Returns *pp and sets it to NULL: hands ownership out of a cleanup variable. */
static inline void *steal_pointer(void *pp)
{
	void **p = pp;
	void *r = *p;
	*p = NULL;
	return r;
}

/*
 * Reads the whole of path, a regular file of at most max bytes, into *ret
 * (NUL-terminated, the caller's to free; one allocation of max + 1 bytes, so
 * a caller that wipes a secret wipes every copy) and its length into
 * *ret_len. Never blocks on a FIFO nor takes a controlling tty. 0, or
 * -ENOENT, -EISDIR (a folder), -ENXIO (not a regular file), -EFBIG (over
 * max, then or while read), -errno.
 */
int read_small_file(const char *path, size_t max, char **ret, size_t *ret_len);
/* Reads exactly len bytes. 0, -EPIPE on EOF before len, or -errno. */
int read_full(int fd, void *buf, size_t len);
/* Writes all of buf (loops on EINTR and short writes). 0 or -errno. */
int write_full(int fd, const void *buf, size_t len);

/* Parses a whole decimal string into [min, max]. 0, -EINVAL or -ERANGE. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* Parses a whole decimal (fractional allowed) into [min, max]. 0 or -EINVAL/-ERANGE. */
int parse_double(const char *s, double min, double max, double *ret);

/*
 * pthread_create with every signal blocked in the new thread, so SIGTERM and
 * SIGINT always reach the main thread (whose blocking read they must break).
 * 0 or a positive error number, as pthread_create.
 */
#include <pthread.h>
int thread_create_nosig(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);
/*
 * Closes fd on a short thread of its own (inline when none can start).
 * When fd is the last reference to a big unlinked file, freeing its pages
 * (10-40 ms for 50 MiB) happens there, off the caller's answer.
 */
void close_later(int fd);
/* thread_create_nosig of a detached thread. 0 or a positive error number. */
int thread_start_detached(void *(*fn)(void *), void *arg);
/*
 * A listener's accept thread: until wake_fd is readable, hands each
 * connection on lfd (CLOEXEC) to take(arg, fd), which owns it. Out of fds
 * or memory, it waits 100 ms: the pending connection keeps the listener
 * ready, so it would spin.
 */
void accept_until_woken(int lfd, int wake_fd, void (*take)(void *arg, int fd), void *arg);

/* Monotonic clock in milliseconds / microseconds. */
int64_t now_ms(void);
int64_t now_us(void);
/* The wall clock ms from now, for pthread_cond_timedwait on a default condition variable. */
struct timespec realtime_after_ms(int64_t ms);

/* Makes a JSON string of arbitrary bytes, replacing invalid UTF-8 with U+FFFD (new reference). */
struct json_t;
struct json_t *json_string_lossy(const char *p, size_t n);

/*
 * The fewest significant digits, 15 to 17, that print every real in j so
 * that it reads back the same: for JSON_REAL_PRECISION, whose default of 17
 * prints 0.331 as 0.33100000000000002.
 */
int json_real_digits(const struct json_t *j);

/* True when s is non-empty and only [0-9a-f]. */
bool is_hex(const char *s, size_t len);

/* The value of the hex digit c (either case), or -1. */
int hex_digit(int c);

#endif
