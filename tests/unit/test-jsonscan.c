/*
 * test-jsonscan.c - the decoding-cost scan: token counts against what jansson
 * builds, the top-level id it finds (and the ids it must not take), \u0000
 * detection, and an estimate that stays above what jansson really allocates.
 * Inputs end at a guard page and are also fed cut at every length, so the
 * scan never reads past what it is given.
 */
#include "testutil.h"

#include <jansson.h>

#include "base/jsonscan.h"

static struct jsonscan scan(const char *text)
{
	size_t n = strlen(text);
	struct jsonscan s;
	/* every prefix too: an input cut anywhere is read within its bounds */
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(text, k);
		jsonscan_measure(g.p, k, &s);
		assert_true(s.id_len == 0 || s.id_start + s.id_len <= k);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(text, n);
	jsonscan_measure(g.p, n, &s);
	guarded_free(&g);
	return s;
}

static void test_counts(void **state)
{
	(void)state;
	struct jsonscan s = scan("{\"a\":[1,2.5e3,true,null,\"x\\\"]y\"],\"b\":{},\"c\":[[]]}");
	assert_int_equal(s.objects, 2);
	assert_int_equal(s.arrays, 3);
	assert_int_equal(s.strings, 4); /* a, the string value, b, c */
	assert_int_equal(s.bare, 4);
	assert_int_equal(s.depth, 3);
	assert_false(s.nul_escape);
	assert_int_equal(s.id_len, 0);

	s = scan("");
	assert_int_equal(s.objects + s.arrays + s.strings + s.bare + s.depth + s.longest, 0);
	assert_int_equal(s.cost, JSONSCAN_COST_BASE);
	s = scan("   \t\r\n");
	assert_int_equal(s.objects + s.arrays + s.strings + s.bare, 0);
	/* closing more than was opened does not wrap the depth */
	s = scan("]]]}}[");
	assert_int_equal(s.depth, 1);
	/* an unterminated string runs to the end; a lone backslash at the end too */
	s = scan("[\"abc\\");
	assert_int_equal(s.strings, 1);
	assert_int_equal(s.arrays, 1);
}

static void test_id(void **state)
{
	(void)state;
	const char *t =
		"{\"jsonrpc\":\"2.0\",\"params\":{\"id\":1,\"x\":[{\"id\":2}]},\"id\" : \"req-7\",\"method\":\"m\"}";
	struct jsonscan s = scan(t);
	assert_int_equal(s.id_len, 7);
	assert_memory_equal(t + s.id_start, "\"req-7\"", 7);

	t = "{\"id\":-42,\"method\":\"ping\"}";
	s = scan(t);
	assert_int_equal(s.id_len, 3);
	assert_memory_equal(t + s.id_start, "-42", 3);

	/* the last of duplicate ids, as jansson keeps */
	t = "{\"id\":1,\"id\":22}";
	s = scan(t);
	assert_memory_equal(t + s.id_start, "22", 2);

	/* not an id: a key named id deeper down, a string value "id", an id in a top-level array, after the end */
	static const char *const none[] = {
		"{\"params\":{\"id\":1}}",
		"{\"method\":\"id\",\"x\":2}",
		"[{\"id\":1}]",
		"{}{\"id\":1}",
		"{\"id\"",
		"{\"id\":",
		"{\"idx\":1}",
		"{\"i\":1}",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		s = scan(none[i]);
		if (s.id_len != 0)
			fail_msg("case %zu (%s): found an id", i, none[i]);
	}
	/* a duplicate that is a container hides the earlier id, as in jansson */
	s = scan("{\"id\":1,\"id\":[1,2,3],\"k\":{}}");
	assert_int_equal(s.id_len, 0);
	/* an id that is a container is found as nothing (no request has one) */
	s = scan("{\"id\":{\"a\":1},\"method\":\"x\"}");
	assert_int_equal(s.id_len, 0);
}

static void test_nul(void **state)
{
	(void)state;
	assert_true(scan("{\"a\":\"x\\u0000y\"}").nul_escape);
	assert_true(scan("{\"a\\u0000\":1}").nul_escape);
	assert_false(scan("{\"a\":\"x\\\\u0000y\"}").nul_escape); /* an escaped backslash, then text */
	assert_false(scan("{\"a\":\"\\u0001\"}").nul_escape);
	assert_false(scan("{\"a\":\"\\u000").nul_escape);
	assert_false(scan("[\\u0000]").nul_escape); /* outside a string: not an escape */
}

/* The estimate stays above jansson's real allocation, for the worst shapes. */
static size_t allocated;
static void *counting_malloc(size_t n)
{
	allocated += n;
	return malloc(n);
}

static void test_cost_bounds_jansson(void **state)
{
	(void)state;
	static const char *const units[] = {
		"{}",	     "[]",
		"0",	     "\"\"",
		"{\"a\":0}", "{\"a\":{}}",
		"[[]]",	     "true",
		"1.5",	     "{\"k1\":1,\"k2\":2,\"k3\":3,\"k4\":4,\"k5\":5,\"k6\":6,\"k7\":7,\"k8\":8,\"k9\":9}"
	};
	json_set_alloc_funcs(counting_malloc, free);
	for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
		size_t ul = strlen(units[u]), count = 20000, n = 0;
		char *text = malloc(count * (ul + 1) + 2);
		assert_non_null(text);
		text[n++] = '[';
		for (size_t i = 0; i < count; i++) {
			memcpy(text + n, units[u], ul);
			n += ul;
			text[n++] = ',';
		}
		text[n - 1] = ']';
		struct jsonscan s;
		jsonscan_measure(text, n, &s);
		allocated = 0;
		json_t *j = json_loadb(text, n, 0, NULL);
		assert_non_null(j);
		if (allocated > s.cost)
			fail_msg("%s: jansson allocated %zu bytes, the estimate was %zu", units[u], allocated, s.cost);
		json_decref(j);
		free(text);
	}
	json_set_alloc_funcs(malloc, free);
}

/* A 60 MB line of [{},{},...] is measured in well under a second, and its cost seen. */
static void test_fast_and_saturating(void **state)
{
	(void)state;
	size_t n = 60u << 20;
	char *text = malloc(n);
	assert_non_null(text);
	text[0] = '[';
	for (size_t i = 1; i + 3 <= n; i += 3)
		memcpy(text + i, "{},", 3);
	struct jsonscan s;
	jsonscan_measure(text, n, &s);
	assert_true(s.objects >= (n - 3) / 3);
	assert_true(s.cost > (size_t)4 << 30);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_nul),
		cmocka_unit_test(test_cost_bounds_jansson),
		cmocka_unit_test(test_fast_and_saturating),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
