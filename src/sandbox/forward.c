/*
 * forward.c - a sandbox port on the host's loopback (forward.h).
 *
 * One listening socket per forward, one thread accepting on it, and one
 * thread per connection: each connection is an exec of `agent --connect
 * PORT` in the session's container, its hijacked stream carrying the
 * client's bytes as stdin and the connection's back as stdout frames. So a
 * forward works on a session with no network at all, reaches a server
 * bound to the sandbox's own 127.0.0.1, and can reach nothing else: the
 * agent dials only its loopback, and only the port given here.
 *
 * An exec costs tens of ms (create, start, the runtime's spawn), so a
 * filler thread keeps FORWARD_SPARES of them started ahead of need, each
 * waiting for CONNECT_GO before it dials (connect.h): a connection takes
 * one and pays nothing; a burst past them starts its own. A rollback
 * (forward_rebind) lets the old container's spares go.
 *
 * Lifetime: forward_close shuts the listener and every live connection,
 * then waits for their threads; the session closes its forwards before it
 * is freed, so no thread outlives what it points at.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/connect.h"
#include "base/call.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/stream.h"
#include "sandbox/agentctl.h"
#include "sandbox/forward.h"

#define FORWARD_CHUNK (64 * 1024)

struct conn {
	struct forward *f;
	int fd;
	int stream_fd;	    /* the exec stream's socket once it runs, else -1 (under f->mu) */
	struct call *start; /* cancels its exec's start when the forward closes */
	struct conn *next;
};

/* Forwarded connections open at once in the whole server (each holds two fds and a thread). */
#define FORWARD_CONNS_TOTAL 512
/* How long a connection whose client has gone waits for the sandbox's side to end, ms. */
#define FORWARD_GRACE_MS 30000
/* Execs kept started ahead of need per forward (each an idle agent process in the sandbox). */
#define FORWARD_SPARES 4
/* After a spare failed to start (the container is gone or stopped), the next try waits this, s. */
#define FORWARD_SPARE_RETRY_S 1
/* How long an exec of the agent may take to start running, ms. */
#define FORWARD_READY_MS 15000
/* How long a new connection waits for a hold (a checkpoint's pause) to end before it is closed, s. */
#define FORWARD_HOLD_WAIT_S 10
static atomic_uint conns_total;

struct forward {
	unsigned port, host_port;
	char host[INET_ADDRSTRLEN]; /* the loopback address it listens on */
	void (*touch)(void *arg);   /* each connection: the session is in use */
	void *touch_arg;
	struct engine *engine;
	int lfd;
	int wake[2]; /* written to stop the accept thread */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t idle; /* a connection ended */
	char container[ENGINE_ID_LEN + 1];
	char user[64];
	struct conn *conns;
	unsigned nconns;
	struct engine_stream *spares[FORWARD_SPARES]; /* started for container, waiting for CONNECT_GO */
	unsigned nspares;
	unsigned generation; /* bumped by forward_rebind: a spare started before is let go */
	pthread_t filler;
	bool filler_started;
	struct call *fill_start; /* cancels the filler's exec start when the forward closes */
	pthread_cond_t want;	 /* a spare was taken, the container changed, a hold ended, or closing */
	/* forward_hold: no exec starts while held; starting counts those under way */
	unsigned held, starting;
	pthread_cond_t settled; /* starting fell to 0 */
	atomic_bool closing;
	uint64_t accepted, refused, bytes_in, bytes_out;
};

/* Sends the stream's stdout payloads to the client; false at the end of either. */
static bool to_client(struct forward *f, int client, struct stream_demux *d, const char *p, size_t n)
{
	while (n) {
		size_t used = 0;
		int type;
		struct slice s;
		int r = stream_demux_feed(d, p, n, &used, &type, &s);
		if (r == -2)
			return true;
		if (r < 0)
			return false;
		p += used;
		n -= used;
		if (type == STREAM_STDOUT) {
			for (size_t off = 0; off < s.n;) {
				ssize_t w = send(client, s.p + off, s.n - off, MSG_NOSIGNAL);
				if (w <= 0)
					return false;
				off += (size_t)w;
			}
			pthread_mutex_lock(&f->mu);
			f->bytes_out += s.n;
			pthread_mutex_unlock(&f->mu);
		} else if (type == STREAM_STDERR) {
			log_debugf("forward of port %u: %.*s", f->port, (int)(s.n > 200 ? 200 : s.n), s.p);
		}
	}
	return true;
}

/* Carries one connection until either side ends. */
static void pump(struct forward *f, int client, struct engine_stream *st)
{
	static const size_t cap = FORWARD_CHUNK;
	char *buf = xmalloc(cap);
	struct stream_demux d;
	struct buf ahead;
	stream_demux_init(&d);
	buf_init(&ahead, ENGINE_STREAM_AHEAD_MAX);
	bool ok = engine_stream_take_buffered(st, &ahead) == 0 && to_client(f, client, &d, ahead.data, ahead.len);
	buf_finish(&ahead);
	struct pollfd pfd[2] = { { .fd = client, .events = POLLIN }, { .fd = engine_stream_fd(st), .events = POLLIN } };
	/* a pump whose client went waits FORWARD_GRACE_MS at most for the sandbox's side to end */
	int64_t gone = 0;
	while (ok && !atomic_load(&f->closing) && !(gone && now_ms() - gone > FORWARD_GRACE_MS)) {
		int pr = poll(pfd, 2, 500);
		if (pr < 0) {
			ok = errno == EINTR;
			continue;
		}
		if (pfd[0].revents) {
			ssize_t n = recv(client, buf, cap, 0);
			if (n <= 0) {
				engine_stream_close_write(st); /* the sandbox's side sees the end of the request */
				pfd[0].fd = -1;
				gone = now_ms();
			} else {
				ok = engine_stream_write(st, buf, (size_t)n) == 0;
				pthread_mutex_lock(&f->mu);
				f->bytes_in += (uint64_t)n;
				pthread_mutex_unlock(&f->mu);
			}
		}
		if (ok && pfd[1].revents) {
			ssize_t n = read(pfd[1].fd, buf, cap);
			ok = n > 0 && to_client(f, client, &d, buf, (size_t)n);
		}
	}
	free(buf);
}

/*
 * Under f->mu: waits while f is held (at most wait_s; -1: until it is not)
 * and counts an exec start in. false: still held, or closing.
 */
static bool start_begin(struct forward *f, int wait_s)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += wait_s;
	while (f->held && !atomic_load(&f->closing)) {
		if (wait_s < 0)
			pthread_cond_wait(&f->want, &f->mu);
		else if (pthread_cond_timedwait(&f->want, &f->mu, &until) == ETIMEDOUT)
			break;
	}
	if (f->held || atomic_load(&f->closing))
		return false;
	f->starting++;
	return true;
}

/* Under f->mu: an exec start counted in by start_begin is over. */
static void start_end(struct forward *f)
{
	if (--f->starting == 0)
		pthread_cond_broadcast(&f->settled);
}

/*
 * Waits for the agent's CONNECT_READY: one stdout frame of one byte, and
 * nothing before it. The engine answers an exec start before the runtime has
 * started the process, and a container frozen meanwhile hangs that start
 * (and the engine): forward_hold waits for this, not for the answer.
 */
static void shut_stream(void *arg)
{
	shutdown(engine_stream_fd(arg), SHUT_RDWR);
}

static int ready_wait(struct engine_stream *st, struct call *call, int ms)
{
	unsigned char fr[STREAM_HEADER_LEN + 1];
	size_t have = 0;
	struct buf ahead;
	buf_init(&ahead, ENGINE_STREAM_AHEAD_MAX);
	int r = engine_stream_take_buffered(st, &ahead) < 0 || ahead.len > sizeof(fr) ? -EPROTO : 0;
	if (r == 0) {
		memcpy(fr, ahead.data ? ahead.data : "", ahead.len);
		have = ahead.len;
	}
	buf_finish(&ahead);
	if (r == 0 && call_arm(call, shut_stream, st) < 0)
		return -ECANCELED;
	int64_t end = now_ms() + ms;
	while (r == 0 && have < sizeof(fr)) {
		struct pollfd pfd = { .fd = engine_stream_fd(st), .events = POLLIN };
		int64_t left = end - now_ms();
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0) {
			r = -ETIMEDOUT;
			break;
		}
		ssize_t n = read(pfd.fd, fr + have, sizeof(fr) - have);
		if (n <= 0)
			r = n < 0 && errno == EINTR ? 0 : -EPIPE;
		else
			have += (size_t)n;
	}
	/* stdout (1), no padding, a payload of 1 byte, CONNECT_READY */
	if (r == 0 && !(fr[0] == STREAM_STDOUT && fr[1] == 0 && fr[2] == 0 && fr[3] == 0 && fr[4] == 0 && fr[5] == 0 &&
			fr[6] == 0 && fr[7] == 1 && fr[8] == CONNECT_READY))
		r = -EPROTO;
	call_disarm(call);
	return r;
}

/*
 * Starts `agent --connect PORT` in container as user and waits until it runs:
 * its stream, or NULL with err. forward_close cancels call: an engine that
 * does not answer (an exec into a container being removed can hang) must not
 * hold the forward, or the server's exit, for the engine's whole timeout.
 */
static struct engine_stream *conn_exec(struct forward *f, struct call *call, const char *container, const char *user,
				       struct err *err)
{
	char port[8], exec_id[ENGINE_ID_LEN + 1];
	struct engine_stream *st = NULL;
	snprintf(port, sizeof(port), "%u", f->port);
	json_t *cfg = json_pack("{s:b, s:b, s:b, s:b, s:b, s:s, s:[s, s, s]}", "AttachStdin", 1, "AttachStdout", 1,
				"AttachStderr", 1, "Tty", 0, "Privileged", 0, "User", user, "Cmd", AGENTCTL_PATH,
				"--connect", port);
	int r = engine_exec_create(f->engine, call, container, cfg, exec_id, err);
	json_decref(cfg);
	if (r == 0)
		r = engine_exec_start(f->engine, call, exec_id, &st, err);
	if (r == 0 && (r = ready_wait(st, call, FORWARD_READY_MS)) < 0) {
		err_set(err, ERRCODE_ENGINE_ERROR, r, "the agent of port %u did not start: %s", f->port, strerror(-r));
		engine_stream_destroy(st);
	}
	return r == 0 ? st : NULL;
}

/* Keeps FORWARD_SPARES execs started for the current container until the forward closes. */
static void *fill_main(void *arg)
{
	struct forward *f = arg;
	char container[ENGINE_ID_LEN + 1], user[64];
	struct err err;

	pthread_mutex_lock(&f->mu);
	while (!atomic_load(&f->closing)) {
		if (f->nspares >= FORWARD_SPARES) {
			pthread_cond_wait(&f->want, &f->mu);
			continue;
		}
		if (!start_begin(f, -1))
			continue;
		unsigned gen = f->generation;
		memcpy(container, f->container, sizeof(container));
		memcpy(user, f->user, sizeof(user));
		pthread_mutex_unlock(&f->mu);
		struct engine_stream *st = conn_exec(f, f->fill_start, container, user, &err);
		pthread_mutex_lock(&f->mu);
		start_end(f);
		if (!st) {
			log_debugf("forward of port %u: a spare: %s", f->port, err.msg);
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += FORWARD_SPARE_RETRY_S;
			if (!atomic_load(&f->closing))
				pthread_cond_timedwait(&f->want, &f->mu, &until);
		} else if (atomic_load(&f->closing) || gen != f->generation || f->nspares >= FORWARD_SPARES) {
			pthread_mutex_unlock(&f->mu);
			engine_stream_destroy(st); /* its agent reads EOF and ends without dialling */
			pthread_mutex_lock(&f->mu);
		} else {
			f->spares[f->nspares++] = st;
		}
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct forward *f = c->f;
	char container[ENGINE_ID_LEN + 1], user[64];
	struct engine_stream *st = NULL;
	struct err err;

	/* a spare is started already; a new exec waits out a hold (an exec into a frozen container hangs) */
	pthread_mutex_lock(&f->mu);
	while (!st && f->nspares) {
		st = f->spares[--f->nspares];
		/* a spare says nothing until its go: readable means its exec ended (its container restarted) */
		struct pollfd pfd = { .fd = engine_stream_fd(st), .events = POLLIN };
		if (poll(&pfd, 1, 0) != 0) {
			engine_stream_destroy(st);
			st = NULL;
		}
	}
	pthread_cond_broadcast(&f->want); /* the filler, not only a connection waiting out a hold */
	bool start = !st && start_begin(f, FORWARD_HOLD_WAIT_S);
	memcpy(container, f->container, sizeof(container));
	memcpy(user, f->user, sizeof(user));
	pthread_mutex_unlock(&f->mu);
	err_set(&err, ERRCODE_INTERNAL, -EAGAIN, "the session stayed paused");
	if (start) {
		st = conn_exec(f, c->start, container, user, &err);
		pthread_mutex_lock(&f->mu);
		start_end(f);
		pthread_mutex_unlock(&f->mu);
	}
	const char go = CONNECT_GO;
	if (st && engine_stream_write(st, &go, 1) == 0) {
		pthread_mutex_lock(&f->mu);
		c->stream_fd = atomic_load(&f->closing) ? -1 : engine_stream_fd(st);
		pthread_mutex_unlock(&f->mu);
		if (f->touch)
			f->touch(f->touch_arg);
		pump(f, c->fd, st);
	} else if (!st) {
		log_infof("forward of port %u: %s", f->port, err.msg);
	}
	pthread_mutex_lock(&f->mu);
	c->stream_fd = -1;
	pthread_mutex_unlock(&f->mu);
	engine_stream_destroy(st);
	shutdown(c->fd, SHUT_RDWR);
	atomic_fetch_sub(&conns_total, 1);

	pthread_mutex_lock(&f->mu);
	for (struct conn **pp = &f->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	f->nconns--;
	close(c->fd);
	call_destroy(c->start);
	free(c);
	pthread_cond_broadcast(&f->idle);
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

/* Takes a new connection: a thread of its own, or closed at once past FORWARD_CONNS_MAX. */
static void accept_one(void *arg, int fd)
{
	struct forward *f = arg;
	pthread_mutex_lock(&f->mu);
	if (atomic_load(&f->closing) || f->nconns >= FORWARD_CONNS_MAX ||
	    atomic_fetch_add(&conns_total, 1) >= FORWARD_CONNS_TOTAL) {
		if (!atomic_load(&f->closing) && f->nconns < FORWARD_CONNS_MAX)
			atomic_fetch_sub(&conns_total, 1);
		f->refused++;
		pthread_mutex_unlock(&f->mu);
		close(fd);
		return;
	}
	struct conn *c = xcalloc(1, sizeof(*c));
	c->f = f;
	c->fd = fd;
	c->stream_fd = -1;
	c->start = call_create(NULL, "", NULL, NULL, NULL);
	c->next = f->conns;
	f->conns = c;
	f->nconns++;
	f->accepted++;
	if (thread_start_detached(conn_main, c) != 0) {
		f->conns = c->next;
		f->nconns--;
		atomic_fetch_sub(&conns_total, 1);
		close(fd);
		call_destroy(c->start);
		free(c);
	}
	pthread_mutex_unlock(&f->mu);
}

static void *accept_main(void *arg)
{
	struct forward *f = arg;
	accept_until_woken(f->lfd, f->wake[0], accept_one, f);
	return NULL;
}

/*
 * A listening socket on a loopback address of its own, 127.x.y.z (x, y, z
 * random), at host_port (0: any free one); 127.0.0.1 when the host has no
 * such address. Its own address is its own site for a browser: cookies are
 * kept per host, not per port, so a page a sandbox serves shares none with
 * the other web apps on 127.0.0.1 (and its origin is not one the MCP
 * endpoint accepts). 0 with *ret_fd, *ret_port and host, or -errno.
 */
static int listen_loopback(unsigned host_port, int *ret_fd, unsigned *ret_port, char host[INET_ADDRSTRLEN])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)host_port) };
	socklen_t len = sizeof(a);
	unsigned char rnd[3];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		memset(rnd, 0, sizeof(rnd));
	/* 127.1-254.0-255.1-254: never 127.0.0.x, never a .0 or .255 last part */
	a.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)(1 + rnd[0] % 254) << 16 | (uint32_t)rnd[1] << 8 |
				  (uint32_t)(1 + rnd[2] % 254));
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		close(fd);
		return -errno;
	}
	int r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	if (r < 0 && errno == EADDRNOTAVAIL) {
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		r = bind(fd, (struct sockaddr *)&a, sizeof(a));
	}
	if (r < 0 || listen(fd, 64) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*ret_fd = fd;
	*ret_port = ntohs(a.sin_port);
	inet_ntop(AF_INET, &a.sin_addr, host, INET_ADDRSTRLEN);
	return 0;
}

int forward_open(struct engine *e, const char *container, const char *user, unsigned port, unsigned host_port,
		 void (*touch)(void *arg), void *touch_arg, struct forward **ret, struct err *err)
{
	struct forward *f = xcalloc(1, sizeof(*f));
	f->touch = touch;
	f->touch_arg = touch_arg;
	f->engine = e;
	f->port = port;
	f->lfd = f->wake[0] = f->wake[1] = -1;
	snprintf(f->container, sizeof(f->container), "%s", container);
	snprintf(f->user, sizeof(f->user), "%s", user);
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->idle, NULL);
	pthread_cond_init(&f->want, NULL);
	pthread_cond_init(&f->settled, NULL);
	int r = listen_loopback(host_port, &f->lfd, &f->host_port, f->host);
	if (r < 0) {
		err_set(err, r == -EADDRINUSE ? ERRCODE_INVALID_ARGUMENT : ERRCODE_INTERNAL, r,
			"cannot listen on the host's loopback, port %u: %s%s", host_port, strerror(-r),
			r == -EADDRINUSE ? " (omit host_port for a free one)" : "");
	} else if (pipe2(f->wake, O_CLOEXEC) < 0) {
		r = err_set(err, ERRCODE_INTERNAL, -errno, "pipe: %s", strerror(errno));
	} else if ((r = thread_create_nosig(&f->thread, NULL, accept_main, f)) != 0) {
		r = err_set(err, ERRCODE_INTERNAL, -r, "cannot start the forward's thread");
	} else {
		/* without spares each connection starts its own exec: slower, still right */
		f->fill_start = call_create(NULL, "", NULL, NULL, NULL);
		f->filler_started = thread_create_nosig(&f->filler, NULL, fill_main, f) == 0;
	}
	if (r < 0) {
		if (f->lfd >= 0)
			close(f->lfd);
		for (int i = 0; i < 2; i++)
			if (f->wake[i] >= 0)
				close(f->wake[i]);
		pthread_mutex_destroy(&f->mu);
		pthread_cond_destroy(&f->idle);
		pthread_cond_destroy(&f->want);
		pthread_cond_destroy(&f->settled);
		free(f);
		return r;
	}
	*ret = f;
	return 0;
}

/* Takes every spare out of f (under f->mu) into out; their count. */
static unsigned spares_take(struct forward *f, struct engine_stream *out[FORWARD_SPARES])
{
	unsigned n = f->nspares;
	memcpy(out, f->spares, n * sizeof(out[0]));
	f->nspares = 0;
	return n;
}

void forward_rebind(struct forward *f, const char *container)
{
	struct engine_stream *old[FORWARD_SPARES];
	pthread_mutex_lock(&f->mu);
	snprintf(f->container, sizeof(f->container), "%s", container);
	f->generation++;
	unsigned n = spares_take(f, old);
	pthread_cond_broadcast(&f->want);
	pthread_mutex_unlock(&f->mu);
	for (unsigned i = 0; i < n; i++)
		engine_stream_destroy(old[i]);
}

void forward_hold(struct forward *f)
{
	pthread_mutex_lock(&f->mu);
	f->held++;
	while (f->starting)
		pthread_cond_wait(&f->settled, &f->mu);
	pthread_mutex_unlock(&f->mu);
}

void forward_release(struct forward *f)
{
	pthread_mutex_lock(&f->mu);
	if (f->held)
		f->held--;
	pthread_cond_broadcast(&f->want);
	pthread_mutex_unlock(&f->mu);
}

unsigned forward_port(const struct forward *f)
{
	return f->port;
}

unsigned forward_host_port(const struct forward *f)
{
	return f->host_port;
}

const char *forward_host(const struct forward *f)
{
	return f->host;
}

json_t *forward_json(struct forward *f)
{
	pthread_mutex_lock(&f->mu);
	json_t *j = json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "port", (json_int_t)f->port, "host", f->host,
			      "host_port", (json_int_t)f->host_port, "connections", (json_int_t)f->nconns, "accepted",
			      (json_int_t)f->accepted, "refused", (json_int_t)f->refused, "bytes_in",
			      (json_int_t)f->bytes_in, "bytes_out", (json_int_t)f->bytes_out);
	pthread_mutex_unlock(&f->mu);
	return j;
}

void forward_close(struct forward *f)
{
	if (!f)
		return;
	char x = 'x';
	if (write(f->wake[1], &x, 1) < 0)
		log_warnf("forward of port %u: waking its thread: %s", f->port, strerror(errno));
	pthread_join(f->thread, NULL);
	close(f->lfd);
	pthread_mutex_lock(&f->mu);
	atomic_store(&f->closing, true);
	/* both ends: its pump sees the end at once, whatever the sandbox's side does, and its thread unlinks it */
	if (f->fill_start)
		call_cancel(f->fill_start);
	for (struct conn *c = f->conns; c; c = c->next) {
		call_cancel(c->start);
		shutdown(c->fd, SHUT_RDWR);
		if (c->stream_fd >= 0)
			shutdown(c->stream_fd, SHUT_RDWR);
	}
	pthread_cond_broadcast(&f->want);
	while (f->nconns)
		pthread_cond_wait(&f->idle, &f->mu);
	pthread_mutex_unlock(&f->mu);
	if (f->filler_started)
		pthread_join(f->filler, NULL);
	call_destroy(f->fill_start);
	struct engine_stream *spares[FORWARD_SPARES];
	unsigned n = spares_take(f, spares); /* the filler is gone: no lock needed */
	for (unsigned i = 0; i < n; i++)
		engine_stream_destroy(spares[i]);
	close(f->wake[0]);
	close(f->wake[1]);
	pthread_mutex_destroy(&f->mu);
	pthread_cond_destroy(&f->idle);
	pthread_cond_destroy(&f->want);
	pthread_cond_destroy(&f->settled);
	free(f);
}
