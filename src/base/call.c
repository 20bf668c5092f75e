/*
 * call.c - a call's identity and its cancel token.
 *
 * Cancelling runs from another thread (the reader, or the dispatcher at
 * shutdown) while the call's own thread may be arming or disarming its hook;
 * c->lock orders the two, and call_disarm waits out a hook that is running so
 * the call's thread never frees what the hook still uses.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/call.h"
#include "base/util.h"

struct call {
	json_t *id;
	const void *owner;			/* the client that sent it: request ids are unique only per client */
	char principal[CALL_PRINCIPAL_MAX + 1]; /* whose sandboxes it may use (session.c) */
	char key[CALL_KEY_MAX + 1];
	call_run_fn run;
	call_free_fn free_data;
	void *data;
	size_t weight; /* bytes, counted in d->pending_bytes while queued or running */
	atomic_bool cancelled;
	atomic_bool preempted; /* cancelled by the server (call_preempt), not by its client */
	bool preempting;

	pthread_mutex_t lock; /* guards hook, hook_arg, hook_running */
	pthread_cond_t cond;
	call_cancel_fn hook;
	void *hook_arg;
	bool hook_running;

	struct call *next; /* in its dispatcher queue */
};

struct call *call_create(json_t *id, const char *key, call_run_fn run, call_free_fn free_data, void *data)
{
	struct call *c = xcalloc(1, sizeof(*c));
	c->id = json_incref(id);
	snprintf(c->key, sizeof(c->key), "%s", key);
	c->run = run;
	c->free_data = free_data;
	c->data = data;
	atomic_init(&c->cancelled, false);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	return c;
}

void call_destroy(struct call *c)
{
	if (!c)
		return;
	if (c->free_data)
		c->free_data(c->data);
	json_decref(c->id);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	free(c);
}

void call_set_owner(struct call *c, const void *owner)
{
	c->owner = owner;
}

void call_set_principal(struct call *c, const char *principal)
{
	snprintf(c->principal, sizeof(c->principal), "%s", principal);
}

const char *call_principal(const struct call *c)
{
	return c ? c->principal : "";
}

void call_set_weight(struct call *c, size_t bytes)
{
	c->weight = bytes;
}

json_t *call_id(const struct call *c)
{
	return c->id;
}

bool call_cancelled(const struct call *c)
{
	return atomic_load(&c->cancelled);
}

int call_arm(struct call *c, call_cancel_fn fn, void *arg)
{
	pthread_mutex_lock(&c->lock);
	if (atomic_load(&c->cancelled)) {
		pthread_mutex_unlock(&c->lock);
		return -ECANCELED;
	}
	c->hook = fn;
	c->hook_arg = arg;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void call_disarm(struct call *c)
{
	pthread_mutex_lock(&c->lock);
	while (c->hook_running)
		pthread_cond_wait(&c->cond, &c->lock);
	c->hook = NULL;
	c->hook_arg = NULL;
	pthread_mutex_unlock(&c->lock);
}

void call_cancel(struct call *c)
{
	pthread_mutex_lock(&c->lock);
	atomic_store(&c->cancelled, true);
	call_cancel_fn fn = c->hook;
	void *arg = c->hook_arg;
	if (fn)
		c->hook_running = true;
	pthread_mutex_unlock(&c->lock);
	if (!fn)
		return;
	/* the worker cannot free c before hook_running drops: it disarms first */
	fn(arg);
	pthread_mutex_lock(&c->lock);
	c->hook_running = false;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

void call_preempt(struct call *c)
{
	atomic_store(&c->preempted, true);
	call_cancel(c);
}

bool call_preempted(const struct call *c)
{
	return c && atomic_load(&c->preempted);
}

void call_set_preempting(struct call *c)
{
	c->preempting = true;
}

bool call_preempting(const struct call *c)
{
	return c->preempting;
}

const char *call_key(const struct call *c)
{
	return c->key;
}

size_t call_weight(const struct call *c)
{
	return c->weight;
}

const void *call_owner(const struct call *c)
{
	return c->owner;
}

void call_invoke(struct call *c)
{
	c->run(c, c->data);
}

struct call *call_next(const struct call *c)
{
	return c->next;
}

void call_set_next(struct call *c, struct call *next)
{
	c->next = next;
}
