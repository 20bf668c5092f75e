/*
 * previewreq.c - the head a preview sends the app (see previewreq.h).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "transport/http/preview.h"
#include "transport/http/previewreq.h"

static bool named(const struct http_header *h, const char *name)
{
	return h->name.n == strlen(name) && strncasecmp(h->name.p, name, h->name.n) == 0;
}

/* Whether a header's comma-separated value holds token (case-insensitive). */
static bool has_token(struct slice v, const char *token)
{
	size_t tn = strlen(token);
	for (size_t i = 0; i < v.n;) {
		while (i < v.n && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ','))
			i++;
		size_t k = i;
		while (k < v.n && v.p[k] != ',')
			k++;
		size_t e = k;
		while (e > i && (v.p[e - 1] == ' ' || v.p[e - 1] == '\t'))
			e--;
		if (e - i == tn && strncasecmp(v.p + i, token, tn) == 0)
			return true;
		i = k;
	}
	return false;
}

/* The Cookie value without sbx_preview items, into out ("Cookie: ...\r\n"), or nothing when none is left. */
static int cookie_put(struct slice v, struct buf *out)
{
	static const char name[] = LINKSIGN_PREVIEW_PARAM "=";
	bool first = true;
	int r = 0;
	for (size_t i = 0; i < v.n && r == 0;) {
		while (i < v.n && v.p[i] == ' ')
			i++;
		const char *semi = memchr(v.p + i, ';', v.n - i);
		size_t e = semi ? (size_t)(semi - v.p) : v.n, end = e;
		while (end > i && v.p[end - 1] == ' ')
			end--;
		bool ours = end - i >= sizeof(name) - 1 && memcmp(v.p + i, name, sizeof(name) - 1) == 0;
		if (end > i && !ours) {
			r = buf_printf(out, "%s%.*s", first ? "Cookie: " : "; ", (int)(end - i), v.p + i);
			first = false;
		}
		i = e + 1;
	}
	return r == 0 && !first ? buf_append_str(out, "\r\n") : r;
}

/* Content-Length: one run of at most 15 digits, the same in every copy. -1 when not. */
static int body_length(const struct http_request *head, int64_t *ret)
{
	int64_t len = -1;
	for (size_t i = 0; i < head->num_headers; i++) {
		const struct http_header *h = &head->headers[i];
		if (!named(h, "Content-Length"))
			continue;
		int64_t v = 0;
		if (h->value.n == 0 || h->value.n > 15)
			return -1;
		for (size_t k = 0; k < h->value.n; k++) {
			if (h->value.p[k] < '0' || h->value.p[k] > '9')
				return -1;
			v = v * 10 + (h->value.p[k] - '0');
		}
		if (len >= 0 && v != len)
			return -1;
		len = v;
	}
	*ret = len < 0 ? 0 : len;
	return 0;
}

int previewreq_rewrite(const struct http_request *head, struct previewreq *ret, struct buf *out, char *why,
		       size_t whysz)
{
	static const char *const hop[] = { "Connection", "Keep-Alive", "Proxy-Connection", "TE", "Trailer" };
	bool upgrade = false;
	for (size_t i = 0; i < head->num_headers; i++) {
		if (named(&head->headers[i], "Transfer-Encoding")) {
			snprintf(why, whysz, "A preview takes request bodies with a Content-Length only, not chunked.");
			return 411;
		}
		if (named(&head->headers[i], "Connection") && has_token(head->headers[i].value, "upgrade"))
			upgrade = true;
	}
	if (body_length(head, &ret->content_length) < 0) {
		snprintf(why, whysz, "The request's Content-Length is not one number.");
		return 400;
	}
	int r = buf_printf(out, "%.*s %.*s HTTP/1.%d\r\n", (int)head->method.n, head->method.p, (int)head->target.n,
			   head->target.p, head->minor_version);
	for (size_t i = 0; i < head->num_headers && r == 0; i++) {
		const struct http_header *h = &head->headers[i];
		bool drop = named(h, "Upgrade") && !upgrade;
		for (size_t k = 0; k < sizeof(hop) / sizeof(hop[0]); k++)
			drop = drop || named(h, hop[k]);
		if (named(h, "Cookie"))
			r = cookie_put(h->value, out);
		else if (!drop)
			r = buf_printf(out, "%.*s: %.*s\r\n", (int)h->name.n, h->name.p, (int)h->value.n, h->value.p);
	}
	if (r == 0)
		r = buf_append_str(out, upgrade ? "Connection: Upgrade\r\n\r\n" : "Connection: close\r\n\r\n");
	if (r < 0) {
		snprintf(why, whysz, "The request head is too large.");
		return 431;
	}
	ret->upgrade = upgrade;
	return 0;
}
