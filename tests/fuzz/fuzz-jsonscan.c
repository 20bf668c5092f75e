/*
 * fuzz-jsonscan.c - the decoding-cost scan against jansson.  On any input the
 * scan stays inside it (the copy ends where the input does) and its id span
 * too; what jansson allocates while it parses (peak of live bytes, success or
 * failure) never passes the estimate; and when jansson accepts the text, the
 * scan's token counts are the tree's and its id is jansson's "id".
 */
#include <stdbool.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonscan.h"
#include "fuzz.h"

/* jansson's allocations, with their sizes in a header: live and peak bytes. */
static size_t live, peak;
struct head {
	size_t n;
	size_t pad; /* keeps the payload 16-byte aligned */
};

static void *count_malloc(size_t n)
{
	struct head *h = malloc(sizeof(*h) + n);
	FUZZ_CHECK(h != NULL);
	h->n = n;
	live += n;
	if (live > peak)
		peak = live;
	return h + 1;
}

static void count_free(void *p)
{
	if (!p)
		return;
	struct head *h = (struct head *)p - 1;
	live -= h->n;
	free(h);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc, (void)argv;
	json_set_alloc_funcs(count_malloc, count_free);
	return 0;
}

struct tally {
	size_t objects, arrays, strings, bare;
};

static void walk(const json_t *j, struct tally *t)
{
	const char *key;
	json_t *v;
	size_t i;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		t->objects++;
		json_object_foreach ((json_t *)j, key, v) {
			t->strings++;
			walk(v, t);
		}
		break;
	case JSON_ARRAY:
		t->arrays++;
		json_array_foreach (j, i, v)
			walk(v, t);
		break;
	case JSON_STRING:
		t->strings++;
		break;
	default:
		t->bare++;
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *copy = fuzz_piece(data, size);
	struct jsonscan s;
	jsonscan_measure(copy, size, &s);
	free(copy);

	FUZZ_CHECK(s.id_len == 0 || (s.id_start < size && s.id_len <= size - s.id_start));
	FUZZ_CHECK(s.depth <= s.objects + s.arrays);
	FUZZ_CHECK(s.cost >= size && s.longest <= size);

	live = peak = 0;
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	FUZZ_CHECK(peak <= s.cost);
	if (!j)
		return 0;
	/* duplicate keys merge in jansson: compare counts only where every key is distinct */
	struct tally t = { 0 };
	walk(j, &t);
	if (t.strings == s.strings) {
		FUZZ_CHECK(t.objects == s.objects && t.arrays == s.arrays && t.bare == s.bare);
	} else {
		FUZZ_CHECK(t.strings < s.strings);
	}
	/* the id found is jansson's when no key is spelled with escapes (which the scan does not decode) */
	if (s.id_len && json_is_object(j) && !memchr(data, '\\', size)) {
		json_t *id = json_loadb((const char *)data + s.id_start, s.id_len, JSON_DECODE_ANY, NULL);
		FUZZ_CHECK(id != NULL);
		FUZZ_CHECK(json_equal(id, json_object_get(j, "id")));
		json_decref(id);
	}
	json_decref(j);
	return 0;
}
