/*
 * rpc.c - line framing and JSON-RPC envelopes.
 */
#include <errno.h>
#include <string.h>

#include "mcp/rpc.h"

void rpc_reader_init(struct rpc_reader *r, int fd, size_t max_line)
{
	r->fd = fd;
	r->max_line = max_line;
	/* room for one full line plus one read's worth past it */
	buf_init(&r->buf, max_line + RPC_READ_CHUNK);
	r->scanned = 0;
	r->consumed = 0;
	r->discarding = false;
	r->eof = false;
}

void rpc_reader_finish(struct rpc_reader *r)
{
	buf_finish(&r->buf);
}

int rpc_reader_next(struct rpc_reader *r, struct slice *ret_line)
{
	if (r->consumed) {
		buf_consume(&r->buf, r->consumed);
		r->consumed = 0;
		r->scanned = 0;
	}

	for (;;) {
		char *nl = r->buf.len > r->scanned ? memchr(r->buf.data + r->scanned, '\n', r->buf.len - r->scanned)
						   : NULL;
		if (nl) {
			size_t n = (size_t)(nl - r->buf.data);
			r->consumed = n + 1;
			if (r->discarding) {
				r->discarding = false;
				return -EMSGSIZE;
			}
			if (n > r->max_line)
				return -EMSGSIZE;
			*ret_line = slice_make(r->buf.data, n);
			return 1;
		}
		r->scanned = r->buf.len;
		if (r->buf.len > r->max_line) {
			/* over the cap with no newline yet: drop what we have, keep draining */
			r->discarding = true;
			buf_reset(&r->buf);
			r->scanned = 0;
		}
		if (r->eof) {
			if (r->discarding) {
				r->discarding = false;
				return -EMSGSIZE;
			}
			if (r->buf.len == 0)
				return 0;
			r->consumed = r->buf.len;
			*ret_line = slice_make(r->buf.data, r->buf.len);
			return 1;
		}

		char *tail;
		int rr = buf_reserve(&r->buf, RPC_READ_CHUNK, &tail);
		if (rr < 0)
			return rr; /* cannot happen: buf max leaves room for a chunk */
		ssize_t got = read(r->fd, tail, RPC_READ_CHUNK);
		if (got < 0)
			return -errno;
		if (got == 0)
			r->eof = true;
		else
			buf_commit(&r->buf, (size_t)got);
	}
}

bool rpc_id_valid(const json_t *id)
{
	return id && (json_is_string(id) || json_is_integer(id));
}

int rpc_envelope(json_t *msg, struct rpc_msg *ret, json_t **ret_id, struct err *err)
{
	*ret_id = NULL;
	if (!json_is_object(msg))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "Invalid Request: a JSON-RPC message must be an object");

	json_t *id = json_object_get(msg, "id");
	if (rpc_id_valid(id))
		*ret_id = id;

	json_t *v = json_object_get(msg, "jsonrpc");
	if (!json_is_string(v) || strcmp(json_string_value(v), "2.0") != 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
	if (id && !rpc_id_valid(id))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "Invalid Request: \"id\" must be a string or an integer");

	json_t *method = json_object_get(msg, "method");
	if (!method) {
		if (id && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
			ret->kind = RPC_KIND_RESPONSE;
			ret->id = id;
			ret->method = NULL;
			ret->params = NULL;
			return 0;
		}
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "Invalid Request: \"method\" is missing");
	}
	if (!json_is_string(method) || json_string_length(method) == 0 || json_string_length(method) > RPC_METHOD_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "Invalid Request: \"method\" must be a non-empty string");

	/* params of the wrong type are the method layer's -32602, not -32600 */
	json_t *params = json_object_get(msg, "params");

	ret->kind = id ? RPC_KIND_REQUEST : RPC_KIND_NOTIFICATION;
	ret->id = id;
	ret->method = json_string_value(method);
	ret->params = params;
	return 0;
}

json_t *rpc_result(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

json_t *rpc_error(json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_pack("{s:i, s:s}", "code", code, "message", message);
	if (data)
		json_object_set_new(e, "data", data);
	return json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", e);
}

json_t *rpc_notification(const char *method, json_t *params)
{
	return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}
