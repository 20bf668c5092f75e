/*
 * policy.h - what a session's egress may reach, by name (docs/egress.md).
 *
 * A policy is a list of rules, each written as one string:
 *
 *	HOST[:PORT[/PORT]...][ METHOD[/METHOD]...]
 *
 * HOST is a name ("pypi.org"), a suffix pattern ("*.pythonhosted.org":
 * any name below it, not the name itself), "*" (any name: only an operator
 * may write it, in the ceiling), an IPv4 literal or an IPv6 literal in
 * brackets.  PORTs default to 443 and 80; METHODs (upper case) limit plain
 * HTTP requests (a CONNECT tunnel carries TLS, whose requests no one sees)
 * and default to any.
 *
 * The operator's ceiling (SANDBOX_EGRESS_ALLOW) is a policy too: a rule a
 * session asks for must lie inside one rule of it (the name or pattern
 * covered, the ports and methods a subset).  Presets are named lists of
 * rules, built in (pypi, npm, github, debian) and the operator's
 * (SANDBOX_EGRESS_PRESETS).
 *
 * Pure: parsing and matching only, no I/O; unit-tested and fuzzed.
 */
#ifndef POLICY_H
#define POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/errcode.h"

/* Longest host name (RFC 1035's 253, plus "*." and brackets). */
#define POLICY_HOST_MAX 260
#define POLICY_PORTS_MAX 8
/* Rules in one policy at most (a session's, or the ceiling). */
#define POLICY_RULES_MAX 256
/* Longest rule string, and longest preset name. */
#define POLICY_RULE_TEXT_MAX 400
#define POLICY_PRESET_NAME_MAX 32

/* Methods a rule may name, as bits. */
enum {
	POLICY_GET = 1u << 0,
	POLICY_HEAD = 1u << 1,
	POLICY_POST = 1u << 2,
	POLICY_PUT = 1u << 3,
	POLICY_PATCH = 1u << 4,
	POLICY_DELETE = 1u << 5,
	POLICY_OPTIONS = 1u << 6,
	POLICY_METHODS_ALL = (1u << 7) - 1,
};

struct policy_rule {
	char host[POLICY_HOST_MAX + 1]; /* lower case; "*.x", "*", a name or a literal (v6 in brackets) */
	uint16_t ports[POLICY_PORTS_MAX];
	unsigned nports;
	unsigned methods; /* POLICY_* bits; POLICY_METHODS_ALL: any */
};

struct policy {
	struct policy_rule *rules;
	size_t n;
};

/* Releases p's rules; p itself is the caller's. */
void policy_finish(struct policy *p);
/* Parses one rule. 0, or -EINVAL with err (ERRCODE_INVALID_ARGUMENT) saying what is wrong in it. */
int policy_rule_parse(const char *text, bool operator_rule, struct policy_rule *r, struct err *err);
/* Writes r as it would be parsed back (for results and labels). */
void policy_rule_format(const struct policy_rule *r, char *out, size_t outsz);
/*
 * Parses a ','-separated list of rules (a setting) into p (appended to).
 * "" is empty. 0, or -EINVAL with err naming setting.
 */
int policy_parse_list(struct policy *p, const char *text, const char *setting, struct err *err);
/* Appends a copy of r to p. 0, or -E2BIG past POLICY_RULES_MAX. */
int policy_add(struct policy *p, const struct policy_rule *r);

/* True when name (any case, no trailing dot) matches pattern (a rule's host). */
bool policy_name_match(const char *pattern, const char *name);
/* The first rule of p allowing host and port; NULL when none does. */
const struct policy_rule *policy_find(const struct policy *p, const char *host, uint16_t port);
/* True when method (e.g. "GET") is one r allows. */
bool policy_method_ok(const struct policy_rule *r, const char *method, size_t len);
/* True when every name, port and method r allows, some rule of ceiling allows. */
bool policy_within(const struct policy *ceiling, const struct policy_rule *r);

/*
 * The presets: the built-in ones, then the operator's (text: a
 * SANDBOX_EGRESS_PRESETS value, "NAME=RULE,RULE;NAME=RULE"). Lists the
 * rules of preset name into p. 0, -ENOENT when there is no such preset, or
 * -EINVAL with err when text is malformed.
 */
int policy_preset(const char *text, const char *name, struct policy *p, struct err *err);
/* Checks text (SANDBOX_EGRESS_PRESETS) whole. 0 or -EINVAL with err. */
int policy_presets_check(const char *text, struct err *err);
/* The names of every preset, ", "-separated, into out. */
void policy_preset_names(const char *text, char *out, size_t outsz);
/* The rules of every preset (the default ceiling). 0 or -EINVAL with err. */
int policy_presets_all(const char *text, struct policy *p, struct err *err);

/* p's rules as an array of strings (new reference). */
json_t *policy_json(const struct policy *p);

#endif
