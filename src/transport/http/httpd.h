/*
 * httpd.h - MCP over Streamable HTTP (`serve --http`), on libmicrohttpd.
 *
 * POST /mcp carries one JSON-RPC message into the same mcp layer the stdio
 * loop feeds; its answer comes back as application/json, or as an SSE stream
 * (progress and log notifications, then the response) when the client
 * accepts one and the call sent something before its response.  GET /mcp is
 * 405 (no server-to-client stream is offered), DELETE /mcp ends an MCP
 * session, GET /health answers without MCP, GET /files/SESSION/PATH serves a
 * sandbox's file (with the token, or through a signed link).  With a token
 * file, /mcp needs `Authorization: Bearer TOKEN`.  Details: docs/http.md.
 */
#ifndef HTTPD_H
#define HTTPD_H

#include <stdbool.h>

#include "base/errcode.h"
#include "mcp/mcp.h"
#include "tools/tools.h"

/* Connections served at once; past it a new one gets 503 (and a few more are closed at once). */
#define HTTPD_CONNECTIONS_MAX 256
/*
 * What request bodies may cost at once, all connections together: each is
 * charged HTTPD_BODY_FACTOR times its size (the body, its copy for a worker,
 * the JSON decoding jsonscan lets through), from its Content-Length before
 * it is read or as it arrives when chunked. Past the budget a request is
 * 503, unless it is the only one in flight (so one of SANDBOX_MAX_LINE_BYTES
 * always fits).
 */
#define HTTPD_BODY_BUDGET ((unsigned long long)512 << 20)
#define HTTPD_BODY_FACTOR 8
/* MCP sessions (Mcp-Session-Id) kept; past it the one used least recently is ended. */
#define HTTPD_SESSIONS_MAX 1024
/*
 * MCP sessions one principal (an HTTP token's NAME) may hold: past it, its
 * own least recently used one ends. Another principal's are never ended.
 */
#define HTTPD_SESSIONS_PER_PRINCIPAL 128

struct httpd;

/*
 * Starts serving on cfg->http (svc->cfg) with the workers of m. m and svc
 * are borrowed and must outlive the httpd. 0, or -errno with err (a bad
 * address, a non-loopback address, a port in use).
 */
int httpd_start(struct mcp *m, const struct tool_services *svc, struct httpd **ret, struct err *err);
/* Stops serving: open requests are cancelled, MCP sessions ended. NULL is a no-op. */
void httpd_stop(struct httpd *h);
/* Re-reads the token file (SIGHUP); a file that no longer parses leaves the old tokens in force. */
void httpd_reload(struct httpd *h);
/* True when serving HTTPS (--tls-cert, --tls-key). */
bool httpd_tls(const struct httpd *h);
/* "127.0.0.1:8080" as bound (borrowed). */
const char *httpd_address(const struct httpd *h);

#endif
