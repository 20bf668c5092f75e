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
 * SizeRw counts bytes, not blocks: a million one-byte files are 1 MB to it
 * and 4 GiB to the disk. So every DISKGUARD_WALK_EVERY_MS an agent of the
 * guard's own walks the folders the sandbox user can write in (found once)
 * and counts blocks, less what they held of the image at the first walk. A
 * read_only session writes only its workspace volume, which SizeRw leaves
 * out: that is walked at each look. A folder of the user's it may not read,
 * or a walk past DISKGUARD_WALK_MS, counts as over the cap.
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

#include "agent/fileops.h"
#include "base/log.h"
#include "base/util.h"
#include "engine/engine.h"
#include "sandbox/agentctl.h"
#include "sandbox/diskguard.h"
#include "sandbox/exec.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

#define MIB(b) ((double)(b) / (1 << 20))

/* What the guard's thread keeps of a session (session.disk_look); nothing else touches it. */
struct diskguard_look {
	int64_t next_ms;      /* when to look again */
	int64_t walk_next_ms; /* when to walk its roots again */
	int64_t walked;	      /* what the last walk found, less base */
	int64_t base;	      /* what the roots held that the session did not write (the image's part) */
	bool based;
	unsigned timeouts;     /* walks in a row that took too long */
	int64_t layer_at_walk; /* SizeRw when it was last walked: much less since means files went, walk again */
	int64_t layer_ms;      /* what the engine's count cost at the last look */
	char *roots;	       /* the folders it can write in, a line each (the agent's roots), or NULL */
	struct agentctl *agent;
};

void diskguard_look_free(struct diskguard_look *l)
{
	if (!l)
		return;
	agentctl_destroy(l->agent);
	free(l->roots);
	free(l);
}

/* Runs the agent's built-in op with args through the guard's own agent; its stdout into out. */
static int agent_op(struct session *s, struct diskguard_look *l, const char *op, const char *const *args,
		    struct exec_result *xr, struct err *err)
{
	if (l->agent && !agentctl_alive(l->agent)) {
		agentctl_destroy(l->agent);
		l->agent = NULL;
	}
	int r;
	if (!l->agent) {
		/* never an exec start while a freeze is under way: runc would hang it */
		struct session_mgr *m = s->mgr;
		pthread_mutex_lock(&m->lock);
		bool frozen = s->freezes > 0 || s->paused;
		s->guard_starting = !frozen;
		pthread_mutex_unlock(&m->lock);
		r = frozen ? err_set(err, ERRCODE_CANCELLED, -EAGAIN, "its container is frozen")
			   : agentctl_start_as(s->engine, NULL, s->container, s->user, AGENTCTL_ROLE_WALKER, &l->agent,
					       err);
		pthread_mutex_lock(&m->lock);
		s->guard_starting = false;
		pthread_cond_broadcast(&m->wake);
		pthread_mutex_unlock(&m->lock);
		if (r < 0) {
			exec_result_init(xr, 0);
			return r;
		}
	}
	struct exec_spec spec = { .builtin = op, .argv = args, .timeout_ms = DISKGUARD_WALK_MS, .cap = 8192 };
	r = agentctl_run(l->agent, NULL, &spec, xr, err);
	if (r == -EAGAIN)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the disk guard's agent is gone");
	return r;
}

/* The folders s can write in: found once (a walk of its root filesystem), then walked each time. */
static int find_roots(struct session_mgr *m, struct session *s, struct diskguard_look *l, struct err *err)
{
	if (s->read_only) {
		/* the root is read-only: the workspace volume is all it writes (it is not on the root's filesystem) */
		l->roots = xstrdup(m->cfg->workspace);
		return 0;
	}
	struct exec_result xr;
	const char *args[] = { "/", NULL };
	int r = agent_op(s, l, "roots", args, &xr, err);
	if (r == 0 && xr.exit_code == EXIT_TOO_LARGE)
		l->roots = xstrdup("/"); /* too many places: walk everything */
	else if (r == 0 && xr.exit_code == 0 && xr.out.head.len)
		l->roots = xstrndup(xr.out.head.data, xr.out.head.len);
	else if (r == 0)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the agent found no folder to walk (exit %d)",
			    xr.exit_code);
	exec_result_finish(&xr);
	return r;
}

/*
 * Walks s's roots ("usage", agent/fileops.h) in its own agent, so that a walk
 * is a fork in the container, never an exec (which a freeze would hang). It
 * counts blocks: a million one-byte files are 4 GiB here, 1 MB to SizeRw.
 * *ret_hidden: a folder of the sandbox user's that it may not read, or a
 * tree too big to walk in DISKGUARD_WALK_MS; either counts as over the cap.
 */
static int walk_roots(struct session_mgr *m, struct session *s, struct diskguard_look *l, int64_t *ret,
		      bool *ret_hidden, struct err *err)
{
	int r;
	if (!l->roots && (r = find_roots(m, s, l, err)) < 0)
		return r;
	const char *args[FILEOPS_ROOTS_MAX + 2];
	size_t n = 0;
	_cleanup_free_ char *copy = xstrdup(l->roots);
	for (char *save = NULL, *p = strtok_r(copy, "\n", &save); p && n <= FILEOPS_ROOTS_MAX;
	     p = strtok_r(NULL, "\n", &save))
		args[n++] = p;
	args[n] = NULL;
	struct exec_result xr;
	unsigned long long bytes, entries, hidden;
	r = agent_op(s, l, "usage", args, &xr, err);
	*ret_hidden = false;
	if (r < 0) {
		/* err says why */
	} else if (xr.timed_out) {
		/* twice in a row: once may be a loaded machine */
		*ret = 0;
		*ret_hidden = ++l->timeouts >= 2;
		if (!*ret_hidden)
			r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the walk took over %d ms", DISKGUARD_WALK_MS);
	} else {
		l->timeouts = 0;
		char line[128];
		snprintf(line, sizeof(line), "%.*s", (int)xr.out.head.len, xr.out.head.data ? xr.out.head.data : "");
		if (xr.exit_code != 0 || sscanf(line, "%llu %llu %llu", &bytes, &entries, &hidden) != 3)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the agent could not walk (exit %d)",
				    xr.exit_code);
		else
			*ret = (int64_t)(bytes > INT64_MAX ? INT64_MAX : bytes), *ret_hidden = hidden > 0;
	}
	exec_result_finish(&xr);
	return r;
}

/*
 * The bytes s wrote: the larger of its layer as the engine counts it
 * (SizeRw, each look) and the blocks under its roots less the image's part
 * (every DISKGUARD_WALK_EVERY_MS); a read_only session's workspace volume,
 * which SizeRw leaves out, is walked at each look.
 */
static int measure(struct session_mgr *m, struct session *s, struct diskguard_look *l, int64_t *ret, bool *ret_hidden,
		   struct err *err)
{
	int64_t layer = 0, t0 = now_ms();
	int r;
	*ret_hidden = false;
	if (!s->read_only && (r = engine_container_size(s->engine, NULL, s->container, &layer, err)) < 0)
		return r;
	l->layer_ms = now_ms() - t0;
	pthread_mutex_lock(&m->lock);
	bool frozen = s->freezes > 0; /* a walk now would stall and time out: next time */
	pthread_mutex_unlock(&m->lock);
	if (layer + DISKGUARD_SLACK < l->layer_at_walk)
		l->walk_next_ms = 0;
	if (s->agent_installed && !frozen && (s->read_only || t0 >= l->walk_next_ms)) {
		int64_t blocks = 0;
		struct err werr;
		if (walk_roots(m, s, l, &blocks, ret_hidden, &werr) < 0) {
			log_debugf("session %s: walking its folders: %s", s->id, werr.msg);
			if (s->read_only) {
				*err = werr;
				return -EIO;
			}
		} else if (!*ret_hidden) {
			if (!l->based) /* what the roots held at the first walk and the layer did not is the image's */
				l->base = blocks > layer ? blocks - layer : 0, l->based = true;
			l->walked = blocks > l->base ? blocks - l->base : 0;
		}
		l->walk_next_ms = t0 + DISKGUARD_WALK_EVERY_MS;
		l->layer_at_walk = layer;
	}
	*ret = layer > l->walked ? layer : l->walked;
	return 0;
}

/* Restarts s for being over the cap (used bytes at the look); tells its next call why. */
static void restart_over(struct session_mgr *m, struct session *s, int64_t used, bool unwalkable)
{
	unsigned long long cap_mb = (unsigned long long)m->cfg->workspace_mb;
	struct err err;
	int64_t after = used;
	bool hidden;
	struct diskguard_look *l = s->disk_look;

	/* a call meanwhile would find the container stopped and take the session for gone */
	pthread_mutex_lock(&m->lock);
	s->disk_restarting = true;
	pthread_mutex_unlock(&m->lock);
	int r = engine_container_restart(s->engine, NULL, s->container, &err);
	if (r < 0) {
		log_warnf("session %s: restarting it for its disk use failed: %s", s->id, err.msg);
	} else {
		l->walk_next_ms = 0; /* walked again: what it holds now is its mark */
		if (measure(m, s, l, &after, &hidden, &err) < 0)
			after = used;
	}
	pthread_mutex_lock(&m->lock);
	s->disk_restarting = false;
	pthread_cond_broadcast(&m->wake);
	unsigned strikes = ++s->disk_strikes;
	s->disk_used = after;
	s->disk_mark = after > used ? after : used;
	s->disk_frozen = strikes >= DISKGUARD_STRIKES;
	free(s->notice);
	s->notice =
		xasprintf("Session %s wrote %.0f MiB to its disk%s, over its cap of %llu MiB (SANDBOX_WORKSPACE_MB): it was "
			  "restarted, which ended every process in it (background jobs, the Python state); its files are kept. "
			  "Free space now (run_command 'du -sh /workspace/* ~ 2>/dev/null', then rm): until it is under the cap, "
			  "writing more restarts it again, and after %d restarts its calls are refused.",
			  s->id, MIB(used),
			  unwalkable
				  ? " and holds folders the server may not read or more files than it can count, which counts as"
				  : "",
			  cap_mb, DISKGUARD_STRIKES);
	pthread_mutex_unlock(&m->lock);
	log_warnf("session %s: %.0f MiB written%s, over the disk cap of %llu MiB: restarted (%u of %d)", s->id,
		  MIB(used), unwalkable ? " (or hidden)" : "", cap_mb, strikes, DISKGUARD_STRIKES);
}

/* One look at s's writable layer; restarts it when it is over the cap. */
static void look(struct session_mgr *m, struct session *s)
{
	int64_t cap = (int64_t)m->cfg->workspace_mb << 20;
	int64_t used = 0, t0 = now_ms();
	struct err err;

	if (!s->disk_look) {
		struct diskguard_look *l = xcalloc(1, sizeof(*l));
		pthread_mutex_lock(&m->lock);
		s->disk_look = l;
		pthread_mutex_unlock(&m->lock);
	}
	struct diskguard_look *l = s->disk_look;
	if (engine_storage_opt_state(s->engine, NULL, 0) > 0 && !s->read_only) {
		l->next_ms = t0 + 60 * 1000; /* the engine's quota holds: ENOSPC inside */
		return;
	}
	bool unwalkable = false;
	int r = measure(m, s, l, &used, &unwalkable, &err);
	int64_t cost = l->layer_ms; /* the engine's part; a walk costs the session's own CPU */
	/*
	 * A layer of many files costs the engine a walk (about 4 us a file):
	 * look less often, at most 5% of the engine's time, but at least every
	 * DISKGUARD_PERIOD_MAX_MS, so that files made to slow the look down do
	 * not open a long window for writing.
	 */
	int64_t wait = 20 * cost < DISKGUARD_PERIOD_MS ? DISKGUARD_PERIOD_MS : 20 * cost;
	l->next_ms = t0 + (wait > DISKGUARD_PERIOD_MAX_MS ? DISKGUARD_PERIOD_MAX_MS : wait);
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
	} else if (unwalkable) {
		over = true; /* what it hides or buries cannot be counted: as if over */
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
		restart_over(m, s, used, unwalkable);
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
			if (s->paused || s->disk_frozen || (s->disk_look && now < s->disk_look->next_ms))
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
	else if (agentctl_built())
		snprintf(buf, n,
			 "measured every %d s: a session over %llu MiB is restarted (its processes end, files stay), "
			 "after %d times its calls are refused; small files count by their blocks (walked every %d s); "
			 "fallocate is refused inside",
			 DISKGUARD_PERIOD_MS / 1000, cap_mb, DISKGUARD_STRIKES, DISKGUARD_WALK_EVERY_MS / 1000);
	else
		snprintf(buf, n,
			 "measured every %d s by the engine's byte count only: a session over %llu MiB is restarted; "
			 "without the agent (a build without musl-gcc) small files count by their bytes and fallocate "
			 "is allowed",
			 DISKGUARD_PERIOD_MS / 1000, cap_mb);
	return buf;
}
