/*
 * authkeys.h - the HTTP access tokens (--http-token-file): one `NAME:TOKEN`
 * per line, `#` comments and blank lines ignored.  NAME is the principal the
 * token stands for; a name may have several tokens (rotation).
 *
 * Pure: no I/O, no allocation (the table is the caller's, fixed size).  A
 * token never appears in an error message.  authkeys_match compares in time
 * that depends only on the table, not on how much of a guess is right.
 */
#ifndef AUTHKEYS_H
#define AUTHKEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errcode.h"

#define AUTHKEYS_MAX 64		/* lines with a token */
#define AUTHKEYS_NAME_MAX 64	/* [A-Za-z0-9._-], at least one */
#define AUTHKEYS_TOKEN_MIN 16	/* shorter ones are guessable */
#define AUTHKEYS_TOKEN_MAX 256	/* printable ASCII, no spaces */
#define AUTHKEYS_FILE_MAX 65536 /* bytes of the file at most */

struct authkeys {
	unsigned n;
	struct {
		char name[AUTHKEYS_NAME_MAX + 1];
		unsigned char token[AUTHKEYS_TOKEN_MAX];
		size_t len;
	} key[AUTHKEYS_MAX];
};

/* Parses text[0..n) into *ret. 0, or -EINVAL with the line and what is wrong in err. */
int authkeys_parse(const char *text, size_t n, struct authkeys *ret, struct err *err);
/* Distinct names in k. */
unsigned authkeys_names(const struct authkeys *k);
/* The name whose token is token[0..n) (borrowed from k), or NULL. */
const char *authkeys_match(const struct authkeys *k, const char *token, size_t n);

#endif
