/*
 * session-remove.c - removing sessions' containers: one (a close, the
 * reaper, a failed create), or all of them at the exit, at once and within
 * a bound, the rest left to the janitor; and the janitor's own sweep of a
 * dead instance (session_reap_instance).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/checkpoint.h"
#include "sandbox/scan.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

/* How long the exit waits for the engine's removals, ms (session_remove_all). */
#define SESSION_EXIT_REMOVE_MS 8000

/* Removes s's container; call, if given, is the exit's, cancelled past its time (session_remove_all). */
static void remove_with(struct session_mgr *m, struct session *s, struct call *call)
{
	struct err err;
	session_forwards_close(m, s);
	if (engine_container_remove(s->engine, call, s->container, &err) == 0)
		return;
	if (call && call_cancelled(call)) {
		log_infof("session %s: the engine took over %d s to remove its container; the janitor goes on after the exit",
			  s->id, SESSION_EXIT_REMOVE_MS / 1000);
		atomic_store(&m->exit_left, true);
		return;
	}
	log_warnf("removing the container of session %s: %s", s->id, err.msg);
	session_mark_orphans(m, s->engine);
}

void session_remove_container(struct session_mgr *m, struct session *s)
{
	remove_with(m, s, NULL);
}

void session_reap_instance(struct engines *es, const char *instance)
{
	if (strlen(instance) != SESSION_INSTANCE_LEN || !is_hex(instance, SESSION_INSTANCE_LEN))
		return;
	for (size_t k = 0; k < engines_count(es); k++) {
		scan_sweep_instance(es, k, instance);
		checkpoint_sweep(engines_at(es, k), NULL);
	}
}

/* Containers removed at once by session_remove_all, at most. */
#define SESSION_REMOVE_PARALLEL 16

struct removal {
	struct session_mgr *m;
	struct session *s;
	struct call *call; /* cancelled past the exit's time */
	pthread_t thread;
	bool done; /* under m->lock */
};

static void *removal_main(void *arg)
{
	struct removal *r = arg;
	remove_with(r->m, r->s, r->call);
	pthread_mutex_lock(&r->m->lock);
	r->done = true;
	pthread_cond_broadcast(&r->m->wake);
	pthread_mutex_unlock(&r->m->lock);
	return NULL;
}

/* Waits for k removals until deadline; cancels those still under way then. */
static void removals_wait(struct session_mgr *m, struct removal *r, size_t k, int64_t deadline)
{
	bool done[SESSION_REMOVE_PARALLEL];
	pthread_mutex_lock(&m->lock);
	for (;;) {
		size_t left = 0;
		for (size_t j = 0; j < k; j++)
			left += !(done[j] = r[j].done);
		if (!left || now_ms() >= deadline)
			break;
		struct timespec ts = realtime_after_ms(deadline - now_ms());
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t j = 0; j < k; j++)
		if (!done[j])
			call_cancel(r[j].call); /* its request ends at once; the thread logs it */
}

/*
 * Removes the containers of all[0..n), one thread each (in batches): an exit
 * with several sessions and a pool takes about one removal's time, within
 * the few seconds a client leaves a server between EOF and SIGKILL. An engine
 * slower than SESSION_EXIT_REMOVE_MS (a container whose shim is busy ending
 * hundreds of execs took dockerd 30 s) does not hold the exit: the rest is
 * left to the janitor (session_mgr_exit_done), as after a kill.
 */
void session_remove_all(struct session_mgr *m, struct session **all, size_t n)
{
	int64_t deadline = now_ms() + SESSION_EXIT_REMOVE_MS;
	for (size_t i = 0; i < n; i += SESSION_REMOVE_PARALLEL) {
		if (now_ms() >= deadline) {
			atomic_store(&m->exit_left, true);
			log_infof("%zu containers are left to the janitor: the engine took over %d s", n - i,
				  SESSION_EXIT_REMOVE_MS / 1000);
			return;
		}
		struct removal r[SESSION_REMOVE_PARALLEL];
		size_t k = n - i < SESSION_REMOVE_PARALLEL ? n - i : SESSION_REMOVE_PARALLEL, started = 0;
		for (size_t j = 0; j < k; j++)
			r[j] = (struct removal){ .m = m,
						 .s = all[i + j],
						 .call = call_create(NULL, "", NULL, NULL, NULL) };
		while (started < k && thread_create_nosig(&r[started].thread, NULL, removal_main, &r[started]) == 0)
			started++;
		if (started < k)
			log_warnf("no thread for a removal: %zu removed one after another", k - started);
		for (size_t j = started; j < k; j++) {
			remove_with(m, r[j].s, NULL);
			r[j].done = true;
		}
		removals_wait(m, r, k, deadline);
		for (size_t j = 0; j < k; j++) {
			if (j < started)
				pthread_join(r[j].thread, NULL);
			call_destroy(r[j].call);
		}
	}
}
