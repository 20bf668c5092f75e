/*
 * pyrepl.c - the server's side of the Python driver: start, run a cell,
 * interrupt, kill.
 *
 * Bytes from the exec stream go through two pure parsers: Docker's
 * multiplexing (stream.h) and, on stdout, the driver's frames (repl.h).  The
 * wrapper's pid line and anything the driver itself prints on stderr (it only
 * does when it cannot run) come on Docker's stderr.  Output frames go to the
 * caller as they arrive; hello and result frames are assembled (capped) and
 * decoded as JSON; figures are kept as PNG bytes (capped in count and size).
 *
 * Every wait is streamio_wait, on the socket and the call's cancellation,
 * so cancellation and the deadline act at once.  Whatever the interpreter
 * prints between cells stays in the socket (or, bounded, in p->in) and is
 * shown with the next cell.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonscan.h"
#include "base/log.h"
#include "engine/stream.h"
#include "sandbox/driver.h"
#include "sandbox/exec.h"
#include "sandbox/pyrepl.h"
#include "sandbox/repl.h"
#include "sandbox/streamio.h"

/* Time given to the engine to report an exit code once the stream ended. */
#define PYREPL_EXIT_WAIT_MS 2000

/* Environment of the interpreter, on top of the image's. */
static const char *const pyrepl_env[] = { "MPLBACKEND=Agg", "PYTHONIOENCODING=utf-8", NULL };

struct pyrepl {
	struct engine *engine;
	char container[ENGINE_ID_LEN + 1];
	char user[64];
	char workdir[4096];
	char exec_id[ENGINE_ID_LEN + 1];
	struct engine_stream *stream;
	struct streamio io; /* its fd is the stream's; armed while a call waits */
	struct stream_demux demux;
	struct repl_frame frame;
	struct buf in;	      /* socket bytes not parsed yet */
	struct buf assembled; /* a hello or result frame being put together */
	int fig_slot;	      /* where the figure being received goes; -1: dropped */
	struct exec_pidline pid_line;
	long pid;
	char diag[PYREPL_DIAG_MAX];
	size_t diag_len;
	char python[32];
	unsigned cell;
	bool ready;	   /* hello seen */
	bool eof;	   /* the stream ended: the interpreter is gone */
	bool broken;	   /* a malformed frame: nothing more can be trusted */
	char refused[160]; /* why a hello or result frame was refused (broken is set too) */
	int64_t start_ms;
	const struct pyrepl_request *req; /* the cell running, during pyrepl_run */
};

/* What process() saw. */
#define SEEN_HELLO 1
#define SEEN_RESULT 2

static int read_some(struct pyrepl *p);
static int process(struct pyrepl *p, struct pyrepl_result *res);
static int frames(struct pyrepl *p, struct slice data, struct pyrepl_result *res);
static int piece(struct pyrepl *p, const struct repl_piece *pc, struct pyrepl_result *res);
static void stderr_data(struct pyrepl *p, struct slice data);
static void diag_add(struct pyrepl *p, const char *c, size_t n);
static int finish_frame(struct pyrepl *p, int type, struct pyrepl_result *res);
static bool kill_group(struct pyrepl *p);
static void copy_diag(const struct pyrepl *p, char *out, size_t outsz);
static int wait_exit(struct pyrepl *p);

/* Reads what the socket has. >0 bytes read, 0 at EOF (sets p->eof), -EAGAIN, -ENOBUFS when p->in is full. */
static int read_some(struct pyrepl *p)
{
	ssize_t n = streamio_read_into(&p->io, &p->in, PYREPL_READ_CHUNK);
	if (n == 0)
		p->eof = true;
	return (int)n;
}

static void stderr_data(struct pyrepl *p, struct slice data)
{
	const char *c = data.p;
	size_t n = data.n;

	bool had = p->pid_line.done;
	size_t k = exec_pidline_feed(&p->pid_line, c, n);
	if (!had && p->pid_line.pid)
		p->pid = p->pid_line.pid;
	c += k;
	n -= k;
	diag_add(p, c, n);
}

static void diag_add(struct pyrepl *p, const char *c, size_t n)
{
	size_t room = sizeof(p->diag) - 1 - p->diag_len;
	if (n > room)
		n = room;
	memcpy(p->diag + p->diag_len, c, n);
	p->diag_len += n;
	p->diag[p->diag_len] = '\0';
}

static int finish_frame(struct pyrepl *p, int type, struct pyrepl_result *res)
{
	struct jsonscan scan;
	const char *text = p->assembled.data ? p->assembled.data : "";
	size_t len = p->assembled.len;

	jsonscan_measure(text, len, &scan);
	if (scan.cost > PYREPL_RESULT_COST_MAX || scan.depth > PYREPL_RESULT_DEPTH_MAX) {
		snprintf(p->refused, sizeof(p->refused),
			 "the sandbox sent a %s frame too complex to decode (%zu JSON values, %zu deep, about %zu KiB "
			 "to decode; the limit is %u KiB)",
			 type == REPL_HELLO ? "hello" : "result", scan.objects + scan.arrays + scan.strings + scan.bare,
			 scan.depth, scan.cost >> 10, PYREPL_RESULT_COST_MAX >> 10);
		return -EMSGSIZE;
	}
	json_t *j = json_loadb(text, len, 0, NULL);
	if (p->assembled.cap > PYREPL_READ_CHUNK)
		buf_finish(&p->assembled); /* an idle session keeps no big buffer */
	if (type == REPL_HELLO) {
		if (!json_is_object(j)) {
			json_decref(j);
			return -EPROTO;
		}
		snprintf(p->python, sizeof(p->python), "%s",
			 json_string_value(json_object_get(j, "python"))
				 ? json_string_value(json_object_get(j, "python"))
				 : "?");
		json_int_t pid = json_integer_value(json_object_get(j, "pid"));
		if (p->pid <= 1 && pid > 1)
			p->pid = (long)pid;
		p->ready = true;
		json_decref(j);
		return SEEN_HELLO;
	}
	if (!res) {
		json_decref(j);
		return 0; /* a result with no cell running: cannot happen, ignore */
	}
	if (!json_is_object(j)) {
		json_decref(j);
		j = json_pack("{s:I, s:{s:s, s:s, s:s}}", "cell", (json_int_t)res->cell, "error", "type", "DriverError",
			      "message", "the cell's result was unreadable", "traceback", "");
	}
	if (json_integer_value(json_object_get(j, "cell")) != (json_int_t)res->cell) {
		json_decref(j);
		return 0; /* an earlier cell's (after a lost race with its interrupt): not ours */
	}
	json_decref(res->result);
	res->result = j;
	return SEEN_RESULT;
}

static int piece(struct pyrepl *p, const struct repl_piece *pc, struct pyrepl_result *res)
{
	switch (pc->type) {
	case REPL_STDOUT:
	case REPL_STDERR:
		if (res && pc->data.n) {
			int stream = pc->type == REPL_STDOUT ? 1 : 2;
			if (p->req && p->req->on_output)
				p->req->on_output(p->req->arg, stream, pc->data.p, pc->data.n);
			capture_add(stream == 1 ? &res->out : &res->err, pc->data.p, pc->data.n);
		}
		return 0;
	case REPL_FIGURE:
		if (pc->first) {
			p->fig_slot = -1;
			if (res && res->nfigures < PYREPL_FIGURES_MAX && pc->size <= PYREPL_FIGURE_MAX &&
			    res->figures_bytes + pc->size <= PYREPL_FIGURES_TOTAL_MAX) {
				p->fig_slot = (int)res->nfigures;
				res->figures_bytes += pc->size;
				buf_init(&res->figures[p->fig_slot], PYREPL_FIGURE_MAX);
			} else if (res) {
				res->figures_dropped++;
			}
		}
		if (p->fig_slot >= 0 && res)
			(void)buf_append(&res->figures[p->fig_slot], pc->data.p, pc->data.n);
		if (pc->last && p->fig_slot >= 0 && res)
			res->nfigures++;
		return 0;
	case REPL_HELLO:
	case REPL_RESULT:
		if (pc->first) {
			buf_reset(&p->assembled);
			if (pc->size > PYREPL_RESULT_MAX) {
				snprintf(p->refused, sizeof(p->refused),
					 "the sandbox sent an oversized %s frame (%u bytes; the limit is %u)",
					 pc->type == REPL_HELLO ? "hello" : "result", pc->size, PYREPL_RESULT_MAX);
				return -EMSGSIZE;
			}
		}
		if (buf_append(&p->assembled, pc->data.p, pc->data.n) < 0)
			return -EMSGSIZE; /* cannot happen: the frame's size was checked */
		return pc->last ? finish_frame(p, pc->type, res) : 0;
	default:
		return -EPROTO;
	}
}

static int frames(struct pyrepl *p, struct slice data, struct pyrepl_result *res)
{
	int seen = 0;
	size_t off = 0;

	while (off < data.n) {
		size_t used = 0;
		struct repl_piece pc;
		int r = repl_frame_feed(&p->frame, data.p + off, data.n - off, &used, &pc);
		if (r == -1) {
			diag_add(p, data.p + off, data.n - off);
			return -EPROTO;
		}
		off += used;
		if (r == -2)
			break;
		r = piece(p, &pc, res);
		if (r < 0)
			return r;
		seen |= r;
	}
	return seen;
}

/* Parses everything in p->in. SEEN_* flags, or -EPROTO (p->broken set). */
static int process(struct pyrepl *p, struct pyrepl_result *res)
{
	int seen = 0;
	size_t off = 0;

	while (off < p->in.len) {
		size_t used = 0;
		int stream;
		struct slice data;
		int r = stream_demux_feed(&p->demux, p->in.data + off, p->in.len - off, &used, &stream, &data);
		if (r == -1)
			goto broken;
		off += used;
		if (r == -2)
			break;
		if (stream == STREAM_STDOUT) {
			r = frames(p, data, res);
			if (r < 0)
				goto broken;
			seen |= r;
		} else if (stream == STREAM_STDERR || stream == STREAM_SYSTEMERR) {
			stderr_data(p, data);
		}
	}
	buf_consume(&p->in, off);
	if (p->in.len == 0 && p->in.cap > 2 * PYREPL_READ_CHUNK)
		buf_finish(&p->in); /* a burst of output leaves no big buffer for the session's life */
	return seen;

broken:
	buf_reset(&p->in);
	p->broken = true;
	return -EPROTO;
}

/* Kills the process group; true when that took a container restart. */
static bool kill_group(struct pyrepl *p)
{
	struct exec_result xr;
	memset(&xr, 0, sizeof(xr));
	if (p->pid > 1) {
		struct exec_spec ks = { .user = p->user };
		exec_kill_group(p->engine, p->container, &ks, p->pid, &xr);
	}
	p->broken = true;
	return xr.restarted;
}

static void copy_diag(const struct pyrepl *p, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s", p->diag);
}

static int wait_exit(struct pyrepl *p)
{
	struct err e;
	int code = -1;
	if (exec_wait_exit(p->engine, p->exec_id, PYREPL_EXIT_WAIT_MS, &code, &e) < 0)
		return -1;
	return code;
}

int pyrepl_start(struct engine *e, struct call *call, const struct pyrepl_opts *o, struct pyrepl **ret, struct err *err)
{
	const char *argv[] = { "python3", "-c", driver_py, NULL };
	int r;

	struct pyrepl *p = xcalloc(1, sizeof(*p));
	p->engine = e;
	p->io.wake[0] = p->io.wake[1] = -1;
	p->fig_slot = -1;
	snprintf(p->container, sizeof(p->container), "%s", o->container_id);
	snprintf(p->user, sizeof(p->user), "%s", o->user ? o->user : "");
	snprintf(p->workdir, sizeof(p->workdir), "%s", o->workdir ? o->workdir : "");
	stream_demux_init(&p->demux);
	repl_frame_init(&p->frame);
	buf_init(&p->in, PYREPL_IDLE_BUFFER_MAX + PYREPL_READ_CHUNK);
	buf_init(&p->assembled, PYREPL_RESULT_MAX);
	int64_t t0 = now_ms();

	struct exec_spec spec = {
		.argv = argv,
		.env = pyrepl_env,
		.workdir = o->workdir,
		.user = o->user,
		.guard = o->guard,
		.attach_stdin = true,
	};
	if ((r = exec_start(e, call, p->container, &spec, p->exec_id, &p->stream, err)) < 0) {
		pyrepl_destroy(p);
		return r;
	}
	if ((r = streamio_open(&p->io, engine_stream_fd(p->stream), call, err)) < 0) {
		pyrepl_destroy(p);
		return r;
	}
	/* p->in holds what came with the 101 head (one read): this cannot fail */
	_Static_assert(PYREPL_READ_CHUNK >= ENGINE_STREAM_AHEAD_MAX, "the driver buffer takes one HTTP read");
	if (engine_stream_take_buffered(p->stream, &p->in) < 0)
		abort();

	int64_t deadline = t0 + PYREPL_START_TIMEOUT_MS;
	r = 0;
	for (;;) {
		if (process(p, NULL) < 0) {
			kill_group(p);
			if (strstr(p->diag, "OCI runtime"))
				r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
					    "the session could not start python3: %.300s", p->diag);
			else
				r = err_set(err, ERRCODE_PYTHON_NOT_FOUND, -EPROTO,
					    "python3 in this image printed something else than the driver's frames "
					    "before it was ready (a sitecustomize writing to stdout?): %.200s",
					    p->diag);
			break;
		}
		if (p->ready)
			break;
		if (p->eof) {
			int code = wait_exit(p);
			if (strstr(p->diag, "OCI runtime"))
				r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
					    "the session could not start python3: %.300s", p->diag);
			else if (code == 127 || code == 126 || strstr(p->diag, "not found"))
				r = err_set(err, ERRCODE_PYTHON_NOT_FOUND, -ENOENT,
					    "this session's image has no python3");
			else
				r = err_set(err, ERRCODE_PYTHON_NOT_FOUND, -ENOEXEC,
					    "python3 in this session's image could not run the driver (exit code %d)%s%.300s",
					    code, p->diag_len ? ": " : "", p->diag);
			break;
		}
		int64_t now = now_ms();
		if (now >= deadline) {
			kill_group(p);
			r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "python3 did not start within %d s",
				    PYREPL_START_TIMEOUT_MS / 1000);
			break;
		}
		int seen = streamio_wait(&p->io, false, deadline);
		if (seen < 0) {
			r = err_set(err, ERRCODE_INTERNAL, seen, "poll: %s", strerror(-seen));
			kill_group(p);
			break;
		}
		if (seen & STREAMIO_CANCEL) {
			kill_group(p);
			r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled while python3 was starting");
			break;
		}
		if (seen & STREAMIO_IN)
			while (read_some(p) > 0)
				;
	}
	streamio_disarm(&p->io);
	if (r < 0) {
		pyrepl_destroy(p);
		return r;
	}
	p->start_ms = now_ms() - t0;
	log_debugf("python %s started in %.12s as pid %ld in %lld ms", p->python, p->container, p->pid,
		   (long long)p->start_ms);
	*ret = p;
	return 0;
}

int pyrepl_run(struct pyrepl *p, struct call *call, const struct pyrepl_request *req, struct pyrepl_result *res,
	       struct err *err)
{
	char hdr[REPL_HEADER_LEN], num[24];
	struct buf out;
	int r;

	memset(res, 0, sizeof(*res));
	res->exit_code = -1;
	capture_init(&res->out, req->cap);
	capture_init(&res->err, req->cap);
	res->cell = ++p->cell;
	int64_t t0 = now_ms();

	if (!pyrepl_alive(p)) {
		res->lost = true;
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPIPE, "the Python interpreter is gone");
	}
	json_t *code = json_stringn(req->code, req->code_len);
	if (!code)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "code is not valid UTF-8");
	json_t *msg = json_pack("{s:I, s:o}", "cell", (json_int_t)res->cell, "code", code);
	if (p->workdir[0])
		json_object_set_new(msg, "workspace", json_string(p->workdir));
	json_object_set_new(msg, "cap", json_integer((json_int_t)req->cap));
	if (req->save_cap)
		json_object_set_new(msg, "save_cap", json_integer((json_int_t)req->save_cap));
	char *payload = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	size_t plen = strlen(payload);
	buf_init(&out, SIZE_MAX);
	repl_frame_header(hdr, REPL_CODE, (uint32_t)plen);
	(void)buf_append(&out, hdr, sizeof(hdr));
	(void)buf_append(&out, payload, plen);
	free(payload);
	(void)streamio_arm(&p->io, call); /* a call already cancelled: the first wait says so */

	int64_t deadline = req->timeout_ms > 0 ? t0 + req->timeout_ms : INT64_MAX;
	int64_t grace = INT64_MAX;
	size_t sent = 0;
	p->req = req;
	r = 0;
	for (;;) {
		int seen = process(p, res);
		if (seen < 0) {
			res->restarted = kill_group(p);
			res->lost = res->killed = true;
			snprintf(res->diag, sizeof(res->diag),
				 "the interpreter sent malformed frames (did the cell "
				 "write to the driver's protocol fd?)");
			if (p->refused[0])
				r = err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
					    "%s: did the code write to the driver's protocol? The interpreter was stopped "
					    "(its variables are lost); the next run_python call starts a fresh one",
					    p->refused);
			break;
		}
		if (res->result)
			break;
		if (p->eof) {
			res->lost = true;
			res->exit_code = wait_exit(p);
			copy_diag(p, res->diag, sizeof(res->diag));
			if (sent == 0) {
				r = err_set(err, ERRCODE_ENGINE_ERROR, -EPIPE, "the Python interpreter is gone");
			}
			break;
		}
		if (req->on_tick)
			req->on_tick(req->arg);
		int64_t now = now_ms();
		if (res->cancelled && sent == 0)
			break; /* nothing reached the interpreter: nothing to stop */
		if (!res->interrupted && (res->cancelled || now >= deadline)) {
			if (!res->cancelled)
				res->timed_out = true;
			res->interrupted = true;
			int n = snprintf(num, sizeof(num), "%u", res->cell);
			repl_frame_header(hdr, REPL_INTERRUPT, (uint32_t)n);
			(void)buf_append(&out, hdr, sizeof(hdr));
			(void)buf_append(&out, num, (size_t)n);
			grace = now + PYREPL_INTERRUPT_GRACE_MS;
		} else if (res->interrupted && now >= grace) {
			res->restarted = kill_group(p);
			res->lost = res->killed = true;
			break;
		}

		int ev = streamio_wait(&p->io, sent < out.len, res->interrupted ? grace : deadline);
		if (ev < 0) {
			r = err_set(err, ERRCODE_INTERNAL, ev, "poll: %s", strerror(-ev));
			res->restarted = kill_group(p);
			res->lost = res->killed = true;
			break;
		}
		if (ev & STREAMIO_CANCEL)
			res->cancelled = true;
		if (sent < out.len && (ev & STREAMIO_OUT)) {
			ssize_t w = streamio_send(&p->io, out.data + sent, out.len - sent);
			if (w > 0)
				sent += (size_t)w;
			else if (w < 0)
				p->eof = true;
		}
		if (ev & STREAMIO_IN) {
			for (int i = 0; i < 16 && read_some(p) > 0; i++)
				;
		}
	}
	p->req = NULL;
	streamio_disarm(&p->io);
	if (sent > 0 && sent < out.len && !res->lost) {
		/* a frame cut in the middle: the driver's reader can never resync */
		res->restarted = kill_group(p);
		res->lost = res->killed = true;
	}
	buf_finish(&out);
	res->duration_ms = now_ms() - t0;
	return r;
}

void pyrepl_result_finish(struct pyrepl_result *res)
{
	capture_finish(&res->out);
	capture_finish(&res->err);
	json_decref(res->result);
	res->result = NULL;
	for (size_t i = 0; i < PYREPL_FIGURES_MAX; i++)
		buf_finish(&res->figures[i]);
}

bool pyrepl_alive(struct pyrepl *p)
{
	if (p->eof || p->broken)
		return false;
	while (read_some(p) > 0)
		;
	return !p->eof;
}

const char *pyrepl_python_version(const struct pyrepl *p)
{
	return p->python;
}

int64_t pyrepl_start_ms(const struct pyrepl *p)
{
	return p->start_ms;
}

void pyrepl_destroy(struct pyrepl *p)
{
	if (!p)
		return;
	streamio_close(&p->io);
	engine_stream_destroy(p->stream);
	buf_finish(&p->in);
	buf_finish(&p->assembled);
	free(p);
}

void pyrepl_kill(struct pyrepl *p)
{
	if (!p)
		return;
	/* after an exit of its own too: processes it started may still hold the group */
	if (!p->broken)
		kill_group(p);
	pyrepl_destroy(p);
}

unsigned pyrepl_cells(const struct pyrepl *p)
{
	return p ? p->cell : 0;
}
