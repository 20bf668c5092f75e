/*
 * test-authkeys.c - the token file parser and lookup (authkeys.h): good
 * files, every kind of bad line (with its line number, never the token),
 * and lookups of right, wrong, prefix and longer tokens, from inputs that
 * end at a guard page.
 */
#include <errno.h>

#include "testutil.h"

#include "transport/http/authkeys.h"

#define TOK_A "aaaaaaaaaaaaaaaa1"
#define TOK_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static struct authkeys keys;

static int parse(const char *text, struct err *err)
{
	struct guarded g = guarded_copy(text, strlen(text));
	err_clear(err);
	int r = authkeys_parse(g.p, strlen(text), &keys, err);
	guarded_free(&g);
	return r;
}

static const char *match(const char *token)
{
	struct guarded g = guarded_copy(token, strlen(token));
	const char *name = authkeys_match(&keys, g.p, strlen(token));
	guarded_free(&g);
	return name;
}

static void test_good(void **state)
{
	struct err err;
	(void)state;
	assert_int_equal(parse("# team keys\n\nalice:" TOK_A "\r\n  bob:" TOK_B "\nalice:" TOK_B "x", &err), 0);
	assert_int_equal(keys.n, 3);
	assert_int_equal(authkeys_names(&keys), 2);
	assert_string_equal(match(TOK_A), "alice");
	assert_string_equal(match(TOK_B), "bob");
	assert_string_equal(match(TOK_B "x"), "alice");
	assert_null(match(""));
	assert_null(match("aaaaaaaaaaaaaaaa"));	 /* a prefix */
	assert_null(match(TOK_A "1"));		 /* longer */
	assert_null(match("aaaaaaaaaaaaaaaa2")); /* last byte differs */
	assert_null(match("Aaaaaaaaaaaaaaaa1")); /* first byte differs */
	char huge[AUTHKEYS_TOKEN_MAX + 2];
	memset(huge, 'a', sizeof(huge) - 1);
	huge[sizeof(huge) - 1] = '\0';
	assert_null(match(huge));
}

static void test_bad(void **state)
{
	struct err err;
	(void)state;
	const struct {
		const char *text, *msg;
	} bad[] = {
		{ "", "no NAME:TOKEN" },
		{ "# only a comment\n", "no NAME:TOKEN" },
		{ "alice " TOK_A "\n", "line 1: expected NAME:TOKEN" },
		{ "ok:" TOK_A "\n:" TOK_B, "line 2: the NAME" },
		{ "al ice:" TOK_A, "line 1: NAME may hold" },
		{ "alice:short", "line 1: the token must be" },
		{ "alice:" TOK_A " x", "line 1: the token may hold only" },
		{ "alice:" TOK_A "\nbob:" TOK_A, "line 2: this token is already" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].text, &err), -EINVAL);
		assert_non_null(strstr(err.msg, bad[i].msg));
		assert_null(strstr(err.msg, "aaaaaaaa")); /* never the token */
		assert_int_equal(keys.n, 0);		  /* no half table */
	}
	char nul[] = "alice:" TOK_A "\0x";
	struct guarded g = guarded_copy(nul, sizeof(nul) - 1);
	assert_int_equal(authkeys_parse(g.p, sizeof(nul) - 1, &keys, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "NUL"));
	guarded_free(&g);
	/* a NUL on a later line: the tokens of the lines before are wiped too */
	char later[] = "alice:" TOK_A "\nbob\0:" TOK_B;
	g = guarded_copy(later, sizeof(later) - 1);
	assert_int_equal(authkeys_parse(g.p, sizeof(later) - 1, &keys, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "line 2: holds a NUL"));
	assert_int_equal(keys.n, 0);
	guarded_free(&g);
}

/* Every prefix of a file parses or fails cleanly, never reading past it. */
static void test_prefixes(void **state)
{
	const char *text = "# c\nalice:" TOK_A "\r\nbob:" TOK_B "\n";
	struct err err;
	(void)state;
	for (size_t k = 0; k <= strlen(text); k++) {
		struct guarded g = guarded_copy(text, k);
		err_clear(&err);
		(void)authkeys_parse(g.p, k, &keys, &err);
		guarded_free(&g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_prefixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
