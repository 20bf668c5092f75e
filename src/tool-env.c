/*
 * tool-env.c - env_info: what this server is, how it is configured, and
 * whether the Docker engine answers.
 *
 * An unreachable engine is a fact this tool reports (engine.reachable false
 * with the reason and the fix), not a failure of the tool.
 */
#include <stdlib.h>
#include <string.h>

#include "agentctl.h"
#include "buildconf.h"
#include "ceiling.h"
#include "exec.h"
#include "pull.h"
#include "tools.h"

static int env_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static json_t *session_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res);

/* One exec that reports what the image has; every line is "key=value". */
static const char probe_script[] =
	"echo os=$(. /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\"); "
	"echo python=$(python3 -c 'import sys; print(sys.version.split()[0])' 2>/dev/null); "
	"echo packages=$(python3 -m pip list --format=freeze 2>/dev/null | wc -l); "
	"echo git=$(git --version 2>/dev/null); echo uid=$(id -u)";

static json_t *session_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct session *s;
	struct exec_result xr;
	struct err e;
	const char *argv[] = { "/bin/sh", "-c", probe_script, NULL };

	if (tool_session(ctx, args, &s, res) < 0)
		return NULL;
	json_t *j = session_json(s);
	struct exec_spec spec = { .argv = argv, .user = s->user, .timeout_ms = 15000, .cap = 8192 };
	err_clear(&e);
	if (exec_run(ctx->svc->engine, ctx->call, s->container, &spec, &xr, &e) == 0 && xr.exit_code == 0) {
		struct buf out;
		buf_init(&out, SIZE_MAX);
		capture_raw(&xr.out, &out);
		char *save = NULL;
		for (char *line = strtok_r(out.data ? out.data : (char *)"", "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *eq = strchr(line, '=');
			if (!eq || !eq[1])
				continue;
			*eq = '\0';
			if (strcmp(line, "packages") == 0)
				json_object_set_new(j, "python_packages", json_integer(atoll(eq + 1)));
			else if (strcmp(line, "uid") == 0)
				json_object_set_new(j, "uid", json_integer(atoll(eq + 1)));
			else
				json_object_set_new(j, line, json_string_lossy(eq + 1, strlen(eq + 1)));
		}
		buf_finish(&out);
	} else {
		json_object_set_new(j, "probe_error", json_string(e.msg[0] ? e.msg : "the probe command failed"));
	}
	exec_result_finish(&xr);
	tool_text(res, "Session %s: image %s, %s, python %s, %llu MB, %.2f CPUs, %llu pids", s->id, s->image,
		  json_string_value(json_object_get(j, "os")) ? json_string_value(json_object_get(j, "os")) : "?",
		  json_string_value(json_object_get(j, "python")) ? json_string_value(json_object_get(j, "python"))
								   : "none",
		  (unsigned long long)s->memory_mb, s->cpus, (unsigned long long)s->pids);
	session_put(ctx->svc->sessions, s);
	return j;
}

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
	json_t *limits = ceiling_json(ctx->svc->engine, ctx->call, ctx->svc->cfg, r == 0);
	json_t *out = json_pack("{s:{s:s, s:s, s:s}, s:o, s:o}", "server", "name", "sandbox-mcp", "version",
				SANDBOX_VERSION, "protocol_version", ctx->protocol_version, "config",
				config_to_json(ctx->svc->cfg), "engine", engine);

	json_object_set_new(json_object_get(out, "server"), "agent", json_boolean(agentctl_built()));
	tool_text(res, "sandbox-mcp %s (protocol %s); %s", SANDBOX_VERSION, ctx->protocol_version,
		  agentctl_built() ? "commands run through the in-sandbox agent (sandbox-mcp-agent)"
				   : "built without the in-sandbox agent (no musl-gcc): commands take the engine's exec path");
	if (r == 0)
		tool_text(res, "Docker engine %s (API %s, %s/%s) at %s", ev.version, ev.api_version, ev.os, ev.arch,
			  endpoint);
	else
		tool_text(res, "Docker engine not reachable at %s: %s", endpoint, err.msg);
	tool_text(res, "Default image %s; limits: %llu MB memory, %.2f CPUs, %llu pids, %llu s per call",
		  ctx->svc->cfg->image, (unsigned long long)ctx->svc->cfg->memory_mb, ctx->svc->cfg->cpus,
		  (unsigned long long)ctx->svc->cfg->pids, (unsigned long long)ctx->svc->cfg->timeout_s);
	tool_text(res, "Sessions may ask for up to %llu MB and %g CPUs; workspace %s, quota %s; saved output %llu MB per stream",
		  (unsigned long long)json_integer_value(json_object_get(limits, "max_memory_mb")),
		  json_number_value(json_object_get(limits, "max_cpus")),
		  ctx->svc->cfg->workspace_mb ? "limited" : "unlimited",
		  json_string_value(json_object_get(limits, "workspace_quota")),
		  (unsigned long long)ctx->svc->cfg->output_save_mb);
	json_object_set_new(out, "limits", limits);
	json_t *images = r == 0 ? pull_images_json(ctx->svc->engine, ctx->call, ctx->svc->cfg) : NULL;
	if (images) {
		tool_text(res, "Images: %s; pull %s; %zu local images allowed (images.local)",
			  config_images_summary(ctx->svc->cfg), ctx->svc->cfg->pull,
			  json_array_size(json_object_get(images, "local")));
		json_object_set_new(out, "images", images);
	}
	if (json_object_get(args, "session_id")) {
		json_t *si = session_info(ctx, args, res);
		if (!si) {
			json_decref(out);
			return 0; /* res holds the session error */
		}
		json_object_set_new(out, "session", si);
	}
	json_object_set_new(out, "sessions_open", json_integer(session_count(ctx->svc->sessions)));
	json_object_set_new(out, "pool_ready", json_integer((json_int_t)session_pool_ready(ctx->svc->sessions)));
	tool_structured(res, out);
	/* no "done" progress: one sent with the result makes SDK 1.x clients report an error */
	return 0;
}

const struct tool_entry tool_env_info_entry = {
	.name = "env_info",
	.title = "Environment info",
	.description = "Report the sandbox server's version and settings (default image, memory/CPU/pid limits, "
		       "timeouts) and whether the Docker engine answers; with session_id, also that session's image, "
		       "OS, Python version and installed package count. Call it first when a sandbox tool fails "
		       "with docker_unavailable or image_not_found.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"session_id\":{\"type\":\"string\",\"maxLength\":128,\"description\":\"Also describe "
			"this session (id or name; 'default' for the default one; at most 128 characters)\"}}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{"
		"\"server\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"agent\":{\"type\":\"boolean\"},"
		"\"version\":{\"type\":\"string\"},\"protocol_version\":{\"type\":\"string\"}}},"
		"\"config\":{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},"
		"\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"
		"\"timeout_s\":{\"type\":\"integer\"},\"idle_ttl_s\":{\"type\":\"integer\"},"
		"\"max_sessions\":{\"type\":\"integer\"},\"workspace\":{\"type\":\"string\"}}},"
		"\"images\":{\"type\":\"object\",\"properties\":{\"policy\":{\"type\":\"string\"},"
		"\"pull\":{\"type\":\"string\"},\"local\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
		"\"engine\":{\"type\":\"object\",\"properties\":{\"reachable\":{\"type\":\"boolean\"},"
		"\"endpoint\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"},"
		"\"api_version\":{\"type\":\"string\"},\"os\":{\"type\":\"string\"},\"arch\":{\"type\":\"string\"},"
		"\"error\":{\"type\":\"string\"},\"error_code\":{\"type\":\"string\"}}},"
		"\"limits\":{\"type\":\"object\",\"properties\":{\"memory_mb\":{\"type\":\"integer\"},"
		"\"max_memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},"
		"\"max_cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"
		"\"workspace_mb\":{\"type\":\"integer\"},\"workspace_quota\":{\"type\":\"string\"},"
		"\"output_save_mb\":{\"type\":\"integer\"}}},"
		"\"sessions_open\":{\"type\":\"integer\"},\"pool_ready\":{\"type\":\"integer\"},"
		"\"session\":{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"image\":{\"type\":\"string\"},\"os\":{\"type\":\"string\"},\"python\":{\"type\":\"string\"},"
		"\"python_packages\":{\"type\":\"integer\"},\"git\":{\"type\":\"string\"},\"uid\":{\"type\":\"integer\"},"
		"\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"}}}}}",
	.group = TOOL_GROUP_ENV,
	.read_only = true,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = false,
	.handler = env_info,
};
