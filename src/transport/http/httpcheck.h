/*
 * httpcheck.h - the checks the HTTP transport makes on what a client sends
 * before anything reaches MCP: the --http address, the Host header (against
 * DNS rebinding) and the Origin header (against web pages calling a local
 * server).
 *
 * Pure: no I/O, no allocation; every input is a length-bounded slice that
 * need not be NUL-terminated.
 */
#ifndef HTTPCHECK_H
#define HTTPCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest host in --http (a name or an address literal, brackets excluded). */
#define HTTPCHECK_HOST_MAX 255

/*
 * Splits "HOST:PORT", "[V6]:PORT" or "PORT" (host defaults to 127.0.0.1).
 * host gets the host without brackets, NUL-terminated (HTTPCHECK_HOST_MAX + 1
 * bytes). 0, or -1 when s is none of these or the port is not 1-65535.
 */
int httpcheck_listen_parse(const char *s, size_t n, char *ret_host, unsigned *ret_port);

/* True for localhost, 127.0.0.0/8 and ::1 (host as httpcheck_listen_parse gives it). */
bool httpcheck_loopback(const char *host);

/*
 * True when a Host header value names the bound address: host (or, bound to
 * loopback, any of localhost, 127.0.0.1, [::1]) and port, compared without
 * regard to case. A missing port counts as 80.
 */
bool httpcheck_host(const char *value, size_t n, const char *host, unsigned port);

/*
 * True when a request with this Origin header may be served: bound to
 * loopback with an empty allow list, origins on localhost, 127.0.0.1 or
 * [::1]; otherwise only the origins in allow (comma-separated, exact,
 * without regard to case). "null" and anything unparsable are refused.
 */
bool httpcheck_origin(const char *value, size_t n, bool loopback, const char *allow);

/*
 * One Content-Length field value, folded into what the fields before it
 * said (*io_seen: whether any did, *io_len: their length). A value is
 * decimal digits, or a comma-separated list of the same number (RFC 9112
 * 6.3). False when it is malformed, over 2^63, or names another length than
 * an earlier one: the message is unreadable (400), as a recipient cannot
 * tell where its body ends.
 */
bool httpcheck_length(const char *value, size_t n, uint64_t *io_len, bool *io_seen);

#endif
