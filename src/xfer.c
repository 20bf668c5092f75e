/*
 * xfer.c - pushing and pulling tar streams through an exec'd tar.
 *
 * Push: exec_run pulls stdin through push_stdin, which drains the writer's
 * buffer and, when it is empty, asks the producer for the next piece (one
 * header or one data chunk), so at most a chunk and a header are in memory.
 *
 * Pull: exec_run delivers stdout chunks to pull_on_data, which writes them to
 * a socketpair; a reader thread runs tar_read on the other end.  A full socket
 * blocks the exec loop, which stops reading the engine's stream, which stops
 * the container's tar: back-pressure end to end.  When the reader finishes
 * early (a cap, a malformed stream, a sink that stopped) it shuts its end
 * down, the next write fails, and on_data's nonzero return makes exec_run kill
 * the tar.  When the exec ends, closing the write end gives the reader EOF.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "exec.h"
#include "log.h"
#include "xfer.h"

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
	int sv[2];
	const struct tar_limits *lim;
	const struct tar_sink *sink;
	struct tar_stats stats;
	struct err err;
	int r;
	bool write_failed;
};

static ssize_t push_stdin(void *arg, char *p, size_t n);
static int pull_on_data(void *arg, int stream, const char *p, size_t n);
static void *pull_reader(void *arg);
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

static int pull_on_data(void *arg, int stream, const char *p, size_t n)
{
	struct pull_state *ps = arg;

	if (stream != 1)
		return 0;
	while (n > 0 && !ps->write_failed) {
		ssize_t k = send(ps->sv[1], p, n, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			ps->write_failed = true;
			break;
		}
		p += k;
		n -= (size_t)k;
	}
	return ps->write_failed;
}

static void *pull_reader(void *arg)
{
	struct pull_state *ps = arg;
	ps->r = tar_read_fd(ps->sv[0], ps->lim, ps->sink, &ps->stats, &ps->err);
	/* the writer's next send fails: the exec is stopped */
	shutdown(ps->sv[0], SHUT_RDWR);
	return NULL;
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
	const char *argv[16];
	size_t n = 0;
	struct exec_result xr;

	argv[n++] = "/bin/sh";
	argv[n++] = "-c";
	argv[n++] = script;
	argv[n++] = "sandbox-mcp-files";
	for (; args && *args && n < ARRAY_SIZE(argv) - 1; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	spec->argv = argv;
	spec->user = s->user;
	spec->timeout_ms = XFER_TIMEOUT_MS;
	spec->cap = XFER_CAPTURE;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
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
	struct pull_state ps = { .sv = { -1, -1 }, .lim = lim, .sink = sink };
	pthread_t th;
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ps.sv) < 0)
		return err_set(err, ERRCODE_INTERNAL, -errno, "socketpair: %s", strerror(errno));
	if ((r = thread_create_nosig(&th, NULL, pull_reader, &ps)) != 0) {
		close(ps.sv[0]);
		close(ps.sv[1]);
		return err_set(err, ERRCODE_INTERNAL, -r, "cannot start a reader thread: %s", strerror(r));
	}
	struct exec_spec spec = { .on_data = pull_on_data, .arg = &ps };
	r = run(e, call, s, script, args, &spec, ret, err);
	close(ps.sv[1]);
	pthread_join(th, NULL);
	close(ps.sv[0]);
	if (r < 0)
		return r;
	if (ps.r < 0) {
		*err = ps.err;
		return ps.r;
	}
	if (ret_stats)
		*ret_stats = ps.stats;
	return 0;
}
