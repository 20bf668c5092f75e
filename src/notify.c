/*
 * notify.c - rate-limited notifications (see notify.h).
 *
 * The condition variable runs on CLOCK_MONOTONIC, like now_ms, so a change
 * of the wall clock cannot stall or hurry a delayed notification.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "notify.h"
#include "rpc.h"
#include "util.h"

struct notify {
	struct out *out;
	const char *method; /* a string literal */
	int interval_ms;
	pthread_t thread;
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	bool pending, stop;
	int64_t last_ms; /* when the last one went out; 0: never */
};

static void *notify_main(void *arg);
static void wait_until(struct notify *n, int64_t due_ms);

struct notify *notify_create(struct out *out, const char *method, int interval_ms)
{
	struct notify *n = xcalloc(1, sizeof(*n));
	pthread_condattr_t ca;

	n->out = out;
	n->method = method;
	n->interval_ms = interval_ms;
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (thread_create_nosig(&n->thread, NULL, notify_main, n) != 0) {
		pthread_cond_destroy(&n->wake);
		pthread_mutex_destroy(&n->lock);
		free(n);
		return NULL;
	}
	return n;
}

void notify_poke(struct notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->pending = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
}

void notify_destroy(struct notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	n->stop = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n);
}

/* Waits on wake until due_ms (monotonic), a poke or a stop; called with the lock held. */
static void wait_until(struct notify *n, int64_t due_ms)
{
	struct timespec ts = { .tv_sec = (time_t)(due_ms / 1000), .tv_nsec = (long)(due_ms % 1000) * 1000000 };
	(void)pthread_cond_timedwait(&n->wake, &n->lock, &ts);
}

static void *notify_main(void *arg)
{
	struct notify *n = arg;

	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		if (!n->pending) {
			pthread_cond_wait(&n->wake, &n->lock);
			continue;
		}
		int64_t now = now_ms();
		if (n->last_ms && now < n->last_ms + n->interval_ms) {
			wait_until(n, n->last_ms + n->interval_ms);
			continue;
		}
		n->pending = false;
		n->last_ms = now;
		pthread_mutex_unlock(&n->lock);
		/* outside the lock: a slow client blocks this thread, never a poke */
		(void)out_send_new(n->out, rpc_notification(n->method, json_object()));
		pthread_mutex_lock(&n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}
