/*
 * fuzz-repl.c - repl_frame_feed fed in pieces cut by the first byte of the
 * input (see fuzz.h); the rest is the driver's frame stream.
 *
 * Every call must make progress: a piece is non-empty unless it is a whole
 * empty frame, lies inside the input and ends where consumption ends, "need
 * more" consumes everything, pieces of one frame add up to its size, and -1
 * stays -1.  Fed whole, the same stream must give the same frames.
 */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/repl.h"

struct outcome {
	int r;
	bool boundary;
	char *out; /* every payload byte, each frame preceded by its type */
	size_t out_len;
	size_t frames;
};

static void feed(const char *in, size_t len, uint8_t plan, struct outcome *o)
{
	struct repl_frame f;
	struct fuzz_split s;
	bool in_frame = false;
	uint64_t frame_bytes = 0;

	repl_frame_init(&f);
	fuzz_split_init(&s, plan);
	o->r = -2;
	o->out = fuzz_alloc(2 * len);
	o->out_len = 0;
	o->frames = 0;
	for (size_t pos = 0; pos < len && o->r == -2;) {
		size_t n = fuzz_split_next(&s, len - pos);
		char *piece = fuzz_piece(in + pos, n);
		size_t off = 0;
		for (size_t calls = 0;; calls++) {
			FUZZ_CHECK(calls <= n + 1);
			size_t used = SIZE_MAX;
			struct repl_piece p;
			int r = repl_frame_feed(&f, piece + off, n - off, &used, &p);
			FUZZ_CHECK(r == 1 || r == -1 || r == -2);
			if (r == -1) {
				o->r = -1;
				FUZZ_CHECK(!repl_frame_at_boundary(&f));
				FUZZ_CHECK(repl_frame_feed(&f, piece, n, &used, &p) == -1);
				break;
			}
			FUZZ_CHECK(used <= n - off);
			off += used;
			if (r == -2) {
				FUZZ_CHECK(off == n);
				break;
			}
			FUZZ_CHECK(strchr("hoefr", p.type) && p.type);
			FUZZ_CHECK(p.size <= REPL_FRAME_MAX);
			FUZZ_CHECK(p.first == !in_frame);
			FUZZ_CHECK(p.data.n > 0 || (p.size == 0 && p.first && p.last));
			if (p.data.n)
				FUZZ_CHECK(p.data.p >= piece && p.data.p + p.data.n == piece + off);
			if (p.first) {
				frame_bytes = 0;
				FUZZ_CHECK(o->out_len < 2 * len);
				o->out[o->out_len++] = (char)p.type;
			}
			frame_bytes += p.data.n;
			FUZZ_CHECK(frame_bytes <= p.size);
			FUZZ_CHECK(o->out_len + p.data.n <= 2 * len);
			memcpy(o->out + o->out_len, p.data.p, p.data.n);
			o->out_len += p.data.n;
			in_frame = !p.last;
			if (p.last) {
				FUZZ_CHECK(frame_bytes == p.size);
				o->frames++;
			}
		}
		free(piece);
		pos += n;
	}
	o->boundary = repl_frame_at_boundary(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	struct outcome split, whole;

	feed(in, len, data[0], &split);
	feed(in, len, 0, &whole);
	FUZZ_CHECK(split.r == whole.r);
	FUZZ_CHECK(split.boundary == whole.boundary);
	FUZZ_CHECK(split.frames == whole.frames);
	FUZZ_CHECK(split.out_len == whole.out_len);
	FUZZ_CHECK(memcmp(split.out, whole.out, split.out_len) == 0);
	free(split.out);
	free(whole.out);
	return 0;
}
