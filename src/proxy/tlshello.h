/*
 * tlshello.h - the server name (SNI) of a TLS ClientHello, read by the
 * egress proxy from the first bytes a CONNECT tunnel carries, so that the
 * name the tunnel was asked for and the name TLS is about to talk to must
 * agree (domain fronting is refused).
 *
 * Pure and bounded: at most TLSHELLO_MAX bytes are looked at, each once.
 * Unit-tested and fuzzed (tests/fuzz/fuzz-tlshello.c).
 */
#ifndef TLSHELLO_H
#define TLSHELLO_H

#include <stddef.h>

/* Bytes of records gathered for one ClientHello at most. */
#define TLSHELLO_MAX (16u << 10)

enum {
	TLSHELLO_FOUND = 1,    /* *ret_name holds the name */
	TLSHELLO_MORE = 0,     /* a ClientHello so far: give it more bytes */
	TLSHELLO_NOT_TLS = -1, /* not a TLS handshake, malformed, or over TLSHELLO_MAX */
	TLSHELLO_NO_SNI = -2,  /* a whole ClientHello without a host name */
};

/*
 * Looks at p[0..n) from the first byte of the stream. One of TLSHELLO_*;
 * with FOUND the host name, NUL-terminated, in name (namesz bytes at most,
 * else NOT_TLS).
 */
int tlshello_sni(const unsigned char *p, size_t n, char *name, size_t namesz);

#endif
