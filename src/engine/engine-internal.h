/*
 * engine-internal.h - what engine.c shares with the other modules of the
 * engine's calls (engine-image.c), and no one else: the long calls on a
 * connection of their own, progress streams, label filters, the id check.
 * Not an API: only engine*.c include it.
 */
#ifndef ENGINE_INTERNAL_H
#define ENGINE_INTERNAL_H

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "engine/engine.h"
#include "engine/http.h"

/* Returns ERRCODE_INTERNAL from the calling function for an id that is not 64 hex digits. */
#define CHECK_ID(id)                                                                                     \
	do {                                                                                             \
		if (!engine_id_valid(id))                                                                \
			return err_set(err, ERRCODE_INTERNAL, -EINVAL, "refusing an invalid engine id"); \
	} while (0)

/*
 * Opens a connection of its own with the long read timeout and sends method
 * path with body[0..len) or, when src is given, with what src yields in
 * chunks (content_type, may be NULL, as its header); then reads the response
 * head. 0 with *ret_conn armed on call (the caller disarms and destroys it,
 * with engine_long_close), or -errno with err.
 */
int engine_long_open(struct engine *e, struct call *call, const char *method, const char *path,
		     const char *content_type, const void *body, size_t len, engine_source_fn src, void *src_arg,
		     struct http_conn **ret_conn, struct http_response *resp, struct err *err);
/* engine_long_open with any extra header lines (CRLF-ended), and idle_ms (0: none) capping each wait for a byte. */
int engine_long_open_headers(struct engine *e, struct call *call, const char *method, const char *path,
			     const char *headers, int idle_ms, const void *body, size_t len, engine_source_fn src,
			     void *src_arg, struct http_conn **ret_conn, struct http_response *resp, struct err *err);
/* Ends a long call: disarms call, closes conn, maps a cancelled read. Returns r. */
int engine_long_close(struct call *call, struct http_conn *conn, int r, struct err *err);
/* Reads a >= 400 answer's message into err (404: what is missing is an image). Returns -EIO or -ENOENT. */
int engine_long_failed(struct http_conn *conn, int status, struct err *err);
/*
 * Reads a progress stream (one JSON object per line) to its end, handing
 * each to on_msg; an {"error": ...} message ends it as ERRCODE_ENGINE_ERROR.
 * ret_last (may be NULL) receives the last message that had key `keep`.
 */
int engine_read_messages(struct http_conn *conn, engine_message_fn on_msg, void *arg, const char *keep,
			 json_t **ret_last, struct err *err);
/* GET /<kind>/json?all=1&filters={"label":[label]}: the array. */
int engine_list_by_label(struct engine *e, struct call *call, const char *kind, const char *label, json_t **ret_json,
			 struct err *err);

/* engine.c's connection pool and request plumbing, for engine-archive.c. */
struct http_conn;
/* The versioned target of path (/vX.Y/path once the API version is known). 0 or -errno. */
int engine_versioned(struct engine *e, struct call *call, const char *path, char *out, size_t outsz, struct err *err);
/* A pooled connection or a new one (*ret_reused says which). 0 or -errno. */
int engine_conn_get(struct engine *e, struct http_conn **ret, bool *ret_reused, struct err *err);
/* Back to the pool (or closed when it is full). */
void engine_conn_put(struct engine *e, struct http_conn *c);
/* Closes every idle pooled connection (a reused one failed: the others are stale too). */
void engine_pool_drop(struct engine *e);
/* call_arm's cancel function for a request on a connection: aborts it. */
void engine_abort_conn(void *arg);
/* Ends call's watch over a request: disarmed, and a failure it caused reads as cancelled. Returns r. */
int engine_call_done(struct call *call, int r, struct err *err);
/* Appends what to do to an engine failure whose message does not say it yet. Returns r. */
int engine_hint(struct err *err, int r);
/* Sends a chunked body from src on conn: 0 once the last chunk went, or src's -errno (engine-archive.c). */
int engine_put_chunks(struct http_conn *conn, engine_source_fn src, void *arg, struct err *err);
/* err from an error status and the engine's JSON body (its message). */
void engine_error_message(int status, const json_t *j, struct err *err);

#endif
