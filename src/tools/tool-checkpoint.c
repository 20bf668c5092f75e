/*
 * tool-checkpoint.c - the save-point tools (docs/checkpoints.md):
 * session_checkpoint (create, list, delete, rollback), session_fork and
 * session_pause, the SANDBOX_TOOLS group "savepoints".
 *
 * Every result that restores something says what was not restored: the
 * processes and run_python's variables, with the cells that made them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sandbox/pyrepl.h"
#include "sandbox/savepoint.h"
#include "tools/tools.h"

/* What a checkpoint never holds, said wherever one is made or used. */
#define CHECKPOINT_KEEPS                                                                                    \
	"A checkpoint keeps the files (workspace and installed packages), env and settings; never running " \
	"processes nor run_python's variables."

static json_t *checkpoint_json(const struct checkpoint *c)
{
	return json_pack("{s:s, s:s*, s:s, s:s*, s:s*, s:s, s:I, s:I, s:I, s:s}", "checkpoint_id", c->id, "name",
			 c->name[0] ? c->name : NULL, "session_id", c->session, "session_name",
			 c->session_name[0] ? c->session_name : NULL, "parent", c->parent[0] ? c->parent : NULL, "kind",
			 checkpoint_kind_name(c->kind), "created", (json_int_t)c->created, "size", (json_int_t)c->size,
			 "cells", (json_int_t)c->cells, "engine", c->engine_name);
}

/* "cells 1-N" of what was lost, or "" when no cell had run. */
static void lost_python(struct tool_result *res, unsigned cells, const char *how)
{
	if (cells == 1)
		tool_text(res, "run_python's variables are %s: cell 1 defined them; run what you need again.", how);
	else if (cells > 1)
		tool_text(res, "run_python's variables are %s: cells 1-%u defined them; run what you need again.", how,
			  cells);
}

static int action_create(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *name = json_string_value(json_object_get(args, "name"));
	struct checkpoint c;
	struct session *s;
	struct err e;
	err_clear(&e);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int64_t t0 = now_ms();
	int r = savepoint_checkpoint(ctx->svc->sessions, ctx->call, s, name, CHECKPOINT_MANUAL, &c, &e);
	if (r < 0) {
		tool_session_gone(ctx, s, r, &e);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	int64_t ms = now_ms() - t0;
	tool_text(res,
		  "Checkpoint %s%s%s%s of session %s (%.1f MB added, %lld ms). session_checkpoint {action: \"rollback\", "
		  "checkpoint: \"%s\"} goes back to it; session_fork {checkpoint: \"%s\"} makes new sessions from it. %s",
		  c.id, c.name[0] ? " (\"" : "", c.name, c.name[0] ? "\")" : "", s->id, (double)c.size / 1e6,
		  (long long)ms, c.id, c.id, CHECKPOINT_KEEPS);
	json_t *j = checkpoint_json(&c);
	json_object_set_new(j, "ms", json_integer(ms));
	tool_structured(res, j);
	checkpoint_finish(&c);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int action_list(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	json_t *list, *c;
	size_t i;
	struct err e;
	err_clear(&e);
	if (savepoint_list(ctx->svc->sessions, ctx->call, NULL, &list, &e) < 0)
		return tool_fail(res, &e);
	if (!json_array_size(list))
		tool_text(res, "No checkpoints. session_checkpoint {action: \"create\"} makes one of a session.");
	json_array_foreach (list, i, c) {
		const char *name = json_string_value(json_object_get(c, "name"));
		const char *parent = json_string_value(json_object_get(c, "parent"));
		char when[32];
		struct tm tm;
		time_t t = (time_t)json_integer_value(json_object_get(c, "created"));
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", gmtime_r(&t, &tm));
		tool_text(res, "%s%s%s%s  of session %s  %s UTC  %.1f MB  %s%s%s  forks/rollbacks: %zu",
			  json_string_value(json_object_get(c, "checkpoint_id")), name ? " (" : "", name ? name : "",
			  name ? ")" : "", json_string_value(json_object_get(c, "session_id")), when,
			  (double)json_integer_value(json_object_get(c, "size")) / 1e6,
			  json_string_value(json_object_get(c, "kind")), parent ? "  parent " : "",
			  parent ? parent : "", json_array_size(json_object_get(c, "sessions")));
	}
	tool_structured(res, json_pack("{s:o}", "checkpoints", list));
	return 0;
}

static int action_delete(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *ref = json_string_value(json_object_get(args, "checkpoint"));
	struct checkpoint c;
	struct err e;
	err_clear(&e);
	if (!ref) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"delete needs checkpoint: its id or name (session_checkpoint {action: \"list\"} shows them)");
		return tool_fail(res, &e);
	}
	if (savepoint_delete(ctx->svc->sessions, ctx->call, ref, &c, &e) < 0)
		return tool_fail(res, &e);
	tool_text(res,
		  "Checkpoint %s deleted. Sessions made from it keep running; its disk is freed when the last of "
		  "them closes.",
		  c.id);
	tool_structured(res, json_pack("{s:s, s:b}", "checkpoint_id", c.id, "deleted", 1));
	checkpoint_finish(&c);
	return 0;
}

static int action_rollback(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *ref = json_string_value(json_object_get(args, "checkpoint"));
	struct checkpoint c;
	struct session *s;
	unsigned cells = 0;
	struct err e;
	err_clear(&e);
	if (!ref) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"rollback needs checkpoint: its id or name (session_checkpoint {action: \"list\"} shows them)");
		return tool_fail(res, &e);
	}
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int64_t t0 = now_ms();
	int r = savepoint_rollback(ctx->svc->sessions, ctx->call, s, ref, &c, &cells, &e);
	if (r < 0) {
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	int64_t ms = now_ms() - t0;
	tool_text(res,
		  "Session %s rolled back to checkpoint %s%s%s%s (%lld ms): its files, packages, env and settings are as "
		  "they were then. Processes it was running ended.",
		  s->id, c.id, c.name[0] ? " (\"" : "", c.name, c.name[0] ? "\")" : "", (long long)ms);
	lost_python(res, cells, "gone (the interpreter starts afresh)");
	json_t *j = checkpoint_json(&c);
	json_object_set_new(j, "rolled_back", json_string(s->id));
	json_object_set_new(j, "cells_lost", json_integer(cells));
	json_object_set_new(j, "ms", json_integer(ms));
	tool_structured(res, j);
	checkpoint_finish(&c);
	session_put(ctx->svc->sessions, s);
	return 0;
}

static int session_checkpoint_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *action = json_string_value(json_object_get(args, "action"));
	if (!action || strcmp(action, "create") == 0)
		return action_create(ctx, args, res);
	if (strcmp(action, "list") == 0)
		return action_list(ctx, args, res);
	if (strcmp(action, "delete") == 0)
		return action_delete(ctx, args, res);
	return action_rollback(ctx, args, res); /* the schema allows nothing else */
}

/* A rollback ends the command running on its session instead of waiting behind it. */
static bool checkpoint_preempts(json_t *args)
{
	const char *action = json_string_value(json_object_get(args, "action"));
	return action && strcmp(action, "rollback") == 0;
}

static int session_fork_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *ref = json_string_value(json_object_get(args, "checkpoint"));
	const char *name = json_string_value(json_object_get(args, "name"));
	json_t *jc = json_object_get(args, "count");
	json_int_t count = jc ? json_integer_value(jc) : 1;
	struct session *s = NULL, **made = NULL;
	struct checkpoint c;
	struct err e;
	err_clear(&e);
	if (count < 1 || (uint64_t)count > ctx->svc->cfg->max_forks) {
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -ERANGE, "count must be 1 to %llu (SANDBOX_MAX_FORKS), not %lld",
			(unsigned long long)ctx->svc->cfg->max_forks, (long long)count);
		return tool_fail(res, &e);
	}
	if (!ref && tool_session(ctx, args, &s, res) < 0)
		return 0;
	int64_t t0 = now_ms();
	int r = savepoint_fork(ctx->svc->sessions, ctx->call, s, ref, (unsigned)count, name, &made, &c, &e);
	if (s)
		session_put(ctx->svc->sessions, s);
	if (r < 0)
		return tool_fail(res, &e);
	int64_t ms = now_ms() - t0;
	json_t *list = json_array();
	tool_text(res, "%lld new session%s from checkpoint %s%s (%lld ms), each independent of the others:",
		  (long long)count, count == 1 ? "" : "s", c.id, ref ? "" : " (made of the session now)",
		  (long long)ms);
	for (json_int_t i = 0; i < count; i++) {
		tool_text(res, "%s (\"%s\")", made[i]->id, made[i]->name);
		json_array_append_new(list, session_json(made[i]));
		session_put(ctx->svc->sessions, made[i]);
	}
	free(made);
	tool_text(res, "Pass a session_id to the other tools to work in one. %s", CHECKPOINT_KEEPS);
	lost_python(res, c.cells, "not in the new sessions");
	tool_structured(res,
			json_pack("{s:o, s:s, s:I}", "sessions", list, "checkpoint_id", c.id, "ms", (json_int_t)ms));
	checkpoint_finish(&c);
	return 0;
}

static int session_pause_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *action = json_string_value(json_object_get(args, "action"));
	bool resume = action && strcmp(action, "resume") == 0;
	struct session *s;
	struct err e;
	err_clear(&e);
	/* tool_session resumes a paused session, as for every call: a resume has nothing left to do */
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int r = resume ? 0 : savepoint_pause(ctx->svc->sessions, ctx->call, s, &e);
	if (r < 0) {
		tool_session_gone(ctx, s, r, &e);
		session_put(ctx->svc->sessions, s);
		return tool_fail(res, &e);
	}
	if (resume)
		tool_text(res, "Session %s is running.", s->id);
	else
		tool_text(res,
			  "Session %s is paused: its processes are frozen (memory kept, no CPU) and the idle timeout "
			  "does not close it. Any call on it resumes it.",
			  s->id);
	tool_structured(res, json_pack("{s:s, s:b}", "session_id", s->id, "paused", !resume));
	session_put(ctx->svc->sessions, s);
	return 0;
}

const struct tool_entry tool_session_checkpoint_entry = {
	.name = "session_checkpoint",
	.title = "Checkpoint a session, or roll it back",
	.description =
		"Save points of a session. create (default): checkpoint its files, installed packages, env and "
		"settings, optionally named. list: your checkpoints, with parent, size and the sessions made from "
		"each. delete: remove one. rollback: put the session back to one of its checkpoints (same id and "
		"name; running commands end; run_python's variables are lost). session_export {checkpoint} writes "
		"a Dockerfile of one.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"action\":{\"type\":\"string\",\"enum\":[\"create\",\"list\",\"delete\",\"rollback\"],"
		"\"description\":\"create (default), list, delete or rollback\"},"
		"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,\"description\":\"create: a name for "
		"the checkpoint, unique in the session (letters, digits, '-', '_', '.'; at most 63 characters)\"},"
		"\"checkpoint\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,\"description\":\"delete, "
		"rollback: the checkpoint's id or name (at most 63 characters)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"checkpoint_id\":{\"type\":\"string\"},"
		"\"name\":{\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},\"parent\":{\"type\":\"string\"},"
		"\"kind\":{\"type\":\"string\"},\"created\":{\"type\":\"integer\"},\"size\":{\"type\":\"integer\"},"
		"\"cells\":{\"type\":\"integer\"},\"cells_lost\":{\"type\":\"integer\"},\"ms\":{\"type\":\"integer\"},"
		"\"rolled_back\":{\"type\":\"string\"},\"deleted\":{\"type\":\"boolean\"},"
		"\"checkpoints\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"checkpoint_id\":{\"type\":\"string\"},\"name\":{\"type\":\"string\"},"
		"\"session_id\":{\"type\":\"string\"},\"parent\":{\"type\":\"string\"},"
		"\"kind\":{\"type\":\"string\"},\"created\":{\"type\":\"integer\"},"
		"\"size\":{\"type\":\"integer\"},\"sessions\":{\"type\":\"array\",\"items\":{"
		"\"type\":\"string\"}}}}}}}",
	.group = TOOL_GROUP_SAVEPOINTS,
	.read_only = false,
	.destructive = true,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.preempts = checkpoint_preempts,
	.handler = session_checkpoint_tool,
	.instructions = "session_checkpoint saves a session before something risky and rolls it back after; "
			"session_fork makes several sessions from one state to try ideas side by side.",
};

const struct tool_entry tool_session_fork_entry = {
	.name = "session_fork",
	.title = "Fork sessions from a checkpoint",
	.description = "Make count new independent sessions (named <name>-1, <name>-2, ...) from a checkpoint, or "
		       "from the session as it is now (checkpointed first). All are made or none; they count "
		       "against the session limit. Each starts with a fresh run_python interpreter.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"checkpoint\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":63,\"description\":\"The "
		"checkpoint's id or name (default: the session now; at most 63 characters)\"},"
		"\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":256,\"description\":\"Sessions to make "
		"(default 1; at most SANDBOX_MAX_FORKS, 16 unless the operator says otherwise, and at most 256)\"},"
		"\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":60,\"description\":\"Base of the new "
		"sessions' names (default: the session's name, else the checkpoint's id; at most 60 characters)\"}," TOOL_SESSION_ARG
		"}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"sessions\":{\"type\":\"array\",\"items\":{"
			 "\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"name\":{\"type\":\"string\"}}}},\"checkpoint_id\":{\"type\":\"string\"},"
			 "\"ms\":{\"type\":\"integer\"}}}",
	.group = TOOL_GROUP_SAVEPOINTS,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = session_fork_tool,
};

const struct tool_entry tool_session_pause_entry = {
	.name = "session_pause",
	.title = "Pause or resume a session",
	.description = "pause (default): freeze the session's processes (memory kept, no CPU); the idle timeout "
		       "does not close a paused session. Any later call on it, or resume, continues it.",
	.input_schema = "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
			"\"action\":{\"type\":\"string\",\"enum\":[\"pause\",\"resume\"],\"description\":\"pause "
			"(default) or resume\"}," TOOL_SESSION_ARG "}}",
	.output_schema = "{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
			 "\"paused\":{\"type\":\"boolean\"}}}",
	.group = TOOL_GROUP_SAVEPOINTS,
	.read_only = false,
	.destructive = false,
	.idempotent = true,
	.open_world = false,
	.per_session = true,
	.handler = session_pause_tool,
};
