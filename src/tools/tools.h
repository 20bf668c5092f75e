/*
 * tools.h - the tool table, what a tool handler receives, and how it builds
 * its result.
 *
 * Each tool-*.c file exports one `const struct tool_entry tool_<name>_entry`
 * per tool; TOOL_TABLE in tools.c names them, one line each, in the order
 * tools/list shows, and that line is the whole registration (the entry
 * carries its sentences for the server instructions too).
 * A handler returns 0 after filling the result (a failure the model should
 * read is a result with is_error set, via tool_fail), or -errno for a bug,
 * which the caller reports as an internal error.
 */
#ifndef TOOLS_H
#define TOOLS_H

#include <stdbool.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"
#include "engine/engines.h"
#include "host/hostfs.h"
#include "sandbox/exec.h"
#include "sandbox/session.h"
#include "tools/linksign.h"

/* What every handler can reach; owned by main, shared by all calls. */
struct tool_services {
	const struct config *cfg;
	struct engine *engine;	 /* the default engine; a session's calls go to session_engine(s) */
	struct engines *engines; /* every configured engine (engines.h), the default first */
	struct session_mgr *sessions;
	struct hostfs *hostfs;	     /* the allowed host directories (SANDBOX_HOST_DIRS) */
	struct linksign *links;	     /* HTTP mode: signs download links (linksign.h); NULL on stdio */
	struct env_cache *env_cache; /* env_info's recent engine answers; NULL: ask every time */
};

/* One running tools/call. */
struct tool_ctx {
	const struct tool_services *svc;
	/*
	 * Where this call's notifications go: the protocol layer sends params
	 * under method to the client that made the call. NULL: nowhere (a
	 * resource read, a file served over HTTP). Takes params.
	 */
	void (*notify)(void *arg, const char *method, json_t *params);
	void *notify_arg;
	struct call *call;
	const char *protocol_version; /* negotiated for this call */
	json_t *progress_token;	      /* borrowed; NULL when the client did not ask */
	double last_progress;
	/* for tool_progress_output/tick: when the call started, last sent, last output line */
	int64_t started_ms, progress_ms;
	int64_t progress_sent_ms; /* when the last progress notification went out (0: none) */
	char last_line[160];
	/* the entry's bulk_arg when mcp lifted it out of a big line (see tool_arg_string) */
	const json_t *bulk_arg;
	const char *bulk;
	size_t bulk_len;
};

struct tool_result {
	json_t *content;    /* array of content blocks */
	json_t *structured; /* object, or NULL */
	bool is_error;
};

typedef int (*tool_handler_fn)(struct tool_ctx *ctx, json_t *args, struct tool_result *res);

struct tool_entry {
	const char *name;
	const char *title;
	const char *description;   /* written for a model */
	const char *input_schema;  /* JSON text */
	const char *output_schema; /* JSON text; NULL for tools that may return images */
	unsigned group;		   /* enum tool_group */
	bool read_only, destructive, idempotent, open_world;
	bool per_session; /* runs on its session's FIFO (else runs alone) */
	/*
	 * Never queues behind its session's calls, even when it names one: it
	 * touches only state with a lock of its own (session_egress must change
	 * a policy while a command hangs on a host).
	 */
	bool beside_queue;
	/*
	 * True when this call, by its arguments, ends the call running on its
	 * session rather than waiting for it (a rollback; dispatch_preempt).
	 * NULL: never.
	 */
	bool (*preempts)(json_t *args);
	tool_handler_fn handler;
	/* a string argument that may be megabytes (file_write's content): read it with tool_arg_string */
	const char *bulk_arg;
	/* sentences for the server instructions, said only when this tool is offered; NULL: none */
	const char *instructions;
};

/*
 * Parses and checks every schema, once: a later call (or one while another
 * thread parses) returns that result. 0 or -EINVAL with err. Call it before
 * tools_input_schema or tools_list_json: the server does at its first
 * tools/list or call, not at start-up (the initialize reply needs none).
 */
int tools_init(struct err *err);
/* Frees the schemas (waiting for a parse under way); tools_init parses again. */
void tools_finish(void);

/* The enabled tool called name, or NULL. */
const struct tool_entry *tools_find(const char *name, unsigned groups);
/* The input schema parsed by a successful tools_init (borrowed). */
const json_t *tools_input_schema(const struct tool_entry *t);
/* tools/list "tools" array for this protocol version (new reference). */
json_t *tools_list_json(unsigned groups, const char *protocol_version);
/*
 * The server instructions for the tools in groups: what sandbox-mcp is, then
 * each offered tool's instructions in table order. Owned by the caller.
 */
char *tools_instructions(unsigned groups);
/* Number of tools in the table, and the i-th (for tests). */
size_t tools_count(void);
const struct tool_entry *tools_at(size_t i);

void tool_result_init(struct tool_result *res);
void tool_result_finish(struct tool_result *res);
/* Appends a text content block. */
void tool_text(struct tool_result *res, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* Appends a text block of `label` followed by n bytes of p (any bytes: NUL and bad UTF-8 kept/replaced). */
void tool_text_bytes(struct tool_result *res, const char *label, const char *p, size_t n);
/*
 * What a whole result (content text and structuredContent, serialized; images
 * not counted) is kept under: Claude Code shows the model only a 2 KB preview
 * of a result over about 50,000 bytes.
 */
#define TOOL_RESULT_BUDGET 48000
/*
 * Last step before a result is sent: a failure's details copied into
 * structuredContent.error.output for clients that read only that (Codex),
 * the text held under TOOL_RESULT_BUDGET, and a short wait when a progress
 * notification for this call went out just before (see tools.c).
 */
void tool_result_seal(struct tool_ctx *ctx, struct tool_result *res);
/* Sets structuredContent (steals obj). */
void tool_structured(struct tool_result *res, json_t *obj);
/* Turns res into a failed result carrying e's code and message; returns 0. */
/* The schema of an egress policy: session_create's "egress" and session_egress's own arguments. */
#define EGRESS_PROPS                                                                                                  \
	"\"allow\":{\"type\":\"array\",\"maxItems\":256,\"items\":{\"type\":\"string\",\"maxLength\":400},"           \
	"\"description\":\"Hosts to reach: HOST[:PORT/PORT][ METHOD/METHOD], e.g. 'pypi.org', "                       \
	"'*.pythonhosted.org' (names below it), 'example.com:8443', 'example.com:80 GET/HEAD' (plain HTTP methods). " \
	"Ports default to 443 and 80. Within what the operator allows (env_info egress.allow); "                      \
	"at most 256 items, each at most 400 characters\"},"                                                          \
	"\"presets\":{\"type\":\"array\",\"maxItems\":32,\"items\":{\"type\":\"string\",\"maxLength\":32},"           \
	"\"description\":\"Named host lists: pypi, npm, github, debian, and the operator's (env_info "                \
	"egress.presets); at most 32 items, each at most 32 characters\"}"

int tool_fail(struct tool_result *res, const struct err *e);
/*
 * Marks res failed and adds e's "Error (code): message" block, keeping what
 * res holds (a failed command's output); returns {code, message} for the
 * caller's structuredContent.error (new reference).
 */
json_t *tool_error(struct tool_result *res, const struct err *e);
/*
 * Looks up the session named by args.session_id (or the default one, created
 * on first use). On failure fills res with the error and returns -ENOENT.
 */
int tool_session(struct tool_ctx *ctx, json_t *args, struct session **ret, struct tool_result *res);
/*
 * The string argument key of args and its length, or NULL when absent or not
 * a string.  For the entry's bulk_arg this may be the copy mcp lifted out of
 * a big line, held once instead of as a jansson string (see bulk.h).
 */
const char *tool_arg_string(const struct tool_ctx *ctx, json_t *args, const char *key, size_t *len);
/* True for an environment variable name: letters, digits and '_', not starting with a digit. */
bool tool_env_name_valid(const char *name);
/* Sends notifications/progress when the client asked for it (progress only grows). */
void tool_progress(struct tool_ctx *ctx, double progress, double total, const char *message);
/*
 * Progress for calls that stream output (run_command, run_python, pip): the
 * seconds since the call started and the last line printed ("12.3 s: line"),
 * at most every 250 ms while output flows and every 2 s when it is quiet, so
 * a client's request timeout keeps being reset. _output remembers the last
 * complete line of p and ticks; _tick is for the quiet periods.
 */
void tool_progress_output(struct tool_ctx *ctx, const char *p, size_t n);
void tool_progress_tick(struct tool_ctx *ctx);
/*
 * Progress for a change of stage ("reading the workspace"): sent at once,
 * whatever the rate limit above, since a stage that ends within 250 ms would
 * otherwise never be seen (a few per call, so no flood).
 */
void tool_progress_stage(struct tool_ctx *ctx, const char *stage);

/*
 * Runs argv (never a shell string) in session s as its user (session_run:
 * through its agent when it can), in workdir (NULL: the workspace), each
 * output stream capped at the configured size, progress
 * from the output lines when the client asked.  0 when the process ran,
 * whatever its exit (xr says; release it with exec_result_finish), or -errno
 * with e; a session whose container vanished is dropped and e says so.
 */
int tool_exec(struct tool_ctx *ctx, struct session *s, const char *const *argv, const char *const *env,
	      const char *workdir, int timeout_ms, struct exec_result *xr, struct err *e);
/*
 * After a failed run in s (r < 0): when e says session_not_found, the
 * container is gone, so s is dropped and e says what to do next. Returns r.
 */
int tool_session_gone(struct tool_ctx *ctx, struct session *s, int r, struct err *e);
/* stdout then stderr of xr as text (capped as captured); owned by the caller. */
char *tool_exec_output(const struct exec_result *xr, size_t *len);

/* env_info's engine facts, reused for TOOL_ENV_ENGINE_TTL_MS (tool-env.c). destroy(NULL) is a no-op. */
struct env_cache *env_cache_create(void);
void env_cache_destroy(struct env_cache *c);

/* The session_id property of a tool's input schema (JSON text). */
#define TOOL_SESSION_ARG                                                                                            \
	"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Session id or name (default: the " \
	"default session; at most 128 characters)\"}"

#endif
