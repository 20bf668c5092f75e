/*
 * resources.h - MCP resources: the files in the workspaces of live sessions,
 * named sandbox://{session_id}/{path} (path absolute, without its leading
 * '/', percent-encoded; a session name works in place of the id), listed page by page and read with the same tar pull
 * as file_read.
 *
 * Listing and reading wait on Docker, so mcp.c runs them on a worker, like
 * tools/call.  They never create a session (the default one included) and
 * report failures as JSON-RPC errors: *ret_code and err->msg.
 */
#ifndef RESOURCES_H
#define RESOURCES_H

#include <stdbool.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "tools/tools.h"

/* Longest session reference in a URI: an id or a name. */
#define RESOURCES_SESSION_REF_MAX SESSION_NAME_MAX

/* Resources per resources/list page. */
#define RESOURCES_PAGE 100
/* Files listed per session at most (the newest first past that). */
#define RESOURCES_PER_SESSION_MAX 1000

/* The resourceTemplates array (new reference). */
json_t *resources_templates_json(void);

/*
 * resources/list with params (cursor). 0 with *ret (the result object), or
 * -1 with *ret_code (a JSON-RPC error code) and err->msg.
 */
int resources_list(const struct tool_services *svc, struct call *call, json_t *params, json_t **ret, int *ret_code,
		   struct err *err);

/*
 * resources/read with params (uri). not_found_code: the "resource not
 * found" code of the protocol in use. 0 with *ret, or -1 with *ret_code and
 * err->msg.
 */
int resources_read(const struct tool_services *svc, struct call *call, json_t *params, int not_found_code, json_t **ret,
		   int *ret_code, struct err *err);

/* The session id a resources/read of params names (for its queue), or NULL. uri must outlive the result. */
bool resources_uri_session(json_t *params, char *out, size_t outsz);

#endif
