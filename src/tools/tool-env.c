/*
 * tool-env.c - env_info: what this server is, how it is configured, and
 * whether the Docker engine answers.
 *
 * An unreachable engine is a fact this tool reports (engine.reachable false
 * with the reason and the fix), not a failure of the tool.
 *
 * What the engine said (its version, its local images: two round trips) is
 * reused for ENV_ENGINE_TTL_MS, so clients that poll env_info over HTTP are
 * not held to the engine's pace; the answer says how old it is
 * (engine.age_ms). Only an answer is reused: an engine that does not answer
 * is asked again by the next call, so one that comes back shows at once, and
 * one that goes away shows within the TTL (or the engine timeout, while the
 * one call that asks waits: calls meanwhile get the last answer, older).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "buildconf.h"
#include "sandbox/agentctl.h"
#include "sandbox/ceiling.h"
#include "sandbox/egress.h"
#include "sandbox/exec.h"
#include "sandbox/pull.h"
#include "tools/tools.h"

/* How long env_info reuses the engine's answers. */
#define ENV_ENGINE_TTL_MS 1000

struct env_cache {
	pthread_mutex_t lock; /* guards the rest */
	int64_t at_ms;	      /* when the engine answered; 0: nothing kept */
	struct engine_version ev;
	json_t *images; /* pull_images_json's answer, or NULL */
	/* whose images: each principal sees only those it may use (pull_images_json) */
	char principal[CALL_PRINCIPAL_MAX + 1];
	bool refreshing; /* one call asks the engine; the others take the last answer meanwhile */
};

static int env_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static int engine_facts(struct tool_ctx *ctx, struct engine_version *ret_ev, json_t **ret_images, int64_t *ret_age,
			struct err *err);
static json_t *session_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res);
static void engines_info(struct tool_ctx *ctx, json_t *out, struct tool_result *res, const struct err *default_err);

/* How long env_info waits for each engine's answer to a ping, ms (an engine that went away costs this). */
#define ENV_ENGINE_PING_MS 5000

/* One exec that reports what the image has; every line is "key=value". */
static const char probe_script[] = "echo os=$(. /etc/os-release 2>/dev/null && echo \"$PRETTY_NAME\"); "
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
	struct exec_spec spec = {
		.argv = argv, .user = s->user, .guard = session_guard(s), .timeout_ms = 15000, .cap = 8192
	};
	err_clear(&e);
	if (session_run(ctx->call, s, &spec, &xr, &e) == 0 && xr.exit_code == 0) {
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

struct env_cache *env_cache_create(void)
{
	struct env_cache *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void env_cache_destroy(struct env_cache *c)
{
	if (!c)
		return;
	json_decref(c->images);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/*
 * The engine's version and local images (*ret_images a new reference, or
 * NULL), from the cache when younger than ENV_ENGINE_TTL_MS; *ret_age is how
 * old in ms (0: asked now). -errno with err when the engine does not answer.
 */
static int engine_facts(struct tool_ctx *ctx, struct engine_version *ret_ev, json_t **ret_images, int64_t *ret_age,
			struct err *err)
{
	struct env_cache *c = ctx->svc->env_cache;
	const char *principal = call_principal(ctx->call);
	int64_t now = now_ms();

	if (c) {
		pthread_mutex_lock(&c->lock);
		/* many clients at the moment it expires would all ask the engine: one does */
		bool fresh = c->at_ms && strcmp(c->principal, principal) == 0 &&
			     (now - c->at_ms < ENV_ENGINE_TTL_MS || c->refreshing);
		if (!fresh)
			c->refreshing = true;
		if (fresh) {
			*ret_ev = c->ev;
			/* a copy: jansson values are not shared between threads that dump them */
			*ret_images = c->images ? json_deep_copy(c->images) : NULL;
			*ret_age = now - c->at_ms;
		}
		pthread_mutex_unlock(&c->lock);
		if (fresh)
			return 0;
	}
	tool_progress(ctx, 1, 2, "asking the Docker engine for its version");
	int r = engine_version(ctx->svc->engine, ctx->call, ret_ev, err);
	if (r < 0) {
		if (c) {
			pthread_mutex_lock(&c->lock);
			c->refreshing = false;
			c->at_ms = 0; /* the last answer is not kept past one that failed */
			pthread_mutex_unlock(&c->lock);
		}
		return r;
	}
	*ret_images = pull_images_json(ctx->svc->engine, ctx->call, ctx->svc->cfg);
	*ret_age = 0;
	if (c) {
		json_t *copy = *ret_images ? json_deep_copy(*ret_images) : NULL;
		pthread_mutex_lock(&c->lock);
		json_t *old = c->images;
		c->images = copy;
		snprintf(c->principal, sizeof(c->principal), "%s", principal);
		c->ev = *ret_ev;
		c->at_ms = now;
		c->refreshing = false;
		pthread_mutex_unlock(&c->lock);
		json_decref(old);
	}
	return 0;
}

/*
 * engines: {NAME: {endpoint, reachable}}, the names session_create's engine
 * takes. With one engine, what engine_facts found (default_err: NULL when it
 * answered) stands for it: no second call to the engine.
 */
static void engines_info(struct tool_ctx *ctx, json_t *out, struct tool_result *res, const struct err *default_err)
{
	const struct engines *es = ctx->svc->engines;
	int ms = engine_timeout_ms(ctx->svc->engine) < ENV_ENGINE_PING_MS ? engine_timeout_ms(ctx->svc->engine)
									  : ENV_ENGINE_PING_MS;

	if (!es)
		return;
	if (engines_count(es) == 1) {
		json_t *one = json_pack("{s:s, s:b}", "endpoint", engines_endpoint(es, 0), "reachable", !default_err);
		if (default_err)
			json_object_set_new(one, "error", json_string(default_err->msg));
		json_object_set_new(out, "engines", json_pack("{s:o}", engines_name(es, 0), one));
		return;
	}
	json_t *j = engines_json(es, ms);
	for (size_t i = 0; i < engines_count(es); i++) {
		json_t *one = json_object_get(j, engines_name(es, i));
		tool_text(res, "Engine %s at %s: %s", engines_name(es, i), engines_endpoint(es, i),
			  json_is_true(json_object_get(one, "reachable"))
				  ? "reachable"
				  : json_string_value(json_object_get(one, "error")));
	}
	tool_text(res, "session_create {engine: NAME} starts a session on one of these engines (default: %s)",
		  ENGINES_DEFAULT);
	json_object_set_new(out, "engines", j);
}

static int env_info(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	struct engine_version ev;
	struct err err;
	json_t *images = NULL;
	int64_t age = 0;

	err_clear(&err);
	int r = engine_facts(ctx, &ev, &images, &age, &err);
	/* as configured, without the engine's name that several engines add to its messages */
	const char *endpoint = ctx->svc->engines ? engines_endpoint(ctx->svc->engines, 0)
						 : engine_endpoint(ctx->svc->engine)->display;

	json_t *engine;
	if (r == 0) {
		engine = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "reachable", 1, "endpoint",
				   endpoint, "version", ev.version, "api_version", ev.api_version, "min_api_version",
				   ev.min_api_version, "os", ev.os, "arch", ev.arch, "kernel", ev.kernel, "age_ms",
				   (json_int_t)age);
	} else {
		engine = json_pack("{s:b, s:s, s:s, s:s}", "reachable", 0, "endpoint", endpoint, "error_code",
				   errcode_name(err.code), "error", err.msg);
	}
	json_t *limits = ceiling_json(ctx->svc->engine, ctx->call, ctx->svc->cfg, r == 0);
	json_t *out = json_pack("{s:{s:s, s:s, s:s}, s:o, s:o}", "server", "name", "sandbox-mcp", "version",
				SANDBOX_VERSION, "protocol_version", ctx->protocol_version, "config",
				config_to_json(ctx->svc->cfg), "engine", engine);

	json_object_set_new(json_object_get(out, "server"), "agent", json_boolean(agentctl_built()));
	/* started from its image (docker run -i): which container, for `docker logs` and the like */
	const char *self = session_mgr_container(ctx->svc->sessions);
	if (self[0])
		json_object_set_new(json_object_get(out, "server"), "container", json_stringn(self, 12));
	tool_text(res, "sandbox-mcp %s (protocol %s)%s%.*s; %s", SANDBOX_VERSION, ctx->protocol_version,
		  self[0] ? ", running in container " : "", self[0] ? 12 : 0, self,
		  agentctl_built()
			  ? "commands run through the in-sandbox agent (sandbox-mcp-agent)"
			  : "built without the in-sandbox agent (no musl-gcc): commands take the engine's exec path");
	if (r == 0)
		tool_text(res, "Docker engine %s (API %s, %s/%s) at %s", ev.version, ev.api_version, ev.os, ev.arch,
			  endpoint);
	else
		tool_text(res, "Docker engine not reachable at %s: %s", endpoint, err.msg);
	tool_text(res, "Default image %s; limits: %llu MB memory, %.2f CPUs, %llu pids, %llu s per call",
		  ctx->svc->cfg->image, (unsigned long long)ctx->svc->cfg->memory_mb, ctx->svc->cfg->cpus,
		  (unsigned long long)ctx->svc->cfg->pids, (unsigned long long)ctx->svc->cfg->timeout_s);
	tool_text(res,
		  "Sessions may ask for up to %llu MB and %g CPUs; workspace %s, quota %s; disk cap: %s; saved output %llu "
		  "MB per stream",
		  (unsigned long long)json_integer_value(json_object_get(limits, "max_memory_mb")),
		  json_number_value(json_object_get(limits, "max_cpus")),
		  ctx->svc->cfg->workspace_mb ? "limited" : "unlimited",
		  json_string_value(json_object_get(limits, "workspace_quota")),
		  json_string_value(json_object_get(limits, "disk_cap")),
		  (unsigned long long)ctx->svc->cfg->output_save_mb);
	json_object_set_new(out, "limits", limits);
	json_object_set_new(out, "egress", egress_conf_json(session_egress_conf(ctx->svc->sessions)));
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
	json_object_set_new(out, "sessions_open",
			    json_integer(session_count(ctx->svc->sessions, call_principal(ctx->call))));
	json_object_set_new(out, "pool_ready", json_integer((json_int_t)session_pool_ready(ctx->svc->sessions)));
	engines_info(ctx, out, res, r == 0 ? NULL : &err);
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
		"\"version\":{\"type\":\"string\"},\"protocol_version\":{\"type\":\"string\"},"
		"\"container\":{\"type\":\"string\",\"description\":\"the container the server runs in (docker run -i)\"}}},"
		"\"config\":{\"type\":\"object\",\"properties\":{\"image\":{\"type\":\"string\"},"
		"\"memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"
		"\"timeout_s\":{\"type\":\"integer\"},\"idle_ttl_s\":{\"type\":\"integer\"},"
		"\"max_sessions\":{\"type\":\"integer\"},\"workspace\":{\"type\":\"string\"}}},"
		"\"images\":{\"type\":\"object\",\"properties\":{\"policy\":{\"type\":\"string\"},"
		"\"pull\":{\"type\":\"string\"},\"local\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}},"
		"\"engine\":{\"type\":\"object\",\"properties\":{\"reachable\":{\"type\":\"boolean\"},"
		"\"endpoint\":{\"type\":\"string\"},\"version\":{\"type\":\"string\"},"
		"\"api_version\":{\"type\":\"string\"},\"os\":{\"type\":\"string\"},\"arch\":{\"type\":\"string\"},"
		"\"age_ms\":{\"type\":\"integer\"},\"error\":{\"type\":\"string\"},\"error_code\":{\"type\":\"string\"}}},"
		"\"limits\":{\"type\":\"object\",\"properties\":{\"memory_mb\":{\"type\":\"integer\"},"
		"\"max_memory_mb\":{\"type\":\"integer\"},\"cpus\":{\"type\":\"number\"},"
		"\"max_cpus\":{\"type\":\"number\"},\"pids\":{\"type\":\"integer\"},"
		"\"workspace_mb\":{\"type\":\"integer\"},\"workspace_quota\":{\"type\":\"string\"},"
		"\"disk_cap\":{\"type\":\"string\"},"
		"\"output_save_mb\":{\"type\":\"integer\"}}},"
		"\"sessions_open\":{\"type\":\"integer\"},\"pool_ready\":{\"type\":\"integer\"},"
		"\"engines\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":{\"type\":\"object\",\"properties\":{"
		"\"endpoint\":{\"type\":\"string\"},\"reachable\":{\"type\":\"boolean\"},\"error\":{\"type\":\"string\"}}}},"
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
	.instructions = "env_info tells the limits and whether Docker answers; failures carry a stable "
			"structuredContent.error.code and say what to do next.",
};
