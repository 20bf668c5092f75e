/*
 * dockerfile.c - turning a session's pip freeze and workspace listing into
 * the Dockerfile session_export returns (see tool-export.c for the design).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/pathsafe.h"
#include "buildconf.h"
#include "sandbox/dockerfile.h"
#include "sandbox/image.h"

static void pip_line(struct buf *b, const char *flags, json_t *list, const char *each_prefix);
static void copy_word(struct buf *b, const char *s);

int dockerfile_freeze_parse(const char *p, size_t n, json_t **ret, struct err *err)
{
	json_t *lines = json_array();
	const char *end = p + n;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		bool plain = true;
		for (size_t i = 0; i < k; i++)
			plain = plain && (unsigned char)p[i] >= 0x20 && p[i] != 0x7f;
		/* a line with control bytes could not be written into the Dockerfile safely: left out */
		if (k && p[0] != '#' && plain) {
			if (json_array_size(lines) == DOCKERFILE_FREEZE_LINES_MAX) {
				json_decref(lines);
				return err_set(err, ERRCODE_TOO_LARGE, -E2BIG,
					       "pip freeze lists more than %d packages: too many to export",
					       DOCKERFILE_FREEZE_LINES_MAX);
			}
			json_array_append_new(lines, json_string_lossy(p, k));
		}
		p += k + 1;
	}
	*ret = lines;
	return 0;
}

/* A freeze line's distribution name, normalised (lowercase, runs of -_. as '-'), into out. */
void dockerfile_dist_name(const char *line, char *out, size_t outsz)
{
	size_t o = 0;
	bool sep = false;
	if (line[0] == '-' && line[1] == 'e') {
		/* "-e git+...#egg=name" or "-e /path": the name is not on the line */
		snprintf(out, outsz, "%s", line);
		return;
	}
	for (const char *p = line; *p && o + 2 < outsz; p++) {
		char ch = *p;
		if (ch == '=' || ch == ' ' || ch == '@' || ch == '<' || ch == '>' || ch == '!' || ch == '~' ||
		    ch == '[' || ch == ';')
			break;
		if (ch == '-' || ch == '_' || ch == '.') {
			sep = true;
			continue;
		}
		if (sep && o)
			out[o++] = '-';
		sep = false;
		out[o++] = (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
	}
	out[o] = '\0';
}

/* True when archive (a workspace path) is a wheel or sdist of name (normalised) at version. */
bool dockerfile_archive_matches(const char *archive, const char *name, const char *version)
{
	const char *base = strrchr(archive, '/');
	base = base ? base + 1 : archive;
	char stem[NAME_MAX + 1], norm[NAME_MAX + 1];
	size_t n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".whl") == 0) {
		/* name-version-...whl: the name never holds '-' in a wheel's file name */
		const char *d = strchr(base, '-');
		if (!d)
			return false;
		snprintf(stem, sizeof(stem), "%.*s", (int)(d - base), base);
		dockerfile_dist_name(stem, norm, sizeof(norm));
		const char *v = d + 1, *d2 = strchr(v, '-');
		return d2 && strcmp(norm, name) == 0 && strlen(version) == (size_t)(d2 - v) &&
		       strncmp(v, version, (size_t)(d2 - v)) == 0;
	}
	size_t ext = n > 7 && strcmp(base + n - 7, ".tar.gz") == 0 ? 7 : 4;
	snprintf(stem, sizeof(stem), "%.*s", (int)(n - ext), base);
	char *d = strrchr(stem, '-');
	if (!d)
		return false;
	*d = '\0';
	dockerfile_dist_name(stem, norm, sizeof(norm));
	return strcmp(norm, name) == 0 && strcmp(d + 1, version) == 0;
}

/* Appends s single-quoted for sh. */
void dockerfile_shell_quote(struct buf *b, const char *s)
{
	buf_append_str(b, "'");
	for (; *s; s++) {
		if (*s == '\'')
			buf_append_str(b, "'\\''");
		else
			buf_append(b, s, 1);
	}
	buf_append_str(b, "'");
}

void dockerfile_context_name(const char *path, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = snprintf(out, outsz, "files");
	for (const char *p = path; *p && o + 4 < outsz; p++) {
		/* COPY reads its source as a glob: '*', '?', '[' and '\\' cannot be escaped there, so none is left */
		if (strchr("%*?[\\", *p)) {
			out[o++] = '%';
			out[o++] = hex[(unsigned char)*p >> 4];
			out[o++] = hex[*p & 15];
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
}

/*
 * Appends s as one word of a JSON-form COPY: a JSON string of s with '\\',
 * '$' and both quotes backslashed, since the builder still runs each word
 * through its shell-like expansion, which would take '$x' as a variable and
 * drop quotes and backslashes. Bytes past 0x7f go as they are (UTF-8).
 */
static void copy_word(struct buf *b, const char *s)
{
	buf_append_str(b, "\"");
	for (; *s; s++) {
		if (strchr("\\$'\"", *s))
			buf_append_str(b, "\\\\"); /* the word's backslash, escaped for JSON */
		if (*s == '\\' || *s == '"')
			buf_append_str(b, "\\");
		buf_append(b, s, 1);
	}
	buf_append_str(b, "\"");
}

/* True for an absolute, normalised path free of control bytes (it goes into the context and the Dockerfile). */
bool dockerfile_path_normal(const char *path)
{
	char norm[PATHSAFE_MAX + 1];
	return path[0] == '/' && path_resolve("/", path, norm, sizeof(norm)) == 0 && strcmp(norm, path) == 0;
}

/* Decodes a file:// URL's path (percent escapes) into out. false when it is not a local absolute path. */
bool dockerfile_file_url_path(const char *url, char *out, size_t outsz)
{
	if (strncmp(url, "file://", 7) != 0)
		return false;
	const char *p = url + 7;
	if (strncmp(p, "localhost/", 10) == 0)
		p += 9;
	if (*p != '/')
		return false;
	size_t o = 0;
	for (; *p && o + 1 < outsz; p++) {
		unsigned v;
		if (*p == '%' && sscanf(p + 1, "%2x", &v) == 1 && v > 0) {
			out[o++] = (char)v;
			p += 2;
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return *p == '\0' && dockerfile_path_normal(out);
}

void dockerfile_pip_plan(const char *ws, json_t *mine, json_t *base, json_t *archives, struct dockerfile_pip *p)
{
	size_t i, j;
	json_t *v, *w;

	p->offline = json_array();
	p->find_links = json_array();
	p->local = json_array();
	p->editable = json_array();
	p->outside = json_array();
	p->online = json_array();
	p->removed = json_array();
	p->installed = json_array();
	json_array_foreach (mine, i, v) {
		const char *line = json_string_value(v);
		bool same = false;
		json_array_foreach (base, j, w)
			same = same || strcmp(json_string_value(w), line) == 0;
		if (same)
			continue;
		json_array_append(p->installed, v);
		char path[PATHSAFE_MAX + 1], name[256];
		const char *at = strstr(line, " @ ");
		const char *eq = strstr(line, "==");
		if (strncmp(line, "-e ", 3) == 0) {
			const char *target = line + 3;
			if (dockerfile_path_normal(target) && path_within(ws, target))
				json_array_append_new(p->editable, json_string(target));
			else if (dockerfile_file_url_path(target, path, sizeof(path)) && path_within(ws, path))
				json_array_append_new(p->editable, json_string(path));
			else
				json_array_append(p->online, v);
		} else if (at) {
			if (dockerfile_file_url_path(at + 3, path, sizeof(path))) {
				json_array_append_new(p->local, json_string(path));
				if (!path_within(ws, path))
					json_array_append_new(p->outside, json_string(path));
			} else {
				json_array_append(p->online, v);
			}
		} else if (eq) {
			dockerfile_dist_name(line, name, sizeof(name));
			const char *version = eq + 2;
			const char *found = NULL;
			json_array_foreach (archives, j, w) {
				if (dockerfile_archive_matches(json_string_value(w), name, version)) {
					found = json_string_value(w);
					break;
				}
			}
			if (!found) {
				json_array_append(p->online, v);
				continue;
			}
			json_array_append(p->offline, v);
			const char *slash = strrchr(found, '/');
			char dir[PATHSAFE_MAX + 1];
			snprintf(dir, sizeof(dir), "%s%s%.*s", ws, slash ? "/" : "", slash ? (int)(slash - found) : 0,
				 found);
			bool have = false;
			json_array_foreach (p->find_links, j, w)
				have = have || strcmp(json_string_value(w), dir) == 0;
			if (!have)
				json_array_append_new(p->find_links, json_string(dir));
		} else {
			json_array_append(p->online, v);
		}
	}
	json_array_foreach (base, i, v) {
		char bn[256], mn[256];
		bool kept = false;
		dockerfile_dist_name(json_string_value(v), bn, sizeof(bn));
		json_array_foreach (mine, j, w) {
			dockerfile_dist_name(json_string_value(w), mn, sizeof(mn));
			kept = kept || strcmp(bn, mn) == 0;
		}
		if (!kept && json_string_value(v)[0] != '-')
			json_array_append_new(p->removed, json_string(bn));
	}
}

void dockerfile_pip_finish(struct dockerfile_pip *p)
{
	json_decref(p->offline);
	json_decref(p->find_links);
	json_decref(p->local);
	json_decref(p->editable);
	json_decref(p->outside);
	json_decref(p->online);
	json_decref(p->removed);
	json_decref(p->installed);
}

/* Appends "RUN python3 -m pip install <flags> <each of list>" when list is not empty. */
static void pip_line(struct buf *b, const char *flags, json_t *list, const char *each_prefix)
{
	size_t i;
	json_t *v;
	if (json_array_size(list) == 0)
		return;
	buf_printf(b, "RUN python3 -m pip install %s", flags);
	json_array_foreach (list, i, v) {
		buf_printf(b, " %s", each_prefix);
		dockerfile_shell_quote(b, json_string_value(v));
	}
	buf_append_str(b, "\n");
}

/* The header comment and FROM: the base by tag when the tag still names it, else by id. */
static void write_from(const struct dockerfile_info *x, struct buf *b)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	buf_printf(b, "# Recreates sandbox-mcp session %s%s%s%s (exported %s by sandbox-mcp %s).\n", x->s->id,
		   x->s->name[0] ? " (\"" : "", x->s->name, x->s->name[0] ? "\")" : "", stamp, SANDBOX_VERSION);
	buf_printf(b, "# Build it offline, like the session ran: docker build --network none -t <name> .\n");
	buf_printf(b, "# Base image %s was %s when the session started", x->s->image, x->base_id);
	if (x->base_ref_id[0] && strcmp(x->base_ref_id, x->base_id) == 0) {
		buf_printf(b, ".\nFROM %s\n\n", x->s->image);
	} else {
		/* the tag is gone or names another image now: the exact base is its id (the container keeps it) */
		if (!x->base_ref_id[0])
			buf_printf(b, "; that tag is gone now, so this starts from its id");
		else
			buf_printf(b, "; the tag names %s now, so this starts from the id it had", x->base_ref_id);
		buf_printf(b, ".\nFROM %s\n\n", x->base_id);
	}
}

/* The provenance labels, all on one LABEL line, or none if one cannot be quoted. */
static void write_labels(const struct dockerfile_info *x, struct buf *b)
{
	if (json_object_size(x->labels)) {
		const char *k;
		json_t *lv;
		struct buf l;
		buf_init(&l, SIZE_MAX);
		json_object_foreach (x->labels, k, lv) {
			buf_append_str(&l, l.len ? " " : "");
			if (image_quote(k, &l) < 0 || buf_append_str(&l, "=") < 0 ||
			    image_quote(json_string_value(lv) ? json_string_value(lv) : "", &l) < 0) {
				/* a value no line can carry: the label is left out */
				buf_reset(&l);
				break;
			}
		}
		if (l.len)
			buf_printf(b,
				   "# Provenance, as session_commit and session_export label their images\nLABEL %s\n\n",
				   l.data);
		buf_finish(&l);
	}
}

/* The workspace, pip's local sources outside it, the user and the file modes. */
static void write_workspace(const struct dockerfile_info *x, struct buf *b)
{
	size_t i;
	json_t *v;

	buf_printf(b, "# The workspace (folders 0755, files 0644 in this context; other modes below)\n");
	buf_printf(b, "COPY --chown=%s workspace/ %s/\n", x->s->user, x->ws);
	json_array_foreach (x->pip->outside, i, v) {
		/* the JSON form, each path one word whatever its spaces, quotes, '$' or '\\' */
		const char *p = json_string_value(v);
		char src[DOCKERFILE_CONTEXT_NAME_MAX];
		dockerfile_context_name(p, src, sizeof(src));
		buf_printf(b,
			   "# a local package source outside the workspace, kept at its path for pip\nCOPY --chown=%s [",
			   x->s->user);
		copy_word(b, src);
		buf_append_str(b, ", ");
		copy_word(b, p);
		buf_append_str(b, "]\n");
	}
	buf_printf(b, "USER %s\n", x->s->user);
	size_t n = 0;
	json_array_foreach (x->modes, i, v) {
		const char *p = json_string_value(json_array_get(v, 0));
		bool plain = true;
		for (const char *q = p; *q; q++)
			plain = plain && (unsigned char)*q >= 0x20 && *q != 0x7f;
		if (!plain)
			continue; /* no Dockerfile line can name it: it keeps the context's mode */
		if (n % DOCKERFILE_CHMOD_PER_LINE == 0)
			buf_printf(b, "%sRUN cd %s", n ? "\n" : "", x->ws);
		/* "--": a name starting with '-' is a name, not an option */
		buf_printf(b, " && chmod %o -- ", (unsigned)json_integer_value(json_array_get(v, 1)));
		dockerfile_shell_quote(b, p);
		n++;
	}
	if (n)
		buf_append_str(b, "\n");
}

static void write_env(const struct dockerfile_info *x, struct buf *b)
{
	size_t i;
	json_t *v;

	if (json_array_size(x->env)) {
		buf_append_str(b, "\n# The session's environment\n");
		json_array_foreach (x->env, i, v) {
			const char *kv = json_string_value(v);
			const char *eq = strchr(kv, '=');
			if (!eq || eq == kv)
				continue;
			struct buf q;
			buf_init(&q, SIZE_MAX);
			if (image_quote(eq + 1, &q) == 0)
				buf_printf(b, "ENV %.*s=%s\n", (int)(eq - kv), kv, q.data);
			else
				buf_printf(b,
					   "# ENV %.*s is not set here: its value does not fit on a Dockerfile line\n",
					   (int)(eq - kv), kv);
			buf_finish(&q);
		}
	}
}

/* pip: what was installed beyond the base image, offline where it can be, and what was removed. */
static void write_pip(const struct dockerfile_info *x, struct buf *b)
{
	size_t i;
	json_t *v;

	struct dockerfile_pip *p = x->pip;
	if (json_array_size(p->installed) || json_array_size(p->removed)) {
		buf_printf(b, "\n# pip: what `pip freeze --all` shows beyond the base image's\n");
		json_array_foreach (p->installed, i, v)
			buf_printf(b, "#   %s\n", json_string_value(v));
		if (json_array_size(p->offline)) {
			struct buf flags;
			buf_init(&flags, SIZE_MAX);
			buf_append_str(&flags, "--no-deps --no-index");
			json_array_foreach (p->find_links, i, v) {
				buf_append_str(&flags, " --find-links ");
				dockerfile_shell_quote(&flags, json_string_value(v));
			}
			pip_line(b, flags.data, p->offline, "");
			buf_finish(&flags);
		}
		pip_line(b, "--no-deps --no-index --no-build-isolation", p->local, "");
		pip_line(b, "--no-deps --no-index --no-build-isolation", p->editable, "-e ");
		if (json_array_size(p->online)) {
			buf_append_str(b,
				       "# These came from an index or a URL: building them needs network access\n"
				       "# (docker build --network default), or put their wheels in the workspace.\n");
			pip_line(b, "--no-deps", p->online, "");
		}
		if (json_array_size(p->removed)) {
			buf_append_str(b, "RUN python3 -m pip uninstall -y");
			json_array_foreach (p->removed, i, v) {
				buf_append_str(b, " ");
				dockerfile_shell_quote(b, json_string_value(v));
			}
			buf_append_str(b, "\n");
		}
	}
}

/* git clones, as comments: their files came with the workspace. */
static void write_git(const struct dockerfile_info *x, struct buf *b)
{
	size_t i;
	json_t *v;

	bool git = false;
	json_array_foreach (x->history, i, v) {
		const char *kind = json_string_value(json_object_get(v, "kind"));
		if (!kind || strcmp(kind, "git_clone") != 0)
			continue;
		if (!git)
			buf_append_str(b, "\n# git clones (their files and .git are in the workspace copied above)\n");
		git = true;
		const char *url = json_string_value(json_object_get(v, "url"));
		const char *commit = json_string_value(json_object_get(v, "commit"));
		const char *path = json_string_value(json_object_get(v, "path"));
		if (url && !strchr(url, '\n') && (!path || !strchr(path, '\n')))
			buf_printf(b, "#   %s at %s into %s%s\n", url, commit ? commit : "?", path ? path : "?",
				   path && !path_within(x->ws, path) ? " (outside the workspace: not recreated)" : "");
	}
}

void dockerfile_write(const struct dockerfile_info *x, struct buf *b)
{
	write_from(x, b);
	write_labels(x, b);
	write_workspace(x, b);
	write_env(x, b);
	write_pip(x, b);
	write_git(x, b);
	buf_printf(b, "\nWORKDIR %s\n", x->workdir);
}

size_t dockerfile_split(const char *df, struct buf *build, json_t *runs)
{
	size_t steps = 0;
	for (const char *p = df; *p;) {
		const char *nl = strchr(p, '\n');
		size_t k = nl ? (size_t)(nl - p) : strlen(p);
		/* one instruction a line: dockerfile_write continues none */
		if (k && p[0] != '#')
			steps++;
		if (k > 4 && strncmp(p, "RUN ", 4) == 0) {
			json_array_append_new(runs,
					      json_pack("{s:I, s:s%}", "step", (json_int_t)steps, "cmd", p + 4, k - 4));
			buf_printf(build, "# step %zu, RUN, runs in a container with the session's hardening\n", steps);
		} else {
			buf_append(build, p, k);
			buf_append_str(build, "\n");
		}
		p += k + (nl ? 1 : 0);
	}
	return steps;
}
