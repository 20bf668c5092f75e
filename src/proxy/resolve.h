/*
 * resolve.h - name lookups for the egress proxy without blocking its pump:
 * each lookup runs getaddrinfo (the host's own resolver, as configured in
 * its /etc/resolv.conf and nsswitch.conf) on a thread of its own, and the
 * answer is posted to a mailbox whose eventfd the pump polls.
 *
 * A lookup can outlive the proxy that asked (getaddrinfo cannot be
 * interrupted): the mailbox is reference-counted, and an answer that comes
 * after resolver_close is freed by its thread.
 */
#ifndef RESOLVE_H
#define RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include <netdb.h>

struct resolver;

struct resolved {
	uint32_t tag;	     /* the caller's (a connection id) */
	struct addrinfo *ai; /* NULL on failure */
	int gai_err;	     /* getaddrinfo's code when ai is NULL */
	struct resolved *next;
};

/* max: lookups running at once (their threads, also of connections gone since). 0 with *ret, or -errno. */
int resolver_create(unsigned max, struct resolver **ret);
/* The fd that is readable while answers wait (poll it for POLLIN). */
int resolver_fd(const struct resolver *r);
/*
 * Starts looking up host (numeric: an address literal, no lookup). 0,
 * -EAGAIN when max lookups are running, or -errno (no thread).
 */
int resolver_lookup(struct resolver *r, uint32_t tag, const char *host, uint16_t port, bool numeric);
/* The answers that came, oldest first (the caller frees each with resolved_free); NULL when none. */
struct resolved *resolver_take(struct resolver *r);
void resolved_free(struct resolved *x);
/* Gives up r: lookups still running free their own answers. NULL is a no-op. */
void resolver_close(struct resolver *r);

#endif
