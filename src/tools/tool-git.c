/*
 * tool-git.c - git_clone, git_status, git_diff, git_commit, git_push.
 *
 * git runs as the session's user from an argv, never a shell string: URLs,
 * refs and paths are checked by argcheck (no value that git could read as an
 * option), passed after `--` where git takes one, and every call carries
 * `-c protocol.ext.allow=never -c protocol.fd.allow=never` so no transport
 * can run a command.  GIT_TERMINAL_PROMPT=0: a credential prompt fails
 * instead of hanging the call.
 *
 * A git that ran and failed is git_failed (invalid_argument means argcheck
 * refused a value before anything ran, or a folder is no repository); its
 * message keeps git's last lines and the longer end follows as a text block.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/pathsafe.h"
#include "base/util.h"
#include "tools/argcheck.h"
#include "tools/files.h"
#include "tools/tools.h"

#define GIT_TIMEOUT_S 600
#define GIT_ARGV_MAX 32
#define GIT_DEFAULT_NAME "sandbox-mcp"
#define GIT_DEFAULT_EMAIL "sandbox@localhost"
#define GIT_MESSAGE_MAX (64 * 1024)
#define GIT_OUTPUT_TAIL 3000

static const char *const git_env[] = { "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=true", "LC_ALL=C", NULL };

struct git_argv {
	const char *v[GIT_ARGV_MAX];
	int n;
};

static void ga_add(struct git_argv *a, const char *s)
{
	if (a->n < GIT_ARGV_MAX - 1)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* git with the safety options, in dir (NULL: the process's working directory). */
static void ga_git(struct git_argv *a, const char *dir)
{
	a->n = 0;
	ga_add(a, "git");
	ga_add(a, "-c");
	ga_add(a, "protocol.ext.allow=never");
	ga_add(a, "-c");
	ga_add(a, "protocol.fd.allow=never");
	ga_add(a, "-c");
	ga_add(a, "core.quotePath=false");
	if (dir) {
		ga_add(a, "-C");
		ga_add(a, dir);
	}
}

/* The path argument resolved (default: the workspace); -EINVAL with e. */
static int git_dir(const struct config *cfg, json_t *args, const char *key, char *out, size_t outsz, struct err *e)
{
	const char *p = json_string_value(json_object_get(args, key));
	if (p && argcheck_path(p, key, e) < 0)
		return -EINVAL;
	return files_resolve(cfg, p ? p : ".", true, out, outsz, e);
}

/*
 * Runs a, and turns the ways git can fail to be run into e: no git in the
 * image, a session gone, a timeout.  0 with *xr (release it) when git ran,
 * whatever its exit.
 */
static int git_run(struct tool_ctx *ctx, struct session *s, const struct git_argv *a, struct exec_result *xr,
		   char **out, size_t *len, struct err *e)
{
	int r = tool_exec(ctx, s, a->v, git_env, NULL, GIT_TIMEOUT_S * 1000, xr, e);
	*out = NULL;
	if (r < 0)
		return r;
	*out = tool_exec_output(xr, len);
	if (xr->exit_code == 127 || xr->exit_code == 126)
		return err_set(e, ERRCODE_GIT_NOT_FOUND, -ENOENT,
			       "image %s has no git: use the default image (session_create without image), or an image "
			       "with git installed",
			       s->image);
	if (xr->timed_out)
		return err_set(e, ERRCODE_TIMEOUT, -ETIMEDOUT, "git ran past %d s and was stopped", GIT_TIMEOUT_S);
	return 0;
}

static bool says_not_a_repository(const char *out)
{
	/* "fatal: not a git repository" from most commands, "warning: Not a git repository" from diff */
	return out && (strstr(out, "not a git repository") || strstr(out, "Not a git repository"));
}

static int git_not_repository(const char *dir, struct err *e)
{
	return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
		       "%s is not a git repository: git_clone one, or run `git init` there with run_command", dir);
}

/* A failed git's exit as e: a folder that is no repository gets its own advice. */
static int git_failed(const char *what, const char *dir, int code, const char *out, size_t len, struct err *e)
{
	if (says_not_a_repository(out))
		return git_not_repository(dir, e);
	return err_set_tail(e, ERRCODE_GIT_FAILED, -EIO, out, out ? len : 0,
			    "git %s failed (exit %d); its last lines:\n", what, code);
}

/*
 * Fails res with e; when git ran and failed, adds the end of its output as
 * its own block (and as structuredContent.error.output): e's message only
 * holds the last lines.
 */
static int git_fail_output(struct tool_result *res, const struct err *e, const char *out, size_t len)
{
	tool_fail(res, e);
	if (!out || len == 0 || (e->code != ERRCODE_GIT_FAILED && e->code != ERRCODE_TIMEOUT))
		return 0;
	size_t skip = len > GIT_OUTPUT_TAIL ? len - GIT_OUTPUT_TAIL : 0;
	tool_text_bytes(res, "git's output (last part):\n", out + skip, len - skip);
	json_t *err = json_object_get(res->structured, "error");
	if (err)
		json_object_set_new(err, "output", json_string_lossy(out + skip, len - skip));
	return 0;
}

/*
 * Runs a in s and insists on exit 0: 0 with *xr (finish it) and *out (free
 * it); otherwise res holds the failure, s is put back, and -1.  A folder
 * that is no repository is told apart by asking git, since not every
 * command says so: `git diff --cached` outside one only complains about
 * --cached.
 */
static int git_ok(struct tool_ctx *ctx, struct session *s, const struct git_argv *a, const char *what, const char *dir,
		  struct exec_result *xr, char **out, size_t *len, struct tool_result *res)
{
	struct err e;
	err_clear(&e);
	int r = git_run(ctx, s, a, xr, out, len, &e);
	if (r == 0 && xr->exit_code != 0) {
		r = git_failed(what, dir, xr->exit_code, *out, *len, &e);
		if (e.code == ERRCODE_GIT_FAILED) {
			struct git_argv probe;
			struct exec_result pxr;
			struct err pe;
			char *pout;
			size_t plen;
			ga_git(&probe, dir);
			ga_add(&probe, "rev-parse");
			ga_add(&probe, "--git-dir");
			if (git_run(ctx, s, &probe, &pxr, &pout, &plen, &pe) == 0 && pxr.exit_code != 0 &&
			    says_not_a_repository(pout))
				git_not_repository(dir, &e);
			free(pout);
			exec_result_finish(&pxr);
		}
	}
	if (r == 0)
		return 0;
	git_fail_output(res, &e, *out, *out ? *len : 0);
	free(*out);
	*out = NULL;
	exec_result_finish(xr);
	session_put(ctx->svc->sessions, s);
	return -1;
}

/* The commit HEAD names in dir (into out), or "" when there is none. */
static void git_head(struct tool_ctx *ctx, struct session *s, const char *dir, char *out, size_t outsz)
{
	struct git_argv a;
	struct exec_result xr;
	struct err e;
	char *text;
	size_t len;

	out[0] = '\0';
	ga_git(&a, dir);
	ga_add(&a, "rev-parse");
	ga_add(&a, "--verify");
	ga_add(&a, "--quiet");
	ga_add(&a, "HEAD");
	if (git_run(ctx, s, &a, &xr, &text, &len, &e) == 0 && xr.exit_code == 0)
		snprintf(out, outsz, "%.*s", (int)strspn(text, "0123456789abcdef"), text);
	free(text);
	exec_result_finish(&xr);
}

/* The repository folder ("path") and the session of a git tool; -1 (the error in res) when either fails. */
static int git_open(struct tool_ctx *ctx, json_t *args, char *dir, size_t dirsz, struct session **s,
		    struct tool_result *res)
{
	struct err e;

	err_clear(&e);
	if (git_dir(ctx->svc->cfg, args, "path", dir, dirsz, &e) < 0) {
		tool_fail(res, &e);
		return -1;
	}
	return tool_session(ctx, args, s, res);
}

static int git_clone(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const struct config *cfg = ctx->svc->cfg;
	const char *url = json_string_value(json_object_get(args, "repo_url"));
	const char *branch = json_string_value(json_object_get(args, "branch"));
	json_t *jdepth = json_object_get(args, "depth");
	char dest[PATHSAFE_MAX + 1], depth[24];
	struct err e;
	struct session *s;

	err_clear(&e);
	if (argcheck_git_url(url, &e) < 0 || (branch && argcheck_git_ref(branch, "branch", &e) < 0))
		return tool_fail(res, &e);
	if (json_object_get(args, "path")) {
		if (git_dir(cfg, args, "path", dest, sizeof(dest), &e) < 0)
			return tool_fail(res, &e);
	} else {
		/* like git: the last component of the URL, without .git */
		const char *end = url + strlen(url);
		while (end > url && end[-1] == '/')
			end--;
		const char *b = end;
		while (b > url && b[-1] != '/' && b[-1] != ':')
			b--;
		size_t n = (size_t)(end - b);
		if (n > 4 && strncmp(end - 4, ".git", 4) == 0)
			n -= 4;
		char name[256];
		snprintf(name, sizeof(name), "%.*s", (int)n, b);
		if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0 ||
		    files_resolve(cfg, name, false, dest, sizeof(dest), &e) < 0) {
			err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				"cannot name a folder after repo_url '%.80s': pass path", url);
			return tool_fail(res, &e);
		}
	}
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;

	struct git_argv a;
	ga_git(&a, NULL);
	ga_add(&a, "clone");
	ga_add(&a, "--progress");
	if (branch) {
		ga_add(&a, "--branch");
		ga_add(&a, branch);
	}
	if (jdepth) {
		snprintf(depth, sizeof(depth), "--depth=%lld", (long long)json_integer_value(jdepth));
		ga_add(&a, depth);
	}
	ga_add(&a, "--");
	ga_add(&a, url);
	ga_add(&a, dest);

	struct exec_result xr;
	char *out;
	size_t len;
	int r = git_run(ctx, s, &a, &xr, &out, &len, &e);
	if (r == 0 && xr.exit_code != 0) {
		/* the source being no repository is in git's own words; dest is not the folder to git init */
		r = err_set_tail(&e, ERRCODE_GIT_FAILED, -EIO, out, out ? len : 0,
				 "git clone failed (exit %d); its last lines:\n", xr.exit_code);
		if (strcmp(s->network, "none") == 0 && !s->egress && out &&
		    (strstr(out, "Could not resolve host") || strstr(out, "unable to access")))
			r = err_set_tail(&e, ERRCODE_GIT_FAILED, -EIO, out, len,
					 "git clone failed: this session has no network (session_create {\"egress\": "
					 "{\"presets\": [\"github\"]}} for one that can reach GitHub); git's last lines:\n");
	}
	exec_result_finish(&xr);
	if (r < 0) {
		git_fail_output(res, &e, out, out ? len : 0);
		free(out);
		session_put(ctx->svc->sessions, s);
		return 0;
	}
	char head[64];
	git_head(ctx, s, dest, head, sizeof(head));
	session_record(s, "git_clone",
		       json_pack("{s:s, s:s, s:s, s:s?}", "url", url, "commit", head, "path", dest, "branch", branch));
	tool_text(res, "Cloned %s into %s at %s.", url, dest, head[0] ? head : "(an empty repository)");
	tool_structured(res, json_pack("{s:s, s:s, s:s}", "session_id", s->id, "path", dest, "commit", head));
	free(out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

/*
 * The "## " line of `git status --porcelain --branch`, after the "## ":
 * "<branch>[...<upstream>][ [ahead N][, behind M]]", "No commits yet on
 * <branch>..." or "HEAD (no branch)" (detached: branch "").  A branch name
 * may hold dots ("release-1.2") but never "..." or a space, so it ends at
 * the first of those.
 */
static void parse_branch_line(const char *p, char *branch, size_t bsz, long *ahead, long *behind)
{
	static const char no_commits[] = "No commits yet on ";
	branch[0] = '\0';
	if (strncmp(p, "HEAD (no branch)", 16) == 0)
		return;
	if (strncmp(p, no_commits, sizeof(no_commits) - 1) == 0)
		p += sizeof(no_commits) - 1;
	size_t n = strcspn(p, " ");
	const char *dots = strstr(p, "...");
	if (dots && (size_t)(dots - p) < n)
		n = (size_t)(dots - p);
	snprintf(branch, bsz, "%.*s", (int)n, p);
	/* the counts are in the bracket after the names, which hold no spaces */
	const char *br = strstr(p + n, " [");
	if (!br)
		return;
	const char *q;
	if ((q = strstr(br, "ahead ")))
		*ahead = strtol(q + 6, NULL, 10);
	if ((q = strstr(br, "behind ")))
		*behind = strtol(q + 7, NULL, 10);
}

static int git_status(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	char dir[PATHSAFE_MAX + 1];
	struct session *s;

	if (git_open(ctx, args, dir, sizeof(dir), &s, res) < 0)
		return 0;
	struct git_argv a;
	ga_git(&a, dir);
	ga_add(&a, "status");
	ga_add(&a, "--porcelain=v1");
	ga_add(&a, "--branch");
	ga_add(&a, "-z");
	ga_add(&a, "--untracked-files=all");
	struct exec_result xr;
	char *out;
	size_t len;
	if (git_ok(ctx, s, &a, "status", dir, &xr, &out, &len, res) < 0)
		return 0;
	struct buf raw;
	buf_init(&raw, SIZE_MAX);
	capture_render(&xr.out, &raw);
	exec_result_finish(&xr);

	/* "## branch...upstream [ahead 1, behind 2]" NUL, then "XY path" NUL (renames: NUL and the old path) */
	json_t *entries = json_array();
	char branch[256] = "";
	long ahead = 0, behind = 0;
	struct buf text;
	buf_init(&text, SIZE_MAX);
	for (size_t i = 0; i < raw.len;) {
		const char *rec = raw.data + i;
		size_t n = strnlen(rec, raw.len - i);
		i += n + 1;
		if (n >= 3 && strncmp(rec, "## ", 3) == 0) {
			parse_branch_line(rec + 3, branch, sizeof(branch), &ahead, &behind);
			continue;
		}
		if (n < 4)
			continue;
		char st[3] = { rec[0], rec[1], 0 };
		json_t *entry = json_pack("{s:s, s:o}", "status", st, "path", json_string_lossy(rec + 3, n - 3));
		(void)buf_printf(&text, "%s %.*s\n", st, (int)(n - 3), rec + 3);
		if ((rec[0] == 'R' || rec[0] == 'C') && i < raw.len) {
			size_t k = strnlen(raw.data + i, raw.len - i);
			json_object_set_new(entry, "from", json_string_lossy(raw.data + i, k));
			i += k + 1;
		}
		json_array_append_new(entries, entry);
	}
	(void)buf_append(&text, "", 1);
	bool clean = json_array_size(entries) == 0;
	tool_text(res, "%s on branch %s%s%s", dir, branch[0] ? branch : "(detached)",
		  clean ? ": clean, nothing to commit" : ":\n", clean ? "" : text.data);
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:i, s:i, s:b, s:o}", "session_id", s->id, "path", dir,
				       "branch", branch, "ahead", (int)ahead, "behind", (int)behind, "clean", clean,
				       "entries", entries));
	buf_finish(&text);
	buf_finish(&raw);
	free(out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int git_diff(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	char dir[PATHSAFE_MAX + 1];
	struct session *s;

	if (git_open(ctx, args, dir, sizeof(dir), &s, res) < 0)
		return 0;
	struct git_argv a;
	ga_git(&a, dir);
	ga_add(&a, "diff");
	ga_add(&a, "--no-color");
	ga_add(&a, "--no-ext-diff");
	if (json_is_true(json_object_get(args, "staged")))
		ga_add(&a, "--cached");
	struct exec_result xr;
	char *out;
	size_t len;
	if (git_ok(ctx, s, &a, "diff", dir, &xr, &out, &len, res) < 0)
		return 0;
	struct buf diff;
	buf_init(&diff, SIZE_MAX);
	capture_render(&xr.out, &diff);
	(void)buf_append(&diff, "", 1);
	bool truncated = capture_truncated(&xr.out);
	exec_result_finish(&xr);
	if (diff.len <= 1)
		tool_text(res, "no %schanges in %s", json_is_true(json_object_get(args, "staged")) ? "staged " : "",
			  dir);
	else
		tool_text_bytes(res, truncated ? "diff (cut: the middle is elided):\n" : "", diff.data, diff.len - 1);
	tool_structured(res, json_pack("{s:s, s:s, s:o, s:b}", "session_id", s->id, "path", dir, "diff",
				       json_string_lossy(diff.data, diff.len - 1), "truncated", truncated));
	buf_finish(&diff);
	free(out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

/* "Name <email>" into its parts; false when it is not that shape. */
static bool parse_author(const char *s, char *name, size_t nsz, char *email, size_t esz)
{
	const char *lt = strchr(s, '<'), *gt = lt ? strchr(lt, '>') : NULL;
	if (!lt || !gt || gt[1] != '\0' || lt == s || s[0] == '-' || gt - lt < 2 || strchr(lt + 1, '<'))
		return false;
	size_t n = (size_t)(lt - s);
	while (n > 0 && s[n - 1] == ' ')
		n--;
	if (n == 0 || n >= nsz || (size_t)(gt - lt - 1) >= esz)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20)
			return false;
	snprintf(name, nsz, "%.*s", (int)n, s);
	snprintf(email, esz, "%.*s", (int)(gt - lt - 1), lt + 1);
	return true;
}

static int git_commit(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *message = json_string_value(json_object_get(args, "message"));
	const char *author = json_string_value(json_object_get(args, "author"));
	char dir[PATHSAFE_MAX + 1], name[256] = GIT_DEFAULT_NAME, email[256] = GIT_DEFAULT_EMAIL;
	char cname[300], cemail[300];
	struct err e;
	struct session *s;

	err_clear(&e);
	if (!message || !*message || strlen(message) > GIT_MESSAGE_MAX) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "message must be 1 to %d bytes", GIT_MESSAGE_MAX);
		return tool_fail(res, &e);
	}
	if (author && !parse_author(author, name, sizeof(name), email, sizeof(email))) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"author '%.80s' must look like \"Name <email@example.com>\"", author);
		return tool_fail(res, &e);
	}
	if (git_open(ctx, args, dir, sizeof(dir), &s, res) < 0)
		return 0;

	struct git_argv a;
	struct exec_result xr;
	char *out;
	size_t len;
	ga_git(&a, dir);
	ga_add(&a, "add");
	ga_add(&a, "--all");
	if (git_ok(ctx, s, &a, "add", dir, &xr, &out, &len, res) < 0)
		return 0;
	exec_result_finish(&xr);
	free(out);
	/* the identity given (or sandbox-mcp's) for author and committer, whatever the repository says */
	snprintf(cname, sizeof(cname), "user.name=%s", name);
	snprintf(cemail, sizeof(cemail), "user.email=%s", email);
	ga_git(&a, dir);
	ga_add(&a, "-c");
	ga_add(&a, cname);
	ga_add(&a, "-c");
	ga_add(&a, cemail);
	ga_add(&a, "commit");
	ga_add(&a, "--no-verify");
	ga_add(&a, "--message");
	ga_add(&a, message);
	int r = git_run(ctx, s, &a, &xr, &out, &len, &e);
	bool nothing = r == 0 && xr.exit_code == 1 && out &&
		       (strstr(out, "nothing to commit") || strstr(out, "nothing added to commit"));
	if (r == 0 && xr.exit_code != 0 && !nothing)
		r = git_failed("commit", dir, xr.exit_code, out, len, &e);
	exec_result_finish(&xr);
	if (r < 0) {
		git_fail_output(res, &e, out, out ? len : 0);
		free(out);
		session_put(ctx->svc->sessions, s);
		return 0;
	}
	char head[64];
	git_head(ctx, s, dir, head, sizeof(head));
	if (nothing)
		tool_text(res, "Nothing to commit in %s: the working tree is clean (HEAD %s).", dir,
			  head[0] ? head : "none");
	else
		tool_text(res, "Committed %s in %s as %s <%s>:\n%s", head, dir, name, email, out);
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:b, s:o}", "session_id", s->id, "path", dir, "commit", head,
				       "committed", !nothing, "output", json_string_lossy(out, len)));
	free(out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int git_push(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *remote = json_string_value(json_object_get(args, "remote"));
	const char *branch = json_string_value(json_object_get(args, "branch"));
	char dir[PATHSAFE_MAX + 1];
	struct err e;
	struct session *s;

	err_clear(&e);
	if (!remote)
		remote = "origin";
	if (argcheck_git_ref(remote, "remote", &e) < 0 || (branch && argcheck_git_ref(branch, "branch", &e) < 0))
		return tool_fail(res, &e);
	if (git_open(ctx, args, dir, sizeof(dir), &s, res) < 0)
		return 0;
	struct git_argv a;
	ga_git(&a, dir);
	ga_add(&a, "push");
	ga_add(&a, "--porcelain");
	ga_add(&a, "--");
	ga_add(&a, remote);
	ga_add(&a, branch ? branch : "HEAD");
	struct exec_result xr;
	char *out;
	size_t len;
	if (git_ok(ctx, s, &a, "push", dir, &xr, &out, &len, res) < 0)
		return 0;
	exec_result_finish(&xr);
	tool_text(res, "Pushed %s to %s:\n%s", branch ? branch : "the current branch", remote, out);
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:s, s:o}", "session_id", s->id, "path", dir, "remote", remote,
				       "branch", branch ? branch : "HEAD", "output", json_string_lossy(out, len)));
	free(out);
	session_put(ctx->svc->sessions, s);
	return 0;
}

#define GIT_PATH_ARG                                                                                             \
	"\"path\":{\"type\":\"string\",\"maxLength\":4096,\"description\":\"The repository folder (relative to " \
	"/workspace, or absolute; default /workspace; at most 4096 characters)\"}"

const struct tool_entry tool_git_clone_entry = {
	.name = "git_clone",
	.title = "Clone a git repository",
	.description = "Clone a git repository into the sandbox (default folder: /workspace/<name>). Sessions have no "
		       "network by default, so remote URLs need a session created with network; paths and file:// "
		       "URLs of repositories in the sandbox always work.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"repo_url\"],\"properties\":{"
		"\"repo_url\":{\"type\":\"string\",\"maxLength\":1024,\"description\":\"https://, ssh://, "
		"git@host:path, file:// or a path in the sandbox (at most 1024 characters)\"},"
		"\"branch\":{\"type\":\"string\",\"maxLength\":200,\"description\":\"Branch or tag to check out (at most 200 characters)\"},"
		"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000,\"description\":\"Shallow clone "
		"of this many commits (from 1 to 1000000)\"}," GIT_PATH_ARG "," TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"path\":{\"type\":\"string\"},\"commit\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_GIT,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = true,
	.per_session = true,
	.handler = git_clone,
	.instructions = "git_clone/git_status/git_diff/git_commit/git_push work on repositories in the sandbox.",
};

const struct tool_entry tool_git_status_entry = {
	.name = "git_status",
	.title = "git status",
	.description = "The branch, ahead/behind counts and changed, staged and untracked files of a repository in "
		       "the sandbox.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{" GIT_PATH_ARG
			"," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"branch\":{\"type\":\"string\"},\"ahead\":{\"type\":\"integer\"},"
		"\"behind\":{\"type\":\"integer\"},\"clean\":{\"type\":\"boolean\"},"
		"\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"status\":{\"type\":\"string\"},\"path\":{\"type\":\"string\"},\"from\":{\"type\":\"string\"}}}}}}",
	.group = TOOL_GROUP_GIT,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = git_status,
};

const struct tool_entry tool_git_diff_entry = {
	.name = "git_diff",
	.title = "git diff",
	.description = "The unstaged changes of a repository in the sandbox, or the staged ones with staged: true.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"staged\":{\"type\":\"boolean\",\"description\":\"Show what is staged for the next commit\"}," GIT_PATH_ARG
		"," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"diff\":{\"type\":\"string\"},\"truncated\":{\"type\":\"boolean\"}}}",
	.group = TOOL_GROUP_GIT,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = git_diff,
};

const struct tool_entry tool_git_commit_entry = {
	.name = "git_commit",
	.title = "git commit",
	.description = "Stage every change (git add --all) and commit it in a repository in the sandbox, as author "
		       "(\"Name <email>\", default sandbox-mcp <sandbox@localhost>). A clean tree is not an error.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"message\"],\"properties\":{"
		"\"message\":{\"type\":\"string\",\"maxLength\":65536,\"description\":\"The commit message (at most 65536 characters)\"},"
		"\"author\":{\"type\":\"string\",\"maxLength\":300,\"description\":\"Name <email> (at most 300 characters)\"}," GIT_PATH_ARG
		"," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"commit\":{\"type\":\"string\"},\"committed\":{\"type\":\"boolean\"},"
		"\"output\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_GIT,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = git_commit,
};

const struct tool_entry tool_git_push_entry = {
	.name = "git_push",
	.title = "git push",
	.description = "Push a branch (default: the current one) of a repository in the sandbox to a remote "
		       "(default origin). Remote URLs need a session with network; remotes in the sandbox always work.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"remote\":{\"type\":\"string\",\"maxLength\":200,\"description\":\"Remote name (default origin; at most 200 characters)\"},"
		"\"branch\":{\"type\":\"string\",\"maxLength\":200,\"description\":\"Branch (default: the current "
		"one; at most 200 characters)\"}," GIT_PATH_ARG "," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"path\":{\"type\":\"string\"},\"remote\":{\"type\":\"string\"},\"branch\":{\"type\":\"string\"},"
		"\"output\":{\"type\":\"string\"}}}",
	.group = TOOL_GROUP_GIT,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = true,
	.per_session = true,
	.handler = git_push,
};
