/*
 * streamio.h - the wait around one engine stream (an exec's hijacked
 * socket): the socket made non-blocking, a wake-up pipe the call's cancel
 * hook writes to (hooks must not block, so the work cancellation asks for
 * happens on the worker, after the wait returns), one poll() on both, and
 * reads and sends that treat EINTR and EAGAIN alike.
 *
 * exec_run, xfer_pull, pyrepl (start and run) and agentctl (start and run)
 * each loop over streamio_wait; what they do with the bytes is theirs.
 */
#ifndef STREAMIO_H
#define STREAMIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/call.h"
#include "base/errcode.h"

/* Longest one wait sleeps, so that callers look at their deadlines and ticks at least this often. */
#define STREAMIO_TICK_MS 1000

/* What streamio_wait saw. */
enum {
	STREAMIO_IN = 1,     /* the socket is readable, hung up or failed: read it */
	STREAMIO_OUT = 2,    /* the socket takes more bytes (asked for with want_out) */
	STREAMIO_CANCEL = 4, /* the call was cancelled (the wake pipe is drained) */
};

struct streamio {
	int fd;		   /* borrowed: the stream owns it */
	int wake[2];	   /* the cancel hook writes to wake[1] */
	struct call *call; /* armed until streamio_disarm; or NULL */
};

/*
 * Makes fd non-blocking, opens the wake pipe and arms call's cancel hook
 * (call may be NULL). 0, or 1 when the call was already cancelled (the
 * first wait says STREAMIO_CANCEL as well), or -errno with err (nothing
 * left open).
 */
int streamio_open(struct streamio *io, int fd, struct call *call, struct err *err);
/*
 * Arms call's cancel hook again on an open streamio whose stream outlives
 * calls (the agent's): a wake-up left from an earlier call is dropped first.
 * 0, or 1 when the call was already cancelled (as streamio_open).
 */
int streamio_arm(struct streamio *io, struct call *call);
/* Disarms the cancel hook: no cancellation is seen after this. Idempotent. */
void streamio_disarm(struct streamio *io);
/* streamio_disarm, then closes the pipe. */
void streamio_close(struct streamio *io);
/*
 * Waits until `until` (now_ms()'s clock; INT64_MAX: none), at most
 * STREAMIO_TICK_MS, for the socket (readable, or writable too with
 * want_out) or a cancellation. A set of STREAMIO_* bits, 0 when the time
 * passed with neither, or -errno when poll failed.
 */
int streamio_wait(struct streamio *io, bool want_out, int64_t until);
/* Reads up to n bytes into p. >0 bytes, 0 at EOF, -EAGAIN for none now (EINTR too), or -errno. */
ssize_t streamio_read(struct streamio *io, char *p, size_t n);
/*
 * Reads up to chunk bytes onto the end of in. >0 bytes, 0 at EOF or on a
 * failed read (the stream is over either way), -EAGAIN for none now, or
 * -ENOBUFS when in cannot take chunk more bytes (nothing read).
 */
ssize_t streamio_read_into(struct streamio *io, struct buf *in, size_t chunk);
/* Sends up to n bytes (no SIGPIPE). >0 bytes, 0 when the socket takes none now, or -errno. */
ssize_t streamio_send(struct streamio *io, const char *p, size_t n);

#endif
