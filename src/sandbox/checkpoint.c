/*
 * checkpoint.c - checkpoints as labelled images on an engine: made by a
 * commit, read back from one image listing, found by id or name, removed,
 * and swept when nothing needs them (checkpoint.h).
 *
 * Labels are written once, at the commit; what changes later (whether a
 * checkpoint is still wanted) is decided from what the engine shows now:
 * the session's container, the containers made from the image, newer
 * checkpoints resting on it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/log.h"
#include "buildconf.h"
#include "engine/engine-image.h"
#include "sandbox/agentctl.h"
#include "sandbox/checkpoint.h"
#include "sandbox/image.h"

static const char *const kind_names[] = { "manual", "fork", "idle" };

const char *checkpoint_kind_name(enum checkpoint_kind k)
{
	return (unsigned)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "manual";
}

void checkpoint_finish(struct checkpoint *c)
{
	if (!c)
		return;
	json_decref(c->settings);
	json_decref(c->history);
	c->settings = c->history = NULL;
}

void checkpoint_list_free(struct checkpoint *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		checkpoint_finish(&list[i]);
	free(list);
}

static void label_copy(json_t *labels, const char *key, char *out, size_t outsz)
{
	const char *v = json_string_value(json_object_get(labels, key));
	snprintf(out, outsz, "%s", v ? v : "");
}

/* A JSON label as a value of type want (JSON_OBJECT, JSON_ARRAY); an empty one of that type when it is not. */
static json_t *label_json(json_t *labels, const char *key, json_type want)
{
	const char *v = json_string_value(json_object_get(labels, key));
	json_t *j = v ? json_loads(v, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (j && json_typeof(j) == want)
		return j;
	json_decref(j);
	return want == JSON_ARRAY ? json_array() : json_object();
}

/*
 * One listed image as a checkpoint; false when its labels do not make one
 * (another tool's image, or one whose id label was tampered with).
 */
static bool checkpoint_read(json_t *img, struct checkpoint *c)
{
	json_t *labels = json_object_get(img, "Labels");
	const char *id = json_string_value(json_object_get(labels, CHECKPOINT_LABEL));
	const char *iid = json_string_value(json_object_get(img, "Id"));
	uint64_t v = 0;

	memset(c, 0, sizeof(*c));
	if (!id || strlen(id) != CHECKPOINT_ID_LEN || !is_hex(id, CHECKPOINT_ID_LEN) || !iid)
		return false;
	memcpy(c->id, id, CHECKPOINT_ID_LEN + 1);
	snprintf(c->image_id, sizeof(c->image_id), "%s", iid);
	label_copy(labels, CHECKPOINT_LABEL_NAME, c->name, sizeof(c->name));
	label_copy(labels, CHECKPOINT_LABEL_SESSION, c->session, sizeof(c->session));
	label_copy(labels, CHECKPOINT_LABEL_SESSION_NAME, c->session_name, sizeof(c->session_name));
	label_copy(labels, CHECKPOINT_LABEL_PARENT, c->parent, sizeof(c->parent));
	label_copy(labels, IMAGE_LABEL_OWNER, c->owner, sizeof(c->owner));
	const char *kind = json_string_value(json_object_get(labels, CHECKPOINT_LABEL_KIND));
	for (size_t k = 0; kind && k < ARRAY_SIZE(kind_names); k++)
		if (strcmp(kind, kind_names[k]) == 0)
			c->kind = (enum checkpoint_kind)k;
	const char *created = json_string_value(json_object_get(labels, CHECKPOINT_LABEL_CREATED));
	if (created && parse_u64(created, 0, INT64_MAX, &v) == 0) {
		c->created_ms = (int64_t)v;
		c->created = c->created_ms / 1000;
	}
	const char *cells = json_string_value(json_object_get(labels, CHECKPOINT_LABEL_CELLS));
	if (cells && parse_u64(cells, 0, UINT32_MAX, &v) == 0)
		c->cells = (unsigned)v;
	char tag[sizeof(CHECKPOINT_REPOSITORY) + CHECKPOINT_ID_LEN + 2];
	snprintf(tag, sizeof(tag), CHECKPOINT_REPOSITORY ":%s", c->id);
	size_t i;
	json_t *t;
	/* in any spelling: Podman lists it as docker.io/library/NAME (or localhost/NAME) */
	json_array_foreach (json_object_get(img, "RepoTags"), i, t) {
		const char *name = json_string_value(t);
		if (name && strncmp(name, "localhost/", 10) == 0)
			name += 10;
		c->tagged = c->tagged || (name && image_same_ref(name, tag));
	}
	const char *agent = json_string_value(json_object_get(labels, CHECKPOINT_LABEL_AGENT));
	c->agent_here = agentctl_built() && agent && strcmp(agent, agentctl_build_id()) == 0;
	c->settings = label_json(labels, CHECKPOINT_LABEL_SETTINGS, JSON_OBJECT);
	c->history = label_json(labels, CHECKPOINT_LABEL_HISTORY, JSON_ARRAY);
	return true;
}

static int by_created(const void *a, const void *b)
{
	const struct checkpoint *x = a, *y = b;
	return x->created_ms < y->created_ms ? -1 : x->created_ms > y->created_ms ? 1 : strcmp(x->id, y->id);
}

/* The size of image id: from the listing when it is there, else asked for (the base image, once). */
static int64_t image_size(struct engine *e, struct call *call, json_t *list, const char *id, json_t *cache)
{
	size_t i;
	json_t *img;
	if (!id || !id[0])
		return 0;
	json_array_foreach (list, i, img) {
		const char *iid = json_string_value(json_object_get(img, "Id"));
		if (iid && strcmp(iid, id) == 0)
			return json_integer_value(json_object_get(img, "Size"));
	}
	json_t *known = json_object_get(cache, id);
	if (known)
		return json_integer_value(known);
	json_t *inspect = NULL;
	struct err err;
	int64_t size = 0;
	if (engine_image_inspect(e, call, id, &inspect, &err) == 0)
		size = json_integer_value(json_object_get(inspect, "Size"));
	json_decref(inspect);
	json_object_set_new(cache, id, json_integer(size));
	return size;
}

int checkpoint_list(struct engine *e, struct call *call, const char *owner, struct checkpoint **ret, size_t *n,
		    struct err *err)
{
	json_t *list = NULL, *img, *sizes = json_object();
	size_t i, k = 0;
	/* one principal's: the engine filters by owner, so others' labels are never read or counted */
	char by_owner[sizeof(IMAGE_LABEL_OWNER) + 160];
	snprintf(by_owner, sizeof(by_owner), IMAGE_LABEL_OWNER "=%s", owner ? owner : "");
	int r = engine_image_list(e, call, owner ? by_owner : CHECKPOINT_LABEL, &list, err);
	if (r < 0) {
		json_decref(sizes);
		return r;
	}
	struct checkpoint *out = xcalloc(json_array_size(list) + 1, sizeof(*out));
	json_array_foreach (list, i, img) {
		struct checkpoint *c = &out[k];
		if (!checkpoint_read(img, c))
			continue;
		if (owner && strcmp(c->owner, owner) != 0) {
			checkpoint_finish(c);
			continue;
		}
		/* what it adds: the engine's Size counts every layer below it too */
		const char *parent = json_string_value(json_object_get(img, "ParentId"));
		int64_t whole = json_integer_value(json_object_get(img, "Size"));
		int64_t below = image_size(e, call, list, parent, sizes);
		c->size = whole > below ? whole - below : whole;
		k++;
	}
	json_decref(list);
	json_decref(sizes);
	qsort(out, k, sizeof(*out), by_created);
	*ret = out;
	*n = k;
	return 0;
}

const struct checkpoint *checkpoint_find(const struct checkpoint *list, size_t n, const char *ref, const char *session,
					 struct err *err)
{
	const struct checkpoint *found = NULL;
	size_t named = 0;
	for (size_t i = 0; i < n; i++)
		if (list[i].tagged && strcmp(list[i].id, ref) == 0)
			return &list[i];
	for (size_t i = 0; i < n; i++) {
		if (!list[i].tagged || strcmp(list[i].name, ref) != 0 ||
		    (session && strcmp(list[i].session, session) != 0))
			continue;
		found = &list[i];
		named++;
	}
	if (named == 1)
		return found;
	if (named > 1)
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"%zu checkpoints are named '%.63s': name one by its id (session_checkpoint {action: \"list\"} "
			"shows them)",
			named, ref);
	else
		err_set(err, ERRCODE_CHECKPOINT_NOT_FOUND, -ENOENT,
			"no checkpoint '%.80s'%s: session_checkpoint {action: \"list\"} shows yours", ref,
			session ? " of this session" : "");
	return NULL;
}

/* Unix time in ms (the labels' clock: another server reads it). */
static int64_t now_wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void checkpoint_new_id(char out[CHECKPOINT_ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char raw[CHECKPOINT_ID_LEN / 2];
	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		int64_t t = now_us();
		memcpy(raw, &t, sizeof(raw) < sizeof(t) ? sizeof(raw) : sizeof(t));
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[CHECKPOINT_ID_LEN] = '\0';
}

/*
 * The steps of history, oldest first, as many as fit in
 * CHECKPOINT_HISTORY_MAX bytes of JSON, then {"kind":"truncated"} when some
 * did not (an export says where it was cut). New reference.
 */
static json_t *history_fitting(json_t *history)
{
	json_t *out = json_array(), *step;
	size_t i, used = 2 + 32; /* the brackets, and room for the marker */
	json_array_foreach (history, i, step) {
		char *one = json_dumps(step, JSON_COMPACT);
		size_t n = one ? strlen(one) + 1 : SIZE_MAX;
		free(one);
		if (n > CHECKPOINT_HISTORY_MAX - used) {
			json_array_append_new(out, json_pack("{s:s}", "kind", "truncated"));
			break;
		}
		used += n;
		json_array_append(out, step);
	}
	return out;
}

/* spec's labels on config (image_commit_config's), replacing any the parent image carried. */
static void checkpoint_labels(json_t *config, const char *id, const char *session_id, const char *session_name,
			      const struct checkpoint_spec *spec, int64_t created_ms)
{
	json_t *labels = json_object_get(config, "Labels");
	char num[24], ref[sizeof(CHECKPOINT_REPOSITORY) + CHECKPOINT_ID_LEN + 2];
	snprintf(ref, sizeof(ref), CHECKPOINT_REPOSITORY ":%s", id);
	json_object_set_new(labels, CHECKPOINT_LABEL, json_string(id));
	json_object_set_new(labels, CHECKPOINT_LABEL_NAME, json_string(spec->name ? spec->name : ""));
	json_object_set_new(labels, CHECKPOINT_LABEL_SESSION, json_string(session_id));
	json_object_set_new(labels, CHECKPOINT_LABEL_SESSION_NAME, json_string(session_name));
	json_object_set_new(labels, CHECKPOINT_LABEL_PARENT, json_string(spec->parent ? spec->parent : ""));
	json_object_set_new(labels, CHECKPOINT_LABEL_KIND, json_string(checkpoint_kind_name(spec->kind)));
	/* "" when the session had no agent installed: its image then holds none to reuse */
	json_object_set_new(labels, CHECKPOINT_LABEL_AGENT, json_string(spec->agent ? agentctl_build_id() : ""));
	snprintf(num, sizeof(num), "%lld", (long long)created_ms);
	json_object_set_new(labels, CHECKPOINT_LABEL_CREATED, json_string(num));
	snprintf(num, sizeof(num), "%u", spec->cells);
	json_object_set_new(labels, CHECKPOINT_LABEL_CELLS, json_string(num));
	char *text = json_dumps(spec->settings, JSON_COMPACT | JSON_SORT_KEYS);
	json_object_set_new(labels, CHECKPOINT_LABEL_SETTINGS, json_string(text ? text : "{}"));
	free(text);
	json_t *history = history_fitting(spec->history);
	text = json_dumps(history, JSON_COMPACT);
	json_object_set_new(labels, CHECKPOINT_LABEL_HISTORY, json_string(text ? text : "[]"));
	free(text);
	json_decref(history);
	/* what image.h's owner rules read: a checkpoint is usable by its owner alone */
	json_object_set_new(labels, IMAGE_LABEL_OWNER, json_string(spec->owner));
	json_object_set_new(labels, IMAGE_LABEL_SESSION, json_string(session_id));
	json_object_set_new(labels, IMAGE_LABEL_REF, json_string(ref));
	json_object_set_new(labels, IMAGE_LABEL_VERSION, json_string(SANDBOX_VERSION));
}

int checkpoint_make(struct engine *e, struct call *call, const char *container, const char *session_id,
		    const char *session_name, json_t *config, const struct checkpoint_spec *spec,
		    struct checkpoint *ret, struct err *err)
{
	char id[CHECKPOINT_ID_LEN + 1], image[ENGINE_IMAGE_ID_MAX];
	int64_t created_ms = now_wall_ms();
	checkpoint_new_id(id);
	checkpoint_labels(config, id, session_id, session_name, spec, created_ms);
	int r = image_commit(e, call, container, CHECKPOINT_REPOSITORY, id, "sandbox-mcp checkpoint", config, image,
			     err);
	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->id, id, sizeof(id));
	snprintf(ret->image_id, sizeof(ret->image_id), "%s", image);
	snprintf(ret->name, sizeof(ret->name), "%s", spec->name ? spec->name : "");
	snprintf(ret->session, sizeof(ret->session), "%s", session_id);
	snprintf(ret->session_name, sizeof(ret->session_name), "%s", session_name);
	snprintf(ret->parent, sizeof(ret->parent), "%s", spec->parent ? spec->parent : "");
	snprintf(ret->owner, sizeof(ret->owner), "%s", spec->owner);
	ret->kind = spec->kind;
	ret->created_ms = created_ms;
	ret->created = created_ms / 1000;
	ret->cells = spec->cells;
	ret->tagged = true;
	ret->agent_here = spec->agent && agentctl_built();
	ret->settings = json_incref(spec->settings);
	ret->history = spec->history ? json_deep_copy(spec->history) : json_array();
	return 0;
}

int checkpoint_remove(struct engine *e, struct call *call, const struct checkpoint *c, struct err *err)
{
	char tag[sizeof(CHECKPOINT_REPOSITORY) + CHECKPOINT_ID_LEN + 2];
	snprintf(tag, sizeof(tag), CHECKPOINT_REPOSITORY ":%s", c->id);
	/*
	 * By its tag: the engine then refuses while a container uses the
	 * image, and once a newer checkpoint rests on it, untags it and
	 * removes it with the last of them (its parents are pruned).
	 */
	int r = engine_image_remove(e, call, c->tagged ? tag : c->image_id, err);
	if (r < 0 && err->code == ERRCODE_ENGINE_ERROR && (strstr(err->msg, "is using") || strstr(err->msg, "in use")))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EBUSY,
			       "checkpoint %s is what a live session was made from (a fork, or a session rolled back "
			       "to it): close that session first (session_checkpoint {action: \"list\"} names them)",
			       c->id);
	return r;
}

/* Whether ids (an array of strings) holds id. */
static bool holds(const json_t *ids, const char *id)
{
	size_t i;
	json_t *v;
	json_array_foreach (ids, i, v)
		if (json_string_value(v) && strcmp(json_string_value(v), id) == 0)
			return true;
	return false;
}

/* Whether an idle snapshot is the latest of its session: an older one gives way to it. */
static bool superseded(const struct checkpoint *list, size_t n, const struct checkpoint *c)
{
	for (size_t i = 0; i < n; i++)
		if (&list[i] != c && list[i].kind == CHECKPOINT_IDLE && list[i].tagged &&
		    strcmp(list[i].session, c->session) == 0 && strcmp(list[i].owner, c->owner) == 0 &&
		    (list[i].created_ms > c->created_ms ||
		     (list[i].created_ms == c->created_ms && strcmp(list[i].id, c->id) > 0)))
			return true;
	return false;
}

size_t checkpoint_sweep(struct engine *e, const json_t *pinned)
{
	struct checkpoint *list = NULL;
	json_t *containers = NULL, *live = json_array(), *c;
	size_t n = 0, i;
	struct err err;

	if (checkpoint_list(e, NULL, NULL, &list, &n, &err) < 0 || n == 0 ||
	    engine_container_list(e, NULL, SESSION_LABEL ".session", &containers, &err) < 0) {
		if (n)
			log_warnf("checkpoints: cannot list the sessions to sweep by: %s", err.msg);
		checkpoint_list_free(list, n);
		json_decref(live);
		return n;
	}
	json_array_foreach (containers, i, c)
		json_array_append(live, json_object_get(json_object_get(c, "Labels"), SESSION_LABEL ".session"));
	json_decref(containers);
	/* a session closed with an idle snapshot comes back with its id: its other checkpoints wait for it */
	json_t *asleep = json_array();
	for (size_t k = 0; k < n; k++)
		if (list[k].kind == CHECKPOINT_IDLE && list[k].tagged)
			json_array_append_new(asleep, json_string(list[k].session));
	/* newest first: a checkpoint's children go before it, so the engine can prune it with them */
	for (size_t k = n; k-- > 0;) {
		const struct checkpoint *ck = &list[k];
		bool idle = ck->kind == CHECKPOINT_IDLE;
		bool wanted = holds(pinned, ck->id) || holds(live, ck->session) ||
			      (!idle && holds(asleep, ck->session)) || (idle && !superseded(list, n, ck));
		if (wanted || !ck->tagged)
			continue;
		if (checkpoint_remove(e, NULL, ck, &err) < 0)
			log_debugf("checkpoint %s stays: %s", ck->id, err.msg);
		else
			log_infof("removed checkpoint %s of closed session %s", ck->id, ck->session);
	}
	checkpoint_list_free(list, n);
	json_decref(live);
	json_decref(asleep);
	return n;
}
