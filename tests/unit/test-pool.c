/*
 * test-pool.c - the warm pool without an engine: pool_match against every
 * option that changes a container (and the ones that do not), and the
 * refill thread driven through fake pool_ops: fills to its size, refills
 * after a take, stays under the room the registry leaves, survives failed
 * builds without leaking, drops members that are no longer current,
 * removes every member when it stops, and cancels a build under way
 * rather than waiting it out.
 */
#include "testutil.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>

#include "base/call.h"
#include "config/config.h"
#include "sandbox/pool.h"
#include "sandbox/session.h"

/* The fake registry: counts what the pool asked of it. */
struct fake {
	pthread_mutex_t lock;
	int built, discarded, failing;
	size_t room;
	bool stale;   /* current() says no */
	bool unknown; /* current() cannot tell (the engine is away) */
	bool hang;    /* build() blocks until its call is cancelled (at most 10 s) */
	bool hanging; /* a hanging build has armed its hook */
	int cancelled;
	pthread_cond_t changed;
};

static struct fake fk;

/* The hook an engine call arms: here it only wakes the hanging build. */
static void fake_cancel(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&fk.lock);
	fk.cancelled++;
	pthread_cond_broadcast(&fk.changed);
	pthread_mutex_unlock(&fk.lock);
}

/* A build stuck in an engine call (a start on a loaded engine): it ends when its call is cancelled. */
static int hang_build(struct call *call, struct err *err)
{
	if (call_arm(call, fake_cancel, NULL) < 0)
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled before it began");
	pthread_mutex_lock(&fk.lock);
	fk.hanging = true;
	pthread_cond_broadcast(&fk.changed);
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	while (!call_cancelled(call) && pthread_cond_timedwait(&fk.changed, &fk.lock, &until) == 0)
		;
	pthread_mutex_unlock(&fk.lock);
	call_disarm(call);
	return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
}

static int fake_build(struct session_mgr *m, struct call *call, struct session **ret, struct err *err)
{
	(void)m;
	if (fk.hang)
		return hang_build(call, err);
	pthread_mutex_lock(&fk.lock);
	bool fail = fk.failing > 0;
	if (fail)
		fk.failing--;
	else
		fk.built++;
	pthread_mutex_unlock(&fk.lock);
	if (fail)
		return err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the engine said no");
	*ret = xcalloc(1, sizeof(**ret));
	return 0;
}

static void fake_discard(struct session_mgr *m, struct session **list, size_t n)
{
	(void)m;
	pthread_mutex_lock(&fk.lock);
	fk.discarded += (int)n;
	pthread_mutex_unlock(&fk.lock);
	for (size_t i = 0; i < n; i++)
		free(list[i]);
}

static size_t fake_room(struct session_mgr *m)
{
	(void)m;
	pthread_mutex_lock(&fk.lock);
	size_t r = fk.room;
	pthread_mutex_unlock(&fk.lock);
	return r;
}

static int fake_current(struct session_mgr *m, struct session *s)
{
	(void)m;
	(void)s;
	return fk.unknown ? POOL_UNKNOWN : fk.stale ? POOL_STALE : POOL_CURRENT;
}

static const struct pool_ops fake_ops = { fake_build, fake_discard, fake_room, fake_current };

static void fake_reset(void)
{
	pthread_mutex_lock(&fk.lock);
	fk.built = fk.discarded = fk.failing = 0;
	fk.room = SIZE_MAX;
	fk.stale = fk.unknown = fk.hang = fk.hanging = false;
	fk.cancelled = 0;
	pthread_mutex_unlock(&fk.lock);
}

/* Waits up to 10 s for the pool to hold n members. */
static void wait_ready(struct pool *p, size_t n)
{
	for (int i = 0; i < 1000 && pool_ready(p) != n; i++)
		poll(NULL, 0, 10);
	assert_int_equal(pool_ready(p), n);
}

static void test_match(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	const char *img = c.image;
	json_t *env = json_pack("{s:s}", "A", "1"), *noenv = json_object();
	struct session_opts o = { 0 };

	assert_true(pool_match(&c, &o, img, "none"));
	o.name = "work"; /* a name is the server's record, not the container's config */
	assert_true(pool_match(&c, &o, img, "none"));
	o.env = noenv;
	assert_true(pool_match(&c, &o, img, "none"));
	o.memory_mb = c.memory_mb;
	o.cpus = c.cpus;
	assert_true(pool_match(&c, &o, img, "none"));
	o.default_session = true;
	assert_true(pool_match(&c, &o, img, "none"));

	struct session_opts base = o;
	assert_false(pool_match(&c, &o, "debian:bookworm-slim", "none"));
	assert_false(pool_match(&c, &o, img, "bridge"));
	o.env = env;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.memory_mb = c.memory_mb - 1;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.cpus = c.cpus / 2;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.read_only = true;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.persistent = true;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.transient = true;
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	o.runtime = "runsc";
	assert_false(pool_match(&c, &o, img, "none"));
	o = base;
	free(c.pull);
	c.pull = xstrdup("always");
	assert_false(pool_match(&c, &o, img, "none"));
	json_decref(env);
	json_decref(noenv);
	config_finish(&c);
}

static void test_refill(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	fake_reset();
	struct session_opts o = { 0 };
	struct pool *p = pool_create(&c, NULL, &fake_ops, 3);
	assert_int_equal(pool_ready(p), 0);
	assert_null(pool_take(p, &o, c.image, "none")); /* not started: empty */
	pool_start(p);
	wait_ready(p, 3);
	struct session *s = pool_take(p, &o, c.image, "none");
	assert_non_null(s);
	wait_ready(p, 3);
	assert_int_equal(fk.built, 4);
	free(s);
	/* a mismatch takes nothing */
	o.memory_mb = 1;
	assert_null(pool_take(p, &o, c.image, "none"));
	assert_int_equal(pool_ready(p), 3);
	/* trimmed for the ceiling, then stopped: every member removed */
	pool_trim(p, 1);
	assert_int_equal(fk.discarded, 2);
	pool_destroy(p);
	assert_int_equal(fk.built, fk.discarded + 1);
	config_finish(&c);
}

static void test_room_and_failures(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	fake_reset();
	fk.room = 1; /* SANDBOX_MAX_SESSIONS_TOTAL leaves one container */
	fk.failing = 1;
	struct pool *p = pool_create(&c, NULL, &fake_ops, 2);
	pool_start(p);
	wait_ready(p, 1); /* after the failed build's back-off */
	poll(NULL, 0, 300);
	assert_int_equal(pool_ready(p), 1);
	assert_int_equal(fk.built, 1);
	/* a member that is no longer current is removed, not handed out */
	fk.room = 0; /* no refill meanwhile */
	struct session_opts o = { 0 };
	/* the engine cannot tell: the member is kept (its removal would fail too), not handed out */
	fk.unknown = true;
	assert_null(pool_take(p, &o, c.image, "none"));
	assert_int_equal(fk.discarded, 0);
	assert_int_equal(pool_ready(p), 1);
	fk.unknown = false;
	fk.stale = true;
	assert_null(pool_take(p, &o, c.image, "none"));
	assert_int_equal(fk.discarded, 1);
	pool_destroy(p);
	assert_int_equal(fk.built, fk.discarded);
	/* size 0: never builds */
	fake_reset();
	p = pool_create(&c, NULL, &fake_ops, 0);
	pool_start(p);
	poll(NULL, 0, 100);
	assert_int_equal(fk.built, 0);
	pool_destroy(p);
	config_finish(&c);
}

/* A stop does not wait out a build under way: it cancels the build's engine call. */
static void test_stop_cancels_build(void **state)
{
	(void)state;
	struct config c;
	config_init(&c);
	fake_reset();
	fk.hang = true;
	struct pool *p = pool_create(&c, NULL, &fake_ops, 1);
	pool_start(p);
	pthread_mutex_lock(&fk.lock);
	for (int i = 0; i < 1000 && !fk.hanging; i++) {
		pthread_mutex_unlock(&fk.lock);
		poll(NULL, 0, 10);
		pthread_mutex_lock(&fk.lock);
	}
	assert_true(fk.hanging);
	pthread_mutex_unlock(&fk.lock);
	int64_t t0 = now_ms();
	pool_quiesce(p);
	assert_int_equal(fk.cancelled, 1); /* at once, from the stopping thread */
	pool_destroy(p);
	/* without the cancel, the build would hold the stop for its 10 s */
	assert_true(now_ms() - t0 < 2000);
	assert_int_equal(fk.built, 0);
	assert_int_equal(fk.discarded, 0);
	/* a pool stopped before its first build never builds */
	fake_reset();
	p = pool_create(&c, NULL, &fake_ops, 1);
	pool_quiesce(p);
	pool_start(p);
	poll(NULL, 0, 100);
	pool_destroy(p);
	assert_int_equal(fk.built, 0);
	config_finish(&c);
}

int main(void)
{
	util_json_init();
	pthread_mutex_init(&fk.lock, NULL);
	pthread_cond_init(&fk.changed, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_refill),
		cmocka_unit_test(test_room_and_failures),
		cmocka_unit_test(test_stop_cancels_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
