/*
 * fake-engine.c - a deliberately faulty Docker Engine on a unix socket, for
 * the fault suite.  This is the one fake engine in the tree: every other test
 * talks to the real dockerd.
 *
 *   fake-engine [-t SECONDS] [-n COUNT] [-w] SOCKET FAULT [PATTERN]
 *
 * It answers what sandbox-mcp asks of an engine the way a small healthy
 * engine speaking API 1.41 would (version, ping, image inspect, container
 * create/archive/start/inspect/list/restart/remove, exec create/start/inspect
 * with a hijacked, multiplexed stream), except that requests matching PATTERN
 * get FAULT.  PATTERN is an fnmatch(3) pattern over "METHOD /path", with the
 * /vX.Y prefix and the query removed ("POST /exec/ * /start" without the
 * blanks; default "*").  The fault hits the first COUNT matching requests
 * (-n; default every one) and stops after SIGUSR1 or a "heal" line on stdin
 * ("fault NAME COUNT PATTERN" on stdin switches to another fault;
 * "sync" answers "SYNC" once everything before it was logged).
 *
 * Faults: none, refused (socket bound, nobody listening), nosocket (no socket
 * file), close (no answer, clean EOF), reset-head / reset-body (half a head or
 * half a body, then a reset), truncated-chunked, bad-chunk, long-chunk-size,
 * big-header (one header line streamed up to 1 GiB), many-headers, endless (a
 * chunked body streamed up to 1 GiB), trickle (a chunked body, one byte every
 * 200 ms, forever), stall (no answer at all), stall-head (a status line, then
 * nothing), garbage (not HTTP), not-json, wrong-json, empty-json (a JSON
 * content type over something else), http-CODE-json|text|empty (an error
 * status with a JSON {"message"}, a text body or none), and for exec start
 * only: exec-4g (a frame header claiming 4 GiB, then bytes until the client
 * leaves), exec-raw (output that is not multiplexed), exec-hang (the pid
 * line, then nothing until the container is removed or the client leaves).
 *
 * Every request is logged on stdout ("REQ METHOD TARGET"), every injected
 * fault too ("FAULT NAME METHOD TARGET"), so a test can check what the
 * server did, e.g. that it removed its containers on the way out.  "READY"
 * is printed once the socket is set up.
 *
 * Single-threaded and poll-based; every buffer is bounded, every streamed
 * fault stops at 1 GiB, and the process exits by itself after -t seconds
 * (default 300), or on EOF on stdin with -w.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Longest request (head and body) accepted. */
#define IN_MAX (256 * 1024)
/* Largest response held at once; streamed faults refill it as it drains. */
#define OUT_MAX (512 * 1024)
/* Connections served at once; more are closed at once. */
#define CONNS_MAX 128
/* Containers and exec instances remembered. */
#define CONTAINERS_MAX 256
#define EXECS_MAX 1024
/* Where a streamed fault stops. */
#define GEN_MAX (1ull << 30)
/* Bytes added per refill of a streamed fault. */
#define GEN_STEP (64 * 1024)
/* Trickle: one chunk per this many ms. */
#define TRICKLE_MS 200
/* The pid the fake exec reports (the server's wrapper prints its pid first). */
#define FAKE_PID 4242
#define API_VERSION "1.41"
#define ID_LEN 64

enum fault {
	F_NONE,
	F_REFUSED,
	F_NOSOCKET,
	F_CLOSE,
	F_RESET_HEAD,
	F_RESET_BODY,
	F_TRUNCATED_CHUNKED,
	F_BAD_CHUNK,
	F_LONG_CHUNK_SIZE,
	F_BIG_HEADER,
	F_MANY_HEADERS,
	F_ENDLESS,
	F_TRICKLE,
	F_STALL,
	F_STALL_HEAD,
	F_GARBAGE,
	F_NOT_JSON,
	F_WRONG_JSON,
	F_EMPTY_JSON,
	F_HTTP,
	F_EXEC_4G,
	F_EXEC_RAW,
	F_EXEC_HANG,
};

static const char *const fault_names[] = {
	[F_NONE] = "none",
	[F_REFUSED] = "refused",
	[F_NOSOCKET] = "nosocket",
	[F_CLOSE] = "close",
	[F_RESET_HEAD] = "reset-head",
	[F_RESET_BODY] = "reset-body",
	[F_TRUNCATED_CHUNKED] = "truncated-chunked",
	[F_BAD_CHUNK] = "bad-chunk",
	[F_LONG_CHUNK_SIZE] = "long-chunk-size",
	[F_BIG_HEADER] = "big-header",
	[F_MANY_HEADERS] = "many-headers",
	[F_ENDLESS] = "endless",
	[F_TRICKLE] = "trickle",
	[F_STALL] = "stall",
	[F_STALL_HEAD] = "stall-head",
	[F_GARBAGE] = "garbage",
	[F_NOT_JSON] = "not-json",
	[F_WRONG_JSON] = "wrong-json",
	[F_EMPTY_JSON] = "empty-json",
	[F_HTTP] = "http-CODE-KIND",
	[F_EXEC_4G] = "exec-4g",
	[F_EXEC_RAW] = "exec-raw",
	[F_EXEC_HANG] = "exec-hang",
};

enum http_kind {
	HTTP_JSON,
	HTTP_TEXT,
	HTTP_EMPTY,
};

/* What a connection does once its output buffer has drained. */
enum after {
	AFTER_READ,  /* keep-alive: read the next request */
	AFTER_CLOSE, /* read what the client sent, then close: a clean EOF */
	AFTER_RESET, /* close with a request byte unread: the client sees ECONNRESET */
	AFTER_STALL, /* say nothing more; close when the client does */
	AFTER_GEN,   /* refill from the generator */
};

enum gen {
	GEN_NONE,
	GEN_HEADER,
	GEN_HEADERS,
	GEN_CHUNKS,
	GEN_TRICKLE,
	GEN_FRAME,
};

struct conn {
	int fd;
	char *in;
	size_t in_len;
	char *out;
	size_t out_len, out_off;
	enum after after;
	enum gen gen;
	uint64_t gen_sent;
	uint64_t gen_seq;
	int64_t next_tick;
	char container[ID_LEN + 1]; /* a hijacked exec stream's container */
};

struct container {
	bool used;
	char id[ID_LEN + 1];
	char image[256];
	char network[64]; /* HostConfig.NetworkMode as asked for, echoed by inspect */
	json_int_t memory, pids;
	json_t *labels;
	bool running;
};

struct exec_inst {
	char id[ID_LEN + 1];
	char container[ID_LEN + 1];
};

struct request {
	char method[16];
	char target[2048]; /* as sent */
	char path[2048];   /* without /vX.Y and query */
	const char *body;
	size_t body_len;
};

static struct {
	const char *sock_path;
	int listen_fd;
	bool bound, listening;
	enum fault fault;
	int http_code;
	enum http_kind http_kind;
	char pattern[256];
	long count; /* matches left; -1 unlimited */
	struct conn *conns[CONNS_MAX];
	struct container containers[CONTAINERS_MAX];
	struct exec_inst execs[EXECS_MAX];
	size_t exec_next;
	char stdin_line[512];
	size_t stdin_len;
} g = { .listen_fd = -1, .count = -1 };

static volatile sig_atomic_t heal_requested;
static volatile sig_atomic_t stop_requested;

static void on_usr1(int sig)
{
	(void)sig;
	heal_requested = 1;
}

static void on_term(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void random_id(char out[ID_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	static uint64_t seq;
	unsigned char raw[ID_LEN / 2];

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw)) {
		uint64_t x = (uint64_t)mono_ms() ^ ((uint64_t)getpid() << 32) ^ ++seq;
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(x >> (i % 8 * 8)) ^ (unsigned char)(i * 37);
	}
	for (size_t i = 0; i < ID_LEN; i++)
		out[i] = hex[(raw[i / 2] >> (i % 2 ? 0 : 4)) & 15];
	out[ID_LEN] = '\0';
}

static int set_fault(const char *name, const char *pattern, long count)
{
	enum fault f = F_NONE;
	bool found = false;

	if (strncmp(name, "http-", 5) == 0) {
		char kind[16];
		int code;
		if (sscanf(name, "http-%3d-%15s", &code, kind) != 2 || code < 100 || code > 599)
			return -1;
		if (strcmp(kind, "json") == 0)
			g.http_kind = HTTP_JSON;
		else if (strcmp(kind, "text") == 0)
			g.http_kind = HTTP_TEXT;
		else if (strcmp(kind, "empty") == 0)
			g.http_kind = HTTP_EMPTY;
		else
			return -1;
		g.http_code = code;
		f = F_HTTP;
		found = true;
	}
	for (size_t i = 0; !found && i < sizeof(fault_names) / sizeof(fault_names[0]); i++) {
		if (i != F_HTTP && strcmp(name, fault_names[i]) == 0) {
			f = (enum fault)i;
			found = true;
		}
	}
	if (!found)
		return -1;
	g.fault = f;
	snprintf(g.pattern, sizeof(g.pattern), "%s", pattern && *pattern ? pattern : "*");
	g.count = count;
	return 0;
}

/* Binds (and listens on) the socket as far as the fault allows. */
static int setup_socket(void)
{
	if (!g.bound && g.fault != F_NOSOCKET) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		if (strlen(g.sock_path) >= sizeof(sa.sun_path)) {
			fprintf(stderr, "fake-engine: socket path too long: %s\n", g.sock_path);
			return -1;
		}
		memcpy(sa.sun_path, g.sock_path, strlen(g.sock_path) + 1);
		g.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (g.listen_fd < 0 || bind(g.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			fprintf(stderr, "fake-engine: bind %s: %s\n", g.sock_path, strerror(errno));
			return -1;
		}
		g.bound = true;
	}
	if (g.bound && !g.listening && g.fault != F_REFUSED && g.fault != F_NOSOCKET) {
		if (listen(g.listen_fd, 64) < 0) {
			fprintf(stderr, "fake-engine: listen: %s\n", strerror(errno));
			return -1;
		}
		g.listening = true;
	}
	return 0;
}

static void heal(void)
{
	g.fault = F_NONE;
	g.count = -1;
	if (setup_socket() < 0)
		exit(1);
	say("HEALED");
}

/* ---- connections ---- */

static void conn_close(struct conn *c)
{
	for (size_t i = 0; i < CONNS_MAX; i++)
		if (g.conns[i] == c)
			g.conns[i] = NULL;
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

/* Drains what the client sent, then closes: the client reads a clean EOF. */
static void conn_close_clean(struct conn *c)
{
	char tmp[4096];
	shutdown(c->fd, SHUT_WR);
	while (read(c->fd, tmp, sizeof(tmp)) > 0)
		;
	conn_close(c);
}

static bool out_add(struct conn *c, const void *p, size_t n)
{
	if (c->out_off > 0 && c->out_off == c->out_len)
		c->out_off = c->out_len = 0;
	if (c->out_len + n > OUT_MAX && c->out_off > 0) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	if (c->out_len + n > OUT_MAX)
		return false;
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return true;
}

static void out_printf(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_printf(struct conn *c, const char *fmt, ...)
{
	char tmp[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		out_add(c, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static const char *reason(int status)
{
	switch (status) {
	case 101: return "UPGRADED";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 304: return "Not Modified";
	case 400: return "Bad Request";
	case 404: return "Not Found";
	case 409: return "Conflict";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

static void head(struct conn *c, int status, const char *ctype, long long len)
{
	out_printf(c, "HTTP/1.1 %d %s\r\nApi-Version: " API_VERSION "\r\nDocker-Experimental: false\r\n"
		      "Ostype: linux\r\nServer: Docker/20.10.99-fake (linux)\r\n",
		   status, reason(status));
	if (ctype)
		out_printf(c, "Content-Type: %s\r\n", ctype);
	if (len >= 0)
		out_printf(c, "Content-Length: %lld\r\n", len);
	out_add(c, "\r\n", 2);
}

static void respond(struct conn *c, int status, const char *ctype, const char *body, size_t len)
{
	if (status == 204 || status == 304) {
		head(c, status, NULL, -1);
	} else {
		head(c, status, ctype, (long long)len);
		if (!out_add(c, body, len)) {
			/* cannot happen for the bodies built here */
			fprintf(stderr, "fake-engine: response too large\n");
		}
	}
	c->after = AFTER_READ;
}

static void respond_json(struct conn *c, int status, json_t *j)
{
	char *s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	respond(c, status, "application/json", s ? s : "null", s ? strlen(s) : 4);
	free(s);
}

static void respond_message(struct conn *c, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void respond_message(struct conn *c, int status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	respond_json(c, status, json_pack("{s:s}", "message", msg));
}

/* 8-byte multiplexed stream header. */
static void frame(struct conn *c, int stream, const char *p, uint32_t n)
{
	unsigned char h[8] = { (unsigned char)stream, 0, 0, 0, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
			       (unsigned char)(n >> 8), (unsigned char)n };
	out_add(c, h, sizeof(h));
	if (p)
		out_add(c, p, n);
}

static void hijack_head(struct conn *c)
{
	out_add(c,
		"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\n"
		"Upgrade: tcp\r\n\r\n",
		strlen("HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n"
		       "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n"));
}

/* Refills a streamed fault's output; false when it reached its end. */
static bool gen_refill(struct conn *c)
{
	static char fill[GEN_STEP];
	if (!fill[0])
		memset(fill, 'a', sizeof(fill));
	if (c->gen_sent >= GEN_MAX)
		return false;
	switch (c->gen) {
	case GEN_HEADER:
	case GEN_FRAME:
		out_add(c, fill, sizeof(fill));
		break;
	case GEN_HEADERS:
		for (int i = 0; i < 1024; i++)
			out_printf(c, "X-Fill-%llu: a\r\n", (unsigned long long)c->gen_seq++);
		break;
	case GEN_CHUNKS:
		out_printf(c, "%x\r\n", (unsigned)sizeof(fill));
		out_add(c, fill, sizeof(fill));
		out_add(c, "\r\n", 2);
		break;
	case GEN_TRICKLE:
	case GEN_NONE:
		break;
	}
	return true;
}

/* ---- the healthy engine ---- */

static struct container *container_find(const char *id)
{
	for (size_t i = 0; i < CONTAINERS_MAX; i++)
		if (g.containers[i].used && strcmp(g.containers[i].id, id) == 0)
			return &g.containers[i];
	return NULL;
}

static const char *exec_container(const char *exec_id)
{
	for (size_t i = 0; i < EXECS_MAX; i++)
		if (g.execs[i].id[0] && strcmp(g.execs[i].id, exec_id) == 0)
			return g.execs[i].container;
	return NULL;
}

/* Copies path segment k ("/containers/ID/json": 0 containers, 1 ID) into out. */
static bool segment(const char *path, int k, char *out, size_t outsz)
{
	const char *p = path;
	for (int i = 0; i <= k; i++) {
		if (*p != '/')
			return false;
		p++;
		const char *e = strchr(p, '/');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (i == k) {
			if (n == 0 || n >= outsz)
				return false;
			memcpy(out, p, n);
			out[n] = '\0';
			return true;
		}
		p += n;
	}
	return false;
}

static int segments(const char *path)
{
	int n = 0;
	for (const char *p = path; *p; p++)
		n += *p == '/';
	return n;
}

static void container_create(struct conn *c, const struct request *rq)
{
	json_error_t jerr;
	json_t *body = json_loadb(rq->body, rq->body_len, 0, &jerr);
	if (!json_is_object(body)) {
		json_decref(body);
		respond_message(c, 400, "invalid JSON: %s", jerr.text);
		return;
	}
	struct container *ct = NULL;
	for (size_t i = 0; i < CONTAINERS_MAX && !ct; i++)
		if (!g.containers[i].used)
			ct = &g.containers[i];
	if (!ct) {
		json_decref(body);
		respond_message(c, 500, "fake engine: too many containers");
		return;
	}
	memset(ct, 0, sizeof(*ct));
	ct->used = true;
	random_id(ct->id);
	const char *image = json_string_value(json_object_get(body, "Image"));
	snprintf(ct->image, sizeof(ct->image), "%s", image ? image : "");
	json_t *hc = json_object_get(body, "HostConfig");
	ct->memory = json_integer_value(json_object_get(hc, "Memory"));
	ct->pids = json_integer_value(json_object_get(hc, "PidsLimit"));
	const char *net = json_string_value(json_object_get(hc, "NetworkMode"));
	snprintf(ct->network, sizeof(ct->network), "%s", net ? net : "default");
	json_t *labels = json_object_get(body, "Labels");
	ct->labels = json_is_object(labels) ? json_incref(labels) : json_object();
	json_decref(body);
	say("CREATED %s", ct->id);
	respond_json(c, 201, json_pack("{s:s, s:[]}", "Id", ct->id, "Warnings"));
}

static void container_remove(struct container *ct)
{
	say("REMOVED %s", ct->id);
	/* like the real engine: removing a container ends the streams of its execs */
	for (size_t i = 0; i < CONNS_MAX; i++) {
		struct conn *o = g.conns[i];
		if (o && o->container[0] && strcmp(o->container, ct->id) == 0)
			conn_close_clean(o);
	}
	json_decref(ct->labels);
	memset(ct, 0, sizeof(*ct));
}

static json_t *container_json(const struct container *ct)
{
	return json_pack("{s:s, s:s, s:{s:b, s:s, s:i, s:i}, s:{s:[s], s:[s], s:I, s:I, s:b, s:s}, s:{s:s, s:O}}", "Id",
			 ct->id, "Image", ct->image, "State", "Running", ct->running, "Status",
			 ct->running ? "running" : "created", "Pid", ct->running ? FAKE_PID : 0, "ExitCode", 0,
			 "HostConfig", "CapDrop", "ALL", "SecurityOpt", "no-new-privileges", "Memory", ct->memory,
			 "PidsLimit", ct->pids, "Privileged", 0, "NetworkMode", ct->network, "Config", "User", "1000:1000",
			 "Labels", ct->labels);
}

static void exec_create(struct conn *c, struct container *ct)
{
	struct exec_inst *x = &g.execs[g.exec_next++ % EXECS_MAX];
	random_id(x->id);
	snprintf(x->container, sizeof(x->container), "%s", ct->id);
	respond_json(c, 201, json_pack("{s:s}", "Id", x->id));
}

static void exec_start(struct conn *c, const char *container)
{
	char pid[16];
	int n = snprintf(pid, sizeof(pid), "%d\n", FAKE_PID);
	snprintf(c->container, sizeof(c->container), "%s", container);
	hijack_head(c);
	frame(c, 2, pid, (uint32_t)n);
	frame(c, 1, "hello\n", 6);
	c->after = AFTER_CLOSE;
}

static void healthy(struct conn *c, const struct request *rq)
{
	char id[ID_LEN + 1], name[1024];
	const char *m = rq->method, *p = rq->path;
	int nseg = segments(p);

	if (strcmp(p, "/_ping") == 0) {
		respond(c, 200, "text/plain; charset=utf-8", "OK", 2);
	} else if (strcmp(m, "GET") == 0 && strcmp(p, "/version") == 0) {
		respond_json(c, 200,
			     json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "Version", "20.10.99-fake", "ApiVersion",
				       API_VERSION, "MinAPIVersion", "1.12", "Os", "linux", "Arch", "amd64",
				       "KernelVersion", "5.0.0-fake", "GoVersion", "go1.0"));
	} else if (strcmp(m, "GET") == 0 && strncmp(p, "/images/", 8) == 0 && strlen(p) > 13 &&
		   strcmp(p + strlen(p) - 5, "/json") == 0) {
		snprintf(name, sizeof(name), "%.*s", (int)(strlen(p) - 13), p + 8);
		respond_json(c, 200,
			     json_pack("{s:s, s:[s], s:{s:s, s:[s]}, s:s, s:s}", "Id",
				       "sha256:0000000000000000000000000000000000000000000000000000000000000000",
				       "RepoTags", name, "Config", "User", "", "Env", "PATH=/usr/bin:/bin", "Os", "linux",
				       "Architecture", "amd64"));
	} else if (strcmp(m, "POST") == 0 && strcmp(p, "/containers/create") == 0) {
		container_create(c, rq);
	} else if (strcmp(m, "GET") == 0 && strcmp(p, "/containers/json") == 0) {
		json_t *list = json_array();
		for (size_t i = 0; i < CONTAINERS_MAX; i++) {
			const struct container *ct = &g.containers[i];
			if (ct->used)
				json_array_append_new(list, json_pack("{s:s, s:s, s:O, s:s}", "Id", ct->id, "Image",
								      ct->image, "Labels", ct->labels, "State",
								      ct->running ? "running" : "created"));
		}
		respond_json(c, 200, list);
	} else if (strncmp(p, "/containers/", 12) == 0 && nseg >= 2 && segment(p, 1, id, sizeof(id))) {
		struct container *ct = container_find(id);
		char verb[32] = "";
		if (nseg == 3)
			segment(p, 2, verb, sizeof(verb));
		if (!ct) {
			respond_message(c, 404, "No such container: %s", id);
		} else if (nseg == 2 && strcmp(m, "DELETE") == 0) {
			container_remove(ct);
			respond(c, 204, NULL, NULL, 0);
		} else if (strcmp(m, "GET") == 0 && strcmp(verb, "json") == 0) {
			respond_json(c, 200, container_json(ct));
		} else if (strcmp(m, "PUT") == 0 && strcmp(verb, "archive") == 0) {
			respond(c, 200, NULL, "", 0);
		} else if (strcmp(m, "POST") == 0 &&
			   (strcmp(verb, "start") == 0 || strcmp(verb, "restart") == 0)) {
			ct->running = true;
			respond(c, 204, NULL, NULL, 0);
		} else if (strcmp(m, "POST") == 0 && (strcmp(verb, "stop") == 0 || strcmp(verb, "kill") == 0)) {
			ct->running = false;
			respond(c, 204, NULL, NULL, 0);
		} else if (strcmp(m, "POST") == 0 && strcmp(verb, "exec") == 0) {
			if (!ct->running)
				respond_message(c, 409, "Container %s is not running", id);
			else
				exec_create(c, ct);
		} else {
			respond_message(c, 404, "page not found");
		}
	} else if (strncmp(p, "/exec/", 6) == 0 && nseg == 3 && segment(p, 1, id, sizeof(id))) {
		const char *ctid = exec_container(id);
		char verb[32] = "";
		segment(p, 2, verb, sizeof(verb));
		if (!ctid)
			respond_message(c, 404, "No such exec instance: %s", id);
		else if (strcmp(m, "POST") == 0 && strcmp(verb, "start") == 0)
			exec_start(c, ctid);
		else if (strcmp(m, "GET") == 0 && strcmp(verb, "json") == 0)
			respond_json(c, 200,
				     json_pack("{s:s, s:b, s:i, s:i, s:s}", "ID", id, "Running", 0, "ExitCode", 0, "Pid",
					       FAKE_PID, "ContainerID", ctid));
		else
			respond_message(c, 404, "page not found");
	} else {
		respond_message(c, 404, "page not found");
	}
}

/* ---- faults ---- */

static bool is_exec_start(const struct request *rq)
{
	return strcmp(rq->method, "POST") == 0 && fnmatch("/exec/*/start", rq->path, 0) == 0;
}

static bool fault_applies(const struct request *rq)
{
	char key[2100];

	if (g.fault == F_NONE || g.fault == F_REFUSED || g.fault == F_NOSOCKET || g.count == 0)
		return false;
	if ((g.fault == F_EXEC_4G || g.fault == F_EXEC_RAW || g.fault == F_EXEC_HANG) && !is_exec_start(rq))
		return false;
	snprintf(key, sizeof(key), "%s %s", rq->method, rq->path);
	if (fnmatch(g.pattern, key, 0) != 0)
		return false;
	if (g.count > 0)
		g.count--;
	return true;
}

/* Answers rq with the current fault. */
static void faulty(struct conn *c, const struct request *rq)
{
	static const char json_head[] = "HTTP/1.1 200 OK\r\nApi-Version: " API_VERSION
					"\r\nContent-Type: application/json\r\n";
	char pid[16];
	int n;

	say("FAULT %s %s %s", g.fault == F_HTTP ? "http" : fault_names[g.fault], rq->method, rq->target);
	switch (g.fault) {
	case F_NONE:
	case F_REFUSED:
	case F_NOSOCKET:
		healthy(c, rq);
		return;
	case F_CLOSE:
		c->after = AFTER_CLOSE;
		return;
	case F_RESET_HEAD:
		out_printf(c, "HTTP/1.1 200 OK\r\nApi-Version: " API_VERSION "\r\nContent-Ty");
		c->after = AFTER_RESET;
		return;
	case F_RESET_BODY:
		out_printf(c, "%sContent-Length: 4096\r\n\r\n{\"Id\":\"0123456789abcdef", json_head);
		c->after = AFTER_RESET;
		return;
	case F_TRUNCATED_CHUNKED:
		out_printf(c, "%sTransfer-Encoding: chunked\r\n\r\n400\r\n{\"Version\":\"20.10", json_head);
		c->after = AFTER_CLOSE;
		return;
	case F_BAD_CHUNK:
		out_printf(c, "%sTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", json_head);
		c->after = AFTER_CLOSE;
		return;
	case F_LONG_CHUNK_SIZE:
		out_printf(c, "%sTransfer-Encoding: chunked\r\n\r\n10000000000000000000000000000002\r\n{}\r\n0\r\n\r\n",
			   json_head);
		c->after = AFTER_CLOSE;
		return;
	case F_BIG_HEADER:
		out_printf(c, "%sX-Fill: ", json_head);
		c->gen = GEN_HEADER;
		c->after = AFTER_GEN;
		return;
	case F_MANY_HEADERS:
		out_printf(c, "%s", json_head);
		c->gen = GEN_HEADERS;
		c->after = AFTER_GEN;
		return;
	case F_ENDLESS:
		out_printf(c, "%sTransfer-Encoding: chunked\r\n\r\n", json_head);
		c->gen = GEN_CHUNKS;
		c->after = AFTER_GEN;
		return;
	case F_TRICKLE:
		out_printf(c, "%sTransfer-Encoding: chunked\r\n\r\n1\r\n[\r\n", json_head);
		c->gen = GEN_TRICKLE;
		c->next_tick = mono_ms() + TRICKLE_MS;
		c->after = AFTER_GEN;
		return;
	case F_STALL:
		c->after = AFTER_STALL;
		return;
	case F_STALL_HEAD:
		out_printf(c, "HTTP/1.1 200 OK\r\n");
		c->after = AFTER_STALL;
		return;
	case F_GARBAGE:
		out_printf(c, "SSH-2.0-OpenSSH_9.0\r\n\r\n");
		c->after = AFTER_CLOSE;
		return;
	case F_NOT_JSON:
		respond(c, 200, "application/json", "<html><body>502 Bad Gateway</body></html>", 41);
		return;
	case F_WRONG_JSON:
		respond(c, 200, "application/json", "[\"not\", \"an\", \"object\"]", 24);
		return;
	case F_EMPTY_JSON:
		respond(c, 200, "application/json", "", 0);
		return;
	case F_HTTP:
		if (g.http_kind == HTTP_JSON)
			respond_message(c, g.http_code, "fake engine: injected HTTP %d on %s %s", g.http_code,
					rq->method, rq->path);
		else if (g.http_kind == HTTP_TEXT)
			respond(c, g.http_code, "text/plain; charset=utf-8", "fake engine: something broke\n", 29);
		else
			respond(c, g.http_code, NULL, "", 0);
		return;
	case F_EXEC_4G:
	case F_EXEC_RAW:
	case F_EXEC_HANG: {
		char id[ID_LEN + 1];
		const char *ctid = segment(rq->path, 1, id, sizeof(id)) ? exec_container(id) : NULL;
		if (!ctid) {
			respond_message(c, 404, "No such exec instance: %s", id);
			return;
		}
		snprintf(c->container, sizeof(c->container), "%s", ctid);
		hijack_head(c);
		n = snprintf(pid, sizeof(pid), "%d\n", FAKE_PID);
		if (g.fault == F_EXEC_RAW) {
			out_printf(c, "total 0\nhello from a tty\n");
			c->after = AFTER_CLOSE;
			return;
		}
		frame(c, 2, pid, (uint32_t)n);
		if (g.fault == F_EXEC_HANG) {
			c->after = AFTER_STALL;
			return;
		}
		frame(c, 1, NULL, 0xffffffffu);
		c->gen = GEN_FRAME;
		c->after = AFTER_GEN;
		return;
	}
	}
}

/* ---- request reading ---- */

static bool header_value(const char *head, size_t len, const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name);
	const char *p = memchr(head, '\n', len);
	const char *end = head + len;
	while (p && p + 1 < end) {
		p++;
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			break;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1;
			while (v < eol && (*v == ' ' || *v == '\t'))
				v++;
			const char *ve = eol;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' '))
				ve--;
			snprintf(out, outsz, "%.*s", (int)(ve - v), v);
			return true;
		}
		p = eol;
	}
	return false;
}

static bool parse_request_line(const char *buf, size_t head_len, struct request *rq)
{
	const char *eol = memchr(buf, '\n', head_len);
	char line[2200];
	char version[16];

	if (!eol || (size_t)(eol - buf) >= sizeof(line))
		return false;
	memcpy(line, buf, (size_t)(eol - buf));
	line[eol - buf] = '\0';
	if (sscanf(line, "%15s %2047s %15s", rq->method, rq->target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7) != 0)
		return false;
	const char *t = rq->target;
	/* drop /v1.41 */
	if (t[0] == '/' && t[1] == 'v' && t[2] >= '0' && t[2] <= '9') {
		const char *s = strchr(t + 1, '/');
		t = s ? s : "/";
	}
	size_t n = strcspn(t, "?");
	snprintf(rq->path, sizeof(rq->path), "%.*s", (int)n, t);
	return true;
}

/*
 * Reads with MSG_PEEK and consumes only whole requests, so a reset fault can
 * close with the request's last byte still unread (which is what makes a
 * unix socket report ECONNRESET to the client instead of a clean EOF).
 */
static void conn_read(struct conn *c)
{
	size_t old = c->in_len;
	ssize_t n = recv(c->fd, c->in + old, IN_MAX - old, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	size_t len = old + (size_t)n;
	const char *he = NULL;
	for (size_t i = 3; i < len && !he; i++)
		if (memcmp(c->in + i - 3, "\r\n\r\n", 4) == 0)
			he = c->in + i + 1;
	size_t total = 0, head_len = 0;
	char cl[32];
	if (he) {
		head_len = (size_t)(he - c->in);
		unsigned long long b = 0;
		if (header_value(c->in, head_len, "Content-Length", cl, sizeof(cl)))
			b = strtoull(cl, NULL, 10);
		total = head_len + (size_t)(b < IN_MAX ? b : IN_MAX);
	}
	if (!he || len < total) {
		char tmp[4096];
		size_t left = (size_t)n;
		while (left > 0) {
			ssize_t r = recv(c->fd, tmp, left < sizeof(tmp) ? left : sizeof(tmp), MSG_DONTWAIT);
			if (r <= 0)
				break;
			left -= (size_t)r;
		}
		c->in_len = len - left;
		if (c->in_len >= IN_MAX || (he && total >= IN_MAX)) {
			respond_message(c, 400, "fake engine: request too large");
			c->after = AFTER_CLOSE;
		}
		return;
	}

	struct request rq;
	memset(&rq, 0, sizeof(rq));
	if (!parse_request_line(c->in, head_len, &rq)) {
		respond_message(c, 400, "fake engine: bad request line");
		c->after = AFTER_CLOSE;
		return;
	}
	rq.body = c->in + head_len;
	rq.body_len = total - head_len;
	say("REQ %s %s", rq.method, rq.target);
	bool f = fault_applies(&rq);
	if (f)
		faulty(c, &rq);
	else
		healthy(c, &rq);
	/* consume the request; a reset leaves its last byte unread */
	size_t want = total - old - (c->after == AFTER_RESET ? 1 : 0);
	char tmp[4096];
	while (want > 0) {
		ssize_t r = recv(c->fd, tmp, want < sizeof(tmp) ? want : sizeof(tmp), MSG_DONTWAIT);
		if (r <= 0)
			break;
		want -= (size_t)r;
	}
	c->in_len = 0;
}

/* Writes what is pending; runs the after-action once drained. */
static void conn_write(struct conn *c)
{
	for (;;) {
		if (c->out_off == c->out_len) {
			c->out_off = c->out_len = 0;
			if (c->after == AFTER_GEN && c->gen != GEN_TRICKLE) {
				if (!gen_refill(c)) {
					conn_close(c);
					return;
				}
				continue;
			}
			if (c->after == AFTER_CLOSE) {
				conn_close_clean(c);
				return;
			}
			if (c->after == AFTER_RESET) {
				struct linger l = { .l_onoff = 1, .l_linger = 0 };
				setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
				conn_close(c);
			}
			return;
		}
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			conn_close(c); /* the client went away */
			return;
		}
		c->out_off += (size_t)n;
		if (c->gen != GEN_NONE)
			c->gen_sent += (uint64_t)n;
	}
}

static void conn_accept(void)
{
	for (;;) {
		int fd = accept4(g.listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		size_t slot = CONNS_MAX;
		for (size_t i = 0; i < CONNS_MAX && slot == CONNS_MAX; i++)
			if (!g.conns[i])
				slot = i;
		if (slot == CONNS_MAX) {
			close(fd);
			continue;
		}
		struct conn *c = calloc(1, sizeof(*c));
		if (c)
			c->in = malloc(IN_MAX);
		if (c)
			c->out = malloc(OUT_MAX);
		if (!c || !c->in || !c->out) {
			if (c) {
				free(c->in);
				free(c->out);
			}
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->after = AFTER_READ;
		g.conns[slot] = c;
	}
}

/* Commands on stdin: "heal", "fault NAME COUNT [PATTERN]" (the rest of the line), "sync", "quit". */
static void stdin_command(char *line)
{
	char name[64] = "";
	long count = -1;
	int off = 0;

	if (strcmp(line, "heal") == 0) {
		heal();
	} else if (strcmp(line, "sync") == 0) {
		say("SYNC"); /* every request answered so far was logged before this */
	} else if (strcmp(line, "quit") == 0) {
		stop_requested = 1;
	} else if (sscanf(line, "fault %63s %ld %n", name, &count, &off) >= 2 && off > 0) {
		if (set_fault(name, line + off, count) < 0 || setup_socket() < 0)
			say("ERROR unknown fault %s", name);
		else
			say("OK fault %s %s %ld", name, g.pattern, g.count);
	} else {
		say("ERROR unknown command: %s", line);
	}
}

static bool stdin_read(void)
{
	char tmp[512];
	ssize_t n = read(STDIN_FILENO, tmp, sizeof(tmp));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++) {
		if (tmp[i] == '\n') {
			g.stdin_line[g.stdin_len] = '\0';
			stdin_command(g.stdin_line);
			g.stdin_len = 0;
		} else if (g.stdin_len < sizeof(g.stdin_line) - 1) {
			g.stdin_line[g.stdin_len++] = tmp[i];
		}
	}
	return true;
}

static void usage(void)
{
	fprintf(stderr, "usage: fake-engine [-t SECONDS] [-n COUNT] [-w] SOCKET FAULT [PATTERN]\nfaults:");
	for (size_t i = 0; i < sizeof(fault_names) / sizeof(fault_names[0]); i++)
		fprintf(stderr, " %s", fault_names[i]);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	long lifetime_s = 300, count = -1;
	bool watch_stdin = false;
	int opt;

	while ((opt = getopt(argc, argv, "t:n:wh")) != -1) {
		switch (opt) {
		case 't':
			lifetime_s = strtol(optarg, NULL, 10);
			break;
		case 'n':
			count = strtol(optarg, NULL, 10);
			break;
		case 'w':
			watch_stdin = true;
			break;
		default:
			usage();
			return 2;
		}
	}
	if (argc - optind < 2 || argc - optind > 3 || lifetime_s <= 0) {
		usage();
		return 2;
	}
	g.sock_path = argv[optind];
	if (set_fault(argv[optind + 1], argc - optind == 3 ? argv[optind + 2] : "*", count) < 0) {
		fprintf(stderr, "fake-engine: unknown fault '%s'\n", argv[optind + 1]);
		usage();
		return 2;
	}

	struct sigaction sa = { .sa_handler = on_usr1 };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	unlink(g.sock_path);
	if (setup_socket() < 0)
		return 1;
	say("READY %s %s", g.sock_path, argv[optind + 1]);

	int64_t end = mono_ms() + lifetime_s * 1000;
	struct pollfd pfd[CONNS_MAX + 2];
	struct conn *owner[CONNS_MAX + 2];
	while (!stop_requested) {
		int64_t now = mono_ms();
		if (now >= end) {
			say("LIFETIME over");
			break;
		}
		if (heal_requested) {
			heal_requested = 0;
			heal();
		}
		nfds_t nf = 0;
		int timeout = 100;
		if (g.listening) {
			pfd[nf] = (struct pollfd){ .fd = g.listen_fd, .events = POLLIN };
			owner[nf++] = NULL;
		}
		if (watch_stdin) {
			pfd[nf] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
			owner[nf++] = NULL;
		}
		for (size_t i = 0; i < CONNS_MAX; i++) {
			struct conn *c = g.conns[i];
			if (!c)
				continue;
			if (c->gen == GEN_TRICKLE && now >= c->next_tick) {
				if (c->gen_sent < GEN_MAX)
					out_printf(c, "1\r\n \r\n");
				c->next_tick = now + TRICKLE_MS;
			}
			short ev = 0;
			if (c->out_off < c->out_len || (c->after == AFTER_GEN && c->gen != GEN_TRICKLE) ||
			    c->after == AFTER_CLOSE || c->after == AFTER_RESET)
				ev |= POLLOUT;
			/* a keep-alive connection reads its next request only once the answer is out */
			if ((c->after == AFTER_READ && c->out_off == c->out_len) || c->after == AFTER_STALL ||
			    c->after == AFTER_GEN)
				ev |= POLLIN;
			pfd[nf] = (struct pollfd){ .fd = c->fd, .events = ev };
			owner[nf++] = c;
		}
		int r = poll(pfd, nf, timeout);
		if (r < 0 && errno != EINTR) {
			perror("fake-engine: poll");
			break;
		}
		if (r <= 0)
			continue;
		for (nfds_t i = 0; i < nf; i++) {
			if (!pfd[i].revents)
				continue;
			if (!owner[i] && pfd[i].fd == g.listen_fd) {
				conn_accept();
				continue;
			}
			if (!owner[i]) {
				if (!stdin_read())
					stop_requested = 1;
				continue;
			}
			struct conn *c = owner[i];
			bool live = false;
			for (size_t k = 0; k < CONNS_MAX; k++)
				live = live || g.conns[k] == c;
			if (!live)
				continue; /* closed earlier in this round */
			if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) {
				if (c->after == AFTER_READ) {
					if (c->out_off == c->out_len)
						conn_read(c);
				} else {
					char tmp[4096];
					ssize_t n = recv(c->fd, tmp, sizeof(tmp), MSG_DONTWAIT);
					if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
						conn_close(c);
						continue;
					}
				}
				live = false;
				for (size_t k = 0; k < CONNS_MAX; k++)
					live = live || g.conns[k] == c;
				if (!live)
					continue;
			}
			conn_write(c);
		}
	}
	for (size_t i = 0; i < CONNS_MAX; i++)
		if (g.conns[i])
			conn_close(g.conns[i]);
	for (size_t i = 0; i < CONTAINERS_MAX; i++)
		json_decref(g.containers[i].labels);
	if (g.listen_fd >= 0)
		close(g.listen_fd);
	if (g.bound)
		unlink(g.sock_path);
	return 0;
}
