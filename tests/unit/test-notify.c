/*
 * test-notify.c - rate-limited notifications: a poke goes out at once, a
 * burst within the interval becomes exactly one more after it, and nothing
 * goes out unpoked. Waits are for lines, with a generous deadline; the only
 * timing asserted is "not before the interval", which load cannot break.
 */
#include "testutil.h"

#include <poll.h>

#include "base/util.h"
#include "mcp/notify.h"

#define INTERVAL_MS 300

/* Reads one line from fd within ms; its length, or 0 when none came. */
static size_t read_line(int fd, char *buf, size_t size, int ms)
{
	size_t n = 0;
	while (n + 1 < size) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) <= 0)
			break;
		if (read(fd, buf + n, 1) != 1)
			break;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = '\0';
	return n;
}

static void test_burst_is_rate_limited(void **state)
{
	int fds[2];
	char line[256];
	assert_int_equal(pipe(fds), 0);
	struct out *o = out_create(fds[1]);
	struct notify *n = notify_create(o, "notifications/resources/list_changed", INTERVAL_MS);
	assert_non_null(n);

	/* nothing unpoked */
	assert_int_equal(read_line(fds[0], line, sizeof(line), 100), 0);

	int64_t t0 = now_ms(); /* the first goes out after this, the second an interval after the first */
	notify_poke(n);
	assert_true(read_line(fds[0], line, sizeof(line), 10000) > 0);
	assert_string_equal(line,
			    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/list_changed\",\"params\":{}}\n");

	/* a burst right after: one more, not before the interval is over */
	for (int i = 0; i < 50; i++)
		notify_poke(n);
	assert_true(read_line(fds[0], line, sizeof(line), 10000) > 0);
	assert_true(now_ms() - t0 >= INTERVAL_MS);
	/* and no third one */
	assert_int_equal(read_line(fds[0], line, sizeof(line), 2 * INTERVAL_MS), 0);

	notify_poke(n); /* pending at destroy: dropped, no crash, no leak */
	notify_destroy(n);
	notify_destroy(NULL);
	out_destroy(o);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_is_rate_limited),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
