/*
 * image.h - what session_commit and session_export share about images:
 * reference grammar checks, which repositories may be made
 * (SANDBOX_COMMIT_REPOS), default tags, the provenance labels, commit
 * configs, and image settings written as Dockerfile instructions.  Pure
 * functions, except image_target_check (what a tag names now),
 * image_tag_checked (the tag, set last) and image_remove_labelled (a failed
 * build's own images), which call the engine.
 */
#ifndef IMAGE_H
#define IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"
#include "sandbox/session.h"

/* Longest repository name and tag (docker's reference grammar). */
#define IMAGE_REF_MAX 255
#define IMAGE_TAG_MAX 128
/* Repository of commits and export builds made without one. */
#define IMAGE_COMMIT_REPOSITORY "sandbox-mcp-commit"
#define IMAGE_EXPORT_REPOSITORY "sandbox-mcp-export"

/* Provenance labels on every image session_commit or session_export makes. */
#define IMAGE_LABEL_SESSION SESSION_LABEL ".commit.session"
#define IMAGE_LABEL_PARENT SESSION_LABEL ".commit.parent"
#define IMAGE_LABEL_BASE SESSION_LABEL ".commit.base"
#define IMAGE_LABEL_CREATED SESSION_LABEL ".commit.created"
#define IMAGE_LABEL_VERSION SESSION_LABEL ".commit.version"
/*
 * The reference an image was created under (commits, flattenings, export
 * builds; never an export's Dockerfile, which may be built under any name).
 * Labels are inherited by images built FROM one, so only this, compared with
 * the tag, tells sandbox-mcp's image at a tag from a user's image built on it.
 */
#define IMAGE_LABEL_REF SESSION_LABEL ".commit.ref"
/*
 * A random id per export build, in the LABEL of the Dockerfile the server
 * builds (not the one it returns): every image of that build carries it, so
 * a failed build's images are found by it, and nothing else is removed.
 */
#define IMAGE_LABEL_BUILD SESSION_LABEL ".commit.build"
/*
 * The principal an image belongs to (image_owner's form), on every image
 * session_commit or session_export makes: other principals can neither
 * list, start, nor replace it. "" shares it with every principal (an
 * operator's relabelled build). Images built FROM one inherit it.
 */
#define IMAGE_LABEL_OWNER SESSION_LABEL ".commit.owner"
/* Longest owner: "uid=<uid>,token=<principal>". */
#define IMAGE_OWNER_MAX (CALL_PRINCIPAL_MAX + 40)

/*
 * The owner of the images principal makes: "uid=<uid>" for the one
 * principal without tokens (stdio, or HTTP without a token file), so two
 * users' servers on one engine stay apart; "uid=<uid>,token=<NAME>" for an
 * HTTP token's principal.
 */
void image_owner(const char *principal, char *out, size_t outsz);
/*
 * Whether principal may list and start the image with these labels (its
 * Config.Labels): images sandbox-mcp did not make are the operator's, held
 * to SANDBOX_IMAGES alone; one it made is its owner's (or everyone's when
 * the owner label is ""). An image made before images had owners is the
 * tokenless principal's only.
 */
bool image_usable(json_t *labels, const char *principal);

/*
 * Checks a repository ("name", "host:port/a/b", lowercase; imageref's
 * grammar). 0 or -EINVAL (ERRCODE_INVALID_ARGUMENT).
 */
int image_repository_check(const char *repo, struct err *err);
/* Checks a tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. 0 or -EINVAL. */
int image_tag_check(const char *tag, struct err *err);
/*
 * True when repo matches one of patterns (','-separated repositories), both
 * resolved as docker resolves them: the registry host explicit (a pattern
 * without one is Docker Hub's, and "sandbox-mcp-*" is never
 * registry-1.docker.io's) and "library/" before Hub's one-component names.
 * Paths match component by component: a component ending in '*' matches
 * any rest of that one component, never a '/' (so "sandbox-mcp-*" is not
 * the Hub user sandbox-mcp-x's "sandbox-mcp-x/y"). "*" alone is everything.
 */
bool image_repo_matches(const char *repo, const char *patterns);
/*
 * Whether a commit or export may create tags in repo at all: it matches
 * SANDBOX_COMMIT_REPOS. 0 or -EPERM (ERRCODE_INVALID_ARGUMENT, naming the
 * setting).
 */
int image_ref_allowed(const struct config *cfg, const char *repo, struct err *err);
/*
 * A unique tag: <yyyymmddhhmmss>-<8 hex>. Never the session's name or id:
 * a tag is seen by every principal of the engine, and a name is the
 * principal's own.
 */
void image_default_tag(char *out, size_t outsz);
/* True when references a and b name the same tag ("debian" is "docker.io/library/debian:latest"). */
bool image_same_ref(const char *a, const char *b);
/*
 * Appends s to out quoted for a Dockerfile ENV or LABEL value ("...", with
 * \, " and $ escaped). -EINVAL for a value no Dockerfile line can carry
 * (a newline or a NUL-free but control-character value).
 */
int image_quote(const char *s, struct buf *out);
/*
 * The settings of a container config (User, WorkingDir, Env, Entrypoint,
 * Cmd, Labels) as Dockerfile instructions ("ENV K=\"v\"", ...), for an
 * import's changes. Values no line can carry are left out. New reference.
 */
json_t *image_changes(json_t *config);
/* The same for Podman 4.3, whose parser strips the quotes around a value and unescapes nothing. */
json_t *image_changes_podman(json_t *config);

/* changes' strings as a NULL-terminated array (caller frees the array; the strings stay changes'). */
const char **image_changes_argv(json_t *changes);

/*
 * engine_commit with config as the body and, on Podman, also as changes
 * (image_changes_podman); repo and tag "" make it untagged.
 */
int image_commit(struct engine *e, struct call *call, const char *container_id, const char *repo, const char *tag,
		 const char *comment, json_t *config, char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err);

/*
 * True when the image at ref, with these labels (its Config.Labels), is one
 * sandbox-mcp created under ref itself: it carries IMAGE_LABEL_SESSION and
 * IMAGE_LABEL_REF naming ref (in any spelling). Only such a tag is replaced.
 */
bool image_replaceable(json_t *labels, const char *ref);
/*
 * Whether a commit or build may tag ref for session s (started from image
 * parent_id): never s's base tag (nor another tag naming its base image),
 * never the image new sessions start from (cfg->image, the built-in
 * default), and an existing tag only when image_replaceable and the
 * image is call's principal's own (not merely usable: a shared image is
 * replaced by no one). 0, or
 * -EEXIST/-EPERM (ERRCODE_INVALID_ARGUMENT) or an engine failure with err.
 */
int image_target_check(struct engine *e, struct call *call, const struct config *cfg, const char *ref,
		       const struct session *s, const char *parent_id, struct err *err);

/*
 * The config for committing container as an image with image's settings:
 * its user, working dir, entrypoint, cmd, env and labels, and every session
 * label the container carries reset to image's value (or ""), since the
 * engine merges the container's labels into a commit. New reference.
 */
json_t *image_commit_config(json_t *image, json_t *container);
/*
 * Tags image id as repo:tag, after image_target_check (for session s, from
 * parent_id) allows it once more: images are made untagged and tagged last,
 * so a check made before a long build cannot go stale. 0 or -errno.
 */
int image_tag_checked(struct engine *e, struct call *call, const struct config *cfg, const char *id, const char *repo,
		      const char *tag, const struct session *s, const char *parent_id, struct err *err);
/*
 * Removes the untagged images carrying label ("name=value"): a failed
 * build's own, never a tagged one, never one another image builds on (the
 * engine refuses those). Failures are logged at debug.
 */
void image_remove_labelled(struct engine *e, const char *label);

#endif
