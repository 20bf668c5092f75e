/*
 * resources.c - resources/list, resources/templates/list and resources/read
 * over the workspaces of live sessions (see resources.h).
 *
 * The list is made afresh for each request (one `find` per running session)
 * and paged with an opaque cursor, the index of the next entry; a cursor that
 * does not parse is invalid params.  Hidden files and folders are left out.
 * The list names sessions by id; a read takes a session name too, as the
 * tools do (sandbox://analysis/workspace/x.csv).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/log.h"
#include "base/pathsafe.h"
#include "base/protover.h"
#include "base/util.h"
#include "mcp/resources.h"
#include "mcp/rpc.h"
#include "sandbox/egress.h"
#include "tools/files.h"

#define URI_SCHEME "sandbox://"
/* A session's egress log and policy (docs/egress.md): sandbox-egress://{session}. */
#define EGRESS_SCHEME "sandbox-egress://"
/* Bytes of find output read per session. */
#define LIST_OUTPUT_MAX (1u << 20)
/* Longest cursor accepted. */
#define CURSOR_MAX 20

static const char list_script[] =
	"cd -- \"$1\" 2>/dev/null || exit 0\n"
	"exec find . -mindepth 1 -maxdepth 16 -name '.*' -prune -o -type f -printf '%s\\t%P\\0'\n";

static bool ref_char(char c);
static int session_get_existing(const struct tool_services *svc, struct call *call, const char *ref,
				struct session **ret, struct err *err);
static int uri_parse(const char *uri, char *sid, size_t sidsz, char *path, size_t pathsz);
static void list_session(const struct tool_services *svc, struct call *call, const char *sid, json_t *out);
static int cmp_uri(const void *a, const void *b);
static int read_egress(const struct tool_services *svc, struct call *call, const char *uri, int not_found_code,
		       json_t **ret, int *ret_code, struct err *err);

json_t *resources_templates_json(void)
{
	return json_pack("[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]", "uriTemplate",
			 URI_SCHEME "{session_id}/{path}", "name", "sandbox-file", "title", "File in a sandbox",
			 "description",
			 "A file in a live session, by its absolute path without the leading '/', e.g. "
			 "sandbox://0123456789ab/workspace/data.csv (session ids come from session_list; a session "
			 "name works in place of the id).",
			 "uriTemplate", EGRESS_SCHEME "{session_id}", "name", "sandbox-egress", "title",
			 "Egress log of a sandbox", "description",
			 "The egress policy and log of a session made with egress (JSON): every host asked for, allowed "
			 "or refused, with counts and bytes.",
			 "mimeType", "application/json");
}

/* What a session id or name is made of (ids are hex, names add A-Z, '-', '_', '.'). */
static bool ref_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
	       c == '.';
}

/*
 * sandbox://{session}/{path}: the session id or name, and the normalised
 * absolute path. 0 or -EINVAL.
 */
static int uri_parse(const char *uri, char *sid, size_t sidsz, char *path, size_t pathsz)
{
	char raw[PATHSAFE_MAX + 2];
	size_t o = 0;

	if (!uri || strncmp(uri, URI_SCHEME, strlen(URI_SCHEME)) != 0)
		return -EINVAL;
	const char *p = uri + strlen(URI_SCHEME);
	size_t n = 0;
	while (n <= RESOURCES_SESSION_REF_MAX && ref_char(p[n]))
		n++;
	if (n == 0 || n > RESOURCES_SESSION_REF_MAX || p[n] != '/' || sidsz <= n)
		return -EINVAL;
	const char *slash = p + n;
	snprintf(sid, sidsz, "%.*s", (int)n, p);
	raw[o++] = '/';
	for (const char *q = slash + 1; *q; q++) {
		if (o + 1 >= sizeof(raw))
			return -EINVAL;
		if (*q == '%') {
			int hi = hex_digit(q[1]), lo = hi < 0 ? -1 : hex_digit(q[2]);
			if (lo < 0)
				return -EINVAL;
			raw[o++] = (char)(hi << 4 | lo);
			q += 2;
		} else {
			raw[o++] = *q;
		}
	}
	raw[o] = '\0';
	if (memchr(raw, '\0', o) || path_resolve("/", raw, path, pathsz) < 0 || strcmp(path, "/") == 0)
		return -EINVAL;
	return 0;
}

static int cmp_uri(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	return strcmp(json_string_value(json_object_get(x, "uri")), json_string_value(json_object_get(y, "uri")));
}

/* Appends the files of one running session's workspace to out. */
static void list_session(const struct tool_services *svc, struct call *call, const char *sid, json_t *out)
{
	struct tool_ctx ctx = { .svc = svc, .call = call, .protocol_version = PROTOVER_LEGACY_NEWEST };
	struct session *s;
	struct err e;
	struct buf text;
	char errtext[256];
	int code = -1;

	if (session_get(svc->sessions, call, sid, &s, &e) < 0)
		return;
	const char *argv[] = { svc->cfg->workspace, NULL };
	buf_init(&text, LIST_OUTPUT_MAX);
	if (files_run(&ctx, s, list_script, argv, &text, errtext, sizeof(errtext), &code, &e) < 0)
		log_debugf("listing the files of session %s failed: %s", sid, e.msg);
	size_t n = 0;
	const char *p = text.data ? text.data : "", *end = p + text.len;
	while (p < end && n < RESOURCES_PER_SESSION_MAX) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		const char *tab = z ? memchr(p, '\t', (size_t)(z - p)) : NULL;
		if (!z)
			break;
		if (tab && tab + 1 < z) {
			char abs[PATHSAFE_MAX + 1], uri[FILES_URI_MAX];
			bool is_text, image;
			snprintf(abs, sizeof(abs), "%s/%.*s", svc->cfg->workspace, (int)(z - tab - 1), tab + 1);
			if (files_uri(s, abs, uri, sizeof(uri)) == 0) {
				json_t *r = json_pack("{s:s, s:o, s:s, s:I}", "uri", uri, "name",
						      json_string_lossy(tab + 1, (size_t)(z - tab - 1)), "mimeType",
						      files_mime(abs, "", 0, &is_text, &image), "size",
						      (json_int_t)strtoll(p, NULL, 10));
				json_array_append_new(out, r);
				n++;
			}
		}
		p = z + 1;
	}
	buf_finish(&text);
	session_put(svc->sessions, s);
}

int resources_list(const struct tool_services *svc, struct call *call, json_t *params, json_t **ret, int *ret_code,
		   struct err *err)
{
	json_t *jcur = json_object_get(params, "cursor");
	uint64_t start = 0;

	if (jcur && (!json_is_string(jcur) || json_string_length(jcur) > CURSOR_MAX ||
		     parse_u64(json_string_value(jcur), 0, UINT32_MAX, &start) < 0)) {
		*ret_code = RPC_INVALID_PARAMS;
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"resources/list: cursor is not one this server gave out");
		return -1;
	}
	json_t *sessions = session_list_json(svc->sessions, call);
	json_t *all = json_array();
	size_t i;
	json_t *sj;
	json_array_foreach (sessions, i, sj) {
		const char *sid = json_string_value(json_object_get(sj, "session_id"));
		const char *state = json_string_value(json_object_get(sj, "state"));
		if (sid && state && strcmp(state, "running") == 0 && !call_cancelled(call))
			list_session(svc, call, sid, all);
		if (sid && json_object_get(sj, "egress")) {
			char *uri = xasprintf(EGRESS_SCHEME "%s", sid);
			json_array_append_new(all, json_pack("{s:s, s:s, s:s, s:s}", "uri", uri, "name", "egress log",
							     "title", "Egress log", "mimeType", "application/json"));
			free(uri);
		}
	}
	json_decref(sessions);

	/* sorted, so pages are stable while nothing changes */
	size_t n = json_array_size(all);
	json_t **v = xcalloc(n ? n : 1, sizeof(*v));
	for (i = 0; i < n; i++)
		v[i] = json_array_get(all, i);
	qsort(v, n, sizeof(*v), cmp_uri);
	json_t *page = json_array();
	for (i = (size_t)start; i < n && i < (size_t)start + RESOURCES_PAGE; i++)
		json_array_append(page, v[i]);
	*ret = json_pack("{s:o}", "resources", page);
	if (i < n) {
		char cur[24];
		snprintf(cur, sizeof(cur), "%zu", i);
		json_object_set_new(*ret, "nextCursor", json_string(cur));
	}
	free(v);
	json_decref(all);
	return 0;
}

/*
 * session_get, except that "default" names the default session only if it
 * exists: a read must not start one (session_get would).
 */
static int session_get_existing(const struct tool_services *svc, struct call *call, const char *ref,
				struct session **ret, struct err *err)
{
	if (strcmp(ref, "default") != 0)
		return session_get(svc->sessions, call, ref, ret, err);
	json_t *list = session_list_json(svc->sessions, call);
	char id[SESSION_ID_LEN + 1] = "";
	size_t i;
	json_t *sj;
	json_array_foreach (list, i, sj) {
		const char *name = json_string_value(json_object_get(sj, "name"));
		const char *sid = json_string_value(json_object_get(sj, "session_id"));
		if (name && sid && strcmp(name, "default") == 0)
			snprintf(id, sizeof(id), "%s", sid);
	}
	json_decref(list);
	if (!id[0])
		return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT, "no default session yet");
	return session_get(svc->sessions, call, id, ret, err);
}

/* sandbox-egress://{session}: the session's egress status as JSON text. */
static int read_egress(const struct tool_services *svc, struct call *call, const char *uri, int not_found_code,
		       json_t **ret, int *ret_code, struct err *err)
{
	const char *ref = uri + strlen(EGRESS_SCHEME);
	size_t n = 0;
	struct session *s = NULL;
	while (n <= RESOURCES_SESSION_REF_MAX && ref_char(ref[n]))
		n++;
	char sid[RESOURCES_SESSION_REF_MAX + 1];
	snprintf(sid, sizeof(sid), "%.*s", (int)(n <= RESOURCES_SESSION_REF_MAX ? n : 0), ref);
	if (n == 0 || ref[n] != '\0' || n > RESOURCES_SESSION_REF_MAX ||
	    session_get_existing(svc, call, sid, &s, err) < 0 || !s->egress) {
		if (s)
			session_put(svc->sessions, s);
		*ret_code = not_found_code;
		err_set(err, ERRCODE_FILE_NOT_FOUND, -ENOENT,
			"Resource not found: %.300s (" EGRESS_SCHEME
			"{session id or name} of a session made with egress)",
			uri);
		return -1;
	}
	json_t *st = egress_status(s->egress);
	session_put(svc->sessions, s);
	char *text = json_dumps(st, JSON_COMPACT);
	json_decref(st);
	*ret = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", uri, "mimeType", "application/json", "text",
			 text ? text : "{}");
	free(text);
	return 0;
}

bool resources_uri_session(json_t *params, char *out, size_t outsz)
{
	char path[PATHSAFE_MAX + 1];
	return uri_parse(json_string_value(json_object_get(params, "uri")), out, outsz, path, sizeof(path)) == 0;
}

int resources_read(const struct tool_services *svc, struct call *call, json_t *params, int not_found_code, json_t **ret,
		   int *ret_code, struct err *err)
{
	const char *uri = json_string_value(json_object_get(params, "uri"));
	char sid[RESOURCES_SESSION_REF_MAX + 1], path[PATHSAFE_MAX + 1];
	struct tool_ctx ctx = { .svc = svc, .call = call, .protocol_version = PROTOVER_LEGACY_NEWEST };
	struct session *s;
	struct buf data;
	uint64_t size = 0, cap = files_max_bytes(svc->cfg);
	unsigned mode;

	if (!uri) {
		*ret_code = RPC_INVALID_PARAMS;
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "resources/read: params.uri must be a string");
		return -1;
	}
	if (strncmp(uri, EGRESS_SCHEME, strlen(EGRESS_SCHEME)) == 0)
		return read_egress(svc, call, uri, not_found_code, ret, ret_code, err);
	if (uri_parse(uri, sid, sizeof(sid), path, sizeof(path)) < 0) {
		*ret_code = not_found_code;
		err_set(err, ERRCODE_FILE_NOT_FOUND, -EINVAL,
			"Resource not found: %.300s (resources are " URI_SCHEME "{session id or name}/{path})", uri);
		return -1;
	}
	if (session_get_existing(svc, call, sid, &s, err) < 0) {
		*ret_code = not_found_code;
		err_set(err, ERRCODE_FILE_NOT_FOUND, -ENOENT, "Resource not found: %.300s (no session %s)", uri, sid);
		return -1;
	}
	if (files_pull_file(&ctx, s, path, 0, UINT64_MAX, cap < FILES_READ_MAX ? cap : FILES_READ_MAX, &data, &size,
			    &mode, err) < 0) {
		*ret_code = err->code == ERRCODE_FILE_NOT_FOUND || err->code == ERRCODE_SESSION_NOT_FOUND
				    ? not_found_code
			    : err->code == ERRCODE_INTERNAL || err->code == ERRCODE_ENGINE_ERROR ? RPC_INTERNAL_ERROR
												 : RPC_INVALID_PARAMS;
		char msg[ERR_MSG_MAX];
		snprintf(msg, sizeof(msg), "%s", err->msg);
		err_set(err, err->code, -EIO, "%s%.300s: %s", *ret_code == not_found_code ? "Resource not found: " : "",
			uri, msg);
		session_put(svc->sessions, s);
		return -1;
	}
	bool text, image;
	const char *p = data.data ? data.data : "";
	const char *mime = files_mime(path, p, data.len, &text, &image);
	json_t *c = json_pack("{s:s, s:s}", "uri", uri, "mimeType", mime);
	if (text) {
		json_object_set_new(c, "text", json_string_lossy(p, data.len));
	} else {
		char *b64 = xmalloc(base64_encoded_len(data.len) + 1);
		base64_encode(p, data.len, b64);
		json_object_set_new(c, "blob", json_stringn_nocheck(b64, base64_encoded_len(data.len)));
		free(b64);
	}
	*ret = json_pack("{s:[o]}", "contents", c);
	buf_finish(&data);
	session_put(svc->sessions, s);
	return 0;
}
