/*
 * regauth.c - docker config.json credentials for a registry.
 *
 * Lookup order, as the docker CLI: credHelpers[server], else credsStore,
 * else auths[server]. Docker Hub's server key is REGAUTH_HUB_KEY; other
 * registries are their host[:port], and an auths key written as a URL
 * ("https://host:port/v1/") also counts. A helper runs without a shell
 * (its name is checked), gets the server on stdin, and must answer within
 * REGAUTH_HELPER_MS and REGAUTH_HELPER_OUT_MAX bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "base/base64.h"
#include "base/buf.h"
#include "base/util.h"
#include "engine/regauth.h"

extern char **environ;

static int helper_get(const char *name, const char *server, json_t **ret, struct err *err);

/* Zeroes b's bytes (they may hold a secret), then releases it; a buffer never grown has none. */
static void wipe(struct buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->len);
	buf_finish(b);
}

/*
 * The config file (REGAUTH_CONFIG_MAX at most; the caller wipes and frees
 * it). 0, -ENOENT when there is none, or -errno.
 */
static int config_read(char **ret, size_t *ret_len)
{
	const char *dir = getenv("DOCKER_CONFIG");
	const char *home = getenv("HOME");
	_cleanup_free_ char *path = dir && *dir	    ? xasprintf("%s/config.json", dir)
				    : home && *home ? xasprintf("%s/.docker/config.json", home)
						    : NULL;
	return path ? read_small_file(path, REGAUTH_CONFIG_MAX, ret, ret_len) : -ENOENT;
}

/* host[:port] of an auths key written as a URL or bare; true when it is domain. */
static bool key_names(const char *key, const char *domain)
{
	const char *p = strstr(key, "://");
	p = p ? p + 3 : key;
	size_t n = strcspn(p, "/");
	return strlen(domain) == n && strncasecmp(p, domain, n) == 0;
}

/* username and password (or identity token) from an auths entry; NULL when it has none. */
static json_t *from_auths(json_t *auths, const char *server, const char *domain)
{
	json_t *ent = json_object_get(auths, server);
	const char *key;
	json_t *v;
	if (!ent)
		json_object_foreach (auths, key, v)
			if (key_names(key, domain)) {
				ent = v;
				break;
			}
	if (!json_is_object(ent))
		return NULL;
	const char *token = json_string_value(json_object_get(ent, "identitytoken"));
	if (token && *token)
		return json_pack("{s:s}", "identitytoken", token);
	const char *b64 = json_string_value(json_object_get(ent, "auth"));
	if (b64 && *b64) {
		size_t len = strlen(b64);
		if (len > 16384)
			return NULL;
		char *plain = xmalloc(base64_decoded_max(len) + 1);
		long long k = base64_decode(b64, len, plain);
		json_t *out = NULL;
		char *colon = k > 0 ? memchr(plain, ':', (size_t)k) : NULL;
		if (colon) {
			plain[k] = '\0';
			*colon = '\0';
			out = json_pack("{s:s, s:s}", "username", plain, "password", colon + 1);
		}
		explicit_bzero(plain, base64_decoded_max(len) + 1);
		free(plain);
		return out;
	}
	const char *user = json_string_value(json_object_get(ent, "username"));
	const char *pass = json_string_value(json_object_get(ent, "password"));
	return user && pass ? json_pack("{s:s, s:s}", "username", user, "password", pass) : NULL;
}

static bool helper_name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

/*
 * Waits for pid until deadline (a helper may close its stdout and linger),
 * then kills it; kill_it kills at once. Its exit status, or -1.
 */
static int reap(pid_t pid, bool kill_it, int64_t deadline)
{
	int st = 0;
	int pfd = kill_it ? -1 : (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		int r;
		do
			r = left > 0 ? poll(&p, 1, (int)left) : 0;
		while (r < 0 && errno == EINTR);
		close(pfd);
		kill_it = r <= 0;
	}
	if (kill_it)
		kill(pid, SIGKILL);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * Runs docker-credential-<name> get with server on stdin. 0 with *ret
 * ({"username","password"} or {"identitytoken"}; NULL when the helper has
 * none for server), or -errno with err.
 */
static int helper_get(const char *name, const char *server, json_t **ret, struct err *err)
{
	int in[2], out[2];
	pid_t pid;
	posix_spawn_file_actions_t fa;

	if (!helper_name_ok(name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "the docker config names credential helper '%.64s', which is not a valid helper name",
			       name);
	_cleanup_free_ char *prog = xasprintf("docker-credential-%s", name);
	if (pipe2(in, O_CLOEXEC) < 0)
		return err_set(err, ERRCODE_INTERNAL, -errno, "pipe: %s", strerror(errno));
	if (pipe2(out, O_CLOEXEC) < 0) {
		int e = errno;
		close(in[0]);
		close(in[1]);
		return err_set(err, ERRCODE_INTERNAL, -e, "pipe: %s", strerror(e));
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	char *argv[] = { prog, (char *)"get", NULL };
	int r = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	if (r != 0) {
		close(in[1]);
		close(out[0]);
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, -r,
			       "the docker config names credential helper %s, which could not be run (%s): install it "
			       "or fix the server user's docker config",
			       prog, strerror(r));
	}
	/* a helper that does not read its stdin gets EPIPE, not SIGPIPE: the server ignores SIGPIPE */
	(void)write_full(in[1], server, strlen(server));
	close(in[1]);
	struct buf ans;
	buf_init(&ans, REGAUTH_HELPER_OUT_MAX);
	int64_t deadline = now_ms() + REGAUTH_HELPER_MS;
	bool late = false, big = false;
	for (;;) {
		struct pollfd pfd = { .fd = out[0], .events = POLLIN };
		int64_t left = deadline - now_ms();
		int p = left > 0 ? poll(&pfd, 1, (int)left) : 0;
		if (p < 0 && errno == EINTR)
			continue;
		if (p <= 0) {
			late = true;
			break;
		}
		char *tail;
		if (buf_reserve(&ans, 4096, &tail) < 0) {
			big = true;
			break;
		}
		ssize_t n = read(out[0], tail, 4096);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		buf_commit(&ans, (size_t)n);
	}
	close(out[0]);
	int status = reap(pid, late || big, deadline);
	json_t *j = status == 0 && !late && !big ? json_loadb(ans.data, ans.len, 0, NULL) : NULL;
	bool none = status != 0 && !late && !big && strstr(ans.data ? ans.data : "", "not found");
	wipe(&ans);
	if (none) {
		*ret = NULL;
		return 0;
	}
	const char *user = json_string_value(json_object_get(j, "Username"));
	const char *secret = json_string_value(json_object_get(j, "Secret"));
	if (!user || !secret) {
		json_decref(j);
		return err_set(err, ERRCODE_IMAGE_NOT_FOUND, -EPROTO,
			       "credential helper %s %s for %.100s: fix it or the server user's docker config", prog,
			       late  ? "took too long"
			       : big ? "answered too much"
				     : "gave no credentials",
			       server);
	}
	*ret = strcmp(user, "<token>") == 0 ? json_pack("{s:s}", "identitytoken", secret)
					    : json_pack("{s:s, s:s}", "username", user, "password", secret);
	json_decref(j);
	return 0;
}

/* base64url of the compact JSON of creds, with serveraddress set. */
static char *encode(json_t *creds, const char *server)
{
	json_object_set_new(creds, "serveraddress", json_string(server));
	char *text = json_dumps(creds, JSON_COMPACT);
	if (!text)
		return NULL;
	size_t n = strlen(text);
	char *out = xmalloc(base64_encoded_len(n) + 1);
	base64_encode(text, n, out);
	for (char *p = out; *p; p++)
		*p = *p == '+' ? '-' : *p == '/' ? '_' : *p;
	explicit_bzero(text, n);
	free(text);
	return out;
}

int regauth_header(const char *domain, char **ret, struct err *err)
{
	char *cfg = NULL;
	size_t cfg_len = 0;
	json_t *creds = NULL;
	const char *server = strcmp(domain, "docker.io") == 0 ? REGAUTH_HUB_KEY : domain;
	int r;

	*ret = NULL;
	r = config_read(&cfg, &cfg_len);
	json_t *j = r == 0 && cfg_len ? json_loadb(cfg, cfg_len, 0, NULL) : NULL;
	if (cfg) /* it may hold a secret */
		explicit_bzero(cfg, cfg_len);
	free(cfg);
	if (!json_is_object(j)) {
		json_decref(j);
		return 0; /* no config (or none readable): pull without credentials, as the CLI does */
	}
	const char *helper = json_string_value(json_object_get(json_object_get(j, "credHelpers"), server));
	if (!helper)
		helper = json_string_value(json_object_get(j, "credsStore"));
	if (helper && *helper)
		r = helper_get(helper, server, &creds, err);
	else
		creds = from_auths(json_object_get(j, "auths"), server, domain);
	json_decref(j);
	if (r < 0)
		return r;
	if (creds) {
		*ret = encode(creds, server);
		json_decref(creds);
	}
	return 0;
}
