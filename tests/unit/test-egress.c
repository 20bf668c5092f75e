/*
 * test-egress.c - the pure parts of egress: rules and the ceiling, presets,
 * address classes, proxy request heads, the SNI of a ClientHello, and
 * relay frames gathered whole.
 */
#include "testutil.h"

#include <arpa/inet.h>
#include <errno.h>

#include "agent/agentproto.h"
#include "base/http_parse.h"
#include "proxy/netaddr.h"
#include "proxy/policy.h"
#include "proxy/proxyreq.h"
#include "proxy/tlshello.h"

static struct policy list(const char *text)
{
	struct policy p = { 0 };
	struct err e;
	assert_int_equal(policy_parse_list(&p, text, "TEST", &e), 0);
	return p;
}

static void test_rule_parse(void **state)
{
	struct policy_rule r;
	struct err e;
	char t[POLICY_RULE_TEXT_MAX + 1];

	assert_int_equal(policy_rule_parse("PyPI.org", false, &r, &e), 0);
	policy_rule_format(&r, t, sizeof(t));
	assert_string_equal(t, "pypi.org:443/80");
	assert_int_equal(policy_rule_parse("example.com:8443/80 GET/HEAD", false, &r, &e), 0);
	policy_rule_format(&r, t, sizeof(t));
	assert_string_equal(t, "example.com:8443/80 GET/HEAD");
	assert_int_equal(policy_rule_parse("[fd00::1]:443", false, &r, &e), 0);
	assert_string_equal(r.host, "[fd00::1]");
	/* what a session may not write, and malformed rules, each with a reason */
	const char *bad[] = { "*",
			      "",
			      "exa mple.com",
			      "-bad.com",
			      "a..b",
			      "example.com:0",
			      "example.com:70000",
			      "example.com:",
			      "example.com:80/",
			      "example.com GET/FETCH",
			      "[::1",
			      "[zz]:443",
			      "a/b.com",
			      "*.*.com" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear(&e);
		assert_int_equal(policy_rule_parse(bad[i], false, &r, &e), -EINVAL);
		assert_int_equal(e.code, ERRCODE_INVALID_ARGUMENT);
		assert_non_null(strstr(e.msg, "egress rule"));
	}
	assert_int_equal(policy_rule_parse("*", true, &r, &e), 0); /* the operator may */
}

static void test_match(void **state)
{
	assert_true(policy_name_match("*.pythonhosted.org", "files.pythonhosted.org"));
	assert_true(policy_name_match("*.pythonhosted.org", "a.b.PYTHONHOSTED.org"));
	assert_false(policy_name_match("*.pythonhosted.org", "pythonhosted.org"));
	assert_false(policy_name_match("*.pythonhosted.org", "evilpythonhosted.org"));
	assert_true(policy_name_match("pypi.org", "PyPI.org"));
	assert_false(policy_name_match("pypi.org", "pypi.org.evil.example"));
	assert_true(policy_name_match("*", "example.com"));
	assert_false(policy_name_match("*", "10.0.0.1")); /* "any name" is not any address */
	assert_false(policy_name_match("*", "[::1]"));
	assert_false(policy_name_match("*.4", "1.2.3.4")); /* a pattern never matches an address */
	assert_false(policy_name_match("*.1", "0x7f.1"));

	struct policy p = list("pypi.org, *.pythonhosted.org:443, example.com:80 GET/HEAD");
	assert_non_null(policy_find(&p, "pypi.org", 80));
	assert_null(policy_find(&p, "pypi.org", 22));
	assert_non_null(policy_find(&p, "files.pythonhosted.org", 443));
	assert_null(policy_find(&p, "files.pythonhosted.org", 80));
	const struct policy_rule *r = policy_find(&p, "example.com", 80);
	assert_non_null(r);
	assert_true(policy_method_ok(r, "GET", 3));
	assert_false(policy_method_ok(r, "POST", 4));
	assert_false(policy_method_ok(r, "PROPFIND", 8));
	assert_true(policy_method_ok(&p.rules[0], "PROPFIND", 8));
	policy_finish(&p);
}

static void test_within(void **state)
{
	struct policy ceiling = list("pypi.org,*.github.com:443,example.com:80 GET/HEAD");
	struct policy_rule r;
	struct err e;
	struct {
		const char *rule;
		bool ok;
	} cases[] = {
		{ "pypi.org", true },
		{ "pypi.org:443", true },
		{ "pypi.org:8443", false },
		{ "api.github.com:443", true },
		{ "api.github.com", false },
		{ "*.api.github.com:443", true },
		{ "*.github.com:443", true },
		{ "github.com:443", false },
		{ "*.com:443", false },
		{ "example.com:80 GET", true },
		{ "example.com:80", false },
		{ "example.com:80 POST", false },
		{ "files.pythonhosted.org", false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(policy_rule_parse(cases[i].rule, false, &r, &e), 0);
		if (policy_within(&ceiling, &r) != cases[i].ok)
			fail_msg("%s: within is %d", cases[i].rule, !cases[i].ok);
	}
	policy_finish(&ceiling);
	struct policy any = list("*");
	assert_int_equal(policy_rule_parse("*.anything.org:443", false, &r, &e), 0);
	assert_true(policy_within(&any, &r));
	assert_int_equal(policy_rule_parse("10.1.2.3", false, &r, &e), 0);
	assert_false(policy_within(&any, &r));
	policy_finish(&any);
}

static void test_presets(void **state)
{
	struct policy p = { 0 };
	struct err e;
	char names[256];

	assert_int_equal(policy_preset("", "pypi", &p, &e), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.rules[1].host, "files.pythonhosted.org");
	policy_finish(&p);
	assert_int_equal(policy_preset("", "nope", &p, &e), -ENOENT);
	const char *mine = "corp=pypi.corp.example,git.corp.example:443;docs=docs.example";
	assert_int_equal(policy_presets_check(mine, &e), 0);
	assert_int_equal(policy_preset(mine, "corp", &p, &e), 0);
	assert_int_equal(p.n, 2);
	assert_int_equal(p.rules[1].nports, 1);
	policy_finish(&p);
	policy_preset_names(mine, names, sizeof(names));
	assert_string_equal(names, "pypi, npm, github, debian, corp, docs");
	assert_int_equal(policy_presets_all(mine, &p, &e), 0);
	assert_int_equal(p.n, 2 + 1 + 5 + 3 + 2 + 1);
	policy_finish(&p);
	const char *bad[] = { "corp", "=a.com", "Corp=a.com", "corp=a b.com", "corp=a.com:0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(policy_presets_check(bad[i], &e), -EINVAL);
}

static struct sockaddr_storage addr(const char *text)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	if (inet_pton(AF_INET, text, &a4->sin_addr) == 1)
		a4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &a6->sin6_addr) == 1)
		a6->sin6_family = AF_INET6;
	else
		fail_msg("not an address: %s", text);
	return ss;
}

static void test_netaddr(void **state)
{
	const char *special[] = { "127.0.0.1",
				  "10.2.3.4",
				  "172.31.255.255",
				  "192.168.1.1",
				  "169.254.169.254",
				  "100.64.0.1",
				  "0.0.0.0",
				  "224.0.0.1",
				  "255.255.255.255",
				  "::1",
				  "::",
				  "fe80::1",
				  "fd00:ec2::254",
				  "::ffff:127.0.0.1",
				  "::ffff:169.254.169.254",
				  "64:ff9b::a9fe:a9fe",
				  "2002:7f00:1::",
				  "::127.0.0.1",
				  "2001:db8::1" };
	const char *public[] = { "1.1.1.1",	   "151.101.0.223",  "172.32.0.1",
				 "2a04:4e42::223", "::ffff:1.1.1.1", "64:ff9b::101:101" };
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++) {
		struct sockaddr_storage ss = addr(special[i]);
		if (!netaddr_special((struct sockaddr *)&ss))
			fail_msg("%s should be special", special[i]);
	}
	for (size_t i = 0; i < sizeof(public) / sizeof(public[0]); i++) {
		struct sockaddr_storage ss = addr(public[i]);
		if (netaddr_special((struct sockaddr *)&ss))
			fail_msg("%s should be public: %s", public[i], netaddr_special((struct sockaddr *)&ss));
	}
	struct sockaddr_storage md = addr("169.254.169.254");
	assert_non_null(strstr(netaddr_special((struct sockaddr *)&md), "metadata"));

	struct netaddr_list l;
	struct err e;
	assert_int_equal(netaddr_list_parse("10.1.2.0/24, fd00::/8,192.168.9.9", "TEST", &l, &e), 0);
	assert_int_equal(l.n, 3);
	struct sockaddr_storage in1 = addr("10.1.2.200"), out1 = addr("10.1.3.1"), in2 = addr("fd12::1"),
				in3 = addr("192.168.9.9"), out3 = addr("192.168.9.8"), mapped = addr("::ffff:10.1.2.5");
	assert_true(netaddr_listed(&l, (struct sockaddr *)&in1));
	assert_false(netaddr_listed(&l, (struct sockaddr *)&out1));
	assert_true(netaddr_listed(&l, (struct sockaddr *)&in2));
	assert_true(netaddr_listed(&l, (struct sockaddr *)&in3));
	assert_false(netaddr_listed(&l, (struct sockaddr *)&out3));
	assert_true(netaddr_listed(&l, (struct sockaddr *)&mapped));
	const char *bad[] = { "10.1.2.0/33", "fd00::/129", "example.com", "10.1.2.0/", "1.2.3.4/-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(netaddr_list_parse(bad[i], "TEST", &l, &e), -EINVAL);

	assert_true(netaddr_is_literal("10.0.0.1"));
	assert_true(netaddr_is_literal("0x7f.1")); /* inet_aton's forms count as addresses */
	assert_true(netaddr_is_literal("2130706433"));
	assert_true(netaddr_is_literal("[::1]"));
	assert_false(netaddr_is_literal("pypi.org"));
}

/* Parses a request head and interprets it: the status proxyreq_parse gave (0: allowed on). */
static int req(const char *text, struct proxyreq *r, struct http_request *h)
{
	char why[300];
	int n = http_parse_request(text, strlen(text), h);
	if (n < 0)
		return n;
	return proxyreq_parse(h, r, why, sizeof(why));
}

static void test_proxyreq(void **state)
{
	struct proxyreq r;
	struct http_request h;
	struct buf out;

	assert_int_equal(req("CONNECT PyPI.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", &r, &h), 0);
	assert_true(r.connect);
	assert_string_equal(r.host, "pypi.org");
	assert_int_equal(r.port, 443);
	assert_int_equal(req("CONNECT [2001:db8::1]:443 HTTP/1.1\r\n\r\n", &r, &h), 0);
	assert_string_equal(r.host, "[2001:db8::1]");
	assert_int_equal(req("GET http://pypi.org./simple/?q=1 HTTP/1.1\r\nHost: pypi.org\r\nProxy-Connection: "
			     "keep-alive\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n",
			     &r, &h),
			 0);
	assert_false(r.connect);
	assert_string_equal(r.host, "pypi.org");
	assert_int_equal(r.port, 80);
	buf_init(&out, 8192);
	assert_int_equal(proxyreq_origin_head(&h, &r, &out), 0);
	assert_string_equal(out.data,
			    "GET /simple/?q=1 HTTP/1.1\r\nHost: pypi.org\r\nAccept: */*\r\nConnection: close\r\n\r\n");
	buf_finish(&out);
	assert_int_equal(req("GET http://example.com:8080 HTTP/1.0\r\n\r\n", &r, &h), 0);
	assert_int_equal(r.port, 8080);
	assert_true(slice_eq(r.path, "/"));
	buf_init(&out, 8192);
	assert_int_equal(proxyreq_origin_head(&h, &r, &out), 0);
	assert_string_equal(out.data, "GET / HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n");
	buf_finish(&out);
	assert_int_equal(req("GET http://a.com/ HTTP/1.1\r\nConnection: X-Secret, keep-alive\r\nX-Secret: 1\r\nX-Kept: "
			     "2\r\n\r\n",
			     &r, &h),
			 0);
	buf_init(&out, 8192);
	assert_int_equal(proxyreq_origin_head(&h, &r, &out), 0);
	assert_string_equal(out.data, "GET / HTTP/1.1\r\nX-Kept: 2\r\nHost: a.com\r\nConnection: close\r\n\r\n");
	buf_finish(&out);
	/* a Connection header cannot take the length away: the body would become the origin's next request */
	assert_int_equal(req("GET http://a.com/ HTTP/1.1\r\nContent-Length: 5\r\nConnection: Content-Length, Host\r\n\r\n",
			     &r, &h),
			 0);
	buf_init(&out, 8192);
	assert_int_equal(proxyreq_origin_head(&h, &r, &out), 0);
	assert_string_equal(out.data,
			    "GET / HTTP/1.1\r\nContent-Length: 5\r\nHost: a.com\r\nConnection: close\r\n\r\n");
	buf_finish(&out);
	assert_int_equal(req("POST http://a.com/x HTTP/1.1\r\nContent-Length: 12\r\n\r\n", &r, &h), 0);
	assert_int_equal(r.content_length, 12);

	struct {
		const char *text;
		int status;
	} bad[] = {
		{ "GET /simple/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n", 400 },
		{ "GET https://pypi.org/ HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://user@pypi.org/ HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://pypi.org/ HTTP/1.1\r\nHost: evil.example\r\n\r\n", 400 },
		{ "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org:8080\r\n\r\n", 400 },
		{ "GET http://pypi.org/ HTTP/1.1\r\nHost: pypi.org\r\nHost: pypi.org\r\n\r\n", 400 },
		{ "POST http://pypi.org/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411 },
		{ "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400 },
		{ "POST http://pypi.org/ HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "GET http://pypi.org/ HTTP/1.1\r\nUpgrade: websocket\r\n\r\n", 501 },
		{ "CONNECT pypi.org HTTP/1.1\r\n\r\n", 400 },
		{ "CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", 400 },
		{ "CONNECT pypi.org:443x HTTP/1.1\r\n\r\n", 400 },
		{ "CONNECT pyp%69.org:443 HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://pypi.org\\@evil.example/ HTTP/1.1\r\n\r\n", 400 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int s = req(bad[i].text, &r, &h);
		if (s != bad[i].status)
			fail_msg("%s: %d, not %d", bad[i].text, s, bad[i].status);
	}
	/* heads that are not requests, or too large */
	assert_int_equal(http_parse_request("GET  http://a/ HTTP/1.1\r\n\r\n", 28, &h), -1);
	assert_int_equal(http_parse_request("GET http://a/ HTTP/2.0\r\n\r\n", 26, &h), -1);
	assert_int_equal(http_parse_request("GET http://a/ HTTP/1.1\r\n", 24, &h), -2);
	char *big = xmalloc(HTTP_PARSE_REQUEST_MAX + 10);
	memset(big, 'a', HTTP_PARSE_REQUEST_MAX + 10);
	memcpy(big, "GET http://a/ HTTP/1.1\r\nX: ", 27);
	assert_int_equal(http_parse_request(big, HTTP_PARSE_REQUEST_MAX + 10, &h), -1);
	free(big);
}

/* A ClientHello with server name sni (NULL: no SNI extension), in records of at most rec bytes; ech: offering ECH. */
static size_t hello(unsigned char *out, const char *sni, size_t rec, bool ech)
{
	unsigned char body[512];
	size_t n = 0;
	body[n++] = 3, body[n++] = 3;
	memset(body + n, 7, 32), n += 32;
	body[n++] = 0;			 /* session id */
	body[n++] = 0, body[n++] = 2;	 /* cipher suites */
	body[n++] = 0x13, body[n++] = 1; /* TLS_AES_128_GCM_SHA256 */
	body[n++] = 1, body[n++] = 0;	 /* compression: null */
	size_t ext_at = n;
	n += 2;
	body[n++] = 0, body[n++] = 0x2b; /* supported_versions */
	body[n++] = 0, body[n++] = 3, body[n++] = 2, body[n++] = 3, body[n++] = 4;
	if (ech) {
		body[n++] = 0xfe, body[n++] = 0x0d, body[n++] = 0, body[n++] = 1, body[n++] = 0;
	}
	if (sni) {
		size_t l = strlen(sni);
		body[n++] = 0, body[n++] = 0;
		body[n++] = (unsigned char)((l + 5) >> 8), body[n++] = (unsigned char)(l + 5);
		body[n++] = (unsigned char)((l + 3) >> 8), body[n++] = (unsigned char)(l + 3);
		body[n++] = 0;
		body[n++] = (unsigned char)(l >> 8), body[n++] = (unsigned char)l;
		memcpy(body + n, sni, l), n += l;
	}
	body[ext_at] = (unsigned char)((n - ext_at - 2) >> 8), body[ext_at + 1] = (unsigned char)(n - ext_at - 2);
	unsigned char hs[600];
	hs[0] = 1, hs[1] = 0, hs[2] = (unsigned char)(n >> 8), hs[3] = (unsigned char)n;
	memcpy(hs + 4, body, n);
	size_t total = n + 4, o = 0;
	for (size_t at = 0; at < total; at += rec) {
		size_t k = total - at < rec ? total - at : rec;
		out[o++] = 0x16, out[o++] = 3, out[o++] = 1, out[o++] = (unsigned char)(k >> 8),
		out[o++] = (unsigned char)k;
		memcpy(out + o, hs + at, k), o += k;
	}
	return o;
}

static void test_tlshello(void **state)
{
	unsigned char buf[2048];
	char name[300];
	size_t n = hello(buf, "pypi.org", 16384, false);
	assert_int_equal(tlshello_sni(buf, n, name, sizeof(name)), TLSHELLO_FOUND);
	assert_string_equal(name, "pypi.org");
	for (size_t k = 0; k < n; k++) /* every prefix is "more", never a wrong answer */
		assert_int_equal(tlshello_sni(buf, k, name, sizeof(name)), TLSHELLO_MORE);
	n = hello(buf, "files.pythonhosted.org", 20, false); /* the hello split into many records */
	assert_int_equal(tlshello_sni(buf, n, name, sizeof(name)), TLSHELLO_FOUND);
	assert_string_equal(name, "files.pythonhosted.org");
	/* an ECH extension (Chromium sends a GREASE one in every hello): judged by the outer name */
	n = hello(buf, "pypi.org", 16384, true);
	assert_int_equal(tlshello_sni(buf, n, name, sizeof(name)), TLSHELLO_FOUND);
	assert_string_equal(name, "pypi.org");
	n = hello(buf, NULL, 16384, false);
	assert_int_equal(tlshello_sni(buf, n, name, sizeof(name)), TLSHELLO_NO_SNI);
	n = hello(buf, "pypi.org", 16384, false);
	assert_int_equal(tlshello_sni(buf, n, name, 5), TLSHELLO_NOT_TLS); /* the name does not fit */
	buf[5] = 2;							   /* a ServerHello */
	assert_int_equal(tlshello_sni(buf, n, name, sizeof(name)), TLSHELLO_NOT_TLS);
	assert_int_equal(tlshello_sni((const unsigned char *)"SSH-2.0-x\r\n", 11, name, sizeof(name)),
			 TLSHELLO_NOT_TLS);
	assert_int_equal(tlshello_sni((const unsigned char *)"GET / HTTP", 10, name, sizeof(name)), TLSHELLO_NOT_TLS);
	assert_int_equal(tlshello_sni((const unsigned char *)"\x16\x03\x01\x00\x00", 5, name, sizeof(name)),
			 TLSHELLO_NOT_TLS);
}

static void test_relay_frames(void **state)
{
	struct agentproto_whole *w = xmalloc(sizeof(*w));
	char frame[AGENTPROTO_RELAY_HEAD + 3];
	agentproto_relay_head(frame, 'D', 4 + 3, 0x01020304);
	memcpy(frame + AGENTPROTO_RELAY_HEAD, "abc", 3);
	agentproto_whole_init(w, AGENTPROTO_RELAY_TO_SERVER);
	size_t used;
	/* one byte at a time: whole only at the end */
	for (size_t i = 0; i < sizeof(frame); i++) {
		int r = agentproto_whole_feed(w, frame + i, 1, &used);
		assert_int_equal(used, 1);
		assert_int_equal(r, i + 1 == sizeof(frame) ? 1 : -2);
	}
	assert_int_equal(w->f.type, 'D');
	assert_int_equal(w->n, 7);
	assert_int_equal(agentproto_u32(w->buf), 0x01020304);
	assert_memory_equal(w->buf + 4, "abc", 3);
	/* too big for a relay frame; a type the relay does not speak */
	char big[AGENTPROTO_HEADER_LEN];
	agentproto_header(big, 'D', AGENTPROTO_RELAY_DATA_MAX + 9);
	agentproto_whole_init(w, AGENTPROTO_RELAY_TO_SERVER);
	assert_int_equal(agentproto_whole_feed(w, big, sizeof(big), &used), -2);
	assert_int_equal(agentproto_whole_feed(w, "x", 1, &used), -1);
	agentproto_whole_init(w, AGENTPROTO_RELAY_TO_AGENT);
	assert_int_equal(agentproto_whole_feed(w, "N", 1, &used), -1);
	free(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_parse), cmocka_unit_test(test_match),	cmocka_unit_test(test_within),
		cmocka_unit_test(test_presets),	   cmocka_unit_test(test_netaddr),	cmocka_unit_test(test_proxyreq),
		cmocka_unit_test(test_tlshello),   cmocka_unit_test(test_relay_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
