/*
 * httpwatch.h - the whole-request deadline of the HTTP server (slowloris).
 *
 * libmicrohttpd's connection timeout is an idle timeout: every byte restarts
 * it, so a client that drips a byte a second holds a connection thread for
 * ever.  httpwatch gives each request a deadline instead: from the moment
 * the connection opens (or its previous answer was sent) the request's head
 * and body must be in within the limit, else a watcher thread shuts the
 * socket down and libmicrohttpd closes the connection.  While a request is
 * served there is no deadline (a long call may take minutes); a response
 * write that makes no progress is cut by the idle timeout.
 */
#ifndef HTTPWATCH_H
#define HTTPWATCH_H

#include "base/errcode.h"

/* Longest the watcher sleeps, ms (it also wakes for the nearest deadline). */
#define HTTPWATCH_TICK_MS 1000

struct httpwatch;
struct httpwatch_conn;

/* Starts the watcher thread; deadline_s is the limit per request. 0 or -errno with err. */
int httpwatch_create(unsigned deadline_s, struct httpwatch **ret, struct err *err);
/* Stops the watcher (every connection must be gone). NULL is a no-op. */
void httpwatch_destroy(struct httpwatch *w);

/* A connection opened on fd: its first request's clock starts. The entry is the caller's until _remove. */
struct httpwatch_conn *httpwatch_add(struct httpwatch *w, int fd);
/* The request is in (head and body): no deadline while it is served. NULL is a no-op. */
void httpwatch_pause(struct httpwatch *w, struct httpwatch_conn *c);
/* Its answer is sent: the next request on the connection gets a fresh deadline. NULL is a no-op. */
void httpwatch_rearm(struct httpwatch *w, struct httpwatch_conn *c);
/* The connection closed (before its fd is): forgotten and freed. NULL is a no-op. */
void httpwatch_remove(struct httpwatch *w, struct httpwatch_conn *c);

#endif
