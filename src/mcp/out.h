/*
 * out.h - where protocol messages leave: stdout, or one HTTP exchange.
 *
 * Every protocol message leaves through out_send, which serialises it to one
 * line and writes the whole line under a mutex, so responses, progress and log
 * notifications from different threads never interleave.  Once the client has
 * closed its end (EPIPE), the writer stays closed and the server shuts down.
 *
 * A sink (out_create_sink) hands each line to a transport instead of an fd:
 * the HTTP server makes one per request, and everything the request causes
 * (its progress, its log lines, its response) is written to it.  Outs are
 * counted: each holder (the transport, a queued call) takes a reference, and
 * when the last is dropped the sink's release runs, which tells the
 * transport that nothing more will be written for that request.
 */
#ifndef OUT_H
#define OUT_H

#include <stdbool.h>

#include <jansson.h>

struct out;

/* What a sink does with each line and when the last reference is gone. */
struct out_sink {
	/*
	 * line is len bytes ending in '\n'; response: the message answers a
	 * request (an id and no method), so nothing more comes for that request.
	 * 0, or -EPIPE when the client is gone.
	 */
	int (*write)(void *data, const char *line, size_t len, bool response);
	/* no more writes will come; data may be freed */
	void (*release)(void *data);
	void *data;
};

/* fd is borrowed (normally STDOUT_FILENO). One reference. */
struct out *out_create(int fd);
/* Lines go to sink (copied). One reference. */
struct out *out_create_sink(const struct out_sink *sink);
/* Another reference to o (NULL is passed through). */
struct out *out_get(struct out *o);
/* Drops a reference; the last one frees o (and releases its sink). NULL is a no-op. */
void out_put(struct out *o);
/* Same as out_put: for the creator of an fd out. */
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
