/*
 * test-rpc.c - line framing over a real pipe and JSON-RPC envelope checks.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>

#include "base/util.h"
#include "mcp/rpc.h"

struct writer {
	int fd;
	const char *data;
	size_t len;
	size_t step;
};

static void *write_slowly(void *arg)
{
	struct writer *w = arg;
	for (size_t off = 0; off < w->len; off += w->step) {
		size_t n = w->len - off < w->step ? w->len - off : w->step;
		assert_int_equal(write_full(w->fd, w->data + off, n), 0);
	}
	close(w->fd);
	return NULL;
}

/* Feeds data through a pipe step bytes at a time and collects the reader's results. */
static void run_reader(const char *data, size_t len, size_t step, size_t max_line, int *codes, char lines[][64],
		       size_t *count)
{
	int p[2];
	pthread_t t;
	struct rpc_reader r;

	assert_int_equal(pipe(p), 0);
	struct writer w = { p[1], data, len, step };
	assert_int_equal(pthread_create(&t, NULL, write_slowly, &w), 0);
	rpc_reader_init(&r, p[0], max_line);
	*count = 0;
	for (;;) {
		struct slice s;
		int rc = rpc_reader_next(&r, &s);
		codes[*count] = rc;
		if (rc == 1)
			snprintf(lines[*count], 64, "%.*s", (int)(s.n < 60 ? s.n : 60), s.p);
		else
			lines[*count][0] = '\0';
		(*count)++;
		if (rc == 0 || (rc < 0 && rc != -EMSGSIZE))
			break;
	}
	pthread_join(t, NULL);
	rpc_reader_finish(&r);
	close(p[0]);
}

static void test_lines(void **state)
{
	static const char in[] = "one\n\ntwo\r\nthree";
	for (size_t step = 1; step <= sizeof(in); step++) {
		int codes[16];
		char lines[16][64];
		size_t n;
		run_reader(in, sizeof(in) - 1, step, 4096, codes, lines, &n);
		assert_int_equal(n, 5);
		assert_int_equal(codes[0], 1);
		assert_string_equal(lines[0], "one");
		assert_string_equal(lines[1], "");
		assert_string_equal(lines[2], "two\r");
		assert_int_equal(codes[3], 1);
		assert_string_equal(lines[3], "three"); /* last line without newline */
		assert_int_equal(codes[4], 0);
	}
}

static void test_oversized_line_is_skipped(void **state)
{
	size_t max = 4096, big = 3 * 64 * 1024 + 17;
	char *in = malloc(big + 32);
	memset(in, 'x', big);
	in[big] = '\n';
	memcpy(in + big + 1, "after\n", 6);
	for (size_t step = 4093; step <= 70000; step += 30000) {
		int codes[16];
		char lines[16][64];
		size_t n;
		run_reader(in, big + 7, step, max, codes, lines, &n);
		assert_int_equal(n, 3);
		assert_int_equal(codes[0], -EMSGSIZE);
		assert_int_equal(codes[1], 1);
		assert_string_equal(lines[1], "after");
		assert_int_equal(codes[2], 0);
	}
	free(in);
}

static void test_line_at_cap(void **state)
{
	size_t max = 5000;
	char *in = malloc(2 * max + 4);
	memset(in, 'y', max);
	in[max] = '\n';
	memset(in + max + 1, 'z', max + 1);
	in[2 * max + 2] = '\n';
	int codes[16];
	char lines[16][64];
	size_t n;
	run_reader(in, 2 * max + 3, 1000, max, codes, lines, &n);
	assert_int_equal(n, 3);
	assert_int_equal(codes[0], 1);	       /* exactly max bytes: accepted */
	assert_int_equal(codes[1], -EMSGSIZE); /* one more: refused */
	assert_int_equal(codes[2], 0);
	free(in);
}

static int envelope(const char *text, struct rpc_msg *m, json_t **id, json_t **keep)
{
	struct err e;
	*keep = json_loads(text, JSON_DECODE_ANY, NULL);
	assert_non_null(*keep);
	return rpc_envelope(*keep, m, id, &e);
}

static void test_envelope(void **state)
{
	struct rpc_msg m;
	json_t *id, *j;

	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}", &m, &id, &j), 0);
	assert_int_equal(m.kind, RPC_KIND_REQUEST);
	assert_string_equal(m.method, "ping");
	assert_int_equal(json_integer_value(m.id), 7);
	json_decref(j);

	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{}}", &m, &id, &j),
			 0);
	assert_int_equal(m.kind, RPC_KIND_NOTIFICATION);
	json_decref(j);

	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{}}", &m, &id, &j), 0);
	assert_int_equal(m.kind, RPC_KIND_RESPONSE);
	json_decref(j);

	/* errors keep a valid id for the reply, drop an invalid one */
	assert_int_equal(envelope("{\"jsonrpc\":\"1.0\",\"id\":\"k\",\"method\":\"ping\"}", &m, &id, &j), -EINVAL);
	assert_string_equal(json_string_value(id), "k");
	json_decref(j);
	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", &m, &id, &j), -EINVAL);
	assert_null(id);
	json_decref(j);
	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &m, &id, &j), -EINVAL);
	json_decref(j);
	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":3}", &m, &id, &j), -EINVAL);
	assert_int_equal(json_integer_value(id), 3);
	json_decref(j);
	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":5}", &m, &id, &j), -EINVAL);
	json_decref(j);
	assert_int_equal(envelope("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\",\"params\":\"s\"}", &m, &id, &j), 0);
	assert_true(json_is_string(m.params)); /* left to the method layer: -32602 */
	json_decref(j);
	assert_int_equal(envelope("42", &m, &id, &j), -EINVAL);
	json_decref(j);
}

static void test_builders(void **state)
{
	json_t *id = json_string("q");
	json_t *e = rpc_error(id, RPC_METHOD_NOT_FOUND, "nope", NULL);
	char *s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"error\":{\"code\":-32601,\"message\":\"nope\"},\"id\":\"q\",\"jsonrpc\":\"2.0\"}");
	free(s);
	json_decref(e);
	e = rpc_error(NULL, RPC_PARSE_ERROR, "bad", json_pack("{s:i}", "x", 1));
	s = json_dumps(e, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s,
			    "{\"error\":{\"code\":-32700,\"data\":{\"x\":1},\"message\":\"bad\"},\"id\":null,\"jsonrpc\":\"2.0\"}");
	free(s);
	json_decref(e);
	json_t *r = rpc_result(id, json_object());
	s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(s, "{\"id\":\"q\",\"jsonrpc\":\"2.0\",\"result\":{}}");
	free(s);
	json_decref(r);
	json_decref(id);
}

int main(void)
{
	util_json_init();
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),	    cmocka_unit_test(test_oversized_line_is_skipped),
		cmocka_unit_test(test_line_at_cap), cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_builders),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
