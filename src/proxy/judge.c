/*
 * judge.c - what a connection through the egress proxy must show before
 * anything of it reaches an origin (proxy.c): its request head, parsed
 * (proxyreq) and judged by the session's policy, then a tunnel's first
 * bytes, a TLS ClientHello naming the CONNECT host. Either look costs each
 * byte once, whatever the sandbox sends.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/http_parse.h"
#include "base/util.h"
#include "proxy/proxy-internal.h"
#include "proxy/proxy.h"
#include "proxy/proxyreq.h"
#include "proxy/resolve.h"
#include "proxy/tlshello.h"

/* The rules of the policy, for a refusal's body: "a:443/80, b:443" (at most outsz bytes). */
static void rules_text(const struct policy *pol, char *out, size_t outsz)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < pol->n && n + 4 < outsz; i++) {
		char t[POLICY_RULE_TEXT_MAX + 1];
		policy_rule_format(&pol->rules[i], t, sizeof(t));
		n += (size_t)snprintf(out + n, outsz - n, "%s%s", i ? ", " : "", t);
	}
	if (pol->n == 0)
		snprintf(out, outsz, "nothing");
}

/* Whether the policy allows c's request now; why says no. */
bool proxy_allowed(struct proxy *p, const struct pconn *c, char *why, size_t whysz)
{
	const struct policy_rule *r = policy_find(&p->policy, c->req.host, c->req.port);
	char rules[600];
	if (r && (!c->plain || policy_method_ok(r, c->method, strlen(c->method))))
		return true;
	rules_text(&p->policy, rules, sizeof(rules));
	if (r)
		snprintf(why, whysz,
			 "%s to %s:%u is not allowed by this session's egress policy (allowed: %s). Change it with "
			 "session_egress.",
			 c->method, c->req.host, c->req.port, rules);
	else
		snprintf(why, whysz,
			 "%s:%u is not allowed by this session's egress policy (allowed: %s). Change it with "
			 "session_egress, within what the operator allows (SANDBOX_EGRESS_ALLOW).",
			 c->req.host, c->req.port, rules);
	return false;
}

/* A whole head is at the start of c->in: judge it and start resolving, or refuse. */
static void judge(struct proxy *p, struct pconn *c, const struct http_request *h, size_t head_len)
{
	char why[1000];
	int status = proxyreq_parse(h, &c->req, why, sizeof(why));
	snprintf(c->method, sizeof(c->method), "%.*s", (int)(h->method.n < 15 ? h->method.n : 15), h->method.p);
	c->plain = !c->req.connect;
	if (status) {
		proxy_refuse(p, c, status, why);
		return;
	}
	bool literal = netaddr_is_literal(c->req.host);
	if (!proxy_allowed(p, c, why, sizeof(why))) {
		if (literal)
			snprintf(why, sizeof(why),
				 "%s is an address: egress goes to host names the policy allows, and to an address "
				 "only when the policy names it",
				 c->req.host);
		proxy_refuse(p, c, 403, why);
		return;
	}
	if (c->plain) {
		buf_init(&c->pre, HTTP_PARSE_REQUEST_MAX + 64);
		if (proxyreq_origin_head(h, &c->req, &c->pre) < 0) {
			proxy_refuse(p, c, 431, "the request head is too large");
			return;
		}
		c->body_left = c->req.content_length < 0 ? 0 : c->req.content_length;
	}
	proxy_consume(p, c, head_len);
	c->lookup = ++p->lookups;
	int r = resolver_lookup(p->res, c->lookup, c->req.host, c->req.port, literal);
	if (r < 0) {
		proxy_refuse(p, c, 503,
			     r == -EAGAIN
				     ? "this session has as many name lookups running as it may hold connections: try again"
				     : "the proxy could not start a lookup (out of threads): try again");
		return;
	}
	c->state = PC_RESOLVE;
	c->deadline = now_ms() + PROXY_CONNECT_TIMEOUT_MS;
}

/* Looks for a whole request head in c->in. */
void proxy_head_look(struct proxy *p, struct pconn *c)
{
	struct http_request h;
	/* a head ends in a newline: parse again only when one came (bounded cost for byte-wise senders) */
	if (!memchr(c->in.data + c->tried, '\n', c->in.len - c->tried))
		goto wait;
	c->tried = c->in.len;
	int n = http_parse_request(c->in.data, c->in.len, &h);
	if (n > 0) {
		judge(p, c, &h, (size_t)n);
		return;
	}
	if (n == -1) {
		proxy_refuse(p, c, c->in.len >= HTTP_PARSE_REQUEST_MAX ? 431 : 400,
			     c->in.len >= HTTP_PARSE_REQUEST_MAX ? "the request head is larger than 16 KiB"
								 : "this is not an HTTP request to a proxy");
		return;
	}
wait:
	if (c->in.len >= HTTP_PARSE_REQUEST_MAX)
		proxy_refuse(p, c, 431, "the request head is larger than 16 KiB");
}

/*
 * Whether the tunnel's first bytes are worth a look by tlshello_sni: they
 * are not TLS, or malformed, or too many, or the whole ClientHello is there.
 * Walks each new record header once, so a hello cut into thousands of tiny
 * records costs linear time, not a parse per record.
 */
static bool hello_ready(struct pconn *c)
{
	const unsigned char *d = (const unsigned char *)c->in.data;
	if (c->in.len && d[0] != 0x16)
		return true;
	if (c->in.len > 1 && d[1] != 0x03)
		return true;
	while (c->rec_off + 5 <= c->in.len) {
		size_t len = (size_t)d[c->rec_off + 3] << 8 | d[c->rec_off + 4];
		if (d[c->rec_off] != 0x16 || d[c->rec_off + 1] != 0x03 || len == 0)
			return true;
		if (c->rec_off + 5 + len > c->in.len)
			break;
		for (size_t i = 0; i < len && c->hs4_n < 4; i++)
			c->hs4[c->hs4_n++] = d[c->rec_off + 5 + i];
		c->hs_len += len;
		c->rec_off += 5 + len;
	}
	/* whatever tlshello_sni will refuse at once is looked at at once, and past its cap it stops for good */
	if (c->rec_off >= TLSHELLO_MAX || c->hs_len > TLSHELLO_MAX || (c->hs4_n && c->hs4[0] != 1))
		return true;
	if (c->hs4_n < 4)
		return false;
	size_t msg = (size_t)c->hs4[1] << 16 | (size_t)c->hs4[2] << 8 | c->hs4[3];
	return msg + 4 > TLSHELLO_MAX || c->hs_len >= 4 + msg;
}

/* A server name as host names are written (SNI is the client's to fill: never logged raw). */
static bool sni_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr("-._", *s)))
			return false;
	return true;
}

/* The tunnel's first bytes must be a ClientHello for the CONNECT host. */
void proxy_hello_look(struct proxy *p, struct pconn *c)
{
	char sni[POLICY_HOST_MAX + 1], why[600];
	if (c->in.len == 0 || !hello_ready(c))
		return;
	int r = tlshello_sni((const unsigned char *)c->in.data, c->in.len, sni, sizeof(sni));
	if (r == TLSHELLO_FOUND && !sni_ok(sni))
		r = TLSHELLO_NOT_TLS;
	if (r == TLSHELLO_MORE)
		return;
	size_t sl = r == TLSHELLO_FOUND ? strlen(sni) : 0;
	if (sl && sni[sl - 1] == '.')
		sni[--sl] = '\0';
	if (r == TLSHELLO_FOUND && strcasecmp(sni, c->req.host) != 0) {
		snprintf(why, sizeof(why), "the TLS server name %.253s is not the CONNECT host %s (domain fronting)",
			 sni, c->req.host);
		proxy_refuse(p, c, 403, why);
	} else if (r == TLSHELLO_NO_SNI && !netaddr_is_literal(c->req.host)) {
		snprintf(why, sizeof(why), "the TLS ClientHello to %s names no server (SNI): refused", c->req.host);
		proxy_refuse(p, c, 403, why);
	} else if (r == TLSHELLO_NOT_TLS) {
		snprintf(why, sizeof(why), "a CONNECT tunnel to %s:%u must carry TLS, and it did not", c->req.host,
			 c->req.port);
		proxy_refuse(p, c, 403, why);
	} else {
		c->state = PC_OPEN;
		c->deadline = now_ms() + PROXY_IDLE_TIMEOUT_MS;
	}
}
