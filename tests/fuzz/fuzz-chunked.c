/*
 * fuzz-chunked.c - http_chunked_decode fed in pieces cut by the first byte
 * of the input (see fuzz.h); the rest is the body.
 *
 * Every call must make progress or end: a slice lies inside the piece and
 * within what was consumed, "need more" consumes the whole piece, and a
 * finished decoder stays finished.  Then the same body fed whole must decode
 * to the same bytes with the same result: where reads split is invisible.
 */
#include <string.h>

#include "base/http_parse.h"
#include "fuzz.h"

struct outcome {
	int r;	    /* last result: 0 done, -2 need more, -1 malformed */
	size_t end; /* input bytes consumed when done */
	char *out;  /* decoded body (never longer than the input) */
	size_t out_len;
};

static void decode(const char *in, size_t len, uint8_t plan, struct outcome *o)
{
	struct http_chunked d;
	struct fuzz_split s;

	http_chunked_init(&d);
	fuzz_split_init(&s, plan);
	o->r = -2;
	o->end = 0;
	o->out_len = 0;
	o->out = fuzz_alloc(len);
	for (size_t pos = 0; pos < len && o->r == -2;) {
		size_t n = fuzz_split_next(&s, len - pos);
		char *piece = fuzz_piece(in + pos, n);
		size_t off = 0;
		for (size_t calls = 0;; calls++) {
			FUZZ_CHECK(calls <= n); /* each call that returns 1 consumes a byte */
			size_t used = SIZE_MAX;
			struct slice data = { NULL, 0 };
			int r = http_chunked_decode(&d, piece + off, n - off, &used, &data);
			FUZZ_CHECK(r == 1 || r == 0 || r == -1 || r == -2);
			if (r == -1) {
				o->r = -1;
				break;
			}
			FUZZ_CHECK(used <= n - off);
			if (r == 1) {
				FUZZ_CHECK(used > 0 && data.n > 0 && data.n <= used);
				FUZZ_CHECK(data.p >= piece + off && data.p + data.n <= piece + off + used);
				FUZZ_CHECK(o->out_len + data.n <= len);
				memcpy(o->out + o->out_len, data.p, data.n);
				o->out_len += data.n;
				off += used;
				continue;
			}
			off += used;
			if (r == -2) {
				FUZZ_CHECK(off == n);
				break;
			}
			/* done: stays done and takes nothing more */
			o->r = 0;
			o->end = pos + off;
			FUZZ_CHECK(d.state == HTTP_CHUNKED_DONE);
			FUZZ_CHECK(http_chunked_decode(&d, piece + off, n - off, &used, &data) == 0);
			FUZZ_CHECK(used == 0);
			break;
		}
		free(piece);
		pos += n;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	struct outcome split, whole;

	decode(in, len, data[0], &split);
	decode(in, len, 0, &whole);
	FUZZ_CHECK(split.r == whole.r);
	FUZZ_CHECK(split.end == whole.end);
	FUZZ_CHECK(split.out_len == whole.out_len);
	FUZZ_CHECK(memcmp(split.out, whole.out, split.out_len) == 0);
	free(split.out);
	free(whole.out);
	return 0;
}
