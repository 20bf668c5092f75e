/*
 * transport.h - where the Docker Engine listens, and connecting to it.
 *
 * DOCKER_HOST is read as the docker CLI reads it: unix:///path or
 * tcp://host:port (plain HTTP; TLS is not supported).  Unset or empty means
 * the compiled-in default socket.
 */
#ifndef TRANSPORT_H
#define TRANSPORT_H

#include <sys/un.h>

#include "errcode.h"

enum transport_kind {
	TRANSPORT_UNIX,
	TRANSPORT_TCP,
};

struct endpoint {
	enum transport_kind kind;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char host[256];
	char port[8];
	char display[300]; /* as the user wrote it, for messages */
};

/* 0, or -EINVAL with a message saying what DOCKER_HOST must look like. */
int transport_parse(const char *docker_host, struct endpoint *ret, struct err *err);

/*
 * Connects with a timeout; the fd is CLOEXEC and blocking. 0 with *ret_fd,
 * or -errno with err (ERRCODE_DOCKER_UNAVAILABLE) saying how to fix it.
 */
int transport_connect(const struct endpoint *ep, int timeout_ms, int *ret_fd, struct err *err);

#endif
