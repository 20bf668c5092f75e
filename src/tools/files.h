/*
 * files.h - what the file tools share: path resolution, limits, turning a
 * script's exit code into the error a model reads, plain execs whose output
 * is collected, and rendering a file's bytes as MCP content.
 */
#ifndef FILES_H
#define FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/errcode.h"
#include "base/pathsafe.h"
#include "config/config.h"
#include "sandbox/session.h"
#include "sandbox/xfer.h"
#include "tools/tools.h"

/* Entries in one transfer (a folder up or down), skipped ones included. */
#define FILES_ENTRIES_MAX 100000
/*
 * Most bytes one file_read result carries: their base64 (8 MiB) stays under
 * the 10 MiB line cap of the official SDKs' stdio transports, whose clients
 * otherwise drop the connection. Larger files are read in parts.
 */
#define FILES_READ_MAX (6u << 20)
/*
 * First line of the tar scripts: GNU tar's 10 KiB records cost a round trip
 * each through the engine's exec stream; 1 MiB records make uploads ~15%
 * faster. Other tars ignore the variable.
 */
#define FILES_TAR_ENV "export TAR_OPTIONS=--blocking-factor=2048\n"
/* Longest URI in a resource link. */
#define FILES_URI_MAX (3 * PATHSAFE_MAX + 64)

/* The byte limit on one file and on one transfer: SANDBOX_MAX_UPLOAD_MB, in MiB. */
uint64_t files_max_bytes(const struct config *cfg);

/*
 * Resolves a tool's sandbox path against the workspace into out (absolute,
 * normalised). allow_root: "/" is acceptable. 0 or -EINVAL with err.
 */
int files_resolve(const struct config *cfg, const char *path, bool allow_root, char *out, size_t outsz,
		  struct err *err);

/* An exec that could not run: tool_session_gone under the name the file tools use; returns r. */
int files_exec_failed(struct tool_ctx *ctx, struct session *s, int r, struct err *err);

/*
 * The error for a script's non-zero exit code (enum xfer_exit, or tar's own
 * failure with its stderr); 0 for exit code 0. verb says what was tried
 * ("read", "write").
 */
int files_code_failed(int code, const char *stderr_text, const char *path, const char *verb, struct err *err);
/* files_code_failed for a transfer's result (killed and timed-out included). */
int files_script_failed(const struct xfer_result *xr, const char *path, const char *verb, struct err *err);

/*
 * Runs `sh -c script` with args in s as its user; stdout collected into out
 * (up to its max: more stops the script, and out->len == out->max says so),
 * stderr into errtext. 0 with
 * *ret_code, or -errno with err (the session forgotten when gone).
 */
int files_run(struct tool_ctx *ctx, struct session *s, const char *script, const char *const *args, struct buf *out,
	      char *errtext, size_t errsz, int *ret_code, struct err *err);

/*
 * files_run, through the agent's built-in operation op (src/agent/fileops.h,
 * which takes the script's arguments and answers as it does) when the
 * session has an agent; script through the exec path otherwise. op NULL:
 * always the script.
 */
int files_run_op(struct tool_ctx *ctx, struct session *s, const char *op, const char *script, const char *const *args,
		 struct buf *out, char *errtext, size_t errsz, int *ret_code, struct err *err);

/*
 * Runs the agent's built-in file operation op with args in s (stdin_data
 * on its stdin), its stdout collected into out (up to its max, as
 * files_run), the rest in *ret. 1 when the agent ran it, the outcome in
 * *ret_r (0, or -errno with err: the session forgotten when gone, the agent
 * lost on the way); 0 when the caller takes the exec path (no agent, or it
 * could not start it), err clear.
 */
int files_agent(struct tool_ctx *ctx, struct session *s, const char *op, const char *const *args,
		const char *stdin_data, size_t stdin_len, int timeout_ms, struct buf *out, struct xfer_result *ret,
		struct err *err, int *ret_r);

/*
 * Reads bytes [offset, offset + length) (length UINT64_MAX: to the end) of
 * path (absolute, normalised) in s through the agent, or through tar on
 * the exec path, at most cap of them (more is
 * ERRCODE_TOO_LARGE). 0 with *ret_data (release it with buf_finish), the
 * whole file's size and mode, or -errno with err.
 */
int files_pull_file(struct tool_ctx *ctx, struct session *s, const char *path, uint64_t offset, uint64_t length,
		    uint64_t cap, struct buf *ret_data, uint64_t *ret_size, unsigned *ret_mode, struct err *err);

/* The mime type for a file's name and first bytes. */
const char *files_mime(const char *path, const char *data, size_t n, bool *ret_text, bool *ret_image);

/*
 * Adds a file's bytes to res: a line describing it, then the text, an image,
 * or base64 in an embedded resource. size is the whole file's, offset where
 * data starts.
 */
void files_render_content(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, const char *path,
			  const char *data, size_t n, uint64_t size, uint64_t offset, bool ranged);

/* The sandbox:// URI of path in s. 0 or -ENAMETOOLONG. */
int files_uri(const struct session *s, const char *path, char *out, size_t outsz);

/*
 * Writes len bytes as dir/name in s, as the session's user, from inside the
 * container (so a tmpfs such as /tmp gets it); dir is made if missing. 0 or
 * -errno with err.
 */
int files_put(struct tool_ctx *ctx, struct session *s, const char *dir, const char *name, const void *data, size_t len,
	      struct err *err);

/* The resource_link _meta key of a signed download URL (HTTP mode). */
#define FILES_URL_META "io.sandbox-mcp/url"

/*
 * Adds a resource_link to path when the client's protocol knows them
 * (2025-06-18 on); in HTTP mode with a signed download URL in its _meta.
 */
void files_link(struct tool_ctx *ctx, struct tool_result *res, const struct session *s, const char *path,
		const char *mime);

#endif
