/*
 * fuzz-http_parse.c - http_parse_response on arbitrary bytes.
 *
 * Beyond not crashing: a head that parses lies within the input and the cap,
 * every slice points inside it, the same bytes alone parse to the same length,
 * and one byte fewer is "need more" (never malformed, never a shorter head).
 */
#include <string.h>

#include "base/http_parse.h"
#include "fuzz.h"

static void check_inside(struct slice s, const char *p, size_t n)
{
	FUZZ_CHECK(s.n == 0 || (s.p >= p && s.p + s.n <= p + n));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct http_head h;

	int n = http_parse_response(in, size, &h);
	FUZZ_CHECK(n >= -2);
	if (n == -2)
		FUZZ_CHECK(size < HTTP_HEAD_MAX);
	if (n < 0)
		return 0;

	size_t len = (size_t)n;
	FUZZ_CHECK(len <= size && len <= HTTP_HEAD_MAX);
	FUZZ_CHECK(h.status >= 100 && h.status <= 599);
	FUZZ_CHECK(h.num_headers <= HTTP_HEADERS_MAX);
	check_inside(h.reason, in, len);
	for (size_t i = 0; i < h.num_headers; i++) {
		check_inside(h.headers[i].name, in, len);
		check_inside(h.headers[i].value, in, len);
		FUZZ_CHECK(h.headers[i].name.n > 0);
		FUZZ_CHECK(http_head_get(&h, "") == NULL);
	}
	(void)http_head_get(&h, "Content-Length");
	(void)http_head_get(&h, "transfer-encoding");

	char *head = fuzz_piece(in, len);
	struct http_head h2;
	FUZZ_CHECK(http_parse_response(head, len, &h2) == n);
	FUZZ_CHECK(h2.num_headers == h.num_headers && h2.status == h.status);
	FUZZ_CHECK(http_parse_response(head, len - 1, &h2) == -2);
	free(head);
	return 0;
}
