/*
 * connect.h - the agent's end of a port forward (connect.c): connects to a
 * port on the sandbox's own loopback and carries the bytes between that
 * connection and stdin/stdout, one exec per forwarded connection. It writes
 * CONNECT_READY, and dials once stdin brings CONNECT_GO (neither is passed on).
 */
#ifndef CONNECT_H
#define CONNECT_H

/* The byte it writes first, before anything of the connection: it runs. */
#define CONNECT_READY 'R'
/* The byte the server sends first: dial now. */
#define CONNECT_GO 'G'

/* Runs until both directions ended. port: decimal 1-65535. The exit status (1: could not connect). */
int connect_main(const char *port);

#endif
