/*
 * tls.h - TLS to a Docker engine (tcp:// with DOCKER_TLS_VERIFY), GnuTLS.
 *
 * A connection is a tls_stream: the session over its TCP socket. An HTTP
 * request and its answer run it in the calling thread (tls_stream_recv,
 * tls_stream_send_all; poll and shutdown work on tls_stream_fd). A
 * hijacked exec stream needs a plain socket instead (poll for both ways,
 * shutdown(SHUT_WR) for stdin's end): tls_relay hands the stream to a
 * small thread that moves bytes between it and one end of a socketpair,
 * with one fixed buffer per direction (the memory bound of a stream is
 * unchanged: the relay never holds more). shutdown(SHUT_WR) on the
 * caller's end becomes a TLS close_notify (stdin EOF for an exec);
 * shutdown(SHUT_RDWR) or close ends the relay and the TCP connection.
 */
#ifndef TLS_H
#define TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/errcode.h"

struct tls_ctx;

/*
 * Loads the CA (NULL: the system trust store) and the client certificate
 * and key (both NULL: none). -errno with err (ERRCODE_DOCKER_UNAVAILABLE)
 * naming the file that could not be read. verify false (a context's
 * SkipTLSVerify) skips checking the engine's certificate.
 */
int tls_ctx_create(const char *ca, const char *cert, const char *key, bool verify, struct tls_ctx **ret,
		   struct err *err);
/* Drops the owner's reference; live connections keep the credentials until they end. */
void tls_ctx_destroy(struct tls_ctx *t);

struct tls_stream;

/*
 * Runs the handshake on the connected TCP socket tcp_fd (taken over, closed
 * on failure) within timeout_ms, verifying the engine's certificate against
 * the CA and host (a name or an IP literal). 0 with *ret (its socket is
 * non-blocking and CLOEXEC), or -errno with err (ERRCODE_DOCKER_UNAVAILABLE)
 * saying what failed: unknown CA, name mismatch, client certificate
 * missing or refused. display names the endpoint in messages.
 */
int tls_open(struct tls_ctx *t, int tcp_fd, const char *host, const char *display, int timeout_ms,
	     struct tls_stream **ret, struct err *err);
/* The TCP socket, for poll and shutdown (an abort from another thread). */
int tls_stream_fd(const struct tls_stream *st);
/*
 * As read(2) on a non-blocking socket: >0 bytes, 0 at the end, -EAGAIN
 * (poll the fd for POLLIN, then call again), -ECONNRESET or -EPROTO.
 */
ssize_t tls_stream_recv(struct tls_stream *st, void *buf, size_t n);
/*
 * Shuts the socket down (safe from another thread, to cancel a call): the
 * owner's next read or write fails, and that failure is not taken for the
 * engine refusing the client certificate (tls_take_refusal).
 */
void tls_stream_abort(struct tls_stream *st);
/* Decrypted bytes are waiting: poll on the fd would not show them. */
bool tls_stream_pending(struct tls_stream *st);
/*
 * Sends all of p: 0, -EAGAIN when the engine took nothing for timeout_ms,
 * -EPIPE or -EPROTO.
 */
int tls_stream_send_all(struct tls_stream *st, const void *p, size_t n, int timeout_ms);
/* Ends the session and closes its socket (no close_notify: the engine sees the close). */
void tls_stream_close(struct tls_stream *st);
/*
 * Hands st (taken over, closed on failure) to a relay thread. 0 with
 * *ret_fd (CLOEXEC, blocking), or -errno with err.
 */
int tls_relay(struct tls_stream *st, int *ret_fd, struct err *err);

/*
 * True, with the alert's name in buf, when a relay saw the engine end a
 * connection with a TLS alert before any answer (TLS 1.3's refusal of a
 * client certificate) in the last minute; the note is taken once.
 */
bool tls_take_refusal(char *buf, size_t n);

#endif
