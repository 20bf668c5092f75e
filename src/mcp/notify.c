/*
 * notify.c - rate-limited notifications (see notify.h).
 *
 * The condition variable runs on CLOCK_MONOTONIC, like now_ms, so a change
 * of the wall clock cannot stall or hurry a delayed notification.
 *
 * The thread never allocates: the line is built once by notify_create. A
 * thread that mallocs takes a glibc arena (main.c caps them at 2), which
 * moves the workers to other arenas: with this thread sending through
 * json_dumps, the peak RSS of reading 20 MiB in 6 MiB parts went from 37 to
 * 69 MiB (tests/integration/files.test.mjs).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "mcp/notify.h"
#include "mcp/rpc.h"

struct notify {
	struct out *out;
	char *line; /* the notification, one line ending in '\n' */
	size_t line_len;
	int interval_ms;
	pthread_t thread;
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	bool started, failed; /* the thread, made at the first poke (not on the way to the first reply) */
	bool pending, stop;
	int64_t last_ms; /* when the last one went out; 0: never */
};

static void *notify_main(void *arg);
static void wait_until(struct notify *n, int64_t due_ms);

struct notify *notify_create(struct out *out, const char *method, int interval_ms)
{
	struct notify *n = xcalloc(1, sizeof(*n));
	pthread_condattr_t ca;

	json_t *msg = rpc_notification(method, json_object());
	char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
	json_decref(msg);
	if (!text) {
		free(n);
		return NULL;
	}
	n->line_len = strlen(text) + 1;
	n->line = xmalloc(n->line_len + 1);
	memcpy(n->line, text, n->line_len - 1);
	n->line[n->line_len - 1] = '\n';
	n->line[n->line_len] = '\0';
	free(text);
	n->out = out;
	n->interval_ms = interval_ms;
	pthread_mutex_init(&n->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&n->wake, &ca);
	pthread_condattr_destroy(&ca);
	return n;
}

void notify_poke(struct notify *n)
{
	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	if (!n->started && !n->failed) {
		n->started = thread_create_nosig(&n->thread, NULL, notify_main, n) == 0;
		n->failed = !n->started;
		if (n->failed)
			log_warnf("no thread for notifications: clients see new files when they list again");
	}
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
	bool started = n->started;
	pthread_mutex_unlock(&n->lock);
	if (started)
		pthread_join(n->thread, NULL);
	pthread_cond_destroy(&n->wake);
	pthread_mutex_destroy(&n->lock);
	free(n->line);
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
		(void)out_send_line(n->out, n->line, n->line_len);
		pthread_mutex_lock(&n->lock);
	}
	pthread_mutex_unlock(&n->lock);
	return NULL;
}
