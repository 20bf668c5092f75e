/*
 * capture.c - head and tail of a stream, bounded.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/capture.h"

void capture_init(struct capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
	buf_init(&c->head, cap / 2);
	c->ring_cap = cap - cap / 2;
	c->ring = xmalloc(c->ring_cap ? c->ring_cap : 1);
}

void capture_finish(struct capture *c)
{
	buf_finish(&c->head);
	free(c->ring);
	c->ring = NULL;
}

void capture_add(struct capture *c, const char *p, size_t n)
{
	c->total += n;
	size_t room = c->head.max - c->head.len;
	if (room) {
		size_t k = n < room ? n : room;
		(void)buf_append(&c->head, p, k);
		p += k;
		n -= k;
	}
	if (n == 0 || c->ring_cap == 0)
		return;
	if (n >= c->ring_cap) {
		/* only the last ring_cap bytes can survive */
		memcpy(c->ring, p + n - c->ring_cap, c->ring_cap);
		c->ring_pos = 0;
		c->ring_len = c->ring_cap;
		return;
	}
	size_t first = c->ring_cap - c->ring_pos;
	if (first > n)
		first = n;
	memcpy(c->ring + c->ring_pos, p, first);
	memcpy(c->ring, p + first, n - first);
	c->ring_pos = (c->ring_pos + n) % c->ring_cap;
	c->ring_len = c->ring_len + n > c->ring_cap ? c->ring_cap : c->ring_len + n;
}

bool capture_truncated(const struct capture *c)
{
	return c->total > c->cap;
}

static void append_ring(const struct capture *c, struct buf *out)
{
	if (c->ring_len < c->ring_cap) {
		(void)buf_append(out, c->ring, c->ring_len);
		return;
	}
	(void)buf_append(out, c->ring + c->ring_pos, c->ring_cap - c->ring_pos);
	(void)buf_append(out, c->ring, c->ring_pos);
}

void capture_raw(const struct capture *c, struct buf *out)
{
	(void)buf_append(out, c->head.data ? c->head.data : "", c->head.len);
	append_ring(c, out);
}

void capture_render(const struct capture *c, struct buf *out)
{
	(void)buf_append(out, c->head.data ? c->head.data : "", c->head.len);
	if (capture_truncated(c))
		(void)buf_printf(out, "\n[... %" PRIu64 " bytes left out; the full output is saved, see below ...]\n",
				 c->total - c->head.len - c->ring_len);
	append_ring(c, out);
}

void capture_trim_copy(const char *p, size_t n, char *out, size_t outsz)
{
	while (n > 0 && (p[n - 1] == '\n' || p[n - 1] == ' '))
		n--;
	if (n > outsz - 1)
		n = outsz - 1;
	if (n)
		memcpy(out, p, n);
	out[n] = '\0';
}

void capture_render_trimmed(const struct capture *c, char *out, size_t outsz)
{
	struct buf text;
	buf_init(&text, SIZE_MAX);
	capture_render(c, &text);
	capture_trim_copy(text.data ? text.data : "", text.len, out, outsz);
	buf_finish(&text);
}
