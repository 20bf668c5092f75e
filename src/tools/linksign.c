/*
 * linksign.c - signed, expiring download links (see linksign.h).
 *
 * The MAC covers "sandbox-mcp link v1", then the principal, the session id,
 * the path and exp, each preceded by its length: no two different tuples
 * hash the same bytes, whatever characters a path holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include <nettle/hmac.h>

#include "base/buf.h"
#include "base/util.h"
#include "tools/linksign.h"

static int mac_hex(const struct linksign *l, const char *principal, const char *session, const char *path, int64_t exp,
		   char out[LINKSIGN_SIG_LEN + 1]);
static bool same_ct(const char *a, const char *b, size_t n);

struct linksign *linksign_create(uint64_t ttl_s)
{
	struct linksign *l = xcalloc(1, sizeof(*l));
	if (getrandom(l->key, sizeof(l->key), 0) != (ssize_t)sizeof(l->key))
		abort(); /* a guessable key would let anyone forge links */
	l->ttl_s = ttl_s;
	return l;
}

void linksign_destroy(struct linksign *l)
{
	if (!l)
		return;
	explicit_bzero(l->key, sizeof(l->key));
	free(l);
}

bool linksign_base_check(const char *url, size_t n)
{
	size_t skip;

	if (n >= 7 && strncasecmp(url, "http://", 7) == 0)
		skip = 7;
	else if (n >= 8 && strncasecmp(url, "https://", 8) == 0)
		skip = 8;
	else
		return false;
	if (n > LINKSIGN_BASE_MAX || n == skip || url[skip] == '/')
		return false; /* no host */
	for (size_t i = skip; i < n; i++) {
		unsigned char c = (unsigned char)url[i];
		if (c <= ' ' || c >= 0x7f || c == '?' || c == '#' || c == '@' || c == '\\' || c == '"' || c == '<' ||
		    c == '>')
			return false;
	}
	return true;
}

int linksign_set_base(struct linksign *l, const char *url)
{
	size_t n = strlen(url);
	if (!linksign_base_check(url, n))
		return -EINVAL;
	while (n > 0 && url[n - 1] == '/')
		n--;
	memcpy(l->base, url, n);
	l->base[n] = '\0';
	return 0;
}

void linksign_base_authority(const struct linksign *l, char *out, size_t outsz)
{
	const char *p = strstr(l->base, "://");
	p = p ? p + 3 : l->base;
	size_t k = strcspn(p, "/");
	snprintf(out, outsz, "%.*s", (int)k, p);
}

bool linksign_enabled(const struct linksign *l)
{
	return l && l->base[0];
}

static int mac_hex(const struct linksign *l, const char *principal, const char *session, const char *path, int64_t exp,
		   char out[LINKSIGN_SIG_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char digest[SHA256_DIGEST_SIZE];
	struct hmac_sha256_ctx h;
	struct buf m;

	buf_init(&m, SIZE_MAX);
	(void)buf_printf(&m, "sandbox-mcp link v1\n%zu:%s\n%zu:%s\n%zu:%s\n%lld", strlen(principal), principal,
			 strlen(session), session, strlen(path), path, (long long)exp);
	hmac_sha256_set_key(&h, sizeof(l->key), l->key);
	hmac_sha256_update(&h, m.len, (const uint8_t *)m.data);
	hmac_sha256_digest(&h, sizeof(digest), digest);
	explicit_bzero(&h, sizeof(h)); /* holds the key */
	buf_finish(&m);
	for (size_t i = 0; i < sizeof(digest); i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[LINKSIGN_SIG_LEN] = '\0';
	explicit_bzero(digest, sizeof(digest));
	return 0;
}

int linksign_url(const struct linksign *l, const char *principal, const char *session, const char *path,
		 const char *enc, int64_t now, char *out, size_t outsz)
{
	char sig[LINKSIGN_SIG_LEN + 1];
	int64_t exp = now + (int64_t)l->ttl_s;

	if (!linksign_enabled(l) || mac_hex(l, principal, session, path, exp, sig) < 0)
		return -EINVAL;
	int k = snprintf(out, outsz, "%s/files/%s/%s?exp=%lld&sig=%s", l->base, session, enc, (long long)exp, sig);
	return k < 0 || (size_t)k >= outsz ? -ENAMETOOLONG : 0;
}

int linksign_exp_parse(const char *s, size_t n, int64_t *ret)
{
	int64_t v = 0;

	if (n == 0 || n > LINKSIGN_EXP_DIGITS)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*ret = v;
	return 0;
}

int linksign_sig_parse(const char *s, size_t n)
{
	if (n != LINKSIGN_SIG_LEN)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return -1;
	return 0;
}

/* Every byte compared, no early exit: the time says nothing of where a forged sig first differs. */
static bool same_ct(const char *a, const char *b, size_t n)
{
	unsigned diff = 0;
	for (size_t i = 0; i < n; i++)
		diff |= (unsigned)((unsigned char)a[i] ^ (unsigned char)b[i]);
	volatile unsigned d = diff; /* keeps the compiler from turning the loop into memcmp */
	return d == 0;
}

enum linksign_verdict linksign_verify(const struct linksign *l, const char *principal, const char *session,
				      const char *path, const char *exp, const char *sig, int64_t now)
{
	char want[LINKSIGN_SIG_LEN + 1];
	int64_t e;

	if (!l || !exp || !sig || linksign_exp_parse(exp, strlen(exp), &e) < 0 ||
	    linksign_sig_parse(sig, strlen(sig)) < 0)
		return LINKSIGN_MALFORMED;
	/* a leading zero would give a second spelling of one exp */
	if (exp[0] == '0' && exp[1])
		return LINKSIGN_MALFORMED;
	if (mac_hex(l, principal, session, path, e, want) < 0)
		return LINKSIGN_ALTERED;
	bool same = same_ct(want, sig, LINKSIGN_SIG_LEN);
	explicit_bzero(want, sizeof(want));
	if (!same)
		return LINKSIGN_ALTERED;
	return e < now ? LINKSIGN_EXPIRED : LINKSIGN_OK;
}

int linksign_set_preview(struct linksign *l, const char *url)
{
	size_t n = strlen(url);
	const char *auth = strstr(url, "://");
	if (!linksign_base_check(url, n) || !auth || strchr(auth + 3, '/'))
		return -EINVAL;
	memcpy(l->preview, url, n + 1);
	return 0;
}

bool linksign_preview_enabled(const struct linksign *l)
{
	return l && l->preview[0];
}

static void preview_path(unsigned port, char out[24])
{
	snprintf(out, 24, ":preview/%u", port);
}

int linksign_preview_url(const struct linksign *l, const char *principal, const char *session, unsigned port,
			 int64_t now, char *out, size_t outsz)
{
	char sig[LINKSIGN_SIG_LEN + 1], path[24];
	int64_t exp = now + (int64_t)l->ttl_s;

	preview_path(port, path);
	if (!linksign_preview_enabled(l) || mac_hex(l, principal, session, path, exp, sig) < 0)
		return -EINVAL;
	const char *auth = strstr(l->preview, "://") + 3;
	int k = snprintf(out, outsz, "%.*s%u-%s.%s/?%s=%lld.%s", (int)(auth - l->preview), l->preview, port, session,
			 auth, LINKSIGN_PREVIEW_PARAM, (long long)exp, sig);
	return k < 0 || (size_t)k >= outsz ? -ENAMETOOLONG : 0;
}

int linksign_preview_host(const struct linksign *l, const char *host, size_t n, char session[13], unsigned *port)
{
	const char *auth = linksign_preview_enabled(l) ? strstr(l->preview, "://") + 3 : NULL;
	size_t i = 0, an = auth ? strlen(auth) : 0;
	unsigned p = 0;

	if (!auth)
		return -1;
	/* PORT: 1-5 digits, no leading zero, 1-65535 */
	while (i < n && i < 5 && host[i] >= '0' && host[i] <= '9')
		p = p * 10 + (unsigned)(host[i++] - '0');
	if (i == 0 || host[0] == '0' || p > 65535 || i >= n || host[i++] != '-')
		return -1;
	for (size_t k = 0; k < 12; k++, i++) {
		if (i >= n || !((host[i] >= '0' && host[i] <= '9') || (host[i] >= 'a' && host[i] <= 'f')))
			return -1;
		session[k] = host[i];
	}
	session[12] = '\0';
	if (i >= n || host[i++] != '.' || n - i != an || strncasecmp(host + i, auth, an) != 0)
		return -1;
	*port = p;
	return 0;
}

int linksign_preview_cred(const char *s, size_t n, char sep, size_t *pos, char exp[LINKSIGN_EXP_DIGITS + 1],
			  char sig[LINKSIGN_SIG_LEN + 1])
{
	static const char name[] = LINKSIGN_PREVIEW_PARAM "=";
	const size_t nl = sizeof(name) - 1;

	while (*pos < n) {
		size_t i = *pos;
		while (i < n && s[i] == ' ')
			i++;
		const char *end = memchr(s + i, sep, n - i);
		size_t e = end ? (size_t)(end - s) : n;
		*pos = end ? e + 1 : n;
		if (e - i < nl || memcmp(s + i, name, nl) != 0)
			continue;
		const char *v = s + i + nl, *dot = memchr(v, '.', e - i - nl);
		if (!dot)
			continue;
		size_t en = (size_t)(dot - v), sn = (size_t)(s + e - dot - 1);
		while (sn && dot[sn] == ' ')
			sn--; /* a Cookie item's trailing blanks */
		int64_t ignored;
		if (linksign_exp_parse(v, en, &ignored) < 0 || linksign_sig_parse(dot + 1, sn) < 0)
			continue;
		memcpy(exp, v, en);
		exp[en] = '\0';
		memcpy(sig, dot + 1, sn);
		sig[sn] = '\0';
		return 0;
	}
	return -1;
}

enum linksign_verdict linksign_preview_verify(const struct linksign *l, const char *principal, const char *session,
					      unsigned port, const char *exp, const char *sig, int64_t now)
{
	char path[24];
	preview_path(port, path);
	return linksign_verify(l, principal, session, path, exp, sig, now);
}
