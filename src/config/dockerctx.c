/*
 * dockerctx.c - Docker context files: pure parsers, then the readers that
 * find them by the sha256 of the name as the docker CLI stores them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "base/util.h"
#include "config/dockerctx.h"

bool dockerctx_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n < 2 || n > DOCKERCTX_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || !strchr("_.+-", c)))
			return false;
	}
	return true;
}

int dockerctx_parse_meta(const char *name, const char *json, size_t len, struct dockerctx *ret, struct err *err)
{
	json_error_t je;
	memset(ret, 0, sizeof(*ret));
	if (len > DOCKERCTX_FILE_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "context '%s': meta.json is larger than %u bytes", name, DOCKERCTX_FILE_MAX);
	json_t *j = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "context '%s': meta.json is not a JSON object (%s): recreate it with `docker context create`",
			       name, j ? "another JSON value" : je.text);
	}
	int r = 0;
	json_t *jname = json_object_get(j, "Name");
	json_t *docker = json_object_get(json_object_get(j, "Endpoints"), "docker");
	json_t *host = json_object_get(docker, "Host");
	json_t *skip = json_object_get(docker, "SkipTLSVerify");
	if (jname && (!json_is_string(jname) || strcmp(json_string_value(jname), name) != 0))
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "context '%s': meta.json names another context",
			    name);
	else if (!json_is_string(host) || json_string_length(host) == 0 ||
		 json_string_length(host) > DOCKERCTX_HOST_MAX ||
		 strlen(json_string_value(host)) != json_string_length(host))
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			    "context '%s' has no usable docker endpoint (Endpoints.docker.Host): `docker context inspect %s` "
			    "shows it",
			    name, name);
	else if (skip && !json_is_boolean(skip))
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			    "context '%s': Endpoints.docker.SkipTLSVerify must be true or false", name);
	if (r == 0) {
		snprintf(ret->name, sizeof(ret->name), "%s", name);
		snprintf(ret->host, sizeof(ret->host), "%s", json_string_value(host));
		ret->skip_tls_verify = json_is_true(skip);
	}
	json_decref(j);
	return r;
}

int dockerctx_parse_current(const char *json, size_t len, char *ret, size_t n, struct err *err)
{
	json_error_t je;
	if (len > DOCKERCTX_FILE_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "docker config.json is larger than %u bytes",
			       DOCKERCTX_FILE_MAX);
	json_t *j = json_loadb(json, len, 0, &je);
	if (!j || !json_is_object(j)) {
		json_decref(j);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "docker config.json is not a JSON object (%s)",
			       j ? "another JSON value" : je.text);
	}
	json_t *cur = json_object_get(j, "currentContext");
	const char *v = json_is_string(cur) ? json_string_value(cur) : "";
	int r = 0;
	if (cur && !json_is_string(cur))
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			    "docker config.json: currentContext must be a string");
	else if (*v && (strcmp(v, "default") != 0 && !dockerctx_name_valid(v)))
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			    "docker config.json: currentContext is not a valid context name");
	else if (strlen(v) >= n)
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "docker config.json: currentContext is too long");
	else
		snprintf(ret, n, "%s", v);
	json_decref(j);
	return r;
}

int dockerctx_current(const char *config_dir, char *ret, size_t n, struct err *err)
{
	char path[4200], *b;
	size_t len;
	snprintf(path, sizeof(path), "%s/config.json", config_dir);
	ret[0] = '\0';
	int r = read_small_file(path, DOCKERCTX_FILE_MAX, &b, &len);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r, "cannot read %s: %s", path, strerror(-r));
	r = dockerctx_parse_current(b, len, ret, n, err);
	free(b);
	return r;
}

/* The directory name the CLI gives a context: the hex sha256 of its name. */
static int name_digest(const char *name, char hex[65])
{
	unsigned char d[SHA256_DIGEST_SIZE];
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, strlen(name), (const uint8_t *)name);
	sha256_digest(&c, sizeof(d), d);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return 0;
}

int dockerctx_load(const char *config_dir, const char *name, struct dockerctx *ret, struct err *err)
{
	char hex[65], path[4200], *b;
	size_t len;

	if (!dockerctx_name_valid(name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "context name '%.*s' is not valid: letters, digits and _.+- (not first), at least 2",
			       DOCKERCTX_NAME_MAX, name);
	if (name_digest(name, hex) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EIO, "context '%s': cannot hash its name", name);
	snprintf(path, sizeof(path), "%s/contexts/meta/%s/meta.json", config_dir, hex);
	int r = read_small_file(path, DOCKERCTX_FILE_MAX, &b, &len);
	if (r < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r,
			       "context '%s' %s (%s): `docker context ls` lists the contexts of DOCKER_CONFIG (%s)",
			       name, r == -ENOENT ? "is not found" : "cannot be read", path, config_dir);
	r = dockerctx_parse_meta(name, b, len, ret, err);
	free(b);
	if (r < 0)
		return r;
	static const char *const files[3] = { "ca.pem", "cert.pem", "key.pem" };
	char *dst[3] = { ret->ca, ret->cert, ret->key };
	for (int i = 0; i < 3; i++) {
		snprintf(dst[i], sizeof(ret->ca), "%s/contexts/tls/%s/docker/%s", config_dir, hex, files[i]);
		if (access(dst[i], R_OK) == 0)
			ret->tls = true;
		else
			dst[i][0] = '\0';
	}
	return 0;
}
