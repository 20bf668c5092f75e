/*
 * fuzz-linksign.c - the parsers of a signed link's exp and sig, the base URL
 * check and the verifier (linksign.h) on arbitrary bytes.
 *
 * The input is split at its first '&' into exp and sig. Neither parser may
 * read past its input (ASan) or accept what it must refuse (exp: 1-12
 * digits; sig: 64 lowercase hex digits), and no input may pass as a genuine
 * signature of a fixed key that it never saw.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "tools/linksign.h"

static struct linksign *signer;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signer = linksign_create(60);
	return linksign_set_base(signer, "http://127.0.0.1:8080");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	const char *amp = memchr(p, '&', size);
	size_t en = amp ? (size_t)(amp - p) : size;
	int64_t e;

	if (linksign_exp_parse(p, en, &e) == 0) {
		FUZZ_CHECK(en > 0 && en <= LINKSIGN_EXP_DIGITS && e >= 0);
		for (size_t i = 0; i < en; i++)
			FUZZ_CHECK(p[i] >= '0' && p[i] <= '9');
	}
	if (linksign_sig_parse(p, size) == 0)
		FUZZ_CHECK(size == LINKSIGN_SIG_LEN);
	(void)linksign_base_check(p, size);
	if (!amp || memchr(p, '\0', size))
		return 0;
	char *exp = strndup(p, en), *sig = strndup(amp + 1, size - en - 1);
	/* no input is a forgery */
	FUZZ_CHECK(linksign_verify(signer, "alice", "0a1b2c3d4e5f", "/workspace/x", exp, sig, 0) != LINKSIGN_OK);
	free(exp);
	free(sig);
	return 0;
}
