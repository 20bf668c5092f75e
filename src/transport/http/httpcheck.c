/*
 * httpcheck.c - checks of the --http address, Host and Origin (see httpcheck.h).
 *
 * Host and Origin come from the network: they are walked byte by byte within
 * their length, never with string functions that expect a NUL.
 */
#include <string.h>
#include <strings.h>

#include "transport/http/httpcheck.h"

static int port_parse(const char *p, size_t n, unsigned *ret_port);
static bool same_ci(const char *a, size_t an, const char *b);
static bool loopback_n(const char *h, size_t n);

/* Decimal 1-65535, no sign, no leading zeros beyond one digit. */
static int port_parse(const char *p, size_t n, unsigned *ret_port)
{
	unsigned v = 0;
	if (n == 0 || n > 5 || (p[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return -1;
	*ret_port = v;
	return 0;
}

/* a[0..an) equals the NUL-terminated b, ignoring ASCII case. */
static bool same_ci(const char *a, size_t an, const char *b)
{
	return strlen(b) == an && strncasecmp(a, b, an) == 0;
}

static bool loopback_n(const char *h, size_t n)
{
	if (same_ci(h, n, "localhost") || same_ci(h, n, "::1"))
		return true;
	/* 127.a.b.c: four dotted decimals of 1-3 digits, the first 127 */
	if (n < 9 || n > 15 || strncmp(h, "127.", 4) != 0)
		return false;
	int dots = 0, digits = 0;
	for (size_t i = 4; i < n; i++) {
		if (h[i] == '.') {
			if (digits == 0)
				return false;
			dots++;
			digits = 0;
		} else if (h[i] >= '0' && h[i] <= '9' && digits < 3) {
			digits++;
		} else {
			return false;
		}
	}
	return dots == 2 && digits > 0;
}

bool httpcheck_loopback(const char *host)
{
	return loopback_n(host, strlen(host));
}

int httpcheck_listen_parse(const char *s, size_t n, char *ret_host, unsigned *ret_port)
{
	const char *host = "127.0.0.1";
	size_t hn = strlen(host);
	const char *port = s;
	size_t pn = n;

	if (n > 0 && s[0] == '[') {
		const char *close = memchr(s, ']', n);
		if (!close || close + 1 >= s + n || close[1] != ':' || close == s + 1)
			return -1;
		host = s + 1;
		hn = (size_t)(close - host);
		port = close + 2;
		pn = n - (size_t)(port - s);
	} else {
		const char *colon = NULL;
		for (size_t i = 0; i < n; i++)
			if (s[i] == ':')
				colon = s + i;
		if (colon) {
			if (colon == s || memchr(s, ':', (size_t)(colon - s)))
				return -1; /* empty host, or a bare IPv6 address: needs brackets */
			host = s;
			hn = (size_t)(colon - s);
			port = colon + 1;
			pn = n - hn - 1;
		}
	}
	if (hn == 0 || hn > HTTPCHECK_HOST_MAX || memchr(host, '\0', hn) || memchr(host, '/', hn))
		return -1;
	if (port_parse(port, pn, ret_port) < 0)
		return -1;
	memcpy(ret_host, host, hn);
	ret_host[hn] = '\0';
	return 0;
}

bool httpcheck_length(const char *value, size_t n, uint64_t *io_len, bool *io_seen)
{
	size_t i = 0;
	do {
		while (i < n && (value[i] == ' ' || value[i] == '\t'))
			i++;
		uint64_t v = 0;
		size_t digits = 0;
		for (; i < n && value[i] >= '0' && value[i] <= '9'; i++, digits++) {
			uint64_t d = (uint64_t)(value[i] - '0');
			if (v > ((UINT64_C(1) << 63) - d) / 10)
				return false;
			v = v * 10 + d;
		}
		while (i < n && (value[i] == ' ' || value[i] == '\t'))
			i++;
		if (digits == 0 || (i < n && value[i] != ',') || (*io_seen && v != *io_len))
			return false;
		*io_len = v;
		*io_seen = true;
	} while (i++ < n);
	return true;
}

bool httpcheck_host(const char *value, size_t n, const char *host, unsigned port)
{
	const char *h = value;
	size_t hn = n;
	unsigned p = 80;

	if (n > 0 && value[0] == '[') {
		const char *close = memchr(value, ']', n);
		if (!close)
			return false;
		h = value + 1;
		hn = (size_t)(close - h);
		size_t rest = n - (size_t)(close + 1 - value);
		if (rest > 0 && (close[1] != ':' || port_parse(close + 2, rest - 1, &p) < 0))
			return false;
	} else {
		const char *colon = memchr(value, ':', n);
		if (colon) {
			hn = (size_t)(colon - value);
			if (port_parse(colon + 1, n - hn - 1, &p) < 0)
				return false;
		}
	}
	if (p != port || hn == 0)
		return false;
	if (same_ci(h, hn, host))
		return true;
	return httpcheck_loopback(host) &&
	       (same_ci(h, hn, "localhost") || same_ci(h, hn, "127.0.0.1") || same_ci(h, hn, "::1"));
}

bool httpcheck_origin(const char *value, size_t n, bool loopback, const char *allow)
{
	if (allow && allow[0]) {
		for (const char *a = allow; *a;) {
			size_t k = strcspn(a, ",");
			if (k == n && strncasecmp(a, value, n) == 0)
				return true;
			a += k;
			if (*a == ',')
				a++;
		}
		return false;
	}
	if (!loopback)
		return false;
	/* scheme "://" host [":" port], nothing after */
	const char *sep = NULL;
	for (size_t i = 0; i + 3 <= n; i++) {
		if (memcmp(value + i, "://", 3) == 0) {
			sep = value + i;
			break;
		}
	}
	if (!sep || !(same_ci(value, (size_t)(sep - value), "http") || same_ci(value, (size_t)(sep - value), "https")))
		return false;
	const char *h = sep + 3;
	size_t hn = n - (size_t)(h - value);
	unsigned p;
	if (hn > 0 && h[0] == '[') {
		const char *close = memchr(h, ']', hn);
		if (!close)
			return false;
		size_t rest = hn - (size_t)(close + 1 - h);
		if (rest > 0 && (close[1] != ':' || port_parse(close + 2, rest - 1, &p) < 0))
			return false;
		return same_ci(h + 1, (size_t)(close - h - 1), "::1");
	}
	const char *colon = memchr(h, ':', hn);
	if (colon) {
		if (port_parse(colon + 1, hn - (size_t)(colon - h) - 1, &p) < 0)
			return false;
		hn = (size_t)(colon - h);
	}
	return same_ci(h, hn, "localhost") || same_ci(h, hn, "127.0.0.1");
}
