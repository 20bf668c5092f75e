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
	char base[LINKSIGN_BASE_MAX + 1]; /* no trailing '/'; "" until linksign_set_base */
	uint64_t ttl_s;			  /* how long a new link lives */
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

#endif
