/*
 * protover.h - the MCP protocol versions this server speaks, and what a
 * version brings that the server's answers depend on. One table, so that the
 * HTTP transport's header check, initialize's choice and the shapes of tool
 * results agree on what a version is.
 */
#ifndef PROTOVER_H
#define PROTOVER_H

#include <stdbool.h>
#include <stddef.h>

/* The stateless protocol (each request names it in params._meta). */
#define PROTOVER_MODERN "2026-07-28"
/* The newest one initialize negotiates, and the answer to a version it does not know. */
#define PROTOVER_LEGACY_NEWEST "2025-11-25"

/* The versions initialize negotiates, newest first (PROTOVER_MODERN is not one): *ret_n of them. */
const char *const *protover_legacy(size_t *ret_n);
/* The table's own string for v if initialize negotiates it, else NULL. */
const char *protover_legacy_find(const char *v);
/* Whether v is any version this server speaks (an MCP-Protocol-Version header's check). */
bool protover_known(const char *v);
/*
 * Whether v has what 2025-06-18 brought: structuredContent, outputSchema,
 * titles and resource_link content. Older clients get the text alone.
 */
bool protover_structured(const char *v);

#endif
