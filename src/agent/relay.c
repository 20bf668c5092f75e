/*
 * relay.c - `sandbox-mcp-agent --relay PORT`: the sandbox's end of egress
 * (docs/egress.md).  A session with an egress policy has no network of its
 * own, only loopback; this listens on 127.0.0.1:PORT there and carries each
 * connection a program in the sandbox makes to it, over the relay frames of
 * agentproto.h on stdin/stdout, to the server, which is the proxy: it reads
 * the request, judges it and makes the real connection from its own side.
 *
 * It judges nothing itself: it runs in the sandbox, so it is trusted with
 * nothing.  The server starts it as a user the sandbox's user is not (it
 * cannot be killed or traced from the session), and if it dies anyway the
 * sandbox simply has no egress until the server starts it again.
 *
 * Single-threaded; every wait is one poll().  Bounded: at most
 * AGENTPROTO_RELAY_CONNS_MAX connections, a window of bytes per connection
 * and direction, and output to the server is not read past RELAY_OUT_MAX.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agentproto.h"
#include "agent/relay.h"

/* Frames waiting for stdout past which no socket is read. */
#define RELAY_OUT_MAX (1u << 20)

struct rconn {
	uint32_t id;
	int fd;
	uint32_t credit;   /* bytes we may still send the server */
	char *q;	   /* bytes from the server not yet written to fd */
	size_t qlen, qoff; /* q holds at most a window */
	bool rd_eof;	   /* the socket said EOF: 'Z' sent */
	bool wr_shut;	   /* the server said 'Z': shut down once q is written */
};

static struct rconn *conns[AGENTPROTO_RELAY_CONNS_MAX];
static size_t nconns;
static uint32_t next_id = 1;
static char *out;
static size_t out_len, out_cap;

static void out_append(const void *p, size_t n)
{
	if (out_len + n > out_cap) {
		size_t cap = out_cap ? out_cap : 65536;
		while (cap < out_len + n)
			cap *= 2;
		char *nb = realloc(out, cap);
		if (!nb)
			exit(3);
		out = nb;
		out_cap = cap;
	}
	memcpy(out + out_len, p, n);
	out_len += n;
}

static void frame(int type, uint32_t id, const void *p, size_t n)
{
	char h[AGENTPROTO_RELAY_HEAD];
	agentproto_relay_head(h, type, (uint32_t)(4 + n), id);
	out_append(h, sizeof(h));
	if (n)
		out_append(p, n);
}

static void frame_credit(uint32_t id, uint32_t n)
{
	char v[4] = { (char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n };
	frame('W', id, v, 4);
}

static void conn_drop(size_t i)
{
	close(conns[i]->fd);
	free(conns[i]->q);
	free(conns[i]);
	conns[i] = conns[--nconns];
}

static struct rconn *conn_find(uint32_t id, size_t *ret_i)
{
	for (size_t i = 0; i < nconns; i++)
		if (conns[i]->id == id) {
			*ret_i = i;
			return conns[i];
		}
	return NULL;
}

static void on_accept(int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (nconns == AGENTPROTO_RELAY_CONNS_MAX) {
		close(fd);
		return;
	}
	struct rconn *c = calloc(1, sizeof(*c));
	if (!c)
		exit(3);
	c->id = next_id++;
	c->fd = fd;
	c->credit = AGENTPROTO_RELAY_WINDOW;
	conns[nconns++] = c;
	frame('N', c->id, NULL, 0);
}

/* Reads what the socket has, as far as credit and the output cap allow. false: the connection is gone. */
static bool conn_read(struct rconn *c)
{
	static char tmp[AGENTPROTO_RELAY_DATA_MAX];
	size_t want = c->credit < sizeof(tmp) ? c->credit : sizeof(tmp);
	if (want == 0)
		return true;
	ssize_t n = read(c->fd, tmp, want);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0) {
		c->rd_eof = true;
		frame('Z', c->id, NULL, 0);
		return !(c->wr_shut && c->qoff == c->qlen);
	}
	c->credit -= (uint32_t)n;
	frame('D', c->id, tmp, (size_t)n);
	return true;
}

/* Writes queued bytes to the socket and gives the server its credit back. false: gone. */
static bool conn_write(struct rconn *c)
{
	ssize_t n = write(c->fd, c->q + c->qoff, c->qlen - c->qoff);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	c->qoff += (size_t)n;
	frame_credit(c->id, (uint32_t)n);
	if (c->qoff == c->qlen) {
		c->qoff = c->qlen = 0;
		if (c->wr_shut) {
			shutdown(c->fd, SHUT_WR);
			return !c->rd_eof;
		}
	}
	return true;
}

/* One whole frame from the server. false: a protocol error (the relay ends). */
static bool on_frame(int type, const char *p, uint32_t n)
{
	size_t i;
	if (n < 4)
		return false;
	struct rconn *c = conn_find(agentproto_u32(p), &i);
	if (!c)
		return true; /* it crossed our 'K' */
	p += 4, n -= 4;
	switch (type) {
	case 'D':
		if (c->wr_shut || c->qlen - c->qoff + n > AGENTPROTO_RELAY_WINDOW)
			return false;
		if (c->qoff) {
			memmove(c->q, c->q + c->qoff, c->qlen - c->qoff);
			c->qlen -= c->qoff, c->qoff = 0;
		}
		if (!c->q && !(c->q = malloc(AGENTPROTO_RELAY_WINDOW)))
			exit(3);
		memcpy(c->q + c->qlen, p, n);
		c->qlen += n;
		return true;
	case 'W': {
		if (n != 4)
			return false;
		uint64_t credit = (uint64_t)c->credit + agentproto_u32(p);
		if (credit > AGENTPROTO_RELAY_WINDOW)
			return false;
		c->credit = (uint32_t)credit;
		return true;
	}
	case 'Z':
		c->wr_shut = true;
		if (c->qoff == c->qlen) {
			shutdown(c->fd, SHUT_WR);
			if (c->rd_eof) {
				frame('K', c->id, NULL, 0);
				conn_drop(i);
			}
		}
		return true;
	case 'K':
		conn_drop(i);
		return true;
	}
	return false;
}

static int listen_on(const char *port_arg, int *ret_fd)
{
	char *end;
	long port = strtol(port_arg, &end, 10);
	if (*end || port < 1 || port > 65535)
		return -EINVAL;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 128) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*ret_fd = fd;
	return 0;
}

/* Reads frames from the server. false: EOF or a protocol error. */
static bool from_server(struct agentproto_whole *w)
{
	static char in[AGENTPROTO_RELAY_DATA_MAX + 64];
	ssize_t n = read(0, in, sizeof(in));
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	if (n == 0)
		return false;
	size_t off = 0;
	while (off < (size_t)n) {
		size_t used = 0;
		int r = agentproto_whole_feed(w, in + off, (size_t)n - off, &used);
		if (r == -1)
			return false;
		off += used;
		if (r == -2)
			break;
		if (!on_frame(w->f.type, w->buf, w->n))
			return false;
	}
	return true;
}

/* Writes what is queued for the server. false: stdout is gone. */
static bool to_server(void)
{
	ssize_t n = write(1, out, out_len);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR;
	memmove(out, out + n, out_len - (size_t)n);
	out_len -= (size_t)n;
	return true;
}

static void poll_set(struct pollfd *pfd, int lfd)
{
	pfd[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = out_len ? 1 : -1, .events = POLLOUT };
	pfd[2] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (size_t i = 0; i < nconns; i++) {
		struct rconn *c = conns[i];
		short ev = 0;
		if (!c->rd_eof && c->credit > 0 && out_len < RELAY_OUT_MAX)
			ev |= POLLIN;
		if (c->qoff < c->qlen)
			ev |= POLLOUT;
		/* nothing wanted: left out, or a hang-up would wake every poll */
		pfd[3 + i] = (struct pollfd){ .fd = ev ? c->fd : -1, .events = ev };
	}
}

int relay_main(const char *port)
{
	static struct pollfd pfd[3 + AGENTPROTO_RELAY_CONNS_MAX];
	static struct agentproto_whole w;
	int lfd = -1, r;

	/* a relay that just ended may still hold the port for a moment */
	for (int i = 0; (r = listen_on(port, &lfd)) == -EADDRINUSE && i < 20; i++)
		usleep(50 * 1000);
	if (r < 0) {
		char msg[128];
		int n = snprintf(msg, sizeof(msg), "%d listen on 127.0.0.1:%s: %s", -r, port, strerror(-r));
		char h[AGENTPROTO_HEADER_LEN];
		agentproto_header(h, 'F', (uint32_t)n);
		out_append(h, sizeof(h));
		out_append(msg, (size_t)n);
		fcntl(1, F_SETFL, 0);
		to_server();
		return 1;
	}
	if (fcntl(0, F_SETFL, O_NONBLOCK) < 0 || fcntl(1, F_SETFL, O_NONBLOCK) < 0)
		return 1;
	agentproto_whole_init(&w, AGENTPROTO_RELAY_TO_AGENT);
	char hello[32];
	int hn = snprintf(hello, sizeof(hello), "relay %s", port);
	char h[AGENTPROTO_HEADER_LEN];
	agentproto_header(h, 'H', (uint32_t)hn);
	out_append(h, sizeof(h));
	out_append(hello, (size_t)hn);

	for (;;) {
		poll_set(pfd, nconns < AGENTPROTO_RELAY_CONNS_MAX ? lfd : -1);
		size_t n = nconns;
		if (poll(pfd, 3 + n, -1) < 0 && errno != EINTR)
			return 1;
		if (pfd[1].revents && !to_server())
			return 0;
		if (pfd[0].revents && !from_server(&w))
			return 0;
		/* conns may have been dropped by frames: only look at the ones still at their slot */
		for (size_t i = n; i-- > 0;) {
			if (i >= nconns || pfd[3 + i].fd != conns[i]->fd || !pfd[3 + i].revents)
				continue;
			struct rconn *c = conns[i];
			bool ok = true;
			if (pfd[3 + i].revents & (POLLOUT | POLLERR))
				ok = conn_write(c);
			if (ok && (pfd[3 + i].revents & (POLLIN | POLLHUP | POLLERR)) && !c->rd_eof)
				ok = conn_read(c);
			if (!ok) {
				frame('K', c->id, NULL, 0);
				conn_drop(i);
			}
		}
		if (pfd[2].revents)
			on_accept(lfd);
	}
}
