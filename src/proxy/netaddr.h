/*
 * netaddr.h - which addresses egress may connect to (docs/egress.md).
 *
 * An allowed name is connected to only at a public address: never the
 * loopback, private, shared (CGNAT), link-local (and so cloud metadata),
 * multicast, reserved or unspecified ranges, in IPv4 or IPv6, also not
 * when IPv6 wraps an IPv4 address (mapped, compatible, NAT64, 6to4,
 * Teredo).  The operator lets some through by listing them
 * (SANDBOX_EGRESS_ADDRESSES, CIDR blocks), e.g. a registry on the LAN.
 *
 * Pure; unit-tested.
 */
#ifndef NETADDR_H
#define NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include "base/errcode.h"

#define NETADDR_BLOCKS_MAX 64

/* One CIDR block; IPv4 ones stored as IPv4-mapped IPv6 (::ffff:a.b.c.d, prefix + 96). */
struct netaddr_block {
	uint8_t addr[16];
	unsigned prefix; /* 0..128 */
};

struct netaddr_list {
	struct netaddr_block blocks[NETADDR_BLOCKS_MAX];
	size_t n;
};

/*
 * Parses a ','-separated list of addresses and CIDR blocks ("10.1.2.0/24,
 * fd00::/8, 192.168.1.5") into l. 0, or -EINVAL with err naming setting.
 */
int netaddr_list_parse(const char *text, const char *setting, struct netaddr_list *l, struct err *err);
/* Adds sa alone (a /32 or /128). 0, -E2BIG when l is full, -EAFNOSUPPORT for other families. */
int netaddr_list_add(struct netaddr_list *l, const struct sockaddr *sa);
/* True when sa (AF_INET or AF_INET6) lies in one of l's blocks. */
bool netaddr_listed(const struct netaddr_list *l, const struct sockaddr *sa);
/*
 * Why sa may not be connected to unless listed ("loopback", "private",
 * "link-local (cloud metadata lives here)", ...), or NULL for a public
 * address.
 */
const char *netaddr_special(const struct sockaddr *sa);
/* True when host is an IPv4 or IPv6 literal (IPv6 with or without brackets). */
bool netaddr_is_literal(const char *host);

#endif
