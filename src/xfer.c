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
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "exec.h"
#include "log.h"
#include "stream.h"
#include "xfer.h"

/* Bytes read from the engine's stream at a time. */
#define XFER_READ_CHUNK (256 * 1024)
/* Longest pid line accepted from the exec wrapper. */
#define XFER_PID_LINE_MAX 16
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
	int fd;
	int wake[2]; /* the cancel hook writes to wake[1] */
	struct stream_demux demux;
	char *in;	     /* raw stream bytes, XFER_READ_CHUNK */
	size_t len, off;     /* in[off..len) not demultiplexed yet */
	const char *out;     /* stdout bytes not handed over yet (inside in) */
	size_t out_n;
	int64_t deadline;
	bool eof, cancelled, timed_out, malformed;
	char pid_line[XFER_PID_LINE_MAX + 1];
	size_t pid_len;
	bool pid_done;
	long pid;
	struct buf errtext;
};

static ssize_t push_stdin(void *arg, char *p, size_t n);
static void wake_hook(void *arg);
static void pull_stderr(struct pull_state *ps, const char *p, size_t n);
static int pull_fill(struct pull_state *ps, int64_t deadline);
static ssize_t pull_source(void *arg, void *p, size_t n);
static void pull_drain(struct pull_state *ps, int64_t deadline);
static void fill_result(const struct exec_result *xr, struct xfer_result *ret);
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

static void wake_hook(void *arg)
{
	ssize_t r = write(*(int *)arg, "c", 1);
	(void)r;
}

/* stderr: the wrapper's pid line first, then the script's messages (capped). */
static void pull_stderr(struct pull_state *ps, const char *p, size_t n)
{
	while (n > 0 && !ps->pid_done) {
		char c = *p++;
		n--;
		if (c == '\n') {
			uint64_t v;
			ps->pid_line[ps->pid_len] = '\0';
			if (parse_u64(ps->pid_line, 2, 1u << 30, &v) == 0)
				ps->pid = (long)v;
			ps->pid_done = true;
		} else if (ps->pid_len < XFER_PID_LINE_MAX) {
			ps->pid_line[ps->pid_len++] = c;
		} else {
			ps->pid_done = true;
		}
	}
	size_t room = ps->errtext.max - ps->errtext.len;
	if (n)
		(void)buf_append(&ps->errtext, p, n < room ? n : room);
}

/* Reads more of the stream into in. 1, 0 at EOF, or -ECANCELED / -ETIMEDOUT / -errno. */
static int pull_fill(struct pull_state *ps, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		struct pollfd pfd[2] = { { .fd = ps->fd, .events = POLLIN }, { .fd = ps->wake[0], .events = POLLIN } };
		int pr = poll(pfd, 2, left > 1000 ? 1000 : (int)left);
		if (pr < 0 && errno != EINTR)
			return -errno;
		if (pr <= 0)
			continue;
		if (pfd[1].revents & POLLIN)
			return -ECANCELED;
		ssize_t k = read(ps->fd, ps->in + ps->len, XFER_READ_CHUNK - ps->len);
		if (k > 0) {
			ps->len += (size_t)k;
			return 1;
		}
		if (k == 0)
			return 0;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
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
			int dr = stream_demux_feed(&ps->demux, ps->in + ps->off, ps->len - ps->off, &used, &stream, &data);
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
		if (r == -ECANCELED) {
			char tmp[16];
			while (read(ps->wake[0], tmp, sizeof(tmp)) > 0)
				;
		}
		if (now_ms() > deadline)
			break;
		ps->deadline = deadline;
	}
	ps->timed_out = timed_out;
}

static void fill_result(const struct exec_result *xr, struct xfer_result *ret)
{
	struct buf text;

	ret->exit_code = xr->exit_code;
	ret->timed_out = xr->timed_out;
	ret->cancelled = xr->cancelled;
	ret->stopped = xr->stopped;
	buf_init(&text, SIZE_MAX);
	capture_render(&xr->err, &text);
	size_t n = text.len;
	while (n > 0 && (text.data[n - 1] == '\n' || text.data[n - 1] == ' '))
		n--;
	snprintf(ret->stderr_text, sizeof(ret->stderr_text), "%.*s", (int)n, text.data ? text.data : "");
	buf_finish(&text);
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
	spec->timeout_ms = XFER_TIMEOUT_MS;
	spec->cap = XFER_CAPTURE;

	int r = exec_run(e, call, s->container, spec, &xr, err);
	if (r == 0)
		fill_result(&xr, ret);
	exec_result_finish(&xr);
	return r;
}

int xfer_push(struct engine *e, struct call *call, const struct session *s, const char *script,
	      const char *const *args, xfer_produce_fn produce, void *arg, struct xfer_result *ret,
	      struct err *err)
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

int xfer_pull(struct engine *e, struct call *call, const struct session *s, const char *script,
	      const char *const *args, const struct tar_limits *lim, const struct tar_sink *sink,
	      struct tar_stats *ret_stats, struct xfer_result *ret, struct err *err)
{
	const char *argv[EXEC_SH_ARGV_MAX];
	char exec_id[ENGINE_ID_LEN + 1];
	struct pull_state ps = { .wake = { -1, -1 } };
	struct tar_stats st = { 0 };
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if (exec_sh_argv(argv, ARRAY_SIZE(argv), script, "sandbox-mcp-files", args) < 0)
		return err_set(err, ERRCODE_INTERNAL, -E2BIG, "a transfer script got more than %d arguments",
			       EXEC_SH_ARGV_MAX - 5);
	struct exec_spec spec = { .argv = argv, .user = s->user };
	if ((r = exec_start(e, call, s->container, &spec, exec_id, &ps.stream, err)) < 0)
		return r;
	ps.fd = engine_stream_fd(ps.stream);
	int fl = fcntl(ps.fd, F_GETFL);
	if (fl < 0 || fcntl(ps.fd, F_SETFL, fl | O_NONBLOCK) < 0 || pipe2(ps.wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		r = err_set(err, ERRCODE_INTERNAL, -errno, "exec setup: %s", strerror(errno));
		engine_stream_destroy(ps.stream);
		return r;
	}
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
	if (call && call_arm(call, wake_hook, &ps.wake[1]) < 0)
		ps.cancelled = true;

	r = ps.cancelled ? err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled")
			 : tar_read(pull_source, &ps, lim, sink, &st, err);
	if (call)
		call_disarm(call);
	if (!ps.eof) {
		/* stopped early: end the process group, then let its output drain */
		struct exec_result kr = { 0 };
		if (ps.pid > 1)
			exec_kill_group(e, s->container, &spec, ps.pid, &kr);
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
	size_t tl = ps.errtext.len;
	while (tl > 0 && (ps.errtext.data[tl - 1] == '\n' || ps.errtext.data[tl - 1] == ' '))
		tl--;
	snprintf(ret->stderr_text, sizeof(ret->stderr_text), "%.*s", (int)tl, ps.errtext.data ? ps.errtext.data : "");

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
	close(ps.wake[0]);
	close(ps.wake[1]);
	return r;
}
