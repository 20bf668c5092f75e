/*
 * fuzz-engines.c - the SANDBOX_ENGINES parser (engines.h) on arbitrary
 * bytes: 0 with valid, distinct names and capped endpoints, or -EINVAL; the
 * same input always gives the same answer. engines_redact never grows past
 * its buffer.
 */
#include <errno.h>
#include <string.h>

#include "base/util.h"
#include "engine/engines.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	util_json_init();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct engines_spec sp[ENGINES_MAX], sp2[ENGINES_MAX];
	size_t n = 0, n2 = 0;
	struct err e;
	char red[64];

	if (size > ENGINES_LIST_MAX + 16)
		return 0;
	int r = engines_parse((const char *)data, size, sp, &n, &e);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(n <= ENGINES_MAX);
		FUZZ_CHECK(engines_parse((const char *)data, size, sp2, &n2, &e) == 0 && n2 == n);
		for (size_t i = 0; i < n; i++) {
			FUZZ_CHECK(engines_name_valid(sp[i].name) && strcmp(sp[i].name, ENGINES_DEFAULT) != 0);
			FUZZ_CHECK(sp[i].endpoint[0] && strlen(sp[i].endpoint) <= ENGINES_ENDPOINT_MAX);
			FUZZ_CHECK(strcmp(sp[i].name, sp2[i].name) == 0 &&
				   strcmp(sp[i].endpoint, sp2[i].endpoint) == 0);
			for (size_t k = 0; k < i; k++)
				FUZZ_CHECK(strcmp(sp[i].name, sp[k].name) != 0);
			engines_redact(sp[i].endpoint, red, sizeof(red));
			FUZZ_CHECK(strlen(red) < sizeof(red));
		}
	}
	return 0;
}
