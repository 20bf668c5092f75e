/*
 * httpd-internal.h - what httpd.c (the daemon, its requests and GET
 * /files/) and httpexchange.c (one POST's answer and the MCP session it is
 * routed to) share: the server's state and an exchange's.
 */
#ifndef HTTPD_INTERNAL_H
#define HTTPD_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>
#include <microhttpd.h>

#include "base/buf.h"
#include "base/call.h"
#include "mcp/mcp.h"
#include "mcp/rpc.h"
#include "tools/linksign.h"
#include "tools/tools.h"
#include "transport/http/authkeys.h"
#include "transport/http/httpcheck.h"
#include "transport/http/httpd.h"
#include "transport/http/httpwatch.h"

/* Random bytes in an Mcp-Session-Id (hex-encoded: twice as many characters). */
#define HTTPD_SID_BYTES 16
#define HTTPD_SID_LEN (2 * HTTPD_SID_BYTES)

struct msession {
	char id[HTTPD_SID_LEN + 1];
	char principal[CALL_PRINCIPAL_MAX + 1]; /* another principal's id is unknown (404) */
	struct mcp_peer *peer;			/* one reference; NULL: free slot */
	int64_t used_ms;
};

struct httpd {
	struct mcp *m;
	const struct tool_services *svc;
	struct MHD_Daemon *daemon;
	char host[HTTPCHECK_HOST_MAX + 1];
	unsigned port;
	bool loopback;
	char address[HTTPCHECK_HOST_MAX + 16];
	int stop[2];		  /* readable once stopping: wakes every waiting exchange */
	char *tls_cert, *tls_key; /* PEM, for libmicrohttpd's GnuTLS (HTTPS); NULL: plain HTTP */
	atomic_int connections;
	atomic_ullong body_charged; /* what request bodies in flight cost (HTTPD_BODY_BUDGET) */
	pthread_rwlock_t keys_lock; /* guards keys */
	struct authkeys *keys;	    /* NULL: no token file, no auth */
	pthread_mutex_t lock;	    /* guards sessions, handling and stopping */
	struct msession sessions[HTTPD_SESSIONS_MAX];
	struct exchange *handling; /* exchanges inside mcp_handle_message, which may run a call */
	bool stopping;

	struct httpwatch *watch; /* the whole-request deadline (slowloris) */
	/* --http-public-url's host[:port], also accepted as Host; "" without one */
	char public_host[LINKSIGN_BASE_MAX + 1];
};

/* A line written to an exchange's out, waiting to be sent. */
struct line {
	struct line *next;
	size_t n;
	char p[];
};

/* One request on /mcp, from its first byte to its last answer. */
struct exchange {
	struct httpd *h;
	int fd;	     /* the client's socket (libmicrohttpd's) */
	int wake[2]; /* a byte per line written and at the end; made (under lock) only to wait */
	struct buf body;
	bool too_big;
	bool busy;				/* the server's body budget was spent: 503 once read */
	bool precharged;			/* its Content-Length was charged before the body came */
	unsigned long long charged;		/* its share of h->body_charged, until on_completed */
	char sid_in[HTTPD_SID_LEN + 1];		/* the Mcp-Session-Id sent, if well-formed */
	char principal[CALL_PRINCIPAL_MAX + 1]; /* its token's NAME; "" without tokens */
	bool has_sid, sid_bad;

	pthread_mutex_t lock; /* guards everything below */
	unsigned refs;	      /* the connection, and the out while it lives */
	bool routed;
	int refuse; /* HTTP status when the route refused the message */
	char refuse_msg[200];
	enum rpc_kind kind;
	json_t *id;			 /* the request's id (one reference) */
	struct mcp_peer *peer;		 /* one reference, for cancelling */
	char sid_new[HTTPD_SID_LEN + 1]; /* issued by initialize */
	struct line *head, *tail;
	bool ended;	/* the out's last reference is gone: nothing more comes */
	bool answered;	/* the response is queued (the last line for a request) */
	bool gone;	/* the client hung up */
	struct buf sse; /* the event being sent */
	size_t sse_off;
	struct exchange *prev, *next; /* in h->handling, under h->lock */
};

/* Charges n bytes of x's body to the server's budget; false when it is spent (nothing charged). */
bool httpx_charge(struct httpd *h, struct exchange *x, unsigned long long n);
/* Drops a reference to x (the connection's, or the out's through httpx_sink_release); the last frees it. */
void httpx_put(struct exchange *x);
/* out.h's sink of an exchange: queue the line for the connection thread; the out's end. */
int httpx_sink_write(void *data, const char *line, size_t len, bool response);
void httpx_sink_release(void *data);
/* Wakes a thread waiting on the pipe fd writes to; a full pipe means it is awake anyway. */
void httpx_poke(int fd);
/* Makes x's wake pipe, with x->lock held, before the first wait. 0 or -errno. */
int httpx_wake_ready(struct exchange *x);
/*
 * Waits for a line, the end, the client hanging up or the server stopping.
 * Called without x->lock. 0 on news, -EPIPE when the client is gone or the
 * server stops (the call is then cancelled).
 */
int httpx_wait_event(struct exchange *x);
/* The client hung up (or the server stops): cancel its call, drop what it would have been sent. */
void httpx_client_gone(struct exchange *x);
/* Adds x to (or takes it off) h->handling, so httpd_stop can cancel its call; -ESHUTDOWN once stopping. */
int httpx_handling(struct httpd *h, struct exchange *x, bool on);
/* mcp.h's route: which peer the parsed message belongs to (an MCP session's, or its own), or a refusal. */
struct mcp_peer *httpx_route(void *arg, const struct mcp_msg_info *info);
/* libmicrohttpd's reader of an SSE response: one event per line, until the out ends. */
ssize_t httpx_sse_read(void *cls, uint64_t pos, char *out, size_t max);
/* Ends an MCP session and cancels its calls; false when principal has none by that id. */
bool httpx_session_end(struct httpd *h, const char *principal, const char *sid);

#endif
