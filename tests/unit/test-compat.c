/*
 * test-compat.c - the capability check that must accept Docker's CapDrop
 * ["ALL"] and Podman 4.3's list of dropped defaults, and nothing weaker: a
 * list missing one default, a CapAdd that gives one back, hostile types.
 */
#include "testutil.h"

#include <errno.h>

#include "engine/compat.h"
#include "engine/engine.h"

/* What Podman 4.3 reports for --cap-drop ALL (inspect, HostConfig). */
#define PODMAN_DROP                                                                                                  \
	"[\"AUDIT_WRITE\",\"CHOWN\",\"DAC_OVERRIDE\",\"FOWNER\",\"FSETID\",\"KILL\",\"MKNOD\",\"NET_BIND_SERVICE\"," \
	"\"NET_RAW\",\"SETFCAP\",\"SETGID\",\"SETPCAP\",\"SETUID\",\"SYS_CHROOT\"]"

static bool check(const char *hc_json)
{
	json_error_t je;
	json_t *hc = json_loads(hc_json, 0, &je);
	assert_non_null(hc);
	bool r = compat_caps_all_dropped(hc);
	json_decref(hc);
	return r;
}

static void test_docker_all(void **state)
{
	(void)state;
	assert_true(check("{\"CapDrop\":[\"ALL\"]}"));
	assert_true(check("{\"CapDrop\":[\"all\"],\"CapAdd\":null}"));
	/* Docker's own form wins even beside other entries */
	assert_true(check("{\"CapDrop\":[\"CHOWN\",\"ALL\"]}"));
}

static void test_podman_list(void **state)
{
	(void)state;
	assert_true(check("{\"CapDrop\":" PODMAN_DROP ",\"CapAdd\":[]}"));
	assert_true(check("{\"CapDrop\":" PODMAN_DROP "}"));
	/* the CAP_ prefix and lower case name the same capability */
	assert_true(check("{\"CapDrop\":[\"CAP_AUDIT_WRITE\",\"chown\",\"DAC_OVERRIDE\",\"FOWNER\",\"FSETID\","
			  "\"KILL\",\"MKNOD\",\"NET_BIND_SERVICE\",\"NET_RAW\",\"SETFCAP\",\"SETGID\",\"SETPCAP\","
			  "\"SETUID\",\"CAP_SYS_CHROOT\"],\"CapAdd\":[]}"));
}

static void test_weaker_refused(void **state)
{
	(void)state;
	/* one default left out (NET_RAW): the container may still have it */
	assert_false(check("{\"CapDrop\":[\"AUDIT_WRITE\",\"CHOWN\",\"DAC_OVERRIDE\",\"FOWNER\",\"FSETID\",\"KILL\","
			   "\"MKNOD\",\"NET_BIND_SERVICE\",\"SETFCAP\",\"SETGID\",\"SETPCAP\",\"SETUID\","
			   "\"SYS_CHROOT\"]}"));
	/* every default dropped but one added back */
	assert_false(check("{\"CapDrop\":" PODMAN_DROP ",\"CapAdd\":[\"SYS_ADMIN\"]}"));
	assert_false(check("{\"CapDrop\":" PODMAN_DROP ",\"CapAdd\":\"SYS_ADMIN\"}"));
	/* nothing dropped, or not a list */
	assert_false(check("{}"));
	assert_false(check("{\"CapDrop\":null}"));
	assert_false(check("{\"CapDrop\":[]}"));
	assert_false(check("{\"CapDrop\":\"ALL\"}"));
	assert_false(check("{\"CapDrop\":[1,true,null,{}]}"));
	/* a prefix or a longer name is not the capability */
	assert_false(check("{\"CapDrop\":[\"AL\"]}"));
	assert_false(check("{\"CapDrop\":[\"ALLX\"]}"));
	assert_false(compat_caps_all_dropped(NULL));
}

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_image_id(void **state)
{
	char out[80];
	(void)state;
	/* Docker's spelling as is, Podman's bare hex gets the prefix */
	assert_true(compat_image_id("sha256:" HEX64, out, sizeof(out)));
	assert_string_equal(out, "sha256:" HEX64);
	memset(out, 0, sizeof(out));
	assert_true(compat_image_id(HEX64, out, sizeof(out)));
	assert_string_equal(out, "sha256:" HEX64);
	/* hostile: short, long, not hex, another digest, empty, no room */
	assert_false(compat_image_id(NULL, out, sizeof(out)));
	assert_false(compat_image_id("", out, sizeof(out)));
	assert_false(compat_image_id("sha256:", out, sizeof(out)));
	assert_false(compat_image_id("0123456789abcdef", out, sizeof(out)));
	assert_false(compat_image_id(HEX64 "0", out, sizeof(out)));
	assert_false(compat_image_id("sha256:" HEX64 "0", out, sizeof(out)));
	assert_false(compat_image_id("sha512:" HEX64, out, sizeof(out)));
	assert_false(compat_image_id("sha256:sha256:" HEX64, out, sizeof(out)));
	assert_false(
		compat_image_id("g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", out, sizeof(out)));
	assert_false(compat_image_id(HEX64, out, 71));
}

static void test_engine_env(void **state)
{
	(void)state;
	assert_true(compat_engine_env("container=podman", "b73d38fa1746"));
	assert_true(compat_engine_env("HOSTNAME=b73d38fa1746", "b73d38fa1746"));
	/* the session's own variables stay, even with those names */
	assert_false(compat_engine_env("HOSTNAME=mine", "b73d38fa1746"));
	assert_false(compat_engine_env("HOSTNAME=b73d38fa1746", NULL));
	assert_false(compat_engine_env("HOSTNAME=", ""));
	assert_false(compat_engine_env("HOSTNAME=b73d38fa174", "b73d38fa1746"));
	assert_false(compat_engine_env("container=docker", NULL));
	assert_false(compat_engine_env("container=podman2", NULL));
	assert_false(compat_engine_env("CONTAINER=podman", NULL));
	assert_false(compat_engine_env("TERM=xterm", "x"));
	assert_false(compat_engine_env("", "x"));
	assert_false(compat_engine_env(NULL, "x"));
}

static bool net(const char *inspect_json, const char *asked)
{
	json_t *j = json_loads(inspect_json, 0, NULL);
	assert_non_null(j);
	bool r = compat_network_applied(j, asked);
	json_decref(j);
	return r;
}

static void test_network(void **state)
{
	(void)state;
	/* Docker: the mode is the name */
	assert_true(net("{\"HostConfig\":{\"NetworkMode\":\"none\"}}", "none"));
	assert_true(net("{\"HostConfig\":{\"NetworkMode\":\"sbx\"}}", "sbx"));
	/* Podman: bridge, and the one network listed */
	assert_true(net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":{\"sbx\":{}}}}",
			"sbx"));
	/* bridge never stands for none, host or another container's namespace */
	assert_false(
		net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":{\"none\":{}}}}",
		    "none"));
	assert_false(
		net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":{\"host\":{}}}}",
		    "host"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":"
			 "{\"container:x\":{}}}}",
			 "container:x"));
	/* another network, or one more beside it, or none listed */
	assert_false(
		net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":{\"other\":{}}}}",
		    "sbx"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":"
			 "{\"sbx\":{},\"podman\":{}}}}",
			 "sbx"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"},\"NetworkSettings\":{\"Networks\":[]}}", "sbx"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"bridge\"}}", "sbx"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"host\"}}", "none"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"host\"},\"NetworkSettings\":{\"Networks\":{\"sbx\":{}}}}",
			 "sbx"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":7}}", "none"));
	assert_false(net("{}", "none"));
	assert_false(net("{\"HostConfig\":{\"NetworkMode\":\"\"}}", ""));
}

static void test_podman_quote(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, 4096);
	/* nothing escaped: Podman strips the quotes and keeps the rest as is */
	assert_int_equal(compat_podman_quote("a \"quoted\" $dollar \\back value", &b), 0);
	assert_string_equal(b.data, "\"a \"quoted\" $dollar \\back value\"");
	buf_reset(&b);
	assert_int_equal(compat_podman_quote("", &b), 0);
	assert_string_equal(b.data, "\"\"");
	buf_reset(&b);
	/* what its parser would change: a quote at either end, a line break */
	assert_int_equal(compat_podman_quote("\"x", &b), -EINVAL);
	assert_int_equal(compat_podman_quote("x\"", &b), -EINVAL);
	assert_int_equal(compat_podman_quote("\"", &b), -EINVAL);
	assert_int_equal(compat_podman_quote("a\nb", &b), -EINVAL);
	assert_int_equal(compat_podman_quote("a\rb", &b), -EINVAL);
	assert_int_equal(b.len, 0);
	assert_int_equal(compat_podman_key("io.sandbox-mcp.commit.session", &b), 0);
	assert_string_equal(b.data, "io.sandbox-mcp.commit.session");
	buf_reset(&b);
	assert_int_equal(compat_podman_key("", &b), -EINVAL);
	assert_int_equal(compat_podman_key("a b", &b), -EINVAL);
	assert_int_equal(compat_podman_key("a=b", &b), -EINVAL);
	assert_int_equal(compat_podman_key("\"a\"", &b), -EINVAL);
	assert_int_equal(compat_podman_key("a\n", &b), -EINVAL);
	buf_finish(&b);
}

/* A container name the server makes (a claim's) is checked before any request: nothing else reaches the engine. */
static void test_create_named_refuses(void **state)
{
	struct engine *e = NULL;
	struct err err;
	char id[ENGINE_ID_LEN + 1];
	assert_int_equal(engine_create("unix:///nonexistent/docker.sock", NULL, 1000, &e, &err), 0);
	json_t *body = json_pack("{s:s}", "Image", "x");
	static const char *const bad[] = {
		"",	    "../x", "a/b", "A",
		"x?name=y", "x&y",  "a b", "sandbox-mcp-claim-0123456789abcdef0123456789abcdef0123456789abcdef0"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&err);
		assert_int_equal(engine_container_create_named(e, NULL, bad[i], body, id, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "not a container name"));
	}
	/* a good name gets as far as the (missing) engine */
	err_clear(&err);
	assert_int_not_equal(engine_container_create_named(e, NULL, "sandbox-mcp-claim-0123456789abcdef", body, id,
							   &err),
			     -EINVAL);
	json_decref(body);
	engine_destroy(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_docker_all),     cmocka_unit_test(test_podman_list),
		cmocka_unit_test(test_weaker_refused), cmocka_unit_test(test_image_id),
		cmocka_unit_test(test_engine_env),     cmocka_unit_test(test_network),
		cmocka_unit_test(test_podman_quote),   cmocka_unit_test(test_create_named_refuses),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
