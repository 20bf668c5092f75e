/*
 * test-base64.c - RFC 4648 vectors both ways, every byte value round-tripped
 * at every length up to a few groups, and the inputs decode must refuse; each
 * input ends at a guard page.
 */
#include <stdbool.h>

#include "testutil.h"

#include "base/base64.h"

static const struct {
	const char *plain, *enc;
} rfc[] = {
	{ "", "" },
	{ "f", "Zg==" },
	{ "fo", "Zm8=" },
	{ "foo", "Zm9v" },
	{ "foob", "Zm9vYg==" },
	{ "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

static void encode_guarded(const void *in, size_t n, char *out)
{
	struct guarded g = guarded_copy(in, n);
	base64_encode(g.p, n, out);
	guarded_free(&g);
}

static long long decode_guarded(const char *in, size_t len, void *out)
{
	struct guarded g = guarded_copy(in, len);
	long long r = base64_decode(g.p, len, out);
	guarded_free(&g);
	return r;
}

static void test_rfc_vectors(void **state)
{
	for (size_t i = 0; i < sizeof(rfc) / sizeof(rfc[0]); i++) {
		char enc[32], dec[32];
		size_t n = strlen(rfc[i].plain);
		assert_int_equal(base64_encoded_len(n), strlen(rfc[i].enc));
		encode_guarded(rfc[i].plain, n, enc);
		assert_string_equal(enc, rfc[i].enc);
		long long r = decode_guarded(rfc[i].enc, strlen(rfc[i].enc), dec);
		assert_int_equal(r, (long long)n);
		assert_memory_equal(dec, rfc[i].plain, n);
		assert_true((size_t)r <= base64_decoded_max(strlen(rfc[i].enc)));
	}
}

static void test_unpadded_and_whitespace(void **state)
{
	char dec[32];
	assert_int_equal(decode_guarded("Zg", 2, dec), 1);
	assert_memory_equal(dec, "f", 1);
	assert_int_equal(decode_guarded("Zm8", 3, dec), 2);
	assert_memory_equal(dec, "fo", 2);
	static const char wrapped[] = " Zm9v\r\nYmFy\n\t";
	assert_int_equal(decode_guarded(wrapped, sizeof(wrapped) - 1, dec), 6);
	assert_memory_equal(dec, "foobar", 6);
}

static void test_round_trip_all_bytes(void **state)
{
	unsigned char in[256 + 7], dec[sizeof(in) + 3];
	char enc[(sizeof(in) + 2) / 3 * 4 + 1];
	for (size_t i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 167 + 13);
	for (size_t n = 0; n <= sizeof(in); n++) {
		encode_guarded(in, n, enc);
		assert_int_equal(strlen(enc), base64_encoded_len(n));
		for (size_t k = 0; enc[k]; k++)
			assert_true(
				strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", enc[k]));
		long long r = decode_guarded(enc, strlen(enc), dec);
		assert_int_equal(r, (long long)n);
		assert_memory_equal(dec, in, n);
	}
}

static void test_rejects(void **state)
{
	static const char *const bad[] = {
		"Z",	    /* a dangling character */
		"Zm9vY",    /* five characters */
		"Zg=",	    /* half the padding */
		"Zg===",    /* too much padding */
		"Z===",	    /* padding after one character */
		"=Zg=",	    /* padding first */
		"Zg==Zg==", /* data after padding */
		"Zm9v=",    /* padding after a whole group */
		"Zm9v!",    /* outside the alphabet */
		"Zm-_",	    /* the URL alphabet */
	};
	char dec[32];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(decode_guarded(bad[i], strlen(bad[i]), dec), -1);
	static const char nul[] = "Zm\0v";
	assert_int_equal(decode_guarded(nul, 4, dec), -1);
	/* every byte outside the alphabet, padding and whitespace is refused */
	for (int c = 0; c < 256; c++) {
		char in[4] = { 'Z', 'm', '9', (char)c };
		bool ok = strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n", c) && c;
		assert_int_equal(decode_guarded(in, 4, dec) >= 0, ok);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_vectors),
		cmocka_unit_test(test_unpadded_and_whitespace),
		cmocka_unit_test(test_round_trip_all_bytes),
		cmocka_unit_test(test_rejects),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
