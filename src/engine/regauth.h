/*
 * regauth.h - registry credentials found the way the docker CLI finds them,
 * for X-Registry-Auth: $DOCKER_CONFIG/config.json (default ~/.docker), its
 * credHelpers and credsStore (`docker-credential-<name> get`, the server in
 * stdin), then its auths (base64 "auth", or username and password).
 *
 * Credentials are only ever returned encoded for the header: never logged,
 * never put in a result, wiped from buffers once encoded.
 */
#ifndef REGAUTH_H
#define REGAUTH_H

#include "base/errcode.h"

/* Largest config.json read. */
#define REGAUTH_CONFIG_MAX (1u << 20)
/* Largest answer read from a credential helper. */
#define REGAUTH_HELPER_OUT_MAX (64u * 1024)
/* How long a credential helper may take, ms. */
#define REGAUTH_HELPER_MS 10000
/* Docker Hub's key in config.json. */
#define REGAUTH_HUB_KEY "https://index.docker.io/v1/"

/*
 * The X-Registry-Auth value (base64url JSON) for registry domain: 0 with
 * *ret (NULL when the config has no credentials for it; else the caller's,
 * to wipe and free), or -errno with err when a helper named for it fails.
 */
int regauth_header(const char *domain, char **ret, struct err *err);

#endif
