/*
 * linksign.h - signed, expiring download links for HTTP mode.
 *
 * A link is BASE/files/SESSION/PATH?exp=UNIX&sig=HEX: anyone holding it may
 * GET that one file until exp, without an Authorization header, so a chat UI
 * can show it.  sig is HMAC-SHA256 (GnuTLS) over the principal, the session
 * id, the absolute path and exp, keyed by random bytes drawn at start: links
 * die with the server.  BASE is --http-public-url, or the bound address.
 *
 * linksign_exp_parse and linksign_sig_parse are pure parsers of request
 * input (fuzz-linksign); the rest computes or compares MACs.
 */
#ifndef LINKSIGN_H
#define LINKSIGN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes of the key drawn at start. */
#define LINKSIGN_KEY_BYTES 32
/* Hex digits of a signature (HMAC-SHA256). */
#define LINKSIGN_SIG_LEN 64
/* Digits of exp at most (unix seconds until the year 33658). */
#define LINKSIGN_EXP_DIGITS 12
/* Longest public base URL ("https://host:port/prefix"). */
#define LINKSIGN_BASE_MAX 400

enum linksign_verdict {
	LINKSIGN_OK,
	LINKSIGN_MALFORMED, /* exp or sig missing or not of their form */
	LINKSIGN_ALTERED,   /* the MAC does not match what the link names */
	LINKSIGN_EXPIRED,   /* genuine, but exp has passed */
};

struct linksign {
	unsigned char key[LINKSIGN_KEY_BYTES];
	char base[LINKSIGN_BASE_MAX + 1];    /* no trailing '/'; "" until linksign_set_base */
	char preview[LINKSIGN_BASE_MAX + 1]; /* previews' "scheme://domain[:port]"; "" when off */
	uint64_t ttl_s;			     /* how long a new link lives */
};

/* A signer with a fresh random key (aborts when the kernel has no entropy). */
struct linksign *linksign_create(uint64_t ttl_s);
/* Wipes the key. NULL is a no-op. */
void linksign_destroy(struct linksign *l);

/*
 * Sets the base URL links start with: http:// or https://, then a host, an
 * optional port and path, no query, fragment, user info, space or control
 * character; a trailing '/' is dropped. 0, or -EINVAL when it is not such a
 * URL (pure check: linksign_base_check).
 */
int linksign_set_base(struct linksign *l, const char *url);
bool linksign_base_check(const char *url, size_t n);
/* The host[:port] part of the base (for the Host check), into out; "" before set_base. */
void linksign_base_authority(const struct linksign *l, char *out, size_t outsz);
/* True when l is set up to sign (NULL: stdio, no links). */
bool linksign_enabled(const struct linksign *l);

/*
 * The signed URL of path (absolute, normalised) in session for principal,
 * valid from now for l->ttl_s. enc is the percent-encoded path without its
 * leading '/' (files_uri's form). 0 or -ENAMETOOLONG.
 */
int linksign_url(const struct linksign *l, const char *principal, const char *session, const char *path,
		 const char *enc, int64_t now, char *out, size_t outsz);

/* exp: 1 to LINKSIGN_EXP_DIGITS decimal digits, nothing else. 0 or -1. */
int linksign_exp_parse(const char *s, size_t n, int64_t *ret);
/* sig: exactly LINKSIGN_SIG_LEN lowercase hex digits. 0 or -1. */
int linksign_sig_parse(const char *s, size_t n);

/*
 * Checks exp and sig (NULL: absent) of a request for path in session,
 * whose owner is principal, at time now. The MAC is compared in constant
 * time, and before the expiry.
 */
enum linksign_verdict linksign_verify(const struct linksign *l, const char *principal, const char *session,
				      const char *path, const char *exp, const char *sig, int64_t now);

/*
 * Previews (docs/jobs.md): port P of session S is served at
 * scheme://P-S.DOMAIN[:port]/, a host of its own, so each preview is an
 * origin of its own and none is the server's. The link carries
 * ?sbx_preview=EXP.SIG once; the preview server trades it for a cookie of
 * that host. The MAC covers the principal, S and ":preview/P" (a file
 * link's path is absolute, so no file link is also a preview's).
 */
#define LINKSIGN_PREVIEW_PARAM "sbx_preview"
/* Longest Host of a preview: "65535-" + session id + "." + the base's authority. */
#define LINKSIGN_PREVIEW_HOST_MAX (LINKSIGN_BASE_MAX + 24)

/* url: http:// or https:// and an authority, no path ("http://localhost:7001"). 0 or -EINVAL. */
int linksign_set_preview(struct linksign *l, const char *url);
bool linksign_preview_enabled(const struct linksign *l);
/* The preview link of port in session for principal, valid for l->ttl_s. 0, -EINVAL or -ENAMETOOLONG. */
int linksign_preview_url(const struct linksign *l, const char *principal, const char *session, unsigned port,
			 int64_t now, char *out, size_t outsz);
/*
 * Pure: the session (12 lowercase hex digits, into session) and port of a
 * request's Host, which must be "PORT-SESSION." and then exactly the
 * preview base's authority (case-insensitive). 0 or -1.
 */
int linksign_preview_host(const struct linksign *l, const char *host, size_t n, char session[13], unsigned *port);
/*
 * Pure: the next "sbx_preview=EXP.SIG" item at or after *pos in s (items
 * split at sep: ';' for a Cookie header, '&' for a query), its exp and sig
 * copied out as strings; items whose exp or sig is not of its form are
 * skipped. 0 (and *pos past it), or -1 when there is no more. Whether they
 * are genuine is linksign_preview_verify's to judge.
 */
int linksign_preview_cred(const char *s, size_t n, char sep, size_t *pos, char exp[LINKSIGN_EXP_DIGITS + 1],
			  char sig[LINKSIGN_SIG_LEN + 1]);
enum linksign_verdict linksign_preview_verify(const struct linksign *l, const char *principal, const char *session,
					      unsigned port, const char *exp, const char *sig, int64_t now);

#endif
