/*
 * streamio.c - the wait around one engine stream (see streamio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/util.h"
#include "sandbox/streamio.h"

static void wake_hook(void *arg);

/* The cancel hook: runs on another thread, so it only writes a byte. */
static void wake_hook(void *arg)
{
	ssize_t r = write(*(int *)arg, "c", 1);
	(void)r;
}

int streamio_open(struct streamio *io, int fd, struct call *call, struct err *err)
{
	io->fd = fd;
	io->call = NULL;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || pipe2(io->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		io->wake[0] = io->wake[1] = -1;
		return err_set(err, ERRCODE_INTERNAL, -errno, "exec stream setup: %s", strerror(errno));
	}
	return streamio_arm(io, call);
}

int streamio_arm(struct streamio *io, struct call *call)
{
	char tmp[16];

	streamio_disarm(io);
	while (read(io->wake[0], tmp, sizeof(tmp)) > 0)
		;
	if (call && call_arm(call, wake_hook, &io->wake[1]) < 0) {
		wake_hook(&io->wake[1]);
		return 1;
	}
	io->call = call;
	return 0;
}

void streamio_disarm(struct streamio *io)
{
	if (io->call)
		call_disarm(io->call);
	io->call = NULL;
}

void streamio_close(struct streamio *io)
{
	streamio_disarm(io);
	if (io->wake[0] >= 0)
		close(io->wake[0]);
	if (io->wake[1] >= 0)
		close(io->wake[1]);
	io->wake[0] = io->wake[1] = -1;
}

int streamio_wait(struct streamio *io, bool want_out, int64_t until)
{
	int64_t left = until == INT64_MAX ? STREAMIO_TICK_MS : until - now_ms();
	struct pollfd pfd[2] = {
		{ .fd = io->fd, .events = POLLIN | (want_out ? POLLOUT : 0) },
		{ .fd = io->wake[0], .events = POLLIN },
	};
	int pr = poll(pfd, 2, (int)(left > STREAMIO_TICK_MS ? STREAMIO_TICK_MS : left < 0 ? 0 : left));
	if (pr < 0)
		return errno == EINTR ? 0 : -errno;
	int seen = 0;
	if (pfd[1].revents & POLLIN) {
		char tmp[16];
		while (read(io->wake[0], tmp, sizeof(tmp)) > 0)
			;
		seen |= STREAMIO_CANCEL;
	}
	if (pfd[0].revents & POLLOUT)
		seen |= STREAMIO_OUT;
	if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
		seen |= STREAMIO_IN;
	return seen;
}

ssize_t streamio_read(struct streamio *io, char *p, size_t n)
{
	ssize_t k = read(io->fd, p, n);
	if (k >= 0)
		return k;
	return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
}

ssize_t streamio_read_into(struct streamio *io, struct buf *in, size_t chunk)
{
	char *tail;
	if (buf_reserve(in, chunk, &tail) < 0)
		return -ENOBUFS;
	ssize_t n = streamio_read(io, tail, chunk);
	if (n > 0)
		buf_commit(in, (size_t)n);
	return n == -EAGAIN ? -EAGAIN : n < 0 ? 0 : n;
}

ssize_t streamio_send(struct streamio *io, const char *p, size_t n)
{
	ssize_t k = send(io->fd, p, n, MSG_NOSIGNAL);
	if (k >= 0)
		return k;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}
