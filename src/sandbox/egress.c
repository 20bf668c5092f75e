/*
 * egress.c - the operator's egress settings, a session's policy, and the
 * relay started in its container with the proxy serving it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/agentctl.h"
#include "sandbox/egress.h"

/* Frames from the relay before its hello, at most: one engine read ahead. */
#define EGRESS_START_TIMEOUT_MS 10000

struct egress {
	pthread_mutex_t mu; /* held while proxy or stream change, and to read them from other threads */
	struct engine_stream *stream;
	struct proxy *proxy;
	struct policy policy; /* what the proxy was last given: a restarted relay gets it again */
	const struct egress_conf *conf;
	const char *relay_user; /* EGRESS_RELAY_USER, or _ALT when the sandbox runs as it */
	bool restarting;	/* egress_ensure is starting a new relay (proxy and stream NULL) */
	char name[64];
};

int egress_conf_init(const struct config *cfg, struct egress_conf *c, struct err *err)
{
	memset(c, 0, sizeof(*c));
	c->presets = xstrdup(cfg->egress_presets ? cfg->egress_presets : "");
	c->set.conns_max = cfg->egress_conns ? (unsigned)cfg->egress_conns : PROXY_CONNS_DEFAULT;
	const char *allow = cfg->egress_allow ? cfg->egress_allow : "";
	int r = policy_presets_check(c->presets, err);
	if (r == 0)
		r = netaddr_list_parse(cfg->egress_addresses ? cfg->egress_addresses : "", "SANDBOX_EGRESS_ADDRESSES",
				       &c->set.addresses, err);
	if (r == 0 && strcmp(allow, "none") == 0)
		return 0;
	if (r == 0 && allow[0])
		r = policy_parse_list(&c->ceiling, allow, "SANDBOX_EGRESS_ALLOW", err);
	else if (r == 0)
		r = policy_presets_all(c->presets, &c->ceiling, err);
	if (r < 0) {
		egress_conf_finish(c);
		return r;
	}
	c->enabled = true;
	return 0;
}

void egress_conf_finish(struct egress_conf *c)
{
	policy_finish(&c->ceiling);
	free(c->presets);
	c->presets = NULL;
}

json_t *egress_conf_json(const struct egress_conf *c)
{
	char names[512];
	policy_preset_names(c->presets, names, sizeof(names));
	json_t *addrs = json_integer((json_int_t)c->set.addresses.n);
	return json_pack("{s:b, s:o, s:s, s:o, s:i, s:i}", "enabled", c->enabled, "allow", policy_json(&c->ceiling),
			 "presets", names, "addresses_listed", addrs, "connections_per_session", (int)c->set.conns_max,
			 "proxy_port", PROXY_PORT);
}

/* Adds rules to p, each within the ceiling. what: "allow" or "preset NAME", for the message. */
static int add_checked(const struct egress_conf *c, struct policy *p, const struct policy *rules, const char *what,
		       struct err *err)
{
	for (size_t i = 0; i < rules->n; i++) {
		char t[POLICY_RULE_TEXT_MAX + 1];
		policy_rule_format(&rules->rules[i], t, sizeof(t));
		if (!policy_within(&c->ceiling, &rules->rules[i]))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
				       "egress %s: '%s' is outside what the operator allows (SANDBOX_EGRESS_ALLOW; "
				       "env_info egress.allow lists it): ask for hosts within it",
				       what, t);
		if (policy_add(p, &rules->rules[i]) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -E2BIG, "egress: more than %d rules",
				       POLICY_RULES_MAX);
	}
	return 0;
}

static int add_presets(const struct egress_conf *c, json_t *names, struct policy *p, struct err *err)
{
	size_t i;
	json_t *v;
	json_array_foreach (names, i, v) {
		const char *name = json_string_value(v);
		struct policy one = { 0 };
		char known[512], what[64];
		int r = name ? policy_preset(c->presets, name, &one, err) : -ENOENT;
		if (r == -ENOENT) {
			policy_preset_names(c->presets, known, sizeof(known));
			r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				    "egress preset '%.40s' is unknown: the presets are %s", name ? name : "?", known);
		}
		snprintf(what, sizeof(what), "preset %.40s", name ? name : "?");
		if (r == 0)
			r = add_checked(c, p, &one, what, err);
		policy_finish(&one);
		if (r < 0)
			return r;
	}
	return 0;
}

int egress_policy_build(const struct egress_conf *c, json_t *arg, struct policy *ret, struct err *err)
{
	json_t *allow = json_object_get(arg, "allow"), *presets = json_object_get(arg, "presets");
	struct policy p = { 0 };
	size_t i;
	json_t *v;
	int r = 0;

	if (!c->enabled)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			       "egress is off on this server (SANDBOX_EGRESS_ALLOW=none): sessions have no network");
	if (!json_is_object(arg) || (allow && !json_is_array(allow)) || (presets && !json_is_array(presets)))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "egress is an object {\"allow\": [\"pypi.org\", ...], \"presets\": [\"pypi\", ...]}");
	if (presets)
		r = add_presets(c, presets, &p, err);
	json_array_foreach (allow, i, v) {
		struct policy one = { 0 };
		struct policy_rule rule;
		if (r < 0)
			break;
		if (!json_is_string(v))
			r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "egress allow[%zu] must be a string", i);
		else if ((r = policy_rule_parse(json_string_value(v), false, &rule, err)) == 0 &&
			 (r = policy_add(&one, &rule)) == 0)
			r = add_checked(c, &p, &one, "allow", err);
		policy_finish(&one);
	}
	if (r < 0) {
		policy_finish(&p);
		return r;
	}
	*ret = p;
	return 0;
}

static const char *const proxy_vars[] = { "HTTP_PROXY",	 "HTTPS_PROXY",	     "http_proxy",
					  "https_proxy", "npm_config_proxy", "npm_config_https_proxy" };

bool egress_env_ours(const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t n = eq ? (size_t)(eq - kv) : strlen(kv);
	for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++)
		if (strlen(proxy_vars[i]) == n && memcmp(kv, proxy_vars[i], n) == 0)
			return true;
	return n == 8 && (memcmp(kv, "NO_PROXY", 8) == 0 || memcmp(kv, "no_proxy", 8) == 0);
}

void egress_env(json_t *env)
{
	char kv[96];
	for (size_t i = 0; i < sizeof(proxy_vars) / sizeof(proxy_vars[0]); i++) {
		snprintf(kv, sizeof(kv), "%s=http://127.0.0.1:%d", proxy_vars[i], PROXY_PORT);
		json_array_append_new(env, json_string(kv));
	}
	json_array_append_new(env, json_string("NO_PROXY=localhost,127.0.0.1,::1"));
	json_array_append_new(env, json_string("no_proxy=localhost,127.0.0.1,::1"));
}

/* Starts the relay's exec and the proxy on its stream, into g. */
/*
 * Starts the relay's exec and a proxy on its stream with policy: *ret_stream
 * and *ret_proxy, or -errno with err and nothing left. Takes no lock: the
 * caller installs what it returns.
 */
static int relay_start(const struct egress *g, struct engine *e, struct call *call, const char *container,
		       const struct policy *policy, struct engine_stream **ret_stream, struct proxy **ret_proxy,
		       struct err *err)
{
	char exec_id[ENGINE_ID_LEN + 1], port[8];
	struct engine_stream *stream;
	snprintf(port, sizeof(port), "%d", PROXY_PORT);
	json_t *cfg = json_pack("{s:b, s:b, s:b, s:b, s:b, s:s, s:[s, s, s]}", "AttachStdin", 1, "AttachStdout", 1,
				"AttachStderr", 1, "Tty", 0, "Privileged", 0, "User", g->relay_user, "Cmd",
				AGENTCTL_PATH, "--relay", port);
	int r = engine_exec_create(e, call, container, cfg, exec_id, err);
	json_decref(cfg);
	if (r == 0)
		r = engine_exec_start(e, call, exec_id, &stream, err);
	if (r < 0)
		return r;
	struct buf ahead;
	buf_init(&ahead, ENGINE_STREAM_AHEAD_MAX);
	if (engine_stream_take_buffered(stream, &ahead) < 0)
		abort(); /* ahead takes ENGINE_STREAM_AHEAD_MAX */
	r = proxy_start(engine_stream_fd(stream), ahead.data, ahead.len, policy, &g->conf->set, g->name,
			EGRESS_START_TIMEOUT_MS, ret_proxy, err);
	buf_finish(&ahead);
	if (r < 0)
		engine_stream_destroy(stream);
	else
		*ret_stream = stream;
	return r;
}

int egress_start(struct engine *e, struct call *call, const char *container, const char *sandbox_user,
		 const struct egress_conf *c, const struct policy *policy, const char *name, struct egress **ret,
		 struct err *err)
{
	if (!agentctl_built())
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOTSUP,
			       "egress needs the in-sandbox agent, and this build has none (musl-gcc was missing): "
			       "sessions of this server have no network");
	struct egress *g = xcalloc(1, sizeof(*g));
	g->conf = c;
	/* the same uid could signal and trace it: never the sandbox's */
	g->relay_user = strtoul(sandbox_user, NULL, 10) == 65534 ? EGRESS_RELAY_USER_ALT : EGRESS_RELAY_USER;
	pthread_mutex_init(&g->mu, NULL);
	snprintf(g->name, sizeof(g->name), "%s", name);
	for (size_t i = 0; i < policy->n; i++)
		policy_add(&g->policy, &policy->rules[i]);
	int r = relay_start(g, e, call, container, &g->policy, &g->stream, &g->proxy, err);
	if (r < 0) {
		egress_stop(g);
		return r;
	}
	*ret = g;
	return 0;
}

/* Starts the relay again in container unless it runs (force: whatever it does) or another call is at it. */
static int relay_restart(struct egress *g, struct engine *e, struct call *call, const char *container, bool force,
			 struct err *err)
{
	struct policy now = { 0 };
	pthread_mutex_lock(&g->mu);
	if (g->restarting || (!force && g->proxy && proxy_alive(g->proxy))) {
		pthread_mutex_unlock(&g->mu);
		return 0;
	}
	/* taken out under the lock, replaced outside it: session_list must not wait on an engine call */
	g->restarting = true;
	struct proxy *old = g->proxy;
	struct engine_stream *old_stream = g->stream;
	g->proxy = NULL;
	g->stream = NULL;
	for (size_t i = 0; i < g->policy.n; i++)
		policy_add(&now, &g->policy.rules[i]);
	pthread_mutex_unlock(&g->mu);

	log_infof("egress %s: starting the relay again", g->name);
	proxy_stop(old);
	engine_stream_destroy(old_stream);
	struct proxy *np = NULL;
	struct engine_stream *ns = NULL;
	int r = relay_start(g, e, call, container, &now, &ns, &np, err);
	policy_finish(&now);

	pthread_mutex_lock(&g->mu);
	g->proxy = np;
	g->stream = ns;
	g->restarting = false;
	if (np)
		proxy_set_policy(np, &g->policy); /* it may have changed meanwhile */
	pthread_mutex_unlock(&g->mu);
	return r;
}

int egress_ensure(struct egress *g, struct engine *e, struct call *call, const char *container, struct err *err)
{
	return relay_restart(g, e, call, container, false, err);
}

int egress_move(struct egress *g, struct engine *e, struct call *call, const char *container, struct err *err)
{
	return relay_restart(g, e, call, container, true, err);
}

void egress_set_policy(struct egress *g, const struct policy *policy)
{
	pthread_mutex_lock(&g->mu);
	policy_finish(&g->policy);
	for (size_t i = 0; i < policy->n; i++)
		policy_add(&g->policy, &policy->rules[i]);
	if (g->proxy)
		proxy_set_policy(g->proxy, policy);
	pthread_mutex_unlock(&g->mu);
}

json_t *egress_request_json(struct egress *g)
{
	pthread_mutex_lock(&g->mu);
	json_t *j = json_pack("{s:o}", "allow", policy_json(&g->policy));
	pthread_mutex_unlock(&g->mu);
	return j;
}

json_t *egress_status(struct egress *g)
{
	pthread_mutex_lock(&g->mu);
	json_t *st = g->proxy ? proxy_status_json(g->proxy)
			      : json_pack("{s:o, s:s, s:i, s:[]}", "policy", policy_json(&g->policy), "relay",
					  g->restarting ? "restarting" : "down: not running", "connections", 0, "log");
	pthread_mutex_unlock(&g->mu);
	return st;
}

void egress_stop(struct egress *g)
{
	if (!g)
		return;
	proxy_stop(g->proxy);
	engine_stream_destroy(g->stream);
	policy_finish(&g->policy);
	pthread_mutex_destroy(&g->mu);
	free(g);
}
