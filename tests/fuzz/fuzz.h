/*
 * fuzz.h - what the libFuzzer targets share: a check that aborts (whatever
 * NDEBUG says), and a split plan that cuts an input into the pieces a socket
 * might deliver, so the incremental parsers see every kind of boundary.
 *
 * Each piece is copied into a buffer of exactly its size, so AddressSanitizer
 * faults on a parser that reads one byte past what it was given, as the
 * guard page does in the unit tests.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond)                                                                        \
	do {                                                                                    \
		if (!(cond)) {                                                                  \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                \
		}                                                                               \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * How an input is cut, chosen by its first byte: mode 0 feeds it whole,
 * mode 1 a byte at a time, modes 2 and 3 in pseudo-random pieces of 1 to
 * 2^(bits 2-5) bytes (seeded by the byte, so a crash replays exactly).
 */
struct fuzz_split {
	unsigned mode;
	size_t max_piece;
	uint32_t rng;
};

static inline void fuzz_split_init(struct fuzz_split *s, uint8_t plan)
{
	s->mode = plan & 3;
	s->max_piece = (size_t)1 << ((plan >> 2) & 15);
	s->rng = 0x9e3779b9u ^ plan;
}

static inline size_t fuzz_split_next(struct fuzz_split *s, size_t left)
{
	size_t n;
	switch (s->mode) {
	case 0:
		return left;
	case 1:
		n = 1;
		break;
	default:
		s->rng ^= s->rng << 13;
		s->rng ^= s->rng >> 17;
		s->rng ^= s->rng << 5;
		n = 1 + s->rng % s->max_piece;
		break;
	}
	return n < left ? n : left;
}

/* n bytes (never NULL). */
static inline char *fuzz_alloc(size_t n)
{
	char *c = malloc(n ? n : 1);
	FUZZ_CHECK(c != NULL);
	return c;
}

/* A copy of p[0..n) in a buffer of exactly n bytes (never NULL). */
static inline char *fuzz_piece(const void *p, size_t n)
{
	char *c = fuzz_alloc(n);
	for (size_t i = 0; i < n; i++)
		c[i] = ((const char *)p)[i];
	return c;
}

#endif
