/*
 * intake.c - a line's way in (mcp.h: mcp_handle_line, mcp_handle_message):
 * what decoding it may cost judged before jansson sees it, a big line
 * parsed on a worker with its big strings lifted out (bulk.h), the message
 * routed to its peer by the transport, then handed to mcp.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "buildconf.h"
#include "mcp/dispatch.h"
#include "mcp/mcp-internal.h"
#include "mcp/mcp.h"
#include "tools/tools.h"
#if HAVE_MALLOC_TRIM
#include <malloc.h>
#endif

static void line_job_run(struct call *c, void *data);
static void line_job_free(void *data);
static void line_parse(struct mcp *m, const struct origin *from, char *line, size_t n, const struct jsonscan *scan,
		       struct call *job);
static void trim_heap(size_t n);

/* Picks the lifted string a tools/call hands its tool as the bulk argument, then restores the rest. */
static void bulk_settle_call(const struct mcp *m, struct bulk_lifted *b, json_t *msg)
{
	const char *method = json_string_value(json_object_get(msg, "method"));
	json_t *params = json_object_get(msg, "params");
	json_t *args = json_object_get(params, "arguments");
	const char *name = json_string_value(json_object_get(params, "name"));
	json_t *keep = NULL;

	/* any shape may come here (the checks of tools/call come later): no name, no bulk argument */
	if (method && strcmp(method, "tools/call") == 0 && name && json_is_object(args)) {
		const struct tool_entry *t = tools_find(name, m->svc->cfg->tool_groups);
		keep = t && t->bulk_arg ? json_object_get(args, t->bulk_arg) : NULL;
	}
	bulk_settle(b, msg, keep);
}

/* The id a scan found, when it is one a request may carry (new reference), else NULL. */
static json_t *scan_id(const char *line, const struct jsonscan *scan)
{
	if (scan->id_len == 0 || scan->id_len > MCP_SCAN_ID_MAX)
		return NULL;
	json_t *id = json_loadb(line + scan->id_start, scan->id_len, JSON_DECODE_ANY, NULL);
	if (!rpc_id_valid(id)) {
		json_decref(id);
		return NULL;
	}
	return id;
}

/*
 * Refuses a line whose decoding would cost more than its budget, before
 * jansson sees it; true when it did (and replied).
 */
static bool over_budget(struct out *out, const char *line, size_t n, const struct jsonscan *scan)
{
	size_t budget = MCP_JSON_COST_BASE + MCP_JSON_COST_PER_BYTE * n;
	if (scan->cost <= budget && scan->depth <= MCP_JSON_DEPTH_MAX)
		return false;
	char text[ERR_MSG_MAX];
	if (scan->depth > MCP_JSON_DEPTH_MAX)
		snprintf(text, sizeof(text),
			 "Invalid Request: the message nests objects and arrays %zu deep, over the limit of %d; "
			 "flatten the arguments",
			 scan->depth, MCP_JSON_DEPTH_MAX);
	else
		snprintf(text, sizeof(text),
			 "Invalid Request: the message holds too many JSON values to decode (%zu objects, %zu arrays, "
			 "%zu strings, %zu other values: about %zu MiB in memory, over the %zu MiB this %zu-byte line "
			 "may use); send bulk data as one string (e.g. base64 file content) or split the request",
			 scan->objects, scan->arrays, scan->strings, scan->bare, scan->cost >> 20, budget >> 20, n);
	json_t *id = scan_id(line, scan);
	mcp_reply_error(out, id, RPC_INVALID_REQUEST, text, NULL);
	json_decref(id);
	return true;
}

/* Replies to a line jansson refused: -32602 for a valid id with a \u0000, else -32700. */
static void parse_failed(struct mcp *m, struct out *out, const struct bulk_lifted *bulk, const json_error_t *jerr,
			 json_t *scanned_id)
{
	char text[300];
	if (json_error_code(jerr) == json_error_null_character ||
	    json_error_code(jerr) == json_error_null_byte_in_key) {
		mcp_reply_error(out, scanned_id, RPC_INVALID_PARAMS,
				"Invalid params: a string in this request holds \\u0000 (the NUL character), which "
				"sandbox-mcp does not accept; remove it, or send binary data base64-encoded "
				"(file_write's encoding \"base64\")",
				NULL);
		return;
	}
	snprintf(text, sizeof(text), "Parse error: %s (at byte %zu)", jerr->text,
		 bulk_position(bulk, jerr->position < 0 ? 0 : (size_t)jerr->position));
	mcp_reply_error(out, NULL, RPC_PARSE_ERROR, text, NULL);
}

static struct mcp_peer *stdio_route(void *arg, const struct mcp_msg_info *info)
{
	struct mcp *m = arg;
	(void)info;
	return mcp_peer_get(m->stdio);
}

void mcp_handle_line(struct mcp *m, char *line, size_t len)
{
	mcp_handle_message(m, m->out, stdio_route, m, line, len, 0);
}

void mcp_handle_message(struct mcp *m, struct out *out, mcp_route_fn route, void *arg, char *line, size_t len,
			unsigned flags)
{
	struct jsonscan scan;
	struct origin from = { .out = out, .route = route, .arg = arg, .flags = flags };

	/* blank lines (and a CR left by a CRLF client) are not messages */
	size_t n = len;
	while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	if (n == 0)
		return;

	jsonscan_measure(line, n, &scan);
	if (over_budget(out, line, n, &scan))
		return;
	if (n < MCP_BIG_LINE) {
		line_parse(m, &from, line, n, &scan, NULL);
		return;
	}
	/* a copy for the worker; the reader's pages go back as they are copied */
	struct line_job *lj = xcalloc(1, sizeof(*lj));
	lj->m = m;
	lj->from = from;
	out_get(out);
	lj->n = n;
	lj->scan = scan;
	lj->line = xmalloc(n);
	bulk_copy_giving_back(lj->line, line, n);
	json_t *id = scan_id(lj->line, &scan); /* so that notifications/cancelled finds it */
	struct call *c = call_create(id, MCP_LINES_KEY, line_job_run, line_job_free, lj);
	json_decref(id);
	call_set_weight(c, n);
	/* stdio's peer is known before parsing; a transport's, only after (it cannot cancel the parse) */
	if (route == stdio_route)
		call_set_owner(c, m->stdio);
	atomic_fetch_add(&m->big_lines, 1);
	int r = dispatch_submit(m->dispatch, c);
	if (r < 0) {
		struct fail f = { 0 };
		(void)mcp_submit_busy(m, r, &f);
		mcp_reply_error(out, call_id(c), f.code, f.message, NULL);
		call_destroy(c); /* line_job_free undoes big_lines */
	}
}

static void line_job_run(struct call *c, void *data)
{
	struct line_job *lj = data;
	line_parse(lj->m, &lj->from, lj->line, lj->n, &lj->scan, c);
	free(lj->line);
	lj->line = NULL;
	trim_heap(lj->n);
}

static void line_job_free(void *data)
{
	struct line_job *lj = data;
	/* after the line's own call was queued: later calls may go straight to their queues */
	atomic_fetch_sub(&lj->m->big_lines, 1);
	out_put(lj->from.out);
	free(lj->line);
	free(lj);
}

/*
 * Parses a line that fits its budget and acts on it.  job is the big-line
 * worker's call (NULL on the read loop): a request it carries that was
 * cancelled meanwhile is dropped, and its calls are already in order.
 */
static void line_parse(struct mcp *m, const struct origin *from, char *line, size_t n, const struct jsonscan *scan,
		       struct call *job)
{
	struct out *out = from->out;
	json_error_t jerr;
	struct rpc_msg rm;
	struct err e;
	json_t *id = NULL;
	struct bulk_lifted bulk = { 0 };

	/* read now: a big line's bytes are handed back while it is parsed */
	json_t *scanned_id = scan->nul_escape ? scan_id(line, scan) : NULL;

	json_t *msg;
	if (n >= MCP_BIG_LINE) {
		struct bulk_feed f;
		bulk_lift(&bulk, line, n, MCP_BULK_MIN, m->bulk_nonce);
		bulk_feed_init(&f, line, n, &bulk);
		msg = json_load_callback(bulk_feed_read, &f, JSON_DECODE_ANY, &jerr);
		if (msg && bulk.count)
			bulk_settle_call(m, &bulk, msg);
	} else {
		msg = json_loadb(line, n, JSON_DECODE_ANY, &jerr);
	}
	if (!msg) {
		parse_failed(m, out, &bulk, &jerr, scanned_id);
		json_decref(scanned_id);
		bulk_free(&bulk);
		return;
	}
	json_decref(scanned_id);
	if (json_is_array(msg)) {
		mcp_reply_error(out, NULL, RPC_INVALID_REQUEST,
				"Invalid Request: JSON-RPC batches are not supported; send one message per line", NULL);
		json_decref(msg);
		bulk_free(&bulk);
		return;
	}
	err_clear(&e);
	if (rpc_envelope(msg, &rm, &id, &e) < 0) {
		mcp_reply_error(out, id, RPC_INVALID_REQUEST, e.msg, NULL);
		json_decref(msg);
		bulk_free(&bulk);
		return;
	}
	json_t *meta = json_object_get(rm.params, "_meta");
	struct mcp_msg_info info = { .kind = rm.kind,
				     .method = rm.method,
				     .id = rm.id,
				     .modern = json_object_get(meta, "io.modelcontextprotocol/protocolVersion") !=
					       NULL };
	struct mcp_peer *peer = from->route(from->arg, &info);
	if (!peer) {
		/* the transport refused it (unknown session) and answers that itself */
	} else if (rm.kind == RPC_KIND_NOTIFICATION) {
		mcp_handle_notification(m, peer, &rm);
	} else if (rm.kind == RPC_KIND_REQUEST && !(job && call_cancelled(job))) {
		mcp_handle_request(m, peer, out, &rm, &bulk, n, job != NULL, !job && (from->flags & MCP_RUN_HERE));
	} /* a response: we send no requests, so there is nothing to match */
	mcp_peer_put(peer);
	json_decref(msg);
	bulk_free(&bulk);
	if (!job)
		trim_heap(n);
}

/*
 * After a line of MCP_TRIM_MIN bytes or more: the many small blocks of a
 * big message stay in the heap (in the parsing thread's arena) once freed
 * unless handed back.  glibc's malloc_trim does that; elsewhere, nothing.
 */
static void trim_heap(size_t n)
{
#if HAVE_MALLOC_TRIM
	if (n >= MCP_TRIM_MIN)
		(void)malloc_trim(0);
#else
	(void)n;
#endif
}

void mcp_handle_oversized(struct mcp *m)
{
	struct out *out = m->out;
	char text[200];
	snprintf(text, sizeof(text),
		 "Invalid Request: line longer than %llu bytes (SANDBOX_MAX_LINE_BYTES); it was skipped",
		 (unsigned long long)m->svc->cfg->max_line_bytes);
	mcp_reply_error(out, NULL, RPC_INVALID_REQUEST, text, NULL);
}
