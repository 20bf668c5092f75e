/*
 * tool-export.c - session_export: a Dockerfile and build context that
 * recreate a session from what it did (docs/design.md §4), returned as text, written
 * to an allowed host folder, and/or built by the engine.
 *
 * What "what it did" means here, so that the rebuild is offline and exact:
 *  - files: the whole workspace, read through a tar run by the sandbox user
 *    (xfer.h) and carried as `COPY --chown=<user> workspace/ <workspace>/`;
 *    hard-linked files as separate copies.
 *    The context holds files as 0644 and folders as 0755 (a host folder gets
 *    no exec bits); other modes are restored by `RUN chmod` lines.
 *  - pip: `pip freeze --all` of the session against that of a fresh
 *    container of the same base image (a throwaway session). A package
 *    installed from a local path (`name @ file:///...`) is installed again
 *    from that path, which the COPY brought along (a file outside the
 *    workspace is carried in the context and copied to the same path), so
 *    the rebuilt freeze names the same source; `name==version` finds its
 *    wheel or sdist among the workspace's files (--no-index --find-links)
 *    or else needs an index at build time, which the Dockerfile says. All
 *    with --no-deps: the freeze difference is the full set.
 *  - env (the container's variables the base image lacks), workdir, user;
 *    git clones recorded in the session's history as comments (their files,
 *    .git included, are part of the workspace).
 * build: true never runs session content in the engine's builder, whose
 * containers have none of the sessions' hardening (Docker's default
 * capabilities, no no-new-privileges, no memory or pids limit, the default
 * runtime) and which the build API cannot harden. The builder gets the
 * Dockerfile with its RUN lines left out (FROM, LABEL, COPY, USER, ENV,
 * WORKDIR execute nothing) and network "none"; each RUN line then runs, in
 * order, in a transient session of that image (session_create: the
 * session's own memory, CPU, runtime; the server's pids limit, no
 * capabilities, no-new-privileges, the sandbox user), which is committed.
 * The image is made untagged, its tag set last once image_target_check
 * still allows it; a failed build removes only the images carrying its own
 * random IMAGE_LABEL_BUILD, never one its output names. The build's context
 * is written to an unnamed temporary file as the workspace streams in and
 * sent from there in chunks, so memory stays at a few chunks whatever the
 * workspace's size (within SANDBOX_MAX_UPLOAD_MB).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "buildconf.h"
#include "engine/compat.h"
#include "engine/engine-image.h"
#include "host/hostfs.h"
#include "sandbox/dockerfile.h"
#include "sandbox/egress.h"
#include "sandbox/exec.h"
#include "sandbox/image.h"
#include "sandbox/savepoint.h"
#include "sandbox/xfer.h"
#include "tools/export-build.h"
#include "tools/files.h"
#include "tools/tools.h"

/* Bytes of a pip freeze read (it comes from the sandbox: bounded like any input). */
#define EXPORT_FREEZE_MAX (1u << 20)
/* Bytes of a failing pip freeze's error output quoted (the message holds ERR_MSG_MAX). */
#define EXPORT_FREEZE_ERR_TAIL 340
/* Wheels and sdists in the workspace looked at for `name==version` lines. */
#define EXPORT_ARCHIVES_MAX 5000
/* Base images whose pip freeze is remembered. */
#define EXPORT_FREEZE_CACHE 8
/* Local package files outside the workspace carried in the context (their bytes count against SANDBOX_MAX_UPLOAD_MB). */
#define EXPORT_OUTSIDE_MAX 64

/*
 * A hard link's tar entry carries no data, and would be left out: GNU tar
 * stores each name of a hard-linked file whole instead (a local git clone
 * hard-links its objects to the origin's: without them its .git is broken).
 */
static const char workspace_script[] = FILES_TAR_ENV
	"cd -- \"$1\" || exit 66\n"
	"if tar --hard-dereference -c -f - -T /dev/null >/dev/null 2>&1; then\n"
	"  exec tar --hard-dereference -c -f - .\n"
	"fi\n"
	"exec tar -c -f - .\n";
/*
 * 127: no python, 126: no pip (nothing pip installed to export). "No pip" is
 * whether the module exists, not whether it runs: a broken pip fails the
 * freeze, which fails the export.
 */
static const char freeze_script[] = "command -v python3 >/dev/null 2>&1 || exit 127\n"
				    "python3 -c 'import importlib.util, sys; "
				    "sys.exit(0 if importlib.util.find_spec(\"pip\") else 126)' >/dev/null 2>&1\n"
				    "[ $? -ne 126 ] || exit 126\n"
				    "exec python3 -m pip freeze --all\n";

/* Where the exported context goes: a tar being built, a host folder, or nowhere (listing only). */
struct ctx_sink {
	struct tool_ctx *ctx;
	struct tar_writer *w; /* the build's context (NULL: no build), spilled to spill_fd */
	struct buf *tar;
	int spill_fd;
	uint64_t spilled;
	const struct tar_sink *host; /* a host folder's extraction, or NULL */
	bool host_skip;		     /* the host sink skipped the current entry */
	json_t *modes;		     /* [[workspace-relative path, mode]] other than 0644 files / 0755 folders */
	json_t *archives;	     /* workspace-relative paths of *.whl, *.tar.gz, *.zip */
	json_t *skipped;	     /* [{name, reason}] */
	uint64_t files, dirs, bytes;
	char path[PATHSAFE_MAX + 32];
};

/*
 * One session_export call, carried through its phases (export_check, _inspect,
 * _freeze, _workspace, _outside, _dockerfile, _build, _render): what it was
 * asked, what it read of the session, the context and Dockerfiles it made,
 * the build. export_init empties every member; export_finish releases what
 * the phases filled, however far they got.
 */
struct export
{
	struct tool_ctx *ctx;
	struct session *s;
	char checkpoint[SESSION_CHECKPOINT_LEN + 1]; /* exported from this checkpoint (s is transient), or "" */
	/* the arguments */
	const char *host_dir, *repo, *tag;
	bool build;
	char deftag[IMAGE_TAG_MAX + 1];
	char ref[IMAGE_REF_MAX + IMAGE_TAG_MAX + 2]; /* repository:tag of the built image */
	/* the host folder (host_dir): its fd, its real path, the new folder in it and its extraction */
	int dfd;
	char real[PATH_MAX], folder[NAME_MAX + 1];
	struct hostfs_extract *hx;
	/* the session's container and its base image, by id (parent) and by the name it started from */
	json_t *container, *parent, *baseref;
	const char *base_id, *base_ref_id; /* borrowed from container and baseref */
	json_t *env;			   /* the container's variables the base image lacks */
	json_t *mine, *theirs;		   /* pip freeze of the session and of its base image */
	struct dockerfile_pip plan;
	/* the context */
	struct ctx_sink sink;
	struct tar_writer *w; /* the build's context tar (NULL: no build) */
	struct buf tarbuf;
	struct xfer_result xr; /* how the workspace's tar ended, and what it reported */
	/* the Dockerfile returned (df), and the builder's without the RUN lines (bdf; the lines in runs) */
	json_t *labels, *runs;
	struct buf df, bdf;
	size_t steps;
	/* the build */
	char nonce[64]; /* this build's IMAGE_LABEL_BUILD filter */
	char image_id[ENGINE_IMAGE_ID_MAX];
	struct build_tail bt;
	bool build_failed; /* the builder or a RUN step failed, not the tagging: bt says where */
	int64_t build_ms;
};

static int session_export_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res);

/*
 * Moves what the tar writer produced to the spill file: the build's context
 * is kept on disk, not in memory, until it is sent.
 */
static int spill(struct ctx_sink *c, int r, struct err *err)
{
	if (r < 0 || !c->tar || c->tar->len == 0)
		return r;
	int w = write_full(c->spill_fd, c->tar->data, c->tar->len);
	if (w < 0)
		return err_set(err, ERRCODE_INTERNAL, w, "writing the build context to a temporary file failed: %s",
			       strerror(-w));
	c->spilled += c->tar->len;
	buf_reset(c->tar);
	return r;
}

static int sink_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct ctx_sink *c = arg;
	unsigned want = e->type == TAR_TYPE_DIR ? 0755 : 0644;

	if (e->path[0] && e->mode != want) {
		if (json_array_size(c->modes) == DOCKERFILE_MODES_MAX)
			return err_set(err, ERRCODE_TOO_LARGE, -E2BIG,
				       "more than %d workspace files or folders have modes other than 0644/0755: too many "
				       "to restore in a Dockerfile (chmod them, or use session_commit)",
				       DOCKERFILE_MODES_MAX);
		json_array_append_new(c->modes, json_pack("[s, i]", e->path, (int)e->mode));
	}
	if (e->type == TAR_TYPE_FILE) {
		size_t n = strlen(e->path);
		if ((n > 4 && strcmp(e->path + n - 4, ".whl") == 0) ||
		    (n > 7 && strcmp(e->path + n - 7, ".tar.gz") == 0) ||
		    (n > 4 && strcmp(e->path + n - 4, ".zip") == 0)) {
			if (json_array_size(c->archives) < EXPORT_ARCHIVES_MAX)
				json_array_append_new(c->archives, json_string(e->path));
		}
		c->files++;
		c->bytes += e->size;
	} else if (e->path[0]) {
		c->dirs++;
	}
	snprintf(c->path, sizeof(c->path), "workspace%s%s", e->path[0] ? "/" : "", e->path);
	struct tar_entry out = *e;
	out.path = c->path;
	out.mode = want;
	int r;
	if (c->w && (r = spill(c, tar_writer_add(c->w, &out, err), err)) < 0)
		return r;
	c->host_skip = false;
	if (c->host) {
		r = c->host->entry(c->host->arg, &out, err);
		if (r < 0 || r == TAR_STOP)
			return r;
		c->host_skip = r == TAR_SKIP;
	}
	return TAR_OK;
}

static int sink_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct ctx_sink *c = arg;
	int r;
	tool_progress_tick(c->ctx);
	if (c->w && (r = spill(c, tar_writer_data(c->w, p, n, err), err)) < 0)
		return r;
	if (c->host && !c->host_skip && (r = c->host->data(c->host->arg, p, n, err)) != TAR_OK)
		return r;
	return TAR_OK;
}

static int sink_end(void *arg, struct err *err)
{
	struct ctx_sink *c = arg;
	if (c->host && !c->host_skip && c->host->entry_end)
		return c->host->entry_end(c->host->arg, err);
	return 0;
}

static void sink_skipped(void *arg, const char *name, const char *why)
{
	struct ctx_sink *c = arg;
	if (json_array_size(c->skipped) < HOSTFS_SKIPPED_LISTED)
		json_array_append_new(c->skipped, json_pack("{s:s%, s:s}", "name", name, strlen(name), "reason", why));
	if (c->host && c->host->skipped)
		c->host->skipped(c->host->arg, name, why);
}

/* Adds one file of the context (outside the workspace: a local pip source) to both targets. */
static int sink_add(struct ctx_sink *c, const char *path, const char *data, size_t n, struct err *err)
{
	struct tar_entry e = { .path = path, .type = TAR_TYPE_FILE, .size = n, .mode = 0644, .mtime = time(NULL) };
	int r;
	if (c->w && (r = spill(c, tar_writer_add(c->w, &e, err), err)) < 0)
		return r;
	for (size_t off = 0; c->w && off < n; off += TAR_CHUNK) {
		size_t k = n - off < TAR_CHUNK ? n - off : TAR_CHUNK;
		if ((r = spill(c, tar_writer_data(c->w, data + off, k, err), err)) < 0)
			return r;
	}
	if (c->host) {
		/* its folders first: the host extraction makes each one it is given */
		char dir[PATHSAFE_MAX + 1];
		for (const char *s = strchr(path, '/'); s; s = strchr(s + 1, '/')) {
			snprintf(dir, sizeof(dir), "%.*s", (int)(s - path), path);
			struct tar_entry d = { .path = dir, .type = TAR_TYPE_DIR, .mode = 0755, .mtime = e.mtime };
			if ((r = c->host->entry(c->host->arg, &d, err)) < 0)
				return r;
		}
		r = c->host->entry(c->host->arg, &e, err);
		if (r < 0)
			return r;
		if (r == TAR_OK && ((r = c->host->data(c->host->arg, data, n, err)) < 0 ||
				    (c->host->entry_end && (r = c->host->entry_end(c->host->arg, err)) < 0)))
			return r;
	}
	return 0;
}

/*
 * Runs pip freeze in s: 0 with the lines (array of strings; empty when s has
 * no python or pip), or -errno. A freeze that fails is an error: an export
 * without the packages would look complete and rebuild something else.
 */
static int freeze(struct tool_ctx *ctx, struct session *s, json_t **ret, struct err *err)
{
	struct buf out;
	char errtext[4096];
	int code = 0;

	buf_init(&out, EXPORT_FREEZE_MAX);
	int r = files_run(ctx, s, freeze_script, NULL, &out, errtext, sizeof(errtext), &code, err);
	if (r < 0) {
		buf_finish(&out);
		return r;
	}
	if (code == 127 || code == 126) {
		/* no python or no pip: nothing pip installed to export */
		buf_finish(&out);
		*ret = json_array();
		return 0;
	}
	if (code != 0) {
		size_t n = strlen(errtext);
		buf_finish(&out);
		return err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
			       "pip freeze failed in session %s (exit %d), so which packages to install is not known; "
			       "fix pip there and export again. Its error output ends:\n%s",
			       s->id, code,
			       n > EXPORT_FREEZE_ERR_TAIL ? errtext + n - EXPORT_FREEZE_ERR_TAIL : errtext);
	}
	if (out.len == out.max) {
		buf_finish(&out);
		return err_set(err, ERRCODE_TOO_LARGE, -E2BIG,
			       "pip freeze printed more than %u bytes: too many to export", EXPORT_FREEZE_MAX);
	}
	r = dockerfile_freeze_parse(out.data ? out.data : "", out.len, ret, err);
	buf_finish(&out);
	return r;
}

/* The freeze of a fresh container of image (a throwaway session). */
/*
 * Base freezes already read, by image id: an id names the same content
 * forever, so a second export from that base needs no throwaway container.
 */
static struct {
	pthread_mutex_t lock;
	size_t next;
	struct {
		char image[ENGINE_IMAGE_ID_MAX];
		json_t *lines;
	} slot[EXPORT_FREEZE_CACHE];
} freezes = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int base_freeze(struct tool_ctx *ctx, const struct session *s, const char *image, json_t **ret, struct err *err)
{
	struct session_opts o = { .image = image, .transient = true, .engine = s->engine_name };
	struct session *t;
	char id[SESSION_ID_LEN + 1];
	struct err cerr;

	pthread_mutex_lock(&freezes.lock);
	for (size_t i = 0; i < EXPORT_FREEZE_CACHE; i++) {
		if (freezes.slot[i].lines && strcmp(freezes.slot[i].image, image) == 0) {
			*ret = json_deep_copy(freezes.slot[i].lines);
			pthread_mutex_unlock(&freezes.lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&freezes.lock);

	int r = session_create(ctx->svc->sessions, ctx->call, &o, &t, err);
	if (r < 0)
		return r;
	snprintf(id, sizeof(id), "%s", t->id);
	r = freeze(ctx, t, ret, err);
	session_put(ctx->svc->sessions, t);
	if (session_close(ctx->svc->sessions, NULL, id, &cerr) < 0)
		log_warnf("session_export: closing the throwaway session %s: %s", id, cerr.msg);
	if (r == 0 && strlen(image) < ENGINE_IMAGE_ID_MAX) {
		pthread_mutex_lock(&freezes.lock);
		size_t k = freezes.next++ % EXPORT_FREEZE_CACHE;
		json_decref(freezes.slot[k].lines);
		snprintf(freezes.slot[k].image, sizeof(freezes.slot[k].image), "%s", image);
		freezes.slot[k].lines = json_deep_copy(*ret);
		pthread_mutex_unlock(&freezes.lock);
	}
	return r;
}

struct spill_src {
	int fd;
};

static ssize_t spill_source(void *arg, void *p, size_t n, struct err *err)
{
	struct spill_src *src = arg;
	ssize_t k;
	do
		k = read(src->fd, p, n);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return err_set(err, ERRCODE_INTERNAL, -errno, "reading the build context back: %s", strerror(errno));
	return k;
}

/*
 * What the server must allow before anything runs: the image name the
 * build would take, and the host folder (opened now, as dfd).
 */
static int export_check(struct export *ex, struct err *e)
{
	const struct config *cfg = ex->ctx->svc->cfg;
	int r;

	if (ex->build &&
	    ((r = image_repository_check(ex->repo, e)) < 0 || (ex->tag && (r = image_tag_check(ex->tag, e)) < 0) ||
	     (r = image_ref_allowed(cfg, ex->repo, e)) < 0))
		return r;
	if (ex->host_dir && (r = hostfs_open_dest(ex->ctx->svc->hostfs, call_principal(ex->ctx->call), ex->host_dir,
						  &ex->dfd, ex->real, sizeof(ex->real), e)) < 0)
		return r;
	return 0;
}

/* What the session is: its container, its base image, the variables it added. */
static int export_inspect(struct export *ex, struct err *e)
{
	struct tool_ctx *ctx = ex->ctx;
	struct engine *eng = session_engine(ex->s);
	struct session *s = ex->s;
	size_t i, j;
	json_t *v, *u;
	int r;

	if (ex->build) {
		if (!ex->tag) {
			image_default_tag(ex->deftag, sizeof(ex->deftag));
			ex->tag = ex->deftag;
		}
		snprintf(ex->ref, sizeof(ex->ref), "%s:%s", ex->repo, ex->tag);
	}
	if ((r = engine_container_inspect(eng, ctx->call, s->container, &ex->container, e)) < 0) {
		if (e->code == ERRCODE_SESSION_NOT_FOUND)
			session_forget(ctx->svc->sessions, s);
		return r;
	}
	/* a session made from a checkpoint is rebuilt from its lineage's first image, with all it did since */
	ex->base_id = s->checkpoint[0] ? s->image_id : json_string_value(json_object_get(ex->container, "Image"));
	if (!ex->base_id)
		return err_set(e, ERRCODE_ENGINE_ERROR, -EPROTO, "the session's container names no image");
	if ((r = engine_image_inspect(eng, ctx->call, ex->base_id, &ex->parent, e)) < 0)
		return r;
	if (ex->build && (r = image_target_check(eng, ctx->call, ctx->svc->cfg, ex->ref, s, ex->base_id, e)) < 0)
		return r;
	if (ex->build && json_array_size(json_object_get(json_object_get(ex->parent, "Config"), "OnBuild")))
		/* FROM would run them in the builder, where nothing is hardened */
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "the session's base image has ONBUILD triggers, which a build would run outside the "
			       "session's hardening: export without build (and build the Dockerfile yourself), or start "
			       "the session from an image without them");
	if (engine_image_inspect(eng, ctx->call, s->image, &ex->baseref, e) == 0)
		ex->base_ref_id = json_string_value(json_object_get(ex->baseref, "Id"));
	err_clear(e);

	/* the container's variables the base image lacks: the session's env */
	ex->env = json_array();
	const char *hostname = json_string_value(json_object_get(json_object_get(ex->container, "Config"), "Hostname"));
	json_array_foreach (json_object_get(json_object_get(ex->container, "Config"), "Env"), i, v) {
		/* the proxy variables of egress are the session's way out, not its settings */
		bool inherited = compat_engine_env(json_string_value(v), hostname) ||
				 (ex->s->egress && egress_env_ours(json_string_value(v)));
		json_array_foreach (json_object_get(json_object_get(ex->parent, "Config"), "Env"), j, u)
			inherited = inherited || json_equal(u, v);
		if (!inherited)
			json_array_append(ex->env, v);
	}
	return 0;
}

/* pip freeze of the session and, when it has packages, of a fresh container of its base image. */
static int export_freeze(struct export *ex, struct err *e)
{
	int r;

	tool_progress_stage(ex->ctx, "reading pip freeze");
	if ((r = freeze(ex->ctx, ex->s, &ex->mine, e)) < 0)
		return r;
	if (!json_array_size(ex->mine)) {
		ex->theirs = json_array();
		return 0;
	}
	tool_progress_stage(ex->ctx, "reading pip freeze of a fresh container of the base image");
	if ((r = base_freeze(ex->ctx, ex->s, ex->base_id, &ex->theirs, e)) < 0)
		return err_append(e, r,
				  " (while starting a throwaway container of the base image to compare pip freeze)");
	return 0;
}

/*
 * The context: the workspace through the sandbox user's tar, to a tar for
 * the build (spilled to an unnamed temporary file) and/or a new folder in
 * the host folder.
 */
static int export_workspace(struct export *ex, struct err *e)
{
	const struct config *cfg = ex->ctx->svc->cfg;
	struct xfer_result *xr = &ex->xr;
	int r;

	if (ex->build) {
		const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
		ex->sink.spill_fd = open(tmp, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
		if (ex->sink.spill_fd < 0)
			return err_set(e, ERRCODE_INTERNAL, -errno,
				       "cannot make a temporary file in %.200s for the build context: %s", tmp,
				       strerror(errno));
		if ((r = tar_writer_create(&ex->tarbuf, &ex->w, e)) < 0)
			return r;
		ex->sink.tar = &ex->tarbuf;
	}
	if (ex->host_dir) {
		snprintf(ex->folder, sizeof(ex->folder), "sandbox-mcp-export-%s-%lld", ex->s->id,
			 (long long)time(NULL));
		if ((r = hostfs_extract_begin(ex->dfd, ex->folder, false, &ex->hx, e)) < 0)
			return r;
		ex->sink.host = hostfs_extract_sink(ex->hx);
		struct tar_entry top = { .path = "", .type = TAR_TYPE_DIR, .mode = 0755, .mtime = time(NULL) };
		if ((r = ex->sink.host->entry(ex->sink.host->arg, &top, e)) < 0)
			return r;
	}
	ex->sink.w = ex->w;
	ex->sink.ctx = ex->ctx;
	tool_progress_stage(ex->ctx, "reading the workspace");
	struct tar_sink ts = { sink_entry, sink_data, sink_end, sink_skipped, &ex->sink };
	struct tar_limits lim = { .entries = FILES_ENTRIES_MAX,
				  .entry_size = files_max_bytes(cfg),
				  .total_size = files_max_bytes(cfg) };
	struct tar_stats st;
	const char *wargv[] = { cfg->workspace, NULL };
	r = xfer_pull(session_engine(ex->s), ex->ctx->call, ex->s, workspace_script, wargv, &lim, &ts, &st, xr, e);
	if (xr->exit_code > 2 && !xr->stopped && !xr->timed_out && !xr->cancelled)
		r = files_script_failed(xr, cfg->workspace, "export", e);
	else if (r < 0)
		r = files_exec_failed(ex->ctx, ex->s, r, e);
	else if (xr->cancelled || xr->timed_out || xr->exit_code < 0)
		r = files_script_failed(xr, cfg->workspace, "export", e);
	return r;
}

/* The pip plan, and the local package files it needs from outside the workspace, added to the context. */
static int export_outside(struct export *ex, struct err *e)
{
	const struct config *cfg = ex->ctx->svc->cfg;
	uint64_t outside_bytes = 0;
	size_t i;
	json_t *v;
	int r;

	dockerfile_pip_plan(cfg->workspace, ex->mine, ex->theirs, ex->sink.archives, &ex->plan);
	if (json_array_size(ex->plan.outside) > EXPORT_OUTSIDE_MAX)
		return err_set(e, ERRCODE_TOO_LARGE, -E2BIG,
			       "%zu packages were installed from files outside %s, more than the %d an export carries: "
			       "move them into the workspace and install them from there",
			       json_array_size(ex->plan.outside), cfg->workspace, EXPORT_OUTSIDE_MAX);
	json_array_foreach (ex->plan.outside, i, v) {
		struct buf data;
		uint64_t size;
		unsigned mode;
		char cpath[DOCKERFILE_CONTEXT_NAME_MAX];
		if ((r = files_pull_file(ex->ctx, ex->s, json_string_value(v), 0, UINT64_MAX,
					 files_max_bytes(cfg) - outside_bytes, &data, &size, &mode, e)) < 0)
			return err_append(e, r,
					  " (a package was installed from it; the export needs it in its context)");
		dockerfile_context_name(json_string_value(v), cpath, sizeof(cpath));
		r = sink_add(&ex->sink, cpath, data.data ? data.data : "", data.len, e);
		ex->sink.files++;
		ex->sink.bytes += data.len;
		outside_bytes += data.len;
		buf_finish(&data);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * The Dockerfile returned (df) and, for a build, the builder's (bdf: the
 * same with this build's own label, without the RUN lines, which go to
 * runs).
 */
static int export_dockerfile(struct export *ex, struct err *e)
{
	const struct config *cfg = ex->ctx->svc->cfg;
	struct session *s = ex->s;
	const char *wd = json_string_value(json_object_get(json_object_get(ex->container, "Config"), "WorkingDir"));
	char created[32];
	time_t now = time(NULL);
	struct tm tm;

	char owner[IMAGE_OWNER_MAX];

	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	image_owner(call_principal(ex->ctx->call), owner, sizeof(owner));
	ex->labels = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", IMAGE_LABEL_SESSION, s->id, IMAGE_LABEL_PARENT,
			       ex->base_id, IMAGE_LABEL_BASE, s->image, IMAGE_LABEL_CREATED, created,
			       IMAGE_LABEL_VERSION, SANDBOX_VERSION, IMAGE_LABEL_OWNER, owner);
	struct dockerfile_info info = {
		.s = s,
		.labels = ex->labels,
		.ws = cfg->workspace,
		.base_id = ex->base_id,
		.base_ref_id = ex->base_ref_id ? ex->base_ref_id : "",
		.env = ex->env,
		.workdir = wd && *wd ? wd : cfg->workspace,
		.pip = &ex->plan,
		.modes = ex->sink.modes,
		.history = s->history,
	};
	dockerfile_write(&info, &ex->df);
	if (ex->build) {
		struct buf full;
		buf_init(&full, SIZE_MAX);
		export_build_nonce(ex->nonce, sizeof(ex->nonce));
		json_t *blabels = json_deep_copy(ex->labels);
		json_object_set_new(blabels, IMAGE_LABEL_BUILD, json_string(strchr(ex->nonce, '=') + 1));
		info.labels = blabels;
		dockerfile_write(&info, &full);
		json_decref(blabels);
		ex->runs = json_array();
		ex->steps = dockerfile_split(full.data, &ex->bdf, ex->runs);
		buf_finish(&full);
	}
	if (ex->df.len > DOCKERFILE_MAX || ex->bdf.len > DOCKERFILE_MAX)
		return err_set(e, ERRCODE_TOO_LARGE, -EMSGSIZE, "the Dockerfile would be larger than %u bytes",
			       DOCKERFILE_MAX);
	return 0;
}

/*
 * Each Dockerfile into its target: the builder's closes the build's
 * context, the other goes to the host folder, which is then committed.
 */
static int export_add_dockerfiles(struct export *ex, struct err *e)
{
	const struct tar_sink *host = ex->sink.host;
	struct tar_entry bdfe = {
		.path = "Dockerfile", .type = TAR_TYPE_FILE, .size = ex->bdf.len, .mode = 0644, .mtime = time(NULL)
	};
	struct tar_entry dfe = {
		.path = "Dockerfile", .type = TAR_TYPE_FILE, .size = ex->df.len, .mode = 0644, .mtime = time(NULL)
	};
	int r;

	if (ex->w && ((r = spill(&ex->sink, tar_writer_add(ex->w, &bdfe, e), e)) < 0 ||
		      (r = spill(&ex->sink, tar_writer_data(ex->w, ex->bdf.data, ex->bdf.len, e), e)) < 0 ||
		      (r = spill(&ex->sink, tar_writer_close(ex->w, e), e)) < 0))
		return r;
	if (!ex->hx)
		return 0;
	if ((r = host->entry(host->arg, &dfe, e)) < 0 ||
	    (r == TAR_OK &&
	     ((r = host->data(host->arg, ex->df.data, ex->df.len, e)) < 0 || (r = host->entry_end(host->arg, e)) < 0)))
		return r;
	return hostfs_extract_commit(ex->hx, e);
}

/*
 * build: true builds offline like the sessions (pip would retry an index it
 * cannot reach, then fail), unless the session has egress: its steps then
 * run with the session's policy.
 */
static int export_offline(const struct export *ex, struct err *e)
{
	size_t n = json_array_size(ex->plan.online);

	if (!ex->build || n == 0 || ex->s->egress)
		return 0;
	return err_set(e, ERRCODE_INVALID_ARGUMENT, -ENETUNREACH,
		       "build: true builds offline, and %zu package%s came from an index or a URL (%s%s): put %s wheel%s "
		       "in the workspace (e.g. pip download or pip wheel into a folder there) and export again, or build "
		       "the Dockerfile below yourself with network access",
		       n, n == 1 ? "" : "s", json_string_value(json_array_get(ex->plan.online, 0)),
		       n > 1 ? ", ..." : "", n == 1 ? "its" : "their", n == 1 ? "" : "s");
}

/*
 * Builds the export: the builder's Dockerfile from the spilled context,
 * offline, then the RUN steps in a hardened session (export_hardened_steps), then
 * the tag, once it is still allowed. A failure removes only this build's
 * images (its nonce label). 0 or -errno; build_failed when the builder or a
 * step failed (bt says where and what it printed), not the tagging.
 */
static int export_build(struct export *ex, struct err *e)
{
	struct tool_ctx *ctx = ex->ctx;
	struct engine *eng = session_engine(ex->s);
	char elabels[4096];
	int r;

	ex->bt.ctx = ctx;
	buf_init(&ex->bt.text, EXPORT_BUILD_TAIL * 3);
	/*
	 * The provenance labels are in the Dockerfile, right after FROM: every step's image carries
	 * them. The reference is not (the Dockerfile may be built under any name): the build adds it
	 * to the final image only, which is what lets a later export or commit replace this tag. The
	 * owner goes there too, last: no instruction of the Dockerfile can give the image away.
	 */
	json_t *reflabel = json_pack("{s:s, s:O}", IMAGE_LABEL_REF, ex->ref, IMAGE_LABEL_OWNER,
				     json_object_get(ex->labels, IMAGE_LABEL_OWNER));
	char *jlabels = json_dumps(reflabel, JSON_COMPACT);
	json_decref(reflabel);
	r = jlabels ? engine_url_escape(jlabels, elabels, sizeof(elabels)) : -EINVAL;
	free(jlabels);
	if (r < 0)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "image reference too long");
	tool_progress_stage(ctx, "building the export");
	int64_t t0 = now_ms();
	struct spill_src src = { .fd = ex->sink.spill_fd };
	if (lseek(ex->sink.spill_fd, 0, SEEK_SET) < 0)
		return err_set(e, ERRCODE_INTERNAL, -errno, "rewinding the build context: %s", strerror(errno));
	/* no t=: the tag is set after the build, once image_tag_checked allows it */
	char *query = xasprintf("networkmode=none&rm=1&forcerm=1&labels=%s", elabels);
	r = engine_build(eng, ctx->call, query, spill_source, &src, export_build_message, &ex->bt, ex->image_id, e);
	free(query);
	const char *pwd = json_string_value(json_object_get(json_object_get(ex->parent, "Config"), "WorkingDir"));
	if (r == 0 && json_array_size(ex->runs))
		r = export_hardened_steps(ctx, ex->s, ex->runs, ex->steps, pwd && *pwd ? pwd : "/", ex->plan.outside,
					  &ex->bt, ex->image_id, e);
	ex->build_ms = now_ms() - t0;
	if (r < 0) {
		ex->build_failed = true;
	} else {
		r = image_tag_checked(eng, ctx->call, ctx->svc->cfg, ex->image_id, ex->repo, ex->tag, ex->s,
				      ex->base_id, e);
	}
	if (r < 0)
		image_remove_labelled(eng, ex->nonce);
	return r;
}

/* A failed build: why and at which step, the end of its output, and the Dockerfile to build by hand. */
static void export_build_failed(const struct export *ex, struct tool_result *res, struct err *e, int r)
{
	const struct build_tail *bt = &ex->bt;
	char msg[ERR_MSG_MAX];

	snprintf(msg, sizeof(msg), "%s", e->msg);
	/* cancelled, timed out, or no room for the build's session: the caller's next step differs */
	enum errcode code = e->code == ERRCODE_CANCELLED || e->code == ERRCODE_TIMEOUT ||
					    e->code == ERRCODE_SESSION_LIMIT
				    ? e->code
				    : ERRCODE_ENGINE_ERROR;
	err_set(e, code, r,
		"the build of the export failed%s%s: %s. The Dockerfile is below; fix the session (or build "
		"it yourself with network access) and try again",
		bt->step[0] ? " at " : "", bt->step, msg);
	tool_fail(res, e);
	size_t skip = bt->text.len > EXPORT_BUILD_TAIL ? bt->text.len - EXPORT_BUILD_TAIL : 0;
	tool_text_bytes(res, "Build output (last part):\n", bt->text.data ? bt->text.data + skip : "",
			bt->text.len - skip);
	tool_text(res, "%s", ex->df.data);
}

/* The result of an export that worked: the Dockerfile, what it holds, where it went. */
static void export_render(const struct export *ex, struct tool_result *res)
{
	const struct ctx_sink *sink = &ex->sink;
	const struct session *s = ex->s;
	uint64_t context_bytes = ex->w ? sink->spilled : sink->bytes + ex->df.len;
	const char *real = strcmp(ex->real, "/") == 0 ? "" : ex->real;

	tool_text(res, "%s", ex->df.data);
	tool_text(res,
		  "Dockerfile for session %s: %llu file%s and %llu folder%s of %s, %zu pip package%s beyond the base "
		  "image (%zu need an index to rebuild), context %llu bytes.",
		  s->id, (unsigned long long)sink->files, sink->files == 1 ? "" : "s", (unsigned long long)sink->dirs,
		  sink->dirs == 1 ? "" : "s", ex->ctx->svc->cfg->workspace, json_array_size(ex->plan.installed),
		  json_array_size(ex->plan.installed) == 1 ? "" : "s", json_array_size(ex->plan.online),
		  (unsigned long long)context_bytes);
	if (ex->hx)
		tool_text(res,
			  "Written to %s/%s (Dockerfile and its context): docker build --network none -t <name> %s/%s",
			  real, ex->folder, real, ex->folder);
	if (ex->build)
		tool_text(res,
			  "Built %s (image %.19s) in %.1f s. Start a session from it with session_create {image: \"%s\"}.",
			  ex->ref, ex->image_id, (double)ex->build_ms / 1000.0, ex->ref);
	if (json_array_size(sink->skipped))
		tool_text(res, "Not exported (only regular files and folders are): %zu entr%s, e.g. %s",
			  json_array_size(sink->skipped), json_array_size(sink->skipped) == 1 ? "y" : "ies",
			  json_string_value(json_object_get(json_array_get(sink->skipped, 0), "name")));
	if (ex->xr.exit_code > 0 && ex->xr.stderr_text[0])
		tool_text(res, "tar in the sandbox reported (those files are not in the export):\n%s",
			  ex->xr.stderr_text);
	json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:s, s:s, s:O, s:O, s:O}", "session_id", s->id, "dockerfile",
			      ex->df.data, "files", (json_int_t)sink->files, "dirs", (json_int_t)sink->dirs,
			      "context_bytes", (json_int_t)context_bytes, "base_image", s->image, "base_image_id",
			      ex->base_id, "pip", ex->plan.installed, "pip_needs_index", ex->plan.online, "skipped",
			      sink->skipped);
	if (ex->hx) {
		char where[PATH_MAX + NAME_MAX + 2];
		snprintf(where, sizeof(where), "%s/%s", real, ex->folder);
		json_object_set_new(o, "host_path", json_string(where));
	}
	if (ex->checkpoint[0])
		json_object_set_new(o, "checkpoint_id", json_string(ex->checkpoint));
	if (ex->build) {
		json_object_set_new(o, "image_id", json_string(ex->image_id));
		json_object_set_new(o, "reference", json_string(ex->ref));
		json_object_set_new(o, "build_ms", json_integer(ex->build_ms));
	}
	tool_structured(res, o);
}

static void export_init(struct export *ex, struct tool_ctx *ctx, json_t *args)
{
	memset(ex, 0, sizeof(*ex));
	ex->ctx = ctx;
	ex->host_dir = json_string_value(json_object_get(args, "host_dir"));
	ex->build = json_is_true(json_object_get(args, "build"));
	ex->repo = json_string_value(json_object_get(args, "repository"));
	if (!ex->repo)
		ex->repo = IMAGE_EXPORT_REPOSITORY;
	ex->tag = json_string_value(json_object_get(args, "tag"));
	ex->dfd = -1;
	ex->base_ref_id = "";
	buf_init(&ex->tarbuf, DOCKERFILE_MAX + (1u << 20));
	/* unbounded while written (its inputs are bounded), checked against DOCKERFILE_MAX after */
	buf_init(&ex->df, SIZE_MAX);
	buf_init(&ex->bdf, SIZE_MAX);
	ex->sink.spill_fd = -1;
	ex->sink.modes = json_array();
	ex->sink.archives = json_array();
	ex->sink.skipped = json_array();
}

/*
 * The session to export: the one args name, or with args.checkpoint a
 * transient session made from that checkpoint, closed by export_finish.
 */
static int export_session(struct export *ex, json_t *args, struct tool_result *res)
{
	const char *ref = json_string_value(json_object_get(args, "checkpoint"));
	struct checkpoint from;
	struct err e;
	if (!ref)
		return tool_session(ex->ctx, args, &ex->s, res);
	tool_progress_stage(ex->ctx, "starting a container of the checkpoint");
	if (savepoint_open(ex->ctx->svc->sessions, ex->ctx->call, ref, &ex->s, &from, &e) < 0) {
		tool_fail(res, &e);
		return -ENOENT;
	}
	snprintf(ex->checkpoint, sizeof(ex->checkpoint), "%s", from.id);
	checkpoint_finish(&from);
	return 0;
}

static void export_finish(struct export *ex)
{
	if (ex->hx)
		hostfs_extract_destroy(ex->hx);
	if (ex->dfd >= 0)
		close(ex->dfd);
	tar_writer_destroy(ex->w);
	if (ex->sink.spill_fd >= 0)
		close(ex->sink.spill_fd);
	buf_finish(&ex->tarbuf);
	buf_finish(&ex->df);
	buf_finish(&ex->bdf);
	buf_finish(&ex->bt.text);
	json_decref(ex->runs);
	dockerfile_pip_finish(&ex->plan);
	json_decref(ex->sink.modes);
	json_decref(ex->sink.archives);
	json_decref(ex->sink.skipped);
	json_decref(ex->container);
	json_decref(ex->parent);
	json_decref(ex->baseref);
	json_decref(ex->mine);
	json_decref(ex->theirs);
	json_decref(ex->env);
	json_decref(ex->labels);
	if (ex->s && ex->checkpoint[0]) {
		char id[SESSION_ID_LEN + 1];
		struct err cerr;
		snprintf(id, sizeof(id), "%s", ex->s->id);
		session_put(ex->ctx->svc->sessions, ex->s);
		if (session_close(ex->ctx->svc->sessions, NULL, id, &cerr) < 0)
			log_warnf("session_export: closing the checkpoint's session %s: %s", id, cerr.msg);
	} else if (ex->s) {
		session_put(ex->ctx->svc->sessions, ex->s);
	}
}

/* The phases in order: the first that fails ends the call, and export_finish releases what they made. */
static int session_export_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct export ex;
	struct err e;
	int r;

	err_clear(&e);
	export_init(&ex, ctx, args);
	if (export_check(&ex, &e) < 0) {
		tool_fail(res, &e);
	} else if (export_session(&ex, args, res) < 0) {
		ex.s = NULL;
	} else if (export_inspect(&ex, &e) < 0 || export_freeze(&ex, &e) < 0 || export_workspace(&ex, &e) < 0 ||
		   export_outside(&ex, &e) < 0 || export_dockerfile(&ex, &e) < 0 ||
		   export_add_dockerfiles(&ex, &e) < 0) {
		tool_fail(res, &e);
	} else if (export_offline(&ex, &e) < 0) {
		tool_fail(res, &e);
		tool_text(res, "%s", ex.df.data);
	} else if (ex.build && (r = export_build(&ex, &e)) < 0) {
		if (ex.build_failed)
			export_build_failed(&ex, res, &e, r);
		else
			tool_fail(res, &e);
	} else {
		export_render(&ex, res);
	}
	export_finish(&ex);
	return 0;
}

const struct tool_entry tool_session_export_entry = {
	.name = "session_export",
	.title = "Export a session as a Dockerfile",
	.description =
		"Write a Dockerfile (and its build context) that recreates the session from what it did: its base "
		"image, the workspace files, pip packages pinned to the installed versions (installed again offline "
		"from the local files they came from), env and workdir. Returns the Dockerfile; host_dir (a host "
		"folder the server allows) also writes it and its context there; build: true builds it as an image "
		"for session_create {image}.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"host_dir\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":4096,\"description\":\"Absolute "
		"path of a host folder (inside SANDBOX_HOST_DIRS) to write a new export folder into (at most 4096 characters)\"},"
		"\"build\":{\"type\":\"boolean\",\"description\":\"Also build the export as an image (offline, "
		"default false)\"},"
		"\"repository\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":255,\"description\":\"Repository "
		"of the built image, one the server allows (SANDBOX_COMMIT_REPOS, by default starting with "
		"sandbox-mcp-) (default " IMAGE_EXPORT_REPOSITORY "; at most 255 characters)\"},"
		"\"tag\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":\"Tag of the built "
		"image (default: unique; at most 128 characters)\"},"
		"\"checkpoint\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,\"description\":\"Export "
		"this checkpoint (its id or name) instead of a live session: what was done from the base image up "
		"to it (at most 63 characters)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"dockerfile\":{\"type\":\"string\"},\"files\":{\"type\":\"integer\"},\"dirs\":{\"type\":\"integer\"},"
		"\"context_bytes\":{\"type\":\"integer\"},\"base_image\":{\"type\":\"string\"},"
		"\"base_image_id\":{\"type\":\"string\"},"
		"\"pip\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
		"\"pip_needs_index\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
		"\"skipped\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"name\":{\"type\":\"string\"},\"reason\":{\"type\":\"string\"}}}},"
		"\"host_path\":{\"type\":\"string\"},\"image_id\":{\"type\":\"string\"},"
		"\"reference\":{\"type\":\"string\"},\"build_ms\":{\"type\":\"integer\"},"
		"\"checkpoint_id\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_SESSION,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = session_export_tool,
};
