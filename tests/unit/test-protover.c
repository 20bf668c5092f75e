/*
 * test-protover.c - the protocol version table: every version the server
 * speaks is known, initialize negotiates the legacy ones only, and results
 * are structured from 2025-06-18 on, the modern protocol included.
 */
#include <string.h>

#include "testutil.h"

#include "base/protover.h"

static void test_known(void **state)
{
	(void)state;
	const char *speaks[] = { "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };
	for (size_t i = 0; i < sizeof(speaks) / sizeof(speaks[0]); i++)
		assert_true(protover_known(speaks[i]));
	const char * not [] = { "", "2025-11-2", "2025-11-250", "2024-10-07", "2026-07-29", "latest" };
	for (size_t i = 0; i < sizeof(not ) / sizeof(not [0]); i++)
		assert_false(protover_known(not [i]));
	assert_false(protover_known(NULL));
}

static void test_legacy(void **state)
{
	(void)state;
	size_t n;
	const char *const *l = protover_legacy(&n);
	assert_int_equal(n, 4);
	assert_string_equal(l[0], PROTOVER_LEGACY_NEWEST);
	for (size_t i = 1; i < n; i++)
		assert_true(strcmp(l[i - 1], l[i]) > 0); /* newest first */
	assert_ptr_equal(protover_legacy_find("2025-03-26"), l[2]);
	assert_null(protover_legacy_find(PROTOVER_MODERN)); /* stateless: never negotiated */
	assert_null(protover_legacy_find("2025-03-2"));
	assert_null(protover_legacy_find(NULL));
}

static void test_structured(void **state)
{
	(void)state;
	assert_true(protover_structured(PROTOVER_MODERN));
	assert_true(protover_structured("2025-11-25"));
	assert_true(protover_structured("2025-06-18"));
	assert_false(protover_structured("2025-03-26"));
	assert_false(protover_structured("2024-11-05"));
	assert_false(protover_structured(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_legacy),
		cmocka_unit_test(test_structured),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
