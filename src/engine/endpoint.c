/*
 * endpoint.c - DOCKER_HOST parsing and non-blocking connect with a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "base/log.h"
#include "buildconf.h"
#include "config/config.h"
#include "engine/endpoint.h"
#include "engine/http.h"
#include "engine/sshconn.h"
#include "engine/tls.h"

static int connect_with_timeout(int fd, const struct sockaddr *sa, socklen_t salen, int timeout_ms);
static int parse_ssh(const char *docker_host, struct endpoint *ret, struct err *err);
static const char *connect_hint(int e);

int endpoint_parse(const char *docker_host, struct endpoint *ret, struct err *err)
{
	memset(ret, 0, sizeof(*ret));
	if (!docker_host || !*docker_host) {
		ret->kind = ENDPOINT_UNIX;
		snprintf(ret->path, sizeof(ret->path), "%s", SANDBOX_DEFAULT_DOCKER_SOCKET);
		snprintf(ret->display, sizeof(ret->display), "unix://%s", ret->path);
		return 0;
	}
	snprintf(ret->display, sizeof(ret->display), "%s", docker_host);
	if (strncmp(docker_host, "unix://", 7) == 0) {
		const char *path = docker_host + 7;
		if (path[0] != '/')
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': a unix socket path must be absolute (unix:///run/docker.sock)",
				       docker_host);
		if (strlen(path) >= sizeof(ret->path))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': the socket path is longer than %zu bytes", docker_host,
				       sizeof(ret->path) - 1);
		ret->kind = ENDPOINT_UNIX;
		memcpy(ret->path, path, strlen(path) + 1);
		return 0;
	}
	if (strncmp(docker_host, "tcp://", 6) == 0) {
		const char *h = docker_host + 6;
		const char *colon = strrchr(h, ':');
		const char *slash = strchr(h, '/');
		size_t hl = colon ? (size_t)(colon - h) : strlen(h);
		if (slash && (!colon || slash < colon))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': expected tcp://host:port", docker_host);
		if (hl == 0 || hl >= sizeof(ret->host))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': expected tcp://host:port", docker_host);
		const char *port = colon ? colon + 1 : "2375";
		size_t pl = strcspn(port, "/");
		uint64_t pv;
		char pbuf[8];
		if (pl == 0 || pl >= sizeof(pbuf))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "DOCKER_HOST '%s': bad port",
				       docker_host);
		memcpy(pbuf, port, pl);
		pbuf[pl] = '\0';
		if (parse_u64(pbuf, 1, 65535, &pv) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "DOCKER_HOST '%s': bad port",
				       docker_host);
		ret->kind = ENDPOINT_TCP;
		/* strip [] around an IPv6 literal */
		if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']')
			snprintf(ret->host, sizeof(ret->host), "%.*s", (int)hl - 2, h + 1);
		else
			snprintf(ret->host, sizeof(ret->host), "%.*s", (int)hl, h);
		snprintf(ret->port, sizeof(ret->port), "%s", pbuf);
		return 0;
	}
	if (strncmp(docker_host, "ssh://", 6) == 0)
		return parse_ssh(docker_host, ret, err);
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
		       "DOCKER_HOST '%s' is not supported: use unix:///path/to/docker.sock, tcp://host:port or "
		       "ssh://[user@]host[:port]",
		       docker_host);
}

/* Characters of a user or host name ssh gets as an argument; never a leading '-' (an option). */
static bool ssh_word_ok(const char *p, size_t n, const char *extra)
{
	if (n == 0 || p[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(extra, c)))
			return false;
	}
	return true;
}

/* ssh://[user@]host[:port], as the docker CLI takes it: no password, path or query. */
static int parse_ssh(const char *docker_host, struct endpoint *ret, struct err *err)
{
	const char *h = docker_host + 6, *at = strchr(h, '@');
	size_t total = strlen(h);

	if (strpbrk(h, "/?#") || total == 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "DOCKER_HOST '%s': expected ssh://[user@]host[:port] (no path, no query)", docker_host);
	if (at) {
		size_t ul = (size_t)(at - h);
		if (!ssh_word_ok(h, ul, "._-") || ul >= sizeof(ret->user))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': the user must be letters, digits, '.', '_' or '-' (no password)",
				       docker_host);
		memcpy(ret->user, h, ul);
		ret->user[ul] = '\0';
		h = at + 1;
	}
	const char *end = h + strlen(h), *colon = NULL;
	if (h[0] == '[') {
		const char *rb = strchr(h, ']');
		if (!rb || (rb[1] && rb[1] != ':'))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "DOCKER_HOST '%s': bad [IPv6] host",
				       docker_host);
		colon = rb[1] == ':' ? rb + 1 : NULL;
		if (!ssh_word_ok(h + 1, (size_t)(rb - h - 1), ":.") || (size_t)(rb - h - 1) >= sizeof(ret->host))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "DOCKER_HOST '%s': bad [IPv6] host",
				       docker_host);
		snprintf(ret->host, sizeof(ret->host), "%.*s", (int)(rb - h - 1), h + 1);
	} else {
		colon = strchr(h, ':');
		size_t hl = colon ? (size_t)(colon - h) : (size_t)(end - h);
		if (!ssh_word_ok(h, hl, ".-_") || hl >= sizeof(ret->host))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "DOCKER_HOST '%s': the host must be a name or address (letters, digits, '.', '-')",
				       docker_host);
		snprintf(ret->host, sizeof(ret->host), "%.*s", (int)hl, h);
	}
	if (colon) {
		uint64_t pv;
		if (parse_u64(colon + 1, 1, 65535, &pv) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "DOCKER_HOST '%s': bad port",
				       docker_host);
		snprintf(ret->port, sizeof(ret->port), "%u", (unsigned)pv);
	}
	ret->kind = ENDPOINT_SSH;
	return 0;
}

bool endpoint_host_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

int endpoint_open(const char *docker_host, const struct endpoint_tls *tls, struct endpoint *ret, struct err *err)
{
	int r = endpoint_parse(docker_host, ret, err);

	if (r < 0 || ret->kind != ENDPOINT_TCP)
		return r;
	if (!tls || !tls->verify) {
		if (!endpoint_host_is_loopback(ret->host))
			log_warnf("DOCKER_HOST %s is plain TCP without TLS: anyone who reaches that port controls the "
				  "engine (root on its host). Set DOCKER_TLS_VERIFY=1 and DOCKER_CERT_PATH (or "
				  "--tlsverify), or use ssh://",
				  ret->display);
		return 0;
	}
	if (tls->skip_verify)
		log_warnf("%s: the context says SkipTLSVerify: the engine's certificate is not checked, so anyone on the "
			  "path can pose as the engine",
			  ret->display);
	return tls_ctx_create(tls->ca, tls->cert, tls->key, !tls->skip_verify, &ret->tls, err);
}

void endpoint_release(struct endpoint *ep)
{
	tls_ctx_destroy(ep->tls);
	ep->tls = NULL;
}

static int connect_with_timeout(int fd, const struct sockaddr *sa, socklen_t salen, int timeout_ms)
{
	int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
		return -errno;
	int64_t deadline = now_ms() + timeout_ms;
	int r;
	/*
	 * A unix socket whose listen backlog is full says EAGAIN and queues
	 * nothing (unlike TCP's EINPROGRESS, where poll reports the outcome):
	 * try again until the deadline, as a blocking connect would wait.
	 */
	while ((r = connect(fd, sa, salen)) < 0 && (errno == EAGAIN || errno == EINTR)) {
		if (errno == EAGAIN && now_ms() >= deadline)
			return -ETIMEDOUT;
		if (errno == EAGAIN)
			(void)poll(NULL, 0, 10);
	}
	if (r < 0) {
		if (errno != EINPROGRESS)
			return -errno;
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		do {
			int64_t left = deadline - now_ms();
			r = left > 0 ? poll(&pfd, 1, (int)left) : 0;
		} while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
			return -errno;
		if (soerr)
			return -soerr;
	}
	if (fcntl(fd, F_SETFL, flags) < 0)
		return -errno;
	return 0;
}

static const char *connect_hint(int e)
{
	switch (e) {
	case ENOENT:
	case ECONNREFUSED:
		return "Start Docker (e.g. `sudo systemctl start docker`, or `dockerd &`) or point DOCKER_HOST at a running engine";
	case EACCES:
	case EPERM:
		return "Permission denied on the socket: add your user to the docker group (`sudo usermod -aG docker $USER`, then log in again) or set DOCKER_HOST to a socket you can use";
	case ETIMEDOUT:
		return "The engine did not accept the connection in time; check that dockerd is healthy (`docker info`)";
	default:
		return "Check that the Docker engine is running and DOCKER_HOST is right (`sandbox-mcp doctor` tells more)";
	}
}

/* A local socket: 0 with *ret_fd, or -errno with err. */
static int connect_unix(const struct endpoint *ep, int timeout_ms, int *ret_fd, struct err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	memcpy(sa.sun_path, ep->path, strlen(ep->path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -errno, "socket: %s", strerror(errno));
	int r = connect_with_timeout(fd, (struct sockaddr *)&sa, sizeof(sa), timeout_ms);
	if (r < 0) {
		close(fd);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r, "cannot connect to the Docker engine at %s: %s. %s",
			       ep->display, strerror(-r), connect_hint(-r));
	}
	*ret_fd = fd;
	return 0;
}

/* A TCP connection to tcp://host:port, TLS not yet begun: 0 with *ret_fd, or -errno with err. */
static int connect_tcp(const struct endpoint *ep, int timeout_ms, int *ret_fd, struct err *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	int g = getaddrinfo(ep->host, ep->port, &hints, &res);
	if (g != 0)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -EHOSTUNREACH,
			       "cannot resolve the Docker engine host '%s': %s. Check DOCKER_HOST", ep->host,
			       gai_strerror(g));
	int r = -ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		r = connect_with_timeout(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms);
		if (r == 0) {
			freeaddrinfo(res);
			/*
			 * A request's head and body, and TLS records, are separate
			 * small writes: with Nagle the second waits for the
			 * peer's delayed ACK (up to 40 ms). The docker CLI (Go)
			 * sets this too.
			 */
			int one = 1;
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			*ret_fd = fd;
			return 0;
		}
		close(fd);
	}
	freeaddrinfo(res);
	return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r, "cannot connect to the Docker engine at %s: %s. %s",
		       ep->display, strerror(-r), connect_hint(-r));
}

/* A TLS session over a new TCP connection, its handshake within what is left of timeout_ms. */
static int connect_tls(const struct endpoint *ep, int timeout_ms, struct tls_stream **ret, struct err *err)
{
	int fd;
	int64_t t0 = now_ms();
	int r = connect_tcp(ep, timeout_ms, &fd, err);
	if (r < 0)
		return r;
	int left = timeout_ms - (int)(now_ms() - t0);
	return tls_open(ep->tls, fd, ep->host, ep->display, left > 100 ? left : 100, ret, err);
}

int endpoint_connect(const struct endpoint *ep, int timeout_ms, int *ret_fd, struct err *err)
{
	struct tls_stream *st;
	int r;

	if (ep->kind == ENDPOINT_UNIX)
		return connect_unix(ep, timeout_ms, ret_fd, err);
	if (ep->kind == ENDPOINT_SSH)
		return sshconn_open(ep->user, ep->host, ep->port, ep->display, timeout_ms, ret_fd, err);
	if (!ep->tls)
		return connect_tcp(ep, timeout_ms, ret_fd, err);
	if ((r = connect_tls(ep, timeout_ms, &st, err)) < 0)
		return r;
	return tls_relay(st, ret_fd, err);
}

static ssize_t io_recv(void *arg, void *buf, size_t n)
{
	return tls_stream_recv(arg, buf, n);
}

static bool io_pending(void *arg)
{
	return tls_stream_pending(arg);
}

static int io_send_all(void *arg, const void *p, size_t n, int timeout_ms)
{
	return tls_stream_send_all(arg, p, n, timeout_ms);
}

static void io_abort(void *arg)
{
	tls_stream_abort(arg);
}

static void io_close(void *arg)
{
	tls_stream_close(arg);
}

static const struct http_io tls_io = { io_recv, io_pending, io_send_all, io_abort, io_close };

int endpoint_connect_http(const struct endpoint *ep, int timeout_ms, int http_timeout_ms, struct http_conn **ret,
			  struct err *err)
{
	struct tls_stream *st;
	int fd, r;

	if (!ep->tls) {
		if ((r = endpoint_connect(ep, timeout_ms, &fd, err)) < 0)
			return r;
		*ret = http_conn_create(fd, http_timeout_ms);
		return 0;
	}
	/*
	 * Run in the calling thread, TLS costs the records' crypto only; the
	 * relay would add a thread hop and two copies per byte (a 50 MiB
	 * upload took ~20 ms longer, and no less than docker cp's time).
	 */
	if ((r = connect_tls(ep, timeout_ms, &st, err)) < 0)
		return r;
	*ret = http_conn_create_io(tls_stream_fd(st), &tls_io, st, http_timeout_ms);
	return 0;
}

static const char *tls_file(const char *flag, const char *dir, const char *name, char *path)
{
	if (flag && flag[0])
		return flag; /* named: a missing file is an error when it is read, not silently skipped */
	if (!dir)
		return NULL;
	snprintf(path, 4096, "%s/%s", dir, name);
	return access(path, R_OK) == 0 ? path : NULL;
}

void endpoint_tls_from_config(const struct config *c, struct endpoint_tls *ret, char paths[3][4096])
{
	/* a context's TLS files are its own: DOCKER_CERT_PATH does not fill the gaps */
	const char *dir = c->tls_from_context ? NULL : c->cert_path ? c->cert_path : ".";

	ret->verify = c->tls_verify;
	ret->skip_verify = c->tls_skip_verify;
	ret->ca = tls_file(c->tlscacert, dir, "ca.pem", paths[0]);
	ret->cert = tls_file(c->tlscert, dir, "cert.pem", paths[1]);
	ret->key = tls_file(c->tlskey, dir, "key.pem", paths[2]);
}
