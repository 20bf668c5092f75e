/*
 * test-engines.c - SANDBOX_ENGINES and --engine: the list parsed whole, at
 * every length and ending at a guard page, hostile names and endpoints, the
 * flag's repetition, and the engine set (names, endpoints without secrets,
 * the refusal of an unknown name).
 */
#include "testutil.h"

#include <errno.h>

#include "base/util.h"
#include "config/config.h"
#include "engine/engine.h"
#include "engine/engines.h"

static const char LIST[] = " a=unix:///run/a.sock; b-2=tcp://127.0.0.1:2376 ;;c_3=ssh://me@box:22;"
			   "gpu=context:remote ";

static void test_parse(void **state)
{
	struct engines_spec sp[ENGINES_MAX];
	size_t n = 99;
	struct err e;

	assert_int_equal(engines_parse(LIST, strlen(LIST), sp, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_string_equal(sp[0].name, "a");
	assert_string_equal(sp[0].endpoint, "unix:///run/a.sock");
	assert_string_equal(sp[1].name, "b-2");
	assert_string_equal(sp[1].endpoint, "tcp://127.0.0.1:2376");
	assert_string_equal(sp[2].endpoint, "ssh://me@box:22");
	assert_string_equal(sp[3].endpoint, "context:remote");
	assert_int_equal(engines_parse("", 0, sp, &n, &e), 0);
	assert_int_equal(n, 0);
	assert_int_equal(engines_parse(" ; ;", 4, sp, &n, &e), 0);
	assert_int_equal(n, 0);

	/* every prefix, at a guard page: 0 or -EINVAL, never a read past the end */
	for (size_t k = 0; k <= strlen(LIST); k++) {
		struct guarded g = guarded_copy(LIST, k);
		int r = engines_parse(g.p, k, sp, &n, &e);
		assert_true(r == 0 || r == -EINVAL);
		guarded_free(&g);
	}
}

static void test_hostile(void **state)
{
	struct engines_spec sp[ENGINES_MAX];
	size_t n;
	struct err e;
	static const struct {
		const char *list;
		const char *says;
	} bad[] = {
		{ "a=unix:///x;a=tcp://h:1", "given twice" },
		{ "default=unix:///x", "DOCKER_HOST's engine" },
		{ "A=unix:///x", "a-z" },
		{ "a b=unix:///x", "a-z" },
		{ "a.b=unix:///x", "a-z" },
		{ "=unix:///x", "NAME=ENDPOINT" },
		{ "a", "NAME=ENDPOINT" },
		{ "a=", "needs an endpoint" },
		{ "a=http://h:1", "not an endpoint" },
		{ "a=/run/docker.sock", "not an endpoint" },
		{ "a=tcp://h:1 x", "space" },
		{ "a=tcp://h:1\x01", "space or a control" },
		{ "a=context:../x", "Docker context" },
		{ "a=context:", "Docker context" },
		{ "abcdefghijabcdefghijabcdefghijabc=unix:///x", "NAME=ENDPOINT" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		err_clear(&e);
		assert_int_equal(engines_parse(bad[i].list, strlen(bad[i].list), sp, &n, &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
		if (!strstr(e.msg, bad[i].says))
			fail_msg("'%s': '%s' does not say '%s'", bad[i].list, e.msg, bad[i].says);
	}
	/* a NUL inside the given length is a control character, not an end */
	const char nul[] = "a=tcp://h:1\0;b=unix:///x";
	assert_int_equal(engines_parse(nul, sizeof(nul) - 1, sp, &n, &e), -EINVAL);
	/* the cap on entries, and on the whole list */
	char many[ENGINES_MAX * 32 + 64] = "";
	for (int i = 0; i <= ENGINES_MAX; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "e%d=unix:///s%d;", i, i);
	assert_int_equal(engines_parse(many, strlen(many), sp, &n, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "more than"));
	char *huge = malloc(ENGINES_LIST_MAX + 2);
	memset(huge, ';', ENGINES_LIST_MAX + 1);
	assert_int_equal(engines_parse(huge, ENGINES_LIST_MAX + 1, sp, &n, &e), -EINVAL);
	free(huge);
	char longep[ENGINES_ENDPOINT_MAX + 32];
	int k = snprintf(longep, sizeof(longep), "a=unix:///");
	memset(longep + k, 'x', ENGINES_ENDPOINT_MAX);
	longep[k + ENGINES_ENDPOINT_MAX - 7] = '\0'; /* an endpoint of ENGINES_ENDPOINT_MAX + 1 */
	assert_int_equal(engines_parse(longep, strlen(longep), sp, &n, &e), -EINVAL);

	assert_true(engines_name_valid("gpu-1_b"));
	assert_false(engines_name_valid(""));
	assert_false(engines_name_valid("Gpu"));
	assert_false(engines_name_valid("a/b"));
}

static void test_redact(void **state)
{
	char out[128];

	engines_redact("tcp://user:secret@host:2376", out, sizeof(out));
	assert_string_equal(out, "tcp://user:***@host:2376");
	engines_redact("ssh://me@box:22", out, sizeof(out));
	assert_string_equal(out, "ssh://me@box:22");
	engines_redact("tcp://127.0.0.1:2376", out, sizeof(out));
	assert_string_equal(out, "tcp://127.0.0.1:2376");
	engines_redact("unix:///a:b@c", out, sizeof(out));
	assert_string_equal(out, "unix:///a:b@c");
	engines_redact("context:x", out, sizeof(out));
	assert_string_equal(out, "context:x");
}

static void test_flags_and_set(void **state)
{
	struct config c;
	struct err e;
	int next;
	char *envp[] = { "SANDBOX_ENGINES=old=unix:///old.sock", "DOCKER_HOST=unix:///nonexistent/d.sock",
			 "HOME=/nonexistent", NULL };
	char *argv[] = { "sandbox-mcp", "--engine", "b=unix:///nonexistent/b.sock", "--engine=c=tcp://u:pw@127.0.0.1:9",
			 NULL };

	/* the first flag replaces the variable, the next adds to it */
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 4, argv, 1, &next, &e), 0);
	assert_string_equal(c.engines, "b=unix:///nonexistent/b.sock;c=tcp://u:pw@127.0.0.1:9");
	struct engines *es = NULL;
	assert_int_equal(engines_open(&c, envp, 1000, &es, &e), 0);
	assert_int_equal(engines_count(es), 3);
	assert_string_equal(engines_name(es, 0), "default");
	assert_string_equal(engines_endpoint(es, 0), "unix:///nonexistent/d.sock");
	assert_string_equal(engines_name(es, 2), "c");
	assert_string_equal(engines_endpoint(es, 2), "tcp://u:***@127.0.0.1:9");
	assert_ptr_equal(engines_default(es), engines_at(es, 0));
	struct engine *eng = NULL;
	const char *name = NULL;
	assert_int_equal(engines_find(es, NULL, &eng, &name, &e), 0);
	assert_ptr_equal(eng, engines_at(es, 0));
	assert_int_equal(engines_find(es, "b", &eng, &name, &e), 0);
	assert_ptr_equal(eng, engines_at(es, 1));
	assert_string_equal(name, "b");
	/* the engine's failures name it */
	assert_non_null(strstr(engine_endpoint(eng)->display, "(engine 'b')"));
	assert_int_equal(engines_find(es, "tcp://evil:1", &eng, &name, &e), -ENOENT);
	assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
	assert_non_null(strstr(e.msg, "default, b, c"));
	engines_destroy(es);
	config_finish(&c);

	/* duplicates and bad names stop the server at start (engines_open, before serving) */
	char *dup[] = { "sandbox-mcp", "--engine", "b=unix:///x", "--engine", "b=unix:///y", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 5, dup, 1, &next, &e), 0);
	assert_int_equal(engines_open(&c, envp, 1000, &es, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "given twice"));
	config_finish(&c);
	char *envbad[] = { "SANDBOX_ENGINES=Big=unix:///x", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, envbad, 1, argv, 1, &next, &e), 0);
	assert_int_equal(engines_open(&c, envbad, 1000, &es, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "a-z"));
	config_finish(&c);

	/* an endpoint DOCKER_HOST would refuse is refused when the engines open, naming the engine */
	char *envrel[] = { "SANDBOX_ENGINES=rel=unix://relative.sock", "HOME=/nonexistent", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, envrel, 1, argv, 1, &next, &e), 0);
	assert_int_equal(engines_open(&c, envrel, 1000, &es, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "engine 'rel'"));
	config_finish(&c);
	/* a context that does not exist */
	char *envctx[] = { "SANDBOX_ENGINES=x=context:nosuch", "HOME=/nonexistent", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, envctx, 1, argv, 1, &next, &e), 0);
	assert_true(engines_open(&c, envctx, 1000, &es, &e) < 0);
	assert_non_null(strstr(e.msg, "engine 'x'"));
	config_finish(&c);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_flags_and_set),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
