/*
 * errcode.h - the stable tool error codes and the error struct every layer
 * fills in.
 *
 * Lower layers classify a failure (an enum errcode plus a short message); only
 * the tool layer turns it into the text a model reads.  The names are part of
 * the product contract (docs/design.md §3): clients match on them.
 */
#ifndef ERRCODE_H
#define ERRCODE_H

#include "base/util.h"

enum errcode {
	ERRCODE_NONE = 0,
	ERRCODE_DOCKER_UNAVAILABLE,
	ERRCODE_IMAGE_NOT_FOUND,
	ERRCODE_SESSION_NOT_FOUND,
	ERRCODE_SESSION_LIMIT,
	ERRCODE_TIMEOUT,
	ERRCODE_TOO_LARGE,
	ERRCODE_FILE_NOT_FOUND,
	ERRCODE_FILE_EXISTS,
	ERRCODE_PATCH_NO_MATCH,
	ERRCODE_HOST_PATH_NOT_ALLOWED,
	ERRCODE_INVALID_ARGUMENT,
	ERRCODE_ENGINE_ERROR,
	ERRCODE_CANCELLED,
	ERRCODE_OUT_OF_MEMORY,
	ERRCODE_TOO_MANY_PROCESSES,
	ERRCODE_PYTHON_NOT_FOUND,
	ERRCODE_SHELL_NOT_FOUND,
	ERRCODE_NETWORK_DISABLED,
	ERRCODE_GIT_NOT_FOUND,
	ERRCODE_PIP_FAILED, /* pip ran and failed: a build error, no matching distribution */
	ERRCODE_GIT_FAILED, /* git ran and failed: a missing remote, a rejected push */
	ERRCODE_CHECKPOINT_NOT_FOUND,
	ERRCODE_INTERNAL,
	ERRCODE_MAX,
};

#define ERR_MSG_MAX 512

struct err {
	enum errcode code;
	char msg[ERR_MSG_MAX];
};

/* Returns the wire name ("session_not_found"), or "internal" for out-of-range values. */
const char *errcode_name(enum errcode code);

/* Fills e (if not NULL) and returns ret, so `return err_set(e, ..., -EIO, ...)` reads naturally. */
int err_set(struct err *e, enum errcode code, int ret, const char *fmt, ...) PRINTF_LIKE(4, 5);
/*
 * err_set, then as much of the end of text (len bytes) as still fits in the
 * message, from a line start when one is near: a failed program says what
 * went wrong in its last lines, so those are the ones kept.
 */
int err_set_tail(struct err *e, enum errcode code, int ret, const char *text, size_t len, const char *fmt, ...)
	PRINTF_LIKE(6, 7);
/*
 * Adds to e's message what the caller knows and the lower layer did not
 * ("; the upload stopped, ..."): as much as fits, cut on a character start
 * and sanitized like err_set's. The code stays; returns ret. NULL e: nothing.
 */
int err_append(struct err *e, int ret, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Puts what the caller knows before e's message ("egress rule 'x': "). The code stays; returns ret. */
int err_prefix(struct err *e, int ret, const char *fmt, ...) PRINTF_LIKE(3, 4);
void err_clear(struct err *e);

#endif
