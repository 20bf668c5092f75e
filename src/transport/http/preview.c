/*
 * preview.c - previews of forwarded ports (preview.h).
 *
 * One listening socket, one thread accepting on it and one thread per
 * connection, as forward.c. A connection's first request head is read
 * (within PREVIEW_HEAD_MS and HTTP_PARSE_REQUEST_MAX) and judged:
 *
 *   - Host must be PORT-SESSION.<the preview base's authority> (421 else:
 *     a rebound DNS name or a stray client never reaches a sandbox);
 *   - ?sbx_preview=EXP.SIG, the link port_forward returned: checked, then
 *     a 303 to the same path without it, setting a host-only HttpOnly
 *     cookie (so the token leaves the address bar and no Referer carries
 *     it);
 *   - else a cookie sbx_preview=EXP.SIG that verifies for this host (a
 *     cookie another preview planted for the parent domain does not);
 *   - the MAC names the session's owner as the registry knows it now: a
 *     tampered, expired or another session's link gets 403.
 *
 * Then the request goes on to the forward's own loopback listener
 * (forward.c: the agent dials only the sandbox's port) with its head
 * rewritten (previewreq.h: no hop-by-hop headers, no sbx_preview cookie,
 * "Connection: close"), its body by Content-Length, and the app's answer
 * comes back until the app closes: one request per connection, so each is
 * judged (a proxy in front that pools connections cannot slip another
 * client's request into a judged one). A WebSocket upgrade the app answers
 * with 101 becomes a tunnel both ways, as the protocol then is.
 *
 * Why it is safe beside /mcp: a preview is an origin of its own (its own
 * host and port), so its scripts cannot read the server's responses; /mcp
 * takes no cookies (bearer tokens only) and checks Origin, so cookies a
 * preview sets for a parent domain reach nothing.
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
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/http_parse.h"
#include "base/log.h"
#include "base/util.h"
#include "transport/http/preview.h"
#include "transport/http/previewreq.h"

/* Relayed connections of one principal's previews at once: the others' keep the rest of PREVIEW_CONNS_MAX. */
#define PREVIEW_PRINCIPAL_CONNS 64
/* The first request head must arrive within this, ms (slowloris). */
#define PREVIEW_HEAD_MS 10000
/* How long a relay whose one side ended waits for the other, ms. */
#define PREVIEW_GRACE_MS 30000
#define PREVIEW_CHUNK (64 * 1024)
/* The longest path a link's 303 sends the browser back to; a longer one goes to "/". */
#define PREVIEW_LOCATION_MAX 256
/* Connections whose first head has not been judged yet, at once: no link, no more of PREVIEW_CONNS_MAX. */
#define PREVIEW_UNJUDGED_MAX 64
/* A relay with no byte either way for this long ends, ms (a tab left open; a live-reload socket pings). */
#define PREVIEW_IDLE_MS (10 * 60 * 1000)

struct pconn {
	struct preview *p;
	int fd, up;			    /* the browser's socket; the forward's (-1 until connected) */
	char owner[CALL_PRINCIPAL_MAX + 1]; /* the principal whose preview it was let in to ("" until then) */
	struct pconn *next;
};

struct preview {
	struct session_mgr *sessions;
	struct linksign *links;
	int lfd;
	int wake[2];
	unsigned port;
	bool https; /* the base is https: the cookie is Secure */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t idle;
	struct pconn *conns;
	unsigned nconns;
	unsigned unjudged; /* of them, still before their first head was judged */
	atomic_bool closing;
};

/* Writes all of p; false when the peer is gone. */
static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* A short answer of our own, then the connection ends. */
static void answer(int fd, unsigned status, const char *reason, const char *extra, const char *body)
{
	char head[1024];
	int k = snprintf(head, sizeof(head),
			 "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
			 "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nReferrer-Policy: no-referrer\r\n"
			 "%sConnection: close\r\n\r\n",
			 status, reason, strlen(body), extra ? extra : "");
	if (k > 0 && (size_t)k < sizeof(head) && send_all(fd, head, (size_t)k))
		(void)send_all(fd, body, strlen(body));
}

/* Reads the first request head into b; its length, or -1 (answered or gone). */
static int read_head(int fd, struct buf *b, struct http_request *req)
{
	int64_t deadline = now_ms() + PREVIEW_HEAD_MS;
	char chunk[4096];
	size_t seen = 0; /* bytes already searched for the blank line: a head dripped in is parsed once */
	for (;;) {
		size_t from = seen > 3 ? seen - 3 : 0;
		bool whole = b->len > from && memmem(b->data + from, b->len - from, "\r\n\r\n", 4);
		seen = b->len;
		int r = whole || b->len > HTTP_PARSE_REQUEST_MAX ? http_parse_request(b->data, b->len, req) : -2;
		if (r >= 0)
			return r;
		if (r == -1) {
			answer(fd, 400, "Bad Request", NULL,
			       "This is not an HTTP/1.1 request head of at most 16 KiB.\n");
			return -1;
		}
		int64_t left = deadline - now_ms();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (left <= 0 || poll(&pfd, 1, (int)left) <= 0)
			return -1;
		ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0 || buf_append(b, chunk, (size_t)n) < 0)
			return -1;
	}
}

/* The one Host header; NULL when there is none or more than one (which would the app believe?). */
static const struct slice *req_host(const struct http_request *req)
{
	const struct slice *found = NULL;
	for (size_t i = 0; i < req->num_headers; i++) {
		if (req->headers[i].name.n != 4 || strncasecmp(req->headers[i].name.p, "Host", 4) != 0)
			continue;
		if (found)
			return NULL;
		found = &req->headers[i].value;
	}
	return found;
}

static const char *verdict_text(enum linksign_verdict v)
{
	switch (v) {
	case LINKSIGN_EXPIRED:
		return "This preview link has expired: port_forward {action: \"list\"} gives a fresh one.\n";
	case LINKSIGN_ALTERED:
		return "This preview link is not valid for this host (altered, or from another session or server).\n";
	default:
		return "Open the preview link port_forward returned: this host needs it once.\n";
	}
}

/*
 * The link's ?sbx_preview=: on success, answers 303 to the target without
 * the query (the cookie set) and returns 1; 0 when the target has none;
 * -1 when it has a bad one (answered).
 */
static int trade_link(struct preview *p, int fd, const struct http_request *req, const char *owner, const char *session,
		      unsigned port)
{
	const char *q = memchr(req->target.p, '?', req->target.n);
	if (!q)
		return 0;
	size_t pos = 0, qn = req->target.n - (size_t)(q + 1 - req->target.p);
	char exp[LINKSIGN_EXP_DIGITS + 1], sig[LINKSIGN_SIG_LEN + 1];
	if (linksign_preview_cred(q + 1, qn, '&', &pos, exp, sig) < 0)
		return 0;
	enum linksign_verdict v = linksign_preview_verify(p->links, owner, session, port, exp, sig,
							  (int64_t)time(NULL));
	if (v != LINKSIGN_OK) {
		answer(fd, 403, "Forbidden", NULL, verdict_text(v));
		return -1;
	}
	char extra[640];
	int64_t age = strtoll(exp, NULL, 10) - (int64_t)time(NULL);
	/*
	 * The path alone: the token leaves the address bar; anything the app's
	 * own query held goes too. Only an origin-form path of this host ("/x",
	 * not "//evil/x", "/\\evil" or "http://evil/"), and not one so long the
	 * cookie would not fit: else "/".
	 */
	size_t pn = (size_t)(q - req->target.p);
	const char *path = req->target.p;
	if (pn == 0 || pn > PREVIEW_LOCATION_MAX || path[0] != '/' || (pn > 1 && (path[1] == '/' || path[1] == '\\')))
		path = "/", pn = 1;
	int k = snprintf(extra, sizeof(extra),
			 "Location: %.*s\r\nSet-Cookie: " LINKSIGN_PREVIEW_PARAM
			 "=%s.%s; Path=/; Max-Age=%lld; HttpOnly; SameSite=Lax%s\r\n",
			 (int)pn, path, exp, sig, (long long)(age > 0 ? age : 0), p->https ? "; Secure" : "");
	if (k < 0 || (size_t)k >= sizeof(extra))
		answer(fd, 500, "Internal Server Error", NULL, "The preview's answer did not fit.\n");
	else
		answer(fd, 303, "See Other", extra, "");
	return 1;
}

/* Whether a Cookie header of req holds a credential good for this preview. */
static enum linksign_verdict cookie_verdict(struct preview *p, const struct http_request *req, const char *owner,
					    const char *session, unsigned port)
{
	enum linksign_verdict best = LINKSIGN_MALFORMED;
	for (size_t i = 0; i < req->num_headers; i++) {
		const struct http_header *h = &req->headers[i];
		if (h->name.n != 6 || strncasecmp(h->name.p, "Cookie", 6) != 0)
			continue;
		char exp[LINKSIGN_EXP_DIGITS + 1], sig[LINKSIGN_SIG_LEN + 1];
		size_t pos = 0;
		/* at most HTTP_PARSE_REQUEST_MAX / 78 items can even parse: a bounded number of MACs */
		while (linksign_preview_cred(h->value.p, h->value.n, ';', &pos, exp, sig) == 0) {
			enum linksign_verdict v = linksign_preview_verify(p->links, owner, session, port, exp, sig,
									  (int64_t)time(NULL));
			if (v == LINKSIGN_OK)
				return v;
			if (v == LINKSIGN_EXPIRED || best == LINKSIGN_MALFORMED)
				best = v;
		}
	}
	return best;
}

/* Judges the head; the forward's address when the connection may pass, else answers and returns -1. */
static int judge(struct preview *p, int fd, const struct http_request *req, char owner[CALL_PRINCIPAL_MAX + 1],
		 char host[16], unsigned *host_port)
{
	const struct slice *h = req_host(req);
	char session[13];
	unsigned port;
	if (!h || linksign_preview_host(p->links, h->p, h->n, session, &port) < 0) {
		answer(fd, 421, "Misdirected Request", NULL,
		       "This server serves previews at PORT-SESSION hosts only: open the link port_forward returned.\n");
		return -1;
	}
	if (session_forward_find(p->sessions, session, port, owner, host, host_port) < 0) {
		answer(fd, 404, "Not Found", NULL,
		       "No such preview: the session has ended, or its port is no longer forwarded.\n");
		return -1;
	}
	int t = trade_link(p, fd, req, owner, session, port);
	if (t != 0)
		return -1;
	enum linksign_verdict v = cookie_verdict(p, req, owner, session, port);
	if (v != LINKSIGN_OK) {
		answer(fd, 403, "Forbidden", NULL, verdict_text(v));
		return -1;
	}
	return 0;
}

/* Counts c in for its owner's previews; false (answered 503) when they hold PREVIEW_PRINCIPAL_CONNS already. */
static bool admit(struct preview *p, struct pconn *c, const char *owner)
{
	const char *key = owner[0] ? owner : "-"; /* "" is a principal too: on loopback without tokens */
	unsigned n = 0;
	pthread_mutex_lock(&p->mu);
	for (struct pconn *o = p->conns; o; o = o->next)
		n += o != c && strcmp(o->owner, key) == 0;
	if (n < PREVIEW_PRINCIPAL_CONNS)
		snprintf(c->owner, sizeof(c->owner), "%s", key);
	pthread_mutex_unlock(&p->mu);
	if (n >= PREVIEW_PRINCIPAL_CONNS)
		answer(c->fd, 503, "Service Unavailable", "Retry-After: 1\r\n",
		       "Too many connections to this principal's previews at once; retry when some have ended.\n");
	return n < PREVIEW_PRINCIPAL_CONNS;
}

/* A TCP connection to the forward's listener; the fd or -1. */
static int dial(const char *host, unsigned port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Carries bytes both ways until both sides ended, or one ended PREVIEW_GRACE_MS ago, or the server stops. */
static void relay(struct preview *p, int fd, int up)
{
	char *buf = xmalloc(PREVIEW_CHUNK);
	struct pollfd pfd[2] = { { .fd = fd, .events = POLLIN }, { .fd = up, .events = POLLIN } };
	int to[2] = { up, fd };
	int64_t ended = 0, last = now_ms();
	while (!atomic_load(&p->closing) && (pfd[0].fd >= 0 || pfd[1].fd >= 0) &&
	       !(ended && now_ms() - ended > PREVIEW_GRACE_MS) && now_ms() - last < PREVIEW_IDLE_MS) {
		int pr = poll(pfd, 2, 500);
		if (pr < 0 && errno != EINTR)
			break;
		if (pr > 0)
			last = now_ms();
		for (int i = 0; i < 2 && pr > 0; i++) {
			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			ssize_t n = recv(pfd[i].fd, buf, PREVIEW_CHUNK, 0);
			if (n > 0 && send_all(to[i], buf, (size_t)n))
				continue;
			/* this side ended (or the other cannot take more): pass the end on, keep the other way */
			shutdown(to[i], SHUT_WR);
			pfd[i].fd = -1;
			ended = ended ? ended : now_ms();
			if (n > 0) /* the receiver is gone: nothing more can be delivered either way */
				pfd[0].fd = pfd[1].fd = -1;
		}
	}
	free(buf);
}

/* Sends the body's n bytes: those already read past the head in b, then the rest from fd. false: either side failed. */
static bool send_body(int fd, int up, const char *ahead, size_t nahead, int64_t n)
{
	char chunk[16384];
	size_t first = nahead < (uint64_t)n ? nahead : (size_t)n;
	if (!send_all(up, ahead, first))
		return false;
	for (int64_t left = n - (int64_t)first; left > 0;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		if (poll(&pfd, 1, PREVIEW_HEAD_MS) <= 0)
			return false;
		ssize_t k = recv(fd, chunk, left < (int64_t)sizeof(chunk) ? (size_t)left : sizeof(chunk), 0);
		if (k <= 0 || !send_all(up, chunk, (size_t)k))
			return false;
		left -= k;
	}
	return true;
}

/* The app's answer to the client until the app closes (the client's side is not read: one request). */
static void drain(struct preview *p, int fd, int up)
{
	char *buf = xmalloc(PREVIEW_CHUNK);
	while (!atomic_load(&p->closing)) {
		struct pollfd pfd = { .fd = up, .events = POLLIN };
		int pr = poll(&pfd, 1, PREVIEW_IDLE_MS);
		ssize_t n = pr > 0 ? recv(up, buf, PREVIEW_CHUNK, 0) : -1;
		if (n <= 0 || !send_all(fd, buf, (size_t)n))
			break;
	}
	free(buf);
}

/*
 * One judged request on to the app: its head rewritten (previewreq.h), its
 * body, then the answer. An upgrade the app accepts (101) becomes a tunnel
 * both ways; anything else is one request, one answer, and the end.
 */
static void pass(struct preview *p, int fd, int up, const struct http_request *req, const struct buf *b, size_t hl)
{
	struct previewreq pr;
	struct buf head;
	char why[160];
	buf_init(&head, HTTP_PARSE_REQUEST_MAX + 64);
	int status = previewreq_rewrite(req, &pr, &head, why, sizeof(why));
	if (status) {
		snprintf(why + strlen(why), sizeof(why) - strlen(why), "\n");
		answer(fd, (unsigned)status, status == 411 ? "Length Required" : "Bad Request", NULL, why);
	} else if (send_all(up, head.data, head.len) &&
		   send_body(fd, up, b->data + hl, b->len - hl, pr.content_length)) {
		/* an upgrade: the answer's first bytes say whether the app switched (the status line comes whole) */
		char first[16384];
		ssize_t n = pr.upgrade ? recv(up, first, sizeof(first), 0) : 0;
		bool switched = n >= 12 &&
				(memcmp(first, "HTTP/1.1 101", 12) == 0 || memcmp(first, "HTTP/1.0 101", 12) == 0);
		bool sent = n <= 0 || send_all(fd, first, (size_t)n);
		if (sent && switched)
			relay(p, fd, up);
		else if (sent && n >= 0)
			drain(p, fd, up);
	}
	buf_finish(&head);
}

static void *conn_main(void *arg)
{
	struct pconn *c = arg;
	struct preview *p = c->p;
	struct buf b;
	struct http_request req;
	char host[16], owner[CALL_PRINCIPAL_MAX + 1] = "";
	unsigned host_port = 0;

	buf_init(&b, HTTP_PARSE_REQUEST_MAX + 4096);
	int hl = read_head(c->fd, &b, &req);
	bool in = hl >= 0 && judge(p, c->fd, &req, owner, host, &host_port) == 0;
	pthread_mutex_lock(&p->mu);
	p->unjudged--;
	pthread_mutex_unlock(&p->mu);
	if (in && admit(p, c, owner)) {
		int up = dial(host, host_port);
		pthread_mutex_lock(&p->mu);
		c->up = atomic_load(&p->closing) ? -1 : up;
		pthread_mutex_unlock(&p->mu);
		if (c->up < 0)
			answer(c->fd, 502, "Bad Gateway", NULL, "The forward of this port refused the connection.\n");
		else
			pass(p, c->fd, up, &req, &b, (size_t)hl);
		if (up >= 0) {
			pthread_mutex_lock(&p->mu);
			c->up = -1;
			pthread_mutex_unlock(&p->mu);
			close(up);
		}
	}
	buf_finish(&b);
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&p->mu);
	for (struct pconn **pp = &p->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	p->nconns--;
	close(c->fd);
	free(c);
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* Takes a new connection: a thread of its own, or closed at once past the caps. */
static void accept_one(void *arg, int fd)
{
	struct preview *p = arg;
	pthread_mutex_lock(&p->mu);
	if (atomic_load(&p->closing) || p->nconns >= PREVIEW_CONNS_MAX || p->unjudged >= PREVIEW_UNJUDGED_MAX) {
		pthread_mutex_unlock(&p->mu);
		close(fd);
		return;
	}
	struct pconn *c = xcalloc(1, sizeof(*c));
	c->p = p;
	c->fd = fd;
	c->up = -1;
	c->next = p->conns;
	p->conns = c;
	p->nconns++;
	p->unjudged++;
	if (thread_start_detached(conn_main, c) != 0) {
		p->conns = c->next;
		p->nconns--;
		p->unjudged--;
		close(fd);
		free(c);
	}
	pthread_mutex_unlock(&p->mu);
}

static void *accept_main(void *arg)
{
	struct preview *p = arg;
	accept_until_woken(p->lfd, p->wake[0], accept_one, p);
	return NULL;
}

/* A listening socket on host:port; the fd, or -errno. */
static int listen_on(const char *host, unsigned port, unsigned *ret_port)
{
	struct sockaddr_storage sa;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
	socklen_t len = sizeof(sa);
	const char *numeric = strcasecmp(host, "localhost") == 0 ? "127.0.0.1" : host;

	memset(&sa, 0, sizeof(sa));
	if (inet_pton(AF_INET, numeric, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, numeric, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
	} else {
		return -EINVAL;
	}
	int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sa.ss_family == AF_INET ? sizeof(*v4) : sizeof(*v6)) < 0 ||
	    listen(fd, 64) < 0 || getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	*ret_port = ntohs(sa.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
	return fd;
}

int preview_start(const char *host, unsigned port, const char *base, struct session_mgr *sessions,
		  struct linksign *links, struct preview **ret, struct err *err)
{
	struct preview *p = xcalloc(1, sizeof(*p));
	char url[LINKSIGN_BASE_MAX + 1];
	p->sessions = sessions;
	p->links = links;
	p->wake[0] = p->wake[1] = -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->idle, NULL);
	int r = p->lfd = listen_on(host, port, &p->port);
	if (r < 0) {
		err_set(err, ERRCODE_INVALID_ARGUMENT, r,
			"cannot serve previews on %s port %u: %s (SANDBOX_PREVIEW_PORT)", host, port, strerror(-r));
	} else {
		if (base && base[0])
			snprintf(url, sizeof(url), "%s", base);
		else
			snprintf(url, sizeof(url), "http://localhost:%u", p->port);
		p->https = strncasecmp(url, "https:", 6) == 0;
		if (linksign_set_preview(links, url) < 0)
			r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				    "SANDBOX_PREVIEW_URL '%.200s' is not http:// or https:// and a host[:port] with no "
				    "path (e.g. https://preview.example.com, served as https://PORT-SESSION.preview."
				    "example.com)",
				    url);
		else if (pipe2(p->wake, O_CLOEXEC) < 0)
			r = err_set(err, ERRCODE_INTERNAL, -errno, "pipe: %s", strerror(errno));
		else if ((r = thread_create_nosig(&p->thread, NULL, accept_main, p)) != 0)
			r = err_set(err, ERRCODE_INTERNAL, -r, "cannot start the preview server's thread");
	}
	if (r < 0) {
		if (p->lfd >= 0)
			close(p->lfd);
		for (int i = 0; i < 2; i++)
			if (p->wake[i] >= 0)
				close(p->wake[i]);
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->idle);
		free(p);
		return r;
	}
	*ret = p;
	return 0;
}

unsigned preview_port(const struct preview *p)
{
	return p->port;
}

void preview_stop(struct preview *p)
{
	if (!p)
		return;
	char x = 'x';
	if (write(p->wake[1], &x, 1) < 0)
		log_warnf("previews: waking the accept thread: %s", strerror(errno));
	pthread_join(p->thread, NULL);
	close(p->lfd);
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->closing, true);
	for (struct pconn *c = p->conns; c; c = c->next) {
		shutdown(c->fd, SHUT_RDWR);
		if (c->up >= 0)
			shutdown(c->up, SHUT_RDWR);
	}
	while (p->nconns)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
	close(p->wake[0]);
	close(p->wake[1]);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->idle);
	free(p);
}
