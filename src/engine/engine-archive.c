/*
 * engine-archive.c - files in and out of containers through the Engine
 * API's archive endpoint (a tar both ways: put, stat, get), a container's
 * whole filesystem (export), and the body of such a response read as it
 * comes (engine_body).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/log.h"
#include "engine/engine-internal.h"
#include "engine/engine.h"
#include "engine/http.h"

static int open_response(struct engine *e, struct call *call, const char *method, const char *target,
			 struct http_conn **ret_conn, struct http_response *resp, struct err *err);
static int response_failed(struct engine *e, struct call *call, struct http_conn *conn, int status, const char *what,
			   struct err *err);

struct engine_body {
	struct engine *e;
	struct http_conn *conn;
	struct call *call;
	bool done;
	bool own; /* a long call's connection: closed, never pooled */
};

/*
 * The archive endpoint's target for path in container id: put adds
 * noOverwriteDirNonDir (a file never replaces a folder, nor a folder a
 * file). 0, or -EINVAL with err for a bad id or a path too long.
 */
static int archive_target(const char *id, const char *path, bool put, char *out, size_t outsz, struct err *err)
{
	char esc[1024];
	CHECK_ID(id);
	if (engine_url_escape(path, esc, sizeof(esc)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "path too long");
	snprintf(out, outsz, "/containers/%s/archive?path=%s%s", id, esc, put ? "&noOverwriteDirNonDir=1" : "");
	return 0;
}

int engine_archive_put(struct engine *e, struct call *call, const char *id, const char *path, const void *tar,
		       size_t len, struct err *err)
{
	char target[1200];
	int r = archive_target(id, path, true, target, sizeof(target), err);
	if (r < 0)
		return r;
	return engine_request_raw(e, call, "PUT", target, "application/x-tar", tar, len, NULL, NULL, err);
}

/*
 * A pooled connection that still looks alive: an idle HTTP connection has
 * nothing to read, so one that polls readable was closed (or sent junk) by
 * the other end. A streamed body cannot be sent twice, so it is checked
 * before, not retried after.
 */
static int conn_get_live(struct engine *e, struct http_conn **ret, struct err *err)
{
	for (;;) {
		bool reused;
		int r = engine_conn_get(e, ret, &reused, err);
		if (r < 0 || !reused)
			return r;
		if (http_conn_idle_ok(*ret))
			return 0;
		http_conn_destroy(*ret);
		engine_pool_drop(e);
	}
}

/* Sends a chunked body from src on conn: 0 once the last chunk went, or src's -errno (the engine may refuse early). */
int engine_put_chunks(struct http_conn *conn, engine_source_fn src, void *arg, struct err *err)
{
	_cleanup_free_ char *piece = xmalloc(ENGINE_PUT_CHUNK);
	struct err werr;
	for (;;) {
		ssize_t n = src(arg, piece, ENGINE_PUT_CHUNK, err);
		if (n < 0)
			return (int)n;
		/* an engine that refuses stops reading: its answer says why */
		if (http_chunk_write(conn, piece, (size_t)n, &werr) < 0 || n == 0)
			return 0;
	}
}

int engine_archive_put_stream(struct engine *e, struct call *call, const char *id, const char *path,
			      engine_source_fn src, void *arg, struct err *err)
{
	char target[1200], full[1400];
	struct http_conn *conn;
	struct http_response resp;
	int r = archive_target(id, path, true, target, sizeof(target), err);
	if (r < 0)
		return r;
	r = engine_versioned(e, call, target, full, sizeof(full), err);
	if (r < 0 || (r = conn_get_live(e, &conn, err)) < 0)
		return engine_hint(err, r);
	if (call && call_arm(call, engine_abort_conn, conn) < 0) {
		http_conn_destroy(conn);
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	}
	r = http_request_send_chunked(conn, "PUT", full, "Content-Type: application/x-tar\r\n", err);
	if (r == 0)
		r = engine_put_chunks(conn, src, arg, err);
	if (r == 0)
		r = http_response_recv(conn, false, &resp, err);
	if (r == 0 && resp.status >= 400)
		return response_failed(e, call, conn, resp.status, path, err);
	struct buf out;
	buf_init(&out, 64 * 1024);
	if (r == 0)
		r = http_body_read_all(conn, &out, err);
	buf_finish(&out);
	r = engine_call_done(call, r, err);
	if (r < 0) {
		http_conn_destroy(conn);
		return r == -ECANCELED ? r : engine_hint(err, r);
	}
	engine_conn_put(e, conn);
	return 0;
}

/* Sends method target on a pooled connection and reads the head; 0 with *ret_conn (armed on call) or -errno. */
static int open_response(struct engine *e, struct call *call, const char *method, const char *target,
			 struct http_conn **ret_conn, struct http_response *resp, struct err *err)
{
	char full[1400];
	int r = engine_versioned(e, call, target, full, sizeof(full), err);
	if (r < 0)
		return r;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct http_conn *conn;
		bool reused;
		if ((r = engine_conn_get(e, &conn, &reused, err)) < 0)
			return engine_hint(err, r);
		if (call && call_arm(call, engine_abort_conn, conn) < 0) {
			http_conn_destroy(conn);
			return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
		}
		r = http_request_send(conn, method, full, NULL, NULL, 0, err);
		bool sent = r == 0;
		if (r == 0)
			r = http_response_recv(conn, strcmp(method, "HEAD") == 0, resp, err);
		if (r == 0) {
			*ret_conn = conn;
			return 0;
		}
		r = engine_call_done(call, r, err);
		http_conn_destroy(conn);
		if (!(reused && (!sent || r == -EPIPE || r == -ECONNRESET)) || r == -ECANCELED)
			break;
		engine_pool_drop(e);
	}
	return engine_hint(err, r);
}

/* The error of a >= 400 response (its JSON body read, capped), closing conn. */
static int response_failed(struct engine *e, struct call *call, struct http_conn *conn, int status, const char *what,
			   struct err *err)
{
	struct buf out;
	json_t *j = NULL;
	buf_init(&out, 64 * 1024);
	if (http_body_read_all(conn, &out, err) == 0 && out.len)
		j = json_loadb(out.data, out.len, 0, NULL);
	if (call)
		call_disarm(call);
	http_conn_destroy(conn);
	buf_finish(&out);
	if (status == 404) {
		json_decref(j);
		return err_set(err, ERRCODE_FILE_NOT_FOUND, -ENOENT, "%s: no such file or container", what);
	}
	engine_error_message(status, j, err);
	json_decref(j);
	return engine_hint(err, -EIO);
}

int engine_archive_stat(struct engine *e, struct call *call, const char *id, const char *path,
			struct engine_path_stat *ret, struct err *err)
{
	char target[1200];
	struct http_conn *conn;
	struct http_response resp;
	int r = archive_target(id, path, false, target, sizeof(target), err);
	if (r < 0 || (r = open_response(e, call, "HEAD", target, &conn, &resp, err)) < 0)
		return r;
	if (resp.status >= 400)
		return response_failed(e, call, conn, resp.status, path, err);
	if (call)
		call_disarm(call);
	engine_conn_put(e, conn);

	/* base64 of {"name","size","mode","mtime","linkTarget"} */
	size_t n = strlen(resp.path_stat);
	char dec[512];
	long long k = n && base64_decoded_max(n) < sizeof(dec) ? base64_decode(resp.path_stat, n, dec) : -1;
	json_t *j = k > 0 ? json_loadb(dec, (size_t)k, 0, NULL) : NULL;
	json_t *mode = json_object_get(j, "mode"), *size = json_object_get(j, "size");
	if (!json_is_integer(mode) || !json_is_integer(size)) {
		json_decref(j);
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the Docker engine sent no stat for %.200s", path);
	}
	ret->mode = (uint32_t)json_integer_value(mode);
	ret->size = (uint64_t)json_integer_value(size);
	const char *lt = json_string_value(json_object_get(j, "linkTarget"));
	snprintf(ret->link_target, sizeof(ret->link_target), "%s", lt ? lt : "");
	json_decref(j);
	return 0;
}

int engine_archive_get(struct engine *e, struct call *call, const char *id, const char *path, struct engine_body **ret,
		       struct err *err)
{
	char target[1200];
	struct http_conn *conn;
	struct http_response resp;
	int r = archive_target(id, path, false, target, sizeof(target), err);
	if (r < 0 || (r = open_response(e, call, "GET", target, &conn, &resp, err)) < 0)
		return r;
	if (resp.status >= 400)
		return response_failed(e, call, conn, resp.status, path, err);
	struct engine_body *b = xcalloc(1, sizeof(*b));
	b->e = e;
	b->conn = conn;
	b->call = call;
	*ret = b;
	return 0;
}

ssize_t engine_body_read(struct engine_body *b, void *p, size_t n, struct err *err)
{
	if (b->done)
		return 0;
	ssize_t k = http_body_read(b->conn, p, n, err);
	if (k < 0 && b->call && call_cancelled(b->call))
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	if (k == 0)
		b->done = true;
	return k;
}

void engine_body_destroy(struct engine_body *b)
{
	if (!b)
		return;
	if (b->call)
		call_disarm(b->call);
	if (b->done && !b->own)
		engine_conn_put(b->e, b->conn);
	else
		http_conn_destroy(b->conn);
	free(b);
}

int engine_container_export(struct engine *e, struct call *call, const char *id, struct engine_body **ret,
			    struct err *err)
{
	char path[128];
	struct http_conn *conn;
	struct http_response resp;
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/export", id);
	int r = engine_long_open(e, call, "GET", path, NULL, NULL, 0, NULL, NULL, &conn, &resp, err);
	if (r < 0)
		return r;
	if (resp.status >= 400) {
		r = engine_long_failed(conn, resp.status, err);
		if (resp.status == 404)
			err->code = ERRCODE_SESSION_NOT_FOUND;
		return engine_long_close(call, conn, r, err);
	}
	struct engine_body *b = xcalloc(1, sizeof(*b));
	b->e = e;
	b->conn = conn; /* never pooled: its timeout is the long one; engine_body_destroy closes it */
	b->call = call;
	b->own = true;
	*ret = b;
	return 0;
}
