/*
 * imageref.h - image references normalised the way the docker CLI does, and
 * the operator's image policy (SANDBOX_IMAGES) matched against them.
 *
 * "python" is docker.io/library/python:latest, "me/app" docker.io/me/app,
 * "127.0.0.1:5000/a/b@sha256:..." keeps its registry and digest. The first
 * '/'-component is a registry when it has '.' or ':', is "localhost", or has
 * an uppercase letter (docker's rule); the rest must be lowercase.
 *
 * Pure: no I/O, no allocation; inputs are capped at IMAGEREF_INPUT_MAX.
 */
#ifndef IMAGEREF_H
#define IMAGEREF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errcode.h"

/* Longest reference or pattern read at all. */
#define IMAGEREF_INPUT_MAX 512
/* Longest registry/repository, docker's NameTotalLengthMax. */
#define IMAGEREF_NAME_MAX 255
#define IMAGEREF_TAG_MAX 128
/* "sha512:" and 128 hex digits. */
#define IMAGEREF_DIGEST_MAX 135
/* Room for imageref_format's output. */
#define IMAGEREF_FORMAT_MAX (IMAGEREF_NAME_MAX + IMAGEREF_TAG_MAX + IMAGEREF_DIGEST_MAX + 4)
/* Patterns in one SANDBOX_IMAGES list. */
#define IMAGEREF_PATTERNS_MAX 64
#define IMAGEREF_DEFAULT_DOMAIN "docker.io"

struct imageref {
	char domain[IMAGEREF_NAME_MAX + 1];   /* "docker.io", "127.0.0.1:5000" */
	char path[IMAGEREF_NAME_MAX + 1];     /* "library/python", "team/app" */
	char tag[IMAGEREF_TAG_MAX + 1];	      /* "latest" unless a digest alone was given ("" then) */
	char digest[IMAGEREF_DIGEST_MAX + 1]; /* "sha256:<hex>" or "" */
};

/*
 * Parses s[0..n) into *ret (set only on success). 0, or -EINVAL with a
 * message saying what is wrong (ERRCODE_INVALID_ARGUMENT).
 */
int imageref_parse(const char *s, size_t n, struct imageref *ret, struct err *err);
/* True for a tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
bool imageref_tag_ok(const char *p, size_t n);
/* True for an image id: "sha256:" and 64 hex digits, or 64 hex digits alone. */
bool imageref_is_id(const char *s, size_t n);
/* Writes domain/path[:tag][@digest] to out (IMAGEREF_FORMAT_MAX bytes suffice). */
void imageref_format(const struct imageref *r, char *out, size_t outsz);
/*
 * repo (a repository, no tag) as docker resolves it: its registry host
 * into host, lowercased, "docker.io" for Docker Hub (also when spelled
 * index.docker.io, or not at all), and its path into path, with library/
 * before Hub's one-component names ("Docker.io/debian" is docker.io and
 * library/debian). The first component is a host when it has a '.' or a
 * ':', is localhost, or has an uppercase letter (docker's rule). Not a
 * check: any string gets a split. False when a part does not fit.
 */
bool imageref_split_repo(const char *repo, char *host, size_t hostsz, char *path, size_t pathsz);
/* True for Docker Hub's official images: docker.io/library/<name>. */
bool imageref_official(const struct imageref *r);

/*
 * Checks a ','-separated pattern list (SANDBOX_IMAGES). A pattern is a
 * reference whose '*' matches within one '/'-component, '**' across them and
 * '?' one character; it is normalised like a reference (docker.io/library/ for
 * a bare name); without ':' or '@' in its last component it matches any tag
 * or digest. "*" alone matches every reference. 0 or -EINVAL with err.
 */
int imageref_patterns_check(const char *list, struct err *err);
/*
 * True when a pattern of list (checked) matches r. ret_pattern, when given,
 * receives the matching pattern (at most IMAGEREF_INPUT_MAX + 1 bytes).
 */
bool imageref_patterns_match(const char *list, const struct imageref *r, char *ret_pattern, size_t n);

/*
 * The image policy: may a session use r from the engine (pull false) or pull
 * it (pull true)? An empty list is the default: any local image, and pulls
 * of official images only. Otherwise r must match a pattern either way.
 */
bool imageref_allowed(const char *list, const struct imageref *r, bool pull);

#endif
