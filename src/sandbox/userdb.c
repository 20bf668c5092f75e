/*
 * userdb.c - resolve a USER spec against passwd and group bytes (userdb.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "sandbox/userdb.h"

/* A field of a ':'-separated line: [p, p+n). */
struct field {
	const char *p;
	size_t n;
};

/*
 * Go's strconv.Atoi over [p, p+n): an optional sign, then decimal digits.
 * False when it is not a number or does not fit; *ret is then 0, which is
 * what runc reads for an unparsable id in passwd or group.
 */
static bool atoi_go(const char *p, size_t n, long long *ret)
{
	size_t i = 0;
	bool neg = false;
	long long v = 0;

	*ret = 0;
	if (n > 0 && (p[0] == '+' || p[0] == '-')) {
		neg = p[0] == '-';
		i = 1;
	}
	if (i == n)
		return false;
	for (; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		if (v > (1LL << 40)) /* far past USERDB_ID_MAX: out of range either way */
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*ret = neg ? -v : v;
	return true;
}

/* Splits the line [p, p+n) at ':' into at most max fields; the count. */
static size_t split(const char *p, size_t n, struct field *f, size_t max)
{
	size_t k = 0;
	const char *end = p + n;

	while (k < max) {
		const char *c = memchr(p, ':', (size_t)(end - p));
		f[k].p = p;
		f[k].n = c ? (size_t)(c - p) : (size_t)(end - p);
		k++;
		if (!c)
			break;
		p = c + 1;
	}
	return k;
}

static bool field_is(const struct field *f, const char *s, size_t n)
{
	return f->n == n && memcmp(f->p, s, n) == 0;
}

/*
 * The first line of db whose name field equals key (or, when numeric, whose
 * id field (column idcol) equals num): its id fields through ret. False if none.
 */
static bool lookup(const char *db, size_t len, const char *key, size_t keylen, bool numeric, long long num,
		   size_t idcol, long long *ret_id, long long *ret_gid)
{
	const char *p = db, *end = db + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct field f[4] = { 0 };
		/* runc trims the line; a comment or empty line is no entry */
		while (n > 0 && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n > 0 && p[0] != '#' && split(p, n, f, 4) >= 1) {
			long long id, gid;
			atoi_go(f[idcol].p, f[idcol].n, &id);
			atoi_go(f[3].p, f[3].n, &gid);
			if (numeric ? id == num : field_is(&f[0], key, keylen)) {
				*ret_id = id;
				if (ret_gid)
					*ret_gid = gid;
				return true;
			}
		}
		p = nl ? nl + 1 : end;
	}
	return false;
}

int userdb_resolve(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
		   unsigned long *ret_uid, unsigned long *ret_gid, struct err *err)
{
	const char *colon = strchr(spec, ':');
	size_t ulen = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *g = colon ? colon + 1 : "";
	size_t glen_spec = strlen(g);
	long long unum, gnum, uid = 0, gid = 0;
	bool unumeric = atoi_go(spec, ulen, &unum);
	bool gnumeric = atoi_go(g, glen_spec, &gnum);

	if (ulen == 0) {
		uid = 0; /* no user: root */
	} else if (!lookup(passwd, plen, spec, ulen, unumeric, unum, 2, &uid, &gid)) {
		if (!unumeric)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT,
				       "the image's USER '%.*s' is not in its /etc/passwd: use another image",
				       (int)(ulen > 64 ? 64 : ulen), spec);
		uid = unum;
		gid = 0;
	}
	if (glen_spec > 0) {
		long long found;
		if (lookup(group, glen, g, glen_spec, gnumeric, gnum, 2, &found, NULL))
			gid = found;
		else if (gnumeric)
			gid = gnum;
		else
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT,
				       "the image's USER names group '%.64s', which is not in its /etc/group: use another image",
				       g);
	}
	if (uid < 0 || gid < 0 || (unsigned long long)uid > USERDB_ID_MAX || (unsigned long long)gid > USERDB_ID_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "the image's USER '%.64s' is an id out of range: use another image", spec);
	*ret_uid = (unsigned long)uid;
	*ret_gid = (unsigned long)gid;
	return 0;
}
