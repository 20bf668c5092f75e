/*
 * httpd.c - the Streamable HTTP transport (see httpd.h).
 *
 * libmicrohttpd runs a thread per connection, which fits the blocking
 * design: the thread that read a POST hands the body to mcp_handle_message
 * with an out of its own (a sink, out.h), then waits on that exchange until
 * the out's last reference is gone, i.e. until the call (on a dispatch
 * worker) has answered or was cancelled (that exchange: httpexchange.c).  While it waits it also watches the
 * client's socket: a client that hangs up has its call cancelled at once
 * (the process is killed, as for notifications/cancelled).  A read-only
 * call on no session (env_info, session_list) has no process to kill: the
 * connection thread runs it itself (MCP_RUN_HERE), two thread hand-offs
 * fewer for the calls a client polls.
 *
 * The answer's form is chosen when the first line arrives: a response with
 * nothing before it is sent as application/json (with Content-Length); a
 * notification first (progress, a log line) starts an SSE stream when the
 * client's Accept allows, each line one `event: message`, the response last.
 * A client that accepts only JSON gets the response alone.
 *
 * MCP sessions: initialize makes a peer (mcp.h) and an unguessable
 * Mcp-Session-Id; later legacy messages must carry it (400 without, 404 when
 * unknown or ended).  A message that names its protocol version in _meta
 * (2026-07-28) is stateless and gets a peer of its own.  Sandbox sessions are
 * not MCP sessions: they belong to the server and outlive a client.
 *
 * Before anything reaches MCP: Host must name the bound address (421: DNS
 * rebinding), Origin must be allowed (403), the body must fit
 * SANDBOX_MAX_LINE_BYTES (413), and at most HTTPD_CONNECTIONS_MAX connections
 * are served (503). Each request's head and body must arrive within
 * SANDBOX_HTTP_REQUEST_TIMEOUT_S (httpwatch.h: the idle timeout alone lets a
 * client drip a byte at a time for ever).
 *
 * GET /files/ serves a file of a sandbox, with the token, or through a
 * signed link (?exp=&sig=, linksign.h) that needs none.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/buf.h"
#include "base/dynlib.h"
#include "base/log.h"
#include "base/pathsafe.h"
#include "base/protover.h"
#include "base/util.h"
#include "mcp/rpc.h"
#include "tools/files.h"
#include "tools/linksign.h"
#include "transport/http/authkeys.h"
#include "transport/http/httpcheck.h"
#include "transport/http/httpd-internal.h"
#include "transport/http/httpwatch.h"

/* Connections past HTTPD_CONNECTIONS_MAX that still get their 503 before libmicrohttpd refuses outright. */
#define HTTPD_CONNECTIONS_SPARE 16
/* Stack of each connection thread: JSON nesting is capped (mcp.c), so a small one suffices. */
#define HTTPD_THREAD_STACK (512u << 10)
/* Bytes of a --tls-cert or --tls-key file at most. */
#define HTTPD_PEM_MAX (1 << 20)

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls);
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe);
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code);
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body, size_t n,
			     const char *sid);
static enum MHD_Result reply_rpc_error(struct MHD_Connection *c, unsigned status, int code, const char *message);
static enum MHD_Result health(struct httpd *h, struct MHD_Connection *c, const char *method);
static enum MHD_Result download(struct httpd *h, struct MHD_Connection *c, const char *rest, const char *principal);
static enum MHD_Result end_session(struct httpd *h, struct MHD_Connection *c, const char *principal);
static enum MHD_Result post(struct httpd *h, struct MHD_Connection *c, struct exchange *x);
static enum MHD_Result guard(struct httpd *h, struct MHD_Connection *c, bool link, char *ret_principal,
			     bool *ret_refused);
static int links_setup(struct httpd *h, bool tls, struct err *err);
static struct httpwatch_conn *watch_entry(struct MHD_Connection *c);
static enum MHD_Result reply_file(struct MHD_Connection *c, const char *mime, const char *data, size_t n);
static enum linksign_verdict link_session(struct httpd *h, struct MHD_Connection *c, const char *ref, const char *path,
					  struct session **ret);
static bool authorized(struct httpd *h, struct MHD_Connection *c, char *ret_principal);
static int keys_load(const char *path, struct authkeys **ret, struct err *err);
static int pem_load(const char *flag, const char *path, char **ret, struct err *err);
static void tls_free(struct httpd *h);
static struct exchange *exchange_create(struct httpd *h, struct MHD_Connection *c, const char *principal);
static enum MHD_Result busy(struct MHD_Connection *c);
static const char *header(struct MHD_Connection *c, const char *name);

/*
 * libmicrohttpd is opened when `serve --http` starts (base/dynlib.h): it
 * links GnuTLS, and loading both at every exec of a stdio server took
 * longer than the rest of its start-up.
 */
#define HTTPD_MHD_FUNCS(X)                   \
	X(MHD_add_response_header)           \
	X(MHD_create_response_from_buffer)   \
	X(MHD_create_response_from_callback) \
	X(MHD_destroy_response)              \
	X(MHD_get_connection_info)           \
	X(MHD_get_connection_values)         \
	X(MHD_lookup_connection_value)       \
	X(MHD_queue_response)                \
	X(MHD_start_daemon)                  \
	X(MHD_stop_daemon)

static struct {
#define DECLARE(fn) __typeof__(fn) *fn;
	HTTPD_MHD_FUNCS(DECLARE)
#undef DECLARE
} mhd;

static pthread_once_t mhd_once = PTHREAD_ONCE_INIT;
static int mhd_status; /* 0 loaded, -ENOENT not loadable */
static char mhd_error[200];

static void mhd_load(void)
{
	static const char *const sonames[] = { "libmicrohttpd.so.12", "libmicrohttpd.so", NULL };
	static const char *const names[] = {
#define NAME(fn) #fn,
		HTTPD_MHD_FUNCS(NAME)
#undef NAME
	};
	void **const slots[] = {
#define SLOT(fn) (void **)&mhd.fn,
		HTTPD_MHD_FUNCS(SLOT)
#undef SLOT
	};
	mhd_status = dynlib_open(sonames, names, slots, ARRAY_SIZE(names), mhd_error, sizeof(mhd_error));
}

static int mhd_ready(struct err *err)
{
	pthread_once(&mhd_once, mhd_load);
	if (mhd_status < 0)
		return err_set(err, ERRCODE_INTERNAL, mhd_status,
			       "serve --http: cannot load libmicrohttpd (%s): install the libmicrohttpd12 package",
			       mhd_error);
	return 0;
}

int httpd_start(struct mcp *m, const struct tool_services *svc, struct httpd **ret, struct err *err)
{
	const char *listen = svc->cfg->http;
	int r = mhd_ready(err);
	if (r < 0)
		return r;
	struct httpd *h = xcalloc(1, sizeof(*h));
	struct sockaddr_storage sa;
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;

	h->m = m;
	h->svc = svc;
	h->stop[0] = h->stop[1] = -1;
	pthread_mutex_init(&h->lock, NULL);
	pthread_rwlock_init(&h->keys_lock, NULL);
	atomic_init(&h->connections, 0);
	memset(&sa, 0, sizeof(sa));
	if (httpcheck_listen_parse(listen, strlen(listen), h->host, &h->port) < 0) {
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"--http '%.100s' is not HOST:PORT, [IPV6]:PORT or PORT (port 1-65535); e.g. --http 127.0.0.1:8080",
			listen);
		goto fail;
	}
	h->loopback = httpcheck_loopback(h->host);
	const char *token_file = svc->cfg->http_token_file;
	if (token_file && token_file[0] && keys_load(token_file, &h->keys, err) < 0)
		goto fail;
	if (!h->loopback && !h->keys) {
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EPERM,
			"--http %.100s is not a loopback address and no --http-token-file is set: anyone who reaches "
			"it could run code in the sandboxes. Set a token file (NAME:TOKEN lines), or bind to "
			"127.0.0.1 and put a reverse proxy with authentication in front (docs/http.md)",
			listen);
		goto fail;
	}
	const char *numeric = strcasecmp(h->host, "localhost") == 0 ? "127.0.0.1" : h->host;
	struct sockaddr_in *v4 = (struct sockaddr_in *)&sa;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&sa;
	if (inet_pton(AF_INET, numeric, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		v4->sin_port = htons((uint16_t)h->port);
	} else if (inet_pton(AF_INET6, numeric, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)h->port);
		flags |= MHD_USE_IPv6;
	} else {
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "--http: '%.100s' is not an IP address or localhost",
			h->host);
		goto fail;
	}
	snprintf(h->address, sizeof(h->address), sa.ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", h->host, h->port);
	const char *cert = svc->cfg->tls_cert, *key = svc->cfg->tls_key;
	bool tls = (cert && cert[0]) || (key && key[0]);
	if (tls && !(cert && cert[0] && key && key[0])) {
		err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"HTTPS needs both --tls-cert FILE and --tls-key FILE (PEM); give both, or neither for plain HTTP");
		goto fail;
	}
	if (tls &&
	    (pem_load("--tls-cert", cert, &h->tls_cert, err) < 0 || pem_load("--tls-key", key, &h->tls_key, err) < 0))
		goto fail;
	struct MHD_OptionItem tls_opts[] = {
		{ tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->tls_cert },
		{ tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, h->tls_key },
		{ MHD_OPTION_END, 0, NULL },
	};
	if (tls)
		flags |= MHD_USE_TLS;
	if (links_setup(h, tls, err) < 0)
		goto fail;
	if (httpwatch_create((unsigned)svc->cfg->http_request_timeout_s, &h->watch, err) < 0)
		goto fail;
	if (pipe2(h->stop, O_CLOEXEC | O_NONBLOCK) < 0) {
		err_set(err, ERRCODE_INTERNAL, -errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	h->daemon = mhd.MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR,
					 (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
					 (unsigned)(HTTPD_CONNECTIONS_MAX + HTTPD_CONNECTIONS_SPARE),
					 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)svc->cfg->http_timeout_s,
					 MHD_OPTION_THREAD_STACK_SIZE, (size_t)HTTPD_THREAD_STACK,
					 MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_NOTIFY_CONNECTION,
					 on_connection, h, MHD_OPTION_ARRAY, tls_opts, MHD_OPTION_END);
	if (!h->daemon) {
		err_set(err, ERRCODE_INTERNAL, -EADDRINUSE,
			"cannot serve HTTP%s on %s: the port is in use, the address is not this host's%s",
			tls ? "S" : "", h->address,
			tls ? ", or the certificate and key do not parse or do not match" : "");
		goto fail;
	}
	*ret = h;
	return 0;
fail:
	httpwatch_destroy(h->watch);
	if (h->stop[0] >= 0) {
		close(h->stop[0]);
		close(h->stop[1]);
	}
	pthread_mutex_destroy(&h->lock);
	pthread_rwlock_destroy(&h->keys_lock);
	free(h->keys);
	tls_free(h);
	free(h);
	return -EINVAL;
}

void httpd_stop(struct httpd *h)
{
	if (!h)
		return;
	/*
	 * Calls run on connection threads (MCP_RUN_HERE) are cancelled here, or
	 * joining those threads would wait for them (an engine that stalls: its
	 * timeout). The rest wake up to the stop pipe; mcp_destroy cancels theirs.
	 */
	pthread_mutex_lock(&h->lock);
	h->stopping = true;
	for (struct exchange *x = h->handling; x; x = x->next)
		httpx_client_gone(x);
	pthread_mutex_unlock(&h->lock);
	httpx_poke(h->stop[1]);
	mhd.MHD_stop_daemon(h->daemon);
	httpwatch_destroy(h->watch);
	for (size_t i = 0; i < HTTPD_SESSIONS_MAX; i++) {
		if (h->sessions[i].peer) {
			(void)mcp_peer_cancel(h->m, h->sessions[i].peer, NULL);
			mcp_peer_put(h->sessions[i].peer);
		}
	}
	close(h->stop[0]);
	close(h->stop[1]);
	pthread_mutex_destroy(&h->lock);
	pthread_rwlock_destroy(&h->keys_lock);
	free(h->keys);
	tls_free(h);
	free(h);
}

bool httpd_tls(const struct httpd *h)
{
	return h->tls_cert != NULL;
}

static void tls_free(struct httpd *h)
{
	if (h->tls_key)
		explicit_bzero(h->tls_key, strlen(h->tls_key));
	free(h->tls_key);
	free(h->tls_cert);
}

/* A PEM file, at most HTTPD_PEM_MAX bytes, NUL-terminated in *ret (owned by the caller). */
static int pem_load(const char *flag, const char *path, char **ret, struct err *err)
{
	char *text;
	size_t n;
	int r = read_small_file(path, HTTPD_PEM_MAX, &text, &n);

	if (r < 0 && r != -EFBIG)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r, "%s %.200s: %s", flag, path, strerror(-r));
	if (r < 0 || !strstr(text, "-----BEGIN ")) {
		if (r == 0) {
			explicit_bzero(text, n);
			free(text);
		}
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s %.200s: not a PEM file of at most %d bytes",
			       flag, path, HTTPD_PEM_MAX);
	}
	*ret = text;
	return 0;
}

void httpd_reload(struct httpd *h)
{
	const char *path = h->svc->cfg->http_token_file;
	struct authkeys *keys = NULL, *old;
	struct err err;

	if (!h->keys || !path || !path[0])
		return; /* no token file: nothing to re-read (one cannot be added without a restart) */
	err_clear(&err);
	if (keys_load(path, &keys, &err) < 0) {
		log_errorf("SIGHUP: %s; the tokens read before stay in force", err.msg);
		return;
	}
	pthread_rwlock_wrlock(&h->keys_lock);
	old = h->keys;
	h->keys = keys;
	pthread_rwlock_unlock(&h->keys_lock);
	explicit_bzero(old, sizeof(*old));
	free(old);
	log_infof("SIGHUP: %s re-read: %u tokens", path, keys->n);
}

/* Reads and parses the token file (at most AUTHKEYS_FILE_MAX bytes). */
static int keys_load(const char *path, struct authkeys **ret, struct err *err)
{
	char *text = NULL;
	size_t n = 0;
	struct authkeys *k = xcalloc(1, sizeof(*k));
	int r = read_small_file(path, AUTHKEYS_FILE_MAX, &text, &n);

	if (r == -EFBIG)
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, r, "--http-token-file %.200s: larger than %d bytes", path,
			    AUTHKEYS_FILE_MAX);
	else if (r < 0)
		err_set(err, ERRCODE_INVALID_ARGUMENT, r, "--http-token-file %.200s: %s", path, strerror(-r));
	else if ((r = authkeys_parse(text, n, k, err)) < 0 && strncmp(err->msg, "--http-token-file", 17) != 0) {
		char why[ERR_MSG_MAX];
		memcpy(why, err->msg, sizeof(why)); /* err_set must not read what it writes */
		err_set(err, err->code, r, "--http-token-file %.200s: %.280s", path, why);
	}
	if (text)
		explicit_bzero(text, n);
	free(text);
	if (r < 0) {
		explicit_bzero(k, sizeof(*k));
		free(k);
		return r;
	}
	*ret = k;
	return 0;
}

/*
 * No token file, or `Authorization: Bearer TOKEN` with one of its tokens;
 * *ret_principal (CALL_PRINCIPAL_MAX + 1 bytes) gets the token's NAME, or "".
 */
static bool authorized(struct httpd *h, struct MHD_Connection *c, char *ret_principal)
{
	const char *v = header(c, MHD_HTTP_HEADER_AUTHORIZATION);
	bool ok;

	pthread_rwlock_rdlock(&h->keys_lock);
	if (!h->keys) {
		ok = true;
	} else if (!v || strncasecmp(v, "Bearer ", 7) != 0) {
		ok = false;
	} else {
		const char *t = v + 7;
		while (*t == ' ')
			t++;
		size_t n = strlen(t);
		while (n > 0 && t[n - 1] == ' ')
			n--;
		const char *name = authkeys_match(h->keys, t, n);
		ok = name != NULL;
		snprintf(ret_principal, CALL_PRINCIPAL_MAX + 1, "%s", name ? name : "");
	}
	pthread_rwlock_unlock(&h->keys_lock);
	return ok;
}

const char *httpd_address(const struct httpd *h)
{
	return h->address;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct httpd *h = cls;
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		atomic_fetch_add(&h->connections, 1);
		const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		*socket_context = ci ? httpwatch_add(h->watch, ci->connect_fd) : NULL;
	} else {
		atomic_fetch_sub(&h->connections, 1);
		httpwatch_remove(h->watch, *socket_context); /* before libmicrohttpd closes the fd */
		*socket_context = NULL;
	}
}

/* The connection's httpwatch entry (NULL when it could not be made). */
static struct httpwatch_conn *watch_entry(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static const char *header(struct MHD_Connection *c, const char *name)
{
	return mhd.MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* A whole response; sid, when set, goes out as Mcp-Session-Id. */
static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, const char *body, size_t n,
			     const char *sid)
{
	struct MHD_Response *r = mhd.MHD_create_response_from_buffer(n, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	if (type)
		(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	if (sid)
		(void)mhd.MHD_add_response_header(r, "Mcp-Session-Id", sid);
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "POST, DELETE");
	if (status == MHD_HTTP_UNAUTHORIZED)
		(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"sandbox-mcp\"");
	enum MHD_Result res = mhd.MHD_queue_response(c, status, r);
	mhd.MHD_destroy_response(r);
	return res;
}

/* An HTTP error with a JSON-RPC error body (id null), which MCP clients show. */
static enum MHD_Result reply_rpc_error(struct MHD_Connection *c, unsigned status, int code, const char *message)
{
	json_t *e = rpc_error(NULL, code, message, NULL);
	char *text = json_dumps(e, JSON_COMPACT);
	json_decref(e);
	if (!text)
		return MHD_NO;
	enum MHD_Result r = reply(c, status, "application/json", text, strlen(text), NULL);
	free(text);
	return r;
}

/* The Content-Length fields of one request, folded (httpcheck_length). */
struct lengths {
	uint64_t len;
	bool seen, bad;
};

static enum MHD_Result length_field(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct lengths *l = cls;
	(void)kind;
	if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0 &&
	    !httpcheck_length(value ? value : "", value ? strlen(value) : 0, &l->len, &l->seen))
		l->bad = true;
	return l->bad ? MHD_NO : MHD_YES;
}

/* True when Host names this server: the bound address or --http-public-url's (DNS rebinding). */
static bool host_ok(struct httpd *h, struct MHD_Connection *c)
{
	const char *host = header(c, MHD_HTTP_HEADER_HOST);
	return host && (httpcheck_host(host, strlen(host), h->host, h->port) ||
			(h->public_host[0] && strcasecmp(host, h->public_host) == 0));
}

/*
 * The checks every /mcp request passes before its body is read. Refusing
 * queues the response and sets *ret_refused. A signed link (link) is its own
 * credential, and is meant to be shown by pages of any origin: it skips the
 * token and Origin checks.
 */
static enum MHD_Result guard(struct httpd *h, struct MHD_Connection *c, bool link, char *ret_principal,
			     bool *ret_refused)
{
	const char *origin = header(c, "Origin");
	struct lengths len = { 0 };

	*ret_refused = true;
	if (atomic_load(&h->connections) > HTTPD_CONNECTIONS_MAX)
		return reply_rpc_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_INTERNAL_ERROR,
				       "Server busy: too many connections; retry later");
	if (!host_ok(h, c))
		return reply_rpc_error(c, MHD_HTTP_MISDIRECTED_REQUEST, RPC_INVALID_REQUEST,
				       "Misdirected Request: the Host header does not name this server's address");
	if (!link && origin && !httpcheck_origin(origin, strlen(origin), h->loopback, h->svc->cfg->http_allow_origin))
		return reply_rpc_error(c, MHD_HTTP_FORBIDDEN, RPC_INVALID_REQUEST,
				       "Forbidden: this Origin may not call the server (see --http-allow-origin)");
	if (!link && !authorized(h, c, ret_principal))
		return reply_rpc_error(c, MHD_HTTP_UNAUTHORIZED, RPC_INVALID_REQUEST,
				       "Unauthorized: send Authorization: Bearer TOKEN with a token of the server's "
				       "--http-token-file");
	(void)mhd.MHD_get_connection_values(c, MHD_HEADER_KIND, length_field, &len);
	if (len.bad)
		return reply_rpc_error(c, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
				       "Bad Request: Content-Length is malformed or given twice with different values");
	/*
	 * Both framings: libmicrohttpd reads the chunks, a proxy in front may have read the length
	 * (request smuggling), and the body budget would charge the length. RFC 9112 6.3 allows 400.
	 */
	if (len.seen && header(c, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		return reply_rpc_error(c, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
				       "Bad Request: send either Content-Length or Transfer-Encoding, not both");
	if (len.seen && len.len > h->svc->cfg->max_line_bytes)
		return reply_rpc_error(c, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST,
				       "Payload Too Large: the message is longer than SANDBOX_MAX_LINE_BYTES");
	*ret_refused = false;
	return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct httpd *h = cls;
	struct exchange *x = *con_cls;
	bool refused;
	char principal[CALL_PRINCIPAL_MAX + 1] = "";
	(void)version;

	if (!x ? strcmp(method, "POST") != 0 : *upload_size == 0)
		httpwatch_pause(h->watch, watch_entry(c)); /* the request is in: served without a deadline */
	if (!x) {
		if (strcmp(url, "/health") == 0)
			return health(h, c, method);
		if (strncmp(url, "/files/", 7) == 0 && strcmp(method, "GET") == 0) {
			bool link = mhd.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sig") ||
				    mhd.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exp");
			enum MHD_Result r = guard(h, c, link, principal, &refused);
			return refused ? r : download(h, c, url + 7, link ? NULL : principal);
		}
		if (strcmp(url, "/mcp") != 0)
			return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: the MCP endpoint is /mcp\n", 36,
				     NULL);
		enum MHD_Result r = guard(h, c, false, principal, &refused);
		if (refused)
			return r;
		if (strcmp(method, "DELETE") == 0)
			return end_session(h, c, principal);
		if (strcmp(method, "POST") != 0)
			return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain",
				     "method not allowed: POST a JSON-RPC message, DELETE to end the session\n", 72,
				     NULL);
		x = exchange_create(h, c, principal);
		const char *length = header(c, MHD_HTTP_HEADER_CONTENT_LENGTH); /* one, checked by guard */
		/* over budget: the body is read and dropped, then 503 (a client still writing hears it) */
		x->precharged = length != NULL;
		x->busy = length && !httpx_charge(h, x, strtoull(length, NULL, 10));
		*con_cls = x;
		return MHD_YES;
	}
	if (*upload_size) {
		if (!x->precharged && !x->busy && !x->too_big && !httpx_charge(h, x, *upload_size))
			x->busy = true; /* chunked: keep reading (and dropping) the rest, then say 503 */
		if (!x->too_big && !x->busy && buf_append(&x->body, upload, *upload_size) < 0)
			x->too_big = true; /* keep reading (and dropping) the rest, then say 413 */
		*upload_size = 0;
		return MHD_YES;
	}
	if (x->busy)
		return busy(c);
	return post(h, c, x);
}

static enum MHD_Result busy(struct MHD_Connection *c)
{
	return reply_rpc_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_INVALID_REQUEST,
			       "Server busy: the requests being read use the server's memory budget for request "
			       "bodies; retry shortly");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct httpd *h = cls;
	struct exchange *x = *con_cls;
	httpwatch_rearm(h->watch, watch_entry(c)); /* a next request on this connection gets its own deadline */
	if (!x)
		return;
	/*
	 * The request is over: its body's charge goes back now, on the thread that took it. Not
	 * at the exchange's end, which a worker's job may reach after the httpd is gone.
	 */
	atomic_fetch_sub(&h->body_charged, x->charged);
	x->charged = 0;
	if (toe != MHD_REQUEST_TERMINATED_COMPLETED_OK)
		httpx_client_gone(x);
	httpx_put(x);
	*con_cls = NULL;
}

static enum MHD_Result health(struct httpd *h, struct MHD_Connection *c, const char *method)
{
	struct engine_version ev;
	struct err err;

	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET /health\n", 12, NULL);
	/* no token here, so the Host check is all that keeps a rebinding page from reading it */
	if (!host_ok(h, c))
		return reply(c, MHD_HTTP_MISDIRECTED_REQUEST, "text/plain",
			     "Misdirected Request: the Host header does not name this server's address\n", 73, NULL);
	err_clear(&err);
	bool up = engine_version(h->svc->engine, NULL, &ev, &err) == 0;
	json_t *j = json_pack("{s:s, s:{s:b, s:s}, s:I}", "status", up ? "ok" : "degraded", "engine", "reachable", up,
			      "version", up ? ev.version : "", "sessions",
			      (json_int_t)session_count(h->svc->sessions, NULL));
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	enum MHD_Result r = reply(c, MHD_HTTP_OK, "application/json", text, strlen(text), NULL);
	free(text);
	return r;
}

/*
 * GET /files/SESSION/PATH: a file of one of the caller's sandboxes (PATH
 * absolute without its leading '/', as in sandbox:// resource URIs), read
 * through tar like file_read, at most FILES_READ_MAX bytes. Another
 * principal's session is 404, as an unknown one; "default" is not created.
 * principal NULL: a signed link (?exp=&sig=), checked against the session's
 * owner; anything wrong with it is 403.
 */
static enum MHD_Result download(struct httpd *h, struct MHD_Connection *c, const char *rest, const char *principal)
{
	char ref[SESSION_NAME_MAX + 1], path[PATHSAFE_MAX + 1];
	const char *slash = strchr(rest, '/');
	struct session *s = NULL;
	struct buf data;
	uint64_t size = 0, cap = files_max_bytes(h->svc->cfg);
	unsigned mode;
	struct err err;

	err_clear(&err);
	if (!slash || slash == rest || (size_t)(slash - rest) > SESSION_NAME_MAX ||
	    path_resolve("/", slash + 1, path, sizeof(path)) < 0)
		return reply(c, MHD_HTTP_NOT_FOUND, "text/plain", "not found: GET /files/SESSION/PATH\n", 35, NULL);
	memcpy(ref, rest, (size_t)(slash - rest));
	ref[slash - rest] = '\0';
	struct call *call = call_create(NULL, "files", NULL, NULL, NULL);
	call_set_principal(call, principal ? principal : "");
	struct tool_ctx ctx = { .svc = h->svc, .call = call, .protocol_version = PROTOVER_LEGACY_NEWEST };
	int r;
	if (!principal) {
		enum linksign_verdict v = link_session(h, c, ref, path, &s);
		if (v != LINKSIGN_OK) {
			call_destroy(call);
			const char *why =
				v == LINKSIGN_EXPIRED
					? "forbidden: this download link has expired; ask for the file again\n"
					: "forbidden: this download link is not valid (altered, made by an earlier "
					  "run of the server, or its session is gone)\n";
			return reply(c, MHD_HTTP_FORBIDDEN, "text/plain", why, strlen(why), NULL);
		}
		r = 0;
	} else {
		r = strcmp(ref, "default") == 0 ? -ENOENT : session_get(h->svc->sessions, call, ref, &s, &err);
	}
	if (r == 0)
		r = files_pull_file(&ctx, s, path, 0, UINT64_MAX, cap < FILES_READ_MAX ? cap : FILES_READ_MAX, &data,
				    &size, &mode, &err);
	session_put(h->svc->sessions, s);
	call_destroy(call);
	if (r < 0) {
		bool big = err.code == ERRCODE_TOO_LARGE;
		const char *why = big ? "too large: over the download limit; use file_read with offset and length\n"
				      : "not found: no such file in a session of yours (use the session id)\n";
		return reply(c, big ? MHD_HTTP_CONTENT_TOO_LARGE : MHD_HTTP_NOT_FOUND, "text/plain", why, strlen(why),
			     NULL);
	}
	bool text, image;
	const char *mime = files_mime(path, data.data ? data.data : "", data.len, &text, &image);
	enum MHD_Result res = reply_file(c, mime, data.data ? data.data : "", data.len);
	buf_finish(&data);
	return res;
}

/*
 * The session a signed link names (by id only), with a reference in *ret,
 * when exp and sig are the MAC of its owner, its id and path; else why not.
 * Whether the session exists is not told apart from a bad signature.
 */
static enum linksign_verdict link_session(struct httpd *h, struct MHD_Connection *c, const char *ref, const char *path,
					  struct session **ret)
{
	const char *exp = mhd.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "exp");
	const char *sig = mhd.MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sig");
	struct session *s = NULL;
	struct err err;

	err_clear(&err);
	if (!linksign_enabled(h->svc->links) || strcmp(ref, "default") == 0)
		return LINKSIGN_ALTERED;
	/* a NULL call is the server's own look-up, across principals: the MAC names the owner */
	if (session_get(h->svc->sessions, NULL, ref, &s, &err) < 0)
		return LINKSIGN_ALTERED;
	enum linksign_verdict v = strcmp(s->id, ref) != 0 ? LINKSIGN_ALTERED
							  : linksign_verify(h->svc->links, s->owner, s->id, path, exp,
									    sig, (int64_t)time(NULL));
	if (v != LINKSIGN_OK) {
		session_put(h->svc->sessions, s);
		return v;
	}
	*ret = s;
	return LINKSIGN_OK;
}

/*
 * A file's bytes. Sandboxed code chose them: a page it wrote must not run
 * as this server's origin (it could call /mcp), so the browser gets it in a
 * sandbox (CSP), without type sniffing, and sends no Referer on from it.
 */
static enum MHD_Result reply_file(struct MHD_Connection *c, const char *mime, const char *data, size_t n)
{
	struct MHD_Response *r = mhd.MHD_create_response_from_buffer(n, (void *)data, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime);
	(void)mhd.MHD_add_response_header(r, "Content-Security-Policy", "sandbox; default-src 'none'; img-src data:");
	(void)mhd.MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	(void)mhd.MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
	(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "private, no-store");
	enum MHD_Result res = mhd.MHD_queue_response(c, MHD_HTTP_OK, r);
	mhd.MHD_destroy_response(r);
	return res;
}

/*
 * The base of signed links: --http-public-url when set (behind a reverse
 * proxy: the address clients use), else the bound address. Never a Host
 * header: a client could make the server sign links to anywhere.
 */
static int links_setup(struct httpd *h, bool tls, struct err *err)
{
	const char *pub = h->svc->cfg->http_public_url;
	char base[LINKSIGN_BASE_MAX + 16];

	if (!h->svc->links)
		return 0;
	if (pub && pub[0]) {
		if (linksign_set_base(h->svc->links, pub) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "--http-public-url '%.200s' is not an http:// or https:// URL of at most %d "
				       "characters without query, fragment or user (e.g. https://sandbox.example.com)",
				       pub, LINKSIGN_BASE_MAX);
		linksign_base_authority(h->svc->links, h->public_host, sizeof(h->public_host));
		return 0;
	}
	snprintf(base, sizeof(base), "%s://%s", tls ? "https" : "http", h->address);
	if (linksign_set_base(h->svc->links, base) < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "cannot make download links for %s", base);
	if (strcmp(h->host, "0.0.0.0") == 0 || strcmp(h->host, "::") == 0)
		log_warnf("download links will name %s, which clients cannot reach: set --http-public-url", base);
	return 0;
}

static enum MHD_Result end_session(struct httpd *h, struct MHD_Connection *c, const char *principal)
{
	const char *sid = header(c, "Mcp-Session-Id");
	if (!sid)
		return reply_rpc_error(c, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST,
				       "Bad Request: DELETE needs the Mcp-Session-Id header of the session to end");
	if (!httpx_session_end(h, principal, sid))
		return reply_rpc_error(c, MHD_HTTP_NOT_FOUND, RPC_INVALID_REQUEST,
				       "Session not found: it ended or never existed; send initialize for a new one");
	return reply(c, MHD_HTTP_OK, NULL, "", 0, NULL);
}

static struct exchange *exchange_create(struct httpd *h, struct MHD_Connection *c, const char *principal)
{
	struct exchange *x = xcalloc(1, sizeof(*x));
	snprintf(x->principal, sizeof(x->principal), "%s", principal);
	const union MHD_ConnectionInfo *ci = mhd.MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	const char *sid = header(c, "Mcp-Session-Id");

	x->h = h;
	x->fd = ci ? ci->connect_fd : -1;
	x->wake[0] = x->wake[1] = -1;
	x->refs = 1;
	buf_init(&x->body, h->svc->cfg->max_line_bytes);
	buf_init(&x->sse, h->svc->cfg->max_line_bytes + 64);
	pthread_mutex_init(&x->lock, NULL);
	if (sid) {
		x->has_sid = true;
		if (strlen(sid) == HTTPD_SID_LEN)
			memcpy(x->sid_in, sid, HTTPD_SID_LEN + 1);
		else
			x->sid_bad = true;
	}
	return x;
}

/* A request's unknown MCP-Protocol-Version: 400, naming the versions this server speaks. */
static enum MHD_Result reply_bad_version(struct MHD_Connection *c)
{
	char msg[256];
	size_t n;
	const char *const *legacy = protover_legacy(&n);
	int len = snprintf(msg, sizeof(msg), "Bad Request: unsupported MCP-Protocol-Version; this server speaks %s",
			   PROTOVER_MODERN);
	for (size_t i = 0; i < n && len > 0 && (size_t)len < sizeof(msg); i++)
		len += snprintf(msg + len, sizeof(msg) - (size_t)len, "%s%s", i + 1 < n ? ", " : " and ", legacy[i]);
	return reply_rpc_error(c, MHD_HTTP_BAD_REQUEST, RPC_INVALID_REQUEST, msg);
}

/* The body is in: hand it to mcp, wait for its answer, send it in the form the client accepts. */
static enum MHD_Result post(struct httpd *h, struct MHD_Connection *c, struct exchange *x)
{
	const char *type = header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	const char *accept = header(c, MHD_HTTP_HEADER_ACCEPT);
	const char *pv = header(c, "MCP-Protocol-Version");
	bool sse_ok = accept && strstr(accept, "text/event-stream");
	bool json_ok = !accept || strstr(accept, "application/json") || strstr(accept, "*/*");

	if (x->too_big)
		return reply_rpc_error(c, MHD_HTTP_CONTENT_TOO_LARGE, RPC_INVALID_REQUEST,
				       "Payload Too Large: the message is longer than SANDBOX_MAX_LINE_BYTES");
	if (!type || strncasecmp(type, "application/json", 16) != 0)
		return reply_rpc_error(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, RPC_INVALID_REQUEST,
				       "Unsupported Media Type: POST the JSON-RPC message as application/json");
	if (!json_ok && !sse_ok)
		return reply_rpc_error(c, MHD_HTTP_NOT_ACCEPTABLE, RPC_INVALID_REQUEST,
				       "Not Acceptable: Accept must allow application/json or text/event-stream");
	if (pv && !protover_known(pv))
		return reply_bad_version(c);
	if (x->body.len == 0)
		return reply_rpc_error(c, MHD_HTTP_BAD_REQUEST, RPC_PARSE_ERROR,
				       "Parse error: the body is empty; POST one JSON-RPC message");
	struct out_sink sink = { .write = httpx_sink_write, .release = httpx_sink_release, .data = x };
	if (httpx_handling(h, x, true) < 0)
		return reply_rpc_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_INTERNAL_ERROR,
				       "Service Unavailable: the server is stopping");
	pthread_mutex_lock(&x->lock);
	x->refs++; /* the out's */
	pthread_mutex_unlock(&x->lock);
	struct out *out = out_create_sink(&sink);
	mcp_handle_message(h->m, out, httpx_route, x, x->body.data, x->body.len, MCP_RUN_HERE);
	(void)httpx_handling(h, x, false);
	out_put(out);
	buf_finish(&x->body); /* a big message is done with once parsed */

	/*
	 * Until the response (or, for a client that takes SSE, the first line
	 * before it). The worker drops the out only after it answered: waiting
	 * for that instead would turn many plain answers into SSE streams.
	 */
	pthread_mutex_lock(&x->lock);
	while (!x->ended && !x->answered && !(x->head && sse_ok && x->kind == RPC_KIND_REQUEST && !x->refuse)) {
		if (httpx_wake_ready(x) < 0) {
			pthread_mutex_unlock(&x->lock);
			httpx_client_gone(x); /* cannot wait for it: cancel it */
			return reply_rpc_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, RPC_INTERNAL_ERROR,
					       "Server out of file descriptors; retry later");
		}
		pthread_mutex_unlock(&x->lock);
		if (httpx_wait_event(x) < 0)
			return MHD_NO;
		pthread_mutex_lock(&x->lock);
	}
	if (x->refuse) {
		int status = x->refuse;
		char msg[sizeof(x->refuse_msg)];
		memcpy(msg, x->refuse_msg, sizeof(msg));
		pthread_mutex_unlock(&x->lock);
		return reply_rpc_error(c, (unsigned)status, RPC_INVALID_REQUEST, msg);
	}
	const char *sid = x->sid_new[0] ? x->sid_new : NULL;
	if (!x->ended && !(x->answered && (!sse_ok || x->head == x->tail))) {
		pthread_mutex_unlock(&x->lock);
		struct MHD_Response *r = mhd.MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, httpx_sse_read,
									       x, NULL);
		if (!r)
			return MHD_NO;
		(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
		(void)mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
		if (sid)
			(void)mhd.MHD_add_response_header(r, "Mcp-Session-Id", sid);
		enum MHD_Result res = mhd.MHD_queue_response(c, MHD_HTTP_OK, r);
		mhd.MHD_destroy_response(r);
		return res;
	}
	struct line *last = x->tail;
	bool routed = x->routed;
	pthread_mutex_unlock(&x->lock);
	if (!last) /* a notification or response, or a request cancelled meanwhile */
		return reply(c, MHD_HTTP_ACCEPTED, NULL, "", 0, NULL);
	/* the last line is the response (or the parse error); it stays until the exchange is freed */
	return reply(c, routed ? MHD_HTTP_OK : MHD_HTTP_BAD_REQUEST, "application/json", last->p, last->n, sid);
}
