/*
 * bulk.c - big string values of a JSON line: found, checked and decoded
 * without jansson (see bulk.h for why).
 *
 * bulk_check accepts exactly the string bodies jansson accepts (the fuzz
 * target fuzz-bulk compares the two), so lifting a string out of a line never
 * lets through a message the parser would have refused.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "bulk.h"

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
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
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
		case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
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
