/*
 * engine.h - typed calls to the Docker Engine API.
 *
 * Each call opens (or reuses) a connection to the endpoint, sends one request
 * and maps the answer: 2xx bodies are decoded, error statuses become a struct
 * err carrying the engine's own message.  A struct call, when given, can abort
 * a blocked call at once (its cancel hook shuts the socket down).
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "dispatch.h"
#include "errcode.h"
#include "transport.h"

/* Largest JSON body read from the engine. */
#define ENGINE_JSON_MAX (16u << 20)
/* Oldest API version this client speaks (Docker 20.10, Podman's compat socket). */
#define ENGINE_API_MIN "1.41"

struct engine;

struct engine_version {
	char version[64];
	char api_version[16];
	char min_api_version[16];
	char os[32];
	char arch[32];
	char kernel[128];
};

/* 0 with *ret, or -EINVAL when DOCKER_HOST cannot be parsed. */
int engine_create(const char *docker_host, int timeout_ms, struct engine **ret, struct err *err);
void engine_destroy(struct engine *e);
const struct endpoint *engine_endpoint(const struct engine *e);

/*
 * Sends method path (path is below the version prefix, e.g. "/containers/json")
 * with an optional JSON body and returns the status and decoded JSON (NULL
 * for an empty body). Statuses >= 400 are errors, unless
 * accept_status says otherwise.
 */
int engine_request(struct engine *e, struct call *call, const char *method, const char *path, json_t *body,
		   int *ret_status, json_t **ret_json, struct err *err);

/* True when API version a ("1.43") is at least b. */
bool engine_api_at_least(const char *a, const char *b);

/* Percent-encodes s for a URL path segment or query value into out. 0 or -ENAMETOOLONG. */
int engine_url_escape(const char *s, char *out, size_t outsz);

/* GET /images/{name}/json; ERRCODE_IMAGE_NOT_FOUND when absent. */
int engine_image_inspect(struct engine *e, struct call *call, const char *name, json_t **ret_json,
			 struct err *err);

/* GET /version. */
int engine_version(struct engine *e, struct call *call, struct engine_version *ret, struct err *err);

#endif
