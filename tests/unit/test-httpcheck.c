/*
 * test-httpcheck.c - the --http address, Host and Origin checks (httpcheck.h).
 *
 * Every value is checked from a copy that ends at a guard page, and every
 * prefix of it too, so a check that reads past its length faults here.
 */
#include "testutil.h"

#include "transport/http/httpcheck.h"

/* httpcheck_host on a guarded copy of v; every shorter prefix must not crash either. */
static bool host_ok(const char *v, const char *host, unsigned port)
{
	size_t n = strlen(v);
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		(void)httpcheck_host(g.p, k, host, port);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	bool ok = httpcheck_host(g.p, n, host, port);
	guarded_free(&g);
	return ok;
}

static bool origin_ok(const char *v, bool loopback, const char *allow)
{
	size_t n = strlen(v);
	for (size_t k = 0; k < n; k++) {
		struct guarded g = guarded_copy(v, k);
		(void)httpcheck_origin(g.p, k, loopback, allow);
		guarded_free(&g);
	}
	struct guarded g = guarded_copy(v, n);
	bool ok = httpcheck_origin(g.p, n, loopback, allow);
	guarded_free(&g);
	return ok;
}

static int listen_parse(const char *s, char *host, unsigned *port)
{
	struct guarded g = guarded_copy(s, strlen(s));
	int r = httpcheck_listen_parse(g.p, strlen(s), host, port);
	guarded_free(&g);
	return r;
}

static void test_listen(void **state)
{
	char host[HTTPCHECK_HOST_MAX + 1];
	unsigned port = 0;
	(void)state;

	assert_int_equal(listen_parse("8080", host, &port), 0);
	assert_string_equal(host, "127.0.0.1");
	assert_int_equal(port, 8080);
	assert_int_equal(listen_parse("0.0.0.0:1", host, &port), 0);
	assert_string_equal(host, "0.0.0.0");
	assert_int_equal(port, 1);
	assert_int_equal(listen_parse("[::1]:65535", host, &port), 0);
	assert_string_equal(host, "::1");
	assert_int_equal(port, 65535);
	assert_int_equal(listen_parse("localhost:80", host, &port), 0);
	assert_string_equal(host, "localhost");

	const char *bad[] = { "",      "0",	 "65536",   "-1",    "+80",  "080",    "80a",		":80",
			      "host:", "::1:80", "[::1]80", "[]:80", "[::1", "a/b:80", "1.2.3.4:99999", "x:0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(listen_parse(bad[i], host, &port), -1);
	char longhost[300];
	memset(longhost, 'a', 256);
	snprintf(longhost + 256, sizeof(longhost) - 256, ":80");
	assert_int_equal(listen_parse(longhost, host, &port), -1);
}

static void test_loopback(void **state)
{
	(void)state;
	assert_true(httpcheck_loopback("127.0.0.1"));
	assert_true(httpcheck_loopback("127.1.2.3"));
	assert_true(httpcheck_loopback("::1"));
	assert_true(httpcheck_loopback("LOCALHOST"));
	assert_false(httpcheck_loopback("0.0.0.0"));
	assert_false(httpcheck_loopback("128.0.0.1"));
	assert_false(httpcheck_loopback("127.0.0"));
	assert_false(httpcheck_loopback("127.0.0.1.evil"));
	assert_false(httpcheck_loopback("127.0.0.1234"));
	assert_false(httpcheck_loopback("::"));
	assert_false(httpcheck_loopback("10.0.0.1"));
}

static void test_host(void **state)
{
	(void)state;
	assert_true(host_ok("127.0.0.1:8080", "127.0.0.1", 8080));
	assert_true(host_ok("localhost:8080", "127.0.0.1", 8080));
	assert_true(host_ok("LocalHost:8080", "127.0.0.1", 8080));
	assert_true(host_ok("[::1]:8080", "127.0.0.1", 8080));
	assert_true(host_ok("[::1]:8080", "::1", 8080));
	assert_true(host_ok("localhost", "127.0.0.1", 80));
	assert_false(host_ok("localhost", "127.0.0.1", 8080));
	assert_false(host_ok("evil.example:8080", "127.0.0.1", 8080));
	assert_false(host_ok("127.0.0.1:8081", "127.0.0.1", 8080));
	assert_false(host_ok("127.0.0.1:", "127.0.0.1", 8080));
	assert_false(host_ok(":8080", "127.0.0.1", 8080));
	assert_false(host_ok("[::1", "127.0.0.1", 8080));
	assert_false(host_ok("[::1]x", "127.0.0.1", 8080));
	assert_false(host_ok("127.0.0.1:8080:1", "127.0.0.1", 8080));
	assert_false(host_ok("", "127.0.0.1", 8080));
	/* bound to a public address: only that address */
	assert_true(host_ok("203.0.113.5:443", "203.0.113.5", 443));
	assert_false(host_ok("localhost:443", "203.0.113.5", 443));
}

static void test_origin(void **state)
{
	(void)state;
	assert_true(origin_ok("http://localhost:3000", true, NULL));
	assert_true(origin_ok("http://127.0.0.1", true, ""));
	assert_true(origin_ok("https://[::1]:8443", true, NULL));
	assert_true(origin_ok("HTTP://LOCALHOST", true, NULL));
	assert_false(origin_ok("http://localhost.evil.example", true, NULL));
	assert_false(origin_ok("http://evil.example", true, NULL));
	assert_false(origin_ok("http://127.0.0.1.nip.io", true, NULL));
	assert_false(origin_ok("null", true, NULL));
	assert_false(origin_ok("file://localhost", true, NULL));
	assert_false(origin_ok("http://localhost:", true, NULL));
	assert_false(origin_ok("http://localhost/path", true, NULL));
	assert_false(origin_ok("http://[::1", true, NULL));
	assert_false(origin_ok("http://[::2]", true, NULL));
	assert_false(origin_ok("", true, NULL));
	/* not loopback: nothing without a list */
	assert_false(origin_ok("http://localhost", false, NULL));
	/* a list replaces the loopback default */
	assert_true(origin_ok("https://app.example", false, "https://app.example,https://b.example"));
	assert_true(origin_ok("https://b.example", true, "https://app.example,https://b.example"));
	assert_true(origin_ok("HTTPS://APP.EXAMPLE", false, "https://app.example"));
	assert_false(origin_ok("https://app.example.evil", false, "https://app.example"));
	assert_false(origin_ok("https://app.exampl", false, "https://app.example"));
	assert_false(origin_ok("http://localhost", true, "https://app.example"));
}

static bool length_ok(const char *a, const char *b, uint64_t *ret)
{
	bool seen = false;
	*ret = 0;
	if (!httpcheck_length(a, strlen(a), ret, &seen))
		return false;
	return !b || httpcheck_length(b, strlen(b), ret, &seen);
}

static void test_length(void **state)
{
	uint64_t n;
	(void)state;
	assert_true(length_ok("0", NULL, &n));
	assert_int_equal(n, 0);
	assert_true(length_ok("1234", NULL, &n));
	assert_int_equal(n, 1234);
	/* a repeated field or a list of one number is one length (RFC 9112 6.3) */
	assert_true(length_ok("5", "5", &n));
	assert_int_equal(n, 5);
	assert_true(length_ok("5, 5,5", NULL, &n));
	assert_true(length_ok("9223372036854775808", NULL, &n));
	/* two lengths: where the body ends is unknown */
	assert_false(length_ok("5", "6", &n));
	assert_false(length_ok("5, 6", NULL, &n));
	assert_false(length_ok("05", "6", &n));
	/* malformed */
	assert_false(length_ok("", NULL, &n));
	assert_false(length_ok("-1", NULL, &n));
	assert_false(length_ok("+5", NULL, &n));
	assert_false(length_ok("5x", NULL, &n));
	assert_false(length_ok("5,", NULL, &n));
	assert_false(length_ok(",5", NULL, &n));
	assert_false(length_ok("0x10", NULL, &n));
	assert_false(length_ok("99999999999999999999", NULL, &n));
	assert_false(length_ok("9223372036854775809", NULL, &n));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listen), cmocka_unit_test(test_loopback), cmocka_unit_test(test_host),
		cmocka_unit_test(test_origin), cmocka_unit_test(test_length),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
