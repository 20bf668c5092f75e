/*
 * tool-find.c - file_list and file_search: what is in a sandbox, through GNU
 * find and ripgrep (or grep) run as the session's user.
 *
 * Both read only names and short matched lines, never file contents, so they
 * are plain execs with their stdout collected (no tar).  Output is parsed
 * from NUL-separated fields (find -printf, rg --null, grep -Z), so names
 * with spaces, newlines or colons come through intact; it is capped, and a
 * command that passes the cap is stopped and the result marked truncated.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "tools/files.h"
#include "tools/tools.h"

/* Entries one file_list returns at most. */
#define LIST_MAX 2000
/* Bytes of find output read at most (LIST_MAX long records fit). */
#define LIST_OUTPUT_MAX (4u << 20)
/* Deepest file_list goes. */
#define LIST_DEPTH_MAX 20
/* Matches one file_search returns at most, and by default. */
#define SEARCH_MAX 1000
#define SEARCH_DEFAULT 100
/* Bytes of a matched line kept. */
#define SEARCH_LINE_MAX 500
/* Bytes of rg/grep output read at most. */
#define SEARCH_OUTPUT_MAX (2u << 20)

/* Fields per find record: type, size, mtime, mode, link target, path. */
#define LIST_FIELDS 6

static const char list_script[] =
	"p=$1 f='%y\\0%s\\0%T@\\0%m\\0%l\\0%P\\0'\n"
	"[ -e \"$p\" ] || [ -L \"$p\" ] || exit 66\n"
	"if [ ! -d \"$p\" ]; then exec find \"$p\" -maxdepth 0 -printf '%y\\0%s\\0%T@\\0%m\\0%l\\0%f\\0'; fi\n"
	"cd -- \"$p\" || exit 77\n"
	"if [ \"$3\" = 1 ]; then exec find . -mindepth 1 -maxdepth \"$2\" -printf \"$f\"; fi\n"
	"exec find . -mindepth 1 -maxdepth \"$2\" -name '.*' -prune -o -printf \"$f\"\n";

static const char search_script[] =
	"p=$1 pat=$2 g=$3 i=\n"
	"[ \"$4\" = 1 ] && i=-i\n"
	"[ -e \"$p\" ] || exit 66\n"
	"if command -v rg >/dev/null 2>&1; then\n"
	"  echo sandbox-mcp-engine=rg >&2\n"
	"  exec rg --no-heading --with-filename --line-number --null --color never --no-messages "
	"--max-columns 500 --max-columns-preview $i ${g:+-g \"$g\"} -e \"$pat\" -- \"$p\"\n"
	"fi\n"
	"echo sandbox-mcp-engine=grep >&2\n"
	"exec grep -r -n -Z -I -E -s --color=never $i ${g:+--include=\"$g\"} -e \"$pat\" -- \"$p\"\n";

struct entry {
	char type;
	const char *size, *mtime, *mode, *target, *path;
};

static int file_list(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int file_search(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int entry_cmp(const void *a, const void *b);
static const char *type_name(char t);
static void iso_time(const char *secs, char *out, size_t outsz);

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static const char *type_name(char t)
{
	switch (t) {
	case 'f':
		return "file";
	case 'd':
		return "directory";
	case 'l':
		return "symlink";
	case 'p':
		return "fifo";
	case 's':
		return "socket";
	case 'c':
		return "char_device";
	case 'b':
		return "block_device";
	default:
		return "other";
	}
}

/* "1700000000.1234" -> "2023-11-14T22:13:20Z". */
static void iso_time(const char *secs, char *out, size_t outsz)
{
	time_t t = (time_t)strtoll(secs, NULL, 10);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(out, outsz, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outsz, "?");
}

static int file_list(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *arg = json_string_value(json_object_get(args, "path"));
	json_t *jdepth = json_object_get(args, "depth");
	bool hidden = json_is_true(json_object_get(args, "hidden"));
	int depth = jdepth ? (int)json_integer_value(jdepth) : 1;
	char path[PATHSAFE_MAX + 1], depth_arg[8], errtext[XFER_STDERR_MAX];
	struct err e;
	struct session *s;
	struct buf out;
	int code = -1;

	err_clear(&e);
	if (files_resolve(cfg, arg ? arg : ".", true, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	snprintf(depth_arg, sizeof(depth_arg), "%d", depth < 1 ? 1 : depth > LIST_DEPTH_MAX ? LIST_DEPTH_MAX : depth);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	const char *argv[] = { path, depth_arg, hidden ? "1" : "0", NULL };
	buf_init(&out, LIST_OUTPUT_MAX);
	int r = files_run_op(ctx, s, "list", list_script, argv, &out, errtext, sizeof(errtext), &code, &e);
	bool truncated = out.len == LIST_OUTPUT_MAX || (r == 0 && code == 0 && out.len >= LIST_OUTPUT_MAX - 4096);
	if (r == 0 && code != 0 && code != 1)
		r = files_code_failed(code, errtext, path, "list", &e);
	if (r == 0 && code == 1 && out.len == 0)
		r = err_set(&e, ERRCODE_ENGINE_ERROR, -EIO,
			    "listing %s failed (file_list needs GNU find in the image): %.300s", path, errtext);
	if (r < 0) {
		buf_finish(&out);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}

	/* split the NUL-separated records; an incomplete last one is dropped */
	size_t cap = 64, n = 0;
	struct entry *ents = xmalloc(cap * sizeof(*ents));
	const char *p = out.data ? out.data : "", *end = p + out.len;
	while (p < end) {
		const char *f[LIST_FIELDS];
		int k = 0;
		for (; k < LIST_FIELDS && p < end; k++) {
			const char *z = memchr(p, '\0', (size_t)(end - p));
			if (!z)
				break;
			f[k] = p;
			p = z + 1;
		}
		if (k < LIST_FIELDS)
			break;
		if (n == LIST_MAX) {
			truncated = true;
			break;
		}
		if (n == cap)
			ents = xreallocarray(ents, cap *= 2, sizeof(*ents));
		ents[n++] = (struct entry){ f[0][0], f[1], f[2], f[3], f[4], f[5] };
	}
	qsort(ents, n, sizeof(*ents), entry_cmp);

	json_t *arr = json_array();
	struct buf text;
	buf_init(&text, SIZE_MAX);
	buf_printf(&text, "%s: %zu entr%s%s\n", path, n, n == 1 ? "y" : "ies", truncated ? " (truncated)" : "");
	for (size_t i = 0; i < n; i++) {
		struct entry *en = &ents[i];
		char when[32], mode[8];
		iso_time(en->mtime, when, sizeof(when));
		snprintf(mode, sizeof(mode), "%04o", (unsigned)strtoul(en->mode, NULL, 8) & 07777);
		json_t *o = json_pack("{s:o, s:s, s:I, s:s, s:s}", "path",
				      json_string_lossy(en->path, strlen(en->path)), "type", type_name(en->type),
				      "size", (json_int_t)strtoll(en->size, NULL, 10), "mtime", when, "mode", mode);
		if (en->type == 'l')
			json_object_set_new(o, "target", json_string_lossy(en->target, strlen(en->target)));
		json_array_append_new(arr, o);
		buf_printf(&text, "%c %s %10s %s %s%s%s%s\n", en->type == 'f' ? '-' : en->type, mode, en->size, when,
			   en->path, en->type == 'd' ? "/" : "", en->type == 'l' ? " -> " : "",
			   en->type == 'l' ? en->target : "");
	}
	if (code == 1 && errtext[0])
		buf_printf(&text, "(some entries could not be read: %.300s)\n", errtext);
	tool_text(res, "%s", text.data);
	tool_structured(res, json_pack("{s:s, s:s, s:o, s:b}", "session_id", s->id, "path", path, "entries", arr,
				       "truncated", truncated));
	buf_finish(&text);
	free(ents);
	buf_finish(&out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int file_search(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *pattern = json_string_value(json_object_get(args, "pattern"));
	const char *arg = json_string_value(json_object_get(args, "path"));
	const char *glob = json_string_value(json_object_get(args, "glob"));
	json_t *jmax = json_object_get(args, "max_results");
	bool icase = json_is_true(json_object_get(args, "ignore_case"));
	size_t max = jmax ? (size_t)json_integer_value(jmax) : SEARCH_DEFAULT;
	char path[PATHSAFE_MAX + 1], errtext[XFER_STDERR_MAX];
	struct err e;
	struct session *s;
	struct buf out;
	int code = -1;

	err_clear(&e);
	if (files_resolve(cfg, arg ? arg : ".", true, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	if (max < 1 || max > SEARCH_MAX)
		max = SEARCH_DEFAULT;
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	const char *argv[] = { path, pattern, glob ? glob : "", icase ? "1" : "0", NULL };
	buf_init(&out, SEARCH_OUTPUT_MAX);
	int r = files_run(ctx, s, search_script, argv, &out, errtext, sizeof(errtext), &code, &e);

	/* the engine line first, then rg's or grep's own messages */
	const char *engine = strstr(errtext, "sandbox-mcp-engine=rg") ? "rg" : "grep";
	const char *msg = strchr(errtext, '\n') ? strchr(errtext, '\n') + 1 : "";
	if (strncmp(errtext, "sandbox-mcp-engine=", 19) != 0)
		msg = errtext;
	if (r == 0 && code == XFER_EXIT_NOT_FOUND)
		r = files_code_failed(code, msg, path, "search", &e);
	else if (r == 0 && code >= 2 && out.len == 0)
		r = err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s failed (exit code %d): %.400s", engine, code,
			    msg[0] ? msg : "no message (is the pattern a valid regular expression?)");
	if (r < 0) {
		buf_finish(&out);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}

	json_t *arr = json_array();
	struct buf text;
	buf_init(&text, SIZE_MAX);
	bool truncated = out.len == SEARCH_OUTPUT_MAX;
	size_t n = 0;
	const char *p = out.data ? out.data : "", *end = p + out.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *z = nl ? memchr(p, '\0', (size_t)(nl - p)) : NULL;
		if (!nl)
			break; /* a line cut by the cap */
		if (!z) {
			p = nl + 1;
			continue;
		}
		if (n == max) {
			truncated = true;
			break;
		}
		char *colon;
		long long line = strtoll(z + 1, &colon, 10);
		if (*colon != ':') {
			p = nl + 1;
			continue;
		}
		const char *t = colon + 1;
		size_t tl = (size_t)(nl - t);
		if (tl > 0 && t[tl - 1] == '\r')
			tl--;
		if (tl > SEARCH_LINE_MAX)
			tl = SEARCH_LINE_MAX;
		json_array_append_new(arr, json_pack("{s:o, s:I, s:o}", "path", json_string_lossy(p, (size_t)(z - p)),
						     "line", (json_int_t)line, "text", json_string_lossy(t, tl)));
		buf_printf(&text, "%.*s:%lld: %.*s\n", (int)(z - p), p, line, (int)tl, t);
		n++;
		p = nl + 1;
	}
	tool_text(res, "%zu match%s for /%s/ in %s (%s)%s%s%s", n, n == 1 ? "" : "es", pattern, path, engine,
		  truncated ? ", more not shown: narrow the search or raise max_results" : "", n ? ":\n" : "",
		  text.data ? text.data : "");
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:o, s:b}", "session_id", s->id, "path", path, "engine", engine,
				       "matches", arr, "truncated", truncated));
	buf_finish(&text);
	buf_finish(&out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

const struct tool_entry tool_file_list_entry = {
	.name = "file_list",
	.title = "List files",
	.description = "List a directory in the sandbox (default /workspace): each entry's path, type, size, mtime "
		       "and mode, sorted by path, to depth levels (default 1). Hidden entries (names starting with "
		       "'.') only with hidden: true.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Directory "
		"(relative to /workspace, or absolute; default /workspace; at most 4096 characters)\"},"
		"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":20,\"description\":\"Levels to descend "
		"(default 1; from 1 to 20)\"},"
		"\"hidden\":{\"type\":\"boolean\",\"description\":\"Include hidden entries (default false)\"}," TOOL_SESSION_ARG
		"}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"},"
		"\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
		"\"mtime\":{\"type\":\"string\"},\"mode\":{\"type\":\"string\"},\"target\":{\"type\":\"string\"}}}}}}",
	.group = TOOL_GROUP_FILES,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_list,
};

const struct tool_entry tool_file_search_entry = {
	.name = "file_search",
	.title = "Search file contents",
	.description = "Search files in the sandbox for a regular expression (ripgrep when the image has it, which "
		       "skips hidden and .gitignored files; else grep -E). Returns path, line number and line text for "
		       "each match, max_results at most (default 100). glob limits the files searched, e.g. \"*.py\".",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"pattern\"],\"properties\":{"
		"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Regular "
		"expression (at most 4096 characters)\"},"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"File or "
		"directory to search (default /workspace; at most 4096 characters)\"},"
		"\"glob\":{\"type\":\"string\",\"maxLength\":256,\"description\":\"Only files whose name matches, "
		"e.g. \\\"*.py\\\" (at most 256 characters)\"},"
		"\"ignore_case\":{\"type\":\"boolean\",\"description\":\"Case-insensitive (default false)\"},"
		"\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"Most "
		"matches returned (default 100; from 1 to 1000)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"engine\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"},"
		"\"matches\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"path\":{\"type\":\"string\"},\"line\":{\"type\":\"integer\"},\"text\":{\"type\":\"string\"}}}}}}",
	.group = TOOL_GROUP_FILES,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_search,
};
