/*
 * tool-run.c - run_command: a shell command in a session, with a deadline
 * that kills its whole process tree, capped output, and the full output saved
 * in the workspace when the cap cut it.
 *
 * The full output is saved by a second exec started only once a stream passes
 * the cap (`cat > file`, fed by the server as bytes arrive), so small outputs
 * cost nothing extra and a 50 MB output never sits in the server's memory.
 * A saved file stops at SANDBOX_OUTPUT_SAVE_MB with a marker line, and the
 * folder keeps only the newest RUN_OUTPUT_KEEP files, so a chatty command
 * cannot fill the disk through the server.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "sandbox/exec.h"
#include "tools/jobs.h"
#include "tools/tools.h"

/* Largest stdin accepted (bytes). */
#define RUN_STDIN_MAX (1u << 20)
/* Most env variables per call. */
#define RUN_ENV_MAX 64
/* Most argv elements per call. */
#define RUN_ARGV_MAX 1024
/* Where cut output is saved, below the workspace. */
#define RUN_OUTPUT_DIR ".sandbox-mcp/output"
/* Saved output files kept in RUN_OUTPUT_DIR (run_command's and run_python's), the new one included. */
#define RUN_OUTPUT_KEEP 16

struct spill {
	struct engine_stream *stream;
	char exec_id[ENGINE_ID_LEN + 1];
	char path[512];
	uint64_t written; /* bytes sent to the file, at most SANDBOX_OUTPUT_SAVE_MB */
	bool started, failed, cut;
};

struct run_ctx {
	struct tool_ctx *ctx;
	struct session *s;
	struct exec_result *res;
	struct spill spill[3]; /* by stream number: 1 stdout, 2 stderr */
};

/* run_command's arguments, checked; the env strings are owned (run_args_finish). */
struct run_args {
	const char *command; /* a shell command line, or NULL: argv */
	const char *argv[RUN_ARGV_MAX + 1];
	const char *env[RUN_ENV_MAX + 1];
	char *envbuf[RUN_ENV_MAX];
	size_t nenv;
	char wd[PATHSAFE_MAX + 1];
	json_t *jstdin; /* borrowed from the arguments; NULL: no stdin */
	int timeout_ms;
};

/* What a run left behind: its streams as text and what they say happened. */
struct run_outcome {
	struct buf out, err;
	bool truncated;
	bool fork_failed;    /* the command hit the session's pids limit */
	bool no_start;	     /* the container could not start the command at all */
	bool container_gone; /* the session's container stopped while the command ran */
};

/* Beyond this, stderr comes after stdout, with its tail repeated first. */
#define RUN_STDERR_FIRST_MAX 1024

/*
 * The content blocks, short facts first: Claude Code shows the model only the
 * first 2 KB of a large result, so the exit code, whether output was cut,
 * where the full streams are saved and the end of stderr come before stdout.
 */
static void add_texts(struct tool_result *res, const struct run_ctx *rc, const struct buf *out, const struct buf *errb,
		      json_t *files, bool truncated)
{
	const struct exec_result *xr = rc->res;
	struct buf t;
	const char *key;
	json_t *path;

	buf_init(&t, SIZE_MAX);
	char usage[80] = "";
	if (xr->usage)
		snprintf(usage, sizeof(usage), ", cpu %llu ms, max rss %llu KiB", (unsigned long long)xr->cpu_ms,
			 (unsigned long long)xr->max_rss_kb);
	buf_printf(&t, "exit code %d (%.2f s%s)%s; stdout %llu bytes, stderr %llu bytes%s", xr->exit_code,
		   (double)xr->duration_ms / 1000.0, usage, xr->cancelled ? ", cancelled" : "",
		   (unsigned long long)xr->out.total, (unsigned long long)xr->err.total,
		   truncated ? " (truncated: each stream keeps its head and tail)" : "");
	json_object_foreach (files, key, path) {
		const struct spill *sp = &rc->spill[strcmp(key, "stdout") == 0 ? 1 : 2];
		uint64_t total = strcmp(key, "stdout") == 0 ? xr->out.total : xr->err.total;
		if (sp->cut)
			buf_printf(&t,
				   "\nThe first %llu of %llu bytes of %s are saved at %s (at most "
				   "SANDBOX_OUTPUT_SAVE_MB=%llu MB per stream): redirect big output to a file yourself, "
				   "e.g. cmd > out.txt",
				   (unsigned long long)sp->written, (unsigned long long)total, key,
				   json_string_value(path), (unsigned long long)rc->ctx->svc->cfg->output_save_mb);
		else
			buf_printf(&t, "\nThe full %s (%llu bytes) is saved at %s", key, (unsigned long long)total,
				   json_string_value(path));
	}
	tool_text(res, "%s", t.data);
	buf_finish(&t);
	bool err_first = errb->len <= RUN_STDERR_FIRST_MAX;
	if (errb->len && err_first)
		tool_text_bytes(res, "stderr:\n", errb->data, errb->len);
	else if (errb->len && out->len) {
		size_t from = errb->len - RUN_STDERR_FIRST_MAX;
		while (from < errb->len && ((unsigned char)errb->data[from] & 0xC0) == 0x80)
			from++;
		tool_text_bytes(res, "stderr ends with (all of it follows stdout):\n", errb->data + from,
				errb->len - from);
	}
	if (out->len)
		tool_text_bytes(res, "stdout:\n", out->data, out->len);
	if (errb->len && !err_first)
		tool_text_bytes(res, "stderr:\n", errb->data, errb->len);
}

static int run_command(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int check_command(const struct config *cfg, json_t *args, const char **argv, struct err *e);
static void run_args_finish(struct run_args *a);
static int parse_args(const struct config *cfg, json_t *args, struct run_args *a, struct err *e);
static int run(struct run_ctx *rc, const struct run_args *a, struct exec_spec *spec, struct err *e);
static bool container_stopped(struct tool_ctx *ctx, struct session *s);
static void observe(struct run_ctx *rc, const struct exec_spec *spec, struct run_outcome *o);
static enum errcode classify(const struct run_ctx *rc, const struct exec_spec *spec, const struct run_outcome *o,
			     struct err *e);
static json_t *saved_files(const struct run_ctx *rc, bool *ret_cut);
static void render(struct tool_result *res, const struct run_ctx *rc, const struct run_outcome *o, const struct err *e);
static int on_data(void *arg, int stream, const char *p, size_t n);
static void on_tick(void *arg);
static void spill_start(struct run_ctx *rc, int stream);
static void spill_finish(struct run_ctx *rc, struct spill *sp, uint64_t total);
static void spill_write(struct run_ctx *rc, struct spill *sp, const char *p, size_t n);

/* Sends what fits under SANDBOX_OUTPUT_SAVE_MB to the saving exec; notes a cut. */
static void spill_write(struct run_ctx *rc, struct spill *sp, const char *p, size_t n)
{
	uint64_t max = rc->ctx->svc->cfg->output_save_mb << 20;

	if (!sp->stream || sp->failed || n == 0)
		return;
	if (n > max - sp->written) {
		n = (size_t)(max - sp->written);
		sp->cut = true;
	}
	if (n && engine_stream_write(sp->stream, p, n) < 0)
		sp->failed = true;
	sp->written += n;
}

static void spill_start(struct run_ctx *rc, int stream)
{
	struct spill *sp = &rc->spill[stream];
	struct engine *e = session_engine(rc->s);
	const struct config *cfg = rc->ctx->svc->cfg;
	struct err err;
	static unsigned long seq;

	sp->started = true;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(sp->path, sizeof(sp->path), "%s/" RUN_OUTPUT_DIR "/run-%lld%03ld-%lu.%s.log", cfg->workspace,
		 (long long)ts.tv_sec, ts.tv_nsec / 1000000, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED),
		 stream == 1 ? "stdout" : "stderr");
	/* older saved files past the newest RUN_OUTPUT_KEEP go first (only ours, by name) */
	char script[384];
	snprintf(script, sizeof(script),
		 "mkdir -p \"${1%%/*}\" && cd \"${1%%/*}\" && { ls -1td -- run-*.log python-*.log 2>/dev/null | "
		 "tail -n +%d | while IFS= read -r f; do rm -f -- \"$f\"; done; exec cat > \"$1\"; }",
		 RUN_OUTPUT_KEEP);
	json_t *body = json_pack("{s:b, s:b, s:b, s:b, s:s, s:[s, s, s, s, s]}", "AttachStdin", 1, "AttachStdout", 1,
				 "AttachStderr", 1, "Tty", 0, "User", rc->s->user, "Cmd", "/bin/sh", "-c", script,
				 "sandbox-mcp-save", sp->path);
	/* behind the agent's filter like every command (the script runs programs found on PATH) */
	const char *guard = session_guard(rc->s);
	if (guard) {
		json_t *cmd = json_object_get(body, "Cmd");
		json_array_insert_new(cmd, 0, json_string("--guard"));
		json_array_insert_new(cmd, 0, json_string(guard));
	}
	int r = engine_exec_create(e, NULL, rc->s->container, body, sp->exec_id, &err);
	json_decref(body);
	if (r == 0)
		r = engine_exec_start(e, NULL, sp->exec_id, &sp->stream, &err);
	if (r < 0) {
		log_warnf("saving the full output failed: %s", err.msg);
		sp->failed = true;
		return;
	}
	/* what the capture holds so far is everything: nothing was dropped yet */
	struct buf kept;
	buf_init(&kept, SIZE_MAX);
	capture_raw(stream == 1 ? &rc->res->out : &rc->res->err, &kept);
	spill_write(rc, sp, kept.data, kept.len);
	buf_finish(&kept);
}

static void spill_finish(struct run_ctx *rc, struct spill *sp, uint64_t total)
{
	if (!sp->stream)
		return;
	if (sp->cut && !sp->failed) {
		char mark[200];
		int n = snprintf(mark, sizeof(mark),
				 "\n[sandbox-mcp: the saved output stops here, after %llu of %llu bytes "
				 "(SANDBOX_OUTPUT_SAVE_MB=%llu)]\n",
				 (unsigned long long)sp->written, (unsigned long long)total,
				 (unsigned long long)rc->ctx->svc->cfg->output_save_mb);
		if (engine_stream_write(sp->stream, mark, (size_t)n) < 0)
			sp->failed = true;
	}
	engine_stream_close_write(sp->stream);
	/* wait for cat to finish writing: the stream ends when it exits */
	char tmp[512];
	int fd = engine_stream_fd(sp->stream);
	for (int i = 0; i < 1000; i++) {
		ssize_t n = read(fd, tmp, sizeof(tmp));
		if (n <= 0)
			break;
	}
	engine_stream_destroy(sp->stream);
	sp->stream = NULL;
	int code = -1;
	struct err err;
	if (exec_wait_exit(session_engine(rc->s), sp->exec_id, 10000, &code, &err) < 0 || code != 0) {
		log_warnf("saving the full output to %s failed (exit %d)", sp->path, code);
		sp->failed = true;
	}
}

static int on_data(void *arg, int stream, const char *p, size_t n)
{
	struct run_ctx *rc = arg;
	struct capture *c = stream == 1 ? &rc->res->out : &rc->res->err;
	struct spill *sp = &rc->spill[stream];

	if (!sp->started && c->total + n > c->cap)
		spill_start(rc, stream);
	spill_write(rc, sp, p, n);

	tool_progress_output(rc->ctx, p, n);
	return 0;
}

static void on_tick(void *arg)
{
	struct run_ctx *rc = arg;

	tool_progress_tick(rc->ctx);
}

/* Checks command / argv (exactly one) and fills argv (RUN_ARGV_MAX + 1 slots). 0 or -errno with e. */
static int check_command(const struct config *cfg, json_t *args, const char **argv, struct err *e)
{
	json_t *jcommand = json_object_get(args, "command");
	json_t *jargv = json_object_get(args, "argv");
	size_t total = 0, i;
	json_t *v;

	argv[0] = NULL;
	if (!jcommand == !jargv)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "pass either command (a shell command line) or argv (a list, run without a shell), "
			       "not %s",
			       jcommand ? "both" : "neither");
	if (jcommand)
		total = json_string_length(jcommand);
	if (json_array_size(jargv) > RUN_ARGV_MAX)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -E2BIG, "argv has %zu elements; at most %d",
			       json_array_size(jargv), RUN_ARGV_MAX);
	json_array_foreach (jargv, i, v) {
		if (strlen(json_string_value(v)) != json_string_length(v))
			return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "argv[%zu] contains a NUL character", i);
		total += json_string_length(v) + 1;
		argv[i] = json_string_value(v);
	}
	argv[json_array_size(jargv)] = NULL;
	if (jargv && (!argv[0] || !argv[0][0]))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "argv[0], the program to run, is %s: pass e.g. [\"ls\", \"-la\"]",
			       argv[0] ? "empty" : "missing");
	if (total > cfg->max_code_bytes)
		return err_set(e, ERRCODE_TOO_LARGE, -E2BIG,
			       "%s is %zu bytes, over the %llu-byte limit (SANDBOX_MAX_CODE_BYTES): write a script "
			       "with file_write and run that",
			       jcommand ? "command" : "argv", total, (unsigned long long)cfg->max_code_bytes);
	return 0;
}

/* Frees the env strings parse_args made. */
static void run_args_finish(struct run_args *a)
{
	for (size_t i = 0; i < a->nenv; i++)
		free(a->envbuf[i]);
	a->nenv = 0;
}

/* Checks run_command's arguments into a: 0, or -errno with e and nothing left to free. */
static int parse_args(const struct config *cfg, json_t *args, struct run_args *a, struct err *e)
{
	const char *workdir = json_string_value(json_object_get(args, "workdir"));
	json_int_t timeout_s = json_integer_value(json_object_get(args, "timeout_s"));
	const char *key;
	json_t *v;
	int r;

	a->nenv = 0;
	a->command = json_string_value(json_object_get(args, "command"));
	a->jstdin = json_object_get(args, "stdin");
	a->timeout_ms = (int)((timeout_s > 0 ? (uint64_t)timeout_s : cfg->timeout_s) * 1000);
	if ((r = check_command(cfg, args, a->argv, e)) < 0)
		return r;
	if (a->jstdin && json_string_length(a->jstdin) > RUN_STDIN_MAX)
		return err_set(e, ERRCODE_TOO_LARGE, -E2BIG,
			       "stdin is over %u bytes: write it to a file and redirect it", RUN_STDIN_MAX);
	r = path_resolve(cfg->workspace, workdir ? workdir : ".", a->wd, sizeof(a->wd));
	if (r < 0 || !path_within(cfg->workspace, a->wd))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "workdir '%.200s' must be inside the workspace %s (relative paths start there)",
			       workdir ? workdir : "", cfg->workspace);
	json_object_foreach (json_object_get(args, "env"), key, v) {
		if (a->nenv == RUN_ENV_MAX) {
			run_args_finish(a);
			return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "at most %d env variables", RUN_ENV_MAX);
		}
		if (!tool_env_name_valid(key) || !json_is_string(v)) {
			run_args_finish(a);
			return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "env '%.60s': names are letters, digits and '_' (not first), values strings",
				       key);
		}
		a->envbuf[a->nenv] = xasprintf("%s=%s", key, json_string_value(v));
		a->env[a->nenv] = a->envbuf[a->nenv];
		a->nenv++;
	}
	a->env[a->nenv] = NULL;
	return 0;
}

/*
 * Runs a in rc->s, through the session's agent or an exec, output past the
 * cap saved as it flows (rc->spill). 0 when the command ran, whatever its
 * exit (*rc->res says), or -errno with e saying what to do next.
 */
static int run(struct run_ctx *rc, const struct run_args *a, struct exec_spec *spec, struct err *e)
{
	struct tool_ctx *ctx = rc->ctx;
	struct session *s = rc->s;
	int r;

	*spec = (struct exec_spec){
		.shell_command = a->command,
		.argv = a->command ? NULL : a->argv,
		.env = a->env,
		.workdir = a->wd,
		.user = s->user,
		.guard = session_guard(s),
		.stdin_data = json_string_value(a->jstdin),
		.stdin_len = a->jstdin ? json_string_length(a->jstdin) : 0,
		.attach_stdin = a->jstdin != NULL,
		.timeout_ms = a->timeout_ms,
		.cap = ctx->svc->cfg->output_bytes,
		.on_data = on_data,
		.on_tick = on_tick,
		.arg = rc,
	};
	r = session_run(ctx->call, s, spec, rc->res, e);
	spill_finish(rc, &rc->spill[1], rc->res->out.total);
	spill_finish(rc, &rc->spill[2], rc->res->err.total);
	if (r < 0 && e->code == ERRCODE_SHELL_NOT_FOUND)
		return err_set(e, ERRCODE_SHELL_NOT_FOUND, r,
			       "image %.200s has no /bin/sh, so a command string cannot run in it: pass argv instead "
			       "(a list such as [\"ls\", \"-la\"], run without a shell)",
			       s->image);
	return r < 0 ? tool_session_gone(ctx, s, r, e) : r;
}

/*
 * A SIGKILL exit is the OOM killer's, unless the whole container stopped
 * (killed from outside): the engine notices that a moment after the exec's
 * stream ended, so look for up to a second.
 */
static bool container_stopped(struct tool_ctx *ctx, struct session *s)
{
	for (int i = 0; i < 10; i++) {
		json_t *ins = NULL;
		struct err ie;
		if (i > 0)
			poll(NULL, 0, 100);
		int ir = engine_container_inspect(session_engine(s), NULL, s->container, &ins, &ie);
		bool gone = (ir < 0 && ie.code == ERRCODE_SESSION_NOT_FOUND) ||
			    (ir == 0 && !json_is_true(json_object_get(json_object_get(ins, "State"), "Running")));
		json_decref(ins);
		if (gone)
			return true;
		if (ir < 0)
			return false;
	}
	return false;
}

/*
 * The streams as text, and what they say happened, acted on. The pids
 * limit is seen two ways. A command that hit it (a fork bomb) may end at
 * once while its children go on forking: the shell says so on stderr, and
 * the group is killed now. A container already full cannot start our
 * wrapper at all (no pid line, the runtime's error as output): only a
 * restart frees it.
 */
static void observe(struct run_ctx *rc, const struct exec_spec *spec, struct run_outcome *o)
{
	struct exec_result *xr = rc->res;
	struct engine *eng = session_engine(rc->s);
	struct err e;

	capture_render(&xr->out, &o->out);
	capture_render(&xr->err, &o->err);
	o->fork_failed = !xr->timed_out && xr->pid > 1 && o->err.data &&
			 (strstr(o->err.data, "fork: retry: Resource temporarily unavailable") ||
			  strstr(o->err.data, "fork: Resource temporarily unavailable") ||
			  strstr(o->err.data, "Cannot fork"));
	o->no_start = xr->pid == 0 && xr->exit_code != 0 && !xr->cancelled &&
		      ((o->out.data && strstr(o->out.data, "OCI runtime exec failed")) ||
		       (o->err.data && strstr(o->err.data, "OCI runtime exec failed")));
	if (o->fork_failed)
		exec_kill_group(eng, rc->s->container, spec, xr->pid, xr);
	else if (o->no_start && engine_container_restart(eng, NULL, rc->s->container, &e) == 0)
		xr->restarted = true;
	o->truncated = capture_truncated(&xr->out) || capture_truncated(&xr->err);
	o->container_gone = xr->exit_code == 137 && !xr->timed_out && !xr->restarted &&
			    container_stopped(rc->ctx, rc->s);
}

/*
 * Whether a command that ran failed, and why: ERRCODE_NONE when it ran to
 * its own exit (whatever the code), else the code from the enum, with e's
 * message telling the model what to do next. The first cause that applies
 * wins: a restart or a kill explains a timeout or an exit 137.
 */
static enum errcode classify(const struct run_ctx *rc, const struct exec_spec *spec, const struct run_outcome *o,
			     struct err *e)
{
	const struct exec_result *xr = rc->res;
	const struct session *s = rc->s;
	struct err lost;

	err_clear(e);
	/* an agent lost with its engine (several engines: one may go away) is the engine's failure */
	if (xr->agent_lost && engine_reachable(session_engine(s), 2000, &lost) < 0) {
		err_set(e, ERRCODE_DOCKER_UNAVAILABLE, -EIO,
			"the Docker engine of session %s went away while the command ran, so its exit status is "
			"unknown; the output so far is below. %.360s",
			s->id, lost.msg);
	} else if (o->fork_failed || (o->no_start && xr->restarted)) {
		err_set(e, ERRCODE_TOO_MANY_PROCESSES, -EIO,
			"the command hit the session's limit of %llu processes (a fork bomb or runaway background "
			"jobs)%s. Start fewer processes, or session_create a new session.",
			(unsigned long long)s->pids,
			xr->restarted ? "; the session's container was restarted to free it: running processes and "
					"/tmp were lost, workspace files were kept"
				      : "; its processes were killed and the session is usable");
	} else if (o->no_start) {
		err_set(e, ERRCODE_ENGINE_ERROR, -EIO,
			"the session could not start the command (does image %s have /bin/sh?): %.200s", s->image,
			o->out.data ? o->out.data : "");
	} else if (xr->agent_lost) {
		err_set(e, ERRCODE_ENGINE_ERROR, -EIO,
			"the session's command agent (sandbox-mcp-agent) stopped while the command ran (killed from "
			"outside?), so its exit status is unknown; its processes were killed%s and the output so far "
			"is below. The session is usable: run the command again (the next call starts a new agent).",
			xr->restarted
				? " (the session's container had to be restarted: running processes and /tmp were "
				  "lost, workspace files were kept)"
				: "");
	} else if (xr->timed_out) {
		err_set(e, ERRCODE_TIMEOUT, -EIO,
			"the command ran past its %d s limit and was killed with its child processes%s; the output "
			"so far is below. Pass a larger timeout_s for long jobs, or run them in the background "
			"(nohup ... &) and poll.",
			spec->timeout_ms / 1000,
			xr->restarted ? " (the session's container had to be restarted: running processes and /tmp "
					"were lost, workspace files were kept)"
				      : "; the session is still usable");
	} else if (xr->restarted) {
		err_set(e, ERRCODE_TIMEOUT, -EIO, "the session's container was restarted to stop the command");
	} else if (o->container_gone) {
		err_set(e, ERRCODE_SESSION_NOT_FOUND, -EIO,
			"the container of session %s stopped while the command ran (killed, stopped or removed outside "
			"sandbox-mcp); the session was dropped and the output so far is below: run again without "
			"session_id, or session_create a new one",
			s->id);
	} else if (xr->cancelled) {
		/* only a server-side cancel is answered at all: a rollback of the session (call_preempt) */
		err_set(e, ERRCODE_CANCELLED, -ECANCELED,
			"the command was cancelled and killed with its child processes; the output so far is below");
	} else if (xr->exit_code == 137) {
		err_set(e, ERRCODE_OUT_OF_MEMORY, -EIO,
			"the command was killed (SIGKILL, exit 137), almost certainly by the kernel for using more "
			"than the session's %llu MB memory limit. Use less memory, or session_create with a larger "
			"memory_mb.",
			(unsigned long long)s->memory_mb);
	} else if (xr->exit_code < 0 && !xr->cancelled) {
		err_set(e, ERRCODE_ENGINE_ERROR, -EIO,
			"the command's output ended but the Docker engine did not report its exit code (the command "
			"may still be running, or the engine failed); the output so far is below. Run it again if the "
			"exit status matters; if this keeps happening, check the engine with `docker info`.");
	}
	return e->code;
}

/* {stdout, stderr: path} of the streams saved in full (new reference); *ret_cut when one was cut short. */
static json_t *saved_files(const struct run_ctx *rc, bool *ret_cut)
{
	json_t *files = json_object();
	bool cut = false;

	for (int k = 1; k <= 2; k++) {
		const struct spill *sp = &rc->spill[k];
		if (sp->started && !sp->failed) {
			json_object_set_new(files, k == 1 ? "stdout" : "stderr", json_string(sp->path));
			cut = cut || sp->cut;
		}
	}
	*ret_cut = cut;
	return files;
}

/* The result of a command that ran: structuredContent, e's error when classify found one, the texts. */
static void render(struct tool_result *res, const struct run_ctx *rc, const struct run_outcome *o, const struct err *e)
{
	const struct exec_result *xr = rc->res;
	bool files_cut;

	/* the streams go in last (see below): Claude Code passes on only this object */
	json_t *st = json_pack("{s:s, s:i, s:I, s:b, s:b, s:I, s:I, s:b}", "session_id", rc->s->id, "exit_code",
			       xr->exit_code, "duration_ms", (json_int_t)xr->duration_ms, "timed_out", xr->timed_out,
			       "truncated", o->truncated, "stdout_bytes", (json_int_t)xr->out.total, "stderr_bytes",
			       (json_int_t)xr->err.total, "restarted", xr->restarted);
	json_t *files = saved_files(rc, &files_cut);
	if (xr->usage) {
		json_object_set_new(st, "cpu_ms", json_integer((json_int_t)xr->cpu_ms));
		json_object_set_new(st, "max_rss_kb", json_integer((json_int_t)xr->max_rss_kb));
	}
	if (json_object_size(files)) {
		json_object_set(st, "output_files", files);
		json_object_set_new(st, "output_files_cut", json_boolean(files_cut));
	}
	if (e->code != ERRCODE_NONE)
		json_object_set_new(st, "error", tool_error(res, e));
	/*
	 * Claude Code and Codex give the model only structuredContent, as JSON.
	 * Claude Code previews the first 2 KB of a large one; Codex keeps the
	 * head and tail of one over ~12 KB and drops the middle. So the facts
	 * above come first, and stderr, whose end says what went wrong, last.
	 */
	json_object_set_new(st, "stdout", json_string_lossy(o->out.data ? o->out.data : "", o->out.len));
	json_object_set_new(st, "stderr", json_string_lossy(o->err.data ? o->err.data : "", o->err.len));
	add_texts(res, rc, &o->out, &o->err, files, o->truncated);
	json_decref(files);
	tool_structured(res, st);
}

/* Parse, run, classify, render; one exit releases what the steps took. */
static int run_command(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct run_args a;
	struct run_outcome o = { 0 };
	struct exec_spec spec;
	struct exec_result xr;
	struct session *s;
	struct err e;

	err_clear(&e);
	if (parse_args(ctx->svc->cfg, args, &a, &e) < 0)
		return tool_fail(res, &e);
	if (json_is_true(json_object_get(args, "background")) && !(ctx->svc->cfg->tool_groups & TOOL_GROUP_SERVICES)) {
		run_args_finish(&a);
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EPERM,
			"background jobs are off on this server (the services tool group is not in SANDBOX_TOOLS): run "
			"the command in the foreground");
		return tool_fail(res, &e);
	}
	if (json_is_true(json_object_get(args, "background")) &&
	    (!a.command || a.jstdin || json_object_size(json_object_get(args, "env")) ||
	     json_object_get(args, "timeout_s"))) {
		run_args_finish(&a);
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"background takes a shell command (and workdir) alone: no argv, stdin, env or timeout_s (set "
			"variables in the command, FOO=1 exec ./server; end a job with job {action: \"signal\"})");
		return tool_fail(res, &e);
	}
	if (tool_session(ctx, args, &s, res) < 0) {
		run_args_finish(&a);
		return 0;
	}
	if (json_is_true(json_object_get(args, "background"))) {
		job_start(ctx, s, a.command, a.wd, res);
		run_args_finish(&a);
		session_put(ctx->svc->sessions, s);
		return 0;
	}
	struct run_ctx rc = { .ctx = ctx, .s = s, .res = &xr };
	buf_init(&o.out, SIZE_MAX);
	buf_init(&o.err, SIZE_MAX);
	if (run(&rc, &a, &spec, &e) < 0) {
		tool_fail(res, &e);
		goto out;
	}
	observe(&rc, &spec, &o);
	classify(&rc, &spec, &o, &e);
	render(res, &rc, &o, &e);
	if (o.container_gone)
		session_forget(ctx->svc->sessions, s);
out:
	buf_finish(&o.out);
	buf_finish(&o.err);
	exec_result_finish(&xr);
	run_args_finish(&a);
	session_put(ctx->svc->sessions, s);
	return 0;
}

const struct tool_entry tool_run_command_entry = {
	.name = "run_command",
	.title = "Run a shell command",
	.description =
		"Run a shell command (/bin/sh -c), or a program with its arguments (argv, no shell), in the sandbox "
		"as a non-root user, in /workspace by default. Returns stdout, stderr, the exit code and, when "
		"known, the CPU time and peak memory used. Output past the cap keeps its head and tail and the full "
		"text is saved to a file named in the result. A command that passes timeout_s is killed with all "
		"its child processes; the session stays usable. No network unless the session was created with one.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"command\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Shell command (run with /bin/sh "
		"-c); give this or argv\"},"
		"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":1024,"
		"\"description\":\"The program and its arguments, run without a shell (also on images without "
		"/bin/sh); give this or command; at most 1024 items\"},"
		"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Session id or name "
		"(default: the default session; at most 128 characters)\"},"
		"\"workdir\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"Working directory inside "
		"the workspace (relative to it, or absolute under it; at most 4096 characters)\"},"
		"\"env\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":{\"type\":\"string\"},"
		"\"description\":\"Extra environment variables\"},"
		"\"stdin\":{\"type\":\"string\",\"description\":\"Text fed to the command's standard input\"},"
		"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":86400,\"description\":\"Kill the "
		"command after this many seconds (default 60; from 1 to 86400)\"},"
		"\"background\":{\"type\":\"boolean\",\"description\":\"Start command as a background job and "
		"return at once with its job_id (a server, a watcher); the job tool follows it\"}}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"exit_code\":{\"type\":\"integer\"},\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
		"\"duration_ms\":{\"type\":\"integer\"},\"timed_out\":{\"type\":\"boolean\"},"
		"\"truncated\":{\"type\":\"boolean\"},\"stdout_bytes\":{\"type\":\"integer\"},"
		"\"stderr_bytes\":{\"type\":\"integer\"},\"restarted\":{\"type\":\"boolean\"},"
		"\"cpu_ms\":{\"type\":\"integer\"},\"max_rss_kb\":{\"type\":\"integer\"},"
		"\"output_files_cut\":{\"type\":\"boolean\"},\"job_id\":{\"type\":\"string\"},"
		"\"pid\":{\"type\":\"integer\"},\"state\":{\"type\":\"string\"},"
		"\"output_files\":{\"type\":\"object\",\"properties\":{\"stdout\":{\"type\":\"string\"},"
		"\"stderr\":{\"type\":\"string\"}}}}}",
	.group = TOOL_GROUP_RUN,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = run_command,
	.instructions = "Tools create a default session on first use; pass session_id only to use another one "
			"(session_create makes it, e.g. with network or another image). run_command runs shell "
			"commands; a command past timeout_s is killed with its child processes and the session stays "
			"usable.",
};
