/*
 * test-http_parse.c - response heads and chunked bodies, whole and one byte
 * at a time, each input ending at a guard page.
 */
#include "testutil.h"

#include "base/http_parse.h"
#include "base/util.h"

static const char resp_ok[] = "HTTP/1.1 200 OK\r\n"
			      "Api-Version: 1.41\r\n"
			      "Content-Type: application/json\r\n"
			      "Docker-Experimental: false\r\n"
			      "Content-Length: 2\r\n"
			      "\r\n"
			      "{}";

static void test_head_whole(void **state)
{
	struct http_head h;
	size_t headlen = sizeof(resp_ok) - 1 - 2;
	struct guarded g = guarded_copy(resp_ok, sizeof(resp_ok) - 1);

	int n = http_parse_response(g.p, sizeof(resp_ok) - 1, &h);
	assert_int_equal(n, (int)headlen);
	assert_int_equal(h.status, 200);
	assert_int_equal(h.minor_version, 1);
	assert_true(slice_eq(h.reason, "OK"));
	assert_int_equal(h.num_headers, 4);
	const struct slice *v = http_head_get(&h, "content-length");
	assert_non_null(v);
	assert_true(slice_eq(*v, "2"));
	v = http_head_get(&h, "API-VERSION");
	assert_true(slice_eq(*v, "1.41"));
	assert_null(http_head_get(&h, "X-Missing"));
	guarded_free(&g);
}

static void test_head_per_byte(void **state)
{
	size_t headlen = sizeof(resp_ok) - 1 - 2;
	for (size_t len = 0; len < headlen; len++) {
		struct http_head h;
		struct guarded g = guarded_copy(resp_ok, len);
		assert_int_equal(http_parse_response(g.p, len, &h), -2);
		guarded_free(&g);
	}
	struct http_head h;
	struct guarded g = guarded_copy(resp_ok, headlen);
	assert_int_equal(http_parse_response(g.p, headlen, &h), (int)headlen);
	guarded_free(&g);
}

static void test_head_bare_lf_and_no_reason(void **state)
{
	static const char r[] = "HTTP/1.0 204\nServer: x\n\n";
	struct http_head h;
	assert_int_equal(http_parse_response(r, sizeof(r) - 1, &h), (int)sizeof(r) - 1);
	assert_int_equal(h.status, 204);
	assert_int_equal(h.minor_version, 0);
	assert_int_equal(h.reason.n, 0);
	assert_int_equal(h.num_headers, 1);
}

static void test_head_malformed(void **state)
{
	static const char *bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 099 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon here\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\x01z\r\n\r\n",
		"HTTP/1.1 200 OK\r\n folded: x\r\n\r\n",
		"FTP/1.1 200 OK\r\n\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct http_head h;
		assert_int_equal(http_parse_response(bad[i], strlen(bad[i]), &h), -1);
	}
}

static void test_head_too_many_headers(void **state)
{
	char buf[8192];
	size_t n = (size_t)snprintf(buf, sizeof(buf), "HTTP/1.1 200 OK\r\n");
	for (int i = 0; i < HTTP_HEADERS_MAX + 1; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X-%d: v\r\n", i);
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	struct http_head h;
	assert_int_equal(http_parse_response(buf, n, &h), -1);
}

static void test_head_too_large(void **state)
{
	size_t n = HTTP_HEAD_MAX + 10;
	char *buf = malloc(n);
	memcpy(buf, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(buf + 20, 'a', n - 20);
	struct http_head h;
	/* no end of head within the cap: malformed, not "need more" */
	assert_int_equal(http_parse_response(buf, n, &h), -1);
	assert_int_equal(http_parse_response(buf, HTTP_HEAD_MAX - 1, &h), -2);
	free(buf);
}

/* Decodes all of in, feeding step bytes at a time; returns 0 and the body, or the error. */
static int decode_all(const char *in, size_t len, size_t step, char *out, size_t *out_len, size_t *ret_end)
{
	struct http_chunked d;
	http_chunked_init(&d);
	size_t pos = 0, o = 0, avail = 0;
	*ret_end = 0;
	while (pos < len || avail < len) {
		avail = pos + step < len ? pos + step : len;
		struct guarded g = guarded_copy(in + pos, avail - pos);
		size_t off = 0;
		int r;
		for (;;) {
			size_t used = 0;
			struct slice data;
			r = http_chunked_decode(&d, g.p + off, avail - pos - off, &used, &data);
			if (r == 1) {
				memcpy(out + o, data.p, data.n);
				o += data.n;
				off += used;
				continue;
			}
			off += used;
			break;
		}
		guarded_free(&g);
		if (r == -1)
			return -1;
		pos += off;
		if (r == 0) {
			*out_len = o;
			*ret_end = pos;
			return 0;
		}
		if (avail == len)
			return -2;
	}
	return -2;
}

static void test_chunked(void **state)
{
	static const char body[] =
		"4\r\nWiki\r\n5;ext=1\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nTrailer: x\r\n\r\nNEXT";
	size_t n = sizeof(body) - 1;
	for (size_t step = 1; step <= n; step++) {
		char out[64];
		size_t olen = 0, end = 0;
		assert_int_equal(decode_all(body, n, step, out, &olen, &end), 0);
		assert_int_equal(olen, 23);
		assert_memory_equal(out, "Wikipedia in\r\n\r\nchunks.", 23);
		assert_int_equal(end, n - 4); /* "NEXT" is not consumed */
	}
}

static void test_chunked_incomplete(void **state)
{
	static const char body[] = "4\r\nWiki\r\n0\r\n";
	char out[16];
	size_t olen, end;
	assert_int_equal(decode_all(body, sizeof(body) - 1, 1, out, &olen, &end), -2);
}

static void test_chunked_malformed(void **state)
{
	static const char *bad[] = {
		"g\r\n", "\r\n", "4\r\nWikiX\r\n", "4\rX", "1234567890abcdef0\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char out[64];
		size_t olen, end;
		assert_int_equal(decode_all(bad[i], strlen(bad[i]), strlen(bad[i]), out, &olen, &end), -1);
	}
}

static void test_chunked_long_extension(void **state)
{
	size_t n = HTTP_CHUNK_LINE_MAX + 16;
	char *buf = malloc(n);
	buf[0] = '1';
	buf[1] = ';';
	memset(buf + 2, 'x', n - 2);
	struct http_chunked d;
	http_chunked_init(&d);
	size_t used;
	struct slice data;
	assert_int_equal(http_chunked_decode(&d, buf, n, &used, &data), -1);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_whole),
		cmocka_unit_test(test_head_per_byte),
		cmocka_unit_test(test_head_bare_lf_and_no_reason),
		cmocka_unit_test(test_head_malformed),
		cmocka_unit_test(test_head_too_many_headers),
		cmocka_unit_test(test_head_too_large),
		cmocka_unit_test(test_chunked),
		cmocka_unit_test(test_chunked_incomplete),
		cmocka_unit_test(test_chunked_malformed),
		cmocka_unit_test(test_chunked_long_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
