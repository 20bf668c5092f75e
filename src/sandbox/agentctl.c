/*
 * agentctl.c - install, start and drive sandbox-mcp-agent.
 *
 * Bytes from the agent's exec stream go through two pure parsers: Docker's
 * multiplexing (stream.h) and, on stdout, the agent's frames (agentproto.h).
 * The agent's own stderr (it writes there only when it cannot run at all) is
 * kept for error messages.  A run sends 'R', the stdin as 'I' frames and 'C'
 * (always: without 'C' the command's stdin would stay open), then reads until
 * 'X'; on the deadline or cancellation it sends 'K' and, if no 'X' follows
 * within EXEC_KILL_GRACE_MS, kills the group through the engine (and, as
 * exec_kill_group does, restarts the container as the last resort).
 *
 * Every wait is streamio_wait: the socket and the call's cancellation.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent-bin.h"
#include "agent/agentproto.h"
#include "base/log.h"
#include "base/tar.h"
#include "engine/endpoint.h"
#include "engine/stream.h"
#include "sandbox/agentctl.h"
#include "sandbox/streamio.h"

/* Socket bytes read at a time. */
#define AGENTCTL_READ_CHUNK (64 * 1024)
/* Largest control frame kept ('H', 'P', 'F', 'X'); bigger ones are cut. */
#define AGENTCTL_CTL_MAX 256
/* The agent's own stderr kept for messages. */
#define AGENTCTL_DIAG_MAX 1024
/* The engine reachability check before each run. */
#define AGENTCTL_CONNECT_TIMEOUT_MS 5000
/* How long a dead agent's container is watched for having stopped. */
#define AGENTCTL_STOP_WAIT_MS 1000
/* Stdin bytes per 'I' frame. */
#define AGENTCTL_STDIN_FRAME (256 * 1024)

struct agentctl {
	struct engine *engine;
	char container[ENGINE_ID_LEN + 1];
	char user[64];
	struct engine_stream *stream;
	struct streamio io; /* its fd is the stream's; armed while a call waits */
	struct stream_demux demux;
	struct agentproto frame;
	struct buf in; /* socket bytes not parsed yet */
	char ctl[AGENTCTL_CTL_MAX + 1];
	size_t ctl_len;
	char diag[AGENTCTL_DIAG_MAX + 1];
	size_t diag_len;
	bool ready;  /* hello seen */
	bool eof;    /* the stream ended: the agent is gone */
	bool broken; /* malformed frames: nothing more can be trusted */
};

/* What one run saw, filled by the frame handler. */
struct run {
	const struct exec_spec *spec;
	struct exec_result *res;
	bool started, failed, exited;
	long pid;
	char fail[AGENTCTL_CTL_MAX + 1];
};

static int read_some(struct agentctl *a);
static int process(struct agentctl *a, struct run *run);
static void piece(struct agentctl *a, const struct agentproto_piece *pc, struct run *run);
static void control(struct agentctl *a, int type, struct run *run);
static void diag_add(struct agentctl *a, const char *p, size_t n);
static void frame_out(struct buf *out, int type, const char *p, size_t n);
static void field(struct buf *req, char tag, const char *value);
static int build_request(const struct exec_spec *spec, struct buf *out);
static int failed_start(struct run *run, const struct exec_spec *spec, struct err *err);
static bool container_stopped(struct agentctl *a);

bool agentctl_built(void)
{
	return AGENT_BIN_LEN > 0;
}

static char build_id[48];
static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;

static void build_id_init(void)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a 64 */
	for (size_t i = 0; i < AGENT_BIN_LEN; i++)
		h = (h ^ (unsigned char)agent_bin[i]) * 1099511628211ull;
	snprintf(build_id, sizeof(build_id), "%zu-%016llx", (size_t)AGENT_BIN_LEN, (unsigned long long)h);
}

const char *agentctl_build_id(void)
{
	pthread_once(&build_id_once, build_id_init);
	return build_id;
}

int agentctl_install(struct engine *e, struct call *call, const char *container_id, bool into_volume, struct err *err)
{
	struct tar_writer *w = NULL;
	struct buf tar;
	int r;

	if (!agentctl_built())
		return err_set(err, ERRCODE_INTERNAL, -ENOSYS, "this sandbox-mcp was built without the agent");
	buf_init(&tar, AGENT_BIN_LEN + 64 * 1024);
	/* into the volume: the engine checks the destination, so the tar holds the file alone */
	struct tar_entry dir = { .path = &AGENTCTL_DIR[1], .type = TAR_TYPE_DIR, .mode = 0555 };
	/*
	 * Execute-only for the user: the kernel makes a process non-dumpable at
	 * the exec of a file it may not read, so no process of the user can
	 * attach to an agent in the moment between its exec and its own
	 * prctl(PR_SET_DUMPABLE, 0) (a PTRACE_SEIZE spinning on the next pid
	 * won that race, and a tracer stays attached past the prctl).
	 */
	struct tar_entry file = { .path = into_volume ? "agent" : &AGENTCTL_PATH[1],
				  .type = TAR_TYPE_FILE,
				  .size = AGENT_BIN_LEN,
				  .mode = 0511 };
	/* the drop (docs/agent.md): root's, 0711, so the user may enter a slot it knows but never list one */
	struct tar_entry drop = { .path = into_volume ? "drop" : &AGENTCTL_DROP[1],
				  .type = TAR_TYPE_DIR,
				  .mode = 0711 };
	if ((r = tar_writer_create(&tar, &w, err)) == 0 && (into_volume || (r = tar_writer_add(w, &dir, err)) == 0) &&
	    (r = tar_writer_add(w, &drop, err)) == 0 && (r = tar_writer_add(w, &file, err)) == 0 &&
	    (r = tar_writer_data(w, agent_bin, AGENT_BIN_LEN, err)) == 0)
		r = tar_writer_close(w, err);
	tar_writer_destroy(w);
	if (r == 0)
		r = engine_archive_put(e, call, container_id, into_volume ? AGENTCTL_DIR : "/", tar.data, tar.len, err);
	buf_finish(&tar);
	if (r < 0 && strstr(err->msg, "read-only"))
		r = -EROFS;
	return r;
}

/* Reads what the socket has. >0 bytes, 0 at EOF (sets a->eof), -EAGAIN. */
static int read_some(struct agentctl *a)
{
	ssize_t n = streamio_read_into(&a->io, &a->in, AGENTCTL_READ_CHUNK);
	if (n == 0)
		a->eof = true;
	/* -ENOBUFS cannot happen: process() empties a->in */
	return n > 0 ? (int)n : n == 0 ? 0 : -EAGAIN;
}

static void diag_add(struct agentctl *a, const char *p, size_t n)
{
	size_t room = AGENTCTL_DIAG_MAX - a->diag_len;
	if (n > room)
		n = room;
	memcpy(a->diag + a->diag_len, p, n);
	a->diag_len += n;
	a->diag[a->diag_len] = '\0';
}

/* A whole control frame is in a->ctl. */
static void control(struct agentctl *a, int type, struct run *run)
{
	uint64_t v;
	switch (type) {
	case 'H':
		a->ready = strncmp(a->ctl, "sandbox-mcp-agent ", 18) == 0;
		break;
	case 'P':
		if (run && parse_u64(a->ctl, 2, 1u << 30, &v) == 0) {
			run->started = true;
			run->pid = (long)v;
		}
		break;
	case 'F':
		if (run) {
			run->failed = true;
			snprintf(run->fail, sizeof(run->fail), "%s", a->ctl);
		}
		break;
	case 'X': {
		struct agentproto_exit x;
		if (!run)
			break;
		run->exited = true;
		if (agentproto_parse_exit(a->ctl, a->ctl_len, &x) == 0) {
			run->res->exit_code = x.code;
			run->res->usage = true;
			run->res->cpu_ms = x.cpu_ms;
			run->res->max_rss_kb = x.maxrss_kb;
		}
		break;
	}
	}
}

static void piece(struct agentctl *a, const struct agentproto_piece *pc, struct run *run)
{
	if (pc->type == 'O' || pc->type == 'E') {
		if (!run || !pc->n || run->res->stopped)
			return;
		int stream = pc->type == 'O' ? 1 : 2;
		const struct exec_spec *spec = run->spec;
		int stop = spec->on_data ? spec->on_data(spec->arg, stream, pc->p, pc->n) : 0;
		capture_add(stream == 1 ? &run->res->out : &run->res->err, pc->p, pc->n);
		if (stop)
			run->res->stopped = true;
		return;
	}
	if (pc->first)
		a->ctl_len = 0;
	size_t n = pc->n;
	if (n > AGENTCTL_CTL_MAX - a->ctl_len)
		n = AGENTCTL_CTL_MAX - a->ctl_len;
	memcpy(a->ctl + a->ctl_len, pc->p, n);
	a->ctl_len += n;
	a->ctl[a->ctl_len] = '\0';
	if (pc->last)
		control(a, pc->type, run);
}

/* Parses everything in a->in. 0, or -EPROTO (a->broken set). */
static int process(struct agentctl *a, struct run *run)
{
	size_t off = 0;

	while (off < a->in.len) {
		size_t used = 0;
		int stream;
		struct slice data;
		int r = stream_demux_feed(&a->demux, a->in.data + off, a->in.len - off, &used, &stream, &data);
		if (r == -1)
			goto broken;
		off += used;
		if (r == -2)
			break;
		if (stream != STREAM_STDOUT) {
			diag_add(a, data.p, data.n);
			continue;
		}
		for (size_t d = 0; d < data.n;) {
			struct agentproto_piece pc;
			size_t u = 0;
			int fr = agentproto_feed(&a->frame, data.p + d, data.n - d, &u, &pc);
			if (fr == -1) {
				diag_add(a, data.p + d, data.n - d);
				goto broken;
			}
			d += u;
			if (fr == -2)
				break;
			piece(a, &pc, run);
		}
	}
	buf_consume(&a->in, off);
	if (a->in.len == 0 && a->in.cap > 2 * AGENTCTL_READ_CHUNK)
		buf_finish(&a->in);
	return 0;

broken:
	buf_reset(&a->in);
	a->broken = true;
	return -EPROTO;
}

int agentctl_start(struct engine *e, struct call *call, const char *container_id, const char *user,
		   struct agentctl **ret, struct err *err)
{
	return agentctl_start_as(e, call, container_id, user, NULL, ret, err);
}

int agentctl_start_as(struct engine *e, struct call *call, const char *container_id, const char *user, const char *role,
		      struct agentctl **ret, struct err *err)
{
	char exec_id[ENGINE_ID_LEN + 1];
	int r;

	struct agentctl *a = xcalloc(1, sizeof(*a));
	a->engine = e;
	a->io.wake[0] = a->io.wake[1] = -1;
	snprintf(a->container, sizeof(a->container), "%s", container_id);
	snprintf(a->user, sizeof(a->user), "%s", user ? user : "");
	stream_demux_init(&a->demux);
	agentproto_init(&a->frame, AGENTPROTO_TO_SERVER);
	buf_init(&a->in, AGENTCTL_READ_CHUNK + ENGINE_STREAM_AHEAD_MAX);
	int64_t t0 = now_ms();

	json_t *cfg = json_pack("{s:b, s:b, s:b, s:b, s:b, s:[s]}", "AttachStdin", 1, "AttachStdout", 1, "AttachStderr",
				1, "Tty", 0, "Privileged", 0, "Cmd", AGENTCTL_PATH);
	if (role)
		json_array_append_new(json_object_get(cfg, "Cmd"), json_string(role));
	if (user)
		json_object_set_new(cfg, "User", json_string(user));
	r = engine_exec_create(e, call, container_id, cfg, exec_id, err);
	json_decref(cfg);
	if (r == 0)
		r = engine_exec_start(e, call, exec_id, &a->stream, err);
	if (r < 0) {
		agentctl_destroy(a);
		return r;
	}
	if ((r = streamio_open(&a->io, engine_stream_fd(a->stream), call, err)) < 0) {
		agentctl_destroy(a);
		return r;
	}
	_Static_assert(AGENTCTL_READ_CHUNK >= ENGINE_STREAM_AHEAD_MAX, "the agent buffer takes one HTTP read");
	if (engine_stream_take_buffered(a->stream, &a->in) < 0)
		abort();
	/* a hello that does not come within one engine timeout is a stalled stream: fall back sooner */
	int start_ms = engine_timeout_ms(e) < AGENTCTL_START_TIMEOUT_MS ? engine_timeout_ms(e)
									: AGENTCTL_START_TIMEOUT_MS;
	int64_t deadline = t0 + start_ms;
	for (;;) {
		if (process(a, NULL) < 0 || (a->eof && !a->ready)) {
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the agent did not start: %.300s", a->diag);
			break;
		}
		if (a->ready)
			break;
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the agent did not start within %d ms", start_ms);
			break;
		}
		int seen = streamio_wait(&a->io, false, deadline);
		if (seen < 0) {
			r = err_set(err, ERRCODE_INTERNAL, seen, "poll: %s", strerror(-seen));
			break;
		}
		if (seen & STREAMIO_CANCEL) {
			r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled while the agent was starting");
			break;
		}
		if (seen & STREAMIO_IN)
			while (read_some(a) > 0)
				;
	}
	streamio_disarm(&a->io);
	if (r < 0) {
		agentctl_destroy(a);
		return r;
	}
	log_debugf("agent started in %.12s in %lld ms", a->container, (long long)(now_ms() - t0));
	*ret = a;
	return 0;
}

bool agentctl_alive(struct agentctl *a)
{
	if (a->eof || a->broken)
		return false;
	while (read_some(a) > 0)
		if (process(a, NULL) < 0)
			return false;
	return !a->eof;
}

static void frame_out(struct buf *out, int type, const char *p, size_t n)
{
	char hdr[AGENTPROTO_HEADER_LEN];
	agentproto_header(hdr, type, (uint32_t)n);
	(void)buf_append(out, hdr, sizeof(hdr));
	if (n)
		(void)buf_append(out, p, n);
}

/* One field of an 'R' payload: its tag, the value and its NUL. */
static void field(struct buf *req, char tag, const char *value)
{
	(void)buf_append(req, &tag, 1);
	(void)buf_append(req, value, strlen(value) + 1);
}

/* The 'R' (or 'B') frame, the stdin frames and 'C'. 0, or -E2BIG when the request passes a frame. */
static int build_request(const struct exec_spec *spec, struct buf *out)
{
	struct buf req;
	buf_init(&req, SIZE_MAX);
	if (spec->builtin)
		field(&req, 'a', spec->builtin);
	else if (spec->shell_command)
		field(&req, 's', spec->shell_command);
	for (const char *const *v = spec->argv; v && *v; v++)
		field(&req, 'a', *v);
	for (const char *const *v = spec->env; v && *v && !spec->builtin; v++)
		field(&req, 'e', *v);
	if (spec->workdir)
		field(&req, 'd', spec->workdir);
	if (req.len > AGENTPROTO_FRAME_MAX) {
		buf_finish(&req);
		return -E2BIG;
	}
	frame_out(out, spec->builtin ? 'B' : 'R', req.data, req.len);
	buf_finish(&req);
	for (size_t off = 0; off < spec->stdin_len; off += AGENTCTL_STDIN_FRAME) {
		size_t n = spec->stdin_len - off < AGENTCTL_STDIN_FRAME ? spec->stdin_len - off : AGENTCTL_STDIN_FRAME;
		frame_out(out, 'I', spec->stdin_data + off, n);
	}
	frame_out(out, 'C', NULL, 0);
	return 0;
}

/*
 * True when the agent's container stopped or is gone. The engine notices a
 * killed container a moment after the streams of its execs end, so this
 * looks for up to AGENTCTL_STOP_WAIT_MS.
 */
static bool container_stopped(struct agentctl *a)
{
	for (int i = 0; i * 100 <= AGENTCTL_STOP_WAIT_MS; i++) {
		json_t *ins = NULL;
		struct err ie;
		if (i > 0)
			poll(NULL, 0, 100);
		int r = engine_container_inspect(a->engine, NULL, a->container, &ins, &ie);
		bool running = r == 0 && json_is_true(json_object_get(json_object_get(ins, "State"), "Running"));
		json_decref(ins);
		if (r < 0)
			return ie.code == ERRCODE_SESSION_NOT_FOUND;
		if (!running)
			return true;
	}
	return false;
}

/* An 'F' report: "<errno> <step>". */
static int failed_start(struct run *run, const struct exec_spec *spec, struct err *err)
{
	uint64_t code = 0;
	char *sp = strchr(run->fail, ' ');
	if (sp)
		*sp = '\0';
	const char *step = sp ? sp + 1 : "";
	if (parse_u64(run->fail, 0, 4095, &code) < 0)
		code = EIO;
	if (strcmp(step, "exec") == 0 && spec->shell_command && (code == ENOENT || code == ENOTDIR))
		return err_set(err, ERRCODE_SHELL_NOT_FOUND, -ENOENT, "no /bin/sh");
	if (strcmp(step, "exec") == 0 && spec->argv) {
		/* like a shell: 127 not found, 126 found but not runnable */
		char msg[512];
		int n = snprintf(msg, sizeof(msg), "sandbox-mcp: %.300s: %s\n", spec->argv[0], strerror((int)code));
		run->res->exit_code = code == ENOENT || code == ENOTDIR ? 127 : 126;
		capture_add(&run->res->err, msg, (size_t)n);
		return 0;
	}
	return err_set(err, ERRCODE_ENGINE_ERROR, -EAGAIN, "the agent could not start the command (%s: %s)", step,
		       strerror((int)code));
}

int agentctl_run(struct agentctl *a, struct call *call, const struct exec_spec *spec, struct exec_result *res,
		 struct err *err)
{
	struct run run = { .spec = spec, .res = res };
	struct buf out;
	int r;

	exec_result_init(res, spec->cap);
	int64_t t0 = now_ms();
	if (!agentctl_alive(a))
		return err_set(err, ERRCODE_ENGINE_ERROR, -EAGAIN, "the agent is gone");
	/*
	 * The agent's stream outlives what this server may still do with the
	 * engine (its socket made unreadable, DOCKER_HOST gone): a call must fail
	 * then as every other call does, so the exec path takes it and reports
	 * the engine's error. A connect is tens of microseconds on a unix socket.
	 */
	/* remote engines are asked on a kept-alive connection instead (engine_reachable) */
	if (engine_reachable(a->engine, AGENTCTL_CONNECT_TIMEOUT_MS, err) < 0)
		return -EAGAIN;
	buf_init(&out, SIZE_MAX);
	if (build_request(spec, &out) < 0) {
		/* the exec path has its own limit and message for this */
		buf_finish(&out);
		return err_set(err, ERRCODE_TOO_LARGE, -EAGAIN, "the command is too large for one agent frame");
	}
	(void)streamio_arm(&a->io, call); /* a call already cancelled: the first wait says so */
	int64_t deadline = spec->timeout_ms > 0 ? t0 + spec->timeout_ms : INT64_MAX;
	bool killing = false;
	size_t sent = 0, kill_at = SIZE_MAX;
	r = 0;
	for (;;) {
		if (process(a, &run) < 0)
			a->eof = true; /* treated as a death: the group is killed below */
		if (run.exited)
			break;
		if (run.failed) {
			r = failed_start(&run, spec, err);
			break;
		}
		if (a->eof) {
			if (!run.started) {
				r = err_set(err, ERRCODE_ENGINE_ERROR, -EAGAIN, "the agent is gone");
				break;
			}
			if (container_stopped(a)) {
				/* killed or removed from outside: what the engine reports for its execs */
				res->exit_code = 137;
				break;
			}
			/* the agent died with the command running: end its group through the engine */
			res->agent_lost = true;
			exec_kill_group(a->engine, a->container, spec, run.pid, res);
			break;
		}
		if (spec->on_tick)
			spec->on_tick(spec->arg);
		int64_t now = now_ms();
		if (!killing && (res->cancelled || res->stopped || now >= deadline)) {
			if (!res->cancelled && !res->stopped)
				res->timed_out = true;
			killing = true;
			kill_at = out.len;
			frame_out(&out, 'K', NULL, 0);
			deadline = now + EXEC_KILL_GRACE_MS;
		} else if (killing && now >= deadline) {
			/* the agent did not answer the kill: do it through the engine, and stop trusting it */
			a->broken = true;
			if (run.started)
				exec_kill_group(a->engine, a->container, spec, run.pid, res);
			else if (engine_container_restart(a->engine, NULL, a->container, err) == 0)
				res->restarted = true;
			break;
		}
		int seen = streamio_wait(&a->io, sent < out.len, deadline);
		if (seen < 0) {
			r = err_set(err, ERRCODE_INTERNAL, seen, "poll: %s", strerror(-seen));
			break;
		}
		if (seen & STREAMIO_CANCEL)
			res->cancelled = true;
		if (sent < out.len && (seen & STREAMIO_OUT)) {
			ssize_t w = streamio_send(&a->io, out.data + sent, out.len - sent);
			if (w > 0)
				sent += (size_t)w;
			else if (w < 0)
				a->eof = true;
		}
		if (seen & STREAMIO_IN)
			for (int i = 0; i < 16 && read_some(a) > 0; i++)
				;
	}
	streamio_disarm(&a->io);
	if (sent < out.len && sent != 0 && sent != kill_at)
		a->broken = true; /* a frame cut in the middle: the agent's reader cannot resync */
	buf_finish(&out);
	res->pid = run.pid;
	res->duration_ms = now_ms() - t0;
	return r;
}

void agentctl_destroy(struct agentctl *a)
{
	if (!a)
		return;
	streamio_close(&a->io);
	engine_stream_destroy(a->stream);
	buf_finish(&a->in);
	free(a);
}
