/*
 * tool-commit.c - session_commit: saves a session's container as an image
 * that a new session can start from (docs/design.md §4).
 *
 * The image keeps what the session's base image said to run (user, command,
 * entrypoint, working dir, environment): the engine would otherwise copy the
 * session container's own keep-alive command and labels into it.  It never
 * takes the session's base tag, nor an existing tag sandbox-mcp did not make
 * (an image carrying the commit labels below, with that very tag as its
 * commit.ref), nor a repository outside SANDBOX_COMMIT_REPOS (image.h); the
 * image is made untagged and tagged once made. It stays below the engine's layer limit: past
 * SANDBOX_MAX_LAYERS the container's filesystem is exported and imported as
 * one layer instead.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "base/log.h"
#include "buildconf.h"
#include "engine/engine-image.h"
#include "sandbox/image.h"
#include "tools/tools.h"

struct export_src {
	struct tool_ctx *ctx;
	struct engine_body *b;
};

static int session_commit_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static json_t *commit_config(json_t *parent, json_t *container, const struct session *s, const char *parent_id,
			     const char *ref, const char *principal);
static ssize_t export_source(void *arg, void *p, size_t n, struct err *err);
static int flatten(struct tool_ctx *ctx, struct session *s, const char *message, json_t *config,
		   char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err);

/*
 * The new image's config (image_commit_config of the parent) with the
 * provenance labels. ref, the tag being made, is labelled too: a later
 * commit may replace only the image created under that very tag
 * (image_replaceable), and only its owner, principal (image_owner).
 */
static json_t *commit_config(json_t *parent, json_t *container, const struct session *s, const char *parent_id,
			     const char *ref, const char *principal)
{
	char owner[IMAGE_OWNER_MAX];
	image_owner(principal, owner, sizeof(owner));
	json_t *cfg = image_commit_config(parent, container);
	json_t *labels = json_object_get(cfg, "Labels");
	char created[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	json_object_set_new(labels, IMAGE_LABEL_SESSION, json_string(s->id));
	json_object_set_new(labels, IMAGE_LABEL_PARENT, json_string(parent_id));
	json_object_set_new(labels, IMAGE_LABEL_BASE, json_string(s->image));
	json_object_set_new(labels, IMAGE_LABEL_CREATED, json_string(created));
	json_object_set_new(labels, IMAGE_LABEL_VERSION, json_string(SANDBOX_VERSION));
	json_object_set_new(labels, IMAGE_LABEL_REF, json_string(ref));
	json_object_set_new(labels, IMAGE_LABEL_OWNER, json_string(owner));
	return cfg;
}

static ssize_t export_source(void *arg, void *p, size_t n, struct err *err)
{
	struct export_src *src = arg;
	tool_progress_tick(src->ctx); /* a flattening runs for minutes on a large image */
	return engine_body_read(src->b, p, n, err);
}

/*
 * Exports the container's filesystem (paused meanwhile, like a commit) and
 * imports it as a one-layer untagged image with config's settings.
 */
static int flatten(struct tool_ctx *ctx, struct session *s, const char *message, json_t *config,
		   char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err)
{
	struct engine *e = session_engine(s);
	json_t *changes = engine_is_podman(e) ? image_changes_podman(config) : image_changes(config);
	const char **argv = image_changes_argv(changes);

	struct export_src src = { .ctx = ctx };
	struct err uerr;
	/* an exec that starts while the container freezes hangs the engine: forwards start none meanwhile */
	session_forwards_hold(ctx->svc->sessions, s, true);
	int r = engine_container_pause(e, ctx->call, s->container, err);
	if (r == 0) {
		r = engine_container_export(e, ctx->call, s->container, &src.b, err);
		if (r == 0)
			r = engine_image_import(e, ctx->call, "", "", message, argv, export_source, &src, ret_id, err);
		engine_body_destroy(src.b);
		if (engine_container_unpause(e, NULL, s->container, &uerr) < 0)
			log_warnf("session %s: unpausing after the export: %s", s->id, uerr.msg);
	}
	session_forwards_hold(ctx->svc->sessions, s, false);
	free(argv);
	json_decref(changes);
	return r;
}

static int session_commit_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct engine *e;
	const char *repo = json_string_value(json_object_get(args, "repository"));
	const char *tag = json_string_value(json_object_get(args, "tag"));
	const char *message = json_string_value(json_object_get(args, "message"));
	char deftag[IMAGE_TAG_MAX + 1], ref[IMAGE_REF_MAX + IMAGE_TAG_MAX + 2], id[ENGINE_IMAGE_ID_MAX];
	json_t *container = NULL, *parent = NULL, *created = NULL;
	struct session *s;
	struct err e_;
	int r;

	err_clear(&e_);
	if (!repo)
		repo = IMAGE_COMMIT_REPOSITORY;
	if (image_repository_check(repo, &e_) < 0 || (tag && image_tag_check(tag, &e_) < 0) ||
	    image_ref_allowed(ctx->svc->cfg, repo, &e_) < 0)
		return tool_fail(res, &e_);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	e = session_engine(s); /* the image is made, checked and tagged on the session's engine */
	if (!tag) {
		image_default_tag(deftag, sizeof(deftag));
		tag = deftag;
	}
	snprintf(ref, sizeof(ref), "%s:%s", repo, tag);

	if ((r = engine_container_inspect(e, ctx->call, s->container, &container, &e_)) < 0)
		goto fail;
	const char *parent_id = json_string_value(json_object_get(container, "Image"));
	if (!parent_id || (r = engine_image_inspect(e, ctx->call, parent_id, &parent, &e_)) < 0) {
		if (!parent_id)
			err_set(&e_, ERRCODE_ENGINE_ERROR, -EPROTO, "the session's container names no image");
		goto fail;
	}
	if ((r = image_target_check(e, ctx->call, ctx->svc->cfg, ref, s, parent_id, &e_)) < 0)
		goto fail;
	err_clear(&e_);

	size_t layers = json_array_size(json_object_get(json_object_get(parent, "RootFS"), "Layers"));
	bool flat = layers + 1 > ctx->svc->cfg->max_layers;
	json_t *config = commit_config(parent, container, s, parent_id, ref, call_principal(ctx->call));
	int64_t t0 = now_ms();
	tool_progress_stage(ctx, flat ? "exporting the container to flatten it" : "committing the container");
	if (flat) {
		/* the import gets the whole environment: it has no container to merge it from */
		json_t *cenv = json_object_get(json_object_get(container, "Config"), "Env");
		if (json_is_array(cenv))
			json_object_set(config, "Env", cenv);
		r = flatten(ctx, s, message, config, id, &e_);
	} else {
		session_forwards_hold(ctx->svc->sessions, s, true); /* the commit pauses the container */
		r = image_commit(e, ctx->call, s->container, "", "", message, config, id, &e_);
		session_forwards_hold(ctx->svc->sessions, s, false);
	}
	json_decref(config);
	if (r < 0) {
		if (e_.code == ERRCODE_SESSION_NOT_FOUND)
			session_forget(ctx->svc->sessions, s);
		goto fail;
	}
	/* made untagged, tagged last: the tag names a finished image, checked right before */
	if ((r = image_tag_checked(e, ctx->call, ctx->svc->cfg, id, repo, tag, s, parent_id, &e_)) < 0) {
		struct err rerr;
		if (engine_image_remove(e, NULL, id, &rerr) < 0)
			log_warnf("session_commit: removing the untagged image %.19s: %s", id, rerr.msg);
		goto fail;
	}
	int64_t ms = now_ms() - t0;
	if ((r = engine_image_inspect(e, ctx->call, id, &created, &e_)) < 0)
		goto fail;
	size_t new_layers = json_array_size(json_object_get(json_object_get(created, "RootFS"), "Layers"));
	json_int_t size = json_integer_value(json_object_get(created, "Size"));

	tool_text(res,
		  "Committed session %s as %s (image %.19s, %zu layer%s, %.1f MB%s, %.1f s). Start a session from it "
		  "with session_create {image: \"%s\"}.",
		  s->id, ref, id, new_layers, new_layers == 1 ? "" : "s", (double)size / 1e6,
		  flat ? ", flattened: its parent had too many layers" : "", (double)ms / 1000.0, ref);
	if (s->read_only)
		tool_text(res, "The session has a read-only root: its workspace is a volume, which a commit does not "
			       "include (session_export carries it).");
	tool_structured(res,
			json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:b, s:s}", "session_id", s->id, "image_id", id,
				  "reference", ref, "repository", repo, "tag", tag, "layers", (json_int_t)new_layers,
				  "size", size, "flattened", flat, "parent_image_id", parent_id));
	json_decref(container);
	json_decref(parent);
	json_decref(created);
	session_put(ctx->svc->sessions, s);
	return 0;
fail:
	json_decref(container);
	json_decref(parent);
	json_decref(created);
	session_put(ctx->svc->sessions, s);
	return tool_fail(res, &e_);
}

const struct tool_entry tool_session_commit_entry = {
	.name = "session_commit",
	.title = "Save a session as a Docker image",
	.description = "Save the session's container (files, installed packages) as a Docker image that "
		       "session_create {image} can start from. Tags uniquely unless tag is given; never replaces the "
		       "image the session started from nor an existing image it did not create.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"repository\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":255,\"description\":\"Image "
		"repository, lowercase, one the server allows (SANDBOX_COMMIT_REPOS, by default starting with "
		"sandbox-mcp-) (default " IMAGE_COMMIT_REPOSITORY "; at most 255 characters)\"},"
		"\"tag\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"Image tag "
		"(default: unique, from the session and the time; at most 128 characters)\"},"
		"\"message\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"Commit message (at most 1000 characters)\"}," TOOL_SESSION_ARG
		"}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"image_id\":{\"type\":\"string\"},\"reference\":{\"type\":\"string\"},"
			 "\"repository\":{\"type\":\"string\"},\"tag\":{\"type\":\"string\"},"
			 "\"layers\":{\"type\":\"integer\"},\"size\":{\"type\":\"integer\"},"
			 "\"flattened\":{\"type\":\"boolean\"},\"parent_image_id\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_SESSION,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = session_commit_tool,
	.instructions = "session_commit saves a session as an image and session_export writes a Dockerfile that "
			"recreates it; session_create {image} starts from either.",
};
