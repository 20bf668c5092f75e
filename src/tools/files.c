/*
 * files.c - helpers shared by the file tools (see files.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "agent/agentproto.h"
#include "base/base64.h"
#include "base/log.h"
#include "base/pathsafe.h"
#include "base/protover.h"
#include "sandbox/exec.h"
#include "tools/files.h"

struct collect {
	struct buf *out;
};

static const char read_script[] = FILES_TAR_ENV "p=$1\n"
						"[ -e \"$p\" ] || exit 66\n"
						"[ -d \"$p\" ] && exit 67\n"
						"[ -f \"$p\" ] || exit 65\n"
						"[ -r \"$p\" ] || exit 77\n"
						"d=${p%/*} b=${p##*/}\n"
						"cd -- \"${d:-/}\" || exit 77\n"
						"exec tar -c -h -f - -- \"$b\"\n";

/* What a read keeps: bytes [offset, offset + length) of one file. */
struct read_sink {
	uint64_t offset, length, cap;
	struct buf data;
	uint64_t size, pos;
	unsigned mode;
	bool got;
};

static const struct {
	const char *ext;
	const char *mime;
} mime_by_ext[] = {
	{ "txt", "text/plain" },
	{ "md", "text/markdown" },
	{ "csv", "text/csv" },
	{ "tsv", "text/tab-separated-values" },
	{ "json", "application/json" },
	{ "py", "text/x-python" },
	{ "html", "text/html" },
	{ "htm", "text/html" },
	{ "css", "text/css" },
	{ "js", "text/javascript" },
	{ "xml", "application/xml" },
	{ "yaml", "application/yaml" },
	{ "yml", "application/yaml" },
	{ "sh", "text/x-shellscript" },
	{ "c", "text/x-c" },
	{ "h", "text/x-c" },
	{ "svg", "image/svg+xml" },
	{ "pdf", "application/pdf" },
	{ "zip", "application/zip" },
	{ "gz", "application/gzip" },
	{ "tar", "application/x-tar" },
	{ "xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
	{ "parquet", "application/vnd.apache.parquet" },
	{ "npy", "application/octet-stream" },
};

static int collect_data(void *arg, int stream, const char *p, size_t n);
static int too_large(uint64_t size, uint64_t cap, struct err *err);
static int read_entry(void *arg, const struct tar_entry *e, struct err *err);
static int read_data(void *arg, const char *p, size_t n, struct err *err);
static bool utf8_text(const char *p, size_t n, bool cut_tail);

uint64_t files_max_bytes(const struct config *cfg)
{
	return cfg->max_upload_mb << 20;
}

int files_resolve(const struct config *cfg, const char *path, bool allow_root, char *out, size_t outsz, struct err *err)
{
	int r = path ? path_resolve(cfg->workspace, path, out, outsz) : -EINVAL;
	if (r == -ENAMETOOLONG)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r, "path is longer than %d bytes", PATHSAFE_MAX);
	if (r < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r, "path '%.200s' is empty or holds control characters",
			       path ? path : "");
	if (!allow_root && strcmp(out, "/") == 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "path must name a file, not /");
	return 0;
}

int files_exec_failed(struct tool_ctx *ctx, struct session *s, int r, struct err *err)
{
	return tool_session_gone(ctx, s, r, err);
}

int files_code_failed(int code, const char *stderr_text, const char *path, const char *verb, struct err *err)
{
	const char *detail = stderr_text && *stderr_text ? stderr_text : "no message";

	/* the engine could not start the script's /bin/sh (Docker says 126, and nothing on stderr) */
	if (code == 126 && !(stderr_text && *stderr_text))
		code = XFER_EXIT_NO_TAR;

	switch (code) {
	case 0:
		return 0;
	case XFER_EXIT_NOT_FOUND:
		return err_set(err, ERRCODE_FILE_NOT_FOUND, -ENOENT,
			       "%s does not exist in the sandbox (relative paths start in the workspace; file_list "
			       "shows what is there)",
			       path);
	case XFER_EXIT_IS_DIR:
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EISDIR,
			       "%s is a directory: file_list shows its contents, file_download copies it out", path);
	case XFER_EXIT_NOT_REGULAR:
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "%s is not a regular file (a fifo, socket or device)", path);
	case XFER_EXIT_EXISTS:
		return err_set(err, ERRCODE_FILE_EXISTS, -EEXIST,
			       "%s already exists: pass overwrite: true to replace it", path);
	case XFER_EXIT_NO_DIR:
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOTDIR, "cannot create the directory for %s: %.300s",
			       path, detail);
	case XFER_EXIT_NOT_DIR:
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOTDIR, "%s is not a directory", path);
	case XFER_EXIT_DENIED:
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EACCES,
			       "permission denied: the sandbox user cannot %s %s", verb, path);
	case XFER_EXIT_NO_TAR:
		return err_set(err, ERRCODE_ENGINE_ERROR, -ENOENT,
			       "the session's image has no tar (or no /bin/sh), which the file tools need in a "
			       "session without the in-sandbox agent (one adopted from an earlier server, or on a "
			       "server built without it): create a new session, or use an image that has both%s%.200s",
			       stderr_text && *stderr_text ? ": " : "", stderr_text && *stderr_text ? stderr_text : "");
	default:
		return err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "could not %s %s (exit code %d): %.300s", verb, path,
			       code, detail);
	}
}

int files_script_failed(const struct xfer_result *xr, const char *path, const char *verb, struct err *err)
{
	if (xr->cancelled)
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	if (xr->timed_out)
		return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "copying %s took longer than %d s and was stopped",
			       path, XFER_TIMEOUT_MS / 1000);
	return files_code_failed(xr->exit_code < 0 ? 137 : xr->exit_code, xr->stderr_text, path, verb, err);
}

static int collect_data(void *arg, int stream, const char *p, size_t n)
{
	struct collect *c = arg;
	if (stream != 1)
		return 0;
	size_t room = c->out->max - c->out->len;
	/* what fits is kept, so a full buffer (len == max) says the output was cut */
	(void)buf_append(c->out, p, n < room ? n : room);
	return n > room;
}

int files_agent(struct tool_ctx *ctx, struct session *s, const char *op, const char *const *args,
		const char *stdin_data, size_t stdin_len, int timeout_ms, struct buf *out, struct xfer_result *ret,
		struct err *err, int *ret_r)
{
	struct collect c = { out };
	struct exec_result xr;
	int r = 0;

	struct exec_spec spec = {
		.builtin = op,
		.argv = args,
		.user = s->user,
		.guard = session_guard(s),
		.stdin_data = stdin_data,
		.stdin_len = stdin_len,
		.attach_stdin = true,
		.timeout_ms = timeout_ms,
		.cap = XFER_STDERR_MAX,
		.on_data = collect_data,
		.arg = &c,
	};
	if (!session_agent_run(session_engine(s), ctx->call, s, &spec, &xr, err, &r))
		return 0;
	xfer_result_from_exec(&xr, ret);
	if (r < 0)
		r = files_exec_failed(ctx, s, r, err);
	else if (xr.agent_lost)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
			    "the session's agent (sandbox-mcp-agent) stopped during the file operation (killed from "
			    "outside?); the session is usable: run the call again (the next one starts a new agent)");
	exec_result_finish(&xr);
	*ret_r = r;
	return 1;
}

int files_run(struct tool_ctx *ctx, struct session *s, const char *script, const char *const *args, struct buf *out,
	      char *errtext, size_t errsz, int *ret_code, struct err *err)
{
	return files_run_op(ctx, s, NULL, script, args, out, errtext, errsz, ret_code, err);
}

int files_run_op(struct tool_ctx *ctx, struct session *s, const char *op, const char *script, const char *const *args,
		 struct buf *out, char *errtext, size_t errsz, int *ret_code, struct err *err)
{
	const char *argv[EXEC_SH_ARGV_MAX];
	struct collect c = { out };
	struct exec_result xr;
	struct xfer_result res;
	int timeout_ms = (int)(ctx->svc->cfg->timeout_s * 1000), r;

	if (!op || !files_agent(ctx, s, op, args, NULL, 0, timeout_ms, out, &res, err, &r)) {
		if (exec_sh_argv(argv, ARRAY_SIZE(argv), script, "sandbox-mcp-files", args) < 0)
			return err_set(err, ERRCODE_INTERNAL, -E2BIG, "a file script got more than %d arguments",
				       EXEC_SH_ARGV_MAX - 5);
		struct exec_spec spec = {
			.argv = argv,
			.user = s->user,
			.guard = session_guard(s),
			.timeout_ms = timeout_ms,
			.cap = XFER_STDERR_MAX,
			.on_data = collect_data,
			.arg = &c,
		};
		r = exec_run(session_engine(s), ctx->call, s->container, &spec, &xr, err);
		if (r == 0)
			xfer_result_from_exec(&xr, &res);
		exec_result_finish(&xr);
		if (r < 0)
			return files_exec_failed(ctx, s, r, err);
	}
	/* the same verdicts whichever path ran it */
	if (r == 0 && res.cancelled)
		r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	else if (r == 0 && res.timed_out)
		r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the command took longer than %llu s (SANDBOX_TIMEOUT_S)",
			    (unsigned long long)ctx->svc->cfg->timeout_s);
	if (r == 0 || r == -ECANCELED || r == -ETIMEDOUT) {
		if (errtext && errsz)
			snprintf(errtext, errsz, "%s", res.stderr_text);
		*ret_code = res.stopped ? 0 : res.exit_code;
	}
	return r;
}

/* Valid UTF-8 with no NUL; a sequence cut by the end of a range is allowed when cut_tail. */
static bool utf8_text(const char *s, size_t n, bool cut_tail)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		unsigned c = p[i];
		size_t len;
		unsigned min;
		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, min = 0x80;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, min = 0x800;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, min = 0x10000;
		else
			return false;
		if (i + len > n)
			return cut_tail && n - i < 4;
		unsigned cp = c & (0x3f >> (len - 1));
		for (size_t k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

const char *files_mime(const char *path, const char *data, size_t n, bool *ret_text, bool *ret_image)
{
	const unsigned char *d = (const unsigned char *)data;
	*ret_image = true;
	*ret_text = false;
	if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
		return "image/png";
	if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
		return "image/jpeg";
	if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
		return "image/gif";
	if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0)
		return "image/webp";
	*ret_image = false;
	*ret_text = utf8_text(data, n, true);
	const char *dot = strrchr(path, '.');
	const char *slash = strrchr(path, '/');
	if (dot && (!slash || dot > slash))
		for (size_t i = 0; i < ARRAY_SIZE(mime_by_ext); i++)
			if (strcasecmp(dot + 1, mime_by_ext[i].ext) == 0)
				return mime_by_ext[i].mime;
	return *ret_text ? "text/plain" : "application/octet-stream";
}

int files_uri(const struct session *s, const char *path, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = (size_t)snprintf(out, outsz, "sandbox://%s/", s->id);
	if (o >= outsz)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)path + 1; *p; p++) {
		bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			     strchr("/-._~", *p);
		if (o + (plain ? 1 : 3) + 1 > outsz)
			return -ENAMETOOLONG;
		if (plain) {
			out[o++] = (char)*p;
		} else {
			out[o++] = '%';
			out[o++] = hex[*p >> 4];
			out[o++] = hex[*p & 15];
		}
	}
	out[o] = '\0';
	return 0;
}

void files_link(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, const char *path,
		const char *mime)
{
	char uri[FILES_URI_MAX];
	if (!protover_structured(ctx->protocol_version) || files_uri(s, path, uri, sizeof(uri)) < 0)
		return;
	const char *name = strrchr(path, '/') + 1;
	json_t *link = json_pack("{s:s, s:s, s:s}", "type", "resource_link", "uri", uri, "name", name);
	if (mime)
		json_object_set_new(link, "mimeType", json_string(mime));
	/* HTTP mode: a URL that fetches the file without a token, for clients that cannot read sandbox:// */
	char url[LINKSIGN_BASE_MAX + FILES_URI_MAX + 128];
	const char *enc = uri + strlen("sandbox://") + strlen(s->id) + 1;
	if (linksign_enabled(ctx->svc->links) && linksign_url(ctx->svc->links, call_principal(ctx->call), s->id, path,
							      enc, (int64_t)time(NULL), url, sizeof(url)) == 0)
		json_object_set_new(link, "_meta", json_pack("{s:s}", FILES_URL_META, url));
	json_array_append_new(res->content, link);
}

void files_render_content(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, const char *path,
			  const char *data, size_t n, uint64_t size, uint64_t offset, bool ranged)
{
	bool text, image;
	const char *mime = files_mime(path, data, n, &text, &image);
	char range[96] = "";

	if (ranged)
		snprintf(range, sizeof(range), ", bytes %llu-%llu shown", (unsigned long long)offset,
			 (unsigned long long)(offset + n));
	/* text whose JSON escapes would pass the message cap goes as base64 */
	if (text) {
		size_t esc = n;
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)data[i] < 0x20 || data[i] == '"' || data[i] == '\\')
				esc += 5;
		text = esc <= base64_encoded_len(FILES_READ_MAX);
	}
	if (text) {
		tool_text(res, "%s: %llu bytes, %s%s", path, (unsigned long long)size, mime, range);
		json_array_append_new(res->content,
				      json_pack("{s:s, s:o}", "type", "text", "text", json_string_lossy(data, n)));
		files_link(ctx, res, s, path, mime);
		return;
	}
	image = image && !ranged;
	tool_text(res, "%s: %llu bytes, %s%s%s", path, (unsigned long long)size, mime, range,
		  image ? "" : "; base64 in the embedded resource");
	char *b64 = xmalloc(base64_encoded_len(n) + 1);
	base64_encode(data, n, b64);
	json_t *jb64 = json_stringn_nocheck(b64, base64_encoded_len(n));
	free(b64);
	if (image) {
		json_array_append_new(res->content,
				      json_pack("{s:s, s:o, s:s}", "type", "image", "data", jb64, "mimeType", mime));
	} else {
		char uri[FILES_URI_MAX];
		if (files_uri(s, path, uri, sizeof(uri)) < 0)
			snprintf(uri, sizeof(uri), "sandbox://%s/", s->id);
		json_array_append_new(res->content, json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "resource",
							      "resource", "uri", uri, "mimeType", mime, "blob", jb64));
	}
	files_link(ctx, res, s, path, mime);
}

static int read_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct read_sink *rs = arg;

	if (rs->got || e->type != TAR_TYPE_FILE)
		return TAR_STOP;
	rs->got = true;
	rs->size = e->size;
	rs->mode = e->mode;
	uint64_t want = rs->offset >= e->size ? 0 : e->size - rs->offset;
	if (want > rs->length)
		want = rs->length;
	if (want > rs->cap)
		return too_large(e->size, rs->cap, err);
	rs->length = want;
	buf_init(&rs->data, (size_t)want);
	return want ? TAR_OK : TAR_STOP;
}

static int read_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct read_sink *rs = arg;
	uint64_t start = rs->pos, end = rs->pos + n;

	rs->pos = end;
	uint64_t lo = start > rs->offset ? start : rs->offset;
	uint64_t hi = end < rs->offset + rs->length ? end : rs->offset + rs->length;
	if (hi > lo && buf_append(&rs->data, p + (lo - start), (size_t)(hi - lo)) < 0)
		return err_set(err, ERRCODE_TOO_LARGE, -EFBIG, "read past its cap");
	return rs->data.len >= rs->length ? TAR_STOP : TAR_OK;
}

/* The file too large for one read: read_entry's message. */
static int too_large(uint64_t size, uint64_t cap, struct err *err)
{
	return err_set(err, ERRCODE_TOO_LARGE, -EFBIG,
		       "the file is %llu bytes, more than the %llu bytes one file_read returns: read it in parts with "
		       "offset and length, or copy it out with file_download",
		       (unsigned long long)size, (unsigned long long)cap);
}

/*
 * files_pull_file through the agent's built-in "read": its head line, then
 * the bytes. 1 when the agent took it (the outcome in *ret_r), 0 when the
 * caller takes the exec path.
 */
static int pull_agent(struct tool_ctx *ctx, struct session *s, const char *path, uint64_t offset, uint64_t length,
		      uint64_t cap, struct buf *ret_data, uint64_t *ret_size, unsigned *ret_mode, struct err *err,
		      int *ret_r)
{
	char a_off[24], a_len[24], a_cap[24];
	struct xfer_result xr;
	struct buf out;
	uint64_t size;
	unsigned mode;
	size_t head;
	int r;

	snprintf(a_off, sizeof(a_off), "%llu", (unsigned long long)offset);
	snprintf(a_len, sizeof(a_len), "%llu", (unsigned long long)length);
	snprintf(a_cap, sizeof(a_cap), "%llu", (unsigned long long)cap);
	const char *args[] = { path, a_off, a_len, a_cap, NULL };
	buf_init(&out, cap > SIZE_MAX - AGENTPROTO_HEAD_MAX ? SIZE_MAX : (size_t)cap + AGENTPROTO_HEAD_MAX);
	if (!files_agent(ctx, s, "read", args, NULL, 0, XFER_TIMEOUT_MS, &out, &xr, err, &r)) {
		buf_finish(&out);
		return 0;
	}
	if (r == 0 && (xr.exit_code != 0 || xr.cancelled || xr.timed_out))
		r = files_script_failed(&xr, path, "read", err);
	if (r == 0 && agentproto_parse_head(out.data ? out.data : "", out.len, &size, &mode, &head) != 1)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the agent's read of '%.300s' sent no valid head line",
			    path);
	uint64_t want = r == 0 && offset < size ? size - offset : 0;
	if (want > length)
		want = length;
	if (r == 0 && want > cap)
		r = too_large(size, cap, err);
	if (r < 0) {
		buf_finish(&out);
		*ret_r = r;
		return 1;
	}
	buf_consume(&out, head);
	if (out.len > want)
		out.len = (size_t)want; /* an agent the sandbox took over may send more: never past the range */
	*ret_data = out;
	*ret_size = size;
	*ret_mode = mode;
	*ret_r = 0;
	return 1;
}

int files_pull_file(struct tool_ctx *ctx, struct session *s, const char *path, uint64_t offset, uint64_t length,
		    uint64_t cap, struct buf *ret_data, uint64_t *ret_size, unsigned *ret_mode, struct err *err)
{
	int ar;
	if (pull_agent(ctx, s, path, offset, length, cap, ret_data, ret_size, ret_mode, err, &ar))
		return ar;

	struct read_sink rs0 = { .offset = offset, .length = length, .cap = cap };
	struct read_sink *rs = &rs0;
	struct tar_limits lim = { .entries = 4, .entry_size = UINT64_MAX / 4, .total_size = UINT64_MAX / 4 };
	struct tar_sink sink = { .entry = read_entry, .data = read_data, .arg = rs };
	struct xfer_result xr;
	struct tar_stats st;
	const char *args[] = { path, NULL };

	int r = xfer_pull(session_engine(s), ctx->call, s, read_script, args, &lim, &sink, &st, &xr, err);
	if (xr.exit_code > 0 && xr.exit_code != 2 && !xr.stopped)
		r = files_script_failed(&xr, path, "read", err);
	else if (r < 0)
		r = files_exec_failed(ctx, s, r, err);
	if (r == 0 && !rs->got && (r = files_script_failed(&xr, path, "read", err)) == 0)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "tar sent no file for '%.300s'", path);
	if (r < 0) {
		buf_finish(&rs->data);
		return r;
	}
	*ret_data = rs->data;
	*ret_size = rs->size;
	*ret_mode = rs->mode;
	return 0;
}

/* files_put's stream: one file entry, its bytes by TAR_CHUNK, the end. */
struct put_src {
	struct tar_entry entry;
	const char *data;
	size_t len, pos;
	bool started;
};

static const char put_script[] = FILES_TAR_ENV "mkdir -p -- \"$1\" && cd -- \"$1\" && exec tar -x -f -\n";

static int put_produce(void *arg, struct tar_writer *w, struct err *err)
{
	struct put_src *src = arg;
	int r;

	if (!src->started) {
		src->started = true;
		return tar_writer_add(w, &src->entry, err);
	}
	if (src->pos == src->len) {
		if ((r = tar_writer_close(w, err)) < 0)
			return r;
		return 1;
	}
	size_t n = src->len - src->pos < TAR_CHUNK ? src->len - src->pos : TAR_CHUNK;
	src->pos += n;
	return tar_writer_data(w, src->data + src->pos - n, n, err);
}

int files_put(struct tool_ctx *ctx, struct session *s, const char *dir, const char *name, const void *data, size_t len,
	      struct err *err)
{
	struct put_src src = {
		.entry = { .path = name,
			   .type = TAR_TYPE_FILE,
			   .size = len,
			   .mode = 0644,
			   .mtime = (int64_t)time(NULL) },
		.data = data,
		.len = len,
	};
	const char *args[] = { dir, NULL };
	struct xfer_result xr;
	int r = xfer_push(session_engine(s), ctx->call, s, put_script, args, put_produce, &src, &xr, err);
	if (r < 0)
		return files_exec_failed(ctx, s, r, err);
	return files_script_failed(&xr, dir, "write", err);
}
