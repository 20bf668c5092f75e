/*
 * forward.h - a port of a sandbox on the host's loopback (docs/jobs.md):
 * connections to 127.0.0.1:<host port> reach 127.0.0.1:<port> inside the
 * session's container, through the agent (forward.c says how), so it works
 * with network "none" and reaches servers bound to the sandbox's loopback.
 */
#ifndef FORWARD_H
#define FORWARD_H

#include <jansson.h>

#include "base/errcode.h"
#include "engine/engine.h"

/* Connections one forward carries at once (and 512 in the whole server); more are closed at once. */
#define FORWARD_CONNS_MAX 64

struct forward;

/*
 * Listens on a loopback address of its own (127.x.y.z; forward_host) at
 * host_port (0: a free port) for container's port, each connection run as
 * user; touch(touch_arg) (may be NULL) hears of each connection. 0 with
 * *ret, or -errno with err.
 */
int forward_open(struct engine *e, const char *container, const char *user, unsigned port, unsigned host_port,
		 void (*touch)(void *arg), void *touch_arg, struct forward **ret, struct err *err);
/* New connections go to container (a rollback's); the open ones end with the old one. */
void forward_rebind(struct forward *f, const char *container);
/*
 * No exec starts in the container until forward_release (each hold needs
 * one): returns once those under way have started. For a pause or a
 * commit's pause, since an exec that starts while the container freezes
 * hangs in the runtime, and the engine with it. New connections wait up to
 * 10 s for the release; spares already started are used as they are.
 */
void forward_hold(struct forward *f);
void forward_release(struct forward *f);
unsigned forward_port(const struct forward *f);
unsigned forward_host_port(const struct forward *f);
/* The loopback address it listens on ("127.x.y.z"). */
const char *forward_host(const struct forward *f);
/* {port, host, host_port, connections, accepted, refused, bytes_in, bytes_out} (new reference). */
json_t *forward_json(struct forward *f);
/* Stops listening, ends every connection and waits for them; frees f. NULL is fine. */
void forward_close(struct forward *f);

#endif
