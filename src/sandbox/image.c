/*
 * image.c - image references, tags and Dockerfile instructions for
 * session_commit and session_export.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "buildconf.h"
#include "config/imageref.h"
#include "engine/compat.h"
#include "engine/engine-image.h"
#include "sandbox/checkpoint.h"
#include "sandbox/image.h"

/*
 * A repository is a reference without tag or digest: imageref's grammar
 * (docker's), so what the engine would refuse is refused before it is asked.
 */
int image_repository_check(const char *repo, struct err *err)
{
	struct imageref r;
	struct err ignored;
	size_t n = strlen(repo);
	const char *last = strrchr(repo, '/');
	bool tagged = strchr(last ? last : repo, ':') || strchr(repo, '@');

	if (n == 0 || n > IMAGE_REF_MAX || tagged || imageref_parse(repo, n, &r, &ignored) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "repository '%.100s' is not a valid image name: use lowercase letters, digits and '.', "
			       "'_', '-' between them, components separated by '/' (e.g. my-project/analysis), at most "
			       "%d characters",
			       repo, IMAGE_REF_MAX);
	return 0;
}

int image_tag_check(const char *tag, struct err *err)
{
	if (!imageref_tag_ok(tag, strlen(tag)))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "tag '%.140s' is not a valid image tag: 1-%d letters, digits, '_', '.' or '-', not starting "
			       "with '.' or '-'",
			       tag, IMAGE_TAG_MAX);
	return 0;
}

void image_default_tag(char *out, size_t outsz)
{
	char stamp[32];
	uint32_t rnd = 0;
	time_t now = time(NULL);
	struct tm tm;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (uint32_t)now ^ (uint32_t)(uintptr_t)out ^ (uint32_t)getpid();
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", gmtime_r(&now, &tm));
	snprintf(out, outsz, "%s-%08x", stamp, (unsigned)rnd);
}

void image_owner(const char *principal, char *out, size_t outsz)
{
	if (principal && principal[0])
		snprintf(out, outsz, "uid=%u,token=%s", (unsigned)getuid(), principal);
	else
		snprintf(out, outsz, "uid=%u", (unsigned)getuid());
}

/* The owner label: NULL when sandbox-mcp did not make the image, "-" when it made it before owners. */
static const char *owner_of(json_t *labels)
{
	const char *owner = json_string_value(json_object_get(labels, IMAGE_LABEL_OWNER));
	if (owner)
		return owner;
	const char *session = json_string_value(json_object_get(labels, IMAGE_LABEL_SESSION));
	return session && session[0] ? "-" : NULL;
}

bool image_usable(json_t *labels, const char *principal)
{
	char mine[IMAGE_OWNER_MAX];
	const char *owner = owner_of(labels);
	if (!owner || !owner[0])
		return true;
	if (strcmp(owner, "-") == 0)
		return !principal || !principal[0];
	image_owner(principal, mine, sizeof(mine));
	return strcmp(owner, mine) == 0;
}

/* Whether principal's commits may replace the image: its own, not merely usable. */
static bool owned(json_t *labels, const char *principal)
{
	const char *owner = owner_of(labels);
	return owner && owner[0] && image_usable(labels, principal);
}

/* Path against a pattern's path, component by component; a component ending in '*' matches any rest of one. */
static bool path_matches(const char *path, const char *pat)
{
	for (;;) {
		size_t pn = strcspn(pat, "/"), n = strcspn(path, "/");
		bool star = pn > 0 && pat[pn - 1] == '*';
		if (star ? n < pn - 1 || strncmp(path, pat, pn - 1) != 0 : n != pn || strncmp(path, pat, n) != 0)
			return false;
		if (!pat[pn] || !path[n])
			return !pat[pn] && !path[n];
		pat += pn + 1;
		path += n + 1;
	}
}

bool image_repo_matches(const char *repo, const char *patterns)
{
	char host[IMAGE_REF_MAX + 1], path[IMAGE_REF_MAX + 16], pat[IMAGE_REF_MAX + 1];
	char phost[IMAGE_REF_MAX + 1], ppath[IMAGE_REF_MAX + 16];

	/* a name too long to split matches nothing but "*" */
	bool split = imageref_split_repo(repo, host, sizeof(host), path, sizeof(path));
	for (const char *p = patterns; *p;) {
		size_t n = strcspn(p, ",");
		if (n == 1 && p[0] == '*')
			return true; /* everything, on purpose */
		if (split && n > 0 && n <= IMAGE_REF_MAX) {
			snprintf(pat, sizeof(pat), "%.*s", (int)n, p);
			/* a pattern is spelled like a repository, its registry explicit or Docker Hub's */
			if (imageref_split_repo(pat, phost, sizeof(phost), ppath, sizeof(ppath)) &&
			    strcmp(host, phost) == 0 && path_matches(path, ppath))
				return true;
		}
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

int image_ref_allowed(const struct config *cfg, const char *repo, struct err *err)
{
	if (image_repo_matches(repo, CHECKPOINT_REPOSITORY))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "repository '%.100s' holds the server's checkpoints (session_checkpoint), which a commit "
			       "or an export never replaces: omit repository for the default, or pick another",
			       repo);
	if (!image_repo_matches(repo, cfg->commit_repos))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "repository '%.100s' is not one session_commit and session_export may create: they tag only "
			       "repositories matching SANDBOX_COMMIT_REPOS (%.60s), so that no image a user or tool pulls "
			       "by name can be replaced. Omit repository for the default, or pick one that matches; the "
			       "operator may widen SANDBOX_COMMIT_REPOS",
			       repo, cfg->commit_repos);
	return 0;
}

/*
 * ref in imageref's normal form (registry lowercased), for comparing: the
 * digest, if any, is kept as written and a digest alone has no tag. False
 * when the name is not a reference.
 */
static bool canonical(const char *ref, char *out, size_t outsz)
{
	struct imageref r;
	struct err ignored;
	const char *at = strchr(ref, '@');
	size_t n = at ? (size_t)(at - ref) : strlen(ref);
	const char *last = memrchr(ref, '/', n);
	bool tagged = memchr(last ? last : ref, ':', n - (size_t)((last ? last : ref) - ref)) != NULL;

	if (imageref_parse(ref, n, &r, &ignored) < 0)
		return false;
	for (char *c = r.domain; *c; c++)
		if (*c >= 'A' && *c <= 'Z')
			*c = (char)(*c - 'A' + 'a');
	if (at && !tagged)
		r.tag[0] = '\0';
	imageref_format(&r, out, outsz);
	snprintf(out + strlen(out), outsz - strlen(out), "%s", at ? at : "");
	return true;
}

bool image_same_ref(const char *a, const char *b)
{
	char na[IMAGEREF_INPUT_MAX + IMAGEREF_FORMAT_MAX], nb[IMAGEREF_INPUT_MAX + IMAGEREF_FORMAT_MAX];
	if (!canonical(a, na, sizeof(na)) || !canonical(b, nb, sizeof(nb)))
		return strcmp(a, b) == 0;
	return strcmp(na, nb) == 0;
}

int image_quote(const char *s, struct buf *out)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return -EINVAL;
	buf_append_str(out, "\"");
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\' || *p == '$')
			buf_append_str(out, "\\");
		buf_append(out, p, 1);
	}
	return buf_append_str(out, "\"");
}

/* A value's (or label key's) quoting for one engine's changes parser; -EINVAL when it cannot carry s. */
typedef int (*quote_fn)(const char *s, struct buf *out);

static json_t *changes_quoted(json_t *config, quote_fn quote, quote_fn quote_key)
{
	json_t *out = json_array();
	struct buf b;
	const char *key;
	json_t *v;
	size_t i;

	buf_init(&b, 1u << 20);
#define EMIT()                                                           \
	do {                                                             \
		json_array_append_new(out, json_stringn(b.data, b.len)); \
		buf_reset(&b);                                           \
	} while (0)
	const char *user = json_string_value(json_object_get(config, "User"));
	if (user && *user && !strpbrk(user, "\n\r")) {
		buf_printf(&b, "USER %s", user);
		EMIT();
	}
	const char *wd = json_string_value(json_object_get(config, "WorkingDir"));
	if (wd && *wd && !strpbrk(wd, "\n\r")) {
		buf_printf(&b, "WORKDIR %s", wd);
		EMIT();
	}
	json_array_foreach (json_object_get(config, "Env"), i, v) {
		const char *kv = json_string_value(v);
		const char *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv)
			continue;
		buf_printf(&b, "ENV %.*s=", (int)(eq - kv), kv);
		if (quote(eq + 1, &b) < 0) {
			buf_reset(&b);
			continue;
		}
		EMIT();
	}
	const char *cmds[] = { "Entrypoint", "Cmd" };
	const char *words[] = { "ENTRYPOINT", "CMD" };
	for (size_t k = 0; k < 2; k++) {
		json_t *a = json_object_get(config, cmds[k]);
		if (!json_is_array(a) || json_array_size(a) == 0)
			continue;
		char *j = json_dumps(a, JSON_COMPACT);
		if (j && !strpbrk(j, "\n\r")) {
			buf_printf(&b, "%s %s", words[k], j);
			EMIT();
		}
		free(j);
	}
	json_object_foreach (json_object_get(config, "Labels"), key, v) {
		const char *val = json_string_value(v);
		buf_append_str(&b, "LABEL ");
		if (!val || quote_key(key, &b) < 0 || buf_append_str(&b, "=") < 0 || quote(val, &b) < 0) {
			buf_reset(&b);
			continue;
		}
		EMIT();
	}
#undef EMIT
	buf_finish(&b);
	return out;
}

json_t *image_changes(json_t *config)
{
	return changes_quoted(config, image_quote, image_quote);
}

json_t *image_changes_podman(json_t *config)
{
	return changes_quoted(config, compat_podman_quote, compat_podman_key);
}

const char **image_changes_argv(json_t *changes)
{
	size_t n = json_array_size(changes);
	const char **argv = xcalloc(n + 1, sizeof(*argv));
	for (size_t i = 0; i < n; i++)
		argv[i] = json_string_value(json_array_get(changes, i));
	return argv;
}

int image_commit(struct engine *e, struct call *call, const char *container_id, const char *repo, const char *tag,
		 const char *comment, json_t *config, char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	/* Podman ignores the body's config; Docker gets only the body, as it always did */
	json_t *changes = engine_is_podman(e) ? image_changes_podman(config) : json_array();
	const char **argv = image_changes_argv(changes);
	int r = engine_commit(e, call, container_id, repo, tag, comment, config, argv, ret_id, err);
	free(argv);
	json_decref(changes);
	return r;
}

bool image_replaceable(json_t *labels, const char *ref)
{
	const char *made_as = json_string_value(json_object_get(labels, IMAGE_LABEL_REF));
	return json_is_string(json_object_get(labels, IMAGE_LABEL_SESSION)) && made_as && image_same_ref(made_as, ref);
}

int image_target_check(struct engine *e, struct call *call, const struct config *cfg, const char *ref,
		       const struct session *s, const char *parent_id, struct err *err)
{
	json_t *existing = NULL;

	if (image_same_ref(ref, s->image))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			       "%s is the image session %s started from, and it is never replaced: pass another tag "
			       "(or omit tag for a unique one)",
			       s->image, s->id);
	/* sessions without an image start this one: a tag it does not have yet must not be planted either */
	if (image_same_ref(ref, cfg->image) || image_same_ref(ref, SANDBOX_DEFAULT_IMAGE))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "%.200s is the image new sessions start from (SANDBOX_IMAGE), which session_commit and "
			       "session_export never tag, whatever SANDBOX_COMMIT_REPOS allows: pass another tag",
			       ref);
	int r = engine_image_inspect(e, call, ref, &existing, err);
	if (r < 0)
		return err->code == ERRCODE_IMAGE_NOT_FOUND ? 0 : r;
	const char *eid = json_string_value(json_object_get(existing, "Id"));
	json_t *labels = json_object_get(json_object_get(existing, "Config"), "Labels");
	if (eid && strcmp(eid, parent_id) == 0)
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			    "%s names the image session %s started from, and it is never replaced: pass another tag (or "
			    "omit tag for a unique one)",
			    ref, s->id);
	else if (!image_replaceable(labels, ref) || !owned(labels, call_principal(call)))
		/* an image built FROM one of ours inherits its labels: the tag it was made under tells them apart */
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			    "%s already exists and was not made under that name by session_commit or session_export (of this "
			    "principal), so it is not replaced: pass another repository or tag (or omit tag for a unique one)",
			    ref);
	json_decref(existing);
	return r;
}

json_t *image_commit_config(json_t *image, json_t *container)
{
	json_t *pc = json_object_get(image, "Config");
	json_t *cc = json_object_get(container, "Config");
	json_t *cfg = json_object();
	const char *user = json_string_value(json_object_get(pc, "User"));
	const char *wd = json_string_value(json_object_get(pc, "WorkingDir"));
	json_t *v;

	/* empty values would be filled in from the container: say the defaults outright */
	json_object_set_new(cfg, "User", json_string(user && *user ? user : "root"));
	json_object_set_new(cfg, "WorkingDir", json_string(wd && *wd ? wd : "/"));
	v = json_object_get(pc, "Entrypoint");
	json_object_set_new(cfg, "Entrypoint", json_is_array(v) ? json_deep_copy(v) : json_array());
	v = json_object_get(pc, "Cmd");
	json_object_set_new(cfg, "Cmd", json_is_array(v) ? json_deep_copy(v) : json_array());
	/* the engine adds the container's variables (the session's env) to these */
	v = json_object_get(pc, "Env");
	if (json_is_array(v))
		json_object_set_new(cfg, "Env", json_deep_copy(v));

	json_t *plabels = json_object_get(pc, "Labels");
	json_t *labels = json_is_object(plabels) ? json_deep_copy(plabels) : json_object();
	const char *key;
	json_object_foreach (json_object_get(cc, "Labels"), key, v) {
		if (strncmp(key, SESSION_LABEL, strlen(SESSION_LABEL)) != 0)
			continue;
		const char *pv = json_string_value(json_object_get(plabels, key));
		json_object_set_new(labels, key, json_string(pv ? pv : ""));
	}
	/* a checkpoint's labels say what only checkpoint_make may say: an image made from one is none */
	json_object_foreach (labels, key, v)
		if (strncmp(key, CHECKPOINT_LABEL, strlen(CHECKPOINT_LABEL)) == 0)
			json_object_set_new(labels, key, json_string(""));
	json_object_set_new(cfg, "Labels", labels);
	return cfg;
}

int image_tag_checked(struct engine *e, struct call *call, const struct config *cfg, const char *id, const char *repo,
		      const char *tag, const struct session *s, const char *parent_id, struct err *err)
{
	char ref[IMAGE_REF_MAX + IMAGE_TAG_MAX + 2];
	snprintf(ref, sizeof(ref), "%s:%s", repo, tag);
	int r = image_target_check(e, call, cfg, ref, s, parent_id, err);
	if (r == 0)
		r = engine_image_tag(e, call, id, repo, tag, err);
	return r;
}

void image_remove_labelled(struct engine *e, const char *label)
{
	struct err err;
	/* two passes: an image whose child is listed after it goes once the child is gone */
	for (int pass = 0; pass < 2; pass++) {
		json_t *list = NULL, *v;
		size_t i, left = 0;
		if (engine_image_list(e, NULL, label, &list, &err) < 0) {
			log_debugf("image: listing the images labelled %s: %s", label, err.msg);
			return;
		}
		json_array_foreach (list, i, v) {
			const char *id = json_string_value(json_object_get(v, "Id"));
			json_t *t;
			size_t k;
			bool tagged = false;
			json_array_foreach (json_object_get(v, "RepoTags"), k, t)
				tagged = tagged ||
					 (json_is_string(t) && strcmp(json_string_value(t), "<none>:<none>") != 0);
			if (!id || tagged)
				continue;
			if (engine_image_remove(e, NULL, id, &err) < 0) {
				left++;
				log_debugf("image: leaving %.19s (labelled %s): %s", id, label, err.msg);
			}
		}
		json_decref(list);
		if (!left)
			return;
	}
}
