/*
 * checkpoint.h - save points kept by the engine (docs/checkpoints.md): a
 * checkpoint is an image committed from a session's container, tagged
 * sandbox-mcp-checkpoint:<id> and labelled with what restoring it needs
 * (the session's settings, its history for session_export, who owns it).
 *
 * The engine is the only registry: a list is one image listing, so the
 * next server sees what this one made, and nothing is kept here that
 * could disagree with it. This file knows images and labels; making
 * sessions from a checkpoint is savepoint.c's.
 */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "engine/engine.h"
#include "engine/engines.h"
#include "sandbox/session.h"

#define CHECKPOINT_ID_LEN 12
#define CHECKPOINT_NAME_MAX 63
/* The repository of checkpoint tags: the server's own, never a commit's or an export's (image.h). */
#define CHECKPOINT_REPOSITORY "sandbox-mcp-checkpoint"
/* The label every checkpoint carries (its id) and the ones beside it. */
#define CHECKPOINT_LABEL SESSION_LABEL ".checkpoint"
#define CHECKPOINT_LABEL_NAME CHECKPOINT_LABEL ".name"
#define CHECKPOINT_LABEL_SESSION CHECKPOINT_LABEL ".session"
#define CHECKPOINT_LABEL_SESSION_NAME CHECKPOINT_LABEL ".session-name"
#define CHECKPOINT_LABEL_PARENT CHECKPOINT_LABEL ".parent"
#define CHECKPOINT_LABEL_KIND CHECKPOINT_LABEL ".kind"
#define CHECKPOINT_LABEL_CREATED CHECKPOINT_LABEL ".created"
#define CHECKPOINT_LABEL_CELLS CHECKPOINT_LABEL ".cells"
#define CHECKPOINT_LABEL_SETTINGS CHECKPOINT_LABEL ".settings"
#define CHECKPOINT_LABEL_HISTORY CHECKPOINT_LABEL ".history"
#define CHECKPOINT_LABEL_AGENT CHECKPOINT_LABEL ".agent"
/* Bytes of a session's history a checkpoint keeps (as JSON, in a label); past it the export says "truncated". */
#define CHECKPOINT_HISTORY_MAX (8u << 10)

/* Why a checkpoint was made: asked for, before a fork of the live session, or when the idle TTL ended it. */
enum checkpoint_kind { CHECKPOINT_MANUAL, CHECKPOINT_FORK, CHECKPOINT_IDLE };

/* What one checkpoint image says (checkpoint_read). */
struct checkpoint {
	char id[CHECKPOINT_ID_LEN + 1];
	char name[CHECKPOINT_NAME_MAX + 1];
	char session[SESSION_ID_LEN + 1]; /* the session it was taken of */
	char session_name[SESSION_NAME_MAX + 1];
	char parent[CHECKPOINT_ID_LEN + 1]; /* the checkpoint that session's container was made from, or "" */
	char image_id[80];
	char owner[128]; /* image_owner's form */
	enum checkpoint_kind kind;
	int64_t created;       /* unix seconds */
	int64_t created_ms;    /* the same in ms: orders checkpoints made within one second */
	unsigned cells;	       /* run_python cells its interpreter had run when it was taken */
	int64_t size;	       /* bytes it adds to what it was made from */
	bool tagged;	       /* still under its tag (a deleted one may linger untagged until its children go) */
	bool agent_here;       /* its image holds this server\'s agent (agentctl_build_id), installed */
	json_t *settings;      /* owned: image, image_id, user, memory_mb, cpus, network, runtime, engine, egress */
	json_t *history;       /* owned: the session's steps for session_export (an array) */
	struct engine *engine; /* where it lives (set by whoever listed it) */
	char engine_name[ENGINES_NAME_MAX + 1];
};

void checkpoint_finish(struct checkpoint *c);
const char *checkpoint_kind_name(enum checkpoint_kind k);

/*
 * Every checkpoint on engine e, oldest first, each with its size (what it
 * adds to its parent image). owner (image_owner's form) keeps to one
 * principal's; NULL: all. *ret is an array of *n (checkpoint_list_free it).
 */
int checkpoint_list(struct engine *e, struct call *call, const char *owner, struct checkpoint **ret, size_t *n,
		    struct err *err);
void checkpoint_list_free(struct checkpoint *list, size_t n);
/*
 * The checkpoint ref names among list[0..n): its id, or else a name, among
 * those of session (NULL: any of them). NULL with err set to
 * ERRCODE_CHECKPOINT_NOT_FOUND, or ERRCODE_INVALID_ARGUMENT when a name is
 * ambiguous.
 */
const struct checkpoint *checkpoint_find(const struct checkpoint *list, size_t n, const char *ref, const char *session,
					 struct err *err);

/* What a new checkpoint records beside the container's filesystem. */
struct checkpoint_spec {
	const char *name; /* may be NULL */
	enum checkpoint_kind kind;
	const char *owner;  /* image_owner's form */
	const char *parent; /* the checkpoint the container was made from, or "" */
	unsigned cells;
	bool agent;	  /* the session\'s container has this server\'s agent installed */
	json_t *settings; /* borrowed */
	json_t *history;  /* borrowed; may be NULL */
};

/*
 * Commits container (paused meanwhile) as a new checkpoint with spec's
 * labels and config's settings (image_commit_config), tagged in one step.
 * 0 with *ret filled (checkpoint_finish it), or -errno.
 */
int checkpoint_make(struct engine *e, struct call *call, const char *container, const char *session_id,
		    const char *session_name, json_t *config, const struct checkpoint_spec *spec,
		    struct checkpoint *ret, struct err *err);
/* Untags and removes checkpoint c; an image a container or a newer checkpoint rests on stays until they go. */
int checkpoint_remove(struct engine *e, struct call *call, const struct checkpoint *c, struct err *err);

/*
 * Removes the checkpoints on e that nothing needs any more: not an idle
 * snapshot still to be brought back, taken of a session whose container
 * is gone, and not the image of a container (the engine refuses those).
 * pinned (may be NULL) names checkpoint ids an operation of this server is
 * using right now. Errors are logged. Returns how many checkpoints it saw.
 */
size_t checkpoint_sweep(struct engine *e, const json_t *pinned);

#endif
