/*
 * endpoint.h - where the Docker Engine listens, and connecting to it.
 *
 * DOCKER_HOST is read as the docker CLI reads it: unix:///path or
 * tcp://host:port or ssh://[user@]host[:port], tcp:// in TLS when DOCKER_TLS_VERIFY/--tlsverify says
 * so (struct endpoint_tls, from the settings as the CLI reads them).  Unset or
 * empty means the compiled-in default socket.
 */
#ifndef ENDPOINT_H
#define ENDPOINT_H

#include <sys/un.h>

#include <stdbool.h>

#include "base/errcode.h"

struct http_conn;
struct tls_ctx;

enum endpoint_kind {
	ENDPOINT_UNIX,
	ENDPOINT_TCP,
	ENDPOINT_SSH, /* ssh://[user@]host[:port]: ssh ... docker system dial-stdio (sshconn.h) */
};

struct endpoint {
	enum endpoint_kind kind;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char host[256];
	char port[8];	     /* "" for ssh:// without one: ssh's own default or config */
	char user[64];	     /* ssh:// only; "": ssh's default or config */
	char display[300];   /* as the user wrote it, for messages */
	struct tls_ctx *tls; /* TLS on tcp://, owned (endpoint_release); NULL: plain */
};

/* TLS settings as the docker CLI resolves them; a NULL file is not used (CA: system store). */
struct endpoint_tls {
	bool verify;
	bool skip_verify; /* a context's SkipTLSVerify: TLS without checking the engine's certificate */
	const char *ca, *cert, *key;
};

/* 0, or -EINVAL with a message saying what DOCKER_HOST must look like. */
int endpoint_parse(const char *docker_host, struct endpoint *ret, struct err *err);
/*
 * endpoint_parse, then loads the TLS material when tls->verify (tcp://
 * only; tls may be NULL). A plain tcp:// to a host other than loopback is
 * logged as a warning. Release with endpoint_release.
 */
struct config;
/*
 * The TLS settings of the config for endpoint_open. Files not named by a
 * flag default to cert_path/ca.pem, cert.pem, key.pem, each used only if it
 * exists (as the docker CLI does). The strings point into paths, which must
 * outlive *ret.
 */
void endpoint_tls_from_config(const struct config *c, struct endpoint_tls *ret, char paths[3][4096]);

int endpoint_open(const char *docker_host, const struct endpoint_tls *tls, struct endpoint *ret, struct err *err);
void endpoint_release(struct endpoint *ep);
/* True when host is localhost or a loopback address. */
bool endpoint_host_is_loopback(const char *host);

/*
 * Connects with a timeout; the fd is CLOEXEC and blocking. 0 with *ret_fd,
 * or -errno with err (ERRCODE_DOCKER_UNAVAILABLE) saying how to fix it.
 */
int endpoint_connect(const struct endpoint *ep, int timeout_ms, int *ret_fd, struct err *err);
/*
 * endpoint_connect for a connection that carries HTTP requests and is
 * never hijacked: over TLS the session runs in the calling thread (no
 * relay). *ret has http_timeout_ms (http_conn_create).
 */
int endpoint_connect_http(const struct endpoint *ep, int timeout_ms, int http_timeout_ms, struct http_conn **ret,
			  struct err *err);

#endif
