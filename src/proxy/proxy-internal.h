/*
 * proxy-internal.h - what the egress pump (proxy.c) and its judge
 * (judge.c) share: a connection's state, the session's log, the pump's.
 */
#ifndef PROXY_INTERNAL_H
#define PROXY_INTERNAL_H

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/agentproto.h"
#include "base/buf.h"
#include "engine/stream.h"
#include "proxy/netaddr.h"
#include "proxy/policy.h"
#include "proxy/proxy.h"
#include "proxy/proxyreq.h"

/* Bytes queued for the relay past which no origin is read. */
#define PROXY_OUT_MAX (1u << 20)
/* How long a refused connection may take to read its answer and close. */
#define PROXY_CLOSING_MS 5000
#define PROXY_READ_CHUNK (64u << 10)
#define PROXY_STACK (256u << 10)

enum pstate { PC_HEAD, PC_RESOLVE, PC_CONNECT, PC_HELLO, PC_OPEN, PC_CLOSING };

struct pconn {
	uint32_t id;
	enum pstate state;
	struct buf in;	/* from the sandbox, not yet sent on nor acknowledged */
	struct buf pre; /* plain HTTP: the origin's head, sent before in */
	int fd;		/* the origin; -1 before connecting */
	uint32_t credit;
	bool sand_eof, origin_eof, plain;
	int64_t body_left; /* plain HTTP: body bytes of in still to forward */
	char method[16];
	struct proxyreq req;
	struct addrinfo *ai, *next_ai;
	const char *skipped; /* why the last address was passed over */
	int64_t deadline;
	size_t tried; /* in.len when the head was last looked for */
	/* the ClientHello's records walked so far (hello_ready): each byte is looked at once */
	size_t rec_off, hs_len;
	unsigned char hs4[4]; /* the handshake header, gathered across records */
	unsigned hs4_n;
	uint32_t lookup; /* the tag of its lookup (resolver.h): never a relay id, which the relay chooses */
	uint64_t bytes_out, bytes_in;
	struct pconn *next;
};

struct logent {
	char host[POLICY_HOST_MAX + 1];
	uint16_t port;
	bool allowed;
	uint64_t count, bytes_out, bytes_in;
	int64_t first, last; /* unix seconds */
	char why[160];	     /* the last refusal's reason */
};

struct proxy {
	int fd;
	pthread_t thread;
	pthread_mutex_t mu; /* guards what other threads see: below to `log` */
	pthread_cond_t cond;
	bool stop, policy_changed;
	int hello; /* 0 waiting, 1 listening, -1 failed */
	char down[256];
	struct policy policy, next_policy;
	struct logent log[PROXY_LOG_MAX];
	size_t nlog;
	unsigned nconns;
	atomic_bool alive;
	/* the pump's own */
	int wake;
	const struct proxy_settings *set;
	char name[64];
	struct stream_demux demux;
	struct agentproto_whole frame;
	struct buf out;
	struct pconn *conns;
	struct resolver *res;
	uint32_t lookups;	  /* the last lookup tag handed out */
	struct netaddr_list self; /* the host's own addresses (self_address) */
	int64_t self_at;	  /* when they were read */
};

/* Drops n bytes from the front of c->in and gives the relay their credit back. */
void proxy_consume(struct proxy *p, struct pconn *c, size_t n);
/* The answer to a request that is refused or failed: status, then why, and the connection closes. */
void proxy_refuse(struct proxy *p, struct pconn *c, int status, const char *why);
/* Whether the policy allows c's request now; why says no, naming what it allows (judge.c). */
bool proxy_allowed(struct proxy *p, const struct pconn *c, char *why, size_t whysz);
/* Looks for a whole request head in c->in: judged, then resolving, or refused (judge.c). */
void proxy_head_look(struct proxy *p, struct pconn *c);
/* A tunnel's first bytes: a ClientHello for the CONNECT host opens it, anything else is refused (judge.c). */
void proxy_hello_look(struct proxy *p, struct pconn *c);

#endif
