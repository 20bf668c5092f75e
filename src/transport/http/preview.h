/*
 * preview.h - previews of forwarded ports over HTTP (docs/jobs.md).
 *
 * In serve --http, port P of session S that port_forward opened is also
 * served at http://P-S.localhost:PORT/ (or under SANDBOX_PREVIEW_URL's
 * domain): a listener of its own, apart from /mcp, so every preview is an
 * origin of its own and none is the server's. The signed link
 * (linksign_preview_url) is traded once for a cookie of that host; then
 * each connection is relayed byte for byte to the forward, so WebSocket
 * upgrades (a dev server's live reload) pass as they are.
 */
#ifndef PREVIEW_H
#define PREVIEW_H

#include "base/errcode.h"
#include "sandbox/session.h"
#include "tools/linksign.h"

/* Preview connections open at once; more are closed at once. */
#define PREVIEW_CONNS_MAX 256

struct preview;

/*
 * Listens on host:port (port 0: a free one) and tells links the base its
 * URLs start with: base when given ("https://preview.example.com"), else
 * http://localhost:PORT. 0 with *ret, or -errno with err.
 */
int preview_start(const char *host, unsigned port, const char *base, struct session_mgr *sessions,
		  struct linksign *links, struct preview **ret, struct err *err);
/* The port it listens on. */
unsigned preview_port(const struct preview *p);
/* Stops listening, ends every connection and waits for them; frees p. NULL is fine. */
void preview_stop(struct preview *p);

#endif
