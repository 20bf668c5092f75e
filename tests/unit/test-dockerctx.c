/*
 * test-dockerctx.c - Docker context files: meta.json and config.json parsed
 * byte by byte and with hostile values, names, the sha256 layout the CLI
 * uses on disk, and the CLI's order of DOCKER_HOST, DOCKER_CONTEXT, --context
 * and currentContext.
 */
#include "testutil.h"

#include <errno.h>
#include <sys/stat.h>

#include "config/config.h"
#include "config/dockerctx.h"

static const char META[] =
	"{\"Name\":\"remote\",\"Metadata\":{},\"Endpoints\":{\"docker\":{\"Host\":\"tcp://127.0.0.1:2376\","
	"\"SkipTLSVerify\":false}}}";

static void test_meta(void **state)
{
	struct dockerctx d;
	struct err e;

	assert_int_equal(dockerctx_parse_meta("remote", META, strlen(META), &d, &e), 0);
	assert_string_equal(d.host, "tcp://127.0.0.1:2376");
	assert_false(d.skip_tls_verify);
	const char skip[] = "{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\",\"SkipTLSVerify\":true}}}";
	assert_int_equal(dockerctx_parse_meta("x1", skip, strlen(skip), &d, &e), 0);
	assert_true(d.skip_tls_verify);
	/* every truncation is refused, none crashes or reads past len */
	for (size_t n = 0; n < strlen(META); n++) {
		char *b = malloc(n ? n : 1);
		memcpy(b, META, n);
		assert_int_equal(dockerctx_parse_meta("remote", b, n, &d, &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
		free(b);
	}
	static const char *const bad[] = {
		"[]",
		"{}",
		"{\"Endpoints\":{\"docker\":{\"Host\":\"\"}}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":5}}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://a\\u0000b\"}}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\",\"SkipTLSVerify\":\"yes\"}}}",
		"{\"Name\":\"other\",\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\"}}}",
		"{\"Name\":1,\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\"}}}",
		"{\"Endpoints\":{\"docker\":{\"Host\":\"tcp://h:1\"},\"docker\":{\"Host\":\"tcp://evil:1\"}}}",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(dockerctx_parse_meta("remote", bad[i], strlen(bad[i]), &d, &e), -EINVAL);
	char *huge = malloc(DOCKERCTX_HOST_MAX + 100);
	int k = snprintf(huge, 100, "{\"Endpoints\":{\"docker\":{\"Host\":\"");
	memset(huge + k, 'a', DOCKERCTX_HOST_MAX + 1);
	strcpy(huge + k + DOCKERCTX_HOST_MAX + 1, "\"}}}");
	assert_int_equal(dockerctx_parse_meta("remote", huge, strlen(huge), &d, &e), -EINVAL);
	free(huge);
	assert_int_equal(dockerctx_parse_meta("remote", META, DOCKERCTX_FILE_MAX + 1, &d, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "larger than"));
}

static void test_current_and_names(void **state)
{
	char name[DOCKERCTX_NAME_MAX + 1];
	struct err e;
	const char cfg[] = "{\"auths\":{},\"currentContext\":\"remote\"}";

	assert_int_equal(dockerctx_parse_current(cfg, strlen(cfg), name, sizeof(name), &e), 0);
	assert_string_equal(name, "remote");
	assert_int_equal(dockerctx_parse_current("{}", 2, name, sizeof(name), &e), 0);
	assert_string_equal(name, "");
	for (size_t n = 0; n < strlen(cfg); n++)
		assert_int_equal(dockerctx_parse_current(cfg, n, name, sizeof(name), &e), -EINVAL);
	const char *const bad[] = { "{\"currentContext\":3}", "{\"currentContext\":\"../x\"}",
				    "{\"currentContext\":\"a/b\"}", "[]" };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(dockerctx_parse_current(bad[i], strlen(bad[i]), name, sizeof(name), &e), -EINVAL);

	assert_true(dockerctx_name_valid("remote"));
	assert_true(dockerctx_name_valid("a.b_c+d-e9"));
	assert_false(dockerctx_name_valid("a"));
	assert_false(dockerctx_name_valid(""));
	assert_false(dockerctx_name_valid("-x"));
	assert_false(dockerctx_name_valid("../etc"));
	assert_false(dockerctx_name_valid("a b"));
	assert_false(dockerctx_name_valid("a/b"));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_load_and_resolve(void **state)
{
	char dir[] = "/tmp/sandbox-mcp-test-ctx-XXXXXX";
	char p[600], cmd[1400];
	struct dockerctx d;
	struct err e;

	assert_non_null(mkdtemp(dir));
	/* the CLI's layout, hashed by the shell's sha256sum, not by the code under test */
	snprintf(cmd, sizeof(cmd),
		 "set -e; h=$(printf remote | sha256sum | cut -d' ' -f1); mkdir -p %s/contexts/meta/$h "
		 "%s/contexts/tls/$h/docker; echo '%s' > %s/contexts/meta/$h/meta.json; "
		 "echo x > %s/contexts/tls/$h/docker/ca.pem",
		 dir, dir, META, dir, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(dockerctx_load(dir, "remote", &d, &e), 0);
	assert_string_equal(d.host, "tcp://127.0.0.1:2376");
	assert_true(d.tls);
	assert_non_null(strstr(d.ca, "/docker/ca.pem"));
	assert_string_equal(d.cert, "");
	assert_int_equal(dockerctx_load(dir, "nosuch", &d, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "is not found"));
	assert_non_null(strstr(e.msg, "docker context ls"));
	assert_int_equal(dockerctx_load(dir, "../../etc", &d, &e), -EINVAL);

	/* the CLI's order: --context > DOCKER_HOST (even empty) > DOCKER_CONTEXT > currentContext */
	char dc[600];
	snprintf(dc, sizeof(dc), "DOCKER_CONFIG=%s", dir);
	snprintf(p, sizeof(p), "%s/config.json", dir);
	write_file(p, "{\"currentContext\":\"remote\"}");
	struct config c;
	int next;
	char *argv0[] = { "x", NULL };
	char *env1[] = { dc, NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env1, 1, argv0, 1, &next, &e), 0);
	assert_string_equal(c.context, "remote");
	assert_string_equal(c.docker_host, "tcp://127.0.0.1:2376");
	assert_true(c.tls_verify);
	assert_non_null(c.tlscacert);
	assert_null(c.tlscert);
	config_finish(&c);

	char *env2[] = { dc, "DOCKER_HOST=", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env2, 1, argv0, 1, &next, &e), 0);
	assert_null(c.context);
	assert_null(c.docker_host);
	config_finish(&c);

	char *env3[] = { dc, "DOCKER_CONTEXT=default", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env3, 1, argv0, 1, &next, &e), 0);
	assert_null(c.context);
	config_finish(&c);

	char *env4[] = { dc, "DOCKER_HOST=unix:///x.sock", NULL };
	char *argv4[] = { "x", "--context", "remote", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env4, 3, argv4, 1, &next, &e), 0);
	assert_string_equal(c.docker_host, "tcp://127.0.0.1:2376");
	config_finish(&c);

	char *argv5[] = { "x", "--context", "remote", "--docker-host", "unix:///y.sock", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env1, 5, argv5, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not both"));
	config_finish(&c);

	char *env6[] = { dc, "DOCKER_CONTEXT=nosuch", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env6, 1, argv0, 1, &next, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "'nosuch' is not found"));
	config_finish(&c);

	write_file(p, "{\"currentContext\":");
	config_init(&c);
	assert_int_equal(config_load(&c, env1, 1, argv0, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "config.json"));
	config_finish(&c);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta),
		cmocka_unit_test(test_current_and_names),
		cmocka_unit_test(test_load_and_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
