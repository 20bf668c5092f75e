/*
 * test-buf.c - struct buf caps and growth, slices, number parsing and the
 * fd helpers from util.
 */
#include "testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/util.h"

static void test_buf_cap(void **state)
{
	struct buf b;
	buf_init(&b, 10);
	assert_int_equal(buf_append(&b, "hello", 5), 0);
	assert_int_equal(buf_append_str(&b, "world"), 0);
	assert_int_equal(b.len, 10);
	assert_string_equal(b.data, "helloworld");
	assert_int_equal(buf_append(&b, "!", 1), -EMSGSIZE);
	assert_int_equal(b.len, 10);
	buf_consume(&b, 5);
	assert_string_equal(b.data, "world");
	assert_int_equal(buf_printf(&b, "%d", 12345), 0);
	assert_string_equal(b.data, "world12345");
	assert_int_equal(buf_printf(&b, "x"), -EMSGSIZE);
	size_t n;
	char *s = buf_steal(&b, &n);
	assert_int_equal(n, 10);
	assert_string_equal(s, "world12345");
	free(s);
	assert_null(b.data);
	buf_finish(&b);
}

static void test_buf_growth(void **state)
{
	struct buf b;
	buf_init(&b, SIZE_MAX);
	for (int i = 0; i < 100000; i++)
		assert_int_equal(buf_append(&b, "ab", 2), 0);
	assert_int_equal(b.len, 200000);
	assert_int_equal(b.data[b.len], '\0');
	buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_int_equal(buf_append(&b, "x", (size_t)-1), -EMSGSIZE); /* overflow refused */
	buf_finish(&b);
}

static void test_slices(void **state)
{
	struct slice s = slice_make("Content-Length", 14);
	assert_true(slice_eq(s, "Content-Length"));
	assert_false(slice_eq(s, "content-length"));
	assert_true(slice_case_eq(s, "content-LENGTH"));
	assert_false(slice_case_eq(s, "content-len"));
	char *d = slice_dup(slice_make("abcdef", 3));
	assert_string_equal(d, "abc");
	free(d);
}

static void test_parse_numbers(void **state)
{
	uint64_t v;
	double dv;
	assert_int_equal(parse_u64("0", 0, 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_int_equal(parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(parse_u64("11", 0, 10, &v), -ERANGE);
	assert_int_equal(parse_u64("", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_u64("-1", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_u64("1 ", 0, 10, &v), -EINVAL);
	assert_int_equal(parse_double("0.5", 0.01, 256, &dv), 0);
	assert_true(dv == 0.5);
	assert_int_equal(parse_double("nan", 0, 1, &dv), -EINVAL);
	assert_int_equal(parse_double("1e400", 0, 1, &dv), -EINVAL);
	assert_int_equal(parse_double("300", 0.01, 256, &dv), -ERANGE);
	assert_true(is_hex("0123abcdef", 10));
	assert_false(is_hex("0123ABCDEF", 10));
	assert_false(is_hex("", 0));
	assert_false(is_hex("12/4", 4));
}

static void test_fd_helpers(void **state)
{
	char dir[] = "/tmp/sbx-test-util-XXXXXX", path[96], fifo[96];
	static char big[200000];
	char *got;
	size_t n;
	int fd;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/f", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	memset(big, 'q', sizeof(big));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, big, sizeof(big)), 0);
	close(fd);
	/* the whole file, NUL-terminated; exactly max is fine, one byte less is too big */
	assert_int_equal(read_small_file(path, sizeof(big), &got, &n), 0);
	assert_int_equal(n, sizeof(big));
	assert_memory_equal(got, big, sizeof(big));
	assert_int_equal(got[n], '\0');
	free(got);
	assert_int_equal(read_small_file(path, sizeof(big) - 1, &got, &n), -EFBIG);
	/* a folder, a FIFO (refused without blocking on its open), nothing */
	assert_int_equal(read_small_file(dir, 100, &got, &n), -EISDIR);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(read_small_file(fifo, 100, &got, &n), -ENXIO);
	assert_int_equal(unlink(fifo), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(read_small_file(path, 100, &got, &n), -ENOENT);
	assert_int_equal(rmdir(dir), 0);
	/* read_full: exactly len bytes, or -EPIPE at an early end */
	int p[2];
	char back[16];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write_full(p[1], "0123456789", 10), 0);
	close(p[1]);
	assert_int_equal(read_full(p[0], back, 4), 0);
	assert_memory_equal(back, "0123", 4);
	assert_int_equal(read_full(p[0], back, 7), -EPIPE);
	close(p[0]);
}

static void test_xasprintf(void **state)
{
	char *s = xasprintf("%s-%d", "a", 42);
	assert_string_equal(s, "a-42");
	free(s);
	_cleanup_free_ char *t = xstrndup("abcdef", 2);
	assert_string_equal(t, "ab");
	_cleanup_free_ char *u = xstrdup("x");
	char *w = steal_pointer(&u);
	assert_null(u);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buf_cap),	   cmocka_unit_test(test_buf_growth),
		cmocka_unit_test(test_slices),	   cmocka_unit_test(test_parse_numbers),
		cmocka_unit_test(test_fd_helpers), cmocka_unit_test(test_xasprintf),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
