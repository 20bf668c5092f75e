/*
 * test-userdb.c - USER specs resolved as runc resolves them: the numeric
 * aliases of root ("00", "+0", "0:0"), names that map to uid 0, explicit and
 * implicit groups, runc's quirks (unparsable ids read as 0, a numeric uid
 * without an entry gets gid 0) and names no file lists. Files end at a guard
 * page, so a read past their end faults.
 */
#include <errno.h>

#include "testutil.h"

#include "sandbox/userdb.h"

static const char passwd[] = "root:x:0:0:root:/root:/bin/bash\n"
			     "# a comment:x:5:5\n"
			     "sandbox:x:1000:1000::/home/sandbox:/bin/sh\n"
			     "toor:x:0:0::/:/bin/sh\n"
			     "odd:x:abc:7::/:/bin/sh\n"
			     "nogid:x:1200\n"
			     "1234:x:0:0::/:/bin/sh\n"
			     "crlf:x:1300:1301::/:/bin/sh\r\n"
			     "last:x:1400:1401::/:/bin/sh";
static const char group[] = "root:x:0:\nsandbox:x:1000:\nwheel:x:10:sandbox\nstaff:x:50:";

/* Resolves spec; returns r, and the ids through uid/gid. */
static int resolve(const char *spec, unsigned long *uid, unsigned long *gid)
{
	struct guarded p = guarded_copy(passwd, strlen(passwd));
	struct guarded g = guarded_copy(group, strlen(group));
	struct err err;
	*uid = *gid = 99999;
	int r = userdb_resolve(spec, p.p, strlen(passwd), g.p, strlen(group), uid, gid, &err);
	guarded_free(&p);
	guarded_free(&g);
	return r;
}

static void expect(const char *spec, unsigned long uid, unsigned long gid)
{
	unsigned long u, g;
	int r = resolve(spec, &u, &g);
	if (r != 0 || u != uid || g != gid)
		fail_msg("'%s': r %d uid %lu gid %lu, expected %lu:%lu", spec, r, u, g, uid, gid);
}

static void test_root_aliases(void **state)
{
	(void)state;
	expect("", 0, 0);
	expect("root", 0, 0);
	expect("0", 0, 0);
	expect("00", 0, 0);
	expect("+0", 0, 0);
	expect("-0", 0, 0);
	expect("0:0", 0, 0);
	expect("toor", 0, 0);	   /* a second name for uid 0 */
	expect("odd", 0, 7);	   /* an unparsable uid reads as 0, as in runc */
	expect("1000:0", 1000, 0); /* root group */
	expect("sandbox:root", 1000, 0);
	expect("sandbox:+0", 1000, 0);
}

static void test_users(void **state)
{
	(void)state;
	expect("sandbox", 1000, 1000);
	expect("1000", 1000, 1000);
	expect("01000", 1000, 1000);
	expect("sandbox:staff", 1000, 50);
	expect("sandbox:wheel", 1000, 10);
	expect("sandbox:4242", 1000, 4242);
	expect("4242:4243", 4242, 4243);
	expect("4242", 4242, 0); /* no entry: gid 0, as Docker does */
	expect("nogid", 1200, 0);
	expect("crlf", 1300, 1301);
	expect("last", 1400, 1401);
	/* a numeric user is always a uid: the entry named "1234" is not it */
	expect("1234", 1234, 0);
	expect("sandbox:", 1000, 1000);
}

static void test_refused(void **state)
{
	(void)state;
	unsigned long u, g;
	assert_int_equal(resolve("nobody", &u, &g), -ENOENT);
	assert_int_equal(resolve("a comment", &u, &g), -ENOENT);
	assert_int_equal(resolve("sandbox:nogroup", &u, &g), -ENOENT);
	assert_int_equal(resolve("-1", &u, &g), -EINVAL);
	assert_int_equal(resolve("1000:-5", &u, &g), -EINVAL);
	assert_int_equal(resolve("2147483648", &u, &g), -EINVAL);
	assert_int_equal(resolve("99999999999999999999", &u, &g), -ENOENT);
	expect("2147483647", 2147483647UL, 0);
}

static void test_empty_files(void **state)
{
	(void)state;
	unsigned long u = 1, g = 1;
	struct err err;
	assert_int_equal(userdb_resolve("1000:1000", "", 0, "", 0, &u, &g, &err), 0);
	assert_int_equal(u, 1000);
	assert_int_equal(g, 1000);
	assert_int_equal(userdb_resolve("sandbox", "", 0, "", 0, &u, &g, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "sandbox"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_aliases),
		cmocka_unit_test(test_users),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_empty_files),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
