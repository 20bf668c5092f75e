/*
 * clientcfg.c - ready-made client configuration (see clientcfg.h).
 *
 * Claude Code and Gemini CLI get the user scope: the server is then there in
 * every project, which is what "add this server" means to most people; the
 * comment line says how to narrow it. Codex gets a longer tool timeout than
 * its 60 s default, which a run_command at its own 60 s default would hit.
 *
 * Each prints a launch: this binary, or (`config CLIENT docker`) `docker
 * run -i --rm` of the server image with the engine's socket and each host
 * folder mounted at the same path, so a path in a call means the same on
 * both sides.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clientcfg.h"

/* Codex's tool_timeout_sec: room for a long run_command or pip_install. */
#define CLIENTCFG_CODEX_TOOL_TIMEOUT_S 600
/* Arguments of a docker launch at most: 6 fixed, 2 per host folder, 2 for SANDBOX_HOST_DIRS. */
#define CLIENTCFG_ARGS_MAX 48

const char clientcfg_names[] = "claude-desktop, claude-code, gemini, codex";

/* What the client runs: command and its arguments. */
struct launch {
	const char *command;
	const char *args[CLIENTCFG_ARGS_MAX];
	size_t n;
	char *owned[CLIENTCFG_ARGS_MAX]; /* the strings made here, freed by launch_finish */
	size_t nowned;
};

static int print_json(FILE *f, const struct launch *l, struct err *err);
static int print_claude_code(FILE *f, const struct launch *l, struct err *err);
static int print_codex(FILE *f, const struct launch *l, struct err *err);

static const struct {
	const char *name;
	int (*print)(FILE *f, const struct launch *l, struct err *err);
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

/* -EILSEQ unless every word of l is UTF-8 (jansson's check: it refuses anything else). */
static int need_utf8(const struct launch *l, struct err *err)
{
	for (size_t i = 0; i <= l->n; i++) {
		json_t *j = json_string(i == 0 ? l->command : l->args[i - 1]);
		if (!j)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EILSEQ,
				       "a path in the launch is not valid UTF-8, which the client's configuration file "
				       "needs: move or link it to a UTF-8 path");
		json_decref(j);
	}
	return 0;
}

/* Claude Desktop's claude_desktop_config.json and Gemini CLI's settings.json: one mcpServers entry. */
static int print_json(FILE *f, const struct launch *l, struct err *err)
{
	int r = need_utf8(l, err);
	if (r < 0)
		return r;
	json_t *args = json_array();
	for (size_t i = 0; i < l->n; i++)
		json_array_append_new(args, json_string(l->args[i]));
	json_t *j = json_pack("{s:{s:{s:s, s:o, s:{}}}}", "mcpServers", "sandbox", "command", l->command, "args", args,
			      "env");
	char *s = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	json_decref(j);
	if (!s)
		return err_set(err, ERRCODE_INTERNAL, -ENOMEM, "cannot build the JSON entry");
	fprintf(f, "%s\n", s);
	free(s);
	return 0;
}

static int print_claude_code(FILE *f, const struct launch *l, struct err *err)
{
	(void)err;
	fputs("# for all your projects; `-s local` instead adds it to this project only\n"
	      "claude mcp add -s user sandbox -- ",
	      f);
	clientcfg_sh_quote(f, l->command);
	for (size_t i = 0; i < l->n; i++) {
		fputc(' ', f);
		clientcfg_sh_quote(f, l->args[i]);
	}
	fputc('\n', f);
	return 0;
}

/* A table for ~/.codex/config.toml. */
static int print_codex(FILE *f, const struct launch *l, struct err *err)
{
	int r = need_utf8(l, err);
	if (r < 0)
		return r;
	fputs("# add to ~/.codex/config.toml\n[mcp_servers.sandbox]\ncommand = ", f);
	clientcfg_toml_quote(f, l->command);
	fputs("\nargs = [", f);
	for (size_t i = 0; i < l->n; i++) {
		fputs(i ? ", " : "", f);
		clientcfg_toml_quote(f, l->args[i]);
	}
	fprintf(f, "]\n# Codex gives up on a tool call after 60 s by default\ntool_timeout_sec = %d\n",
		CLIENTCFG_CODEX_TOOL_TIMEOUT_S);
	return 0;
}

/* Adds a word to l (made here: l frees it). */
static void launch_own(struct launch *l, char *s)
{
	l->owned[l->nowned++] = s;
	l->args[l->n++] = s;
}

/*
 * docker run -i --rm of image: the engine's socket, and each folder of
 * host_dirs (':'-separated) at its own path, named again in
 * SANDBOX_HOST_DIRS. -E2BIG past CLIENTCFG_ARGS_MAX.
 */
static int launch_docker(struct launch *l, const char *image, const char *host_dirs, struct err *err)
{
	static const char *const fixed[] = { "run", "-i", "--rm", "-v", "/var/run/docker.sock:/var/run/docker.sock" };
	l->command = "docker";
	for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
		l->args[l->n++] = fixed[i];
	for (const char *p = host_dirs ? host_dirs : ""; *p;) {
		size_t k = strcspn(p, ":");
		if (k) {
			if (l->n + 5 > CLIENTCFG_ARGS_MAX)
				return err_set(err, ERRCODE_INVALID_ARGUMENT, -E2BIG,
					       "too many SANDBOX_HOST_DIRS folders for one docker launch (%d words)",
					       CLIENTCFG_ARGS_MAX);
			char *v = NULL;
			if (asprintf(&v, "%.*s:%.*s", (int)k, p, (int)k, p) < 0)
				return err_set(err, ERRCODE_INTERNAL, -ENOMEM, "out of memory");
			l->args[l->n++] = "-v";
			launch_own(l, v);
		}
		p += k + (p[k] == ':');
	}
	if (host_dirs && host_dirs[0]) {
		char *e = NULL;
		if (asprintf(&e, "SANDBOX_HOST_DIRS=%s", host_dirs) < 0)
			return err_set(err, ERRCODE_INTERNAL, -ENOMEM, "out of memory");
		l->args[l->n++] = "-e";
		launch_own(l, e);
	}
	l->args[l->n++] = image;
	return 0;
}

int clientcfg_print(FILE *f, const char *client, const struct clientcfg_launch *how, struct err *err)
{
	struct launch l = { .command = how->self };
	int r = how->image ? launch_docker(&l, how->image, how->host_dirs, err) : 0;
	if (r == 0) {
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT, "config: unknown client '%.100s' (clients: %s)",
			    client, clientcfg_names);
		for (size_t i = 0; i < ARRAY_SIZE(clients); i++)
			if (strcmp(client, clients[i].name) == 0) {
				err_clear(err);
				r = clients[i].print(f, &l, err);
			}
	}
	for (size_t i = 0; i < l.nowned; i++)
		free(l.owned[i]);
	return r;
}
