/*
 * http_parse.h - pure parsers for HTTP/1.1: the responses of the Docker
 * Engine (status line and headers, the chunked transfer coding) and the
 * request heads a sandbox sends the egress proxy (proxy/proxy.c).
 *
 * No I/O and no allocation: outputs are slices into the caller's buffer.
 * Return convention (as picohttpparser): >= 0 done, -2 need more bytes,
 * -1 malformed.  Every dimension is capped by the constants below, so a
 * hostile peer can make the parser fail but never grow.
 */
#ifndef HTTP_PARSE_H
#define HTTP_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"

/* Largest response head (status line + headers) accepted. */
#define HTTP_HEAD_MAX (64 * 1024)
/* Most headers in one response. */
#define HTTP_HEADERS_MAX 64
/* Most hex digits in one chunk size (2^60 bytes is far past any body cap). */
#define HTTP_CHUNK_DIGITS_MAX 15
/* Longest chunk-extension or trailer line. */
#define HTTP_CHUNK_LINE_MAX 4096

struct http_header {
	struct slice name;
	struct slice value; /* leading and trailing blanks removed */
};

struct http_head {
	int minor_version; /* HTTP/1.<minor> */
	int status;
	struct slice reason;
	struct http_header headers[HTTP_HEADERS_MAX];
	size_t num_headers;
};

/* Largest request head accepted (the egress proxy's). */
#define HTTP_PARSE_REQUEST_MAX (16 * 1024)

struct http_request {
	int minor_version; /* HTTP/1.<minor> */
	struct slice method;
	struct slice target; /* as sent: no whitespace or control bytes in it */
	struct http_header headers[HTTP_HEADERS_MAX];
	size_t num_headers;
};

/*
 * Parses a request head at the start of buf. Returns its length including
 * the blank line, -2 if the head is not complete yet (and within
 * HTTP_PARSE_REQUEST_MAX), or -1 if malformed or too large.
 */
int http_parse_request(const char *buf, size_t len, struct http_request *ret);

/*
 * Parses a response head at the start of buf. Returns its length including
 * the blank line, -2 if the head is not complete yet (and within
 * HTTP_HEAD_MAX), or -1 if malformed or too large.
 */
int http_parse_response(const char *buf, size_t len, struct http_head *ret);

/* The value of the first header called name (case-insensitive), or NULL. */
const struct slice *http_head_get(const struct http_head *h, const char *name);

enum http_chunked_state {
	HTTP_CHUNKED_SIZE,    /* reading hex digits of a chunk size */
	HTTP_CHUNKED_EXT,     /* skipping a chunk extension to the end of the line */
	HTTP_CHUNKED_SIZE_LF, /* saw CR after the size line, want LF */
	HTTP_CHUNKED_DATA,    /* inside chunk data, `remaining` bytes left */
	HTTP_CHUNKED_DATA_CR, /* after chunk data, want CR (or a bare LF) */
	HTTP_CHUNKED_DATA_LF, /* after chunk data and CR, want LF */
	HTTP_CHUNKED_TRAILER, /* after the last chunk, reading trailer lines */
	HTTP_CHUNKED_DONE,    /* the body is complete */
};

struct http_chunked {
	enum http_chunked_state state;
	uint64_t remaining;
	unsigned digits;
	size_t line_len;
};

void http_chunked_init(struct http_chunked *d);
/*
 * Decodes from in[0..len). Sets *ret_consumed to the bytes of `in` used.
 * Returns 1 with *ret_data a run of body bytes inside `in` (call again with
 * the rest), 0 when the body ended (nothing after the final CRLF is
 * consumed), -2 when all of `in` was used and more is needed, -1 if malformed.
 */
int http_chunked_decode(struct http_chunked *d, const char *in, size_t len, size_t *ret_consumed,
			struct slice *ret_data);

#endif
