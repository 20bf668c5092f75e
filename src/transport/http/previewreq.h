/*
 * previewreq.h - the head a preview sends the sandbox's app (preview.c):
 * the browser's request with the hop-by-hop headers and the preview's own
 * credential taken out, and one request per connection.
 *
 * Pure: reads a head base/http_parse.c split; no I/O. Unit-tested and
 * fuzzed (tests/fuzz/fuzz-previewreq.c).
 */
#ifndef PREVIEWREQ_H
#define PREVIEWREQ_H

#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/http_parse.h"

struct previewreq {
	bool upgrade;		/* asks for a protocol switch (WebSocket): a tunnel if the app answers 101 */
	int64_t content_length; /* the body's bytes (0 when none) */
};

/*
 * The head for the app into out: the request line as sent; every header
 * but Connection, Keep-Alive, Proxy-Connection, TE, Trailer and Upgrade
 * (the last kept when the request asks to upgrade); Cookie without its
 * sbx_preview items (dropped when none is left); then "Connection: close"
 * (or "Connection: Upgrade"). So the app answers one request and closes,
 * and the next request comes on a connection of its own, judged again
 * (a proxy in front that pools connections cannot slip another client's
 * request in). 0, or an HTTP status (400: a Content-Length that is not
 * one number, 411: a chunked body, 431: out is full) with a reason in why.
 */
int previewreq_rewrite(const struct http_request *head, struct previewreq *ret, struct buf *out, char *why,
		       size_t whysz);

#endif
