/*
 * clientcfg.h - what `sandbox-mcp config CLIENT` prints: a ready-made
 * configuration that starts this binary from one MCP client.
 *
 * Paths go through the quoting of the format they land in (sh for the
 * command lines, JSON, TOML), so a path with a space or a quote works.
 */
#ifndef CLIENTCFG_H
#define CLIENTCFG_H

#include <stdio.h>

#include "base/errcode.h"

/* The clients, for messages: "claude-desktop, claude-code, gemini, codex". */
extern const char clientcfg_names[];

/* How the client starts the server. */
struct clientcfg_launch {
	const char *self;      /* this binary's absolute path */
	const char *image;     /* or, when set, `docker run -i --rm` of this server image */
	const char *host_dirs; /* docker: SANDBOX_HOST_DIRS, each folder mounted at its own path */
};

/*
 * Writes the configuration for client that starts the server as how says
 * to f. 0; -ENOENT for an unknown client; -EILSEQ when the format cannot
 * hold a path (JSON and TOML need UTF-8); message in err.
 */
int clientcfg_print(FILE *f, const char *client, const struct clientcfg_launch *how, struct err *err);

/* Writes s as one sh word: single-quoted, each ' spelled '\''. */
void clientcfg_sh_quote(FILE *f, const char *s);

/* Writes s as a TOML basic string ("...", \\ \" and \uXXXX escapes); s must be UTF-8. */
void clientcfg_toml_quote(FILE *f, const char *s);

#endif
