/*
 * export-build.c - session_export's build (tool-export.c) past the
 * engine's builder: the builder's output kept for progress and the error,
 * and the RUN steps run in a transient session with the exported session's
 * hardening, limits and egress, then committed: session content never runs
 * in the builder's own containers (see tool-export.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/log.h"
#include "engine/engine-image.h"
#include "sandbox/egress.h"
#include "sandbox/exec.h"
#include "sandbox/image.h"
#include "tools/export-build.h"
#include "tools/files.h"

/* "<IMAGE_LABEL_BUILD>=<32 hex>": a label filter naming one build's images. */
void export_build_nonce(char *out, size_t outsz)
{
	unsigned char rnd[16];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		/* never blocks or fails after boot; a time-based id still names only this build's images */
		uint64_t t = (uint64_t)now_ms() ^ ((uint64_t)getpid() << 40);
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)(t >> (8 * (i % 8))) ^ (unsigned char)i;
	}
	int n = snprintf(out, outsz, "%s=", IMAGE_LABEL_BUILD);
	for (size_t i = 0; i < sizeof(rnd) && n > 0 && (size_t)n + 2 < outsz; i++)
		n += snprintf(out + n, outsz - (size_t)n, "%02x", rnd[i]);
}

/* Sends output on as progress and keeps its last EXPORT_BUILD_TAIL bytes (at most twice that). */
static void tail_add(struct build_tail *t, const char *s, size_t n)
{
	tool_progress_output(t->ctx, s, n);
	if (n > EXPORT_BUILD_TAIL) {
		s += n - EXPORT_BUILD_TAIL;
		n = EXPORT_BUILD_TAIL;
	}
	if (t->text.len + n > 2 * EXPORT_BUILD_TAIL)
		buf_consume(&t->text, t->text.len + n - EXPORT_BUILD_TAIL);
	buf_append(&t->text, s, n);
}

/*
 * A builder message: its text is kept and shown, never trusted (a step's
 * output could say anything; only the final aux message names the image).
 */
void export_build_message(void *arg, json_t *msg)
{
	struct build_tail *t = arg;
	const char *s = json_string_value(json_object_get(msg, "stream"));
	if (!s)
		s = json_string_value(json_object_get(msg, "error"));
	if (!s)
		return;
	if (strncmp(s, "Step ", 5) == 0) {
		size_t k = strcspn(s, "\n");
		snprintf(t->step, sizeof(t->step), "%.*s", (int)k, s);
	}
	tail_add(t, s, strlen(s));
}

static int run_data(void *arg, int stream, const char *p, size_t n)
{
	tail_add(arg, p, n);
	return 0;
}

/* A silent step (a long setup.py) still shows the client that the call is alive. */
static void run_tick(void *arg)
{
	struct build_tail *t = arg;
	tool_progress_tick(t->ctx);
}

/*
 * Files of the context under /tmp (local package sources outside the
 * workspace) are in the built image, but hidden in a session by its /tmp
 * tmpfs: they are written there again, from the session they came from.
 */
static int push_tmp_files(struct tool_ctx *ctx, struct session *s, struct session *t, json_t *outside, struct err *err)
{
	static const char put[] = "mkdir -p -- \"${1%/*}\" && cat > \"$1\"";
	size_t i;
	json_t *v;
	json_array_foreach (outside, i, v) {
		const char *path = json_string_value(v);
		struct buf data;
		uint64_t size;
		unsigned mode;
		if (strncmp(path, "/tmp/", 5) != 0)
			continue;
		int r = files_pull_file(ctx, s, path, 0, UINT64_MAX, files_max_bytes(ctx->svc->cfg), &data, &size,
					&mode, err);
		if (r < 0)
			return r;
		const char *argv[] = { "/bin/sh", "-c", put, "sandbox-mcp-export", path, NULL };
		struct exec_spec spec = { .argv = argv,
					  .user = t->user,
					  .guard = session_guard(t),
					  .stdin_data = data.data ? data.data : "",
					  .stdin_len = data.len,
					  .attach_stdin = true,
					  .timeout_ms = (int)(ctx->svc->cfg->timeout_s * 1000),
					  .cap = 4096 };
		struct exec_result xr;
		r = exec_run(session_engine(t), ctx->call, t->container, &spec, &xr, err);
		if (r == 0 && xr.exit_code != 0)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
				    "writing %s into the build container failed (exit %d)", path, xr.exit_code);
		exec_result_finish(&xr);
		buf_finish(&data);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Runs each of runs ({step, cmd}) with `sh -c` in t, in wd, as a builder would. 0 or -errno. */
static int run_steps(struct tool_ctx *ctx, struct session *t, json_t *runs, size_t steps, const char *wd,
		     struct build_tail *bt, struct err *err)
{
	size_t i;
	json_t *v;
	json_array_foreach (runs, i, v) {
		const char *cmd = json_string_value(json_object_get(v, "cmd"));
		snprintf(bt->step, sizeof(bt->step), "Step %lld/%zu : RUN %s",
			 (long long)json_integer_value(json_object_get(v, "step")), steps, cmd);
		tool_progress_stage(ctx, bt->step);
		const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		struct exec_spec spec = { .argv = argv,
					  .user = t->user,
					  .guard = session_guard(t),
					  .workdir = wd,
					  .timeout_ms = ENGINE_LONG_TIMEOUT_MS,
					  .cap = 4096,
					  .on_data = run_data,
					  .on_tick = run_tick,
					  .arg = bt };
		struct exec_result xr;
		int r = exec_run(session_engine(t), ctx->call, t->container, &spec, &xr, err);
		if (r == 0 && xr.cancelled)
			r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
		else if (r == 0 && xr.timed_out)
			r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the step ran longer than %d minutes",
				    ENGINE_LONG_TIMEOUT_MS / 60000);
		else if (r == 0 && xr.exit_code != 0)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
				    "the command returned a non-zero code: %d (run as %s in a container with the "
				    "session's hardening)",
				    xr.exit_code, t->user);
		exec_result_finish(&xr);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The RUN steps of an export: in a transient session of the built image
 * (image_id, replaced by the commit's), with s's limits and runtime, then
 * committed with the built image's settings. The session is closed in
 * every case. 0 or -errno.
 */
int export_hardened_steps(struct tool_ctx *ctx, struct session *s, json_t *runs, size_t steps, const char *wd,
			  json_t *outside, struct build_tail *bt, char image_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	struct engine *e = session_engine(s);
	/* with egress: the steps reach what the session may reach, through the same policy, never more */
	json_t *egress = s->egress ? egress_request_json(s->egress) : NULL;
	struct session_opts o = { .image = image_id,
				  .transient = true,
				  .memory_mb = s->memory_mb,
				  .cpus = s->cpus,
				  .runtime = s->runtime[0] ? s->runtime : NULL,
				  .engine = s->engine_name,
				  .egress = egress };
	struct session *t;
	char tid[SESSION_ID_LEN + 1], id[ENGINE_IMAGE_ID_MAX];
	json_t *img = NULL, *ct = NULL;
	struct err cerr;

	bt->step[0] = '\0'; /* the builder's last step is done: a failure from here is not its */
	tool_progress_stage(ctx, "running the RUN steps in a container with the session's hardening");
	int r = session_create(ctx->svc->sessions, ctx->call, &o, &t, err);
	json_decref(egress);
	if (r < 0)
		return r;
	snprintf(tid, sizeof(tid), "%s", t->id);
	r = push_tmp_files(ctx, s, t, outside, err);
	if (r == 0)
		r = run_steps(ctx, t, runs, steps, wd, bt, err);
	if (r == 0 && (r = engine_image_inspect(e, ctx->call, image_id, &img, err)) == 0)
		r = engine_container_inspect(e, ctx->call, t->container, &ct, err);
	if (r == 0) {
		json_t *config = image_commit_config(img, ct);
		tool_progress_stage(ctx, "committing the build container");
		r = image_commit(e, ctx->call, t->container, "", "", NULL, config, id, err);
		json_decref(config);
		if (r == 0)
			snprintf(image_id, ENGINE_IMAGE_ID_MAX, "%s", id);
	}
	json_decref(img);
	json_decref(ct);
	session_put(ctx->svc->sessions, t);
	if (session_close(ctx->svc->sessions, NULL, tid, &cerr) < 0)
		log_warnf("session_export: closing the build session %s: %s", tid, cerr.msg);
	return r;
}
