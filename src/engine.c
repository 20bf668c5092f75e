/*
 * engine.c - the Engine API calls the tools need.
 *
 * Each request opens its own connection for now; the paths are unversioned,
 * which the engine answers with its own current API version.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "http.h"
#include "log.h"

struct engine {
	struct endpoint ep;
	int timeout_ms;
};

static void abort_conn(void *arg);
static void engine_error_message(int status, const json_t *j, struct err *err);

int engine_create(const char *docker_host, int timeout_ms, struct engine **ret, struct err *err)
{
	struct endpoint ep;
	int r = transport_parse(docker_host, &ep, err);
	if (r < 0)
		return r;
	struct engine *e = xcalloc(1, sizeof(*e));
	e->ep = ep;
	e->timeout_ms = timeout_ms;
	*ret = e;
	return 0;
}

void engine_destroy(struct engine *e)
{
	free(e);
}

const struct endpoint *engine_endpoint(const struct engine *e)
{
	return &e->ep;
}

static void abort_conn(void *arg)
{
	http_conn_abort(arg);
}

static void engine_error_message(int status, const json_t *j, struct err *err)
{
	const char *msg = json_string_value(json_object_get(j, "message"));
	enum errcode code = ERRCODE_ENGINE_ERROR;

	if (status == 404 && msg && strstr(msg, "image"))
		code = ERRCODE_IMAGE_NOT_FOUND;
	err_set(err, code, -EIO, "Docker engine error %d: %s", status, msg ? msg : "(no message)");
}

int engine_request(struct engine *e, struct call *call, const char *method, const char *path, json_t *body,
		   int *ret_status, json_t **ret_json, struct err *err)
{
	_cleanup_free_ char *payload = NULL;
	struct http_response resp;
	struct buf out;
	int fd = -1, r;

	if (body)
		payload = json_dumps(body, JSON_COMPACT);
	r = transport_connect(&e->ep, e->timeout_ms, &fd, err);
	if (r < 0)
		return r;
	struct http_conn *conn = http_conn_create(fd, e->timeout_ms);
	if (call && call_arm(call, abort_conn, conn) < 0) {
		http_conn_destroy(conn);
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	}

	buf_init(&out, ENGINE_JSON_MAX);
	r = http_request_send(conn, method, path, payload ? "Content-Type: application/json\r\n" : NULL, payload,
			      payload ? strlen(payload) : 0, err);
	if (r == 0)
		r = http_response_recv(conn, strcmp(method, "HEAD") == 0, &resp, err);
	if (r == 0)
		r = http_body_read_all(conn, &out, err);
	if (call) {
		call_disarm(call);
		if (r < 0 && call_cancelled(call))
			r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	}
	http_conn_destroy(conn);
	if (r < 0) {
		buf_finish(&out);
		return r;
	}

	json_t *j = NULL;
	if (out.len > 0 && strstr(resp.content_type, "json")) {
		json_error_t jerr;
		j = json_loadb(out.data, out.len, 0, &jerr);
		if (!j && resp.status < 400) {
			buf_finish(&out);
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				       "the Docker engine sent invalid JSON for %s %s", method, path);
		}
	}
	if (resp.status >= 400) {
		if (!j && out.len > 0) {
			/* non-JSON error bodies: quote the start of the text */
			json_t *m = json_stringn(out.data, out.len > 300 ? 300 : out.len);
			j = json_pack("{s:o}", "message", m ? m : json_string("(an unreadable error body)"));
		}
		engine_error_message(resp.status, j, err);
		buf_finish(&out);
		if (ret_status)
			*ret_status = resp.status;
		json_decref(j);
		return -EIO;
	}
	buf_finish(&out);
	if (ret_status)
		*ret_status = resp.status;
	if (ret_json)
		*ret_json = j;
	else
		json_decref(j);
	return 0;
}

int engine_version(struct engine *e, struct call *call, struct engine_version *ret, struct err *err)
{
	json_t *j = NULL;
	int r = engine_request(e, call, "GET", "/version", NULL, NULL, &j, err);
	if (r < 0)
		return r;
	if (!json_is_object(j)) {
		json_decref(j);
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "GET /version did not return a JSON object");
	}
	memset(ret, 0, sizeof(*ret));
	const char *s;
#define COPY(field, key)                                                                                            \
	if ((s = json_string_value(json_object_get(j, key))))                                                          \
	snprintf(ret->field, sizeof(ret->field), "%s", s)
	COPY(version, "Version");
	COPY(api_version, "ApiVersion");
	COPY(min_api_version, "MinAPIVersion");
	COPY(os, "Os");
	COPY(arch, "Arch");
	COPY(kernel, "KernelVersion");
#undef COPY
	json_decref(j);
	return 0;
}

bool engine_api_at_least(const char *a, const char *b)
{
	unsigned amaj = 0, amin = 0, bmaj = 0, bmin = 0;

	if (sscanf(a, "%u.%u", &amaj, &amin) != 2 || sscanf(b, "%u.%u", &bmaj, &bmin) != 2)
		return false;
	return amaj > bmaj || (amaj == bmaj && amin >= bmin);
}

int engine_url_escape(const char *s, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
			     c == '_' || c == '.' || c == '~';
		if (o + (plain ? 1 : 3) >= outsz)
			return -ENAMETOOLONG;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

int engine_image_inspect(struct engine *e, struct call *call, const char *name, json_t **ret_json,
			 struct err *err)
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
