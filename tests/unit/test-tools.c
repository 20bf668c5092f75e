/*
 * test-tools.c - the published tool schemas. Codex CLI drops minimum,
 * maximum and the length limits from the schemas it shows the model, so
 * every limit must also be in words: each bounded argument's description
 * (or its items' description) names the number.
 */
#include "testutil.h"

#include <pthread.h>
#include <stdbool.h>

#include <jansson.h>

#include "tools/tools.h"

/* Keywords whose value is a limit the model must know; minLength/minItems of 1 read as "non-empty". */
static const char *const bound_keys[] = { "minimum",   "maximum",   "exclusiveMinimum", "exclusiveMaximum",
					  "maxLength", "minLength", "maxItems",		"minItems" };

static int check_props(const char *tool, const char *path, json_t *schema);

/* Whether text has num as a whole number: "128" is not in "1280" nor in "0.128". */
static bool says(const char *text, const char *num)
{
	size_t n = strlen(num);
	for (const char *p = strstr(text, num); p; p = strstr(p + 1, num)) {
		bool before = p > text && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.');
		bool after = (p[n] >= '0' && p[n] <= '9') || (p[n] == '.' && p[n + 1] >= '0' && p[n + 1] <= '9');
		if (!before && !after)
			return true;
	}
	return false;
}

/* Appends a complaint for each limit of schema (and of its items) missing from text. */
static int check_bounds(const char *tool, const char *path, json_t *schema, const char *text)
{
	int bad = 0;
	for (size_t k = 0; k < sizeof(bound_keys) / sizeof(bound_keys[0]); k++) {
		json_t *v = json_object_get(schema, bound_keys[k]);
		if (!json_is_number(v))
			continue;
		double d = json_number_value(v);
		if (d == 1 && (strcmp(bound_keys[k], "minLength") == 0 || strcmp(bound_keys[k], "minItems") == 0))
			continue;
		char num[64];
		snprintf(num, sizeof(num), "%.15g", d);
		if (!says(text, num)) {
			print_message("%s: %s has %s %s, but its description does not say so: \"%s\"\n", tool, path,
				      bound_keys[k], num, text);
			bad++;
		}
	}
	return bad;
}

static int check_props(const char *tool, const char *path, json_t *schema)
{
	json_t *props = json_object_get(schema, "properties");
	const char *name;
	json_t *p;
	int bad = 0;

	json_object_foreach (props, name, p) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s.%s", path, name);
		json_t *items = json_object_get(p, "items");
		char text[8192];
		const char *d1 = json_string_value(json_object_get(p, "description"));
		const char *d2 = json_string_value(json_object_get(items, "description"));
		snprintf(text, sizeof(text), "%s %s", d1 ? d1 : "", d2 ? d2 : "");
		bad += check_bounds(tool, sub, p, text);
		if (json_is_object(items)) {
			bad += check_bounds(tool, sub, items, text);
			bad += check_props(tool, sub, items);
		}
		bad += check_props(tool, sub, p);
	}
	return bad;
}

static void test_limits_in_descriptions(void **state)
{
	struct err e;
	assert_int_equal(tools_init(&e), 0);
	json_t *list = tools_list_json(TOOL_GROUP_ALL, "2025-11-25");
	json_t *tools = list; /* the tools array of tools/list */
	assert_true(json_array_size(tools) > 10);
	size_t i;
	json_t *t;
	int bad = 0;
	json_array_foreach (tools, i, t) {
		const char *name = json_string_value(json_object_get(t, "name"));
		bad += check_props(name, "arguments", json_object_get(t, "inputSchema"));
	}
	json_decref(list);
	tools_finish();
	if (bad)
		fail_msg("%d limits are only in the schema keywords (see above)", bad);
}

#define RACERS 8

static void *racer(void *arg)
{
	struct err e;
	*(int *)arg = tools_init(&e);
	return NULL;
}

/* The schemas are parsed at the first tools/list or call: two at once parse once, and neither sees half. */
static void test_init_concurrent(void **state)
{
	pthread_t th[RACERS];
	int r[RACERS];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < RACERS; i++) {
			r[i] = 1;
			assert_int_equal(pthread_create(&th[i], NULL, racer, &r[i]), 0);
		}
		const json_t *first = NULL;
		for (int i = 0; i < RACERS; i++) {
			assert_int_equal(pthread_join(th[i], NULL), 0);
			assert_int_equal(r[i], 0);
		}
		/* every tool's schema is there, the same one for every caller */
		for (size_t i = 0; i < tools_count(); i++) {
			const json_t *in = tools_input_schema(tools_at(i));
			assert_non_null(in);
			assert_true(json_is_object(json_object_get(in, "properties")));
		}
		first = tools_input_schema(tools_at(0));
		struct err e;
		assert_int_equal(tools_init(&e), 0);
		assert_ptr_equal(first, tools_input_schema(tools_at(0)));
		tools_finish(); /* and parsed again by the next round */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limits_in_descriptions),
		cmocka_unit_test(test_init_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
