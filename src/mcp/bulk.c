/*
 * bulk.c - big string values of a JSON line: found, checked and decoded
 * without jansson (see bulk.h for why).
 *
 * bulk_check accepts exactly the string bodies jansson accepts (the fuzz
 * target fuzz-bulk compares the two), so lifting a string out of a line never
 * lets through a message the parser would have refused.
 *
 * The lifting (bulk_lift, the feed, bulk_settle) was mcp.c's; it lives here
 * beside what it builds on so mcp.c only decides when a line is big.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "mcp/bulk.h"

int bulk_find(const char *p, size_t n, size_t min, struct bulk_span *spans, int max)
{
	int found = 0;
	size_t i = 0;

	while (i < n && found < max) {
		if (p[i] != '"') {
			i++;
			continue;
		}
		size_t start = ++i;
		while (i < n && p[i] != '"')
			i += p[i] == '\\' ? 2 : 1;
		if (i >= n)
			break; /* unterminated: the parser will say so */
		size_t len = i - start;
		i++; /* past the closing quote */
		size_t k = i;
		while (k < n && (p[k] == ' ' || p[k] == '\t' || p[k] == '\r' || p[k] == '\n'))
			k++;
		bool key = k < n && p[k] == ':';
		if (!key && len >= min)
			spans[found++] = (struct bulk_span){ .start = start, .len = len };
	}
	return found;
}

static int hex4(const unsigned char *p)
{
	int v = 0;
	for (int i = 0; i < 4; i++) {
		int d = hex_digit(p[i]);
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/*
 * The code point of the \u escape at p (p[0] == '\\', p[1] == 'u'), a
 * surrogate pair taken as one; *used is the bytes it spans.  -1 if invalid.
 */
static int32_t unicode_escape(const unsigned char *p, size_t left, size_t *used)
{
	if (left < 6)
		return -1;
	int32_t v = hex4(p + 2);
	if (v < 0 || (v >= 0xDC00 && v <= 0xDFFF))
		return -1;
	*used = 6;
	if (v >= 0xD800 && v <= 0xDBFF) {
		if (left < 12 || p[6] != '\\' || p[7] != 'u')
			return -1;
		int32_t lo = hex4(p + 8);
		if (lo < 0xDC00 || lo > 0xDFFF)
			return -1;
		v = ((v - 0xD800) << 10) + (lo - 0xDC00) + 0x10000;
		*used = 12;
	}
	return v;
}

/* Length of the valid UTF-8 sequence at p (first byte >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *p, size_t left)
{
	unsigned c = p[0];
	size_t len;
	uint32_t v;

	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if (left < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if ((len == 3 && v < 0x800) || (len == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return len;
}

int bulk_check(const char *text, size_t n)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i];
		if (c < 0x20 || c == '"')
			return -EINVAL;
		if (c < 0x80 && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80) {
			size_t len = utf8_len(p + i, n - i);
			if (len == 0)
				return -EINVAL;
			i += len;
			continue;
		}
		if (i + 1 >= n)
			return -EINVAL;
		switch (p[i + 1]) {
		case '"':
		case '\\':
		case '/':
		case 'b':
		case 'f':
		case 'n':
		case 'r':
		case 't':
			i += 2;
			break;
		case 'u': {
			size_t used;
			int32_t v = unicode_escape(p + i, n - i, &used);
			if (v <= 0) /* \u0000 is refused, as jansson does without JSON_ALLOW_NUL */
				return -EINVAL;
			i += used;
			break;
		}
		default:
			return -EINVAL;
		}
	}
	return 0;
}

static size_t utf8_put(unsigned char *out, int32_t v)
{
	if (v < 0x80) {
		out[0] = (unsigned char)v;
		return 1;
	}
	if (v < 0x800) {
		out[0] = (unsigned char)(0xC0 | (v >> 6));
		out[1] = (unsigned char)(0x80 | (v & 0x3F));
		return 2;
	}
	if (v < 0x10000) {
		out[0] = (unsigned char)(0xE0 | (v >> 12));
		out[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
		out[2] = (unsigned char)(0x80 | (v & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | (v >> 18));
	out[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3F));
	out[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3F));
	out[3] = (unsigned char)(0x80 | (v & 0x3F));
	return 4;
}

size_t bulk_decode(char *text, size_t n)
{
	unsigned char *p = (unsigned char *)text;
	size_t i = 0, o = 0;

	while (i < n) {
		if (p[i] != '\\') {
			p[o++] = p[i++];
			continue;
		}
		unsigned char e = p[i + 1];
		if (e == 'u') {
			size_t used;
			int32_t v = unicode_escape(p + i, n - i, &used);
			i += used;
			o += utf8_put(p + o, v); /* at most 4 bytes for 6 or 12 read */
			continue;
		}
		static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
		unsigned char d = e;
		for (int k = 0; from[k]; k++)
			if (from[k] == (char)e)
				d = (unsigned char)to[k];
		p[o++] = d;
		i += 2;
	}
	return o;
}

/* Hands back the whole pages of [from, to) that are not yet given back. */
static void give_back(uintptr_t *given_back, uintptr_t from, uintptr_t to, bool force)
{
#ifdef MADV_DONTNEED
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (from < *given_back)
		from = *given_back;
	uintptr_t start = (from + page - 1) & ~(page - 1);
	uintptr_t end = to & ~(page - 1);
	if (end > start && (force || end - start >= BULK_GIVE_BACK_STEP)) {
		(void)madvise((void *)start, end - start, MADV_DONTNEED);
		*given_back = end;
	}
#else
	(void)given_back, (void)from, (void)to, (void)force;
#endif
}

void bulk_copy_giving_back(char *dst, char *src, size_t n)
{
	uintptr_t given_back = (uintptr_t)src;
	for (size_t off = 0; off < n; off += BULK_GIVE_BACK_STEP) {
		size_t k = n - off < BULK_GIVE_BACK_STEP ? n - off : BULK_GIVE_BACK_STEP;
		memcpy(dst + off, src + off, k);
		give_back(&given_back, (uintptr_t)src, (uintptr_t)(src + off + k), false);
	}
	give_back(&given_back, (uintptr_t)src, (uintptr_t)(src + n), true);
}

static size_t marker(unsigned long long nonce, int i, char *out, size_t size)
{
	/* U+F8FF (private use) first: no client writes that by accident */
	int k = snprintf(out, size, "\xEF\xA3\xBFsandbox-mcp-bulk-%016llx-%d", nonce, i);
	return k > 0 && (size_t)k < size ? (size_t)k : 0;
}

void bulk_lift(struct bulk_lifted *b, char *line, size_t n, size_t min, unsigned long long nonce)
{
	struct bulk_span found[BULK_LIFT_MAX];
	int count = bulk_find(line, n, min, found, BULK_LIFT_MAX);
	uintptr_t given_back = (uintptr_t)line;

	b->nonce = nonce;
	for (int i = 0; i < count; i++) {
		char *p = line + found[i].start;
		if (bulk_check(p, found[i].len) < 0)
			continue;
		size_t len = bulk_decode(p, found[i].len);
		char *copy = xmalloc(len ? len : 1);
		for (size_t off = 0; off < len; off += BULK_GIVE_BACK_STEP) {
			size_t k = len - off < BULK_GIVE_BACK_STEP ? len - off : BULK_GIVE_BACK_STEP;
			memcpy(copy + off, p + off, k);
			give_back(&given_back, (uintptr_t)p, (uintptr_t)(p + off + k), false);
		}
		give_back(&given_back, (uintptr_t)p, (uintptr_t)(p + found[i].len), true);
		b->span[b->count] = found[i];
		b->data[b->count] = copy;
		b->len[b->count] = len;
		b->count++;
	}
}

void bulk_feed_init(struct bulk_feed *f, const char *line, size_t n, const struct bulk_lifted *b)
{
	memset(f, 0, sizeof(*f));
	f->p = line;
	f->n = n;
	/* the feed hands back what it passes, the lifted parts again (a no-op) */
	f->given_back = (uintptr_t)line;
	f->bulk = b;
}

size_t bulk_feed_read(void *buffer, size_t buflen, void *data)
{
	struct bulk_feed *f = data;
	char *out = buffer;
	size_t done = 0;

	while (done < buflen) {
		if (f->in_marker) {
			size_t k = f->marker_len - f->marker_off;
			if (k > buflen - done)
				k = buflen - done;
			memcpy(out + done, f->marker + f->marker_off, k);
			f->marker_off += k;
			done += k;
			if (f->marker_off == f->marker_len) {
				f->in_marker = false;
				f->off = f->bulk->span[f->next].start + f->bulk->span[f->next].len;
				f->next++;
			}
			continue;
		}
		bool lifted = f->bulk && f->next < f->bulk->count;
		size_t limit = lifted ? f->bulk->span[f->next].start : f->n;
		size_t k = limit - f->off < buflen - done ? limit - f->off : buflen - done;
		memcpy(out + done, f->p + f->off, k);
		f->off += k;
		done += k;
		if (f->off == limit) {
			if (!lifted)
				break;
			f->marker_len = marker(f->bulk->nonce, f->next, f->marker, sizeof(f->marker));
			f->marker_off = 0;
			f->in_marker = true;
		}
	}
	give_back(&f->given_back, f->given_back, (uintptr_t)f->p + f->off, false);
	return done;
}

/* The index of the lifted string whose marker j is, or -1. */
static int lifted_index(const struct bulk_lifted *b, const json_t *j)
{
	char mark[64];
	if (!json_is_string(j))
		return -1;
	for (int i = 0; i < b->count; i++) {
		size_t k = marker(b->nonce, i, mark, sizeof(mark));
		if (b->data[i] && json_string_length(j) == k && memcmp(json_string_value(j), mark, k) == 0)
			return i;
	}
	return -1;
}

/* Puts every lifted string but the kept one back into j as a jansson string. */
static void restore(struct bulk_lifted *b, json_t *j)
{
	if (json_is_object(j)) {
		const char *key;
		json_t *v;
		json_object_foreach (j, key, v) {
			int i = v == b->kept ? -1 : lifted_index(b, v);
			if (i >= 0)
				json_object_set_new(j, key, json_stringn_nocheck(b->data[i], b->len[i]));
			else
				restore(b, v);
		}
	} else if (json_is_array(j)) {
		for (size_t k = 0; k < json_array_size(j); k++) {
			json_t *v = json_array_get(j, k);
			int i = lifted_index(b, v);
			if (i >= 0)
				json_array_set_new(j, k, json_stringn_nocheck(b->data[i], b->len[i]));
			else
				restore(b, v);
		}
	}
}

void bulk_settle(struct bulk_lifted *b, json_t *msg, json_t *keep)
{
	int i = keep ? lifted_index(b, keep) : -1;
	if (i >= 0) {
		b->kept = keep;
		b->kept_index = i;
	}
	restore(b, msg);
	for (i = 0; i < b->count; i++) {
		if (b->kept && i == b->kept_index)
			continue;
		free(b->data[i]);
		b->data[i] = NULL;
	}
}

size_t bulk_position(const struct bulk_lifted *b, size_t pos)
{
	char mark[64];
	size_t shift = 0;
	for (int i = 0; i < b->count; i++) {
		size_t k = marker(b->nonce, i, mark, sizeof(mark));
		if (pos <= b->span[i].start - shift)
			break;
		shift += b->span[i].len - k;
	}
	return pos + shift;
}

void bulk_free(struct bulk_lifted *b)
{
	for (int i = 0; i < b->count; i++)
		free(b->data[i]);
}
