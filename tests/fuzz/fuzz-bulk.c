/*
 * fuzz-bulk.c - the big-string lifter against jansson.  The input is taken
 * twice: as a JSON text whose string values bulk_find picks (each span inside
 * the text, in order, between quotes), and as one string body.  For every
 * body bulk_check must give jansson's verdict and bulk_decode jansson's bytes,
 * so lifting a string out of a line never changes what a message means.
 */
#include <string.h>

#include <jansson.h>

#include "base/util.h"
#include "fuzz.h"
#include "mcp/bulk.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	util_json_init();
	return 0;
}

static void agree(const char *body, size_t n)
{
	char *doc = xmalloc(n + 2);
	doc[0] = '"';
	memcpy(doc + 1, body, n);
	doc[n + 1] = '"';
	json_error_t jerr;
	json_t *j = json_loadb(doc, n + 2, JSON_DECODE_ANY, &jerr);

	char *copy = fuzz_piece(body, n);
	int ok = bulk_check(copy, n);
	FUZZ_CHECK((ok == 0) == (j != NULL));
	if (j) {
		size_t len = bulk_decode(copy, n);
		FUZZ_CHECK(len == json_string_length(j));
		FUZZ_CHECK(memcmp(copy, json_string_value(j), len) == 0);
	}
	free(copy);
	json_decref(j);
	free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct bulk_span spans[8];
	char *copy = fuzz_piece(text, size);
	int n = bulk_find(copy, size, size % 4, spans, 8);
	free(copy);

	FUZZ_CHECK(n >= 0 && n <= 8);
	size_t prev_end = 0;
	for (int i = 0; i < n; i++) {
		FUZZ_CHECK(spans[i].start >= 1 && spans[i].start >= prev_end + 1);
		FUZZ_CHECK(spans[i].start + spans[i].len < size);
		FUZZ_CHECK(text[spans[i].start - 1] == '"' && text[spans[i].start + spans[i].len] == '"');
		FUZZ_CHECK(spans[i].len >= size % 4);
		prev_end = spans[i].start + spans[i].len + 1;
		agree(text + spans[i].start, spans[i].len);
	}
	agree(text, size);
	return 0;
}
