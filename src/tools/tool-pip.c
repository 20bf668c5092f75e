/*
 * tool-pip.c - pip_install, pip_uninstall, pip_list, pip_freeze, pip_status.
 *
 * pip runs as the session's user with `python3 -m pip`, which in the default
 * image is the venv at /opt/venv (first on PATH, owned by the sandbox user),
 * always from an argv: every package is checked against argcheck's grammar
 * first and passed after `--`, so none can be an option.
 *
 * Sessions have no network by default, so an install that needs an index is
 * refused before anything runs (network_disabled), and offline installs get
 * --no-index (and --no-build-isolation: building an sdist offline cannot
 * fetch setuptools into an isolated environment; the venv sees the image's).
 *
 * A background install is a detached shell in the container that writes
 * pip's log and, at the end, its exit status under /tmp/.sandbox-mcp-pip/N;
 * the session remembers which packages went there, and pip_status reads the
 * files.  The call returns at once, so the session's queue is not held.
 *
 * A failed pip is pip_failed, never invalid_argument: that code means
 * argcheck refused a value before anything ran.  pip says what went wrong in
 * its last lines, so those are what the error message keeps, and the longer
 * end of the output follows as its own text block.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "tools/argcheck.h"
#include "tools/tools.h"

#define PIP_PACKAGES_MAX 50
/* Foreground installs: pip may build wheels; progress keeps clients waiting. */
#define PIP_INSTALL_TIMEOUT_S 900
#define PIP_QUERY_TIMEOUT_S 120
#define PIP_JOBS_DIR "/tmp/.sandbox-mcp-pip"
#define PIP_LOG_TAIL 3000
#define PIP_LOG_LABEL "pip's output (last part):\n"

/* argv of `python3 -m pip <verb> ...`: fixed words, then at most the packages and a few options. */
struct pip_argv {
	const char *v[PIP_PACKAGES_MAX + 24];
	int n;
};

static void pa_add(struct pip_argv *a, const char *s)
{
	if (a->n < (int)ARRAY_SIZE(a->v) - 1)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void pa_pip(struct pip_argv *a, const char *verb)
{
	a->n = 0;
	pa_add(a, "python3");
	pa_add(a, "-m");
	pa_add(a, "pip");
	pa_add(a, verb);
}

/* No network and no egress: nothing but files in the sandbox can be installed. */
static bool session_offline(const struct session *s)
{
	return !s->egress && (s->network[0] == '\0' || strcmp(s->network, "none") == 0);
}

/* What the exit of a pip that could not start means: no python, or no pip module. */
static int pip_missing(const struct exec_result *xr, const char *out, struct session *s, struct err *e)
{
	if (xr->exit_code == 127 || xr->exit_code == 126)
		return err_set(e, ERRCODE_PYTHON_NOT_FOUND, -ENOENT,
			       "image %s has no python3, so no pip: use the default image (session_create without image)",
			       s->image);
	if (xr->exit_code == 1 && out && strstr(out, "No module named pip"))
		return err_set(e, ERRCODE_PYTHON_NOT_FOUND, -ENOENT,
			       "image %s has python3 but no pip: use the default image, or one with pip installed",
			       s->image);
	return 0;
}

/* Tail of text: its last max bytes, starting at a line when one starts near there. */
static const char *tail_of(const char *text, size_t len, size_t max)
{
	if (len <= max)
		return text;
	const char *p = text + len - max;
	const char *nl = memchr(p, '\n', max / 4);
	return nl ? nl + 1 : p;
}

/*
 * Fails res with e, then adds the end of pip's output as its own block (and
 * as structuredContent.error.output): e's message only holds the last lines.
 */
static int pip_fail_output(struct tool_result *res, const struct err *e, const char *out, size_t len)
{
	tool_fail(res, e);
	if (!out || len == 0)
		return 0;
	const char *t = tail_of(out, len, PIP_LOG_TAIL);
	size_t n = len - (size_t)(t - out);
	tool_text_bytes(res, PIP_LOG_LABEL, t, n);
	json_t *err = json_object_get(res->structured, "error");
	if (err)
		json_object_set_new(err, "output", json_string_lossy(t, n));
	return 0;
}

/*
 * Forgets the background job recorded for pkg (exactly as given): a later
 * foreground install or an uninstall decides its state now.  The session
 * keeps jobs by package; "" is how one is cleared.
 */
static void pip_forget_job(struct session *s, const char *pkg)
{
	const char *dir = session_pip_job_dir(s, pkg);
	if (dir && *dir)
		session_pip_job(s, pkg, "");
}

static json_t *packages_arg(json_t *args, const char *key, struct err *e)
{
	json_t *j = json_object_get(args, key);
	if (!json_is_array(j) || json_array_size(j) == 0 || json_array_size(j) > PIP_PACKAGES_MAX) {
		err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must list 1 to %d packages", key, PIP_PACKAGES_MAX);
		return NULL;
	}
	return j;
}

/* What pip_install was asked, checked. */
struct install_req {
	json_t *pkgs; /* borrowed from the arguments */
	const char *index_url, *find_links;
	bool upgrade, background;
	bool need_index;  /* a package named only by name: pip looks it up in an index */
	bool need_net;	  /* a package given as a URL */
	bool links_local; /* find_links names a folder in the sandbox, not a URL */
};

/* Checks pip_install's arguments into q: 0, or -errno with e (nothing has run). */
static int install_parse(json_t *args, struct install_req *q, struct err *e)
{
	size_t i;
	json_t *v;
	int r;

	*q = (struct install_req){
		.index_url = json_string_value(json_object_get(args, "index_url")),
		.find_links = json_string_value(json_object_get(args, "find_links")),
		.upgrade = json_is_true(json_object_get(args, "upgrade")),
		.background = json_is_true(json_object_get(args, "background")),
	};
	if (!(q->pkgs = packages_arg(args, "packages", e)))
		return -EINVAL;
	json_array_foreach (q->pkgs, i, v) {
		enum argcheck_req kind;
		if (!json_is_string(v))
			return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "packages[%zu] must be a string", i);
		if ((r = argcheck_requirement(json_string_value(v), &kind, e)) < 0)
			return r;
		q->need_index |= kind == ARGCHECK_REQ_NAME;
		q->need_net |= kind == ARGCHECK_REQ_URL;
	}
	const char *fl = q->find_links;
	q->links_local = fl && strncmp(fl, "http", 4) != 0;
	if ((q->index_url && (r = argcheck_http_url(q->index_url, "index_url", e)) < 0) ||
	    (fl && !q->links_local && (r = argcheck_http_url(fl, "find_links", e)) < 0) ||
	    (q->links_local && (r = argcheck_path(fl, "find_links", e)) < 0))
		return r;
	return 0;
}

/* `python3 -m pip install` for q, offline (no index, no build isolation) unless the session has a network. */
static void install_argv(const struct install_req *q, bool offline, struct pip_argv *a)
{
	size_t i;
	json_t *v;

	pa_pip(a, "install");
	pa_add(a, "--no-input");
	pa_add(a, "--disable-pip-version-check");
	if (offline) {
		pa_add(a, "--no-index");
		pa_add(a, "--no-build-isolation");
	}
	if (q->index_url) {
		pa_add(a, "--index-url");
		pa_add(a, q->index_url);
	}
	if (q->find_links) {
		pa_add(a, "--find-links");
		pa_add(a, q->find_links);
	}
	if (q->upgrade)
		pa_add(a, "--upgrade");
	pa_add(a, "--");
	json_array_foreach (q->pkgs, i, v)
		pa_add(a, json_string_value(v));
}

/* Starts a as a detached job in s and answers at once; pip_status follows it. Fills res either way. */
static void install_background(struct tool_ctx *ctx, struct session *s, const struct install_req *q,
			       const struct pip_argv *a, struct tool_result *res)
{
	/*
	 * fixed script; the job dir and pip's argv are its positional
	 * arguments.  The log exists before this returns, so a pip_status
	 * right after finds it (no rc yet: installing), however late the
	 * detached child gets to run.
	 */
	static const char script[] =
		"d=$1; shift; mkdir -p \"$d\" && : > \"$d/log\" || exit 1; "
		"( \"$@\" >> \"$d/log\" 2>&1; echo $? > \"$d/rc.part\"; mv \"$d/rc.part\" \"$d/rc\" ) "
		"< /dev/null > /dev/null 2>&1 &";
	static unsigned long seq;
	struct exec_result xr;
	struct err e;
	char dir[96];
	size_t i;
	json_t *v;

	err_clear(&e);
	snprintf(dir, sizeof(dir), PIP_JOBS_DIR "/%lld-%lu", (long long)now_ms(),
		 __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED));
	const char *bg[ARRAY_SIZE(a->v) + 5] = { "sh", "-c", script, "sandbox-mcp-pip", dir };
	for (int k = 0; k <= a->n; k++)
		bg[5 + k] = a->v[k];
	int r = tool_exec(ctx, s, bg, NULL, NULL, PIP_QUERY_TIMEOUT_S * 1000, &xr, &e);
	if (r == 0 && xr.exit_code != 0)
		r = err_set(&e, ERRCODE_ENGINE_ERROR, -EIO,
			    "could not start the background install (exit %d); try again without background",
			    xr.exit_code);
	exec_result_finish(&xr);
	if (r < 0) {
		tool_fail(res, &e);
		return;
	}
	json_array_foreach (q->pkgs, i, v)
		session_pip_job(s, json_string_value(v), dir);
	session_record(s, "pip",
		       json_pack("{s:O, s:s?, s:b}", "packages", q->pkgs, "find_links", q->find_links, "background",
				 1));
	tool_text(res,
		  "Installing %zu package(s) in the background in session %s; follow with pip_status "
		  "{\"package\": \"%.100s\"} (pip's log: %s/log).",
		  json_array_size(q->pkgs), s->id, json_string_value(json_array_get(q->pkgs, 0)), dir);
	tool_structured(res, json_pack("{s:s, s:s, s:O, s:s}", "session_id", s->id, "state", "installing", "packages",
				       q->pkgs, "log", dir));
}

/* "Successfully installed a-1.0 b-2.0" names what changed: ["a-1.0", "b-2.0"] (new reference). */
static json_t *installed_names(const char *out)
{
	json_t *installed = json_array();
	const char *ok = strstr(out, "Successfully installed ");

	if (!ok)
		return installed;
	ok += strlen("Successfully installed ");
	const char *end = strchr(ok, '\n');
	if (!end)
		end = ok + strlen(ok);
	while (ok < end) {
		const char *sp = memchr(ok, ' ', (size_t)(end - ok));
		const char *w_end = sp ? sp : end;
		if (w_end > ok)
			json_array_append_new(installed, json_string_lossy(ok, (size_t)(w_end - ok)));
		ok = w_end + 1;
	}
	return installed;
}

/* Runs a in s and waits for it; fills res with what pip installed, or why it failed. */
static void install_foreground(struct tool_ctx *ctx, struct session *s, const struct install_req *q,
			       const struct pip_argv *a, struct tool_result *res)
{
	struct exec_result xr;
	struct err e;
	size_t i, len;
	json_t *v;

	err_clear(&e);
	/* whatever this install does, its result is the one to report now, not an earlier background job's */
	json_array_foreach (q->pkgs, i, v)
		pip_forget_job(s, json_string_value(v));
	if (tool_exec(ctx, s, a->v, NULL, NULL, PIP_INSTALL_TIMEOUT_S * 1000, &xr, &e) < 0) {
		exec_result_finish(&xr);
		tool_fail(res, &e);
		return;
	}
	char *out = tool_exec_output(&xr, &len);
	if (pip_missing(&xr, out, s, &e) < 0 || xr.timed_out || xr.exit_code != 0) {
		if (!e.code && xr.timed_out)
			err_set_tail(&e, ERRCODE_TIMEOUT, -ETIMEDOUT, out, len,
				     "pip ran past %d s and was stopped; its last lines:\n", PIP_INSTALL_TIMEOUT_S);
		else if (!e.code)
			err_set_tail(&e, ERRCODE_PIP_FAILED, -EIO, out, len,
				     "pip install failed (exit %d); its last lines:\n", xr.exit_code);
		if (e.code == ERRCODE_PYTHON_NOT_FOUND)
			tool_fail(res, &e);
		else
			pip_fail_output(res, &e, out, len);
	} else {
		const char *tail = tail_of(out, len, PIP_LOG_TAIL);
		session_record(s, "pip", json_pack("{s:O, s:s?}", "packages", q->pkgs, "find_links", q->find_links));
		tool_text(res, "%s", tail);
		tool_structured(res, json_pack("{s:s, s:o, s:o}", "session_id", s->id, "installed",
					       installed_names(out), "output", json_string_lossy(tail, strlen(tail))));
	}
	free(out);
	exec_result_finish(&xr);
}

/* Checks, refuses an install that needs a network the session lacks, then installs in the foreground or not. */
static int pip_install(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct install_req q;
	struct pip_argv a;
	struct session *s;
	struct err e;

	err_clear(&e);
	if (install_parse(args, &q, &e) < 0)
		return tool_fail(res, &e);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	bool offline = session_offline(s);
	if (offline &&
	    (q.index_url || q.need_net || (q.need_index && !q.links_local) || (q.find_links && !q.links_local))) {
		err_set(&e, ERRCODE_NETWORK_DISABLED, -ENETUNREACH,
			"session %s has no network, so pip cannot reach a package index. Install from files in the "
			"sandbox instead (a wheel, sdist or project folder path, or find_links naming a folder of "
			"wheels), or session_create {\"egress\": {\"presets\": [\"pypi\"]}} for a session that can "
			"download from PyPI",
			s->id);
		tool_fail(res, &e);
	} else {
		install_argv(&q, offline, &a);
		if (q.background)
			install_background(ctx, s, &q, &a, res);
		else
			install_foreground(ctx, s, &q, &a, res);
	}
	session_put(ctx->svc->sessions, s);
	return 0;
}

/*
 * Runs a pip query (argv; what names it in errors) and returns its stdout, or
 * fills res with the failure and returns NULL.  With exit_code, any exit is
 * the caller's to judge.
 */
static char *pip_query(struct tool_ctx *ctx, struct session *s, const char *const *argv, const char *what,
		       struct tool_result *res, int *exit_code)
{
	struct exec_result xr;
	struct err e;
	err_clear(&e);
	int r = tool_exec(ctx, s, argv, NULL, NULL, PIP_QUERY_TIMEOUT_S * 1000, &xr, &e);
	if (r < 0) {
		exec_result_finish(&xr);
		tool_fail(res, &e);
		return NULL;
	}
	size_t len;
	char *all = tool_exec_output(&xr, &len);
	if (pip_missing(&xr, all, s, &e) < 0 || xr.timed_out || (!exit_code && xr.exit_code != 0)) {
		if (!e.code && xr.timed_out)
			err_set_tail(&e, ERRCODE_TIMEOUT, -ETIMEDOUT, all, len,
				     "%s ran past %d s and was stopped; its last lines:\n", what, PIP_QUERY_TIMEOUT_S);
		else if (!e.code)
			err_set_tail(&e, ERRCODE_PIP_FAILED, -EIO, all, len, "%s failed (exit %d); its last lines:\n",
				     what, xr.exit_code);
		if (e.code == ERRCODE_PYTHON_NOT_FOUND)
			tool_fail(res, &e);
		else
			pip_fail_output(res, &e, all, len);
		free(all);
		exec_result_finish(&xr);
		return NULL;
	}
	free(all);
	if (exit_code)
		*exit_code = xr.exit_code;
	struct buf b;
	buf_init(&b, SIZE_MAX);
	capture_render(&xr.out, &b);
	(void)buf_append(&b, "", 1);
	exec_result_finish(&xr);
	return buf_steal(&b, NULL);
}

static int pip_list(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct session *s;
	struct pip_argv a;

	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	pa_pip(&a, "list");
	pa_add(&a, "--format=json");
	pa_add(&a, "--disable-pip-version-check");
	char *out = pip_query(ctx, s, a.v, "pip list", res, NULL);
	if (out) {
		json_error_t jerr;
		json_t *list = json_loads(out, 0, &jerr);
		json_t *pkgs = json_array();
		size_t i;
		json_t *v;
		struct buf text;
		buf_init(&text, SIZE_MAX);
		json_array_foreach (list, i, v) {
			const char *name = json_string_value(json_object_get(v, "name"));
			const char *ver = json_string_value(json_object_get(v, "version"));
			if (!name || !ver)
				continue;
			json_array_append_new(pkgs, json_pack("{s:s, s:s}", "name", name, "version", ver));
			(void)buf_printf(&text, "%s %s\n", name, ver);
		}
		(void)buf_append(&text, "", 1);
		tool_text(res, "%zu packages in session %s:\n%s", json_array_size(pkgs), s->id, text.data);
		tool_structured(res, json_pack("{s:s, s:o}", "session_id", s->id, "packages", pkgs));
		buf_finish(&text);
		json_decref(list);
		free(out);
	}
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int pip_freeze(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct session *s;
	struct pip_argv a;

	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	pa_pip(&a, "freeze");
	pa_add(&a, "--disable-pip-version-check");
	char *out = pip_query(ctx, s, a.v, "pip freeze", res, NULL);
	if (out) {
		tool_text(res, "%s", out);
		tool_structured(res, json_pack("{s:s, s:o}", "session_id", s->id, "requirements",
					       json_string_lossy(out, strlen(out))));
		free(out);
	}
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int pip_uninstall(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct err e;
	struct session *s;
	struct pip_argv a;
	size_t i;
	json_t *v;

	err_clear(&e);
	json_t *pkgs = packages_arg(args, "packages", &e);
	if (!pkgs)
		return tool_fail(res, &e);
	json_array_foreach (pkgs, i, v)
		if (!json_is_string(v) || argcheck_dist_name(json_string_value(v), &e) < 0)
			return tool_fail(res, &e);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	pa_pip(&a, "uninstall");
	pa_add(&a, "--yes");
	pa_add(&a, "--disable-pip-version-check");
	pa_add(&a, "--");
	json_array_foreach (pkgs, i, v)
		pa_add(&a, json_string_value(v));
	char *out = pip_query(ctx, s, a.v, "pip uninstall", res, NULL);
	if (out) {
		json_array_foreach (pkgs, i, v)
			pip_forget_job(s, json_string_value(v));
		session_record(s, "pip_uninstall", json_pack("{s:O}", "packages", pkgs));
		tool_text(res, "%s", out[0] ? out : "nothing to uninstall\n");
		tool_structured(res, json_pack("{s:s, s:O, s:o}", "session_id", s->id, "packages", pkgs, "output",
					       json_string_lossy(out, strlen(out))));
		free(out);
	}
	session_put(ctx->svc->sessions, s);
	return 0;
}

/* The installed version of a distribution per `pip show`, or NULL (owned). */
static char *installed_version(struct tool_ctx *ctx, struct session *s, const char *name, struct tool_result *res,
			       bool *failed)
{
	struct pip_argv a;
	int code = 0;
	pa_pip(&a, "show");
	pa_add(&a, "--disable-pip-version-check");
	pa_add(&a, "--");
	pa_add(&a, name);
	char *out = pip_query(ctx, s, a.v, "pip show", res, &code);
	*failed = out == NULL;
	if (!out || code != 0) {
		free(out);
		return NULL;
	}
	char *ver = NULL;
	const char *p = strstr(out, "\nVersion: ");
	if (!p && strncmp(out, "Version: ", 9) == 0)
		p = out - 1;
	if (p) {
		p += 10;
		size_t n = strcspn(p, "\r\n");
		ver = xstrndup(p, n);
	}
	free(out);
	return ver;
}

/*
 * The distribution installed from a path or URL (as given to pip_install),
 * per the direct_url.json pip writes for such installs: its version (owned,
 * NULL when none is) and its name into name.  A path names no distribution
 * until something is built from it, so this asks what is installed instead of
 * guessing from the file or folder name.
 */
static char *installed_from(struct tool_ctx *ctx, struct session *s, const char *pkg, char *name, size_t namesz,
			    struct tool_result *res, bool *failed)
{
	/* relative paths resolve as pip resolved them: both run in the workspace */
	static const char script[] = "import json, os, sys\n"
				     "from importlib import metadata\n"
				     "from urllib.parse import unquote, urlsplit\n"
				     "a = sys.argv[1]\n"
				     "url = '://' in a\n"
				     "want = a if url else os.path.realpath(a)\n"
				     "for d in metadata.distributions():\n"
				     "    try:\n"
				     "        u = json.loads(d.read_text('direct_url.json') or '{}').get('url', '')\n"
				     "    except Exception:\n"
				     "        continue\n"
				     "    if not url:\n"
				     "        p = urlsplit(u)\n"
				     "        if p.scheme != 'file':\n"
				     "            continue\n"
				     "        u = os.path.realpath(unquote(p.path))\n"
				     "    if u == want:\n"
				     "        print(d.metadata['Name'])\n"
				     "        print(d.version)\n"
				     "        break\n";
	const char *argv[] = { "python3", "-c", script, pkg, NULL };
	char *out = pip_query(ctx, s, argv, "looking up what was installed from it", res, NULL);
	*failed = out == NULL;
	if (!out)
		return NULL;
	size_t n = strcspn(out, "\n");
	char *ver = NULL;
	if (n > 0 && out[n] == '\n' && out[n + 1]) {
		snprintf(name, namesz, "%.*s", (int)n, out);
		ver = xstrndup(out + n + 1, strcspn(out + n + 1, "\r\n"));
	}
	free(out);
	return ver;
}

static int pip_status(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *pkg = json_string_value(json_object_get(args, "package"));
	struct err e;
	struct session *s;
	enum argcheck_req kind;

	err_clear(&e);
	if (argcheck_requirement(pkg, &kind, &e) < 0)
		return tool_fail(res, &e);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;

	const char *state = NULL;
	char *version = NULL, *log = NULL;
	char name[256] = "";
	const char *dir = session_pip_job_dir(s, pkg);
	bool job_failed = false, failed = false;
	if (dir && *dir) {
		/* the job's exit status, if it ended, then the tail of its log; a dir gone (a new container) is no job */
		const char *argv[] = {
			"sh",
			"-c",
			"test -d \"$1\" || { echo gone; exit 0; }; cat \"$1/rc\" 2>/dev/null || echo running; "
			"tail -c 3000 \"$1/log\" 2>/dev/null; exit 0",
			"sandbox-mcp-pip",
			dir,
			NULL
		};
		char *out = pip_query(ctx, s, argv, "reading the background install's log", res, NULL);
		if (!out) {
			session_put(ctx->svc->sessions, s);
			return 0;
		}
		if (strncmp(out, "running\n", 8) == 0) {
			state = "installing";
		} else if (strncmp(out, "0\n", 2) != 0 && strncmp(out, "gone\n", 5) != 0) {
			job_failed = true;
			const char *nl = strchr(out, '\n');
			log = xstrdup(nl ? nl + 1 : "");
		}
		free(out);
	}
	if (!state) {
		/*
		 * What is installed now wins over how a finished job ended: a later
		 * pip_install or pip_uninstall (or run_command) may have changed it.
		 */
		if (kind == ARGCHECK_REQ_NAME) {
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(pkg, "[<>=!~,"), pkg);
			version = installed_version(ctx, s, name, res, &failed);
			name[0] = '\0';
		} else {
			version = installed_from(ctx, s, pkg, name, sizeof(name), res, &failed);
		}
		if (failed) {
			free(log);
			session_put(ctx->svc->sessions, s);
			return 0;
		}
		state = version ? "installed" : job_failed ? "failed" : "not_installed";
	}
	json_t *st = json_pack("{s:s, s:s, s:s}", "session_id", s->id, "package", pkg, "state", state);
	if (name[0])
		json_object_set_new(st, "name", json_string(name));
	if (version)
		json_object_set_new(st, "version", json_string(version));
	if (log)
		json_object_set_new(st, "log_tail", json_string_lossy(log, strlen(log)));
	/* installed, but its last background install failed (an upgrade, say): say both */
	tool_text(res, "%s: %s%s%s%s%s%s%s", pkg, state, version ? " (" : "", name, name[0] && version ? " " : "",
		  version ? "version " : "", version ? version : "", version ? ")" : "");
	if (log)
		tool_text_bytes(res,
				version ? "Its last background install failed; the end of pip's log:\n"
					: "The end of pip's log:\n",
				log, strlen(log));
	tool_structured(res, st);
	free(version);
	free(log);
	session_put(ctx->svc->sessions, s);
	return 0;
}

#define PACKAGES_ARG(what)                                                                                     \
	"\"packages\":{\"type\":\"array\",\"maxItems\":50,\"items\":{\"type\":\"string\",\"maxLength\":1024}," \
	"\"description\":\"" what " (at most 50 items, each at most 1024 characters)\"}"

const struct tool_entry tool_pip_install_entry = {
	.name = "pip_install",
	.title = "Install Python packages",
	.description = "Install Python packages into the session's environment with pip (as the sandbox user). "
		       "Sessions have no network by default: then install from files in the sandbox (a wheel, sdist "
		       "or project folder path, or names with find_links naming a folder of wheels); installs that "
		       "need an index fail at once with network_disabled. background: true returns at once; follow "
		       "it with pip_status.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"packages\"],\"properties\":{" PACKAGES_ARG(
		"Requirements (\\\"pandas\\\", \\\"numpy>=1.24,<2\\\") or paths in the sandbox to wheels, sdists or "
		"project folders; one per item, no options") ","
							     "\"background\":{\"type\":\"boolean\",\"description\":\"Return at once; pip_status tells when it is done\"},"
							     "\"index_url\":{\"type\":\"string\",\"maxLength\":1024,\"description\":\"Package index URL (needs network; at most 1024 characters)\"},"
							     "\"find_links\":{\"type\":\"string\",\"maxLength\":1024,\"description\":\"A folder in the sandbox (or URL) "
							     "of wheels/sdists to install from (at most 1024 characters)\"},"
							     "\"upgrade\":{\"type\":\"boolean\",\"description\":\"Upgrade packages already installed\"}," TOOL_SESSION_ARG
							     "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"state\":{\"type\":\"string\"},\"log\":{\"type\":\"string\"},"
			 "\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
			 "\"installed\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
			 "\"output\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_PIP,
	.read_only = false,
	.destructive = false,
	.idempotent = true,
	.open_world = true,
	.per_session = true,
	.handler = pip_install,
	.instructions = "pip_install installs Python packages into the session (offline by default: from wheels, "
			"sdists or folders in the sandbox); background: true plus pip_status for long installs.",
};

const struct tool_entry tool_pip_uninstall_entry = {
	.name = "pip_uninstall",
	.title = "Uninstall Python packages",
	.description = "Uninstall Python packages (by name) from the session's environment.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"packages\"],\"properties\":{" PACKAGES_ARG(
			"Package names") "," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},\"output\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_PIP,
	.read_only = false,
	.destructive = true,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = pip_uninstall,
};

const struct tool_entry tool_pip_list_entry = {
	.name = "pip_list",
	.title = "List Python packages",
	.description = "The Python packages the session's environment can import, with versions (the venv's own "
		       "and the image's).",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"packages\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
			 "\"name\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"}}}}}}",
	.group = TOOL_GROUP_PIP,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = pip_list,
};

const struct tool_entry tool_pip_freeze_entry = {
	.name = "pip_freeze",
	.title = "Freeze Python packages",
	.description = "The session's installed packages as requirements text (pip freeze), pinned.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"requirements\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_PIP,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = pip_freeze,
};

const struct tool_entry tool_pip_status_entry = {
	.name = "pip_status",
	.title = "Package install status",
	.description = "Whether a package is installing (a background pip_install still running), installed (with "
		       "its version), failed (its background install failed; with the end of pip's log) or "
		       "not_installed. Give the package as given to pip_install (a path or URL too) or its name; what "
		       "is installed now wins over an earlier background install's result.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"package\"],\"properties\":{"
		"\"package\":{\"type\":\"string\",\"maxLength\":1024,\"description\":\"The package as given to "
		"pip_install, or a package name (at most 1024 characters)\"}," TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"package\":{\"type\":\"string\"},\"state\":{\"type\":\"string\",\"enum\":[\"installing\","
			 "\"installed\",\"failed\",\"not_installed\"]},\"version\":{\"type\":\"string\"},"
			 "\"name\":{\"type\":\"string\"},\"log_tail\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_PIP,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = pip_status,
};
