/*
 * netaddr.c - address classes and the operator's address list.
 *
 * Everything is compared as IPv6: an IPv4 address is its mapped form
 * ::ffff:a.b.c.d, and the IPv6 forms that carry an IPv4 address inside are
 * judged by that address, so no wrapping reaches what the plain one
 * cannot.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include "proxy/netaddr.h"

struct range {
	uint8_t addr[16];
	unsigned prefix;
	const char *why;
};

#define V4(a, b, c, d)                                               \
	{                                                            \
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d \
	}

/* Ranges never connected to unless listed (IANA special-purpose registries). */
static const struct range special[] = {
	{ V4(0, 0, 0, 0), 96 + 8, "unspecified (0.0.0.0/8)" },
	{ V4(10, 0, 0, 0), 96 + 8, "private (10.0.0.0/8)" },
	{ V4(100, 64, 0, 0), 96 + 10, "shared carrier-grade NAT (100.64.0.0/10)" },
	{ V4(127, 0, 0, 0), 96 + 8, "loopback (127.0.0.0/8)" },
	{ V4(169, 254, 0, 0), 96 + 16, "link-local, where cloud metadata lives (169.254.0.0/16)" },
	{ V4(172, 16, 0, 0), 96 + 12, "private (172.16.0.0/12)" },
	{ V4(192, 0, 0, 0), 96 + 24, "IETF protocol assignments (192.0.0.0/24)" },
	{ V4(192, 0, 2, 0), 96 + 24, "documentation (192.0.2.0/24)" },
	{ V4(192, 88, 99, 0), 96 + 24, "6to4 relay (192.88.99.0/24)" },
	{ V4(192, 168, 0, 0), 96 + 16, "private (192.168.0.0/16)" },
	{ V4(198, 18, 0, 0), 96 + 15, "benchmarking (198.18.0.0/15)" },
	{ V4(198, 51, 100, 0), 96 + 24, "documentation (198.51.100.0/24)" },
	{ V4(203, 0, 113, 0), 96 + 24, "documentation (203.0.113.0/24)" },
	{ V4(224, 0, 0, 0), 96 + 4, "multicast (224.0.0.0/4)" },
	{ V4(240, 0, 0, 0), 96 + 4, "reserved (240.0.0.0/4)" },
	{ { 0 }, 128, "unspecified (::)" },
	{ { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 128, "loopback (::1)" },
	{ { 0x01, 0 }, 64, "discard-only (100::/64)" },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, "documentation (2001:db8::/32)" },
	{ { 0x20, 0x01, 0, 0 }, 23, "IETF protocol assignments (2001::/23)" },
	{ { 0, 0x64, 0xff, 0x9b, 0, 0x01 }, 48, "local-use NAT64 (64:ff9b:1::/48)" },
	{ { 0xfc, 0 }, 7, "unique local, private (fc00::/7)" },
	{ { 0xfe, 0x80 }, 10, "link-local (fe80::/10)" },
	{ { 0xfe, 0xc0 }, 10, "site-local (fec0::/10)" },
	{ { 0xff, 0 }, 8, "multicast (ff00::/8)" },
};

static bool in_block(const uint8_t a[16], const uint8_t net[16], unsigned prefix)
{
	unsigned full = prefix / 8, rest = prefix % 8;
	if (memcmp(a, net, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (net[full] & mask);
}

/* sa as 16 bytes, IPv4 mapped. false for other families. */
static bool to16(const struct sockaddr *sa, uint8_t out[16])
{
	if (sa->sa_family == AF_INET) {
		static const uint8_t pre[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
		memcpy(out, pre, 12);
		/* by offset: a struct sockaddr * need not be aligned for sockaddr_in */
		memcpy(out + 12, (const char *)sa + offsetof(struct sockaddr_in, sin_addr), 4);
		return true;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out, (const char *)sa + offsetof(struct sockaddr_in6, sin6_addr), 16);
		return true;
	}
	return false;
}

/*
 * The IPv4 address an IPv6 one carries, mapped into out: ::ffff:0:0/96
 * (mapped; already the form), ::/96 (compatible), 64:ff9b::/96 and
 * 64:ff9b:1::/48 (NAT64), 2002::/16 (6to4), 2001::/32 (Teredo, inverted).
 * false when it carries none.
 */
static bool embedded_v4(const uint8_t a[16], uint8_t out[16])
{
	static const uint8_t zero[12] = { 0 };
	static const uint8_t nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t nat64l[6] = { 0, 0x64, 0xff, 0x9b, 0, 0x01 };
	const uint8_t *v4 = NULL;
	uint8_t teredo[4];
	if (memcmp(a, zero, 12) == 0 && !(a[12] == 0 && a[13] == 0 && a[14] == 0 && a[15] <= 1))
		v4 = a + 12;
	else if (memcmp(a, nat64, 12) == 0 || memcmp(a, nat64l, 6) == 0)
		v4 = a + 12;
	else if (a[0] == 0x20 && a[1] == 0x02)
		v4 = a + 2;
	else if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0 && a[3] == 0) {
		for (int i = 0; i < 4; i++)
			teredo[i] = (uint8_t)~a[12 + i];
		v4 = teredo;
	}
	if (!v4)
		return false;
	memset(out, 0, 10);
	out[10] = out[11] = 0xff;
	memcpy(out + 12, v4, 4);
	return true;
}

static const char *special16(const uint8_t a[16])
{
	for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
		if (in_block(a, special[i].addr, special[i].prefix))
			return special[i].why;
	return NULL;
}

const char *netaddr_special(const struct sockaddr *sa)
{
	uint8_t a[16], inner[16];
	if (!to16(sa, a))
		return "not an IP address";
	if (embedded_v4(a, inner)) {
		const char *why = special16(inner);
		if (why)
			return why;
	}
	return special16(a);
}

/* One address or block, "a.b.c.d[/n]" or "x::y[/n]" (n bytes of s). 0 or -1. */
static int block_parse(const char *s, size_t n, struct netaddr_block *b)
{
	char text[64];
	if (n == 0 || n >= sizeof(text))
		return -1;
	memcpy(text, s, n);
	text[n] = '\0';
	char *slash = strchr(text, '/');
	long prefix = -1;
	if (slash) {
		char *end;
		*slash = '\0';
		prefix = strtol(slash + 1, &end, 10);
		if (end == slash + 1 || *end || prefix < 0)
			return -1;
	}
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, text, &a4) == 1) {
		if (prefix > 32)
			return -1;
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a4 };
		to16((struct sockaddr *)&sin, b->addr);
		b->prefix = prefix < 0 ? 128 : 96 + (unsigned)prefix;
		return 0;
	}
	if (inet_pton(AF_INET6, text, &a6) == 1) {
		if (prefix > 128)
			return -1;
		memcpy(b->addr, &a6, 16);
		b->prefix = prefix < 0 ? 128 : (unsigned)prefix;
		return 0;
	}
	return -1;
}

int netaddr_list_parse(const char *text, const char *setting, struct netaddr_list *l, struct err *err)
{
	l->n = 0;
	for (const char *s = text; *s;) {
		while (*s == ',' || *s == ' ')
			s++;
		size_t n = strcspn(s, ", ");
		if (n == 0)
			break;
		if (l->n == NETADDR_BLOCKS_MAX)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s: more than %d blocks", setting,
				       NETADDR_BLOCKS_MAX);
		if (block_parse(s, n, &l->blocks[l->n]) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "%s: '%.*s' is not an address or CIDR block (such as 10.1.2.0/24 or fd00::/8)",
				       setting, (int)(n < 64 ? n : 64), s);
		l->n++;
		s += n;
	}
	return 0;
}

bool netaddr_listed(const struct netaddr_list *l, const struct sockaddr *sa)
{
	uint8_t a[16];
	if (!to16(sa, a))
		return false;
	for (size_t i = 0; i < l->n; i++)
		if (in_block(a, l->blocks[i].addr, l->blocks[i].prefix))
			return true;
	return false;
}

bool netaddr_is_literal(const char *host)
{
	char text[64];
	struct in6_addr a6;
	size_t n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(text))
		return false;
	memcpy(text, host, n);
	text[n] = '\0';
	/* inet_aton's forms ("10.1", "0x7f.1") too: resolvers accept them as addresses */
	struct in_addr a4;
	return inet_aton(text, &a4) != 0 || inet_pton(AF_INET6, text, &a6) == 1;
}

int netaddr_list_add(struct netaddr_list *l, const struct sockaddr *sa)
{
	if (l->n == NETADDR_BLOCKS_MAX)
		return -E2BIG;
	if (!to16(sa, l->blocks[l->n].addr))
		return -EAFNOSUPPORT;
	l->blocks[l->n++].prefix = 128;
	return 0;
}
