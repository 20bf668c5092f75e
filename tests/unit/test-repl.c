/*
 * test-repl.c - the driver's frames, whole and cut at every step (down to one
 * byte at a time), each piece ending at a guard page; empty frames, the size
 * cap, foreign types and a sticky error.
 */
#include "testutil.h"

#include "sandbox/repl.h"

/* 'h' {}, 'o' "hi\n", an empty 'e', 'o' with the framing bytes and NUL, 'f' "PNG", 'r' {"cell":1} */
static const char frames[] = "h\0\0\0\x02{}"
			     "o\0\0\0\x03hi\n"
			     "e\0\0\0\0"
			     "o\0\0\0\x07r\0\0\0\x01\xff\n"
			     "f\0\0\0\x03PNG"
			     "r\0\0\0\x0a{\"cell\":1}";
#define FRAMES_LEN (sizeof(frames) - 1)

struct collected {
	char data[128][64]; /* by type */
	size_t len[128];
	int order[16]; /* types of the frames that ended, in order */
	size_t frames_ended;
};

static int feed_all(const char *in, size_t len, size_t step, struct collected *c, bool *ret_boundary)
{
	struct repl_frame f;
	repl_frame_init(&f);
	memset(c, 0, sizeof(*c));
	int r = -2;
	bool in_frame = false;
	for (size_t pos = 0; pos < len;) {
		size_t n = len - pos < step ? len - pos : step;
		struct guarded g = guarded_copy(in + pos, n);
		size_t off = 0;
		for (;;) {
			size_t used = SIZE_MAX;
			struct repl_piece p;
			memset(&p, 0xaa, sizeof(p));
			r = repl_frame_feed(&f, g.p + off, n - off, &used, &p);
			if (r == -1)
				break;
			assert_true(used <= n - off);
			off += used;
			if (r == -2) {
				assert_int_equal(off, n);
				break;
			}
			assert_int_equal(r, 1);
			assert_true(p.type > 0 && p.type < 128);
			assert_int_equal(p.first, !in_frame);
			assert_true(p.data.n > 0 || (p.first && p.last && p.size == 0));
			if (p.data.n)
				assert_true(p.data.p >= g.p && p.data.p + p.data.n == g.p + off);
			assert_true(c->len[p.type] + p.data.n <= sizeof(c->data[p.type]));
			memcpy(c->data[p.type] + c->len[p.type], p.data.p, p.data.n);
			c->len[p.type] += p.data.n;
			in_frame = !p.last;
			if (p.last)
				c->order[c->frames_ended++] = p.type;
		}
		guarded_free(&g);
		if (r == -1)
			break;
		pos += n;
	}
	*ret_boundary = repl_frame_at_boundary(&f);
	return r;
}

static void assert_frames(const struct collected *c)
{
	static const int order[] = { 'h', 'o', 'e', 'o', 'f', 'r' };
	assert_int_equal(c->frames_ended, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(c->order[i], order[i]);
	assert_int_equal(c->len['h'], 2);
	assert_int_equal(c->len['o'], 10);
	assert_memory_equal(c->data['o'], "hi\nr\0\0\0\x01\xff\n", 10);
	assert_int_equal(c->len['e'], 0);
	assert_memory_equal(c->data['f'], "PNG", 3);
	assert_memory_equal(c->data['r'], "{\"cell\":1}", 10);
}

static void test_whole(void **state)
{
	struct collected c;
	bool boundary;
	assert_int_equal(feed_all(frames, FRAMES_LEN, FRAMES_LEN, &c, &boundary), -2);
	assert_frames(&c);
	assert_true(boundary);
}

static void test_every_step(void **state)
{
	for (size_t step = 1; step <= FRAMES_LEN; step++) {
		struct collected c;
		bool boundary;
		assert_int_equal(feed_all(frames, FRAMES_LEN, step, &c, &boundary), -2);
		assert_frames(&c);
		assert_true(boundary);
	}
}

static void test_boundary_per_byte(void **state)
{
	/* ends of frames: EOF there is clean */
	static const size_t ends[] = { 0, 7, 15, 20, 32, 40, 55 };
	struct repl_frame f;
	repl_frame_init(&f);
	for (size_t i = 0, e = 0; i < FRAMES_LEN; i++) {
		assert_int_equal(repl_frame_at_boundary(&f), ends[e] == i);
		if (ends[e] == i)
			e++;
		struct guarded g = guarded_copy(frames + i, 1);
		size_t used = 0;
		struct repl_piece p;
		int r = repl_frame_feed(&f, g.p, 1, &used, &p);
		assert_int_equal(used, 1);
		if (r == 1 && p.size == 0) {
			/* the header's last byte of an empty frame: the empty piece comes with it */
			assert_true(p.first && p.last && p.data.n == 0);
		} else if (r == 1) {
			assert_true(p.data.n == 1 && p.data.p == g.p);
		} else {
			assert_int_equal(r, -2);
		}
		guarded_free(&g);
	}
	assert_true(repl_frame_at_boundary(&f));
}

static void test_piece_flags(void **state)
{
	static const char big[] = "o\0\0\0\x06"
				  "abcdef";
	struct repl_frame f;
	struct repl_piece p;
	size_t used;
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, big, 7, &used, &p), 1);
	assert_int_equal(used, 7);
	assert_true(p.first && !p.last && p.size == 6 && p.data.n == 2 && p.type == REPL_STDOUT);
	assert_int_equal(repl_frame_feed(&f, big + 7, 3, &used, &p), 1);
	assert_true(!p.first && !p.last && p.data.n == 3);
	assert_int_equal(repl_frame_feed(&f, big + 10, 1, &used, &p), 1);
	assert_true(!p.first && p.last && p.data.n == 1 && p.data.p[0] == 'f');
	assert_true(repl_frame_at_boundary(&f));
}

static void test_empty_input(void **state)
{
	struct repl_frame f;
	struct repl_piece p;
	size_t used = SIZE_MAX;
	repl_frame_init(&f);
	struct guarded g = guarded_copy("", 0);
	assert_int_equal(repl_frame_feed(&f, g.p, 0, &used, &p), -2);
	assert_int_equal(used, 0);
	guarded_free(&g);
	assert_true(repl_frame_at_boundary(&f));
}

static void test_truncated(void **state)
{
	struct collected c;
	bool boundary;
	/* in a header, and in a payload */
	assert_int_equal(feed_all(frames, 3, 1, &c, &boundary), -2);
	assert_false(boundary);
	assert_int_equal(feed_all(frames, 10, 1, &c, &boundary), -2);
	assert_false(boundary);
}

static void test_size_cap(void **state)
{
	char hdr[REPL_HEADER_LEN];
	struct repl_frame f;
	struct repl_piece p;
	size_t used = 0;

	repl_frame_header(hdr, REPL_FIGURE, REPL_FRAME_MAX);
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, hdr, sizeof(hdr), &used, &p), -2);
	assert_int_equal(used, REPL_HEADER_LEN);
	assert_false(repl_frame_at_boundary(&f));

	repl_frame_header(hdr, REPL_FIGURE, REPL_FRAME_MAX + 1);
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, hdr, sizeof(hdr), &used, &p), -1);
	static const char huge[] = "o\xff\xff\xff\xff";
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, huge, 5, &used, &p), -1);
}

static void test_header_encoding(void **state)
{
	char hdr[REPL_HEADER_LEN];
	repl_frame_header(hdr, REPL_CODE, 0x01020304u);
	assert_memory_equal(hdr, "c\x01\x02\x03\x04", 5);
	repl_frame_header(hdr, REPL_RESULT, 7);
	struct repl_frame f;
	struct repl_piece p;
	size_t used;
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, hdr, 5, &used, &p), -2);
	assert_int_equal(f.size, 7);
}

static void test_foreign_types(void **state)
{
	/* the server's own types, Docker's stream bytes, a Python traceback */
	static const char *const bad[] = { "c\0\0\0\0", "i\0\0\0\0", "\x01\0\0\0\0", "Traceback (most recent call" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct collected c;
		bool boundary;
		assert_int_equal(feed_all(bad[i], 5, 1, &c, &boundary), -1);
		assert_false(boundary);
	}
	/* every byte value: only the driver's five types start a frame */
	for (int t = 0; t < 256; t++) {
		char in[5] = { (char)t, 0, 0, 0, 0 };
		struct repl_frame f;
		struct repl_piece p;
		size_t used;
		repl_frame_init(&f);
		int r = repl_frame_feed(&f, in, 5, &used, &p);
		assert_int_equal(r == 1, t && strchr("hoefr", t) != NULL);
	}
}

static void test_error_is_sticky(void **state)
{
	struct repl_frame f;
	struct repl_piece p;
	size_t used = 77;
	repl_frame_init(&f);
	assert_int_equal(repl_frame_feed(&f, "X", 1, &used, &p), -1);
	assert_int_equal(repl_frame_feed(&f, frames, FRAMES_LEN, &used, &p), -1);
	assert_int_equal(repl_frame_feed(&f, frames, 0, &used, &p), -1);
	assert_int_equal(used, 77);
	assert_false(repl_frame_at_boundary(&f));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_every_step),
		cmocka_unit_test(test_boundary_per_byte),
		cmocka_unit_test(test_piece_flags),
		cmocka_unit_test(test_empty_input),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_header_encoding),
		cmocka_unit_test(test_foreign_types),
		cmocka_unit_test(test_error_is_sticky),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
