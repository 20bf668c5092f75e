/*
 * httpload.c - the load generator of the HTTP benchmark (http-bench.sh): the
 * same client for sandbox-mcp and for the SDK's example server (the anchor),
 * so the two figures differ only by the server.
 *
 * One thread, epoll, N keep-alive HTTP/1.1 connections over loopback. Each
 * connection is one MCP client: initialize (its Mcp-Session-Id and the
 * negotiated version are sent with every later request, as the 2025-11-25
 * transport requires), notifications/initialized, then tools/call in a loop,
 * one request in flight, timing each from its first byte written to its last
 * byte read. A response counts when it is 200 with a JSON-RPC result that is
 * not isError (application/json or an SSE stream, Content-Length or chunked);
 * anything else is an error, and the first is printed.
 *
 * One thread that only moves bytes needs a fraction of a core for the rates
 * measured here: its own CPU time is printed, so a run where the client would
 * be the bottleneck shows it.
 *
 * Usage: httpload HOST:PORT CLIENTS WARMUP_S SECONDS TOOL ARGS_JSON [SERVER_PID]
 *   (SANDBOX_HTTP_TOKEN in the environment: sent as Authorization: Bearer)
 * Prints one line: clients, req/s, p50 and p99 in ms, errors, client CPU,
 * and with SERVER_PID the server's CPU (in all and per request: the figure
 * least moved by other load on the machine), its VmRSS while the clients are
 * connected, and its VmHWM.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/http_parse.h"
#include "base/util.h"

/* Largest response accepted (env_info's is a few KiB). */
#define LOAD_RESPONSE_MAX (1u << 20)
#define LOAD_CLIENTS_MAX 1024

enum phase { PH_INIT, PH_INITIALIZED, PH_CALL };

struct conn {
	int fd;
	enum phase phase;
	char sid[128];
	char version[32];
	struct buf in;
	char *req;
	size_t req_len, req_off;
	int64_t t0;
	unsigned long id;
};

static const char *host, *tool, *args, *token;
static struct sockaddr_in addr;
static double *lat;
static size_t nlat, caplat;
static unsigned long errors;
static int64_t measure_from, measure_to;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(double p)
{
	if (nlat == 0)
		return 0;
	size_t i = (size_t)(p * (double)(nlat - 1) + 0.5);
	return lat[i];
}

static long status_kb(int pid, const char *field)
{
	char path[64], line[256];
	long v = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			v = atol(line + strlen(field));
	if (f)
		fclose(f);
	return v;
}

/* The CPU time pid used so far, in seconds (utime + stime of /proc/PID/stat), or -1. */
static double cpu_s(int pid)
{
	char path[64], text[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
	if (f)
		fclose(f);
	text[n] = '\0';
	const char *p = strrchr(text, ')'); /* the command name may hold spaces */
	unsigned long long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* Queues the next request of c: initialize, notifications/initialized, or tools/call. */
static void conn_request(struct conn *c)
{
	char body[4096], hdr[1024] = "";
	int n;

	if (c->phase == PH_INIT)
		n = snprintf(body, sizeof(body),
			     "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
			     "\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"httpload\",\"version\":\"1\"}}}");
	else if (c->phase == PH_INITIALIZED)
		n = snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	else
		n = snprintf(body, sizeof(body),
			     "{\"jsonrpc\":\"2.0\",\"id\":%lu,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
			     "\"arguments\":%s}}",
			     ++c->id, tool, args);
	if (n < 0 || (size_t)n >= sizeof(body))
		abort();
	if (c->sid[0])
		snprintf(hdr, sizeof(hdr), "Mcp-Session-Id: %s\r\nMCP-Protocol-Version: %s\r\n", c->sid, c->version);
	free(c->req);
	c->req = xasprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
			   "Accept: application/json, text/event-stream\r\n%s%s%s%sContent-Length: %d\r\n\r\n%s",
			   host, hdr, token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "", n,
			   body);
	c->req_len = strlen(c->req);
	c->req_off = 0;
	c->t0 = now_us();
}

/* 1 and the body's slice when c->in holds a whole response, 0 if not yet, -1 if malformed. */
static int response_complete(struct conn *c, struct http_head *hd, struct buf *body)
{
	int h = http_parse_response(c->in.data, c->in.len, hd);
	if (h == -2)
		return 0;
	if (h < 0)
		return -1;
	const struct slice *cl = http_head_get(hd, "Content-Length");
	const struct slice *te = http_head_get(hd, "Transfer-Encoding");
	const char *p = c->in.data + h;
	size_t left = c->in.len - (size_t)h;

	buf_reset(body);
	if (cl) {
		char num[24];
		snprintf(num, sizeof(num), "%.*s", (int)(cl->n < 23 ? cl->n : 23), cl->p);
		size_t want = strtoul(num, NULL, 10);
		if (left < want)
			return 0;
		(void)buf_append(body, p, want);
		return 1;
	}
	if (!te || !slice_case_eq(*te, "chunked"))
		return hd->status == 202 || hd->status == 204 ? 1 : -1;
	struct http_chunked d;
	http_chunked_init(&d);
	for (;;) {
		size_t used;
		struct slice data;
		int r = http_chunked_decode(&d, p, left, &used, &data);
		p += used;
		left -= used;
		if (r == 1)
			(void)buf_append(body, data.p, data.n);
		else if (r == 0)
			return 1;
		else
			return r == -2 ? 0 : -1;
	}
}

static void fail(const char *what, const struct http_head *hd, const struct buf *body)
{
	if (errors++ == 0)
		fprintf(stderr, "httpload: %s: HTTP %d %.600s\n", what, hd ? hd->status : 0,
			body && body->data ? body->data : "");
}

/* A whole response arrived on c: check it, time it, send the next request. */
static void conn_answered(struct conn *c, const struct http_head *hd, const struct buf *body)
{
	const char *b = body->data ? body->data : "";
	int64_t now = now_us();

	if (c->phase == PH_INIT) {
		const struct slice *sid = http_head_get(hd, "Mcp-Session-Id");
		const char *v = strstr(b, "\"protocolVersion\":\"");
		if (hd->status != 200 || !sid || sid->n >= sizeof(c->sid) || !v) {
			fail("initialize", hd, body);
			exit(1);
		}
		memcpy(c->sid, sid->p, sid->n);
		c->sid[sid->n] = '\0';
		v += strlen("\"protocolVersion\":\"");
		snprintf(c->version, sizeof(c->version), "%.*s", (int)strcspn(v, "\""), v);
		c->phase = PH_INITIALIZED;
	} else if (c->phase == PH_INITIALIZED) {
		if (hd->status != 202 && hd->status != 200)
			fail("notifications/initialized", hd, body);
		c->phase = PH_CALL;
	} else {
		if (hd->status != 200 || !strstr(b, "\"result\"") || strstr(b, "\"isError\":true"))
			fail("tools/call", hd, body);
		else if (c->t0 >= measure_from && now <= measure_to) {
			if (nlat == caplat) {
				caplat = caplat ? 2 * caplat : 65536;
				lat = xreallocarray(lat, caplat, sizeof(*lat));
			}
			lat[nlat++] = (double)(now - c->t0) / 1000.0;
		}
	}
	conn_request(c);
}

static int conn_open(struct conn *c, int ep)
{
	int one = 1;
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return -errno;
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 && errno != EINPROGRESS)
		return -errno;
	buf_init(&c->in, LOAD_RESPONSE_MAX);
	c->phase = PH_INIT;
	conn_request(c);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLET, .data.ptr = c };
	return epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0 ? -errno : 0;
}

/* Moves bytes on c as far as they go without blocking (the socket is edge-triggered). */
static void conn_step(struct conn *c, struct buf *body)
{
	for (;;) {
		while (c->req_off < c->req_len) {
			ssize_t k = send(c->fd, c->req + c->req_off, c->req_len - c->req_off, MSG_NOSIGNAL);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && errno == EAGAIN)
				return;
			if (k <= 0) {
				fprintf(stderr, "httpload: send: %s\n", strerror(errno));
				exit(1);
			}
			c->req_off += (size_t)k;
		}
		char *tail;
		if (buf_reserve(&c->in, 16384, &tail) < 0) {
			fprintf(stderr, "httpload: a response over %u bytes\n", LOAD_RESPONSE_MAX);
			exit(1);
		}
		ssize_t k = recv(c->fd, tail, 16384, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN)
			return;
		if (k <= 0) {
			fprintf(stderr, "httpload: the server closed a connection (%s)\n",
				k < 0 ? strerror(errno) : "EOF");
			exit(1);
		}
		buf_commit(&c->in, (size_t)k);
		struct http_head hd;
		int r = response_complete(c, &hd, body);
		if (r < 0) {
			fail("malformed response", NULL, &c->in);
			exit(1);
		}
		if (r == 1) {
			buf_reset(&c->in);
			conn_answered(c, &hd, body);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: httpload HOST:PORT CLIENTS WARMUP_S SECONDS TOOL ARGS_JSON [SERVER_PID]\n");
		return 2;
	}
	host = argv[1];
	int n = atoi(argv[2]), pid = argc > 7 ? atoi(argv[7]) : 0;
	double warm = atof(argv[3]), secs = atof(argv[4]);
	tool = argv[5];
	args = argv[6];
	token = getenv("SANDBOX_HTTP_TOKEN");
	const char *colon = strrchr(host, ':');
	char ip[64];
	if (!colon || n < 1 || n > LOAD_CLIENTS_MAX || secs <= 0 || (size_t)(colon - host) >= sizeof(ip)) {
		fprintf(stderr, "httpload: bad arguments\n");
		return 2;
	}
	snprintf(ip, sizeof(ip), "%.*s", (int)(colon - host), host);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
		fprintf(stderr, "httpload: %s is not an IPv4 address\n", ip);
		return 2;
	}
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct conn *conns = xcalloc((size_t)n, sizeof(*conns));
	struct buf body;
	buf_init(&body, LOAD_RESPONSE_MAX);
	int64_t start = now_us();
	measure_from = start + (int64_t)(warm * 1e6);
	measure_to = measure_from + (int64_t)(secs * 1e6);
	for (int i = 0; i < n; i++) {
		if (conn_open(&conns[i], ep) < 0) {
			fprintf(stderr, "httpload: connect to %s: %s\n", host, strerror(errno));
			return 1;
		}
	}
	struct rusage ru0, ru1;
	double server0 = 0;
	bool begun = false;
	long rss = -1;
	for (;;) {
		int64_t now = now_us();
		if (!begun && now >= measure_from) {
			getrusage(RUSAGE_SELF, &ru0);
			server0 = pid > 0 ? cpu_s(pid) : 0;
			begun = true;
		}
		if (now >= measure_to)
			break;
		struct epoll_event evs[64];
		int k = epoll_wait(ep, evs, 64, 50);
		for (int i = 0; i < k; i++)
			conn_step(evs[i].data.ptr, &body);
	}
	getrusage(RUSAGE_SELF, &ru1);
	double server_cpu = pid > 0 ? cpu_s(pid) - server0 : 0;
	if (pid > 0)
		rss = status_kb(pid, "VmRSS:");
	double cpu = (double)(ru1.ru_utime.tv_sec - ru0.ru_utime.tv_sec + ru1.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
		     (double)(ru1.ru_utime.tv_usec - ru0.ru_utime.tv_usec + ru1.ru_stime.tv_usec -
			      ru0.ru_stime.tv_usec) /
			     1e6;
	qsort(lat, nlat, sizeof(*lat), cmp_double);
	printf("clients %d req/s %.0f p50_ms %.2f p99_ms %.2f errors %lu client_cpu %.0f%%", n, (double)nlat / secs,
	       pct(0.50), pct(0.99), errors, 100.0 * cpu / secs);
	if (pid > 0)
		printf(" server_cpu %.0f%% server_us/req %.0f rss_mib %.1f hwm_mib %.1f", 100.0 * server_cpu / secs,
		       nlat ? 1e6 * server_cpu / (double)nlat : 0, (double)rss / 1024.0,
		       (double)status_kb(pid, "VmHWM:") / 1024.0);
	printf("\n");
	for (int i = 0; i < n; i++) {
		close(conns[i].fd);
		buf_finish(&conns[i].in);
		free(conns[i].req);
	}
	free(conns);
	free(lat);
	buf_finish(&body);
	close(ep);
	return errors ? 1 : 0;
}
