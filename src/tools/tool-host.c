/*
 * tool-host.c - file_upload and file_download: files and folders between an
 * allowed host directory and a sandbox.
 *
 * Both stream, through the drop when the session can (drop.h: the engine's
 * archive API into a secret slot, the agent moving the bytes as the user),
 * else through an exec'd tar: an upload is walked and packed a chunk at a
 * time into the stdin of a `tar -x` run by the sandbox user; a download is
 * read from the stdout of a `tar -c` run by that user. Either way it is
 * written beneath a fresh host directory as it arrives (hostfs.h).  So a transfer costs a few chunks of
 * memory whatever its size, within SANDBOX_MAX_UPLOAD_MB.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "host/hostfs.h"
#include "sandbox/drop.h"
#include "sandbox/xfer.h"
#include "tools/files.h"
#include "tools/tools.h"

static const char upload_script[] = FILES_TAR_ENV
	"d=$1 b=$2\n"
	"if [ ! -d \"$d\" ]; then mkdir -p -- \"$d\" || exit 69; fi\n"
	"cd -- \"$d\" || exit 69\n"
	"[ -w . ] || exit 77\n"
	"if [ -e \"$b\" ] || [ -L \"$b\" ]; then [ \"$3\" = 1 ] || exit 68; fi\n"
	"exec tar -x -p -f -\n";

static const char download_script[] = FILES_TAR_ENV
	"p=$1\n"
	"[ -e \"$p\" ] || exit 66\n"
	"if [ -d \"$p\" ]; then cd -- \"$p\" || exit 77; exec tar -c -f - .; fi\n"
	"[ -f \"$p\" ] || exit 65\n"
	"[ -r \"$p\" ] || exit 77\n"
	"d=${p%/*} b=${p##*/}\n"
	"cd -- \"${d:-/}\" || exit 77\n"
	"exec tar -c -h -f - -- \"$b\"\n";

struct body_src {
	struct engine_body *b;
	struct err err;
};

static int file_upload(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int upload_run(struct tool_ctx *ctx, struct session *s, struct hostfs_walk *wk, const char *dir, const char *top,
		      bool overwrite, struct xfer_result *xr, bool *ret_drop, struct err *err);
static int download_run(struct tool_ctx *ctx, struct session *s, const char *path, const struct tar_limits *lim,
			struct hostfs_extract *x, struct xfer_result *xr, bool *ret_direct, struct err *err);
static ssize_t body_source(void *arg, void *p, size_t n);
static int download_direct(struct tool_ctx *ctx, struct session *s, const char *path, const struct tar_limits *lim,
			   struct hostfs_extract *x, bool *ret_handled, struct err *err);
static int file_download(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static void transfer_limits(const struct config *cfg, struct tar_limits *lim);
static void describe_skipped(struct tool_result *res, json_t *skipped, const char *what);

static void transfer_limits(const struct config *cfg, struct tar_limits *lim)
{
	lim->entries = FILES_ENTRIES_MAX;
	lim->entry_size = files_max_bytes(cfg);
	lim->total_size = files_max_bytes(cfg);
}

static void describe_skipped(struct tool_result *res, json_t *skipped, const char *what)
{
	size_t i;
	json_t *v;
	struct buf t;

	if (json_array_size(skipped) == 0)
		return;
	buf_init(&t, SIZE_MAX);
	buf_printf(&t, "Skipped %zu entr%s (%s):", json_array_size(skipped),
		   json_array_size(skipped) == 1 ? "y" : "ies", what);
	json_array_foreach (skipped, i, v)
		buf_printf(&t, "\n  %s: %s", json_string_value(json_object_get(v, "name")),
			   json_string_value(json_object_get(v, "reason")));
	tool_text(res, "%s", t.data);
	buf_finish(&t);
}

static ssize_t body_source(void *arg, void *p, size_t n)
{
	struct body_src *bs = arg;
	return engine_body_read(bs->b, p, n, &bs->err);
}

/*
 * The engine's archive endpoint reads several times faster than a tar's
 * stdout through an exec, but it acts as root and follows symlinks, so it is
 * used only where that cannot matter: one file in the workspace, checked with
 * the container paused (nothing in it can swap a path meanwhile): no
 * component is a symlink, every directory is searchable by anyone, and the
 * file is a regular file anyone may read; so these are bytes the sandbox user
 * could read itself. Anything else leaves *ret_handled false for the exec'd
 * tar. The stream is read as hostile like any other.
 */
static int download_direct(struct tool_ctx *ctx, struct session *s, const char *path, const struct tar_limits *lim,
			   struct hostfs_extract *x, bool *ret_handled, struct err *err)
{
	struct engine *e = session_engine(s);
	const char *ws = ctx->svc->cfg->workspace;
	char prefix[PATHSAFE_MAX + 1];
	struct err perr;
	bool ok = true;
	int r = 0;

	*ret_handled = false;
	if (!path_within(ws, path) || strcmp(path, ws) == 0)
		return 0;
	/* an exec that starts while the container freezes hangs the engine: forwards start none meanwhile */
	session_forwards_hold(ctx->svc->sessions, s, true);
	if (engine_container_pause(e, ctx->call, s->container, &perr) < 0) {
		session_forwards_hold(ctx->svc->sessions, s, false);
		return 0;
	}
	for (const char *p = path + 1; ok;) {
		const char *slash = strchr(p, '/');
		struct engine_path_stat st;
		snprintf(prefix, sizeof(prefix), "%.*s", slash ? (int)(slash - path) : (int)strlen(path), path);
		if (engine_archive_stat(e, ctx->call, s->container, prefix, &st, &perr) < 0 ||
		    (st.mode & ENGINE_MODE_SYMLINK))
			ok = false;
		else if (slash)
			ok = (st.mode & ENGINE_MODE_DIR) && (st.mode & 01);
		else
			ok = !(st.mode & ENGINE_MODE_TYPE) && (st.mode & 04);
		if (!slash)
			break;
		p = slash + 1;
	}
	if (ok) {
		struct body_src bs;
		*ret_handled = true;
		if ((r = engine_archive_get(e, ctx->call, s->container, path, &bs.b, err)) == 0) {
			r = tar_read(body_source, &bs, lim, hostfs_extract_sink(x), NULL, err);
			engine_body_destroy(bs.b);
		}
	}
	/* never left frozen, cancelled or not */
	if (engine_container_unpause(e, NULL, s->container, &perr) < 0)
		log_errorf("unpausing the container of session %s failed: %s", s->id, perr.msg);
	session_forwards_hold(ctx->svc->sessions, s, false);
	return r;
}

/*
 * Moves the walk's tree into the sandbox: through the drop when the session
 * can (drop.h: the engine's archive PUT, placed by the agent as the user),
 * else through an exec'd tar. Answers as xfer_push; *ret_drop says which ran.
 */
static int upload_run(struct tool_ctx *ctx, struct session *s, struct hostfs_walk *wk, const char *dir, const char *top,
		      bool overwrite, struct xfer_result *xr, bool *ret_drop, struct err *err)
{
	struct engine *e = session_engine(s);
	int slot = drop_take(e, ctx->call, s);

	*ret_drop = slot >= 0;
	if (slot >= 0) {
		int r = drop_push(e, ctx->call, s, slot, hostfs_walk_produce, wk, dir, top, overwrite, xr, err);
		drop_release(s, slot);
		return r;
	}
	const char *argv[] = { dir, top, overwrite ? "1" : "0", NULL };
	return xfer_push(e, ctx->call, s, upload_script, argv, hostfs_walk_produce, wk, xr, err);
}

/*
 * Reads path out of the sandbox into x: through the drop when the session
 * can (drop.h), else the archive GET of a plain workspace file
 * (download_direct, *ret_direct), else an exec'd tar. Answers as xfer_pull.
 */
static int download_run(struct tool_ctx *ctx, struct session *s, const char *path, const struct tar_limits *lim,
			struct hostfs_extract *x, struct xfer_result *xr, bool *ret_direct, struct err *err)
{
	struct engine *e = session_engine(s);
	const char *argv[] = { path, NULL };
	struct tar_stats st;
	int slot = drop_take(e, ctx->call, s);
	int r;

	*ret_direct = false;
	memset(xr, 0, sizeof(*xr));
	if (slot >= 0) {
		r = drop_pull(e, ctx->call, s, slot, path, lim, hostfs_extract_sink(x), xr, err);
		drop_release(s, slot);
		if (r != DROP_FALLBACK)
			return r;
		memset(xr, 0, sizeof(*xr));
	}
	r = download_direct(ctx, s, path, lim, x, ret_direct, err);
	if (!*ret_direct)
		r = xfer_pull(e, ctx->call, s, download_script, argv, lim, hostfs_extract_sink(x), &st, xr, err);
	return r;
}

static int file_upload(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *host_path = json_string_value(json_object_get(args, "host_path"));
	const char *arg = json_string_value(json_object_get(args, "path"));
	json_t *jover = json_object_get(args, "overwrite");
	bool overwrite = jover ? json_is_true(jover) : true;
	char real[PATH_MAX], dest[PATHSAFE_MAX + 1], dir[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;
	struct hostfs_walk *wk = NULL;
	struct tar_limits lim;
	int fd, r;

	err_clear(&e);
	if ((r = hostfs_open(ctx->svc->hostfs, call_principal(ctx->call), host_path, O_RDONLY | O_NONBLOCK, &fd, real,
			     sizeof(real), &e)) < 0)
		return tool_fail(res, &e);
	const char *hbase = strrchr(real, '/') + 1;
	if (arg)
		r = files_resolve(cfg, arg, false, dest, sizeof(dest), &e);
	else if (!*hbase)
		r = err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "name the destination with path");
	else
		r = snprintf(dest, sizeof(dest), "%s/%s", cfg->workspace, hbase) < (int)sizeof(dest)
			    ? 0
			    : err_set(&e, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "the destination path is too long");
	const char *top = strrchr(dest, '/') + 1;
	snprintf(dir, sizeof(dir), "%.*s", (int)(top - dest - 1), dest);
	transfer_limits(cfg, &lim);
	if (r < 0)
		close(fd);
	else
		r = hostfs_walk_create(fd, top, &lim, &wk, &e); /* takes fd over, even when it fails */
	if (r < 0)
		return tool_fail(res, &e);
	if (tool_session(ctx, args, &s, res) < 0) {
		hostfs_walk_destroy(wk);
		return 0;
	}
	struct xfer_result xr;
	bool drop;
	r = upload_run(ctx, s, wk, dir[0] ? dir : "/", top, overwrite, &xr, &drop, &e);
	/* through the drop, a stopped upload leaves nothing behind (its slot is emptied) */
	if (r < 0 && drop && e.code != ERRCODE_SESSION_NOT_FOUND && e.code != ERRCODE_CANCELLED)
		err_append(&e, r, "; the upload stopped");
	else if (r < 0 && !drop && e.code != ERRCODE_SESSION_NOT_FOUND)
		err_append(&e, r, "; the upload stopped, and what was copied before stays in the sandbox");
	else if (r < 0)
		r = files_exec_failed(ctx, s, r, &e);
	else
		r = files_script_failed(&xr, dest, "write", &e);
	if (r < 0) {
		hostfs_walk_destroy(wk);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	uint64_t files, dirs, bytes;
	json_t *skipped;
	hostfs_walk_stats(wk, &files, &dirs, &bytes, &skipped);
	tool_text(res, "Uploaded %s to %s: %llu file%s, %llu folder%s, %llu bytes", real, dest,
		  (unsigned long long)files, files == 1 ? "" : "s", (unsigned long long)dirs, dirs == 1 ? "" : "s",
		  (unsigned long long)bytes);
	describe_skipped(res, skipped, "only regular files and folders are copied, links are not followed");
	if (dirs == 0)
		files_link(ctx, res, s, dest, NULL);
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "session_id", s->id, "host_path", real,
				       "path", dest, "files", (json_int_t)files, "dirs", (json_int_t)dirs, "bytes",
				       (json_int_t)bytes, "skipped", skipped));
	hostfs_walk_destroy(wk);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int file_download(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *host_dir = json_string_value(json_object_get(args, "host_dir"));
	bool overwrite = json_is_true(json_object_get(args, "overwrite"));
	char real[PATH_MAX], path[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;
	struct hostfs_extract *x = NULL;
	struct tar_limits lim;
	struct xfer_result xr;
	int dfd = -1, r;

	err_clear(&e);
	if (files_resolve(cfg, json_string_value(json_object_get(args, "path")), false, path, sizeof(path), &e) < 0)
		return tool_fail(res, &e);
	if (hostfs_open_dest(ctx->svc->hostfs, call_principal(ctx->call), host_dir, &dfd, real, sizeof(real), &e) < 0)
		return tool_fail(res, &e);
	const char *name = strrchr(path, '/') + 1;
	if (hostfs_extract_begin(dfd, name, overwrite, &x, &e) < 0) {
		close(dfd);
		return tool_fail(res, &e);
	}
	if (tool_session(ctx, args, &s, res) < 0) {
		hostfs_extract_destroy(x);
		close(dfd);
		return 0;
	}
	transfer_limits(cfg, &lim);
	bool direct = false;
	r = download_run(ctx, s, path, &lim, x, &xr, &direct, &e);
	/* the script's own refusals first: they send an empty stream */
	if (direct)
		r = r < 0 ? files_exec_failed(ctx, s, r, &e) : 0;
	else if (xr.exit_code > 2 && !xr.stopped && !xr.timed_out && !xr.cancelled)
		r = files_script_failed(&xr, path, "read", &e);
	else if (r < 0)
		r = files_exec_failed(ctx, s, r, &e);
	else if (xr.cancelled || xr.timed_out || xr.exit_code < 0)
		r = files_script_failed(&xr, path, "read", &e);
	if (r == 0 && (r = hostfs_extract_commit(x, &e)) < 0 && xr.stderr_text[0])
		err_append(&e, r, " (tar: %.200s)", xr.stderr_text);
	if (r < 0) {
		hostfs_extract_destroy(x);
		close(dfd);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	uint64_t files, dirs, bytes;
	json_t *skipped;
	char where[PATH_MAX + NAME_MAX + 2];
	hostfs_extract_stats(x, &files, &dirs, &bytes, &skipped);
	snprintf(where, sizeof(where), "%s/%s", strcmp(real, "/") == 0 ? "" : real, name);
	tool_text(res, "Downloaded %s to %s: %llu file%s, %llu folder%s, %llu bytes", path, where,
		  (unsigned long long)files, files == 1 ? "" : "s", (unsigned long long)dirs, dirs == 1 ? "" : "s",
		  (unsigned long long)bytes);
	describe_skipped(res, skipped, "links, devices, fifos and unsafe names are never written to the host");
	if (xr.exit_code > 0 && xr.stderr_text[0])
		tool_text(res, "tar in the sandbox reported (those files were not copied):\n%s", xr.stderr_text);
	json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "session_id", s->id, "path", path, "host_path",
			      where, "files", (json_int_t)files, "dirs", (json_int_t)dirs, "bytes", (json_int_t)bytes,
			      "skipped", skipped);
	if (xr.exit_code > 0 && xr.stderr_text[0])
		json_object_set_new(o, "warnings", json_string_lossy(xr.stderr_text, strlen(xr.stderr_text)));
	tool_structured(res, o);
	hostfs_extract_destroy(x);
	close(dfd);
	session_put(ctx->svc->sessions, s);
	return 0;
}

#define SKIPPED_SCHEMA                                                                                                   \
	"\"skipped\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}," \
	"\"reason\":{\"type\":\"string\"}}}}"

const struct tool_entry tool_file_upload_entry = {
	.name = "file_upload",
	.title = "Copy a host file or folder into the sandbox",
	.description =
		"Copy a file or folder from the host into the sandbox. host_path must be inside a host folder the "
		"server allows (SANDBOX_HOST_DIRS); symbolic links and hard-linked files are not copied. path is "
		"where it lands (default /workspace/<its name>); existing files there are replaced unless "
		"overwrite is false. Modes are kept.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"host_path\"],\"properties\":{"
		"\"host_path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Absolute "
		"host path of the file or folder (at most 4096 characters)\"},"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Destination in "
		"the sandbox (relative to /workspace, or absolute; at most 4096 characters)\"},"
		"\"overwrite\":{\"type\":\"boolean\",\"description\":\"Replace what is at path (default true)\"}," TOOL_SESSION_ARG
		"}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"host_path\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},\"files\":{\"type\":\"integer\"},"
		"\"dirs\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"}," SKIPPED_SCHEMA "}}",
	.group = TOOL_GROUP_FILES,
	.read_only = false,
	.destructive = true,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = file_upload,
};

const struct tool_entry tool_file_download_entry = {
	.name = "file_download",
	.title = "Copy a sandbox file or folder to the host",
	.description =
		"Copy a file or folder out of the sandbox into host_dir, a host folder the server allows "
		"(SANDBOX_HOST_DIRS), under its own name. With overwrite: true it replaces only a file or folder "
		"that an earlier download wrote and nobody changed since, never other host files. Hidden names "
		"(.x), version-control metadata (.git, ...) and Python bytecode (__pycache__, *.pyc) are never "
		"written, at any depth, nor anything into a hidden folder: inside a folder they are skipped and "
		"listed. Links, devices and fifos are skipped and listed; files never get exec permission on the "
		"host.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"path\",\"host_dir\"],"
		"\"properties\":{"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"File or folder "
		"in the sandbox (relative to /workspace, or absolute; at most 4096 characters)\"},"
		"\"host_dir\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Absolute "
		"path of an existing host folder to copy into (at most 4096 characters)\"},"
		"\"overwrite\":{\"type\":\"boolean\",\"description\":\"Replace a host file or folder of that "
		"name that an earlier download wrote (default false)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"host_path\":{\"type\":\"string\"},\"files\":{\"type\":\"integer\"},"
		"\"dirs\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"},\"warnings\":{\"type\":\"string\"}," SKIPPED_SCHEMA
		"}}",
	.group = TOOL_GROUP_FILES,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = file_download,
};
