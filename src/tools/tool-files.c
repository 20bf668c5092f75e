/*
 * tool-files.c - file_read, file_write, file_patch and file_delete: files
 * inside a session, every byte carried as a tar stream through a `tar` run
 * by the session's user (xfer.h).
 *
 * The container is the boundary (docs/design.md §3): relative paths resolve against
 * the workspace, absolute ones may name anything the sandbox user can reach,
 * and the kernel, not this code, decides what that user may read or write.
 * The small sh scripts only check what they can say clearly (missing file,
 * a directory, no permission) with the exit codes of enum xfer_exit, then exec
 * tar; paths reach them as arguments, never inside the script text.
 *
 * Memory: a written file streams from the request's string (base64 decoded a
 * chunk at a time), so file_write holds no copy; a read file is held once, as
 * it must be returned whole (capped at SANDBOX_MAX_UPLOAD_MB).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/base64.h"
#include "base/log.h"
#include "base/pathsafe.h"
#include "sandbox/xfer.h"
#include "tools/files.h"
#include "tools/tools.h"

/* Patches per file_patch call. */
#define PATCH_MAX 100
/*
 * Largest file written through the agent's built-in "write" (its stdin is
 * queued in the agent's memory); larger ones stream through tar on the exec
 * path.
 */
#define WRITE_AGENT_MAX (4u << 20)
/* Bytes of base64 text decoded at a time (a multiple of 4: whole groups). */
#define WRITE_B64_CHUNK (TAR_CHUNK / 3 * 4)

static const char write_script[] = FILES_TAR_ENV "d=$1 b=$2\n"
						 "if [ ! -d \"$d\" ]; then mkdir -p -- \"$d\" || exit 69; fi\n"
						 "cd -- \"$d\" || exit 69\n"
						 "[ -w . ] || exit 77\n"
						 "if [ -d \"$b\" ] && [ ! -L \"$b\" ]; then exit 67; fi\n"
						 "m=\n"
						 "if [ -e \"$b\" ] || [ -L \"$b\" ]; then\n"
						 "  [ \"$3\" = 1 ] || exit 68\n"
						 "  [ \"$4\" = 1 ] || m=$(stat -L -c %a -- \"$b\" 2>/dev/null)\n"
						 "fi\n"
						 "tar -x -p -f - || exit $?\n"
						 "[ -z \"$m\" ] || chmod -- \"$m\" \"$b\"\n";

static const char delete_script[] = "p=$1\n"
				    "[ -e \"$p\" ] || [ -L \"$p\" ] || exit 66\n"
				    "if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then\n"
				    "  echo directory\n"
				    "  if [ \"$2\" = 1 ]; then exec rm -rf -- \"$p\"; fi\n"
				    "  rmdir -- \"$p\" 2>/dev/null && exit 0\n"
				    "  [ -w \"$p\" ] && exit 39\n"
				    "  exit 77\n"
				    "fi\n"
				    "echo file\n"
				    "exec rm -f -- \"$p\"\n";

/* One file written from a tool argument: text as is, or base64 decoded by chunks. */
struct write_src {
	const char *data;
	size_t len, pos;
	bool b64;
	uint64_t size, left;
	struct tar_entry entry;
	bool started;
	char *chunk; /* TAR_CHUNK bytes */
};

static int file_read(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int file_write(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int file_patch(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int file_delete(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static size_t b64_slice(const char *p, size_t len, size_t pos, size_t sig_max);
static long long b64_size(const char *p, size_t len);
static int write_produce(void *arg, struct tar_writer *w, struct err *err);
static int push_file(struct tool_ctx *ctx, struct session *s, const char *path, struct write_src *src, bool overwrite,
		     bool keep_mode, struct err *err);
static int parse_mode(json_t *j, unsigned *ret, struct err *err);

/* The end of the slice of p starting at pos holding sig_max base64 characters (spaces not counted). */
static size_t b64_slice(const char *p, size_t len, size_t pos, size_t sig_max)
{
	size_t sig = 0;
	while (pos < len && sig < sig_max) {
		char c = p[pos++];
		if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
			sig++;
	}
	return pos;
}

/*
 * Decoded size of base64 text p, checked in full before anything is sent (so
 * a bad character never leaves half a file): -1 unless it is the standard
 * alphabet with spaces anywhere and '=' padding only at the very end.
 */
static long long b64_size(const char *p, size_t len)
{
	size_t sig = 0, pads = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
		    c == '/') {
			if (pads)
				return -1;
			sig++;
		} else if (c == '=') {
			if (++pads > 2)
				return -1;
		} else if (c != ' ' && c != '\t' && c != '\r' && c != '\n') {
			return -1;
		}
	}
	size_t rem = sig % 4;
	if (rem == 1 || (pads && pads != 4 - rem) || (pads && rem == 0))
		return -1;
	return (long long)(sig / 4 * 3 + (rem ? rem - 1 : 0));
}

static int write_produce(void *arg, struct tar_writer *w, struct err *err)
{
	struct write_src *src = arg;
	int r;

	if (!src->started) {
		src->started = true;
		src->left = src->size;
		return tar_writer_add(w, &src->entry, err);
	}
	if (src->left == 0) {
		if ((r = tar_writer_close(w, err)) < 0)
			return r;
		return 1;
	}
	if (!src->b64) {
		size_t n = src->len - src->pos < TAR_CHUNK ? src->len - src->pos : TAR_CHUNK;
		if ((r = tar_writer_data(w, src->data + src->pos, n, err)) < 0)
			return r;
		src->pos += n;
		src->left -= n;
		return 0;
	}
	size_t end = b64_slice(src->data, src->len, src->pos, WRITE_B64_CHUNK);
	long long n = base64_decode(src->data + src->pos, end - src->pos, src->chunk);
	if (n < 0 || (uint64_t)n > src->left)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "content is not valid base64");
	if (n == 0 && end == src->len)
		return err_set(err, ERRCODE_INTERNAL, -EIO, "base64 content ended %llu bytes early",
			       (unsigned long long)src->left);
	src->pos = end;
	src->left -= (uint64_t)n;
	return tar_writer_data(w, src->chunk, (size_t)n, err);
}

/*
 * push_file through the agent: src decoded whole, on the built-in's stdin.
 * 1 when the agent took it (the outcome in *ret_r), 0 for the exec path.
 */
static int push_agent(struct tool_ctx *ctx, struct session *s, const char *path, const char *const *args,
		      const struct write_src *src, struct err *err, int *ret_r)
{
	const char *data = src->data;
	char *decoded = NULL;
	struct xfer_result xr;
	struct buf out;
	int r;

	if (src->size > WRITE_AGENT_MAX || !s->agent_installed)
		return 0;
	if (src->b64) {
		decoded = xmalloc(base64_decoded_max(src->len) + 1);
		long long n = base64_decode(src->data, src->len, decoded);
		if (n < 0 || (uint64_t)n != src->size) {
			free(decoded); /* b64_size checked it: the tar path says what is wrong */
			return 0;
		}
		data = decoded;
	}
	buf_init(&out, 4096);
	int took = files_agent(ctx, s, "write", args, data, (size_t)src->size, XFER_TIMEOUT_MS, &out, &xr, err, &r);
	buf_finish(&out);
	free(decoded);
	if (took)
		*ret_r = r < 0 ? r : files_script_failed(&xr, path, "write", err);
	return took;
}

/* Writes src as path (absolute, normalised) in s. 0 or -errno with err. */
static int push_file(struct tool_ctx *ctx, struct session *s, const char *path, struct write_src *src, bool overwrite,
		     bool keep_mode, struct err *err)
{
	char dir[PATHSAFE_MAX + 1];
	const char *base = strrchr(path, '/') + 1;
	struct xfer_result xr;

	snprintf(dir, sizeof(dir), "%.*s", (int)(base - path - 1), path);
	if (!dir[0])
		snprintf(dir, sizeof(dir), "/");
	src->entry.path = base;
	char mode[8];
	snprintf(mode, sizeof(mode), "%o", src->entry.mode & 07777);
	/* the script ignores the fifth argument: the mode is in the tar header */
	const char *args[] = { dir, base, overwrite ? "1" : "0", keep_mode ? "0" : "1", mode, NULL };
	int r;
	if (push_agent(ctx, s, path, args, src, err, &r))
		return r;
	r = xfer_push(session_engine(s), ctx->call, s, write_script, args, write_produce, src, &xr, err);
	if (r < 0)
		return files_exec_failed(ctx, s, r, err);
	return files_script_failed(&xr, path, "write", err);
}

/* A mode given as an octal string ("644", "0755"). */
static int parse_mode(json_t *j, unsigned *ret, struct err *err)
{
	const char *s = json_string_value(j);
	unsigned v = 0;
	size_t n = s ? strlen(s) : 0;

	if (n < 3 || n > 4)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '7')
			goto bad;
		v = v * 8 + (unsigned)(s[i] - '0');
	}
	*ret = v & 07777;
	return 0;
bad:
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "mode must be octal digits like \"644\" or \"0755\"");
}

static int file_write(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *encoding = json_string_value(json_object_get(args, "encoding"));
	json_t *jover = json_object_get(args, "overwrite");
	json_t *jmode = json_object_get(args, "mode");
	bool overwrite = jover ? json_is_true(jover) : true;
	bool b64 = encoding && strcmp(encoding, "base64") == 0;
	char path[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;
	unsigned mode = 0644;

	err_clear(&e);
	if (files_resolve(cfg, json_string_value(json_object_get(args, "path")), false, path, sizeof(path), &e) < 0 ||
	    (jmode && parse_mode(jmode, &mode, &e) < 0))
		return tool_fail(res, &e);

	struct write_src src = {
		.b64 = b64,
		.entry = { .type = TAR_TYPE_FILE, .mode = mode, .mtime = (int64_t)time(NULL) },
	};
	src.data = tool_arg_string(ctx, args, "content", &src.len);
	uint64_t cap = files_max_bytes(cfg);
	if (b64) {
		src.chunk = xmalloc(TAR_CHUNK);
		long long n = b64_size(src.data, src.len);
		if (n < 0) {
			free(src.chunk);
			err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				"content is not valid base64 (standard alphabet, '=' padding only at the end)");
			return tool_fail(res, &e);
		}
		src.size = (uint64_t)n;
	} else {
		src.size = src.len;
	}
	if (src.size > cap) {
		free(src.chunk);
		err_set(&e, ERRCODE_TOO_LARGE, -EFBIG,
			"content is %llu bytes, over the %llu-byte limit (SANDBOX_MAX_UPLOAD_MB)",
			(unsigned long long)src.size, (unsigned long long)cap);
		return tool_fail(res, &e);
	}
	src.entry.size = src.size;

	if (tool_session(ctx, args, &s, res) < 0) {
		free(src.chunk);
		return 0;
	}
	int r = push_file(ctx, s, path, &src, overwrite, jmode == NULL, &e);
	free(src.chunk);
	if (r < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	tool_text(res, "Wrote %llu bytes to %s", (unsigned long long)src.size, path);
	files_link(ctx, res, s, path, NULL);
	char mode_text[8];
	snprintf(mode_text, sizeof(mode_text), "%04o", mode);
	json_t *st = json_pack("{s:s, s:s, s:I}", "session_id", s->id, "path", path, "bytes", (json_int_t)src.size);
	if (jmode)
		json_object_set_new(st, "mode", json_string(mode_text));
	tool_structured(res, st);
	session_put(ctx->svc->sessions, s);
	return 0;
}

/*
 * Text file_read returns when no length is given: Claude Code shows the model
 * only a 2 KB preview of a result over ~50 KB (TOOL_RESULT_BUDGET), so a long
 * text comes in parts, each ending on a line, and the result names the offset
 * of the next.
 */
#define FILE_READ_TEXT_DEFAULT (32u << 10)

/* How much of a text of n bytes to show without a length: all, or a part ending on a line or a character. */
static size_t text_part(const char *path, const char *data, size_t n)
{
	bool text, image;

	if (n <= FILE_READ_TEXT_DEFAULT)
		return n;
	(void)files_mime(path, data, n, &text, &image);
	if (!text)
		return n;
	size_t k = FILE_READ_TEXT_DEFAULT;
	while (k > FILE_READ_TEXT_DEFAULT / 2 && data[k - 1] != '\n')
		k--;
	if (k > FILE_READ_TEXT_DEFAULT / 2)
		return k;
	k = FILE_READ_TEXT_DEFAULT;
	while (k > 0 && ((unsigned char)data[k] & 0xC0) == 0x80)
		k--;
	return k;
}

static int file_read(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	json_t *joff = json_object_get(args, "offset");
	json_t *jlen = json_object_get(args, "length");
	char path[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;

	err_clear(&e);
	if (files_resolve(cfg, json_string_value(json_object_get(args, "path")), false, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	uint64_t cap = files_max_bytes(cfg), size = 0, offset = joff ? (uint64_t)json_integer_value(joff) : 0;
	struct buf data;
	unsigned mode;
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int r = files_pull_file(ctx, s, path, offset, jlen ? (uint64_t)json_integer_value(jlen) : UINT64_MAX,
				cap < FILES_READ_MAX ? cap : FILES_READ_MAX, &data, &size, &mode, &e);
	if (r < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	size_t n = jlen ? data.len : text_part(path, data.data ? data.data : "", data.len);
	files_render_content(ctx, res, s, path, data.data ? data.data : "", n, size, offset,
			     joff || jlen || n < data.len);
	if (n < data.len)
		tool_text(res, "The file goes on: file_read with offset %llu reads the next part",
			  (unsigned long long)(offset + n));
	buf_finish(&data);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int file_patch(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	json_t *patches = json_object_get(args, "patches");
	char path[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;
	size_t np = json_array_size(patches);

	err_clear(&e);
	if (files_resolve(cfg, json_string_value(json_object_get(args, "path")), false, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	if (np == 0 || np > PATCH_MAX) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "patches must hold 1 to %d patches", PATCH_MAX);
		return tool_fail(res, &e);
	}
	for (size_t i = 0; i < np; i++) {
		json_t *p = json_array_get(patches, i);
		if (json_string_length(json_object_get(p, "old")) == 0) {
			err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "patch %zu of %zu: old must not be empty", i + 1,
				np);
			return tool_fail(res, &e);
		}
	}
	uint64_t cap = files_max_bytes(cfg), size = 0;
	unsigned mode = 0644;
	struct buf cur, next;
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	if (files_pull_file(ctx, s, path, 0, UINT64_MAX, cap, &cur, &size, &mode, &e) < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}

	/* every patch applied to a copy first: all or nothing */
	cur.max = (size_t)cap;
	buf_init(&next, (size_t)cap);
	json_t *applied = json_array();
	int r = 0;
	for (size_t i = 0; i < np && r == 0; i++) {
		json_t *p = json_array_get(patches, i);
		const char *old = json_string_value(json_object_get(p, "old"));
		size_t oldn = json_string_length(json_object_get(p, "old"));
		const char *new = json_string_value(json_object_get(p, "new"));
		size_t newn = json_string_length(json_object_get(p, "new"));
		json_t *jcount = json_object_get(p, "count");
		uint64_t want = jcount ? (uint64_t)json_integer_value(jcount) : 1;
		uint64_t found = 0;
		const char *hay = cur.data ? cur.data : "";
		for (const char *q = hay; (q = memmem(q, cur.len - (size_t)(q - hay), old, oldn)); q += oldn)
			found++;
		if (found != want) {
			char preview[80];
			snprintf(preview, sizeof(preview), "%.60s%s", old, oldn > 60 ? "..." : "");
			if (found == 0)
				r = err_set(&e, ERRCODE_PATCH_NO_MATCH, -ENOENT,
					    "patch %zu of %zu: old text \"%s\" was not found in %s; nothing was changed "
					    "(file_read it and retry with the exact text, whitespace included)",
					    i + 1, np, preview, path);
			else
				r = err_set(&e, ERRCODE_PATCH_NO_MATCH, -ENOENT,
					    "patch %zu of %zu: old text \"%s\" occurs %llu times in %s, expected %llu; "
					    "nothing was changed (add surrounding text to pick one, or pass count: %llu to "
					    "replace them all)",
					    i + 1, np, preview, (unsigned long long)found, path,
					    (unsigned long long)want, (unsigned long long)found);
			break;
		}
		buf_reset(&next);
		const char *at = hay;
		for (const char *q; (q = memmem(at, cur.len - (size_t)(at - hay), old, oldn)); at = q + oldn) {
			if (buf_append(&next, at, (size_t)(q - at)) < 0 || buf_append(&next, new, newn) < 0)
				break;
		}
		if (buf_append(&next, at, cur.len - (size_t)(at - hay)) < 0)
			r = err_set(&e, ERRCODE_TOO_LARGE, -EFBIG,
				    "patch %zu of %zu makes the file larger than %llu bytes", i + 1, np,
				    (unsigned long long)cap);
		struct buf t = cur;
		cur = next;
		next = t;
		json_array_append_new(applied, json_pack("{s:i, s:I}", "patch", (int)(i + 1), "replacements",
							 (json_int_t)found));
	}
	buf_finish(&next);
	if (r == 0) {
		struct write_src src = {
			.data = cur.data ? cur.data : "",
			.len = cur.len,
			.size = cur.len,
			.entry = { .type = TAR_TYPE_FILE, .size = cur.len, .mode = mode, .mtime = (int64_t)time(NULL) },
		};
		r = push_file(ctx, s, path, &src, true, false, &e);
	}
	if (r < 0) {
		buf_finish(&cur);
		json_decref(applied);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	tool_text(res, "Applied %zu patch%s to %s (%llu -> %zu bytes)", np, np == 1 ? "" : "es", path,
		  (unsigned long long)size, cur.len);
	files_link(ctx, res, s, path, NULL);
	tool_structured(res, json_pack("{s:s, s:s, s:o, s:I}", "session_id", s->id, "path", path, "patches", applied,
				       "bytes", (json_int_t)cur.len));
	buf_finish(&cur);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int file_delete(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	bool recursive = json_is_true(json_object_get(args, "recursive"));
	char path[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;

	err_clear(&e);
	if (files_resolve(cfg, json_string_value(json_object_get(args, "path")), false, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	if (strcmp(path, "/") == 0 || strcmp(path, cfg->workspace) == 0) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"refusing to delete %s itself: delete what is inside it, or session_close the session", path);
		return tool_fail(res, &e);
	}
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	const char *argv[] = { path, recursive ? "1" : "0", NULL };
	struct buf out;
	char errtext[XFER_STDERR_MAX];
	int code = -1;
	buf_init(&out, 4096);
	int r = files_run_op(ctx, s, "delete", delete_script, argv, &out, errtext, sizeof(errtext), &code, &e);
	char kind[16] = "";
	sscanf(out.data ? out.data : "", "%15s", kind);
	if (r == 0 && code != 0) {
		if (code == 39)
			r = err_set(&e, ERRCODE_INVALID_ARGUMENT, -ENOTEMPTY,
				    "%s is a directory that is not empty: pass recursive: true to delete it and everything in it",
				    path);
		else
			r = files_code_failed(code, errtext, path, "delete", &e);
	}
	buf_finish(&out);
	if (r < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	tool_text(res, "Deleted %s %s", strcmp(kind, "directory") == 0 ? "directory" : "file", path);
	tool_structured(res, json_pack("{s:s, s:s, s:s}", "session_id", s->id, "path", path, "type",
				       strcmp(kind, "directory") == 0 ? "directory" : "file"));
	session_put(ctx->svc->sessions, s);
	return 0;
}

#define PATH_ARG(what)                                                                             \
	"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"" what \
	" (relative to /workspace, or absolute; at most 4096 characters)\"}"

const struct tool_entry tool_file_read_entry = {
	.name = "file_read",
	.title = "Read a file",
	.description =
		"Read a file from the sandbox. Text comes back as text; PNG, JPEG, GIF and WebP images as image "
		"content; other binary files as base64 (an embedded resource with its mime type). Use offset and "
		"length (bytes) to read part of a large file. Relative paths are in /workspace.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\"],\"properties\":{" PATH_ARG(
		"File to read") ","
				"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"First byte to return (0 or more, default 0)\"},"
				"\"length\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Bytes to return (default: to the "
				"end; 0 or more)\"}," TOOL_SESSION_ARG "}}",
	.output_schema = NULL, /* may return images */
	.group = TOOL_GROUP_FILES,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_read,
};

const struct tool_entry tool_file_write_entry = {
	.name = "file_write",
	.title = "Write a file",
	.description =
		"Write a file in the sandbox, creating parent directories; it is owned by the sandbox user. "
		"content is text, or base64 with encoding \"base64\" for binary data. Replaces an existing file "
		"unless overwrite is false (then it fails with file_exists); mode is octal like \"755\" (default: "
		"644 for a new file, the old mode for a replaced one). Relative paths are in /workspace.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"content\"],"
		"\"properties\":{" PATH_ARG(
			"File to write") ","
					 "\"content\":{\"type\":\"string\",\"description\":\"The file's content (text, or base64)\"},"
					 "\"encoding\":{\"type\":\"string\",\"enum\":[\"text\",\"base64\"],\"description\":\"How content "
					 "is encoded (default text)\"},"
					 "\"overwrite\":{\"type\":\"boolean\",\"description\":\"Replace an existing file (default "
					 "true)\"},"
					 "\"mode\":{\"type\":\"string\",\"minLength\":3,\"maxLength\":4,\"description\":\"Permissions in "
					 "octal, e.g. \\\"755\\\" (3 to 4 characters)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},\"mode\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_FILES,
	.read_only = false,
	.destructive = true,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_write,
	.instructions = "Move files with file_write/file_read (and file_upload/file_download for host folders the "
			"user allowed).",
	.bulk_arg = "content",
};

const struct tool_entry tool_file_patch_entry = {
	.name = "file_patch",
	.title = "Patch a file",
	.description =
		"Edit a file in the sandbox with find-and-replace patches, applied in order, all or nothing: each "
		"old text must occur exactly count times (default once) or nothing is changed and the error "
		"(patch_no_match) names the patch. Keeps the file's mode.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"patches\"],"
		"\"properties\":{" PATH_ARG(
			"File to patch") ","
					 "\"patches\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":100,\"description\":\"Replacements, "
					 "applied in order (at most 100 items)\",\"items\":{\"type\":\"object\",\"additionalProperties\":false,"
					 "\"required\":[\"old\",\"new\"],\"properties\":{"
					 "\"old\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Exact text to find\"},"
					 "\"new\":{\"type\":\"string\",\"description\":\"Text to put in its place\"},"
					 "\"count\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"How many times old must occur "
					 "(all are replaced; default 1; at least 1)\"}}}}," TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"path\":{\"type\":\"string\"},\"bytes\":{\"type\":\"integer\"},"
			 "\"patches\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
			 "\"patch\":{\"type\":\"integer\"},\"replacements\":{\"type\":\"integer\"}}}}}}",
	.group = TOOL_GROUP_FILES,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = file_patch,
};

const struct tool_entry tool_file_delete_entry = {
	.name = "file_delete",
	.title = "Delete a file or directory",
	.description = "Delete a file, a symbolic link or an empty directory in the sandbox; with recursive: true, a "
		       "directory and everything in it. Relative paths are in /workspace.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\"],\"properties\":{" PATH_ARG(
			"File or directory to delete") ","
						       "\"recursive\":{\"type\":\"boolean\",\"description\":\"Delete a directory with its contents "
						       "(default false)\"}," TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_FILES,
	.read_only = false,
	.destructive = true,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_delete,
};
