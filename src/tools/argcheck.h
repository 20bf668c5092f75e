/*
 * argcheck.h - what pip and git arguments may look like before they reach an
 * argv: package requirements, sandbox paths, URLs, git ref names.
 *
 * The tools never pass these through a shell, but pip and git read options
 * from their arguments: a "package" of `--index-url=...` or a repository URL
 * of `--upload-pack=...` is an option, not a name.  So each value is matched
 * against the small grammar it is meant to have, and refused otherwise,
 * before anything runs.  Pure functions: no I/O, no allocation.
 */
#ifndef ARGCHECK_H
#define ARGCHECK_H

#include <stdbool.h>

#include "base/errcode.h"

enum argcheck_req {
	ARGCHECK_REQ_NAME, /* name[extras] with version specifiers: needs an index or find_links */
	ARGCHECK_REQ_PATH, /* a wheel, sdist or project directory inside the sandbox */
	ARGCHECK_REQ_URL,  /* https:// or http://: needs network */
};

/* Classifies one pip requirement; -EINVAL with e naming it when it is none of the kinds. */
int argcheck_requirement(const char *s, enum argcheck_req *kind, struct err *e);
/* A bare distribution name (pip_uninstall, pip_status); 0 or -EINVAL with e. */
int argcheck_dist_name(const char *s, struct err *e);
/* An http(s) URL of printable characters without spaces or quotes; 0 or -EINVAL. what names it in e. */
int argcheck_http_url(const char *s, const char *what, struct err *e);
/* A sandbox path (no leading '-', no control bytes); 0 or -EINVAL. */
int argcheck_path(const char *s, const char *what, struct err *e);
/* A git repository URL: local path, file://, http(s)://, ssh://, git://, user@host:path; never ext:: or fd::. */
int argcheck_git_url(const char *s, struct err *e);
/* A git branch or remote name (check-ref-format rules, simplified; no leading '+', a forced refspec). */
int argcheck_git_ref(const char *s, const char *what, struct err *e);

#endif
