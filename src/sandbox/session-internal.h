/*
 * session-internal.h - the registry's insides, shared by session.c,
 * savepoint.c (checkpoints, rollback, forks, pause), container.c,
 * diskguard.c and scan.c (the start-up scan) and nothing else: tools see
 * session.h only.
 */
#ifndef SESSION_INTERNAL_H
#define SESSION_INTERNAL_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include "sandbox/egress.h"
#include "sandbox/session.h"

struct session_mgr {
	const struct config *cfg;
	struct engines *engines; /* borrowed: each session names its own (session_engine) */
	char instance[SESSION_INSTANCE_LEN + 1];
	char host[65];
	char lock_dir[PATH_MAX];
	char lock_path[PATH_MAX + 32]; /* this instance's lock, named in the .lock label */
	/* proc and self: set by the starter thread first thing, then known (session_wait_known) */
	char proc[96];		      /* "<pid>:<start time>:<boot id>" of this process, the .proc label */
	char self[ENGINE_ID_LEN + 1]; /* the container this server runs in, or "" (servercontainer.h) */
	atomic_uint self_on;	      /* bit i: that container is on engine i, so its sessions there say so */
	int lock_fd;
	json_t *users;	/* image id -> "uid:gid" its sessions run as (image_user) */
	json_t *held;	/* instance -> fd of the dead instance's lock this one took over */
	size_t adopted; /* persistent sessions adopted at start (they do not count as created) */

	pthread_mutex_t lock;
	pthread_cond_t wake; /* reaper wake-up */
	struct session **list;
	size_t len, cap;
	bool stopping;
	bool known; /* proc and self are set */
	bool ready; /* start-up scan done (adoption, cleanup) */
	bool swept; /* and the checkpoints it left nothing for removed (savepoint_sweep_all) */
	pthread_t reaper;
	bool reaper_started;
	pthread_t guard; /* the disk cap where the engine has no quota (diskguard.h) */
	bool guard_started;
	struct call
		*guard_stop;   /* the guard's engine calls: cancelled at exit, so the join never waits on the engine */
	atomic_bool exit_left; /* the exit cancelled removals the engine was slow with: the janitor's */
	pthread_t starter;
	bool starter_started;
	/* creates under way, each holding a place under the limit and its name */
	struct pending *pending;
	size_t npending;
	struct pool *pool;	   /* the warm pool (pool.h), filled after the start-up scan */
	struct egress_conf egress; /* the operator's egress settings (egress.h) */
	/*
	 * Save points (savepoint.c): savepoint_lock orders checkpoints against
	 * their caps; pinned
	 * holds the checkpoint ids an operation is making sessions from (under
	 * lock), which no sweep removes meanwhile.
	 */
	pthread_mutex_t savepoint_lock;
	pthread_mutex_t restore_lock; /* idle snapshots come back one at a time, never behind a commit */
	json_t *pinned;
	atomic_bool savepoints_used; /* a checkpoint was seen: closes sweep (else they skip the engine calls) */
	/*
	 * Bit i: on engine i a create or a removal failed (the engine went away
	 * mid-way), so a container of this instance may be there that no session
	 * holds: swept at exit (sweep_own).
	 */
	atomic_uint orphans;
};

struct pending {
	const char *name; /* NULL: unnamed */
	const char *owner;
	struct pending *next;
};

/* Unix seconds now. */
int64_t session_now(void);
/* n random lowercase hex digits and a NUL into out. */
void session_random_hex(char *out, size_t n);
/* Waits for the start-up scan (adoption, cleanup) to end. */
void session_wait_ready(struct session_mgr *m);
/* Blocks until proc and self are set (the starter's first step, microseconds). */
void session_wait_known(struct session_mgr *m);
bool session_name_valid(const char *name);
/* "uid:gid" in numbers, neither 0: the only user a session made from labels may run as. */
bool session_user_valid(const char *u);
/* owner NULL: the server itself, which sees every principal's sessions. */
bool session_owns(const struct session *s, const char *owner);
/* owner's session with id or name ref (under m->lock). */
struct session *session_find_locked(struct session_mgr *m, const char *owner, const char *ref);
/* Takes s out of the list (under m->lock); it is marked closed. */
void session_unlink_locked(struct session_mgr *m, struct session *s);
/*
 * Holds a place under the session limits, and pend->name, for a session
 * being made; session_unreserve gives it back once the session is listed
 * or failed. 0, or -EUSERS (ERRCODE_SESSION_LIMIT) / -EEXIST with err.
 */
int session_reserve(struct session_mgr *m, const struct session_opts *o, struct pending *pend, struct err *err);
void session_unreserve(struct session_mgr *m, struct pending *pend);
/* A session's container made, started and checked, not listed yet (*ret is the caller's). */
int session_container_new(struct session_mgr *m, struct call *call, const struct session_opts *o, const char *image,
			  const char *network, bool pooled, struct session **ret, struct err *err);
/* Lists s (from session_container_new); *ret holds the caller's reference. On failure s is removed. */
int session_list_new(struct session_mgr *m, struct session *s, struct session **ret, struct err *err);
/* Removes s's container (errors logged; the engine is marked for the exit's sweep). */
void session_remove_container(struct session_mgr *m, struct session *s);
/* The registry's side of the warm pool (session-pool.c). */
extern const struct pool_ops session_pool_ops;
/* The idle TTL's thread (session-reap.c); arg is the registry. */
void *session_reaper_main(void *arg);
/* The exit's: removes the containers of all[0..n) at once, within a bound (session-remove.c). */
void session_remove_all(struct session_mgr *m, struct session **all, size_t n);
/* Ends s's forwards: they are about its container (taken out under the lock, closed outside it). */
void session_forwards_close(struct session_mgr *m, struct session *s);
/* Checks that the engine applied the hardening asked for s (an engine may ignore options). */
int session_verify_hardening(json_t *inspect, const struct session *s, struct err *err);
/* Notes that engine e may hold a container of this instance that no session holds (swept at exit). */
void session_mark_orphans(struct session_mgr *m, const struct engine *e);
/* The .server label for a container on engine e: this server's container when it is on e, else "". */
const char *session_server_label(const struct session_mgr *m, const struct engine *e);
/*
 * The labels that make a container on e this instance's and nothing more
 * (not persistent, no session): what the scans, the exit and the janitor
 * go by. For the containers that are no session: probes, claims.
 */
json_t *session_instance_labels(struct session_mgr *m, const struct engine *e);
/* Frees s and what it holds (its agent, interpreter, egress), not its container. */
void session_free(struct session *s);

#endif
