/*
 * jsonscan.h - what a JSON text would cost to decode, measured before it is
 * handed to jansson.
 *
 * jansson spends about 220 bytes on an empty object and 120 on an empty
 * array, so `[{},{},...]` costs 70 times its own size: a 4 MiB frame from a
 * sandbox became 300 MB, a 60 MB line 4.7 GB.  A caller measures the text
 * first, one linear pass with no allocation, and parses it only when the
 * estimate fits its budget.  The scan counts tokens; it does not check
 * grammar (jansson still does), so on text that is not JSON its counts mean
 * nothing beyond "this much would be allocated at most".
 *
 * The scan also finds the value of a top-level "id" member, so that a
 * request refused before parsing can still be answered with its own id.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef JSONSCAN_H
#define JSONSCAN_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Bytes jansson allocates per token (measured with glibc, 2.14, rounded up;
 * the array slot or object member that holds a value is included).
 */
#define JSONSCAN_COST_OBJECT 256
#define JSONSCAN_COST_ARRAY 160
#define JSONSCAN_COST_STRING 128 /* plus its bytes; keys too */
#define JSONSCAN_COST_BARE 64	 /* number, true, false, null */
/*
 * The text is counted once (every string ends up copied out of it), and the
 * longest token three times more: while jansson reads a token it holds it in
 * a buffer that doubles as it grows, then decodes and copies it.
 */
#define JSONSCAN_COST_LONGEST 3
/* The parser's own state, whatever the text. */
#define JSONSCAN_COST_BASE 1024

struct jsonscan {
	size_t objects, arrays, strings, bare; /* tokens seen (keys count as strings) */
	size_t longest;			       /* bytes of the longest string or bare token */
	size_t depth;			       /* deepest nesting of objects and arrays */
	size_t cost;			       /* estimated bytes to decode, saturating */
	bool nul_escape;		       /* some string holds \u0000 */
	size_t id_start, id_len;	       /* the top-level "id" value; id_len 0: none */
};

/* Measures p[0..n) into *ret (always filled). */
void jsonscan_measure(const char *p, size_t n, struct jsonscan *ret);

#endif
