/*
 * argcheck.c - grammars for pip and git arguments (see argcheck.h).
 */
#include <errno.h>
#include <string.h>

#include "tools/argcheck.h"

#define ARGCHECK_MAX 1024

static bool alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool has_prefix(const char *s, const char *p)
{
	return strncmp(s, p, strlen(p)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Every byte printable ASCII or UTF-8, none of the bytes listed in bad. */
static bool clean(const char *s, const char *bad)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || strchr(bad, *p))
			return false;
	return true;
}

/* A PEP 508 name at s: letters/digits, with . _ - inside. Returns its length (0: none). */
static size_t dist_name(const char *s)
{
	size_t n = 0;
	if (!alnum(s[0]))
		return 0;
	while (alnum(s[n]) || s[n] == '.' || s[n] == '_' || s[n] == '-')
		n++;
	while (n > 0 && !alnum(s[n - 1]))
		n--;
	return n;
}

int argcheck_dist_name(const char *s, struct err *e)
{
	size_t n = s ? dist_name(s) : 0;
	if (n == 0 || s[n] != '\0' || n > 200)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "'%.80s' is not a package name (letters, digits, and . _ - inside, like \"requests\" or "
			       "\"typing_extensions\")",
			       s ? s : "");
	return 0;
}

/* name[extras](spec(,spec)*)? — spec is an operator and a version. */
static bool requirement(const char *s)
{
	size_t n = dist_name(s);
	if (n == 0)
		return false;
	s += n;
	if (*s == '[') {
		s++;
		for (;;) {
			size_t k = dist_name(s);
			if (k == 0)
				return false;
			s += k;
			if (*s == ']')
				break;
			if (*s++ != ',')
				return false;
		}
		s++;
	}
	if (*s == '\0')
		return true;
	for (;;) {
		static const char *const ops[] = { "===", "==", "!=", "<=", ">=", "~=", "<", ">" };
		size_t k = 0;
		for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]) && !k; i++)
			if (has_prefix(s, ops[i]))
				k = strlen(ops[i]);
		if (!k)
			return false;
		s += k;
		size_t v = 0;
		while (alnum(s[v]) || (s[v] && strchr("._*+!-", s[v])))
			v++;
		if (v == 0 || (s[v] != '\0' && s[v] != ',') || s[0] == '-')
			return false;
		s += v;
		if (*s == '\0')
			return true;
		s++;
	}
}

int argcheck_path(const char *s, const char *what, struct err *e)
{
	if (!s || !*s || s[0] == '-' || strlen(s) > ARGCHECK_MAX || !clean(s, "\"'`$;&|<>\\*?!(){}\n"))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "%s '%.80s' is not a usable path: no leading '-', no quotes, spaces are fine, no shell "
			       "characters ($ ` ; & | < > \\ * ? ! ( ) { })",
			       what, s ? s : "");
	return 0;
}

int argcheck_http_url(const char *s, const char *what, struct err *e)
{
	if (!s || !(has_prefix(s, "https://") || has_prefix(s, "http://")) || strlen(s) > ARGCHECK_MAX ||
	    !clean(s, " \"'`\\<>{}|^"))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "%s '%.80s' must be an http:// or https:// URL without spaces or quotes", what,
			       s ? s : "");
	return 0;
}

int argcheck_requirement(const char *s, enum argcheck_req *kind, struct err *e)
{
	if (!s || !*s || strlen(s) > ARGCHECK_MAX)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "an empty or over-long package");
	if (s[0] == '-')
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "package '%.80s' looks like a pip option: options are not accepted as packages (use "
			       "index_url, find_links and upgrade for those)",
			       s);
	if (has_prefix(s, "https://") || has_prefix(s, "http://")) {
		*kind = ARGCHECK_REQ_URL;
		return argcheck_http_url(s, "package", e);
	}
	if (strstr(s, "://") || strstr(s, " @ "))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "package '%.80s': only https:// and http:// URLs are accepted; give files in the sandbox as "
			       "paths",
			       s);
	/* as pip decides: a slash or an archive's name is a file, not a project name */
	bool pathlike = s[0] == '/' || s[0] == '.' || strchr(s, '/') || ends_with(s, ".whl") ||
			ends_with(s, ".tar.gz") || ends_with(s, ".zip") || ends_with(s, ".tar.bz2");
	if (pathlike && !strchr(s, ' ') && argcheck_path(s, "package", NULL) == 0) {
		*kind = ARGCHECK_REQ_PATH;
		return 0;
	}
	if (!pathlike && requirement(s)) {
		*kind = ARGCHECK_REQ_NAME;
		return 0;
	}
	return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
		       "package '%.80s' is not a requirement: use a name with optional [extras] and versions "
		       "(\"pandas\", \"numpy>=1.24,<2\", \"black[d]==24.1.0\"), a path in the sandbox to a wheel, sdist "
		       "or project folder (\"./dist/pkg-1.0-py3-none-any.whl\", \"/workspace/pkg\"), or an https URL; "
		       "one package per item, no spaces or shell characters",
		       s);
}

int argcheck_git_url(const char *s, struct err *e)
{
	if (!s || !*s || strlen(s) > ARGCHECK_MAX || !clean(s, " \"'`\\<>{}|^;&$") || s[0] == '-' || strstr(s, "::"))
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "repo_url '%.80s' is not accepted: use https://, http://, ssh://, git://, file:// or "
			       "user@host:path URLs or a path in the sandbox (no leading '-', no spaces, no "
			       "transport::address forms)",
			       s ? s : "");
	return 0;
}

int argcheck_git_ref(const char *s, const char *what, struct err *e)
{
	/* git reads "+main" as a refspec that forces the update: git_push would overwrite the remote's history */
	if (s && s[0] == '+')
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "%s '%.80s' starts with '+', which makes git force the update (overwriting history): give "
			       "the name without it; force pushes are not offered",
			       what, s);
	bool ok = s && *s && strlen(s) <= 200 && s[0] != '-' && s[0] != '/' && s[0] != '.' &&
		  clean(s, " ~^:?*[\\\"'`$;&|<>") && !strstr(s, "..") && !strstr(s, "@{") && !strstr(s, "//") &&
		  !ends_with(s, ".lock") && !ends_with(s, "/") && !ends_with(s, ".") && strcmp(s, "@") != 0;
	if (!ok)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "%s '%.80s' is not a valid name: letters, digits, and / . _ - inside (no leading '-', "
			       "'.' or '/', no '..', spaces or any of ~ ^ : ? * [ \\)",
			       what, s ? s : "");
	return 0;
}
