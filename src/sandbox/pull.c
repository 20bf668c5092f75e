/*
 * pull.c - the policy check, the pull and its progress for session images.
 *
 * Order matters: the reference is parsed and held against SANDBOX_IMAGES
 * first, so a refused reference never reaches the engine, let alone a
 * registry. The configured default image (SANDBOX_IMAGE) is the operator's
 * own choice and always allowed; an image id can only be checked under the
 * default policy (any local image).
 *
 * The engine's pull stream is one JSON message per layer event (Pulling fs
 * layer, Downloading {current,total}, Download complete, Pull complete,
 * Already exists); it is read line by line (engine.c read_messages) and
 * folded into a fixed table of layers, so the server's memory does not grow
 * with the image.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "buildconf.h"
#include "config/imageref.h"
#include "engine/engine-image.h"
#include "engine/regauth.h"
#include "sandbox/image.h"
#include "sandbox/pull.h"

struct layer {
	char id[72];
	uint64_t current, total;
	bool done;
};

struct progress {
	struct layer layers[PULL_LAYERS_MAX];
	size_t n, done, extra; /* extra: layers past the table */
	const char *ref;
	pull_report_fn report;
	void *arg;
	int64_t last_ms;
};

static void on_message(void *arg, json_t *msg);
static int pull_failed(const char *ref, const char *domain, bool with_auth, struct err *err);

static bool is_cfg_image(const struct config *cfg, const char *image)
{
	return strcmp(image, cfg->image) == 0;
}

bool pull_allowed_local(const struct config *cfg, const char *image)
{
	struct imageref r;
	struct err err;
	size_t n = strlen(image);

	if (is_cfg_image(cfg, image))
		return true;
	if (imageref_is_id(image, n))
		return !cfg->images[0];
	return imageref_parse(image, n, &r, &err) == 0 && imageref_allowed(cfg->images, &r, false);
}

static struct layer *layer_find(struct progress *p, const char *id)
{
	for (size_t i = 0; i < p->n; i++)
		if (strcmp(p->layers[i].id, id) == 0)
			return &p->layers[i];
	if (p->n == PULL_LAYERS_MAX) {
		p->extra++;
		return NULL;
	}
	struct layer *l = &p->layers[p->n++];
	memset(l, 0, sizeof(*l));
	snprintf(l->id, sizeof(l->id), "%s", id);
	return l;
}

/* Folds one message into the table and reports, at most every PULL_PROGRESS_MS unless a layer finished. */
static void on_message(void *arg, json_t *msg)
{
	struct progress *p = arg;
	const char *status = json_string_value(json_object_get(msg, "status"));
	const char *id = json_string_value(json_object_get(msg, "id"));
	json_t *detail = json_object_get(msg, "progressDetail");
	bool finished = false;

	if (!status || !id || strlen(id) >= sizeof(p->layers[0].id) || strncmp(status, "Pulling from", 12) == 0)
		return;
	struct layer *l = layer_find(p, id);
	if (!l)
		return;
	if (strcmp(status, "Downloading") == 0) {
		json_int_t cur = json_integer_value(json_object_get(detail, "current"));
		json_int_t tot = json_integer_value(json_object_get(detail, "total"));
		if (cur > 0 && (uint64_t)cur > l->current)
			l->current = (uint64_t)cur;
		if (tot > 0)
			l->total = (uint64_t)tot;
	} else if (strcmp(status, "Download complete") == 0) {
		l->current = l->total;
	} else if ((strcmp(status, "Pull complete") == 0 || strcmp(status, "Already exists") == 0) && !l->done) {
		l->done = true;
		l->current = l->total;
		p->done++;
		finished = true;
	}
	int64_t now = now_ms();
	if (!p->report || (!finished && now - p->last_ms < PULL_PROGRESS_MS))
		return;
	p->last_ms = now;
	uint64_t cur = 0, tot = 0;
	for (size_t i = 0; i < p->n; i++) {
		cur += p->layers[i].current;
		tot += p->layers[i].total;
	}
	char line[256];
	snprintf(line, sizeof(line), "pulling %.120s: %zu/%zu layers, %.1f of %.1f MB", p->ref, p->done,
		 p->n + p->extra, (double)cur / 1e6, (double)tot / 1e6);
	/* progress must grow: a finished layer with no new bytes still counts, and so does the start (1) */
	p->report(p->arg, (double)cur + (double)p->done + 1, tot ? (double)tot + (double)(p->n + p->extra) + 1 : 0,
		  line);
}

/* Turns the engine's pull failure in err into one that says what to do. Returns err's ret. */
static int pull_failed(const char *ref, const char *domain, bool with_auth, struct err *err)
{
	char why[sizeof(err->msg)];
	int r = -ENOENT;

	if (err->code == ERRCODE_CANCELLED || err->code == ERRCODE_TIMEOUT || err->code == ERRCODE_DOCKER_UNAVAILABLE)
		return -ETIMEDOUT;
	/* the engine's words without the generic "try again" hint: the registry's reason is what helps */
	const char *msg = strncmp(err->msg, "Docker engine error ", 20) == 0 && strstr(err->msg, ": ")
				  ? strstr(err->msg, ": ") + 2
				  : err->msg;
	snprintf(why, sizeof(why), "%s", msg);
	char *hint = strstr(why, "; try again");
	if (hint)
		*hint = '\0';
	if (strstr(why, "no matching manifest"))
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r,
			       "%s has no image for this Docker engine's platform (see env_info engine.os/arch): pick a "
			       "tag built for it (the registry said: %.150s)",
			       ref, why);
	if (strstr(why, "unauthorized") || strstr(why, "authentication required") || strstr(why, "denied"))
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r,
			       "the registry %s refused %s%s (the registry said: %.150s)", domain, ref,
			       with_auth ? " with the credentials in the server's docker config (fix them with "
					   "`docker login`, or DOCKER_CONFIG)"
					 : " without credentials (run `docker login` for the server's user, or set "
					   "DOCKER_CONFIG)",
			       why);
	if (strstr(why, "not found") || strstr(why, "manifest unknown") || strstr(why, "name unknown"))
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r,
			       "the registry %s has no %s: check the repository and tag (the registry said: %.180s)",
			       domain, ref, why);
	return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r, "pulling %s failed: %.180s", ref, why);
}

/* Pulls r (named ref in messages), reporting progress. 0 or -errno with err. */
static int do_pull(struct engine *e, struct call *call, const struct imageref *r, const char *ref,
		   pull_report_fn report, void *arg, struct err *err)
{
	char from[IMAGEREF_NAME_MAX + 2];
	_cleanup_free_ char *auth = NULL;
	struct progress *p = xcalloc(1, sizeof(*p));

	snprintf(from, sizeof(from), "%s/%s", r->domain, r->path);
	int rc = regauth_header(r->domain, &auth, err);
	if (rc < 0) {
		free(p);
		return rc;
	}
	p->ref = ref;
	p->report = report;
	p->arg = arg;
	if (report) {
		/* at once, before the registry answers: the manifest alone may take a while */
		char line[256];
		snprintf(line, sizeof(line), "pulling %.120s", ref);
		report(arg, 1, 0, line);
	}
	rc = engine_image_pull(e, call, from, r->digest[0] ? r->digest : r->tag, auth, on_message, p, err);
	free(p);
	if (auth) /* regauth.h: the caller wipes what it was given */
		explicit_bzero(auth, strlen(auth));
	if (rc < 0 && rc != -ECANCELED)
		rc = pull_failed(ref, r->domain, auth != NULL, err);
	return rc;
}

static int refuse(const struct config *cfg, const char *image, const char *norm, struct err *err)
{
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
		       "image %.200s (%.200s) is not allowed by the operator's image policy: SANDBOX_IMAGES "
		       "(--images) is '%.200s'; pick an image it matches (env_info lists the local ones), omit "
		       "image to use %.100s, or ask the operator to add a pattern for it",
		       image, norm, cfg->images, cfg->image);
}

static int missing(const struct config *cfg, const char *image, const char *why, int r, struct err *err)
{
	if (strcmp(image, SANDBOX_DEFAULT_IMAGE) == 0)
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r,
			       "the default image %s is not built yet: run `docker build -t %s image/` in the "
			       "sandbox-mcp source tree (or `sandbox-mcp doctor` for details)",
			       image, image);
	return err_set(err, ERRCODE_IMAGE_NOT_FOUND, r,
		       "image %.200s is not on this Docker engine%s: run `docker pull %.200s` (or build it), or omit "
		       "image to use %.100s",
		       image, why, image, cfg->image);
}

/* True when one of img's own names (RepoTags, RepoDigests; Podman's localhost/ or not) is image. */
static bool named(json_t *img, const char *image)
{
	static const char *const keys[] = { "RepoTags", "RepoDigests" };
	json_t *v;
	size_t i;
	for (size_t k = 0; k < 2; k++)
		json_array_foreach (json_object_get(img, keys[k]), i, v) {
			const char *t = json_string_value(v);
			if (t && (image_same_ref(t, image) ||
				  (strncmp(t, "localhost/", 10) == 0 && image_same_ref(t + 10, image))))
				return true;
		}
	return false;
}

/*
 * Whether the image the engine resolved image to (img, its inspect) is one
 * call's principal may run: another principal's is missing for this one
 * (image_usable); and under SANDBOX_IMAGES the policy judged a name, so the
 * image must carry it: a short hex name the engine took as an id prefix
 * ("17b879305860", "sha256:17b8") is not one of its names. The operator's
 * own SANDBOX_IMAGE is theirs to choose. 0 or -errno with err.
 */
static int judge(const struct config *cfg, struct call *call, const char *image, bool mine, bool own, json_t *img,
		 struct err *err)
{
	json_t *labels = json_object_get(json_object_get(img, "Config"), "Labels");
	if (mine)
		return 0;
	if (!image_usable(labels, call_principal(call)))
		return missing(cfg, image, "", -ENOENT, err);
	if (cfg->images[0] && !own && !named(img, image))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "image %.200s is not a name of the image the engine found for it (it took it as an id "
			       "prefix); the operator's image policy (SANDBOX_IMAGES) judges names: name the image by "
			       "repository and tag, as env_info lists them",
			       image);
	return 0;
}

/* pull_image's work; pull_image judges what it found. */
static int find_image(struct engine *e, struct call *call, const struct config *cfg, const char *image, bool own,
		      pull_report_fn report, void *arg, json_t **ret_img, struct pull_result *ret, struct err *err)
{
	struct imageref r;
	char norm[IMAGEREF_FORMAT_MAX];
	size_t n = strlen(image);
	bool mine = is_cfg_image(cfg, image), pulled = false;
	int64_t t0 = 0, ms = 0;
	int rc;

	/* an id, or a prefix of one ("sha256:17b8", which docker resolves and Podman refuses as malformed) */
	if (imageref_is_id(image, n) || strncmp(image, "sha256:", 7) == 0) {
		if (cfg->images[0] && !mine && !own)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
				       "image ids cannot be held against the operator's image policy (SANDBOX_IMAGES): "
				       "name the image by repository and tag");
		rc = engine_image_inspect(e, call, image, ret_img, err);
		return rc < 0 && err->code == ERRCODE_IMAGE_NOT_FOUND ? missing(cfg, image, "", rc, err) : rc;
	}
	if ((rc = imageref_parse(image, n, &r, err)) < 0)
		return rc;
	imageref_format(&r, norm, sizeof(norm));
	if (!mine && !imageref_allowed(cfg->images, &r, false))
		return refuse(cfg, image, norm, err);
	bool may_pull = strcmp(cfg->pull, "never") != 0 && (mine || imageref_allowed(cfg->images, &r, true)) &&
			strcmp(image, SANDBOX_DEFAULT_IMAGE) != 0;
	if (may_pull && strcmp(cfg->pull, "always") == 0) {
		t0 = now_ms();
		if ((rc = do_pull(e, call, &r, image, report, arg, err)) < 0)
			return rc;
		ms = now_ms() - t0;
		pulled = true;
	}
	rc = engine_image_inspect(e, call, image, ret_img, err);
	if (rc < 0 && err->code == ERRCODE_IMAGE_NOT_FOUND && !pulled) {
		if (!may_pull)
			return missing(cfg, image,
				       strcmp(cfg->pull, "never") == 0		   ? " and SANDBOX_PULL is never"
				       : strcmp(image, SANDBOX_DEFAULT_IMAGE) == 0 ? ""
				       : !cfg->images[0]
					       ? " and only Docker Hub's official images (docker.io/library/*) "
						 "are pulled unless the operator sets SANDBOX_IMAGES"
					       : " and SANDBOX_IMAGES does not allow pulling it",
				       rc, err);
		t0 = now_ms();
		log_infof("pulling %s", norm);
		if ((rc = do_pull(e, call, &r, image, report, arg, err)) < 0)
			return rc;
		ms = now_ms() - t0;
		pulled = true;
		rc = engine_image_inspect(e, call, image, ret_img, err);
	}
	if (rc < 0)
		return rc;
	if (pulled)
		log_infof("pulled %s in %lld ms", norm, (long long)ms);
	ret->pulled = pulled;
	ret->pull_ms = ms;
	return 0;
}

int pull_image(struct engine *e, struct call *call, const struct config *cfg, const char *image, bool own,
	       pull_report_fn report, void *arg, json_t **ret_img, struct pull_result *ret, struct err *err)
{
	*ret_img = NULL;
	int r = find_image(e, call, cfg, image, own, report, arg, ret_img, ret, err);
	if (r == 0 && (r = judge(cfg, call, image, is_cfg_image(cfg, image), own, *ret_img, err)) < 0) {
		json_decref(*ret_img);
		*ret_img = NULL;
	}
	return r;
}

json_t *pull_images_json(struct engine *e, struct call *call, const struct config *cfg)
{
	json_t *list = NULL, *local = json_array(), *img, *tag;
	struct err err;
	size_t i, k;
	bool cut = false;

	if (engine_request(e, call, "GET", "/images/json", NULL, NULL, &list, &err) < 0)
		list = NULL;
	json_array_foreach (list, i, img) {
		json_array_foreach (json_object_get(img, "RepoTags"), k, tag) {
			const char *t = json_string_value(tag);
			if (!t || strcmp(t, "<none>:<none>") == 0 || !pull_allowed_local(cfg, t))
				continue;
			/* another principal's images are not there for this one */
			if (!is_cfg_image(cfg, t) &&
			    !image_usable(json_object_get(img, "Labels"), call_principal(call)))
				continue;
			if (json_array_size(local) >= PULL_LOCAL_LIST_MAX) {
				cut = true;
				break;
			}
			json_array_append_new(local, json_string(t));
		}
	}
	json_decref(list);
	return json_pack("{s:s, s:s, s:s, s:o, s:b}", "policy", config_images_summary(cfg), "images", cfg->images,
			 "pull", cfg->pull, "local", local, "local_truncated", cut);
}
