/*
 * tls.h - TLS to a Docker engine (tcp:// with DOCKER_TLS_VERIFY), GnuTLS.
 *
 * The HTTP client and the hijacked exec streams work on a plain socket fd
 * (poll, send, shutdown).  So that all of them work over TLS unchanged, a
 * TLS connection is handed to them as one end of a socketpair; a small
 * relay thread per connection moves bytes between that end and the TLS
 * session, with one fixed 16 KiB buffer per direction (the memory bound of a
 * stream is unchanged: the relay never holds more).  shutdown(SHUT_WR) on
 * the caller's end becomes a TLS close_notify (stdin EOF for an exec);
 * shutdown(SHUT_RDWR) or close ends the relay and the TCP connection.
 */
#ifndef TLS_H
#define TLS_H

#include <stdbool.h>
#include <stddef.h>

#include "errcode.h"

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

/*
 * Runs the handshake on the connected TCP socket tcp_fd (taken over, closed
 * on failure) within timeout_ms, verifying the engine's certificate against
 * the CA and host (a name or an IP literal), then starts the relay. 0 with
 * *ret_fd (CLOEXEC, blocking), or -errno with err (ERRCODE_DOCKER_UNAVAILABLE)
 * saying what failed: unknown CA, name mismatch, client certificate missing
 * or refused. display names the endpoint in messages.
 */
int tls_connect(struct tls_ctx *t, int tcp_fd, const char *host, const char *display, int timeout_ms, int *ret_fd,
		struct err *err);

/*
 * True, with the alert's name in buf, when a relay saw the engine end a
 * connection with a TLS alert before any answer (TLS 1.3's refusal of a
 * client certificate) in the last minute; the note is taken once.
 */
bool tls_take_refusal(char *buf, size_t n);

#endif
