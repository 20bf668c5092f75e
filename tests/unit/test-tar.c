/*
 * test-tar.c - the tar reader against streams made by the writer and by hand
 * (hostile names, links, devices, lying sizes), read whole and a byte at a
 * time from guarded copies, cut at every length, and over every cap.
 */
#include "testutil.h"

#include <errno.h>
#include <unistd.h>

#include "base/pathsafe.h"
#include "base/tar.h"

#define BIG (1u << 30)

static const struct tar_limits roomy = { .entries = 1000, .entry_size = BIG, .total_size = BIG };

/* What a sink saw, as text: "F path size mode data|" and "D path mode|" and "S name: why|". */
struct seen {
	struct buf log;
	int stop_after; /* entries; 0: never */
	int entries;
};

static int seen_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct seen *s = arg;
	if (s->stop_after && ++s->entries > s->stop_after)
		return TAR_STOP;
	if (e->type == TAR_TYPE_DIR)
		buf_printf(&s->log, "D %s %o|", e->path, e->mode);
	else
		buf_printf(&s->log, "F %s %llu %o ", e->path, (unsigned long long)e->size, e->mode);
	return TAR_OK;
}

static int seen_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct seen *s = arg;
	buf_append(&s->log, p, n);
	return TAR_OK;
}

static int seen_end(void *arg, struct err *err)
{
	struct seen *s = arg;
	buf_append_str(&s->log, "|");
	return 0;
}

static void seen_skipped(void *arg, const char *name, const char *why)
{
	struct seen *s = arg;
	buf_printf(&s->log, "S %s: %s|", name, why);
}

/* A source that yields step bytes per call, each from its own guarded copy. */
struct stepper {
	const char *p;
	size_t n, off, step;
};

static ssize_t step_pull(void *arg, void *out, size_t want)
{
	struct stepper *st = arg;
	size_t k = st->n - st->off;
	if (k > st->step)
		k = st->step;
	if (k > want)
		k = want;
	struct guarded g = guarded_copy(st->p + st->off, k);
	memcpy(out, g.p, k);
	guarded_free(&g);
	st->off += k;
	return (ssize_t)k;
}

/* Reads p[0..n) whole and stepwise; both must agree. Returns the result, log in *ret_log. */
static int read_both(const char *p, size_t n, const struct tar_limits *lim, char **ret_log, struct err *err)
{
	int results[2];
	char *logs[2];
	for (int mode = 0; mode < 2; mode++) {
		struct seen s = { 0 };
		buf_init(&s.log, 1u << 24);
		struct tar_sink sink = { seen_entry, seen_data, seen_end, seen_skipped, &s };
		if (mode == 0) {
			struct guarded g = guarded_copy(p, n);
			results[0] = tar_read_memory(g.p, n, lim, &sink, NULL, err);
			guarded_free(&g);
		} else {
			struct stepper st = { p, n, 0, 1 };
			results[1] = tar_read(step_pull, &st, lim, &sink, NULL, err);
		}
		logs[mode] = s.log.data ? buf_steal(&s.log, NULL) : xstrdup("");
		buf_finish(&s.log);
	}
	assert_int_equal(results[0], results[1]);
	assert_string_equal(logs[0], logs[1]);
	free(logs[1]);
	*ret_log = logs[0];
	return results[0];
}

/* "d/nnn...": a name past ustar's 100 bytes. */
static void long_name(char *out, size_t n)
{
	memset(out, 'n', n - 1);
	out[n - 1] = '\0';
	memcpy(out, "d/", 2);
}

/* Builds a stream with the writer: a few awkward entries. */
static void make_sample(struct buf *out)
{
	struct tar_writer *w;
	struct err err;
	char longname[300];

	long_name(longname, sizeof(longname));
	buf_init(out, 1u << 24);
	assert_int_equal(tar_writer_create(out, &w, &err), 0);
	struct tar_entry d = { .path = "d", .type = TAR_TYPE_DIR, .mode = 0755 };
	struct tar_entry e1 = { .path = "d/h\xc3\xa9llo w\xc3\xb6rld.txt", .size = 5, .mode = 0644 };
	struct tar_entry e2 = { .path = "d/empty", .size = 0, .mode = 0600 };
	struct tar_entry e3 = { .path = longname, .size = 3, .mode = 0755 };
	struct tar_entry e4 = { .path = "d/sub/deeper", .type = TAR_TYPE_DIR, .mode = 0700 };
	assert_int_equal(tar_writer_add(w, &d, &err), 0);
	assert_int_equal(tar_writer_add(w, &e1, &err), 0);
	assert_int_equal(tar_writer_data(w, "he", 2, &err), 0);
	assert_int_equal(tar_writer_data(w, "llo", 3, &err), 0);
	assert_int_equal(tar_writer_add(w, &e2, &err), 0);
	assert_int_equal(tar_writer_add(w, &e3, &err), 0);
	assert_int_equal(tar_writer_data(w, "xyz", 3, &err), 0);
	assert_int_equal(tar_writer_add(w, &e4, &err), 0);
	assert_int_equal(tar_writer_close(w, &err), 0);
	tar_writer_destroy(w);
}

static void test_roundtrip(void **state)
{
	struct buf t;
	struct err err;
	char *log;

	make_sample(&t);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), 0);
	char longname[300], want[1024];
	long_name(longname, sizeof(longname));
	snprintf(want, sizeof(want),
		 "D d 755|F d/h\xc3\xa9llo w\xc3\xb6rld.txt 5 644 hello|F d/empty 0 600 |F %s 3 755 xyz|"
		 "D d/sub/deeper 700|",
		 longname);
	assert_string_equal(log, want);
	free(log);
	buf_finish(&t);
}

/* Every prefix of a valid stream short of its end blocks is an error, never a crash. */
static void test_truncated(void **state)
{
	struct buf t;
	struct err err;

	make_sample(&t);
	for (size_t cut = 0; cut < t.len; cut++) {
		struct seen s = { 0 };
		buf_init(&s.log, 1u << 20);
		struct tar_sink sink = { seen_entry, seen_data, seen_end, seen_skipped, &s };
		struct guarded g = guarded_copy(t.data, cut);
		int r = tar_read_memory(g.p, cut, &roomy, &sink, NULL, &err);
		guarded_free(&g);
		if (cut + 512 < t.len) {
			if (r == 0)
				fail_msg("a stream cut at %zu of %zu bytes was read as complete", cut, t.len);
			assert_true(r == -EPROTO || r == -ENODATA);
		}
		buf_finish(&s.log);
	}
	buf_finish(&t);
}

static void end_blocks(struct buf *b)
{
	static const char zeros[1024];
	buf_append(b, zeros, sizeof(zeros));
}

static void test_hostile(void **state)
{
	struct buf t;
	struct err err;
	char *log;

	buf_init(&t, 1u << 20);
	ustar_header(&t, "../../escape", '0', 4, NULL, 0644, 1000);
	ustar_body(&t, "evil", 4);
	ustar_header(&t, "/etc/cron.d/x", '0', 4, NULL, 0644, 1000);
	ustar_body(&t, "evil", 4);
	ustar_header(&t, "a/../../b", '0', 0, NULL, 0644, 1000);
	ustar_header(&t, "evil", '2', 0, "/etc/passwd", 0644, 1000);
	ustar_header(&t, "evil", '0', 3, NULL, 0644, 1000); /* a file "through" the symlink: only a plain file */
	ustar_body(&t, "abc", 3);
	ustar_header(&t, "shadow", '1', 0, "/etc/shadow", 0644, 1000);
	ustar_header(&t, "fifo", '6', 0, NULL, 0644, 1000);
	ustar_header(&t, "null", '3', 0, NULL, 0644, 1000);
	ustar_header(&t, "root", '2', 0, "/", 0644, 1000);
	ustar_header(&t, "root/etc/passwd", '0', 1, NULL, 0644, 1000);
	ustar_body(&t, "x", 1);
	ustar_header(&t, "ctl\x01name", '0', 0, NULL, 0644, 1000);
	ustar_header(&t, "./", '5', 0, NULL, 0644, 1000);
	ustar_header(&t, "./ok/", '5', 0, NULL, 0644, 1000);
	end_blocks(&t);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), 0);
	assert_string_equal(log, "S ../../escape: '..' in the name|"
				 "S /etc/cron.d/x: absolute name|"
				 "S a/../../b: '..' in the name|"
				 "S evil: symbolic link to /etc/passwd|"
				 "F evil 3 644 abc|"
				 "S shadow: hard link to /etc/shadow|"
				 "S fifo: fifo|"
				 "S null: device|"
				 "S root: symbolic link to /|"
				 "F root/etc/passwd 1 644 x|"
				 "S ctl\x01name: control characters in the name|"
				 "D  644|D ok 644|");
	free(log);
	buf_finish(&t);
}

static void test_caps(void **state)
{
	struct buf t;
	struct err err;
	char *log;

	/* a 100 GiB file is refused at its header, before any data */
	buf_init(&t, 1u << 20);
	ustar_header(&t, "sparse", '0', 100ull << 30, NULL, 0644, 1000);
	ustar_body(&t, "x", 1);
	struct tar_limits lim = { .entries = 10, .entry_size = 1u << 20, .total_size = 2u << 20 };
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), -EMSGSIZE);
	assert_int_equal(err.code, ERRCODE_TOO_LARGE);
	assert_string_equal(log, "");
	free(log);
	buf_reset(&t);

	/* the total */
	char data[1000] = { 0 };
	for (int i = 0; i < 3; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%d", i);
		ustar_header(&t, name, '0', sizeof(data), NULL, 0644, 1000);
		ustar_body(&t, data, sizeof(data));
	}
	end_blocks(&t);
	lim = (struct tar_limits){ .entries = 10, .entry_size = 1000, .total_size = 2500 };
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "add up"));
	free(log);
	lim.total_size = 3000;
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), 0);
	free(log);
	lim.entry_size = 999;
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), -EMSGSIZE);
	free(log);

	/* entries, skipped ones included */
	lim = (struct tar_limits){ .entries = 2, .entry_size = 1000, .total_size = 3000 };
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), -EMSGSIZE);
	assert_non_null(strstr(err.msg, "entries"));
	free(log);

	/* "no cap" spelled UINT64_MAX: the stream's own bound saturates instead of wrapping to a few KiB */
	buf_reset(&t);
	char *large = xcalloc(1, 100000); /* past the 40 KiB a wrapped bound would allow with 10 entries */
	ustar_header(&t, "large", '0', 100000, NULL, 0644, 1000);
	ustar_body(&t, large, 100000);
	end_blocks(&t);
	free(large);
	lim = (struct tar_limits){ .entries = 10, .entry_size = UINT64_MAX, .total_size = UINT64_MAX };
	assert_int_equal(read_both(t.data, t.len, &lim, &log, &err), 0);
	free(log);
	buf_finish(&t);
}

static void test_malformed(void **state)
{
	struct err err;
	char *log;
	struct buf t;

	assert_int_equal(read_both("", 0, &roomy, &log, &err), -ENODATA);
	free(log);
	char junk[2048];
	memset(junk, 'A', sizeof(junk));
	assert_int_equal(read_both(junk, sizeof(junk), &roomy, &log, &err), -EPROTO);
	free(log);
	/* gzip magic: compressed streams are refused */
	static const char gz[] = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
				 "abcdefghijklmnopqrstuvwxyz";
	assert_int_equal(read_both(gz, sizeof(gz) - 1, &roomy, &log, &err), -EPROTO);
	free(log);

	/* a bad checksum in the second header */
	buf_init(&t, 1u << 20);
	ustar_header(&t, "a", '0', 1, NULL, 0644, 1000);
	ustar_body(&t, "a", 1);
	ustar_header(&t, "b", '0', 1, NULL, 0644, 1000);
	t.data[1024 + 148] = '7';
	ustar_body(&t, "b", 1);
	end_blocks(&t);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), -EPROTO);
	free(log);

	/* a file whose data ends early, then nothing */
	buf_reset(&t);
	ustar_header(&t, "a", '0', 5000, NULL, 0644, 1000);
	ustar_body(&t, "abc", 3);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), -EPROTO);
	free(log);

	/* ends at an entry boundary without end blocks */
	buf_reset(&t);
	ustar_header(&t, "a", '0', 3, NULL, 0644, 1000);
	ustar_body(&t, "abc", 3);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), -EPROTO);
	assert_non_null(strstr(err.msg, "end-of-archive"));
	free(log);

	/* garbage after the end blocks */
	buf_reset(&t);
	ustar_header(&t, "a", '0', 3, NULL, 0644, 1000);
	ustar_body(&t, "abc", 3);
	end_blocks(&t);
	buf_append(&t, "garbage!", 8);
	assert_int_equal(read_both(t.data, t.len, &roomy, &log, &err), -EPROTO);
	free(log);
	buf_finish(&t);
}

static void test_stop_and_fd(void **state)
{
	struct buf t;
	struct err err;
	struct tar_stats st;

	make_sample(&t);
	struct seen s = { .stop_after = 2 };
	buf_init(&s.log, 1u << 20);
	struct tar_sink sink = { seen_entry, seen_data, seen_end, seen_skipped, &s };
	assert_int_equal(tar_read_memory(t.data, t.len, &roomy, &sink, &st, &err), 0);
	assert_true(st.stopped);
	assert_string_equal(s.log.data, "D d 755|F d/h\xc3\xa9llo w\xc3\xb6rld.txt 5 644 hello|");
	buf_finish(&s.log);

	/* through a pipe, as streams from a sandbox arrive */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		for (size_t off = 0; off < t.len; off += 100)
			if (write(fds[1], t.data + off, t.len - off < 100 ? t.len - off : 100) < 0)
				_exit(1);
		_exit(0);
	}
	close(fds[1]);
	struct seen s2 = { 0 };
	buf_init(&s2.log, 1u << 20);
	sink.arg = &s2;
	assert_int_equal(tar_read_fd(fds[0], &roomy, &sink, &st, &err), 0);
	close(fds[0]);
	assert_int_equal(st.files, 3);
	assert_int_equal(st.dirs, 2);
	assert_int_equal(st.bytes, 8);
	assert_int_equal(st.raw, t.len);
	buf_finish(&s2.log);
	buf_finish(&t);
}

static void test_writer_checks(void **state)
{
	struct buf out;
	struct tar_writer *w;
	struct err err;

	buf_init(&out, 1u << 20);
	assert_int_equal(tar_writer_create(&out, &w, &err), 0);
	struct tar_entry bad[] = {
		{ .path = "/abs", .size = 0 },
		{ .path = "../up", .size = 0 },
		{ .path = "a//b", .size = 0 },
		{ .path = "", .size = 0 },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(tar_writer_add(w, &bad[i], &err), -EINVAL);
	struct tar_entry f = { .path = "f", .size = 4, .mode = 0644 };
	assert_int_equal(tar_writer_add(w, &f, &err), 0);
	assert_int_equal(tar_writer_data(w, "12345", 5, &err), -EINVAL);
	assert_int_equal(tar_writer_data(w, "12", 2, &err), 0);
	assert_int_equal(tar_writer_close(w, &err), -EINVAL);
	tar_writer_destroy(w);

	/* a stream bigger than the buf's cap fails cleanly */
	struct buf small;
	buf_init(&small, 1000);
	assert_int_equal(tar_writer_create(&small, &w, &err), 0);
	struct tar_entry g = { .path = "g", .size = 4000, .mode = 0644 };
	char data[4000] = { 0 };
	int r = tar_writer_add(w, &g, &err);
	if (r == 0)
		r = tar_writer_data(w, data, sizeof(data), &err);
	assert_int_equal(r, -EMSGSIZE);
	tar_writer_destroy(w);
	buf_finish(&small);
	buf_finish(&out);
}

/* The octal number in a ustar header field (uid at 108, gid at 116, 8 bytes each). */
static unsigned long header_octal(const char *hdr, size_t off)
{
	char f[9];
	memcpy(f, hdr + off, 8);
	f[8] = '\0';
	return strtoul(f, NULL, 8);
}

/* An owner and a prefix reach every header, long names too; bad prefixes are refused. */
static void test_writer_owner_prefix(void **state)
{
	struct buf out;
	struct tar_writer *w;
	struct err err;
	char longname[300], want[1024];
	char *log;

	long_name(longname, sizeof(longname));
	buf_init(&out, 1u << 20);
	assert_int_equal(tar_writer_create(&out, &w, &err), 0);
	const char *bad[] = { "/abs", "../up", "a/", "a//b", "a/../b", "." };
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_int_equal(tar_writer_set_prefix(w, bad[i], &err), -EINVAL);
	tar_writer_set_owner(w, 1000, 1001);
	struct tar_entry slot = { .path = "0123abcd", .type = TAR_TYPE_DIR, .mode = 0700 };
	assert_int_equal(tar_writer_add(w, &slot, &err), 0);
	size_t first = out.len;
	assert_int_equal(tar_writer_set_prefix(w, "0123abcd", &err), 0);
	struct tar_entry d = { .path = "top", .type = TAR_TYPE_DIR, .mode = 0755 };
	struct tar_entry f = { .path = "top/f", .size = 2, .mode = 0640, .mtime = 1234567890 };
	struct tar_entry l = { .path = longname, .size = 1, .mode = 0600 };
	assert_int_equal(tar_writer_add(w, &d, &err), 0);
	assert_int_equal(tar_writer_add(w, &f, &err), 0);
	assert_int_equal(tar_writer_data(w, "hi", 2, &err), 0);
	assert_int_equal(tar_writer_add(w, &l, &err), 0);
	assert_int_equal(tar_writer_data(w, "z", 1, &err), 0);
	/* a bad name stays bad under a prefix */
	struct tar_entry up = { .path = "../x", .size = 0 };
	assert_int_equal(tar_writer_add(w, &up, &err), -EINVAL);
	/* no prefix again: names as given */
	assert_int_equal(tar_writer_set_prefix(w, NULL, &err), 0);
	struct tar_entry plain = { .path = "plain", .type = TAR_TYPE_DIR, .mode = 0711 };
	assert_int_equal(tar_writer_add(w, &plain, &err), 0);
	assert_int_equal(tar_writer_close(w, &err), 0);
	tar_writer_destroy(w);

	/* the headers themselves: owner of the first and of the prefixed directory */
	assert_true(first >= 512 && out.len > first + 512);
	assert_int_equal(header_octal(out.data, 108), 1000);
	assert_int_equal(header_octal(out.data, 116), 1001);
	assert_string_equal(out.data + first, "0123abcd/top/");
	assert_int_equal(header_octal(out.data + first, 108), 1000);
	assert_int_equal(header_octal(out.data + first, 116), 1001);

	assert_int_equal(read_both(out.data, out.len, &roomy, &log, &err), 0);
	snprintf(want, sizeof(want),
		 "D 0123abcd 700|D 0123abcd/top 755|F 0123abcd/top/f 2 640 hi|F 0123abcd/%s 1 600 z|D plain 711|",
		 longname);
	assert_string_equal(log, want);
	free(log);

	/* a prefix that pushes a name past PATHSAFE_MAX is refused, not cut */
	buf_reset(&out);
	assert_int_equal(tar_writer_create(&out, &w, &err), 0);
	char *huge = xmalloc(PATHSAFE_MAX + 1);
	memset(huge, 'a', PATHSAFE_MAX);
	huge[PATHSAFE_MAX] = '\0';
	huge[PATHSAFE_MAX - 10] = '\0';
	assert_int_equal(tar_writer_set_prefix(w, huge, &err), 0);
	memset(huge, 'b', 20);
	huge[20] = '\0';
	struct tar_entry h = { .path = huge, .type = TAR_TYPE_DIR, .mode = 0755 };
	assert_int_equal(tar_writer_add(w, &h, &err), -ENAMETOOLONG);
	free(huge);
	tar_writer_destroy(w);
	buf_finish(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),     cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_hostile),	      cmocka_unit_test(test_caps),
		cmocka_unit_test(test_malformed),     cmocka_unit_test(test_stop_and_fd),
		cmocka_unit_test(test_writer_checks), cmocka_unit_test(test_writer_owner_prefix),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
