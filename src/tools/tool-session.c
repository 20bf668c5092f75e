/*
 * tool-session.c - session_create, session_list, session_close.
 */
#include <errno.h>
#include <string.h>

#include "sandbox/ceiling.h"
#include "tools/tools.h"

static int session_create_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int session_list_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int session_close_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res);

#define SESSION_PROPS                                                                                              \
	"\"session_id\":{\"type\":\"string\"},"                                                                    \
	"\"name\":{\"type\":\"string\",\"description\":\"absent when the session has none\"},"                     \
	"\"image\":{\"type\":\"string\"},"                                                                         \
	"\"container_id\":{\"type\":\"string\"},\"persistent\":{\"type\":\"boolean\"},"                            \
	"\"network\":{\"type\":\"string\"},\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},"   \
	"\"pids\":{\"type\":\"integer\"},\"read_only\":{\"type\":\"boolean\"},\"created\":{\"type\":\"integer\"}," \
	"\"last_used\":{\"type\":\"integer\"},\"user\":{\"type\":\"string\"},\"engine\":{\"type\":\"string\"},"    \
	"\"egress\":{\"type\":\"object\",\"properties\":{},\"description\":\"only for a session with egress: its policy, relay and log\"}"

/* A pull's progress as notifications/progress of the call (tool_progress drops what does not grow). */
static void pull_progress(void *arg, double done, double total, const char *msg)
{
	tool_progress(arg, done, total, msg);
}

static int session_create_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct session_opts o = {
		.image = json_string_value(json_object_get(args, "image")),
		.name = json_string_value(json_object_get(args, "name")),
		.persistent = json_is_true(json_object_get(args, "persistent")),
		.network = json_string_value(json_object_get(args, "network")),
		.egress = json_object_get(args, "egress"),
		.env = json_object_get(args, "env"),
		.read_only = json_is_true(json_object_get(args, "read_only")),
		.engine = json_string_value(json_object_get(args, "engine")),
		.pull_report = pull_progress,
		.pull_arg = ctx,
	};
	struct session *s;
	struct err e;
	const char *key;
	json_t *v;

	json_object_foreach (o.env, key, v) {
		if (!tool_env_name_valid(key)) {
			err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				"env name '%.60s' must be letters, digits and '_', not starting with a digit", key);
			return tool_fail(res, &e);
		}
	}
	err_clear(&e);
	if (ceiling_session(ctx->svc->cfg, json_object_get(args, "memory_mb"), json_object_get(args, "cpus"),
			    &o.memory_mb, &o.cpus, &e) < 0)
		return tool_fail(res, &e);
	if (session_create(ctx->svc->sessions, ctx->call, &o, &s, &e) < 0)
		return tool_fail(res, &e);
	json_t *j = session_json(s);
	json_object_set(j, "warnings", s->warnings ? s->warnings : json_array());
	json_object_set_new(j, "workspace", json_string(ctx->svc->cfg->workspace));
	json_object_set_new(j, "pulled", json_boolean(s->pulled));
	if (s->pulled) {
		json_object_set_new(j, "pull_ms", json_integer(s->pull_ms));
		tool_text(res, "Pulled %s in %.1f s.", s->image, (double)s->pull_ms / 1000);
	}
	tool_text(res,
		  "Session %s%s%s%s started from %s on engine %s (network %s, %llu MB, %.2f CPUs%s%s). Pass session_id "
		  "\"%s\" to run_command and the other tools.",
		  s->id, s->name[0] ? " (\"" : "", s->name, s->name[0] ? "\")" : "", s->image, s->engine_name,
		  s->network, (unsigned long long)s->memory_mb, s->cpus, s->read_only ? ", read-only root" : "",
		  s->persistent ? ", persistent" : "", s->id);
	if (json_array_size(s->warnings))
		tool_text(res, "Docker warnings: %s", json_string_value(json_array_get(s->warnings, 0)));
	tool_structured(res, j);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int session_list_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	json_t *list = session_list_json(ctx->svc->sessions, ctx->call);
	size_t i;
	json_t *s;

	if (json_array_size(list) == 0)
		tool_text(res,
			  "No sessions. Tools create the default session on first use; session_create makes more.");
	json_array_foreach (list, i, s) {
		const char *name = json_string_value(json_object_get(s, "name"));
		tool_text(res, "%s%s%s%s  %s  image %s  engine %s%s%s",
			  json_string_value(json_object_get(s, "session_id")), name && *name ? " (" : "",
			  name ? name : "", name && *name ? ")" : "", json_string_value(json_object_get(s, "state")),
			  json_string_value(json_object_get(s, "image")),
			  json_string_value(json_object_get(s, "engine")),
			  json_is_true(json_object_get(s, "persistent")) ? "  persistent" : "",
			  json_is_true(json_object_get(s, "busy")) ? "  busy" : "");
	}
	tool_structured(res, json_pack("{s:o}", "sessions", list));
	return 0;
}

static int session_close_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *ref = json_string_value(json_object_get(args, "session_id"));
	struct err e;

	err_clear(&e);
	if (session_close(ctx->svc->sessions, ctx->call, ref, &e) < 0)
		return tool_fail(res, &e);
	tool_text(res, "Session %s closed; its container and files are gone.", ref ? ref : "default");
	tool_structured(res, json_pack("{s:s, s:b}", "session_id", ref ? ref : "default", "closed", 1));
	return 0;
}

const struct tool_entry tool_session_create_entry = {
	.name = "session_create",
	.title = "Create a sandbox session",
	.description = "Start a new sandbox: a Docker container with a /workspace directory, no network, and limits. "
		       "Only needed for a second sandbox, another image, other limits, network access, or a persistent "
		       "session: the other tools create a default session on first use. Returns session_id for the "
		       "other tools.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"image\":{\"type\":\"string\",\"maxLength\":255,\"description\":\"Docker image (default: the "
		"server's sandbox image with Python and data libraries; at most 255 characters). One that is "
		"missing is pulled when the operator's image policy allows it (env_info images lists the local "
		"ones and the policy)\"},"
		"\"name\":{\"type\":\"string\",\"maxLength\":63,\"description\":\"A name usable wherever "
		"session_id is (at most 63 characters)\"},"
		"\"persistent\":{\"type\":\"boolean\",\"description\":\"Keep the session when the server exits "
		"(default false)\"},"
		"\"network\":{\"type\":\"string\",\"maxLength\":63,\"description\":\"'none' (default), or a Docker "
		"network the operator allows (SANDBOX_NETWORKS; env_info config.networks lists them) for network access. "
		"Never host or container:<id>. At most 63 characters.\"},"
		"\"egress\":{\"type\":\"object\",\"additionalProperties\":false,\"description\":\"Network by "
		"name: the session reaches only these hosts, through the server's proxy (pip, git, npm and curl "
		"find it by themselves), and nothing else. E.g. {\\\"presets\\\": [\\\"pypi\\\"]}. "
		"session_egress shows the log and changes it later.\",\"properties\":{" EGRESS_PROPS "}},"
		"\"env\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":{\"type\":\"string\"},"
		"\"description\":\"Environment variables for everything run in the session\"},"
		"\"memory_mb\":{\"type\":\"integer\",\"minimum\":16,\"maximum\":1048576,\"description\":\"Memory "
		"limit, MB (default and most allowed: env_info limits.memory_mb and max_memory_mb; from 16 to 1048576)\"},"
		"\"cpus\":{\"type\":\"number\",\"minimum\":0.01,\"maximum\":256,\"description\":\"CPU limit "
		"(default and most allowed: env_info limits.cpus and max_cpus; from 0.01 to 256)\"},"
		"\"read_only\":{\"type\":\"boolean\",\"description\":\"Read-only root filesystem (the workspace "
		"and /tmp stay writable)\"},"
		"\"engine\":{\"type\":\"string\",\"maxLength\":32,\"description\":\"Which of the operator's Docker "
		"engines runs the session, by name (default: 'default'; env_info engines lists the names; at most 32 "
		"characters)\"}}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{" SESSION_PROPS
			 ",\"workspace\":{\"type\":\"string\"},\"pulled\":{\"type\":\"boolean\"},"
			 "\"pull_ms\":{\"type\":\"integer\"},\"warnings\":{\"type\":\"array\",\"items\":{\"type\":"
			 "\"string\"}}}}",
	.group = TOOL_GROUP_SESSION,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = false,
	.handler = session_create_tool,
};

const struct tool_entry tool_session_list_entry = {
	.name = "session_list",
	.title = "List sandbox sessions",
	.description = "List the open sandbox sessions with their state (running, exited, missing), image, "
		       "creation and last-use times (unix seconds), whether they are persistent and busy.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":\"array\",\"items\":{"
			 "\"type\":\"object\",\"properties\":{" SESSION_PROPS
			 ",\"state\":{\"type\":\"string\"},\"busy\":{\"type\":\"boolean\"}}}}}}",
	.group = TOOL_GROUP_SESSION,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = false,
	.handler = session_list_tool,
};

const struct tool_entry tool_session_close_entry = {
	.name = "session_close",
	.title = "Close a sandbox session",
	.description = "Stop and remove a session's container and everything in it (its workspace files too). "
		       "Without session_id, closes the default session.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Session id or "
			"name (at most 128 characters)\"}}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"closed\":{\"type\":\"boolean\"}}}",
	.group = TOOL_GROUP_SESSION,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = session_close_tool,
};
