/*
 * buf.c - struct buf and struct slice.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"

void buf_init(struct buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

void buf_finish(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int buf_reserve(struct buf *b, size_t n, char **ret_tail)
{
	/* the content must fit max, and content plus its NUL must fit size_t */
	if (n > b->max || b->len > b->max - n || b->len + n == SIZE_MAX)
		return -EMSGSIZE;
	size_t need = b->len + n + 1;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < need)
			cap = cap > SIZE_MAX / 2 ? need : cap * 2;
		if (b->max < SIZE_MAX && cap > b->max + 1)
			cap = b->max + 1;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	if (ret_tail)
		*ret_tail = b->data + b->len;
	return 0;
}

void buf_commit(struct buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

int buf_append(struct buf *b, const void *p, size_t n)
{
	char *tail;
	int r = buf_reserve(b, n, &tail);
	if (r < 0)
		return r;
	if (n)
		memcpy(tail, p, n);
	buf_commit(b, n);
	return 0;
}

int buf_append_str(struct buf *b, const char *s)
{
	return buf_append(b, s, strlen(s));
}

int buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *tail;

	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	int r = buf_reserve(b, (size_t)n, &tail);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(tail, (size_t)n + 1, fmt, ap);
	va_end(ap);
	buf_commit(b, (size_t)n);
	return 0;
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		buf_reset(b);
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *buf_steal(struct buf *b, size_t *ret_len)
{
	char *r = b->data ? b->data : xstrdup("");
	if (ret_len)
		*ret_len = b->len;
	b->data = NULL;
	b->len = b->cap = 0;
	return r;
}

bool slice_eq(struct slice s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && memcmp(s.p, lit, n) == 0;
}

bool slice_case_eq(struct slice s, const char *lit)
{
	size_t n = strlen(lit);
	return s.n == n && strncasecmp(s.p, lit, n) == 0;
}

char *slice_dup(struct slice s)
{
	return xstrndup(s.p, s.n);
}
