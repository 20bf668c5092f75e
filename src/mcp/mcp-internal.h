/*
 * mcp-internal.h - what mcp.c (the method table, requests, calls) and
 * intake.c (a line's way in: bounded, parsed, routed) share.
 */
#ifndef MCP_INTERNAL_H
#define MCP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "base/jsonscan.h"
#include "mcp/bulk.h"
#include "mcp/mcp.h"
#include "mcp/out.h"
#include "mcp/rpc.h"

/*
 * One client's legacy-era state: stdio has one, the HTTP transport one per
 * Mcp-Session-Id (and a fresh one for each stateless request).  Counted:
 * the calls a peer sent hold it, and its address is their dispatch owner.
 */
struct mcp_peer {
	atomic_uint refs;
	char principal[CALL_PRINCIPAL_MAX + 1]; /* whose sandboxes its calls use */
	pthread_mutex_t lock;			/* guards initialized and version */
	bool initialized;
	char version[16];	     /* negotiated legacy version */
	atomic_int legacy_log_level; /* -1: logging/setLevel never called */
};

struct mcp {
	const struct tool_services *svc;
	struct out *out; /* stdio's writer, and where log lines outside a call go */
	struct dispatch *dispatch;
	struct mcp_peer *stdio;		   /* the peer of mcp_handle_line */
	atomic_ullong seq;		   /* for keys of calls that run alone */
	char *instructions;		   /* built once from the tools offered; a notice may come first */
	pthread_mutex_t instructions_lock; /* the engine probe adds its notice from a thread of its own */
	pthread_t probe;		   /* mcp_start_probe's */
	bool probing;
	void *(*probe_fn)(void *);
	void *probe_arg;
	bool probed; /* under instructions_lock: the probe ended */
	pthread_cond_t probe_done;
	unsigned long long bulk_nonce;	  /* makes this process's bulk markers unguessable */
	struct notify *resources_changed; /* NULL: no thread, no list_changed */
	atomic_bool initialized_legacy;	  /* notifications/initialized came: list_changed may go out */
	atomic_uint big_lines;		  /* big lines handed to a worker and not yet done with */
};

/* Big string values of at least this many bytes are lifted out of a big line (bulk.h). */
#ifndef MCP_BULK_MIN /* the fuzz build sets it lower, as MCP_BIG_LINE */
#define MCP_BULK_MIN (1u << 20)
#endif

/* A protocol error to reply with. */
struct fail {
	int code;
	char message[ERR_MSG_MAX];
	json_t *data; /* owned, may be NULL */
};

/*
 * What decoding one line may cost (jsonscan's estimate): a fixed allowance
 * plus a multiple of the line, so the server's peak stays near a small
 * constant plus a few times the longest line.  Deeper nesting than
 * MCP_JSON_DEPTH_MAX is refused too; an id longer than MCP_SCAN_ID_MAX is
 * not recovered for an error reply.
 */
#ifndef MCP_JSON_COST_BASE /* the fuzz build sets it lower, as MCP_BIG_LINE */
#define MCP_JSON_COST_BASE ((size_t)4 << 20)
#endif
#define MCP_JSON_COST_PER_BYTE 6
#define MCP_JSON_DEPTH_MAX 128
#define MCP_SCAN_ID_MAX 256
/* Lines this long are followed by a trim of the heap (trim_heap). */
#define MCP_TRIM_MIN ((size_t)1 << 20)

/*
 * Lines of MCP_BIG_LINE bytes or more are parsed on a worker, one after the
 * other on this dispatch key, so the read loop answers what follows them
 * (a ping) at once.  While one is there, the calls of later lines queue
 * behind it on the same key before they go to their session's queue, so
 * calls still start in the order they were sent.
 */
#define MCP_LINES_KEY "mcp:big-lines"

/* Where a message came from and where its answers go. */
struct origin {
	struct out *out;
	mcp_route_fn route;
	void *arg;
	unsigned flags; /* MCP_RUN_HERE */
};

/* A big line copied off the reader's buffer, for its worker. */
struct line_job {
	struct mcp *m;
	struct origin from; /* holds a reference to from.out */
	char *line;
	size_t n;
	struct jsonscan scan;
};

/* Replies to id (NULL: null) with a JSON-RPC error; data is taken. */
void mcp_reply_error(struct out *out, json_t *id, int code, const char *message, json_t *data);
/* The error for a dispatch that refused a call (r from dispatch_submit): busy, or stopping. */
int mcp_submit_busy(struct mcp *m, int r, struct fail *f);
/* Acts on a parsed request of peer's, answering on out (mcp.c). */
void mcp_handle_request(struct mcp *m, struct mcp_peer *peer, struct out *out, const struct rpc_msg *rm,
			struct bulk_lifted *bulk, size_t line_len, bool in_order, bool run_here);
/* Acts on a parsed notification of peer's (mcp.c). */
void mcp_handle_notification(struct mcp *m, struct mcp_peer *peer, const struct rpc_msg *rm);

#endif
