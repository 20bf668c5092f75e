/*
 * authkeys.c - the token file's parser and the constant-time lookup (see authkeys.h).
 */
#include <errno.h>
#include <string.h>

#include "transport/http/authkeys.h"

static bool name_char(char c);
static int parse_line(const char *p, size_t n, unsigned lineno, struct authkeys *k, struct err *err);

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
	       c == '-';
}

/* One line without its newline (a CR before it is dropped). */
static int parse_line(const char *p, size_t n, unsigned lineno, struct authkeys *k, struct err *err)
{
	if (n > 0 && p[n - 1] == '\r')
		n--;
	size_t start = 0;
	while (start < n && (p[start] == ' ' || p[start] == '\t'))
		start++;
	if (start == n || p[start] == '#')
		return 0;
	const char *colon = memchr(p + start, ':', n - start);
	if (!colon)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "token file line %u: expected NAME:TOKEN (a '#' starts a comment)", lineno);
	size_t nn = (size_t)(colon - (p + start));
	if (nn == 0 || nn > AUTHKEYS_NAME_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "token file line %u: the NAME before ':' must be 1 to %d characters", lineno,
			       AUTHKEYS_NAME_MAX);
	for (size_t i = 0; i < nn; i++)
		if (!name_char(p[start + i]))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "token file line %u: NAME may hold only letters, digits, '.', '_' and '-'",
				       lineno);
	const char *t = colon + 1;
	size_t tn = n - (size_t)(t - p);
	if (tn < AUTHKEYS_TOKEN_MIN || tn > AUTHKEYS_TOKEN_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "token file line %u: the token must be %d to %d characters (make one with "
			       "`openssl rand -hex 32`)",
			       lineno, AUTHKEYS_TOKEN_MIN, AUTHKEYS_TOKEN_MAX);
	for (size_t i = 0; i < tn; i++)
		if ((unsigned char)t[i] <= ' ' || (unsigned char)t[i] >= 0x7f)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "token file line %u: the token may hold only printable ASCII without spaces",
				       lineno);
	if (authkeys_match(k, t, tn))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "token file line %u: this token is already on an earlier line; each token must "
			       "name one principal",
			       lineno);
	if (k->n == AUTHKEYS_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "token file: more than %d tokens", AUTHKEYS_MAX);
	memcpy(k->key[k->n].name, p + start, nn);
	k->key[k->n].name[nn] = '\0';
	memcpy(k->key[k->n].token, t, tn);
	k->key[k->n].len = tn;
	k->n++;
	return 0;
}

int authkeys_parse(const char *text, size_t n, struct authkeys *ret, struct err *err)
{
	unsigned lineno = 0;
	size_t off = 0;

	memset(ret, 0, sizeof(*ret));
	if (n > AUTHKEYS_FILE_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "token file: longer than %d bytes",
			       AUTHKEYS_FILE_MAX);
	while (off < n) {
		const char *nl = memchr(text + off, '\n', n - off);
		size_t len = nl ? (size_t)(nl - (text + off)) : n - off;
		lineno++;
		int r = memchr(text + off, '\0', len) ? err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
								"token file line %u: holds a NUL byte", lineno)
						      : parse_line(text + off, len, lineno, ret, err);
		if (r < 0) {
			memset(ret, 0, sizeof(*ret)); /* no half table, no tokens left behind */
			return r;
		}
		off += len + (nl ? 1 : 0);
	}
	if (ret->n == 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "token file: no NAME:TOKEN line; add one (e.g. alice:$(openssl rand -hex 32))");
	return 0;
}

unsigned authkeys_names(const struct authkeys *k)
{
	unsigned names = 0;
	for (unsigned i = 0; i < k->n; i++) {
		bool seen = false;
		for (unsigned j = 0; j < i && !seen; j++)
			seen = strcmp(k->key[i].name, k->key[j].name) == 0;
		names += !seen;
	}
	return names;
}

const char *authkeys_match(const struct authkeys *k, const char *token, size_t n)
{
	const char *found = NULL;

	if (n > AUTHKEYS_TOKEN_MAX)
		return NULL;
	/* every key, every byte of the longest token: no early exit on a mismatch */
	for (unsigned i = 0; i < k->n; i++) {
		unsigned diff = (unsigned)(k->key[i].len ^ n);
		for (size_t b = 0; b < AUTHKEYS_TOKEN_MAX; b++) {
			unsigned char g = b < n ? (unsigned char)token[b] : 0;
			unsigned char want = b < k->key[i].len ? k->key[i].token[b] : 0;
			diff |= (unsigned)(g ^ want);
		}
		volatile unsigned d = diff; /* keeps the compiler from turning the loop into memcmp */
		if (d == 0 && !found)
			found = k->key[i].name;
	}
	return found;
}
