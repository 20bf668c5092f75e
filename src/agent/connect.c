/*
 * connect.c - `agent --connect PORT` (connect.h): one forwarded connection.
 *
 * Only the sandbox's own loopback is ever dialled, 127.0.0.1 and then ::1:
 * the port is the one thing the server passes, so a forward cannot be
 * pointed at another host, container or the server's side. stdin's end
 * half-closes the connection (shutdown SHUT_WR), so a request-then-read
 * client works; the connection's end ends the program.
 *
 * It writes CONNECT_READY first (the server knows the exec has left the
 * runtime's hands), and dials only once the server has sent one byte,
 * CONNECT_GO, not passed on: the server starts a few of these ahead of need (forward.c's spares),
 * and a spare must not hold a connection the app sees (a single-threaded
 * server would wait on it). A stdin that ends before the byte ends the
 * program without dialling. The byte, not the client's first data, is the
 * signal, so servers that speak first (SSH, SMTP, databases) work.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/connect.h"

#define CONNECT_CHUNK (64 * 1024)

static int dial(unsigned port)
{
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port) };
	a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a6.sin6_addr = in6addr_loopback;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a4, sizeof(a4)) == 0)
		return fd;
	int e4 = errno;
	if (fd >= 0)
		close(fd);
	fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0)
		return fd;
	if (fd >= 0)
		close(fd);
	errno = e4;
	return -1;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int connect_main(const char *port)
{
	static char buf[CONNECT_CHUNK];
	char *end;
	unsigned long p = strtoul(port, &end, 10);
	if (*port < '1' || *port > '9' || *end || p > 65535)
		return 2;
	/* the server counts the exec as started only now: past this, a freeze of the container is harmless */
	if (write(1, &(char){ CONNECT_READY }, 1) != 1)
		return 1;
	char go;
	ssize_t g;
	while ((g = read(0, &go, 1)) < 0 && errno == EINTR)
		;
	if (g <= 0)
		return 0; /* a spare the server let go */
	if (go != CONNECT_GO)
		return 2;
	int fd = dial((unsigned)p);
	if (fd < 0) {
		fprintf(stderr, "connect 127.0.0.1:%lu: %s\n", p, strerror(errno));
		return 1;
	}
	struct pollfd pfd[2] = { { .fd = 0, .events = POLLIN }, { .fd = fd, .events = POLLIN } };
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (pfd[0].revents) {
			ssize_t n = read(0, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				shutdown(fd, SHUT_WR);
				pfd[0].fd = -1;
			} else if (write_all(fd, buf, (size_t)n) < 0) {
				return 0;
			}
		}
		if (pfd[1].revents) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || write_all(1, buf, (size_t)n) < 0)
				return 0;
		}
	}
}
