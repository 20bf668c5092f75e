/*
 * imageref.c - docker's reference grammar (distribution/reference's
 * ParseNormalizedNamed) and glob patterns over normalised references.
 *
 * Grammar, as docker checks it:
 *   reference := name [ ":" tag ] [ "@" digest ]
 *   name      := [ domain "/" ] component ( "/" component )*
 *   domain    := host [ ":" port ]; host is dns labels or "[" ipv6 "]"
 *   component := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
 *   tag       := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
 *   digest    := ( "sha256:" 64 | "sha384:" 96 | "sha512:" 128 ) lowercase hex
 * The ':' that starts a tag is the last one after the last '/', so a
 * registry's port is never read as a tag.
 *
 * Patterns are matched with a two-row dynamic programme, so no pattern makes
 * matching slower than pattern length times reference length.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/imageref.h"

static bool lower_alnum(char c);
static bool component_ok(const char *p, size_t n);
static bool domain_ok(const char *p, size_t n);
static bool is_domain(const char *p, size_t n);
static bool glob_match(const char *pat, size_t pn, const char *s, size_t sn);
static bool pattern_match(const char *pat, size_t pn, const struct imageref *r);

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool alnum(char c)
{
	return lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static bool hexdigit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool component_ok(const char *p, size_t n)
{
	size_t i = 0;
	if (n == 0 || !lower_alnum(p[0]) || !lower_alnum(p[n - 1]))
		return false;
	while (i < n) {
		if (lower_alnum(p[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !lower_alnum(p[j]))
			j++;
		size_t k = j - i;
		bool ok = (k == 1 && (p[i] == '.' || p[i] == '_')) || (k == 2 && p[i] == '_' && p[i + 1] == '_');
		for (size_t m = i; !ok && m < j && p[m] == '-'; m++)
			ok = m + 1 == j;
		if (!ok)
			return false;
		i = j;
	}
	return true;
}

/* dns labels ([A-Za-z0-9], '-' inside) joined by '.', or [ipv6]; then an optional :port. */
static bool domain_ok(const char *p, size_t n)
{
	size_t i = 0;
	if (n > 0 && p[0] == '[') {
		for (i = 1; i < n && (hexdigit(p[i]) || (p[i] >= 'A' && p[i] <= 'F') || p[i] == ':'); i++)
			;
		if (i == 1 || i >= n || p[i] != ']')
			return false;
		i++;
	} else {
		size_t label = 0;
		for (; i < n && p[i] != ':'; i++) {
			if (p[i] == '.') {
				if (label == 0 || p[i - 1] == '-')
					return false;
				label = 0;
			} else if (alnum(p[i]) || (p[i] == '-' && label > 0)) {
				label++;
			} else {
				return false;
			}
		}
		if (label == 0 || p[i - 1] == '-')
			return false;
	}
	if (i == n)
		return true;
	if (p[i] != ':' || i + 1 == n)
		return false;
	for (i++; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return false;
	return true;
}

/* docker's rule for the first component: a registry when it has '.' or ':', is localhost, or is not lowercase. */
static bool is_domain(const char *p, size_t n)
{
	if (memchr(p, '.', n) || memchr(p, ':', n) || (n == 9 && memcmp(p, "localhost", 9) == 0))
		return true;
	for (size_t i = 0; i < n; i++)
		if (p[i] >= 'A' && p[i] <= 'Z')
			return true;
	return false;
}

bool imageref_tag_ok(const char *p, size_t n)
{
	if (n == 0 || n > IMAGEREF_TAG_MAX || p[0] == '.' || p[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!alnum(p[i]) && p[i] != '_' && p[i] != '.' && p[i] != '-')
			return false;
	return true;
}

static bool digest_ok(const char *p, size_t n)
{
	static const struct {
		const char *alg;
		size_t hex;
	} algs[] = { { "sha256:", 64 }, { "sha384:", 96 }, { "sha512:", 128 } };
	for (size_t a = 0; a < sizeof(algs) / sizeof(algs[0]); a++) {
		size_t k = strlen(algs[a].alg);
		if (n != k + algs[a].hex || memcmp(p, algs[a].alg, k) != 0)
			continue;
		for (size_t i = k; i < n; i++)
			if (!hexdigit(p[i]))
				return false;
		return true;
	}
	return false;
}

bool imageref_is_id(const char *s, size_t n)
{
	if (n == 71 && memcmp(s, "sha256:", 7) == 0) {
		s += 7;
		n -= 7;
	}
	if (n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!hexdigit(s[i]))
			return false;
	return true;
}

#define BAD(...) err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, __VA_ARGS__)

int imageref_parse(const char *s, size_t n, struct imageref *ret, struct err *err)
{
	struct imageref r;
	int shown = (int)(n > 120 ? 120 : n);

	if (n == 0)
		return BAD("the image reference is empty: name an image such as python:3.12");
	if (n > IMAGEREF_INPUT_MAX || memchr(s, '\0', n))
		return BAD("image reference '%.*s...' is longer than %d characters", shown, s, IMAGEREF_INPUT_MAX);
	if (imageref_is_id(s, n))
		return BAD("'%.*s' is an image id, not a reference: name the image by repository and tag", shown, s);
	memset(&r, 0, sizeof(r));
	const char *at = memchr(s, '@', n);
	size_t rest = at ? (size_t)(at - s) : n;
	if (at) {
		size_t dn = n - rest - 1;
		if (!digest_ok(at + 1, dn))
			return BAD("image reference '%.*s' has an invalid digest: use @sha256: and 64 lowercase hex digits",
				   shown, s);
		memcpy(r.digest, at + 1, dn);
	}
	size_t slash = rest;
	for (size_t i = rest; i > 0; i--)
		if (s[i - 1] == '/') {
			slash = i - 1;
			break;
		}
	size_t from = slash == rest ? 0 : slash + 1, name = rest;
	for (size_t i = from; i < rest; i++)
		if (s[i] == ':') {
			name = i;
			break;
		}
	if (name < rest) {
		if (!imageref_tag_ok(s + name + 1, rest - name - 1))
			return BAD("image reference '%.*s' has an invalid tag: 1-%d letters, digits, '_', '.' or '-', "
				   "not starting with '.' or '-'",
				   shown, s, IMAGEREF_TAG_MAX);
		memcpy(r.tag, s + name + 1, rest - name - 1);
	} else if (!at) {
		memcpy(r.tag, "latest", 7);
	}
	const char *first_slash = memchr(s, '/', name);
	size_t dlen = first_slash ? (size_t)(first_slash - s) : 0;
	const char *remainder = s;
	size_t rlen = name;
	if (first_slash && is_domain(s, dlen)) {
		if (!domain_ok(s, dlen))
			return BAD("image reference '%.*s' names an invalid registry '%.*s': use host[:port]", shown, s,
				   (int)(dlen > 100 ? 100 : dlen), s);
		bool legacy = dlen == 15 && memcmp(s, "index.docker.io", 15) == 0;
		snprintf(r.domain, sizeof(r.domain), "%.*s", legacy ? 9 : (int)dlen, legacy ? "docker.io" : s);
		remainder = first_slash + 1;
		rlen = name - dlen - 1;
	} else {
		memcpy(r.domain, IMAGEREF_DEFAULT_DOMAIN, sizeof(IMAGEREF_DEFAULT_DOMAIN));
	}
	bool library = strcmp(r.domain, IMAGEREF_DEFAULT_DOMAIN) == 0 && !memchr(remainder, '/', rlen);
	size_t total = strlen(r.domain) + 1 + (library ? 8 : 0) + rlen;
	if (total > IMAGEREF_NAME_MAX)
		return BAD("image reference '%.*s' is too long: registry and repository at most %d characters", shown,
			   s, IMAGEREF_NAME_MAX);
	for (size_t i = 0; i < rlen; i++)
		if (remainder[i] >= 'A' && remainder[i] <= 'Z')
			return BAD("image reference '%.*s' is invalid: the repository name must be lowercase", shown,
				   s);
	for (size_t i = 0, k; i <= rlen; i = k + 1) {
		const char *sl = memchr(remainder + i, '/', rlen - i);
		k = sl ? (size_t)(sl - remainder) : rlen;
		if (!component_ok(remainder + i, k - i))
			return BAD("image reference '%.*s' is invalid: repository components are lowercase letters and "
				   "digits with '.', '_' or '-' between them, separated by '/' (e.g. python:3.12, "
				   "registry.example.com:5000/team/app:1)",
				   shown, s);
	}
	snprintf(r.path, sizeof(r.path), "%s%.*s", library ? "library/" : "", (int)rlen, remainder);
	*ret = r;
	return 0;
}

void imageref_format(const struct imageref *r, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/%s%s%s%s%s", r->domain, r->path, r->tag[0] ? ":" : "", r->tag, r->digest[0] ? "@" : "",
		 r->digest);
}

bool imageref_split_repo(const char *repo, char *host, size_t hostsz, char *path, size_t pathsz)
{
	const char *slash = strchr(repo, '/');
	size_t dn = slash ? (size_t)(slash - repo) : 0;
	bool is_host = slash && is_domain(repo, dn);
	size_t i;

	if (is_host && dn < hostsz) {
		/* a host name is case-insensitive: Docker.io is docker.io to whoever pulls */
		for (i = 0; i < dn; i++)
			host[i] = repo[i] >= 'A' && repo[i] <= 'Z' ? (char)(repo[i] - 'A' + 'a') : repo[i];
		host[dn] = '\0';
		if (strcmp(host, "index.docker.io") == 0)
			snprintf(host, hostsz, "docker.io");
	} else if (is_host || snprintf(host, hostsz, "docker.io") >= (int)hostsz) {
		return false;
	}
	const char *rest = is_host ? slash + 1 : repo;
	bool library = strcmp(host, "docker.io") == 0 && !strchr(rest, '/');
	int n = snprintf(path, pathsz, "%s%s", library ? "library/" : "", rest);
	return n >= 0 && (size_t)n < pathsz;
}

bool imageref_official(const struct imageref *r)
{
	return strcmp(r->domain, IMAGEREF_DEFAULT_DOMAIN) == 0 && strncmp(r->path, "library/", 8) == 0 &&
	       !strchr(r->path + 8, '/');
}

/*
 * Whole-string glob: '*' any run without '/', '**' any run, '?' one
 * character but '/'. row[j]: the pattern so far matches s[0..j).
 */
static bool glob_match(const char *pat, size_t pn, const char *s, size_t sn)
{
	bool a[IMAGEREF_FORMAT_MAX + 1], b[IMAGEREF_FORMAT_MAX + 1];
	bool *row = a, *next = b;

	if (sn > IMAGEREF_FORMAT_MAX)
		return false;
	memset(a, 0, sizeof(a));
	row[0] = true;
	for (size_t i = 0; i < pn; i++) {
		bool star = pat[i] == '*', any = star && i + 1 < pn && pat[i + 1] == '*';
		if (any)
			i++;
		for (size_t j = 0; j <= sn; j++) {
			if (star)
				next[j] = row[j] || (j > 0 && next[j - 1] && (any || s[j - 1] != '/'));
			else
				next[j] = j > 0 && row[j - 1] && (pat[i] == '?' ? s[j - 1] != '/' : s[j - 1] == pat[i]);
		}
		bool *t = row;
		row = next;
		next = t;
	}
	return row[sn];
}

/* The match key of r: domain (lowercase) / path, with the tag and digest when with_tag. */
static size_t match_key(const struct imageref *r, bool with_tag, char *out, size_t outsz)
{
	char domain[IMAGEREF_NAME_MAX + 1];
	size_t i = 0;
	for (; r->domain[i]; i++)
		domain[i] = (char)(r->domain[i] >= 'A' && r->domain[i] <= 'Z' ? r->domain[i] - 'A' + 'a'
									      : r->domain[i]);
	domain[i] = '\0';
	int k = snprintf(out, outsz, "%s/%s", domain, r->path);
	if (with_tag)
		k = snprintf(out, outsz, "%s/%s%s%s%s%s", domain, r->path, r->tag[0] ? ":" : "", r->tag,
			     r->digest[0] ? "@" : "", r->digest);
	return k < 0 ? 0 : (size_t)k < outsz ? (size_t)k : outsz - 1;
}

/* One pattern, normalised the way imageref_parse normalises a reference, against r. */
static bool pattern_match(const char *pat, size_t pn, const struct imageref *r)
{
	char norm[IMAGEREF_INPUT_MAX + 32], key[IMAGEREF_FORMAT_MAX + 1];

	if (pn == 1 && pat[0] == '*')
		return true;
	if (pn > IMAGEREF_INPUT_MAX)
		return false;
	const char *slash = memchr(pat, '/', pn);
	size_t dn = slash ? (size_t)(slash - pat) : 0;
	size_t last = 0;
	for (size_t i = 0; i < pn; i++)
		if (pat[i] == '/')
			last = i + 1;
	bool tagged = memchr(pat + last, ':', pn - last) || memchr(pat + last, '@', pn - last);
	size_t k = 0;
	if (slash && is_domain(pat, dn)) {
		bool legacy = dn == 15 && memcmp(pat, "index.docker.io", 15) == 0;
		for (size_t i = 0; i < dn; i++)
			norm[k++] = (char)(pat[i] >= 'A' && pat[i] <= 'Z' ? pat[i] - 'A' + 'a' : pat[i]);
		if (legacy)
			k = (size_t)snprintf(norm, sizeof(norm), "%s", IMAGEREF_DEFAULT_DOMAIN);
		norm[k++] = '/';
		pat += dn + 1;
		pn -= dn + 1;
	} else {
		k = (size_t)snprintf(norm, sizeof(norm), "%s/%s", IMAGEREF_DEFAULT_DOMAIN, slash ? "" : "library/");
	}
	memcpy(norm + k, pat, pn);
	k += pn;
	size_t kn = match_key(r, tagged, key, sizeof(key));
	return glob_match(norm, k, key, kn);
}

int imageref_patterns_check(const char *list, struct err *err)
{
	size_t count = 0;
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		bool ok = k > 0 && k <= IMAGEREF_INPUT_MAX;
		for (size_t i = 0; ok && i < k; i++)
			ok = alnum(p[i]) || strchr("._-/:@*?[]", p[i]) != NULL;
		if (!ok || ++count > IMAGEREF_PATTERNS_MAX)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "images: '%.*s' is not an image pattern: use references with '*' (within a "
				       "'/'-component), '**' (across) or '?', ','-separated, at most %d, e.g. "
				       "'python:*,docker.io/library/*,localhost:5000/team/**'",
				       (int)(k > 80 ? 80 : k), p, IMAGEREF_PATTERNS_MAX);
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

bool imageref_patterns_match(const char *list, const struct imageref *r, char *ret_pattern, size_t n)
{
	for (const char *p = list; *p;) {
		size_t k = strcspn(p, ",");
		if (pattern_match(p, k, r)) {
			if (ret_pattern)
				snprintf(ret_pattern, n, "%.*s", (int)k, p);
			return true;
		}
		p += k;
		if (*p == ',')
			p++;
	}
	return false;
}

bool imageref_allowed(const char *list, const struct imageref *r, bool pull)
{
	if (!list || !*list)
		return pull ? imageref_official(r) : true;
	return imageref_patterns_match(list, r, NULL, 0);
}
