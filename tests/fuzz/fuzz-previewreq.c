/*
 * fuzz-previewreq.c - the head a preview sends the app (previewreq.h) from
 * arbitrary bytes: http_parse_request, then previewreq_rewrite.
 *
 * Beyond not crashing: what it refuses has a status and a reason; what it
 * writes parses again as one request head of the same method and target,
 * ends in "Connection: close" (or "Connection: Upgrade" when it says
 * upgrade), and carries no hop-by-hop header, no Transfer-Encoding and no
 * sbx_preview cookie item.
 */
#include <string.h>

#include "base/http_parse.h"
#include "fuzz.h"
#include "transport/http/previewreq.h"

/* No item of a Cookie value the app gets is named sbx_preview. */
static void cookie_check(struct slice v)
{
	for (size_t i = 0; i < v.n;) {
		while (i < v.n && v.p[i] == ' ')
			i++;
		FUZZ_CHECK(!(v.n - i >= 12 && memcmp(v.p + i, "sbx_preview=", 12) == 0));
		const char *semi = memchr(v.p + i, ';', v.n - i);
		i = semi ? (size_t)(semi - v.p) + 1 : v.n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_request h, h2;
	struct previewreq r;
	char why[200] = "";

	if (http_parse_request((const char *)data, size, &h) < 0)
		return 0;
	struct buf out;
	buf_init(&out, HTTP_PARSE_REQUEST_MAX + 64);
	int status = previewreq_rewrite(&h, &r, &out, why, sizeof(why));
	FUZZ_CHECK(status == 0 || (status >= 400 && status <= 499 && why[0]));
	if (status == 0) {
		const char *end = r.upgrade ? "Connection: Upgrade\r\n\r\n" : "Connection: close\r\n\r\n";
		FUZZ_CHECK(out.len >= strlen(end) && memcmp(out.data + out.len - strlen(end), end, strlen(end)) == 0);
		FUZZ_CHECK(r.content_length >= 0);
		int n2 = http_parse_request(out.data, out.len, &h2);
		/* a head at the parser's header cap gains one: then it is not this parser's to read again */
		if (n2 == -1 && h.num_headers + 1 > HTTP_HEADERS_MAX) {
			buf_finish(&out);
			return 0;
		}
		FUZZ_CHECK(n2 == (int)out.len);
		FUZZ_CHECK(h2.method.n == h.method.n && memcmp(h2.method.p, h.method.p, h.method.n) == 0);
		FUZZ_CHECK(h2.target.n == h.target.n && memcmp(h2.target.p, h.target.p, h.target.n) == 0);
		int connection = 0;
		for (size_t i = 0; i < h2.num_headers; i++) {
			const struct http_header *x = &h2.headers[i];
			FUZZ_CHECK(!slice_case_eq(x->name, "Keep-Alive") &&
				   !slice_case_eq(x->name, "Proxy-Connection") &&
				   !slice_case_eq(x->name, "Transfer-Encoding") && !slice_case_eq(x->name, "TE"));
			FUZZ_CHECK(r.upgrade || !slice_case_eq(x->name, "Upgrade"));
			connection += slice_case_eq(x->name, "Connection");
			if (slice_case_eq(x->name, "Cookie"))
				cookie_check(x->value);
		}
		FUZZ_CHECK(connection == 1);
	}
	buf_finish(&out);
	return 0;
}
