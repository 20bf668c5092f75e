/*
 * test-http.c - the HTTP client over a socketpair: Content-Length, chunked
 * and to-EOF bodies, streaming reads, caps, timeouts, resets, abort from
 * another thread, and a connection over an http_io that frames its bytes
 * in records as TLS does.
 */
#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>

#include "base/util.h"
#include "engine/http.h"

struct peer {
	int fd;
	const char *reply;
	size_t reply_len;
	int close_after; /* 1: close after reply */
	char request[4096];
	size_t request_len;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	/* read the request head */
	while (p->request_len < sizeof(p->request) - 1) {
		ssize_t n = read(p->fd, p->request + p->request_len, sizeof(p->request) - 1 - p->request_len);
		if (n <= 0)
			break;
		p->request_len += (size_t)n;
		p->request[p->request_len] = '\0';
		if (strstr(p->request, "\r\n\r\n"))
			break;
	}
	if (p->reply)
		(void)write_full(p->fd, p->reply, p->reply_len);
	if (p->close_after)
		shutdown(p->fd, SHUT_WR);
	return NULL;
}

static struct http_conn *start(struct peer *p, const char *reply, int close_after, int timeout_ms, pthread_t *t)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(p, 0, sizeof(*p));
	p->fd = sv[1];
	p->reply = reply;
	p->reply_len = reply ? strlen(reply) : 0;
	p->close_after = close_after;
	assert_int_equal(pthread_create(t, NULL, peer_main, p), 0);
	return http_conn_create(sv[0], timeout_ms);
}

static void finish(struct peer *p, pthread_t t, struct http_conn *c)
{
	pthread_join(t, NULL);
	http_conn_destroy(c);
	close(p->fd);
}

static int roundtrip(const char *reply, int close_after, struct buf *body, struct http_response *resp, struct err *e,
		     struct peer *p)
{
	pthread_t t;
	struct http_conn *c = start(p, reply, close_after, 2000, &t);
	int r = http_request_send(c, "GET", "/version", NULL, NULL, 0, e);
	if (r == 0)
		r = http_response_recv(c, false, resp, e);
	if (r == 0)
		r = http_body_read_all(c, body, e);
	finish(p, t, c);
	return r;
}

static void test_content_length(void **state)
{
	struct peer p;
	struct buf b;
	struct http_response resp;
	struct err e;
	buf_init(&b, 1024);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nApi-Version: 1.41\r\n"
				   "Content-Length: 13\r\n\r\n{\"Version\":1}",
				   0, &b, &resp, &e, &p),
			 0);
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.content_type, "application/json");
	assert_string_equal(resp.api_version, "1.41");
	assert_string_equal(b.data, "{\"Version\":1}");
	assert_non_null(strstr(p.request, "GET /version HTTP/1.1\r\nHost: docker\r\n"));
	buf_finish(&b);
}

static void test_chunked_body(void **state)
{
	struct peer p;
	struct buf b;
	struct http_response resp;
	struct err e;
	buf_init(&b, 1024);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				   "5\r\nhello\r\n1;x=y\r\n \r\n5\r\nworld\r\n0\r\n\r\n",
				   0, &b, &resp, &e, &p),
			 0);
	assert_string_equal(b.data, "hello world");
	buf_finish(&b);
}

static void test_eof_body(void **state)
{
	struct peer p;
	struct buf b;
	struct http_response resp;
	struct err e;
	buf_init(&b, 1024);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end", 1, &b, &resp, &e, &p),
			 0);
	assert_string_equal(b.data, "until the end");
	buf_finish(&b);
}

static void test_cap(void **state)
{
	struct peer p;
	struct buf b;
	struct http_response resp;
	struct err e;
	buf_init(&b, 4);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789", 0, &b, &resp, &e, &p),
			 -EMSGSIZE);
	assert_int_equal(e.code, ERRCODE_TOO_LARGE);
	buf_finish(&b);
}

static void test_truncated(void **state)
{
	struct peer p;
	struct buf b;
	struct http_response resp;
	struct err e;
	buf_init(&b, 1024);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123", 1, &b, &resp, &e, &p), -EPIPE);
	assert_non_null(strstr(e.msg, "closed the connection"));
	buf_reset(&b);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 1, &b, &resp, &e,
				   &p),
			 -EPIPE);
	buf_reset(&b);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 1, &b, &resp, &e, &p),
			 -EPROTO);
	buf_reset(&b);
	assert_int_equal(roundtrip("HTTP/1.1 200 OK\r\nContent-Le", 1, &b, &resp, &e, &p), -EPIPE);
	assert_int_equal(e.code, ERRCODE_DOCKER_UNAVAILABLE);
	buf_reset(&b);
	assert_int_equal(roundtrip("garbage\r\n\r\n", 1, &b, &resp, &e, &p), -EPROTO);
	buf_finish(&b);
}

static void test_timeout(void **state)
{
	struct peer p;
	pthread_t t;
	struct http_response resp;
	struct err e;
	struct http_conn *c = start(&p, NULL, 0, 200, &t);
	int64_t t0 = now_ms();
	assert_int_equal(http_request_send(c, "GET", "/_ping", NULL, NULL, 0, &e), 0);
	assert_int_equal(http_response_recv(c, false, &resp, &e), -ETIMEDOUT);
	assert_int_equal(e.code, ERRCODE_TIMEOUT);
	int64_t took = now_ms() - t0;
	assert_true(took >= 190 && took < 1500);
	assert_false(http_conn_reusable(c));
	finish(&p, t, c);
}

/* A peer that reads nothing: a body larger than the socket buffers must end in a timeout, not block. */
static void test_send_timeout(void **state)
{
	int sv[2];
	struct err e;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct http_conn *c = http_conn_create(sv[0], 200);
	size_t len = 16u << 20;
	char *body = xcalloc(1, len);
	int64_t t0 = now_ms();
	assert_int_equal(http_request_send(c, "POST", "/build", NULL, body, len, &e), -ETIMEDOUT);
	assert_int_equal(e.code, ERRCODE_TIMEOUT);
	assert_non_null(strstr(e.msg, "stopped reading"));
	int64_t took = now_ms() - t0;
	assert_true(took >= 190 && took < 1500);
	assert_false(http_conn_reusable(c));
	/* the same for a chunked body */
	struct http_conn *c2;
	int sv2[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv2), 0);
	c2 = http_conn_create(sv2[0], 200);
	assert_int_equal(http_request_send_chunked(c2, "POST", "/build", NULL, &e), 0);
	assert_int_equal(http_chunk_write(c2, body, len, &e), -ETIMEDOUT);
	assert_int_equal(e.code, ERRCODE_TIMEOUT);
	free(body);
	http_conn_destroy(c);
	http_conn_destroy(c2);
	close(sv[1]);
	close(sv2[1]);
}

/*
 * An answer that may take long in total but stalls: with an idle cap the
 * read ends after the cap, not after the whole-answer timeout (a pull).
 */
static void test_idle_cap(void **state)
{
	struct peer p;
	pthread_t t;
	struct err e;
	struct http_response resp;
	char body[64];
	(void)state;
	struct http_conn *c = start(&p, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", 0, 20000,
				    &t);
	http_conn_set_idle(c, 200);
	assert_int_equal(http_request_send(c, "POST", "/images/create", NULL, NULL, 0, &e), 0);
	assert_int_equal(http_response_recv(c, false, &resp, &e), 0);
	assert_int_equal(http_body_read(c, body, sizeof(body), &e), 5);
	int64_t t0 = now_ms();
	assert_int_equal(http_body_read(c, body, sizeof(body), &e), -ETIMEDOUT);
	int64_t took = now_ms() - t0;
	assert_int_equal(e.code, ERRCODE_TIMEOUT);
	assert_non_null(strstr(e.msg, "sent nothing for 200 ms"));
	assert_true(took >= 190 && took < 5000);
	shutdown(p.fd, SHUT_RDWR);
	finish(&p, t, c);
}

struct aborter {
	struct http_conn *c;
};

static void *abort_later(void *arg)
{
	struct aborter *a = arg;
	usleep(100 * 1000);
	http_conn_abort(a->c);
	return NULL;
}

static void test_abort(void **state)
{
	struct peer p;
	pthread_t t, ta;
	struct http_response resp;
	struct err e;
	struct http_conn *c = start(&p, NULL, 0, 10000, &t);
	struct aborter a = { c };
	int64_t t0 = now_ms();
	assert_int_equal(http_request_send(c, "GET", "/_ping", NULL, NULL, 0, &e), 0);
	assert_int_equal(pthread_create(&ta, NULL, abort_later, &a), 0);
	assert_true(http_response_recv(c, false, &resp, &e) < 0);
	assert_true(now_ms() - t0 < 2000);
	pthread_join(ta, NULL);
	finish(&p, t, c);
}

static void test_request_injection_refused(void **state)
{
	struct peer p;
	pthread_t t;
	struct err e;
	struct http_conn *c = start(&p, NULL, 1, 1000, &t);
	assert_int_equal(http_request_send(c, "GET", "/x\r\nEvil: 1", NULL, NULL, 0, &e), -EINVAL);
	assert_int_equal(http_request_send(c, "GET", "/x y", NULL, NULL, 0, &e), -EINVAL);
	assert_int_equal(http_request_send(c, "GET", "x", NULL, NULL, 0, &e), -EINVAL);
	assert_int_equal(http_request_send(c, "POST", "/x", "A: b\r\n\r\nbody", NULL, 0, &e), -EINVAL);
	assert_int_equal(http_request_send(c, "POST", "/x", "A: b\n", NULL, 0, &e), -EINVAL);
	/* the chunked request (a build context) is held to the same rules */
	assert_int_equal(http_request_send_chunked(c, "POST", "/x\r\nEvil: 1", NULL, &e), -EINVAL);
	assert_int_equal(http_request_send_chunked(c, "POST /y", "/x", NULL, &e), -EINVAL);
	assert_int_equal(http_request_send_chunked(c, "POST", "/x", "A: b\r\n\r\nbody", &e), -EINVAL);
	assert_int_equal(http_request_send_chunked(c, "POST", "/x", "A: b\rC: d\r\n", &e), -EINVAL);
	http_conn_abort(c);
	finish(&p, t, c);
}

static void test_streaming_small_reads(void **state)
{
	struct peer p;
	pthread_t t;
	struct http_response resp;
	struct err e;
	struct http_conn *c = start(&p,
				    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				    "a\r\n0123456789\r\n3\r\nabc\r\n0\r\n\r\n",
				    0, 2000, &t);
	assert_int_equal(http_request_send(c, "GET", "/logs", NULL, NULL, 0, &e), 0);
	assert_int_equal(http_response_recv(c, false, &resp, &e), 0);
	char out[64];
	size_t n = 0;
	for (;;) {
		ssize_t got = http_body_read(c, out + n, 3, &e); /* smaller than a chunk */
		assert_true(got >= 0);
		if (got == 0)
			break;
		assert_true(got <= 3);
		n += (size_t)got;
	}
	assert_int_equal(n, 13);
	assert_memory_equal(out, "0123456789abc", 13);
	assert_true(http_conn_reusable(c));
	/* a cancel that lands after the whole answer came still shuts the connection: never kept */
	http_conn_abort(c);
	assert_false(http_conn_reusable(c));
	finish(&p, t, c);
}

/*
 * An http_io that reads records off the socket as TLS does: a type byte
 * ('D' data, 'T' anything else, such as a session ticket), a 2-byte length,
 * the bytes. A data record is handed out 5 bytes per recv, the rest held
 * (pending); a 'T' record or a partial one is -EAGAIN.
 */
struct recio {
	int fd;
	unsigned char rec[3 + 65535];
	size_t rlen;
	char data[65535];
	size_t dlen, doff;
	size_t sent;
};

static ssize_t recio_recv(void *arg, void *buf, size_t n)
{
	struct recio *io = arg;
	while (io->doff == io->dlen) {
		size_t need = io->rlen < 3 ? 3 : 3 + (size_t)(io->rec[1] << 8 | io->rec[2]);
		if (io->rlen == need && need > 3) {
			io->rlen = 0;
			if (io->rec[0] == 'T')
				return -EAGAIN;
			memcpy(io->data, io->rec + 3, need - 3);
			io->dlen = need - 3;
			io->doff = 0;
			break;
		}
		ssize_t got = recv(io->fd, io->rec + io->rlen, need - io->rlen, MSG_DONTWAIT);
		if (got == 0)
			return 0;
		if (got < 0)
			return -errno;
		io->rlen += (size_t)got;
		if (io->rlen < need)
			return -EAGAIN;
	}
	size_t k = io->dlen - io->doff < 5 ? io->dlen - io->doff : 5;
	k = k < n ? k : n;
	memcpy(buf, io->data + io->doff, k);
	io->doff += k;
	return (ssize_t)k;
}

static bool recio_pending(void *arg)
{
	struct recio *io = arg;
	return io->doff < io->dlen;
}

static int recio_send_all(void *arg, const void *p, size_t n, int timeout_ms)
{
	struct recio *io = arg;
	io->sent += n;
	return write_full(io->fd, p, n);
}

static void recio_abort(void *arg)
{
	struct recio *io = arg;
	shutdown(io->fd, SHUT_RDWR);
}

static void recio_close(void *arg)
{
	struct recio *io = arg;
	close(io->fd);
	io->fd = -1;
}

static const struct http_io recio_ops = { recio_recv, recio_pending, recio_send_all, recio_abort, recio_close };

/* Appends one record of type t holding s to out. */
static size_t record(char *out, char t, const char *s)
{
	size_t n = strlen(s);
	out[0] = t;
	out[1] = (char)(n >> 8);
	out[2] = (char)(n & 0xff);
	memcpy(out + 3, s, n);
	return 3 + n;
}

/*
 * The whole answer arrives before the client reads it, and the peer keeps
 * the connection open: what the io holds must be read without a wait for
 * the socket (which would time out), a ticket before it and records split
 * mid-head are no error, and the kept connection stays good until the
 * peer sends data it was not asked for.
 */
static void test_io_records(void **state)
{
	static char wire[512];
	size_t n = record(wire, 'T', "ticket");
	n += record(wire + n, 'D', "HTTP/1.1 200 OK\r\nContent-Le");
	n += record(wire + n, 'D', "ngth: 11\r\n\r\nhello");
	n += record(wire + n, 'D', " world");
	struct peer p;
	pthread_t t;
	struct recio io = { 0 };
	struct http_response resp;
	struct err e;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	memset(&p, 0, sizeof(p));
	p.fd = sv[1];
	p.reply = wire;
	p.reply_len = n;
	assert_int_equal(pthread_create(&t, NULL, peer_main, &p), 0);
	io.fd = sv[0];
	struct http_conn *c = http_conn_create_io(sv[0], &recio_ops, &io, 300);
	assert_int_equal(http_request_send(c, "GET", "/version", NULL, NULL, 0, &e), 0);
	assert_int_equal(http_response_recv(c, false, &resp, &e), 0);
	assert_int_equal(resp.status, 200);
	struct buf body;
	buf_init(&body, 1024);
	assert_int_equal(http_body_read_all(c, &body, &e), 0);
	assert_int_equal(body.len, 11);
	assert_memory_equal(body.data, "hello world", 11);
	buf_finish(&body);
	pthread_join(t, NULL);
	assert_true(io.sent > 0 && io.sent == p.request_len);

	/* idle: nothing, then a ticket, keep it; data nobody asked for ends it */
	assert_true(http_conn_idle_ok(c));
	n = record(wire, 'T', "ticket2");
	assert_int_equal(write_full(sv[1], wire, n), 0);
	assert_true(http_conn_idle_ok(c));
	n = record(wire, 'D', "junk");
	assert_int_equal(write_full(sv[1], wire, n), 0);
	assert_false(http_conn_idle_ok(c));
	http_conn_destroy(c);
	assert_int_equal(io.fd, -1);
	close(sv[1]);

	/* a ticket, then the peer's close: not good, though the first record alone would pass */
	struct recio io2 = { 0 };
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	io2.fd = sv[0];
	c = http_conn_create_io(sv[0], &recio_ops, &io2, 300);
	n = record(wire, 'T', "ticket3");
	assert_int_equal(write_full(sv[1], wire, n), 0);
	assert_int_equal(shutdown(sv[1], SHUT_WR), 0);
	assert_false(http_conn_idle_ok(c));
	http_conn_destroy(c);
	close(sv[1]);
}

/* A plain kept connection with a byte to read was closed or is confused: not reused. */
static void test_idle_plain(void **state)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct http_conn *c = http_conn_create(sv[0], 300);
	assert_true(http_conn_idle_ok(c));
	assert_int_equal(write_full(sv[1], "x", 1), 0);
	assert_false(http_conn_idle_ok(c));
	http_conn_destroy(c);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_chunked_body),
		cmocka_unit_test(test_eof_body),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_send_timeout),
		cmocka_unit_test(test_idle_cap),
		cmocka_unit_test(test_abort),
		cmocka_unit_test(test_request_injection_refused),
		cmocka_unit_test(test_streaming_small_reads),
		cmocka_unit_test(test_io_records),
		cmocka_unit_test(test_idle_plain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
