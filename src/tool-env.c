/*
 * tool-env.c - env_info: what this server is, how it is configured, and
 * whether the Docker engine answers.
 *
 * An unreachable engine is a fact this tool reports (engine.reachable false
 * with the reason and the fix), not a failure of the tool.
 */
#include <string.h>

#include "buildconf.h"
#include "tools.h"

static int env_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res);

static int env_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct engine_version ev;
	struct err err;

	tool_progress(ctx, 1, 2, "asking the Docker engine for its version");
	err_clear(&err);
	int r = engine_version(ctx->svc->engine, ctx->call, &ev, &err);
	const char *endpoint = engine_endpoint(ctx->svc->engine)->display;

	json_t *engine;
	if (r == 0) {
		engine = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "reachable", 1, "endpoint", endpoint,
				   "version", ev.version, "api_version", ev.api_version, "min_api_version",
				   ev.min_api_version, "os", ev.os, "arch", ev.arch, "kernel", ev.kernel);
	} else {
		engine = json_pack("{s:b, s:s, s:s, s:s}", "reachable", 0, "endpoint", endpoint, "error_code",
				   errcode_name(err.code), "error", err.msg);
	}
	json_t *out = json_pack("{s:{s:s, s:s, s:s}, s:o, s:o}", "server", "name", "sandbox-mcp", "version",
				SANDBOX_VERSION, "protocol_version", ctx->protocol_version, "config",
				config_to_json(ctx->svc->cfg), "engine", engine);

	tool_text(res, "sandbox-mcp %s (protocol %s)", SANDBOX_VERSION, ctx->protocol_version);
	if (r == 0)
		tool_text(res, "Docker engine %s (API %s, %s/%s) at %s", ev.version, ev.api_version, ev.os, ev.arch,
			  endpoint);
	else
		tool_text(res, "Docker engine not reachable at %s: %s", endpoint, err.msg);
	tool_text(res, "Default image %s; limits: %llu MB memory, %.2f CPUs, %llu pids, %llu s per call",
		  ctx->svc->cfg->image, (unsigned long long)ctx->svc->cfg->memory_mb, ctx->svc->cfg->cpus,
		  (unsigned long long)ctx->svc->cfg->pids, (unsigned long long)ctx->svc->cfg->timeout_s);
	tool_structured(res, out);
	tool_progress(ctx, 2, 2, "done");
	return 0;
}

const struct tool_entry tool_env_info_entry = {
	.name = "env_info",
	.title = "Environment info",
	.description = "Report the sandbox server's version and settings (default image, memory/CPU/pid limits, "
		       "timeouts) and whether the Docker engine answers. Call it first when a sandbox tool fails "
		       "with docker_unavailable or image_not_found.",
	.input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{"
		"\"server\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
		"\"version\":{\"type\":\"string\"},\"protocol_version\":{\"type\":\"string\"}}},"
		"\"config\":{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},"
		"\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"
		"\"timeout_s\":{\"type\":\"integer\"},\"idle_ttl_s\":{\"type\":\"integer\"},"
		"\"max_sessions\":{\"type\":\"integer\"},\"workspace\":{\"type\":\"string\"}}},"
		"\"engine\":{\"type\":\"object\",\"properties\":{\"reachable\":{\"type\":\"boolean\"},"
		"\"endpoint\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"},"
		"\"api_version\":{\"type\":\"string\"},\"os\":{\"type\":\"string\"},\"arch\":{\"type\":\"string\"},"
		"\"error\":{\"type\":\"string\"},\"error_code\":{\"type\":\"string\"}}}}}",
	.group = TOOL_GROUP_ENV,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = false,
	.handler = env_info,
};
