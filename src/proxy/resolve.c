/*
 * resolve.c - getaddrinfo on detached threads, answers through a mailbox.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/util.h"
#include "proxy/policy.h"
#include "proxy/resolve.h"

/* getaddrinfo and the NSS modules it loads want more than a pump's stack, far less than the default 8 MiB. */
#define RESOLVE_STACK (512u << 10)

struct resolver {
	pthread_mutex_t mu;
	int refs;	  /* the proxy's, and one per lookup running */
	unsigned running; /* lookups whose thread has not returned, also for connections gone since */
	unsigned max;	  /* running at most */
	bool closed;
	int efd;
	struct resolved *head, **tail;
};

struct lookup {
	struct resolver *r;
	uint32_t tag;
	bool numeric;
	char host[POLICY_HOST_MAX + 1];
	char port[8];
};

int resolver_create(unsigned max, struct resolver **ret)
{
	struct resolver *r = xcalloc(1, sizeof(*r));
	if ((r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		int e = errno;
		free(r);
		return -e;
	}
	pthread_mutex_init(&r->mu, NULL);
	r->refs = 1;
	r->max = max;
	r->tail = &r->head;
	*ret = r;
	return 0;
}

int resolver_fd(const struct resolver *r)
{
	return r->efd;
}

void resolved_free(struct resolved *x)
{
	if (x->ai)
		freeaddrinfo(x->ai);
	free(x);
}

/* Drops one reference under r->mu (which it releases); the last frees r. */
static void unref_locked(struct resolver *r)
{
	bool last = --r->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (!last)
		return;
	while (r->head) {
		struct resolved *x = r->head;
		r->head = x->next;
		resolved_free(x);
	}
	close(r->efd);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static void *lookup_main(void *arg)
{
	struct lookup *l = arg;
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV | (l->numeric ? AI_NUMERICHOST : 0) };
	struct resolved *x = xcalloc(1, sizeof(*x));
	x->tag = l->tag;
	x->gai_err = getaddrinfo(l->host, l->port, &hints, &x->ai);
	if (x->gai_err)
		x->ai = NULL;
	struct resolver *r = l->r;
	free(l);
	pthread_mutex_lock(&r->mu);
	r->running--;
	if (r->closed) {
		resolved_free(x);
	} else {
		*r->tail = x;
		r->tail = &x->next;
		uint64_t one = 1;
		if (write(r->efd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow at one per lookup: nothing to do */
		}
	}
	unref_locked(r);
	return NULL;
}

int resolver_lookup(struct resolver *r, uint32_t tag, const char *host, uint16_t port, bool numeric)
{
	struct lookup *l = xcalloc(1, sizeof(*l));
	l->r = r;
	l->tag = tag;
	l->numeric = numeric;
	snprintf(l->host, sizeof(l->host), "%s", host);
	snprintf(l->port, sizeof(l->port), "%u", port);
	/* an IPv6 literal comes in brackets */
	size_t n = strlen(l->host);
	if (n > 2 && l->host[0] == '[' && l->host[n - 1] == ']') {
		memmove(l->host, l->host + 1, n - 2);
		l->host[n - 2] = '\0';
	}
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, RESOLVE_STACK);
	pthread_mutex_lock(&r->mu);
	if (r->running >= r->max) {
		/* a lookup outlives its connection: closing and reconnecting must not pile threads up */
		pthread_mutex_unlock(&r->mu);
		pthread_attr_destroy(&at);
		free(l);
		return -EAGAIN;
	}
	r->refs++;
	r->running++;
	pthread_mutex_unlock(&r->mu);
	int e = pthread_create(&t, &at, lookup_main, l);
	pthread_attr_destroy(&at);
	if (e) {
		free(l);
		pthread_mutex_lock(&r->mu);
		r->running--;
		unref_locked(r);
		return -ENOMEM; /* not -EAGAIN, which says the cap was reached */
	}
	return 0;
}

struct resolved *resolver_take(struct resolver *r)
{
	uint64_t v;
	if (read(r->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing counted, the list says the same */
	}
	pthread_mutex_lock(&r->mu);
	struct resolved *x = r->head;
	r->head = NULL;
	r->tail = &r->head;
	pthread_mutex_unlock(&r->mu);
	return x;
}

void resolver_close(struct resolver *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->closed = true;
	unref_locked(r);
}
