/*
 * out.c - serialised, whole-line writes to stdout.
 *
 * Messages are dumped outside the lock (that is where the time goes for a big
 * result) and written inside it.  SIGPIPE is ignored process-wide by main, so
 * a vanished client shows up here as EPIPE.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mcp/out.h"

struct out {
	int fd;		      /* -1 for a sink */
	struct out_sink sink; /* write NULL: write to fd */
	pthread_mutex_t lock;
	atomic_bool closed;
	atomic_uint refs;
};

static int send_line(struct out *o, const char *line, size_t len, bool response);

struct out *out_create(int fd)
{
	struct out *o = xcalloc(1, sizeof(*o));
	o->fd = fd;
	pthread_mutex_init(&o->lock, NULL);
	atomic_init(&o->closed, false);
	atomic_init(&o->refs, 1);
	return o;
}

struct out *out_create_sink(const struct out_sink *sink)
{
	struct out *o = out_create(-1);
	o->sink = *sink;
	return o;
}

struct out *out_get(struct out *o)
{
	if (o)
		atomic_fetch_add(&o->refs, 1);
	return o;
}

void out_put(struct out *o)
{
	if (!o || atomic_fetch_sub(&o->refs, 1) != 1)
		return;
	if (o->sink.release)
		o->sink.release(o->sink.data);
	pthread_mutex_destroy(&o->lock);
	free(o);
}

void out_destroy(struct out *o)
{
	out_put(o);
}

int out_send(struct out *o, json_t *msg)
{
	if (atomic_load(&o->closed))
		return -EPIPE;
	/*
	 * JSON_COMPACT never emits a raw newline: strings escape it. Reals get
	 * the fewest digits that read back the same (0.331, not 0.33100000000000002).
	 */
	char *line = json_dumps(msg, JSON_COMPACT | JSON_REAL_PRECISION(json_real_digits(msg)));
	if (!line)
		return -EINVAL;
	size_t n = strlen(line);
	line[n] = '\n'; /* overwrite the NUL; length passed explicitly */
	bool response = json_object_get(msg, "id") && !json_object_get(msg, "method");
	int r = send_line(o, line, n + 1, response);
	free(line);
	return r;
}

int out_send_line(struct out *o, const char *line, size_t len)
{
	return send_line(o, line, len, false);
}

static int send_line(struct out *o, const char *line, size_t len, bool response)
{
	if (atomic_load(&o->closed))
		return -EPIPE;
	pthread_mutex_lock(&o->lock);
	int r = o->sink.write ? o->sink.write(o->sink.data, line, len, response) : write_full(o->fd, line, len);
	pthread_mutex_unlock(&o->lock);
	if (r == -EPIPE || r == -EBADF)
		atomic_store(&o->closed, true);
	return r;
}

int out_send_new(struct out *o, json_t *msg)
{
	int r = out_send(o, msg);
	json_decref(msg);
	return r;
}

bool out_closed(struct out *o)
{
	return atomic_load(&o->closed);
}
