/*
 * proxyreq.h - what a request to the egress proxy asks for: the host and
 * port of a CONNECT, or of a plain-HTTP request in absolute form
 * ("GET http://host/path HTTP/1.1"), checked for the ways a request can
 * say one host and mean another, and the head sent on to the origin.
 *
 * Pure: parses the head base/http_parse.c split; no I/O. Unit-tested and
 * fuzzed (tests/fuzz/fuzz-proxyreq.c).
 */
#ifndef PROXYREQ_H
#define PROXYREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/http_parse.h"
#include "proxy/policy.h"

struct proxyreq {
	bool connect;
	char host[POLICY_HOST_MAX + 1]; /* lower case; an IPv6 literal in brackets */
	uint16_t port;
	struct slice path;	/* plain HTTP: the origin-form target ("/simple/"); empty for CONNECT */
	int64_t content_length; /* plain HTTP: -1 when none */
};

/*
 * Interprets head (a whole parsed request head). 0, or an HTTP status to
 * answer with (400, 405, 411, 501) and a one-line reason in why.
 */
int proxyreq_parse(const struct http_request *head, struct proxyreq *ret, char *why, size_t whysz);
/*
 * The head to send the origin for a plain-HTTP request: the request line
 * in origin form, the headers without the hop-by-hop and proxy ones, and
 * "Connection: close" (one request per connection: the next one comes on a
 * new connection and is judged again). 0, or -EMSGSIZE when out is full.
 */
int proxyreq_origin_head(const struct http_request *head, const struct proxyreq *r, struct buf *out);

#endif
