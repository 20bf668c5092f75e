/*
 * test-image.c - image reference checks (docker's grammar: what the engine
 * would refuse is refused before it is asked), base-tag matching across the
 * spellings of one reference, which existing tags may be replaced, and
 * Dockerfile quoting of ENV/LABEL values.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#include "config/imageref.h"
#include "sandbox/checkpoint.h"
#include "sandbox/image.h"

static void test_repository(void **state)
{
	static const char *good[] = {
		"a",	       "sandbox-mcp-commit",	  "my-project/analysis",      "a.b_c__d---e",
		"localhost/x", "localhost:5000/team/img", "registry.example.com/a/b", "x9/y8"
	};
	static const char *bad[] = { "",   "UpperCase", "a//b",	 "-lead", "trail-", "a/b;rm", "a b",	 "a/",
				     "/a", "a..b",	"a___b", "x:y",	  "a/B",    "a/b:c",  ":5000/x", "host:/x" };
	struct err e;
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(image_repository_check(good[i], &e), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		assert_int_equal(image_repository_check(bad[i], &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
	}
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_int_equal(image_repository_check(longname, &e), -EINVAL);
	/* docker's limit is on the normalised name: docker.io/library/ counts */
	longname[IMAGE_REF_MAX - 18] = '\0';
	assert_int_equal(image_repository_check(longname, &e), 0);
	longname[IMAGE_REF_MAX - 18] = 'a';
	longname[IMAGE_REF_MAX - 17] = '\0';
	assert_int_equal(image_repository_check(longname, &e), -EINVAL);
	/* the registry part as imageref reads it: case-insensitive host, [ipv6], a port of digits */
	assert_int_equal(image_repository_check("LocalHost/x", &e), 0);
	assert_int_equal(image_repository_check("[::1]:5000/x", &e), 0);
	assert_int_equal(image_repository_check("host:5x/x", &e), -EINVAL);
	assert_int_equal(image_repository_check("a/b@sha256:00", &e), -EINVAL);
}

static void test_tag(void **state)
{
	static const char *good[] = { "latest", "v1.2.3", "A_b-c.d", "_x", "0" };
	static const char *bad[] = { "", "-t", ".t", "a b", "a:b", "a/b", "a$b" };
	struct err e;
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_int_equal(image_tag_check(good[i], &e), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(image_tag_check(bad[i], &e), -EINVAL);
	char t[IMAGE_TAG_MAX + 2];
	memset(t, 'a', sizeof(t) - 1);
	t[sizeof(t) - 1] = '\0';
	assert_int_equal(image_tag_check(t, &e), -EINVAL);
	t[IMAGE_TAG_MAX] = '\0';
	assert_int_equal(image_tag_check(t, &e), 0);
}

static void test_same_ref(void **state)
{
	(void)state;
	assert_true(image_same_ref("debian", "debian:latest"));
	assert_true(image_same_ref("docker.io/library/debian:bookworm", "debian:bookworm"));
	assert_true(image_same_ref("library/debian", "docker.io/debian:latest"));
	assert_true(image_same_ref("localhost:5000/x", "localhost:5000/x:latest"));
	assert_false(image_same_ref("debian:bookworm", "debian:latest"));
	assert_false(image_same_ref("a/debian", "debian"));
	assert_false(image_same_ref("localhost:5000/x", "localhost/x"));
	assert_true(image_same_ref("Docker.io/library/debian:bookworm-slim", "debian:bookworm-slim"));
	assert_true(image_same_ref("index.docker.io/library/debian@sha256:ab", "debian@sha256:ab"));
	assert_false(image_same_ref("debian@sha256:ab", "debian"));
	/* imageref's normal form: a registry's case, a port, a digest alone */
	assert_true(image_same_ref("LocalHost:5000/x:1", "localhost:5000/x:1"));
	assert_false(image_same_ref("localhost:5000/x:1", "localhost:5001/x:1"));
	assert_true(
		image_same_ref("debian@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			       "docker.io/library/debian@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
	/* not references: compared as written */
	assert_true(image_same_ref("Not A Ref", "Not A Ref"));
	assert_false(image_same_ref("Debian", "debian"));
}

/* The allowlist: every spelling of a registry, host case and library/ compared as docker would pull. */
static void test_allowed(void **state)
{
	static const char *pats = CONFIG_COMMIT_REPOS_DEFAULT;
	static const char *good[] = { "sandbox-mcp-commit",
				      "sandbox-mcp-test-commit",
				      "docker.io/library/sandbox-mcp-x",
				      "index.docker.io/sandbox-mcp-y",
				      "localhost/sandbox-mcp/a",
				      "LocalHost/sandbox-mcp/a",
				      "library/sandbox-mcp-z",
				      "sandbox-mcp-" };
	static const char *bad[] = {
		"debian", "Docker.io/library/debian", "docker.io/library/debian", "index.docker.io/library/debian",
		"DOCKER.IO/postgres", "postgres", "ghcr.io/org/app", "localhost/other", "localhost:5000/sandbox-mcp-x",
		"sandbox-mcp", "library/debian", "registry-1.docker.io/library/redis", "sandbox/mcp-x",
		"evil.io/sandbox-mcp-x", "localhost/sandbox-mcp",
		/* a '*' never crosses a '/': Docker Hub users' namespaces and deeper paths */
		"sandbox-mcp-x/y", "sandbox-mcp-test/commit", "index.docker.io/sandbox-mcp-y/z",
		"docker.io/sandbox-mcp-x/library", "LocalHost/sandbox-mcp/a/b", "localhost/sandbox-mcp/a/",
		/* the registry is explicit: another host is another repository */
		"registry-1.docker.io/library/sandbox-mcp-python", "registry-1.docker.io/sandbox-mcp-python",
		"localhost/sandbox-mcp-x", "127.0.0.1:5000/sandbox-mcp-x", "Sandbox-mcp-x/y"
	};
	char fam[300], host[300];
	struct config c;
	struct err e;
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
		assert_true(image_repo_matches(good[i], pats));
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_false(image_repo_matches(bad[i], pats));
	assert_true(imageref_split_repo("Docker.io/debian", host, sizeof(host), fam, sizeof(fam)));
	assert_string_equal(host, "docker.io");
	assert_string_equal(fam, "library/debian");
	assert_true(imageref_split_repo("GHCR.IO/Org/app", host, sizeof(host), fam, sizeof(fam)));
	assert_string_equal(host, "ghcr.io");
	assert_string_equal(fam, "Org/app");
	/* Docker Hub is docker.io or index.docker.io; registry-1.docker.io is a name of its own */
	assert_true(imageref_split_repo("registry-1.docker.io/me/app", host, sizeof(host), fam, sizeof(fam)));
	assert_string_equal(host, "registry-1.docker.io");
	assert_true(imageref_split_repo("index.docker.io/me/app", host, sizeof(host), fam, sizeof(fam)));
	assert_string_equal(host, "docker.io");
	assert_string_equal(fam, "me/app");
	/* docker's rule: an uppercase first component is a registry host, so not Docker Hub's */
	assert_true(imageref_split_repo("Org/app", host, sizeof(host), fam, sizeof(fam)));
	assert_string_equal(host, "org");
	assert_string_equal(fam, "app");
	assert_false(imageref_split_repo("debian", host, 4, fam, sizeof(fam)));
	assert_false(image_repo_matches("Org/app", "docker.io/*"));
	assert_true(image_repo_matches("docker.io/myorg/app", "myorg/*"));
	assert_true(image_repo_matches("myorg/app", "x,docker.io/myorg/app"));
	assert_false(image_repo_matches("myorg/app2", "myorg/app"));
	assert_false(image_repo_matches("anything", ""));
	assert_false(image_repo_matches("anything", ","));
	assert_true(image_repo_matches("anything/at/all", "*"));
	/* a name too long to split is matched by "*" alone (fuzz-image found it missed even that) */
	char longname[600];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_true(image_repo_matches(longname, "x,*"));
	assert_false(image_repo_matches(longname, "a*"));
	assert_true(image_repo_matches("ghcr.io/org/app", "*"));
	/* docker.io/ and a star: Docker Hub's one-component names, no namespace, no other registry */
	assert_true(image_repo_matches("postgres", "docker.io/*"));
	assert_true(image_repo_matches("postgres", "index.docker.io/*"));
	assert_false(image_repo_matches("org/app", "index.docker.io/*"));
	assert_false(image_repo_matches("ghcr.io/org/app", "docker.io/*"));
	/* a namespace is named */
	assert_true(image_repo_matches("org/app", "org/*"));
	assert_false(image_repo_matches("org/app/deep", "org/*"));
	assert_true(image_repo_matches("org/app/deep", "org/*/deep"));
	assert_true(image_repo_matches("ghcr.io/org/app", "GHCR.io/org/app*"));
	assert_false(image_repo_matches("localhost/app", "docker.io/library/*"));
	assert_false(image_repo_matches("org/app", "docker.io/library/*"));
	assert_true(image_repo_matches("docker.io/library/redis", "docker.io/library/*"));

	config_init(&c);
	assert_int_equal(image_ref_allowed(&c, "sandbox-mcp-commit", &e), 0);
	assert_int_equal(image_ref_allowed(&c, "postgres", &e), -EPERM);
	assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
	assert_non_null(strstr(e.msg, "SANDBOX_COMMIT_REPOS"));
	/* the checkpoints' repository is the server's, however it is spelled, even with SANDBOX_COMMIT_REPOS=* */
	free(c.commit_repos);
	c.commit_repos = xstrdup("*");
	assert_int_equal(image_ref_allowed(&c, "sandbox-mcp-checkpoint", &e), -EPERM);
	assert_non_null(strstr(e.msg, "checkpoints"));
	assert_int_equal(image_ref_allowed(&c, "docker.io/library/sandbox-mcp-checkpoint", &e), -EPERM);
	assert_int_equal(image_ref_allowed(&c, "sandbox-mcp-commit", &e), 0);
	config_finish(&c);
}

/* A commit of a session made from a checkpoint is no checkpoint: its checkpoint labels are blanked. */
static void test_commit_config_drops_checkpoint(void **state)
{
	(void)state;
	json_t *parent = json_pack("{s:{s:s, s:{s:s, s:s, s:s}}}", "Config", "User", "1000", "Labels", CHECKPOINT_LABEL,
				   "0123456789ab", CHECKPOINT_LABEL_SETTINGS, "{}", "keep", "me");
	json_t *container = json_pack("{s:{s:{s:s}}}", "Config", "Labels", CHECKPOINT_LABEL, "0123456789ab");
	json_t *cfg = image_commit_config(parent, container);
	json_t *labels = json_object_get(cfg, "Labels");
	assert_string_equal(json_string_value(json_object_get(labels, CHECKPOINT_LABEL)), "");
	assert_string_equal(json_string_value(json_object_get(labels, CHECKPOINT_LABEL_SETTINGS)), "");
	assert_string_equal(json_string_value(json_object_get(labels, "keep")), "me");
	json_decref(cfg);
	json_decref(parent);
	json_decref(container);
}

static void test_replaceable(void **state)
{
	(void)state;
	/* what session_commit or an export build made under that tag */
	json_t *ours = json_pack("{s:s, s:s}", IMAGE_LABEL_SESSION, "0123456789ab", IMAGE_LABEL_REF, "r/c:t1");
	assert_true(image_replaceable(ours, "r/c:t1"));
	assert_true(image_replaceable(ours, "docker.io/r/c:t1"));
	/* the same image tagged elsewhere, or a user's image built FROM it (labels inherited) under another tag */
	assert_false(image_replaceable(ours, "r/c:t2"));
	assert_false(image_replaceable(ours, "user/img:1"));
	/* labelled by an export's Dockerfile built by hand: the session label, no reference */
	json_t *built = json_pack("{s:s}", IMAGE_LABEL_SESSION, "0123456789ab");
	assert_false(image_replaceable(built, "r/c:t1"));
	json_t *noses = json_pack("{s:s}", IMAGE_LABEL_REF, "r/c:t1");
	assert_false(image_replaceable(noses, "r/c:t1"));
	json_t *library = json_pack("{s:s, s:s}", IMAGE_LABEL_SESSION, "x", IMAGE_LABEL_REF,
				    "docker.io/library/c:latest");
	assert_true(image_replaceable(library, "c"));
	assert_false(image_replaceable(NULL, "c"));
	json_decref(ours);
	json_decref(built);
	json_decref(noses);
	json_decref(library);
}

static void test_default_tag(void **state)
{
	char tag[IMAGE_TAG_MAX + 1], again[IMAGE_TAG_MAX + 1];
	struct err e;
	(void)state;
	/* <yyyymmddhhmmss>-<8 hex>: nothing of the session (its name is its principal's) */
	image_default_tag(tag, sizeof(tag));
	assert_int_equal(image_tag_check(tag, &e), 0);
	assert_int_equal(strlen(tag), 14 + 1 + 8);
	assert_int_equal(tag[14], '-');
	for (int i = 0; i < 14; i++)
		assert_true(isdigit((unsigned char)tag[i]));
	image_default_tag(again, sizeof(again));
	assert_string_not_equal(tag, again);
}

static void test_owner(void **state)
{
	char a[IMAGE_OWNER_MAX], none[IMAGE_OWNER_MAX], want[64];
	(void)state;
	image_owner("alice", a, sizeof(a));
	image_owner("", none, sizeof(none));
	snprintf(want, sizeof(want), "uid=%u,token=alice", (unsigned)getuid());
	assert_string_equal(a, want);
	snprintf(want, sizeof(want), "uid=%u", (unsigned)getuid());
	assert_string_equal(none, want);

	json_t *alices = json_pack("{s:s, s:s}", IMAGE_LABEL_SESSION, "0123456789ab", IMAGE_LABEL_OWNER, a);
	assert_true(image_usable(alices, "alice"));
	assert_false(image_usable(alices, "bob"));
	assert_false(image_usable(alices, ""));
	assert_false(image_usable(alices, "alice,"));
	json_t *tokenless = json_pack("{s:s}", IMAGE_LABEL_OWNER, none);
	assert_true(image_usable(tokenless, ""));
	assert_false(image_usable(tokenless, "alice"));
	/* another user's server on the same engine */
	json_t *other = json_pack("{s:s}", IMAGE_LABEL_OWNER, "uid=4242424");
	assert_false(image_usable(other, ""));
	/* shared on purpose; not made by sandbox-mcp; made before owners (the tokenless principal's) */
	json_t *shared = json_pack("{s:s, s:s}", IMAGE_LABEL_SESSION, "0123456789ab", IMAGE_LABEL_OWNER, "");
	assert_true(image_usable(shared, "bob"));
	assert_true(image_usable(NULL, "bob"));
	json_t *old = json_pack("{s:s}", IMAGE_LABEL_SESSION, "0123456789ab");
	assert_true(image_usable(old, ""));
	assert_false(image_usable(old, "bob"));
	json_decref(alices);
	json_decref(tokenless);
	json_decref(other);
	json_decref(shared);
	json_decref(old);
}

static void test_quote_and_changes(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, 4096);
	assert_int_equal(image_quote("a \"q\" $x \\y", &b), 0);
	assert_string_equal(b.data, "\"a \\\"q\\\" \\$x \\\\y\"");
	buf_reset(&b);
	assert_int_equal(image_quote("two\nlines", &b), -EINVAL);
	buf_finish(&b);

	json_t *cfg = json_pack("{s:s, s:s, s:[s, s, s], s:[s], s:[], s:{s:s}}", "User", "sandbox", "WorkingDir", "/w",
				"Env", "A=1", "B=x y", "BAD=a\nb", "Cmd", "sleep", "Entrypoint", "Labels", "k", "v\"");
	json_t *ch = image_changes(cfg);
	assert_int_equal(json_array_size(ch), 6);
	assert_string_equal(json_string_value(json_array_get(ch, 0)), "USER sandbox");
	assert_string_equal(json_string_value(json_array_get(ch, 1)), "WORKDIR /w");
	assert_string_equal(json_string_value(json_array_get(ch, 2)), "ENV A=\"1\"");
	assert_string_equal(json_string_value(json_array_get(ch, 3)), "ENV B=\"x y\"");
	assert_string_equal(json_string_value(json_array_get(ch, 4)), "CMD [\"sleep\"]");
	assert_string_equal(json_string_value(json_array_get(ch, 5)), "LABEL \"k\"=\"v\\\"\"");
	json_decref(ch);
	/* Podman's form: the raw value in quotes; a label value ending in a quote cannot go */
	ch = image_changes_podman(cfg);
	assert_int_equal(json_array_size(ch), 5);
	assert_string_equal(json_string_value(json_array_get(ch, 2)), "ENV A=\"1\"");
	assert_string_equal(json_string_value(json_array_get(ch, 3)), "ENV B=\"x y\"");
	assert_string_equal(json_string_value(json_array_get(ch, 4)), "CMD [\"sleep\"]");
	json_decref(ch);
	json_decref(cfg);
	cfg = json_pack("{s:[s], s:{s:s}}", "Env", "V=a \"q\" $d \\b", "Labels", "k", "v");
	ch = image_changes_podman(cfg);
	assert_int_equal(json_array_size(ch), 2);
	assert_string_equal(json_string_value(json_array_get(ch, 0)), "ENV V=\"a \"q\" $d \\b\"");
	assert_string_equal(json_string_value(json_array_get(ch, 1)), "LABEL k=\"v\"");
	json_decref(ch);
	json_decref(cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_repository),
		cmocka_unit_test(test_tag),
		cmocka_unit_test(test_same_ref),
		cmocka_unit_test(test_default_tag),
		cmocka_unit_test(test_owner),
		cmocka_unit_test(test_quote_and_changes),
		cmocka_unit_test(test_replaceable),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_commit_config_drops_checkpoint),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
