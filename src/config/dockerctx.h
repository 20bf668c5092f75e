/*
 * dockerctx.h - Docker contexts, read as the docker CLI reads them.
 *
 * A context named N lives in <config dir>/contexts/meta/<sha256(N)>/meta.json
 * ({"Name":N,"Endpoints":{"docker":{"Host":...,"SkipTLSVerify":...}}}) and
 * its TLS material in <config dir>/contexts/tls/<sha256(N)>/docker/
 * {ca,cert,key}.pem; the current one is "currentContext" in
 * <config dir>/config.json. The config dir is $DOCKER_CONFIG, else ~/.docker.
 * The parsers are pure and capped; the readers do the file system part.
 */
#ifndef DOCKERCTX_H
#define DOCKERCTX_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errcode.h"

/* Largest meta.json or config.json read. */
#define DOCKERCTX_FILE_MAX (1u << 20)
/* Longest context name (the CLI has no limit; ours keeps names printable in messages). */
#define DOCKERCTX_NAME_MAX 128
#define DOCKERCTX_HOST_MAX 512

struct dockerctx {
	char name[DOCKERCTX_NAME_MAX + 1];
	char host[DOCKERCTX_HOST_MAX + 1];
	bool skip_tls_verify;
	bool tls;			      /* the context has TLS material (any of the three files) */
	char ca[4096], cert[4096], key[4096]; /* "" when absent */
};

/* True for a name the CLI accepts: [a-zA-Z0-9][a-zA-Z0-9_.+-]+. */
bool dockerctx_name_valid(const char *name);

/*
 * Parses meta.json bytes: Endpoints.docker.Host (a non-empty string, required)
 * and SkipTLSVerify (a boolean, optional); Name, if present, must equal name.
 * 0, or -EINVAL with err (ERRCODE_INVALID_ARGUMENT) saying what is wrong.
 */
int dockerctx_parse_meta(const char *name, const char *json, size_t len, struct dockerctx *ret, struct err *err);

/*
 * Parses config.json bytes for "currentContext": 0 with the name (or "" when
 * it is absent or empty), -EINVAL with err when the bytes are not a JSON
 * object or currentContext is not a valid name.
 */
int dockerctx_parse_current(const char *json, size_t len, char *ret, size_t n, struct err *err);

/* The current context of config_dir ("" when config.json is missing or names none). */
int dockerctx_current(const char *config_dir, char *ret, size_t n, struct err *err);

/* Reads context name from config_dir: its endpoint and TLS files. 0 or -errno with err. */
int dockerctx_load(const char *config_dir, const char *name, struct dockerctx *ret, struct err *err);

#endif
