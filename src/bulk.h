/*
 * bulk.h - the megabyte-sized string values of a big JSON-RPC line, found,
 * checked and decoded without jansson.
 *
 * A file_write of 20 MiB of base64 is one 27 MiB string in one line.  Parsed
 * by jansson it is held twice at once (the token text, then the decoded
 * string).  mcp lifts such strings out of the line before parsing instead:
 * found here, decoded in place (a JSON escape is never shorter than what it
 * stands for), and copied out while the line's pages are handed back, so the
 * server holds the content once.
 *
 * Pure functions over caller-owned bytes: no I/O, no allocation.
 */
#ifndef BULK_H
#define BULK_H

#include <stddef.h>

/* A string value in a JSON text: the bytes between its quotes. */
struct bulk_span {
	size_t start, len;
};

/*
 * Finds up to max string values (not object keys) of at least min bytes
 * between their quotes in the JSON text p[0..n), in order.  Returns how many.
 * Text that is not JSON gives spans that mean nothing; the caller checks each
 * with bulk_check and lets the JSON parser judge the rest.
 */
int bulk_find(const char *p, size_t n, size_t min, struct bulk_span *spans, int max);

/*
 * 0 when p[0..n) is a string body a strict JSON parser accepts (no raw control
 * bytes, only the JSON escapes, \u escapes with paired surrogates and not
 * \u0000, valid UTF-8), else -EINVAL.
 */
int bulk_check(const char *p, size_t n);

/* Decodes a body bulk_check accepted, in place; returns the decoded length (<= n). */
size_t bulk_decode(char *p, size_t n);

#endif
