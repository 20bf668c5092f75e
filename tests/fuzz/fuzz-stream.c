/*
 * fuzz-stream.c - stream_demux_feed fed in pieces cut by the first byte of
 * the input (see fuzz.h); the rest is the multiplexed stream.
 *
 * Every call must make progress: a slice is non-empty, lies inside the piece
 * and ends where consumption ends, "need more" consumes the whole piece, and
 * -1 stays -1.  Fed whole, the same stream must give the same bytes on each
 * stream, the same result and the same frame-boundary answer.
 */
#include <stdbool.h>
#include <string.h>

#include "engine/stream.h"
#include "fuzz.h"

struct outcome {
	int r;
	bool boundary;
	char *out[4]; /* by stream type */
	size_t out_len[4];
};

static void demux(const char *in, size_t len, uint8_t plan, struct outcome *o)
{
	struct stream_demux d;
	struct fuzz_split s;

	stream_demux_init(&d);
	fuzz_split_init(&s, plan);
	o->r = -2;
	for (int i = 0; i < 4; i++) {
		o->out[i] = fuzz_alloc(len);
		o->out_len[i] = 0;
	}
	for (size_t pos = 0; pos < len && o->r == -2;) {
		size_t n = fuzz_split_next(&s, len - pos);
		char *piece = fuzz_piece(in + pos, n);
		size_t off = 0;
		for (size_t calls = 0;; calls++) {
			FUZZ_CHECK(calls <= n);
			size_t used = SIZE_MAX;
			int stream = -1;
			struct slice data = { NULL, 0 };
			int r = stream_demux_feed(&d, piece + off, n - off, &used, &stream, &data);
			FUZZ_CHECK(r == 1 || r == -1 || r == -2);
			if (r == -1) {
				o->r = -1;
				FUZZ_CHECK(!stream_demux_at_boundary(&d));
				FUZZ_CHECK(stream_demux_feed(&d, piece, n, &used, &stream, &data) == -1);
				break;
			}
			FUZZ_CHECK(used <= n - off);
			off += used;
			if (r == -2) {
				FUZZ_CHECK(off == n);
				break;
			}
			FUZZ_CHECK(stream >= STREAM_STDIN && stream <= STREAM_SYSTEMERR);
			FUZZ_CHECK(data.n > 0 && data.n <= STREAM_FRAME_MAX && data.n <= used);
			FUZZ_CHECK(data.p >= piece && data.p + data.n == piece + off);
			FUZZ_CHECK(o->out_len[stream] + data.n <= len);
			memcpy(o->out[stream] + o->out_len[stream], data.p, data.n);
			o->out_len[stream] += data.n;
		}
		free(piece);
		pos += n;
	}
	o->boundary = stream_demux_at_boundary(&d);
	if (len == 0)
		FUZZ_CHECK(o->boundary);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	struct outcome split, whole;

	demux(in, len, data[0], &split);
	demux(in, len, 0, &whole);
	FUZZ_CHECK(split.r == whole.r);
	FUZZ_CHECK(split.boundary == whole.boundary);
	for (int i = 0; i < 4; i++) {
		FUZZ_CHECK(split.out_len[i] == whole.out_len[i]);
		FUZZ_CHECK(memcmp(split.out[i], whole.out[i], split.out_len[i]) == 0);
		free(split.out[i]);
		free(whole.out[i]);
	}
	return 0;
}
