/*
 * proxy.h - one session's egress proxy (docs/egress.md): a thread that
 * speaks the relay frames of agentproto.h with the agent's --relay inside
 * the sandbox, over the exec stream the caller started, and is an HTTP
 * proxy for each connection the sandbox makes through it.
 *
 * For each connection it reads one request head (bounded), and judges it:
 * CONNECT host:port, or a plain-HTTP request in absolute form, must be
 * allowed by the session's policy; the name is resolved here (the sandbox
 * has no resolver that reaches anything) and only to addresses that are
 * public or that the operator listed; a CONNECT tunnel must start with a
 * TLS ClientHello whose server name is the CONNECT host.  A refusal is an
 * HTTP 403 whose body names the host and the policy (or a TLS alert once
 * the tunnel is open).  Every decision goes into the session's egress log.
 *
 * The policy can be replaced while the session runs (proxy_set_policy):
 * new connections are judged by the new one at once, and open connections
 * to a host it no longer allows are closed.
 *
 * Threads: the pump thread owns the connections; resolver threads, one per
 * lookup in flight, hand results back through a mailbox. proxy_set_policy,
 * proxy_status_json and proxy_stop may be called from any thread.
 */
#ifndef PROXY_H
#define PROXY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/errcode.h"
#include "proxy/netaddr.h"
#include "proxy/policy.h"

/* The port the relay listens on in the sandbox (127.0.0.1 only). */
#define PROXY_PORT 3128
/* Connections per session at once, unless the operator says otherwise (SANDBOX_EGRESS_CONNS). */
#define PROXY_CONNS_DEFAULT 64
/* A connection must send its request head (and a tunnel its ClientHello) within this. */
#define PROXY_HEAD_TIMEOUT_MS 10000
/* Resolving and connecting to the origin must end within this. */
#define PROXY_CONNECT_TIMEOUT_MS 10000
/* A connection with no bytes either way for this long is closed. */
#define PROXY_IDLE_TIMEOUT_MS 300000
/* Hosts (with port and verdict) the egress log keeps; the least recent goes first. */
#define PROXY_LOG_MAX 128

/* What the operator set, the same for every session (borrowed by each proxy; outlives them). */
struct proxy_settings {
	struct netaddr_list addresses; /* SANDBOX_EGRESS_ADDRESSES: special addresses allowed */
	unsigned conns_max;
};

struct proxy;

/*
 * Starts the pump on fd, the exec stream of `agent --relay PROXY_PORT`
 * (borrowed: the caller closes it after proxy_stop), of which the first
 * nbuf bytes were already read into buffered; and waits up to timeout_ms
 * for the relay's hello. policy is copied. name labels log lines. 0 with
 * *ret, or -errno with err (the relay could not listen, said nothing, or
 * the thread could not start).
 */
int proxy_start(int fd, const char *buffered, size_t nbuf, const struct policy *policy,
		const struct proxy_settings *set, const char *name, int timeout_ms, struct proxy **ret,
		struct err *err);
/* Replaces the policy (copied): applies to new connections at once and closes the open ones it no longer allows. */
void proxy_set_policy(struct proxy *p, const struct policy *policy);
/* False once the relay is gone (its stream ended or broke): the sandbox has no egress then. */
bool proxy_alive(struct proxy *p);
/* {"policy": [...], "relay": "up"|"down: why", "connections": N, "log": [{host, port, verdict, ...}]} (new reference). */
json_t *proxy_status_json(struct proxy *p);
/* Stops the pump, closes every connection and frees p. NULL is a no-op. */
void proxy_stop(struct proxy *p);

#endif
