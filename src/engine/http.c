/*
 * http.c - request writing and response reading over a blocking socket, or
 * over an http_io on it (TLS run in the calling thread).
 *
 * The read buffer holds at most one response head plus one read's worth of
 * body; bodies pass through it and are never accumulated here.  A peer that
 * stalls longer than timeout_ms, resets, or sends malformed framing ends the
 * call with an error and marks the connection dead (never reused).
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "engine/http.h"

enum body_mode {
	BODY_NONE,
	BODY_LENGTH,
	BODY_CHUNKED,
	BODY_EOF,
};

/* Records an idle kept connection may have received that are not data (http_conn_idle_ok). */
#define HTTP_IDLE_RECORDS_MAX 8

struct http_conn {
	int fd;
	const struct http_io *io; /* NULL: read and write fd itself */
	void *io_arg;
	int timeout_ms;
	int idle_ms;	     /* each wait for a byte at most this (0: timeout_ms) */
	int64_t deadline;    /* now_ms() by which the response must be in; 0: none */
	bool answering;	     /* some of the response came */
	struct buf rbuf;     /* unread bytes from the socket */
	bool dead;	     /* framing error, reset or close: do not reuse */
	atomic_bool aborted; /* http_conn_abort ran (from a cancelling thread): do not reuse */
	bool keep_alive;     /* the response allowed reuse */
	enum body_mode mode;
	uint64_t remaining; /* BODY_LENGTH */
	struct http_chunked chunked;
	bool body_done;
};

static int fill(struct http_conn *c, struct err *err);
static bool token_ok(const char *s);
static int send_all(struct http_conn *c, const void *p, size_t n, struct err *err);

struct http_conn *http_conn_create(int fd, int timeout_ms)
{
	struct http_conn *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->timeout_ms = timeout_ms;
	buf_init(&c->rbuf, HTTP_HEAD_MAX + HTTP_READ_CHUNK);
	c->body_done = true;
	atomic_init(&c->aborted, false);
	/*
	 * Writes are bounded like reads: an engine that stops reading a request
	 * body (an upload, a build context) must not hold the call forever. The
	 * timeout is per write, so a slow but moving peer is fine. setsockopt
	 * fails only for a bad fd or a bad option, and then the next write says so.
	 */
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return c;
}

struct http_conn *http_conn_create_io(int fd, const struct http_io *io, void *arg, int timeout_ms)
{
	struct http_conn *c = http_conn_create(fd, timeout_ms);
	c->io = io;
	c->io_arg = arg;
	return c;
}

void http_conn_set_idle(struct http_conn *c, int idle_ms)
{
	c->idle_ms = idle_ms < c->timeout_ms ? idle_ms : 0;
}

void http_conn_destroy(struct http_conn *c)
{
	if (!c)
		return;
	if (c->io)
		c->io->close(c->io_arg);
	else if (c->fd >= 0)
		close(c->fd);
	buf_finish(&c->rbuf);
	free(c);
}

int http_conn_fd(const struct http_conn *c)
{
	return c->fd;
}

void http_conn_abort(struct http_conn *c)
{
	/* a cancel may land after the whole answer came: the connection is shut all the same */
	atomic_store(&c->aborted, true);
	if (c->io)
		c->io->abort(c->io_arg);
	else
		shutdown(c->fd, SHUT_RDWR);
}

bool http_conn_reusable(const struct http_conn *c)
{
	return !c->dead && !atomic_load(&c->aborted) && c->keep_alive && c->body_done && c->rbuf.len == 0;
}

bool http_conn_idle_ok(struct http_conn *c)
{
	char scratch[256];
	/* a ticket, then a close_notify: every record that came is looked at, a few at most */
	for (int i = 0; i < HTTP_IDLE_RECORDS_MAX; i++) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, 0) == 0 && !(c->io && c->io->pending(c->io_arg)))
			return true;
		if (!c->io || c->io->recv(c->io_arg, scratch, sizeof(scratch)) != -EAGAIN)
			return false;
	}
	return false;
}

static bool token_ok(const char *s)
{
	for (; *s; s++)
		if (*s == '\r' || *s == '\n')
			return false;
	return true;
}

/*
 * The request line and extra headers a request may be sent with: no token
 * may smuggle a second line or request (the target may carry a session's
 * name or a path, which came from a tool's caller).
 */
static int head_check(const char *method, const char *target, const char *extra_headers, struct err *err)
{
	if (!token_ok(method) || !token_ok(target) || strchr(target, ' ') || strchr(method, ' ') || target[0] != '/')
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "refusing to send a malformed request line");
	if (!extra_headers)
		return 0;
	/* every header line must end in CRLF and carry no bare CR/LF or blank line */
	if (strstr(extra_headers, "\r\n\r\n") || extra_headers[0] == '\r')
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "refusing to send a malformed header");
	for (const char *p = extra_headers; *p; p++) {
		if ((*p == '\r' && p[1] != '\n') || (*p == '\n' && (p == extra_headers || p[-1] != '\r')))
			return err_set(err, ERRCODE_INTERNAL, -EINVAL, "refusing to send a malformed header");
	}
	return 0;
}

/*
 * The request head, checked (head_check) and written into head: the request
 * line, our two headers, extra_headers, then framing (the body's length or
 * chunked, or "" for none). Its length, or -errno with err.
 */
static int head_build(char head[HTTP_REQUEST_HEAD_MAX], const char *method, const char *target,
		      const char *extra_headers, const char *framing, struct err *err)
{
	int r = head_check(method, target, extra_headers, err);
	if (r < 0)
		return r;
	int n = snprintf(head, HTTP_REQUEST_HEAD_MAX,
			 "%s %s HTTP/1.1\r\nHost: docker\r\nUser-Agent: sandbox-mcp\r\n%s%s\r\n", method, target,
			 extra_headers ? extra_headers : "", framing);
	if (n < 0 || n >= HTTP_REQUEST_HEAD_MAX)
		return err_set(err, ERRCODE_INTERNAL, -E2BIG, "request head too long");
	return n;
}

int http_request_send(struct http_conn *c, const char *method, const char *target, const char *extra_headers,
		      const void *body, size_t body_len, struct err *err)
{
	char head[HTTP_REQUEST_HEAD_MAX], framing[48] = "";

	/* no Content-Length: 0 on bodiless methods; some proxies dislike it */
	if (body_len || (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0))
		snprintf(framing, sizeof(framing), "Content-Length: %zu\r\n", body_len);
	int n = head_build(head, method, target, extra_headers, framing, err);
	if (n < 0)
		return n;
	c->deadline = now_ms() + c->timeout_ms;
	c->answering = false;
	int r = send_all(c, head, (size_t)n, err);
	if (r == 0 && body_len)
		r = send_all(c, body, body_len, err);
	if (r == 0) /* the answer's deadline counts from the end of the request */
		c->deadline = now_ms() + c->timeout_ms;
	return r;
}

int http_request_send_chunked(struct http_conn *c, const char *method, const char *target, const char *extra_headers,
			      struct err *err)
{
	char head[HTTP_REQUEST_HEAD_MAX];
	int n = head_build(head, method, target, extra_headers, "Transfer-Encoding: chunked\r\n", err);
	if (n < 0)
		return n;
	c->deadline = now_ms() + c->timeout_ms;
	c->answering = false;
	return send_all(c, head, (size_t)n, err);
}

int http_chunk_write(struct http_conn *c, const void *p, size_t n, struct err *err)
{
	char size[24];
	int k = snprintf(size, sizeof(size), "%zx\r\n", n);
	int r = send_all(c, size, (size_t)k, err);
	if (r == 0 && n)
		r = send_all(c, p, n, err);
	if (r == 0)
		r = send_all(c, "\r\n", 2, err);
	/* a chunked body is sent over minutes (a build context): its answer's deadline moves with it */
	if (r == 0)
		c->deadline = now_ms() + c->timeout_ms;
	return r;
}

/*
 * Writes all of p; an engine that takes nothing for timeout_ms (SO_SNDTIMEO
 * on a plain socket, a deadline over TLS) ends it with ERRCODE_TIMEOUT.
 */
static int send_all(struct http_conn *c, const void *p, size_t n, struct err *err)
{
	int r = c->io ? c->io->send_all(c->io_arg, p, n, c->timeout_ms) : write_full(c->fd, p, n);
	if (r == 0)
		return 0;
	c->dead = true;
	if (r == -EAGAIN || r == -EWOULDBLOCK)
		return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT,
			       "the Docker engine stopped reading the request for %d ms; check that dockerd is healthy "
			       "(`docker info`), then try again",
			       c->timeout_ms);
	return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r, "writing to the Docker engine failed: %s", strerror(-r));
}

/*
 * Waits until fd is readable, within the deadline and by idle_until (0: no
 * idle cap). 0, or -ETIMEDOUT or -errno with err.
 */
static int wait_readable(struct http_conn *c, int64_t idle_until, struct err *err)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	int64_t left;
	int r;
	do {
		/* a peer that trickles bytes still has to finish by the deadline */
		left = c->deadline ? c->deadline - now_ms() : c->timeout_ms;
		if (left > c->timeout_ms)
			left = c->timeout_ms;
		if (idle_until && left > idle_until - now_ms())
			left = idle_until - now_ms();
		r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
	} while (r < 0 && errno == EINTR);
	if (r > 0)
		return 0;
	c->dead = true;
	if (r < 0)
		return err_set(err, ERRCODE_ENGINE_ERROR, -errno, "poll: %s", strerror(errno));
	if (idle_until && (!c->deadline || c->deadline - now_ms() > 0))
		return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the Docker engine sent nothing for %d ms",
			       c->idle_ms);
	if (c->answering) /* bytes came, too slowly */
		return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT,
			       "the Docker engine did not finish its answer within %d ms", c->timeout_ms);
	return err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the Docker engine did not answer within %d ms",
		       c->timeout_ms);
}

/* One read into p: >0, 0 at the end, -EAGAIN (wait, then again), or -errno. */
static ssize_t conn_read(struct http_conn *c, void *p, size_t n)
{
	if (c->io)
		return c->io->recv(c->io_arg, p, n);
	ssize_t got;
	do
		got = read(c->fd, p, n);
	while (got < 0 && errno == EINTR);
	return got < 0 ? -errno : got;
}

/* Reads more bytes into rbuf. 0, -EPIPE at EOF, -ETIMEDOUT, or -errno. */
static int fill(struct http_conn *c, struct err *err)
{
	char *tail;
	int r = buf_reserve(&c->rbuf, HTTP_READ_CHUNK, &tail);
	if (r < 0) {
		c->dead = true;
		return err_set(err, ERRCODE_ENGINE_ERROR, -EMSGSIZE,
			       "the Docker engine sent an oversized response head");
	}
	ssize_t got;
	/* set once: records that carry no data (TLS tickets) do not count as bytes that came */
	int64_t idle_until = c->idle_ms > 0 ? now_ms() + c->idle_ms : 0;
	do {
		/* TLS may hold decrypted bytes that poll does not see; a partial record is read as -EAGAIN */
		if (!(c->io && c->io->pending(c->io_arg)) && (r = wait_readable(c, idle_until, err)) < 0)
			return r;
		got = conn_read(c, tail, HTTP_READ_CHUNK);
	} while (got == -EAGAIN);
	if (got < 0) {
		c->dead = true;
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, (int)got, "reading from the Docker engine failed: %s",
			       strerror((int)-got));
	}
	if (got == 0) {
		c->dead = true;
		return -EPIPE;
	}
	buf_commit(&c->rbuf, (size_t)got);
	c->answering = true;
	return 0;
}

int http_response_recv(struct http_conn *c, bool head_only, struct http_response *ret, struct err *err)
{
	struct http_head h;
	int n;

	memset(ret, 0, sizeof(*ret));
	for (;;) {
		n = http_parse_response(c->rbuf.data ? c->rbuf.data : "", c->rbuf.len, &h);
		if (n >= 0)
			break;
		if (n == -1) {
			c->dead = true;
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				       "the Docker engine sent a malformed HTTP response");
		}
		int r = fill(c, err);
		if (r == -EPIPE)
			return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EPIPE,
				       "the Docker engine closed the connection before answering");
		if (r < 0)
			return r;
	}

	ret->status = h.status;
	const struct slice *v;
	if ((v = http_head_get(&h, "Content-Type")))
		snprintf(ret->content_type, sizeof(ret->content_type), "%.*s", (int)v->n, v->p);
	if ((v = http_head_get(&h, "Api-Version")))
		snprintf(ret->api_version, sizeof(ret->api_version), "%.*s", (int)v->n, v->p);
	ret->path_stat[0] = '\0';
	if ((v = http_head_get(&h, "X-Docker-Container-Path-Stat")) && v->n < sizeof(ret->path_stat))
		snprintf(ret->path_stat, sizeof(ret->path_stat), "%.*s", (int)v->n, v->p);

	c->keep_alive = h.minor_version >= 1;
	if ((v = http_head_get(&h, "Connection")) && slice_case_eq(*v, "close"))
		c->keep_alive = false;

	const struct slice *te = http_head_get(&h, "Transfer-Encoding");
	const struct slice *cl = http_head_get(&h, "Content-Length");
	c->body_done = false;
	if (h.status == 101) {
		ret->upgraded = true;
		c->mode = BODY_NONE;
		c->keep_alive = false;
	} else if (head_only || h.status == 204 || h.status == 304 || (h.status >= 100 && h.status < 200)) {
		c->mode = BODY_NONE;
	} else if (te) {
		if (!slice_case_eq(*te, "chunked")) {
			c->dead = true;
			buf_consume(&c->rbuf, (size_t)n);
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				       "the Docker engine used an unsupported transfer coding");
		}
		c->mode = BODY_CHUNKED;
		http_chunked_init(&c->chunked);
	} else if (cl) {
		char tmp[24];
		uint64_t len;
		if (cl->n == 0 || cl->n >= sizeof(tmp)) {
			c->dead = true;
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "bad Content-Length from the Docker engine");
		}
		memcpy(tmp, cl->p, cl->n);
		tmp[cl->n] = '\0';
		if (parse_u64(tmp, 0, UINT64_MAX >> 2, &len) < 0) {
			c->dead = true;
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "bad Content-Length from the Docker engine");
		}
		c->mode = BODY_LENGTH;
		c->remaining = len;
	} else {
		c->mode = BODY_EOF;
		c->keep_alive = false;
	}
	if (c->mode == BODY_NONE || (c->mode == BODY_LENGTH && c->remaining == 0))
		c->body_done = true;
	/* the head slices point into rbuf: drop them only after the last use */
	buf_consume(&c->rbuf, (size_t)n);
	return 0;
}

ssize_t http_body_read(struct http_conn *c, void *dst, size_t cap, struct err *err)
{
	if (c->body_done || cap == 0)
		return 0;
	for (;;) {
		if (c->rbuf.len > 0) {
			switch (c->mode) {
			case BODY_NONE:
				c->body_done = true;
				return 0;
			case BODY_LENGTH:
			case BODY_EOF: {
				size_t n = c->rbuf.len < cap ? c->rbuf.len : cap;
				if (c->mode == BODY_LENGTH && n > c->remaining)
					n = (size_t)c->remaining;
				memcpy(dst, c->rbuf.data, n);
				buf_consume(&c->rbuf, n);
				if (c->mode == BODY_LENGTH) {
					c->remaining -= n;
					if (c->remaining == 0)
						c->body_done = true;
				}
				return (ssize_t)n;
			}
			case BODY_CHUNKED: {
				size_t used = 0;
				struct slice data;
				int r = http_chunked_decode(&c->chunked, c->rbuf.data, c->rbuf.len, &used, &data);
				if (r == -1) {
					c->dead = true;
					return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
						       "the Docker engine sent a malformed chunked body");
				}
				if (r == 0) {
					buf_consume(&c->rbuf, used);
					c->body_done = true;
					return 0;
				}
				if (r == 1) {
					/* data lies inside rbuf before `used`; copy what fits */
					size_t n = data.n < cap ? data.n : cap;
					size_t off = (size_t)(data.p - c->rbuf.data);
					memcpy(dst, data.p, n);
					if (n < data.n) {
						/* give back the part that did not fit */
						c->chunked.remaining += data.n - n;
						c->chunked.state = HTTP_CHUNKED_DATA;
						used = off + n;
					}
					buf_consume(&c->rbuf, used);
					return (ssize_t)n;
				}
				buf_consume(&c->rbuf, used); /* -2: all consumed, need more */
				break;
			}
			}
		} else if (c->mode == BODY_NONE) {
			c->body_done = true;
			return 0;
		}
		int r = fill(c, err);
		if (r == -EPIPE) {
			if (c->mode == BODY_EOF) {
				c->body_done = true;
				return 0;
			}
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPIPE,
				       "the Docker engine closed the connection in the middle of a response");
		}
		if (r < 0)
			return r;
	}
}

int http_body_read_all(struct http_conn *c, struct buf *out, struct err *err)
{
	for (;;) {
		char *tail;
		if (c->body_done)
			return 0;
		if (buf_reserve(out, 1, &tail) < 0) {
			c->dead = true;
			return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
				       "the Docker engine's response is larger than %zu bytes", out->max);
		}
		size_t room = out->max - out->len;
		if (room > HTTP_READ_CHUNK)
			room = HTTP_READ_CHUNK;
		if (buf_reserve(out, room, &tail) < 0)
			return err_set(err, ERRCODE_INTERNAL, -EMSGSIZE, "buffer");
		ssize_t n = http_body_read(c, tail, room, err);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return 0;
		buf_commit(out, (size_t)n);
	}
}

int http_take_buffered(struct http_conn *c, struct buf *out)
{
	if (c->rbuf.len && buf_append(out, c->rbuf.data, c->rbuf.len) < 0)
		return -EMSGSIZE;
	buf_reset(&c->rbuf);
	return 0;
}
