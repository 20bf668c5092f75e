/*
 * servercontainer.h - whose sessions a server in a container left
 * (servercontainer.c). A lock file or a process inside a container is seen
 * by no other container, so a server killed in its container (`docker kill`,
 * Docker Desktop quitting) left its sandboxes to no one. A server that runs
 * in a container on the engine it uses labels its sessions with that
 * container's id; a later server on that engine asks the engine whether
 * that container still runs.
 */
#ifndef SERVERCONTAINER_H
#define SERVERCONTAINER_H

#include <stdbool.h>

#include "engine/engine.h"
#include "sandbox/session.h"

/* On every container a server makes: the id of the container the server ran in there, or "". */
#define SERVERCONTAINER_LABEL SESSION_LABEL ".server"

/*
 * The id of the container this process runs in: the container whose
 * hostname file is mounted at /etc/hostname (Docker's and Podman's way),
 * read from /proc/self/mountinfo. "" outside a container, or when the
 * mounts do not say. Pure of the engine.
 */
void servercontainer_self(char out[ENGINE_ID_LEN + 1]);

/*
 * mountinfo's text (n bytes): the container id as servercontainer_self
 * finds it, into out ("" when none). Exposed for the unit test and the fuzzer.
 */
void servercontainer_parse(const char *text, size_t n, char out[ENGINE_ID_LEN + 1]);

/*
 * Whether container id runs on engine e, as the engine says: 1 running
 * (or restarting, or paused), 0 gone or stopped, -errno when the engine did
 * not answer (err): then nothing may be judged.
 */
int servercontainer_running(struct engine *e, const char *id, struct err *err);

/*
 * Whether this server's container (self, from servercontainer_self) is one
 * on e: its id found there with this process's hostname. Only then do its
 * sessions on e carry the label: an id another engine knows nothing of would
 * look gone to it.
 */
bool servercontainer_on(struct engine *e, const char *self);

#endif
