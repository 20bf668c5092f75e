/*
 * test-out.c - whole-line writes to stdout, and the digits reals print with:
 * the fewest that read back the same (a progress of 0.331 is 0.331 on the
 * wire, not 0.33100000000000002), never so few that a value changes.
 */
#include "testutil.h"

#include <jansson.h>

#include "base/util.h"
#include "mcp/out.h"

/* What out_send writes for msg (stolen), as a string to free. */
static char *sent(json_t *msg)
{
	int fds[2];
	char buf[4096];
	assert_int_equal(pipe(fds), 0);
	struct out *o = out_create(fds[1]);
	assert_int_equal(out_send_new(o, msg), 0);
	out_destroy(o);
	close(fds[1]);
	ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	assert_true(n > 0);
	buf[n] = '\0';
	return xstrdup(buf);
}

static void test_progress_prints_short(void **state)
{
	char *line = sent(json_pack("{s:f, s:f, s:f}", "progress", 0.331, "total", 2.0, "t", 1.5));
	assert_string_equal(line, "{\"progress\":0.331,\"total\":2.0,\"t\":1.5}\n");
	free(line);
}

/* Every real reads back bit for bit: a value that needs 17 digits gets them. */
static void test_reals_round_trip(void **state)
{
	const double v[] = { 0.1 + 0.2, 1.0 / 3.0, 0.331, 5e-324, 1.7976931348623157e308, 123456.789, 0.001 };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *line = sent(json_pack("[s, {s:[f]}]", "x", "v", v[i]));
		json_error_t e;
		json_t *back = json_loads(line, 0, &e);
		assert_non_null(back);
		double got = json_real_value(json_array_get(json_object_get(json_array_get(back, 1), "v"), 0));
		if (got != v[i])
			fail_msg("%.17g came back as %.17g (line %s)", v[i], got, line);
		json_decref(back);
		free(line);
	}
	json_t *j = json_pack("{s:f}", "a", 0.1 + 0.2);
	assert_int_equal(json_real_digits(j), 17);
	json_decref(j);
	j = json_pack("[i, s, {s:f}]", 1, "s", "a", 0.331);
	assert_int_equal(json_real_digits(j), 15);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_progress_prints_short),
		cmocka_unit_test(test_reals_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
