/*
 * session.h - the session registry: one container per session, created with
 * the server's hardening, labelled, looked up by id or name, reaped when idle,
 * and removed when the server exits (unless persistent).
 *
 * Ownership between server instances on one engine is proven, not guessed:
 * each instance holds an flock on a lock file named after its instance id
 * (in $XDG_RUNTIME_DIR or /tmp, per user) for as long as it lives.  At start a
 * server removes the non-persistent containers of instances on this host
 * whose lock it can take (their owner died) and no others.
 */
#ifndef SESSION_H
#define SESSION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"
#include "engine/engines.h"

#define SESSION_ID_LEN 12
/* Hex digits of a checkpoint id (checkpoint.h's CHECKPOINT_ID_LEN). */
#define SESSION_CHECKPOINT_LEN 12
#define SESSION_NAME_MAX 63
/* Hex digits of an instance id (the server's, in its containers' labels and its lock file's name). */
#define SESSION_INSTANCE_LEN 16
/* Label prefix on everything the server creates. */
#define SESSION_LABEL "io.sandbox-mcp"
/* Transient containers (session_opts.transient) allowed past SANDBOX_MAX_SESSIONS. */
#define SESSION_TRANSIENT_EXTRA 2

/* Ports one session may forward to the host at once. */
#define SESSION_FORWARDS_MAX 8
/* Transfers a session may run through its drop at once, and the length of a slot's (hex) name. */
#define SESSION_DROP_SLOTS 4
#define SESSION_DROP_SLOT_LEN 32

enum session_drop {
	SESSION_DROP_UNKNOWN, /* not checked yet */
	SESSION_DROP_USABLE,
	SESSION_DROP_UNUSABLE, /* the exec path, for the session's life */
};

struct agentctl;
struct diskguard_look;
struct egress;
struct egress_conf;
struct exec_result;
struct exec_spec;
struct pyrepl;
struct session_mgr;

struct session {
	char id[SESSION_ID_LEN + 1];
	char name[SESSION_NAME_MAX + 1];
	char container[ENGINE_ID_LEN + 1];
	char image[256];
	char image_id[80]; /* the engine's id of image when the container was made ("sha256:...") */
	char user[64];	   /* exec user, never root */
	char network[32];
	char runtime[64];
	char owner[CALL_PRINCIPAL_MAX + 1]; /* the principal that made it; others cannot see it */
	/* the engine its container lives on (engines.h; session_engine), for its whole life */
	struct engine *engine;
	char engine_name[ENGINES_NAME_MAX + 1];
	bool persistent;
	bool read_only;
	uint64_t memory_mb;
	double cpus;
	uint64_t pids;
	int64_t created;   /* unix seconds */
	int64_t last_used; /* unix seconds */
	/* owned by the registry */
	int refs;
	int busy;
	bool closed;
	bool adopted;	  /* found at start (persistent), not created by us */
	json_t *warnings; /* engine warnings at create */
	bool pulled;	  /* session_create pulled the image, taking pull_ms */
	int64_t pull_ms;
	/* run_python's interpreter (pyrepl.h), started on first use; used only by calls on this session */
	struct pyrepl *repl;
	/*
	 * run_command's agent (agentctl.h): agent_installed when it was copied
	 * into the container at create; started on first use and restarted
	 * after it died; used only by calls on this session.
	 */
	bool agent_installed;
	struct agentctl *agent;
	/*
	 * Held while a call uses the agent (session_agent_run). Tool calls on a
	 * session are serialized, but resources/read and the HTTP file links
	 * are not: one that finds the agent in use takes the exec path.
	 */
	atomic_bool agent_busy;
	/*
	 * Transfers through the drop (drop.h): whether this session can use
	 * it (enum session_drop, decided by the agent's dropcheck at the first
	 * transfer), the uid and gid the agent runs as, the slot names
	 * (secret: never logged at info, never in a result), the slots in use
	 * (bits, taken and given back atomically) and those whose directory
	 * exists in the container. Set up by the session's own tool calls,
	 * which are serialized.
	 */
	atomic_int drop_state;
	unsigned drop_uid, drop_gid;
	char drop_slot[SESSION_DROP_SLOTS][SESSION_DROP_SLOT_LEN + 1];
	atomic_uint drop_busy;
	atomic_uint drop_made;
	atomic_uint drop_dirty; /* slots a failed transfer may have left something in: cleared before reuse */
	/*
	 * What the session did that session_export replays, oldest first: an
	 * array of objects {"kind": "pip_install" | "git_clone" | ..., ...}.
	 * Appended by tools on this session's FIFO (session_record); owned here.
	 */
	json_t *history;
	/* background pip installs: package as given -> its job folder in the container */
	json_t *pip_jobs;
	/* its egress relay and proxy (egress.h), or NULL when it has none; changed by its own calls */
	struct egress *egress;
	/*
	 * Save points (savepoint.h): the checkpoint its container was made
	 * from and that image's id ("" when made from image: image_id is
	 * then the container's image); paused by session_pause (under the
	 * registry's lock, like busy); a sentence its next tool call says
	 * first (it was brought back from an idle snapshot), owned, taken by
	 * that call.
	 */
	char checkpoint[SESSION_CHECKPOINT_LEN + 1];
	char checkpoint_image[80];
	bool paused;
	int64_t paused_at;
	char *notice;
	/*
	 * Its ports on the host's loopback (forward.h): added and removed by its
	 * own calls, read by session_list under the registry's lock (so changed
	 * under it too), closed with its container.
	 */
	struct forward *forwards[SESSION_FORWARDS_MAX];
	unsigned nforwards;
	/*
	 * The disk cap on an engine without a quota (diskguard.h): the bytes
	 * its writable layer held at the last look (-1: not looked at yet),
	 * what it may hold while over the cap (0: under it), the times it was
	 * restarted for it since it last went over, and frozen once that
	 * reached DISKGUARD_STRIKES. Under the registry's lock.
	 */
	int64_t disk_used;
	int64_t disk_mark;
	unsigned disk_strikes;
	bool disk_frozen;
	bool disk_restarting;		  /* calls wait for the restart to end (session_get, session_forget) */
	struct diskguard_look *disk_look; /* the guard's own (diskguard.c), set under the lock */
	/*
	 * Holds of session_forwards_hold under way (its container frozen or about
	 * to be), and the disk guard starting its agent (an exec, which a freeze
	 * would hang) or walking: each waits for the other. Under the registry's lock.
	 */
	unsigned freezes;
	bool guard_busy;
	struct session_mgr *mgr; /* its registry, once listed (a forward's connections mark it used) */
};

/* The agent's path when s has one (exec_spec.guard: its commands run behind the agent's filter), else NULL. */
const char *session_guard(const struct session *s);

/* Hears a pull's progress: bytes so far, bytes in all (0: not known yet), a line for people (pull.h). */
typedef void (*session_pull_report_fn)(void *arg, double done, double total, const char *msg);

struct session_opts {
	const char *image; /* NULL: the configured default */
	const char *name;
	bool persistent;
	const char *network; /* "none" (default), or an engine network name */
	json_t *egress;	     /* {"allow": [...], "presets": [...]} (egress.h), or NULL: none */
	json_t *env;	     /* object of strings, or NULL */
	uint64_t memory_mb;  /* 0: default */
	double cpus;	     /* 0: default */
	bool read_only;
	const char *runtime;
	const char *engine; /* a configured engine's name (engines.h); NULL: the default engine */
	/*
	 * The server's own short-lived container (session_export's look at a
	 * fresh base image): may go SESSION_TRANSIENT_EXTRA past
	 * SANDBOX_MAX_SESSIONS, so that a full server can still export.
	 */
	bool transient;
	/* the implicit session of calls without session_id: the one allowed the name "default" */
	bool default_session;
	/* hears the progress of a pull of a missing image (pull.h); may be NULL */
	session_pull_report_fn pull_report;
	void *pull_arg;
	/* made from a checkpoint (savepoint.c) instead of image; NULL: from image */
	const struct session_from *from;
	/* the principal it is for, where no call says it (a fork's threads); NULL: the call's */
	const char *owner;
	/* egress set up as for o->egress, but no relay started: a rollback moves the session's own (egress_move) */
	bool no_relay;
};

/*
 * What a session made from a checkpoint starts from: the checkpoint's
 * image (already judged: the server made it, for this principal), and
 * what the lineage began with, which session_export starts FROM.
 */
struct session_from {
	const char *checkpoint; /* its id */
	const char *image_id;	/* its image */
	const char *base_image; /* the image the first session of the lineage was made from, as named */
	const char *base_id;	/* and that image's id */
	const char *user;	/* "uid:gid" its sessions ran as */
	const char *id;		/* keep this session id (an idle snapshot brought back); NULL: a new one */
	json_t *history;	/* the steps session_export replays (copied); may be NULL */
	bool ready;		/* its image has this server's agent and the workspace: nothing to copy in */
};

/* es: the server's engines (borrowed; outlives the manager). */
int session_mgr_create(const struct config *cfg, struct engines *es, struct session_mgr **ret, struct err *err);
/* Removes what dead instances left and adopts persistent sessions. Errors are logged, not fatal. */
void session_mgr_start(struct session_mgr *m);
/* Stops the reaper and removes this instance's non-persistent containers (idempotent). */
void session_mgr_cleanup(struct session_mgr *m);
/*
 * After session_mgr_cleanup: false when it left removals to the janitor (the
 * engine took longer than the exit waits): janitor_leave, not janitor_release.
 */
bool session_mgr_exit_done(struct session_mgr *m);
/* session_mgr_cleanup, then frees everything. */
void session_mgr_destroy(struct session_mgr *m);
const char *session_mgr_instance(const struct session_mgr *m);
/* The container this server runs in (its full id, servercontainer.h), or "" when it runs on a host. */
const char *session_mgr_container(struct session_mgr *m);
/*
 * The exit of an instance whose server died without one (janitor.h):
 * removes its containers that are not persistent sessions on every engine
 * of es. Its lock is not touched: a server starting now must find it free
 * to adopt the persistent ones (the same containers are never removed and
 * adopted), and the file goes at a later start (prune_locks).
 */
void session_reap_instance(struct engines *es, const char *instance);

/*
 * Runs spec through the session's agent (agentctl_run), starting it if it is
 * not running. True when it did, with exec_run's result in *ret_r, xr and
 * err; false when the call must take the exec path instead (no agent in
 * this container, it would not start, it could not start this command or
 * its built-in, or another call is using it), with xr released and err clear.
 */
bool session_agent_run(struct engine *e, struct call *call, struct session *s, const struct exec_spec *spec,
		       struct exec_result *xr, struct err *err, int *ret_r);
/*
 * Runs spec in s: through its agent when session_agent_run can, else in an
 * exec of its own (exec_run). The one way a command runs in a session; the
 * transfers that fall back to another path than an exec call
 * session_agent_run themselves. exec_run's result.
 */
int session_run(struct call *call, struct session *s, const struct exec_spec *spec, struct exec_result *xr,
		struct err *err);

/* Creates a session; *ret holds a reference (session_put it). */
int session_create(struct session_mgr *m, struct call *call, const struct session_opts *o, struct session **ret,
		   struct err *err);
/*
 * Finds a session by id or name (NULL: the default session, created on first
 * use) among those of call's principal (call_principal; a NULL call is the
 * server itself and sees all). Marks it busy and used; *ret holds a reference.
 * session_create, _close, _list_json and _key keep to the principal the same way.
 */
int session_get(struct session_mgr *m, struct call *call, const char *ref, struct session **ret, struct err *err);
/*
 * session_get, where report (may be NULL) hears the progress of the pull
 * that creating the default session may need (pull.h), so a tool called
 * without session_create still shows it.
 */
int session_get_reporting(struct session_mgr *m, struct call *call, const char *ref, session_pull_report_fn report,
			  void *arg, struct session **ret, struct err *err);
void session_put(struct session_mgr *m, struct session *s);
/* Stops and removes the session's container. */
int session_close(struct session_mgr *m, struct call *call, const char *ref, struct err *err);
/*
 * Forgets a session whose container is gone (found out by a failed call);
 * false when it runs after all (the disk guard restarted it under the call): kept.
 */
bool session_forget(struct session_mgr *m, struct session *s);
/* The sessions, with their containers' real state (new reference). */
json_t *session_list_json(struct session_mgr *m, struct call *call);
/* The engine s's container lives on: every engine call for s goes there. */
struct engine *session_engine(const struct session *s);
/* One session as JSON (new reference). */
json_t *session_json(const struct session *s);
/* The dispatch key for calls of principal naming ref (id or name; NULL: default). */
void session_key(struct session_mgr *m, const char *principal, const char *ref, char *out, size_t outsz);
/* Live sessions of principal owner; NULL: of every principal. */
unsigned session_count(struct session_mgr *m, const char *owner);
/* The operator's egress settings (egress.h), for the tools. */
const struct egress_conf *session_egress_conf(const struct session_mgr *m);
/* Warm-pool members ready to be handed out (pool.h). */
size_t session_pool_ready(struct session_mgr *m);
/* Remembers that a background pip install of package writes its log and status in dir. */
void session_pip_job(struct session *s, const char *package, const char *dir);
/* The job folder of the last background install of package, or NULL (borrowed). */
const char *session_pip_job_dir(const struct session *s, const char *package);
/*
 * Forwards port of s's container to host_port on a loopback address of the
 * host (forward.h; 0: a free port); an already forwarded port is -EEXIST.
 * 0 with *ret_host_port and ret_host (the address), or -errno with err.
 * Only for calls on s's FIFO.
 */
int session_forward_open(struct session_mgr *m, struct session *s, unsigned port, unsigned host_port,
			 unsigned *ret_host_port, char ret_host[16], struct err *err);
/* Ends the forward of port (-ENOENT when there is none). */
int session_forward_close(struct session_mgr *m, struct session *s, unsigned port);
/* s's forwards as JSON (new reference). */
json_t *session_forwards_json(struct session_mgr *m, struct session *s);
/*
 * Holds (hold true) or releases every forward of s (forward_hold): around
 * anything that pauses its container. A hold only on s's FIFO.
 */
void session_forwards_hold(struct session_mgr *m, struct session *s, bool hold);
/*
 * For the preview server: the owner of the live session id (of any
 * principal) into owner, and the address its forward of port listens on.
 * 0, or -ENOENT when there is no such session or forward.
 */
int session_forward_find(struct session_mgr *m, const char *id, unsigned port, char owner[CALL_PRINCIPAL_MAX + 1],
			 char host[16], unsigned *host_port);
/* The sentence s's next tool call says first (it was brought back from an idle snapshot), or NULL; the caller frees it. */
char *session_take_notice(struct session_mgr *m, struct session *s);
/* Most steps a session's history keeps; one {"kind":"truncated"} entry follows them. */
#define SESSION_HISTORY_MAX 1000
/*
 * Appends entry (stolen; an object) to s->history with "kind" set to kind.
 * Only for calls running on s's FIFO, which is what orders them.
 */
void session_record(struct session *s, const char *kind, json_t *entry);

#endif
