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
 * The finding, checking and decoding are pure functions over caller-owned
 * bytes: no I/O, no allocation.  The lifting below them (bulk_lift and the
 * feed that gives jansson the line with markers in place of the strings)
 * copies each string once and hands the line's pages back as it goes.
 */
#ifndef BULK_H
#define BULK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

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

/* Strings lifted out of one line, at most. */
#define BULK_LIFT_MAX 4
/* Bytes of a line handed back to the kernel at a time. */
#define BULK_GIVE_BACK_STEP (1u << 20)

/*
 * The big strings lifted out of one line.  The parsed message holds a marker
 * string in their place (made from nonce, which the process keeps secret so
 * no client can forge one); bulk_settle puts each back as a jansson string,
 * except the one a tool takes as its bulk argument, which stays in data[]
 * for the call to take.  Zero-initialise; bulk_free releases what is left.
 */
struct bulk_lifted {
	int count;
	unsigned long long nonce;
	struct bulk_span span[BULK_LIFT_MAX];
	char *data[BULK_LIFT_MAX];
	size_t len[BULK_LIFT_MAX];
	json_t *kept; /* the marker left in the arguments for the tool (borrowed) */
	int kept_index;
};

/*
 * Lifts the string values of at least min bytes out of line[0..n): each
 * checked, decoded in place and copied to its own buffer while the line's
 * pages behind the copy are handed back.  A string the JSON rules refuse
 * stays where it is, for the parser to report.
 */
void bulk_lift(struct bulk_lifted *b, char *line, size_t n, size_t min, unsigned long long nonce);

/* A lifted line being fed to json_load_callback (bulk_feed_read). */
struct bulk_feed {
	const char *p;
	size_t n, off;
	uintptr_t given_back; /* pages below this were handed back */
	const struct bulk_lifted *bulk;
	int next; /* the next lifted span */
	char marker[64];
	size_t marker_len, marker_off;
	bool in_marker;
};

void bulk_feed_init(struct bulk_feed *f, const char *line, size_t n, const struct bulk_lifted *b);
/*
 * A json_load_callback_t: the line a piece at a time, lifted strings as
 * their markers, handing back the pages of what was fed (the line is
 * otherwise held beside jansson's token buffer and the strings it makes).
 */
size_t bulk_feed_read(void *buffer, size_t buflen, void *data);

/*
 * Puts every lifted string back into msg as a jansson string, except the one
 * whose marker is keep (if keep is one): that one is left in b for the tool.
 * Frees the others' copies.
 */
void bulk_settle(struct bulk_lifted *b, json_t *msg, json_t *keep);

/* The byte of the line at position pos of what the parser was fed (markers in place of lifted strings). */
size_t bulk_position(const struct bulk_lifted *b, size_t pos);

void bulk_free(struct bulk_lifted *b);

/* memcpy of n bytes that hands src's pages back to the kernel as they are copied. */
void bulk_copy_giving_back(char *dst, char *src, size_t n);

#endif
