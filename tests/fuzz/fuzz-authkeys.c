/*
 * fuzz-authkeys.c - the token file parser (authkeys.h) on arbitrary bytes.
 *
 * It must not read past its input (ASan), must leave an empty table on
 * failure, and every token it keeps must be found again by authkeys_match
 * under the name it was read with.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "transport/http/authkeys.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct authkeys k;
	struct err err;

	err_clear(&err);
	if (authkeys_parse((const char *)data, size, &k, &err) < 0) {
		if (k.n != 0)
			abort();
		return 0;
	}
	for (unsigned i = 0; i < k.n; i++) {
		const char *name = authkeys_match(&k, (const char *)k.key[i].token, k.key[i].len);
		if (!name || strcmp(name, k.key[i].name) != 0)
			abort();
	}
	return 0;
}
