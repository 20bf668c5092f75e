/*
 * connect.h - the agent's end of a port forward (connect.c): connects to a
 * port on the sandbox's own loopback and carries the bytes between that
 * connection and stdin/stdout, one exec per forwarded connection.
 */
#ifndef CONNECT_H
#define CONNECT_H

/* Runs until both directions ended. port: decimal 1-65535. The exit status (1: could not connect). */
int connect_main(const char *port);

#endif
