/*
 * test-config.c - defaults, environment, flags, validation, tool groups, and
 * DOCKER_HOST parsing.
 */
#include "testutil.h"

#include <errno.h>

#include <sys/socket.h>
#include <sys/un.h>

#include "clientcfg.h"
#include "config.h"
#include "transport.h"

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
	char *envp[] = { "SANDBOX_MEMORY_MB=1024", "SANDBOX_IMAGE=envimg", "DOCKER_HOST=tcp://127.0.0.1:2375",
			 "SANDBOX_TOOLS=run,env", "OTHER=1", "SANDBOX_PULL=never", "SANDBOX_IMAGES=python:*", NULL };
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
	char *argv[] = { "x", "--image", "i1", "config", "--docker-host", "tcp://127.0.0.1:1", "codex",
			 "--pids=99", "--bogus", "--", "--memory-mb", NULL };
	int next;
	config_init(&c);
	assert_int_equal(config_load(&c, envp, 11, argv, 1, &next, &e), 0);
	assert_string_equal(c.image, "i1");
	assert_string_equal(c.docker_host, "tcp://127.0.0.1:1");
	assert_int_equal(c.pids, 99);
	assert_int_equal(c.memory_mb, 512); /* after "--": not a setting */
	assert_int_equal(next, 7); /* "--" counts with the settings */
	assert_string_equal(argv[6], "--");
	assert_string_equal(argv[7], "config");
	assert_string_equal(argv[8], "codex");
	assert_string_equal(argv[9], "--bogus");
	assert_string_equal(argv[10], "--memory-mb");
	config_finish(&c);
}

/* What clientcfg_print writes for client with binary path self. */
static char *client_text(const char *client, const char *self, int *ret)
{
	char *text = NULL;
	size_t n = 0;
	struct err e;
	FILE *f = open_memstream(&text, &n);
	assert_non_null(f);
	err_clear(&e);
	*ret = clientcfg_print(f, client, self, &e);
	fclose(f);
	return text;
}

static void test_client_quoting(void **state)
{
	int r;
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
	assert_int_equal(transport_parse(NULL, &ep, &e), 0);
	assert_int_equal(ep.kind, TRANSPORT_UNIX);
	assert_string_equal(ep.path, "/var/run/docker.sock");
	assert_int_equal(transport_parse("unix:///run/podman/podman.sock", &ep, &e), 0);
	assert_string_equal(ep.path, "/run/podman/podman.sock");
	assert_int_equal(transport_parse("tcp://127.0.0.1:2376", &ep, &e), 0);
	assert_int_equal(ep.kind, TRANSPORT_TCP);
	assert_string_equal(ep.host, "127.0.0.1");
	assert_string_equal(ep.port, "2376");
	assert_int_equal(transport_parse("tcp://[::1]:2375", &ep, &e), 0);
	assert_string_equal(ep.host, "::1");
	assert_int_equal(transport_parse("tcp://localhost", &ep, &e), 0);
	assert_string_equal(ep.port, "2375");
	assert_int_equal(transport_parse("ssh://user@host", &ep, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "unix:///"));
	assert_int_equal(transport_parse("unix://relative.sock", &ep, &e), -EINVAL);
	assert_int_equal(transport_parse("tcp://host:99999", &ep, &e), -EINVAL);
	assert_int_equal(transport_parse("tcp://:80", &ep, &e), -EINVAL);
	char longp[200] = "unix:///";
	memset(longp + 8, 'a', 150);
	longp[158] = '\0';
	assert_int_equal(transport_parse(longp, &ep, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "longer than"));
}

static void test_connect_refused_says_how_to_fix(void **state)
{
	struct endpoint ep;
	struct err e;
	int fd;
	assert_int_equal(transport_parse("unix:///nonexistent/docker.sock", &ep, &e), 0);
	assert_true(transport_connect(&ep, 1000, &fd, &e) < 0);
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
	assert_int_equal(transport_parse(host, &ep, &e), 0);
	int64_t t0 = now_ms();
	assert_int_equal(transport_connect(&ep, 300, &fd, &e), -ETIMEDOUT);
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
		cmocka_unit_test(test_docker_host),
		cmocka_unit_test(test_connect_refused_says_how_to_fix),
		cmocka_unit_test(test_connect_backlog_full_times_out),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
