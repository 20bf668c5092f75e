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

#endif
