/*
 * sshconn.h - a Docker engine reached through ssh, as the docker CLI does:
 * `ssh -o BatchMode=yes [-l user] [-p port] -- host docker system dial-stdio`,
 * ssh found through PATH and configured by the user's ssh config.
 *
 * Each connection is one ssh process whose stdin and stdout are one end of a
 * socketpair; the caller gets the other end, a plain fd like a unix socket's.
 * A new connection is proven with HEAD /_ping before it is handed over, so a
 * host key, login or remote docker failure is reported at once, with ssh's own
 * words, rather than as a closed connection later. A reaper thread collects
 * the process when the connection ends.
 */
#ifndef SSHCONN_H
#define SSHCONN_H

#include "base/errcode.h"

/* Last bytes of ssh's stderr kept for a message. */
#define SSHCONN_STDERR_MAX 2048

/*
 * Starts ssh to host (user and port may be ""), display naming the endpoint
 * in messages. 0 with *ret_fd (CLOEXEC, blocking), or -errno with err
 * (ERRCODE_DOCKER_UNAVAILABLE) carrying ssh's reason and what to do.
 */
int sshconn_open(const char *user, const char *host, const char *port, const char *display, int timeout_ms, int *ret_fd,
		 struct err *err);

#endif
