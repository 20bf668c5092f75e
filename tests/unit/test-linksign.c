/*
 * test-linksign.c - signed download links (linksign.h): the parsers of the
 * exp and sig a request carries (each value whole and every prefix, at a
 * guard page), the base URL check, and sign/verify round trips with every
 * part altered; the same for preview links (their Host, their credential in
 * a query or a Cookie header).
 */
#include "testutil.h"

#include <errno.h>

#include "tools/linksign.h"

static int exp_parse(const char *v, int64_t *ret)
{
	size_t n = strlen(v);
	int64_t scratch;
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		(void)linksign_exp_parse(g.p, k, &scratch);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	int r = linksign_exp_parse(g.p, n, ret);
	guarded_free(&g);
	return r;
}

static int sig_parse(const char *v)
{
	size_t n = strlen(v);
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		(void)linksign_sig_parse(g.p, k);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	int r = linksign_sig_parse(g.p, n);
	guarded_free(&g);
	return r;
}

static bool base_ok(const char *v)
{
	size_t n = strlen(v);
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		(void)linksign_base_check(g.p, k);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	bool ok = linksign_base_check(g.p, n);
	guarded_free(&g);
	return ok;
}

static void test_exp(void **state)
{
	int64_t v = -1;
	(void)state;

	assert_int_equal(exp_parse("1795675376", &v), 0);
	assert_int_equal(v, 1795675376);
	assert_int_equal(exp_parse("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(exp_parse("999999999999", &v), 0);
	assert_int_equal(v, 999999999999LL);
	assert_int_equal(exp_parse("1000000000000", &v), -1); /* 13 digits */
	assert_int_equal(exp_parse("", &v), -1);
	assert_int_equal(exp_parse("-1", &v), -1);
	assert_int_equal(exp_parse("+1", &v), -1);
	assert_int_equal(exp_parse(" 1", &v), -1);
	assert_int_equal(exp_parse("1 ", &v), -1);
	assert_int_equal(exp_parse("12a", &v), -1);
	assert_int_equal(exp_parse("0x10", &v), -1);
}

static void test_sig(void **state)
{
	char s[LINKSIGN_SIG_LEN + 2];
	(void)state;

	memset(s, 'a', LINKSIGN_SIG_LEN);
	s[LINKSIGN_SIG_LEN] = '\0';
	assert_int_equal(sig_parse(s), 0);
	memcpy(s, "0123456789abcdef", 16);
	assert_int_equal(sig_parse(s), 0);
	s[3] = 'A';
	assert_int_equal(sig_parse(s), -1); /* upper case is another spelling */
	s[3] = 'g';
	assert_int_equal(sig_parse(s), -1);
	s[3] = '3';
	s[LINKSIGN_SIG_LEN - 1] = '\0';
	assert_int_equal(sig_parse(s), -1); /* 63 */
	s[LINKSIGN_SIG_LEN - 1] = 'a';
	s[LINKSIGN_SIG_LEN] = 'a';
	s[LINKSIGN_SIG_LEN + 1] = '\0';
	assert_int_equal(sig_parse(s), -1); /* 65 */
	assert_int_equal(sig_parse(""), -1);
}

static void test_base(void **state)
{
	char big[LINKSIGN_BASE_MAX + 2];
	(void)state;

	assert_true(base_ok("http://127.0.0.1:8080"));
	assert_true(base_ok("https://sandbox.example.com"));
	assert_true(base_ok("HTTPS://sandbox.example.com:8443/mcp-box/"));
	assert_true(base_ok("http://[::1]:8080"));
	assert_false(base_ok("ftp://a.example"));
	assert_false(base_ok("http://"));
	assert_false(base_ok("http:///path"));
	assert_false(base_ok("http://a.example/?x=1"));
	assert_false(base_ok("http://a.example/#frag"));
	assert_false(base_ok("http://user@a.example"));
	assert_false(base_ok("http://a example"));
	assert_false(base_ok("http://a.example\n"));
	assert_false(base_ok("http://a.example/\"><script>"));
	assert_false(base_ok("a.example"));
	memcpy(big, "http://", 7);
	memset(big + 7, 'a', sizeof(big) - 8);
	big[sizeof(big) - 1] = '\0';
	assert_false(base_ok(big));

	struct linksign *l = linksign_create(60);
	char auth[LINKSIGN_BASE_MAX + 1];
	assert_false(linksign_enabled(l));
	assert_false(linksign_enabled(NULL));
	assert_int_equal(linksign_set_base(l, "gopher://x"), -EINVAL);
	assert_int_equal(linksign_set_base(l, "https://Box.example:8443/p//"), 0);
	assert_true(linksign_enabled(l));
	assert_string_equal(l->base, "https://Box.example:8443/p");
	linksign_base_authority(l, auth, sizeof(auth));
	assert_string_equal(auth, "Box.example:8443");
	linksign_destroy(l);
	linksign_destroy(NULL);
}

/* exp and sig of a URL linksign_url made, into exp/sig (NUL-terminated). */
static void split(const char *url, char *exp, char *sig)
{
	const char *e = strstr(url, "?exp="), *s = strstr(url, "&sig=");
	assert_non_null(e);
	assert_non_null(s);
	snprintf(exp, 32, "%.*s", (int)(s - e - 5), e + 5);
	snprintf(sig, LINKSIGN_SIG_LEN + 1, "%s", s + 5);
}

static void test_roundtrip(void **state)
{
	struct linksign *l = linksign_create(100), *other = linksign_create(100);
	char url[1024], exp[32], sig[LINKSIGN_SIG_LEN + 1], bad[LINKSIGN_SIG_LEN + 1];
	const int64_t now = 1800000000;
	(void)state;

	assert_int_equal(linksign_url(l, "alice", "0a1b2c3d4e5f", "/w/a b.txt", "w/a%20b.txt", now, url, sizeof(url)),
			 -EINVAL); /* no base yet */
	assert_int_equal(linksign_set_base(l, "http://127.0.0.1:8080"), 0);
	assert_int_equal(linksign_set_base(other, "http://127.0.0.1:8080"), 0);
	assert_int_equal(linksign_url(l, "alice", "0a1b2c3d4e5f", "/w/a b.txt", "w/a%20b.txt", now, url, sizeof(url)),
			 0);
	assert_memory_equal(url, "http://127.0.0.1:8080/files/0a1b2c3d4e5f/w/a%20b.txt?exp=1800000100&sig=", 70);
	assert_int_equal(linksign_url(l, "alice", "0a1b2c3d4e5f", "/w/a", "w/a", now, url, 40), -ENAMETOOLONG);
	assert_int_equal(linksign_url(l, "alice", "0a1b2c3d4e5f", "/w/a b.txt", "w/a%20b.txt", now, url, sizeof(url)),
			 0);
	split(url, exp, sig);
	assert_int_equal(linksign_sig_parse(sig, strlen(sig)), 0);

	const char *P = "alice", *S = "0a1b2c3d4e5f", *F = "/w/a b.txt";
	assert_int_equal(linksign_verify(l, P, S, F, exp, sig, now), LINKSIGN_OK);
	assert_int_equal(linksign_verify(l, P, S, F, exp, sig, now + 100), LINKSIGN_OK);
	assert_int_equal(linksign_verify(l, P, S, F, exp, sig, now + 101), LINKSIGN_EXPIRED);
	/* each part altered */
	assert_int_equal(linksign_verify(l, "bob", S, F, exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_verify(l, "", S, F, exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_verify(l, P, "0a1b2c3d4e50", F, exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_verify(l, P, S, "/w/a b.tx", exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_verify(l, P, S, F, "1800000101", sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_verify(l, P, S, F, "01800000100", sig, now), LINKSIGN_MALFORMED);
	/* the length prefixes keep "a|b" apart from "ab|" */
	assert_int_equal(linksign_verify(l, "alice0a1b2c3d4e5f", "", F, exp, sig, now), LINKSIGN_ALTERED);
	for (size_t i = 0; i < LINKSIGN_SIG_LEN; i++) {
		memcpy(bad, sig, sizeof(bad));
		bad[i] = bad[i] == '0' ? '1' : '0';
		assert_int_equal(linksign_verify(l, P, S, F, exp, bad, now), LINKSIGN_ALTERED);
	}
	/* another key (another run of the server) */
	assert_int_equal(linksign_verify(other, P, S, F, exp, sig, now), LINKSIGN_ALTERED);
	/* missing or malformed */
	assert_int_equal(linksign_verify(l, P, S, F, NULL, sig, now), LINKSIGN_MALFORMED);
	assert_int_equal(linksign_verify(l, P, S, F, exp, NULL, now), LINKSIGN_MALFORMED);
	assert_int_equal(linksign_verify(l, P, S, F, exp, "", now), LINKSIGN_MALFORMED);
	assert_int_equal(linksign_verify(NULL, P, S, F, exp, sig, now), LINKSIGN_MALFORMED);
	linksign_destroy(l);
	linksign_destroy(other);
}

static int preview_host(const struct linksign *l, const char *v, char session[13], unsigned *port)
{
	size_t n = strlen(v);
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		unsigned scratch;
		(void)linksign_preview_host(l, g.p, k, session, &scratch);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	int r = linksign_preview_host(l, g.p, n, session, port);
	guarded_free(&g);
	return r;
}

static void test_preview_host(void **state)
{
	struct linksign *l = linksign_create(100);
	char s[13];
	unsigned port = 0;
	(void)state;

	assert_int_equal(preview_host(l, "8000-0a1b2c3d4e5f.localhost:7001", s, &port), -1); /* previews off */
	assert_int_equal(linksign_set_preview(l, "http://localhost:7001/x"), -EINVAL);	     /* a path */
	assert_int_equal(linksign_set_preview(l, "ftp://localhost:7001"), -EINVAL);
	assert_int_equal(linksign_set_preview(l, "http://localhost:7001"), 0);
	assert_int_equal(preview_host(l, "8000-0a1b2c3d4e5f.localhost:7001", s, &port), 0);
	assert_string_equal(s, "0a1b2c3d4e5f");
	assert_int_equal(port, 8000);
	assert_int_equal(preview_host(l, "65535-0a1b2c3d4e5f.LOCALHOST:7001", s, &port), 0);
	assert_int_equal(port, 65535);
	const char *bad[] = {
		"65536-0a1b2c3d4e5f.localhost:7001",
		"08000-0a1b2c3d4e5f.localhost:7001",
		"0-0a1b2c3d4e5f.localhost:7001",
		"8000-0A1B2C3D4E5F.localhost:7001",
		"8000-0a1b2c3d4e5.localhost:7001",
		"8000-0a1b2c3d4e5ff.localhost:7001",
		"8000-0a1b2c3d4e5f.localhost:7002",
		"8000-0a1b2c3d4e5f.localhost",
		"8000-0a1b2c3d4e5f.localhost:70011",
		"8000-0a1b2c3d4e5f.evil.localhost:7001",
		"localhost:7001",
		"-0a1b2c3d4e5f.localhost:7001",
		"123456-0a1b2c3d4e5f.localhost:7001",
		"8000_0a1b2c3d4e5f.localhost:7001",
		"",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(preview_host(l, bad[i], s, &port), -1);
	linksign_destroy(l);
}

static void test_preview_cred(void **state)
{
	char exp[LINKSIGN_EXP_DIGITS + 1], sig[LINKSIGN_SIG_LEN + 1], h[256];
	const char *sig64 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
	size_t pos = 0;
	(void)state;

	snprintf(h, sizeof(h), "a=b; sbx_preview=12.%s; sbx_preview=x.y; sbx_preview=34.%s ", sig64, sig64);
	assert_int_equal(linksign_preview_cred(h, strlen(h), ';', &pos, exp, sig), 0);
	assert_string_equal(exp, "12");
	assert_string_equal(sig, sig64);
	assert_int_equal(linksign_preview_cred(h, strlen(h), ';', &pos, exp, sig), 0); /* x.y is skipped */
	assert_string_equal(exp, "34");
	assert_int_equal(linksign_preview_cred(h, strlen(h), ';', &pos, exp, sig), -1);
	const char *none[] = {
		"",
		"sbx_preview=",
		"sbx_preview=12",
		"sbx_preview=.abc",
		"xsbx_preview=12.ab",
		"sbx_preview=1234567890123.00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		pos = 0;
		struct guarded g = guarded_copy(none[i], strlen(none[i]));
		assert_int_equal(linksign_preview_cred(g.p, strlen(none[i]), '&', &pos, exp, sig), -1);
		guarded_free(&g);
	}
}

static void test_preview_roundtrip(void **state)
{
	struct linksign *l = linksign_create(100);
	char url[1024], s[13], file[1024];
	const int64_t now = 1800000000;
	(void)state;

	assert_int_equal(linksign_preview_url(l, "alice", "0a1b2c3d4e5f", 8000, now, url, sizeof(url)), -EINVAL);
	assert_int_equal(linksign_set_base(l, "http://127.0.0.1:8080"), 0);
	assert_int_equal(linksign_set_preview(l, "https://preview.example.com"), 0);
	assert_int_equal(linksign_preview_url(l, "alice", "0a1b2c3d4e5f", 8000, now, url, sizeof(url)), 0);
	const char *want = "https://8000-0a1b2c3d4e5f.preview.example.com/?sbx_preview=1800000100.";
	assert_memory_equal(url, want, strlen(want));
	unsigned port;
	assert_int_equal(linksign_preview_host(l, "8000-0a1b2c3d4e5f.preview.example.com", 37, s, &port), 0);
	char exp[LINKSIGN_EXP_DIGITS + 1], sig[LINKSIGN_SIG_LEN + 1];
	const char *q = strchr(url, '?') + 1;
	size_t pos = 0;
	assert_int_equal(linksign_preview_cred(q, strlen(q), '&', &pos, exp, sig), 0);
	assert_int_equal(linksign_preview_verify(l, "alice", s, 8000, exp, sig, now), LINKSIGN_OK);
	assert_int_equal(linksign_preview_verify(l, "alice", s, 8000, exp, sig, now + 101), LINKSIGN_EXPIRED);
	assert_int_equal(linksign_preview_verify(l, "bob", s, 8000, exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_preview_verify(l, "alice", s, 8001, exp, sig, now), LINKSIGN_ALTERED);
	assert_int_equal(linksign_preview_verify(l, "alice", "0a1b2c3d4e50", 8000, exp, sig, now), LINKSIGN_ALTERED);
	/* a file link's signature is no preview's, nor the other way round */
	assert_int_equal(linksign_verify(l, "alice", s, ":preview/8000", exp, sig, now), LINKSIGN_OK);
	assert_int_equal(linksign_url(l, "alice", s, "/8000", "8000", now, file, sizeof(file)), 0);
	split(file, exp, sig);
	assert_int_equal(linksign_preview_verify(l, "alice", s, 8000, exp, sig, now), LINKSIGN_ALTERED);
	linksign_destroy(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exp),
		cmocka_unit_test(test_sig),
		cmocka_unit_test(test_base),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_preview_host),
		cmocka_unit_test(test_preview_cred),
		cmocka_unit_test(test_preview_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
