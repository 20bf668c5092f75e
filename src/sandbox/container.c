/*
 * container.c - a session's container: the create body with the server's
 * hardening and labels, the user its processes run as (the image's USER
 * resolved from its own files), what is copied in before start, and the
 * check that the engine applied all of it. The registry (session.c) lists
 * what this makes; savepoint.c makes containers from checkpoints with it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/tar.h"
#include "engine/compat.h"
#include "engine/engine-image.h"
#include "sandbox/agentctl.h"
#include "sandbox/ceiling.h"
#include "sandbox/egress.h"
#include "sandbox/pull.h"
#include "sandbox/servercontainer.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"
#include "sandbox/userdb.h"

/* The container's main process: idles, ends at once on SIGKILL. */
static const char session_idle_cmd[] = "while sleep 3600; do :; done";
/* Size cap of /tmp inside sessions. */
#define SESSION_TMPFS "rw,nosuid,nodev,size=256m"
/* Open files per process in sessions (a hard limit over the host's own cannot be set). */
#define SESSION_NOFILE 4096
/* RLIMIT_NPROC counts a uid's processes host-wide, so it is generous; PidsLimit is the real cap. */
#define SESSION_NPROC 8192
/* UID:GID used when the image runs as root or names no user. */
#define SESSION_FALLBACK_USER "1000:1000"
/* Bytes of an image's /etc/passwd or /etc/group read to resolve its USER. */
#define SESSION_USERDB_MAX (1u << 20)

static bool spec_numeric(const char *spec);

/* "uid:gid" in numbers, neither 0. */
bool session_user_valid(const char *u)
{
	unsigned long uid, gid;
	char *end;

	if (!u || !spec_numeric(u))
		return false;
	uid = strtoul(u, &end, 10);
	gid = strtoul(end + 1, NULL, 10);
	return uid > 0 && gid > 0 && uid <= USERDB_ID_MAX && gid <= USERDB_ID_MAX;
}

/* Collects the one regular file of an archive GET into a buf. */
struct file_sink {
	struct buf *out;
};

static int file_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	(void)arg;
	(void)err;
	return e->type == TAR_TYPE_FILE ? TAR_OK : TAR_SKIP;
}

static int file_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct file_sink *fs = arg;
	if (buf_append(fs->out, p, n) < 0)
		return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE, "the file is larger than %zu bytes", fs->out->max);
	return TAR_OK;
}

struct body_src {
	struct engine_body *b;
	struct err err;
};

static ssize_t body_source(void *arg, void *p, size_t n)
{
	struct body_src *bs = arg;
	return engine_body_read(bs->b, p, n, &bs->err);
}

/*
 * Reads the regular file path of a container (created, never started: the
 * image's own bytes) into out, whose max caps it. A missing file, or a link
 * or anything else in its place, reads as empty.
 */
static int read_image_file(struct engine *e, struct call *call, const char *container, const char *path,
			   struct buf *out, struct err *err)
{
	struct tar_limits lim = { .entries = 4, .entry_size = out->max, .total_size = out->max };
	struct file_sink fs = { out };
	struct tar_sink sink = { .entry = file_entry, .data = file_data, .arg = &fs };
	struct body_src bs;

	int r = engine_archive_get(e, call, container, path, &bs.b, err);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	r = tar_read(body_source, &bs, &lim, &sink, NULL, err);
	engine_body_destroy(bs.b);
	return r;
}

json_t *session_instance_labels(struct session_mgr *m, const struct engine *e)
{
	session_wait_known(m); /* m->proc */
	json_t *labels = json_pack("{s:s, s:s, s:s, s:s, s:s}", SESSION_LABEL, "1", SESSION_LABEL ".instance",
				   m->instance, SESSION_LABEL ".host", m->host, SESSION_LABEL ".lock", m->lock_path,
				   SESSION_LABEL ".persistent", "false");
	json_object_set_new(labels, SESSION_LABEL ".proc", json_string(m->proc));
	json_object_set_new(labels, SERVERCONTAINER_LABEL, json_string(session_server_label(m, e)));
	return labels;
}

/*
 * The image's /etc/passwd and /etc/group, read from a container that is
 * created and removed without ever starting: nothing of the image runs.
 */
static int read_user_files(struct session_mgr *m, struct engine *e, struct call *call, const char *image_id,
			   struct buf *passwd, struct buf *group, struct err *err)
{
	char probe[ENGINE_ID_LEN + 1];
	json_t *warnings = NULL;
	json_t *labels = session_instance_labels(m, e);
	json_object_set_new(labels, SESSION_LABEL ".probe", json_string("user"));
	/*
	 * User 0:0: the probe never starts, but Podman resolves the image's USER
	 * at create time, so an image whose USER its passwd lacks (what the probe
	 * is here to find out) would fail the create with an engine error.
	 */
	json_t *body = json_pack("{s:s, s:s, s:[s], s:[], s:o, s:b, s:{s:s, s:{s:s}}}", "Image", image_id, "User",
				 "0:0", "Entrypoint", "/nonexistent", "Cmd", "Labels", labels, "NetworkDisabled", 1,
				 "HostConfig", "NetworkMode", "none", "LogConfig", "Type", "none");
	int r = engine_container_create(e, call, body, probe, &warnings, err);
	json_decref(body);
	json_decref(warnings);
	if (r < 0) {
		/* the engine may have made it and lost the answer (a cancel, a timeout): as session_container_new does */
		session_mark_orphans(m, e);
		return r;
	}
	r = read_image_file(e, call, probe, "/etc/passwd", passwd, err);
	if (r == 0)
		r = read_image_file(e, call, probe, "/etc/group", group, err);
	struct err rerr;
	if (engine_container_remove(e, NULL, probe, &rerr) < 0)
		log_warnf("removing the probe container %.12s: %s", probe, rerr.msg);
	return r;
}

/* True when spec is "uid:gid" in numbers: it needs no files to resolve. */
static bool spec_numeric(const char *spec)
{
	const char *colon = strchr(spec, ':');
	if (!colon || colon == spec || !colon[1])
		return false;
	for (const char *p = spec; *p; p++)
		if (p != colon && !(*p >= '0' && *p <= '9'))
			return false;
	return true;
}

/*
 * The user every process of a session runs as, in numbers ("uid:gid"): the
 * image's USER resolved from the image's own files (userdb.h), once per image
 * id. An image that runs as root, by any name or number, gets the fallback
 * user; a root group alone is replaced by the user's own number.
 */
static int image_user(struct session_mgr *m, struct engine *e, struct call *call, json_t *img, char *out, size_t outsz,
		      bool *ret_fallback, struct err *err)
{
	const char *spec = json_string_value(json_object_get(json_object_get(img, "Config"), "User"));
	const char *id = json_string_value(json_object_get(img, "Id"));
	struct buf passwd, group;
	unsigned long uid, gid;
	int r;

	*ret_fallback = true;
	if (!spec || !*spec || !id || strlen(id) > 200)
		return snprintf(out, outsz, "%s", SESSION_FALLBACK_USER) < (int)outsz ? 0 : -ENAMETOOLONG;
	pthread_mutex_lock(&m->lock);
	json_t *known = json_object_get(m->users, id);
	if (known) {
		snprintf(out, outsz, "%s", json_string_value(json_object_get(known, "user")));
		*ret_fallback = json_is_true(json_object_get(known, "fallback"));
	}
	pthread_mutex_unlock(&m->lock);
	if (known)
		return 0;
	buf_init(&passwd, SESSION_USERDB_MAX);
	buf_init(&group, SESSION_USERDB_MAX);
	r = spec_numeric(spec) ? 0 : read_user_files(m, e, call, id, &passwd, &group, err);
	if (r == 0)
		r = userdb_resolve(spec, passwd.data ? passwd.data : "", passwd.len, group.data ? group.data : "",
				   group.len, &uid, &gid, err);
	buf_finish(&passwd);
	buf_finish(&group);
	if (r < 0)
		return r;
	*ret_fallback = uid == 0;
	if (uid == 0)
		snprintf(out, outsz, "%s", SESSION_FALLBACK_USER);
	else
		snprintf(out, outsz, "%lu:%lu", uid, gid ? gid : uid);
	if (uid == 0 || gid == 0)
		log_infof("image %.80s runs as '%.40s', which is root's %s: sessions run as %s", id, spec,
			  uid == 0 ? "uid" : "group", out);
	pthread_mutex_lock(&m->lock);
	json_object_set_new(m->users, id, json_pack("{s:s, s:b}", "user", out, "fallback", *ret_fallback));
	pthread_mutex_unlock(&m->lock);
	return 0;
}

/* Checks that the engine applied what we asked for (an engine may ignore options). */
int session_verify_hardening(json_t *inspect, const struct session *s, struct err *err)
{
	json_t *hc = json_object_get(inspect, "HostConfig");
	json_t *cfg = json_object_get(inspect, "Config");
	bool all = compat_caps_all_dropped(hc);
	size_t i;
	json_t *v;
	bool nnp = false;
	json_array_foreach (json_object_get(hc, "SecurityOpt"), i, v)
		nnp = nnp || (json_is_string(v) && strncmp(json_string_value(v), "no-new-privileges", 17) == 0);
	const char *user = json_string_value(json_object_get(cfg, "User"));
	const char *why = NULL;
	if (!all)
		why = "capabilities were not dropped";
	else if (!nnp)
		why = "no-new-privileges was not set";
	else if (!session_user_valid(user) || strcmp(user, s->user) != 0)
		why = "the container would not run as the numeric non-root user asked for";
	else if (json_integer_value(json_object_get(hc, "Memory")) != (json_int_t)(s->memory_mb << 20))
		why = "the memory limit was not applied";
	else if (json_integer_value(json_object_get(hc, "PidsLimit")) != (json_int_t)s->pids)
		why = "the pids limit was not applied";
	else if (json_is_true(json_object_get(hc, "Privileged")))
		why = "the container is privileged";
	else if (!compat_network_applied(inspect, s->network))
		why = "the network mode is not the one asked for";
	if (why)
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPERM,
			       "refusing the session: the Docker engine did not apply the sandbox settings (%s)", why);
	return 0;
}

/*
 * The create body of s's container: its labels, the session's environment,
 * and the hardening (HostConfig). pooled: a warm-pool member, labelled so;
 * fallback: the image's user was replaced (HOME=/tmp); with_agent: the agent
 * idles as the main process (no /bin/sh needed: shell-less images work).
 */
static json_t *container_body(const struct session_mgr *m, const struct session *s, const struct session_opts *o,
			      bool pooled, bool fallback, bool with_agent)
{
	const struct config *cfg = m->cfg;
	char created[24];

	snprintf(created, sizeof(created), "%lld", (long long)s->created);
	json_t *labels = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", SESSION_LABEL, "1",
				   SESSION_LABEL ".instance", m->instance, SESSION_LABEL ".host", m->host,
				   SESSION_LABEL ".lock", m->lock_path, SESSION_LABEL ".session", s->id,
				   SESSION_LABEL ".name", s->name, SESSION_LABEL ".principal", s->owner,
				   SESSION_LABEL ".persistent", s->persistent ? "true" : "false",
				   SESSION_LABEL ".created", created, SESSION_LABEL ".user", s->user,
				   SESSION_LABEL ".network", s->network);
	/* always set: a label the image carries would otherwise make a session look pooled, or another's */
	json_object_set_new(labels, SESSION_LABEL ".pool", json_string(pooled ? "1" : "0"));
	json_object_set_new(labels, SERVERCONTAINER_LABEL, json_string(session_server_label(m, s->engine)));
	json_object_set_new(labels, SESSION_LABEL ".proc", json_string(m->proc));
	json_t *env = json_array();
	const char *key;
	json_t *val;
	json_object_foreach (o->env, key, val) {
		char *kv = xasprintf("%s=%s", key, json_string_value(val));
		json_array_append_new(env, json_string_lossy(kv, strlen(kv)));
		free(kv);
	}
	if (fallback) /* the image's own user has a home; the fallback user may not */
		json_array_append_new(env, json_string("HOME=/tmp"));
	if (o->egress) {
		/* the policy asked for, for the record (a label cannot follow later changes) */
		char *text = json_dumps(o->egress, JSON_COMPACT | JSON_SORT_KEYS);
		json_object_set_new(labels, SESSION_LABEL ".egress", json_string(text ? text : ""));
		free(text);
		egress_env(env);
	}
	json_t *hc =
		json_pack("{s:s, s:[s], s:[s], s:I, s:I, s:I, s:I, s:b, s:b, s:{s:s}, s:{s:s, s:{}}, s:[{s:s, s:I, s:I}, "
			  "{s:s, s:I, s:I}], s:b, s:s}",
			  "NetworkMode", s->network, "CapDrop", "ALL", "SecurityOpt", "no-new-privileges", "Memory",
			  (json_int_t)(s->memory_mb << 20), "MemorySwap", (json_int_t)(s->memory_mb << 20), "NanoCpus",
			  (json_int_t)(s->cpus * 1e9), "PidsLimit", (json_int_t)s->pids, "Init", 1, "ReadonlyRootfs",
			  s->read_only, "Tmpfs", "/tmp", SESSION_TMPFS, "LogConfig", "Type", "none", "Config",
			  "Ulimits", "Name", "nofile", "Soft", (json_int_t)SESSION_NOFILE, "Hard",
			  (json_int_t)SESSION_NOFILE, "Name", "nproc", "Soft", (json_int_t)SESSION_NPROC, "Hard",
			  (json_int_t)SESSION_NPROC, "Privileged", 0, "IpcMode", "private");
	if (s->runtime[0])
		json_object_set_new(hc, "Runtime", json_string(s->runtime));
	if (s->read_only) {
		/*
		 * The workspace must stay writable: an anonymous volume of its own.
		 * The engine refuses the archive copy of the agent into a read-only
		 * root but not into a volume: its directory is a second anonymous
		 * volume, root's, which the sandbox user cannot write (docs/agent.md).
		 * Both go with the container (removed with v=1).
		 */
		json_t *mounts = json_pack("[{s:s, s:s}]", "Type", "volume", "Target", cfg->workspace);
		if (with_agent)
			json_array_append_new(mounts,
					      json_pack("{s:s, s:s}", "Type", "volume", "Target", AGENTCTL_DIR));
		json_object_set_new(hc, "Mounts", mounts);
	}
	json_t *entry = with_agent ? json_pack("[s, s]", AGENTCTL_PATH, "--idle")
				   : json_pack("[s, s, s]", "/bin/sh", "-c", session_idle_cmd);
	/*
	 * The image by the id the policy judged (pull_image), not by its name: a tag moved since
	 * cannot swap it. The name, as asked, stays in the .image-ref label for the next server
	 * (not .image: the default image carries that label itself).
	 */
	json_object_set_new(labels, SESSION_LABEL ".image-ref", json_string(s->image));
	/* a checkpoint's session: what it was made from, and its lineage's base for the next server */
	/* not .checkpoint: that label marks checkpoint images, and a commit keeps its container's label keys */
	json_object_set_new(labels, SESSION_LABEL ".from-checkpoint", json_string(s->checkpoint));
	json_object_set_new(labels, SESSION_LABEL ".base-id", json_string(s->image_id));
	const char *image = s->checkpoint_image[0] ? s->checkpoint_image : s->image_id[0] ? s->image_id : s->image;
	return json_pack("{s:s, s:o, s:[], s:s, s:s, s:o, s:o, s:o, s:b, s:b, s:b, s:i}", "Image", image, "Entrypoint",
			 entry, "Cmd", "WorkingDir", cfg->workspace, "User", s->user, "Env", env, "Labels", labels,
			 "HostConfig", hc, "Tty", 0, "OpenStdin", 0, "NetworkDisabled", strcmp(s->network, "none") == 0,
			 "StopTimeout", 1);
}

/*
 * What a created container needs before it is a session: its workspace made
 * the sandbox user's, the agent copied in, then started, inspected and its
 * hardening checked. 0, or -errno (the caller removes the container).
 */
static int container_ready(struct session_mgr *m, struct call *call, struct engine *eng, struct session *s,
			   bool with_agent, bool prepared, struct err *err)
{
	const struct config *cfg = m->cfg;
	json_t *inspect = NULL;
	unsigned uid, gid;
	int r = 0;

	/*
	 * The workspace belongs to the sandbox user, whatever the image has there.
	 * A numeric user gets it made (the engine keeps a tar header's owner); a
	 * named non-root user is the image's own, which provides its workspace.
	 */
	if (prepared) {
		/* a checkpoint of this server's: its image has the workspace and this very agent */
		s->agent_installed = with_agent;
	} else if (sscanf(s->user, "%u:%u", &uid, &gid) == 2 || sscanf(s->user, "%u", &uid) == 1) {
		if (!strchr(s->user, ':'))
			gid = uid;
		struct buf tar;
		buf_init(&tar, 64 * 1024);
		r = tar_make_dir(s->read_only ? "." : cfg->workspace + 1, 0755, uid, gid, &tar, err);
		if (r == 0)
			r = engine_archive_put(eng, call, s->container, s->read_only ? cfg->workspace : "/", tar.data,
					       tar.len, err);
		buf_finish(&tar);
	}
	if (r == 0 && with_agent && !prepared) {
		r = agentctl_install(eng, call, s->container, s->read_only, err);
		s->agent_installed = r == 0;
	}
	if (r == 0)
		r = engine_container_start(eng, call, s->container, err);
	if (r == 0)
		r = engine_container_inspect(eng, call, s->container, &inspect, err);
	if (r == 0)
		r = session_verify_hardening(inspect, s, err);
	if (r == 0 && !json_is_true(json_object_get(json_object_get(inspect, "State"), "Running")))
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
			    with_agent ? "the session's container stopped right after it started (image %s)"
				       : "the session's container stopped right after it started (does image %s have "
					 "/bin/sh and sleep?)",
			    s->image);
	json_decref(inspect);
	return r;
}

/* Starts s's egress with the policy o asked for (checked by session_create). */
static int egress_begin(struct session_mgr *m, struct call *call, struct engine *eng, struct session *s,
			const struct session_opts *o, struct err *err)
{
	struct policy p;
	int r = egress_policy_build(&m->egress, o->egress, &p, err);
	if (r == 0)
		r = egress_start(eng, call, s->container, s->user, &m->egress, &p, s->id, &s->egress, err);
	policy_finish(&p);
	return r;
}

/*
 * A session's container, created with the hardening, started and checked:
 * the session is not listed yet (*ret is the caller's). pooled: a warm-pool
 * member, labelled so.
 */
int session_container_new(struct session_mgr *m, struct call *call, const struct session_opts *o, const char *image,
			  const char *network, bool pooled, struct session **ret, struct err *err)
{
	const struct config *cfg = m->cfg;
	json_t *img = NULL, *warnings = NULL;
	struct engine *eng;
	const char *eng_name;
	int r;

	/* session_create checked the name: the image, its pull and the container are all on this engine */
	if ((r = engines_find(m->engines, o->engine, &eng, &eng_name, err)) < 0)
		return r;
	/*
	 * The image policy, and a pull when the image is missing (pull.h). The
	 * warm pool never pulls: nobody would see its progress, and a server
	 * would fetch a gigabyte at start for sessions no one asked for. A
	 * missing default image is pulled by the first session that needs it,
	 * and the pool fills after that.
	 */
	struct pull_result pulled = { 0 };
	if (pooled || o->from) /* a checkpoint's image is the server's own, made for this principal */
		r = engine_image_inspect(eng, call, o->from ? o->from->image_id : image, &img, err);
	else
		r = pull_image(eng, call, cfg, image, o->transient, o->pull_report, o->pull_arg, &img, &pulled, err);
	if (r < 0)
		return r;

	char user[sizeof(((struct session *)0)->user)];
	bool fallback = false;
	if (o->from) /* the user its lineage ran as, never what the checkpoint's /etc/passwd says now */
		snprintf(user, sizeof(user), "%s", o->from->user);
	else
		r = image_user(m, eng, call, img, user, sizeof(user), &fallback, err);
	if (r < 0) {
		json_decref(img);
		return r;
	}
	struct session *s = xcalloc(1, sizeof(*s));
	if (o->from && o->from->id)
		snprintf(s->id, sizeof(s->id), "%s", o->from->id);
	else
		session_random_hex(s->id, SESSION_ID_LEN);
	s->engine = eng;
	snprintf(s->engine_name, sizeof(s->engine_name), "%s", eng_name);
	snprintf(s->name, sizeof(s->name), "%s", o->name ? o->name : "");
	snprintf(s->owner, sizeof(s->owner), "%s", o->owner ? o->owner : call_principal(call));
	snprintf(s->image, sizeof(s->image), "%s", image);
	s->pulled = pulled.pulled;
	s->pull_ms = pulled.pull_ms;
	snprintf(s->user, sizeof(s->user), "%s", user);
	snprintf(s->network, sizeof(s->network), "%s", network);
	snprintf(s->runtime, sizeof(s->runtime), "%s", o->runtime ? o->runtime : (cfg->runtime ? cfg->runtime : ""));
	s->persistent = o->persistent;
	s->read_only = o->read_only;
	s->memory_mb = o->memory_mb ? o->memory_mb : cfg->memory_mb;
	s->cpus = o->cpus > 0 ? o->cpus : cfg->cpus;
	s->pids = cfg->pids;
	s->created = s->last_used = session_now();
	const char *img_id = json_string_value(json_object_get(img, "Id"));
	snprintf(s->image_id, sizeof(s->image_id), "%s", img_id ? img_id : "");
	if (o->from) {
		snprintf(s->image, sizeof(s->image), "%s", o->from->base_image);
		snprintf(s->image_id, sizeof(s->image_id), "%s", o->from->base_id);
		snprintf(s->checkpoint, sizeof(s->checkpoint), "%s", o->from->checkpoint);
		snprintf(s->checkpoint_image, sizeof(s->checkpoint_image), "%s", img_id ? img_id : "");
		s->history = o->from->history ? json_deep_copy(o->from->history) : NULL;
	}
	json_decref(img);

	/* the agent is copied in before start (container_ready) */
	bool with_agent = agentctl_built();
	session_wait_known(m); /* m->proc, for the labels */
	json_t *body = container_body(m, s, o, pooled, fallback, with_agent);
	r = ceiling_container_create(eng, call, cfg, body, s->container, &warnings, err);
	json_decref(body);
	if (r < 0) {
		/* the engine may have made it and lost the answer */
		session_mark_orphans(m, eng);
		session_free(s);
		return r;
	}
	s->warnings = warnings;
	if ((r = container_ready(m, call, eng, s, with_agent, o->from && o->from->ready, err)) == 0 && o->egress &&
	    !o->no_relay)
		r = egress_begin(m, call, eng, s, o, err);
	if (r < 0) {
		session_remove_container(m, s);
		session_free(s);
		return r;
	}
	*ret = s;
	return 0;
}
