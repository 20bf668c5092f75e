/*
 * agentproto.c - frames and fields between the server and the agent.
 *
 * The type byte is checked as soon as it arrives, so a stream that is not
 * the agent's (a runtime error printed instead of the agent starting, a
 * foreign binary at the agent's path) fails on its first byte.  Sizes are
 * capped before any payload is expected.  Numbers are parsed by hand: no
 * locale, no strtoull overflow quirks, the same in glibc and musl.
 */
#include <string.h>

#include "agent/agentproto.h"

/* Digits accepted in one number of an 'X' payload. */
#define AGENTPROTO_DIGITS_MAX 19

static int number(const char *p, size_t len, size_t *off, uint64_t *ret);

void agentproto_init(struct agentproto *f, const char *types)
{
	memset(f, 0, sizeof(*f));
	f->types = types;
	f->state = AGENTPROTO_HEADER;
}

int agentproto_feed(struct agentproto *f, const char *in, size_t len, size_t *ret_consumed,
		    struct agentproto_piece *ret)
{
	size_t i = 0;

	while (i < len || (f->state == AGENTPROTO_PAYLOAD && f->size == 0)) {
		switch (f->state) {
		case AGENTPROTO_HEADER: {
			unsigned char c = (unsigned char)in[i++];
			if (f->hdr_len == 0) {
				if (c == 0 || !strchr(f->types, c))
					goto malformed;
				f->type = c;
				f->size = 0;
			} else {
				f->size = f->size << 8 | c;
			}
			if (++f->hdr_len < AGENTPROTO_HEADER_LEN)
				break;
			if (f->size > AGENTPROTO_FRAME_MAX)
				goto malformed;
			f->hdr_len = 0;
			f->remaining = f->size;
			f->state = AGENTPROTO_PAYLOAD;
			break;
		}
		case AGENTPROTO_PAYLOAD: {
			size_t n = len - i;
			if (n > f->remaining)
				n = f->remaining;
			ret->type = f->type;
			ret->p = in + i;
			ret->n = n;
			ret->size = f->size;
			ret->first = f->remaining == f->size;
			f->remaining -= (uint32_t)n;
			ret->last = f->remaining == 0;
			if (ret->last) {
				f->state = AGENTPROTO_HEADER;
				f->size = 0;
			}
			*ret_consumed = i + n;
			return 1;
		}
		case AGENTPROTO_ERROR:
			return -1;
		}
	}
	if (f->state == AGENTPROTO_ERROR)
		return -1;
	*ret_consumed = i;
	return -2;

malformed:
	f->state = AGENTPROTO_ERROR;
	return -1;
}

bool agentproto_at_boundary(const struct agentproto *f)
{
	return f->state == AGENTPROTO_HEADER && f->hdr_len == 0;
}

void agentproto_header(char out[AGENTPROTO_HEADER_LEN], int type, uint32_t size)
{
	out[0] = (char)type;
	out[1] = (char)(size >> 24);
	out[2] = (char)(size >> 16);
	out[3] = (char)(size >> 8);
	out[4] = (char)size;
}

int agentproto_field(const char *p, size_t len, size_t *off, int *ret_tag, const char **ret_value,
		     size_t *ret_value_len)
{
	size_t at = *off;

	if (at >= len)
		return 0;
	const char *nul = memchr(p + at, '\0', len - at);
	if (!nul || nul == p + at || !strchr("asde", p[at]))
		return -1;
	*ret_tag = (unsigned char)p[at];
	*ret_value = p + at + 1;
	*ret_value_len = (size_t)(nul - (p + at + 1));
	*off = (size_t)(nul - p) + 1;
	return 1;
}

/* A decimal number at *off, then a space or the end. 0 or -1. */
static int number(const char *p, size_t len, size_t *off, uint64_t *ret)
{
	uint64_t v = 0;
	size_t i = *off, digits = 0;

	while (i < len && p[i] >= '0' && p[i] <= '9') {
		if (++digits > AGENTPROTO_DIGITS_MAX)
			return -1;
		v = v * 10 + (uint64_t)(p[i++] - '0');
	}
	if (digits == 0)
		return -1;
	if (i < len) {
		if (p[i] != ' ')
			return -1;
		i++;
	}
	*off = i;
	*ret = v;
	return 0;
}

int agentproto_parse_exit(const char *p, size_t len, struct agentproto_exit *ret)
{
	uint64_t code, cpu, rss;
	size_t off = 0;

	if (number(p, len, &off, &code) < 0 || off >= len || number(p, len, &off, &cpu) < 0 || off >= len ||
	    number(p, len, &off, &rss) < 0 || off != len || p[len - 1] == ' ' || code > 255)
		return -1;
	ret->code = (int)code;
	ret->cpu_ms = cpu;
	ret->maxrss_kb = rss;
	return 0;
}

int agentproto_parse_head(const char *p, size_t len, uint64_t *ret_size, unsigned *ret_mode, size_t *ret_len)
{
	uint64_t size, mode;
	size_t off = 0;
	const char *nl = memchr(p, '\n', len < AGENTPROTO_HEAD_MAX ? len : AGENTPROTO_HEAD_MAX);

	if (!nl)
		return len < AGENTPROTO_HEAD_MAX ? 0 : -1;
	size_t n = (size_t)(nl - p);
	if (number(p, n, &off, &size) < 0 || off >= n || number(p, n, &off, &mode) < 0 || off != n || p[n - 1] == ' ' ||
	    mode > 07777)
		return -1;
	*ret_size = size;
	*ret_mode = (unsigned)mode;
	*ret_len = n + 1;
	return 1;
}

void agentproto_whole_init(struct agentproto_whole *w, const char *types)
{
	agentproto_init(&w->f, types);
	w->n = 0;
}

int agentproto_whole_feed(struct agentproto_whole *w, const char *in, size_t len, size_t *ret_consumed)
{
	size_t off = 0;
	for (;;) {
		struct agentproto_piece pc;
		size_t used = 0;
		int r = agentproto_feed(&w->f, in + off, len - off, &used, &pc);
		if (r == -1)
			return -1;
		off += used;
		if (r == -2) {
			*ret_consumed = off;
			return -2;
		}
		if (pc.size > sizeof(w->buf)) {
			w->f.state = AGENTPROTO_ERROR;
			return -1;
		}
		if (pc.first)
			w->n = 0;
		memcpy(w->buf + w->n, pc.p, pc.n);
		w->n += (uint32_t)pc.n;
		if (pc.last) {
			*ret_consumed = off;
			return 1;
		}
	}
}

void agentproto_relay_head(char out[AGENTPROTO_RELAY_HEAD], int type, uint32_t size, uint32_t id)
{
	agentproto_header(out, type, size);
	out[5] = (char)(id >> 24);
	out[6] = (char)(id >> 16);
	out[7] = (char)(id >> 8);
	out[8] = (char)id;
}

uint32_t agentproto_u32(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	return (uint32_t)u[0] << 24 | (uint32_t)u[1] << 16 | (uint32_t)u[2] << 8 | u[3];
}
