/*
 * test-exec.c - the argv of in-sandbox scripts (exec_sh_argv): the shell,
 * the script, $0 and every argument in order, NULL-terminated, and -E2BIG
 * instead of a dropped argument when they do not fit (the copies it replaced
 * silently kept only the first eleven); the wrapper's pid line read from
 * stderr cut at every byte, and lines that are not a pid.
 */
#include <errno.h>

#include "testutil.h"

#include "sandbox/exec.h"

static void test_layout(void **state)
{
	(void)state;
	const char *argv[EXEC_SH_ARGV_MAX];
	const char *args[] = { "a", "", "-c", NULL };
	assert_int_equal(exec_sh_argv(argv, EXEC_SH_ARGV_MAX, "echo \"$@\"", "name", args), 0);
	const char *want[] = { "/bin/sh", "-c", "echo \"$@\"", "name", "a", "", "-c", NULL };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		if (want[i])
			assert_string_equal(argv[i], want[i]);
		else
			assert_null(argv[i]);
	}
	assert_int_equal(exec_sh_argv(argv, EXEC_SH_ARGV_MAX, "true", "n", NULL), 0);
	assert_null(argv[4]);
}

static void test_every_count(void **state)
{
	(void)state;
	const char *args[EXEC_SH_ARGV_MAX + 2];
	char names[EXEC_SH_ARGV_MAX + 2][8];
	for (size_t k = 0; k <= EXEC_SH_ARGV_MAX + 1; k++) {
		for (size_t i = 0; i < k; i++) {
			snprintf(names[i], sizeof(names[i]), "%zu", i);
			args[i] = names[i];
		}
		args[k] = NULL;
		const char *argv[EXEC_SH_ARGV_MAX];
		int r = exec_sh_argv(argv, EXEC_SH_ARGV_MAX, "s", "n", args);
		if (k + 5 <= EXEC_SH_ARGV_MAX) {
			assert_int_equal(r, 0);
			for (size_t i = 0; i < k; i++)
				assert_ptr_equal(argv[4 + i], args[i]);
			assert_null(argv[4 + k]);
		} else {
			assert_int_equal(r, -E2BIG);
		}
	}
	/* the old copies' size: twelve arguments no longer lose the twelfth */
	const char *small[17];
	const char *twelve[13] = { "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12", NULL };
	assert_int_equal(exec_sh_argv(small, 16, "s", "n", twelve), -E2BIG);
	assert_int_equal(exec_sh_argv(small, 17, "s", "n", twelve), 0);
	assert_string_equal(small[15], "12");
	assert_null(small[16]);
}

/* The wrapper's pid line, cut at every byte: taken whole, the rest left as the command's stderr. */
static void test_pidline(void **state)
{
	static const char in[] = "4242\nboom\n";
	size_t len = sizeof(in) - 1;
	for (size_t step = 1; step <= len; step++) {
		struct exec_pidline pl = { 0 };
		char rest[32];
		size_t nrest = 0;
		for (size_t pos = 0; pos < len; pos += step) {
			size_t n = len - pos < step ? len - pos : step;
			struct guarded g = guarded_copy(in + pos, n);
			size_t k = exec_pidline_feed(&pl, g.p, n);
			assert_true(k <= n);
			memcpy(rest + nrest, g.p + k, n - k);
			nrest += n - k;
			guarded_free(&g);
		}
		assert_true(pl.done);
		assert_int_equal(pl.pid, 4242);
		assert_int_equal(nrest, 5);
		assert_memory_equal(rest, "boom\n", 5);
	}
	/* not a pid (a runtime's message, a pid of 1, too long): no pid, and what follows a long line is kept */
	static const char *const bad[] = { "OCI runtime exec failed\n", "1\n", "x\n", "\n", "-5\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct exec_pidline pl = { 0 };
		size_t k = exec_pidline_feed(&pl, bad[i], strlen(bad[i]));
		assert_true(pl.done);
		assert_int_equal(pl.pid, 0);
		assert_true(k <= strlen(bad[i]));
	}
	struct exec_pidline pl = { 0 };
	assert_int_equal(exec_pidline_feed(&pl, "12345678901234567890", 20), EXEC_PID_LINE_MAX + 1);
	assert_int_equal(exec_pidline_feed(&pl, "more", 4), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_every_count),
		cmocka_unit_test(test_pidline),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
