/*
 * savepoint.c - checkpoints, rollbacks, forks, pause and idle snapshots of
 * sessions (savepoint.h), on the registry's insides (session-internal.h).
 *
 * A rollback does not rewrite a container: it makes a new one from the
 * checkpoint with the session's settings, moves it into the session (same
 * id, name, egress policy), and removes the old one. A fork makes its
 * containers in parallel, each with its own place under the limits held
 * from the start, so it ends with all of them or none.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "engine/engine-image.h"
#include "sandbox/agentctl.h"
#include "sandbox/ceiling.h"
#include "sandbox/egress.h"
#include "sandbox/forward.h"
#include "sandbox/image.h"
#include "sandbox/pyrepl.h"
#include "sandbox/savepoint.h"
#include "sandbox/session-internal.h"

/* A fork's sessions are made this many at once. */
#define SAVEPOINT_FORK_PARALLEL 16

static void owner_of(const char *principal, char out[IMAGE_OWNER_MAX])
{
	image_owner(principal, out, IMAGE_OWNER_MAX);
}

/*
 * owner's checkpoints on every engine, oldest first per engine. An engine
 * that does not answer is left out (logged) unless none answers.
 */
static int list_all(struct session_mgr *m, struct call *call, const char *owner, struct checkpoint **ret, size_t *n,
		    struct err *err)
{
	struct checkpoint *all = NULL;
	size_t len = 0, answered = 0;
	int r = 0;
	for (size_t i = 0; i < engines_count(m->engines); i++) {
		struct checkpoint *part;
		size_t k;
		struct err e2;
		if ((r = checkpoint_list(engines_at(m->engines, i), call, owner, &part, &k, &e2)) < 0) {
			log_warnf("checkpoints on engine %s are not listed: %s", engines_name(m->engines, i), e2.msg);
			*err = e2;
			continue;
		}
		answered++;
		all = xreallocarray(all, len + k + 1, sizeof(*all));
		for (size_t j = 0; j < k; j++) {
			part[j].engine = engines_at(m->engines, i);
			snprintf(part[j].engine_name, sizeof(part[j].engine_name), "%s", engines_name(m->engines, i));
		}
		memcpy(all + len, part, k * sizeof(*part));
		len += k;
		free(part); /* its members moved into all */
	}
	if (!answered) {
		free(all);
		return r < 0 ? r : -EIO;
	}
	err_clear(err);
	*ret = all ? all : xcalloc(1, sizeof(*all));
	*n = len;
	if (len)
		atomic_store(&m->savepoints_used, true);
	return 0;
}

/* A copy of c that owns its own JSON. */
static void checkpoint_copy(struct checkpoint *dst, const struct checkpoint *c)
{
	*dst = *c;
	dst->settings = json_incref(c->settings);
	dst->history = json_incref(c->history);
}

static void pin(struct session_mgr *m, const char *id, bool on)
{
	pthread_mutex_lock(&m->lock);
	if (on) {
		json_array_append_new(m->pinned, json_string(id));
	} else {
		for (size_t i = 0; i < json_array_size(m->pinned); i++) {
			if (strcmp(json_string_value(json_array_get(m->pinned, i)), id) == 0) {
				json_array_remove(m->pinned, i);
				break;
			}
		}
	}
	pthread_mutex_unlock(&m->lock);
}

/* The settings a checkpoint keeps of s: what a rollback keeps and a fork copies. */
static json_t *settings_of(const struct session *s)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:I, s:f, s:s, s:s, s:s}", "image", s->image, "image_id", s->image_id,
			      "user", s->user, "memory_mb", (json_int_t)s->memory_mb, "cpus", s->cpus, "network",
			      s->network, "runtime", s->runtime, "engine", s->engine_name);
	if (s->egress)
		json_object_set_new(j, "egress", egress_request_json(s->egress));
	return j;
}

/* Holds what session_opts borrow while sessions are made from a checkpoint. */
struct plan {
	struct session_opts o;
	struct session_from from;
	char engine[ENGINES_NAME_MAX + 1];
};

/*
 * The options of a session made from c, with c's settings held to what this
 * server allows now (its network, egress ceiling, memory and CPU ceilings).
 */
static int plan_from(struct session_mgr *m, const struct checkpoint *c, struct plan *p, struct err *err)
{
	json_t *st = c->settings;
	const char *image = json_string_value(json_object_get(st, "image"));
	const char *image_id = json_string_value(json_object_get(st, "image_id"));
	const char *user = json_string_value(json_object_get(st, "user"));
	const char *network = json_string_value(json_object_get(st, "network"));
	json_t *egress = json_object_get(st, "egress");

	memset(p, 0, sizeof(*p));
	if (!image || !image_id || !session_user_valid(user) || !network)
		return err_set(err, ERRCODE_ENGINE_ERROR, -EINVAL,
			       "checkpoint %s carries no usable settings (made by an older server?): delete it", c->id);
	if (config_network_forbidden(network) || !config_network_allowed(m->cfg, network))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "checkpoint %s was taken of a session on network '%.60s', which this server does not "
			       "allow (SANDBOX_NETWORKS)",
			       c->id, network);
	int r = ceiling_session(m->cfg, json_object_get(st, "memory_mb"), json_object_get(st, "cpus"), &p->o.memory_mb,
				&p->o.cpus, err);
	if (r < 0)
		return err_append(err, r, " (the settings of checkpoint %s)", c->id);
	if (json_is_object(egress)) {
		struct policy pol;
		r = egress_policy_build(&m->egress, egress, &pol, err);
		policy_finish(&pol);
		if (r < 0)
			return err_append(err, r, " (the egress policy of checkpoint %s)", c->id);
		p->o.egress = egress;
	}
	snprintf(p->engine, sizeof(p->engine), "%s", c->engine_name);
	p->o.engine = p->engine;
	p->o.network = network;
	/* o.runtime NULL: the operator's runtime now, never the one recorded (SANDBOX_RUNTIME may have changed) */
	p->o.from = &p->from;
	p->from = (struct session_from){ .checkpoint = c->id,
					 .image_id = c->image_id,
					 .base_image = image,
					 .base_id = image_id,
					 .user = user,
					 .history = c->history,
					 .ready = c->agent_here };
	return 0;
}

int savepoint_list(struct session_mgr *m, struct call *call, const struct session *s, json_t **ret, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	size_t n;
	owner_of(call_principal(call), owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	json_t *out = json_array();
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < n; i++) {
		const struct checkpoint *c = &list[i];
		if (!c->tagged)
			continue; /* deleted, waiting for what rests on it */
		json_t *made = json_array();
		for (size_t k = 0; k < m->len; k++)
			if (session_owns(m->list[k], call_principal(call)) &&
			    strcmp(m->list[k]->checkpoint, c->id) == 0)
				json_array_append_new(made, json_string(m->list[k]->id));
		json_array_append_new(out,
				      json_pack("{s:s, s:s*, s:s, s:s*, s:s*, s:s, s:I, s:I, s:I, s:s, s:o, s:b}",
						"checkpoint_id", c->id, "name", c->name[0] ? c->name : NULL,
						"session_id", c->session, "session_name",
						c->session_name[0] ? c->session_name : NULL, "parent",
						c->parent[0] ? c->parent : NULL, "kind", checkpoint_kind_name(c->kind),
						"created", (json_int_t)c->created, "size", (json_int_t)c->size, "cells",
						(json_int_t)c->cells, "engine", c->engine_name, "sessions", made,
						"mine", s && strcmp(c->session, s->id) == 0));
	}
	pthread_mutex_unlock(&m->lock);
	checkpoint_list_free(list, n);
	*ret = out;
	return 0;
}

/* The caps of SANDBOX_SESSION_CHECKPOINTS, _MAX_CHECKPOINTS and _CHECKPOINT_MB, against owner's list. */
static int caps_check(struct session_mgr *m, const struct session *s, const struct checkpoint *list, size_t n,
		      const char *name, struct err *err)
{
	const struct config *cfg = m->cfg;
	uint64_t mine = 0, all = 0, bytes = 0;
	/* a deleted checkpoint a newer one rests on still holds its disk: it counts until it is gone */
	for (size_t i = 0; i < n; i++) {
		bool of_s = list[i].tagged && strcmp(list[i].session, s->id) == 0;
		mine += of_s;
		all++;
		bytes += (uint64_t)list[i].size;
		if (name && of_s && strcmp(list[i].name, name) == 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
				       "session %s has a checkpoint named '%s' already (%s): pick another name, or "
				       "delete that one first",
				       s->id, name, list[i].id);
	}
	if (mine >= cfg->session_checkpoints)
		return err_set(err, ERRCODE_TOO_LARGE, -ENOSPC,
			       "session %s has %llu checkpoints, its limit (SANDBOX_SESSION_CHECKPOINTS=%llu): delete "
			       "one with session_checkpoint {action: \"delete\"} first",
			       s->id, (unsigned long long)mine, (unsigned long long)cfg->session_checkpoints);
	if (all >= cfg->max_checkpoints)
		return err_set(err, ERRCODE_TOO_LARGE, -ENOSPC,
			       "you hold %llu checkpoints, the limit (SANDBOX_MAX_CHECKPOINTS=%llu): delete some with "
			       "session_checkpoint {action: \"delete\"} first",
			       (unsigned long long)all, (unsigned long long)cfg->max_checkpoints);
	if (bytes >= cfg->checkpoint_mb << 20)
		return err_set(err, ERRCODE_TOO_LARGE, -ENOSPC,
			       "your checkpoints hold %.1f MB, the limit (SANDBOX_CHECKPOINT_MB=%llu): delete some with "
			       "session_checkpoint {action: \"delete\"} first",
			       (double)bytes / 1048576.0, (unsigned long long)cfg->checkpoint_mb);
	return 0;
}

static int name_check(const char *name, struct err *err)
{
	if (!session_name_valid(name) || (strlen(name) == CHECKPOINT_ID_LEN && is_hex(name, CHECKPOINT_ID_LEN)))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "checkpoint name '%.80s' must be 1-63 letters, digits, '-', '_' or '.', and not look like "
			       "a checkpoint id (12 hex digits)",
			       name);
	return 0;
}

/* Commits s as a checkpoint, the caps checked under savepoint_lock so two at once cannot both pass. */
static int checkpoint_locked(struct session_mgr *m, struct call *call, struct session *s, const char *name,
			     enum checkpoint_kind kind, struct checkpoint *ret, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	json_t *container = NULL, *parent = NULL, *made = NULL;
	size_t n;
	owner_of(s->owner, owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	r = caps_check(m, s, list, n, name, err);
	checkpoint_list_free(list, n);
	if (r < 0)
		return r;
	struct engine *e = s->engine;
	if ((r = engine_container_inspect(e, call, s->container, &container, err)) < 0)
		return r;
	const char *parent_id = json_string_value(json_object_get(container, "Image"));
	if (!parent_id || (r = engine_image_inspect(e, call, parent_id, &parent, err)) < 0) {
		json_decref(container);
		return parent_id ? r : err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "the container names no image");
	}
	size_t layers = json_array_size(json_object_get(json_object_get(parent, "RootFS"), "Layers"));
	if (layers + 1 > m->cfg->max_layers) {
		json_decref(container);
		json_decref(parent);
		return err_set(err, ERRCODE_TOO_LARGE, -E2BIG,
			       "session %s rests on %zu layers already, and a checkpoint would pass SANDBOX_MAX_LAYERS "
			       "(%llu): session_export {build: true} makes a new base image of it in few layers",
			       s->id, layers, (unsigned long long)m->cfg->max_layers);
	}
	json_t *config = image_commit_config(parent, container);
	json_t *settings = settings_of(s);
	struct checkpoint_spec spec = { .name = name,
					.kind = kind,
					.owner = owner,
					.parent = s->checkpoint,
					.cells = pyrepl_cells(s->repl),
					.agent = s->agent_installed,
					.settings = settings,
					.history = s->history };
	session_forwards_hold(m, s, true); /* the commit pauses the container */
	r = checkpoint_make(e, call, s->container, s->id, s->name, config, &spec, ret, err);
	session_forwards_hold(m, s, false);
	json_decref(config);
	json_decref(settings);
	if (r == 0) {
		snprintf(ret->engine_name, sizeof(ret->engine_name), "%s", s->engine_name);
		ret->engine = e;
		struct err e2;
		if (engine_image_inspect(e, call, ret->image_id, &made, &e2) == 0) {
			int64_t whole = json_integer_value(json_object_get(made, "Size"));
			int64_t below = json_integer_value(json_object_get(parent, "Size"));
			ret->size = whole > below ? whole - below : whole;
		}
		atomic_store(&m->savepoints_used, true);
	}
	json_decref(made);
	json_decref(container);
	json_decref(parent);
	return r;
}

/*
 * Waits (10 s at most) for the start-up sweep: the caps count what is on the
 * engine, and checkpoints a dead server left for nothing go in that sweep.
 */
static void wait_swept(struct session_mgr *m)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&m->lock);
	while (!m->swept && !m->stopping && pthread_cond_timedwait(&m->wake, &m->lock, &until) == 0)
		;
	pthread_mutex_unlock(&m->lock);
}

int savepoint_checkpoint(struct session_mgr *m, struct call *call, struct session *s, const char *name,
			 enum checkpoint_kind kind, struct checkpoint *ret, struct err *err)
{
	if (s->read_only)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "session %s has a read-only root: its workspace is a volume, which a checkpoint cannot "
			       "hold, so it would miss your files. Make the session without read_only to use "
			       "checkpoints, or keep its work with session_export",
			       s->id);
	if (name && name_check(name, err) < 0)
		return -EINVAL;
	wait_swept(m);
	pthread_mutex_lock(&m->savepoint_lock);
	int r = checkpoint_locked(m, call, s, name, kind, ret, err);
	pthread_mutex_unlock(&m->savepoint_lock);
	if (r == 0)
		log_infof("session %s: checkpoint %s (%s) made", s->id, ret->id, checkpoint_kind_name(kind));
	return r;
}

int savepoint_delete(struct session_mgr *m, struct call *call, const char *ref, struct checkpoint *ret, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	size_t n;
	owner_of(call_principal(call), owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	const struct checkpoint *c = checkpoint_find(list, n, ref, NULL, err);
	r = c ? checkpoint_remove(c->engine, call, c, err) : -ENOENT;
	if (r == 0)
		checkpoint_copy(ret, c);
	checkpoint_list_free(list, n);
	return r;
}

/* Whether c is one s may roll back to: taken of s, or one its container descends from. */
static bool in_lineage(const struct checkpoint *list, size_t n, const struct session *s, const struct checkpoint *c)
{
	if (strcmp(c->session, s->id) == 0)
		return true;
	const char *cur = s->checkpoint;
	for (size_t steps = 0; cur[0] && steps <= n; steps++) {
		if (strcmp(cur, c->id) == 0)
			return true;
		const char *up = "";
		for (size_t i = 0; i < n; i++)
			if (strcmp(list[i].id, cur) == 0)
				up = list[i].parent;
		cur = up;
	}
	return false;
}

/*
 * Moves t's container (and what runs in it) into s and s's old one into t,
 * for the caller to remove with t. Waits for a resource read using s's
 * agent to let go of it first.
 */
static void swap_in(struct session_mgr *m, struct session *s, struct session *t)
{
	bool idle = false;
	while (!atomic_compare_exchange_weak(&s->agent_busy, &idle, true)) {
		idle = false;
		sched_yield();
	}
	pthread_mutex_lock(&m->lock);
	char old[ENGINE_ID_LEN + 1];
	memcpy(old, s->container, sizeof(old));
	memcpy(s->container, t->container, sizeof(s->container));
	memcpy(t->container, old, sizeof(t->container));
	memcpy(s->checkpoint, t->checkpoint, sizeof(s->checkpoint));
	memcpy(s->checkpoint_image, t->checkpoint_image, sizeof(s->checkpoint_image));
	/* each field whole, both ways: t leaves with what ran in the old container */
#define SWAP(f)                               \
	do {                                  \
		__typeof__(s->f) tmp_ = s->f; \
		s->f = t->f;                  \
		t->f = tmp_;                  \
	} while (0)
	SWAP(agent_installed);
	SWAP(agent);
	SWAP(repl);
	SWAP(history);
	SWAP(pip_jobs);
	SWAP(warnings);
#undef SWAP
	/* its forwards' new connections go to the new container from now on */
	for (unsigned i = 0; i < s->nforwards; i++)
		forward_rebind(s->forwards[i], s->container);
	/* the drop is set up again in the new container, on its first transfer */
	atomic_store(&s->drop_state, SESSION_DROP_UNKNOWN);
	atomic_store(&s->drop_made, 0u);
	atomic_store(&s->drop_dirty, 0u);
	s->paused = false;
	pthread_mutex_unlock(&m->lock);
	atomic_store(&s->agent_busy, false);
}

int savepoint_rollback(struct session_mgr *m, struct call *call, struct session *s, const char *ref,
		       struct checkpoint *ret, unsigned *cells, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	struct session *t = NULL;
	struct plan p;
	size_t n;
	owner_of(s->owner, owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	/* a name is the session's own checkpoint's; its lineage's others by id */
	const struct checkpoint *c = checkpoint_find(list, n, ref, s->id, err);
	if (c && (c->engine != s->engine || !in_lineage(list, n, s, c))) {
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EXDEV,
			"checkpoint %s was taken of session %s, not of session %s or what it was made from: "
			"session_fork {checkpoint: \"%s\"} makes a session from it",
			c->id, c->session, s->id, c->id);
		c = NULL;
	}
	if (!c) {
		checkpoint_list_free(list, n);
		return -ENOENT;
	}
	checkpoint_copy(ret, c);
	checkpoint_list_free(list, n);

	/* the session's own settings now, with the checkpoint's files */
	json_t *egress = s->egress ? egress_request_json(s->egress) : NULL;
	memset(&p, 0, sizeof(p));
	p.from = (struct session_from){ .checkpoint = ret->id,
					.image_id = ret->image_id,
					.base_image = s->image,
					.base_id = s->image_id,
					.user = s->user,
					.id = s->id,
					.history = ret->history,
					.ready = ret->agent_here };
	p.o = (struct session_opts){ .name = s->name,
				     .persistent = s->persistent,
				     .network = s->network,
				     .egress = egress,
				     .memory_mb = s->memory_mb,
				     .cpus = s->cpus,
				     .runtime = s->runtime[0] ? s->runtime : NULL,
				     .engine = s->engine_name,
				     .from = &p.from,
				     .no_relay = true };
	pin(m, ret->id, true);
	r = session_container_new(m, call, &p.o, s->image, s->network, false, &t, err);
	json_decref(egress);
	if (r == 0) {
		*cells = pyrepl_cells(s->repl);
		swap_in(m, s, t);
		session_remove_container(m, t); /* the old container, now t's */
		session_free(t);
		/*
		 * The session keeps its egress object, so readers beside the queue
		 * (session_egress, the egress resource) never see it freed, and a
		 * policy changed meanwhile stays; its relay moves to the new container.
		 */
		struct err e2;
		if (s->egress && egress_move(s->egress, s->engine, call, s->container, &e2) < 0)
			log_warnf("session %s: egress after the rollback: %s (the next call tries again)", s->id,
				  e2.msg);
		log_infof("session %s rolled back to checkpoint %s", s->id, ret->id);
	}
	pin(m, ret->id, false);
	if (r < 0)
		checkpoint_finish(ret);
	return r;
}

/* One session of a fork, made on a thread of its own. */
struct fork_one {
	struct session_mgr *m;
	struct session_opts o;
	const char *image, *network;
	struct session *s;
	struct err err;
	int r;
	pthread_t thread;
	bool threaded;
};

static void *fork_main(void *arg)
{
	struct fork_one *f = arg;
	/* no call: one call's cancel hook cannot stand for several threads at once */
	f->r = session_container_new(f->m, NULL, &f->o, f->image, f->network, false, &f->s, &f->err);
	return NULL;
}

/* Makes forks[0..n) in parallel batches. 0, or the first failure (its err copied to err). */
static int fork_make(struct fork_one *forks, size_t n, struct call *call, struct err *err)
{
	int r = 0;
	for (size_t i = 0; i < n; i += SAVEPOINT_FORK_PARALLEL) {
		size_t k = n - i < SAVEPOINT_FORK_PARALLEL ? n - i : SAVEPOINT_FORK_PARALLEL;
		for (size_t j = i; j < i + k; j++) {
			forks[j].threaded = r == 0 && !call_cancelled(call) &&
					    thread_create_nosig(&forks[j].thread, NULL, fork_main, &forks[j]) == 0;
			if (!forks[j].threaded && r == 0 && !call_cancelled(call))
				fork_main(&forks[j]);
			else if (!forks[j].threaded)
				forks[j].r = err_set(&forks[j].err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
		}
		for (size_t j = i; j < i + k; j++) {
			if (forks[j].threaded)
				pthread_join(forks[j].thread, NULL);
			if (forks[j].r < 0 && r == 0) {
				r = forks[j].r;
				*err = forks[j].err;
			}
		}
	}
	return r;
}

/* The forks' names, <base>-1..<base>-n, each a valid session name. */
static int fork_names(const char *base, unsigned n, char (*names)[SESSION_NAME_MAX + 1], struct err *err)
{
	for (unsigned i = 0; i < n; i++) {
		char suffix[16];
		int len = snprintf(suffix, sizeof(suffix), "-%u", i + 1);
		snprintf(names[i], SESSION_NAME_MAX + 1, "%.*s%s", SESSION_NAME_MAX - len, base, suffix);
		if (!session_name_valid(names[i]))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "name '%.80s' must be 1-60 letters, digits, '-', '_' or '.' (the forks add -1, "
				       "-2, ...)",
				       base);
	}
	return 0;
}

/* The checkpoint a fork starts from: ref among call's principal's, or s now (checkpointed for it). */
static int fork_source(struct session_mgr *m, struct call *call, struct session *s, const char *ref,
		       struct checkpoint *ret, bool *made, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	size_t n;
	*made = !ref;
	if (!ref)
		return savepoint_checkpoint(m, call, s, NULL, CHECKPOINT_FORK, ret, err);
	owner_of(call_principal(call), owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	const struct checkpoint *c = checkpoint_find(list, n, ref, NULL, err);
	if (c)
		checkpoint_copy(ret, c);
	checkpoint_list_free(list, n);
	return c ? 0 : -ENOENT;
}

/* Undoes a fork that failed: its containers, its places under the limits, a checkpoint made for it. */
static void fork_undo(struct session_mgr *m, struct fork_one *forks, struct pending *pend, size_t held,
		      const struct checkpoint *from, bool made)
{
	for (size_t i = 0; i < held; i++) {
		if (forks[i].r == 0 && forks[i].s) {
			session_remove_container(m, forks[i].s);
			session_free(forks[i].s);
			forks[i].s = NULL;
		}
		session_unreserve(m, &pend[i]);
	}
	struct err e2;
	if (made && checkpoint_remove(from->engine, NULL, from, &e2) < 0)
		log_warnf("fork: removing checkpoint %s made for it: %s", from->id, e2.msg);
}

int savepoint_fork(struct session_mgr *m, struct call *call, struct session *s, const char *ref, unsigned count,
		   const char *name, struct session ***ret, struct checkpoint *from, struct err *err)
{
	char(*names)[SESSION_NAME_MAX + 1] = NULL;
	struct fork_one *forks = NULL;
	struct pending *pend = NULL;
	struct plan p;
	size_t held = 0;
	bool made = false;
	int r;

	if (count < 1 || count > m->cfg->max_forks)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ERANGE,
			       "count must be 1 to %llu (SANDBOX_MAX_FORKS), not %u",
			       (unsigned long long)m->cfg->max_forks, count);
	if ((r = fork_source(m, call, s, ref, from, &made, err)) < 0)
		return r;
	const char *base = name && name[0]	   ? name
			   : !ref && s->name[0]	   ? s->name
			   : from->session_name[0] ? from->session_name
						   : from->id;
	names = xcalloc(count, sizeof(*names));
	forks = xcalloc(count, sizeof(*forks));
	pend = xcalloc(count, sizeof(*pend));
	if ((r = fork_names(base, count, names, err)) < 0 || (r = plan_from(m, from, &p, err)) < 0)
		goto undo;
	session_wait_ready(m);
	for (; held < count; held++) {
		pend[held] = (struct pending){ .name = names[held], .owner = call_principal(call) };
		if ((r = session_reserve(m, &p.o, &pend[held], err)) < 0)
			goto undo;
	}
	pin(m, from->id, true);
	for (size_t i = 0; i < count; i++) {
		forks[i] = (struct fork_one){ .m = m, .o = p.o, .image = p.from.base_image, .network = p.o.network };
		forks[i].o.name = names[i];
		forks[i].o.owner = call_principal(call);
	}
	r = fork_make(forks, count, call, err);
	pin(m, from->id, false);
	if (r < 0)
		goto undo;
	*ret = xcalloc(count, sizeof(**ret));
	for (size_t i = 0; i < count; i++) {
		if ((r = session_list_new(m, forks[i].s, &(*ret)[i], err)) < 0) {
			/* only when the server is exiting: its exit removes those listed */
			for (size_t j = i + 1; j < count; j++) {
				session_remove_container(m, forks[j].s);
				session_free(forks[j].s);
			}
			for (size_t j = 0; j < i; j++)
				session_put(m, (*ret)[j]);
			free(*ret);
			break;
		}
		session_unreserve(m, &pend[i]);
	}
	for (size_t i = 0; i < count; i++)
		session_unreserve(m, &pend[i]);
	if (r == 0)
		log_infof("forked %u sessions from checkpoint %s", count, from->id);
	free(names);
	free(forks);
	free(pend);
	if (r < 0)
		checkpoint_finish(from);
	return r;
undo:
	fork_undo(m, forks, pend, held, from, made);
	checkpoint_finish(from);
	free(names);
	free(forks);
	free(pend);
	return r;
}

int savepoint_open(struct session_mgr *m, struct call *call, const char *ref, struct session **ret,
		   struct checkpoint *from, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	struct session *s;
	struct plan p;
	size_t n;
	owner_of(call_principal(call), owner);
	int r = list_all(m, call, owner, &list, &n, err);
	if (r < 0)
		return r;
	const struct checkpoint *c = checkpoint_find(list, n, ref, NULL, err);
	if (c)
		checkpoint_copy(from, c);
	checkpoint_list_free(list, n);
	if (!c)
		return -ENOENT;
	if ((r = plan_from(m, from, &p, err)) < 0) {
		checkpoint_finish(from);
		return r;
	}
	p.o.transient = true;
	session_wait_ready(m);
	struct pending pend = { .owner = call_principal(call) };
	if ((r = session_reserve(m, &p.o, &pend, err)) < 0) {
		checkpoint_finish(from);
		return r;
	}
	pin(m, from->id, true);
	r = session_container_new(m, call, &p.o, p.from.base_image, p.o.network, false, &s, err);
	pin(m, from->id, false);
	if (r == 0)
		r = session_list_new(m, s, ret, err);
	session_unreserve(m, &pend);
	if (r < 0)
		checkpoint_finish(from);
	return r;
}

int savepoint_pause(struct session_mgr *m, struct call *call, struct session *s, struct err *err)
{
	/* held until the resume: an exec into a frozen container hangs */
	session_forwards_hold(m, s, true);
	int r = engine_container_pause(s->engine, call, s->container, err);
	if (r < 0) {
		session_forwards_hold(m, s, false);
		return r;
	}
	pthread_mutex_lock(&m->lock);
	s->paused = true;
	s->paused_at = session_now();
	pthread_mutex_unlock(&m->lock);
	log_infof("session %s paused", s->id);
	return 0;
}

int savepoint_resume(struct session_mgr *m, struct call *call, struct session *s, struct err *err)
{
	pthread_mutex_lock(&m->lock);
	bool was = s->paused;
	s->paused = false;
	pthread_mutex_unlock(&m->lock);
	if (!was)
		return 0;
	int r = engine_container_unpause(s->engine, call, s->container, err);
	session_forwards_hold(m, s, false);
	if (r == 0)
		log_infof("session %s resumed", s->id);
	return r;
}

/* owner's newest idle snapshot of a session with id or name ref, in list; NULL when none. */
static const struct checkpoint *snapshot_of(const struct checkpoint *list, size_t n, const char *ref)
{
	const struct checkpoint *best = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct checkpoint *c = &list[i];
		if (c->kind != CHECKPOINT_IDLE || !c->tagged ||
		    (strcmp(c->session, ref) != 0 && strcmp(c->session_name, ref) != 0))
			continue;
		if (!best || c->created_ms > best->created_ms ||
		    (c->created_ms == best->created_ms && strcmp(c->id, best->id) > 0))
			best = c;
	}
	return best;
}

/* Makes the session c was taken of again, listed; restore_lock held. */
static int restore_locked(struct session_mgr *m, struct call *call, const struct checkpoint *c, struct session **ret,
			  struct err *err)
{
	struct plan p;
	struct session *s;
	int r = plan_from(m, c, &p, err);
	if (r < 0)
		return r;
	p.from.id = c->session;
	p.o.name = c->session_name[0] ? c->session_name : NULL;
	p.o.default_session = p.o.name && strcmp(p.o.name, "default") == 0;
	struct pending pend = { .name = p.o.name, .owner = call_principal(call) };
	if ((r = session_reserve(m, &p.o, &pend, err)) < 0)
		return r;
	r = session_container_new(m, call, &p.o, p.from.base_image, p.o.network, false, &s, err);
	if (r == 0) {
		char when[32];
		struct tm tm;
		time_t t = (time_t)c->created;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&t, &tm));
		s->notice = c->cells
				    ? xasprintf("Session %s was closed for idleness and brought back from its snapshot "
						"of %s (checkpoint %s): files and packages are as they were; running "
						"processes and run_python's variables (cells 1-%u) were not kept.",
						s->id, when, c->id, c->cells)
				    : xasprintf("Session %s was closed for idleness and brought back from its snapshot "
						"of %s (checkpoint %s): files and packages are as they were; running "
						"processes were not kept.",
						s->id, when, c->id);
		r = session_list_new(m, s, ret, err);
	}
	session_unreserve(m, &pend);
	if (r == 0)
		log_infof("session %s brought back from idle snapshot %s", (*ret)->id, c->id);
	return r;
}

int savepoint_restore(struct session_mgr *m, struct call *call, const char *ref, struct session **ret, struct err *err)
{
	char owner[IMAGE_OWNER_MAX];
	struct checkpoint *list;
	size_t n;
	const char *want = ref ? ref : "default";
	owner_of(call_principal(call), owner);
	pthread_mutex_lock(&m->restore_lock);
	/* another call may have brought it back while this one waited */
	pthread_mutex_lock(&m->lock);
	struct session *s = session_find_locked(m, call_principal(call), want);
	if (s) {
		s->refs++;
		s->busy++;
		s->last_used = session_now();
	}
	pthread_mutex_unlock(&m->lock);
	int r = 0;
	if (s) {
		*ret = s;
	} else if ((r = list_all(m, call, owner, &list, &n, err)) == 0) {
		const struct checkpoint *c = snapshot_of(list, n, want);
		r = c ? restore_locked(m, call, c, ret, err) : -ENOENT;
		checkpoint_list_free(list, n);
	}
	pthread_mutex_unlock(&m->restore_lock);
	return r;
}

static json_t *pinned_copy(struct session_mgr *m)
{
	pthread_mutex_lock(&m->lock);
	json_t *p = json_deep_copy(m->pinned);
	pthread_mutex_unlock(&m->lock);
	return p;
}

void savepoint_closed(struct session_mgr *m, struct session *s, bool by_user)
{
	if (!atomic_load(&m->savepoints_used) && !s->checkpoint[0])
		return;
	if (by_user) {
		char owner[IMAGE_OWNER_MAX];
		struct checkpoint *list;
		size_t n;
		struct err err;
		owner_of(s->owner, owner);
		if (checkpoint_list(s->engine, NULL, owner, &list, &n, &err) == 0) {
			for (size_t i = 0; i < n; i++)
				if (list[i].kind == CHECKPOINT_IDLE && strcmp(list[i].session, s->id) == 0 &&
				    checkpoint_remove(s->engine, NULL, &list[i], &err) < 0)
					log_debugf("idle snapshot %s stays: %s", list[i].id, err.msg);
			checkpoint_list_free(list, n);
		}
	}
	json_t *pinned = pinned_copy(m);
	checkpoint_sweep(s->engine, pinned);
	json_decref(pinned);
}

void savepoint_sweep_all(struct session_mgr *m)
{
	json_t *pinned = pinned_copy(m);
	for (size_t i = 0; i < engines_count(m->engines); i++)
		if (checkpoint_sweep(engines_at(m->engines, i), pinned) > 0)
			atomic_store(&m->savepoints_used, true);
	json_decref(pinned);
}
