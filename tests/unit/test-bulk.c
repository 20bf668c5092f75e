/*
 * test-bulk.c - big string values of a JSON line: which strings bulk_find
 * picks (values, not keys; escaped quotes inside), which bodies bulk_check
 * accepts (exactly jansson's choice, case by case), and what bulk_decode
 * makes of them (jansson's string, byte for byte).  Inputs end at a guard page.
 */
#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "testutil.h"

#include "mcp/bulk.h"

static int find_guarded(const char *text, size_t min, struct bulk_span *spans, int max)
{
	struct guarded g = guarded_copy(text, strlen(text));
	int n = bulk_find(g.p, strlen(text), min, spans, max);
	guarded_free(&g);
	return n;
}

static void test_find(void **state)
{
	(void)state;
	struct bulk_span s[4];
	const char
		*t = "{\"content\" : \"abcdef\", \"a\\\"quoted\\\"key\":\"x\\\"y\\\\\",\"list\":[\"123456\",\"12\"]}";

	assert_int_equal(find_guarded(t, 5, s, 4), 3);
	assert_memory_equal(t + s[0].start, "abcdef", 6);
	assert_int_equal(s[0].len, 6);
	assert_memory_equal(t + s[1].start, "x\\\"y\\\\", 6); /* escaped quote and backslash stay inside */
	assert_memory_equal(t + s[2].start, "123456", 6);
	/* at most max, in order */
	assert_int_equal(find_guarded(t, 5, s, 1), 1);
	assert_memory_equal(t + s[0].start, "abcdef", 6);
	/* keys are never picked, whatever their length; unterminated strings neither */
	assert_int_equal(find_guarded("{\"a-very-long-key\"\n :1}", 3, s, 4), 0);
	assert_int_equal(find_guarded("[\"abcdef", 1, s, 4), 0);
	assert_int_equal(find_guarded("\"ab\\", 1, s, 4), 0);
}

/* bulk_check must agree with jansson on the body, and bulk_decode give jansson's string. */
static void agree(const char *body, size_t n)
{
	char *doc = malloc(n + 2);
	assert_non_null(doc);
	doc[0] = '"';
	memcpy(doc + 1, body, n);
	doc[n + 1] = '"';
	json_error_t jerr;
	json_t *j = json_loadb(doc, n + 2, JSON_DECODE_ANY, &jerr);

	struct guarded g = guarded_copy(body, n);
	int ok = bulk_check(g.p, n);
	if (!j) {
		if (ok == 0)
			fail_msg("bulk_check accepted what jansson refuses: %.*s (%s)", (int)n, body, jerr.text);
	} else {
		if (ok != 0)
			fail_msg("bulk_check refused what jansson accepts: %.*s", (int)n, body);
		size_t len = bulk_decode(g.p, n);
		assert_int_equal(len, json_string_length(j));
		assert_memory_equal(g.p, json_string_value(j), len);
	}
	guarded_free(&g);
	json_decref(j);
	free(doc);
}

static void test_check_and_decode(void **state)
{
	(void)state;
	static const char *const cases[] = {
		"",
		"plain",
		"a\\nb\\tc\\r\\b\\f\\/\\\\\\\"",
		"\\u0041\\u00e9\\u20AC",
		"\\ud83d\\ude00 smile",
		"h\xc3\xa9llo w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80",
		"\x7f del is fine",
		/* refused */
		"\\u0000",
		"\\ud83d",
		"\\ud83d\\u0041",
		"\\ude00",
		"\\ud83dx",
		"\\u12",
		"\\u12G4",
		"\\x",
		"\\",
		"a\"b",
		"tab\there",
		"nl\nhere",
		"\x80",
		"\xc0\x80",
		"\xc1\xbf",
		"\xe0\x80\x80",
		"\xed\xa0\x80",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"\xc3",
		"\xe2\x82",
		"\xf0\x9f\x98",
		"\xc3\x28",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		agree(cases[i], strlen(cases[i]));
}

/* Every two-byte body and every escape with every fourth hex digit: same verdict as jansson. */
static void test_exhaustive_small(void **state)
{
	(void)state;
	for (int a = 1; a < 256; a++)
		for (int b = 1; b < 256; b++) {
			char body[2] = { (char)a, (char)b };
			agree(body, 2);
		}
	for (int c = 1; c < 256; c++) {
		char body[6] = { '\\', 'u', 'd', '8', '3', (char)c };
		agree(body, 6);
		char pair[12] = { '\\', 'u', 'd', '8', '3', 'd', '\\', 'u', 'd', 'e', '0', (char)c };
		agree(pair, 12);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_check_and_decode),
		cmocka_unit_test(test_exhaustive_small),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
