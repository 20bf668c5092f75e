/*
 * notify.h - one kind of notification, sent at most once per interval.
 *
 * A burst of changes (a run of file_write calls) becomes one notification at
 * once and at most one more when the interval has passed, so the client
 * always hears about the last change without being flooded. A thread of its
 * own sends the delayed one; pokes never block on the client.
 */
#ifndef NOTIFY_H
#define NOTIFY_H

#include "mcp/out.h"

struct notify;

/*
 * Sends method (params {}) on out; NULL if its line cannot be made. The
 * thread starts at the first poke (a start-up makes no thread it may never
 * need; if it cannot start then, the pokes are dropped, with a warning).
 * Release with notify_destroy.
 */
struct notify *notify_create(struct out *out, const char *method, int interval_ms);

/* Something changed: send now, or when interval_ms since the last one have passed. */
void notify_poke(struct notify *n);

/* Stops the thread; a notification still waiting is dropped. NULL is a no-op. */
void notify_destroy(struct notify *n);

#endif
