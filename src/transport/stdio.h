/*
 * stdio.h - the stdio transport: one JSON-RPC message per line on stdin,
 * answered through the mcp's writer (stdout), until EOF or a stop.
 */
#ifndef TRANSPORT_STDIO_H
#define TRANSPORT_STDIO_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "mcp/mcp.h"
#include "mcp/out.h"

/* How long calls already submitted may still run after stdin reaches EOF. */
#define STDIO_EOF_GRACE_MS 5000

/*
 * Reads stdin, lines of at most max_line bytes, into m until EOF, a read
 * error, the client closing stdout (out) or *stop turning nonzero (a
 * signal's number, set by its handler). After EOF the calls already asked
 * for get STDIO_EOF_GRACE_MS to answer. Destroys m; true when every call
 * ended (mcp_destroy).
 */
bool stdio_serve(struct mcp *m, struct out *out, size_t max_line, volatile sig_atomic_t *stop);

#endif
