/*
 * xfer.c - pushing and pulling tar streams through an exec'd tar.
 *
 * Push: exec_run pulls stdin through push_stdin, which drains the writer's
 * buffer and, when it is empty, asks the producer for the next piece (one
 * header or one data chunk), so at most a chunk and a header are in memory.
 *
 * Pull: the exec is started with exec_start and its stream is read by
 * tar_read itself, through pull_source: the source demultiplexes the
 * engine's frames in place and hands stdout over as tar_read asks for it,
 * so there is one thread, one buffer and one copy.  (A reader thread fed
 * through a socketpair cost a context switch per frame, several times the
 * CPU of the transfer itself on a paravirtualised kernel.)  Back-pressure is
 * end to end: while tar_read works, nobody reads the socket, and the
 * container's tar waits.  When tar_read stops early (a cap, a malformed
 * stream, a sink that stopped), or on cancellation or the deadline, the
 * process group is killed (exec_kill_group) and the rest of the stream is
 * drained and dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "engine/stream.h"
#include "sandbox/exec.h"
#include "sandbox/streamio.h"
#include "sandbox/xfer.h"

/* Bytes read from the engine's stream at a time. */
#define XFER_READ_CHUNK (256 * 1024)
/* Output kept per stream by exec_run (stdout is consumed by on_data). */
#define XFER_CAPTURE 4096

struct push_state {
	struct tar_writer *w;
	struct buf out;
	size_t off;
	xfer_produce_fn produce;
	void *arg;
	bool done;
	int r;
	struct err err;
};

struct pull_state {
	struct engine_stream *stream;
	struct streamio io;
	struct stream_demux demux;
	char *in;	 /* raw stream bytes, XFER_READ_CHUNK */
	size_t len, off; /* in[off..len) not demultiplexed yet */
	const char *out; /* stdout bytes not handed over yet (inside in) */
	size_t out_n;
	int64_t deadline;
	bool eof, cancelled, timed_out, malformed;
	struct exec_pidline pid;
	struct buf errtext;
};

static ssize_t push_stdin(void *arg, char *p, size_t n);
static void pull_stderr(struct pull_state *ps, const char *p, size_t n);
static int pull_fill(struct pull_state *ps, int64_t deadline);
static ssize_t pull_source(void *arg, void *p, size_t n);
static void pull_drain(struct pull_state *ps, int64_t deadline);
static int run(struct engine *e, struct call *call, const struct session *s, const char *script,
	       const char *const *args, struct exec_spec *spec, struct xfer_result *ret, struct err *err);

static ssize_t push_stdin(void *arg, char *p, size_t n)
{
	struct push_state *ps = arg;

	while (ps->off == ps->out.len && !ps->done) {
		buf_reset(&ps->out);
		ps->off = 0;
		int r = ps->produce(ps->arg, ps->w, &ps->err);
		if (r < 0) {
			ps->r = r;
			return -1;
		}
		ps->done = r == 1;
	}
	size_t k = ps->out.len - ps->off;
	if (k > n)
		k = n;
	if (k)
		memcpy(p, ps->out.data + ps->off, k);
	ps->off += k;
	return (ssize_t)k;
}

/* stderr: the wrapper's pid line first, then the script's messages (capped). */
static void pull_stderr(struct pull_state *ps, const char *p, size_t n)
{
	size_t k = exec_pidline_feed(&ps->pid, p, n);
	p += k;
	n -= k;
	size_t room = ps->errtext.max - ps->errtext.len;
	if (n)
		(void)buf_append(&ps->errtext, p, n < room ? n : room);
}

/* Reads more of the stream into in. 1, 0 at EOF, or -ECANCELED / -ETIMEDOUT / -errno. */
static int pull_fill(struct pull_state *ps, int64_t deadline)
{
	for (;;) {
		if (deadline - now_ms() <= 0)
			return -ETIMEDOUT;
		int seen = streamio_wait(&ps->io, false, deadline);
		if (seen < 0)
			return seen;
		if (seen & STREAMIO_CANCEL)
			return -ECANCELED;
		if (!seen)
			continue;
		ssize_t k = streamio_read(&ps->io, ps->in + ps->len, XFER_READ_CHUNK - ps->len);
		if (k > 0) {
			ps->len += (size_t)k;
			return 1;
		}
		if (k != -EAGAIN)
			return (int)k;
	}
}

/* tar_read's source: stdout of the exec, demultiplexed in place. */
static ssize_t pull_source(void *arg, void *p, size_t n)
{
	struct pull_state *ps = arg;

	for (;;) {
		if (ps->out_n) {
			size_t k = ps->out_n < n ? ps->out_n : n;
			memcpy(p, ps->out, k);
			ps->out += k;
			ps->out_n -= k;
			return (ssize_t)k;
		}
		while (ps->off < ps->len && !ps->out_n) {
			size_t used = 0;
			int stream;
			struct slice data;
			int dr = stream_demux_feed(&ps->demux, ps->in + ps->off, ps->len - ps->off, &used, &stream,
						   &data);
			if (dr == -1) {
				ps->malformed = true;
				return -EPROTO;
			}
			ps->off += used;
			if (dr == -2)
				break;
			if (stream == STREAM_STDOUT) {
				ps->out = data.p;
				ps->out_n = data.n;
			} else if (stream == STREAM_STDERR || stream == STREAM_SYSTEMERR) {
				pull_stderr(ps, data.p, data.n);
			}
		}
		if (ps->out_n)
			continue;
		/* all of in was used (the demuxer keeps a split header itself) */
		ps->off = ps->len = 0;
		if (ps->eof)
			return 0;
		int r = pull_fill(ps, ps->deadline);
		if (r == 0)
			ps->eof = true;
		if (r == -ECANCELED)
			ps->cancelled = true;
		if (r == -ETIMEDOUT)
			ps->timed_out = true;
		if (r < 0)
			return r;
	}
}

/* Reads what is left of the stream (a killed process's last output), dropping stdout. */
static void pull_drain(struct pull_state *ps, int64_t deadline)
{
	char scratch[4096];
	/* the drain's own short deadline is no timeout of the transfer: keep the verdict it had */
	bool timed_out = ps->timed_out;
	ps->out_n = 0;
	while (!ps->eof) {
		ssize_t r = pull_source(ps, scratch, sizeof(scratch));
		if (r == 0 || (r < 0 && r != -ECANCELED))
			break;
		if (now_ms() > deadline)
			break;
		ps->deadline = deadline;
	}
	ps->timed_out = timed_out;
}

void xfer_result_from_exec(const struct exec_result *xr, struct xfer_result *ret)
{
	ret->exit_code = xr->exit_code;
	ret->timed_out = xr->timed_out;
	ret->cancelled = xr->cancelled;
	ret->stopped = xr->stopped;
	capture_render_trimmed(&xr->err, ret->stderr_text, sizeof(ret->stderr_text));
}

static int run(struct engine *e, struct call *call, const struct session *s, const char *script,
	       const char *const *args, struct exec_spec *spec, struct xfer_result *ret, struct err *err)
{
	const char *argv[EXEC_SH_ARGV_MAX];
	struct exec_result xr;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if (exec_sh_argv(argv, ARRAY_SIZE(argv), script, "sandbox-mcp-files", args) < 0)
		return err_set(err, ERRCODE_INTERNAL, -E2BIG, "a transfer script got more than %d arguments",
			       EXEC_SH_ARGV_MAX - 5);
	spec->argv = argv;
	spec->user = s->user;
	spec->guard = session_guard(s);
	spec->timeout_ms = XFER_TIMEOUT_MS;
	spec->cap = XFER_CAPTURE;

	int r = exec_run(e, call, s->container, spec, &xr, err);
	if (r == 0)
		xfer_result_from_exec(&xr, ret);
	exec_result_finish(&xr);
	return r;
}

int xfer_push(struct engine *e, struct call *call, const struct session *s, const char *script, const char *const *args,
	      xfer_produce_fn produce, void *arg, struct xfer_result *ret, struct err *err)
{
	struct push_state ps = { .produce = produce, .arg = arg };
	int r;

	/* a header, a long-name header and one chunk of data at most */
	buf_init(&ps.out, 2 * TAR_CHUNK + 4 * TAR_ENTRY_OVERHEAD);
	if ((r = tar_writer_create(&ps.out, &ps.w, err)) < 0) {
		buf_finish(&ps.out);
		return r;
	}
	struct exec_spec spec = { .attach_stdin = true, .on_stdin = push_stdin, .arg = &ps };
	r = run(e, call, s, script, args, &spec, ret, err);
	if (r == 0 && ps.r < 0) {
		*err = ps.err;
		r = ps.r;
	}
	tar_writer_destroy(ps.w);
	buf_finish(&ps.out);
	return r;
}

int xfer_pull(struct engine *e, struct call *call, const struct session *s, const char *script, const char *const *args,
	      const struct tar_limits *lim, const struct tar_sink *sink, struct tar_stats *ret_stats,
	      struct xfer_result *ret, struct err *err)
{
	const char *argv[EXEC_SH_ARGV_MAX];
	char exec_id[ENGINE_ID_LEN + 1];
	struct pull_state ps = { 0 };
	struct tar_stats st = { 0 };
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if (exec_sh_argv(argv, ARRAY_SIZE(argv), script, "sandbox-mcp-files", args) < 0)
		return err_set(err, ERRCODE_INTERNAL, -E2BIG, "a transfer script got more than %d arguments",
			       EXEC_SH_ARGV_MAX - 5);
	struct exec_spec spec = { .argv = argv, .user = s->user, .guard = session_guard(s) };
	if ((r = exec_start(e, call, s->container, &spec, exec_id, &ps.stream, err)) < 0)
		return r;
	if ((r = streamio_open(&ps.io, engine_stream_fd(ps.stream), call, err)) < 0) {
		engine_stream_destroy(ps.stream);
		return r;
	}
	ps.cancelled = r == 1;
	stream_demux_init(&ps.demux);
	buf_init(&ps.errtext, XFER_STDERR_MAX - 1);
	ps.in = xmalloc(XFER_READ_CHUNK);
	ps.deadline = now_ms() + XFER_TIMEOUT_MS;
	{
		struct buf ahead;
		buf_init(&ahead, XFER_READ_CHUNK);
		/* XFER_READ_CHUNK holds what came with the 101 head (one read): this cannot fail */
		_Static_assert(XFER_READ_CHUNK >= ENGINE_STREAM_AHEAD_MAX, "the pull buffer takes one HTTP read");
		if (engine_stream_take_buffered(ps.stream, &ahead) < 0)
			abort();
		memcpy(ps.in, ahead.data ? ahead.data : "", ahead.len);
		ps.len = ahead.len;
		buf_finish(&ahead);
	}

	r = ps.cancelled ? err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled")
			 : tar_read(pull_source, &ps, lim, sink, &st, err);
	streamio_disarm(&ps.io);
	if (!ps.eof) {
		/* stopped early: end the process group, then let its output drain */
		struct exec_result kr = { 0 };
		if (ps.pid.pid > 1)
			exec_kill_group(e, s->container, &spec, ps.pid.pid, &kr);
		pull_drain(&ps, now_ms() + EXEC_KILL_GRACE_MS);
		ret->stopped = true;
	}
	if (ps.eof) {
		struct err ierr;
		int code = -1;
		if (exec_wait_exit(e, exec_id, 2000, &code, &ierr) == 0)
			ret->exit_code = code;
	}
	ret->cancelled = ps.cancelled;
	ret->timed_out = ps.timed_out;
	capture_trim_copy(ps.errtext.data ? ps.errtext.data : "", ps.errtext.len, ret->stderr_text,
			  sizeof(ret->stderr_text));

	if (r < 0 && ps.cancelled)
		r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	else if (r < 0 && ps.timed_out)
		r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the transfer took longer than %d s and was stopped",
			    XFER_TIMEOUT_MS / 1000);
	else if (r < 0 && ps.malformed)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
			    "the Docker engine sent a malformed exec stream (not its multiplexed format), so the "
			    "transfer was stopped; check that DOCKER_HOST is a Docker engine (`docker info`), then try "
			    "again");
	if (r == 0 && ret_stats)
		*ret_stats = st;
	buf_finish(&ps.errtext);
	free(ps.in);
	engine_stream_destroy(ps.stream);
	streamio_close(&ps.io);
	return r;
}
