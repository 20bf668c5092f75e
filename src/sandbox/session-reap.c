/*
 * session-reap.c - the idle TTL: a thread that closes sessions no call has
 * used for SANDBOX_IDLE_TTL_S (paused ones past SANDBOX_PAUSED_TTL_S),
 * checkpointing them first with SANDBOX_IDLE_SNAPSHOT; persistent and busy
 * sessions are left.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "sandbox/checkpoint.h"
#include "sandbox/savepoint.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

/*
 * Whether the idle TTL ends s now: a paused session only past
 * SANDBOX_PAUSED_TTL_S (never when it is 0), counted from its pause.
 */
static bool reapable(const struct config *cfg, const struct session *s, int64_t now)
{
	if (s->paused)
		return cfg->paused_ttl_s && now - s->paused_at >= (int64_t)cfg->paused_ttl_s;
	return now - s->last_used >= (int64_t)cfg->idle_ttl_s;
}

/* Closes an idle session (unlisted already), checkpointed first with SANDBOX_IDLE_SNAPSHOT. */
static void close_idle(struct session_mgr *m, struct session *s)
{
	struct checkpoint ck;
	struct err err;
	/* never the default session: it is nobody's by name, and only a call naming a session brings one back */
	bool snapshot = m->cfg->idle_snapshot && !s->read_only && strcmp(s->name, "default") != 0;
	if (snapshot && s->paused && savepoint_resume(m, NULL, s, &err) < 0)
		log_warnf("session %s: resuming it for its snapshot: %s", s->id, err.msg);
	if (!snapshot) {
		log_infof("session %s idle: closing it", s->id);
	} else if (savepoint_checkpoint(m, NULL, s, NULL, CHECKPOINT_IDLE, &ck, &err) == 0) {
		log_infof("session %s idle: closing it; checkpoint %s brings it back when it is named", s->id, ck.id);
		checkpoint_finish(&ck);
	} else {
		log_warnf("session %s idle: closing it without a snapshot: %s", s->id, err.msg);
	}
	session_remove_container(m, s);
	savepoint_closed(m, s, false);
}

void *session_reaper_main(void *arg)
{
	struct session_mgr *m = arg;
	int64_t period = (int64_t)m->cfg->idle_ttl_s / 4;
	if (period < 1)
		period = 1;
	if (period > 30)
		period = 30;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += period;
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
		if (m->stopping)
			break;
		int64_t now = session_now();
		struct session *idle[64];
		size_t n = 0;
		for (size_t i = 0; i < m->len && n < ARRAY_SIZE(idle);) {
			struct session *s = m->list[i];
			if (!s->persistent && s->busy == 0 && reapable(m->cfg, s, now)) {
				session_unlink_locked(m, s);
				idle[n++] = s;
				continue; /* unlink moved another session into slot i */
			}
			i++;
		}
		pthread_mutex_unlock(&m->lock);
		for (size_t i = 0; i < n; i++)
			close_idle(m, idle[i]);
		pthread_mutex_lock(&m->lock);
		for (size_t i = 0; i < n; i++)
			if (--idle[i]->refs == 0)
				session_free(idle[i]);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}
