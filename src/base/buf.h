/*
 * buf.h - the one growable byte buffer and the one slice type.
 *
 * A buf is always NUL-terminated (data[len] == 0 once anything was appended),
 * checks for overflow before it grows, and refuses to grow past max: that is
 * how every input cap in the program is enforced.
 */
#ifndef BUF_H
#define BUF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/util.h"

struct buf {
	char *data;
	size_t len;
	size_t cap;
	size_t max; /* bytes of content allowed, not counting the NUL */
};

/* A borrowed view of bytes parsed off the wire; never strlen() it. */
struct slice {
	const char *p;
	size_t n;
};

void buf_init(struct buf *b, size_t max);
void buf_finish(struct buf *b);
/* Appends n bytes. 0, or -EMSGSIZE when the result would pass max. */
int buf_append(struct buf *b, const void *p, size_t n);
int buf_append_str(struct buf *b, const char *s);
int buf_printf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Makes room for n more bytes and returns where they go (commit with buf_commit). */
int buf_reserve(struct buf *b, size_t n, char **ret_tail);
void buf_commit(struct buf *b, size_t n);
/* Drops the first n bytes. */
void buf_consume(struct buf *b, size_t n);
void buf_reset(struct buf *b);
/* Returns the contents (NUL-terminated, caller frees) and empties the buf. */
char *buf_steal(struct buf *b, size_t *ret_len);

static inline struct slice slice_make(const char *p, size_t n)
{
	struct slice s = { p, n };
	return s;
}
bool slice_eq(struct slice s, const char *lit);
/* ASCII case-insensitive comparison, for HTTP header names and tokens. */
bool slice_case_eq(struct slice s, const char *lit);
/* Copies s into a new NUL-terminated string. */
char *slice_dup(struct slice s);

#endif
