/*
 * diskguard.c - the disk cap where the engine has no quota.
 *
 * overlay2 on ext4 (most Linux engines, Docker Desktop's VM too) cannot cap
 * a container's writable layer, and the per-file limit bounds one file, not
 * the sum. So this thread looks at each session's layer (the engine's SizeRw)
 * once a second, and a session found over SANDBOX_WORKSPACE_MB is restarted:
 * every process in it ends (the writer with them), its files stay. Its next
 * call says so first. While it stays over the cap it may not grow more than
 * DISKGUARD_SLACK past what it held after that restart; after
 * DISKGUARD_STRIKES restarts without getting under the cap, its calls are
 * refused until it is closed (its files stay for the operator).
 *
 * How far a session can get past the cap is what it writes in about a second
 * (one period and the restart), DISKGUARD_STRIKES times: the agent refuses
 * fallocate (agent/guard.h), so that is the disk's write speed, not the
 * gigabytes per microsecond an allocation takes. /tmp is memory (a 256 MiB
 * tmpfs, under the memory limit) and not counted here.
 *
 * Restarting instead of freezing: a frozen container hangs any exec started
 * into it (the call that was running, its kill), and nothing a frozen
 * session holds is worth keeping once its next call has to end the writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/util.h"
#include "engine/engine.h"
#include "sandbox/diskguard.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

#define MIB(b) ((double)(b) / (1 << 20))

/* Restarts s for being over the cap (used bytes at the look); tells its next call why. */
static void restart_over(struct session_mgr *m, struct session *s, int64_t used)
{
	unsigned long long cap_mb = (unsigned long long)m->cfg->workspace_mb;
	struct err err;
	int64_t after = used;

	/* a call meanwhile would find the container stopped and take the session for gone */
	pthread_mutex_lock(&m->lock);
	s->disk_restarting = true;
	pthread_mutex_unlock(&m->lock);
	int r = engine_container_restart(s->engine, NULL, s->container, &err);
	if (r < 0)
		log_warnf("session %s: restarting it for its disk use failed: %s", s->id, err.msg);
	else if (engine_container_size(s->engine, NULL, s->container, &after, &err) < 0)
		after = used;
	pthread_mutex_lock(&m->lock);
	s->disk_restarting = false;
	pthread_cond_broadcast(&m->wake);
	unsigned strikes = ++s->disk_strikes;
	s->disk_used = after;
	s->disk_mark = after > used ? after : used;
	s->disk_frozen = strikes >= DISKGUARD_STRIKES;
	free(s->notice);
	s->notice =
		xasprintf("Session %s wrote %.0f MiB to its disk, over its cap of %llu MiB (SANDBOX_WORKSPACE_MB): it was "
			  "restarted, which ended every process in it (background jobs, the Python state); its files are "
			  "kept. Free space now (run_command 'du -sh /workspace/* ~ 2>/dev/null', then rm): until it is under "
			  "the cap, writing more restarts it again, and after %d restarts its calls are refused.",
			  s->id, MIB(used), cap_mb, DISKGUARD_STRIKES);
	pthread_mutex_unlock(&m->lock);
	log_warnf("session %s: %.0f MiB written, over the disk cap of %llu MiB: restarted (%u of %d)", s->id, MIB(used),
		  cap_mb, strikes, DISKGUARD_STRIKES);
}

/* One look at s's writable layer; restarts it when it is over the cap. */
static void look(struct session_mgr *m, struct session *s)
{
	int64_t cap = (int64_t)m->cfg->workspace_mb << 20;
	int64_t used = 0, t0 = now_ms();
	struct err err;

	if (engine_storage_opt_state(s->engine, NULL, 0) > 0) {
		s->disk_next_ms = t0 + 60 * 1000; /* the engine's quota holds: ENOSPC inside */
		return;
	}
	int r = engine_container_size(s->engine, NULL, s->container, &used, &err);
	int64_t cost = now_ms() - t0;
	/*
	 * A layer of many files costs the engine a walk (about 4 us a file):
	 * look less often, at most 5% of the engine's time, but at least every
	 * DISKGUARD_PERIOD_MAX_MS, so that files made to slow the look down do
	 * not open a long window for writing.
	 */
	int64_t wait = 20 * cost < DISKGUARD_PERIOD_MS ? DISKGUARD_PERIOD_MS : 20 * cost;
	s->disk_next_ms = t0 + (wait > DISKGUARD_PERIOD_MAX_MS ? DISKGUARD_PERIOD_MAX_MS : wait);
	if (r < 0) {
		log_debugf("session %s: its disk use: %s", s->id, err.msg);
		return;
	}
	log_debugf("session %s: %.1f MiB written (looked in %lld ms)", s->id, MIB(used), (long long)cost);
	bool over = false;
	pthread_mutex_lock(&m->lock);
	s->disk_used = used;
	if (s->closed || s->disk_frozen) {
		/* nothing to do: gone, or stopped already */
	} else if (used <= cap) {
		s->disk_mark = 0;
		s->disk_strikes = 0;
	} else if (s->disk_mark == 0 || used > s->disk_mark + DISKGUARD_SLACK) {
		over = true;
	} else if (used < s->disk_mark) {
		s->disk_mark = used; /* what it deletes while over the cap it cannot write again */
	}
	pthread_mutex_unlock(&m->lock);
	if (over)
		restart_over(m, s, used);
}

void *diskguard_main(void *arg)
{
	struct session_mgr *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)(DISKGUARD_PERIOD_MS % 1000) * 1000000L;
		ts.tv_sec += DISKGUARD_PERIOD_MS / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&m->wake, &m->lock, &ts);
		if (m->stopping)
			break;
		int64_t now = now_ms();
		size_t n = 0;
		struct session **due = xcalloc(m->len ? m->len : 1, sizeof(*due));
		for (size_t i = 0; i < m->len; i++) {
			struct session *s = m->list[i];
			/* a paused session writes nothing; a frozen one has nothing left running */
			if (s->paused || s->disk_frozen || now < s->disk_next_ms)
				continue;
			s->refs++;
			due[n++] = s;
		}
		pthread_mutex_unlock(&m->lock);
		for (size_t i = 0; i < n; i++)
			look(m, due[i]);
		pthread_mutex_lock(&m->lock);
		for (size_t i = 0; i < n; i++)
			if (--due[i]->refs == 0)
				session_free(due[i]);
		free(due);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int diskguard_admit(struct session_mgr *m, struct session *s, struct err *err)
{
	pthread_mutex_lock(&m->lock);
	bool frozen = s->disk_frozen;
	int64_t used = s->disk_used;
	pthread_mutex_unlock(&m->lock);
	if (!frozen)
		return 0;
	return err_set(err, ERRCODE_TOO_LARGE, -ENOSPC,
		       "session %s is stopped: it went over its disk cap of %llu MiB (SANDBOX_WORKSPACE_MB) %d times "
		       "without freeing space (%.0f MiB now). Its files are kept, but it runs nothing more: "
		       "session_close it and start a new one (the operator can copy files out with docker cp "
		       "%.12s:/workspace, or raise SANDBOX_WORKSPACE_MB)",
		       s->id, (unsigned long long)m->cfg->workspace_mb, DISKGUARD_STRIKES, MIB(used), s->container);
}

const char *diskguard_mode(bool quota_enforced, unsigned long long cap_mb, char *buf, size_t n)
{
	if (!cap_mb)
		snprintf(buf, n, "off (SANDBOX_WORKSPACE_MB=0)");
	else if (quota_enforced)
		snprintf(buf, n, "the engine's quota: writes past %llu MiB fail with ENOSPC", cap_mb);
	else
		snprintf(buf, n,
			 "measured every %d s: a session over %llu MiB is restarted (its processes end, files stay), "
			 "after %d times its calls are refused; fallocate is refused inside",
			 DISKGUARD_PERIOD_MS / 1000, cap_mb, DISKGUARD_STRIKES);
	return buf;
}
