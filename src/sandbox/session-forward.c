/*
 * session-forward.c - a session's port forwards (forward.c makes each):
 * opened and closed by port_forward, listed, held while the container is
 * frozen, found by the preview proxy, and all ended with the session.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "sandbox/forward.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

void session_forwards_close(struct session_mgr *m, struct session *s)
{
	struct forward *fw[SESSION_FORWARDS_MAX];
	pthread_mutex_lock(&m->lock);
	unsigned n = s->nforwards;
	memcpy(fw, s->forwards, n * sizeof(*fw));
	s->nforwards = 0;
	pthread_mutex_unlock(&m->lock);
	for (unsigned i = 0; i < n; i++)
		forward_close(fw[i]);
}

/* A connection through a forward is a use of the session: the idle TTL counts from it. */
static void forward_touch(void *arg)
{
	struct session *s = arg;
	pthread_mutex_lock(&s->mgr->lock);
	s->last_used = session_now();
	pthread_mutex_unlock(&s->mgr->lock);
}

int session_forward_open(struct session_mgr *m, struct session *s, unsigned port, unsigned host_port,
			 unsigned *ret_host_port, char ret_host[16], struct err *err)
{
	struct forward *f;
	for (unsigned i = 0; i < s->nforwards; i++)
		if (forward_port(s->forwards[i]) == port)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
				       "port %u of session %s is forwarded already, to 127.0.0.1:%u", port, s->id,
				       forward_host_port(s->forwards[i]));
	if (s->nforwards >= SESSION_FORWARDS_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOSPC,
			       "session %s forwards %d ports, the most it may: close one first", s->id,
			       SESSION_FORWARDS_MAX);
	if (!s->agent_installed)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOTSUP,
			       "session %s has no agent (this server was built without musl-gcc, or its image could "
			       "not take it), and forwards go through it",
			       s->id);
	int r = forward_open(s->engine, s->container, s->user, port, host_port, forward_touch, s, &f, err);
	if (r < 0)
		return r;
	pthread_mutex_lock(&m->lock);
	s->forwards[s->nforwards++] = f;
	pthread_mutex_unlock(&m->lock);
	*ret_host_port = forward_host_port(f);
	snprintf(ret_host, 16, "%s", forward_host(f));
	log_infof("session %s: port %u forwarded to %s:%u", s->id, port, ret_host, *ret_host_port);
	return 0;
}

int session_forward_close(struct session_mgr *m, struct session *s, unsigned port)
{
	struct forward *f = NULL;
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < s->nforwards; i++) {
		if (forward_port(s->forwards[i]) == port) {
			f = s->forwards[i];
			s->forwards[i] = s->forwards[--s->nforwards];
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
	forward_close(f);
	return f ? 0 : -ENOENT;
}

json_t *session_forwards_json(struct session_mgr *m, struct session *s)
{
	json_t *a = json_array();
	pthread_mutex_lock(&m->lock);
	for (unsigned i = 0; i < s->nforwards; i++)
		json_array_append_new(a, forward_json(s->forwards[i]));
	pthread_mutex_unlock(&m->lock);
	return a;
}

void session_forwards_hold(struct session_mgr *m, struct session *s, bool hold)
{
	/*
	 * A hold waits for exec starts under way, so it cannot sit under the
	 * registry's lock: it runs only on s's FIFO (a checkpoint, a commit, a
	 * pause, a download), where nothing removes a forward. A release may
	 * come from beside the FIFO (any call resumes a paused session), so it
	 * walks the list under the lock, which a forward leaves before it is
	 * freed (session_forward_close); a release never blocks.
	 */
	if (hold) {
		pthread_mutex_lock(&m->lock);
		s->freezes++;
		while (s->guard_busy) /* the disk guard's exec start or walk: DISKGUARD_WALK_MS at most */
			pthread_cond_wait(&m->wake, &m->lock);
		pthread_mutex_unlock(&m->lock);
		for (unsigned i = 0; i < s->nforwards; i++)
			forward_hold(s->forwards[i]);
		return;
	}
	pthread_mutex_lock(&m->lock);
	if (s->freezes)
		s->freezes--;
	for (unsigned i = 0; i < s->nforwards; i++)
		forward_release(s->forwards[i]);
	pthread_mutex_unlock(&m->lock);
}

int session_forward_find(struct session_mgr *m, const char *id, unsigned port, char owner[CALL_PRINCIPAL_MAX + 1],
			 char host[16], unsigned *host_port)
{
	int r = -ENOENT;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->len && r < 0; i++) {
		struct session *s = m->list[i];
		if (strcmp(s->id, id) != 0)
			continue;
		for (unsigned k = 0; k < s->nforwards; k++) {
			if (forward_port(s->forwards[k]) != port)
				continue;
			snprintf(owner, CALL_PRINCIPAL_MAX + 1, "%s", s->owner);
			snprintf(host, 16, "%s", forward_host(s->forwards[k]));
			*host_port = forward_host_port(s->forwards[k]);
			r = 0;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return r;
}
