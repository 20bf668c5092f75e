/*
 * session.c - the session registry: sessions listed, looked up, reserved
 * under the limits, made (from the warm pool or fresh) and closed. Beside
 * it: their containers are made by container.c and removed by
 * session-remove.c (the exit's too), idle ones are closed by
 * session-reap.c, the pool's side is session-pool.c, forwards
 * session-forward.c, save points savepoint.c, and what other servers left
 * is judged by the start-up scan, scan.c.
 *
 * Locking: m->lock guards the session array and each session's refs, busy,
 * closed and last_used.  Engine calls are never made with the lock held.
 * A session leaves the array when it is closed (by a tool, the reaper or
 * shutdown) and is freed when its last reference is put.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "buildconf.h"
#include "sandbox/agentctl.h"
#include "sandbox/diskguard.h"
#include "sandbox/egress.h"
#include "sandbox/forward.h"
#include "sandbox/pool.h"
#include "sandbox/pyrepl.h"
#include "sandbox/savepoint.h"
#include "sandbox/scan.h"
#include "sandbox/servercontainer.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

static int lock_dir_path(char *out, size_t outsz);
static int create_reserved(struct session_mgr *m, struct call *call, const struct session_opts *o, const char *image,
			   const char *network, struct session **ret, struct err *err);

int64_t session_now(void)
{
	return (int64_t)time(NULL);
}

void session_random_hex(char *out, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[32];
	size_t need = (n + 1) / 2;

	if (getrandom(raw, need, 0) != (ssize_t)need) {
		/* getrandom cannot fail for small sizes after boot; fall back to the clock */
		int64_t t = now_us() ^ (int64_t)getpid();
		for (size_t i = 0; i < need; i++)
			raw[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)i;
	}
	for (size_t i = 0; i < n; i++)
		out[i] = hex[(raw[i / 2] >> ((i % 2) ? 0 : 4)) & 15];
	out[n] = '\0';
}

static int lock_dir_path(char *out, size_t outsz)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(out, outsz, "%s/sandbox-mcp", xdg);
	else
		n = snprintf(out, outsz, "/tmp/sandbox-mcp-%u", (unsigned)getuid());
	return n < 0 || (size_t)n >= outsz ? -ENAMETOOLONG : 0;
}

int session_mgr_create(const struct config *cfg, struct engines *es, struct session_mgr **ret, struct err *err)
{
	struct session_mgr *m = xcalloc(1, sizeof(*m));
	struct stat st;

	m->cfg = cfg;
	m->engines = es;
	m->lock_fd = -1;
	m->users = json_object();
	m->held = json_object();
	session_random_hex(m->instance, SESSION_INSTANCE_LEN);
	if (gethostname(m->host, sizeof(m->host) - 1) < 0)
		snprintf(m->host, sizeof(m->host), "unknown");
	pthread_mutex_init(&m->lock, NULL);
	pthread_mutex_init(&m->savepoint_lock, NULL);
	pthread_mutex_init(&m->restore_lock, NULL);
	pthread_cond_init(&m->wake, NULL);
	m->pinned = json_array();
	m->pool = pool_create(cfg, m, &session_pool_ops, (size_t)cfg->pool_size);
	int r = egress_conf_init(cfg, &m->egress, err);
	if (r < 0) {
		session_mgr_destroy(m);
		return r;
	}

	if (lock_dir_path(m->lock_dir, sizeof(m->lock_dir)) < 0 || (mkdir(m->lock_dir, 0700) < 0 && errno != EEXIST) ||
	    lstat(m->lock_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		int e2 = errno;
		session_mgr_destroy(m);
		return err_set(err, ERRCODE_INTERNAL, -(e2 ? e2 : EPERM),
			       "cannot use the lock directory %s: it must be a directory owned by you", m->lock_dir);
	}
	snprintf(m->lock_path, sizeof(m->lock_path), "%s/%s.lock", m->lock_dir, m->instance);
	m->lock_fd = open(m->lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (m->lock_fd < 0 || flock(m->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		int e2 = errno;
		session_mgr_destroy(m);
		return err_set(err, ERRCODE_INTERNAL, -e2, "cannot lock %s: %s", m->lock_path, strerror(e2));
	}
	*ret = m;
	return 0;
}

const char *session_server_label(const struct session_mgr *m, const struct engine *e)
{
	for (size_t i = 0; i < engines_count(m->engines) && i < 32; i++)
		if (engines_at(m->engines, i) == e)
			return atomic_load(&m->self_on) & (1u << i) ? m->self : "";
	return "";
}

bool session_mgr_exit_done(struct session_mgr *m)
{
	return !atomic_load(&m->exit_left);
}

const char *session_mgr_container(struct session_mgr *m)
{
	session_wait_known(m);
	return m->self;
}

const char *session_mgr_instance(const struct session_mgr *m)
{
	return m->instance;
}

static void *starter_main(void *arg);

void session_mgr_start(struct session_mgr *m)
{
	/* off the read loop: the first reply must not wait for the engine */
	if (thread_create_nosig(&m->starter, NULL, starter_main, m) == 0) {
		m->starter_started = true;
		return;
	}
	starter_main(m);
}

void session_wait_known(struct session_mgr *m)
{
	pthread_mutex_lock(&m->lock);
	while (!m->known)
		pthread_cond_wait(&m->wake, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

/* Blocks until the start-up scan is done. */
void session_wait_ready(struct session_mgr *m)
{
	pthread_mutex_lock(&m->lock);
	while (!m->ready && !m->stopping)
		pthread_cond_wait(&m->wake, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

/*
 * The start-up scan: containers of instances proven dead are this server's
 * now: the persistent ones adopted, the rest removed. Those of live
 * instances, of other hosts, or whose owner cannot be proven dead are left
 * alone.
 */
static void *starter_main(void *arg)
{
	struct session_mgr *m = arg;

	/* who this server is: each reads /proc (mountinfo alone is ~0.1 ms), so not on the way to the first reply */
	servercontainer_self(m->self);
	if (scan_proc_id(m->proc, sizeof(m->proc)) < 0)
		m->proc[0] = '\0';
	pthread_mutex_lock(&m->lock);
	m->known = true;
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	scan_run(m);
	pthread_mutex_lock(&m->lock);
	m->ready = true;
	pthread_cond_broadcast(&m->wake);
	if (!m->stopping && m->cfg->idle_ttl_s > 0 &&
	    thread_create_nosig(&m->reaper, NULL, session_reaper_main, m) == 0)
		m->reaper_started = true;
	if (!m->stopping && m->cfg->workspace_mb > 0) {
		m->guard_stop = call_create(NULL, "", NULL, NULL, NULL);
		m->guard_started = thread_create_nosig(&m->guard, NULL, diskguard_main, m) == 0;
	}
	pthread_mutex_unlock(&m->lock);
	pool_start(m->pool);
	/* after the sweeps, the checkpoints of sessions they removed; only a new checkpoint waits for it (caps) */
	savepoint_sweep_all(m);
	pthread_mutex_lock(&m->lock);
	m->swept = true;
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	json_decref(s->warnings);
	json_decref(s->history);
	json_decref(s->pip_jobs);
	pyrepl_destroy(s->repl);
	agentctl_destroy(s->agent);
	diskguard_look_free(s->disk_look);
	egress_stop(s->egress);
	for (unsigned i = 0; i < s->nforwards; i++)
		forward_close(s->forwards[i]);
	free(s->notice);
	free(s);
}

/* Notes that engine e may hold a container of this instance that no session holds (see orphans). */
void session_mark_orphans(struct session_mgr *m, const struct engine *e)
{
	for (size_t i = 0; i < engines_count(m->engines) && i < ENGINES_MAX; i++)
		if (engines_at(m->engines, i) == e)
			atomic_fetch_or(&m->orphans, 1u << i);
}

void session_mgr_cleanup(struct session_mgr *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	bool first = !m->stopping;
	m->stopping = true;
	pthread_cond_broadcast(&m->wake);
	pthread_mutex_unlock(&m->lock);
	if (!first)
		return;
	if (m->starter_started)
		pthread_join(m->starter, NULL);
	if (m->reaper_started)
		pthread_join(m->reaper, NULL);
	if (m->guard_stop)
		call_cancel(m->guard_stop);
	if (m->guard_started)
		pthread_join(m->guard, NULL);
	call_destroy(m->guard_stop);
	m->guard_stop = NULL;
	pool_quiesce(m->pool); /* a build under way ends while the sessions go */

	/* stopping is set: session_create adds nothing any more */
	pthread_mutex_lock(&m->lock);
	size_t n = m->len;
	struct session **all = xcalloc(n ? n : 1, sizeof(*all));
	if (n) /* m->list is NULL until the first session */
		memcpy(all, m->list, n * sizeof(*all));
	pthread_mutex_unlock(&m->lock);
	size_t gone = 0;
	for (size_t i = 0; i < n; i++) {
		session_forwards_close(m, all[i]); /* a persistent one's too: no forward thread outlives the engines */
		if (!all[i]->persistent)
			all[gone++] = all[i];
	}
	session_remove_all(m, all, gone);
	free(all);
	pool_stop(m->pool);
	/*
	 * The second look, on an engine where a create or a removal failed (a
	 * create whose answer was lost, a removal the engine missed while it
	 * restarted), or that holds a container no session does (a claim): only
	 * such engines are asked, so an exit costs no extra round trip when
	 * nothing failed; an engine still away keeps them for the next server's
	 * start-up scan. A slow engine's removals are the janitor's now, and so
	 * is this look.
	 */
	unsigned orphans = atomic_load(&m->exit_left) ? 0 : atomic_load(&m->orphans);
	for (size_t i = 0; i < engines_count(m->engines) && i < ENGINES_MAX; i++)
		if (orphans & (1u << i))
			scan_sweep_instance(m->engines, i, m->instance);
	if (atomic_load(&m->savepoints_used))
		savepoint_sweep_all(m);
	if (m->lock_fd >= 0)
		unlink(m->lock_path);
}

void session_mgr_destroy(struct session_mgr *m)
{
	if (!m)
		return;
	session_mgr_cleanup(m);
	for (size_t i = 0; i < m->len; i++) {
		struct session *s = m->list[i];
		/* a call still holding s keeps it alive */
		if (--s->refs == 0)
			session_free(s);
	}
	free(m->list);
	pool_destroy(m->pool);
	egress_conf_finish(&m->egress);
	json_decref(m->users);
	const char *inst;
	json_t *fd;
	json_object_foreach (m->held, inst, fd)
		close((int)json_integer_value(fd));
	json_decref(m->held);
	if (m->lock_fd >= 0)
		close(m->lock_fd);
	json_decref(m->pinned);
	pthread_cond_destroy(&m->wake);
	pthread_mutex_destroy(&m->savepoint_lock);
	pthread_mutex_destroy(&m->restore_lock);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* owner NULL: the server itself, which sees every principal's sessions. */
bool session_owns(const struct session *s, const char *owner)
{
	return !owner || strcmp(s->owner, owner) == 0;
}

/* owner's session with id or name ref; another principal's does not exist for it. */
struct session *session_find_locked(struct session_mgr *m, const char *owner, const char *ref)
{
	for (size_t i = 0; i < m->len; i++)
		if (session_owns(m->list[i], owner) && strcmp(m->list[i]->id, ref) == 0)
			return m->list[i];
	for (size_t i = 0; i < m->len; i++)
		if (session_owns(m->list[i], owner) && m->list[i]->name[0] && strcmp(m->list[i]->name, ref) == 0)
			return m->list[i];
	return NULL;
}

void session_unlink_locked(struct session_mgr *m, struct session *s)
{
	for (size_t i = 0; i < m->len; i++) {
		if (m->list[i] == s) {
			m->list[i] = m->list[--m->len];
			s->closed = true;
			return;
		}
	}
}

bool session_name_valid(const char *name)
{
	size_t n = strlen(name);
	if (n == 0 || n > SESSION_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

/* A pool member becomes call's session as a fresh one would: its owner, name and times. */
static int hand_out(struct session_mgr *m, struct call *call, const struct session_opts *o, struct session *s,
		    struct session **ret, struct err *err)
{
	snprintf(s->name, sizeof(s->name), "%s", o->name ? o->name : "");
	snprintf(s->owner, sizeof(s->owner), "%s", call_principal(call));
	s->created = s->last_used = session_now();
	int r = session_list_new(m, s, ret, err);
	if (r == 0)
		log_infof("session %s created from the warm pool (container %.12s, image %s)", s->id, s->container,
			  s->image);
	return r;
}

/* An egress request is valid here: on network none, within the operator's ceiling. */
static int egress_check(struct session_mgr *m, const struct session_opts *o, const char *network, struct err *err)
{
	struct policy p;
	if (strcmp(network, "none") != 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "egress and network '%.60s' do not go together: a session with egress has no network "
			       "of its own and reaches only what its policy allows; omit one of them",
			       network);
	int r = egress_policy_build(&m->egress, o->egress, &p, err);
	policy_finish(&p);
	return r;
}

int session_create(struct session_mgr *m, struct call *call, const struct session_opts *o, struct session **ret,
		   struct err *err)
{
	const struct config *cfg = m->cfg;
	const char *image = o->image && *o->image ? o->image : cfg->image;
	const char *network = o->network && *o->network ? o->network : "none";
	int r;

	/* only a configured name: the model never names an endpoint */
	if ((r = engines_find(m->engines, o->engine, NULL, NULL, err)) < 0)
		return r;
	if (o->name && *o->name && !session_name_valid(o->name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "name '%.80s' must be 1-63 letters, digits, '-', '_' or '.'", o->name);
	if (o->name && !o->default_session &&
	    (strcmp(o->name, "default") == 0 || (strlen(o->name) == SESSION_ID_LEN && is_hex(o->name, SESSION_ID_LEN))))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "name '%s' is reserved (it names the default session, or looks like a session id): "
			       "pick another name, or omit session_id in the other tools to use the default session",
			       o->name);
	if (config_network_forbidden(network))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "network '%.80s' would share the host's or another container's namespace, which no "
			       "setting allows: omit network (none), or name a Docker network the operator lists "
			       "in SANDBOX_NETWORKS",
			       network);
	if (!config_network_allowed(cfg, network))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "network '%.80s' is not allowed: sessions have no network unless the operator lists "
			       "the Docker network in SANDBOX_NETWORKS (now: %s); omit network to run without one",
			       network, cfg->networks[0] ? cfg->networks : "empty");
	if (o->egress && (r = egress_check(m, o, network, err)) < 0)
		return r;
	session_wait_ready(m);
	/* the name and the place under the limit are held from this check until the session is listed */
	struct pending pend = { .name = o->name && *o->name ? o->name : NULL, .owner = call_principal(call) };
	r = session_reserve(m, o, &pend, err);
	if (r < 0)
		return r;
	struct session *pooled = pool_take(m->pool, o, image, network);
	if (pooled) {
		r = hand_out(m, call, o, pooled, ret, err);
	} else {
		/* a fresh container and the pool's together stay under SANDBOX_MAX_SESSIONS_TOTAL */
		size_t room = session_pool_ops.room(m);
		if (room != SIZE_MAX && pool_ready(m->pool) > room)
			pool_trim(m->pool, room);
		r = create_reserved(m, call, o, image, network, ret, err);
	}
	session_unreserve(m, &pend);
	return r;
}

void session_unreserve(struct session_mgr *m, struct pending *pend)
{
	pthread_mutex_lock(&m->lock);
	for (struct pending **pp = &m->pending; *pp; pp = &(*pp)->next) {
		if (*pp == pend) {
			*pp = pend->next;
			m->npending--;
			break;
		}
	}
	pthread_mutex_unlock(&m->lock);
}

/*
 * Holds a place for a session being created: concurrent creates must not
 * both take the last place under SANDBOX_MAX_SESSIONS or the same name.
 */
int session_reserve(struct session_mgr *m, const struct session_opts *o, struct pending *pend, struct err *err)
{
	const struct config *cfg = m->cfg;

	pthread_mutex_lock(&m->lock);
	bool taken = pend->name && session_find_locked(m, pend->owner, pend->name);
	size_t live = 0, total = m->npending;
	for (struct pending *p = m->pending; p; p = p->next) {
		bool mine = strcmp(p->owner, pend->owner) == 0;
		taken = taken || (mine && pend->name && p->name && strcmp(p->name, pend->name) == 0);
		live += mine;
	}
	for (size_t i = 0; i < m->len; i++) {
		live += !m->list[i]->adopted && session_owns(m->list[i], pend->owner);
		total += !m->list[i]->adopted;
	}
	uint64_t extra = o->transient ? SESSION_TRANSIENT_EXTRA : 0;
	bool full = live >= cfg->max_sessions + extra;
	bool server_full = !full && cfg->max_sessions_total && total >= cfg->max_sessions_total + extra;
	full = full || server_full;
	if (!taken && !full) {
		pend->next = m->pending;
		m->pending = pend;
		m->npending++;
	}
	pthread_mutex_unlock(&m->lock);
	if (taken)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			       "a session named '%s' already exists: use it, or close it with session_close first",
			       pend->name);
	if (server_full)
		return err_set(err, ERRCODE_SESSION_LIMIT, -EUSERS,
			       "the server has %zu sessions open or starting, its limit for all users "
			       "(SANDBOX_MAX_SESSIONS_TOTAL=%llu): close one of yours with session_close, or try later",
			       total, (unsigned long long)cfg->max_sessions_total);
	if (full)
		return err_set(err, ERRCODE_SESSION_LIMIT, -EUSERS,
			       "%zu sessions made by this server are open or starting, the limit "
			       "(SANDBOX_MAX_SESSIONS=%llu): close one with session_close (session_list shows them) "
			       "and try again",
			       live, (unsigned long long)cfg->max_sessions);
	return 0;
}

static int create_reserved(struct session_mgr *m, struct call *call, const struct session_opts *o, const char *image,
			   const char *network, struct session **ret, struct err *err)
{
	struct session *s;
	int r = session_container_new(m, call, o, image, network, false, &s, err);
	if (r < 0)
		return r;
	r = session_list_new(m, s, ret, err);
	if (r == 0)
		log_infof("session %s created (container %.12s, image %s, engine %s)", s->id, s->container, s->image,
			  s->engine_name);
	return r;
}

/* Lists a new session s (created by session_container_new); on failure s is removed. *ret holds the caller's reference. */
int session_list_new(struct session_mgr *m, struct session *s, struct session **ret, struct err *err)
{
	pthread_mutex_lock(&m->lock);
	if (m->stopping) {
		/* the server is exiting and has already swept its sessions */
		pthread_mutex_unlock(&m->lock);
		session_remove_container(m, s);
		session_free(s);
		return err_set(err, ERRCODE_CANCELLED, -ECANCELED, "the server is shutting down");
	}
	if (m->len == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->list = xreallocarray(m->list, m->cap, sizeof(*m->list));
	}
	s->refs = 2; /* the registry's and the caller's */
	s->busy = 1;
	s->mgr = m;
	m->list[m->len++] = s;
	pthread_mutex_unlock(&m->lock);
	*ret = s;
	return 0;
}

int session_get(struct session_mgr *m, struct call *call, const char *ref, struct session **ret, struct err *err)
{
	return session_get_reporting(m, call, ref, NULL, NULL, ret, err);
}

int session_get_reporting(struct session_mgr *m, struct call *call, const char *ref, session_pull_report_fn report,
			  void *arg, struct session **ret, struct err *err)
{
	if (ref && strcmp(ref, "default") == 0)
		ref = NULL; /* the default session by name: created on first use like no name */
	session_wait_ready(m);
	pthread_mutex_lock(&m->lock);
	struct session *s = session_find_locked(m, call ? call_principal(call) : NULL, ref ? ref : "default");
	if (s) {
		s->refs++;
		s->busy++;
		s->last_used = session_now();
	}
	while (s && s->disk_restarting && !m->stopping)
		pthread_cond_wait(&m->wake, &m->lock);
	pthread_mutex_unlock(&m->lock);
	if (s && diskguard_admit(m, s, err) < 0) {
		session_put(m, s);
		return -ENOSPC;
	}
	if (s) {
		struct err e2;
		/* a paused session's next call resumes it: a call on a frozen container would hang */
		if (s->paused && savepoint_resume(m, NULL, s, &e2) < 0)
			log_warnf("session %s: resuming: %s", s->id, e2.msg);
		*ret = s;
		return 0;
	}
	if (ref)
		return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT,
			       "no session '%.80s': it was closed or never existed. session_list shows the open "
			       "sessions; omit session_id to use the default one",
			       ref);
	struct session_opts o = { .name = "default", .default_session = true, .pull_report = report, .pull_arg = arg };
	return session_create(m, call, &o, ret, err);
}

void session_put(struct session_mgr *m, struct session *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&m->lock);
	s->busy--;
	s->last_used = session_now();
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&m->lock);
	if (last)
		session_free(s);
}

/* Whether s's container is there and running: what a call that failed on it saw may have been a restart. */
static bool container_running(struct session *s)
{
	json_t *j = NULL;
	struct err err;
	if (engine_container_inspect(s->engine, NULL, s->container, &j, &err) < 0)
		return false;
	json_t *state = json_object_get(j, "State");
	bool up = json_is_true(json_object_get(state, "Running")) || json_is_true(json_object_get(state, "Restarting"));
	json_decref(j);
	return up;
}

bool session_forget(struct session_mgr *m, struct session *s)
{
	pthread_mutex_lock(&m->lock);
	while (s->disk_restarting && !m->stopping)
		pthread_cond_wait(&m->wake, &m->lock);
	bool restarted = s->disk_strikes > 0;
	pthread_mutex_unlock(&m->lock);
	/* the disk guard restarted it under the call (diskguard.h): not gone */
	if (restarted && container_running(s)) {
		log_infof("session %s: a call found its container stopped, but it runs again: kept", s->id);
		return false;
	}
	pthread_mutex_lock(&m->lock);
	bool listed = !s->closed;
	session_unlink_locked(m, s);
	pthread_mutex_unlock(&m->lock);
	/* a container stopped from outside is still there; a persistent one waits to be adopted again */
	if (listed && !s->persistent) {
		session_remove_container(m, s);
		savepoint_closed(m, s, false);
	}
	/* the registry's reference goes last, as in session_close */
	pthread_mutex_lock(&m->lock);
	bool last = listed && --s->refs == 0;
	pthread_mutex_unlock(&m->lock);
	if (last)
		session_free(s);
	return true;
}

int session_close(struct session_mgr *m, struct call *call, const char *ref, struct err *err)
{
	session_wait_ready(m);
	pthread_mutex_lock(&m->lock);
	struct session *s = session_find_locked(m, call ? call_principal(call) : NULL, ref ? ref : "default");
	if (s)
		session_unlink_locked(m, s);
	pthread_mutex_unlock(&m->lock);
	if (!s)
		return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT,
			       "no session '%.80s' to close (session_list shows the open sessions)",
			       ref ? ref : "default");
	session_forwards_close(m, s);
	int r = engine_container_remove(s->engine, call, s->container, err);
	pthread_mutex_lock(&m->lock);
	if (r < 0 && !m->stopping) {
		/* the container is still there: keep the session, so that a retry or the exit removes it */
		if (m->len == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 8;
			m->list = xreallocarray(m->list, m->cap, sizeof(*m->list));
		}
		s->closed = false;
		m->list[m->len++] = s;
		pthread_mutex_unlock(&m->lock);
		return r;
	}
	pthread_mutex_unlock(&m->lock);
	log_infof("session %s closed", s->id);
	if (r == 0)
		savepoint_closed(m, s, true);
	/* the registry's reference goes last: another holder (the disk guard) may free s once it is gone */
	pthread_mutex_lock(&m->lock);
	bool last = --s->refs == 0;
	pthread_mutex_unlock(&m->lock);
	if (last)
		session_free(s);
	return r;
}

const char *session_guard(const struct session *s)
{
	return s->agent_installed ? AGENTCTL_PATH : NULL;
}

struct engine *session_engine(const struct session *s)
{
	return s->engine;
}

json_t *session_json(const struct session *s)
{
	/* s:s*: an unnamed session has no "name" (not "") */
	json_t *j = json_pack("{s:s, s:s, s:s*, s:s, s:s, s:b, s:s, s:I, s:f, s:I, s:b, s:I, s:I, s:s}", "session_id",
			      s->id, "engine", s->engine_name, "name", s->name[0] ? s->name : NULL, "image", s->image,
			      "container_id", s->container, "persistent", s->persistent, "network", s->network,
			      "memory_mb", (json_int_t)s->memory_mb, "cpus", s->cpus, "pids", (json_int_t)s->pids,
			      "read_only", s->read_only, "created", (json_int_t)s->created, "last_used",
			      (json_int_t)s->last_used, "user", s->user);
	if (s->egress)
		json_object_set_new(j, "egress", egress_status(s->egress));
	if (s->checkpoint[0])
		json_object_set_new(j, "checkpoint", json_string(s->checkpoint));
	if (s->paused)
		json_object_set_new(j, "paused", json_true());
	if (s->disk_look) /* looked at by the disk guard (diskguard.h) */
		json_object_set_new(j, "disk_used_mb", json_real((double)(s->disk_used >> 10) / 1024));
	if (s->disk_frozen)
		json_object_set_new(j, "disk_stopped", json_true());
	if (s->nforwards) {
		json_t *fw = json_array();
		for (unsigned i = 0; i < s->nforwards; i++)
			json_array_append_new(fw, forward_json(s->forwards[i]));
		json_object_set_new(j, "forwards", fw);
	}
	return j;
}

json_t *session_list_json(struct session_mgr *m, struct call *call)
{
	size_t ne = engines_count(m->engines);
	json_t **states = xcalloc(ne, sizeof(*states));
	struct err err;
	json_t *out = json_array();

	session_wait_ready(m);
	/* one call per engine for the real state of every container; NULL: the engine did not answer */
	for (size_t i = 0; i < ne; i++)
		if (engine_container_list(engines_at(m->engines, i), call, SESSION_LABEL ".session", &states[i], &err) <
		    0)
			states[i] = NULL;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->len; i++) {
		struct session *s = m->list[i];
		if (call && !session_owns(s, call_principal(call)))
			continue;
		json_t *j = session_json(s);
		json_t *mine = NULL;
		for (size_t ei = 0; ei < ne; ei++)
			if (engines_at(m->engines, ei) == s->engine)
				mine = states[ei];
		const char *state = mine ? "missing" : "unknown";
		size_t k;
		json_t *c;
		json_array_foreach (mine, k, c) {
			const char *cid = json_string_value(json_object_get(c, "Id"));
			const char *cst = json_string_value(json_object_get(c, "State"));
			if (cid && strcmp(cid, s->container) == 0)
				state = cst ? cst : "unknown";
		}
		json_object_set_new(j, "state", json_string(state));
		json_object_set_new(j, "busy", json_boolean(s->busy > 0));
		json_array_append_new(out, j);
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < ne; i++)
		json_decref(states[i]);
	free(states);
	return out;
}

void session_key(struct session_mgr *m, const char *principal, const char *ref, char *out, size_t outsz)
{
	/* "s:REF" for the one principal without tokens; "s:NAME:REF" keeps principals' queues apart */
	char pre[CALL_PRINCIPAL_MAX + 4];
	snprintf(pre, sizeof(pre), principal[0] ? "s:%s:" : "s:", principal);
	if (!m) {
		snprintf(out, outsz, "%s%s", pre, ref ? ref : "default");
		return;
	}
	pthread_mutex_lock(&m->lock);
	struct session *s = session_find_locked(m, principal, ref ? ref : "default");
	/*
	 * The default session has one key whether it exists yet or is named by
	 * its id: a first call (which creates it) and the calls after it queue
	 * in one FIFO instead of running side by side.
	 */
	if (!ref || (s && s == session_find_locked(m, principal, "default")))
		snprintf(out, outsz, "%sdefault", pre);
	else
		snprintf(out, outsz, "%s%.*s", pre, (int)(outsz > 3 ? outsz - 3 : 0), s ? s->id : ref);
	pthread_mutex_unlock(&m->lock);
}

unsigned session_count(struct session_mgr *m, const char *owner)
{
	unsigned n = 0;
	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->len; i++)
		n += session_owns(m->list[i], owner);
	pthread_mutex_unlock(&m->lock);
	return n;
}

size_t session_pool_ready(struct session_mgr *m)
{
	return m ? pool_ready(m->pool) : 0;
}

void session_pip_job(struct session *s, const char *package, const char *dir)
{
	if (!s->pip_jobs)
		s->pip_jobs = json_object();
	/* bounded like the history: the oldest jobs are forgotten first */
	if (json_object_size(s->pip_jobs) >= SESSION_HISTORY_MAX)
		json_object_clear(s->pip_jobs);
	json_object_set_new(s->pip_jobs, package, json_string(dir));
}

const char *session_pip_job_dir(const struct session *s, const char *package)
{
	return json_string_value(json_object_get(s->pip_jobs, package));
}

char *session_take_notice(struct session_mgr *m, struct session *s)
{
	pthread_mutex_lock(&m->lock);
	char *n = s->notice;
	s->notice = NULL;
	pthread_mutex_unlock(&m->lock);
	return n;
}

void session_record(struct session *s, const char *kind, json_t *entry)
{
	if (!entry)
		return;
	if (!s->history)
		s->history = json_array();
	/* bounded: a session that clones in a loop must not grow the server without end */
	if (json_array_size(s->history) >= SESSION_HISTORY_MAX) {
		if (json_array_size(s->history) == SESSION_HISTORY_MAX) {
			log_warnf("session %s: more than %d steps recorded; later ones are not", s->id,
				  SESSION_HISTORY_MAX);
			json_array_append_new(s->history, json_pack("{s:s}", "kind", "truncated"));
		}
		json_decref(entry);
		return;
	}
	if (!s->history || json_object_set_new(entry, "kind", json_string(kind)) < 0 ||
	    json_array_append(s->history, entry) < 0)
		log_warnf("session %s: could not record a %s for session_export", s->id, kind);
	json_decref(entry);
}

const struct egress_conf *session_egress_conf(const struct session_mgr *m)
{
	return &m->egress;
}
