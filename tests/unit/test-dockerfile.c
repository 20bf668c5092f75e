/*
 * test-dockerfile.c - what session_export makes of a pip freeze (which comes
 * from the sandbox, so hostile lines are part of the cases): parsing,
 * distribution names, wheel/sdist matching, file:// paths, the install
 * plan, and the Dockerfile text (every value quoted, no line continued).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

#include "sandbox/dockerfile.h"

static void test_freeze_parse(void **state)
{
	static const char in[] = "a==1\n# comment\n\nb @ file:///w/b\nbad\x01line==2\nc==3";
	json_t *lines = NULL;
	struct err e;
	(void)state;
	assert_int_equal(dockerfile_freeze_parse(in, sizeof(in) - 1, &lines, &e), 0);
	assert_int_equal(json_array_size(lines), 3);
	assert_string_equal(json_string_value(json_array_get(lines, 0)), "a==1");
	assert_string_equal(json_string_value(json_array_get(lines, 1)), "b @ file:///w/b");
	assert_string_equal(json_string_value(json_array_get(lines, 2)), "c==3");
	json_decref(lines);

	struct buf big;
	buf_init(&big, SIZE_MAX);
	for (int i = 0; i <= DOCKERFILE_FREEZE_LINES_MAX; i++)
		buf_printf(&big, "p%d==1\n", i);
	assert_int_equal(dockerfile_freeze_parse(big.data, big.len, &lines, &e), -E2BIG);
	assert_int_equal(e.code, ERRCODE_TOO_LARGE);
	buf_finish(&big);
}

static void test_names_and_archives(void **state)
{
	char n[64];
	(void)state;
	dockerfile_dist_name("Foo_Bar.baz==1.0", n, sizeof(n));
	assert_string_equal(n, "foo-bar-baz");
	dockerfile_dist_name("x @ file:///a", n, sizeof(n));
	assert_string_equal(n, "x");
	dockerfile_dist_name("a--b__c", n, sizeof(n));
	assert_string_equal(n, "a-b-c");

	assert_true(dockerfile_archive_matches("dist/Foo_Bar-1.0-py3-none-any.whl", "foo-bar", "1.0"));
	assert_false(dockerfile_archive_matches("dist/Foo_Bar-1.0-py3-none-any.whl", "foo-bar", "1.0.1"));
	assert_false(dockerfile_archive_matches("dist/foo-1.0-py3-none-any.whl", "foo-bar", "1.0"));
	assert_true(dockerfile_archive_matches("pkg-2.0.tar.gz", "pkg", "2.0"));
	assert_true(dockerfile_archive_matches("a/b/my-pkg-2.0.zip", "my-pkg", "2.0"));
	assert_false(dockerfile_archive_matches("x.zip", "x", ""));
	assert_false(dockerfile_archive_matches("x.whl", "x", "1"));
}

static void test_file_urls(void **state)
{
	char p[256];
	(void)state;
	assert_true(dockerfile_file_url_path("file:///workspace/a%20b", p, sizeof(p)));
	assert_string_equal(p, "/workspace/a b");
	assert_true(dockerfile_file_url_path("file://localhost/tmp/x.whl", p, sizeof(p)));
	assert_string_equal(p, "/tmp/x.whl");
	assert_false(dockerfile_file_url_path("file:///workspace/../etc/passwd", p, sizeof(p)));
	assert_false(dockerfile_file_url_path("file:///workspace/a%2F..%2F..%2Fetc", p, sizeof(p)));
	assert_false(dockerfile_file_url_path("file:///a%0ab", p, sizeof(p)));
	assert_false(dockerfile_file_url_path("file://host/x", p, sizeof(p)));
	assert_false(dockerfile_file_url_path("https://example.com/x.whl", p, sizeof(p)));
	assert_false(dockerfile_file_url_path("file:///w//x", p, sizeof(p)));
}

static void test_context_name(void **state)
{
	char n[DOCKERFILE_CONTEXT_NAME_MAX];
	(void)state;
	dockerfile_context_name("/tmp/wh/p-1.whl", n, sizeof(n));
	assert_string_equal(n, "files/tmp/wh/p-1.whl");
	/* what a COPY source would read as a glob is escaped, and '%' too, so two paths never share a name */
	dockerfile_context_name("/t/a*b?c[d]e\\f g$h'i\"%", n, sizeof(n));
	assert_string_equal(n, "files/t/a%2Ab%3Fc%5Bd]e%5Cf g$h'i\"%25");
	dockerfile_context_name("/t/%2A", n, sizeof(n));
	assert_string_equal(n, "files/t/%252A");
}

static bool has(json_t *a, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach (a, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

static void test_plan(void **state)
{
	json_t *mine = json_pack("[s, s, s, s, s, s, s, s]", "same==1", "a==1", "b @ file:///workspace/b",
				 "c @ file:///tmp/c.whl", "d==2", "-e /workspace/e", "g @ git+https://x/g",
				 "h @ file:///workspace/../etc/x");
	json_t *base = json_pack("[s, s]", "same==1", "Old_Pkg==1");
	json_t *archives = json_pack("[s, s]", "dist/a-1-py3-none-any.whl", "dist/d-3.tar.gz");
	struct dockerfile_pip p;
	(void)state;
	dockerfile_pip_plan("/workspace", mine, base, archives, &p);
	assert_int_equal(json_array_size(p.installed), 7);
	assert_int_equal(json_array_size(p.offline), 1);
	assert_true(has(p.offline, "a==1"));
	assert_int_equal(json_array_size(p.find_links), 1);
	assert_true(has(p.find_links, "/workspace/dist"));
	assert_int_equal(json_array_size(p.local), 2);
	assert_true(has(p.local, "/workspace/b") && has(p.local, "/tmp/c.whl"));
	assert_int_equal(json_array_size(p.outside), 1);
	assert_true(has(p.outside, "/tmp/c.whl"));
	assert_int_equal(json_array_size(p.editable), 1);
	assert_true(has(p.editable, "/workspace/e"));
	assert_int_equal(json_array_size(p.online), 3);
	assert_true(has(p.online, "d==2") && has(p.online, "g @ git+https://x/g") &&
		    has(p.online, "h @ file:///workspace/../etc/x"));
	assert_int_equal(json_array_size(p.removed), 1);
	assert_true(has(p.removed, "old-pkg"));
	dockerfile_pip_finish(&p);
	json_decref(mine);
	json_decref(base);
	json_decref(archives);
}

static void test_write(void **state)
{
	struct session s = { 0 };
	snprintf(s.id, sizeof(s.id), "0123456789ab");
	snprintf(s.user, sizeof(s.user), "sandbox");
	snprintf(s.image, sizeof(s.image), "base:1");
	json_t *mine = json_pack("[s, s, s, s, s]", "a==1", "b @ file:///workspace/b", "d==2\\",
				 "c @ file:///tmp/c.whl", "e @ file:///tmp/s%20p%24x%27q%22%5C%5B1%5D%2A%3F%25/e.whl");
	json_t *base = json_pack("[s]", "gone==1");
	json_t *archives = json_pack("[s]", "dist/a-1-py3-none-any.whl");
	json_t *env = json_pack("[s, s]", "K=v \"$x\"", "NL=a\nb");
	json_t *modes = json_pack("[[s, i], [s, i], [s, i]]", "run.sh", 0755, "it's", 0600, "-notes", 0600);
	json_t *history = json_pack("[{s:s, s:s, s:s, s:s}]", "kind", "git_clone", "url", "https://h/r.git", "commit",
				    "abc123", "path", "/workspace/r");
	struct dockerfile_pip p;
	struct buf b;
	(void)state;
	dockerfile_pip_plan("/workspace", mine, base, archives, &p);
	json_t *labels = json_pack("{s:s, s:s}", "io.sandbox-mcp.commit.session", "0123456789ab", "q", "a\"b");
	struct dockerfile_info x = { .s = &s,
				     .labels = labels,
				     .ws = "/workspace",
				     .base_id = "sha256:aa",
				     .base_ref_id = "sha256:bb",
				     .env = env,
				     .workdir = "/workspace",
				     .pip = &p,
				     .modes = modes,
				     .history = history };
	buf_init(&b, SIZE_MAX);
	dockerfile_write(&x, &b);
	const char *d = b.data;
	/* the tag names another image now: the exact base is its id */
	assert_non_null(strstr(d, "the tag names sha256:bb now, so this starts from the id it had.\nFROM sha256:aa\n"));
	assert_non_null(strstr(d, "\nLABEL \"io.sandbox-mcp.commit.session\"=\"0123456789ab\" \"q\"=\"a\\\"b\"\n"));
	assert_true(strstr(d, "\nLABEL ") > strstr(d, "\nFROM ") && strstr(d, "\nLABEL ") < strstr(d, "\nCOPY "));
	assert_non_null(strstr(d, "\nCOPY --chown=sandbox workspace/ /workspace/\n"));
	/* JSON form: one word each, '$', quotes and '\\' escaped from the builder's expansion, no glob in the source */
	assert_non_null(strstr(d, "\nCOPY --chown=sandbox [\"files/tmp/c.whl\", \"/tmp/c.whl\"]\n"));
	assert_non_null(strstr(d,
			       "\nCOPY --chown=sandbox [\"files/tmp/s p\\\\$x\\\\'q\\\\\\\"%5C%5B1]%2A%3F%25/e.whl\", "
			       "\"/tmp/s p\\\\$x\\\\'q\\\\\\\"\\\\\\\\[1]*?%/e.whl\"]\n"));
	assert_non_null(strstr(d, "\nUSER sandbox\n"));
	/* "--": a name starting with '-' is not read as an option */
	assert_non_null(
		strstr(d,
		       "\nRUN cd /workspace && chmod 755 -- 'run.sh' && chmod 600 -- 'it'\\''s' && chmod 600 -- '-notes'\n"));
	assert_non_null(strstr(d, "\nENV K=\"v \\\"\\$x\\\"\"\n"));
	assert_non_null(strstr(d, "# ENV NL is not set here"));
	assert_non_null(
		strstr(d, "\nRUN python3 -m pip install --no-deps --no-index --find-links '/workspace/dist' 'a==1'\n"));
	assert_non_null(
		strstr(d, "--no-build-isolation '/workspace/b' '/tmp/c.whl' '/tmp/s p$x'\\''q\"\\[1]*?%/e.whl'\n"));
	assert_non_null(strstr(d, "needs network access"));
	assert_non_null(strstr(d, "\nRUN python3 -m pip install --no-deps 'd==2\\'\n"));
	assert_non_null(strstr(d, "\nRUN python3 -m pip uninstall -y 'gone'\n"));
	assert_non_null(strstr(d, "#   https://h/r.git at abc123 into /workspace/r\n"));
	assert_non_null(strstr(d, "\nWORKDIR /workspace\n"));
	/* no instruction is continued onto the next line */
	for (const char *l = d; *l;) {
		const char *nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		if (n && l[0] != '#')
			assert_true(l[n - 1] != '\\');
		l += n + (nl ? 1 : 0);
	}
	buf_reset(&b);
	x.base_ref_id = "sha256:aa";
	dockerfile_write(&x, &b);
	assert_non_null(strstr(b.data, "when the session started.\nFROM base:1\n"));
	buf_reset(&b);
	x.base_ref_id = "";
	dockerfile_write(&x, &b);
	assert_non_null(strstr(b.data, "that tag is gone now, so this starts from its id.\nFROM sha256:aa\n"));
	buf_finish(&b);
	dockerfile_pip_finish(&p);
	json_decref(mine);
	json_decref(base);
	json_decref(archives);
	json_decref(env);
	json_decref(modes);
	json_decref(history);
	json_decref(labels);
}

/* The builder's Dockerfile keeps every instruction but RUN; the steps keep their numbers. */
static void test_split(void **state)
{
	static const char df[] = "# c\nFROM x\n\nLABEL \"a\"=\"b\"\nCOPY --chown=u workspace/ /w/\nUSER u\n"
				 "RUN cd /w && chmod 600 -- 'a'\nENV K=\"RUN x\"\n# RUN not a step\n"
				 "RUN python3 -m pip install 'p'\nWORKDIR /w";
	struct buf b;
	json_t *runs = json_array();
	(void)state;
	buf_init(&b, SIZE_MAX);
	assert_int_equal(dockerfile_split(df, &b, runs), 8);
	assert_int_equal(json_array_size(runs), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 0), "step")), 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 0), "cmd")),
			    "cd /w && chmod 600 -- 'a'");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(runs, 1), "step")), 7);
	assert_string_equal(json_string_value(json_object_get(json_array_get(runs, 1), "cmd")),
			    "python3 -m pip install 'p'");
	assert_null(strstr(b.data, "\nRUN "));
	assert_non_null(strstr(b.data, "\nENV K=\"RUN x\"\n"));
	assert_non_null(strstr(b.data, "\nWORKDIR /w\n"));
	assert_non_null(strstr(b.data, "# step 7, RUN, runs in a container with the session's hardening\n"));
	buf_finish(&b);
	json_decref(runs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freeze_parse), cmocka_unit_test(test_names_and_archives),
		cmocka_unit_test(test_file_urls),    cmocka_unit_test(test_plan),
		cmocka_unit_test(test_write),	     cmocka_unit_test(test_context_name),
		cmocka_unit_test(test_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
