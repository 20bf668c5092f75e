/*
 * call.h - one tools/call in flight: its request id, who sent it, whom it
 * acts for, and its cancel token.
 *
 * The dispatcher queues and runs calls; everything below it (tools, the
 * session layer, the engine client) only needs to know whether the call was
 * cancelled and to arm a hook that stops its blocking work (shut a socket,
 * kill an exec) when it is.  That is this header, so those layers never
 * include the dispatcher.
 */
#ifndef CALL_H
#define CALL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct call;

typedef void (*call_run_fn)(struct call *c, void *data);
typedef void (*call_free_fn)(void *data);
typedef void (*call_cancel_fn)(void *arg);

/* Longest call key (session id or name): calls with one key run one at a time. */
#define CALL_KEY_MAX 128

/* id is copied (incref); data is owned by the call and released with free_data. */
struct call *call_create(json_t *id, const char *key, call_run_fn run, call_free_fn free_data, void *data);
/*
 * The client that sent it (borrowed; the call's data keeps it alive):
 * dispatch_cancel finds only that client's calls. Default NULL.
 */
void call_set_owner(struct call *c, const void *owner);
/* Longest principal name (the NAME of an HTTP token); "" is the one principal without tokens. */
#define CALL_PRINCIPAL_MAX 64
/* The principal the call acts for (copied; cut at CALL_PRINCIPAL_MAX). Default "". */
void call_set_principal(struct call *c, const char *principal);
/* The call's principal (borrowed); "" for a NULL call. */
const char *call_principal(const struct call *c);
/* What the call holds, in bytes (its request line), for the dispatcher's byte limit. */
void call_set_weight(struct call *c, size_t bytes);
/* Frees a call that was never submitted (or whose submit failed), with its data. */
void call_destroy(struct call *c);
/* The request id (borrowed). */
json_t *call_id(const struct call *c);
bool call_cancelled(const struct call *c);
/*
 * Arms fn(arg) to run, from the cancelling thread, if the call is cancelled
 * before call_disarm. Returns -ECANCELED (and does not arm) if already cancelled.
 */
int call_arm(struct call *c, call_cancel_fn fn, void *arg);
/* Disarms; waits for a hook that is running right now to return. */
void call_disarm(struct call *c);

/* For the dispatcher: the key, the weight, running the call, and its queue link. */
const char *call_key(const struct call *c);
size_t call_weight(const struct call *c);
const void *call_owner(const struct call *c);
void call_invoke(struct call *c);
struct call *call_next(const struct call *c);
void call_set_next(struct call *c, struct call *next);
/*
 * Marks c cancelled and runs its armed hook, if any, on this thread; the
 * call's own thread cannot free c meanwhile (call_disarm waits for it).
 */
void call_cancel(struct call *c);
/*
 * Cancels c for the server's own reason (a rollback of its session): as
 * call_cancel, but the call still runs if it has not started, and its
 * client still gets its (cancelled) result, since it never asked for this.
 */
void call_preempt(struct call *c);
bool call_preempted(const struct call *c);
/* Marks c as one that preempts its key's running call: no other such call preempts it (they queue). */
void call_set_preempting(struct call *c);
bool call_preempting(const struct call *c);

#endif
