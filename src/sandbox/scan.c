/*
 * scan.c - the start-up scan: which server owns each labelled container
 * (its lock file held, its process alive, its server container running),
 * and what the dead ones left: persistent sessions adopted (through the
 * dead lock on a host, a claim the engine names when only the engine can
 * tell: claim()), the rest removed, stale lock files pruned. Also the sweep of one instance's
 * containers that the exit and the janitor do.
 *
 * Ownership is proven, never assumed: a container whose owner cannot be
 * shown dead (another host, another user's lock, a label from before the
 * lock path) is left alone, so servers of two clients, or two users, share
 * an engine without touching each other's sessions.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "sandbox/ceiling.h"
#include "sandbox/checkpoint.h"
#include "sandbox/egress.h"
#include "sandbox/scan.h"
#include "sandbox/servercontainer.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

/* A lock file younger than this may be a starting server's, not yet taken (prune_locks). */
#define SESSION_LOCK_FRESH_S 60

/* What is known of the instance that labelled a container. */
enum owner {
	OWNER_ALIVE,   /* its lock is held: hands off */
	OWNER_DEAD,    /* its lock is free, and now held by this instance */
	OWNER_UNKNOWN, /* cannot be proven either way: hands off */
};

/*
 * A lock path from a label, accepted only as what a server names: an
 * absolute ".../sandbox-mcp[-N]/<instance>.lock" without "." or ".."
 * components. Anything else in a label (a forged one in an image) is refused
 * before the path is opened.
 */
static bool lock_path_valid(const char *path, const char *instance)
{
	char tail[32];
	size_t n = strlen(path);
	const char *base = strrchr(path, '/');

	snprintf(tail, sizeof(tail), "/%s.lock", instance);
	if (path[0] != '/' || n >= PATH_MAX || !base || strcmp(base, tail) != 0 || strstr(path, "/./") ||
	    strstr(path, "/../") || strstr(path, "//"))
		return false;
	const char *dir = base;
	while (dir > path && dir[-1] != '/')
		dir--;
	size_t dn = (size_t)(base - dir);
	if (dn == 11 && strncmp(dir, "sandbox-mcp", 11) == 0)
		return true;
	if (dn <= 12 || strncmp(dir, "sandbox-mcp-", 12) != 0)
		return false;
	for (const char *c = dir + 12; c < base; c++)
		if (*c < '0' || *c > '9')
			return false;
	return true;
}

/*
 * Opens an instance's lock: the path its container names (the lock lives
 * where its server put it, whatever this server's XDG_RUNTIME_DIR), created
 * again when its owner removed it on a clean exit and its folder is ours.
 */
static int open_lock(const char *path, bool may_create)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0 || errno != ENOENT || !may_create)
		return fd;
	char dir[PATH_MAX];
	struct stat st;
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	if (lstat(dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid())
		return -1;
	fd = open(path, O_RDONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	return fd;
}

/*
 * The start time of process pid (field 22 of /proc/<pid>/stat, clock ticks
 * since boot): with the pid it names one process for as long as the host
 * runs, a reused pid being another start. 0 or -errno.
 */
static int proc_start(pid_t pid, unsigned long long *ret)
{
	char path[40], b[1024];
	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	b[n] = '\0';
	/* the name (field 2) may hold spaces and ')': the fields go on after the last ')' */
	char *p = strrchr(b, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", ret) != 1)
		return -EPROTO;
	return 0;
}

/*
 * This boot of the host (the kernel's random boot_id, 36 characters): pids
 * and start times begin again at each boot, and a server started at boot
 * may well get its predecessor's pid and start time. 0 or -errno.
 */
static int boot_id(char out[40])
{
	char *text;
	size_t n;
	int r = read_small_file("/proc/sys/kernel/random/boot_id", 64, &text, &n);
	if (r < 0)
		return r;
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == ' '))
		n--;
	if (n == 0 || n >= 40) {
		free(text);
		return -EPROTO;
	}
	snprintf(out, 40, "%.*s", (int)n, text);
	free(text);
	return 0;
}

/*
 * Whether the process a .proc label names ("<pid>:<start time>:<boot id>")
 * runs on this host now: this boot, the same pid, the same start time. The
 * lock's second witness: a lock file removed under a live server (a tmp
 * cleaner, a logout, rm) proves nothing while its process lives.
 */
static bool proc_alive(const char *label)
{
	long pid;
	unsigned long long start, now;
	char *end, boot[40];
	if (!label || boot_id(boot) < 0)
		return false;
	errno = 0;
	pid = strtol(label, &end, 10);
	if (errno || pid <= 0 || pid > INT_MAX || *end != ':')
		return false;
	start = strtoull(end + 1, &end, 10);
	if (errno || *end != ':' || strcmp(end + 1, boot) != 0)
		return false;
	return proc_start((pid_t)pid, &now) == 0 && now == start;
}

/*
 * Whether the instance that labelled a container lives: proven only by its
 * lock and its process, never guessed from this server's environment. A free lock is taken
 * and kept for as long as this server runs, so the dead instance's persistent
 * sessions pass to this server alone: another server starting now or later
 * finds the lock held and leaves them be.
 */
static enum owner owner_state(struct session_mgr *m, json_t *labels)
{
	const char *inst = json_string_value(json_object_get(labels, SESSION_LABEL ".instance"));
	const char *host = json_string_value(json_object_get(labels, SESSION_LABEL ".host"));
	const char *lock = json_string_value(json_object_get(labels, SESSION_LABEL ".lock"));
	char legacy[PATH_MAX + 32];
	struct stat st;

	if (!inst || strlen(inst) != 16 || !is_hex(inst, 16) || !host || strcmp(host, m->host) != 0)
		return OWNER_UNKNOWN;
	if (json_object_get(m->held, inst))
		return OWNER_DEAD; /* taken over already, for another of its containers */
	if (proc_alive(json_string_value(json_object_get(labels, SESSION_LABEL ".proc"))))
		return OWNER_ALIVE; /* whatever became of its lock file */
	if (!lock) {
		/* a server from before the label: its lock only counts where this server would put it */
		snprintf(legacy, sizeof(legacy), "%s/%s.lock", m->lock_dir, inst);
		lock = legacy;
	}
	if (!lock_path_valid(lock, inst))
		return OWNER_UNKNOWN;
	int fd = open_lock(lock, lock != legacy);
	if (fd < 0)
		return OWNER_UNKNOWN;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return OWNER_UNKNOWN;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		bool held = errno == EWOULDBLOCK;
		close(fd);
		return held ? OWNER_ALIVE : OWNER_UNKNOWN;
	}
	/* another server's prune_locks removed it between our open and flock: a later scan decides */
	if (fstat(fd, &st) < 0 || st.st_nlink == 0) {
		close(fd);
		return OWNER_UNKNOWN;
	}
	json_object_set_new(m->held, inst, json_integer(fd));
	return OWNER_DEAD;
}

/*
 * A persistent session of a dead instance, rebuilt from what the engine says
 * of its container (inspect), not from labels alone: its real limits, user
 * and network, and the same hardening a new session must have.
 */
static int adopt_one(struct session_mgr *m, size_t ei, const char *id, json_t *labels, struct session **ret,
		     struct err *err)
{
	json_t *inspect = NULL;
	int r = engine_container_inspect(engines_at(m->engines, ei), NULL, id, &inspect, err);
	if (r < 0)
		return r;
	json_t *hc = json_object_get(inspect, "HostConfig");
	json_t *cfg = json_object_get(inspect, "Config");
	const char *sid = json_string_value(json_object_get(labels, SESSION_LABEL ".session"));
	const char *nm = json_string_value(json_object_get(labels, SESSION_LABEL ".name"));
	const char *user = json_string_value(json_object_get(cfg, "User"));
	const char *net = json_string_value(json_object_get(hc, "NetworkMode"));
	/* the name it was asked by: the container itself was made from the image's id */
	const char *img = json_string_value(json_object_get(labels, SESSION_LABEL ".image-ref"));
	if (!img || !img[0])
		img = json_string_value(json_object_get(cfg, "Image"));
	const char *rt = json_string_value(json_object_get(hc, "Runtime"));
	const char *created = json_string_value(json_object_get(labels, SESSION_LABEL ".created"));
	struct session *s = xcalloc(1, sizeof(*s));
	uint64_t cv = 0;

	if (!sid || strlen(sid) != SESSION_ID_LEN || !is_hex(sid, SESSION_ID_LEN))
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EINVAL, "its session label is not a session id");
	else if (!session_user_valid(user))
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPERM,
			    "its user '%.40s' is not a numeric non-root uid:gid (made by an older server?)",
			    user ? user : "");
	else if (!net || !config_network_allowed(m->cfg, net))
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPERM, "its network '%.40s' is not allowed (SANDBOX_NETWORKS)",
			    net ? net : "");
	if (r == 0) {
		snprintf(s->id, sizeof(s->id), "%s", sid);
		s->engine = engines_at(m->engines, ei);
		snprintf(s->engine_name, sizeof(s->engine_name), "%s", engines_name(m->engines, ei));
		const char *pr = json_string_value(json_object_get(labels, SESSION_LABEL ".principal"));
		snprintf(s->owner, sizeof(s->owner), "%s", pr ? pr : "");
		/* a reserved name would make it the default session of every call */
		if (nm && session_name_valid(nm) && strcmp(nm, "default") != 0)
			snprintf(s->name, sizeof(s->name), "%s", nm);
		memcpy(s->container, id, ENGINE_ID_LEN + 1);
		snprintf(s->image, sizeof(s->image), "%s", img ? img : "");
		snprintf(s->user, sizeof(s->user), "%s", user);
		snprintf(s->network, sizeof(s->network), "%s", net);
		snprintf(s->runtime, sizeof(s->runtime), "%s", rt && strcmp(rt, "runc") != 0 ? rt : "");
		s->memory_mb = (uint64_t)json_integer_value(json_object_get(hc, "Memory")) >> 20;
		s->cpus = (double)json_integer_value(json_object_get(hc, "NanoCpus")) / 1e9;
		s->pids = (uint64_t)json_integer_value(json_object_get(hc, "PidsLimit"));
		s->read_only = json_is_true(json_object_get(hc, "ReadonlyRootfs"));
		if (created && parse_u64(created, 0, INT64_MAX, &cv) == 0)
			s->created = (int64_t)cv;
		s->last_used = session_now();
		s->persistent = true;
		s->adopted = true;
		if (s->memory_mb == 0 || s->pids == 0 || s->cpus <= 0)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EPERM, "it has no memory, CPU or pids limit");
		else
			r = session_verify_hardening(inspect, s, err);
	}
	json_decref(inspect);
	if (r < 0) {
		free(s);
		return r;
	}
	*ret = s;
	return 0;
}

/*
 * An adopted session made with egress gets its relay again, with the policy
 * it was made with (its label) as far as this server's ceiling allows; else
 * it has no egress at all: its container has no network of its own.
 */
static void adopt_egress(struct session_mgr *m, struct session *s, const char *label)
{
	struct policy p;
	struct err err;
	if (!label || !label[0])
		return;
	json_t *want = json_loads(label, 0, NULL);
	int r = want ? egress_policy_build(&m->egress, want, &p, &err)
		     : err_set(&err, ERRCODE_ENGINE_ERROR, -EINVAL, "its egress label is not JSON");
	json_decref(want);
	if (r == 0) {
		r = egress_start(s->engine, NULL, s->container, s->user, &m->egress, &p, s->id, &s->egress, &err);
		policy_finish(&p);
	}
	if (r < 0)
		log_warnf("persistent session %s: no egress (%s); it has no network", s->id, err.msg);
}

/* Adopts a dead instance's persistent container: started if stopped, listed. */
static void adopt(struct session_mgr *m, size_t ei, const char *id, json_t *labels, const char *state)
{
	struct session *s;
	struct err err;

	if (m->adopted >= m->cfg->max_sessions) {
		log_warnf("not adopting persistent container %.12s: %zu adopted already (SANDBOX_MAX_SESSIONS); a "
			  "later server may",
			  id, m->adopted);
		return;
	}
	if (adopt_one(m, ei, id, labels, &s, &err) < 0) {
		log_warnf("not adopting persistent container %.12s: %s; it is left as it is (docker rm -f %.12s "
			  "removes it)",
			  id, err.msg, id);
		return;
	}
	/* a session left paused by its server is resumed: a call into a frozen container would hang */
	bool paused = state && strcmp(state, "paused") == 0;
	if (paused && engine_container_unpause(s->engine, NULL, id, &err) < 0)
		log_warnf("persistent session %s: cannot resume its paused container: %s", s->id, err.msg);
	else if (!paused && state && strcmp(state, "running") != 0 &&
		 engine_container_start(s->engine, NULL, id, &err) < 0)
		log_warnf("persistent session %s: cannot start its container: %s", s->id, err.msg);
	else
		adopt_egress(m, s, json_string_value(json_object_get(labels, SESSION_LABEL ".egress")));
	pthread_mutex_lock(&m->lock);
	bool dup = session_find_locked(m, NULL, s->id) != NULL;
	if (!dup) {
		if (m->len == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 8;
			m->list = xreallocarray(m->list, m->cap, sizeof(*m->list));
		}
		s->refs = 1;
		s->mgr = m;
		m->list[m->len++] = s;
		m->adopted++;
	}
	pthread_mutex_unlock(&m->lock);
	if (dup)
		free(s);
	else
		log_infof("adopted persistent session %s (%s) on engine %s", s->id, s->name, s->engine_name);
}

/* What a container listing (GET /containers/json) says of one container: the labels the sweeps read. */
struct listed {
	json_t *labels; /* borrowed from the listing */
	const char *id, *inst;
	bool persistent, pooled;
};

static void listed_read(json_t *c, struct listed *l)
{
	l->labels = json_object_get(c, "Labels");
	l->id = json_string_value(json_object_get(c, "Id"));
	l->inst = json_string_value(json_object_get(l->labels, SESSION_LABEL ".instance"));
	const char *persist = json_string_value(json_object_get(l->labels, SESSION_LABEL ".persistent"));
	l->persistent = persist && strcmp(persist, "true") == 0;
	/* by value: an image may carry any label, and a container inherits what its create does not set */
	const char *pool = json_string_value(json_object_get(l->labels, SESSION_LABEL ".pool"));
	l->pooled = pool && strcmp(pool, "1") == 0;
}

/*
 * Whether the server container a container's .server label names is gone
 * from engine e (the label is set only when that container was on e, so
 * not found there is gone). servers caches the engine's answers.
 */
static bool server_gone(struct session_mgr *m, struct engine *e, json_t *labels, json_t *servers)
{
	const char *server = json_string_value(json_object_get(labels, SERVERCONTAINER_LABEL));
	struct err err;
	if (!server || !engine_id_valid(server) || strcmp(server, m->self) == 0)
		return false;
	json_t *known = json_object_get(servers, server);
	if (known)
		return json_is_false(known);
	int r = servercontainer_running(e, server, &err);
	if (r < 0)
		return false; /* the engine did not say: a later scan decides */
	json_object_set_new(servers, server, json_boolean(r == 1));
	return r == 0;
}

/*
 * A claim on dead instance inst's persistent sessions when only the engine
 * can say it died (its server container is gone, and with it the lock file
 * that hands sessions over on a host): a never-started container named
 * sandbox-mcp-claim-<inst>, which the engine lets one server make. It bears
 * this instance's labels, so it goes with this server (the exit's sweep,
 * the janitor); a claim whose maker is gone is removed and made again. 1:
 * this server holds it; 0: a live server does, or the engine did not say.
 * claims caches the answer per sweep.
 */
static int claim(struct session_mgr *m, struct engine *e, const char *inst, const char *image, json_t *servers,
		 json_t *claims)
{
	json_t *known = json_object_get(claims, inst);
	if (known)
		return json_is_true(known);
	char name[64], id[ENGINE_ID_LEN + 1];
	struct err err;
	snprintf(name, sizeof(name), "sandbox-mcp-claim-%s", inst);
	json_t *labels = session_instance_labels(m, e);
	json_object_set_new(labels, SESSION_LABEL ".claim", json_string(inst));
	json_t *body = json_pack("{s:s, s:[s], s:o, s:b, s:{s:s}}", "Image", image ? image : "", "Cmd", "true",
				 "Labels", labels, "NetworkDisabled", 1, "HostConfig", "NetworkMode", "none");
	int held = 0;
	for (int tries = 0; tries < 2 && body && image; tries++) {
		int r = engine_container_create_named(e, NULL, name, body, id, &err);
		if (r == 0 || r != -EEXIST) {
			held = r == 0;
			if (r < 0)
				log_warnf("claiming the sessions of instance %s: %s", inst, err.msg);
			break;
		}
		/* made by another server: hands off while it lives */
		json_t *j = NULL;
		if (engine_container_inspect(e, NULL, name, &j, &err) < 0)
			break;
		json_t *their = json_object_get(json_object_get(j, "Config"), "Labels");
		const char *by = json_string_value(json_object_get(their, SESSION_LABEL ".instance"));
		enum owner o = by && strcmp(by, m->instance) == 0 ? OWNER_ALIVE : owner_state(m, their);
		bool mine = by && strcmp(by, m->instance) == 0;
		bool gone = !mine && (o == OWNER_DEAD || (o == OWNER_UNKNOWN && server_gone(m, e, their, servers)));
		const char *cid = json_string_value(json_object_get(j, "Id"));
		/* by its id: another server may have replaced it meanwhile, and that claim stands */
		if (gone && engine_id_valid(cid) && engine_container_remove(e, NULL, cid, &err) < 0)
			gone = false;
		json_decref(j);
		held = mine;
		if (!gone)
			break;
	}
	json_decref(body);
	json_object_set_new(claims, inst, json_boolean(held));
	if (held)
		session_mark_orphans(m, e); /* no session holds the claim: the exit's sweep removes it */
	if (held)
		log_infof("claimed the persistent sessions of instance %s, whose server container is gone", inst);
	return held;
}

/*
 * One engine's part of the start-up scan. An engine that does not answer
 * now is skipped: its leftovers wait for a later server's scan.
 */
static void sweep(struct session_mgr *m, size_t ei)
{
	struct engine *e = engines_at(m->engines, ei);
	struct err err;
	json_t *list = NULL, *c;
	size_t i;

	if (engine_container_list(e, NULL, SESSION_LABEL ".instance", &list, &err) < 0) {
		log_warnf("engine %s does not answer now, so its sessions fail until it does (old sessions there "
			  "are not cleaned up): %s",
			  engines_name(m->engines, ei), err.msg);
		return;
	}
	json_t *servers = json_object(); /* server container id -> running, asked once per sweep */
	json_t *claims = json_object();	 /* dead instance -> this server holds its claim */
	json_array_foreach (list, i, c) {
		struct listed l;
		listed_read(c, &l);
		if (!engine_id_valid(l.id) || !l.inst || strcmp(l.inst, m->instance) == 0)
			continue;
		enum owner o = owner_state(m, l.labels);
		if (o == OWNER_UNKNOWN && server_gone(m, e, l.labels, servers)) {
			/* its server's container is gone: its persistent sessions go to the server that claims them */
			if (l.persistent && !l.pooled) {
				const char *image = json_string_value(json_object_get(c, "ImageID"));
				if (claim(m, e, l.inst, image, servers, claims) == 1)
					adopt(m, ei, l.id, l.labels, json_string_value(json_object_get(c, "State")));
				continue;
			}
			log_infof("removing container %.12s left by instance %s, whose server container is gone", l.id,
				  l.inst);
			if (engine_container_remove(e, NULL, l.id, &err) < 0)
				log_warnf("removing %.12s: %s", l.id, err.msg);
			continue;
		}
		if (o != OWNER_DEAD)
			continue;
		/* a warm-pool member is never adopted, whatever else its labels say */
		if (l.persistent && !l.pooled) {
			adopt(m, ei, l.id, l.labels, json_string_value(json_object_get(c, "State")));
			continue;
		}
		log_infof("removing container %.12s left by dead instance %s on engine %s", l.id, l.inst,
			  engines_name(m->engines, ei));
		if (engine_container_remove(e, NULL, l.id, &err) < 0)
			log_warnf("removing %.12s: %s", l.id, err.msg);
	}
	json_decref(claims);
	json_decref(servers);
	json_decref(list);
	ceiling_sweep_probes(e, NULL);
}

/*
 * A server that was killed leaves its lock file behind, one per kill: they
 * piled up by the hundred over a day of test runs. After the scan, a lock
 * in this server's folder that nobody holds is removed, unless it is new
 * (a starting server creates its lock before it takes it) or this scan
 * took it over. A container that still names it, on an engine that did
 * not answer now, gets it made again by a later scan (open_lock), where
 * the label names it; only containers of servers from before that label
 * (0.x) then stay unproven and are left alone.
 */
static void prune_locks(struct session_mgr *m)
{
	DIR *d = opendir(m->lock_dir);
	if (!d)
		return;
	time_t old = time(NULL) - SESSION_LOCK_FRESH_S;
	for (struct dirent *de; (de = readdir(d));) {
		char inst[SESSION_INSTANCE_LEN + 1];
		struct stat st, now;
		if (strlen(de->d_name) != SESSION_INSTANCE_LEN + strlen(".lock") ||
		    strcmp(de->d_name + SESSION_INSTANCE_LEN, ".lock") != 0 ||
		    !is_hex(de->d_name, SESSION_INSTANCE_LEN))
			continue;
		snprintf(inst, sizeof(inst), "%.*s", SESSION_INSTANCE_LEN, de->d_name);
		if (strcmp(inst, m->instance) == 0 || json_object_get(m->held, inst))
			continue;
		int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		/*
		 * Only the file we locked goes: between our open and flock its
		 * owner may have removed it on exit and another server made and
		 * taken a new one under the same name (owner_state).
		 */
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && st.st_mtime < old &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    fstatat(dirfd(d), de->d_name, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_dev == st.st_dev &&
		    now.st_ino == st.st_ino && unlinkat(dirfd(d), de->d_name, 0) == 0)
			log_debugf("removed the lock of ended instance %s", inst);
		close(fd);
	}
	closedir(d);
}

/*
 * Removes instance's containers on engine ei that are not persistent
 * sessions (pool members, persistent or not, included): what an exit of
 * that instance removes.
 */
void scan_sweep_instance(struct engines *es, size_t ei, const char *instance)
{
	struct engine *e = engines_at(es, ei);
	char label[sizeof(SESSION_LABEL) + 32];
	json_t *list = NULL, *c;
	struct err err;
	size_t i;

	snprintf(label, sizeof(label), SESSION_LABEL ".instance=%s", instance);
	if (engine_container_list(e, NULL, label, &list, &err) < 0) {
		log_warnf("engine %s: cannot look for containers left behind: %s", engines_name(es, ei), err.msg);
		return;
	}
	json_array_foreach (list, i, c) {
		struct listed l;
		listed_read(c, &l);
		/* the filter asked for this instance only; an engine that ignores it is not trusted */
		if (!engine_id_valid(l.id) || !l.inst || strcmp(l.inst, instance) != 0 || (l.persistent && !l.pooled))
			continue;
		log_infof("removing container %.12s left behind on engine %s", l.id, engines_name(es, ei));
		if (engine_container_remove(e, NULL, l.id, &err) < 0)
			log_warnf("removing %.12s: %s", l.id, err.msg);
	}
	json_decref(list);
}

int scan_proc_id(char *out, size_t n)
{
	unsigned long long start = 0;
	char boot[40];
	int r = proc_start(getpid(), &start);
	if (r == 0)
		r = boot_id(boot);
	if (r == 0)
		snprintf(out, n, "%ld:%llu:%s", (long)getpid(), start, boot);
	return r;
}

void scan_run(struct session_mgr *m)
{
	/* before any session is made: their labels say whether this server's container is on their engine */
	for (size_t i = 0; i < engines_count(m->engines) && i < 32; i++)
		if (servercontainer_on(engines_at(m->engines, i), m->self)) {
			atomic_fetch_or(&m->self_on, 1u << i);
			log_infof("this server runs in container %.12s on engine %s: its sessions there name it",
				  m->self, engines_name(m->engines, i));
		}
	for (size_t i = 0; i < engines_count(m->engines); i++)
		sweep(m, i);
	prune_locks(m);
}
