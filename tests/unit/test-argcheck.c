/*
 * test-argcheck.c - the grammars pip and git arguments must match before they
 * reach an argv: what each accepts, how requirements are classified, and the
 * option and shell injections each refuses (with invalid_argument and a
 * message naming the value); and how an error message keeps the end of a
 * failed program's output.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "testutil.h"

#include "tools/argcheck.h"

static void test_requirements(void **state)
{
	(void)state;
	static const struct {
		const char *s;
		int kind; /* -1: refused */
	} cases[] = {
		{ "pandas", ARGCHECK_REQ_NAME },
		{ "numpy>=1.24,<2", ARGCHECK_REQ_NAME },
		{ "black[d]==24.1.0", ARGCHECK_REQ_NAME },
		{ "typing_extensions~=4.0", ARGCHECK_REQ_NAME },
		{ "zope.interface===5.0", ARGCHECK_REQ_NAME },
		{ "pkg[a,b]!=1.0.*", ARGCHECK_REQ_NAME },
		{ "./dist/pkg-1.0-py3-none-any.whl", ARGCHECK_REQ_PATH },
		{ "/workspace/pkg", ARGCHECK_REQ_PATH },
		{ "pkg-1.0.tar.gz", ARGCHECK_REQ_PATH },
		{ "src/pkg", ARGCHECK_REQ_PATH },
		{ "https://example.com/x-1.0-py3-none-any.whl", ARGCHECK_REQ_URL },
		{ "", -1 },
		{ "-e .", -1 },
		{ "--index-url=http://evil/", -1 },
		{ "-r", -1 },
		{ "x; touch /workspace/pwned", -1 },
		{ "$(touch /workspace/pwned)", -1 },
		{ "`id`", -1 },
		{ "pkg\n--pre", -1 },
		{ "a b", -1 },
		{ "pkg==", -1 },
		{ "pkg==1.0,", -1 },
		{ "pkg[", -1 },
		{ "pkg=1.0", -1 },
		{ "pkg==-1", -1 },
		{ "x|y", -1 },
		{ "./a b.whl", -1 },
		{ "https://a b/x", -1 },
		{ "ftp://x/y.whl", -1 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err e;
		enum argcheck_req kind = (enum argcheck_req) - 1;
		err_clear(&e);
		int r = argcheck_requirement(cases[i].s, &kind, &e);
		if (cases[i].kind < 0) {
			if (r != -EINVAL)
				fail_msg("accepted '%s'", cases[i].s);
			assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
			assert_true(strlen(e.msg) > 20);
		} else {
			if (r != 0)
				fail_msg("refused '%s': %s", cases[i].s, e.msg);
			assert_int_equal(kind, cases[i].kind);
		}
	}
	assert_int_equal(argcheck_dist_name("pipdemo", NULL), 0);
	assert_int_equal(argcheck_dist_name("-y", NULL), -EINVAL);
	assert_int_equal(argcheck_dist_name("./x.whl", NULL), -EINVAL);
	assert_int_equal(argcheck_dist_name("a==1", NULL), -EINVAL);
}

static void test_git(void **state)
{
	(void)state;
	static const char *const urls_ok[] = { "https://github.com/a/b.git", "/workspace/proj",	 "file:///workspace/p",
					       "git@github.com:a/b.git",     "ssh://git@host/x", "../x" };
	static const char *const urls_bad[] = {
		"--upload-pack=touch /x", "-u", "ext::sh -c touch% /x", "fd::7", "a\nb", "x;y", "a b", "",
		"transport::addr"
	};
	for (size_t i = 0; i < sizeof(urls_ok) / sizeof(urls_ok[0]); i++)
		if (argcheck_git_url(urls_ok[i], NULL) != 0)
			fail_msg("refused %s", urls_ok[i]);
	for (size_t i = 0; i < sizeof(urls_bad) / sizeof(urls_bad[0]); i++)
		if (argcheck_git_url(urls_bad[i], NULL) != -EINVAL)
			fail_msg("accepted %s", urls_bad[i]);

	static const char *const refs_ok[] = { "main", "feature/x", "v1.2", "origin", "a-b_c" };
	static const char *const refs_bad[] = { "-x",	"--receive-pack=x",
						"a..b", "a b",
						"a:b",	"a~1",
						"a^",	"x.lock",
						"x/",	"/x",
						".x",	"a@{1}",
						"@",	"a\\b",
						"",	"a*",
						"a?",	"a[" };
	for (size_t i = 0; i < sizeof(refs_ok) / sizeof(refs_ok[0]); i++)
		if (argcheck_git_ref(refs_ok[i], "branch", NULL) != 0)
			fail_msg("refused %s", refs_ok[i]);
	for (size_t i = 0; i < sizeof(refs_bad) / sizeof(refs_bad[0]); i++)
		if (argcheck_git_ref(refs_bad[i], "branch", NULL) != -EINVAL)
			fail_msg("accepted %s", refs_bad[i]);

	/* "+main" is a forced refspec to git push: refused, saying why */
	static const char *const forced[] = { "+main", "+refs/heads/main", "+HEAD", "+" };
	for (size_t i = 0; i < sizeof(forced) / sizeof(forced[0]); i++) {
		struct err e;
		err_clear(&e);
		if (argcheck_git_ref(forced[i], "branch", &e) != -EINVAL)
			fail_msg("accepted %s", forced[i]);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
		assert_non_null(strstr(e.msg, "force"));
	}
	assert_int_equal(argcheck_git_ref("a+b", "branch", NULL), 0);
}

static void test_err_tail(void **state)
{
	(void)state;
	struct err e;
	char out[4000];
	size_t n = 0;

	/* long output: the message keeps its last line (pip's final ERROR), from a line start */
	for (int i = 0; n < 3000; i++)
		n += (size_t)snprintf(out + n, sizeof(out) - n, "noise line %d padding padding\n", i);
	n += (size_t)snprintf(out + n, sizeof(out) - n, "ERROR: No matching distribution found for x\n\n");
	err_clear(&e);
	assert_int_equal(err_set_tail(&e, ERRCODE_PIP_FAILED, -EIO, out, n, "pip install failed (exit %d):\n", 1),
			 -EIO);
	assert_int_equal(e.code, ERRCODE_PIP_FAILED);
	assert_string_equal(errcode_name(e.code), "pip_failed");
	assert_string_equal(errcode_name(ERRCODE_GIT_FAILED), "git_failed");
	assert_true(strncmp(e.msg, "pip install failed (exit 1):\nnoise line ", 39) == 0);
	size_t m = strlen(e.msg);
	const char *last = "ERROR: No matching distribution found for x";
	assert_true(m > strlen(last) && strcmp(e.msg + m - strlen(last), last) == 0);
	assert_true(m > ERR_MSG_MAX / 2 && m < ERR_MSG_MAX);

	/* short output whole; none at all; NULL e */
	err_clear(&e);
	err_set_tail(&e, ERRCODE_GIT_FAILED, -EIO, "fatal: nope\n", 12, "git push failed: ");
	assert_string_equal(e.msg, "git push failed: fatal: nope");
	err_set_tail(&e, ERRCODE_GIT_FAILED, -EIO, NULL, 0, "git push failed");
	assert_string_equal(e.msg, "git push failed");
	assert_int_equal(err_set_tail(NULL, ERRCODE_GIT_FAILED, -EIO, "x", 1, "y"), -EIO);

	/* one long line of multi-byte characters: the cut lands between characters, never inside one */
	n = 0;
	while (n + 2 < 3000) {
		memcpy(out + n, "\xc3\x97", 2); /* U+00D7, pip's "×" */
		n += 2;
	}
	out[n++] = 'x';
	err_set_tail(&e, ERRCODE_PIP_FAILED, -EIO, out, n, "odd:");
	m = strlen(e.msg);
	assert_int_equal(e.msg[m - 1], 'x');
	assert_true(strncmp(e.msg, "odd:\xc3\x97", 6) == 0);

	/* bytes that are no UTF-8 become '?', so the message is still text */
	err_set_tail(&e, ERRCODE_PIP_FAILED, -EIO,
		     "a\xff\xc3"
		     "b\xed\xa0\x80"
		     "c",
		     8, "bad:");
	assert_string_equal(e.msg, "bad:a??b???c");
	/* and a value cut by "%.3s" inside a character */
	err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "'%.3s'", "ab\xc3\x97");
	assert_string_equal(e.msg, "'ab?'");
}

/* err_append: what the tool layer adds to a lower layer's message */
static void test_err_append(void **state)
{
	(void)state;
	struct err e;
	char big[ERR_MSG_MAX * 2];

	err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "the engine failed");
	assert_int_equal(err_append(&e, -EIO, "; %s stopped", "the upload"), -EIO);
	assert_string_equal(e.msg, "the engine failed; the upload stopped");
	assert_int_equal(e.code, ERRCODE_ENGINE_ERROR);
	assert_int_equal(err_append(NULL, -EPERM, "x"), -EPERM);

	/* past the end: cut between characters (U+00D7 is 2 bytes), never inside one, still NUL-terminated */
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\x97", 2);
	big[sizeof(big) - 1] = '\0';
	err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "xy");
	err_append(&e, -EIO, "%s", big);
	size_t m = strlen(e.msg);
	assert_true(m < ERR_MSG_MAX && m > ERR_MSG_MAX - 4);
	assert_int_equal((m - 2) % 2, 0);
	assert_int_equal((unsigned char)e.msg[m - 1], 0x97);
	/* a full message takes at most what is left, and stays terminated */
	err_append(&e, -EIO, "more");
	assert_true(strlen(e.msg) >= m && strlen(e.msg) < ERR_MSG_MAX);
	assert_int_equal(strncmp(e.msg + m, "more", strlen(e.msg) - m), 0);

	/* bytes that are no UTF-8 become '?'; the message before them is left alone */
	err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "ok\xc3\x97");
	err_append(&e, -EIO, " (tar: %s)",
		   "a\xff"
		   "b\xed\xa0\x80");
	assert_string_equal(e.msg, "ok\xc3\x97 (tar: a?b???"
				   ")");
}

static void test_paths_and_urls(void **state)
{
	(void)state;
	assert_int_equal(argcheck_path("dist", "find_links", NULL), 0);
	assert_int_equal(argcheck_path("/workspace/my wheels", "find_links", NULL), 0);
	assert_int_equal(argcheck_path("--pre", "find_links", NULL), -EINVAL);
	assert_int_equal(argcheck_path("a$(b)", "find_links", NULL), -EINVAL);
	assert_int_equal(argcheck_path("a\tb", "find_links", NULL), -EINVAL);
	assert_int_equal(argcheck_http_url("https://pypi.org/simple", "index_url", NULL), 0);
	assert_int_equal(argcheck_http_url("file:///x", "index_url", NULL), -EINVAL);
	assert_int_equal(argcheck_http_url("https://a b", "index_url", NULL), -EINVAL);
	assert_int_equal(argcheck_http_url(NULL, "index_url", NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requirements),   cmocka_unit_test(test_git),
		cmocka_unit_test(test_paths_and_urls), cmocka_unit_test(test_err_tail),
		cmocka_unit_test(test_err_append),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
