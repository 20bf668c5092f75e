/*
 * fuzz-linksign.c - the parsers of a signed link's exp and sig, the base URL
 * check and the verifier (linksign.h) on arbitrary bytes.
 *
 * The input is split at its first '&' into exp and sig. Neither parser may
 * read past its input (ASan) or accept what it must refuse (exp: 1-12
 * digits; sig: 64 lowercase hex digits), and no input may pass as a genuine
 * signature of a fixed key that it never saw. The same input is a preview's
 * Host and a Cookie header: a Host passes only in its one form, and the
 * credential scan always moves on and finds only well-formed items.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "tools/linksign.h"

static struct linksign *signer;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	signer = linksign_create(60);
	return linksign_set_base(signer, "http://127.0.0.1:8080") || linksign_set_preview(signer, "http://localhost:7001");
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
	/* a preview Host: only PORT-SESSION.localhost:7001 passes */
	char session[13];
	unsigned port = 0;
	if (linksign_preview_host(signer, p, size, session, &port) == 0) {
		FUZZ_CHECK(port >= 1 && port <= 65535 && strlen(session) == 12);
		FUZZ_CHECK(size > 15 && strncasecmp(p + size - 15, ".localhost:7001", 15) == 0);
	}
	/* credentials in a Cookie header: each step moves on, each found one is of its form */
	char ce[LINKSIGN_EXP_DIGITS + 1], cs[LINKSIGN_SIG_LEN + 1];
	for (size_t pos = 0, last = 0; linksign_preview_cred(p, size, ';', &pos, ce, cs) == 0; last = pos) {
		FUZZ_CHECK(pos > last && pos <= size);
		FUZZ_CHECK(linksign_exp_parse(ce, strlen(ce), &e) == 0 && linksign_sig_parse(cs, strlen(cs)) == 0);
		FUZZ_CHECK(linksign_preview_verify(signer, "alice", "0a1b2c3d4e5f", 8000, ce, cs, 0) != LINKSIGN_OK);
	}
	if (!amp || memchr(p, '\0', size))
		return 0;
	char *exp = strndup(p, en), *sig = strndup(amp + 1, size - en - 1);
	/* no input is a forgery */
	FUZZ_CHECK(linksign_verify(signer, "alice", "0a1b2c3d4e5f", "/workspace/x", exp, sig, 0) != LINKSIGN_OK);
	free(exp);
	free(sig);
	return 0;
}
