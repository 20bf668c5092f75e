/*
 * pool.c - the warm pool (pool.h).
 *
 * Locking: p->lock guards members, len, stopping and the refill state; it is
 * never held across an engine call or a call into the registry (whose own
 * lock comes first where both are needed: the registry calls pool_take and
 * pool_trim without holding it).  Building a member takes the engine's
 * create, archive, start and exec round trips (a few hundred ms); the thread
 * does them with the lock released, so pool_take never waits for a build.
 *
 * The refill thread is started when the pool falls short (pool_start, a
 * take, a trim) and ends once it is full again, rather than idling for the
 * server's life: glibc gives every live thread a malloc arena of its own,
 * and one more long-lived thread made the workers' big buffers spread over
 * more arenas (a 20 MiB file_read in parts peaked at 72 instead of 40 MiB).
 * pool_stop joins whichever thread there is.
 *
 * Engine errors (the engine down, the default image missing) are logged once
 * per run of failures and retried with a back-off doubling from 1 s to 60 s,
 * so a server without a usable engine does not spin.  A member that fails
 * the check at hand-out (its container stopped or removed from outside, or
 * the default image now names another image) is removed, not handed out.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "base/call.h"
#include "base/log.h"
#include "base/util.h"
#include "sandbox/pool.h"
#include "sandbox/session.h"

/* Back-off after a failed build, first and last, ms. */
#define POOL_BACKOFF_MIN_MS 1000
#define POOL_BACKOFF_MAX_MS 60000
/* How often a pool kept small by SANDBOX_MAX_SESSIONS_TOTAL looks again, ms. */
#define POOL_ROOM_POLL_MS 2000

struct pool {
	const struct config *cfg;
	struct session_mgr *m;
	struct pool_ops ops;
	size_t size;

	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct session *members[POOL_SIZE_MAX];
	size_t len;
	bool stopping;
	bool started;  /* pool_start was called: refills may run */
	bool running;  /* the refill thread is at work */
	bool joinable; /* thread names a thread not joined yet (running, or ended) */
	pthread_t thread;
	/*
	 * The build under way, or NULL: stopping cancels it, so that an exit
	 * does not wait out a create, start and agent start (under a second on
	 * a loaded machine) for a member it would remove at once.
	 */
	struct call *building;
};

struct pool *pool_create(const struct config *cfg, struct session_mgr *m, const struct pool_ops *ops, size_t size)
{
	struct pool *p = xcalloc(1, sizeof(*p));
	p->cfg = cfg;
	p->m = m;
	p->ops = *ops;
	p->size = size < POOL_SIZE_MAX ? size : POOL_SIZE_MAX;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	return p;
}

/* Waits on p->wake (lock held) for at most ms. */
static void wait_ms(struct pool *p, int64_t ms)
{
	struct timespec ts = realtime_after_ms(ms);
	pthread_cond_timedwait(&p->wake, &p->lock, &ts);
}

/*
 * One build; a member is added, or removed again when the pool stopped
 * meanwhile. 0 or -errno with err (-ECANCELED: the pool stopped).
 */
static int refill_one(struct pool *p, struct err *err)
{
	struct session *s = NULL;
	struct call *c = call_create(NULL, "", NULL, NULL, NULL);
	int r = -ECANCELED;

	err_clear(err);
	pthread_mutex_lock(&p->lock);
	bool go = !p->stopping;
	p->building = go ? c : NULL;
	pthread_mutex_unlock(&p->lock);
	if (go)
		r = p->ops.build(p->m, c, &s, err);
	pthread_mutex_lock(&p->lock);
	p->building = NULL; /* before c goes: stop_locked reads it under the lock */
	bool keep = r == 0 && !p->stopping && p->len < p->size;
	if (keep)
		p->members[p->len++] = s;
	pthread_mutex_unlock(&p->lock);
	call_destroy(c);
	if (r == 0 && !keep)
		p->ops.discard(p->m, &s, 1);
	return r;
}

static void *refill_main(void *arg)
{
	struct pool *p = arg;
	int64_t backoff = 0;
	bool warned = false;

	pthread_mutex_lock(&p->lock);
	/* it ends once the pool is full: a thread that lived on would keep a malloc arena of its own */
	while (!p->stopping && p->len < p->size) {
		size_t have = p->len;
		pthread_mutex_unlock(&p->lock);
		/* the members count against SANDBOX_MAX_SESSIONS_TOTAL: fill only where sessions leave room */
		bool room = p->ops.room(p->m) > have;
		struct err err;
		int r = room ? refill_one(p, &err) : 0;
		pthread_mutex_lock(&p->lock);
		if (p->stopping)
			break; /* a cancelled build is no failure to report */
		if (r < 0) {
			backoff = backoff ? backoff * 2 : POOL_BACKOFF_MIN_MS;
			if (backoff > POOL_BACKOFF_MAX_MS)
				backoff = POOL_BACKOFF_MAX_MS;
			if (!warned)
				log_warnf("warm pool: cannot make a container (%s); retrying in the background",
					  err.msg);
			else
				log_infof("warm pool: cannot make a container (%s)", err.msg);
			warned = true;
		} else if (room) {
			backoff = 0;
			warned = false;
		}
		if (r < 0 || !room)
			wait_ms(p, r < 0 ? backoff : POOL_ROOM_POLL_MS);
	}
	p->running = false;
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/*
 * Starts a refill thread unless one is at work (lock held). The one before
 * it has ended (running is false), so joining it does not wait on the lock.
 */
static void kick_locked(struct pool *p)
{
	if (!p->started || p->stopping || p->running || p->len >= p->size)
		return;
	if (p->joinable)
		pthread_join(p->thread, NULL);
	p->joinable = p->running = thread_create_nosig(&p->thread, NULL, refill_main, p) == 0;
}

void pool_start(struct pool *p)
{
	if (!p || p->size == 0)
		return;
	pthread_mutex_lock(&p->lock);
	p->started = true;
	kick_locked(p);
	pthread_mutex_unlock(&p->lock);
}

/* Takes every member out (lock not held); the caller discards them. */
static size_t take_all(struct pool *p, struct session **out, size_t keep)
{
	pthread_mutex_lock(&p->lock);
	size_t n = 0;
	while (p->len > keep)
		out[n++] = p->members[--p->len];
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* Stops refills and cancels the build under way (lock held; the hook only ends its engine call). */
static void stop_locked(struct pool *p)
{
	p->stopping = true;
	if (p->building)
		call_cancel(p->building);
	pthread_cond_broadcast(&p->wake);
}

void pool_quiesce(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	stop_locked(p);
	pthread_mutex_unlock(&p->lock);
}

void pool_stop(struct pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	stop_locked(p);
	bool join = p->joinable;
	p->joinable = false;
	pthread_mutex_unlock(&p->lock);
	if (join)
		pthread_join(p->thread, NULL);
	pool_trim(p, 0);
}

void pool_destroy(struct pool *p)
{
	if (!p)
		return;
	pool_stop(p);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void pool_trim(struct pool *p, size_t keep)
{
	struct session *gone[POOL_SIZE_MAX];
	if (!p)
		return;
	size_t n = take_all(p, gone, keep);
	pthread_mutex_lock(&p->lock);
	kick_locked(p); /* refilled when sessions leave room again */
	pthread_mutex_unlock(&p->lock);
	if (n)
		p->ops.discard(p->m, gone, n);
}

size_t pool_ready(struct pool *p)
{
	if (!p)
		return 0;
	pthread_mutex_lock(&p->lock);
	size_t n = p->len;
	pthread_mutex_unlock(&p->lock);
	return n;
}

/* Same string, NULL and "" alike. */
static bool same(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

bool pool_match(const struct config *cfg, const struct session_opts *o, const char *image, const char *network)
{
	/*
	 * Every option that changes the container's config or labels that
	 * matter: labels cannot change after create, so persistent sessions
	 * (whose labels adoption reads) are always made fresh. A pull policy of
	 * always would pull before a fresh create: the pool cannot stand in.
	 * Members live on the default engine only (engines.h).
	 */
	bool default_engine = !o->engine || !o->engine[0] || same(o->engine, ENGINES_DEFAULT);
	return default_engine && !o->persistent && !o->transient && !o->read_only && !o->egress &&
	       same(image, cfg->image) && same(network, "none") && json_object_size(o->env) == 0 &&
	       (o->memory_mb == 0 || o->memory_mb == cfg->memory_mb) && (o->cpus <= 0 || o->cpus == cfg->cpus) &&
	       (!o->runtime || same(o->runtime, cfg->runtime)) && !same(cfg->pull, "always");
}

/* A member taken out whose state the engine could not tell goes back, at the end (removed if the pool stopped). */
static void put_back(struct pool *p, struct session *s)
{
	pthread_mutex_lock(&p->lock);
	bool keep = !p->stopping && p->len < p->size;
	if (keep)
		p->members[p->len++] = s;
	pthread_mutex_unlock(&p->lock);
	if (!keep)
		p->ops.discard(p->m, &s, 1);
}

struct session *pool_take(struct pool *p, const struct session_opts *o, const char *image, const char *network)
{
	if (!p || p->size == 0 || !pool_match(p->cfg, o, image, network))
		return NULL;
	/* bounded: each round removes a member that is no longer current */
	for (size_t round = 0; round < POOL_SIZE_MAX; round++) {
		pthread_mutex_lock(&p->lock);
		/* the oldest member first: it has waited longest for its agent and start to settle */
		struct session *s = p->len ? p->members[0] : NULL;
		if (s) {
			memmove(&p->members[0], &p->members[1], (p->len - 1) * sizeof(p->members[0]));
			p->len--;
			kick_locked(p);
		}
		pthread_mutex_unlock(&p->lock);
		int state = s ? p->ops.current(p->m, s) : POOL_CURRENT;
		if (state == POOL_CURRENT)
			return s;
		if (state == POOL_UNKNOWN) {
			put_back(p, s);
			return NULL;
		}
		log_infof("warm pool: container %.12s is no longer current; removing it", s->container);
		p->ops.discard(p->m, &s, 1);
	}
	return NULL;
}
