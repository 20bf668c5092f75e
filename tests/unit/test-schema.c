/*
 * test-schema.c - argument validation and the schema lint, plus a lint of
 * every schema in the real tool table.
 */
#include "testutil.h"

#include <errno.h>

#include "tools/schema.h"
#include "tools/tools.h"

static const char schema_text[] =
	"{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"code\"],\"properties\":{"
	"\"code\":{\"type\":\"string\",\"maxLength\":10,\"minLength\":1},"
	"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":600},"
	"\"cpus\":{\"type\":\"number\"},"
	"\"fresh\":{\"type\":\"boolean\"},"
	"\"mode\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},"
	"\"env\":{\"type\":\"object\",\"properties\":{}},"
	"\"opts\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{\"a\":{\"type\":\"integer\"}}},"
	"\"pkgs\":{\"type\":\"array\",\"maxItems\":2,\"items\":{\"type\":\"string\"}},"
	"\"sizes\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}}}";

static int check(const char *args, char *msg, size_t msgsz)
{
	json_t *schema = json_loads(schema_text, 0, NULL);
	json_t *v = json_loads(args, JSON_DECODE_ANY, NULL);
	struct err e;
	err_clear(&e);
	assert_non_null(schema);
	assert_non_null(v);
	int r = schema_validate(schema, v, &e);
	snprintf(msg, msgsz, "%s", e.msg);
	json_decref(schema);
	json_decref(v);
	return r;
}

static void test_valid(void **state)
{
	char msg[ERR_MSG_MAX];
	assert_int_equal(check("{\"code\":\"x\"}", msg, sizeof(msg)), 0);
	assert_int_equal(check("{\"code\":\"x\",\"timeout_s\":5,\"cpus\":0.5,\"fresh\":true,\"mode\":\"b\","
			       "\"env\":{\"A\":\"1\"},\"pkgs\":[\"a\",\"b\"]}",
			       msg, sizeof(msg)),
			 0);
	assert_int_equal(check("{\"code\":\"x\",\"timeout_s\":5.0}", msg, sizeof(msg)), 0);
}

/*
 * Clients add top-level arguments of their own (Gemini CLI: wait_for_previous
 * on every call): ignored, while the schema still says additionalProperties:false.
 */
static void test_client_additions(void **state)
{
	char msg[ERR_MSG_MAX];
	const char *ok[] = {
		"{\"code\":\"x\",\"wait_for_previous\":true}",
		"{\"code\":\"x\",\"extra\":1}",
		"{\"code\":\"x\",\"zz\":null,\"_meta\":{\"a\":1}}",
		"{\"code\":\"x\",\"\":1}",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (check(ok[i], msg, sizeof(msg)) != 0)
			fail_msg("case %zu (%s) refused: %s", i, ok[i], msg);
	}
	/* hostile: a 100 kB name is neither close to anything nor echoed whole */
	size_t n = 100000;
	char *big = malloc(n + 32);
	assert_non_null(big);
	const char *head = "{\"code\":\"x\",\"";
	size_t h = strlen(head);
	memcpy(big, head, h);
	memset(big + h, 't', n);
	memcpy(big + h + n, "\":1}", 5);
	assert_int_equal(check(big, msg, sizeof(msg)), 0);
	memcpy(big + h, "timeou_s\":1}", 13); /* a typo next to a known name */
	assert_int_equal(check(big, msg, sizeof(msg)), -EINVAL);
	assert_non_null(strstr(msg, "did you mean 'timeout_s'?"));
	free(big);
}

static void test_invalid(void **state)
{
	char msg[ERR_MSG_MAX];
	struct {
		const char *args;
		const char *want;
	} cases[] = {
		{ "{}", "arguments.code is required" },
		{ "{\"code\":5}", "arguments.code must be a string, not an integer" },
		{ "{\"code\":\"\"}", "at least 1" },
		{ "{\"code\":\"01234567890\"}", "at most 10 bytes" },
		{ "{\"code\":\"x\",\"timeout_s\":0}", "arguments.timeout_s must be at least 1" },
		{ "{\"code\":\"x\",\"timeout_s\":601}", "at most 600" },
		{ "{\"code\":\"x\",\"timeout_s\":1.5}", "must be an integer" },
		{ "{\"code\":\"x\",\"timeout_s\":1e300}", "must be an integer" },
		{ "{\"code\":\"x\",\"timeout_s\":-1e300}", "must be an integer" },
		{ "{\"code\":\"x\",\"timeout_s\":9.3e18}", "must be an integer" },
		{ "{\"code\":\"x\",\"sizes\":[1,2.5]}", "arguments.sizes[1] must be an integer" },
		{ "{\"code\":\"x\",\"mode\":\"c\"}", "must be one of: a, b" },
		{ "{\"code\":\"x\",\"pkgs\":[\"a\",1]}", "arguments.pkgs[1] must be a string" },
		{ "{\"code\":\"x\",\"pkgs\":[\"a\",\"b\",\"c\"]}", "at most 2 items" },
		/* a close misspelling of a known argument is refused, naming it */
		{ "{\"code\":\"x\",\"timeout\":5}", "unknown argument 'arguments.timeout': did you mean 'timeout_s'?" },
		{ "{\"code\":\"x\",\"Timeout_S\":5}", "did you mean 'timeout_s'?" },
		{ "{\"code\":\"x\",\"timeuot_s\":5}", "did you mean 'timeout_s'?" },
		{ "{\"code\":\"x\",\"timeout-s\":5}", "did you mean 'timeout_s'?" },
		{ "{\"code\":\"x\",\"cpu\":1}", "did you mean 'cpus'?" },
		{ "{\"code\":\"x\",\"CODE\":\"y\"}", "did you mean 'code'?" },
		{ "{\"code\":\"x\",\"modes\":\"a\"}", "did you mean 'mode'?" },
		/* nested objects with additionalProperties:false still refuse every unknown name */
		{ "{\"code\":\"x\",\"opts\":{\"a\":1,\"zzz\":2}}", "unknown argument 'arguments.opts.zzz'" },
		{ "[]", "must be an object" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(check(cases[i].args, msg, sizeof(msg)), -EINVAL);
		if (!strstr(msg, cases[i].want))
			fail_msg("case %zu: '%s' does not contain '%s'", i, msg, cases[i].want);
	}
}

/* A whole-number real where an integer is wanted is read as that integer, not as 0. */
static void test_integral_reals(void **state)
{
	json_t *schema = json_loads(schema_text, 0, NULL);
	json_t *v = json_loads("{\"code\":\"x\",\"timeout_s\":600.0,\"cpus\":2.0,\"sizes\":[4096.0,1e3,-0.0,7]}", 0,
			       NULL);
	struct err e;
	err_clear(&e);
	assert_non_null(schema);
	assert_non_null(v);
	assert_int_equal(schema_validate(schema, v, &e), 0);
	json_t *t = json_object_get(v, "timeout_s");
	assert_true(json_is_integer(t));
	assert_int_equal(json_integer_value(t), 600);
	assert_true(json_is_real(json_object_get(v, "cpus"))); /* a number stays a number */
	json_t *sizes = json_object_get(v, "sizes");
	assert_true(json_is_integer(json_array_get(sizes, 0)));
	assert_int_equal(json_integer_value(json_array_get(sizes, 0)), 4096);
	assert_int_equal(json_integer_value(json_array_get(sizes, 1)), 1000);
	assert_true(json_is_integer(json_array_get(sizes, 2)));
	assert_int_equal(json_integer_value(json_array_get(sizes, 2)), 0);
	assert_int_equal(json_integer_value(json_array_get(sizes, 3)), 7);
	json_decref(v);
	json_decref(schema);
}

static void test_lint(void **state)
{
	struct err e;
	json_t *ok = json_loads(schema_text, 0, NULL);
	assert_int_equal(schema_lint(ok, &e), 0);
	json_decref(ok);
	json_t *bad = json_loads("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\"}}}", 0, NULL);
	assert_int_equal(schema_lint(bad, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "array without items"));
	json_decref(bad);
	bad = json_loads("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"object\"}}}", 0, NULL);
	assert_int_equal(schema_lint(bad, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "object without properties"));
	json_decref(bad);
}

static void test_tool_table(void **state)
{
	struct err e;
	err_clear(&e);
	if (tools_init(&e) < 0)
		fail_msg("tools_init: %s", e.msg);
	assert_true(tools_count() > 0);
	for (size_t i = 0; i < tools_count(); i++) {
		const struct tool_entry *t = tools_at(i);
		assert_non_null(t->name);
		assert_non_null(t->title);
		assert_true(strlen(t->description) > 40);
		assert_non_null(t->handler);
		assert_ptr_equal(tools_find(t->name, TOOL_GROUP_ALL), t);
		assert_null(tools_find(t->name, 0));
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(tools_at(k)->name, t->name);
	}
	json_t *list = tools_list_json(TOOL_GROUP_ALL, "2025-11-25");
	assert_int_equal(json_array_size(list), tools_count());
	json_t *t0 = json_array_get(list, 0);
	assert_non_null(json_object_get(t0, "title"));
	assert_non_null(json_object_get(json_object_get(json_object_get(t0, "outputSchema"), "properties"), "error"));
	json_decref(list);
	list = tools_list_json(TOOL_GROUP_ALL, "2024-11-05");
	assert_null(json_object_get(json_array_get(list, 0), "outputSchema"));
	assert_null(json_object_get(json_array_get(list, 0), "title"));
	json_decref(list);
	tools_finish();
}

/*
 * The server instructions come from the tool table: each sentence is said
 * only when its tool is offered, and names the tool it belongs to (so a
 * sentence cannot sit on the wrong entry).
 */
static void test_instructions(void **state)
{
	const char *preamble = "sandbox-mcp runs code in Docker containers";
	char *all = tools_instructions(TOOL_GROUP_ALL);
	size_t said = 0;

	assert_true(strncmp(all, preamble, strlen(preamble)) == 0);
	for (size_t i = 0; i < tools_count(); i++) {
		const struct tool_entry *t = tools_at(i);
		if (!t->instructions)
			continue;
		said++;
		assert_non_null(strstr(all, t->instructions));
		assert_non_null(strstr(t->instructions, t->name));
		char *alone = tools_instructions(t->group);
		assert_non_null(strstr(alone, t->instructions));
		free(alone);
		/* another group only: this tool's sentences are not said */
		for (unsigned g = 1; g & TOOL_GROUP_ALL; g <<= 1) {
			if (g == t->group)
				continue;
			char *other = tools_instructions(g);
			assert_null(strstr(other, t->instructions));
			free(other);
		}
	}
	assert_true(said >= 7);
	free(all);
	char *none = tools_instructions(0);
	assert_string_equal(none,
			    "sandbox-mcp runs code in Docker containers (sessions) on this machine: no network, a "
			    "non-root user, memory/CPU/process limits. Files live in /workspace.");
	free(none);
}

static void test_lossy(void **state)
{
	json_t *s = json_string_lossy("ok\xff\xfe"
				      "a\xc3\xa9"
				      "\xe2\x82",
				      9);
	assert_string_equal(json_string_value(s), "ok\xEF\xBF\xBD\xEF\xBF\xBD"
						  "a\xc3\xa9\xEF\xBF\xBD\xEF\xBF\xBD");
	json_decref(s);
	s = json_string_lossy("a\0b", 3);
	assert_int_equal(json_string_length(s), 3);
	json_decref(s);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),	       cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_integral_reals), cmocka_unit_test(test_client_additions),
		cmocka_unit_test(test_lint),	       cmocka_unit_test(test_tool_table),
		cmocka_unit_test(test_instructions),   cmocka_unit_test(test_lossy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
