/*
 * test-imageref.c - references normalised as the docker CLI normalises them
 * (docker.io/library/, :latest, digests, registries with ports, case rules),
 * hostile references refused, and the image policy's patterns. Every input
 * ends at a guard page, so a read past its end faults.
 */
#include <errno.h>

#include "testutil.h"

#include "config/imageref.h"

/* Parses s (guarded); returns r and the formatted reference in out. */
static int parse(const char *s, char *out, size_t outsz)
{
	struct guarded g = guarded_copy(s, strlen(s));
	struct imageref r;
	struct err err;
	int rc = imageref_parse(g.p, strlen(s), &r, &err);
	if (rc == 0)
		imageref_format(&r, out, outsz);
	else
		snprintf(out, outsz, "%s", err.msg);
	guarded_free(&g);
	return rc;
}

static void normalises(const char *in, const char *want)
{
	char out[IMAGEREF_FORMAT_MAX + 300];
	int rc = parse(in, out, sizeof(out));
	if (rc != 0)
		fail_msg("%s: %s", in, out);
	if (strcmp(out, want) != 0)
		fail_msg("%s: got %s, want %s", in, out, want);
}

static void refused(const char *in, const char *why)
{
	char out[IMAGEREF_FORMAT_MAX + 300];
	int rc = parse(in, out, sizeof(out));
	if (rc != -EINVAL)
		fail_msg("%s: accepted as %s", in, out);
	if (!strstr(out, why))
		fail_msg("%s: message '%s' lacks '%s'", in, out, why);
}

static void test_normalise(void **state)
{
	(void)state;
	normalises("python", "docker.io/library/python:latest");
	normalises("python:3.12-slim", "docker.io/library/python:3.12-slim");
	normalises("library/python", "docker.io/library/python:latest");
	normalises("docker.io/python", "docker.io/library/python:latest");
	normalises("index.docker.io/python:3", "docker.io/library/python:3");
	normalises("me/app", "docker.io/me/app:latest");
	normalises("me/app/sub:v1", "docker.io/me/app/sub:v1");
	normalises("localhost/app", "localhost/app:latest");
	normalises("localhost:5000/team/app:1", "localhost:5000/team/app:1");
	normalises("127.0.0.1:5000/sbx-test/base:1", "127.0.0.1:5000/sbx-test/base:1");
	normalises("registry.example.com/a", "registry.example.com/a:latest");
	normalises("Registry.Example.com/a", "Registry.Example.com/a:latest");
	normalises("Foo/bar", "Foo/bar:latest"); /* an uppercase first component is a registry */
	normalises("[::1]:5000/a", "[::1]:5000/a:latest");
	normalises("a__b.c-d---e", "docker.io/library/a__b.c-d---e:latest");
	normalises("sandbox-mcp-python:latest", "docker.io/library/sandbox-mcp-python:latest");
	normalises("python@sha256:"
		   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		   "docker.io/library/python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	normalises("python:3@sha256:"
		   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		   "docker.io/library/python:3@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	normalises("localhost:5000", "docker.io/library/localhost:5000"); /* as docker reads it: a tag */
}

static void test_refused(void **state)
{
	(void)state;
	refused("", "empty");
	refused("Python", "lowercase");
	refused("me/App", "lowercase");
	refused("python:", "invalid tag");
	refused("python:.x", "invalid tag");
	refused("python:-x", "invalid tag");
	refused("py thon", "components");
	refused("a//b", "components");
	refused("/a", "components");
	refused("a/", "components");
	refused("-a", "components");
	refused("a-", "components");
	refused("a...b", "components");
	refused("a___b", "components");
	refused("a.-b", "components");
	refused("exa mple.com/a", "registry");
	refused("example.com:/a", "registry");
	refused("example.com:5x/a", "registry");
	refused("-x.com/a", "registry");
	refused("x-.com/a", "registry");
	refused("x..com/a", "registry");
	refused("[zz]:5000/a", "registry");
	refused("python@sha256:abc", "digest");
	refused("python@sha256:"
		"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
		"digest");
	refused("python@md5:0123456789abcdef0123456789abcdef", "digest");
	refused("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "image id");
	refused("sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "image id");
	char tag[IMAGEREF_TAG_MAX + 10] = "python:";
	memset(tag + 7, 'a', IMAGEREF_TAG_MAX + 1);
	tag[7 + IMAGEREF_TAG_MAX + 1] = '\0';
	refused(tag, "invalid tag");
	char name[IMAGEREF_INPUT_MAX + 10];
	memset(name, 'a', 250);
	name[250] = '\0';
	refused(name, "too long"); /* docker.io/library/ + 250 is over 255 */
	memset(name, 'a', IMAGEREF_INPUT_MAX + 1);
	name[IMAGEREF_INPUT_MAX + 1] = '\0';
	refused(name, "longer than");
	struct imageref r;
	struct err err;
	assert_int_equal(imageref_parse("py\0thon", 7, &r, &err), -EINVAL);
}

static bool allowed(const char *list, const char *ref, bool pull)
{
	struct imageref r;
	struct err err;
	assert_int_equal(imageref_parse(ref, strlen(ref), &r, &err), 0);
	assert_int_equal(imageref_patterns_check(list, &err), 0);
	struct guarded g = guarded_copy(list, strlen(list) + 1);
	bool ok = imageref_allowed(g.p, &r, pull);
	guarded_free(&g);
	return ok;
}

static void test_policy(void **state)
{
	(void)state;
	/* the default: any local image, pulls of official images only */
	assert_true(allowed("", "127.0.0.1:5000/x/y:1", false));
	assert_true(allowed("", "python:3.12", true));
	assert_true(allowed("", "docker.io/library/python", true));
	assert_false(allowed("", "me/app", true));
	assert_false(allowed("", "127.0.0.1:5000/x/y:1", true));
	assert_false(allowed("", "ghcr.io/library/python", true));

	assert_true(allowed("python:*", "python:3.12", true));
	assert_true(allowed("python:*", "docker.io/library/python:3", false));
	assert_false(allowed("python:*",
			     "python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", true));
	assert_true(allowed("python", "python@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			    true));
	assert_false(allowed("python:*", "pythonx:3", true));
	assert_false(allowed("python:*", "me/python:3", true));
	assert_true(allowed("sandbox-mcp-*", "sandbox-mcp-python:latest", false));
	assert_true(allowed("sandbox-mcp-*", "sandbox-mcp-commit:x-1", false));
	assert_false(allowed("sandbox-mcp-*", "sandbox-mcp-x/evil", false));
	assert_true(allowed("docker.io/library/*", "debian:bookworm-slim", true));
	assert_false(allowed("docker.io/library/*", "me/debian", true));
	assert_true(allowed("localhost:5000/team/*", "localhost:5000/team/app:1", true));
	assert_true(allowed("LOCALHOST:5000/team/*", "localhost:5000/team/app:1", true));
	assert_false(allowed("localhost:5000/team/*", "localhost:5000/team/sub/app:1", true));
	assert_true(allowed("localhost:5000/team/**", "localhost:5000/team/sub/app:1", true));
	assert_false(allowed("localhost:5000/team/*", "localhost:5001/team/app", true));
	assert_false(allowed("localhost:5000/team/*", "localhost:5000/teams/app", true));
	assert_true(allowed("*", "evil.example.com/x/y:z", true));
	assert_true(allowed("a,b,127.0.0.1:*/sbx-test/*", "127.0.0.1:5000/sbx-test/base:1", true));
	assert_false(allowed("a,b", "c", false));
	assert_true(allowed("python:3.1?", "python:3.12", true));
	assert_false(allowed("python:3.1?", "python:3.1", true));

	char match[IMAGEREF_INPUT_MAX + 1];
	struct imageref r;
	struct err err;
	assert_int_equal(imageref_parse("me/app:2", 8, &r, &err), 0);
	assert_true(imageref_patterns_match("x,me/*", &r, match, sizeof(match)));
	assert_string_equal(match, "me/*");
}

static void test_patterns_check(void **state)
{
	(void)state;
	struct err err;
	assert_int_equal(imageref_patterns_check("", &err), 0);
	assert_int_equal(imageref_patterns_check("python:*,localhost:5000/**", &err), 0);
	assert_int_equal(imageref_patterns_check("a,,b", &err), -EINVAL);
	assert_int_equal(imageref_patterns_check("a b", &err), -EINVAL);
	assert_int_equal(imageref_patterns_check("a,", &err), 0);
	char many[IMAGEREF_PATTERNS_MAX * 2 + 4] = "";
	for (int i = 0; i <= IMAGEREF_PATTERNS_MAX; i++)
		strcat(many, i ? ",a" : "a");
	assert_int_equal(imageref_patterns_check(many, &err), -EINVAL);
}

/* A pattern of many stars against a long reference answers at once (no backtracking blow-up). */
static void test_glob_cost(void **state)
{
	(void)state;
	char pat[IMAGEREF_INPUT_MAX + 1], ref[300];
	memset(pat, '*', 200);
	memcpy(pat + 200, "b", 2);
	memset(ref, 'a', 240);
	ref[240] = '\0';
	struct imageref r;
	struct err err;
	assert_int_equal(imageref_parse(ref, 200, &r, &err), 0);
	for (int i = 0; i < 1000; i++)
		assert_false(imageref_patterns_match(pat, &r, NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalise),      cmocka_unit_test(test_refused),	 cmocka_unit_test(test_policy),
		cmocka_unit_test(test_patterns_check), cmocka_unit_test(test_glob_cost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
