/*
 * test-pool.c - the warm pool without an engine: pool_match against every
 * option that changes a container (and the ones that do not), and the
 * refill thread driven through fake pool_ops: fills to its size, refills
 * after a take, stays under the room the registry leaves, survives failed
 * builds without leaking, drops members that are no longer current, and
 * removes every member when it stops.
 */
#include "testutil.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>

#include "config.h"
#include "pool.h"
#include "session.h"

/* The fake registry: counts what the pool asked of it. */
struct fake {
	pthread_mutex_t lock;
	int built, discarded, failing;
	size_t room;
	bool stale;   /* current() says no */
	bool unknown; /* current() cannot tell (the engine is away) */
};

static struct fake fk;

static int fake_build(struct session_mgr *m, struct session **ret, struct err *err)
{
	(void)m;
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
	fk.stale = fk.unknown = false;
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

int main(void)
{
	util_json_init();
	pthread_mutex_init(&fk.lock, NULL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_refill),
		cmocka_unit_test(test_room_and_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
