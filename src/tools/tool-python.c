/*
 * tool-python.c - run_python: Python in the session's long-lived interpreter
 * (pyrepl.h), so variables, imports and functions survive between calls.
 *
 * The result is content only, never structuredContent (and the tool declares
 * no outputSchema): figures come back as image blocks, and Claude Code drops
 * images from results that carry structuredContent.  Failures of the tool
 * itself (no python3 in the image, a timeout, a cancelled call) are isError
 * results; an exception raised by the code is a normal result showing its
 * traceback, as a non-zero exit code is for run_command.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/base64.h"
#include "base/log.h"
#include "sandbox/pyrepl.h"
#include "tools/files.h"
#include "tools/tools.h"

/* Changed files listed in the text. */
#define PY_FILES_SHOWN 50
/* Where HTTP mode writes figures to link them (a tmpfs in sessions: gone with the container). */
#define PY_FIGURE_DIR "/tmp/sandbox-mcp-figures"

/* The interpreter one call runs in, and what happened to it on the way. */
struct py_run {
	struct pyrepl *p;
	bool fresh;    /* a one-off interpreter, not the session's */
	bool started;  /* started for this call */
	bool replaced; /* the session's had exited: variables from earlier calls are gone */
	int64_t start_ms;
	char python[32]; /* its version */
};

static int run_python(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
/*
 * ", cpu N ms, max rss N KiB" from the driver's usage of the cell (driver.py:
 * getrusage deltas of the interpreter and its waited-for children), as
 * run_command's closing line says them; "" when the cell reported none.
 */
static void usage_note(json_t *result, char *out, size_t outsz)
{
	json_t *u = json_object_get(result, "usage");
	json_t *cpu = json_object_get(u, "cpu_ms"), *rss = json_object_get(u, "max_rss_kb");
	out[0] = '\0';
	if (json_is_integer(cpu) && json_is_integer(rss) && json_integer_value(cpu) >= 0 &&
	    json_integer_value(rss) >= 0)
		snprintf(out, outsz, ", cpu %lld ms, max rss %lld KiB", (long long)json_integer_value(cpu),
			 (long long)json_integer_value(rss));
}

static void on_output(void *arg, int stream, const char *p, size_t n);
static void on_tick(void *arg);
static int start(struct tool_ctx *ctx, struct session *s, struct pyrepl **ret, struct tool_result *res);
static void add_output(struct tool_result *res, const char *label, const struct capture *c);
static void add_image(struct tool_result *res, const struct buf *png);
static void outbox_figure(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, unsigned cell,
			  size_t i, const struct buf *png);
static void add_files(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, json_t *files,
		      bool incomplete);
static void link_figure(struct tool_ctx *ctx, struct tool_result *res, struct session *s, unsigned cell, size_t i,
			const struct buf *png);
static void add_outcome(struct tool_result *res, const struct session *s, const struct pyrepl_result *pr,
			int timeout_s);
static int interpreter(struct tool_ctx *ctx, struct session *s, struct py_run *pyr, struct tool_result *res);
static void add_saved(struct tool_result *res, const struct pyrepl_result *pr);
static void render(struct tool_ctx *ctx, struct tool_result *res, struct session *s, const struct py_run *pyr,
		   const struct pyrepl_result *pr, int timeout_s);

static void on_output(void *arg, int stream, const char *p, size_t n)
{
	(void)stream;
	tool_progress_output(arg, p, n);
}

static void on_tick(void *arg)
{
	tool_progress_tick(arg);
}

/* Starts an interpreter for s; on failure fills res and returns -errno. */
static int start(struct tool_ctx *ctx, struct session *s, struct pyrepl **ret, struct tool_result *res)
{
	struct pyrepl_opts o = {
		.container_id = s->container,
		.user = s->user,
		.workdir = ctx->svc->cfg->workspace,
		.guard = session_guard(s),
	};
	struct err e;
	int r;

	err_clear(&e);
	if ((r = pyrepl_start(session_engine(s), ctx->call, &o, ret, &e)) == 0)
		return 0;
	if (e.code == ERRCODE_PYTHON_NOT_FOUND) {
		char why[ERR_MSG_MAX];
		snprintf(why, sizeof(why), "%s", e.msg);
		err_set(&e, ERRCODE_PYTHON_NOT_FOUND, r,
			"session %s runs image %s: %.200s. run_python needs python3 in the image: session_create a "
			"session from %s (or another image with Python, e.g. python:3.12-slim) and pass its "
			"session_id. run_command works in any image.",
			s->id, s->image, why, ctx->svc->cfg->image);
	} else {
		tool_session_gone(ctx, s, r, &e);
	}
	tool_fail(res, &e);
	return r;
}

/* A text block of label and the kept output, NUL bytes and all (tool_text would stop at one). */
static void add_output(struct tool_result *res, const char *label, const struct capture *c)
{
	struct buf t;

	if (c->total == 0)
		return;
	buf_init(&t, SIZE_MAX);
	(void)buf_append_str(&t, label);
	capture_render(c, &t);
	json_array_append_new(res->content,
			      json_pack("{s:s, s:o}", "type", "text", "text", json_string_lossy(t.data, t.len)));
	buf_finish(&t);
}

static void add_image(struct tool_result *res, const struct buf *png)
{
	if (png->len < 8 || memcmp(png->data, "\x89PNG\r\n\x1a\n", 8) != 0)
		return;
	size_t n = base64_encoded_len(png->len);
	char *b64 = xmalloc(n + 1);
	base64_encode(png->data, png->len, b64);
	json_array_append_new(res->content,
			      json_pack("{s:s, s:s%, s:s}", "type", "image", "data", b64, n, "mimeType", "image/png"));
	free(b64);
}

/*
 * With SANDBOX_OUTBOX set, also writes the figure there and names its host
 * path: a client that drops image content can still open it. Names carry the
 * time, so figures of persistent sessions across restarts do not collide.
 */
static void outbox_figure(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, unsigned cell,
			  size_t i, const struct buf *png)
{
	const struct hostfs *h = ctx->svc->hostfs;
	char name[128], path[PATHSAFE_MAX + 1];
	struct err err;

	if (!hostfs_outbox(h))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "%s-cell%u-fig%zu-%lld%03ld.png", s->id, cell, i + 1, (long long)ts.tv_sec,
		 ts.tv_nsec / 1000000);
	if (hostfs_outbox_put(h, name, png->data, png->len, path, sizeof(path), &err) < 0)
		tool_text(res, "Figure %zu could not be saved in the outbox: %s", i + 1, err.msg);
	else
		tool_text(res, "Figure %zu is also saved on the host: %s", i + 1, path);
}

/*
 * HTTP mode: also writes the figure to PY_FIGURE_DIR in the sandbox and links
 * it (resource_link with a signed URL), for chat UIs that show links rather
 * than image content. A figure that cannot be written is only inlined.
 */
static void link_figure(struct tool_ctx *ctx, struct tool_result *res, struct session *s, unsigned cell, size_t i,
			const struct buf *png)
{
	char name[96], path[PATHSAFE_MAX + 1];
	struct timespec ts;
	struct err err;

	if (!linksign_enabled(ctx->svc->links) || png->len < 8 || memcmp(png->data, "\x89PNG\r\n\x1a\n", 8) != 0)
		return;
	err_clear(&err);
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(name, sizeof(name), "cell%u-fig%zu-%lld%03ld.png", cell, i + 1, (long long)ts.tv_sec,
		 ts.tv_nsec / 1000000);
	snprintf(path, sizeof(path), "%s/%s", PY_FIGURE_DIR, name);
	if (files_put(ctx, s, PY_FIGURE_DIR, name, png->data, png->len, &err) < 0) {
		log_debugf("figure %zu of cell %u not linked: %s", i + 1, cell, err.msg);
		return;
	}
	files_link(ctx, res, s, path, "image/png");
}

/*
 * Lists the workspace files the code changed, and links the ones that exist
 * (created or modified) with resource_link content, so a client can open them.
 * The paths come from the driver, inside the sandbox: they are only text here
 * and in a percent-encoded URI.
 */
static void add_files(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, json_t *files,
		      bool incomplete)
{
	struct buf t;
	size_t i;
	json_t *f;

	if (!json_array_size(files))
		return;
	buf_init(&t, SIZE_MAX);
	buf_printf(&t, "Files changed in the workspace:");
	json_array_foreach (files, i, f) {
		if (i == PY_FILES_SHOWN) {
			buf_printf(&t, "\n  ... and %zu more", json_array_size(files) - i);
			break;
		}
		const char *change = json_string_value(json_object_get(f, "change"));
		const char *path = json_string_value(json_object_get(f, "path"));
		json_t *size = json_object_get(f, "size");
		buf_printf(&t, "\n  %s %s", change ? change : "?", path ? path : "?");
		if (json_is_integer(size))
			buf_printf(&t, " (%lld bytes)", (long long)json_integer_value(size));
	}
	if (incomplete)
		buf_printf(&t, "\n  (the workspace is large: the list may be incomplete)");
	tool_text(res, "%s", t.data);
	buf_finish(&t);

	json_array_foreach (files, i, f) {
		if (i == PY_FILES_SHOWN)
			break;
		const char *change = json_string_value(json_object_get(f, "change"));
		const char *path = json_string_value(json_object_get(f, "path"));
		if (!path || !path[0] || path[0] == '/' || !change || strcmp(change, "deleted") == 0)
			continue;
		char *abs = xasprintf("%s/%s", ctx->svc->cfg->workspace, path);
		files_link(ctx, res, s, abs, NULL);
		free(abs);
	}
}

/* The error notice for a cell that did not end normally (none when it did). */
static void add_outcome(struct tool_result *res, const struct session *s, const struct pyrepl_result *pr, int timeout_s)
{
	const char *etype = json_string_value(json_object_get(json_object_get(pr->result, "error"), "type"));
	bool kbi = etype && strcmp(etype, "KeyboardInterrupt") == 0;
	const char *why = pr->cancelled ? "the call was cancelled" : NULL;
	char limit[96];
	enum errcode code = pr->cancelled ? ERRCODE_CANCELLED : ERRCODE_TIMEOUT;
	struct err e;

	snprintf(limit, sizeof(limit), "the code ran past its %d s limit", timeout_s);
	if (!why)
		why = limit;
	if (pr->killed) {
		err_set(&e, code, -EIO,
			"%s and did not stop on an interrupt (SIGINT) within %d s, so the interpreter was killed%s: "
			"its state was lost (variables, imports, functions). The next run_python call starts a fresh "
			"interpreter; the session and its files are fine.%s",
			why, PYREPL_INTERRUPT_GRACE_MS / 1000,
			pr->restarted ? " (the session's container had to be restarted: running processes and /tmp "
					"were lost too)"
				      : "",
			pr->cancelled ? "" : " Pass a larger timeout_s for long jobs.");
	} else if (pr->lost && pr->exit_code == 137) {
		err_set(&e, ERRCODE_OUT_OF_MEMORY, -ENOMEM,
			"the interpreter was killed (SIGKILL, exit 137), almost certainly by the kernel for using "
			"more than the session's %llu MB memory limit: its state was lost. Use less memory, or "
			"session_create with a larger memory_mb; the next run_python call starts a fresh interpreter.",
			(unsigned long long)s->memory_mb);
	} else if (pr->lost) {
		/* it ended on its own (os._exit, a crash): say so, but the code asked for it */
		char status[32] = "";
		if (pr->exit_code >= 0)
			snprintf(status, sizeof(status), " with exit code %d", pr->exit_code);
		tool_text(res,
			  "The interpreter exited%s while running this code (os._exit, a crash?): its state was lost. "
			  "The next run_python call starts a fresh one.%s%.600s",
			  status, pr->diag[0] ? "\n" : "", pr->diag);
		return;
	} else if (pr->interrupted && (kbi || !pr->result)) {
		err_set(&e, code, -EIO,
			"%s and was interrupted (KeyboardInterrupt); the interpreter's state was kept: variables "
			"defined before are still there.%s",
			why, pr->cancelled ? "" : " Pass a larger timeout_s for long jobs.");
	} else {
		return;
	}
	tool_structured(res, json_pack("{s:o}", "error", tool_error(res, &e)));
}

/*
 * The interpreter a call runs in: a new one-off for fresh, else the
 * session's, a dead one replaced and a missing one started. 0, or -errno
 * with res filled.
 */
static int interpreter(struct tool_ctx *ctx, struct session *s, struct py_run *pyr, struct tool_result *res)
{
	int r;

	if (!pyr->fresh && s->repl && !pyrepl_alive(s->repl)) {
		/* died between calls (the container was restarted, a background thread exited it) */
		pyrepl_destroy(s->repl);
		s->repl = NULL;
		pyr->replaced = true;
	}
	pyr->p = pyr->fresh ? NULL : s->repl;
	if (pyr->p)
		return 0;
	if ((r = start(ctx, s, &pyr->p, res)) < 0)
		return r;
	pyr->started = true;
	if (!pyr->fresh)
		s->repl = pyr->p;
	return 0;
}

/* Notes where output past the cap was saved: before the output, as Claude Code shows only a result's first 2 KB. */
static void add_saved(struct tool_result *res, const struct pyrepl_result *pr)
{
	json_t *saved = json_object_get(pr->result, "output_files");
	bool cut = json_is_true(json_object_get(pr->result, "output_files_cut"));
	const char *key;
	json_t *path;

	json_object_foreach (saved, key, path)
		if (json_is_string(path))
			tool_text(res, "The %s %s (%llu bytes) is saved at %s%s", cut ? "start of" : "full", key,
				  (unsigned long long)(strcmp(key, "stdout") == 0 ? pr->out.total : pr->err.total),
				  json_string_value(path),
				  cut ? " (a saved file stops at SANDBOX_OUTPUT_SAVE_MB; write big output to a "
					"file yourself)"
				      : "");
}

/*
 * The result of a cell that ran: how it ended, its output, traceback and
 * value, its figures, the files it changed, and a footer line.
 */
static void render(struct tool_ctx *ctx, struct tool_result *res, struct session *s, const struct py_run *pyr,
		   const struct pyrepl_result *pr, int timeout_s)
{
	add_outcome(res, s, pr, timeout_s);
	if (pyr->replaced)
		tool_text(res, "Note: this session's previous Python interpreter had exited (e.g. its container was "
			       "restarted), so the code ran in a new one: variables from earlier calls are gone.");
	add_saved(res, pr);
	add_output(res, "stdout:\n", &pr->out);
	add_output(res, "stderr:\n", &pr->err);

	json_t *jerr = json_object_get(pr->result, "error");
	const char *tb = json_string_value(json_object_get(jerr, "traceback"));
	const char *etype = json_string_value(json_object_get(jerr, "type"));
	if (jerr)
		tool_text(res, "%s", tb && tb[0] ? tb : etype ? etype : "error");
	const char *value = json_string_value(json_object_get(pr->result, "value"));
	if (value)
		tool_text(res, "Out[%u]: %s", pr->cell, value);
	for (size_t i = 0; i < pr->nfigures; i++) {
		add_image(res, &pr->figures[i]);
		outbox_figure(ctx, res, s, pr->cell, i, &pr->figures[i]);
		link_figure(ctx, res, s, pr->cell, i, &pr->figures[i]);
	}
	size_t dropped = pr->figures_dropped +
			 (size_t)json_integer_value(json_object_get(pr->result, "figures_dropped"));
	if (dropped)
		tool_text(res,
			  "%zu more figure%s not returned (at most %d per call, %u MB each): save them with "
			  "savefig and read the files instead.",
			  dropped, dropped == 1 ? " was" : "s were", PYREPL_FIGURES_MAX, PYREPL_FIGURE_MAX >> 20);
	add_files(ctx, res, s, json_object_get(pr->result, "files"),
		  json_is_true(json_object_get(pr->result, "files_incomplete")));

	char started_note[64] = "";
	if (pyr->started)
		snprintf(started_note, sizeof(started_note), ", new interpreter started in %lld ms",
			 (long long)pyr->start_ms);
	char usage[80];
	usage_note(pr->result, usage, sizeof(usage));
	tool_text(res, "[session %s, %scell %u, python %s, %lld ms%s%s%s%s]", s->id,
		  pyr->fresh ? "fresh interpreter, " : "", pr->cell, pyr->python, (long long)pr->duration_ms, usage,
		  started_note, pr->timed_out ? ", timed out" : "", pr->result || pr->lost ? "" : ", no result");
}

/* Checks the code's size, gets the interpreter, runs the cell (once more in a new one if it was gone), renders. */
static int run_python(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	json_t *jcode = json_object_get(args, "code");
	json_int_t timeout_s = json_integer_value(json_object_get(args, "timeout_s"));
	struct py_run pyr = { .fresh = json_is_true(json_object_get(args, "fresh")) };
	struct pyrepl_result pr;
	struct session *s;
	struct err e;
	int r;

	err_clear(&e);
	if (json_string_length(jcode) > cfg->max_code_bytes) {
		err_set(&e, ERRCODE_TOO_LARGE, -E2BIG,
			"code is %zu bytes, over the %llu-byte limit (SANDBOX_MAX_CODE_BYTES): write it to a .py file "
			"with file_write and run it with exec(open(path).read()) or import it",
			json_string_length(jcode), (unsigned long long)cfg->max_code_bytes);
		return tool_fail(res, &e);
	}
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	if (interpreter(ctx, s, &pyr, res) < 0)
		goto out;

	int tmo = (int)(timeout_s > 0 ? (uint64_t)timeout_s : cfg->timeout_s);
	struct pyrepl_request req = {
		.code = json_string_value(jcode),
		.code_len = json_string_length(jcode),
		.timeout_ms = tmo * 1000,
		.cap = cfg->output_bytes,
		.save_cap = (size_t)(cfg->output_save_mb << 20),
		.on_output = on_output,
		.on_tick = on_tick,
		.arg = ctx,
	};
	r = pyrepl_run(pyr.p, ctx->call, &req, &pr, &e);
	if (r == -EPIPE && !pyr.started && !pyr.fresh) {
		/* it was gone before the cell reached it: nothing ran, so run it in a new one */
		pyrepl_result_finish(&pr);
		pyrepl_destroy(pyr.p);
		s->repl = pyr.p = NULL;
		pyr.replaced = true;
		if (interpreter(ctx, s, &pyr, res) < 0)
			goto out;
		r = pyrepl_run(pyr.p, ctx->call, &req, &pr, &e);
	}
	pyr.start_ms = pyrepl_start_ms(pyr.p);
	snprintf(pyr.python, sizeof(pyr.python), "%s", pyrepl_python_version(pyr.p));
	if (pyr.fresh || pr.lost || r < 0) {
		if (pyr.fresh && !pr.lost)
			pyrepl_destroy(pyr.p); /* EOF ends the driver */
		else
			pyrepl_kill(pyr.p);
		if (!pyr.fresh)
			s->repl = NULL;
	}
	if (r < 0)
		tool_fail(res, &e);
	else
		render(ctx, res, s, &pyr, &pr, tmo);
	pyrepl_result_finish(&pr);
out:
	session_put(ctx->svc->sessions, s);
	return 0;
}

const struct tool_entry tool_run_python_entry = {
	.name = "run_python",
	.title = "Run Python",
	.description =
		"Run Python code in the session's persistent interpreter (like a Jupyter kernel): variables, "
		"imports and functions survive between calls. Returns stdout, stderr, the value of the last "
		"expression (Out[n]), the traceback if the code raised, open matplotlib figures as PNG images "
		"(call plt.show() or just leave them open), and the workspace files the code created or changed. "
		"The working directory is /workspace. numpy, pandas and matplotlib are in the default image; "
		"pip_install or run_command 'pip install' adds more. Past timeout_s the code gets a "
		"KeyboardInterrupt (state kept); if it does not stop, the interpreter is restarted (state lost). "
		"fresh: true runs the code in a new, throw-away interpreter instead.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"code\"],\"properties\":{"
		"\"code\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Python source (several statements; "
		"the value of a final expression is returned)\"},"
		"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Session id or name "
		"(default: the default session; at most 128 characters)\"},"
		"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,\"description\":\"Interrupt the "
		"code after this many seconds (default 60; from 1 to 86400)\"},"
		"\"fresh\":{\"type\":\"boolean\",\"description\":\"Run in a new one-off interpreter, leaving the "
		"session's persistent one untouched\"}}}",
	.output_schema = NULL,
	.group = TOOL_GROUP_RUN,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = run_python,
	.instructions = "run_python keeps variables, imports and functions between calls, like a notebook; open "
			"matplotlib figures come back as images.",
};
