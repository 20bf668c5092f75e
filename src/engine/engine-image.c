/*
 * engine-image.c - the Engine API's image calls: inspect, list, tag,
 * remove, commit, import, build and pull. Moved out of engine.c as they
 * were; the long calls and progress streams they use are engine.c's
 * (engine-internal.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/compat.h"
#include "engine/engine-image.h"
#include "engine/engine-internal.h"

int engine_image_inspect(struct engine *e, struct call *call, const char *name, json_t **ret_json, struct err *err)
{
	char esc[1024], path[1100];
	int status = 0;

	if (engine_url_escape(name, esc, sizeof(esc)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "image name too long");
	snprintf(path, sizeof(path), "/images/%s/json", esc);
	int r = engine_request(e, call, "GET", path, NULL, &status, ret_json, err);
	if (r < 0 && status == 404)
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, -ENOENT, "image %s is not present on the Docker engine",
			       name);
	return r;
}

/* How often a call is made again after Podman's storage race (podman_race). */
#define IMAGE_RACE_TRIES 3

/*
 * Whether a failed call met Podman 4.3's storage race: it fails a whole call
 * with 500 "image not known" when another client removes an image meanwhile,
 * even one the call is not about (a list sizes every image; a commit checks
 * whether the image its tag leaves becomes dangling). So a call races with
 * every other server's, and user's, removals; made again, it succeeds.
 */
static bool podman_race(struct engine *e, struct call *call, const struct err *err)
{
	return engine_is_podman(e) && strstr(err->msg, "image not known") && !(call && call_cancelled(call));
}

int engine_image_list(struct engine *e, struct call *call, const char *label, json_t **ret_json, struct err *err)
{
	for (int i = 1;; i++) {
		int r = engine_list_by_label(e, call, "images", label, ret_json, err);
		if (r == 0 || i == IMAGE_RACE_TRIES || !podman_race(e, call, err))
			return r;
	}
}

int engine_image_tag(struct engine *e, struct call *call, const char *id, const char *repo, const char *tag,
		     struct err *err)
{
	char eid[256], erepo[1024], etag[512], path[2000];
	if (engine_url_escape(id, eid, sizeof(eid)) < 0 || engine_url_escape(repo, erepo, sizeof(erepo)) < 0 ||
	    engine_url_escape(tag, etag, sizeof(etag)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "image id, repository or tag too long");
	snprintf(path, sizeof(path), "/images/%s/tag?repo=%s&tag=%s", eid, erepo, etag);
	return engine_request(e, call, "POST", path, NULL, NULL, NULL, err);
}

/* Copies an image id ("sha256:<hex>") from s into ret_id; -EPROTO with err when s is not one. */
static int image_id_copy(const char *s, char ret_id[ENGINE_IMAGE_ID_MAX], const char *what, struct err *err)
{
	if (!compat_image_id(s, ret_id, ENGINE_IMAGE_ID_MAX))
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "%s returned no valid image id", what);
	return 0;
}

static int commit_once(struct engine *e, struct call *call, const char *container_id, const char *repo, const char *tag,
		       const char *comment, json_t *config, const char *const *changes,
		       char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	struct buf path;
	char erepo[1024], etag[512], ecomment[2048];
	struct http_conn *conn;
	struct http_response resp;
	CHECK_ID(container_id);
	if (engine_url_escape(repo, erepo, sizeof(erepo)) < 0 || engine_url_escape(tag, etag, sizeof(etag)) < 0 ||
	    engine_url_escape(comment ? comment : "", ecomment, sizeof(ecomment)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "repository, tag or message too long");
	buf_init(&path, ENGINE_COMMIT_PATH_MAX);
	/* the fixed part fits: its pieces are capped above */
	if (buf_printf(&path, "/commit?container=%s&repo=%s&tag=%s&comment=%s&pause=1", container_id, erepo, etag,
		       ecomment) < 0)
		abort();
	/* the settings as changes too, for Podman 4.3: it ignores the body's config (image_commit) */
	for (size_t i = 0; changes && changes[i]; i++) {
		size_t n = strlen(changes[i]) * 3 + 1;
		_cleanup_free_ char *esc = n <= ENGINE_COMMIT_PATH_MAX ? xmalloc(n) : NULL;
		if (!esc || engine_url_escape(changes[i], esc, n) < 0 || buf_printf(&path, "&changes=%s", esc) < 0) {
			buf_finish(&path);
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG,
				       "the image's settings (environment, labels) are over %u bytes: commit a "
				       "session with fewer or shorter variables",
				       ENGINE_COMMIT_PATH_MAX);
		}
	}
	_cleanup_free_ char *body = config ? json_dumps(config, JSON_COMPACT) : NULL;
	int r = engine_long_open(e, call, "POST", path.data, body ? "application/json" : NULL, body,
				 body ? strlen(body) : 0, NULL, NULL, &conn, &resp, err);
	buf_finish(&path);
	if (r < 0)
		return r;
	if (resp.status >= 400) {
		r = engine_long_failed(conn, resp.status, err);
		if (resp.status == 404)
			err->code = ERRCODE_SESSION_NOT_FOUND;
		return engine_long_close(call, conn, r, err);
	}
	struct buf out;
	buf_init(&out, 64 * 1024);
	r = http_body_read_all(conn, &out, err);
	json_t *j = r == 0 && out.len ? json_loadb(out.data, out.len, 0, NULL) : NULL;
	buf_finish(&out);
	if (r == 0)
		r = image_id_copy(json_string_value(json_object_get(j, "Id")), ret_id, "commit", err);
	json_decref(j);
	return engine_long_close(call, conn, r, err);
}

int engine_commit(struct engine *e, struct call *call, const char *container_id, const char *repo, const char *tag,
		  const char *comment, json_t *config, const char *const *changes, char ret_id[ENGINE_IMAGE_ID_MAX],
		  struct err *err)
{
	for (int i = 1;; i++) {
		int r = commit_once(e, call, container_id, repo, tag, comment, config, changes, ret_id, err);
		if (r == 0 || i == IMAGE_RACE_TRIES || !podman_race(e, call, err))
			return r;
		log_infof("commit of %.12s met Podman's image race (%s): once more", container_id, err->msg);
	}
}

int engine_image_remove(struct engine *e, struct call *call, const char *name, struct err *err)
{
	char esc[1024], path[1100];
	int status = 0;
	if (engine_url_escape(name, esc, sizeof(esc)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "image name too long");
	snprintf(path, sizeof(path), "/images/%s", esc);
	int r = engine_request(e, call, "DELETE", path, NULL, &status, NULL, err);
	if (r < 0 && status == 404)
		return 0;
	return r;
}

int engine_image_import(struct engine *e, struct call *call, const char *repo, const char *tag, const char *message,
			const char *const *changes, engine_source_fn src, void *src_arg,
			char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	struct buf path;
	char esc[2048];
	struct http_conn *conn;
	struct http_response resp;
	json_t *last = NULL;
	int r;

	buf_init(&path, 6000);
	buf_append_str(&path, "/images/create?fromSrc=-");
	/* a name left out would import an untagged image: any part that does not fit ends the call */
	if (engine_url_escape(repo, esc, sizeof(esc)) < 0 || buf_printf(&path, "&repo=%s", esc) < 0 ||
	    engine_url_escape(tag, esc, sizeof(esc)) < 0 || buf_printf(&path, "&tag=%s", esc) < 0 ||
	    (message &&
	     (engine_url_escape(message, esc, sizeof(esc)) < 0 || buf_printf(&path, "&message=%s", esc) < 0))) {
		buf_finish(&path);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG,
			       "the image name, tag or message is too long to import: shorten it");
	}
	for (size_t i = 0; changes && changes[i]; i++) {
		if (engine_url_escape(changes[i], esc, sizeof(esc)) < 0 || buf_printf(&path, "&changes=%s", esc) < 0) {
			buf_finish(&path);
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG,
				       "image settings too long to import");
		}
	}
	r = engine_long_open(e, call, "POST", path.data, "application/x-tar", NULL, 0, src, src_arg, &conn, &resp, err);
	buf_finish(&path);
	if (r < 0)
		return r;
	if (resp.status >= 400)
		return engine_long_close(call, conn, engine_long_failed(conn, resp.status, err), err);
	r = engine_read_messages(conn, NULL, NULL, "status", &last, err);
	if (r == 0)
		r = image_id_copy(json_string_value(json_object_get(last, "status")), ret_id, "import", err);
	json_decref(last);
	return engine_long_close(call, conn, r, err);
}

int engine_build(struct engine *e, struct call *call, const char *query, engine_source_fn src, void *src_arg,
		 engine_message_fn on_msg, void *msg_arg, char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	struct http_conn *conn;
	struct http_response resp;
	json_t *last = NULL;
	_cleanup_free_ char *path = xasprintf("/build?%s", query);
	int r = engine_long_open(e, call, "POST", path, "application/x-tar", NULL, 0, src, src_arg, &conn, &resp, err);
	if (r < 0)
		return r;
	if (resp.status >= 400)
		return engine_long_close(call, conn, engine_long_failed(conn, resp.status, err), err);
	r = engine_read_messages(conn, on_msg, msg_arg, "aux", &last, err);
	if (r == 0)
		r = image_id_copy(json_string_value(json_object_get(json_object_get(last, "aux"), "ID")), ret_id,
				  "build", err);
	json_decref(last);
	return engine_long_close(call, conn, r, err);
}

int engine_image_pull(struct engine *e, struct call *call, const char *from_image, const char *tag, const char *auth,
		      engine_message_fn on_msg, void *msg_arg, struct err *err)
{
	char efrom[1024], etag[512], path[1700];
	struct http_conn *conn;
	struct http_response resp;

	if (engine_url_escape(from_image, efrom, sizeof(efrom)) < 0 || engine_url_escape(tag, etag, sizeof(etag)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "image name or tag too long to pull");
	snprintf(path, sizeof(path), "/images/create?fromImage=%s&tag=%s", efrom, etag);
	_cleanup_free_ char *headers = auth && *auth ? xasprintf("X-Registry-Auth: %s\r\n", auth) : NULL;
	/* the whole pull may take the long timeout, but every wait for a byte only the engine timeout */
	int r = engine_long_open_headers(e, call, "POST", path, headers, engine_timeout_ms(e), NULL, 0, NULL, NULL,
					 &conn, &resp, err);
	if (headers) /* the credentials went with the request: no copy of them stays in freed memory */
		explicit_bzero(headers, strlen(headers));
	if (r < 0)
		return r;
	if (resp.status >= 400)
		return engine_long_close(call, conn, engine_long_failed(conn, resp.status, err), err);
	r = engine_read_messages(conn, on_msg, msg_arg, NULL, NULL, err);
	return engine_long_close(call, conn, r, err);
}
