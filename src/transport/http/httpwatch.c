/*
 * httpwatch.c - the whole-request deadline of the HTTP server (see httpwatch.h).
 *
 * The watcher only ever calls shutdown() on a connection's socket, under the
 * lock that httpwatch_remove takes: libmicrohttpd tells us a connection
 * closed (MHD_CONNECTION_NOTIFY_CLOSED) before it closes the fd, so the
 * watcher never touches a descriptor number that was reused.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "transport/http/httpwatch.h"

struct httpwatch_conn {
	struct httpwatch_conn *prev, *next;
	int fd;
	int64_t deadline_ms; /* CLOCK_MONOTONIC; 0: none (being served, or already cut) */
};

struct httpwatch {
	pthread_mutex_t lock; /* guards everything below */
	pthread_cond_t wake;
	pthread_t thread;
	bool stopping;
	int64_t limit_ms;
	struct httpwatch_conn *head;
};

static void *watch(void *arg);
static int64_t mono_ms(void);

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int httpwatch_create(unsigned deadline_s, struct httpwatch **ret, struct err *err)
{
	struct httpwatch *w = xcalloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int r;

	w->limit_ms = (int64_t)deadline_s * 1000;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	if ((r = pthread_create(&w->thread, NULL, watch, w)) != 0) {
		pthread_cond_destroy(&w->wake);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return err_set(err, ERRCODE_INTERNAL, -r, "cannot start the HTTP request watcher: %s", strerror(r));
	}
	*ret = w;
	return 0;
}

void httpwatch_destroy(struct httpwatch *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	while (w->head) {
		struct httpwatch_conn *c = w->head;
		w->head = c->next;
		free(c);
	}
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

struct httpwatch_conn *httpwatch_add(struct httpwatch *w, int fd)
{
	struct httpwatch_conn *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->deadline_ms = mono_ms() + w->limit_ms;
	pthread_mutex_lock(&w->lock);
	c->next = w->head;
	if (w->head)
		w->head->prev = c;
	w->head = c;
	pthread_mutex_unlock(&w->lock);
	return c;
}

void httpwatch_pause(struct httpwatch *w, struct httpwatch_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&w->lock);
	c->deadline_ms = 0;
	pthread_mutex_unlock(&w->lock);
}

void httpwatch_rearm(struct httpwatch *w, struct httpwatch_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&w->lock);
	c->deadline_ms = mono_ms() + w->limit_ms;
	pthread_mutex_unlock(&w->lock);
}

void httpwatch_remove(struct httpwatch *w, struct httpwatch_conn *c)
{
	if (!c)
		return;
	pthread_mutex_lock(&w->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->head = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&w->lock);
	free(c);
}

/* Cuts the connections past their deadline; sleeps until the nearest one (HTTPWATCH_TICK_MS at most). */
static void *watch(void *arg)
{
	struct httpwatch *w = arg;

	pthread_mutex_lock(&w->lock);
	while (!w->stopping) {
		int64_t now = mono_ms(), next = now + HTTPWATCH_TICK_MS;
		for (struct httpwatch_conn *c = w->head; c; c = c->next) {
			if (!c->deadline_ms)
				continue;
			if (c->deadline_ms <= now) {
				c->deadline_ms = 0;
				/* the connection's thread sees end of file and closes it */
				if (shutdown(c->fd, SHUT_RDWR) < 0)
					log_debugf("cutting a slow HTTP request: %s", strerror(errno));
				log_infof("HTTP request not in after %lld s (head and body): connection closed",
					  (long long)(w->limit_ms / 1000));
			} else if (c->deadline_ms < next) {
				next = c->deadline_ms;
			}
		}
		struct timespec ts = { .tv_sec = (time_t)(next / 1000), .tv_nsec = (long)(next % 1000) * 1000000 };
		(void)pthread_cond_timedwait(&w->wake, &w->lock, &ts);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}
