/*
 * test-mcp.c - golden JSON-RPC exchanges: each tests/data/rpc/<case>/ holds
 * input.jsonl (lines sent) and expected.jsonl (lines the server must write,
 * compared as JSON, in order; "@VERSION@" stands for the server version,
 * "@INSTRUCTIONS@" for the instructions text, which follows the tools offered).
 * Then a few properties no golden file can show: a notification never gets a
 * reply, and every reply is exactly one line.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "buf.h"
#include "buildconf.h"
#include "config.h"
#include "engine.h"
#include "mcp.h"
#include "out.h"

struct drain {
	int fd;
	struct buf got;
};

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	char tmp[65536];
	for (;;) {
		ssize_t n = read(d->fd, tmp, sizeof(tmp));
		if (n <= 0)
			break;
		assert_int_equal(buf_append(&d->got, tmp, (size_t)n), 0);
	}
	return NULL;
}

/* Runs the input lines through a fresh server; returns its stdout. */
static char *run_lines(const char *input, size_t len)
{
	struct config cfg;
	struct err e;
	struct engine *engine;
	int p[2];
	pthread_t t;
	struct drain d;

	config_init(&cfg);
	assert_int_equal(engine_create("unix:///nonexistent/sandbox-mcp-test.sock", 1000, &engine, &e), 0);
	assert_int_equal(pipe(p), 0);
	d.fd = p[0];
	buf_init(&d.got, 64u << 20);
	assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);

	struct out *out = out_create(p[1]);
	struct tool_services svc = { .cfg = &cfg, .engine = engine, .out = out };
	struct mcp *m = mcp_create(&svc);
	const char *line = input, *end = input + len;
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		mcp_handle_line(m, line, n);
		line += n + 1;
	}
	mcp_drain(m, 5000);
	mcp_destroy(m);
	out_destroy(out);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	engine_destroy(engine);
	config_finish(&cfg);
	return buf_steal(&d.got, NULL);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	struct buf b;
	buf_init(&b, 16u << 20);
	char tmp[4096];
	size_t n;
	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		assert_int_equal(buf_append(&b, tmp, n), 0);
	fclose(f);
	return buf_steal(&b, len);
}

static char *replace_version(const char *s)
{
	struct buf b;
	buf_init(&b, SIZE_MAX);
	const char *p = s, *hit;
	while ((hit = strstr(p, "@VERSION@"))) {
		assert_int_equal(buf_append(&b, p, (size_t)(hit - p)), 0);
		assert_int_equal(buf_append_str(&b, SANDBOX_VERSION), 0);
		p = hit + 9;
	}
	assert_int_equal(buf_append_str(&b, p), 0);
	return buf_steal(&b, NULL);
}

static void run_case(const char *dir, const char *name)
{
	char path[1024];
	size_t inlen, explen;

	snprintf(path, sizeof(path), "%s/%s/input.jsonl", dir, name);
	_cleanup_free_ char *input = slurp(path, &inlen);
	assert_non_null(input);
	snprintf(path, sizeof(path), "%s/%s/expected.jsonl", dir, name);
	_cleanup_free_ char *raw = slurp(path, &explen);
	if (!raw)
		fail_msg("%s: missing expected.jsonl", name);
	_cleanup_free_ char *expected = replace_version(raw);
	_cleanup_free_ char *got = run_lines(input, inlen);

	char *save1 = NULL, *save2 = NULL;
	char *e = strtok_r(expected, "\n", &save1);
	char *g = strtok_r(got, "\n", &save2);
	int lineno = 1;
	while (e || g) {
		if (!e || !g)
			fail_msg("%s: line %d: expected %s, got %s", name, lineno, e ? e : "(end)", g ? g : "(end)");
		json_t *je = json_loads(e, 0, NULL), *jg = json_loads(g, 0, NULL);
		if (!je)
			fail_msg("%s: expected line %d is not JSON", name, lineno);
		/* instructions depend on the tools offered: any non-empty text will do */
		json_t *ei = json_object_get(json_object_get(je, "result"), "instructions");
		json_t *gi = json_object_get(json_object_get(jg, "result"), "instructions");
		if (ei && json_is_string(gi) && json_string_length(gi) > 40 &&
		    strcmp(json_string_value(ei), "@INSTRUCTIONS@") == 0) {
			json_object_del(json_object_get(je, "result"), "instructions");
			json_object_del(json_object_get(jg, "result"), "instructions");
		}
		if (!jg || !json_equal(je, jg))
			fail_msg("%s: line %d:\n expected %s\n got      %s", name, lineno, e, g);
		json_decref(je);
		json_decref(jg);
		e = strtok_r(NULL, "\n", &save1);
		g = strtok_r(NULL, "\n", &save2);
		lineno++;
	}
}

static void test_golden(void **state)
{
	const char *dir = getenv("RPC_CASES_DIR");
	assert_non_null(dir);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	int cases = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		run_case(dir, de->d_name);
		cases++;
	}
	closedir(d);
	assert_true(cases >= 5);
}

static void test_one_reply_per_request(void **state)
{
	/* 2000 mixed lines: each request gets exactly one line, notifications none */
	struct buf in;
	buf_init(&in, SIZE_MAX);
	int expect = 0;
	for (int i = 0; i < 2000; i++) {
		switch (i % 5) {
		case 0:
			buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\n", i);
			expect++;
			break;
		case 1:
			buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%d}}\n", i);
			break;
		case 2:
			buf_printf(&in, "\x01\x02 %d garbage \xff\n", i);
			expect++;
			break;
		case 3:
			buf_printf(&in, "\n");
			break;
		case 4:
			buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":\"x%d\",\"method\":\"missing\"}\n", i);
			expect++;
			break;
		}
	}
	_cleanup_free_ char *got = run_lines(in.data, in.len);
	buf_finish(&in);
	int lines = 0;
	for (char *p = got; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, expect);
}

int main(void)
{
	util_json_init();
	log_init(LOG_LEVEL_EMERGENCY);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_one_reply_per_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
