/*
 * proxyreq.c - the host a proxy request names, and the origin's head.
 *
 * Refused: an origin-form target (the client did not take us for a proxy),
 * a scheme other than http (https goes through CONNECT), user info in the
 * URL, a Host header that names another host than the URL (or two Host
 * headers), Transfer-Encoding on a request (bodies need a Content-Length:
 * one length, one meaning), Upgrade.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "proxy/netaddr.h"
#include "proxy/proxyreq.h"

/* "host[:port]" or "[v6][:port]" in p[0..n): 0 with host (lower case) and port, or -1. */
static int authority(const char *p, size_t n, bool port_required, char *host, size_t hostsz, uint16_t *port)
{
	size_t hn;
	const char *rest;
	if (n && p[0] == '[') {
		const char *close = memchr(p, ']', n);
		if (!close)
			return -1;
		hn = (size_t)(close - p) + 1;
		rest = close + 1;
	} else {
		const char *colon = memchr(p, ':', n);
		hn = colon ? (size_t)(colon - p) : n;
		rest = p + hn;
	}
	size_t rn = n - hn;
	if (hn == 0 || hn >= hostsz)
		return -1;
	for (size_t i = 0; i < hn; i++) {
		unsigned char c = (unsigned char)p[i];
		if (!(isalnum(c) || strchr("-._[]:", c)))
			return -1;
		host[i] = (char)tolower(c);
	}
	host[hn] = '\0';
	if (host[hn - 1] == '.') /* "pypi.org." is pypi.org */
		host[--hn] = '\0';
	/* no empty label: "a..b", ".a" and "a.." name nothing a rule could */
	if (hn == 0 || host[0] == '.' || host[hn - 1] == '.' || strstr(host, ".."))
		return -1;
	if (rn == 0) {
		if (port_required)
			return -1;
		return 0;
	}
	if (rest[0] != ':' || rn < 2 || rn > 6)
		return -1;
	unsigned v = 0;
	for (size_t i = 1; i < rn; i++) {
		if (!isdigit((unsigned char)rest[i]))
			return -1;
		v = v * 10 + (unsigned)(rest[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

static const struct slice *header(const struct http_request *h, const char *name, int *count)
{
	const struct slice *v = NULL;
	*count = 0;
	for (size_t i = 0; i < h->num_headers; i++)
		if (slice_case_eq(h->headers[i].name, name)) {
			if (!v)
				v = &h->headers[i].value;
			(*count)++;
		}
	return v;
}

static int refuse(int status, char *why, size_t whysz, const char *msg)
{
	snprintf(why, whysz, "%s", msg);
	return status;
}

static int plain(const struct http_request *head, struct proxyreq *r, char *why, size_t whysz)
{
	struct slice t = head->target;
	if (t.n && t.p[0] == '/')
		return refuse(400, why, whysz,
			      "this is the egress proxy: send requests in absolute form "
			      "(http://host/path), or https through CONNECT");
	if (t.n < 8 || strncasecmp(t.p, "http://", 7) != 0)
		return refuse(400, why, whysz, "only http:// URLs go through the proxy this way; https uses CONNECT");
	const char *a = t.p + 7, *end = t.p + t.n;
	const char *slash = a;
	while (slash < end && *slash != '/' && *slash != '?' && *slash != '#')
		slash++;
	if (memchr(a, '@', (size_t)(slash - a)))
		return refuse(400, why, whysz, "user information in the URL is refused");
	r->port = 80;
	if (authority(a, (size_t)(slash - a), false, r->host, sizeof(r->host), &r->port) < 0)
		return refuse(400, why, whysz, "the URL's host is not a host name or address");
	r->path = slash < end ? slice_make(slash, (size_t)(end - slash)) : slice_make("/", 1);
	if (r->path.p[0] != '/')
		return refuse(400, why, whysz, "the URL's path must start with '/'");

	int n;
	const struct slice *hv = header(head, "Host", &n);
	if (n > 1)
		return refuse(400, why, whysz, "more than one Host header");
	if (hv) {
		char hh[POLICY_HOST_MAX + 1];
		uint16_t hp = 80;
		if (authority(hv->p, hv->n, false, hh, sizeof(hh), &hp) < 0 || strcmp(hh, r->host) != 0 ||
		    hp != r->port)
			return refuse(400, why, whysz, "the Host header names another host than the URL");
	}
	header(head, "Transfer-Encoding", &n);
	if (n)
		return refuse(411, why, whysz, "request bodies need a Content-Length here, not Transfer-Encoding");
	header(head, "Upgrade", &n);
	if (n)
		return refuse(501, why, whysz, "protocol upgrades over plain HTTP are not relayed");
	const struct slice *cl = header(head, "Content-Length", &n);
	r->content_length = -1;
	if (n > 1)
		return refuse(400, why, whysz, "more than one Content-Length");
	if (cl) {
		int64_t v = 0;
		if (cl->n == 0 || cl->n > 15)
			return refuse(400, why, whysz, "Content-Length is not a number");
		for (size_t i = 0; i < cl->n; i++) {
			if (!isdigit((unsigned char)cl->p[i]))
				return refuse(400, why, whysz, "Content-Length is not a number");
			v = v * 10 + (cl->p[i] - '0');
		}
		r->content_length = v;
	}
	return 0;
}

int proxyreq_parse(const struct http_request *head, struct proxyreq *r, char *why, size_t whysz)
{
	memset(r, 0, sizeof(*r));
	why[0] = '\0';
	if (!slice_eq(head->method, "CONNECT")) {
		if (head->minor_version > 1)
			return refuse(400, why, whysz, "HTTP/1.0 or 1.1 only");
		return plain(head, r, why, whysz);
	}
	r->connect = true;
	if (authority(head->target.p, head->target.n, true, r->host, sizeof(r->host), &r->port) < 0)
		return refuse(400, why, whysz, "CONNECT takes host:port");
	r->content_length = -1;
	return 0;
}

/* True for the headers that stay between client and proxy (RFC 9110 7.6.1) or name the proxy. */
static bool hop_by_hop(struct slice name)
{
	static const char *const names[] = {
		"Connection",	      "Keep-Alive", "Proxy-Connection", "Proxy-Authorization",
		"Proxy-Authenticate", "TE",	    "Trailer",		"Upgrade"
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (slice_case_eq(name, names[i]))
			return true;
	return false;
}

/*
 * True when a Connection header of head names this header (RFC 9110 7.6.1:
 * hop-by-hop too). Never the ones that frame the request or name its host:
 * dropping Content-Length would make the body the origin's next request.
 */
static bool named_in_connection(const struct http_request *head, struct slice name)
{
	if (slice_case_eq(name, "Content-Length") || slice_case_eq(name, "Host") ||
	    slice_case_eq(name, "Transfer-Encoding"))
		return false;
	for (size_t i = 0; i < head->num_headers; i++) {
		if (!slice_case_eq(head->headers[i].name, "Connection"))
			continue;
		struct slice v = head->headers[i].value;
		size_t at = 0;
		while (at < v.n) {
			size_t end = at;
			while (end < v.n && v.p[end] != ',')
				end++;
			size_t a = at, b = end;
			while (a < b && (v.p[a] == ' ' || v.p[a] == '\t'))
				a++;
			while (b > a && (v.p[b - 1] == ' ' || v.p[b - 1] == '\t'))
				b--;
			if (b - a == name.n && strncasecmp(v.p + a, name.p, name.n) == 0)
				return true;
			at = end + 1;
		}
	}
	return false;
}

int proxyreq_origin_head(const struct http_request *head, const struct proxyreq *r, struct buf *out)
{
	int ret = buf_printf(out, "%.*s %.*s HTTP/1.1\r\n", (int)head->method.n, head->method.p, (int)r->path.n,
			     r->path.p);
	bool host = false;
	for (size_t i = 0; i < head->num_headers && ret == 0; i++) {
		const struct http_header *h = &head->headers[i];
		if (hop_by_hop(h->name) || named_in_connection(head, h->name))
			continue;
		host |= slice_case_eq(h->name, "Host");
		ret = buf_printf(out, "%.*s: %.*s\r\n", (int)h->name.n, h->name.p, (int)h->value.n, h->value.p);
	}
	if (ret == 0 && !host)
		ret = r->port == 80 ? buf_printf(out, "Host: %s\r\n", r->host)
				    : buf_printf(out, "Host: %s:%u\r\n", r->host, r->port);
	if (ret == 0)
		ret = buf_append_str(out, "Connection: close\r\n\r\n");
	return ret;
}
