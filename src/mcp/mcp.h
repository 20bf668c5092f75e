/*
 * mcp.h - the MCP method layer: one handler per JSON-RPC method, both
 * protocol eras, and the hand-off of tools/call to the dispatcher.
 *
 * mcp_handle_line runs on the read loop and never waits on Docker: methods
 * that answer from memory reply at once, tools/call is queued on a worker and
 * answered from there.
 */
#ifndef MCP_H
#define MCP_H

#include <stdbool.h>
#include <stddef.h>

#include "mcp/out.h"
#include "mcp/rpc.h"
#include "tools/tools.h"

/* Worker threads at most (calls on different sessions run in parallel). */
#define MCP_WORKERS_MAX 32
/*
 * Requests queued or running may hold this many longest lines
 * (SANDBOX_MAX_LINE_BYTES) between them; past that, and past
 * DISPATCH_PENDING_MAX requests, a new one is refused at once.
 */
#define MCP_PENDING_LINES 4

struct mcp;
struct mcp_peer;

/* What a parsed message is, for a transport to choose its peer (all borrowed). */
struct mcp_msg_info {
	enum rpc_kind kind;
	const char *method; /* NULL for a response */
	json_t *id;	    /* NULL for a notification */
	bool modern;	    /* params._meta names a protocol version (2026-07-28, stateless) */
};

/*
 * Chooses the peer a parsed message belongs to: a new reference, or NULL to
 * refuse the message (nothing is then written for it: the transport answers
 * on its own terms, e.g. HTTP 404 for an unknown session).  Runs on the
 * thread that parses: the caller's, or a worker for a line of MCP_BIG_LINE
 * bytes or more.
 */
typedef struct mcp_peer *(*mcp_route_fn)(void *arg, const struct mcp_msg_info *info);

/*
 * svc and out are borrowed and must outlive the mcp. out is where answers to
 * mcp_handle_line and notifications outside any call are written.
 */
struct mcp *mcp_create(const struct tool_services *svc, struct out *out);
/* Lets calls in flight finish, up to wait_ms (stdin reached EOF). */
void mcp_drain(struct mcp *m, int wait_ms);
/*
 * Cancels running calls and waits briefly for them (see dispatch_destroy).
 * Returns false when some are still running: then m and what the calls use
 * (the services) are left allocated for them.
 */
bool mcp_destroy(struct mcp *m);
/*
 * Lines this long are parsed as they are read, handing their memory back (see
 * mcp_handle_line). The fuzz build sets it lower, so that the fuzzer reaches
 * that path with inputs of its size.
 */
#ifndef MCP_BIG_LINE
#define MCP_BIG_LINE (4u << 20)
#endif

/*
 * Puts text (one sentence or a few) first in the server instructions, for a
 * fact found at start-up that every client should hear (the engine does not
 * answer). Any thread, any time: an initialize answered before it does not
 * carry it.
 */
void mcp_add_notice(struct mcp *m, const char *text);

/*
 * Runs fn(arg), the start-up's engine probe (which may mcp_add_notice), on a
 * thread of its own while m serves, or here when quick is set (a local
 * socket: a connect, microseconds, less than starting a thread and waiting
 * for it to be scheduled); mcp_destroy waits for the thread. Without a
 * thread it runs here too.
 */
void mcp_start_probe(struct mcp *m, void *(*fn)(void *), void *arg, bool quick);

/*
 * Handles one input line (without its newline). Protocol errors become
 * replies. A line of MCP_BIG_LINE bytes or more is consumed: its big string
 * values are decoded in place and lifted out (see bulk.h), the rest parsed
 * as a stream, and the pages wholly inside it handed back to the kernel
 * (madvise MADV_DONTNEED): the caller must not read those bytes afterwards.
 */
void mcp_handle_line(struct mcp *m, char *line, size_t len);
/*
 * Same, for a transport with several clients: answers and notifications
 * the message causes go to out (a reference is taken for each call still
 * running, see out.h), and route picks the peer (see mcp_route_fn).
 * flags: MCP_RUN_HERE or 0.
 */
void mcp_handle_message(struct mcp *m, struct out *out, mcp_route_fn route, void *arg, char *line, size_t len,
			unsigned flags);
/*
 * The caller's thread only waits for the answer (an HTTP request's): a
 * read-only tool call on no session (env_info, session_list) runs on it
 * before mcp_handle_message returns, instead of on a worker (see
 * dispatch_run_here). Never on stdio: its reader must not block.
 */
#define MCP_RUN_HERE 1u

/*
 * A client of a transport: its legacy-era state (initialize, log level) and
 * the principal its calls act for (copied; "" without tokens: see
 * session.h). One reference.
 */
struct mcp_peer *mcp_peer_create(struct mcp *m, const char *principal);
/* Another reference (NULL passed through). */
struct mcp_peer *mcp_peer_get(struct mcp_peer *p);
/* Drops a reference; NULL is a no-op. */
void mcp_peer_put(struct mcp_peer *p);
/*
 * Cancels p's call with request id id, or all of p's calls when id is NULL
 * (its client went away): queued ones are dropped, running ones woken and
 * their processes killed; nothing is sent for them. True if one was found.
 */
bool mcp_peer_cancel(struct mcp *m, struct mcp_peer *p, const json_t *id);
/* Replies to a line that was longer than the configured cap. */
void mcp_handle_oversized(struct mcp *m);

#endif
