/*
 * test-httpwatch.c - the whole-request deadline (httpwatch.h) on a socket
 * pair: a connection past its deadline is shut down (its peer reads end of
 * file), a paused one is left alone, and a rearmed one gets a fresh deadline.
 */
#include "testutil.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "transport/http/httpwatch.h"

static int64_t now_ms_(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ms until the peer reads end of file, or -1 within limit_ms. */
static int64_t eof_after(int peer, int limit_ms)
{
	int64_t t0 = now_ms_();
	struct pollfd p = { .fd = peer, .events = POLLIN };
	char c;
	if (poll(&p, 1, limit_ms) <= 0)
		return -1;
	assert_int_equal(read(peer, &c, 1), 0);
	return now_ms_() - t0;
}

static void test_cut(void **state)
{
	struct httpwatch *w;
	struct err err;
	int sv[2];
	(void)state;

	assert_int_equal(httpwatch_create(1, &w, &err), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	int64_t t0 = now_ms_();
	struct httpwatch_conn *c = httpwatch_add(w, sv[0]);
	int64_t waited = eof_after(sv[1], 5000);
	assert_true(waited >= 0);
	assert_true(now_ms_() - t0 >= 900);
	httpwatch_remove(w, c);
	close(sv[0]);
	close(sv[1]);
	httpwatch_destroy(w);
}

static void test_pause_rearm(void **state)
{
	struct httpwatch *w;
	struct err err;
	int sv[2];
	(void)state;

	assert_int_equal(httpwatch_create(1, &w, &err), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct httpwatch_conn *c = httpwatch_add(w, sv[0]);
	httpwatch_pause(w, c); /* being served: no deadline */
	assert_int_equal(eof_after(sv[1], 2500), -1);
	httpwatch_rearm(w, c); /* answered: the next request has 1 s */
	assert_true(eof_after(sv[1], 5000) >= 0);
	httpwatch_remove(w, c);
	/* NULL entries (a connection without one) are no-ops */
	httpwatch_pause(w, NULL);
	httpwatch_rearm(w, NULL);
	httpwatch_remove(w, NULL);
	close(sv[0]);
	close(sv[1]);
	httpwatch_destroy(w);
	httpwatch_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_pause_rearm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
