/*
 * dispatch.h - worker threads with one FIFO per key (a session).
 *
 * The read loop submits each tools/call as a struct call and goes back to
 * reading.  Calls with the same key run one at a time in arrival order; calls
 * with different keys run in parallel, on at most max_workers threads.
 * notifications/cancelled marks a call; a queued call is then dropped, a
 * running one has its cancel hook invoked (to shut a socket, kill an exec).
 */
#ifndef DISPATCH_H
#define DISPATCH_H

#include <stdbool.h>

#include <jansson.h>

#include "base/call.h"

struct dispatch;

/* Longest dispatch key (session id or name). */
#define DISPATCH_KEY_MAX CALL_KEY_MAX

/* Calls queued or running at once, whatever their size (dispatch_set_limits). */
#define DISPATCH_PENDING_MAX 4096

struct dispatch *dispatch_create(unsigned max_workers);
/*
 * Cancels everything queued or running and waits up to wait_ms for running
 * calls to return. Threads still running after that are left detached; their
 * calls' results are dropped. Returns true when every call ended (false: the
 * callers' state must outlive the process, as those threads still use it).
 */
bool dispatch_destroy(struct dispatch *d, int wait_ms);
/* Waits up to wait_ms for every queued and running call to finish. True if all did. */
bool dispatch_drain(struct dispatch *d, int wait_ms);
/*
 * Bounds what waits: at most max_calls calls and max_bytes of call weight
 * queued or running (a call alone is always taken, whatever its weight).
 * Defaults: DISPATCH_PENDING_MAX calls, no byte limit.
 */
void dispatch_set_limits(struct dispatch *d, unsigned max_calls, size_t max_bytes);
/*
 * Queues c (ownership passes to the dispatcher). 0, -ESHUTDOWN, or -EBUSY
 * past the limits (c stays the caller's).
 */
int dispatch_submit(struct dispatch *d, struct call *c);
/*
 * Runs c on the calling thread, at once, when no call on its key is queued
 * or running (so there is no order to keep) and the limits allow; otherwise
 * as dispatch_submit. For a transport thread that would only wait for the
 * answer: it saves two thread hand-offs. The call is cancellable as any
 * other; calls queued on its key meanwhile run here too. 0 once taken (and,
 * when run here, done and freed), or -errno as dispatch_submit.
 */
int dispatch_run_here(struct dispatch *d, struct call *c);
/*
 * Cancels owner's call with this request id, or every call of owner when id
 * is NULL (a client that went away). True if one was found.
 */
bool dispatch_cancel(struct dispatch *d, const void *owner, const json_t *id);
/*
 * Preempts (call_preempt) the call running on key, unless it preempts
 * others itself: a rollback ends the command it would otherwise wait for.
 * Calls queued on key are left to run after it. True if one was running.
 */
bool dispatch_preempt(struct dispatch *d, const char *key);
/* Calls queued or running. */
unsigned dispatch_pending(struct dispatch *d);

#endif
