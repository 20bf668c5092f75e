/*
 * exec.h - runs one process in a session's container and collects its output,
 * with a deadline that really kills it.
 *
 * Every process is started through a tiny /bin/sh wrapper that first reports
 * its pid on stderr and then execs the real argv, so the process is the
 * leader of its own session and process group (the engine makes every exec a
 * session leader).  On timeout or cancellation a second exec kills that group
 * (`kill -KILL -- -PGID`), which ends the whole tree and leaves the container
 * and other processes alone.  If even that exec cannot start (a fork bomb has
 * used up the pids limit), the container is restarted as the last resort, and
 * the result says so.
 */
#ifndef EXEC_H
#define EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/call.h"
#include "base/capture.h"
#include "base/errcode.h"
#include "engine/engine.h"

/* Time the kill and the drain of the output after it may take. */
#define EXEC_KILL_GRACE_MS 5000
/* How long a kill waits for the wrapper to report the pid before restarting the container instead. */
#define EXEC_PID_WAIT_MS 3000
/* Bytes read from the stream at a time. */
#define EXEC_READ_CHUNK (64 * 1024)
/* Bytes of pulled stdin (on_stdin) sent at a time. */
#define EXEC_STDIN_CHUNK (1024 * 1024)

/* Receives every chunk of output (stream 1 stdout, 2 stderr); nonzero return stops the exec. */
typedef int (*exec_data_fn)(void *arg, int stream, const char *p, size_t n);

struct exec_spec {
	const char *const *argv; /* NULL-terminated; or NULL with shell_command */
	/*
	 * agentctl_run only: run the agent's built-in file operation of this
	 * name (src/agent/fileops.h) with argv as its arguments, in place of a
	 * program. exec_run ignores it: callers give the exec path a script.
	 */
	const char *builtin;
	const char *shell_command; /* run by the wrapper shell itself (one process less) */
	const char *const *env;	   /* "K=V"..., NULL-terminated, or NULL */
	const char *workdir;	   /* or NULL for the container's */
	const char *user;	   /* or NULL for the container's */
	/*
	 * The agent's path in the container, or NULL: the wrapper runs behind
	 * its seccomp filter (agent --guard, src/agent/guard.h), as the agent's
	 * own commands do. session_guard() gives a session's.
	 */
	const char *guard;
	const char *stdin_data;
	size_t stdin_len;
	bool attach_stdin;
	/*
	 * Or stdin pulled as it can be sent (attach_stdin set, stdin_data NULL):
	 * fills p with up to n bytes and returns the count, 0 at the end, or < 0
	 * to stop the exec (as on_data's nonzero return does).
	 */
	ssize_t (*on_stdin)(void *arg, char *p, size_t n);
	int timeout_ms;		    /* 0: no deadline */
	size_t cap;		    /* bytes of each stream kept in the result */
	exec_data_fn on_data;	    /* called before the chunk is added to the capture */
	void (*on_tick)(void *arg); /* called at least once a second while running */
	void *arg;
};

struct exec_result {
	int exit_code; /* -1 when unknown */
	bool timed_out;
	bool cancelled;
	bool restarted; /* the container had to be restarted to stop the process */
	bool stopped;	/* on_data asked to stop */
	long pid;	/* the process (and group) id in the container; 0 if the wrapper never ran */
	struct capture out, err;
	int64_t duration_ms;
	/* set by agentctl_run only: the command ran through the agent */
	bool usage;	     /* cpu_ms and max_rss_kb are known */
	uint64_t cpu_ms;     /* user + system time of the command's processes */
	uint64_t max_rss_kb; /* peak RSS of its largest process */
	bool agent_lost;     /* the agent died while the command ran */
};

/* Empties res for a run: no exit code yet (-1), captures of cap bytes each. */
void exec_result_init(struct exec_result *res, size_t cap);

/* Longest pid line accepted from the wrapper. */
#define EXEC_PID_LINE_MAX 16

/* The wrapper's first stderr line (the process's pid), read as stderr arrives. */
struct exec_pidline {
	char line[EXEC_PID_LINE_MAX + 1];
	size_t len;
	bool done; /* the line ended, or was too long to be ours */
	long pid;  /* 0 until a valid line came */
};

/*
 * Takes the pid line's bytes from the start of a stderr chunk p[0..n) and
 * returns how many it took; the rest is the command's own stderr. Takes
 * none once done. Pure.
 */
size_t exec_pidline_feed(struct exec_pidline *pl, const char *p, size_t n);

/*
 * Runs spec in the container. 0 when the process ran (whatever its exit
 * code, timeout or cancellation, all in res); -errno with err when it could
 * not be started or the engine failed. res must be released with
 * exec_result_finish in both cases.
 */
int exec_run(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
	     struct exec_result *res, struct err *err);
void exec_result_finish(struct exec_result *res);

/*
 * Starts spec behind the same pid-reporting wrapper and hands the stream
 * over instead of running it: the first line on stderr is the process (and
 * group) id, then the process's own output follows. Only argv/shell_command,
 * env, workdir, user and attach_stdin are used. 0 with *ret (destroy it with
 * engine_stream_destroy) and ret_exec_id, or -errno with err.
 */
int exec_start(struct engine *e, struct call *call, const char *container_id, const struct exec_spec *spec,
	       char ret_exec_id[ENGINE_ID_LEN + 1], struct engine_stream **ret, struct err *err);

/*
 * Kills process group pid in the container (a second exec as spec->user); if
 * that exec cannot run, restarts the container and sets res->restarted.
 * 0 or -errno.
 */
int exec_kill_group(struct engine *e, const char *container_id, const struct exec_spec *spec, long pid,
		    struct exec_result *res);

/*
 * Waits for an exec whose stream has ended to report its exit code (the
 * engine sets it a moment after the stream closes). 0 with *ret_code, or
 * -ETIMEDOUT / -errno.
 */
int exec_wait_exit(struct engine *e, const char *exec_id, int timeout_ms, int *ret_code, struct err *err);

/* Slots of an argv built by exec_sh_argv, its NULL included. */
#define EXEC_SH_ARGV_MAX 32

/*
 * Fills argv[0..cap) with "/bin/sh" "-c" script name args... NULL, the form
 * every in-sandbox script takes ($0 is name, "$@" the args, never parsed by
 * a shell). 0, or -E2BIG when they do not fit: an argument is never dropped.
 */
int exec_sh_argv(const char **argv, size_t cap, const char *script, const char *name, const char *const *args);

#endif
