/*
 * http_parse.c - status line, headers and chunked coding.
 *
 * Lines may end in CRLF or a bare LF (the Engine sends CRLF; tolerating LF
 * costs nothing).  Obsolete line folding, control bytes in header values and
 * header names with separators are errors: this client talks to one kind of
 * peer and has no reason to be lenient about the rest.
 */
#include <string.h>

#include "base/http_parse.h"
#include "base/util.h"

static const char *find_eol(const char *p, const char *end);
static int is_tchar(unsigned char c);

static const char *find_eol(const char *p, const char *end)
{
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	return nl;
}

static int is_tchar(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return 1;
	if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')
		return 1;
	return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/*
 * The header lines from p to the blank line: the head's length (from buf),
 * -2 when the blank line is not within end, -1 if malformed.
 */
static int parse_headers(const char *buf, const char *p, const char *end, struct http_header *headers, size_t *ret_num)
{
	*ret_num = 0;
	for (;;) {
		const char *eol = find_eol(p, end);
		if (!eol)
			return -2;
		const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
		if (le == p)
			return (int)(eol + 1 - buf); /* blank line: end of head */
		if (*ret_num == HTTP_HEADERS_MAX)
			return -1;
		const char *colon = p;
		while (colon < le && *colon != ':') {
			if (!is_tchar((unsigned char)*colon))
				return -1;
			colon++;
		}
		if (colon == le || colon == p)
			return -1;
		const char *v = colon + 1, *ve = le;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++) {
			unsigned char c = (unsigned char)*q;
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return -1;
		}
		struct http_header *h = &headers[(*ret_num)++];
		h->name = slice_make(p, (size_t)(colon - p));
		h->value = slice_make(v, (size_t)(ve - v));
		p = eol + 1;
	}
}

int http_parse_request(const char *buf, size_t len, struct http_request *ret)
{
	size_t limit = len < HTTP_PARSE_REQUEST_MAX ? len : HTTP_PARSE_REQUEST_MAX;
	const char *p = buf, *end = buf + limit;

	/* request line: method SP target SP HTTP/1.x */
	const char *eol = find_eol(p, end);
	if (!eol)
		return len >= HTTP_PARSE_REQUEST_MAX ? -1 : -2;
	const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
	const char *sp1 = p;
	while (sp1 < le && is_tchar((unsigned char)*sp1))
		sp1++;
	if (sp1 == p || sp1 == le || *sp1 != ' ')
		return -1;
	const char *target = sp1 + 1, *sp2 = target;
	while (sp2 < le && (unsigned char)*sp2 > 0x20 && *sp2 != 0x7f)
		sp2++;
	if (sp2 == target || le - sp2 != 9 || memcmp(sp2, " HTTP/1.", 8) != 0 || sp2[8] < '0' || sp2[8] > '9')
		return -1;
	ret->method = slice_make(p, (size_t)(sp1 - p));
	ret->target = slice_make(target, (size_t)(sp2 - target));
	ret->minor_version = sp2[8] - '0';
	int r = parse_headers(buf, eol + 1, end, ret->headers, &ret->num_headers);
	return r == -2 && len >= HTTP_PARSE_REQUEST_MAX ? -1 : r;
}

int http_parse_response(const char *buf, size_t len, struct http_head *ret)
{
	size_t limit = len < HTTP_HEAD_MAX ? len : HTTP_HEAD_MAX;
	const char *p = buf, *end = buf + limit;

	/* status line: HTTP/1.x SP 3DIGIT [SP reason] */
	const char *eol = find_eol(p, end);
	if (!eol)
		goto incomplete;
	const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
	if (le - p < 12 || memcmp(p, "HTTP/1.", 7) != 0 || p[7] < '0' || p[7] > '9' || p[8] != ' ')
		return -1;
	if (p[9] < '1' || p[9] > '5' || p[10] < '0' || p[10] > '9' || p[11] < '0' || p[11] > '9')
		return -1;
	ret->minor_version = p[7] - '0';
	ret->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (le - p > 12 && p[12] != ' ')
		return -1;
	const char *reason = le - p > 12 ? p + 13 : le;
	for (const char *q = reason; q < le; q++)
		if ((unsigned char)*q < 0x20 && *q != '\t')
			return -1;
	ret->reason = slice_make(reason, (size_t)(le - reason));
	p = eol + 1;
	int r = parse_headers(buf, p, end, ret->headers, &ret->num_headers);
	return r == -2 && len >= HTTP_HEAD_MAX ? -1 : r;

incomplete:
	return len >= HTTP_HEAD_MAX ? -1 : -2;
}

const struct slice *http_head_get(const struct http_head *h, const char *name)
{
	for (size_t i = 0; i < h->num_headers; i++)
		if (slice_case_eq(h->headers[i].name, name))
			return &h->headers[i].value;
	return NULL;
}

void http_chunked_init(struct http_chunked *d)
{
	memset(d, 0, sizeof(*d));
	d->state = HTTP_CHUNKED_SIZE;
}

int http_chunked_decode(struct http_chunked *d, const char *in, size_t len, size_t *ret_consumed,
			struct slice *ret_data)
{
	size_t i = 0;

	while (i < len) {
		char c = in[i];
		switch (d->state) {
		case HTTP_CHUNKED_SIZE: {
			int v = hex_digit(c);
			if (v >= 0) {
				if (++d->digits > HTTP_CHUNK_DIGITS_MAX)
					return -1;
				d->remaining = d->remaining * 16 + (uint64_t)v;
				i++;
				break;
			}
			if (d->digits == 0)
				return -1;
			if (c == ';' || c == ' ' || c == '\t') {
				d->state = HTTP_CHUNKED_EXT;
				d->line_len = 0;
			} else if (c == '\r') {
				d->state = HTTP_CHUNKED_SIZE_LF;
			} else if (c == '\n') {
				goto size_done;
			} else {
				return -1;
			}
			i++;
			break;
		}
		case HTTP_CHUNKED_EXT:
			if (c == '\n')
				goto size_done;
			if (++d->line_len > HTTP_CHUNK_LINE_MAX)
				return -1;
			i++;
			break;
		case HTTP_CHUNKED_SIZE_LF:
			if (c != '\n')
				return -1;
			goto size_done;
		case HTTP_CHUNKED_DATA: {
			size_t n = len - i;
			if ((uint64_t)n > d->remaining)
				n = (size_t)d->remaining;
			*ret_data = slice_make(in + i, n);
			d->remaining -= n;
			i += n;
			if (d->remaining == 0)
				d->state = HTTP_CHUNKED_DATA_CR;
			*ret_consumed = i;
			return 1;
		}
		case HTTP_CHUNKED_DATA_CR:
			if (c == '\r') {
				d->state = HTTP_CHUNKED_DATA_LF;
				i++;
				break;
			}
			if (c != '\n')
				return -1;
			/* fallthrough */
		case HTTP_CHUNKED_DATA_LF:
			if (c != '\n')
				return -1;
			i++;
			d->state = HTTP_CHUNKED_SIZE;
			d->digits = 0;
			d->remaining = 0;
			break;
		case HTTP_CHUNKED_TRAILER:
			if (c == '\n') {
				i++;
				if (d->line_len == 0) {
					d->state = HTTP_CHUNKED_DONE;
					*ret_consumed = i;
					return 0;
				}
				d->line_len = 0;
				break;
			}
			if (c != '\r' || d->line_len > 0) {
				if (++d->line_len > HTTP_CHUNK_LINE_MAX)
					return -1;
			}
			i++;
			break;
		case HTTP_CHUNKED_DONE:
			*ret_consumed = i;
			return 0;
		}
		continue;

	size_done:
		i++;
		d->line_len = 0;
		d->state = d->remaining == 0 ? HTTP_CHUNKED_TRAILER : HTTP_CHUNKED_DATA;
	}
	*ret_consumed = i;
	return d->state == HTTP_CHUNKED_DONE ? 0 : -2;
}
