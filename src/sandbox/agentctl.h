/*
 * agentctl.h - the server's side of sandbox-mcp-agent (src/agent/agent.c,
 * agentproto.h, docs/agent.md): puts it into a container before start, starts
 * it once per session over one attached exec, and runs commands through it.
 *
 * The agent lives at AGENTCTL_PATH on the container's own filesystem, in a
 * directory owned by root and both mode 0555, so the sandbox user (never
 * root) can run it but not replace it.  A read-only root filesystem refuses
 * that copy (the engine says "container rootfs is marked read-only", even
 * before start), but not one into a volume: such sessions mount an
 * anonymous volume at AGENTCTL_DIR (root's, mode 0755) and the agent is
 * copied into it.
 *
 * A struct agentctl is used by one thread at a time (calls on a session are
 * serialized); it owns its stream.  Whatever goes wrong with the agent, the
 * caller can fall back to exec_run: agentctl_run says which case it was.
 */
#ifndef AGENTCTL_H
#define AGENTCTL_H

#include <stdbool.h>

#include "base/call.h"
#include "base/errcode.h"
#include "engine/engine.h"
#include "sandbox/exec.h"

/* Where the agent is put in every container. */
#define AGENTCTL_DIR "/.sandbox-mcp"
#define AGENTCTL_PATH AGENTCTL_DIR "/agent"
/*
 * The drop: root's, mode 0711, beside the agent. The engine's archive
 * endpoints read and write only inside its secret slots (drop.h).
 */
#define AGENTCTL_DROP AGENTCTL_DIR "/drop"
/* From exec start to the agent's hello. */
#define AGENTCTL_START_TIMEOUT_MS 10000

struct agentctl;

/* True when this build carries the agent (musl-gcc was found). */
bool agentctl_built(void);
/*
 * An id of the agent this server carries ("<length>-<FNV-1a 64 hex>"), in
 * the labels of a checkpoint: a session made from a checkpoint with the same
 * one has the agent in its image already, and is not sent it again.
 */
const char *agentctl_build_id(void);
/*
 * Copies the agent and the empty drop into a created, not yet started
 * container: with their directory into the root, or (into_volume) into
 * the volume mounted at AGENTCTL_DIR. 0, or -errno with err (-EROFS when the engine refused to
 * write a read-only root filesystem).
 */
int agentctl_install(struct engine *e, struct call *call, const char *container_id, bool into_volume, struct err *err);
/* Starts the agent as user and waits for its hello. 0 with *ret, or -errno with err. */
int agentctl_start(struct engine *e, struct call *call, const char *container_id, const char *user,
		   struct agentctl **ret, struct err *err);
/*
 * The same with role as its one argument, which names it in `ps` and
 * changes nothing else (AGENTCTL_ROLE_WALKER: the disk guard's).
 */
int agentctl_start_as(struct engine *e, struct call *call, const char *container_id, const char *user, const char *role,
		      struct agentctl **ret, struct err *err);
#define AGENTCTL_ROLE_WALKER "--walker"
/* False once the agent is known to be gone; looks at the stream without blocking. */
bool agentctl_alive(struct agentctl *a);
/*
 * Runs spec (argv or shell_command, env, workdir, stdin_data, timeout_ms,
 * cap, on_data, on_tick) through the agent, filling res as exec_run does,
 * plus the usage figures. Returns 0 when the command ran or was killed (all
 * in res; res->agent_lost when the agent died on the way, its process group
 * then killed through the engine); -EAGAIN when nothing ran and the caller
 * should use exec_run instead (the agent is gone, could not fork or enter
 * the directory: the caller destroys it); -ENOENT with
 * ERRCODE_SHELL_NOT_FOUND when a shell command needs /bin/sh and there is
 * none. res must be released with exec_result_finish in every case.
 */
int agentctl_run(struct agentctl *a, struct call *call, const struct exec_spec *spec, struct exec_result *res,
		 struct err *err);
/* Closes the stream (the agent kills a running command and exits) and frees a. NULL is a no-op. */
void agentctl_destroy(struct agentctl *a);

#endif
