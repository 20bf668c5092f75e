/*
 * httpexchange.c - one POST on /mcp from the body's arrival to its last
 * answer (httpd.c): its share of the server's body budget, the lines the
 * call's out queues for the connection thread, the waits for them (the
 * client hanging up cancels the call), the SSE stream that sends them; and
 * the MCP session ids a message is routed by.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/log.h"
#include "base/protover.h"
#include "base/util.h"
#include "transport/http/httpd-internal.h"

static struct mcp_peer *session_new(struct httpd *h, const char *principal, char *ret_sid);
static struct mcp_peer *session_find(struct httpd *h, const char *principal, const char *sid);

/* Charges n bytes of x's body to the server's budget; false when it is spent (nothing charged). */
bool httpx_charge(struct httpd *h, struct exchange *x, unsigned long long n)
{
	unsigned long long add = n * HTTPD_BODY_FACTOR;
	unsigned long long was = atomic_fetch_add(&h->body_charged, add);
	if (was > 0 && was + add > HTTPD_BODY_BUDGET) {
		atomic_fetch_sub(&h->body_charged, add);
		return false;
	}
	x->charged += add;
	return true;
}

void httpx_put(struct exchange *x)
{
	pthread_mutex_lock(&x->lock);
	bool last = --x->refs == 0;
	pthread_mutex_unlock(&x->lock);
	if (!last)
		return;
	while (x->head) {
		struct line *l = x->head;
		x->head = l->next;
		free(l);
	}
	if (x->wake[0] >= 0) {
		close(x->wake[0]);
		close(x->wake[1]);
	}
	json_decref(x->id);
	mcp_peer_put(x->peer);
	buf_finish(&x->body);
	buf_finish(&x->sse);
	pthread_mutex_destroy(&x->lock);
	free(x);
}

/* out.h's sink: queue the line for the connection thread. */
int httpx_sink_write(void *data, const char *line, size_t len, bool response)
{
	struct exchange *x = data;
	struct line *l = xmalloc(sizeof(*l) + len);
	l->next = NULL;
	l->n = len;
	memcpy(l->p, line, len);
	pthread_mutex_lock(&x->lock);
	if (x->gone) {
		pthread_mutex_unlock(&x->lock);
		free(l);
		return -EPIPE;
	}
	if (x->tail)
		x->tail->next = l;
	else
		x->head = l;
	x->tail = l;
	x->answered |= response;
	if (x->wake[1] >= 0)
		httpx_poke(x->wake[1]);
	pthread_mutex_unlock(&x->lock);
	return 0;
}

void httpx_sink_release(void *data)
{
	struct exchange *x = data;
	pthread_mutex_lock(&x->lock);
	x->ended = true;
	if (x->wake[1] >= 0)
		httpx_poke(x->wake[1]);
	pthread_mutex_unlock(&x->lock);
	httpx_put(x);
}

/*
 * Makes x's wake pipe, with x->lock held, before the first wait: a call run
 * here (MCP_RUN_HERE) has answered before its thread would wait, and never
 * needs one. Writers poke it only once it exists (under the same lock).
 */
int httpx_wake_ready(struct exchange *x)
{
	if (x->wake[0] >= 0)
		return 0;
	return pipe2(x->wake, O_CLOEXEC | O_NONBLOCK) < 0 ? -errno : 0;
}

/* Wakes the waiting thread; a full pipe means it is awake anyway. */
void httpx_poke(int fd)
{
	if (write(fd, "x", 1) < 0 && errno != EAGAIN)
		log_debugf("waking an HTTP exchange: %s", strerror(errno));
}

/*
 * Waits for a line, the end, the client hanging up or the server stopping.
 * Called without x->lock. 0 on news, -EPIPE when the client is gone or the
 * server stops (the call is then cancelled).
 */
int httpx_wait_event(struct exchange *x)
{
	struct pollfd p[3] = {
		{ .fd = x->wake[0], .events = POLLIN },
		{ .fd = x->fd, .events = POLLRDHUP },
		{ .fd = x->h->stop[0], .events = POLLIN },
	};
	char drain[64];

	for (;;) {
		int n = poll(p, 3, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[1].revents || p[2].revents) {
			httpx_client_gone(x);
			return -EPIPE;
		}
		while (read(x->wake[0], drain, sizeof(drain)) > 0)
			;
		return 0;
	}
}

/* The client hung up (or the server stops): cancel its call, drop what it would have been sent. */
void httpx_client_gone(struct exchange *x)
{
	pthread_mutex_lock(&x->lock);
	bool was = x->gone;
	x->gone = true;
	struct mcp_peer *peer = mcp_peer_get(x->peer);
	json_t *id = json_incref(x->id);
	bool ended = x->ended;
	pthread_mutex_unlock(&x->lock);
	if (!was && !ended && peer && id && mcp_peer_cancel(x->h->m, peer, id))
		log_debugf("HTTP client went away: its request was cancelled");
	json_decref(id);
	mcp_peer_put(peer);
}

/* Adds x to (or takes it off) h->handling, so httpd_stop can cancel its call; -ESHUTDOWN once stopping. */
int httpx_handling(struct httpd *h, struct exchange *x, bool on)
{
	int r = 0;
	pthread_mutex_lock(&h->lock);
	if (on && h->stopping) {
		r = -ESHUTDOWN;
	} else if (on) {
		x->prev = NULL;
		x->next = h->handling;
		if (h->handling)
			h->handling->prev = x;
		h->handling = x;
	} else {
		if (x->prev)
			x->prev->next = x->next;
		else
			h->handling = x->next;
		if (x->next)
			x->next->prev = x->prev;
	}
	pthread_mutex_unlock(&h->lock);
	return r;
}

/* mcp.h's route: which peer the parsed message belongs to, or a refusal. */
struct mcp_peer *httpx_route(void *arg, const struct mcp_msg_info *info)
{
	struct exchange *x = arg;
	struct httpd *h = x->h;
	struct mcp_peer *peer = NULL;
	char sid[HTTPD_SID_LEN + 1] = "";
	int refuse = 0;
	const char *why = NULL;

	if (info->modern) {
		peer = mcp_peer_create(h->m, x->principal); /* stateless: nothing carries over */
	} else if (info->kind == RPC_KIND_REQUEST && strcmp(info->method, "initialize") == 0) {
		if (!(peer = session_new(h, x->principal, sid))) {
			refuse = MHD_HTTP_SERVICE_UNAVAILABLE;
			why = "Server busy: every MCP session slot is held by other clients; end one of yours (DELETE) "
			      "or retry later";
		}
	} else if (!x->has_sid) {
		if (info->kind == RPC_KIND_REQUEST && strcmp(info->method, "server/discover") == 0) {
			peer = mcp_peer_create(h->m, x->principal);
		} else {
			refuse = MHD_HTTP_BAD_REQUEST;
			why = "Bad Request: Mcp-Session-Id header is required; send initialize first, or name protocol "
			      "version " PROTOVER_MODERN " in params._meta";
		}
	} else if (x->sid_bad || !(peer = session_find(h, x->principal, x->sid_in))) {
		refuse = MHD_HTTP_NOT_FOUND;
		why = "Session not found: this Mcp-Session-Id ended or never existed; send initialize for a new one";
	}
	pthread_mutex_lock(&x->lock);
	x->routed = true;
	x->kind = info->kind;
	x->id = json_incref(info->id);
	x->peer = mcp_peer_get(peer);
	x->refuse = refuse;
	if (why)
		snprintf(x->refuse_msg, sizeof(x->refuse_msg), "%s", why);
	memcpy(x->sid_new, sid, sizeof(sid));
	pthread_mutex_unlock(&x->lock);
	return peer;
}

/* libmicrohttpd's reader of an SSE response: one event per line, until the out ends. */
ssize_t httpx_sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
	struct exchange *x = cls;
	(void)pos;

	pthread_mutex_lock(&x->lock);
	while (x->sse_off == x->sse.len) {
		if (x->head) {
			struct line *l = x->head;
			x->head = l->next;
			if (!x->head)
				x->tail = NULL;
			buf_reset(&x->sse);
			x->sse_off = 0;
			/* the line ends in '\n'; JSON_COMPACT has no other newline */
			(void)buf_append_str(&x->sse, "event: message\ndata: ");
			(void)buf_append(&x->sse, l->p, l->n);
			(void)buf_append_str(&x->sse, "\n");
			free(l);
			continue;
		}
		if (x->ended || x->answered) {
			pthread_mutex_unlock(&x->lock);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (httpx_wake_ready(x) < 0) {
			pthread_mutex_unlock(&x->lock);
			httpx_client_gone(x);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		pthread_mutex_unlock(&x->lock);
		if (httpx_wait_event(x) < 0)
			return MHD_CONTENT_READER_END_WITH_ERROR;
		pthread_mutex_lock(&x->lock);
	}
	size_t k = x->sse.len - x->sse_off < max ? x->sse.len - x->sse_off : max;
	memcpy(out, x->sse.data + x->sse_off, k);
	x->sse_off += k;
	pthread_mutex_unlock(&x->lock);
	return (ssize_t)k;
}

static void sid_make(char *out)
{
	unsigned char raw[HTTPD_SID_BYTES];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		abort(); /* no entropy at all: a guessable session id is worse than stopping */
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
}

/*
 * The slot for a new session of principal (h->lock held): a free one while
 * the principal holds fewer than HTTPD_SESSIONS_PER_PRINCIPAL, else its own
 * least recently used. Never another principal's: -1 when the table is full
 * of others' sessions and principal has none.
 */
static ssize_t session_slot(struct httpd *h, const char *principal)
{
	ssize_t free_slot = -1, own_lru = -1;
	size_t own = 0;
	for (size_t i = 0; i < HTTPD_SESSIONS_MAX; i++) {
		struct msession *s = &h->sessions[i];
		if (!s->peer) {
			if (free_slot < 0)
				free_slot = (ssize_t)i;
		} else if (strcmp(s->principal, principal) == 0) {
			own++;
			if (own_lru < 0 || s->used_ms < h->sessions[own_lru].used_ms)
				own_lru = (ssize_t)i;
		}
	}
	return free_slot >= 0 && own < HTTPD_SESSIONS_PER_PRINCIPAL ? free_slot : own_lru;
}

/*
 * A new MCP session (new reference), or NULL when every slot is another
 * principal's (session_slot). What it replaces is principal's own, whose
 * calls are cancelled.
 */
static struct mcp_peer *session_new(struct httpd *h, const char *principal, char *ret_sid)
{
	struct mcp_peer *peer = mcp_peer_create(h->m, principal), *evicted = NULL;

	sid_make(ret_sid);
	pthread_mutex_lock(&h->lock);
	ssize_t found = session_slot(h, principal);
	if (found < 0) {
		pthread_mutex_unlock(&h->lock);
		mcp_peer_put(peer);
		ret_sid[0] = '\0';
		return NULL;
	}
	size_t slot = (size_t)found;
	evicted = h->sessions[slot].peer;
	memcpy(h->sessions[slot].id, ret_sid, HTTPD_SID_LEN + 1);
	snprintf(h->sessions[slot].principal, sizeof(h->sessions[slot].principal), "%s", principal);
	h->sessions[slot].peer = mcp_peer_get(peer);
	h->sessions[slot].used_ms = now_ms();
	pthread_mutex_unlock(&h->lock);
	if (evicted) {
		(void)mcp_peer_cancel(h->m, evicted, NULL);
		mcp_peer_put(evicted);
	}
	return peer;
}

/* The session's peer (new reference), or NULL. */
static struct mcp_peer *session_find(struct httpd *h, const char *principal, const char *sid)
{
	struct mcp_peer *peer = NULL;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < HTTPD_SESSIONS_MAX && !peer; i++) {
		if (h->sessions[i].peer && strcmp(h->sessions[i].id, sid) == 0 &&
		    strcmp(h->sessions[i].principal, principal) == 0) {
			h->sessions[i].used_ms = now_ms();
			peer = mcp_peer_get(h->sessions[i].peer);
		}
	}
	pthread_mutex_unlock(&h->lock);
	return peer;
}

/* Ends a session and cancels its calls; false when there is none by that id. */
bool httpx_session_end(struct httpd *h, const char *principal, const char *sid)
{
	struct mcp_peer *peer = NULL;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < HTTPD_SESSIONS_MAX && !peer; i++) {
		if (h->sessions[i].peer && strcmp(h->sessions[i].id, sid) == 0 &&
		    strcmp(h->sessions[i].principal, principal) == 0) {
			peer = h->sessions[i].peer;
			h->sessions[i].peer = NULL;
		}
	}
	pthread_mutex_unlock(&h->lock);
	if (!peer)
		return false;
	(void)mcp_peer_cancel(h->m, peer, NULL);
	mcp_peer_put(peer);
	return true;
}
