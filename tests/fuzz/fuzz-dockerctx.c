/*
 * fuzz-dockerctx.c - meta.json and config.json parsers (dockerctx.h) on
 * arbitrary bytes: 0 with a non-empty host within its cap, or -EINVAL; the
 * same input always gives the same answer.
 */
#include <errno.h>
#include <string.h>

#include "base/util.h"
#include "config/dockerctx.h"
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
	struct dockerctx d, d2;
	struct err e;
	char name[DOCKERCTX_NAME_MAX + 1];

	if (size > 1 << 20)
		return 0;
	int r = dockerctx_parse_meta("fuzz", (const char *)data, size, &d, &e);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(d.host[0] != '\0' && strlen(d.host) <= DOCKERCTX_HOST_MAX);
		FUZZ_CHECK(dockerctx_parse_meta("fuzz", (const char *)data, size, &d2, &e) == 0);
		FUZZ_CHECK(strcmp(d.host, d2.host) == 0 && d.skip_tls_verify == d2.skip_tls_verify);
	}
	r = dockerctx_parse_current((const char *)data, size, name, sizeof(name), &e);
	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0)
		FUZZ_CHECK(name[0] == '\0' || strcmp(name, "default") == 0 || dockerctx_name_valid(name));
	return 0;
}
