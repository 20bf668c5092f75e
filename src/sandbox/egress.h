/*
 * egress.h - a session's egress (docs/egress.md): the operator's settings
 * read once, a session's policy built from what session_create or
 * session_egress asked for, and the relay started in its container with
 * the proxy (proxy/proxy.h) that serves it.
 *
 * A session with egress has network "none": loopback only.  Its one way out
 * is the relay, `/.sandbox-mcp/agent --relay 3128`, started over an exec as
 * a user the sandbox's is not (EGRESS_RELAY_USER), so nothing in the
 * sandbox can stop, trace or replace it; programs find it through the
 * proxy variables the container was made with (egress_env).
 */
#ifndef EGRESS_H
#define EGRESS_H

#include <stdbool.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"
#include "proxy/policy.h"
#include "proxy/proxy.h"

/* The relay runs as nobody: not root, not the sandbox user (65533 when the sandbox's is nobody). */
#define EGRESS_RELAY_USER "65534:65534"
#define EGRESS_RELAY_USER_ALT "65533:65533"

/* The operator's egress settings, parsed from the config once. */
struct egress_conf {
	bool enabled; /* SANDBOX_EGRESS_ALLOW is not "none" */
	struct policy ceiling;
	char *presets; /* SANDBOX_EGRESS_PRESETS, as given */
	struct proxy_settings set;
};

/* One session's egress: the relay's exec stream and the proxy on it. */
struct egress;

/* 0, or -EINVAL with err naming the setting that is malformed. */
int egress_conf_init(const struct config *cfg, struct egress_conf *c, struct err *err);
void egress_conf_finish(struct egress_conf *c);
/* What env_info shows: the ceiling, the presets, the addresses (new reference). */
json_t *egress_conf_json(const struct egress_conf *c);

/*
 * A session's policy from arg, {"allow": [RULE...], "presets": [NAME...]}
 * (session_create's and session_egress's argument): every rule within the
 * ceiling. 0 with *ret (policy_finish it), or -EINVAL with err
 * (ERRCODE_INVALID_ARGUMENT) saying which entry and why.
 */
int egress_policy_build(const struct egress_conf *c, json_t *arg, struct policy *ret, struct err *err);
/* Appends the proxy variables a session with egress gets to env (an array of "K=V"). */
void egress_env(json_t *env);
/* True when "K=V" is one of the variables egress_env sets (an export leaves them out). */
bool egress_env_ours(const char *kv);

/*
 * Starts the relay in the running container and the proxy for it, with
 * policy (copied). sandbox_user: the session's "uid:gid", which the relay's
 * must differ from. name labels the logs. 0 with *ret, or -errno with err.
 */
int egress_start(struct engine *e, struct call *call, const char *container, const char *sandbox_user,
		 const struct egress_conf *c, const struct policy *policy, const char *name, struct egress **ret,
		 struct err *err);
/*
 * Starts the relay again when it is gone (the container ran out of pids or
 * memory, or restarted), with the same policy. 0 when
 * it runs (already or again), or -errno with err. The egress log starts over.
 */
int egress_ensure(struct egress *g, struct engine *e, struct call *call, const char *container, struct err *err);
/*
 * The same egress (its policy, its log) for another container of the
 * session (a rollback's): the relay starts there, the old one is let go.
 */
int egress_move(struct egress *g, struct engine *e, struct call *call, const char *container, struct err *err);
/* Replaces the policy (copied): new connections at once, open ones it no longer allows closed. */
void egress_set_policy(struct egress *g, const struct policy *policy);
/* The policy now as session_create's egress argument, {"allow": [...]} (new reference). */
json_t *egress_request_json(struct egress *g);
/* {"policy", "relay", "connections", "log"} (new reference). */
json_t *egress_status(struct egress *g);
/* Stops the proxy and the relay. NULL is a no-op. */
void egress_stop(struct egress *g);

#endif
