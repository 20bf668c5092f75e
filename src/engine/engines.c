/*
 * engines.c - the named engines: the SANDBOX_ENGINES parser (pure), then
 * opening each engine with its TLS material.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "config/config.h"
#include "config/dockerctx.h"
#include "engine/endpoint.h"
#include "engine/engine.h"
#include "engine/engines.h"

struct engines_one {
	char name[ENGINES_NAME_MAX + 1];
	char endpoint[ENGINES_ENDPOINT_MAX + DOCKERCTX_NAME_MAX + 32]; /* redacted, for env_info and doctor */
	struct engine *engine;
};

struct engines {
	size_t n;
	struct engines_one at[ENGINES_MAX + 1];
};

static int parse_entry(const char *p, size_t n, struct engines_spec *ret, struct err *err);
static int open_named(const struct config *cfg, char **envp, const struct engines_spec *sp, int timeout_ms,
		      struct engines_one *ret, struct err *err);

bool engines_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > ENGINES_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One "NAME=ENDPOINT" of n bytes (not NUL-terminated), spaces already trimmed. */
static int parse_entry(const char *p, size_t n, struct engines_spec *ret, struct err *err)
{
	const char *eq = memchr(p, '=', n);
	size_t nl = eq ? (size_t)(eq - p) : n;
	int shown = (int)(n > 80 ? 80 : n);

	if (!eq || nl == 0 || nl > ENGINES_NAME_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "engines: '%.*s' is not NAME=ENDPOINT with a name of 1 to %d characters (e.g. "
			       "gpu=tcp://gpu-box:2376 or big=context:build-host)",
			       shown, p, ENGINES_NAME_MAX);
	memcpy(ret->name, p, nl);
	ret->name[nl] = '\0';
	if (!engines_name_valid(ret->name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "engines: name '%.*s' must be 1 to %d of a-z, 0-9, '_' and '-'", (int)nl, p,
			       ENGINES_NAME_MAX);
	if (strcmp(ret->name, ENGINES_DEFAULT) == 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "engines: the name 'default' is DOCKER_HOST's engine (or the Docker context's): give "
			       "the other engine another name");
	const char *ep = eq + 1;
	size_t el = n - nl - 1;
	if (el == 0 || el > ENGINES_ENDPOINT_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "engines: engine '%s' needs an endpoint of 1 to %d characters after '='", ret->name,
			       ENGINES_ENDPOINT_MAX);
	for (size_t i = 0; i < el; i++)
		if ((unsigned char)ep[i] < 0x21 || ep[i] == 0x7f)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "engines: the endpoint of engine '%s' contains a space or a control character",
				       ret->name);
	memcpy(ret->endpoint, ep, el);
	ret->endpoint[el] = '\0';
	if (strncmp(ret->endpoint, "context:", 8) == 0) {
		if (!dockerctx_name_valid(ret->endpoint + 8))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "engines: engine '%s': '%.80s' does not name a Docker context (context:NAME, "
				       "NAME as `docker context ls` shows it)",
				       ret->name, ret->endpoint);
		return 0;
	}
	if (strncmp(ret->endpoint, "unix://", 7) != 0 && strncmp(ret->endpoint, "tcp://", 6) != 0 &&
	    strncmp(ret->endpoint, "ssh://", 6) != 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "engines: engine '%s': '%.80s' is not an endpoint: use unix:///path, tcp://host:port, "
			       "ssh://[user@]host[:port] or context:NAME",
			       ret->name, ret->endpoint);
	return 0;
}

int engines_parse(const char *list, size_t len, struct engines_spec ret[ENGINES_MAX], size_t *ret_n, struct err *err)
{
	size_t n = 0, i = 0;

	if (len > ENGINES_LIST_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "engines: the list is longer than %d bytes",
			       ENGINES_LIST_MAX);
	while (i < len) {
		size_t start = i;
		while (i < len && list[i] != ';')
			i++;
		size_t a = start, b = i;
		while (a < b && is_space(list[a]))
			a++;
		while (b > a && is_space(list[b - 1]))
			b--;
		i++; /* past ';' (or the end) */
		if (a == b)
			continue;
		if (n == ENGINES_MAX)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "engines: more than %d engines besides the default one", ENGINES_MAX);
		struct engines_spec one;
		int r = parse_entry(list + a, b - a, &one, err);
		if (r < 0)
			return r;
		for (size_t k = 0; k < n; k++)
			if (strcmp(ret[k].name, one.name) == 0)
				return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
					       "engines: the name '%s' is given twice: give each engine its own name",
					       one.name);
		ret[n++] = one;
	}
	*ret_n = n;
	return 0;
}

void engines_redact(const char *endpoint, char *out, size_t outsz)
{
	const char *auth = strstr(endpoint, "://");
	snprintf(out, outsz, "%s", endpoint);
	if (!auth)
		return;
	auth += 3;
	size_t hl = strcspn(auth, "/");
	const char *at = memchr(auth, '@', hl);
	const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
	if (!colon)
		return;
	snprintf(out, outsz, "%.*s:***%s", (int)(colon - endpoint), endpoint, at);
}

static const char *env_get(char **envp, const char *name)
{
	size_t n = strlen(name);
	for (char **e = envp; e && *e; e++)
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

/* ca/cert/key.pem of dir, each only if it exists (as the docker CLI reads DOCKER_CERT_PATH). */
static const char *cert_file(const char *dir, const char *name, char *path)
{
	snprintf(path, 4096, "%s/%s", dir, name);
	return access(path, R_OK) == 0 ? path : NULL;
}

/*
 * A named engine: a context's endpoint and TLS files, or a DOCKER_HOST-style
 * endpoint (tcp:// with DOCKER_TLS_VERIFY and DOCKER_CERT_PATH's files).
 */
static int open_named(const struct config *cfg, char **envp, const struct engines_spec *sp, int timeout_ms,
		      struct engines_one *ret, struct err *err)
{
	struct endpoint_tls tls = { 0 };
	char paths[3][4096], dir[4096], shown[ENGINES_ENDPOINT_MAX + 1];
	const char *host = sp->endpoint;
	struct dockerctx *dc = NULL;
	int r;

	snprintf(ret->name, sizeof(ret->name), "%s", sp->name);
	if (strncmp(sp->endpoint, "context:", 8) == 0) {
		dc = xmalloc(sizeof(*dc));
		config_docker_dir(envp, dir, sizeof(dir));
		if ((r = dockerctx_load(dir, sp->endpoint + 8, dc, err)) < 0) {
			free(dc);
			return r;
		}
		host = dc->host;
		tls.verify = dc->tls || dc->skip_tls_verify;
		tls.skip_verify = dc->skip_tls_verify;
		tls.ca = dc->ca[0] ? dc->ca : NULL;
		tls.cert = dc->cert[0] ? dc->cert : NULL;
		tls.key = dc->key[0] ? dc->key : NULL;
	} else if (strncmp(sp->endpoint, "tcp://", 6) == 0) {
		/* the environment's TLS, not a context's that the default engine may use */
		const char *v = env_get(envp, "DOCKER_TLS_VERIFY");
		tls.verify = cfg->tls_from_context ? v && *v : cfg->tls_verify;
		/* DOCKER_CERT_PATH or --cert-path (config_load defaults it to the docker config dir) */
		if (cfg->cert_path && cfg->cert_path[0])
			snprintf(dir, sizeof(dir), "%s", cfg->cert_path);
		else
			config_docker_dir(envp, dir, sizeof(dir));
		tls.ca = cert_file(dir, "ca.pem", paths[0]);
		tls.cert = cert_file(dir, "cert.pem", paths[1]);
		tls.key = cert_file(dir, "key.pem", paths[2]);
	}
	r = engine_create(host, &tls, timeout_ms, &ret->engine, err);
	if (r == 0) {
		engines_redact(host, shown, sizeof(shown));
		if (dc)
			snprintf(ret->endpoint, sizeof(ret->endpoint), "%s (context %s)", shown, sp->endpoint + 8);
		else
			snprintf(ret->endpoint, sizeof(ret->endpoint), "%s", shown);
	}
	free(dc);
	return r;
}

static int open_default(const struct config *cfg, int timeout_ms, struct engines_one *ret, struct err *err)
{
	struct endpoint_tls tls;
	char paths[3][4096], shown[ENGINES_ENDPOINT_MAX + 1];

	endpoint_tls_from_config(cfg, &tls, paths);
	int r = engine_create(cfg->docker_host, &tls, timeout_ms, &ret->engine, err);
	if (r < 0)
		return r;
	snprintf(ret->name, sizeof(ret->name), "%s", ENGINES_DEFAULT);
	engines_redact(engine_endpoint(ret->engine)->display, shown, sizeof(shown));
	if (cfg->context)
		snprintf(ret->endpoint, sizeof(ret->endpoint), "%s (context %s)", shown, cfg->context);
	else
		snprintf(ret->endpoint, sizeof(ret->endpoint), "%s", shown);
	return 0;
}

int engines_open(const struct config *cfg, char **envp, int timeout_ms, struct engines **ret, struct err *err)
{
	struct engines_spec specs[ENGINES_MAX];
	size_t n = 0;
	const char *list = cfg->engines ? cfg->engines : "";
	int r = engines_parse(list, strlen(list), specs, &n, err);
	if (r < 0)
		return r;
	struct engines *es = xcalloc(1, sizeof(*es));
	if ((r = open_default(cfg, timeout_ms, &es->at[0], err)) < 0) {
		free(es);
		return r;
	}
	es->n = 1;
	for (size_t i = 0; i < n; i++) {
		struct err oerr;
		if ((r = open_named(cfg, envp, &specs[i], timeout_ms, &es->at[es->n], &oerr)) < 0) {
			err_set(err, oerr.code, r, "engine '%s': %s", specs[i].name, oerr.msg);
			engines_destroy(es);
			return r;
		}
		es->n++;
	}
	/* with several engines, every engine failure says which engine it was */
	for (size_t i = 0; es->n > 1 && i < es->n; i++)
		engine_set_label(es->at[i].engine, es->at[i].name);
	*ret = es;
	return 0;
}

void engines_destroy(struct engines *es)
{
	if (!es)
		return;
	for (size_t i = 0; i < es->n; i++)
		engine_destroy(es->at[i].engine);
	free(es);
}

size_t engines_count(const struct engines *es)
{
	return es->n;
}

struct engine *engines_at(const struct engines *es, size_t i)
{
	return i < es->n ? es->at[i].engine : NULL;
}

const char *engines_name(const struct engines *es, size_t i)
{
	return i < es->n ? es->at[i].name : NULL;
}

const char *engines_endpoint(const struct engines *es, size_t i)
{
	return i < es->n ? es->at[i].endpoint : NULL;
}

struct engine *engines_default(const struct engines *es)
{
	return es->at[0].engine;
}

int engines_find(const struct engines *es, const char *name, struct engine **ret, const char **ret_name,
		 struct err *err)
{
	char names[ENGINES_MAX * (ENGINES_NAME_MAX + 2) + 16] = "";

	if (!name)
		name = ENGINES_DEFAULT;
	for (size_t i = 0; i < es->n; i++) {
		if (strcmp(es->at[i].name, name) == 0) {
			if (ret)
				*ret = es->at[i].engine;
			if (ret_name)
				*ret_name = es->at[i].name;
			return 0;
		}
		size_t k = strlen(names);
		snprintf(names + k, sizeof(names) - k, "%s%s", k ? ", " : "", es->at[i].name);
	}
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT,
		       "no engine named '%.40s': this server's engines are %s (env_info engines lists them; the "
		       "operator configures them with --engine NAME=ENDPOINT)",
		       name, names);
}

json_t *engines_json(const struct engines *es, int timeout_ms)
{
	json_t *out = json_object();

	for (size_t i = 0; i < es->n; i++) {
		struct err err;
		err_clear(&err);
		bool up = engine_reachable(es->at[i].engine, timeout_ms, &err) == 0;
		json_t *one = json_pack("{s:s, s:b}", "endpoint", es->at[i].endpoint, "reachable", up);
		if (!up)
			json_object_set_new(one, "error", json_string(err.msg));
		json_object_set_new(out, es->at[i].name, one);
	}
	return out;
}
