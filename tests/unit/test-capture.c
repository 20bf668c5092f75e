/*
 * test-capture.c - the head+tail elision of one output stream, a product
 * contract (a model sees the first and last halves of the cap and how much
 * was left out): for several caps, every stream length around them, fed in
 * chunks of every size, the kept bytes equal the naive head+tail, the marker
 * names the exact count, and nothing is elided up to the cap. The stderr
 * trim of error messages: trailing newlines and spaces go, the rest is cut
 * to the room there is.
 */
#include <inttypes.h>
#include <stdio.h>

#include "testutil.h"

#include "base/capture.h"

/* A stream whose every byte depends on its position. */
static char byte_at(size_t i)
{
	return (char)('a' + (i * 7 + i / 26) % 26);
}

static void check(size_t cap, size_t len, size_t chunk)
{
	struct capture c;
	char *data = malloc(len + 1);
	assert_non_null(data);
	for (size_t i = 0; i < len; i++)
		data[i] = byte_at(i);
	capture_init(&c, cap);
	for (size_t off = 0; off < len; off += chunk)
		capture_add(&c, data + off, len - off < chunk ? len - off : chunk);

	size_t head = cap / 2, tail = cap - cap / 2;
	struct buf raw, shown;
	buf_init(&raw, SIZE_MAX);
	buf_init(&shown, SIZE_MAX);
	capture_raw(&c, &raw);
	capture_render(&c, &shown);
	if (len <= cap) {
		assert_false(capture_truncated(&c));
		assert_int_equal(raw.len, len);
		assert_memory_equal(raw.data ? raw.data : "", data, len);
		assert_int_equal(shown.len, len);
	} else {
		assert_true(capture_truncated(&c));
		assert_int_equal(raw.len, head + tail);
		assert_memory_equal(raw.data, data, head);
		assert_memory_equal(raw.data + head, data + len - tail, tail);
		char marker[128];
		snprintf(marker, sizeof(marker), "\n[... %zu bytes left out;", len - head - tail);
		assert_int_equal(memcmp(shown.data, data, head), 0);
		assert_int_equal(memcmp(shown.data + head, marker, strlen(marker)), 0);
		assert_memory_equal(shown.data + shown.len - tail, data + len - tail, tail);
	}
	assert_int_equal(c.total, len);
	buf_finish(&raw);
	buf_finish(&shown);
	capture_finish(&c);
	free(data);
}

static void test_every_length_and_chunk(void **state)
{
	(void)state;
	static const size_t caps[] = { 2, 3, 7, 16, 33 };
	for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++)
		for (size_t len = 0; len <= caps[k] * 3 + 2; len++)
			for (size_t chunk = 1; chunk <= len + 1; chunk++)
				check(caps[k], len, chunk);
}

static void test_big_stream_small_cost(void **state)
{
	(void)state;
	/* 8 MiB through a 1 KiB cap in odd chunks: only the cap is held */
	check(1024, 8u << 20, 4093);
	check(1024, (8u << 20) + 1, 65536);
}

static void test_trim(void **state)
{
	char out[8];
	capture_trim_copy("no such file\n \n", 15, out, sizeof(out));
	assert_string_equal(out, "no such");
	capture_trim_copy(" a b \n", 6, out, sizeof(out));
	assert_string_equal(out, " a b");
	capture_trim_copy("\n\n  ", 4, out, sizeof(out));
	assert_string_equal(out, "");
	capture_trim_copy("", 0, out, 1);
	assert_string_equal(out, "");
	struct guarded g = guarded_copy("x\t\n", 3);
	capture_trim_copy(g.p, 3, out, sizeof(out));
	assert_string_equal(out, "x\t");
	guarded_free(&g);
	struct capture c;
	capture_init(&c, 64);
	capture_add(&c, "tar: boom\n", 10);
	capture_render_trimmed(&c, out, sizeof(out));
	assert_string_equal(out, "tar: bo");
	capture_finish(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_length_and_chunk),
		cmocka_unit_test(test_big_stream_small_cost),
		cmocka_unit_test(test_trim),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
