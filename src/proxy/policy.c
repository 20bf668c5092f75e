/*
 * policy.c - egress rules: parse, match, compare with the ceiling, presets.
 *
 * Names are compared in lower case, label by label only where a pattern
 * says "*.": "*.example.org" matches "a.example.org" and "a.b.example.org",
 * never "example.org" nor "badexample.org".  A host written as an address
 * matches only that literal text (the proxy refuses other literals), so
 * "10.0.0.1" never matches "010.0.0.1" or "10.1".
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>

#include "base/util.h"
#include "proxy/netaddr.h"
#include "proxy/policy.h"

/* The built-in presets: name, then rules (default ports) ending in NULL. */
static const char *const builtin_presets[][8] = {
	{ "pypi", "pypi.org", "files.pythonhosted.org", NULL },
	{ "npm", "registry.npmjs.org", NULL },
	{ "github", "github.com", "api.github.com", "codeload.github.com", "objects.githubusercontent.com",
	  "raw.githubusercontent.com", NULL },
	{ "debian", "deb.debian.org", "security.debian.org", "ftp.debian.org", NULL },
};

static const struct {
	const char *name;
	unsigned bit;
} methods[] = {
	{ "GET", POLICY_GET },	   { "HEAD", POLICY_HEAD },	{ "POST", POLICY_POST },       { "PUT", POLICY_PUT },
	{ "PATCH", POLICY_PATCH }, { "DELETE", POLICY_DELETE }, { "OPTIONS", POLICY_OPTIONS },
};

void policy_finish(struct policy *p)
{
	free(p->rules);
	p->rules = NULL;
	p->n = 0;
}

int policy_add(struct policy *p, const struct policy_rule *r)
{
	if (p->n == POLICY_RULES_MAX)
		return -E2BIG;
	if ((p->n & (p->n - 1)) == 0) /* 0, 1, 2, 4...: grow at powers of two */
		p->rules = xreallocarray(p->rules, p->n ? 2 * p->n : 1, sizeof(*p->rules));
	p->rules[p->n++] = *r;
	return 0;
}

/* A DNS name: labels of [a-z0-9_-], 1..63 each, no leading or trailing '-'. */
static bool name_ok(const char *s)
{
	size_t label = 0, total = strlen(s);
	if (total == 0 || total > 253)
		return false;
	for (const char *c = s;; c++) {
		if (*c == '.' || *c == '\0') {
			if (label == 0 || label > 63 || c[-1] == '-' || c[-(long)label] == '-')
				return false;
			if (*c == '\0')
				return true;
			label = 0;
			continue;
		}
		if (!(islower((unsigned char)*c) || isdigit((unsigned char)*c) || *c == '-' || *c == '_'))
			return false;
		label++;
	}
}

static int host_parse(const char *h, size_t n, bool operator_rule, struct policy_rule *r, struct err *err)
{
	if (n == 0 || n > POLICY_HOST_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "the host is empty or longer than %d characters",
			       POLICY_HOST_MAX);
	for (size_t i = 0; i < n; i++)
		r->host[i] = (char)tolower((unsigned char)h[i]);
	r->host[n] = '\0';
	if (strcmp(r->host, "*") == 0) {
		if (!operator_rule)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "'*' (any host) cannot be asked for: name the hosts, or '*.example.org' for the "
				       "names below one");
		return 0;
	}
	if (r->host[0] == '[') {
		struct in6_addr a6;
		char lit[POLICY_HOST_MAX];
		if (n < 3 || r->host[n - 1] != ']' || n - 2 >= sizeof(lit))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "an IPv6 host is written [ADDRESS]");
		memcpy(lit, r->host + 1, n - 2);
		lit[n - 2] = '\0';
		if (inet_pton(AF_INET6, lit, &a6) != 1)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "'%s' is not an IPv6 address", lit);
		return 0;
	}
	const char *name = strncmp(r->host, "*.", 2) == 0 ? r->host + 2 : r->host;
	if (!name_ok(name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "'%s' is not a host name (letters, digits, '-' and '_' in dot-separated labels, "
			       "optionally after '*.')",
			       r->host);
	return 0;
}

static int ports_parse(const char *s, size_t n, struct policy_rule *r, struct err *err)
{
	r->nports = 0;
	size_t i = 0;
	while (i <= n) {
		unsigned long v = 0;
		size_t d = 0;
		while (i < n && isdigit((unsigned char)s[i]) && d < 6)
			v = v * 10 + (unsigned long)(s[i++] - '0'), d++;
		if (d == 0 || v == 0 || v > 65535 || (i < n && s[i] != '/'))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "ports are numbers 1-65535 separated by '/', e.g. ':443/8443'");
		if (r->nports == POLICY_PORTS_MAX)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "at most %d ports per host",
				       POLICY_PORTS_MAX);
		r->ports[r->nports++] = (uint16_t)v;
		i++;
	}
	return 0;
}

static int methods_parse(const char *s, size_t n, struct policy_rule *r, struct err *err)
{
	r->methods = 0;
	size_t i = 0;
	while (i < n) {
		size_t j = i;
		while (j < n && s[j] != '/')
			j++;
		unsigned bit = 0;
		for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++)
			if (strlen(methods[k].name) == j - i && memcmp(methods[k].name, s + i, j - i) == 0)
				bit = methods[k].bit;
		if (!bit)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "'%.*s' is not a method a rule can name: GET, HEAD, POST, PUT, PATCH, DELETE, "
				       "OPTIONS, separated by '/'",
				       (int)(j - i < 16 ? j - i : 16), s + i);
		r->methods |= bit;
		i = j + 1;
	}
	if (!r->methods)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "a method list is empty");
	return 0;
}

int policy_rule_parse(const char *text, bool operator_rule, struct policy_rule *r, struct err *err)
{
	memset(r, 0, sizeof(*r));
	size_t len = strlen(text);
	if (len > POLICY_RULE_TEXT_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "a rule is longer than %d characters",
			       POLICY_RULE_TEXT_MAX);
	const char *sp = memchr(text, ' ', len);
	size_t hp = sp ? (size_t)(sp - text) : len; /* host and ports */
	const char *colon = NULL;
	if (text[0] == '[') {
		const char *close = memchr(text, ']', hp);
		if (close && (size_t)(close - text) + 1 < hp)
			colon = close + 1;
		if (colon && *colon != ':')
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "'%.80s': junk after ']'", text);
	} else {
		colon = memchr(text, ':', hp);
	}
	size_t hn = colon ? (size_t)(colon - text) : hp;
	int ret = host_parse(text, hn, operator_rule, r, err);
	if (ret == 0 && colon)
		ret = ports_parse(colon + 1, hp - hn - 1, r, err);
	else if (ret == 0)
		r->ports[0] = 443, r->ports[1] = 80, r->nports = 2;
	if (ret == 0 && sp)
		ret = methods_parse(sp + 1, len - hp - 1, r, err);
	else if (ret == 0)
		r->methods = POLICY_METHODS_ALL;
	if (ret < 0)
		return err_prefix(err, ret, "egress rule '%.80s': ", text);
	return 0;
}

void policy_rule_format(const struct policy_rule *r, char *out, size_t outsz)
{
	size_t n = (size_t)snprintf(out, outsz, "%s", r->host);
	for (unsigned i = 0; i < r->nports && n < outsz; i++)
		n += (size_t)snprintf(out + n, outsz - n, "%c%u", i ? '/' : ':', r->ports[i]);
	if (r->methods == POLICY_METHODS_ALL)
		return;
	char sep = ' ';
	for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]) && n < outsz; k++)
		if (r->methods & methods[k].bit) {
			n += (size_t)snprintf(out + n, outsz - n, "%c%s", sep, methods[k].name);
			sep = '/';
		}
}

int policy_parse_list(struct policy *p, const char *text, const char *setting, struct err *err)
{
	const char *s = text;
	while (*s) {
		while (*s == ',' || *s == ' ')
			s++;
		size_t n = strcspn(s, ",");
		while (n && s[n - 1] == ' ')
			n--;
		if (n == 0)
			break;
		char one[POLICY_RULE_TEXT_MAX + 1];
		struct policy_rule r;
		if (n > POLICY_RULE_TEXT_MAX)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "%s: a rule is longer than %d characters", setting, POLICY_RULE_TEXT_MAX);
		memcpy(one, s, n);
		one[n] = '\0';
		int r_ = policy_rule_parse(one, true, &r, err);
		if (r_ < 0)
			return err_prefix(err, r_, "%s: ", setting);
		if (policy_add(p, &r) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s: more than %d rules", setting,
				       POLICY_RULES_MAX);
		s += n;
		while (*s == ' ')
			s++;
	}
	return 0;
}

bool policy_name_match(const char *pattern, const char *name)
{
	if (strncmp(pattern, "*", 1) != 0)
		return strcasecmp(pattern, name) == 0;
	/* a pattern matches names, never an address ("*.4" is not 1.2.3.4): those only by a rule naming them */
	if (netaddr_is_literal(name))
		return false;
	if (strcmp(pattern, "*") == 0)
		return true;
	size_t pl = strlen(pattern) - 1, nl = strlen(name); /* pl: ".suffix" */
	return nl > pl && strcasecmp(name + nl - pl, pattern + 1) == 0;
}

static bool port_in(const struct policy_rule *r, uint16_t port)
{
	for (unsigned i = 0; i < r->nports; i++)
		if (r->ports[i] == port)
			return true;
	return false;
}

const struct policy_rule *policy_find(const struct policy *p, const char *host, uint16_t port)
{
	for (size_t i = 0; i < p->n; i++)
		if (port_in(&p->rules[i], port) && policy_name_match(p->rules[i].host, host))
			return &p->rules[i];
	return NULL;
}

bool policy_method_ok(const struct policy_rule *r, const char *method, size_t len)
{
	for (size_t k = 0; k < sizeof(methods) / sizeof(methods[0]); k++)
		if (strlen(methods[k].name) == len && memcmp(methods[k].name, method, len) == 0)
			return (r->methods & methods[k].bit) != 0;
	return r->methods == POLICY_METHODS_ALL; /* a method no rule can name: only "any" allows it */
}

/* True when every name pattern `inner` matches, `outer` matches too. */
static bool pattern_covers(const char *outer, const char *inner)
{
	if (strcmp(inner, "*") == 0)
		return strcmp(outer, "*") == 0;
	if (strncmp(inner, "*.", 2) != 0)
		return policy_name_match(outer, inner);
	if (strcmp(outer, "*") == 0)
		return true;
	/* "*.a.b" inside "*.b" or "*.a.b" */
	return strncmp(outer, "*.", 2) == 0 && (strcasecmp(outer, inner) == 0 || policy_name_match(outer, inner + 2));
}

bool policy_within(const struct policy *ceiling, const struct policy_rule *r)
{
	for (size_t i = 0; i < ceiling->n; i++) {
		const struct policy_rule *c = &ceiling->rules[i];
		if (!pattern_covers(c->host, r->host) || (r->methods & ~c->methods))
			continue;
		unsigned ok = 0;
		for (unsigned k = 0; k < r->nports; k++)
			ok += port_in(c, r->ports[k]);
		if (ok == r->nports)
			return true;
	}
	return false;
}

/*
 * The next "NAME=RULES" of an operator's presets text at *s: 1 with the
 * name and the rules' text (both NUL-terminated copies in the caller's
 * arrays), 0 at the end, -EINVAL with err when malformed.
 */
static int preset_next(const char **s, char name[POLICY_PRESET_NAME_MAX + 1], char *rules, size_t rules_sz,
		       struct err *err)
{
	while (**s == ';' || **s == ' ')
		(*s)++;
	if (!**s)
		return 0;
	size_t n = strcspn(*s, ";");
	const char *eq = memchr(*s, '=', n);
	size_t nl = eq ? (size_t)(eq - *s) : 0;
	while (nl && (*s)[nl - 1] == ' ')
		nl--;
	if (!eq || nl == 0 || nl > POLICY_PRESET_NAME_MAX || n - nl - 1 >= rules_sz)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "SANDBOX_EGRESS_PRESETS: write NAME=RULE,RULE;NAME=RULE (names up to %d characters)",
			       POLICY_PRESET_NAME_MAX);
	for (size_t i = 0; i < nl; i++)
		if (!(islower((unsigned char)(*s)[i]) || isdigit((unsigned char)(*s)[i]) || (*s)[i] == '-'))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "SANDBOX_EGRESS_PRESETS: preset names are lower-case letters, digits and '-'");
	memcpy(name, *s, nl);
	name[nl] = '\0';
	size_t rl = n - (size_t)(eq + 1 - *s);
	memcpy(rules, eq + 1, rl);
	rules[rl] = '\0';
	*s += n;
	return 1;
}

/* Calls fn for each preset, built-in then the operator's; stops at fn's nonzero return. */
static int presets_each(const char *text, int (*fn)(void *arg, const char *name, struct policy *p), void *arg,
			struct err *err)
{
	char name[POLICY_PRESET_NAME_MAX + 1];
	int r = 0;
	for (size_t i = 0; i < sizeof(builtin_presets) / sizeof(builtin_presets[0]) && r == 0; i++) {
		struct policy p = { 0 };
		for (size_t k = 1; builtin_presets[i][k]; k++)
			if (policy_parse_list(&p, builtin_presets[i][k], "preset", err) < 0)
				abort(); /* the table is ours */
		r = fn(arg, builtin_presets[i][0], &p);
		policy_finish(&p);
	}
	const char *s = text ? text : "";
	size_t rules_sz = strlen(s) + 1;
	char *rules = xmalloc(rules_sz);
	while (r == 0) {
		int k = preset_next(&s, name, rules, rules_sz, err);
		if (k <= 0) {
			r = k < 0 ? k : 1;
			break;
		}
		struct policy p = { 0 };
		if ((k = policy_parse_list(&p, rules, "SANDBOX_EGRESS_PRESETS", err)) < 0)
			r = k;
		else
			r = fn(arg, name, &p);
		policy_finish(&p);
	}
	free(rules);
	return r < 0 ? r : 0;
}

struct preset_find {
	const char *name;
	struct policy *out;
	bool found;
};

static int add_all(struct policy *out, const struct policy *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (policy_add(out, &p->rules[i]) < 0)
			return -E2BIG;
	return 0;
}

static int find_one(void *arg, const char *name, struct policy *p)
{
	struct preset_find *f = arg;
	if (strcmp(name, f->name) != 0)
		return 0;
	f->found = true;
	return add_all(f->out, p) < 0 ? -E2BIG : 1;
}

int policy_preset(const char *text, const char *name, struct policy *p, struct err *err)
{
	struct preset_find f = { name, p, false };
	int r = presets_each(text, find_one, &f, err);
	if (r == -E2BIG)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "more than %d egress rules", POLICY_RULES_MAX);
	if (r < 0)
		return r;
	return f.found ? 0 : -ENOENT;
}

static int nothing(void *arg, const char *name, struct policy *p)
{
	(void)arg, (void)name, (void)p;
	return 0;
}

int policy_presets_check(const char *text, struct err *err)
{
	return presets_each(text, nothing, NULL, err);
}

struct names {
	char *out;
	size_t sz, n;
};

static int add_name(void *arg, const char *name, struct policy *p)
{
	struct names *nm = arg;
	(void)p;
	if (nm->n < nm->sz)
		nm->n += (size_t)snprintf(nm->out + nm->n, nm->sz - nm->n, "%s%s", nm->n ? ", " : "", name);
	return 0;
}

void policy_preset_names(const char *text, char *out, size_t outsz)
{
	struct names nm = { out, outsz, 0 };
	out[0] = '\0';
	struct err ignored;
	presets_each(text, add_name, &nm, &ignored);
}

static int add_every(void *arg, const char *name, struct policy *p)
{
	(void)name;
	return add_all(arg, p);
}

int policy_presets_all(const char *text, struct policy *p, struct err *err)
{
	int r = presets_each(text, add_every, p, err);
	if (r == -E2BIG)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "more than %d egress rules in the presets",
			       POLICY_RULES_MAX);
	return r;
}

json_t *policy_json(const struct policy *p)
{
	json_t *a = json_array();
	for (size_t i = 0; i < p->n; i++) {
		char t[POLICY_RULE_TEXT_MAX + 1];
		policy_rule_format(&p->rules[i], t, sizeof(t));
		json_array_append_new(a, json_string(t));
	}
	return a;
}
