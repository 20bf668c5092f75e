/*
 * tool-egress.c - session_egress: show or change a session's egress policy
 * and read its egress log (docs/egress.md). session_create's "egress"
 * argument takes the same object.
 */
#include <errno.h>
#include <string.h>

#include "sandbox/egress.h"
#include "tools/tools.h"

static int session_egress_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	json_t *allow = json_object_get(args, "allow"), *presets = json_object_get(args, "presets");
	struct session *s;
	struct err e;

	err_clear(&e);
	if (tool_session(ctx, args, &s, res) < 0)
		return -ENOENT;
	int r = 0;
	if (!s->egress) {
		r = err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			    "session %s was made without egress, so it has no way out to change: make one with "
			    "session_create and egress {\"presets\": [...], \"allow\": [...]}",
			    s->id);
	} else if (allow || presets) {
		struct policy p;
		json_t *want = json_object();
		if (allow)
			json_object_set(want, "allow", allow);
		if (presets)
			json_object_set(want, "presets", presets);
		r = egress_policy_build(session_egress_conf(ctx->svc->sessions), want, &p, &e);
		json_decref(want);
		if (r == 0) {
			egress_set_policy(s->egress, &p);
			policy_finish(&p);
		}
	}
	if (r < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	json_t *st = egress_status(s->egress);
	json_t *pol = json_object_get(st, "policy"), *log = json_object_get(st, "log"), *v;
	size_t i;
	tool_text(res, "Session %s egress%s: relay %s, %lld connection(s) open. Allowed: %s", s->id,
		  allow || presets ? " changed (open connections it no longer allows were closed)" : "",
		  json_string_value(json_object_get(st, "relay")),
		  (long long)json_integer_value(json_object_get(st, "connections")),
		  json_array_size(pol) ? "" : "nothing");
	json_array_foreach (pol, i, v)
		tool_text(res, "  %s", json_string_value(v));
	json_array_foreach (log, i, v) {
		const char *why = json_string_value(json_object_get(v, "reason"));
		tool_text(res, "%s %s:%lld x%lld, %lld bytes out, %lld in%s%s",
			  json_string_value(json_object_get(v, "verdict")),
			  json_string_value(json_object_get(v, "host")),
			  (long long)json_integer_value(json_object_get(v, "port")),
			  (long long)json_integer_value(json_object_get(v, "count")),
			  (long long)json_integer_value(json_object_get(v, "bytes_out")),
			  (long long)json_integer_value(json_object_get(v, "bytes_in")), why ? ": " : "",
			  why ? why : "");
	}
	json_object_set_new(st, "session_id", json_string(s->id));
	tool_structured(res, st);
	session_put(ctx->svc->sessions, s);
	return 0;
}

const struct tool_entry tool_session_egress_entry = {
	.name = "session_egress",
	.title = "Show or change a session's egress",
	.description = "A session made with egress reaches the hosts its policy allows, through the server's "
		       "proxy, and nothing else. Without allow or presets: show its policy and its egress log "
		       "(every host asked for, allowed or refused, with counts and bytes). With them: replace the "
		       "policy; new connections follow it at once and open ones it no longer allows are closed.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Session id or "
			"name (default: the default session; at most 128 characters)\"}," EGRESS_PROPS "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"policy\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
			 "\"relay\":{\"type\":\"string\"},\"connections\":{\"type\":\"integer\"},"
			 "\"log\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{}}}}}",
	.group = TOOL_GROUP_EGRESS,
	.read_only = false,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = false,
	.beside_queue = true,
	.handler = session_egress_tool,
};
