/*
 * test-dispatch.c - per-key FIFO order, parallelism across keys, the worker
 * cap, cancellation of queued and running calls, and workers kept for the
 * next call.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/util.h"
#include "mcp/dispatch.h"

struct rec {
	pthread_mutex_t lock;
	int order[64];
	long tid[64]; /* the thread each ran on */
	int n;
	atomic_int running, peak, freed;
};

struct job {
	struct rec *rec;
	int tag;
	int sleep_ms;
	int pipe_rd; /* >= 0: block reading this until the cancel hook closes it */
	int pipe_wr;
};

static void job_run(struct call *c, void *data)
{
	struct job *j = data;
	int now = atomic_fetch_add(&j->rec->running, 1) + 1;
	int peak = atomic_load(&j->rec->peak);
	while (now > peak && !atomic_compare_exchange_weak(&j->rec->peak, &peak, now))
		;
	if (j->pipe_rd >= 0) {
		char ch;
		ssize_t r = read(j->pipe_rd, &ch, 1); /* returns when the hook writes */
		(void)r;
	}
	if (j->sleep_ms)
		usleep((useconds_t)j->sleep_ms * 1000);
	pthread_mutex_lock(&j->rec->lock);
	j->rec->tid[j->rec->n] = syscall(SYS_gettid);
	j->rec->order[j->rec->n++] = j->tag;
	pthread_mutex_unlock(&j->rec->lock);
	atomic_fetch_sub(&j->rec->running, 1);
}

static void job_free(void *data)
{
	struct job *j = data;
	atomic_fetch_add(&j->rec->freed, 1);
	free(j);
}

static void wake(void *arg)
{
	struct job *j = arg;
	assert_int_equal(write(j->pipe_wr, "x", 1), 1);
}

static struct call *mkcall(struct rec *rec, int id, const char *key, int tag, int sleep_ms)
{
	struct job *j = calloc(1, sizeof(*j));
	j->rec = rec;
	j->tag = tag;
	j->sleep_ms = sleep_ms;
	j->pipe_rd = j->pipe_wr = -1;
	json_t *jid = json_integer(id);
	struct call *c = call_create(jid, key, job_run, job_free, j);
	json_decref(jid);
	return c;
}

/* A call whose job blocks reading gate until a byte is written there: it stays running as long as a test needs. */
static struct call *mkgated(struct rec *rec, int id, const char *key, int tag, int gate)
{
	struct job *j = calloc(1, sizeof(*j));
	j->rec = rec;
	j->tag = tag;
	j->pipe_rd = gate;
	j->pipe_wr = -1;
	json_t *jid = json_integer(id);
	struct call *c = call_create(jid, key, job_run, job_free, j);
	json_decref(jid);
	return c;
}

/* Waits (bounded) until n jobs run: a sleep would race a loaded machine's scheduler. */
static void wait_running(struct rec *rec, int n)
{
	for (int i = 0; i < 10000 && atomic_load(&rec->running) < n; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&rec->running), n);
}

static void rec_init(struct rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
}

static void test_fifo_per_key(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(8);
	for (int i = 0; i < 10; i++)
		assert_int_equal(dispatch_submit(d, mkcall(&rec, i, "s:one", i, (10 - i))), 0);
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(rec.n, 10);
	for (int i = 0; i < 10; i++)
		assert_int_equal(rec.order[i], i);
	assert_int_equal(atomic_load(&rec.peak), 1);
	assert_int_equal(atomic_load(&rec.freed), 10);
	dispatch_destroy(d, 1000);
}

static void test_parallel_keys(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(8);
	int64_t t0 = now_ms();
	char key[16];
	for (int i = 0; i < 4; i++) {
		snprintf(key, sizeof(key), "s:%d", i);
		assert_int_equal(dispatch_submit(d, mkcall(&rec, i, key, i, 300)), 0);
	}
	assert_true(dispatch_drain(d, 5000));
	int64_t took = now_ms() - t0;
	assert_int_equal(rec.n, 4);
	assert_int_equal(atomic_load(&rec.peak), 4);
	assert_true(took < 1000); /* serial would be 1200 ms */
	dispatch_destroy(d, 1000);
}

static void test_worker_cap(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(2);
	char key[16];
	for (int i = 0; i < 6; i++) {
		snprintf(key, sizeof(key), "s:%d", i);
		assert_int_equal(dispatch_submit(d, mkcall(&rec, i, key, i, 50)), 0);
	}
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(rec.n, 6);
	assert_true(atomic_load(&rec.peak) <= 2);
	dispatch_destroy(d, 1000);
}

/* Past the limits a call is refused (-EBUSY, still the caller's); room comes back as calls end. */
static void test_limits(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(4);
	dispatch_set_limits(d, 3, 1000);
	/* a call alone is taken whatever its weight */
	struct call *big = mkcall(&rec, 1, "s:a", 1, 200);
	call_set_weight(big, 5000);
	assert_int_equal(dispatch_submit(d, big), 0);
	/* but nothing joins it past the byte limit */
	struct call *small = mkcall(&rec, 2, "s:a", 2, 0);
	call_set_weight(small, 10);
	assert_int_equal(dispatch_submit(d, small), -EBUSY);
	assert_int_equal(dispatch_pending(d), 1);
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(dispatch_pending(d), 0);
	/* the count: three calls fit, the fourth is refused (all three held until released) */
	call_destroy(small);
	int gate[2];
	assert_int_equal(pipe(gate), 0);
	small = mkgated(&rec, 2, "s:a", 2, gate[0]);
	call_set_weight(small, 10);
	assert_int_equal(dispatch_submit(d, small), 0);
	for (int i = 3; i < 5; i++) {
		struct call *c = mkgated(&rec, i, "s:b", i, gate[0]);
		call_set_weight(c, 10);
		assert_int_equal(dispatch_submit(d, c), 0);
	}
	struct call *over = mkcall(&rec, 9, "s:c", 9, 0);
	assert_int_equal(dispatch_submit(d, over), -EBUSY);
	call_destroy(over);
	/* a cancelled queued call gives its room back */
	json_t *id4 = json_integer(4);
	assert_true(dispatch_cancel(d, NULL, id4));
	json_decref(id4);
	struct call *again = mkcall(&rec, 10, "s:c", 10, 0);
	assert_int_equal(dispatch_submit(d, again), 0);
	assert_int_equal(write(gate[1], "xx", 2), 2); /* release s:a and s:b's first */
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(dispatch_pending(d), 0);
	assert_int_equal(atomic_load(&rec.freed), 7);
	close(gate[0]);
	close(gate[1]);
	dispatch_destroy(d, 1000);
}

static void test_cancel_queued_and_running(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(4);
	int p[2];
	assert_int_equal(pipe(p), 0);

	/* a job that blocks until its cancel hook fires */
	json_t *id1 = json_integer(1);
	struct job *bj = calloc(1, sizeof(*bj));
	bj->rec = &rec;
	bj->tag = 1;
	bj->pipe_rd = p[0];
	bj->pipe_wr = p[1];
	struct call *blocker = call_create(id1, "s:k", job_run, job_free, bj);
	assert_int_equal(call_arm(blocker, wake, bj), 0);
	assert_int_equal(dispatch_submit(d, blocker), 0);
	assert_int_equal(dispatch_submit(d, mkcall(&rec, 2, "s:k", 2, 0)), 0);
	wait_running(&rec, 1); /* the blocker runs (cancelling it while queued would drop it) */
	assert_int_equal(dispatch_pending(d), 2);

	json_t *id2 = json_integer(2);
	assert_true(dispatch_cancel(d, NULL, id2)); /* queued: dropped, never runs */
	assert_int_equal(dispatch_pending(d), 1);
	assert_true(dispatch_cancel(d, NULL, id1)); /* running: hook wakes it */
	assert_true(dispatch_drain(d, 2000));
	assert_int_equal(rec.n, 1);
	assert_int_equal(rec.order[0], 1);
	assert_int_equal(atomic_load(&rec.freed), 2);
	json_t *id9 = json_integer(9);
	assert_false(dispatch_cancel(d, NULL, id9));
	json_decref(id1);
	json_decref(id2);
	json_decref(id9);
	close(p[0]);
	close(p[1]);
	dispatch_destroy(d, 1000);
}

/*
 * dispatch_preempt: a preempting call ends the call running on its key (its
 * hook fires, it is marked preempted, not just cancelled, so it still
 * answers), leaves the queued ones to run after it, and is itself never
 * preempted by another preempting call on the key: two rollbacks queue.
 */
static void test_preempt(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(4);
	int p[2];
	assert_int_equal(pipe(p), 0);

	json_t *id1 = json_integer(1);
	struct job *bj = calloc(1, sizeof(*bj));
	bj->rec = &rec;
	bj->tag = 1;
	bj->pipe_rd = p[0];
	bj->pipe_wr = p[1];
	struct call *blocker = call_create(id1, "s:k", job_run, job_free, bj);
	assert_int_equal(call_arm(blocker, wake, bj), 0);
	assert_int_equal(dispatch_submit(d, blocker), 0);
	wait_running(&rec, 1);
	assert_int_equal(dispatch_submit(d, mkcall(&rec, 2, "s:k", 2, 0)), 0);
	assert_false(dispatch_preempt(d, "s:other"));
	struct call *rollback = mkcall(&rec, 3, "s:k", 3, 200);
	call_set_preempting(rollback);
	assert_true(dispatch_preempt(d, "s:k")); /* the blocker's hook wakes it */
	assert_true(call_preempted(blocker));
	assert_true(call_cancelled(blocker));
	assert_int_equal(dispatch_submit(d, rollback), 0);
	/* wait until the rollback runs, then a second preempting call must not end it */
	for (int i = 0; i < 10000 && rec.n < 2; i++)
		usleep(1000);
	usleep(50000); /* past job 2's last step: the rollback (200 ms) runs now */
	wait_running(&rec, 1);
	assert_false(dispatch_preempt(d, "s:k"));
	assert_false(call_preempted(rollback));
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(rec.n, 3);
	assert_int_equal(rec.order[0], 1);
	assert_int_equal(rec.order[1], 2); /* queued before the rollback: runs before it, in order */
	assert_int_equal(rec.order[2], 3);
	json_decref(id1);
	close(p[0]);
	close(p[1]);
	dispatch_destroy(d, 1000);
}

static void test_arm_after_cancel(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct call *c = mkcall(&rec, 5, "k", 0, 0);
	assert_false(call_cancelled(c));
	assert_int_equal(call_arm(c, wake, NULL), 0);
	call_disarm(c);
	call_destroy(c);
	assert_int_equal(atomic_load(&rec.freed), 1);
}

static void test_destroy_cancels(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(1);
	for (int i = 0; i < 5; i++)
		assert_int_equal(dispatch_submit(d, mkcall(&rec, i, "s:x", i, 100)), 0);
	usleep(20 * 1000);
	int64_t t0 = now_ms();
	dispatch_destroy(d, 2000); /* queued ones are dropped; the running one finishes */
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(rec.n, 1);
	assert_int_equal(atomic_load(&rec.freed), 5);
}

/* A call after the last one finished runs on the same worker: no thread per call. */
static void test_worker_reused(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(8);
	for (int i = 0; i < 3; i++) {
		char key[16];
		snprintf(key, sizeof(key), "c:%d", i); /* a key of its own, as a call that names no session */
		assert_int_equal(dispatch_submit(d, mkcall(&rec, i, key, i, 0)), 0);
		assert_true(dispatch_drain(d, 5000));
	}
	assert_int_equal(rec.n, 3);
	assert_true(rec.tid[1] == rec.tid[0]);
	assert_true(rec.tid[2] == rec.tid[0]);
	/* the waiting worker does not hold up the end */
	int64_t t0 = now_ms();
	assert_true(dispatch_destroy(d, 5000));
	assert_true(now_ms() - t0 < 1000);
}

/* dispatch_run_here: on the caller's thread when its key is free, else behind what holds the key. */
static void test_run_here(void **state)
{
	struct rec rec;
	rec_init(&rec);
	struct dispatch *d = dispatch_create(4);
	long me = syscall(SYS_gettid);

	assert_int_equal(dispatch_run_here(d, mkcall(&rec, 1, "c:1", 1, 0)), 0);
	assert_int_equal(rec.n, 1); /* done before it returned */
	assert_true(rec.tid[0] == me);
	assert_int_equal(atomic_load(&rec.freed), 1);
	assert_int_equal(dispatch_pending(d), 0);

	/* the key is busy: it queues behind the running call and runs on its worker, in order */
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(dispatch_submit(d, mkgated(&rec, 2, "s:k", 2, p[0])), 0);
	wait_running(&rec, 1);
	assert_int_equal(dispatch_run_here(d, mkcall(&rec, 3, "s:k", 3, 0)), 0);
	assert_int_equal(rec.n, 1);
	assert_int_equal(dispatch_pending(d), 2);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_true(dispatch_drain(d, 5000));
	assert_int_equal(rec.n, 3);
	assert_int_equal(rec.order[1], 2);
	assert_int_equal(rec.order[2], 3);
	assert_true(rec.tid[2] != me);
	close(p[0]);
	close(p[1]);

	/* past the limits it is refused as dispatch_submit would, and stays the caller's */
	dispatch_set_limits(d, 1, SIZE_MAX);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(dispatch_submit(d, mkgated(&rec, 4, "s:k", 4, p[0])), 0);
	struct call *over = mkcall(&rec, 5, "c:5", 5, 0);
	assert_int_equal(dispatch_run_here(d, over), -EBUSY);
	call_destroy(over);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_true(dispatch_drain(d, 5000));
	close(p[0]);
	close(p[1]);
	assert_true(dispatch_destroy(d, 1000));
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fifo_per_key),
		cmocka_unit_test(test_parallel_keys),
		cmocka_unit_test(test_worker_cap),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_cancel_queued_and_running),
		cmocka_unit_test(test_preempt),
		cmocka_unit_test(test_arm_after_cancel),
		cmocka_unit_test(test_destroy_cancels),
		cmocka_unit_test(test_worker_reused),
		cmocka_unit_test(test_run_here),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
