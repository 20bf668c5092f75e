/*
 * engine.c - the Engine API calls the server needs, over pooled keep-alive
 * connections.
 *
 * A pooled connection may have been closed by the engine while idle; a
 * request that fails on a reused connection before any response byte arrived
 * is retried once on a fresh one.  Such a failure drops the whole idle pool
 * first: after an engine restart every idle connection is stale, and a retry
 * on the next pooled one would fail the same way.  Hijacked streams (exec start) always get a
 * connection of their own, which is never returned to the pool. The archive
 * endpoint's calls are in engine-archive.c, the image calls in engine-image.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/log.h"
#include "engine/compat.h"
#include "engine/engine-internal.h"
#include "engine/engine.h"
#include "engine/http.h"
#include "engine/tls.h"

struct engine {
	struct endpoint ep;
	int timeout_ms;
	pthread_mutex_t lock; /* guards pool and api */
	struct http_conn *pool[ENGINE_POOL_MAX];
	size_t pool_len;
	char api[16]; /* negotiated version, "" until known */
	bool podman;  /* the engine is Podman (set with api) */
	/* what a create with HostConfig.StorageOpt got (guarded by lock): 0 not tried, 1 applied, -1 refused */
	int storage_opt;
	char storage_opt_why[160];
};

struct engine_stream {
	struct http_conn *conn;
};

static int negotiate(struct engine *e, struct call *call, struct err *err);
static int roundtrip(struct engine *e, struct call *call, const char *method, const char *target,
		     const char *content_type, const void *body, size_t len, int *ret_status, json_t **ret_json,
		     struct err *err);

int engine_create(const char *docker_host, const struct endpoint_tls *tls, int timeout_ms, struct engine **ret,
		  struct err *err)
{
	struct endpoint ep;
	int r = endpoint_open(docker_host, tls, &ep, err);
	if (r < 0)
		return r;
	struct engine *e = xcalloc(1, sizeof(*e));
	e->ep = ep;
	e->timeout_ms = timeout_ms;
	pthread_mutex_init(&e->lock, NULL);
	*ret = e;
	return 0;
}

void engine_destroy(struct engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->pool_len; i++)
		http_conn_destroy(e->pool[i]);
	endpoint_release(&e->ep);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

void engine_storage_opt_note(struct engine *e, int state, const char *why)
{
	pthread_mutex_lock(&e->lock);
	e->storage_opt = state;
	snprintf(e->storage_opt_why, sizeof(e->storage_opt_why), "%s", why ? why : "");
	pthread_mutex_unlock(&e->lock);
}

int engine_storage_opt_state(struct engine *e, char *ret_why, size_t n)
{
	pthread_mutex_lock(&e->lock);
	int state = e->storage_opt;
	if (ret_why && n)
		snprintf(ret_why, n, "%s", e->storage_opt_why);
	pthread_mutex_unlock(&e->lock);
	return state;
}

void engine_set_label(struct engine *e, const char *name)
{
	/* the endpoint's display is in every connect and TLS message: the name then is too */
	size_t n = strlen(e->ep.display);
	snprintf(e->ep.display + n, sizeof(e->ep.display) - n, " (engine '%s')", name);
}

const struct endpoint *engine_endpoint(const struct engine *e)
{
	return &e->ep;
}

void engine_abort_conn(void *arg)
{
	http_conn_abort(arg);
}

/* Ends call's watch over a request: disarmed, and a failure (r < 0) it caused reads as cancelled. Returns r. */
int engine_call_done(struct call *call, int r, struct err *err)
{
	if (!call)
		return r;
	call_disarm(call);
	if (r < 0 && call_cancelled(call))
		r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	return r;
}

/*
 * Appends what to do to an engine failure whose message does not say it yet
 * (a reset, a malformed or oversized answer, a stall, an error status).
 * Returns r.
 */
int engine_hint(struct err *err, int r)
{
	const char *hint;

	char alert[200];

	/* TLS notes the alert as the connection fails: a write (EPIPE) or a read (EOF) may report that first */
	if (err && err->code == ERRCODE_DOCKER_UNAVAILABLE && strncmp(err->msg, "TLS: ", 5) != 0 &&
	    tls_take_refusal(alert, sizeof(alert)))
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r,
			       "TLS: the engine refused the client certificate (%s): use a cert.pem/key.pem signed by "
			       "the CA the engine trusts (dockerd --tlscacert), via DOCKER_CERT_PATH or --tlscert/--tlskey",
			       alert);
	if (!err || strstr(err->msg, "docker info") || strstr(err->msg, "doctor") || strstr(err->msg, "DOCKER_HOST") ||
	    strncmp(err->msg, "TLS: ", 5) == 0 || strstr(err->msg, "through ssh") || strstr(err->msg, "ssh to "))
		return r;
	switch (err->code) {
	case ERRCODE_TIMEOUT:
		hint = "the engine may be overloaded or hung: check it with `docker info`, then try again";
		break;
	case ERRCODE_DOCKER_UNAVAILABLE:
	case ERRCODE_ENGINE_ERROR:
		hint = "try again; if it keeps failing, check the engine with `docker info` (or `sandbox-mcp doctor`)";
		break;
	default:
		return r;
	}
	return err_append(err, r, "; %s", hint);
}

void engine_error_message(int status, const json_t *j, struct err *err)
{
	const char *msg = json_string_value(json_object_get(j, "message"));
	enum errcode code = ERRCODE_ENGINE_ERROR;

	if (status == 404 && msg && (strstr(msg, "No such image") || strstr(msg, "image")))
		code = ERRCODE_IMAGE_NOT_FOUND;
	err_set(err, code, -EIO, "Docker engine error %d: %s", status, msg ? msg : "(no message)");
}

int engine_conn_get(struct engine *e, struct http_conn **ret, bool *ret_reused, struct err *err)
{
	pthread_mutex_lock(&e->lock);
	if (e->pool_len > 0) {
		*ret = e->pool[--e->pool_len];
		pthread_mutex_unlock(&e->lock);
		*ret_reused = true;
		return 0;
	}
	pthread_mutex_unlock(&e->lock);
	int r = endpoint_connect_http(&e->ep, e->timeout_ms, e->timeout_ms, ret, err);
	*ret_reused = false;
	return r;
}

void engine_conn_put(struct engine *e, struct http_conn *c)
{
	if (!http_conn_reusable(c)) {
		http_conn_destroy(c);
		return;
	}
	pthread_mutex_lock(&e->lock);
	if (e->pool_len < ENGINE_POOL_MAX) {
		e->pool[e->pool_len++] = c;
		c = NULL;
	}
	pthread_mutex_unlock(&e->lock);
	http_conn_destroy(c);
}

/* Closes every idle pooled connection (one was found stale: the engine restarted or dropped them all). */
void engine_pool_drop(struct engine *e)
{
	struct http_conn *idle[ENGINE_POOL_MAX];
	size_t n;

	pthread_mutex_lock(&e->lock);
	n = e->pool_len;
	memcpy(idle, e->pool, n * sizeof(idle[0]));
	e->pool_len = 0;
	pthread_mutex_unlock(&e->lock);
	for (size_t i = 0; i < n; i++)
		http_conn_destroy(idle[i]);
	if (n)
		log_infof("engine: a kept-alive connection was stale; closed %zu idle ones", n);
}

/* One request/response on a pooled connection, retried once (on a fresh one) if a reused connection was stale. */
static int roundtrip(struct engine *e, struct call *call, const char *method, const char *target,
		     const char *content_type, const void *body, size_t len, int *ret_status, json_t **ret_json,
		     struct err *err)
{
	char headers[128] = "";
	struct http_response resp;
	struct buf out;
	int r = 0;

	if (content_type)
		snprintf(headers, sizeof(headers), "Content-Type: %s\r\n", content_type);
	buf_init(&out, ENGINE_JSON_MAX);
	for (int attempt = 0; attempt < 2; attempt++) {
		struct http_conn *conn;
		bool reused;
		if ((r = engine_conn_get(e, &conn, &reused, err)) < 0)
			break;
		if (call && call_arm(call, engine_abort_conn, conn) < 0) {
			http_conn_destroy(conn);
			r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
			break;
		}
		buf_reset(&out);
		r = http_request_send(conn, method, target, content_type ? headers : NULL, body, len, err);
		bool sent = r == 0;
		if (r == 0)
			r = http_response_recv(conn, strcmp(method, "HEAD") == 0, &resp, err);
		bool stale = reused && (!sent || r == -EPIPE || r == -ECONNRESET);
		if (r == 0)
			r = http_body_read_all(conn, &out, err);
		r = engine_call_done(call, r, err);
		if (r < 0) {
			http_conn_destroy(conn);
			if (stale && r != -ECANCELED) {
				engine_pool_drop(e);
				continue;
			}
			break;
		}
		engine_conn_put(e, conn);
		break;
	}
	if (r < 0) {
		buf_finish(&out);
		/* the cap on what is kept is the engine's fault here, not the caller's input */
		if (r == -EMSGSIZE && err && err->code == ERRCODE_TOO_LARGE)
			err->code = ERRCODE_ENGINE_ERROR;
		return engine_hint(err, r);
	}

	json_t *j = NULL;
	if (out.len > 0 && strstr(resp.content_type, "json")) {
		json_error_t jerr;
		j = json_loadb(out.data, out.len, JSON_DECODE_ANY, &jerr);
		if (!j && resp.status < 400) {
			buf_finish(&out);
			return engine_hint(err,
					   err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
						   "the Docker engine sent invalid JSON for %s %s", method, target));
		}
	}
	if (ret_status)
		*ret_status = resp.status;
	if (resp.status >= 400) {
		if (!j && out.len > 0) {
			/* non-JSON error bodies: quote the start of the text */
			size_t n = out.len > 300 ? 300 : out.len;
			while (n > 0 && (out.data[n - 1] == '\n' || out.data[n - 1] == '\r' || out.data[n - 1] == ' '))
				n--;
			json_t *m = json_stringn(out.data, n);
			j = json_pack("{s:o}", "message", m ? m : json_string("(an unreadable error body)"));
		}
		engine_error_message(resp.status, j, err);
		buf_finish(&out);
		json_decref(j);
		return engine_hint(err, -EIO);
	}
	buf_finish(&out);
	if (ret_json)
		*ret_json = j;
	else
		json_decref(j);
	return 0;
}

static int negotiate(struct engine *e, struct call *call, struct err *err)
{
	struct engine_version v;

	pthread_mutex_lock(&e->lock);
	bool known = e->api[0] != '\0';
	pthread_mutex_unlock(&e->lock);
	if (known)
		return 0;
	int r = engine_version(e, call, &v, err);
	if (r < 0)
		return r;
	if (!engine_api_at_least(v.api_version, ENGINE_API_MIN))
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPROTO,
			       "the Docker engine speaks API %s, older than %s: upgrade to Docker 20.10 or newer",
			       v.api_version, ENGINE_API_MIN);
	pthread_mutex_lock(&e->lock);
	snprintf(e->api, sizeof(e->api), "%s",
		 engine_api_at_least(v.api_version, ENGINE_API_MAX) ? ENGINE_API_MAX : v.api_version);
	e->podman = v.podman;
	pthread_mutex_unlock(&e->lock);
	log_debugf("engine API %s (engine %s, speaks %s)", e->api, v.version, v.api_version);
	return 0;
}

int engine_versioned(struct engine *e, struct call *call, const char *path, char *out, size_t outsz, struct err *err)
{
	int r = negotiate(e, call, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&e->lock);
	int n = snprintf(out, outsz, "/v%s%s", e->api, path);
	pthread_mutex_unlock(&e->lock);
	if (n < 0 || (size_t)n >= outsz)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "request path too long");
	return 0;
}

int engine_request_raw(struct engine *e, struct call *call, const char *method, const char *path,
		       const char *content_type, const void *body, size_t len, int *ret_status, json_t **ret_json,
		       struct err *err)
{
	char target[4096];
	int r = engine_versioned(e, call, path, target, sizeof(target), err);
	if (r < 0)
		return r;
	return roundtrip(e, call, method, target, content_type, body, len, ret_status, ret_json, err);
}

int engine_reachable(struct engine *e, int timeout_ms, struct err *err)
{
	int fd, status;

	/*
	 * On a local socket a fresh connect is microseconds and also sees a
	 * socket made unusable since the pool's connections were opened. On
	 * tcp:// with TLS it is a handshake, over ssh a new
	 * ssh process: there a kept-alive connection is asked instead (a
	 * dropped engine fails the retried roundtrip all the same).
	 */
	if (e->ep.kind == ENDPOINT_UNIX) {
		int r = endpoint_connect(&e->ep, timeout_ms, &fd, err);
		if (r == 0)
			close(fd);
		return r;
	}
	json_t *j = NULL;
	int r = roundtrip(e, NULL, "GET", "/_ping", NULL, NULL, 0, &status, &j, err);
	json_decref(j);
	return r;
}

int engine_request(struct engine *e, struct call *call, const char *method, const char *path, json_t *body,
		   int *ret_status, json_t **ret_json, struct err *err)
{
	_cleanup_free_ char *payload = body ? json_dumps(body, JSON_COMPACT) : NULL;
	return engine_request_raw(e, call, method, path, payload ? "application/json" : NULL, payload,
				  payload ? strlen(payload) : 0, ret_status, ret_json, err);
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

bool engine_id_valid(const char *id)
{
	return id && strlen(id) == ENGINE_ID_LEN && is_hex(id, ENGINE_ID_LEN);
}

bool engine_is_podman(struct engine *e)
{
	pthread_mutex_lock(&e->lock);
	bool p = e->podman;
	pthread_mutex_unlock(&e->lock);
	return p;
}

int engine_version(struct engine *e, struct call *call, struct engine_version *ret, struct err *err)
{
	json_t *j = NULL;
	int r = roundtrip(e, call, "GET", "/version", NULL, NULL, 0, NULL, &j, err);
	if (r < 0)
		return r;
	if (!json_is_object(j)) {
		json_decref(j);
		return engine_hint(err, err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
						"GET /version did not return a JSON object"));
	}
	memset(ret, 0, sizeof(*ret));
	const char *s;
#define COPY(field, key)                                      \
	if ((s = json_string_value(json_object_get(j, key)))) \
	snprintf(ret->field, sizeof(ret->field), "%s", s)
	COPY(version, "Version");
	COPY(api_version, "ApiVersion");
	COPY(min_api_version, "MinAPIVersion");
	COPY(os, "Os");
	COPY(arch, "Arch");
	COPY(kernel, "KernelVersion");
#undef COPY
	size_t i;
	json_t *c;
	json_array_foreach (json_object_get(j, "Components"), i, c) {
		const char *name = json_string_value(json_object_get(c, "Name"));
		ret->podman = ret->podman || (name && strcmp(name, "Podman Engine") == 0);
	}
	json_decref(j);
	return 0;
}

/* POST /containers/create, with ?name= when name is set. */
static int create(struct engine *e, struct call *call, const char *name, json_t *body, char ret_id[ENGINE_ID_LEN + 1],
		  json_t **ret_warnings, struct err *err)
{
	json_t *j = NULL;
	int status = 0;
	char path[128];
	if (name &&
	    (!name[0] || strlen(name) > 64 || strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(name)))
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "not a container name this server makes: %.80s", name);
	snprintf(path, sizeof(path), "/containers/create%s%s", name ? "?name=" : "", name ? name : "");
	int r = engine_request(e, call, "POST", path, body, &status, &j, err);
	if (r < 0 && status == 409 && name)
		return err_set(err, ERRCODE_ENGINE_ERROR, -EEXIST, "a container named %s exists", name);
	if (r < 0)
		return r; /* a 404 is a missing image or network: engine_error_message tells which */
	const char *id = json_string_value(json_object_get(j, "Id"));
	if (!engine_id_valid(id)) {
		json_decref(j);
		return engine_hint(err, err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
						"container create returned no valid id"));
	}
	memcpy(ret_id, id, ENGINE_ID_LEN + 1);
	if (ret_warnings) {
		json_t *w = json_object_get(j, "Warnings");
		*ret_warnings = json_is_array(w) ? json_incref(w) : json_array();
	}
	json_decref(j);
	return 0;
}

int engine_container_create(struct engine *e, struct call *call, json_t *body, char ret_id[ENGINE_ID_LEN + 1],
			    json_t **ret_warnings, struct err *err)
{
	return create(e, call, NULL, body, ret_id, ret_warnings, err);
}

int engine_container_create_named(struct engine *e, struct call *call, const char *name, json_t *body,
				  char ret_id[ENGINE_ID_LEN + 1], struct err *err)
{
	return create(e, call, name, body, ret_id, NULL, err);
}

int engine_container_start(struct engine *e, struct call *call, const char *id, struct err *err)
{
	char path[128];
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/start", id);
	return engine_request(e, call, "POST", path, NULL, NULL, NULL, err);
}

int engine_container_inspect(struct engine *e, struct call *call, const char *id, json_t **ret_json, struct err *err)
{
	char path[128];
	int status = 0;
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/json", id);
	int r = engine_request(e, call, "GET", path, NULL, &status, ret_json, err);
	if (r < 0 && status == 404)
		return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT, "the session's container no longer exists");
	return r;
}

int engine_container_remove(struct engine *e, struct call *call, const char *id, struct err *err)
{
	char path[128];
	int status = 0;
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", id);
	int r = engine_request(e, call, "DELETE", path, NULL, &status, NULL, err);
	if (r < 0 && status == 404)
		return 0; /* already gone */
	if (r < 0 && status == 409) {
		/* "removal already in progress": the engine finishes it */
		return 0;
	}
	return r;
}

int engine_container_restart(struct engine *e, struct call *call, const char *id, struct err *err)
{
	char path[128];
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/restart?t=0", id);
	return engine_request(e, call, "POST", path, NULL, NULL, NULL, err);
}

int engine_container_size(struct engine *e, struct call *call, const char *id, int64_t *ret_bytes, struct err *err)
{
	char path[128];
	int status = 0;
	json_t *j = NULL;
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/json?size=1", id);
	int r = engine_request(e, call, "GET", path, NULL, &status, &j, err);
	if (r < 0 && status == 404)
		return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT, "the session's container no longer exists");
	if (r < 0)
		return r;
	json_t *v = json_object_get(j, "SizeRw");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the engine did not say how much the container wrote");
	else
		*ret_bytes = json_integer_value(v);
	json_decref(j);
	return r;
}

/* GET /<kind>/json?all=1&filters={"label":[label]}: the array. */
int engine_list_by_label(struct engine *e, struct call *call, const char *kind, const char *label, json_t **ret_json,
			 struct err *err)
{
	char esc[1024], path[1200];
	json_t *filters = json_pack("{s:[s]}", "label", label);
	_cleanup_free_ char *f = json_dumps(filters, JSON_COMPACT);
	json_decref(filters);
	if (engine_url_escape(f, esc, sizeof(esc)) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "label filter too long");
	snprintf(path, sizeof(path), "/%s/json?all=1&filters=%s", kind, esc);
	json_t *j = NULL;
	int r = engine_request(e, call, "GET", path, NULL, NULL, &j, err);
	if (r < 0)
		return r;
	if (!json_is_array(j)) {
		json_decref(j);
		return engine_hint(err, err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "%s list is not an array", kind));
	}
	*ret_json = j;
	return 0;
}

int engine_container_list(struct engine *e, struct call *call, const char *label, json_t **ret_json, struct err *err)
{
	return engine_list_by_label(e, call, "containers", label, ret_json, err);
}

int engine_exec_create(struct engine *e, struct call *call, const char *container_id, json_t *body,
		       char ret_id[ENGINE_ID_LEN + 1], struct err *err)
{
	char path[128];
	json_t *j = NULL;
	int status = 0;
	CHECK_ID(container_id);
	snprintf(path, sizeof(path), "/containers/%s/exec", container_id);
	int r = engine_request(e, call, "POST", path, body, &status, &j, err);
	if (r < 0) {
		/* 404: the container is gone; 409: it is not running (killed or stopped from outside) */
		if (status == 404 || status == 409)
			err->code = ERRCODE_SESSION_NOT_FOUND;
		return r;
	}
	const char *id = json_string_value(json_object_get(j, "Id"));
	if (!engine_id_valid(id)) {
		json_decref(j);
		return engine_hint(err,
				   err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "exec create returned no valid id"));
	}
	memcpy(ret_id, id, ENGINE_ID_LEN + 1);
	json_decref(j);
	return 0;
}

int engine_exec_start(struct engine *e, struct call *call, const char *exec_id, struct engine_stream **ret,
		      struct err *err)
{
	static const char body[] = "{\"Detach\":false,\"Tty\":false}";
	char path[128], target[160];
	struct http_response resp;
	int fd, r;

	CHECK_ID(exec_id);
	snprintf(path, sizeof(path), "/exec/%s/start", exec_id);
	if ((r = engine_versioned(e, call, path, target, sizeof(target), err)) < 0)
		return r;
	if ((r = endpoint_connect(&e->ep, e->timeout_ms, &fd, err)) < 0)
		return r;
	struct http_conn *conn = http_conn_create(fd, e->timeout_ms);
	if (call && call_arm(call, engine_abort_conn, conn) < 0) {
		http_conn_destroy(conn);
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	}
	r = http_request_send(conn, "POST", target,
			      "Content-Type: application/json\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n", body,
			      sizeof(body) - 1, err);
	if (r == 0)
		r = http_response_recv(conn, false, &resp, err);
	if (call)
		call_disarm(call);
	if (r < 0) {
		http_conn_destroy(conn);
		return engine_hint(err, r);
	}
	if (resp.status != 101 && resp.status != 200) {
		struct buf out;
		buf_init(&out, 64 * 1024);
		json_t *j = NULL;
		if (http_body_read_all(conn, &out, err) == 0 && out.len)
			j = json_loadb(out.data, out.len, 0, NULL);
		engine_error_message(resp.status, j, err);
		if (resp.status == 404 || resp.status == 409)
			err->code = ERRCODE_SESSION_NOT_FOUND;
		json_decref(j);
		buf_finish(&out);
		http_conn_destroy(conn);
		return engine_hint(err, -EIO);
	}
	struct engine_stream *s = xcalloc(1, sizeof(*s));
	s->conn = conn;
	*ret = s;
	return 0;
}

int engine_exec_inspect(struct engine *e, struct call *call, const char *exec_id, bool *ret_running, int *ret_exit_code,
			struct err *err)
{
	char path[128];
	json_t *j = NULL;
	CHECK_ID(exec_id);
	snprintf(path, sizeof(path), "/exec/%s/json", exec_id);
	int r = engine_request(e, call, "GET", path, NULL, NULL, &j, err);
	if (r < 0)
		return r;
	*ret_running = json_is_true(json_object_get(j, "Running"));
	json_t *code = json_object_get(j, "ExitCode");
	*ret_exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1;
	json_decref(j);
	return 0;
}

int engine_stream_fd(const struct engine_stream *s)
{
	return http_conn_fd(s->conn);
}

int engine_stream_take_buffered(struct engine_stream *s, struct buf *out)
{
	_Static_assert(ENGINE_STREAM_AHEAD_MAX == HTTP_READ_CHUNK, "one read of the HTTP layer");
	return http_take_buffered(s->conn, out);
}

int engine_stream_write(struct engine_stream *s, const void *p, size_t n)
{
	const char *c = p;
	int fd = http_conn_fd(s->conn);

	while (n > 0) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

void engine_stream_close_write(struct engine_stream *s)
{
	shutdown(http_conn_fd(s->conn), SHUT_WR);
}

void engine_stream_destroy(struct engine_stream *s)
{
	if (!s)
		return;
	http_conn_destroy(s->conn);
	free(s);
}

int engine_container_pause(struct engine *e, struct call *call, const char *id, struct err *err)
{
	char path[128];
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/pause", id);
	return engine_request(e, call, "POST", path, NULL, NULL, NULL, err);
}

int engine_container_unpause(struct engine *e, struct call *call, const char *id, struct err *err)
{
	char path[128];
	CHECK_ID(id);
	snprintf(path, sizeof(path), "/containers/%s/unpause", id);
	return engine_request(e, call, "POST", path, NULL, NULL, NULL, err);
}

/*
 * Opens a connection of its own with the long read timeout and sends method
 * path with body[0..len) or, when src is given, with what src yields in
 * chunks; then reads the response head. 0 with *ret_conn armed on call
 * (the caller disarms and destroys it), or -errno with err.
 */
int engine_long_open(struct engine *e, struct call *call, const char *method, const char *path,
		     const char *content_type, const void *body, size_t len, engine_source_fn src, void *src_arg,
		     struct http_conn **ret_conn, struct http_response *resp, struct err *err)
{
	char headers[128] = "";
	if (content_type)
		snprintf(headers, sizeof(headers), "Content-Type: %s\r\n", content_type);
	return engine_long_open_headers(e, call, method, path, content_type ? headers : NULL, 0, body, len, src,
					src_arg, ret_conn, resp, err);
}

/* engine_long_open with any extra header lines (CRLF-ended), and idle_ms (0: none) capping each wait for a byte. */
int engine_long_open_headers(struct engine *e, struct call *call, const char *method, const char *path,
			     const char *headers, int idle_ms, const void *body, size_t len, engine_source_fn src,
			     void *src_arg, struct http_conn **ret_conn, struct http_response *resp, struct err *err)
{
	char target[6144];
	int r;

	if ((r = engine_versioned(e, call, path, target, sizeof(target), err)) < 0)
		return r;
	struct http_conn *conn;
	if ((r = endpoint_connect_http(&e->ep, e->timeout_ms, ENGINE_LONG_TIMEOUT_MS, &conn, err)) < 0)
		return engine_hint(err, r);
	if (call && call_arm(call, engine_abort_conn, conn) < 0) {
		http_conn_destroy(conn);
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	}
	if (idle_ms > 0)
		http_conn_set_idle(conn, idle_ms);
	if (!src) {
		r = http_request_send(conn, method, target, headers, body, len, err);
	} else if ((r = http_request_send_chunked(conn, method, target, headers, err)) == 0) {
		r = engine_put_chunks(conn, src, src_arg, err);
	}
	if (r == 0)
		r = http_response_recv(conn, false, resp, err);
	if (r < 0) {
		r = engine_call_done(call, r, err);
		http_conn_destroy(conn);
		return engine_hint(err, r);
	}
	*ret_conn = conn;
	return 0;
}

/* Ends a long call: disarms call, closes conn, maps a cancelled read. Returns r. */
int engine_long_close(struct call *call, struct http_conn *conn, int r, struct err *err)
{
	r = engine_call_done(call, r, err);
	http_conn_destroy(conn);
	return r < 0 && r != -ENOEXEC ? engine_hint(err, r) : r;
}

/* Reads a >= 400 answer's message into err (404: what is missing is an image). Returns -EIO or -ENOENT. */
int engine_long_failed(struct http_conn *conn, int status, struct err *err)
{
	struct buf out;
	struct err rerr;
	json_t *j = NULL;
	buf_init(&out, 64 * 1024);
	if (http_body_read_all(conn, &out, &rerr) == 0 && out.len) {
		j = json_loadb(out.data, out.len, 0, NULL);
		if (!j) {
			size_t n = out.len > 300 ? 300 : out.len;
			j = json_pack("{s:o}", "message", json_string_lossy(out.data, n));
		}
	}
	buf_finish(&out);
	engine_error_message(status, j, err);
	json_decref(j);
	return status == 404 && err->code == ERRCODE_IMAGE_NOT_FOUND ? -ENOENT : -EIO;
}

/*
 * Reads a progress stream (one JSON object per line) to its end, handing
 * each to on_msg; an {"error": ...} message ends it as ERRCODE_ENGINE_ERROR.
 * ret_last (may be NULL) receives the last message that had key `keep`.
 */
int engine_read_messages(struct http_conn *conn, engine_message_fn on_msg, void *arg, const char *keep,
			 json_t **ret_last, struct err *err)
{
	struct buf in;
	json_t *last = NULL;
	char failed[sizeof(err->msg)] = "";
	int r = 0;

	buf_init(&in, ENGINE_STREAM_LINE_MAX + HTTP_READ_CHUNK);
	for (bool end = false; !end;) {
		char *tail;
		if (buf_reserve(&in, HTTP_READ_CHUNK, &tail) < 0) {
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EMSGSIZE,
				    "the Docker engine sent a progress line longer than %u bytes",
				    ENGINE_STREAM_LINE_MAX);
			break;
		}
		ssize_t n = http_body_read(conn, tail, HTTP_READ_CHUNK, err);
		if (n < 0) {
			r = (int)n;
			break;
		}
		if (n == 0)
			end = true;
		buf_commit(&in, (size_t)n);
		for (;;) {
			char *nl = in.len ? memchr(in.data, '\n', in.len) : NULL;
			size_t linelen = nl ? (size_t)(nl - in.data) : (end ? in.len : 0);
			if (!nl && (!end || in.len == 0))
				break;
			json_t *m = linelen ? json_loadb(in.data, linelen, 0, NULL) : NULL;
			buf_consume(&in, nl ? linelen + 1 : linelen);
			if (!json_is_object(m)) {
				json_decref(m);
				continue;
			}
			const char *msg = json_string_value(json_object_get(m, "error"));
			if (msg && !failed[0])
				snprintf(failed, sizeof(failed), "%s", msg);
			if (on_msg)
				on_msg(arg, m);
			if (keep && json_object_get(m, keep)) {
				json_decref(last);
				last = json_incref(m);
			}
			json_decref(m);
		}
	}
	buf_finish(&in);
	/* the build's (or import's) own failure: its message says what went wrong, no engine hint */
	if (r == 0 && failed[0])
		r = err_set(err, ERRCODE_ENGINE_ERROR, -ENOEXEC, "%s", failed);
	if (r == 0 && ret_last)
		*ret_last = last;
	else
		json_decref(last);
	return r;
}

int engine_timeout_ms(const struct engine *e)
{
	return e->timeout_ms;
}
