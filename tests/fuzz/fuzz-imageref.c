/*
 * fuzz-imageref.c - image references and policy patterns (imageref.h). The
 * input is "reference\0patterns". Whatever the bytes: a parsed reference
 * formats to one that parses to itself, its parts keep their caps, and
 * matching answers the same twice.
 */
#include <errno.h>
#include <string.h>

#include "config/imageref.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 4096)
		return 0;
	char *buf = malloc(size + 1);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *ref = buf, *list = "";
	size_t rlen = size;
	char *nul = memchr(buf, '\0', size);
	if (nul) {
		list = nul + 1;
		rlen = (size_t)(nul - buf);
	}
	struct imageref r, r2;
	struct err err;
	int rc = imageref_parse(ref, rlen, &r, &err);
	FUZZ_CHECK(rc == 0 || rc == -EINVAL);
	if (rc == 0) {
		char out[IMAGEREF_FORMAT_MAX], out2[IMAGEREF_FORMAT_MAX];
		FUZZ_CHECK(strlen(r.domain) + 1 + strlen(r.path) <= IMAGEREF_NAME_MAX);
		FUZZ_CHECK(r.tag[0] || r.digest[0]);
		imageref_format(&r, out, sizeof(out));
		FUZZ_CHECK(imageref_parse(out, strlen(out), &r2, &err) == 0);
		imageref_format(&r2, out2, sizeof(out2));
		FUZZ_CHECK(strcmp(out, out2) == 0);
		if (imageref_patterns_check(list, &err) == 0) {
			bool a = imageref_allowed(list, &r, true);
			FUZZ_CHECK(a == imageref_allowed(list, &r, true));
			FUZZ_CHECK(imageref_allowed("*", &r, true));
		}
	}
	free(buf);
	return 0;
}
