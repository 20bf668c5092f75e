/*
 * test-stream.c - Docker's multiplexed frames, whole and one byte (or any
 * step) at a time, each piece ending at a guard page.
 */
#include "testutil.h"

#include "engine/stream.h"

/* Frames: stdout "hello\n", stderr "oops\n", an empty stdout, stdout "bye". */
static const char mux[] = "\x01\0\0\0\0\0\0\x06hello\n"
			  "\x02\0\0\0\0\0\0\x05oops\n"
			  "\x01\0\0\0\0\0\0\0"
			  "\x01\0\0\0\0\0\0\x03"
			  "bye";
#define MUX_LEN (sizeof(mux) - 1)

struct collected {
	char data[4][256]; /* by stream type */
	size_t len[4];
	size_t frames_seen; /* slices returned */
};

/*
 * Demuxes in[0..len) handed over step bytes at a time, each piece in its own
 * guarded copy. Returns the last result (-2 when all was used, or -1) and
 * whether the demuxer ended on a frame boundary.
 */
static int demux_all(const char *in, size_t len, size_t step, struct collected *c, bool *ret_boundary)
{
	struct stream_demux d;
	stream_demux_init(&d);
	memset(c, 0, sizeof(*c));
	int r = -2;
	for (size_t pos = 0; pos < len;) {
		size_t n = len - pos < step ? len - pos : step;
		struct guarded g = guarded_copy(in + pos, n);
		size_t off = 0;
		for (;;) {
			size_t used = SIZE_MAX;
			int stream = -1;
			struct slice data = { NULL, 0 };
			r = stream_demux_feed(&d, g.p + off, n - off, &used, &stream, &data);
			if (r == -1)
				break;
			assert_true(used <= n - off);
			off += used;
			if (r == -2) {
				assert_int_equal(off, n);
				break;
			}
			assert_int_equal(r, 1);
			assert_true(stream >= 0 && stream <= 3);
			assert_true(data.n > 0);
			assert_true(data.p >= g.p && data.p + data.n <= g.p + off);
			assert_true(c->len[stream] + data.n <= sizeof(c->data[stream]));
			memcpy(c->data[stream] + c->len[stream], data.p, data.n);
			c->len[stream] += data.n;
			c->frames_seen++;
		}
		guarded_free(&g);
		if (r == -1)
			break;
		pos += n;
	}
	*ret_boundary = stream_demux_at_boundary(&d);
	return r;
}

static void assert_mux_output(const struct collected *c)
{
	assert_int_equal(c->len[STREAM_STDOUT], 9);
	assert_memory_equal(c->data[STREAM_STDOUT], "hello\nbye", 9);
	assert_int_equal(c->len[STREAM_STDERR], 5);
	assert_memory_equal(c->data[STREAM_STDERR], "oops\n", 5);
	assert_int_equal(c->len[STREAM_STDIN], 0);
	assert_int_equal(c->len[STREAM_SYSTEMERR], 0);
}

static void test_whole(void **state)
{
	struct collected c;
	bool boundary;
	assert_int_equal(demux_all(mux, MUX_LEN, MUX_LEN, &c, &boundary), -2);
	assert_mux_output(&c);
	assert_int_equal(c.frames_seen, 3); /* the empty frame yields nothing */
	assert_true(boundary);
}

static void test_every_step(void **state)
{
	for (size_t step = 1; step <= MUX_LEN; step++) {
		struct collected c;
		bool boundary;
		assert_int_equal(demux_all(mux, MUX_LEN, step, &c, &boundary), -2);
		assert_mux_output(&c);
		assert_true(boundary);
	}
}

static void test_boundary_per_byte(void **state)
{
	/* frame ends, after which EOF is clean */
	static const size_t ends[] = { 0, 14, 27, 35, 46 };
	struct stream_demux d;
	stream_demux_init(&d);
	for (size_t i = 0, e = 0; i < MUX_LEN; i++) {
		if (ends[e] == i) {
			assert_true(stream_demux_at_boundary(&d));
			e++;
		} else {
			assert_false(stream_demux_at_boundary(&d));
		}
		struct guarded g = guarded_copy(mux + i, 1);
		size_t used = 0;
		int stream;
		struct slice data;
		int r = stream_demux_feed(&d, g.p, 1, &used, &stream, &data);
		assert_int_equal(used, 1);
		if (r == 1)
			assert_true(data.n == 1 && data.p == g.p);
		else
			assert_int_equal(r, -2);
		guarded_free(&g);
	}
	assert_true(stream_demux_at_boundary(&d));
}

static void test_split_header(void **state)
{
	static const char frame[] = "\x02\0\0\0\0\0\0\x04warn";
	struct stream_demux d;
	size_t used;
	int stream = -1;
	struct slice data;
	stream_demux_init(&d);

	assert_int_equal(stream_demux_feed(&d, frame, 3, &used, &stream, &data), -2);
	assert_int_equal(used, 3);
	assert_false(stream_demux_at_boundary(&d));
	/* the rest of the header alone: still nothing to hand out */
	assert_int_equal(stream_demux_feed(&d, frame + 3, 5, &used, &stream, &data), -2);
	assert_int_equal(used, 5);
	assert_false(stream_demux_at_boundary(&d));
	assert_int_equal(stream_demux_feed(&d, frame + 8, 4, &used, &stream, &data), 1);
	assert_int_equal(used, 4);
	assert_int_equal(stream, STREAM_STDERR);
	assert_true(data.p == frame + 8 && data.n == 4);
	assert_true(stream_demux_at_boundary(&d));
}

static void test_header_and_payload_in_one_call(void **state)
{
	/* the slice starts after the header; *ret_consumed counts both */
	static const char two[] = "\x01\0\0\0\0\0\0\x02ok\x02\0\0\0\0\0\0\x01!";
	struct stream_demux d;
	size_t used;
	int stream;
	struct slice data;
	stream_demux_init(&d);
	assert_int_equal(stream_demux_feed(&d, two, sizeof(two) - 1, &used, &stream, &data), 1);
	assert_int_equal(used, 10);
	assert_int_equal(stream, STREAM_STDOUT);
	assert_true(data.p == two + 8 && data.n == 2);
	assert_int_equal(stream_demux_feed(&d, two + used, sizeof(two) - 1 - used, &used, &stream, &data), 1);
	assert_int_equal(used, 9);
	assert_int_equal(stream, STREAM_STDERR);
	assert_true(data.n == 1 && data.p[0] == '!');
}

static void test_zero_length_frames(void **state)
{
	static const char empties[] = "\x01\0\0\0\0\0\0\0\x02\0\0\0\0\0\0\0\x00\0\0\0\0\0\0\0";
	struct collected c;
	bool boundary;
	for (size_t step = 1; step <= sizeof(empties) - 1; step++) {
		assert_int_equal(demux_all(empties, sizeof(empties) - 1, step, &c, &boundary), -2);
		assert_int_equal(c.frames_seen, 0);
		assert_true(boundary);
	}
}

static void test_stdin_and_systemerr(void **state)
{
	static const char in[] = "\x00\0\0\0\0\0\0\x02in"
				 "\x03\0\0\0\0\0\0\x0c"
				 "daemon error";
	struct collected c;
	bool boundary;
	assert_int_equal(demux_all(in, sizeof(in) - 1, 1, &c, &boundary), -2);
	assert_int_equal(c.len[STREAM_STDIN], 2);
	assert_memory_equal(c.data[STREAM_STDIN], "in", 2);
	assert_int_equal(c.len[STREAM_SYSTEMERR], 12);
	assert_memory_equal(c.data[STREAM_SYSTEMERR], "daemon error", 12);
	assert_true(boundary);
}

static void test_empty_input(void **state)
{
	struct stream_demux d;
	size_t used = SIZE_MAX;
	int stream;
	struct slice data;
	stream_demux_init(&d);
	struct guarded g = guarded_copy("", 0);
	assert_int_equal(stream_demux_feed(&d, g.p, 0, &used, &stream, &data), -2);
	assert_int_equal(used, 0);
	assert_true(stream_demux_at_boundary(&d));
	guarded_free(&g);
}

static void test_truncated(void **state)
{
	struct collected c;
	bool boundary;
	/* EOF in a header, and EOF in a payload */
	assert_int_equal(demux_all(mux, 4, 1, &c, &boundary), -2);
	assert_false(boundary);
	assert_int_equal(demux_all(mux, 10, 10, &c, &boundary), -2);
	assert_int_equal(c.len[STREAM_STDOUT], 2);
	assert_false(boundary);
}

static void test_size_cap(void **state)
{
	static const char huge[] = "\x01\0\0\0\xff\xff\xff\xff";
	static const char over[] = "\x01\0\0\0\x00\x10\x00\x01"; /* STREAM_FRAME_MAX + 1 */
	static const char max[] = "\x01\0\0\0\x00\x10\x00\x00";	 /* STREAM_FRAME_MAX */
	struct collected c;
	bool boundary;
	for (size_t step = 1; step <= 8; step++) {
		assert_int_equal(demux_all(huge, 8, step, &c, &boundary), -1);
		assert_int_equal(demux_all(over, 8, step, &c, &boundary), -1);
		assert_int_equal(demux_all(max, 8, step, &c, &boundary), -2);
		assert_false(boundary);
	}
}

static void test_malformed(void **state)
{
	static const char *bad[] = {
		"\x04\0\0\0\0\0\0\x01x",   "\xff\0\0\0\0\0\0\x01x",
		"HTTP/1.1 200 OK\r\n", /* not multiplexed at all */
		"\x01\x01\0\0\0\0\0\x01x", "\x01\0\x01\0\0\0\0\x01x",
		"\x01\0\0\x80\0\0\0\x01x", "\x01\0\0\0\0\0\0\x01x\x01\0\x07", /* a good frame, then bad padding */
	};
	static const size_t lens[] = { 9, 9, 17, 9, 9, 9, 12 };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		for (size_t step = 1; step <= lens[i]; step++) {
			struct collected c;
			bool boundary;
			assert_int_equal(demux_all(bad[i], lens[i], step, &c, &boundary), -1);
			assert_false(boundary);
		}
	}
}

static void test_error_is_sticky(void **state)
{
	struct stream_demux d;
	size_t used = 77;
	int stream;
	struct slice data;
	stream_demux_init(&d);
	assert_int_equal(stream_demux_feed(&d, "\x09", 1, &used, &stream, &data), -1);
	assert_int_equal(stream_demux_feed(&d, mux, MUX_LEN, &used, &stream, &data), -1);
	assert_int_equal(stream_demux_feed(&d, mux, 0, &used, &stream, &data), -1);
	assert_int_equal(used, 77);
	assert_false(stream_demux_at_boundary(&d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole),
		cmocka_unit_test(test_every_step),
		cmocka_unit_test(test_boundary_per_byte),
		cmocka_unit_test(test_split_header),
		cmocka_unit_test(test_header_and_payload_in_one_call),
		cmocka_unit_test(test_zero_length_frames),
		cmocka_unit_test(test_stdin_and_systemerr),
		cmocka_unit_test(test_empty_input),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_error_is_sticky),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
