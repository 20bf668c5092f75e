/*
 * dockerfile.h - the Dockerfile session_export writes, from what a session
 * did: pip freeze lines read as what to install again (and from where,
 * offline), and the file itself.  Pure functions, no I/O: the freeze lines
 * and the workspace listing come from the sandbox and are treated as
 * hostile (only normalised absolute paths and lines without control bytes
 * reach the Dockerfile, always quoted).
 */
#ifndef DOCKERFILE_H
#define DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/errcode.h"
#include "base/pathsafe.h"
#include "sandbox/session.h"

/* Largest Dockerfile written. */
#define DOCKERFILE_MAX (4u << 20)
/* Workspace entries whose mode a Dockerfile restores at most. */
#define DOCKERFILE_MODES_MAX 10000
/* Paths per `RUN chmod` line. */
#define DOCKERFILE_CHMOD_PER_LINE 40
/* Size of a context name from dockerfile_context_name (a path, every byte possibly escaped as %XX). */
#define DOCKERFILE_CONTEXT_NAME_MAX (PATHSAFE_MAX * 3 + 8)
/* Lines of a pip freeze taken (it comes from the sandbox: bounded like any input). */
#define DOCKERFILE_FREEZE_LINES_MAX 5000

/* The pieces of the Dockerfile pip needs, from the two freezes. */
struct dockerfile_pip {
	json_t *offline;    /* ["name==ver"] with a wheel/sdist in the workspace */
	json_t *find_links; /* [absolute dirs] holding those */
	json_t *local;	    /* [absolute paths] installed from (files or folders) */
	json_t *editable;   /* [absolute paths] */
	json_t *outside;    /* [absolute paths] of local files outside the workspace (carried in the context) */
	json_t *online;	    /* [freeze lines] that need an index or a URL */
	json_t *removed;    /* [names] the base has and the session removed */
	json_t *installed;  /* [freeze lines] that differ from the base */
};

/* What the Dockerfile is written from (all borrowed). */
struct dockerfile_info {
	const struct session *s;
	json_t *labels; /* {name: value} for a LABEL right after FROM (provenance), or NULL */
	const char *ws;
	const char *base_id;
	const char *base_ref_id; /* what s->image names now ("" when it is gone) */
	json_t *env;		 /* ["K=V"] to set */
	const char *workdir;
	struct dockerfile_pip *pip;
	json_t *modes;	 /* [[workspace-relative path, mode]] to restore with chmod */
	json_t *history; /* the session's history (git clones become comments) */
};

/*
 * Splits pip freeze output p[0..n) into lines (comments and lines with
 * control bytes left out). 0 with *ret (array of strings), or -E2BIG
 * (ERRCODE_TOO_LARGE) past DOCKERFILE_FREEZE_LINES_MAX.
 */
int dockerfile_freeze_parse(const char *p, size_t n, json_t **ret, struct err *err);
/* A freeze line's distribution name, normalised (lowercase, runs of -_. as '-'), into out. */
void dockerfile_dist_name(const char *line, char *out, size_t outsz);
/* True when archive (a path) is a wheel or sdist of name (normalised) at version. */
bool dockerfile_archive_matches(const char *archive, const char *name, const char *version);
/* Appends s single-quoted for sh. */
void dockerfile_shell_quote(struct buf *b, const char *s);
/*
 * The name in the export's context of a local package file at path outside
 * the workspace: "files" + path, with '%', '*', '?', '[' and '\\' as %XX
 * (COPY takes its source as a glob, which cannot escape them). Distinct
 * paths get distinct names. out holds DOCKERFILE_CONTEXT_NAME_MAX.
 */
void dockerfile_context_name(const char *path, char *out, size_t outsz);
/* True for an absolute, normalised path free of control bytes. */
bool dockerfile_path_normal(const char *path);
/* Decodes a file:// URL's path into out; false unless it is a normalised absolute path. */
bool dockerfile_file_url_path(const char *url, char *out, size_t outsz);
/*
 * What to install from the two freezes (the session's, mine, and a fresh
 * container's of the same image, base), given the workspace's wheel/sdist
 * paths (relative to ws). Fills p; dockerfile_pip_finish frees it.
 */
void dockerfile_pip_plan(const char *ws, json_t *mine, json_t *base, json_t *archives, struct dockerfile_pip *p);
void dockerfile_pip_finish(struct dockerfile_pip *p);
/* Appends the Dockerfile for x to b. */
void dockerfile_write(const struct dockerfile_info *x, struct buf *b);
/*
 * Copies Dockerfile df (as dockerfile_write makes it: one instruction a
 * line) to build with each RUN line replaced by a comment, and appends
 * {"step": n, "cmd": text after "RUN "} for each to runs: the build then
 * executes nothing, and the server runs the steps in a hardened container.
 * Returns the number of instructions (steps) in df.
 */
size_t dockerfile_split(const char *df, struct buf *build, json_t *runs);

#endif
