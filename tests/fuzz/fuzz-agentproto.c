/*
 * fuzz-agentproto.c - agentproto_feed fed in pieces cut by the first byte of
 * the input (see fuzz.h), in the direction its second byte picks; the rest
 * is the frame stream.  Each whole 'R' payload is walked with
 * agentproto_field (a 'B' one too), each 'X' payload parsed with
 * agentproto_parse_exit and each 'O' payload with agentproto_parse_head.
 *
 * Every call must make progress: a piece lies inside the input and ends where
 * consumption ends, "need more" consumes everything, pieces of one frame add
 * up to its size, -1 stays -1, fields stay inside their payload.  Fed whole,
 * the same stream must give the same frames.
 */
#include <stdbool.h>
#include <string.h>

#include "agent/agentproto.h"
#include "fuzz.h"

struct outcome {
	int r;
	bool boundary;
	char *out; /* every payload byte, each frame preceded by its type */
	size_t out_len;
	size_t frames;
};

static void payload_checks(int type, const char *p, size_t n)
{
	if (type == 'R' || type == 'B') {
		size_t off = 0, vlen, fields = 0;
		int tag, r;
		const char *v;
		while ((r = agentproto_field(p, n, &off, &tag, &v, &vlen)) == 1) {
			FUZZ_CHECK(off <= n && v > p && v + vlen < p + n && v[vlen] == '\0');
			FUZZ_CHECK(strchr("asde", tag) && tag);
			FUZZ_CHECK(++fields <= n);
		}
		FUZZ_CHECK(r == 0 || r == -1);
	} else if (type == 'X') {
		struct agentproto_exit x;
		if (agentproto_parse_exit(p, n, &x) == 0)
			FUZZ_CHECK(x.code >= 0 && x.code <= 255);
	} else if (type == 'O') {
		/* the head line of the built-in "read" comes first on its stdout */
		uint64_t size;
		unsigned mode;
		size_t used = SIZE_MAX;
		int r = agentproto_parse_head(p, n, &size, &mode, &used);
		FUZZ_CHECK(r == 1 || r == 0 || r == -1);
		if (r == 1)
			FUZZ_CHECK(used >= 4 && used <= n && used <= AGENTPROTO_HEAD_MAX && p[used - 1] == '\n' &&
				   mode <= 07777);
		if (r == 0)
			FUZZ_CHECK(n < AGENTPROTO_HEAD_MAX && !memchr(p, '\n', n));
	}
}

static void feed(const char *types, const char *in, size_t len, uint8_t plan, struct outcome *o)
{
	struct agentproto f;
	struct fuzz_split s;
	bool in_frame = false;
	uint64_t frame_bytes = 0;
	size_t frame_start = 0;

	agentproto_init(&f, types);
	fuzz_split_init(&s, plan);
	o->r = -2;
	o->out = fuzz_alloc(2 * len + 1);
	o->out_len = 0;
	o->frames = 0;
	for (size_t pos = 0; pos < len && o->r == -2;) {
		size_t n = fuzz_split_next(&s, len - pos);
		char *piece = fuzz_piece(in + pos, n);
		size_t off = 0;
		for (size_t calls = 0;; calls++) {
			FUZZ_CHECK(calls <= n + 1);
			size_t used = SIZE_MAX;
			struct agentproto_piece p;
			int r = agentproto_feed(&f, piece + off, n - off, &used, &p);
			FUZZ_CHECK(r == 1 || r == -1 || r == -2);
			if (r == -1) {
				o->r = -1;
				FUZZ_CHECK(!agentproto_at_boundary(&f));
				FUZZ_CHECK(agentproto_feed(&f, piece, n, &used, &p) == -1);
				break;
			}
			FUZZ_CHECK(used <= n - off);
			off += used;
			if (r == -2) {
				FUZZ_CHECK(off == n);
				break;
			}
			FUZZ_CHECK(strchr(types, p.type) && p.type);
			FUZZ_CHECK(p.size <= AGENTPROTO_FRAME_MAX);
			FUZZ_CHECK(p.first == !in_frame);
			FUZZ_CHECK(p.n > 0 || (p.size == 0 && p.first && p.last));
			if (p.n)
				FUZZ_CHECK(p.p >= piece && p.p + p.n == piece + off);
			if (p.first) {
				frame_bytes = 0;
				o->out[o->out_len++] = (char)p.type;
				frame_start = o->out_len;
			}
			frame_bytes += p.n;
			FUZZ_CHECK(frame_bytes <= p.size);
			FUZZ_CHECK(o->out_len + p.n <= 2 * len);
			memcpy(o->out + o->out_len, p.p, p.n);
			o->out_len += p.n;
			in_frame = !p.last;
			if (p.last) {
				FUZZ_CHECK(frame_bytes == p.size);
				payload_checks(p.type, o->out + frame_start, p.size);
				o->frames++;
			}
		}
		free(piece);
		pos += n;
	}
	o->boundary = agentproto_at_boundary(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	const char *types = data[1] & 1 ? AGENTPROTO_TO_AGENT : AGENTPROTO_TO_SERVER;
	const char *in = (const char *)data + 2;
	size_t len = size - 2;
	struct outcome split, whole;

	feed(types, in, len, data[0], &split);
	feed(types, in, len, 0, &whole);
	FUZZ_CHECK(split.r == whole.r);
	FUZZ_CHECK(split.boundary == whole.boundary);
	FUZZ_CHECK(split.frames == whole.frames);
	FUZZ_CHECK(split.out_len == whole.out_len);
	FUZZ_CHECK(memcmp(split.out, whole.out, split.out_len) == 0);
	free(split.out);
	free(whole.out);
	return 0;
}
