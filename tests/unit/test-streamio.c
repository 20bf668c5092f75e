/*
 * test-streamio.c - the wait around one exec stream, on a socketpair: a
 * wait that times out, one that sees bytes, one that sees the socket take
 * more, a wake-up (what the cancel hook writes) seen once and drained, a
 * stale wake-up dropped by streamio_arm, reads into a buf (more, none now,
 * a full buffer, the end) and sends.
 */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "testutil.h"

#include "base/util.h"
#include "sandbox/streamio.h"

static void test_wait_read_send(void **state)
{
	int sv[2];
	struct streamio io;
	struct err err;
	struct buf in;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(streamio_open(&io, sv[0], NULL, &err), 0);
	/* nothing yet: the time passes */
	assert_int_equal(streamio_wait(&io, false, now_ms() + 20), 0);
	/* an empty socket takes bytes */
	assert_int_equal(streamio_wait(&io, true, now_ms() + 20), STREAMIO_OUT);
	assert_int_equal(streamio_send(&io, "ping", 4), 4);
	char tmp[8];
	assert_int_equal(read(sv[1], tmp, sizeof(tmp)), 4);

	buf_init(&in, 6);
	assert_int_equal(streamio_read_into(&io, &in, 4), -EAGAIN);
	assert_int_equal(write(sv[1], "hello", 5), 5);
	assert_true(streamio_wait(&io, false, INT64_MAX) & STREAMIO_IN);
	assert_int_equal(streamio_read_into(&io, &in, 4), 4);
	assert_memory_equal(in.data, "hell", 4);
	/* in cannot take 4 more: nothing is read */
	assert_int_equal(streamio_read_into(&io, &in, 4), -ENOBUFS);
	assert_int_equal(streamio_read_into(&io, &in, 2), 1);
	assert_memory_equal(in.data, "hello", 5);
	/* the other end closed: the end, every time */
	close(sv[1]);
	assert_true(streamio_wait(&io, false, INT64_MAX) & STREAMIO_IN);
	assert_int_equal(streamio_read_into(&io, &in, 1), 0);
	assert_int_equal(streamio_read_into(&io, &in, 1), 0);
	buf_finish(&in);
	streamio_close(&io);
	streamio_close(&io); /* idempotent */
	close(sv[0]);
}

static void test_wakeups(void **state)
{
	int sv[2];
	struct streamio io;
	struct err err;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(streamio_open(&io, sv[0], NULL, &err), 0);
	/* what a cancel hook does: seen once, then drained */
	assert_int_equal(write(io.wake[1], "cc", 2), 2);
	assert_int_equal(streamio_wait(&io, false, INT64_MAX), STREAMIO_CANCEL);
	assert_int_equal(streamio_wait(&io, false, now_ms() + 20), 0);
	/* a wake-up left after a call ended is not the next call's cancellation */
	assert_int_equal(write(io.wake[1], "c", 1), 1);
	assert_int_equal(streamio_arm(&io, NULL), 0);
	assert_int_equal(streamio_wait(&io, false, now_ms() + 20), 0);
	/* bytes and a cancellation together: both said */
	assert_int_equal(write(sv[1], "x", 1), 1);
	assert_int_equal(write(io.wake[1], "c", 1), 1);
	assert_int_equal(streamio_wait(&io, false, INT64_MAX), STREAMIO_IN | STREAMIO_CANCEL);
	streamio_close(&io);
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_read_send),
		cmocka_unit_test(test_wakeups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
