/*
 * dispatch.c - per-key FIFOs drained by a bounded set of detached threads.
 *
 * Invariants, all under d->lock:
 *  - a queue exists while it has queued calls or a running one;
 *  - at most one worker owns a queue (q->has_worker), so its calls never
 *    overlap and keep arrival order;
 *  - d->workers counts live threads; a worker whose queue runs dry adopts a
 *    queue that is waiting for a thread, or waits on d->idle_list for up to
 *    DISPATCH_LINGER_MS to be handed one (a thread per call cost more than
 *    the call when calls are short and many), then exits. At most
 *    DISPATCH_IDLE_MAX wait; shutting down wakes them all.
 * A call is freed only by its worker, after call_disarm, so a cancel hook
 * that is running on the reader thread always sees a live call.
 *  - d->pending and d->pending_bytes count the calls queued or running and
 *    their weight; every call leaves through call_retire.
 * The limits keep a client that writes faster than calls finish (a flood,
 * or many big file_writes behind one slow call) from growing memory without
 * end: past them a call is refused at once, never silently dropped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "mcp/dispatch.h"

struct queue {
	char key[DISPATCH_KEY_MAX + 1];
	struct call *head, *tail;
	struct call *running;
	bool has_worker;
	struct queue *next;
};

struct dispatch {
	pthread_mutex_t lock;
	pthread_cond_t idle; /* signalled when a worker exits */
	struct queue *queues;
	unsigned workers;
	unsigned max_workers;
	struct idle *idle_list; /* workers waiting for a queue */
	unsigned idle_count;
	bool shutting_down;
	/* admission: what is queued or running, against its limits */
	unsigned pending, max_pending;
	size_t pending_bytes, max_bytes;
};

/* How long a worker with nothing to do waits for a queue before it exits. */
#define DISPATCH_LINGER_MS 2000
/* Workers that wait for work at most (the others exit at once). */
#define DISPATCH_IDLE_MAX 8

/* A worker waiting for work, on its own stack: dispatch_submit hands it a queue. */
struct idle {
	pthread_cond_t wake;
	struct queue *q; /* set by whoever wakes it with work */
	struct idle *next;
};

struct worker_arg {
	struct dispatch *d;
	struct queue *q;
};

static void call_retire(struct dispatch *d, struct call *c);
static void *worker_main(void *arg);
static struct queue *queue_find(struct dispatch *d, const char *key);
static void queue_unlink(struct dispatch *d, struct queue *q);
static void deadline_in(struct timespec *ts, int wait_ms);
static struct queue *idle_wait(struct dispatch *d);

/* Frees a call the dispatcher took, and stops counting it. Called with d->lock held. */
static void call_retire(struct dispatch *d, struct call *c)
{
	d->pending--;
	d->pending_bytes -= call_weight(c);
	call_destroy(c);
}

struct dispatch *dispatch_create(unsigned max_workers)
{
	struct dispatch *d = xcalloc(1, sizeof(*d));
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->idle, NULL);
	d->max_workers = max_workers ? max_workers : 1;
	d->max_pending = DISPATCH_PENDING_MAX;
	d->max_bytes = SIZE_MAX;
	return d;
}

void dispatch_set_limits(struct dispatch *d, unsigned max_calls, size_t max_bytes)
{
	pthread_mutex_lock(&d->lock);
	d->max_pending = max_calls ? max_calls : 1;
	d->max_bytes = max_bytes;
	pthread_mutex_unlock(&d->lock);
}

static struct queue *queue_find(struct dispatch *d, const char *key)
{
	for (struct queue *q = d->queues; q; q = q->next)
		if (strcmp(q->key, key) == 0)
			return q;
	return NULL;
}

static void queue_unlink(struct dispatch *d, struct queue *q)
{
	for (struct queue **pp = &d->queues; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			free(q);
			return;
		}
	}
}

static void *worker_main(void *arg)
{
	struct worker_arg *wa = arg;
	struct dispatch *d = wa->d;
	struct queue *q = wa->q;
	free(wa);

	pthread_mutex_lock(&d->lock);
	while (q) {
		struct call *c = q->head;
		if (c) {
			q->head = call_next(c);
			if (!q->head)
				q->tail = NULL;
			call_set_next(c, NULL);
			q->running = c;
			pthread_mutex_unlock(&d->lock);
			if (!call_cancelled(c) || call_preempted(c))
				call_invoke(c);
			call_disarm(c);
			pthread_mutex_lock(&d->lock);
			q->running = NULL;
			call_retire(d, c);
			continue;
		}
		q->has_worker = false;
		queue_unlink(d, q);
		pthread_cond_broadcast(&d->idle);
		q = NULL;
		for (struct queue *o = d->queues; o; o = o->next) {
			if (o->head && !o->has_worker) {
				o->has_worker = true;
				q = o;
				break;
			}
		}
		if (!q)
			q = idle_wait(d);
	}
	d->workers--;
	pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/*
 * Waits, with d->lock held, for dispatch_submit to hand this worker a queue
 * (which it then owns), for up to DISPATCH_LINGER_MS; NULL: exit.
 */
static struct queue *idle_wait(struct dispatch *d)
{
	struct idle me = { .q = NULL };
	struct timespec deadline;

	if (d->shutting_down || d->idle_count >= DISPATCH_IDLE_MAX)
		return NULL;
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* a clock change must not shorten or stretch it */
	pthread_cond_init(&me.wake, &attr);
	pthread_condattr_destroy(&attr);
	me.next = d->idle_list;
	d->idle_list = &me;
	d->idle_count++;
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += DISPATCH_LINGER_MS / 1000;
	deadline.tv_nsec += (long)(DISPATCH_LINGER_MS % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	while (!me.q && !d->shutting_down)
		if (pthread_cond_timedwait(&me.wake, &d->lock, &deadline) == ETIMEDOUT)
			break;
	if (!me.q) { /* not handed work: still on the list */
		for (struct idle **pp = &d->idle_list; *pp; pp = &(*pp)->next) {
			if (*pp == &me) {
				*pp = me.next;
				d->idle_count--;
				break;
			}
		}
	}
	pthread_cond_destroy(&me.wake);
	return me.q;
}

int dispatch_submit(struct dispatch *d, struct call *c)
{
	pthread_mutex_lock(&d->lock);
	if (d->shutting_down) {
		pthread_mutex_unlock(&d->lock);
		return -ESHUTDOWN;
	}
	if (d->pending >= d->max_pending ||
	    (d->pending > 0 && (call_weight(c) > d->max_bytes || d->pending_bytes > d->max_bytes - call_weight(c)))) {
		pthread_mutex_unlock(&d->lock);
		return -EBUSY;
	}
	struct queue *q = queue_find(d, call_key(c));
	bool fresh = !q;
	if (!q) {
		q = xcalloc(1, sizeof(*q));
		snprintf(q->key, sizeof(q->key), "%s", call_key(c));
		q->next = d->queues;
		d->queues = q;
	}
	if (!q->has_worker && d->idle_list) {
		/* a waiting worker takes it: off the list, so no one else hands it work */
		struct idle *w = d->idle_list;
		d->idle_list = w->next;
		d->idle_count--;
		w->q = q;
		q->has_worker = true;
		pthread_cond_signal(&w->wake);
	} else if (!q->has_worker && d->workers < d->max_workers) {
		pthread_attr_t attr;
		pthread_t t;
		struct worker_arg *wa = xmalloc(sizeof(*wa));
		wa->d = d;
		wa->q = q;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int r = thread_create_nosig(&t, &attr, worker_main, wa);
		pthread_attr_destroy(&attr);
		if (r != 0) {
			free(wa);
			if (fresh)
				queue_unlink(d, q);
			pthread_mutex_unlock(&d->lock);
			return -r;
		}
		q->has_worker = true;
		d->workers++;
	}
	/* the new worker blocks on d->lock until we release it, so append now */
	if (q->tail)
		call_set_next(q->tail, c);
	else
		q->head = c;
	q->tail = c;
	d->pending++;
	d->pending_bytes += call_weight(c);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int dispatch_run_here(struct dispatch *d, struct call *c)
{
	pthread_mutex_lock(&d->lock);
	if (d->shutting_down || d->pending >= d->max_pending ||
	    (d->pending > 0 && (call_weight(c) > d->max_bytes || d->pending_bytes > d->max_bytes - call_weight(c))) ||
	    queue_find(d, call_key(c))) {
		/* refused, or calls to keep order with: dispatch_submit decides and queues */
		pthread_mutex_unlock(&d->lock);
		return dispatch_submit(d, c);
	}
	/* a queue like any other, so dispatch_cancel, _drain and _destroy see the call */
	struct queue *q = xcalloc(1, sizeof(*q));
	snprintf(q->key, sizeof(q->key), "%s", call_key(c));
	q->next = d->queues;
	d->queues = q;
	q->has_worker = true;
	d->pending++;
	d->pending_bytes += call_weight(c);
	while (c) {
		q->running = c;
		pthread_mutex_unlock(&d->lock);
		if (!call_cancelled(c) || call_preempted(c))
			call_invoke(c);
		call_disarm(c);
		pthread_mutex_lock(&d->lock);
		q->running = NULL;
		call_retire(d, c);
		/* calls queued behind it meanwhile, on its key, run here too, in order */
		c = q->head;
		if (c) {
			q->head = call_next(c);
			if (!q->head)
				q->tail = NULL;
			call_set_next(c, NULL);
		}
	}
	q->has_worker = false;
	queue_unlink(d, q);
	pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

/* c is the one dispatch_cancel looks for: owner's, and id's unless id is NULL. */
static bool call_matches(const struct call *c, const void *owner, const json_t *id)
{
	return call_owner(c) == owner && (!id || json_equal(call_id(c), (json_t *)id));
}

bool dispatch_cancel(struct dispatch *d, const void *owner, const json_t *id)
{
	bool found = false;

	pthread_mutex_lock(&d->lock);
	for (struct queue *q = d->queues; q && (!found || !id); q = q->next) {
		if (q->running && call_matches(q->running, owner, id)) {
			call_cancel(q->running);
			found = true;
			if (id)
				break;
		}
		for (struct call *prev = NULL, *c = q->head, *next; c; c = next) {
			next = call_next(c);
			if (!call_matches(c, owner, id)) {
				prev = c;
				continue;
			}
			if (prev)
				call_set_next(prev, next);
			else
				q->head = next;
			if (q->tail == c)
				q->tail = prev;
			call_retire(d, c);
			found = true;
			if (id)
				break;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

bool dispatch_preempt(struct dispatch *d, const char *key)
{
	bool found = false;
	pthread_mutex_lock(&d->lock);
	struct queue *q = queue_find(d, key);
	/* under d->lock: the worker cannot retire the running call meanwhile */
	if (q && q->running && !call_preempting(q->running)) {
		call_preempt(q->running);
		found = true;
	}
	pthread_mutex_unlock(&d->lock);
	return found;
}

unsigned dispatch_pending(struct dispatch *d)
{
	pthread_mutex_lock(&d->lock);
	unsigned n = d->pending;
	pthread_mutex_unlock(&d->lock);
	return n;
}

static void deadline_in(struct timespec *ts, int wait_ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += wait_ms / 1000;
	ts->tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

bool dispatch_drain(struct dispatch *d, int wait_ms)
{
	struct timespec deadline;

	deadline_in(&deadline, wait_ms);
	pthread_mutex_lock(&d->lock);
	while (d->queues) {
		if (pthread_cond_timedwait(&d->idle, &d->lock, &deadline) == ETIMEDOUT)
			break;
	}
	bool done = d->queues == NULL;
	pthread_mutex_unlock(&d->lock);
	return done;
}

bool dispatch_destroy(struct dispatch *d, int wait_ms)
{
	if (!d)
		return true;
	pthread_mutex_lock(&d->lock);
	d->shutting_down = true;
	for (struct idle *w = d->idle_list; w; w = w->next)
		pthread_cond_signal(&w->wake);
	for (struct queue *q = d->queues; q; q = q->next) {
		while (q->head) {
			struct call *c = q->head;
			q->head = call_next(c);
			call_retire(d, c);
		}
		q->tail = NULL;
		if (q->running)
			call_cancel(q->running);
	}
	struct timespec deadline;
	deadline_in(&deadline, wait_ms);
	while (d->workers > 0) {
		if (pthread_cond_timedwait(&d->idle, &d->lock, &deadline) == ETIMEDOUT)
			break;
	}
	unsigned left = d->workers;
	pthread_mutex_unlock(&d->lock);
	if (left > 0) {
		/* a worker still references d: leave it allocated, the process is exiting */
		log_warnf("%u call(s) still running at shutdown; not waiting for them", left);
		return false;
	}
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->idle);
	free(d);
	return true;
}
