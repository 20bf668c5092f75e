/*
 * image.h - what session_commit and session_export share about images:
 * reference grammar checks, default tags, the provenance labels, and image
 * settings written as Dockerfile instructions.  Pure functions, except
 * image_target_check, which asks the engine what a tag names.
 */
#ifndef IMAGE_H
#define IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "dispatch.h"
#include "engine.h"
#include "errcode.h"
#include "session.h"

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

/* Checks a repository ("name", "host:port/a/b", lowercase). 0 or -EINVAL (ERRCODE_INVALID_ARGUMENT). */
int image_repository_check(const char *repo, struct err *err);
/* Checks a tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. 0 or -EINVAL. */
int image_tag_check(const char *tag, struct err *err);
/* A unique tag for s: <name or id>-<yyyymmddhhmmss>-<4 hex>. */
void image_default_tag(const struct session *s, char *out, size_t outsz);
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

/*
 * True when the image at ref, with these labels (its Config.Labels), is one
 * sandbox-mcp created under ref itself: it carries IMAGE_LABEL_SESSION and
 * IMAGE_LABEL_REF naming ref (in any spelling). Only such a tag is replaced.
 */
bool image_replaceable(json_t *labels, const char *ref);
/*
 * Whether a commit or build may tag ref for session s (started from image
 * parent_id): never s's base tag (nor another tag naming its base image),
 * and an existing tag only when image_replaceable. 0, or -EEXIST
 * (ERRCODE_INVALID_ARGUMENT) or an engine failure with err.
 */
int image_target_check(struct engine *e, struct call *call, const char *ref, const struct session *s,
		       const char *parent_id, struct err *err);

#endif
