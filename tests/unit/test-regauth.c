/*
 * test-regauth.c - registry credentials found as the docker CLI finds them:
 * auths (base64 auth, username/password, identity token, URL-shaped keys,
 * Docker Hub's key), credHelpers and credsStore through helper programs,
 * and hostile configs and helpers (a bad helper name, a missing helper, one
 * that answers too much, malformed JSON).
 */
#include <errno.h>
#include <sys/stat.h>

#include "testutil.h"

#include <jansson.h>

#include "base/base64.h"
#include "base/util.h"
#include "engine/regauth.h"

static char dir[64];

static void write_file(const char *name, const char *text, mode_t mode)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

/* regauth_header for domain, decoded: the JSON object, or NULL for no credentials. *rc gets the return. */
static json_t *lookup(const char *domain, int *rc, struct err *err)
{
	char *hdr = NULL;
	*rc = regauth_header(domain, &hdr, err);
	if (!hdr)
		return NULL;
	size_t n = strlen(hdr);
	for (size_t i = 0; i < n; i++) {
		assert_true(hdr[i] != '+' && hdr[i] != '/');
		hdr[i] = hdr[i] == '-' ? '+' : hdr[i] == '_' ? '/' : hdr[i];
	}
	char *plain = calloc(1, base64_decoded_max(n) + 1);
	assert_true(base64_decode(hdr, n, plain) > 0);
	json_t *j = json_loads(plain, 0, NULL);
	assert_non_null(j);
	free(plain);
	free(hdr);
	return j;
}

static void expect(const char *domain, const char *user, const char *pass, const char *server)
{
	int rc;
	struct err err;
	json_t *j = lookup(domain, &rc, &err);
	assert_int_equal(rc, 0);
	if (!user) {
		assert_null(j);
		return;
	}
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "username")), user);
	assert_string_equal(json_string_value(json_object_get(j, "password")), pass);
	assert_string_equal(json_string_value(json_object_get(j, "serveraddress")), server);
	json_decref(j);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sbx-regauth-XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("DOCKER_CONFIG", dir, 1);
	char *path = NULL;
	assert_true(asprintf(&path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin") > 0);
	setenv("PATH", path, 1);
	free(path);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_auths(void **state)
{
	(void)state;
	expect("127.0.0.1:5000", NULL, NULL, NULL); /* no config at all */
	write_file("config.json", "{not json", 0600);
	expect("127.0.0.1:5000", NULL, NULL, NULL);
	/* "u:p:x" - the password may hold ':' */
	write_file("config.json",
		   "{\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"dTpwOng=\"},"
		   "\"https://reg.example.com/v1/\":{\"username\":\"ru\",\"password\":\"rp\"},"
		   "\"https://index.docker.io/v1/\":{\"auth\":\"aHViOmh1YnBhc3M=\"},"
		   "\"tok.example.com\":{\"identitytoken\":\"T0K\"},"
		   "\"bad.example.com\":{\"auth\":\"!!!\"}}}",
		   0600);
	expect("127.0.0.1:5000", "u", "p:x", "127.0.0.1:5000");
	expect("reg.example.com", "ru", "rp", "reg.example.com");
	expect("docker.io", "hub", "hubpass", REGAUTH_HUB_KEY);
	expect("127.0.0.1:5001", NULL, NULL, NULL);
	expect("bad.example.com", NULL, NULL, NULL);
	int rc;
	struct err err;
	json_t *j = lookup("tok.example.com", &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(json_string_value(json_object_get(j, "identitytoken")), "T0K");
	json_decref(j);
}

static void test_helpers(void **state)
{
	(void)state;
	int rc;
	struct err err;
	write_file("docker-credential-sbxtest",
		   "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread s\n"
		   "case \"$s\" in *tok*) printf '{\"ServerURL\":\"%s\",\"Username\":\"<token>\",\"Secret\":\"idt\"}' \"$s\";;\n"
		   "*none*) echo 'credentials not found in native keychain'; exit 1;;\n"
		   "*) printf '{\"ServerURL\":\"%s\",\"Username\":\"hu-%s\",\"Secret\":\"hs\"}' \"$s\" \"$s\";; esac\n",
		   0700);
	write_file("docker-credential-sbxbig", "#!/bin/sh\nhead -c 200000 /dev/zero | tr '\\0' a\n", 0700);
	/* answers, closes its stdout, and lingers: waited for until the helper time limit, then killed */
	write_file("docker-credential-sbxlinger",
		   "#!/bin/sh\nprintf '{\"Username\":\"u\",\"Secret\":\"s\"}'\nexec >&- ; exec sleep 60\n", 0700);
	write_file("config.json",
		   "{\"credsStore\":\"sbxtest\",\"credHelpers\":{\"big.example.com\":\"sbxbig\",\"linger.example.com\":\"sbxlinger\","
		   "\"evil.example.com\":\"../../bin/sh\",\"gone.example.com\":\"sbx-not-installed\"},"
		   "\"auths\":{\"127.0.0.1:5000\":{\"auth\":\"dTpw\"}}}",
		   0600);
	/* credsStore wins over auths, as in the CLI; the registry goes to the helper on stdin */
	expect("127.0.0.1:5000", "hu-127.0.0.1:5000", "hs", "127.0.0.1:5000");
	expect("docker.io", "hu-" REGAUTH_HUB_KEY, "hs", REGAUTH_HUB_KEY);
	expect("none.example.com", NULL, NULL, NULL);
	json_t *j = lookup("tok.example.com", &rc, &err);
	assert_int_equal(rc, 0);
	assert_string_equal(json_string_value(json_object_get(j, "identitytoken")), "idt");
	json_decref(j);
	assert_null(lookup("big.example.com", &rc, &err));
	assert_int_equal(rc, -EPROTO);
	assert_non_null(strstr(err.msg, "answered too much"));
	assert_null(lookup("evil.example.com", &rc, &err));
	assert_int_equal(rc, -EINVAL);
	assert_null(lookup("gone.example.com", &rc, &err));
	assert_true(rc < 0);
	assert_non_null(strstr(err.msg, "docker-credential-sbx-not-installed"));
	int64_t t0 = now_ms();
	assert_null(lookup("linger.example.com", &rc, &err));
	assert_int_equal(rc, -EPROTO);
	assert_true(now_ms() - t0 < REGAUTH_HELPER_MS + 5000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_auths),
		cmocka_unit_test(test_helpers),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
