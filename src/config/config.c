/*
 * config.c - defaults, SANDBOX_* variables and --flags, from one table.
 *
 * Each row names a setting once; its variable is SANDBOX_<NAME> and its flag
 * --<name> with '_' spelled '-'.  DOCKER_HOST is read as the docker CLI reads
 * it, so it is the one row without the prefix.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "buildconf.h"
#include "config/config.h"
#include "config/dockerctx.h"
#include "config/imageref.h"

enum opt_type { OPT_STRING, OPT_U64, OPT_DOUBLE, OPT_SWITCH /* bool; a flag without a value means true */ };

struct opt {
	const char *name; /* setting name; env SANDBOX_NAME, flag --name */
	const char *env;  /* explicit variable name, or NULL for SANDBOX_<NAME> */
	enum opt_type type;
	size_t offset;
	uint64_t min, max; /* for OPT_U64 */
	const char *help;
};

#define OFF(f) offsetof(struct config, f)

static const struct opt opts[] = {
	{ "docker_host", "DOCKER_HOST", OPT_STRING, OFF(docker_host), 0, 0,
	  "Engine endpoint: unix:///path, tcp://host:port (TLS with --tlsverify) or ssh://[user@]host[:port] (default unix://" SANDBOX_DEFAULT_DOCKER_SOCKET
	  ")" },
	{ "tlsverify", "DOCKER_TLS_VERIFY", OPT_SWITCH, OFF(tls_verify), 0, 0,
	  "TLS to a tcp:// engine, verifying its certificate (DOCKER_TLS_VERIFY: any non-empty value)" },
	{ "cert_path", "DOCKER_CERT_PATH", OPT_STRING, OFF(cert_path), 0, 0,
	  "Directory of ca.pem, cert.pem, key.pem for TLS (default $DOCKER_CONFIG, else ~/.docker)" },
	{ "tlscacert", NULL, OPT_STRING, OFF(tlscacert), 0, 0,
	  "CA the engine's certificate must chain to (docker's --tlscacert)" },
	{ "tlscert", NULL, OPT_STRING, OFF(tlscert), 0, 0,
	  "Client certificate for TLS to the engine (docker's --tlscert; not --tls-cert)" },
	{ "tlskey", NULL, OPT_STRING, OFF(tlskey), 0, 0,
	  "Client key for TLS to the engine (docker's --tlskey; not --tls-key)" },
	{ "context", "DOCKER_CONTEXT", OPT_STRING, OFF(context), 0, 0,
	  "Docker context (docker context ls); DOCKER_HOST wins over DOCKER_CONTEXT, as for the CLI" },
	{ "engine", "SANDBOX_ENGINES", OPT_STRING, OFF(engines), 0, 0,
	  "More engines, NAME=ENDPOINT (repeat the flag; the variable: 'a=...;b=...'), ENDPOINT as DOCKER_HOST or "
	  "context:NAME; session_create picks one by NAME (DOCKER_HOST's is 'default')" },
	{ "image", NULL, OPT_STRING, OFF(image), 0, 0, "Image for sessions created without one" },
	{ "memory_mb", NULL, OPT_U64, OFF(memory_mb), 16, 1048576, "Memory limit per session, MB" },
	{ "cpus", NULL, OPT_DOUBLE, OFF(cpus), 0, 0, "CPU limit per session (0.01 to 256)" },
	{ "pids", NULL, OPT_U64, OFF(pids), 16, 1000000, "Process limit per session (sessions cannot ask for more)" },
	{ "max_memory_mb", NULL, OPT_U64, OFF(max_memory_mb), 16, 1048576,
	  "Most memory_mb a session may ask for, MB (default: SANDBOX_MEMORY_MB)" },
	{ "max_cpus", NULL, OPT_DOUBLE, OFF(max_cpus), 0, 0,
	  "Most cpus a session may ask for (default: SANDBOX_CPUS)" },
	{ "workspace_mb", NULL, OPT_U64, OFF(workspace_mb), 0, 1048576,
	  "Disk a session may write, MB, where the engine can enforce it; also the largest file (0: no limit)" },
	{ "output_save_mb", NULL, OPT_U64, OFF(output_save_mb), 1, 1024,
	  "Output of one call saved in the workspace per stream, MB; the rest is cut" },
	{ "timeout_s", NULL, OPT_U64, OFF(timeout_s), 1, 86400, "Default timeout of one command or Python run, s" },
	{ "idle_ttl_s", NULL, OPT_U64, OFF(idle_ttl_s), 0, 31536000,
	  "Close a non-persistent session idle this long, s (0: never)" },
	{ "max_sessions", NULL, OPT_U64, OFF(max_sessions), 1, 1000, "Live sessions at most" },
	{ "max_sessions_total", NULL, OPT_U64, OFF(max_sessions_total), 0, 100000,
	  "Live sessions at most for the whole server, all principals together (0: no limit beyond max_sessions each)" },
	{ "pool_size", NULL, OPT_U64, OFF(pool_size), 0, 16,
	  "Containers of the default settings kept started ahead for session_create (0: none; at most 16)" },
	{ "max_upload_mb", NULL, OPT_U64, OFF(max_upload_mb), 1, 65536, "Largest file moved in or out, MB" },
	{ "output_bytes", NULL, OPT_U64, OFF(output_bytes), 1024, 64u << 20,
	  "Output kept per stream in a result, bytes (head and tail)" },
	{ "max_code_bytes", NULL, OPT_U64, OFF(max_code_bytes), 1, 64u << 20, "Largest code or command, bytes" },
	{ "max_line_bytes", NULL, OPT_U64, OFF(max_line_bytes), 4096, 1u << 30,
	  "Longest JSON-RPC line accepted on stdin, bytes" },
	{ "engine_timeout_s", NULL, OPT_U64, OFF(engine_timeout_s), 1, 3600,
	  "Timeout for one Docker Engine API call, s" },
	{ "max_layers", NULL, OPT_U64, OFF(max_layers), 1, 125,
	  "Layers a session_commit image may have; past it the commit is flattened to one layer" },
	{ "session_checkpoints", NULL, OPT_U64, OFF(session_checkpoints), 1, 1000,
	  "Checkpoints of one session at most (session_checkpoint)" },
	{ "max_checkpoints", NULL, OPT_U64, OFF(max_checkpoints), 1, 100000,
	  "Checkpoints one principal holds at most, all sessions together" },
	{ "checkpoint_mb", NULL, OPT_U64, OFF(checkpoint_mb), 1, 1u << 30,
	  "Disk one principal's checkpoints may add up to, MB (what each adds to the image below it)" },
	{ "max_forks", NULL, OPT_U64, OFF(max_forks), 1, 256, "Sessions one session_fork makes at most" },
	{ "idle_snapshot", NULL, OPT_U64, OFF(idle_snapshot), 0, 1,
	  "1: checkpoint a session before the idle TTL closes it; naming it later brings it back (default 0)" },
	{ "paused_ttl_s", NULL, OPT_U64, OFF(paused_ttl_s), 0, 31536000,
	  "Close a session paused this long, s (0: a paused session is never closed for idleness)" },
	{ "workspace", NULL, OPT_STRING, OFF(workspace), 0, 0, "Workspace directory inside sandboxes" },
	{ "host_dirs", NULL, OPT_STRING, OFF(host_dirs), 0, 0,
	  "Host directories files may move to and from, ':'-separated (default: none)" },
	{ "tools", NULL, OPT_STRING, OFF(tools), 0, 0,
	  "Tool groups to offer, ','-separated: session,run,files,pip,git,env,egress,savepoints,services (default: all)" },
	{ "outbox", NULL, OPT_STRING, OFF(outbox), 0, 0, "Host directory new artifacts are also copied to" },
	{ "runtime", NULL, OPT_STRING, OFF(runtime), 0, 0, "OCI runtime for sessions (e.g. runsc)" },
	{ "commit_repos", NULL, OPT_STRING, OFF(commit_repos), 0, 0,
	  "Repositories session_commit/session_export may tag, ','-separated, trailing * = any rest (default " CONFIG_COMMIT_REPOS_DEFAULT
	  ")" },
	{ "networks", NULL, OPT_STRING, OFF(networks), 0, 0,
	  "Docker networks session_create may join, ','-separated (default: none; host and container: never)" },
	{ "egress_allow", NULL, OPT_STRING, OFF(egress_allow), 0, 0,
	  "Egress rules a session may ask for, ','-separated HOST[:PORT/PORT][ METHOD/METHOD], '*.' for names below "
	  "('*': any name); default: the hosts of every preset; 'none': no egress" },
	{ "egress_presets", NULL, OPT_STRING, OFF(egress_presets), 0, 0,
	  "More egress presets, 'NAME=RULE,RULE;NAME=RULE' (built in: pypi, npm, github, debian)" },
	{ "egress_addresses", NULL, OPT_STRING, OFF(egress_addresses), 0, 0,
	  "Private, loopback or link-local addresses (CIDR, ','-separated) an allowed name may still reach "
	  "(default: none)" },
	{ "egress_conns", NULL, OPT_U64, OFF(egress_conns), 1, 256, "Egress connections one session may hold open" },
	{ "http", NULL, OPT_STRING, OFF(http), 0, 0,
	  "Serve MCP over HTTP on HOST:PORT (or PORT, on 127.0.0.1) at /mcp instead of stdio" },
	{ "http_timeout_s", NULL, OPT_U64, OFF(http_timeout_s), 1, 3600,
	  "Close an HTTP connection that sends or reads nothing for this long, s (slow or stalled clients)" },
	{ "http_request_timeout_s", NULL, OPT_U64, OFF(http_request_timeout_s), 1, 3600,
	  "A request's head and body must arrive within this, s, however they trickle in (slowloris)" },
	{ "http_public_url", NULL, OPT_STRING, OFF(http_public_url), 0, 0,
	  "Base URL clients reach the server at, for signed download links (default: the bound address)" },
	{ "http_link_ttl_s", NULL, OPT_U64, OFF(http_link_ttl_s), 1, 2592000,
	  "Signed download links expire after this, s" },
	{ "preview_url", NULL, OPT_STRING, OFF(preview_url), 0, 0,
	  "Base of preview links, scheme://DOMAIN[:port] (port P of session S at P-S.DOMAIN; default "
	  "http://localhost:PORT; 'off': no previews)" },
	{ "preview_port", NULL, OPT_U64, OFF(preview_port), 0, 65535,
	  "Port previews are served on, on --http's address (default: a free one, in the links)" },
	{ "http_token_file", NULL, OPT_STRING, OFF(http_token_file), 0, 0,
	  "File of NAME:TOKEN lines: /mcp then needs Authorization: Bearer TOKEN (re-read on SIGHUP)" },
	{ "tls_cert", NULL, OPT_STRING, OFF(tls_cert), 0, 0, "PEM certificate (chain) for --http: serve HTTPS" },
	{ "tls_key", NULL, OPT_STRING, OFF(tls_key), 0, 0, "PEM private key of --tls-cert" },
	{ "http_allow_origin", NULL, OPT_STRING, OFF(http_allow_origin), 0, 0,
	  "Origins (scheme://host[:port]) allowed to call the HTTP server, ','-separated (default: localhost's, "
	  "when bound to loopback)" },
	{ "images", NULL, OPT_STRING, OFF(images), 0, 0,
	  "Images sessions may use or pull, ','-separated patterns (default: any local image, pulls of "
	  "docker.io/library/* only; '*': any)" },
	{ "pull", NULL, OPT_STRING, OFF(pull), 0, 0, "When session_create pulls: never, missing (default), always" },
	{ "log_level", NULL, OPT_STRING, OFF(log_level_name), 0, 0,
	  "stderr log level: debug, info, notice, warning, error (default info)" },
};

static const struct {
	const char *name;
	unsigned bit;
} tool_groups[] = {
	{ "session", TOOL_GROUP_SESSION },   { "run", TOOL_GROUP_RUN },
	{ "files", TOOL_GROUP_FILES },	     { "pip", TOOL_GROUP_PIP },
	{ "git", TOOL_GROUP_GIT },	     { "env", TOOL_GROUP_ENV },
	{ "egress", TOOL_GROUP_EGRESS },     { "savepoints", TOOL_GROUP_SAVEPOINTS },
	{ "services", TOOL_GROUP_SERVICES },
};

static int opt_set(struct config *c, const struct opt *o, const char *value, const char *from, struct err *err);
static int config_validate(struct config *c, struct err *err);
static int config_context(struct config *c, char **envp, bool host_flag, bool ctx_flag, struct err *err);
static const char *env_lookup(char **envp, const char *name);
static const struct opt *opt_by_flag(const char *flag);

void config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->image = xstrdup(SANDBOX_DEFAULT_IMAGE);
	c->memory_mb = 512;
	c->cpus = 1.0;
	c->pids = 256;
	c->workspace_mb = 10240;
	c->output_save_mb = 8;
	c->timeout_s = 60;
	c->idle_ttl_s = 1800;
	c->max_sessions = 10;
	c->pool_size = 2;
	c->max_upload_mb = 50;
	/* 4 streams of it (stdout, stderr; in content and structuredContent) stay under TOOL_RESULT_BUDGET */
	c->output_bytes = 8 * 1024;
	c->max_code_bytes = 100 * 1000;
	c->max_line_bytes = 64u << 20;
	c->engine_timeout_s = 30;
	c->max_layers = 100;
	c->session_checkpoints = 16;
	c->max_checkpoints = 64;
	c->checkpoint_mb = 20480;
	c->max_forks = 16;
	c->http_timeout_s = 30;
	c->http_request_timeout_s = 60;
	c->http_link_ttl_s = 86400;
	c->workspace = xstrdup("/workspace");
	c->host_dirs = xstrdup("");
	c->tools = xstrdup("session,run,files,pip,git,env,egress,savepoints,services");
	c->commit_repos = xstrdup(CONFIG_COMMIT_REPOS_DEFAULT);
	c->networks = xstrdup("");
	c->egress_allow = xstrdup("");
	c->egress_presets = xstrdup("");
	c->egress_addresses = xstrdup("");
	c->egress_conns = 64;
	c->images = xstrdup("");
	c->pull = xstrdup("missing");
	c->log_level_name = xstrdup("info");
	c->log_level = LOG_LEVEL_INFO;
	c->tool_groups = TOOL_GROUP_ALL;
}

void config_finish(struct config *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		if (opts[i].type == OPT_STRING) {
			char **p = (void *)((char *)c + opts[i].offset); /* offsetof: aligned */
			free(*p);
			*p = NULL;
		}
	}
}

static const char *env_lookup(char **envp, const char *name)
{
	size_t n = strlen(name);

	for (char **e = envp; e && *e; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	}
	return NULL;
}

/* The row of a flag without its "--" ("memory-mb" or "memory-mb=512"), or NULL. */
static const struct opt *opt_by_flag(const char *flag)
{
	size_t n = strcspn(flag, "=");

	for (size_t k = 0; k < ARRAY_SIZE(opts); k++) {
		const char *on = opts[k].name;
		if (strlen(on) != n)
			continue;
		bool same = true;
		for (size_t j = 0; j < n && same; j++)
			same = (on[j] == '_' ? '-' : on[j]) == flag[j];
		if (same)
			return &opts[k];
	}
	return NULL;
}

static int opt_set(struct config *c, const struct opt *o, const char *value, const char *from, struct err *err)
{
	void *field = (char *)c + o->offset;

	switch (o->type) {
	case OPT_STRING: {
		char **p = field;
		free(*p);
		*p = xstrdup(value);
		return 0;
	}
	case OPT_U64: {
		uint64_t v;
		if (parse_u64(value, o->min, o->max, &v) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "%s: '%s' is not a whole number from %llu to %llu", from, value,
				       (unsigned long long)o->min, (unsigned long long)o->max);
		*(uint64_t *)field = v;
		return 0;
	}
	case OPT_SWITCH: {
		/* like the docker CLI: the variable is on when non-empty; the flag takes true/false */
		bool *b = field;
		if (strncmp(from, "--", 2) != 0 || strcmp(value, "true") == 0 || strcmp(value, "1") == 0)
			*b = true;
		else if (strcmp(value, "false") == 0 || strcmp(value, "0") == 0)
			*b = false;
		else
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s: '%s' is not true or false", from,
				       value);
		return 0;
	}
	case OPT_DOUBLE: {
		double v;
		if (parse_double(value, 0.01, 256, &v) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "%s: '%s' is not a number from 0.01 to 256", from, value);
		*(double *)field = v;
		return 0;
	}
	}
	return -EINVAL;
}

/*
 * A network mode that shares a namespace (host, container:<id>, and any
 * other mode with a ':' such as Podman's ns:<path>) hands the sandbox the
 * host's or another container's network: no setting may allow it.
 */
bool config_network_forbidden(const char *name)
{
	return strcasecmp(name, "host") == 0 || strchr(name, ':') != NULL || strchr(name, '/') != NULL;
}

bool config_network_allowed(const struct config *c, const char *name)
{
	size_t n = strlen(name);
	const char *p = c->networks;

	if (strcmp(name, "none") == 0)
		return true;
	if (n == 0 || config_network_forbidden(name))
		return false;
	while (*p) {
		size_t k = strcspn(p, ",");
		if (k == n && strncmp(p, name, n) == 0)
			return true;
		p += k;
		if (*p == ',')
			p++;
	}
	return false;
}

static int config_networks_check(const struct config *c, struct err *err)
{
	const char *p = c->networks;

	while (*p) {
		size_t k = strcspn(p, ",");
		char one[128];
		snprintf(one, sizeof(one), "%.*s", (int)(k < sizeof(one) - 1 ? k : sizeof(one) - 1), p);
		if (k == 0 || k >= sizeof(one) || config_network_forbidden(one) || strcmp(one, "none") == 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "networks: '%.*s' cannot be allowed: list Docker network names (such as "
				       "bridge), never host, container:<id> or another namespace-sharing mode",
				       (int)(k > 80 ? 80 : k), p);
		p += k;
		if (*p == ',')
			p++;
	}
	return 0;
}

static int config_validate(struct config *c, struct err *err)
{
	if (log_level_parse(c->log_level_name, &c->log_level) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "log level '%s' is not one of debug, info, notice, warning, error, critical",
			       c->log_level_name);
	if (c->workspace[0] != '/' || strstr(c->workspace, "..") || strlen(c->workspace) > 255)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "workspace '%s' must be an absolute path without '..'", c->workspace);
	if (c->max_memory_mb == 0)
		c->max_memory_mb = c->memory_mb;
	if (c->max_cpus == 0)
		c->max_cpus = c->cpus;
	if (c->memory_mb > c->max_memory_mb)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "memory_mb %llu is above max_memory_mb %llu: raise SANDBOX_MAX_MEMORY_MB or lower "
			       "SANDBOX_MEMORY_MB",
			       (unsigned long long)c->memory_mb, (unsigned long long)c->max_memory_mb);
	if (c->cpus > c->max_cpus)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "cpus %g is above max_cpus %g: raise SANDBOX_MAX_CPUS or lower SANDBOX_CPUS", c->cpus,
			       c->max_cpus);
	if (c->image[0] == '\0')
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "image must not be empty");

	for (const char *q = c->commit_repos; *q; q++) {
		/* '*' only ends a pattern: a wildcard inside one would be easy to misread as narrower than it is */
		if (*q == '*' && q[1] != '\0' && q[1] != ',')
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "commit_repos: '*' may only end a pattern (e.g. sandbox-mcp-*,myorg/*), in '%s'",
				       c->commit_repos);
	}

	int r = config_networks_check(c, err);
	if (r < 0)
		return r;
	if ((r = imageref_patterns_check(c->images, err)) < 0)
		return r;
	if (strcmp(c->pull, "never") != 0 && strcmp(c->pull, "missing") != 0 && strcmp(c->pull, "always") != 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "pull '%.40s' is not one of never, missing, always", c->pull);

	c->tool_groups = 0;
	const char *p = c->tools;
	while (*p) {
		size_t n = strcspn(p, ",");
		bool found = false;
		for (size_t i = 0; i < ARRAY_SIZE(tool_groups); i++) {
			if (strlen(tool_groups[i].name) == n && strncmp(p, tool_groups[i].name, n) == 0) {
				c->tool_groups |= tool_groups[i].bit;
				found = true;
			}
		}
		if (!found && n > 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "tools: unknown group '%.*s' (groups: session,run,files,pip,git,env)", (int)n,
				       p);
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

void config_docker_dir(char **envp, char *ret, size_t n)
{
	const char *dc = env_lookup(envp, "DOCKER_CONFIG"), *home = env_lookup(envp, "HOME");

	if (dc && *dc)
		snprintf(ret, n, "%s", dc);
	else
		snprintf(ret, n, "%s/.docker", home ? home : "");
}

/*
 * Which context, in the docker CLI's order: --context; else none when
 * --docker-host or DOCKER_HOST (even empty) is given; else DOCKER_CONTEXT;
 * else config.json's currentContext. A context other than "default" sets
 * the endpoint and its TLS files.
 */
static int config_context(struct config *c, char **envp, bool host_flag, bool ctx_flag, struct err *err)
{
	char dir[4096], cur[DOCKERCTX_NAME_MAX + 1];
	const char *name = NULL;
	int r;

	config_docker_dir(envp, dir, sizeof(dir));
	if (ctx_flag && host_flag)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "conflicting options: give either --docker-host or --context, not both");
	if (ctx_flag)
		name = c->context;
	else if (!host_flag && !env_lookup(envp, "DOCKER_HOST") && c->context && c->context[0])
		name = c->context;
	else if (!host_flag && !env_lookup(envp, "DOCKER_HOST")) {
		r = dockerctx_current(dir, cur, sizeof(cur), err);
		if (r < 0 && r != -EINVAL) {
			/*
			 * As the docker CLI does: a config.json that cannot be read (another user's HOME,
			 * a folder) is a warning and the default context; credentials that need it fail later
			 */
			snprintf(c->docker_config_warning, sizeof(c->docker_config_warning),
				 "%s; using the default context (DOCKER_HOST or the default socket)", err->msg);
			log_warnf("%s", c->docker_config_warning);
			err_clear(err);
			cur[0] = '\0';
		} else if (r < 0) {
			return r;
		}
		name = cur;
	}
	if (!name || !name[0] || strcmp(name, "default") == 0) {
		free(c->context);
		c->context = NULL;
		return 0;
	}
	struct dockerctx *dc = xmalloc(sizeof(*dc));
	if ((r = dockerctx_load(dir, name, dc, err)) < 0) {
		free(dc);
		return r;
	}
	char *keep = xstrdup(name);
	free(c->context);
	c->context = keep;
	free(c->docker_host);
	c->docker_host = xstrdup(dc->host);
	c->tls_from_context = true;
	c->tls_verify = dc->tls || dc->skip_tls_verify;
	c->tls_skip_verify = dc->skip_tls_verify;
	char **files[3] = { &c->tlscacert, &c->tlscert, &c->tlskey };
	const char *src[3] = { dc->ca, dc->cert, dc->key };
	for (int i = 0; i < 3; i++) {
		free(*files[i]);
		*files[i] = src[i][0] ? xstrdup(src[i]) : NULL;
	}
	free(dc);
	return 0;
}

int config_load(struct config *c, char **envp, int argc, char **argv, int start, int *ret_next, struct err *err)
{
	char envname[64];
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		const struct opt *o = &opts[i];
		const char *name = o->env;
		if (!name) {
			snprintf(envname, sizeof(envname), "SANDBOX_%s", o->name);
			for (char *q = envname; *q; q++)
				if (*q >= 'a' && *q <= 'z')
					*q = (char)(*q - 'a' + 'A');
			name = envname;
		}
		const char *v = env_lookup(envp, name);
		if (v && *v && (r = opt_set(c, o, v, name, err)) < 0)
			return r;
	}

	/*
	 * Settings may stand before or after the command (`doctor --docker-host
	 * X`): they are taken wherever they are, and the other arguments move, in
	 * their order, to the end of argv, as GNU getopt permutes. After "--"
	 * nothing is a setting.
	 */
	char **rest = xcalloc((size_t)(argc > 0 ? argc : 1), sizeof(*rest));
	int nrest = 0, out = start;
	bool host_flag = false, ctx_flag = false, engine_flag = false;
	for (int i = start; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) {
			argv[out++] = argv[i]; /* consumed, like a setting */
			while (++i < argc)
				rest[nrest++] = argv[i];
			break;
		}
		const struct opt *o = strncmp(a, "--", 2) == 0 ? opt_by_flag(a + 2) : NULL;
		if (!o) {
			rest[nrest++] = argv[i]; /* a command, its argument, or an unknown flag: the caller's */
			continue;
		}
		const char *eq = strchr(a, '=');
		const char *v = eq ? eq + 1 : NULL;
		if (!v && o->type == OPT_SWITCH)
			v = "true";
		if (!v && i + 1 >= argc) {
			free(rest);
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s needs a value", a);
		}
		argv[out++] = argv[i];
		if (!v) {
			v = argv[++i];
			argv[out++] = argv[i];
		}
		/* --engine repeats: the first replaces SANDBOX_ENGINES, the others add to it */
		char *joined = engine_flag && o->offset == OFF(engines) ? xasprintf("%s;%s", c->engines, v) : NULL;
		r = opt_set(c, o, joined ? joined : v, a, err);
		free(joined);
		if (r < 0) {
			free(rest);
			return r;
		}
		engine_flag |= o->offset == OFF(engines);
		host_flag |= o->offset == OFF(docker_host);
		ctx_flag |= o->offset == OFF(context);
	}
	for (int k = 0; k < nrest; k++)
		argv[out + k] = rest[k];
	free(rest);
	if (ret_next)
		*ret_next = out;
	if (!c->cert_path || !c->cert_path[0]) {
		char dir[4096];
		config_docker_dir(envp, dir, sizeof(dir));
		free(c->cert_path);
		c->cert_path = xstrdup(dir);
	}
	if ((r = config_context(c, envp, host_flag, ctx_flag, err)) < 0)
		return r;
	return config_validate(c, err);
}

const char *config_images_summary(const struct config *c)
{
	if (!c->images[0])
		return "any image on the engine; pulls only Docker Hub's official images (docker.io/library/*)";
	if (strcmp(c->images, "*") == 0)
		return "any image, pulled from any registry";
	return "only images matching SANDBOX_IMAGES, on the engine or pulled (and SANDBOX_IMAGE itself)";
}

void config_print_help(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
		char flag[64], env[64];
		const struct opt *o = &opts[i];
		snprintf(flag, sizeof(flag), "--%s", o->name);
		for (char *q = flag; *q; q++)
			if (*q == '_')
				*q = '-';
		if (o->env) {
			snprintf(env, sizeof(env), "%s", o->env);
		} else {
			snprintf(env, sizeof(env), "SANDBOX_%s", o->name);
			for (char *q = env; *q; q++)
				if (*q >= 'a' && *q <= 'z')
					*q = (char)(*q - 'a' + 'A');
		}
		fprintf(f, "  %-20s %-26s %s\n", flag, env, o->help);
	}
}

json_t *config_to_json(const struct config *c)
{
	json_t *j =
		json_pack("{s:s?, s:s, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s?, s:s?, s:s}",
			  "docker_host", c->docker_host, "image", c->image, "memory_mb", (json_int_t)c->memory_mb,
			  "cpus", c->cpus, "pids", (json_int_t)c->pids, "timeout_s", (json_int_t)c->timeout_s,
			  "idle_ttl_s", (json_int_t)c->idle_ttl_s, "max_sessions", (json_int_t)c->max_sessions,
			  "max_upload_mb", (json_int_t)c->max_upload_mb, "output_bytes", (json_int_t)c->output_bytes,
			  "max_code_bytes", (json_int_t)c->max_code_bytes, "engine_timeout_s",
			  (json_int_t)c->engine_timeout_s, "workspace", c->workspace, "host_dirs", c->host_dirs,
			  "tools", c->tools, "outbox", c->outbox, "runtime", c->runtime, "networks", c->networks);
	json_object_set_new(j, "pool_size", json_integer((json_int_t)c->pool_size));
	json_object_set_new(j, "max_memory_mb", json_integer((json_int_t)c->max_memory_mb));
	json_object_set_new(j, "max_cpus", json_real(c->max_cpus));
	json_object_set_new(j, "workspace_mb", json_integer((json_int_t)c->workspace_mb));
	json_object_set_new(j, "output_save_mb", json_integer((json_int_t)c->output_save_mb));
	json_object_set_new(j, "commit_repos", json_string(c->commit_repos));
	json_object_set_new(j, "checkpoints",
			    json_pack("{s:I, s:I, s:I, s:I, s:b, s:I}", "per_session",
				      (json_int_t)c->session_checkpoints, "max", (json_int_t)c->max_checkpoints,
				      "max_mb", (json_int_t)c->checkpoint_mb, "max_forks", (json_int_t)c->max_forks,
				      "idle_snapshot", c->idle_snapshot != 0, "paused_ttl_s",
				      (json_int_t)c->paused_ttl_s));
	json_object_set_new(j, "tlsverify", json_boolean(c->tls_verify));
	json_object_set_new(j, "context", c->context ? json_string(c->context) : json_null());
	json_object_set_new(j, "images", json_string(c->images));
	json_object_set_new(j, "pull", json_string(c->pull));
	json_object_set_new(j, "image_policy", json_string(config_images_summary(c)));
	return j;
}
