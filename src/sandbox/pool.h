/*
 * pool.h - the warm pool: containers of the default image and default
 * settings, created and started ahead with their agent up, so that a
 * session_create (or the first call of the default session) that asks for
 * exactly those settings gets one at once (docs/sandboxes.md, "Warm pool").
 *
 * A member is a struct session that was never listed nor used: a hand-out
 * gives it its owner and name and lists it like a fresh one; it never comes
 * back.  One thread refills the pool in the background; it never blocks a
 * call.  Members are labelled io.sandbox-mcp.pool=1 (and non-persistent), so
 * no other server adopts them and a dead server's sweep removes them.
 */
#ifndef POOL_H
#define POOL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errcode.h"
#include "config/config.h"

struct call;
struct pool;
struct session;
/* What pool_ops.current says of a member. */
enum { POOL_STALE = 0, POOL_CURRENT = 1, POOL_UNKNOWN = -1 /* the engine did not answer: kept, not handed out */ };
struct session_mgr;
struct session_opts;

/* Most members a pool may hold, whatever SANDBOX_POOL_SIZE says (config checks it). */
#define POOL_SIZE_MAX 16

/*
 * What the pool asks of the session registry (session.c), so that the pool
 * holds no copy of how a container is made.
 */
struct pool_ops {
	/*
	 * Builds an unlisted pool member: created, started, agent up. 0 or
	 * -errno with err. call is the build's own: the pool cancels it when
	 * it stops, and whatever the build made by then it removes itself.
	 */
	int (*build)(struct session_mgr *m, struct call *call, struct session **ret, struct err *err);
	/* Removes the containers of n unlisted sessions (at once) and frees them. */
	void (*discard)(struct session_mgr *m, struct session **list, size_t n);
	/* Containers the server may still make under SANDBOX_MAX_SESSIONS_TOTAL (SIZE_MAX: no limit). */
	size_t (*room)(struct session_mgr *m);
	/* Whether member is still what a fresh session of the default settings would be (image id, running). */
	int (*current)(struct session_mgr *m, struct session *member);
};

/* A pool of size members (0: a pool that never holds any). Starts nothing yet. */
struct pool *pool_create(const struct config *cfg, struct session_mgr *m, const struct pool_ops *ops, size_t size);
/* Starts the refill thread (after the start-up scan). Failing to start it only leaves the pool empty. */
void pool_start(struct pool *p);
/*
 * Stops refills without waiting and cancels a build under way (its engine
 * call ends at once): the first half of pool_stop, so that its wait
 * overlaps other work.
 */
void pool_quiesce(struct pool *p);
/*
 * Stops the refill thread (cancelling a build under way and waiting for it
 * to remove what it made) and removes every member. Idempotent.
 */
void pool_stop(struct pool *p);
/* pool_stop, then frees p. NULL is a no-op. */
void pool_destroy(struct pool *p);
/*
 * True when a session asked with o (image and network as resolved by
 * session_create) would be configured exactly as a pool member: the same
 * container config, labels aside. Pure.
 */
bool pool_match(const struct config *cfg, const struct session_opts *o, const char *image, const char *network);
/*
 * A member for a session asked with o, or NULL (no match, pool empty, or no
 * member still current). The caller owns it, unlisted; the refill thread is
 * woken.
 */
struct session *pool_take(struct pool *p, const struct session_opts *o, const char *image, const char *network);
/* Removes members until at most keep remain (the server nears SANDBOX_MAX_SESSIONS_TOTAL). */
void pool_trim(struct pool *p, size_t keep);
/* Members ready now. */
size_t pool_ready(struct pool *p);

#endif
