/*
 * test-pathsafe.c - lexical path normalisation (pathsafe.h), until now only
 * fuzzed: resolving against a base, ".." never climbing above "/", control
 * bytes and over-long paths refused, containment by component (never by
 * string prefix), and archive names that may never climb or be absolute.
 * Every input ends at a guard page, so a read past its NUL faults.
 */
#include <errno.h>

#include "testutil.h"

#include "base/pathsafe.h"

static int resolve(const char *base, const char *path, char *out, size_t outsz)
{
	struct guarded b = guarded_copy(base, strlen(base) + 1);
	struct guarded p = guarded_copy(path, strlen(path) + 1);
	int r = path_resolve(b.p, p.p, out, outsz);
	guarded_free(&b);
	guarded_free(&p);
	return r;
}

static void test_resolve(void **state)
{
	(void)state;
	static const struct {
		const char *base, *path, *want;
	} ok[] = {
		{ "/workspace", "a.txt", "/workspace/a.txt" },
		{ "/workspace", "./a//b/./c/", "/workspace/a/b/c" },
		{ "/workspace", "a/../b", "/workspace/b" },
		{ "/workspace", "..", "/" },
		{ "/workspace", "../../../../etc", "/etc" },
		{ "/workspace", "/etc/passwd", "/etc/passwd" },
		{ "/workspace", "/", "/" },
		{ "/workspace", "//x///y", "/x/y" },
		{ "/", ".", "/" },
		{ "/w/", "x/..", "/w" },
		{ "/workspace", "...", "/workspace/..." },
		{ "/workspace", "a b/ü", "/workspace/a b/ü" },
	};
	char out[PATHSAFE_MAX + 1];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(resolve(ok[i].base, ok[i].path, out, sizeof(out)), 0);
		assert_string_equal(out, ok[i].want);
	}
	assert_int_equal(resolve("/workspace", "", out, sizeof(out)), -EINVAL);
	assert_int_equal(resolve("/workspace", "a\nb", out, sizeof(out)), -EINVAL);
	assert_int_equal(resolve("/workspace", "a\x7f", out, sizeof(out)), -EINVAL);
	assert_int_equal(resolve("/workspace", "abcdef", out, 8), -ENAMETOOLONG);
	char *longp = malloc(PATHSAFE_MAX + 2);
	assert_non_null(longp);
	memset(longp, 'x', PATHSAFE_MAX + 1);
	longp[PATHSAFE_MAX + 1] = '\0';
	assert_int_equal(resolve("/", longp, out, sizeof(out)), -ENAMETOOLONG);
	free(longp);
}

static void test_within(void **state)
{
	(void)state;
	assert_true(path_within("/workspace", "/workspace"));
	assert_true(path_within("/workspace", "/workspace/a/b"));
	assert_false(path_within("/workspace", "/workspace2"));
	assert_false(path_within("/workspace", "/workspacex/a"));
	assert_false(path_within("/workspace", "/"));
	assert_false(path_within("/workspace/a", "/workspace"));
	assert_true(path_within("/", "/anything"));
	assert_true(path_within("/", "/"));
}

static int relative(const char *name, char *out, size_t outsz)
{
	struct guarded n = guarded_copy(name, strlen(name) + 1);
	int r = path_relative(n.p, out, outsz);
	guarded_free(&n);
	return r;
}

static void test_relative(void **state)
{
	(void)state;
	static const struct {
		const char *name, *want;
	} ok[] = {
		{ "a", "a" }, { "./a", "a" },		{ "a/./b//c/", "a/b/c" }, { "./", "" },
		{ ".", "" },  { "..a/b..", "..a/b.." }, { "a/.../b", "a/.../b" },
	};
	char out[PATHSAFE_MAX + 1];
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(relative(ok[i].name, out, sizeof(out)), 0);
		assert_string_equal(out, ok[i].want);
	}
	static const char *const climbs[] = { "/etc/passwd", "..", "../x", "a/../../x", "a/..", "./../x", "a/b/.." };
	for (size_t i = 0; i < sizeof(climbs) / sizeof(climbs[0]); i++)
		assert_int_equal(relative(climbs[i], out, sizeof(out)), -EXDEV);
	assert_int_equal(relative("a\tb", out, sizeof(out)), -EINVAL);
	assert_int_equal(relative("", out, sizeof(out)), -EINVAL);
	assert_int_equal(relative("abcdefgh", out, 4), -ENAMETOOLONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resolve),
		cmocka_unit_test(test_within),
		cmocka_unit_test(test_relative),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
