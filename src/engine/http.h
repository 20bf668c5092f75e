/*
 * http.h - an HTTP/1.1 client on one connected socket, for the Engine API.
 *
 * One request at a time per connection.  Bodies are streamed: the caller
 * reads them with http_body_read (or collects them, capped, with
 * http_body_read_all), whatever the framing (Content-Length, chunked, or to
 * EOF).  Every read waits at most timeout_ms, and the whole response (head
 * and body) must arrive within timeout_ms of its request, so a peer that
 * trickles bytes cannot hold a call forever; a cancel hook may shutdown()
 * the socket from another thread to abort a blocked call at once.
 */
#ifndef HTTP_H
#define HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/errcode.h"
#include "base/http_parse.h"

/* Largest request head we build (method, target and headers). */
#define HTTP_REQUEST_HEAD_MAX 8192
/* Read buffer: one read(2) at most this much. */
#define HTTP_READ_CHUNK (64 * 1024)

struct http_conn;

struct http_response {
	int status;
	char content_type[128];
	char api_version[32]; /* Api-Version header, if any */
	char path_stat[512];  /* X-Docker-Container-Path-Stat (archive endpoints), if any */
	bool upgraded;	      /* 101 Switching Protocols: the socket is now raw */
};

/*
 * The byte stream of a connection when it is not the socket itself (TLS
 * run in the calling thread). The socket stays the connection's fd: poll
 * and shutdown (http_conn_abort) work on it.
 */
struct http_io {
	/* As read(2) on a non-blocking socket: >0, 0 at the end, -EAGAIN (poll, then again), -errno. */
	ssize_t (*recv)(void *arg, void *buf, size_t n);
	/* Bytes already taken off the socket that the next recv returns: poll would not show them. */
	bool (*pending)(void *arg);
	/* All of p: 0, -EAGAIN when the peer took nothing for timeout_ms, -errno. */
	int (*send_all)(void *arg, const void *p, size_t n, int timeout_ms);
	/* Shuts the socket down, from any thread (http_conn_abort). */
	void (*abort)(void *arg);
	/* Frees arg and closes the socket. */
	void (*close)(void *arg);
};

/* Takes ownership of fd. */
struct http_conn *http_conn_create(int fd, int timeout_ms);
/* Takes ownership of arg (and the socket fd under it); io is static. */
struct http_conn *http_conn_create_io(int fd, const struct http_io *io, void *arg, int timeout_ms);
void http_conn_destroy(struct http_conn *c);
/*
 * Caps each wait for a byte at idle_ms (below timeout_ms), for answers that
 * may take long in total but must keep moving (an image pull).
 */
void http_conn_set_idle(struct http_conn *c, int idle_ms);
int http_conn_fd(const struct http_conn *c);
/* Shuts the socket down (safe from another thread): blocked reads return at once. */
void http_conn_abort(struct http_conn *c);
/* True when the last response was read to its end and the peer allows reuse. */
bool http_conn_reusable(const struct http_conn *c);
/*
 * Whether a kept connection, idle between requests, is still open: one
 * with bytes to read was closed (or sent junk) by the peer. Over TLS a
 * record that is not data (a session ticket) is taken and the connection
 * stays good.
 */
bool http_conn_idle_ok(struct http_conn *c);

/*
 * Sends one request. extra_headers is "Name: value\r\n"... or NULL; method,
 * target and headers are checked for CR, LF and NUL (-EINVAL).
 * 0 or -errno with err.
 */
int http_request_send(struct http_conn *c, const char *method, const char *target, const char *extra_headers,
		      const void *body, size_t body_len, struct err *err);
/*
 * Sends a request head whose body follows in chunks of unknown total length
 * (Transfer-Encoding: chunked): http_chunk_write each piece, then one with
 * n == 0 to end the body. Same checks and errors as http_request_send.
 */
int http_request_send_chunked(struct http_conn *c, const char *method, const char *target, const char *extra_headers,
			      struct err *err);
int http_chunk_write(struct http_conn *c, const void *p, size_t n, struct err *err);
/* Reads the response head. head_only: the request was HEAD (no body follows). */
int http_response_recv(struct http_conn *c, bool head_only, struct http_response *ret, struct err *err);
/* Reads up to cap body bytes: >0 bytes, 0 at the end of the body, or -errno with err. */
ssize_t http_body_read(struct http_conn *c, void *dst, size_t cap, struct err *err);
/* Reads the rest of the body into out (capped by out->max: -EMSGSIZE). */
int http_body_read_all(struct http_conn *c, struct buf *out, struct err *err);
/*
 * After an upgrade: moves bytes already buffered past the head (at most one
 * read, HTTP_READ_CHUNK) into out; the rest is read straight from
 * http_conn_fd. 0, or -EMSGSIZE (nothing moved) when out cannot take them.
 */
int http_take_buffered(struct http_conn *c, struct buf *out);

#endif
