/*
 * proxy.c - the egress pump: one thread per session, one poll() over the
 * relay's stream, the resolver's mailbox and every origin socket.
 *
 * A connection goes HEAD (its request head arrives) -> RESOLVE -> CONNECT
 * -> (a tunnel: HELLO, its ClientHello is checked) -> OPEN, or to CLOSING
 * with a refusal on the way.  Nothing reaches an origin before the request
 * was judged, nothing of a tunnel before its server name was (judge.c).
 *
 * Memory is bounded by the relay's window: the agent sends at most
 * AGENTPROTO_RELAY_WINDOW bytes of a connection that were not acknowledged,
 * and they are acknowledged only once written to the origin (or dropped),
 * so `in` never holds more; origins are read only while the relay has
 * credit for them and the output queue is under PROXY_OUT_MAX.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include "agent/agentproto.h"
#include "base/buf.h"
#include "base/http_parse.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/stream.h"
#include "proxy/proxy-internal.h"
#include "proxy/proxy.h"
#include "proxy/proxyreq.h"
#include "proxy/resolve.h"
#include "proxy/tlshello.h"

static void pump_down(struct proxy *p, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* --- the log ---------------------------------------------------------- */

static struct logent *log_slot(struct proxy *p, const char *host, uint16_t port, bool allowed)
{
	size_t oldest = 0;
	for (size_t i = 0; i < p->nlog; i++) {
		struct logent *e = &p->log[i];
		if (e->port == port && e->allowed == allowed && strcmp(e->host, host) == 0)
			return e;
		if (e->last < p->log[oldest].last)
			oldest = i;
	}
	struct logent *e = &p->log[p->nlog < PROXY_LOG_MAX ? p->nlog++ : oldest];
	memset(e, 0, sizeof(*e));
	snprintf(e->host, sizeof(e->host), "%s", host);
	e->port = port;
	e->allowed = allowed;
	e->first = (int64_t)time(NULL);
	return e;
}

static void log_note(struct proxy *p, const struct pconn *c, bool allowed, const char *why)
{
	const char *host = c->req.host[0] ? c->req.host : "(malformed request)";
	pthread_mutex_lock(&p->mu);
	struct logent *e = log_slot(p, host, c->req.port, allowed);
	e->count++;
	e->last = (int64_t)time(NULL);
	if (why)
		snprintf(e->why, sizeof(e->why), "%s", why);
	pthread_mutex_unlock(&p->mu);
	log_infof("egress %s: %s %s:%u%s%s", p->name, allowed ? "allowed" : "refused", host, c->req.port,
		  why ? ": " : "", why ? why : "");
}

static void log_bytes(struct proxy *p, const struct pconn *c)
{
	if (!c->bytes_in && !c->bytes_out)
		return;
	pthread_mutex_lock(&p->mu);
	struct logent *e = log_slot(p, c->req.host, c->req.port, true);
	e->bytes_out += c->bytes_out;
	e->bytes_in += c->bytes_in;
	e->last = (int64_t)time(NULL);
	pthread_mutex_unlock(&p->mu);
}

/* --- frames to the relay ---------------------------------------------- */

static void frame(struct proxy *p, int type, uint32_t id, const void *data, size_t n)
{
	char h[AGENTPROTO_RELAY_HEAD];
	agentproto_relay_head(h, type, (uint32_t)(4 + n), id);
	/*
	 * Data is bounded by the credit checks; what is not (credit, ends) grows
	 * only while the relay reads nothing: past out's max it is broken.
	 */
	if (p->out.len + sizeof(h) + n > p->out.max) {
		if (!p->down[0])
			pump_down(p, "the relay reads nothing of what it is sent");
		return;
	}
	if (buf_append(&p->out, h, sizeof(h)) < 0 || (n && buf_append(&p->out, data, n) < 0))
		abort(); /* checked above */
}

static void ack(struct proxy *p, struct pconn *c, size_t n)
{
	if (n == 0)
		return;
	char v[4] = { (char)(n >> 24), (char)(n >> 16), (char)(n >> 8), (char)n };
	frame(p, 'W', c->id, v, 4);
}

/* Drops n bytes from the front of c->in and gives the relay their credit back. */
void proxy_consume(struct proxy *p, struct pconn *c, size_t n)
{
	buf_consume(&c->in, n);
	ack(p, c, n);
}

/* Sends bytes of our own to the sandbox (an answer): as much as the credit allows. */
static void say(struct proxy *p, struct pconn *c, const char *s, size_t n)
{
	if (n > c->credit)
		n = c->credit;
	c->credit -= (uint32_t)n;
	frame(p, 'D', c->id, s, n);
}

/* --- connections ------------------------------------------------------ */

static struct pconn *conn_find(struct proxy *p, uint32_t id)
{
	for (struct pconn *c = p->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static bool conn_live(struct proxy *p, const struct pconn *c)
{
	for (struct pconn *x = p->conns; x; x = x->next)
		if (x == c)
			return true;
	return false;
}

/* Forgets c; tell: send the relay a 'K' first. */
static void conn_free(struct proxy *p, struct pconn *c, bool tell)
{
	if (tell)
		frame(p, 'K', c->id, NULL, 0);
	log_bytes(p, c);
	for (struct pconn **pp = &p->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	if (c->fd >= 0)
		close(c->fd);
	if (c->ai)
		freeaddrinfo(c->ai);
	buf_finish(&c->in);
	buf_finish(&c->pre);
	free(c);
	pthread_mutex_lock(&p->mu);
	p->nconns--;
	pthread_mutex_unlock(&p->mu);
}

/* The answer to a request that is refused or failed: status, then why, and the connection closes. */
void proxy_refuse(struct proxy *p, struct pconn *c, int status, const char *why)
{
	static const char *const reasons[][2] = { { "400", "Bad Request" },	    { "403", "Forbidden" },
						  { "405", "Method Not Allowed" },  { "408", "Request Timeout" },
						  { "411", "Length Required" },	    { "431", "Headers Too Large" },
						  { "501", "Not Implemented" },	    { "502", "Bad Gateway" },
						  { "503", "Service Unavailable" }, { "504", "Gateway Timeout" } };
	char code[4], body[1024], msg[1400];
	const char *reason = "Error";
	snprintf(code, sizeof(code), "%d", status);
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++)
		if (strcmp(reasons[i][0], code) == 0)
			reason = reasons[i][1];
	log_note(p, c, false, why);
	if (c->state == PC_HELLO) {
		/* the tunnel is open: all the client understands now is a TLS alert (fatal, access_denied) */
		static const char alert[] = { 0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31 };
		say(p, c, alert, sizeof(alert));
	} else {
		int bn = snprintf(body, sizeof(body), "sandbox-mcp egress: %s\n", why);
		if (bn < 0 || (size_t)bn >= sizeof(body))
			bn = (int)strlen(body);
		int n = snprintf(msg, sizeof(msg),
				 "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
				 "Connection: close\r\n\r\n%s",
				 status, reason, bn, body);
		say(p, c, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1);
	}
	frame(p, 'Z', c->id, NULL, 0);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = PC_CLOSING;
	c->deadline = now_ms() + PROXY_CLOSING_MS;
	proxy_consume(p, c, c->in.len);
}

/*
 * True for an address of the server's own host (getifaddrs, read again
 * every 10 s): a name that resolves to one would reach the host's services
 * from inside it, whatever its class.
 */
static bool self_address(struct proxy *p, const struct sockaddr *sa)
{
	int64_t now = now_ms();
	if (!p->self_at || now - p->self_at > 10000) {
		struct ifaddrs *ifs;
		p->self.n = 0;
		p->self_at = now;
		if (getifaddrs(&ifs) == 0) {
			for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
				/* the special ones are refused anyway: only the public ones need the list */
				if (i->ifa_addr && !netaddr_special(i->ifa_addr))
					netaddr_list_add(&p->self, i->ifa_addr);
			freeifaddrs(ifs);
		}
	}
	return netaddr_listed(&p->self, sa);
}

/* Starts connecting to the next address the operator lets us reach. */
static void try_connect(struct proxy *p, struct pconn *c)
{
	int last_err = 0;
	for (; c->next_ai; c->next_ai = c->next_ai->ai_next) {
		struct addrinfo *a = c->next_ai;
		const char *why = netaddr_special(a->ai_addr);
		if (!why && self_address(p, a->ai_addr))
			why = "the server's own host";
		if (why && !netaddr_listed(&p->set->addresses, a->ai_addr)) {
			c->skipped = why;
			continue;
		}
		int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			last_err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
			c->fd = fd;
			c->state = PC_CONNECT;
			c->next_ai = a->ai_next;
			return;
		}
		last_err = errno;
		close(fd);
	}
	char why[400];
	if (c->skipped && !last_err) {
		snprintf(why, sizeof(why),
			 "%s resolves only to addresses egress never reaches: %s (the operator can allow them in "
			 "SANDBOX_EGRESS_ADDRESSES)",
			 c->req.host, c->skipped);
		proxy_refuse(p, c, 403, why);
		return;
	}
	snprintf(why, sizeof(why), "cannot connect to %s:%u: %s", c->req.host, c->req.port,
		 last_err ? strerror(last_err) : "no address");
	proxy_refuse(p, c, 502, why);
}

static void on_resolved(struct proxy *p, struct resolved *x)
{
	struct pconn *c = p->conns;
	while (c && c->lookup != x->tag)
		c = c->next;
	if (!c || c->state != PC_RESOLVE) {
		resolved_free(x);
		return;
	}
	if (!x->ai) {
		char why[400];
		snprintf(why, sizeof(why), "cannot resolve %s: %s", c->req.host, gai_strerror(x->gai_err));
		resolved_free(x);
		proxy_refuse(p, c, 502, why);
		return;
	}
	c->ai = c->next_ai = x->ai;
	x->ai = NULL;
	resolved_free(x);
	try_connect(p, c);
}

static void on_connected(struct proxy *p, struct pconn *c)
{
	int e = 0;
	socklen_t el = sizeof(e);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e) {
		close(c->fd);
		c->fd = -1;
		c->state = PC_RESOLVE;
		try_connect(p, c);
		return;
	}
	log_note(p, c, true, NULL);
	c->tried = 0;
	if (c->plain) {
		c->state = PC_OPEN;
		c->deadline = now_ms() + PROXY_IDLE_TIMEOUT_MS;
		return;
	}
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	say(p, c, ok, sizeof(ok) - 1);
	c->state = PC_HELLO;
	c->deadline = now_ms() + PROXY_HEAD_TIMEOUT_MS;
	proxy_hello_look(p, c);
}

/* --- bytes both ways -------------------------------------------------- */

/* Writes what is due to the origin. false: the connection is gone (freed). */
static bool origin_write(struct proxy *p, struct pconn *c)
{
	if (c->pre.len) {
		ssize_t n = send(c->fd, c->pre.data, c->pre.len, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			goto gone;
		if (n > 0)
			buf_consume(&c->pre, (size_t)n);
		if (c->pre.len)
			return true;
	}
	size_t due = c->in.len;
	if (c->plain && (int64_t)due > c->body_left)
		due = (size_t)c->body_left;
	if (due) {
		ssize_t n = send(c->fd, c->in.data, due, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			goto gone;
		if (n > 0) {
			proxy_consume(p, c, (size_t)n);
			c->bytes_out += (uint64_t)n;
			c->body_left -= c->plain ? n : 0;
			c->deadline = now_ms() + PROXY_IDLE_TIMEOUT_MS;
		}
	}
	/* past the body: one request per connection, the rest is dropped (and acknowledged) */
	if (c->plain && c->body_left == 0 && c->in.len)
		proxy_consume(p, c, c->in.len);
	if (c->sand_eof && c->in.len == 0 && !c->pre.len)
		shutdown(c->fd, SHUT_WR);
	return true;
gone:
	conn_free(p, c, true);
	return false;
}

/* Reads what the origin has, as far as the relay's credit and the output cap allow. false: freed. */
static bool origin_read(struct proxy *p, struct pconn *c)
{
	size_t want = c->credit < PROXY_READ_CHUNK ? c->credit : PROXY_READ_CHUNK;
	char *tail;
	/* past PROXY_OUT_MAX only frames of our own go out: out keeps that much room for them */
	if (want == 0 || p->out.len >= PROXY_OUT_MAX || buf_reserve(&p->out, AGENTPROTO_RELAY_HEAD + want, &tail) < 0)
		return true;
	ssize_t n = recv(c->fd, tail + AGENTPROTO_RELAY_HEAD, want, 0);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? true : (conn_free(p, c, true), false);
	if (n == 0) {
		c->origin_eof = true;
		frame(p, 'Z', c->id, NULL, 0);
		if (c->sand_eof) {
			conn_free(p, c, true);
			return false;
		}
		return true;
	}
	agentproto_relay_head(tail, 'D', (uint32_t)(4 + n), c->id);
	buf_commit(&p->out, AGENTPROTO_RELAY_HEAD + (size_t)n);
	c->credit -= (uint32_t)n;
	c->bytes_in += (uint64_t)n;
	c->deadline = now_ms() + PROXY_IDLE_TIMEOUT_MS;
	return true;
}

/* --- frames from the relay -------------------------------------------- */

static void on_new(struct proxy *p, uint32_t id)
{
	if (conn_find(p, id)) {
		pump_down(p, "the relay reused connection id %u", id);
		return;
	}
	struct pconn *c = xcalloc(1, sizeof(*c));
	c->id = id;
	c->fd = -1;
	c->credit = AGENTPROTO_RELAY_WINDOW;
	c->deadline = now_ms() + PROXY_HEAD_TIMEOUT_MS;
	buf_init(&c->in, AGENTPROTO_RELAY_WINDOW);
	c->next = p->conns;
	p->conns = c;
	pthread_mutex_lock(&p->mu);
	unsigned n = ++p->nconns;
	pthread_mutex_unlock(&p->mu);
	if (n > p->set->conns_max) {
		char why[200];
		snprintf(why, sizeof(why),
			 "this session has %u egress connections open, the most it may (SANDBOX_EGRESS_CONNS)",
			 p->set->conns_max);
		proxy_refuse(p, c, 503, why);
	}
}

static void on_data(struct proxy *p, struct pconn *c, const char *d, size_t n)
{
	if (c->state == PC_CLOSING || c->sand_eof) {
		ack(p, c, n);
		return;
	}
	if (buf_append(&c->in, d, n) < 0) {
		pump_down(p, "the relay sent past its window");
		return;
	}
	if (c->state == PC_HEAD)
		proxy_head_look(p, c);
	else if (c->state == PC_HELLO)
		proxy_hello_look(p, c);
}

static void on_frame(struct proxy *p, int type, const char *d, uint32_t n)
{
	if (type == 'H' || type == 'F') {
		pthread_mutex_lock(&p->mu);
		p->hello = type == 'H' ? 1 : -1;
		if (type == 'F')
			snprintf(p->down, sizeof(p->down), "the relay could not listen: %.*s", (int)(n < 200 ? n : 200),
				 d);
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->mu);
		return;
	}
	if (n < 4) {
		pump_down(p, "the relay sent a frame without a connection id");
		return;
	}
	uint32_t id = agentproto_u32(d);
	if (type == 'N') {
		on_new(p, id);
		return;
	}
	struct pconn *c = conn_find(p, id);
	if (!c)
		return; /* crossed our 'K' */
	d += 4, n -= 4;
	if (type == 'D') {
		on_data(p, c, d, n);
	} else if (type == 'W') {
		uint64_t credit = n == 4 ? (uint64_t)c->credit + agentproto_u32(d) : UINT64_MAX;
		if (credit > AGENTPROTO_RELAY_WINDOW)
			pump_down(p, "the relay gave more credit than its window");
		else
			c->credit = (uint32_t)credit;
	} else if (type == 'Z') {
		c->sand_eof = true;
		/* only an open connection has a half left to finish; any other one the client gave up on */
		if (c->state != PC_OPEN || c->origin_eof)
			conn_free(p, c, true);
		else if (c->state == PC_OPEN && c->in.len == 0 && !c->pre.len)
			shutdown(c->fd, SHUT_WR);
	} else if (type == 'K') {
		conn_free(p, c, false);
	}
}

/* Reads the relay's stream: docker's frames around the agent's. false: it ended. */
static bool relay_read(struct proxy *p, const char *in, size_t len)
{
	size_t off = 0;
	while (off < len && p->hello >= 0 && !p->down[0]) {
		size_t used = 0;
		int stream;
		struct slice data;
		int r = stream_demux_feed(&p->demux, in + off, len - off, &used, &stream, &data);
		if (r == -1) {
			pump_down(p, "the relay's stream is malformed");
			return false;
		}
		off += used;
		if (r == -2)
			break;
		if (stream == STREAM_STDERR || stream == STREAM_SYSTEMERR) {
			log_infof("egress %s: the relay says: %.*s", p->name, (int)(data.n < 300 ? data.n : 300),
				  data.p);
			continue;
		}
		for (size_t k = 0; k < data.n;) {
			size_t u = 0;
			int fr = agentproto_whole_feed(&p->frame, data.p + k, data.n - k, &u);
			if (fr == -1) {
				pump_down(p, "the relay broke the frame format");
				return false;
			}
			k += u;
			if (fr == -2)
				break;
			on_frame(p, p->frame.f.type, p->frame.buf, p->frame.n);
		}
	}
	return !p->down[0];
}

/* --- the pump --------------------------------------------------------- */

static void pump_down(struct proxy *p, const char *fmt, ...)
{
	va_list ap;
	char why[256];
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&p->mu);
	if (!p->down[0])
		snprintf(p->down, sizeof(p->down), "%s", why);
	if (p->hello == 0)
		p->hello = -1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->mu);
	atomic_store(&p->alive, false);
	log_warnf("egress %s: %s: the session has no egress until the relay is started again", p->name, why);
}

/* Takes a new policy, and closes what it no longer allows. */
static void policy_apply(struct proxy *p)
{
	pthread_mutex_lock(&p->mu);
	struct policy old = p->policy;
	p->policy = p->next_policy;
	p->next_policy = (struct policy){ 0 };
	p->policy_changed = false;
	pthread_mutex_unlock(&p->mu);
	policy_finish(&old);
	for (struct pconn *c = p->conns, *next; c; c = next) {
		next = c->next;
		char why[1000];
		if (c->state == PC_HEAD || c->state == PC_CLOSING || proxy_allowed(p, c, why, sizeof(why)))
			continue;
		log_note(p, c, false, "closed: the egress policy changed and no longer allows it");
		conn_free(p, c, true);
	}
}

static void timers(struct proxy *p, int64_t now)
{
	for (struct pconn *c = p->conns, *next; c; c = next) {
		next = c->next;
		if (now < c->deadline)
			continue;
		char why[400];
		switch (c->state) {
		case PC_HEAD:
		case PC_HELLO:
			proxy_refuse(p, c, 408,
				     c->state == PC_HEAD ? "no whole request head came within 10 s"
							 : "no TLS ClientHello came within 10 s");
			break;
		case PC_RESOLVE:
		case PC_CONNECT:
			snprintf(why, sizeof(why), "connecting to %s:%u took longer than %d s", c->req.host,
				 c->req.port, PROXY_CONNECT_TIMEOUT_MS / 1000);
			proxy_refuse(p, c, 504, why);
			break;
		case PC_OPEN:
		case PC_CLOSING:
			conn_free(p, c, true);
			break;
		}
	}
}

/* The poll set: wake, resolver, relay, then one slot per connection (fd -1 when it waits on nothing). */
static size_t poll_set(struct proxy *p, struct pollfd *pfd, struct pconn **who, size_t max, int64_t *next)
{
	size_t n = 3;
	pfd[0] = (struct pollfd){ .fd = p->wake, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = resolver_fd(p->res), .events = POLLIN };
	pfd[2] = (struct pollfd){ .fd = p->fd, .events = (short)(POLLIN | (p->out.len ? POLLOUT : 0)) };
	for (struct pconn *c = p->conns; c; c = c->next) {
		if (n == max)
			break;
		short ev = 0;
		if (c->state == PC_CONNECT || (c->state == PC_OPEN && (c->pre.len || c->in.len)))
			ev |= POLLOUT;
		if (c->state == PC_OPEN && !c->origin_eof && c->credit && p->out.len < PROXY_OUT_MAX)
			ev |= POLLIN;
		if (c->deadline < *next)
			*next = c->deadline;
		/* only those with an fd and something to wait for: refused ones must not crowd them out */
		if (!ev || c->fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = c->fd, .events = ev };
		who[n++] = c;
	}
	return n;
}

/* Handles one connection's poll result. */
static void conn_event(struct proxy *p, struct pconn *c, short rev)
{
	if (c->state == PC_CONNECT) {
		on_connected(p, c);
		return;
	}
	if ((rev & (POLLOUT | POLLERR)) && !origin_write(p, c))
		return;
	if (rev & (POLLIN | POLLHUP | POLLERR))
		origin_read(p, c);
}

static void relay_write(struct proxy *p)
{
	ssize_t n = send(p->fd, p->out.data, p->out.len, MSG_NOSIGNAL);
	if (n > 0)
		buf_consume(&p->out, (size_t)n);
	else if (n < 0 && errno != EAGAIN && errno != EINTR)
		pump_down(p, "writing to the relay failed: %s", strerror(errno));
}

static void *pump_main(void *arg)
{
	struct proxy *p = arg;
	size_t max = 3 + p->set->conns_max + 8;
	struct pollfd *pfd = xcalloc(max, sizeof(*pfd));
	struct pconn **who = xcalloc(max, sizeof(*who));
	char *in = xmalloc(PROXY_READ_CHUNK);

	while (!p->down[0]) {
		int64_t next = now_ms() + 1000;
		size_t n = poll_set(p, pfd, who, max, &next);
		int64_t wait = next - now_ms();
		if (poll(pfd, n, wait < 0 ? 0 : (int)wait) < 0 && errno != EINTR) {
			pump_down(p, "poll failed: %s", strerror(errno));
			break;
		}
		if (pfd[0].revents) {
			uint64_t v;
			if (read(p->wake, &v, sizeof(v)) < 0) {
				/* EAGAIN: another wake took it */
			}
			pthread_mutex_lock(&p->mu);
			bool stop = p->stop, changed = p->policy_changed;
			pthread_mutex_unlock(&p->mu);
			if (stop)
				break;
			if (changed)
				policy_apply(p);
		}
		/* only frees happen in this loop, so a pointer still on the list is the same connection */
		for (size_t i = 3; i < n; i++)
			if (pfd[i].fd >= 0 && pfd[i].revents && conn_live(p, who[i]))
				conn_event(p, who[i], pfd[i].revents);
		if (pfd[1].revents)
			for (struct resolved *x = resolver_take(p->res), *nx; x; x = nx) {
				nx = x->next;
				on_resolved(p, x);
			}
		if (pfd[2].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = recv(p->fd, in, PROXY_READ_CHUNK, 0);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
				pump_down(p, "the relay ended (%s)", r == 0 ? "its stream closed" : strerror(errno));
			else if (r > 0)
				relay_read(p, in, (size_t)r);
		}
		if (p->out.len && !p->down[0])
			relay_write(p);
		timers(p, now_ms());
	}
	while (p->conns)
		conn_free(p, p->conns, false);
	free(pfd);
	free(who);
	free(in);
	return NULL;
}

/* --- the caller's side ------------------------------------------------ */

static void wake(struct proxy *p)
{
	uint64_t one = 1;
	if (write(p->wake, &one, sizeof(one)) < 0) {
		/* the counter is far from full: a wake is pending anyway */
	}
}

static void proxy_free(struct proxy *p)
{
	resolver_close(p->res);
	if (p->wake >= 0)
		close(p->wake);
	policy_finish(&p->policy);
	policy_finish(&p->next_policy);
	buf_finish(&p->out);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

static void policy_copy(struct policy *dst, const struct policy *src)
{
	dst->n = 0;
	dst->rules = NULL;
	for (size_t i = 0; i < src->n; i++)
		if (policy_add(dst, &src->rules[i]) < 0)
			abort(); /* src has at most as many */
}

/* Waits for the relay's hello. 0 or -errno with err. */
static int await_hello(struct proxy *p, int timeout_ms, struct err *err)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L)
		until.tv_sec++, until.tv_nsec -= 1000000000L;
	pthread_mutex_lock(&p->mu);
	while (p->hello == 0)
		if (pthread_cond_timedwait(&p->cond, &p->mu, &until) == ETIMEDOUT)
			break;
	int hello = p->hello;
	char down[sizeof(p->down)];
	snprintf(down, sizeof(down), "%s", p->down);
	pthread_mutex_unlock(&p->mu);
	if (hello == 1)
		return 0;
	if (hello == 0)
		return err_set(err, ERRCODE_ENGINE_ERROR, -ETIMEDOUT, "the egress relay did not start within %d ms",
			       timeout_ms);
	return err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the egress relay did not start: %s", down);
}

int proxy_start(int fd, const char *buffered, size_t nbuf, const struct policy *policy,
		const struct proxy_settings *set, const char *name, int timeout_ms, struct proxy **ret, struct err *err)
{
	struct proxy *p = xcalloc(1, sizeof(*p));
	p->fd = fd;
	p->set = set;
	p->wake = -1;
	snprintf(p->name, sizeof(p->name), "%s", name);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cond, NULL);
	policy_copy(&p->policy, policy);
	stream_demux_init(&p->demux);
	agentproto_whole_init(&p->frame, AGENTPROTO_RELAY_TO_SERVER);
	buf_init(&p->out, 2 * PROXY_OUT_MAX + 2 * (AGENTPROTO_RELAY_HEAD + PROXY_READ_CHUNK));
	atomic_store(&p->alive, true);
	int r = resolver_create(set->conns_max, &p->res);
	if (r == 0 && (p->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
		r = -errno;
	int fl = fcntl(fd, F_GETFL);
	if (r == 0 && (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		r = -errno;
	if (r < 0) {
		proxy_free(p);
		return err_set(err, ERRCODE_INTERNAL, r, "egress: %s", strerror(-r));
	}
	if (nbuf)
		relay_read(p, buffered, nbuf);
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, PROXY_STACK);
	r = -pthread_create(&p->thread, &at, pump_main, p);
	pthread_attr_destroy(&at);
	if (r < 0) {
		proxy_free(p);
		return err_set(err, ERRCODE_INTERNAL, r, "egress: cannot start a thread: %s", strerror(-r));
	}
	if ((r = await_hello(p, timeout_ms, err)) < 0) {
		proxy_stop(p);
		return r;
	}
	*ret = p;
	return 0;
}

void proxy_set_policy(struct proxy *p, const struct policy *policy)
{
	struct policy copy;
	policy_copy(&copy, policy);
	pthread_mutex_lock(&p->mu);
	policy_finish(&p->next_policy);
	p->next_policy = copy;
	p->policy_changed = true;
	pthread_mutex_unlock(&p->mu);
	wake(p);
}

bool proxy_alive(struct proxy *p)
{
	return atomic_load(&p->alive);
}

json_t *proxy_status_json(struct proxy *p)
{
	json_t *log = json_array();
	pthread_mutex_lock(&p->mu);
	for (size_t i = 0; i < p->nlog; i++) {
		const struct logent *e = &p->log[i];
		json_t *o = json_pack("{s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:I}", "host", e->host, "port", e->port,
				      "verdict", e->allowed ? "allowed" : "refused", "count", (json_int_t)e->count,
				      "bytes_out", (json_int_t)e->bytes_out, "bytes_in", (json_int_t)e->bytes_in,
				      "first", (json_int_t)e->first, "last", (json_int_t)e->last);
		if (e->why[0])
			json_object_set_new(o, "reason", json_string(e->why));
		json_array_append_new(log, o);
	}
	json_t *st = json_pack("{s:o, s:s, s:i, s:o}", "policy",
			       policy_json(p->policy_changed ? &p->next_policy : &p->policy), "relay",
			       p->down[0] ? p->down : "up", "connections", (int)p->nconns, "log", log);
	pthread_mutex_unlock(&p->mu);
	return st;
}

void proxy_stop(struct proxy *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_mutex_unlock(&p->mu);
	wake(p);
	pthread_join(p->thread, NULL);
	proxy_free(p);
}
