/*
 * fuzz-proxyreq.c - a request head to the egress proxy on arbitrary bytes:
 * http_parse_request, proxyreq_parse, proxyreq_origin_head.
 *
 * Beyond not crashing: an accepted request names a host that is lower case,
 * without control bytes or a trailing dot, with a port; the origin head it
 * yields is one request line in origin form with no proxy or hop-by-hop
 * header, ends in "Connection: close" and a blank line, and parses again as a
 * request head of the same method, carrying the Content-Length the proxy
 * forwards the body by (a Connection header cannot take it away).
 */
#include <ctype.h>
#include <string.h>

#include "base/http_parse.h"
#include "fuzz.h"
#include "proxy/proxyreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	struct http_request h;
	struct proxyreq r;
	char why[300];

	int n = http_parse_request(in, size, &h);
	FUZZ_CHECK(n >= -2);
	if (n < 0)
		return 0;
	FUZZ_CHECK((size_t)n <= size && (size_t)n <= HTTP_PARSE_REQUEST_MAX);
	int status = proxyreq_parse(&h, &r, why, sizeof(why));
	FUZZ_CHECK(status == 0 || (status >= 400 && status <= 599 && why[0]));
	if (status)
		return 0;
	size_t hl = strlen(r.host);
	FUZZ_CHECK(hl > 0 && r.host[hl - 1] != '.' && r.port > 0);
	for (size_t i = 0; i < hl; i++)
		FUZZ_CHECK(!isupper((unsigned char)r.host[i]) && (unsigned char)r.host[i] > 0x20);
	if (r.connect)
		return 0;
	struct buf out;
	buf_init(&out, HTTP_PARSE_REQUEST_MAX + 64);
	if (proxyreq_origin_head(&h, &r, &out) == 0) {
		struct http_request h2;
		FUZZ_CHECK(out.len >= 21 && memcmp(out.data + out.len - 21, "Connection: close\r\n\r\n", 21) == 0);
		int n2 = http_parse_request(out.data, out.len, &h2);
		/* Host and Connection may take it past the headers this parser counts: the origin's is not ours */
		if (n2 == -1 && h.num_headers + 2 > HTTP_HEADERS_MAX) {
			buf_finish(&out);
			return 0;
		}
		FUZZ_CHECK(n2 == (int)out.len);
		FUZZ_CHECK(h2.method.n == h.method.n && memcmp(h2.method.p, h.method.p, h.method.n) == 0);
		FUZZ_CHECK(h2.target.n > 0 && h2.target.p[0] == '/');
		/* the length the proxy forwards a body by is the one the origin is told, once */
		int lengths = 0;
		for (size_t i = 0; i < h2.num_headers; i++)
			if (slice_case_eq(h2.headers[i].name, "Content-Length")) {
				struct slice v = h2.headers[i].value;
				int64_t len = 0;
				for (size_t k = 0; k < v.n; k++)
					len = len * 10 + (v.p[k] - '0');
				FUZZ_CHECK(len == r.content_length);
				lengths++;
			}
		FUZZ_CHECK(r.content_length < 0 ? lengths == 0 : lengths == 1);
		for (size_t i = 0; i < h2.num_headers; i++) {
			FUZZ_CHECK(!slice_case_eq(h2.headers[i].name, "Proxy-Authorization"));
			FUZZ_CHECK(!slice_case_eq(h2.headers[i].name, "Upgrade"));
		}
	}
	buf_finish(&out);
	return 0;
}
