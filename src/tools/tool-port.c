/*
 * tool-port.c - port_forward: a sandbox port on the host's loopback
 * (docs/jobs.md), the services group. The forward itself is forward.c's;
 * the session keeps and ends it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/protover.h"
#include "tools/tools.h"

/*
 * Over HTTP: the signed preview link of port (linksign.h) into out, and as
 * a resource_link a client can open; false on stdio or when previews are off.
 */
static bool preview_link(struct tool_ctx *ctx, struct session *s, unsigned port, struct tool_result *res, char *out,
			 size_t outsz)
{
	if (!linksign_preview_enabled(ctx->svc->links) ||
	    linksign_preview_url(ctx->svc->links, call_principal(ctx->call), s->id, port, (int64_t)time(NULL), out,
				 outsz) < 0)
		return false;
	char name[48];
	snprintf(name, sizeof(name), "preview of port %u", port);
	/* resource_link came with 2025-06-18; older clients have the URL in the text */
	if (protover_structured(ctx->protocol_version))
		json_array_append_new(res->content, json_pack("{s:s, s:s, s:s, s:s}", "type", "resource_link", "uri",
							      out, "name", name, "mimeType", "text/html"));
	return true;
}

static int port_open(struct tool_ctx *ctx, struct session *s, json_t *args, struct tool_result *res)
{
	json_int_t port = json_integer_value(json_object_get(args, "port"));
	json_int_t host_port = json_integer_value(json_object_get(args, "host_port"));
	unsigned got = 0;
	char host[16] = "";
	struct err e;
	err_clear(&e);
	if (port < 1 || port > 65535)
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "open needs port, the sandbox's (1-65535)");
	else if (host_port && host_port < 1024)
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"host_port %lld is privileged: pick one from 1024 to 65535, or omit it for a free one",
			(long long)host_port);
	/* over HTTP a principal is not the host's user: it gets a free port, never one it names */
	else if (host_port && ctx->svc->cfg->http)
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EPERM,
			"host_port is for a server on stdio: over HTTP a forward gets a free port; omit host_port");
	if (e.code ||
	    session_forward_open(ctx->svc->sessions, s, (unsigned)port, (unsigned)host_port, &got, host, &e) < 0)
		return tool_fail(res, &e);
	char url[64], preview[LINKSIGN_BASE_MAX + 256];
	snprintf(url, sizeof(url), "http://%s:%u/", host, got);
	tool_text(res,
		  "Port %lld of session %s is at %s on this machine (a loopback address of its own), until the "
		  "session ends or port_forward {action: \"close\", port: %lld}. It reaches only the sandbox's own "
		  "port, also a server bound to its 127.0.0.1.",
		  (long long)port, s->id, url, (long long)port);
	json_t *out = json_pack("{s:s, s:I, s:s, s:I, s:s}", "session_id", s->id, "port", (json_int_t)port, "host",
				host, "host_port", (json_int_t)got, "url", url);
	if (preview_link(ctx, s, (unsigned)port, res, preview, sizeof(preview))) {
		tool_text(res, "In a browser: %s (a preview link, valid for %llu s; list gives a fresh one).", preview,
			  (unsigned long long)ctx->svc->links->ttl_s);
		json_object_set_new(out, "preview_url", json_string(preview));
	}
	tool_structured(res, out);
	return 0;
}

static int port_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *action = json_string_value(json_object_get(args, "action"));
	struct session *s;
	struct err e;
	err_clear(&e);
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int r = 0;
	if (action && strcmp(action, "open") == 0) {
		r = port_open(ctx, s, args, res);
	} else if (action && strcmp(action, "close") == 0) {
		json_int_t port = json_integer_value(json_object_get(args, "port"));
		if (port < 1 || port > 65535 || session_forward_close(ctx->svc->sessions, s, (unsigned)port) < 0) {
			err_set(&e, ERRCODE_INVALID_ARGUMENT, -ENOENT,
				"port %lld of session %s is not forwarded (port_forward {action: \"list\"} shows them)",
				(long long)port, s->id);
			r = tool_fail(res, &e);
		} else {
			tool_text(res, "Port %lld of session %s is no longer forwarded.", (long long)port, s->id);
			tool_structured(res, json_pack("{s:s, s:I, s:b}", "session_id", s->id, "port", (json_int_t)port,
						       "closed", 1));
		}
	} else {
		json_t *list = session_forwards_json(ctx->svc->sessions, s);
		size_t i;
		json_t *f;
		json_array_foreach (list, i, f) {
			char preview[LINKSIGN_BASE_MAX + 256];
			unsigned port = (unsigned)json_integer_value(json_object_get(f, "port"));
			tool_text(res, "port %u -> %s:%lld  connections %lld  accepted %lld", port,
				  json_string_value(json_object_get(f, "host")),
				  (long long)json_integer_value(json_object_get(f, "host_port")),
				  (long long)json_integer_value(json_object_get(f, "connections")),
				  (long long)json_integer_value(json_object_get(f, "accepted")));
			if (preview_link(ctx, s, port, res, preview, sizeof(preview))) {
				tool_text(res, "  preview: %s", preview);
				json_object_set_new(f, "preview_url", json_string(preview));
			}
		}
		if (!json_array_size(list))
			tool_text(res, "Session %s forwards no ports; port_forward {action: \"open\", port: N} does.",
				  s->id);
		tool_structured(res, json_pack("{s:s, s:o}", "session_id", s->id, "forwards", list));
	}
	session_put(ctx->svc->sessions, s);
	return r;
}

const struct tool_entry tool_port_forward_entry = {
	.name = "port_forward",
	.title = "Forward a sandbox port to the host",
	.description = "Make a port of the sandbox (a dev server, an API, a notebook) reachable at "
		       "127.0.0.1:<host_port> on the machine the server runs on, through the sandbox's agent: works "
		       "without network and for servers bound to the sandbox's 127.0.0.1. open (port; host_port "
		       "optional), close (port), list (default). Forwards end with the session. Over HTTP, also a "
		       "signed preview link (preview_url) a browser opens, WebSockets included.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"action\":{\"type\":\"string\",\"enum\":[\"open\",\"close\",\"list\"],\"description\":\"open, close "
		"or list (default)\"},"
		"\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,\"description\":\"open, close: the "
		"port in the sandbox (from 1 to 65535)\"},"
		"\"host_port\":{\"type\":\"integer\",\"minimum\":1024,\"maximum\":65535,\"description\":\"open: the "
		"port on the host's 127.0.0.1 (default: a free one; from 1024 to 65535)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"port\":{\"type\":\"integer\"},\"host\":{\"type\":\"string\"},"
		"\"host_port\":{\"type\":\"integer\"},\"url\":{\"type\":\"string\"},\"preview_url\":{\"type\":\"string\"},"
		"\"closed\":{\"type\":\"boolean\"},\"forwards\":{\"type\":\"array\",\"items\":{\"type\":"
		"\"object\",\"properties\":{\"port\":{\"type\":\"integer\"},\"host_port\":{\"type\":\"integer\"},"
		"\"connections\":{\"type\":\"integer\"},\"accepted\":{\"type\":\"integer\"},"
		"\"preview_url\":{\"type\":\"string\"}}}}}}",
	.group = TOOL_GROUP_SERVICES,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = port_tool,
};
