/*
 * fuzz-userdb.c - USER specs resolved against arbitrary passwd and group
 * bytes (userdb.h). The input is "spec\0passwd\0group". Whatever the bytes,
 * the answer is 0 with ids in Docker's range, or one of the documented errors,
 * and the same input always gives the same answer.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "sandbox/userdb.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	char *buf = malloc(size + 1);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *spec = buf, *passwd = "", *group = "";
	size_t plen = 0, glen = 0;
	char *nul = memchr(buf, '\0', size);
	if (nul) {
		passwd = nul + 1;
		plen = size - (size_t)(passwd - buf);
		char *nul2 = memchr(passwd, '\0', plen);
		if (nul2) {
			group = nul2 + 1;
			glen = plen - (size_t)(group - passwd);
			plen = (size_t)(nul2 - passwd);
		}
	}
	unsigned long u, g, u2, g2;
	struct err err;
	int r = userdb_resolve(spec, passwd, plen, group, glen, &u, &g, &err);
	FUZZ_CHECK(r == 0 || r == -ENOENT || r == -EINVAL);
	if (r == 0) {
		FUZZ_CHECK(u <= USERDB_ID_MAX && g <= USERDB_ID_MAX);
		FUZZ_CHECK(userdb_resolve(spec, passwd, plen, group, glen, &u2, &g2, &err) == 0);
		FUZZ_CHECK(u == u2 && g == g2);
		/* root by number is root whatever the files say */
		if (strcmp(spec, "0") == 0 || strcmp(spec, "+0") == 0 || strcmp(spec, "00") == 0)
			FUZZ_CHECK(u == 0);
	} else {
		FUZZ_CHECK(memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
	}
	free(buf);
	return 0;
}
