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

#include "base/buf.h"
#include "buildconf.h"
#include "config/config.h"
#include "engine/engine.h"
#include "mcp/mcp.h"
#include "mcp/out.h"

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
	assert_int_equal(engine_create("unix:///nonexistent/sandbox-mcp-test.sock", NULL, 1000, &engine, &e), 0);
	assert_int_equal(pipe(p), 0);
	d.fd = p[0];
	buf_init(&d.got, 64u << 20);
	assert_int_equal(pthread_create(&t, NULL, drain_main, &d), 0);

	struct out *out = out_create(p[1]);
	struct tool_services svc = { .cfg = &cfg, .engine = engine };
	struct mcp *m = mcp_create(&svc, out);
	/* mcp consumes big lines in place, as it does the reader's buffer */
	char *mine = xmalloc(len + 1);
	memcpy(mine, input, len);
	char *line = mine, *end = mine + len;
	while (line < end) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
		mcp_handle_line(m, line, n);
		line += n + 1;
	}
	free(mine);
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
			buf_printf(&in,
				   "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":%d}}\n",
				   i);
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

/*
 * Lines of MCP_BIG_LINE bytes or more are parsed as a stream while their
 * parsed part is handed back to the kernel: the message must come out the
 * same, and an error late in such a line must still be found where it is.
 */
static void test_big_lines(void **state)
{
	(void)state;
	size_t pad = MCP_BIG_LINE + (3u << 20) + 123;
	struct buf in;
	buf_init(&in, SIZE_MAX);
	/* a ping whose _meta carries a big string: one reply, id kept */
	assert_int_equal(buf_printf(&in,
				    "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"ping\",\"params\":{\"_meta\":{\"x\":\""),
			 0);
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(buf_append(&in, &"abcdefgh"[i % 8], 1), 0);
	assert_int_equal(buf_printf(&in, "\"}}}\n"), 0);
	/* the same, broken three bytes before its end */
	size_t second = in.len;
	char *copy = xmalloc(second - 1);
	memcpy(copy, in.data, second - 1);
	assert_int_equal(buf_append(&in, copy, second - 1), 0);
	free(copy);
	in.data[in.len - 3] = '#';
	assert_int_equal(buf_printf(&in, "\n{\"jsonrpc\":\"2.0\",\"id\":78,\"method\":\"ping\"}\n"), 0);

	_cleanup_free_ char *got = run_lines(in.data, in.len);
	buf_finish(&in);
	/* big lines are parsed on a worker: the ping behind them may be answered first */
	const char *l1 = NULL, *l2 = NULL, *l3 = NULL;
	int lines = 0;
	for (char *l = got, *nl; *l; l = nl + 1, lines++) {
		nl = strchr(l, '\n');
		assert_non_null(nl);
		*nl = '\0';
		if (strstr(l, "\"id\":77"))
			l1 = l;
		else if (strstr(l, "-32700"))
			l2 = l;
		else if (strstr(l, "\"id\":78"))
			l3 = l;
	}
	assert_int_equal(lines, 3);
	assert_non_null(l1);
	assert_non_null(l2);
	assert_non_null(l3);
	assert_non_null(strstr(l1, "\"result\""));
	/* the parse error names a position near the end of the 7 MiB line */
	const char *pos = strstr(l2, "at byte ");
	assert_non_null(pos);
	long long byte = strtoll(pos + 8, NULL, 10);
	assert_true(byte >= (long long)(second - 1 - 8) && byte <= (long long)(second - 1));
	assert_non_null(strstr(l3, "\"result\""));
}

/*
 * Big string values are lifted out of big lines before parsing and put back
 * (decoded) wherever no tool takes them as its bulk argument: an unknown
 * tool's name and a bad resource uri come back in the errors as sent, not as
 * the markers that stood in for them.
 */
static void test_big_strings_restored(void **state)
{
	(void)state;
	size_t pad = MCP_BIG_LINE + 4096;
	struct buf in;
	buf_init(&in, SIZE_MAX);
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
					 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
					 "{\"name\":\"t\",\"version\":\"1\"}}}\n"),
			 0);
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{"
					 "\"arguments\":{},\"name\":\"\\u00e9t\\\"ool"),
			 0);
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(buf_append(&in, "x", 1), 0);
	assert_int_equal(buf_printf(&in, "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"resources/read\","
					 "\"params\":{\"uri\":\"no\\/such"),
			 0);
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(buf_append(&in, "y", 1), 0);
	assert_int_equal(buf_printf(&in, "\",\"a\":[\""), 0);
	for (size_t i = 0; i < pad; i++)
		assert_int_equal(buf_append(&in, "z", 1), 0);
	assert_int_equal(buf_printf(&in, "\"]}}\n"), 0);

	_cleanup_free_ char *got = run_lines(in.data, in.len);
	buf_finish(&in);
	assert_non_null(strstr(got, "Unknown tool '\xc3\xa9t\\\"oolxxx"));
	assert_non_null(strstr(got, "Resource not found: no/suchyyy"));
	assert_null(strstr(got, "sandbox-mcp-bulk"));
}

/*
 * A big tools/call line of any shape: no name, a name that is no string.
 * Found by fuzz-rpc (the fuzz build lowers MCP_BIG_LINE): the bulk argument
 * was looked up by a name never checked, and the server crashed.
 */
static void test_big_line_without_name(void **state)
{
	(void)state;
	size_t pad = MCP_BIG_LINE + 4096;
	struct buf in;
	buf_init(&in, SIZE_MAX);
	const char *shapes[] = { "\"nAme\":\"file_write\"", "\"name\":7", "\"name\":null" };
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
					 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
					 "{\"name\":\"t\",\"version\":\"1\"}}}\n"),
			 0);
	for (int k = 0; k < 3; k++) {
		assert_int_equal(buf_printf(&in,
					    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
					    "%s,\"arguments\":{\"path\":\"a\",\"content\":\"",
					    k + 1, shapes[k]),
				 0);
		for (size_t i = 0; i < pad; i++)
			assert_int_equal(buf_append(&in, "x", 1), 0);
		assert_int_equal(buf_printf(&in, "\"}}}\n"), 0);
	}
	_cleanup_free_ char *got = run_lines(in.data, in.len);
	buf_finish(&in);
	for (int k = 1; k <= 3; k++) {
		char want[64];
		snprintf(want, sizeof(want), "\"id\":%d,\"error\":{\"code\":-32602", k);
		assert_non_null(strstr(got, want));
	}
}

/*
 * A line whose decoding would cost more than its budget is refused before
 * jansson sees it, and answered with its own id even when the id comes after
 * the values; so is one nested too deep.  A valid line holding \u0000 gets
 * -32602 with its id, not -32700 with a null one.
 */
static void test_json_budget(void **state)
{
	(void)state;
	struct buf in;
	buf_init(&in, SIZE_MAX);
	/* 400,000 empty objects: about 100 MB for jansson, from a 1.2 MB line */
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{\"x\":["), 0);
	for (int i = 0; i < 400000; i++)
		assert_int_equal(buf_append(&in, i ? ",{}" : "{}", i ? 3 : 2), 0);
	assert_int_equal(buf_printf(&in, "]},\"id\":\"many\"}\n"), 0);
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"params\":{\"x\":"), 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(buf_append(&in, "[", 1), 0);
	for (int i = 0; i < 200; i++)
		assert_int_equal(buf_append(&in, "]", 1), 0);
	assert_int_equal(buf_printf(&in, "}}\n"), 0);
	/* within the budget: 1000 objects pass */
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params\":{\"x\":["), 0);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(buf_append(&in, i ? ",{}" : "{}", i ? 3 : 2), 0);
	assert_int_equal(buf_printf(&in, "]}}\n"), 0);
	assert_int_equal(buf_printf(&in,
				    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"_meta\":{\"s\":\"a\\u0000b\"}}}\n"),
			 0);
	assert_int_equal(buf_printf(&in,
				    "{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{\"k\\u0000\":1},\"id\":\"eight\"}\n"),
			 0);
	/* no recoverable id: still one reply, with a null id */
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"p\\u0000\"}\n"), 0);

	_cleanup_free_ char *got = run_lines(in.data, in.len);
	buf_finish(&in);
	char *saveptr = NULL;
	const char *want[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":\"many\",\"error\":{\"code\":-32600,\"message\":\"Invalid Request: the message holds too many JSON values",
		"{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: the message nests objects and arrays 202 deep",
		"{\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}",
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"Invalid params: a string in this request holds \\\\u0000",
		"{\"jsonrpc\":\"2.0\",\"id\":\"eight\",\"error\":{\"code\":-32602,",
		"{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32602,",
	};
	size_t i = 0;
	for (char *l = strtok_r(got, "\n", &saveptr); l; l = strtok_r(NULL, "\n", &saveptr), i++) {
		assert_true(i < sizeof(want) / sizeof(want[0]));
		if (strncmp(l, want[i], strlen(want[i])) != 0)
			fail_msg("reply %zu: %.300s\nwanted: %s", i, l, want[i]);
	}
	assert_int_equal(i, sizeof(want) / sizeof(want[0]));
}

/*
 * A big line is parsed on a worker, but the calls sent after it still start
 * after its call: on one session, the replies come in the order sent (here
 * each fails its argument check, as there is no session manager), five
 * times over.
 */
static void test_big_line_keeps_call_order(void **state)
{
	(void)state;
	struct buf in;
	buf_init(&in, SIZE_MAX);
	assert_int_equal(buf_printf(&in, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
					 "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":"
					 "{\"name\":\"t\",\"version\":\"1\"}}}\n"),
			 0);
	for (int k = 0; k < 5; k++) {
		assert_int_equal(buf_printf(&in,
					    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{"
					    "\"name\":\"file_write\",\"arguments\":{\"session_id\":\"x\",\"path\":5,"
					    "\"content\":\"",
					    100 + 2 * k),
				 0);
		for (size_t i = 0; i < MCP_BIG_LINE; i++)
			assert_int_equal(buf_append(&in, "x", 1), 0);
		assert_int_equal(buf_printf(&in,
					    "\"}}}\n{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\","
					    "\"params\":{\"name\":\"run_command\",\"arguments\":{\"session_id\":\"x\","
					    "\"command\":5}}}\n",
					    101 + 2 * k),
				 0);
	}
	struct err e;
	err_clear(&e);
	assert_int_equal(tools_init(&e), 0); /* the argument schemas */
	_cleanup_free_ char *got = run_lines(in.data, in.len);
	tools_finish();
	buf_finish(&in);
	const char *prev = got;
	for (int id = 100; id < 110; id++) {
		char want[32];
		snprintf(want, sizeof(want), "\"id\":%d,", id);
		const char *at = strstr(got, want);
		if (!at || at < prev)
			fail_msg("the reply to %d is missing or came before the one sent ahead of it:\n%.2000s", id,
				 got);
		prev = at;
	}
}

int main(void)
{
	util_json_init();
	log_init(LOG_LEVEL_EMERGENCY);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_one_reply_per_request),
		cmocka_unit_test(test_big_lines),
		cmocka_unit_test(test_big_strings_restored),
		cmocka_unit_test(test_big_line_without_name),
		cmocka_unit_test(test_json_budget),
		cmocka_unit_test(test_big_line_keeps_call_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
