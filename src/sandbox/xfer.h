/*
 * xfer.h - tar streams into and out of a session's container, carried by the
 * stdin and stdout of a shell script around `tar` exec'd inside it as the
 * session's user.
 *
 * Never the engine's archive endpoints on a user's path: they act as the
 * daemon's root, follow symlinks the sandbox planted and ignore the
 * read-only root, while a tar running as the sandbox user gets exactly that
 * user's rights from the kernel (drop.h uses them only inside a secret slot
 * of a root-owned drop; this is the path when it cannot).  Both directions stream: a push produces the tar piece by piece
 * as the exec's stdin takes it, a pull hands the exec's stdout to tar_read
 * as it asks for it, so memory stays at a few chunks whatever the size.
 * Whatever the container sends back is treated as hostile (tar.h).
 */
#ifndef XFER_H
#define XFER_H

#include <stdbool.h>

#include "base/call.h"
#include "base/errcode.h"
#include "base/tar.h"
#include "engine/engine.h"
#include "sandbox/session.h"

/* Longest a transfer may run. */
#define XFER_TIMEOUT_MS (10 * 60 * 1000)
/* Bytes of the script's stderr kept for messages. */
#define XFER_STDERR_MAX 2048

/* Exit codes the scripts use to say what is wrong before any tar runs. */
enum xfer_exit {
	XFER_EXIT_NOT_REGULAR = 65, /* exists but is not a regular file */
	XFER_EXIT_NOT_FOUND = 66,
	XFER_EXIT_IS_DIR = 67,
	XFER_EXIT_EXISTS = 68,
	XFER_EXIT_NO_DIR = 69,	/* the parent cannot be made or entered */
	XFER_EXIT_NOT_DIR = 70, /* a directory was wanted */
	XFER_EXIT_DENIED = 77,
	XFER_EXIT_NO_TAR = 127,
};

struct xfer_result {
	int exit_code; /* -1 when unknown (killed, stopped) */
	bool timed_out, cancelled, stopped;
	char stderr_text[XFER_STDERR_MAX]; /* the script's stderr, trimmed */
};

struct exec_result;

/* Fills ret from an exec's result: its exit code, verdicts and stderr (trimmed). */
void xfer_result_from_exec(const struct exec_result *xr, struct xfer_result *ret);

/*
 * Produces the next piece of a pushed stream by calling tar_writer_add /
 * tar_writer_data / tar_writer_close on w: 0 for more, 1 once the stream was
 * closed, or -errno with err (the exec is then stopped).
 */
typedef int (*xfer_produce_fn)(void *arg, struct tar_writer *w, struct err *err);

/*
 * Runs `sh -c script sandbox-mcp-files args...` in s as its user with the
 * stream produce yields on stdin. 0 when the script ran (see ret: exit code,
 * stderr), or -errno with err when it could not run or produce failed (the
 * producer's error).
 */
int xfer_push(struct engine *e, struct call *call, const struct session *s, const char *script, const char *const *args,
	      xfer_produce_fn produce, void *arg, struct xfer_result *ret, struct err *err);

/*
 * Runs the script in s and reads its stdout as a tar stream with tar_read
 * (lim, sink; on the caller's thread). 0 when the script ran
 * and its stream was read whole (or a sink stopped it: ret_stats->stopped);
 * else -errno with err: the reader's error, or the exec's. ret is filled in
 * both cases, so callers look at ret->exit_code first: a script that refused
 * sends an empty stream.
 */
int xfer_pull(struct engine *e, struct call *call, const struct session *s, const char *script, const char *const *args,
	      const struct tar_limits *lim, const struct tar_sink *sink, struct tar_stats *ret_stats,
	      struct xfer_result *ret, struct err *err);

#endif
