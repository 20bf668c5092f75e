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
 * guard's own walks the folders the sandbox user can write in (found once,
 * with the container's volumes) and counts blocks of what changed since the
 * container was made. A read_only session writes only its workspace volume,
 * which SizeRw leaves out: that is walked at each look. What the user keeps
 * from the walk, and walks that fail twice in a row, count as over the cap.
 *
 * Not seen: files deleted while a process holds them open (each at most
 * SANDBOX_WORKSPACE_MB, RLIMIT_FSIZE; a restart frees them), and writes
 * between two looks. One thread looks at every session in turn, so a
 * session whose looks are slow (many files) slows the others' looks.
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
	int64_t next_ms;		   /* when to look again */
	int64_t walk_next_ms;		   /* when to walk its roots again */
	int64_t walked;			   /* what the last walk found */
	int64_t unlinked;		   /* and the files deleted but still open it found */
	unsigned fails;			   /* walks in a row that failed or took too long */
	char container[ENGINE_ID_LEN + 1]; /* the session's container when this was made (a rollback swaps it) */
	char since[32];			   /* "@<seconds>": the container's creation on the engine's clock, or "" */
	int64_t layer_at_walk; /* SizeRw when it was last walked: much less since means files went, walk again */
	int64_t layer_ms;      /* what the engine's count cost at the last look */
	char *roots;	       /* the folders it can write in, a line each (the agent's roots), or NULL */
	struct agentctl *agent;
	struct call *stop; /* the guard's calls (session_mgr.guard_stop): cancelled when the server exits */
};

void diskguard_look_free(struct diskguard_look *l)
{
	if (!l)
		return;
	agentctl_destroy(l->agent);
	free(l->roots);
	free(l);
}

/* Runs the agent's built-in op with args in the guard's own agent, started first if need be. */
static int agent_op_unfrozen(struct session *s, struct diskguard_look *l, const char *op, const char *const *args,
			     struct exec_result *xr, struct err *err)
{
	int r;
	if (l->agent && !agentctl_alive(l->agent)) {
		agentctl_destroy(l->agent);
		l->agent = NULL;
	}
	if (!l->agent && (r = agentctl_start_as(s->engine, l->stop, l->container, s->user, AGENTCTL_ROLE_WALKER,
						&l->agent, err)) < 0) {
		exec_result_init(xr, 0);
		return r;
	}
	/* the walk keeps its own time (usage's MS): this is a backstop, whose kill may take the engine's restart */
	struct exec_spec spec = { .builtin = op, .argv = args, .timeout_ms = 4 * DISKGUARD_WALK_MS, .cap = 64 << 10 };
	r = agentctl_run(l->agent, l->stop, &spec, xr, err);
	if (r == -EAGAIN)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the disk guard's agent is gone");
	return r;
}

/*
 * agent_op_unfrozen, never while a freeze is under way: an exec started into
 * a frozen container hangs in runc, and a walk stalled by a freeze would
 * time out and end in the engine's restart. A freeze waits for it
 * (session_forwards_hold), as it does for a forward's exec starts.
 */
static int agent_op(struct session *s, struct diskguard_look *l, const char *op, const char *const *args,
		    struct exec_result *xr, struct err *err)
{
	struct session_mgr *m = s->mgr;
	pthread_mutex_lock(&m->lock);
	bool frozen = s->freezes > 0 || s->paused || m->stopping;
	s->guard_busy = !frozen;
	pthread_mutex_unlock(&m->lock);
	int r = frozen ? (exec_result_init(xr, 0), err_set(err, ERRCODE_CANCELLED, -EAGAIN, "its container is frozen"))
		       : agent_op_unfrozen(s, l, op, args, xr, err);
	pthread_mutex_lock(&m->lock);
	s->guard_busy = false;
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	return r;
}

/*
 * An RFC 3339 time as the engine writes Created ("2026-11-29T18:41:31.123Z",
 * or with an offset) in unix seconds and nanoseconds. 0, or -1 when it is not one.
 */
static int rfc3339_time(const char *t, long long *ret_s, long *ret_ns)
{
	struct tm tm = { 0 };
	int n = 0, oh = 0, om = 0;
	long ns = 0, scale = 100000000;
	if (!t || sscanf(t, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
			 &tm.tm_sec, &n) != 6)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	const char *p = t + n;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			ns += (*p - '0') * scale;
	long long secs = (long long)timegm(&tm);
	if (*p != 'Z' || p[1] != '\0') {
		if ((*p != '+' && *p != '-') || sscanf(p + 1, "%2d:%2d", &oh, &om) != 2)
			return -1;
		secs += *p == '+' ? -(oh * 3600 + om * 60) : oh * 3600 + om * 60;
	}
	*ret_s = secs;
	*ret_ns = ns;
	return 0;
}

/*
 * From the container's inspect: when it was made (what the walk counts from:
 * not what a checkpoint's layers or the image hold), and its volumes besides
 * the agent's (an image's VOLUME lines, a read_only workspace) as roots.
 */
static void add_volumes(struct session *s, struct diskguard_look *l, struct buf *roots)
{
	json_t *j = NULL, *mnt;
	struct err err;
	size_t i;
	if (engine_container_inspect(s->engine, l->stop, l->container, &j, &err) < 0)
		return;
	long long made;
	long made_ns;
	if (rfc3339_time(json_string_value(json_object_get(j, "Created")), &made, &made_ns) == 0 && made > 0)
		snprintf(l->since, sizeof(l->since), "@%lld.%09ld", made, made_ns);
	json_array_foreach (json_object_get(j, "Mounts"), i, mnt) {
		const char *type = json_string_value(json_object_get(mnt, "Type"));
		const char *dest = json_string_value(json_object_get(mnt, "Destination"));
		if (type && dest && strcmp(type, "volume") == 0 && strcmp(dest, AGENTCTL_DIR) != 0 &&
		    !strchr(dest, '\n'))
			(void)buf_printf(roots, "%s%s", roots->len ? "\n" : "", dest);
	}
	json_decref(j);
}

/*
 * The folders s can write in, found once: those of its root filesystem the
 * agent finds ("roots"; a read_only root has none), and its volumes.
 */
static int find_roots(struct session *s, struct diskguard_look *l, struct err *err)
{
	struct exec_result xr;
	struct buf roots;
	int r = 0;
	buf_init(&roots, SIZE_MAX);
	if (!s->read_only) {
		const char *args[] = { "/", NULL };
		r = agent_op(s, l, "roots", args, &xr, err);
		/* too many places, or more than it said: walk everything */
		if (r == 0 && (xr.exit_code == EXIT_TOO_LARGE || xr.out.total > xr.out.head.len))
			(void)buf_append_str(&roots, "/");
		else if (r == 0 && xr.exit_code == 0)
			(void)buf_append(&roots, xr.out.head.data, xr.out.head.len);
		else if (r == 0)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "the agent could not list the folders (exit %d)",
				    xr.exit_code);
		exec_result_finish(&xr);
	}
	while (roots.len && roots.data[roots.len - 1] == '\n')
		roots.len--;
	if (r == 0)
		add_volumes(s, l, &roots);
	if (r == 0 && roots.len)
		l->roots = buf_steal(&roots, NULL);
	else if (r == 0)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -ENOENT, "no folder to walk");
	buf_finish(&roots);
	return r;
}

/*
 * Walks s's roots ("usage", agent/fileops.h) in its own agent, so that a walk
 * is a fork in the container, never an exec. It counts blocks (a million
 * one-byte files are 4 GiB to it, 1 MB to SizeRw), at least 4 KiB an entry
 * (empty files take inodes), each inode once, and only what changed since
 * the container was made (ctime, which no user can set back, against the
 * engine's Created): the image's and a checkpoint's files are not the
 * session's writes. *ret_hidden: a folder
 * the user keeps from it, or DISKGUARD_FAILS walks in a row that failed or
 * took over DISKGUARD_WALK_MS (a killed walker, a tree too big); either
 * counts as over the cap.
 */
static int walk_roots(struct session *s, struct diskguard_look *l, int64_t *ret, bool *ret_hidden, struct err *err)
{
	int r;
	*ret_hidden = false;
	if (!l->roots && (r = find_roots(s, l, err)) < 0) {
		/* a freeze is no failure of the walk's: nothing counts then */
		*ret_hidden = r != -EAGAIN && ++l->fails >= DISKGUARD_FAILS;
		return r;
	}
	const char *args[FILEOPS_ROOTS_MAX + 16];
	size_t n = 0;
	_cleanup_free_ char *copy = xstrdup(l->roots);
	char ms[16];
	snprintf(ms, sizeof(ms), "%d", DISKGUARD_WALK_MS);
	args[n++] = l->since[0] ? l->since : AGENTCTL_DIR;
	args[n++] = ms;
	for (char *save = NULL, *p = strtok_r(copy, "\n", &save); p && n < ARRAY_SIZE(args) - 1;
	     p = strtok_r(NULL, "\n", &save))
		args[n++] = p;
	args[n] = NULL;
	struct exec_result xr;
	unsigned long long bytes, entries, hidden, unlinked;
	r = agent_op(s, l, "usage", args, &xr, err);
	char line[128];
	snprintf(line, sizeof(line), "%.*s", (int)xr.out.head.len, xr.out.head.data ? xr.out.head.data : "");
	if (r == 0 && (xr.timed_out || xr.exit_code == EXIT_TOO_LARGE))
		r = err_set(err, ERRCODE_TIMEOUT, -ETIMEDOUT, "the walk took over %d ms", DISKGUARD_WALK_MS);
	else if (r == 0 &&
		 (xr.exit_code != 0 || sscanf(line, "%llu %llu %llu %llu", &bytes, &entries, &hidden, &unlinked) != 4))
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the agent could not walk (exit %d)", xr.exit_code);
	exec_result_finish(&xr);
	/* a freeze is no failure of the walk's: nothing counts then */
	if (r < 0 && r != -EAGAIN) {
		*ret_hidden = ++l->fails >= DISKGUARD_FAILS;
		return r;
	}
	if (r < 0)
		return r;
	l->fails = 0;
	*ret = (int64_t)(bytes > INT64_MAX / 2 ? INT64_MAX / 2 : bytes);
	l->unlinked = (int64_t)(unlinked > INT64_MAX / 2 ? INT64_MAX / 2 : unlinked);
	*ret_hidden = hidden > 0;
	return 0;
}

/*
 * The bytes s wrote: the larger of its layer as the engine counts it
 * (SizeRw, each look) and the blocks under its roots (every
 * DISKGUARD_WALK_EVERY_MS, and again at once when the layer shrank), plus
 * the files deleted but still open that the walk found (neither count has
 * them); a read_only session, whose workspace volume SizeRw leaves out, is
 * walked at each look. When the engine cannot count (a layer of so many
 * files that SizeRw outlasts the engine timeout), the walk alone counts,
 * at each look: skipping it would let exactly such a layer grow unseen.
 */
static int measure(struct session *s, struct diskguard_look *l, int64_t *ret, bool *ret_hidden, struct err *err)
{
	int64_t layer = 0, t0 = now_ms();
	bool layer_counted = !s->read_only;
	int r;
	*ret_hidden = false;
	if (layer_counted && (r = engine_container_size(s->engine, l->stop, l->container, &layer, err)) < 0) {
		/* gone or exiting: nothing to count; anything else: the walk must */
		if (r == -ENOENT || r == -ECANCELED || call_cancelled(l->stop) || !s->agent_installed)
			return r;
		log_debugf("session %s: the engine's count failed (%s): walking instead", s->id, err->msg);
		layer_counted = false;
	}
	l->layer_ms = now_ms() - t0;
	if (layer + DISKGUARD_SLACK < l->layer_at_walk)
		l->walk_next_ms = 0;
	if (s->agent_installed && (!layer_counted || t0 >= l->walk_next_ms)) {
		struct err werr;
		r = walk_roots(s, l, &l->walked, ret_hidden, &werr);
		if (r < 0)
			log_debugf("session %s: walking its folders: %s", s->id, werr.msg);
		l->walk_next_ms = t0 + DISKGUARD_WALK_EVERY_MS;
		l->layer_at_walk = layer;
		/* neither count this time: the walk's failures add up to "hidden" */
		if (r < 0 && !layer_counted && !*ret_hidden) {
			*err = werr;
			return r;
		}
	}
	*ret = (layer > l->walked ? layer : l->walked) + l->unlinked;
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
	int r = engine_container_restart(s->engine, m->guard_stop, l->container, &err);
	if (r < 0) {
		log_warnf("session %s: restarting it for its disk use failed: %s", s->id, err.msg);
	} else {
		l->walk_next_ms = 0; /* walked again: what it holds now is its mark */
		if (measure(s, l, &after, &hidden, &err) < 0)
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

	/* the container now (a rollback swaps it under the lock): a new one is looked at afresh */
	pthread_mutex_lock(&m->lock);
	struct diskguard_look *l = s->disk_look, *old = NULL;
	if (l && strcmp(l->container, s->container) != 0) {
		old = l;
		l = NULL;
	}
	if (!l) {
		l = xcalloc(1, sizeof(*l));
		snprintf(l->container, sizeof(l->container), "%s", s->container);
		s->disk_look = l;
	}
	l->stop = m->guard_stop;
	pthread_mutex_unlock(&m->lock);
	diskguard_look_free(old);
	if (engine_storage_opt_state(s->engine, NULL, 0) > 0 && !s->read_only) {
		l->next_ms = t0 + 60 * 1000; /* the engine's quota holds: ENOSPC inside */
		return;
	}
	bool unwalkable = false;
	int r = measure(s, l, &used, &unwalkable, &err);
	int64_t cost = l->layer_ms; /* the engine's part; a walk costs the session's own CPU */
	/*
	 * A layer of many files costs the engine a walk (about 4 us a file):
	 * look less often (a twentieth of the time on it), but at least every
	 * DISKGUARD_PERIOD_MAX_MS, so that files made to slow the look down do
	 * not open a long window for writing; that bound costs the engine more.
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

/* The server is exiting: the rest of a round is skipped, no walker is started (the exit waits for this thread). */
static bool stopping(struct session_mgr *m)
{
	pthread_mutex_lock(&m->lock);
	bool r = m->stopping;
	pthread_mutex_unlock(&m->lock);
	return r;
}

void *diskguard_main(void *arg)
{
	struct session_mgr *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!m->stopping) {
		struct timespec ts = realtime_after_ms(DISKGUARD_PERIOD_MS);
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
		for (size_t i = 0; i < n && !stopping(m); i++)
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
