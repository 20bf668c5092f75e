/*
 * engines.h - the Docker engines one server drives, each under a name.
 *
 * The default engine is DOCKER_HOST's (or the Docker context's), named
 * "default". The operator adds more with --engine NAME=ENDPOINT (repeatable)
 * or SANDBOX_ENGINES="a=ENDPOINT;b=ENDPOINT", ENDPOINT being anything
 * DOCKER_HOST accepts or context:NAME. A model picks an engine only by one
 * of these names (session_create's engine), never by an endpoint.
 *
 * The list parser is pure and capped; engines_open does the rest (context
 * files, TLS material, the engine objects).
 */
#ifndef ENGINES_H
#define ENGINES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/errcode.h"

struct config;
struct engine;

/* Named engines at most besides the default one. */
#define ENGINES_MAX 8
/* Longest engine name: short, so that it reads well in messages and lists. */
#define ENGINES_NAME_MAX 32
/* Longest ENDPOINT of one entry. */
#define ENGINES_ENDPOINT_MAX 512
/* Longest SANDBOX_ENGINES (every entry together). */
#define ENGINES_LIST_MAX (ENGINES_MAX * (ENGINES_NAME_MAX + ENGINES_ENDPOINT_MAX + 8))
/* The name of DOCKER_HOST's (or the context's) engine. */
#define ENGINES_DEFAULT "default"

struct engines_spec {
	char name[ENGINES_NAME_MAX + 1];
	char endpoint[ENGINES_ENDPOINT_MAX + 1];
};

/* True for 1 to ENGINES_NAME_MAX of [a-z0-9_-]. */
bool engines_name_valid(const char *name);

/*
 * Parses "a=ENDPOINT;b=ENDPOINT" (spaces around entries ignored, empty
 * entries skipped) into ret[0..*ret_n). Names must be valid, distinct and not
 * "default"; an endpoint must start with unix://, tcp://, ssh:// or be
 * context:NAME. 0, or -EINVAL with err saying which entry is wrong and how.
 */
int engines_parse(const char *list, size_t len, struct engines_spec ret[ENGINES_MAX], size_t *ret_n, struct err *err);

/* Copies endpoint into out with any password of a user:password@ part replaced by "***". */
void engines_redact(const char *endpoint, char *out, size_t outsz);

struct engines;

/*
 * The default engine (from cfg as before) and those cfg->engines names;
 * envp gives the docker config dir (contexts) and DOCKER_TLS_VERIFY. No
 * engine is contacted. 0, or -EINVAL with err naming the engine at fault.
 */
int engines_open(const struct config *cfg, char **envp, int timeout_ms, struct engines **ret, struct err *err);
void engines_destroy(struct engines *es);

size_t engines_count(const struct engines *es);
/* The i-th engine (0: the default), its name and its endpoint without secrets (borrowed). */
struct engine *engines_at(const struct engines *es, size_t i);
const char *engines_name(const struct engines *es, size_t i);
const char *engines_endpoint(const struct engines *es, size_t i);
struct engine *engines_default(const struct engines *es);

/*
 * The engine called name (NULL: the default; "" is no name) in *ret; *ret_name is its
 * name (borrowed). Either may be NULL. -ENOENT with err (invalid_argument) listing the configured
 * names when there is no such engine.
 */
int engines_find(const struct engines *es, const char *name, struct engine **ret, const char **ret_name,
		 struct err *err);

/* {NAME: {endpoint, reachable[, error]}}: each engine asked now (a new reference). */
json_t *engines_json(const struct engines *es, int timeout_ms);

#endif
