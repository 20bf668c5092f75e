/*
 * savepoint.h - what sessions do with checkpoints (docs/checkpoints.md):
 * take one, roll back to one, fork N sessions from one, pause and resume,
 * bring back an idle snapshot, and let go of them when a session closes.
 *
 * A checkpoint keeps a session's filesystem (outside its volumes and
 * /tmp), env, workdir and settings; never its processes nor the Python
 * interpreter's memory. Whatever is restored says what was not.
 */
#ifndef SAVEPOINT_H
#define SAVEPOINT_H

#include <stdbool.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "sandbox/checkpoint.h"
#include "sandbox/session.h"

/*
 * Checkpoints s (its container paused meanwhile). Refused for a read-only
 * session (its workspace is a volume, which no commit holds), and past the
 * caps (SANDBOX_SESSION_CHECKPOINTS, _MAX_CHECKPOINTS, _CHECKPOINT_MB).
 * 0 with *ret (checkpoint_finish it), or -errno.
 */
int savepoint_checkpoint(struct session_mgr *m, struct call *call, struct session *s, const char *name,
			 enum checkpoint_kind kind, struct checkpoint *ret, struct err *err);
/*
 * call's principal's checkpoints on every engine, oldest first, as JSON
 * objects (id, name, session_id, session_name, parent, kind, created,
 * size, cells, sessions made from it, mine: of session s). New reference.
 */
int savepoint_list(struct session_mgr *m, struct call *call, const struct session *s, json_t **ret, struct err *err);
/* Deletes call's principal's checkpoint ref (id or name); the sessions made from it keep running. */
int savepoint_delete(struct session_mgr *m, struct call *call, const char *ref, struct checkpoint *ret,
		     struct err *err);
/*
 * Rolls s back to ref, a checkpoint of s or of its lineage: a new container
 * from it takes the place of s's (same id, name and settings; its
 * processes and interpreter end). *cells: run_python cells whose
 * variables were lost. 0 with *ret, or -errno (s unchanged).
 */
int savepoint_rollback(struct session_mgr *m, struct call *call, struct session *s, const char *ref,
		       struct checkpoint *ret, unsigned *cells, struct err *err);
/*
 * count new sessions from checkpoint ref (one of call's principal's), or,
 * with ref NULL, from s as it is now (checkpointed first). Named
 * <name>-1..<name>-count (name NULL: s's or the checkpoint's session's).
 * All or nothing: on failure no container, and no checkpoint made for
 * it, remains. 0 with *ret (count references: session_put each, free the
 * array) and *from, or -errno.
 */
int savepoint_fork(struct session_mgr *m, struct call *call, struct session *s, const char *ref, unsigned count,
		   const char *name, struct session ***ret, struct checkpoint *from, struct err *err);
/*
 * A transient, unnamed session made from call's principal's checkpoint
 * ref, for the server's own look at it (session_export {checkpoint}):
 * close it when done. 0 with *ret (a reference) and *from, or -errno.
 */
int savepoint_open(struct session_mgr *m, struct call *call, const char *ref, struct session **ret,
		   struct checkpoint *from, struct err *err);
/* Pauses s (the cgroup freezer: memory kept, no CPU). Its next tool call resumes it. */
int savepoint_pause(struct session_mgr *m, struct call *call, struct session *s, struct err *err);
/* Resumes s if it is paused (session_get does this for every call). */
int savepoint_resume(struct session_mgr *m, struct call *call, struct session *s, struct err *err);
/*
 * Brings back call's principal's session ref (id or name; NULL: the
 * default session) from its idle snapshot, if it has one: the same id,
 * name and settings, and a notice its next call says. 0 with *ret (a
 * reference), -ENOENT when there is none, or -errno with err.
 */
int savepoint_restore(struct session_mgr *m, struct call *call, const char *ref, struct session **ret, struct err *err);
/*
 * Lets go of what s's checkpoints held once its container is gone:
 * by_user (session_close) also drops its idle snapshot, since whoever
 * closed it does not want it back; then the engine's checkpoints that
 * nothing needs are removed (checkpoint_sweep).
 */
void savepoint_closed(struct session_mgr *m, struct session *s, bool by_user);
/* The sweep on every engine (start-up, exit, a dead instance's removal). */
void savepoint_sweep_all(struct session_mgr *m);

#endif
