/*
 * drop.h - file_upload and file_download through the drop: the bytes move
 * with the engine's archive endpoints (PUT and GET /containers/{id}/archive,
 * what `docker cp` uses, faster than an exec'd tar's stdin and stdout), and
 * the session's agent moves them between the drop and the user's paths as
 * the sandbox user (docs/agent.md, "Transfers through the drop").
 *
 * The engine acts as root there and follows symlinks, so it only ever
 * touches AGENTCTL_DROP/<slot>: the drop is root's and 0711 (the user can
 * neither list, create nor rename in it), each slot a secret 32-hex name
 * (never in a result, an error or a log line at info) owned by the user.
 * The agent checks that chain (dropcheck) at the session's first transfer;
 * a session that fails it, or has no agent, uses the exec path (xfer.h)
 * for its whole life, and so does a transfer that finds no free slot.
 */
#ifndef DROP_H
#define DROP_H

#include <stdbool.h>

#include "base/call.h"
#include "base/errcode.h"
#include "base/tar.h"
#include "engine/engine.h"
#include "sandbox/session.h"
#include "sandbox/xfer.h"

/* The agent's exit code for a staged copy over the byte limit (its other codes are enum xfer_exit's). */
#define DROP_EXIT_TOO_LARGE 27
/* drop_pull's answer when nothing was done and the caller takes the exec path. */
#define DROP_FALLBACK 1

/*
 * A free slot of s, checking the drop first on the session's first
 * transfer: the slot's index, or -1 when the transfer takes the exec path
 * (no agent, the drop unusable, every slot in use). drop_release gives it back.
 */
int drop_take(struct engine *e, struct call *call, struct session *s);
void drop_release(struct session *s, int slot);

/*
 * Upload: PUTs the tar produce yields (its names and owners moved under
 * the slot) and has the agent place its top entry base into dir (made if
 * missing; overwrite as upload_script). 0 when the agent's place ran (its
 * exit code and stderr in *ret: enum xfer_exit), or -errno with err (the
 * PUT failed, was cancelled or produce failed; the agent was lost). The
 * slot is empty again in every case.
 */
int drop_push(struct engine *e, struct call *call, struct session *s, int slot, xfer_produce_fn produce, void *arg,
	      const char *dir, const char *base, bool overwrite, struct xfer_result *ret, struct err *err);

/*
 * Download: the agent stages path (a folder's contents, or the file) in the
 * slot, then the GET's tar is read with tar_read (lim) into sink under the
 * names download_script's tar gives ("" and "x" for a folder, the base name
 * for a file; skipped names as "./x"). 0 when it ran: ret->exit_code is the
 * stage's (0, 2 with what it could not copy on ret->stderr_text, or enum
 * xfer_exit's refusal with nothing read); -errno with err (the GET or the
 * reader failed, the copy is over lim->total_size); DROP_FALLBACK when the
 * agent could not stage and nothing was done. The slot is emptied after.
 */
int drop_pull(struct engine *e, struct call *call, struct session *s, int slot, const char *path,
	      const struct tar_limits *lim, const struct tar_sink *sink, struct xfer_result *ret, struct err *err);

/*
 * Takes the drop's path and the slot names of s out of text (NUL-terminated,
 * in a buffer of cap bytes): each becomes DROP_SCRUBBED, and so does any run
 * of DROP_SCRUB_RUN or more hex digits that is part of a slot name (a name
 * a cap cut short). Never longer than before when cap is the buffer's size.
 */
#define DROP_SCRUBBED "the staged copy"
#define DROP_SCRUB_RUN 6
void drop_scrub(const struct session *s, char *text, size_t cap);

#endif
