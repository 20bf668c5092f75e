/*
 * clientcfg.c - ready-made client configuration (see clientcfg.h).
 *
 * Claude Code and Gemini CLI get the user scope: the server is then there in
 * every project, which is what "add this server" means to most people; the
 * comment line says how to narrow it. Codex gets a longer tool timeout than
 * its 60 s default, which a run_command at its own 60 s default would hit.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clientcfg.h"

/* Codex's tool_timeout_sec: room for a long run_command or pip_install. */
#define CLIENTCFG_CODEX_TOOL_TIMEOUT_S 600

const char clientcfg_names[] = "claude-desktop, claude-code, gemini, codex";

static int print_json(FILE *f, const char *self, struct err *err);
static int print_claude_code(FILE *f, const char *self, struct err *err);
static int print_codex(FILE *f, const char *self, struct err *err);

static const struct {
	const char *name;
	int (*print)(FILE *f, const char *self, struct err *err);
} clients[] = {
	{ "claude-desktop", print_json },
	{ "claude-code", print_claude_code },
	{ "gemini", print_json },
	{ "codex", print_codex },
};

void clientcfg_sh_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

void clientcfg_toml_quote(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04X", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* -EILSEQ unless self is UTF-8 (jansson's check: it refuses anything else). */
static int need_utf8(const char *self, struct err *err)
{
	json_t *j = json_string(self);
	if (j) {
		json_decref(j);
		return 0;
	}
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -EILSEQ,
		       "this binary's path is not valid UTF-8, which the client's configuration file needs: "
		       "move or link the binary to a UTF-8 path");
}

/* Claude Desktop's claude_desktop_config.json and Gemini CLI's settings.json: one mcpServers entry. */
static int print_json(FILE *f, const char *self, struct err *err)
{
	int r = need_utf8(self, err);
	if (r < 0)
		return r;
	json_t *j = json_pack("{s:{s:{s:s, s:[], s:{}}}}", "mcpServers", "sandbox", "command", self, "args", "env");
	char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	json_decref(j);
	if (!s)
		return err_set(err, ERRCODE_INTERNAL, -ENOMEM, "cannot build the JSON entry");
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

static int print_claude_code(FILE *f, const char *self, struct err *err)
{
	(void)err;
	fputs("# for all your projects; `-s local` instead adds it to this project only\n"
	      "claude mcp add -s user sandbox -- ",
	      f);
	clientcfg_sh_quote(f, self);
	fputc('\n', f);
	return 0;
}

/* A table for ~/.codex/config.toml. */
static int print_codex(FILE *f, const char *self, struct err *err)
{
	int r = need_utf8(self, err);
	if (r < 0)
		return r;
	fputs("# add to ~/.codex/config.toml\n[mcp_servers.sandbox]\ncommand = ", f);
	clientcfg_toml_quote(f, self);
	fprintf(f, "\nargs = []\n# Codex gives up on a tool call after 60 s by default\ntool_timeout_sec = %d\n",
		CLIENTCFG_CODEX_TOOL_TIMEOUT_S);
	return 0;
}

int clientcfg_print(FILE *f, const char *client, const char *self, struct err *err)
{
	for (size_t i = 0; i < ARRAY_SIZE(clients); i++)
		if (strcmp(client, clients[i].name) == 0)
			return clients[i].print(f, self, err);
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT, "config: unknown client '%.100s' (clients: %s)", client,
		       clientcfg_names);
}
