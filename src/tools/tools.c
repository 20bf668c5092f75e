/*
 * tools.c - the ordered tool table, tools/list rendering and result building.
 *
 * Schemas are written as JSON text beside each handler and parsed once at
 * start-up.  Every output schema gets an "error" property added here, because
 * a failed call returns structuredContent {error:{code,message}} and clients
 * validate structuredContent against the outputSchema even when isError is set.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/protover.h"
#include "sandbox/savepoint.h"
#include "tools/schema.h"
#include "tools/tools.h"

/*
 * Every tool, in the order tools/list shows them: one line each. The entry,
 * tool_<name>_entry, is defined in its tool-*.c; this list declares it and
 * puts it in tool_table[], so adding a tool is its file and one line here.
 */
#define TOOL_TABLE(X)         \
	X(session_create)     \
	X(session_list)       \
	X(session_close)      \
	X(session_commit)     \
	X(session_export)     \
	X(session_egress)     \
	X(run_command)        \
	X(run_python)         \
	X(env_info)           \
	X(file_read)          \
	X(file_write)         \
	X(file_patch)         \
	X(file_delete)        \
	X(file_list)          \
	X(file_search)        \
	X(file_upload)        \
	X(file_download)      \
	X(pip_install)        \
	X(pip_uninstall)      \
	X(pip_list)           \
	X(pip_freeze)         \
	X(pip_status)         \
	X(git_clone)          \
	X(git_status)         \
	X(git_diff)           \
	X(git_commit)         \
	X(git_push)           \
	X(session_checkpoint) \
	X(session_fork)       \
	X(session_pause)      \
	X(job)                \
	X(port_forward)

#define TOOL_DECLARE(name) extern const struct tool_entry tool_##name##_entry;
TOOL_TABLE(TOOL_DECLARE)
#undef TOOL_DECLARE

#define TOOL_POINTER(name) &tool_##name##_entry,
static const struct tool_entry *const tool_table[] = { TOOL_TABLE(TOOL_POINTER) };
#undef TOOL_POINTER

struct parsed_schemas {
	json_t *input;
	json_t *output;
};

/*
 * Parsed once, by the first tools/list or call (tools_init): some 60 KB of
 * JSON, one to four milliseconds that the initialize reply no longer waits
 * for. Read-only afterwards; the state and the result under schemas_lock.
 */
static struct parsed_schemas schemas[ARRAY_SIZE(tool_table)];
static pthread_mutex_t schemas_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t schemas_done = PTHREAD_COND_INITIALIZER;
static enum { SCHEMAS_NONE, SCHEMAS_PARSING, SCHEMAS_READY } schemas_state;
static struct err schemas_err;
static int schemas_r;

static const char error_schema[] =
	"{\"type\":\"object\",\"description\":\"Present when the call failed\","
	"\"properties\":{\"code\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"},"
	"\"output\":{\"type\":\"string\",\"description\":\"What the failed call printed: the end of pip's or "
	"git's output, or the result's text (stdout, stderr, traceback) for clients that show only "
	"structuredContent\"}}}";

static size_t tool_index(const struct tool_entry *t);
static size_t text_size(const struct tool_result *res, bool exact);
static size_t dump_size(const json_t *v, bool exact);

static int schemas_parse(struct err *err)
{
	json_error_t jerr;

	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++) {
		const struct tool_entry *t = tool_table[i];
		schemas[i].input = json_loads(t->input_schema, 0, &jerr);
		if (!schemas[i].input)
			return err_set(err, ERRCODE_INTERNAL, -EINVAL, "%s: input schema: %s", t->name, jerr.text);
		int r = schema_lint(schemas[i].input, err);
		if (r < 0)
			return r;
		if (t->output_schema) {
			schemas[i].output = json_loads(t->output_schema, 0, &jerr);
			if (!schemas[i].output)
				return err_set(err, ERRCODE_INTERNAL, -EINVAL, "%s: output schema: %s", t->name,
					       jerr.text);
			json_t *props = json_object_get(schemas[i].output, "properties");
			if (!json_is_object(props) || json_object_get(schemas[i].output, "required"))
				return err_set(err, ERRCODE_INTERNAL, -EINVAL,
					       "%s: output schema needs properties and no top-level required", t->name);
			json_object_set_new(props, "error", json_loads(error_schema, 0, NULL));
			if ((r = schema_lint(schemas[i].output, err)) < 0)
				return r;
		}
	}
	return 0;
}

int tools_init(struct err *err)
{
	pthread_mutex_lock(&schemas_lock);
	if (schemas_state == SCHEMAS_NONE) {
		struct err e;
		err_clear(&e);
		schemas_state = SCHEMAS_PARSING;
		pthread_mutex_unlock(&schemas_lock);
		int r = schemas_parse(&e);
		pthread_mutex_lock(&schemas_lock);
		schemas_r = r;
		schemas_err = e;
		schemas_state = SCHEMAS_READY;
		pthread_cond_broadcast(&schemas_done);
	}
	while (schemas_state == SCHEMAS_PARSING)
		pthread_cond_wait(&schemas_done, &schemas_lock);
	int r = schemas_r;
	if (r < 0)
		*err = schemas_err;
	pthread_mutex_unlock(&schemas_lock);
	return r;
}

void tools_finish(void)
{
	pthread_mutex_lock(&schemas_lock);
	while (schemas_state == SCHEMAS_PARSING)
		pthread_cond_wait(&schemas_done, &schemas_lock);
	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++) {
		json_decref(schemas[i].input);
		json_decref(schemas[i].output);
		schemas[i].input = schemas[i].output = NULL;
	}
	schemas_state = SCHEMAS_NONE;
	pthread_mutex_unlock(&schemas_lock);
}

static size_t tool_index(const struct tool_entry *t)
{
	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++)
		if (tool_table[i] == t)
			return i;
	return 0;
}

const struct tool_entry *tools_find(const char *name, unsigned groups)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++)
		if ((tool_table[i]->group & groups) && strcmp(tool_table[i]->name, name) == 0)
			return tool_table[i];
	return NULL;
}

const json_t *tools_input_schema(const struct tool_entry *t)
{
	return schemas[tool_index(t)].input;
}

size_t tools_count(void)
{
	return ARRAY_SIZE(tool_table);
}

const struct tool_entry *tools_at(size_t i)
{
	return i < ARRAY_SIZE(tool_table) ? tool_table[i] : NULL;
}

/* Said first, whatever the tools offered. */
static const char instructions_preamble[] =
	"sandbox-mcp runs code in Docker containers (sessions) on this machine: no network, a non-root user, "
	"memory/CPU/process limits. Files live in /workspace.";

char *tools_instructions(unsigned groups)
{
	struct buf b;

	buf_init(&b, 4096);
	(void)buf_append_str(&b, instructions_preamble);
	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++)
		if ((tool_table[i]->group & groups) && tool_table[i]->instructions)
			(void)buf_printf(&b, " %s", tool_table[i]->instructions);
	return buf_steal(&b, NULL);
}

json_t *tools_list_json(unsigned groups, const char *v)
{
	json_t *arr = json_array();
	/* title and outputSchema exist from 2025-06-18 on */
	bool rich = protover_structured(v);

	for (size_t i = 0; i < ARRAY_SIZE(tool_table); i++) {
		const struct tool_entry *t = tool_table[i];
		if (!(t->group & groups))
			continue;
		json_t *ann = json_pack("{s:b, s:b, s:b, s:b}", "readOnlyHint", t->read_only, "destructiveHint",
					t->destructive, "idempotentHint", t->idempotent, "openWorldHint",
					t->open_world);
		json_t *o = json_pack("{s:s, s:s, s:O, s:o}", "name", t->name, "description", t->description,
				      "inputSchema", schemas[i].input, "annotations", ann);
		if (rich) {
			json_object_set_new(o, "title", json_string(t->title));
			json_object_set_new(ann, "title", json_string(t->title));
			if (schemas[i].output)
				json_object_set(o, "outputSchema", schemas[i].output);
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

const char *tool_arg_string(const struct tool_ctx *ctx, json_t *args, const char *key, size_t *len)
{
	json_t *j = json_object_get(args, key);

	if (!json_is_string(j)) {
		*len = 0;
		return NULL;
	}
	if (ctx->bulk && j == ctx->bulk_arg) {
		*len = ctx->bulk_len;
		return ctx->bulk;
	}
	*len = json_string_length(j);
	return json_string_value(j);
}

void tool_result_init(struct tool_result *res)
{
	res->content = json_array();
	res->structured = NULL;
	res->is_error = false;
}

void tool_result_finish(struct tool_result *res)
{
	json_decref(res->content);
	json_decref(res->structured);
	res->content = res->structured = NULL;
}

void tool_text(struct tool_result *res, const char *fmt, ...)
{
	va_list ap;
	char *text;

	va_start(ap, fmt);
	int n = vasprintf(&text, fmt, ap);
	va_end(ap);
	if (n < 0)
		abort();
	json_array_append_new(res->content,
			      json_pack("{s:s, s:o}", "type", "text", "text", json_string_lossy(text, (size_t)n)));
	free(text);
}

void tool_structured(struct tool_result *res, json_t *obj)
{
	json_decref(res->structured);
	res->structured = obj;
}

json_t *tool_error(struct tool_result *res, const struct err *e)
{
	res->is_error = true;
	/* fold_failure knows this block by its start */
	tool_text(res, "Error (%s): %s", errcode_name(e->code), e->msg);
	return json_pack("{s:s, s:s}", "code", errcode_name(e->code), "message", e->msg);
}

int tool_fail(struct tool_result *res, const struct err *e)
{
	json_array_clear(res->content);
	tool_structured(res, json_pack("{s:o}", "error", tool_error(res, e)));
	return 0;
}

void tool_progress(struct tool_ctx *ctx, double progress, double total, const char *message)
{
	if (!ctx->progress_token || call_cancelled(ctx->call) || progress <= ctx->last_progress)
		return;
	ctx->last_progress = progress;
	json_t *p = json_pack("{s:O, s:f}", "progressToken", ctx->progress_token, "progress", progress);
	if (total > 0)
		json_object_set_new(p, "total", json_real(total));
	if (message)
		json_object_set_new(p, "message", json_string_lossy(message, strlen(message)));
	if (ctx->notify)
		ctx->notify(ctx->notify_arg, "notifications/progress", p);
	else
		json_decref(p);
	ctx->progress_sent_ms = now_ms();
}

/* Progress at most this often while output flows, and this often when it is quiet (ms). */
#define TOOL_PROGRESS_MIN_MS 250
#define TOOL_PROGRESS_EVERY_MS 2000

void tool_progress_output(struct tool_ctx *ctx, const char *p, size_t n)
{
	if (!ctx->progress_token)
		return;
	const char *end = p + n;
	while (end > p && (end[-1] == '\n' || end[-1] == '\r'))
		end--;
	const char *begin = end;
	while (begin > p && begin[-1] != '\n')
		begin--;
	if (end > begin)
		snprintf(ctx->last_line, sizeof(ctx->last_line), "%.*s", (int)(end - begin), begin);
	tool_progress_tick(ctx);
}

void tool_progress_tick(struct tool_ctx *ctx)
{
	int64_t now = now_ms();

	if (!ctx->progress_token ||
	    now - ctx->progress_ms < (ctx->last_line[0] ? TOOL_PROGRESS_MIN_MS : TOOL_PROGRESS_EVERY_MS))
		return;
	ctx->progress_ms = now;
	char msg[200];
	double secs = (double)(now - ctx->started_ms) / 1000.0;
	snprintf(msg, sizeof(msg), "%.1f s%s%s", secs, ctx->last_line[0] ? ": " : "", ctx->last_line);
	ctx->last_line[0] = '\0';
	tool_progress(ctx, secs, 0, msg);
}

void tool_progress_stage(struct tool_ctx *ctx, const char *stage)
{
	if (!ctx->progress_token)
		return;
	int64_t now = now_ms();
	double secs = (double)(now - ctx->started_ms) / 1000.0;
	/* progress must grow: two stages in one millisecond still both go out */
	if (secs <= ctx->last_progress)
		secs = ctx->last_progress + 0.001;
	char msg[200];
	snprintf(msg, sizeof(msg), "%.1f s: %s", secs, stage);
	ctx->progress_ms = now;
	ctx->last_line[0] = '\0';
	tool_progress(ctx, secs, 0, msg);
}

static int exec_on_data(void *arg, int stream, const char *p, size_t n)
{
	(void)stream;
	tool_progress_output(arg, p, n);
	return 0;
}

static void exec_on_tick(void *arg)
{
	tool_progress_tick(arg);
}

int tool_exec(struct tool_ctx *ctx, struct session *s, const char *const *argv, const char *const *env,
	      const char *workdir, int timeout_ms, struct exec_result *xr, struct err *e)
{
	const struct config *cfg = ctx->svc->cfg;
	struct exec_spec spec = {
		.argv = argv,
		.env = env,
		.workdir = workdir ? workdir : cfg->workspace,
		.user = s->user,
		.guard = session_guard(s),
		.timeout_ms = timeout_ms,
		.cap = cfg->output_bytes,
		.on_data = exec_on_data,
		.on_tick = exec_on_tick,
		.arg = ctx,
	};
	int r = session_run(ctx->call, s, &spec, xr, e);
	return r < 0 ? tool_session_gone(ctx, s, r, e) : r;
}

int tool_session_gone(struct tool_ctx *ctx, struct session *s, int r, struct err *e)
{
	if (e->code != ERRCODE_SESSION_NOT_FOUND)
		return r;
	if (!session_forget(ctx->svc->sessions, s))
		return err_set(e, ERRCODE_CANCELLED, r,
			       "session %s was restarted while this call ran (over its disk cap; its next call says "
			       "more): run it again",
			       s->id);
	return err_set(e, ERRCODE_SESSION_NOT_FOUND, r,
		       "the container of session %s is gone (removed or stopped outside sandbox-mcp); the session was "
		       "dropped: run again without session_id, or session_create a new one",
		       s->id);
}

char *tool_exec_output(const struct exec_result *xr, size_t *len)
{
	struct buf b;
	buf_init(&b, SIZE_MAX);
	capture_render(&xr->out, &b);
	if (b.len && b.data[b.len - 1] != '\n')
		(void)buf_append(&b, "\n", 1);
	capture_render(&xr->err, &b);
	(void)buf_append(&b, "", 1);
	*len = b.len - 1;
	return buf_steal(&b, NULL);
}

/*
 * A pull for the default session, inside a tool whose own progress counts
 * seconds (run_command's output): sent on that scale, so the tool's later
 * progress still grows, with the layers and bytes in the message.
 */
static void default_pull_progress(void *arg, double done, double total, const char *msg)
{
	(void)done;
	(void)total;
	tool_progress_stage(arg, msg);
}

int tool_session(struct tool_ctx *ctx, json_t *args, struct session **ret, struct tool_result *res)
{
	struct err e;
	const char *ref = json_string_value(json_object_get(args, "session_id"));

	err_clear(&e);
	int r = session_get_reporting(ctx->svc->sessions, ctx->call, ref, default_pull_progress, ctx, ret, &e);
	/*
	 * A session the idle TTL closed with a snapshot comes back when a tool
	 * call names it (by id or name, never the implicit default session: a
	 * server of the same principal must not pick up another's): only here,
	 * after the call's principal is known, never for a resource read or a
	 * download.
	 */
	if (r < 0 && ref && e.code == ERRCODE_SESSION_NOT_FOUND) {
		struct err e2;
		/* a failed look (the engine away) leaves the call's own answer: no such session */
		if (savepoint_restore(ctx->svc->sessions, ctx->call, ref, ret, &e2) == 0)
			r = 0;
	}
	if (r < 0) {
		tool_fail(res, &e);
		return -ENOENT;
	}
	/* brought back from an idle snapshot: the first call says what was not kept */
	char *notice = session_take_notice(ctx->svc->sessions, *ret);
	if (notice) {
		tool_text(res, "%s", notice);
		free(notice);
	}
	return 0;
}

bool tool_env_name_valid(const char *name)
{
	if (!name[0] || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

void tool_text_bytes(struct tool_result *res, const char *label, const char *p, size_t n)
{
	struct buf b;
	buf_init(&b, SIZE_MAX);
	(void)buf_append_str(&b, label);
	(void)buf_append(&b, p, n);
	json_array_append_new(res->content,
			      json_pack("{s:s, s:o}", "type", "text", "text", json_string_lossy(b.data, b.len)));
	buf_finish(&b);
}

/*
 * A result waits this long after its call's last progress notification. The
 * TypeScript SDK 1.x (and so Claude Code) handles a notification in a
 * microtask but a response at once, dropping the request's progress handler:
 * when both arrive in one read, the notification finds no handler and the
 * client reports "unknown token" as a transport error. A pause lets the
 * client read them apart.
 */
#define TOOL_PROGRESS_SETTLE_MS 100

static void settle_progress(const struct tool_ctx *ctx)
{
	if (!ctx->progress_sent_ms)
		return;
	int64_t wait = ctx->progress_sent_ms + TOOL_PROGRESS_SETTLE_MS - now_ms();
	if (wait > 0)
		(void)poll(NULL, 0, (int)wait);
}

/* s[0..len) with its middle cut to keep about keep bytes, cut on UTF-8 character starts. */
static json_t *cut_middle(const char *s, size_t len, size_t keep, const char *why)
{
	if (len <= keep)
		return json_stringn(s, len);
	size_t head = keep / 2, tail = len - keep / 2;
	while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80)
		head--;
	while (tail < len && ((unsigned char)s[tail] & 0xC0) == 0x80)
		tail++;
	struct buf b;
	buf_init(&b, SIZE_MAX);
	(void)buf_append(&b, s, head);
	buf_printf(&b, "\n[... %zu bytes cut %s ...]\n", tail - head, why);
	(void)buf_append(&b, s + tail, len - tail);
	json_t *j = json_string_lossy(b.data, b.len);
	buf_finish(&b);
	return j;
}

static bool block_is(const json_t *block, const char *type)
{
	const char *t = json_string_value(json_object_get(block, "type"));
	return t && strcmp(t, type) == 0;
}

/*
 * Codex CLI shows the model only structuredContent when a result has it, so a
 * failure whose details are only in the content text (run_python's output
 * and traceback, a file tool's hint) reached it as a bare code and message.
 * Copies that text into error.output, its middle cut to cap bytes. Results
 * that carry more than the error (run_command's stdout and stderr) or an
 * output already (pip, git) are left alone.
 */
static void fold_failure(struct tool_result *res, size_t cap)
{
	json_t *error = json_object_get(res->structured, "error");
	if (!json_is_object(error) || json_object_size(res->structured) != 1 || json_object_get(error, "output"))
		return;
	struct buf t;
	size_t i, images = 0;
	json_t *block;
	buf_init(&t, SIZE_MAX);
	json_array_foreach (res->content, i, block) {
		const char *text = json_string_value(json_object_get(block, "text"));
		images += block_is(block, "image");
		/* the "Error (code): message" block says what error.message says */
		if (!block_is(block, "text") || !text || strncmp(text, "Error (", 7) == 0)
			continue;
		buf_printf(&t, "%s%s", t.len ? "\n" : "", text);
	}
	if (images)
		buf_printf(&t, "%s[%zu image%s in the result's content]", t.len ? "\n" : "", images,
			   images == 1 ? "" : "s");
	if (t.len)
		json_object_set_new(error, "output", cut_middle(t.data, t.len, cap, "from the middle"));
	buf_finish(&t);
}

/*
 * Serialized size of the result's text: images and embedded resources (a
 * file_read blob) are left out, since clients pass them on as data, not as
 * text to preview, and they cannot be cut.
 */
static size_t text_size(const struct tool_result *res, bool exact)
{
	size_t i, n = res->structured ? dump_size(res->structured, exact) : 0;
	json_t *block;
	json_array_foreach (res->content, i, block)
		if (!block_is(block, "image") && !block_is(block, "resource"))
			n += dump_size(block, exact);
	return n;
}

/*
 * v's compact JSON size: exact (a dump that formats every number), or a
 * bound that formats nothing (every string byte as if escaped to \u00XX,
 * every number at its longest), which most results are far enough under.
 */
static size_t dump_size(const json_t *v, bool exact)
{
	const char *key;
	json_t *m;
	size_t i, n = 2;

	if (exact)
		return json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		json_object_foreach ((json_t *)v, key, m)
			n += 2 + 6 * strlen(key) + 2 + dump_size(m, false);
		return n;
	case JSON_ARRAY:
		json_array_foreach (v, i, m)
			n += dump_size(m, false) + 1;
		return n;
	case JSON_STRING:
		return 2 + 6 * json_string_length(v);
	default:
		return 32; /* %.17g of a real, an integer's 20 digits, true, false, null */
	}
}

struct biggest {
	json_t *parent;
	char key[64];
	size_t size;
};

/* The largest string member of o (or of the objects in it, to depth 3). */
static void find_biggest(json_t *o, int depth, struct biggest *b)
{
	const char *key;
	json_t *v;
	json_object_foreach (o, key, v) {
		if (json_is_object(v) && depth < 3) {
			find_biggest(v, depth + 1, b);
		} else if (json_is_string(v) && strlen(key) < sizeof(b->key)) {
			size_t n = json_dumpb(v, NULL, 0, JSON_COMPACT | JSON_ENCODE_ANY);
			if (n > b->size) {
				b->parent = o;
				snprintf(b->key, sizeof(b->key), "%s", key);
				b->size = n;
			}
		}
	}
}

/*
 * Claude Code hands the model a 2 KB preview instead of a result over about
 * 50 KB. The caps keep ordinary results well under that; output that escapes
 * badly (control bytes become \u00XX, six times their size) could still pass
 * it, so the largest strings lose their middles until the text fits.
 */
static void fit_budget(struct tool_result *res, size_t budget)
{
	if (text_size(res, false) <= budget)
		return; /* no need to format it all to know */
	for (int round = 0; round < 16; round++) {
		size_t total = text_size(res, true);
		if (total <= budget)
			return;
		struct biggest b = { 0 };
		size_t i;
		json_t *block;
		json_array_foreach (res->content, i, block)
			if (block_is(block, "text"))
				find_biggest(block, 3, &b);
		if (res->structured)
			find_biggest(res->structured, 0, &b);
		json_t *v = b.parent ? json_object_get(b.parent, b.key) : NULL;
		if (!v || b.size < 512)
			return; /* nothing left worth cutting */
		size_t len = json_string_length(v), excess = total - budget + 256;
		size_t keep = b.size > excess ? (size_t)((double)(b.size - excess) * (double)len / (double)b.size) : 0;
		char why[96];
		snprintf(why, sizeof(why), "to keep the result under %zu bytes", budget);
		json_object_set_new(b.parent, b.key, cut_middle(json_string_value(v), len, keep, why));
	}
}

void tool_result_seal(struct tool_ctx *ctx, struct tool_result *res)
{
	if (res->is_error)
		fold_failure(res, ctx->svc->cfg->output_bytes);
	fit_budget(res, TOOL_RESULT_BUDGET);
	settle_progress(ctx);
}
