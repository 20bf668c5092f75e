/*
 * test-ceiling.c - session_create's memory and CPUs against the operator's
 * ceilings and the floors: defaults, less, the ceiling itself, hostile
 * values past it, integral reals, and a config never loaded (ceilings 0).
 */
#include "testutil.h"

#include <errno.h>

#include "config/config.h"
#include "sandbox/ceiling.h"

static int ask(const struct config *c, const char *args, uint64_t *mb, double *cpus, struct err *e)
{
	json_t *j = json_loads(args, 0, NULL);
	assert_non_null(j);
	int r = ceiling_session(c, json_object_get(j, "memory_mb"), json_object_get(j, "cpus"), mb, cpus, e);
	json_decref(j);
	return r;
}

static void test_ceilings(void **state)
{
	struct config c;
	struct err e;
	uint64_t mb = 7;
	double cpus = 7;
	char *envp[] = { "SANDBOX_MAX_MEMORY_MB=1024", NULL };
	char *argv[] = { "x", NULL };
	int next;

	config_init(&c);
	assert_int_equal(config_load(&c, envp, 1, argv, 1, &next, &e), 0);
	assert_int_equal(c.max_memory_mb, 1024);
	assert_true(c.max_cpus == 1.0); /* unset: the default is the ceiling */

	assert_int_equal(ask(&c, "{}", &mb, &cpus, &e), 0);
	assert_int_equal(mb, 512);
	assert_true(cpus == 1.0);
	assert_int_equal(ask(&c, "{\"memory_mb\":1024,\"cpus\":0.25}", &mb, &cpus, &e), 0);
	assert_int_equal(mb, 1024);
	assert_true(cpus == 0.25);
	assert_int_equal(ask(&c, "{\"memory_mb\":16.0}", &mb, &cpus, &e), 0);
	assert_int_equal(mb, 16);

	const struct {
		const char *args, *want;
	} bad[] = {
		{ "{\"memory_mb\":1048576}", "ceiling of 1024 MB" },
		{ "{\"memory_mb\":1025}", "SANDBOX_MAX_MEMORY_MB" },
		{ "{\"memory_mb\":9223372036854775807}", "ceiling of 1024 MB" },
		{ "{\"memory_mb\":-1}", "below 16 MB" },
		{ "{\"memory_mb\":15}", "below 16 MB" },
		{ "{\"memory_mb\":100.5}", "whole number" },
		{ "{\"memory_mb\":1e300}", "whole number" },
		{ "{\"cpus\":1.01}", "SANDBOX_MAX_CPUS" },
		{ "{\"cpus\":256}", "ceiling of 1" },
		{ "{\"cpus\":0.001}", "below 0.01" },
		{ "{\"cpus\":-3}", "below 0.01" },
		{ "{\"cpus\":\"2\"}", "below 0.01" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		mb = 7;
		assert_int_equal(ask(&c, bad[i].args, &mb, &cpus, &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
		if (!strstr(e.msg, bad[i].want))
			fail_msg("%s: '%s' lacks '%s'", bad[i].args, e.msg, bad[i].want);
		assert_int_equal(mb, 7); /* outputs untouched on failure */
	}
	config_finish(&c);
}

static void test_unloaded_config(void **state)
{
	struct config c;
	struct err e;
	uint64_t mb;
	double cpus;

	config_init(&c); /* ceilings 0: the defaults stand in for them */
	assert_int_equal(ask(&c, "{\"memory_mb\":512,\"cpus\":1}", &mb, &cpus, &e), 0);
	assert_int_equal(ask(&c, "{\"memory_mb\":513}", &mb, &cpus, &e), -EINVAL);
	config_finish(&c);
}

static void test_config_ceiling_below_default(void **state)
{
	struct config c;
	struct err e;
	char *envp[] = { "SANDBOX_MEMORY_MB=2048", "SANDBOX_MAX_MEMORY_MB=1024", NULL };
	char *envp2[] = { "SANDBOX_CPUS=2", "SANDBOX_MAX_CPUS=1", NULL };
	char *envp3[] = { "SANDBOX_MEMORY_MB=2048", NULL };
	char *argv[] = { "x", NULL };
	int next;

	config_init(&c);
	assert_int_equal(config_load(&c, envp, 1, argv, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "SANDBOX_MAX_MEMORY_MB"));
	config_finish(&c);
	config_init(&c);
	assert_int_equal(config_load(&c, envp2, 1, argv, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "SANDBOX_MAX_CPUS"));
	config_finish(&c);
	config_init(&c);
	assert_int_equal(config_load(&c, envp3, 1, argv, 1, &next, &e), 0);
	assert_int_equal(c.max_memory_mb, 2048);
	json_t *j = config_to_json(&c);
	assert_int_equal(json_integer_value(json_object_get(j, "max_memory_mb")), 2048);
	assert_int_equal(json_integer_value(json_object_get(j, "output_save_mb")), 8);
	json_decref(j);
	config_finish(&c);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ceilings),
		cmocka_unit_test(test_unloaded_config),
		cmocka_unit_test(test_config_ceiling_below_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
