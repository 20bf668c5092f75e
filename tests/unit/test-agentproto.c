/*
 * test-agentproto.c - the agent's frames, whole and cut at every step (down
 * to one byte at a time), each piece ending at a guard page; empty frames,
 * the size cap, the types of each direction, a sticky error; the fields of a
 * run request and the exit report, with their hostile forms; a built-in
 * file operation's request and the head line of its "read", cut at every
 * byte.
 */
#include "testutil.h"

#include "agent/agentproto.h"

/* 'H' hello, 'P' pid, 'O' "hi\n", an empty 'E', 'O' holding framing bytes and NUL, 'X' exit */
static const char frames[] = "H\0\0\0\x05hello"
			     "P\0\0\0\x02"
			     "42"
			     "O\0\0\0\x03hi\n"
			     "E\0\0\0\0"
			     "O\0\0\0\x07X\0\0\0\x01\xff\n"
			     "X\0\0\0\x07"
			     "0 12 34";
#define FRAMES_LEN (sizeof(frames) - 1)

struct collected {
	char data[128][64]; /* by type */
	size_t len[128];
	int order[16];
	size_t frames_ended;
};

static int feed_all(const char *types, const char *in, size_t len, size_t step, struct collected *c, bool *ret_boundary)
{
	struct agentproto f;
	agentproto_init(&f, types);
	memset(c, 0, sizeof(*c));
	int r = -2;
	bool in_frame = false;
	for (size_t pos = 0; pos < len;) {
		size_t n = len - pos < step ? len - pos : step;
		struct guarded g = guarded_copy(in + pos, n);
		size_t off = 0;
		for (;;) {
			size_t used = SIZE_MAX;
			struct agentproto_piece p;
			memset(&p, 0xaa, sizeof(p));
			r = agentproto_feed(&f, g.p + off, n - off, &used, &p);
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
			assert_true(p.n > 0 || (p.first && p.last && p.size == 0));
			if (p.n)
				assert_true(p.p >= g.p && p.p + p.n == g.p + off);
			assert_true(c->len[p.type] + p.n <= sizeof(c->data[p.type]));
			memcpy(c->data[p.type] + c->len[p.type], p.p, p.n);
			c->len[p.type] += p.n;
			in_frame = !p.last;
			if (p.last)
				c->order[c->frames_ended++] = p.type;
		}
		guarded_free(&g);
		if (r == -1)
			break;
		pos += n;
	}
	*ret_boundary = agentproto_at_boundary(&f);
	return r;
}

static void assert_frames(const struct collected *c)
{
	static const int order[] = { 'H', 'P', 'O', 'E', 'O', 'X' };
	assert_int_equal(c->frames_ended, 6);
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(c->order[i], order[i]);
	assert_memory_equal(c->data['H'], "hello", 5);
	assert_int_equal(c->len['O'], 10);
	assert_memory_equal(c->data['O'], "hi\nX\0\0\0\x01\xff\n", 10);
	assert_int_equal(c->len['E'], 0);
	assert_memory_equal(c->data['X'], "0 12 34", 7);
}

static void test_every_step(void **state)
{
	for (size_t step = 1; step <= FRAMES_LEN; step++) {
		struct collected c;
		bool boundary;
		assert_int_equal(feed_all(AGENTPROTO_TO_SERVER, frames, FRAMES_LEN, step, &c, &boundary), -2);
		assert_frames(&c);
		assert_true(boundary);
	}
}

static void test_truncated(void **state)
{
	struct collected c;
	bool boundary;
	for (size_t cut = 1; cut < FRAMES_LEN; cut++) {
		assert_int_equal(feed_all(AGENTPROTO_TO_SERVER, frames, cut, 1, &c, &boundary), -2);
		/* clean ends: after each whole frame */
		bool end = cut == 10 || cut == 17 || cut == 25 || cut == 30 || cut == 42;
		assert_int_equal(boundary, end);
	}
}

static void test_size_cap(void **state)
{
	char hdr[AGENTPROTO_HEADER_LEN];
	struct agentproto f;
	struct agentproto_piece p;
	size_t used = 0;

	agentproto_header(hdr, 'O', AGENTPROTO_FRAME_MAX);
	agentproto_init(&f, AGENTPROTO_TO_SERVER);
	assert_int_equal(agentproto_feed(&f, hdr, sizeof(hdr), &used, &p), -2);
	assert_int_equal(used, AGENTPROTO_HEADER_LEN);
	agentproto_header(hdr, 'O', AGENTPROTO_FRAME_MAX + 1);
	agentproto_init(&f, AGENTPROTO_TO_SERVER);
	assert_int_equal(agentproto_feed(&f, hdr, sizeof(hdr), &used, &p), -1);
	agentproto_init(&f, AGENTPROTO_TO_AGENT);
	assert_int_equal(agentproto_feed(&f, "I\xff\xff\xff\xff", 5, &used, &p), -1);
}

static void test_types_per_direction(void **state)
{
	for (int t = 0; t < 256; t++) {
		char in[5] = { (char)t, 0, 0, 0, 0 };
		struct agentproto f;
		struct agentproto_piece p;
		size_t used;
		agentproto_init(&f, AGENTPROTO_TO_SERVER);
		assert_int_equal(agentproto_feed(&f, in, 5, &used, &p) == 1, t && strchr("HPFOEX", t) != NULL);
		agentproto_init(&f, AGENTPROTO_TO_AGENT);
		assert_int_equal(agentproto_feed(&f, in, 5, &used, &p) == 1, t && strchr("RBICK", t) != NULL);
	}
	/* a runtime's error text instead of the agent: fails on its first byte */
	struct collected c;
	bool boundary;
	assert_int_equal(feed_all(AGENTPROTO_TO_SERVER, "OCI runtime exec failed", 23, 1, &c, &boundary), -1);
}

static void test_error_is_sticky(void **state)
{
	struct agentproto f;
	struct agentproto_piece p;
	size_t used = 77;
	agentproto_init(&f, AGENTPROTO_TO_SERVER);
	assert_int_equal(agentproto_feed(&f, "R", 1, &used, &p), -1);
	assert_int_equal(agentproto_feed(&f, frames, FRAMES_LEN, &used, &p), -1);
	assert_int_equal(agentproto_feed(&f, frames, 0, &used, &p), -1);
	assert_int_equal(used, 77);
	assert_false(agentproto_at_boundary(&f));
}

static void test_fields(void **state)
{
	static const char req[] = "als\0a-la\0eK=V\0d/workspace\0";
	static const int tags[] = { 'a', 'a', 'e', 'd' };
	static const char *const vals[] = { "ls", "-la", "K=V", "/workspace" };
	size_t len = sizeof(req) - 1;
	/* every prefix: fields come out whole or the rest is refused, never past the end */
	for (size_t cut = 0; cut <= len; cut++) {
		struct guarded g = guarded_copy(req, cut);
		size_t off = 0, k = 0;
		int tag, r;
		const char *v;
		size_t vlen;
		while ((r = agentproto_field(g.p, cut, &off, &tag, &v, &vlen)) == 1) {
			assert_int_equal(tag, tags[k]);
			assert_int_equal(vlen, strlen(vals[k]));
			assert_memory_equal(v, vals[k], vlen);
			assert_int_equal(v[vlen], '\0');
			k++;
		}
		bool whole = cut == 0 || cut == 4 || cut == 9 || cut == 14 || cut == len;
		assert_int_equal(r, whole ? 0 : -1);
		guarded_free(&g);
	}
	static const char *const bad[] = { "\0", "x1\0", "a", "s" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t off = 0, vlen, n = strlen(bad[i]) + (bad[i][0] ? 0 : 1);
		int tag;
		const char *v;
		assert_int_equal(agentproto_field(bad[i], n, &off, &tag, &v, &vlen), -1);
	}
}

static void test_exit(void **state)
{
	struct agentproto_exit x;
	static const char *const good[] = { "0 12 34", "255 0 0", "137 18446744073 1" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct guarded g = guarded_copy(good[i], strlen(good[i]));
		assert_int_equal(agentproto_parse_exit(g.p, strlen(good[i]), &x), 0);
		guarded_free(&g);
	}
	assert_int_equal(x.code, 137);
	assert_int_equal(x.cpu_ms, 18446744073ull);
	assert_int_equal(x.maxrss_kb, 1);
	static const char *const bad[] = { "",	      "0",	"0 1",	  "0 1 2 ", "0 1 2 3",
					   "256 0 0", "-1 0 0", " 0 1 2", "0  1 2", "0 1 99999999999999999999",
					   "a b c",   "0 1 2\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct guarded g = guarded_copy(bad[i], strlen(bad[i]));
		assert_int_equal(agentproto_parse_exit(g.p, strlen(bad[i]), &x), -1);
		guarded_free(&g);
	}
}

/* 'B' carries the same fields as 'R': the operation's name, then its arguments. */
static void test_builtin_request(void **state)
{
	static const char in[] = "B\0\0\0\x17"
				 "aread\0a/w/a b\0a0\0a4096\0"
				 "C\0\0\0\0";
	size_t len = sizeof(in) - 1;
	for (size_t step = 1; step <= len; step++) {
		struct collected c;
		bool boundary;
		assert_int_equal(feed_all(AGENTPROTO_TO_AGENT, in, len, step, &c, &boundary), -2);
		assert_true(boundary);
		assert_int_equal(c.frames_ended, 2);
		assert_int_equal(c.order[0], 'B');
		assert_int_equal(c.order[1], 'C');
		assert_int_equal(c.len['B'], 0x17);
		size_t off = 0, vlen, k = 0;
		int tag;
		const char *v;
		static const char *const vals[] = { "read", "/w/a b", "0", "4096" };
		while (agentproto_field(c.data['B'], c.len['B'], &off, &tag, &v, &vlen) == 1) {
			assert_int_equal(tag, 'a');
			assert_string_equal(v, vals[k]);
			k++;
		}
		assert_int_equal(k, 4);
	}
	/* the other direction never takes it */
	struct collected c;
	bool boundary;
	assert_int_equal(feed_all(AGENTPROTO_TO_SERVER, in, len, 1, &c, &boundary), -1);
}

static void test_head(void **state)
{
	static const char in[] = "1024 420\nDATA";
	size_t line = 9, len = sizeof(in) - 1;
	uint64_t size = 0;
	unsigned mode = 0;
	size_t n = 0;
	/* every prefix: "more" until the newline, then the same answer */
	for (size_t cut = 0; cut <= len; cut++) {
		struct guarded g = guarded_copy(in, cut);
		int r = agentproto_parse_head(g.p, cut, &size, &mode, &n);
		assert_int_equal(r, cut < line ? 0 : 1);
		if (r == 1) {
			assert_int_equal(size, 1024);
			assert_int_equal(mode, 0644);
			assert_int_equal(n, line);
		}
		guarded_free(&g);
	}
	static const char *const good[] = { "0 0\n", "18446744073 4095\n" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct guarded g = guarded_copy(good[i], strlen(good[i]));
		assert_int_equal(agentproto_parse_head(g.p, strlen(good[i]), &size, &mode, &n), 1);
		assert_int_equal(n, strlen(good[i]));
		guarded_free(&g);
	}
	assert_int_equal(mode, 07777);
	static const char *const bad[] = { "\n",     "1\n",    "1 \n",	  " 1 2\n",
					   "1  2\n", "1 2 \n", "1 2 3\n", "1 4096\n",
					   "-1 2\n", "a b\n",  "1 2\r\n", "99999999999999999999 1\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct guarded g = guarded_copy(bad[i], strlen(bad[i]));
		assert_int_equal(agentproto_parse_head(g.p, strlen(bad[i]), &size, &mode, &n), -1);
		guarded_free(&g);
	}
	/* no newline within the cap: refused, not waited for */
	char longline[AGENTPROTO_HEAD_MAX];
	memset(longline, '1', sizeof(longline));
	assert_int_equal(agentproto_parse_head(longline, sizeof(longline) - 1, &size, &mode, &n), 0);
	assert_int_equal(agentproto_parse_head(longline, sizeof(longline), &size, &mode, &n), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_step),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_size_cap),
		cmocka_unit_test(test_types_per_direction),
		cmocka_unit_test(test_error_is_sticky),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_exit),
		cmocka_unit_test(test_builtin_request),
		cmocka_unit_test(test_head),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
