/*
 * out.h - the single writer of stdout.
 *
 * Every protocol message leaves through out_send, which serialises it to one
 * line and writes the whole line under a mutex, so responses, progress and log
 * notifications from different threads never interleave.  Once the client has
 * closed its end (EPIPE), the writer stays closed and the server shuts down.
 */
#ifndef OUT_H
#define OUT_H

#include <stdbool.h>

#include <jansson.h>

struct out;

/* fd is borrowed (normally STDOUT_FILENO). */
struct out *out_create(int fd);
void out_destroy(struct out *o);
/* Writes msg as one line; msg is borrowed. 0, -EPIPE once closed, or -errno. */
int out_send(struct out *o, json_t *msg);
/* Same, and drops the reference to msg. */
int out_send_new(struct out *o, json_t *msg);
/*
 * Writes line (len bytes, one message ending in '\n') as it is: for a thread
 * that sends the same message again and again and must not allocate.
 */
int out_send_line(struct out *o, const char *line, size_t len);
/* True once a write failed because the client went away. */
bool out_closed(struct out *o);

#endif
