/*
 * exec.c - exec create/start/inspect with a poll loop over the hijacked
 * stream (streamio.h): stdin out, demultiplexed output in, a deadline, and
 * cancellation (the killing happens here, on the worker).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "engine/stream.h"
#include "sandbox/exec.h"
#include "sandbox/streamio.h"

/* The wrapper: report our pid on stderr, then become the real command. */
static const char exec_wrapper[] = "echo $$ >&2; exec \"$@\"";
/* The same for a shell command, which the wrapper shell runs itself. */
static const char exec_wrapper_sh[] = "echo $$ >&2; eval \"$1\"";
/* What the kill exec prints once its kill ran. */
#define EXEC_KILL_MARKER "sandbox-mcp-killed"

/* One exec_run: the demuxed output, the stdin being fed, and the kill's progress. */
struct run_state {
	const struct exec_spec *spec;
	struct exec_result *res;
	struct exec_pidline pid;
	struct engine_stream *s;
	struct stream_demux demux;
	struct buf pending; /* read from the stream, not yet demuxed */
	/* stdin: spec's bytes, or chunks pulled from on_stdin into `pulled` */
	const char *in_p;
	size_t in_len, in_off;
	bool in_end;
	char *pulled;
	bool stdin_open;
	int64_t deadline;
	bool killing;
	int64_t pid_wait_until; /* set when a kill waits for the pid (see run_kill) */
};

static int deliver(struct run_state *st, int stream, const char *p, size_t n);
static int run_demux(struct run_state *st, struct err *err);
static void run_kill(struct engine *e, const char *container_id, struct run_state *st);
static void run_stdin(struct run_state *st, struct streamio *io);
static int drain_simple(struct engine_stream *s, const char *marker, int timeout_ms);
static int create_wrapped(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
			  char exec_id[ENGINE_ID_LEN + 1], struct err *err);

static int deliver(struct run_state *st, int stream, const char *p, size_t n)
{
	if (stream == STREAM_STDERR && !st->pid.done) {
		size_t k = exec_pidline_feed(&st->pid, p, n);
		p += k;
		n -= k;
		if (n == 0)
			return 0;
	}
	if (stream == STREAM_SYSTEMERR)
		stream = STREAM_STDERR;
	if (stream != STREAM_STDOUT && stream != STREAM_STDERR)
		return 0;
	/* on_data first: it may want the capture as it was before this chunk */
	int stop = st->spec->on_data ? st->spec->on_data(st->spec->arg, stream, p, n) : 0;
	capture_add(stream == STREAM_STDOUT ? &st->res->out : &st->res->err, p, n);
	if (stop) {
		st->res->stopped = true;
		return 1;
	}
	return 0;
}

/*
 * Reads a small exec's stream to EOF, discarding it, or until marker appears
 * in it (the engine may hold an exec's stream open after it exited, until the
 * output of another exec in the container is drained). 1 for the marker, 0
 * for EOF, or -ETIMEDOUT / -errno.
 */
static int drain_simple(struct engine_stream *s, const char *marker, int timeout_ms)
{
	char tmp[4096 + 64];
	size_t keep = 0, mlen = marker ? strlen(marker) : 0;
	int fd = engine_stream_fd(s);
	int64_t deadline = now_ms() + timeout_ms;

	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -ETIMEDOUT;
		ssize_t n = read(fd, tmp + keep, sizeof(tmp) - 64);
		if (n == 0)
			return 0;
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -errno;
		if (n <= 0 || !mlen)
			continue;
		size_t have = keep + (size_t)n;
		if (memmem(tmp, have, marker, mlen))
			return 1;
		/* the marker may straddle two reads */
		keep = have < mlen - 1 ? have : mlen - 1;
		memmove(tmp, tmp + have - keep, keep);
	}
}

int exec_kill_group(struct engine *e, const char *container_id, const struct exec_spec *spec, long pid,
		    struct exec_result *res)
{
	char exec_id[ENGINE_ID_LEN + 1], pidarg[24];
	struct engine_stream *s = NULL;
	struct err err;
	int r = -ESRCH;

	if (pid > 1) {
		snprintf(pidarg, sizeof(pidarg), "%ld", pid);
		json_t *cfg = json_pack("{s:b, s:b, s:b, s:b, s:[s, s, s, s, s]}", "AttachStdin", 0, "AttachStdout", 1,
					"AttachStderr", 1, "Tty", 0, "Cmd", "/bin/sh", "-c",
					"kill -9 -$1 2>/dev/null || kill -9 $1 2>/dev/null; echo " EXEC_KILL_MARKER,
					"sandbox-mcp-kill", pidarg);
		if (spec->user)
			json_object_set_new(cfg, "User", json_string(spec->user));
		r = engine_exec_create(e, NULL, container_id, cfg, exec_id, &err);
		json_decref(cfg);
		if (r == 0)
			r = engine_exec_start(e, NULL, exec_id, &s, &err);
		bool marked = false;
		if (r == 0) {
			r = drain_simple(s, EXEC_KILL_MARKER, EXEC_KILL_GRACE_MS);
			marked = r == 1;
			r = r < 0 ? r : 0;
			engine_stream_destroy(s);
		}
		if (r == 0 && !marked) {
			int code = -1;
			r = exec_wait_exit(e, exec_id, EXEC_KILL_GRACE_MS, &code, &err);
			if (r == 0 && code != 0)
				r = -EIO;
		}
	}
	if (r == 0)
		return 0;
	/* could not kill from inside (no pid yet, or no room for one more process) */
	log_warnf("killing pid %ld in %.12s failed (%s); restarting the container", pid, container_id, strerror(-r));
	r = engine_container_restart(e, NULL, container_id, &err);
	if (r == 0)
		res->restarted = true;
	else
		log_errorf("restarting %.12s failed: %s", container_id, err.msg);
	return r;
}

/* Creates the exec of spec behind the pid-reporting wrapper. 0 or -errno with err. */
static int create_wrapped(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
			  char exec_id[ENGINE_ID_LEN + 1], struct err *err)
{
	json_t *cmd = spec->guard ? json_pack("[s, s]", spec->guard, "--guard") : json_array();
	json_t *sh = json_pack("[s, s, s, s]", "/bin/sh", "-c", spec->shell_command ? exec_wrapper_sh : exec_wrapper,
			       "sandbox-mcp");
	json_array_extend(cmd, sh);
	json_decref(sh);
	if (spec->shell_command)
		json_array_append_new(cmd, json_string_lossy(spec->shell_command, strlen(spec->shell_command)));
	for (const char *const *a = spec->argv; a && *a; a++)
		json_array_append_new(cmd, json_string_lossy(*a, strlen(*a)));
	json_t *cfg = json_pack("{s:b, s:b, s:b, s:b, s:b, s:o}", "AttachStdin", spec->attach_stdin, "AttachStdout", 1,
				"AttachStderr", 1, "Tty", 0, "Privileged", 0, "Cmd", cmd);
	if (spec->env) {
		json_t *env = json_array();
		for (const char *const *v = spec->env; *v; v++)
			json_array_append_new(env, json_string_lossy(*v, strlen(*v)));
		json_object_set_new(cfg, "Env", env);
	}
	if (spec->workdir)
		json_object_set_new(cfg, "WorkingDir", json_string(spec->workdir));
	if (spec->user)
		json_object_set_new(cfg, "User", json_string(spec->user));
	int r = engine_exec_create(e, call, container_id, cfg, exec_id, err);
	json_decref(cfg);
	return r;
}

int exec_start(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
	       char ret_exec_id[ENGINE_ID_LEN + 1], struct engine_stream **ret, struct err *err)
{
	char exec_id[ENGINE_ID_LEN + 1];
	int r;

	if ((r = create_wrapped(e, call, container_id, spec, exec_id, err)) < 0)
		return r;
	if ((r = engine_exec_start(e, call, exec_id, ret, err)) < 0)
		return r;
	memcpy(ret_exec_id, exec_id, sizeof(exec_id));
	return 0;
}

/* Hands what is buffered to deliver; -EPROTO (with err) when it is not the multiplexed format. */
static int run_demux(struct run_state *st, struct err *err)
{
	size_t off = 0;
	/* once on_data stopped the exec, what is left is demuxed and dropped */
	while (off < st->pending.len) {
		size_t used = 0;
		int stream;
		struct slice data;
		int dr = stream_demux_feed(&st->demux, st->pending.data + off, st->pending.len - off, &used, &stream,
					   &data);
		if (dr == -1)
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				       "the Docker engine sent a malformed output stream (not its multiplexed "
				       "format), so the command's output and exit code are lost and it may still "
				       "be running; check that DOCKER_HOST is a Docker engine (`docker info`), "
				       "then try again");
		off += used;
		if (dr == 1 && !st->res->stopped)
			(void)deliver(st, stream, data.p, data.n);
		if (dr == -2)
			break;
	}
	buf_consume(&st->pending, off);
	return 0;
}

/* Kills the command's group when it was cancelled, stopped or ran out of time. */
static void run_kill(struct engine *e, const char *container_id, struct run_state *st)
{
	struct exec_result *res = st->res;
	bool want_kill = !st->killing && (res->cancelled || res->stopped || now_ms() >= st->deadline);
	/*
	 * A call cancelled at once may get here before the wrapper reported the
	 * command's pid; without it the kill falls back to restarting the whole
	 * container.  The pid is the wrapper's first stderr line, so keep reading
	 * for a bounded while before killing.
	 */
	if (want_kill && !st->pid.done && !res->stopped) {
		if (st->pid_wait_until == 0)
			st->pid_wait_until = now_ms() + EXEC_PID_WAIT_MS;
		if (now_ms() < st->pid_wait_until)
			want_kill = false;
	}
	if (!want_kill)
		return;
	if (!res->cancelled && !res->stopped)
		res->timed_out = true;
	st->killing = true;
	exec_kill_group(e, container_id, st->spec, st->pid.pid, res);
	st->deadline = now_ms() + EXEC_KILL_GRACE_MS;
}

/* Sends the next piece of stdin the stream takes; closes its write side at the end. */
static void run_stdin(struct run_state *st, struct streamio *io)
{
	const struct exec_spec *spec = st->spec;
	if (!st->in_end && st->in_off == st->in_len) {
		ssize_t k = spec->on_stdin(spec->arg, st->pulled, EXEC_STDIN_CHUNK);
		if (k < 0)
			st->res->stopped = true;
		st->in_end = k <= 0;
		st->in_p = st->pulled;
		st->in_len = k > 0 ? (size_t)k : 0;
		st->in_off = 0;
	}
	ssize_t w = st->in_off < st->in_len ? streamio_send(io, st->in_p + st->in_off, st->in_len - st->in_off) : 0;
	if (w > 0)
		st->in_off += (size_t)w;
	if (w < 0 || (st->in_end && st->in_off == st->in_len)) {
		engine_stream_close_write(st->s);
		st->stdin_open = false;
	}
}

int exec_run(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
	     struct exec_result *res, struct err *err)
{
	char exec_id[ENGINE_ID_LEN + 1];
	struct run_state st = { .spec = spec, .res = res };
	struct streamio io;
	bool eof = false;
	int r;

	exec_result_init(res, spec->cap);
	int64_t t0 = now_ms();

	if ((r = create_wrapped(e, call, container_id, spec, exec_id, err)) < 0)
		return r;
	if ((r = engine_exec_start(e, call, exec_id, &st.s, err)) < 0)
		return r;

	if ((r = streamio_open(&io, engine_stream_fd(st.s), call, err)) < 0) {
		engine_stream_destroy(st.s);
		return r;
	}
	if (r == 1)
		res->cancelled = true;

	stream_demux_init(&st.demux);
	/* EXEC_READ_CHUNK holds what came with the 101 head (one read): this cannot fail */
	buf_init(&st.pending, EXEC_READ_CHUNK + STREAM_HEADER_LEN);
	_Static_assert(EXEC_READ_CHUNK >= ENGINE_STREAM_AHEAD_MAX, "the exec buffer takes one HTTP read");
	if (engine_stream_take_buffered(st.s, &st.pending) < 0)
		abort();
	st.in_p = spec->stdin_data;
	st.in_len = spec->stdin_len;
	st.in_end = !spec->on_stdin;
	st.pulled = spec->on_stdin ? xmalloc(EXEC_STDIN_CHUNK) : NULL;
	st.stdin_open = spec->attach_stdin;
	if (st.stdin_open && st.in_end && spec->stdin_len == 0) {
		engine_stream_close_write(st.s);
		st.stdin_open = false;
	}
	st.deadline = spec->timeout_ms > 0 ? t0 + spec->timeout_ms : INT64_MAX;

	while (!eof) {
		if ((r = run_demux(&st, err)) < 0)
			goto out;
		if (spec->on_tick)
			spec->on_tick(spec->arg);
		run_kill(e, container_id, &st);
		if (st.killing && now_ms() >= st.deadline)
			break; /* the stream did not end after the kill: give up on it */

		int64_t wake_at = st.deadline;
		if (!st.killing && st.pid_wait_until && st.pid_wait_until < wake_at)
			wake_at = st.pid_wait_until;
		int seen = streamio_wait(&io, st.stdin_open, wake_at);
		if (seen < 0) {
			r = err_set(err, ERRCODE_INTERNAL, seen, "poll: %s", strerror(-seen));
			goto out;
		}
		if (seen & STREAMIO_CANCEL)
			res->cancelled = true;
		if (st.stdin_open && (seen & STREAMIO_OUT))
			run_stdin(&st, &io);
		if (seen & STREAMIO_IN) {
			ssize_t n = streamio_read_into(&io, &st.pending, EXEC_READ_CHUNK);
			if (n == -ENOBUFS) {
				/* the demuxer holds at most a header: cannot happen */
				r = err_set(err, ERRCODE_INTERNAL, -EMSGSIZE, "stream buffer");
				goto out;
			}
			eof = n == 0;
		}
	}
	r = 0;
	streamio_disarm(&io);

	struct err ierr;
	int code = -1;
	if (exec_wait_exit(e, exec_id, 2000, &code, &ierr) == 0)
		res->exit_code = code;
	else
		log_warnf("exec %.12s: no exit code: %s", exec_id, ierr.msg);

out:
	streamio_close(&io);
	free(st.pulled);
	buf_finish(&st.pending);
	engine_stream_destroy(st.s);
	res->pid = st.pid.pid;
	res->duration_ms = now_ms() - t0;
	return r;
}

void exec_result_init(struct exec_result *res, size_t cap)
{
	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	capture_init(&res->out, cap);
	capture_init(&res->err, cap);
}

size_t exec_pidline_feed(struct exec_pidline *pl, const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && !pl->done) {
		char c = p[i++];
		if (c == '\n') {
			uint64_t v;
			pl->line[pl->len] = '\0';
			if (parse_u64(pl->line, 2, 1u << 30, &v) == 0)
				pl->pid = (long)v;
			pl->done = true;
		} else if (pl->len < EXEC_PID_LINE_MAX) {
			pl->line[pl->len++] = c;
		} else {
			pl->done = true; /* not our line: keep what follows */
		}
	}
	return i;
}

void exec_result_finish(struct exec_result *res)
{
	capture_finish(&res->out);
	capture_finish(&res->err);
}

int exec_wait_exit(struct engine *e, const char *exec_id, int timeout_ms, int *ret_code, struct err *err)
{
	int64_t deadline = now_ms() + timeout_ms;

	for (int i = 0;; i++) {
		bool running = false;
		int code = -1;
		int r = engine_exec_inspect(e, NULL, exec_id, &running, &code, err);
		if (r < 0)
			return r;
		if (!running) {
			*ret_code = code;
			return 0;
		}
		if (now_ms() >= deadline)
			return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the exec did not report its exit code");
		poll(NULL, 0, i < 10 ? 1 : 10);
	}
}

int exec_sh_argv(const char **argv, size_t cap, const char *script, const char *name, const char *const *args)
{
	size_t n = 0, want = 5;

	for (const char *const *a = args; a && *a; a++)
		want++;
	if (want > cap)
		return -E2BIG;
	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n++] = name;
	for (; args && *args; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	return 0;
}
