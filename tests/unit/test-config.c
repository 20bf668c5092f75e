/*
 * test-config.c - defaults, environment, flags, validation, tool groups, and
 * DOCKER_HOST parsing.
 */
#include "testutil.h"

#include <errno.h>

#include <sys/socket.h>
#include <sys/un.h>

#include "base/log.h"
#include "clientcfg.h"
#include "config/config.h"
#include "engine/endpoint.h"

static void test_defaults(void **state)
{
	struct config c;
	struct err e;
	char *envp[] = { NULL };
	char *argv[] = { "x", NULL };
	int next;
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 1, argv, 1, &next, &e), 0);
	assert_int_equal(next, 1);
	assert_string_equal(c.image, "sandbox-mcp-python:latest");
	assert_int_equal(c.memory_mb, 512);
	assert_true(c.cpus == 1.0);
	assert_int_equal(c.pids, 256);
	assert_int_equal(c.timeout_s, 60);
	assert_int_equal(c.idle_ttl_s, 1800);
	assert_int_equal(c.max_sessions, 10);
	assert_int_equal(c.max_upload_mb, 50);
	assert_int_equal(c.output_bytes, 8192);
	assert_int_equal(c.max_code_bytes, 100000);
	assert_string_equal(c.workspace, "/workspace");
	assert_string_equal(c.host_dirs, "");
	assert_int_equal(c.tool_groups, TOOL_GROUP_ALL);
	assert_null(c.docker_host);
	assert_string_equal(c.images, "");
	assert_string_equal(c.pull, "missing");
	json_t *j = config_to_json(&c);
	assert_string_equal(json_string_value(json_object_get(j, "pull")), "missing");
	assert_non_null(strstr(json_string_value(json_object_get(j, "image_policy")), "docker.io/library/*"));
	json_decref(j);
	config_finish(&c);
}

static void test_env_then_flags(void **state)
{
	struct config c;
	struct err e;
	char *envp[] = { "SANDBOX_MEMORY_MB=1024",
			 "SANDBOX_IMAGE=envimg",
			 "DOCKER_HOST=tcp://127.0.0.1:2375",
			 "SANDBOX_TOOLS=run,env",
			 "OTHER=1",
			 "SANDBOX_PULL=never",
			 "SANDBOX_IMAGES=python:*",
			 NULL };
	char *argv[] = { "x", "--image", "flagimg", "--cpus=0.5", "--max-sessions", "3", "doctor", NULL };
	int next;
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 7, argv, 1, &next, &e), 0);
	assert_int_equal(next, 6);
	assert_string_equal(argv[next], "doctor");
	assert_int_equal(c.memory_mb, 1024);
	assert_string_equal(c.image, "flagimg");
	assert_true(c.cpus == 0.5);
	assert_int_equal(c.max_sessions, 3);
	assert_string_equal(c.docker_host, "tcp://127.0.0.1:2375");
	assert_int_equal(c.tool_groups, TOOL_GROUP_RUN | TOOL_GROUP_ENV);
	assert_string_equal(c.pull, "never");
	assert_string_equal(c.images, "python:*");
	assert_string_equal(c.commit_repos, CONFIG_COMMIT_REPOS_DEFAULT);
	json_t *j = config_to_json(&c);
	assert_string_equal(json_string_value(json_object_get(j, "commit_repos")), CONFIG_COMMIT_REPOS_DEFAULT);
	assert_string_equal(json_string_value(json_object_get(j, "image")), "flagimg");
	assert_int_equal(json_integer_value(json_object_get(j, "memory_mb")), 1024);
	json_decref(j);
	config_finish(&c);
}

static void test_errors(void **state)
{
	struct {
		char *env;
		char *flag;
		const char *want;
	} cases[] = {
		{ "SANDBOX_MEMORY_MB=lots", NULL, "SANDBOX_MEMORY_MB: 'lots' is not a whole number" },
		{ "SANDBOX_MEMORY_MB=1", NULL, "from 16 to" },
		{ NULL, "--cpus=0", "not a number from 0.01 to 256" },
		{ NULL, "--cpus=abc", "not a number" },
		{ "SANDBOX_TOOLS=run,bogus", NULL, "unknown group 'bogus'" },
		{ "SANDBOX_WORKSPACE=relative", NULL, "must be an absolute path" },
		{ "SANDBOX_LOG_LEVEL=loud", NULL, "log level 'loud'" },
		{ "SANDBOX_COMMIT_REPOS=sandbox-*-x", NULL, "'*' may only end a pattern" },
		{ NULL, "--commit-repos=a,*b", "'*' may only end a pattern" },
		{ NULL, "--timeout-s", "--timeout-s needs a value" },
		{ "SANDBOX_PULL=sometimes", NULL, "pull 'sometimes' is not one of never, missing, always" },
		{ NULL, "--images=python:*,,x", "images: '' is not an image pattern" },
		{ "SANDBOX_IMAGES=python:* ; rm", NULL, "is not an image pattern" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct config c;
		struct err e;
		char *envp[] = { cases[i].env, NULL };
		char *argv[] = { "x", cases[i].flag, NULL };
		int next;
		config_init(&c);
		assert_int_equal(config_load(&c, envp, cases[i].flag ? 2 : 1, argv, 1, &next, &e), -EINVAL);
		if (!strstr(e.msg, cases[i].want))
			fail_msg("case %zu: '%s' lacks '%s'", i, e.msg, cases[i].want);
		config_finish(&c);
	}
}

static void test_unknown_flag_stops(void **state)
{
	struct config c;
	struct err e;
	char *envp[] = { NULL };
	char *argv[] = { "x", "--bogus", NULL };
	int next;
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 2, argv, 1, &next, &e), 0);
	assert_int_equal(next, 1); /* main reports it as an unknown option */
	config_finish(&c);
}

/* Settings after the command are taken too; the command and its arguments keep their order. */
static void test_settings_after_command(void **state)
{
	struct config c;
	struct err e;
	char *envp[] = { NULL };
	char *argv[] = { "x",	  "--image",   "i1",	  "config", "--docker-host", "tcp://127.0.0.1:1",
			 "codex", "--pids=99", "--bogus", "--",	    "--memory-mb",   NULL };
	int next;
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 11, argv, 1, &next, &e), 0);
	assert_string_equal(c.image, "i1");
	assert_string_equal(c.docker_host, "tcp://127.0.0.1:1");
	assert_int_equal(c.pids, 99);
	assert_int_equal(c.memory_mb, 512); /* after "--": not a setting */
	assert_int_equal(next, 7);	    /* "--" counts with the settings */
	assert_string_equal(argv[6], "--");
	assert_string_equal(argv[7], "config");
	assert_string_equal(argv[8], "codex");
	assert_string_equal(argv[9], "--bogus");
	assert_string_equal(argv[10], "--memory-mb");
	config_finish(&c);
}

/* What clientcfg_print writes for client with binary path self, or a docker launch of image. */
static char *client_launch(const char *client, const char *self, const char *image, const char *dirs, int *ret)
{
	char *text = NULL;
	size_t n = 0;
	struct err e;
	struct clientcfg_launch how = { .self = self, .image = image, .host_dirs = dirs };
	FILE *f = open_memstream(&text, &n);
	assert_non_null(f);
	err_clear(&e);
	*ret = clientcfg_print(f, client, &how, &e);
	fclose(f);
	return text;
}

static char *client_text(const char *client, const char *self, int *ret)
{
	return client_launch(client, self, NULL, NULL, ret);
}

static void test_client_docker(void **state)
{
	int r;
	(void)state;
	char *t = client_launch("claude-desktop", "/x", "sandbox-mcp:1.2", "/home/a b:/srv/it's", &r);
	assert_int_equal(r, 0);
	json_t *j = json_loads(t, 0, NULL);
	assert_non_null(j);
	json_t *e = json_object_get(json_object_get(json_object_get(j, "mcpServers"), "sandbox"), "args");
	const char *want[] = { "run",
			       "-i",
			       "--rm",
			       "-v",
			       "/var/run/docker.sock:/var/run/docker.sock",
			       "-v",
			       "/home/a b:/home/a b",
			       "-v",
			       "/srv/it's:/srv/it's",
			       "-e",
			       "SANDBOX_HOST_DIRS=/home/a b:/srv/it's",
			       "sandbox-mcp:1.2" };
	assert_int_equal(json_array_size(e), sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_string_equal(json_string_value(json_array_get(e, i)), want[i]);
	json_decref(j);
	free(t);
	t = client_launch("claude-code", "/x", "img", "/d", &r);
	assert_non_null(strstr(t, "-- 'docker' 'run' '-i' '--rm' '-v' '/var/run/docker.sock:/var/run/docker.sock' '-v' "
				  "'/d:/d' '-e' 'SANDBOX_HOST_DIRS=/d' 'img'\n"));
	free(t);
	/* too many folders for one launch: refused, not cut */
	char many[4096] = "";
	for (int i = 0; i < 40; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s/d%d", i ? ":" : "", i);
	t = client_launch("codex", "/x", "img", many, &r);
	assert_int_equal(r, -E2BIG);
	free(t);
}

static void test_client_quoting(void **state)
{
	int r;
	(void)state;
	char *t = client_text("claude-code", "/a b/it's", &r);
	assert_int_equal(r, 0);
	assert_non_null(strstr(t, "claude mcp add -s user sandbox -- '/a b/it'\\''s'\n"));
	free(t);
	t = client_text("codex", "/q\"b\\s\tt/x", &r);
	assert_int_equal(r, 0);
	assert_non_null(strstr(t, "command = \"/q\\\"b\\\\s\\u0009t/x\"\n"));
	free(t);
	t = client_text("gemini", "/p\"q", &r);
	assert_int_equal(r, 0);
	assert_non_null(strstr(t, "\"command\": \"/p\\\"q\""));
	free(t);
	/* JSON and TOML hold only UTF-8; sh takes any byte */
	t = client_text("codex", "/bad\xff", &r);
	assert_int_equal(r, -EILSEQ);
	free(t);
	t = client_text("claude-desktop", "/bad\xff", &r);
	assert_int_equal(r, -EILSEQ);
	free(t);
	t = client_text("claude-code", "/bad\xff", &r);
	assert_int_equal(r, 0);
	free(t);
	t = client_text("vim", "/x", &r);
	assert_int_equal(r, -ENOENT);
	free(t);
}

static void test_docker_host(void **state)
{
	struct endpoint ep;
	struct err e;
	assert_int_equal(endpoint_parse(NULL, &ep, &e), 0);
	assert_int_equal(ep.kind, ENDPOINT_UNIX);
	assert_string_equal(ep.path, "/var/run/docker.sock");
	assert_int_equal(endpoint_parse("unix:///run/podman/podman.sock", &ep, &e), 0);
	assert_string_equal(ep.path, "/run/podman/podman.sock");
	assert_int_equal(endpoint_parse("tcp://127.0.0.1:2376", &ep, &e), 0);
	assert_int_equal(ep.kind, ENDPOINT_TCP);
	assert_string_equal(ep.host, "127.0.0.1");
	assert_string_equal(ep.port, "2376");
	assert_int_equal(endpoint_parse("tcp://[::1]:2375", &ep, &e), 0);
	assert_string_equal(ep.host, "::1");
	assert_int_equal(endpoint_parse("tcp://localhost", &ep, &e), 0);
	assert_string_equal(ep.port, "2375");
	assert_int_equal(endpoint_parse("ftp://host", &ep, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unix:///"));
	assert_non_null(strstr(e.msg, "ssh://"));
	assert_int_equal(endpoint_parse("unix://relative.sock", &ep, &e), -EINVAL);
	assert_int_equal(endpoint_parse("tcp://host:99999", &ep, &e), -EINVAL);
	assert_int_equal(endpoint_parse("tcp://:80", &ep, &e), -EINVAL);
	char longp[200] = "unix:///";
	memset(longp + 8, 'a', 150);
	longp[158] = '\0';
	assert_int_equal(endpoint_parse(longp, &ep, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "longer than"));
}

/* ssh:// as the docker CLI takes it; nothing ssh could read as an option or a second word */
static void test_ssh_host(void **state)
{
	struct endpoint ep;
	struct err e;

	assert_int_equal(endpoint_parse("ssh://user@host", &ep, &e), 0);
	assert_int_equal(ep.kind, ENDPOINT_SSH);
	assert_string_equal(ep.user, "user");
	assert_string_equal(ep.host, "host");
	assert_string_equal(ep.port, "");
	assert_int_equal(endpoint_parse("ssh://build-box.example:2222", &ep, &e), 0);
	assert_string_equal(ep.user, "");
	assert_string_equal(ep.host, "build-box.example");
	assert_string_equal(ep.port, "2222");
	assert_int_equal(endpoint_parse("ssh://me@[::1]:22", &ep, &e), 0);
	assert_string_equal(ep.host, "::1");
	assert_string_equal(ep.port, "22");
	static const char *const bad[] = {
		"ssh://",
		"ssh://-oProxyCommand=x",
		"ssh://u@-oProxyCommand=x",
		"ssh://-l@host",
		"ssh://host/path",
		"ssh://host?x=1",
		"ssh://u:pw@host",
		"ssh://host:0",
		"ssh://host:99999",
		"ssh://host:22x",
		"ssh://ho st",
		"ssh://host;id",
		"ssh://h$(id)",
		"ssh://@host",
		"ssh://[::1",
		"ssh://[::1]x",
		"ssh://host:",
		"ssh://a@b@host",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(endpoint_parse(bad[i], &ep, &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
	}
}

/* DOCKER_TLS_VERIFY is on when non-empty (even "0"), as the docker CLI reads it; the flag is a switch. */
static void test_tls_settings(void **state)
{
	struct config c;
	struct err e;
	int next;
	struct endpoint_tls t;
	char paths[3][4096];

	char *env1[] = { "DOCKER_TLS_VERIFY=0", "HOME=/nonexistent-home", NULL };
	char *argv1[] = { "x", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env1, 1, argv1, 1, &next, &e), 0);
	assert_true(c.tls_verify);
	assert_string_equal(c.cert_path, "/nonexistent-home/.docker");
	endpoint_tls_from_config(&c, &t, paths);
	assert_true(t.verify);
	assert_null(t.ca); /* missing default files are not used */
	assert_null(t.cert);
	assert_null(t.key);
	config_finish(&c);

	char *env2[] = { "DOCKER_TLS_VERIFY=", "DOCKER_CONFIG=/cfg", "HOME=/h", NULL };
	char *argv2[] = { "x", "doctor", "--tlsverify", "--tlscacert", "/a/ca.pem", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env2, 5, argv2, 1, &next, &e), 0);
	assert_true(c.tls_verify);
	assert_string_equal(argv2[next], "doctor"); /* the switch took no value */
	assert_string_equal(c.cert_path, "/cfg");
	endpoint_tls_from_config(&c, &t, paths);
	assert_string_equal(t.ca, "/a/ca.pem"); /* named: used even if missing, to fail clearly */
	config_finish(&c);

	char *env3[] = { "DOCKER_TLS_VERIFY=1", "DOCKER_CERT_PATH=/certs", NULL };
	char *argv3[] = { "x", "--tlsverify=false", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env3, 2, argv3, 1, &next, &e), 0);
	assert_false(c.tls_verify);
	assert_string_equal(c.cert_path, "/certs");
	config_finish(&c);

	char *argv4[] = { "x", "--tlsverify=yes", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env3, 2, argv4, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not true or false"));
	config_finish(&c);

	/* the default files are used when they exist */
	char dir[] = "/tmp/sandbox-mcp-test-certs-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char f[4200];
	snprintf(f, sizeof(f), "%s/ca.pem", dir);
	FILE *fp = fopen(f, "w");
	assert_non_null(fp);
	fclose(fp);
	char cp[4200];
	snprintf(cp, sizeof(cp), "DOCKER_CERT_PATH=%s", dir);
	char *env5[] = { "DOCKER_TLS_VERIFY=1", cp, NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env5, 1, argv1, 1, &next, &e), 0);
	endpoint_tls_from_config(&c, &t, paths);
	assert_string_equal(t.ca, f);
	assert_null(t.cert);
	config_finish(&c);
	unlink(f);
	rmdir(dir);
}

static char warned[512];
static void capture_log(enum log_level level, const char *msg, void *data)
{
	if (level == LOG_LEVEL_WARNING)
		snprintf(warned, sizeof(warned), "%s", msg);
}

/* Plain tcp:// to a host other than loopback is exposed: a warning; loopback is quiet. */
static void test_plain_tcp_warning(void **state)
{
	struct endpoint ep;
	struct err e;

	assert_true(endpoint_host_is_loopback("127.0.0.1"));
	assert_true(endpoint_host_is_loopback("127.9.8.7"));
	assert_true(endpoint_host_is_loopback("::1"));
	assert_true(endpoint_host_is_loopback("localhost"));
	assert_false(endpoint_host_is_loopback("128.0.0.1"));
	assert_false(endpoint_host_is_loopback("10.0.0.1"));
	assert_false(endpoint_host_is_loopback("::2"));
	assert_false(endpoint_host_is_loopback("localhost.example"));
	assert_false(endpoint_host_is_loopback("docker.example"));

	log_set_hook(capture_log, NULL);
	warned[0] = '\0';
	assert_int_equal(endpoint_open("tcp://127.0.0.1:2375", NULL, &ep, &e), 0);
	assert_string_equal(warned, "");
	assert_int_equal(endpoint_open("tcp://10.1.2.3:2375", NULL, &ep, &e), 0);
	assert_non_null(strstr(warned, "without TLS"));
	assert_non_null(strstr(warned, "DOCKER_TLS_VERIFY"));
	endpoint_release(&ep);
	warned[0] = '\0';
	struct endpoint_tls tls = { .verify = false };
	assert_int_equal(endpoint_open("tcp://[2001:db8::1]:2375", &tls, &ep, &e), 0);
	assert_non_null(strstr(warned, "without TLS"));
	log_set_hook(NULL, NULL);
}

/* A CA file that is missing or holds no certificate is named in a docker_unavailable error. */
static void test_tls_bad_files(void **state)
{
	struct endpoint ep;
	struct err e;
	struct endpoint_tls tls = { .verify = true, .ca = "/nonexistent/ca.pem" };

	assert_true(endpoint_open("tcp://127.0.0.1:2376", &tls, &ep, &e) < 0);
	assert_int_equal(e.code, ERRCODE_DOCKER_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "/nonexistent/ca.pem"));
	tls.ca = "/dev/null";
	assert_true(endpoint_open("tcp://127.0.0.1:2376", &tls, &ep, &e) < 0);
	assert_non_null(strstr(e.msg, "/dev/null"));
	tls.ca = NULL;
	tls.cert = "/nonexistent/cert.pem";
	assert_true(endpoint_open("tcp://127.0.0.1:2376", &tls, &ep, &e) < 0);
	assert_non_null(strstr(e.msg, "both cert.pem and key.pem"));
}

static void test_connect_refused_says_how_to_fix(void **state)
{
	struct endpoint ep;
	struct err e;
	int fd;
	assert_int_equal(endpoint_parse("unix:///nonexistent/docker.sock", &ep, &e), 0);
	assert_true(endpoint_connect(&ep, 1000, &fd, &e) < 0);
	assert_int_equal(e.code, ERRCODE_DOCKER_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "DOCKER_HOST"));
}

/*
 * A unix socket whose backlog is full (a stuck engine) says EAGAIN to a
 * non-blocking connect and queues nothing: that must end in a timeout, not
 * pass for a connection.
 */
static void test_connect_backlog_full_times_out(void **state)
{
	char dir[] = "/tmp/sandbox-mcp-test-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/engine.sock", dir);
	int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 0), 0);
	/* fill the backlog: nobody accepts */
	int filler[8], nfill = 0;
	for (; nfill < 8; nfill++) {
		filler[nfill] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(filler[nfill] >= 0);
		if (connect(filler[nfill], (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			assert_int_equal(errno, EAGAIN);
			close(filler[nfill]);
			break;
		}
	}
	assert_true(nfill < 8);
	char host[sizeof(sa.sun_path) + 8];
	snprintf(host, sizeof(host), "unix://%s", sa.sun_path);
	struct endpoint ep;
	struct err e;
	int fd = -1;
	assert_int_equal(endpoint_parse(host, &ep, &e), 0);
	int64_t t0 = now_ms();
	assert_int_equal(endpoint_connect(&ep, 300, &fd, &e), -ETIMEDOUT);
	int64_t took = now_ms() - t0;
	assert_true(took >= 290 && took < 2000);
	assert_int_equal(e.code, ERRCODE_DOCKER_UNAVAILABLE);
	assert_non_null(strstr(e.msg, "in time"));
	for (int i = 0; i < nfill; i++)
		close(filler[i]);
	close(lfd);
	unlink(sa.sun_path);
	rmdir(dir);
}

/* A config.json the server cannot read is a warning and the default context, as with the docker CLI. */
static void test_unreadable_docker_config(void **state)
{
	char dir[] = "/tmp/sbx-test-dockercfg-XXXXXX", sub[64], env_dir[96];
	struct config c;
	struct err e;
	int next;
	(void)state;
	assert_non_null(mkdtemp(dir));
	/* a folder where the file should be: read fails (EISDIR) even for root, as EACCES does for others */
	snprintf(sub, sizeof(sub), "%s/config.json", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(env_dir, sizeof(env_dir), "DOCKER_CONFIG=%s", dir);
	char *env[] = { env_dir, "HOME=/nonexistent-home", NULL };
	char *argv[] = { "x", NULL };
	config_init(&c);
	assert_int_equal(config_load(&c, env, 1, argv, 1, &next, &e), 0);
	assert_null(c.context);
	assert_non_null(strstr(c.docker_config_warning, "cannot read"));
	assert_non_null(strstr(c.docker_config_warning, "config.json"));
	assert_non_null(strstr(c.docker_config_warning, "default context"));
	config_finish(&c);
	/* a readable but malformed one is still the error it was */
	assert_int_equal(rmdir(sub), 0);
	FILE *f = fopen(sub, "w");
	assert_non_null(f);
	fputs("{\"currentContext\": 7}", f);
	fclose(f);
	config_init(&c);
	assert_int_equal(config_load(&c, env, 1, argv, 1, &next, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "currentContext"));
	config_finish(&c);
	assert_int_equal(unlink(sub), 0);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_env_then_flags),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_unknown_flag_stops),
		cmocka_unit_test(test_settings_after_command),
		cmocka_unit_test(test_client_quoting),
		cmocka_unit_test(test_client_docker),
		cmocka_unit_test(test_docker_host),
		cmocka_unit_test(test_ssh_host),
		cmocka_unit_test(test_tls_settings),
		cmocka_unit_test(test_plain_tcp_warning),
		cmocka_unit_test(test_tls_bad_files),
		cmocka_unit_test(test_connect_refused_says_how_to_fix),
		cmocka_unit_test(test_connect_backlog_full_times_out),
		cmocka_unit_test(test_unreadable_docker_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
