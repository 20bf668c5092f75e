/*
 * fuzz-tlshello.c - tlshello_sni on arbitrary bytes.
 *
 * Beyond not crashing: a found name fits and has no NUL inside; every
 * answer but "more" stays the same when bytes are added after the input
 * (the decision rests on what was looked at, never on what comes later);
 * and one byte less of an input that found a name finds the same name or
 * asks for more, never another verdict.
 */
#include <string.h>

#include "fuzz.h"
#include "proxy/tlshello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[300], name2[300];
	int r = tlshello_sni(data, size, name, sizeof(name));
	FUZZ_CHECK(r >= TLSHELLO_NO_SNI && r <= TLSHELLO_FOUND);
	if (r == TLSHELLO_FOUND)
		FUZZ_CHECK(strlen(name) > 0 && strlen(name) < sizeof(name));
	if (r == TLSHELLO_MORE)
		return 0;
	uint8_t *more = malloc(size + 16);
	memcpy(more, data, size);
	memset(more + size, 0x16, 16);
	int r2 = tlshello_sni(more, size + 16, name2, sizeof(name2));
	FUZZ_CHECK(r2 == r);
	if (r == TLSHELLO_FOUND) {
		FUZZ_CHECK(strcmp(name, name2) == 0);
		int r3 = tlshello_sni(data, size - 1, name2, sizeof(name2));
		FUZZ_CHECK(r3 == TLSHELLO_MORE || (r3 == TLSHELLO_FOUND && strcmp(name, name2) == 0));
	}
	free(more);
	return 0;
}
