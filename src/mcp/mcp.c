/*
 * mcp.c - JSON-RPC methods for both MCP eras.
 *
 * Era is decided per request: a request whose params._meta carries
 * "io.modelcontextprotocol/protocolVersion" is modern (2026-07-28, stateless:
 * no initialize, resultType on every result, serverInfo in result _meta, log
 * notifications only when that request asked for them).  Anything else is
 * legacy and needs initialize first (ping and server/discover excepted, so a
 * dual-era client can probe).
 *
 * Protocol errors (bad envelope, unknown method, bad params, unknown tool)
 * are JSON-RPC errors; a tool that ran and failed is a result with isError.
 * A line reaches the method table through intake.c (its cost bounded, parsed,
 * routed).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/jsonscan.h"
#include "base/log.h"
#include "base/protover.h"
#include "buildconf.h"
#include "mcp/bulk.h"
#include "mcp/dispatch.h"
#include "mcp/mcp-internal.h"
#include "mcp/mcp.h"
#include "mcp/notify.h"
#include "mcp/resources.h"
#include "mcp/rpc.h"
#include "tools/schema.h"

/*
 * notifications/resources/list_changed at most this often: Claude Code and
 * Gemini CLI list resources at connect and again only when told.
 */
#define MCP_LIST_CHANGED_MS 1000

/* Freshness hint for list results: the tool set is fixed for the process. */
#define MCP_LIST_TTL_MS 300000

/* One request being handled, on the read loop. */
struct req {
	struct mcp_peer *peer; /* borrowed */
	struct out *out;       /* borrowed: where its answers go */
	json_t *id;
	const char *method;
	json_t *params; /* object (possibly empty) */
	bool modern;
	const char *version; /* the version this request speaks */
	int log_level;	     /* modern: requested level, or -1 */
	json_t *progress_token;
	struct bulk_lifted *bulk; /* tools/call takes the kept bulk string from here */
	size_t line_len;	  /* the request's line: what a queued call holds, about */
	bool in_order;		  /* parsed on the big-line worker: already behind what came before */
	bool run_here;		  /* the transport's thread may run a short call itself (MCP_RUN_HERE) */
};

/* A call that waits behind the big lines before it goes to its own queue. */
struct forward {
	struct mcp *m;
	struct out *out; /* borrowed from the inner call */
	struct call *inner;
};

/* Return value of a method handler that will reply later (tools/call). */
#define REPLY_DEFERRED 1

typedef int (*method_fn)(struct mcp *m, struct req *rq, json_t **ret_result, struct fail *f);

enum method_flags {
	METHOD_BEFORE_INIT = 1 << 0, /* legacy: allowed before initialize */
	METHOD_LEGACY_ONLY = 1 << 1, /* not part of 2026-07-28 */
	METHOD_LIST = 1 << 2,	     /* modern result carries ttlMs and cacheScope */
};

struct method {
	const char *name;
	method_fn fn;
	unsigned flags;
};

/* What a worker runs: a tools/call, or a resources method that waits on Docker. */
enum call_kind {
	CALL_TOOL,
	CALL_RESOURCES_LIST,
	CALL_RESOURCES_READ,
};

/* Everything a worker needs to run one deferred request and reply. */
struct call_data {
	struct mcp *m;
	struct mcp_peer *peer; /* one reference */
	struct out *out;       /* one reference: the call's answers go there */
	enum call_kind kind;
	json_t *params; /* resources methods */
	const struct tool_entry *tool;
	json_t *id;
	json_t *args;
	json_t *progress_token;
	char version[16];
	bool modern;
	int log_level;
	char *bulk; /* the tool's bulk argument, lifted out of the line (owned) */
	size_t bulk_len;
	json_t *bulk_json; /* its marker in args (borrowed) */
};

static _Thread_local struct call_data *current_call;

static int m_initialize(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_ping(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_discover(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_set_level(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_tools_list(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_tools_call(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_resources_list(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_resources_templates(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);
static int m_resources_read(struct mcp *m, struct req *rq, json_t **ret, struct fail *f);

static const struct method mcp_method_table[] = {
	{ "initialize", m_initialize, METHOD_BEFORE_INIT | METHOD_LEGACY_ONLY },
	{ "ping", m_ping, METHOD_BEFORE_INIT },
	{ "server/discover", m_discover, METHOD_BEFORE_INIT | METHOD_LIST },
	{ "logging/setLevel", m_set_level, METHOD_LEGACY_ONLY },
	{ "tools/list", m_tools_list, METHOD_LIST },
	{ "tools/call", m_tools_call, 0 },
	{ "resources/list", m_resources_list, METHOD_LIST },
	{ "resources/templates/list", m_resources_templates, METHOD_LIST },
	{ "resources/read", m_resources_read, METHOD_LIST },
};

static int fail_set(struct fail *f, int code, const char *fmt, ...) PRINTF_LIKE(3, 4);
static json_t *server_info(void);
static json_t *capabilities(bool list_changed);
static void finish_result(const struct req *rq, unsigned flags, json_t *result);
static int submit(struct mcp *m, struct call *c, const struct req *rq, bool here, struct fail *f);
static void forward_run(struct call *c, void *data);
static void forward_free(void *data);
static void log_bridge(enum log_level level, const char *msg, void *data);
static void call_run(struct call *c, void *data);
static struct call_data *call_data_create(struct mcp *m, const struct req *rq);
static void call_data_free(void *data);
static int defer(struct mcp *m, struct req *rq, enum call_kind kind, const char *key, struct fail *f);
static void resources_run(struct call *c, struct call_data *cd);
static void files_maybe_changed(struct mcp *m, const struct call_data *cd);

/* Server instructions: a few sentences, each said only when its tool is offered (tools.c). */
static void instructions_build(struct mcp *m)
{
	m->instructions = tools_instructions(m->svc->cfg->tool_groups);
}

void mcp_add_notice(struct mcp *m, const char *text)
{
	struct buf b;
	pthread_mutex_lock(&m->instructions_lock);
	buf_init(&b, strlen(text) + strlen(m->instructions) + 2);
	(void)buf_printf(&b, "%s %s", text, m->instructions);
	free(m->instructions);
	m->instructions = buf_steal(&b, NULL);
	pthread_mutex_unlock(&m->instructions_lock);
}

static void *probe_main(void *arg)
{
	struct mcp *m = arg;
	m->probe_fn(m->probe_arg);
	pthread_mutex_lock(&m->instructions_lock);
	m->probed = true;
	pthread_cond_broadcast(&m->probe_done);
	pthread_mutex_unlock(&m->instructions_lock);
	return NULL;
}

void mcp_start_probe(struct mcp *m, void *(*fn)(void *), void *arg, bool quick)
{
	m->probe_fn = fn;
	m->probe_arg = arg;
	m->probing = !quick && thread_create_nosig(&m->probe, NULL, probe_main, m) == 0;
	if (!m->probing)
		probe_main(m);
}

/*
 * The instructions (a new reference), once the start-up probe has said
 * whether the engine answers: a connect on a local socket, microseconds;
 * at most the probe's timeout elsewhere.
 */
static json_t *instructions_json(struct mcp *m)
{
	pthread_mutex_lock(&m->instructions_lock);
	while (m->probe_fn && !m->probed)
		pthread_cond_wait(&m->probe_done, &m->instructions_lock);
	json_t *s = json_string(m->instructions);
	pthread_mutex_unlock(&m->instructions_lock);
	return s;
}

struct mcp *mcp_create(const struct tool_services *svc, struct out *out)
{
	struct mcp *m = xcalloc(1, sizeof(*m));
	m->svc = svc;
	m->out = out;
	m->dispatch = dispatch_create(MCP_WORKERS_MAX);
	dispatch_set_limits(m->dispatch, DISPATCH_PENDING_MAX,
			    (size_t)(MCP_PENDING_LINES * m->svc->cfg->max_line_bytes));
	m->stdio = mcp_peer_create(m, "");
	atomic_init(&m->seq, 0);
	atomic_init(&m->big_lines, 0);
	if (getrandom(&m->bulk_nonce, sizeof(m->bulk_nonce), GRND_NONBLOCK) != sizeof(m->bulk_nonce))
		m->bulk_nonce = (unsigned long long)now_ms() ^ (unsigned long long)(uintptr_t)m;
	instructions_build(m);
	pthread_mutex_init(&m->instructions_lock, NULL);
	pthread_cond_init(&m->probe_done, NULL);
	atomic_init(&m->initialized_legacy, false);
	/* over HTTP there is no stream for notifications outside a request (GET /mcp is 405) */
	bool http = svc->cfg->http && svc->cfg->http[0];
	m->resources_changed = http ? NULL
				    : notify_create(out, "notifications/resources/list_changed", MCP_LIST_CHANGED_MS);
	if (!m->resources_changed && !http)
		log_warnf("no resources/list_changed: clients see new files when they list again");
	log_set_hook(log_bridge, m);
	return m;
}

void mcp_drain(struct mcp *m, int wait_ms)
{
	if (!dispatch_drain(m->dispatch, wait_ms))
		log_warnf("calls still running %d ms after stdin closed; cancelling them", wait_ms);
}

bool mcp_destroy(struct mcp *m)
{
	if (!m)
		return true;
	log_set_hook(NULL, NULL);
	if (m->probing)
		pthread_join(m->probe, NULL); /* bounded: the probe's engine timeout */
	m->probing = false;
	if (!dispatch_destroy(m->dispatch, 500))
		return false;		      /* workers still hold m: the process is about to exit */
	notify_destroy(m->resources_changed); /* after the workers, which poke it */
	mcp_peer_put(m->stdio);
	free(m->instructions);
	pthread_mutex_destroy(&m->instructions_lock);
	pthread_cond_destroy(&m->probe_done);
	free(m);
	return true;
}

struct mcp_peer *mcp_peer_create(struct mcp *m, const char *principal)
{
	struct mcp_peer *p = xcalloc(1, sizeof(*p));
	(void)m;
	snprintf(p->principal, sizeof(p->principal), "%s", principal);
	atomic_init(&p->refs, 1);
	pthread_mutex_init(&p->lock, NULL);
	atomic_init(&p->legacy_log_level, -1);
	snprintf(p->version, sizeof(p->version), "%s", PROTOVER_LEGACY_NEWEST);
	return p;
}

struct mcp_peer *mcp_peer_get(struct mcp_peer *p)
{
	if (p)
		atomic_fetch_add(&p->refs, 1);
	return p;
}

void mcp_peer_put(struct mcp_peer *p)
{
	if (!p || atomic_fetch_sub(&p->refs, 1) != 1)
		return;
	pthread_mutex_destroy(&p->lock);
	free(p);
}

bool mcp_peer_cancel(struct mcp *m, struct mcp_peer *p, const json_t *id)
{
	return dispatch_cancel(m->dispatch, p, id);
}

static int fail_set(struct fail *f, int code, const char *fmt, ...)
{
	va_list ap;

	f->code = code;
	va_start(ap, fmt);
	vsnprintf(f->message, sizeof(f->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void mcp_reply_error(struct out *out, json_t *id, int code, const char *message, json_t *data)
{
	(void)out_send_new(out, rpc_error(id, code, message, data));
}

static json_t *server_info(void)
{
	return json_pack("{s:s, s:s, s:s}", "name", "sandbox-mcp", "title", "Sandbox MCP (Docker)", "version",
			 SANDBOX_VERSION);
}

/*
 * list_changed: resources/list_changed is sent, which a legacy session
 * gets; the modern era sends it only on subscriptions/listen, which this
 * server does not offer.
 */
static json_t *capabilities(bool list_changed)
{
	return json_pack("{s:{s:b}, s:{s:b}, s:{}}", "tools", "listChanged", 0, "resources", "listChanged",
			 list_changed, "logging");
}

/* Adds what the modern era requires of every result. */
static void finish_result(const struct req *rq, unsigned flags, json_t *result)
{
	if (!rq->modern)
		return;
	json_object_set_new(result, "resultType", json_string("complete"));
	json_t *meta = json_object_get(result, "_meta");
	if (!json_is_object(meta)) {
		meta = json_object();
		json_object_set_new(result, "_meta", meta);
	}
	json_object_set_new(meta, "io.modelcontextprotocol/serverInfo", server_info());
	if (flags & METHOD_LIST) {
		json_object_set_new(result, "ttlMs", json_integer(MCP_LIST_TTL_MS));
		json_object_set_new(result, "cacheScope", json_string("public"));
	}
}

static int m_initialize(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	const char *asked = json_string_value(json_object_get(rq->params, "protocolVersion"));
	if (!asked)
		return fail_set(f, RPC_INVALID_PARAMS, "initialize: params.protocolVersion must be a string");
	const char *chosen = protover_legacy_find(asked);
	if (!chosen)
		chosen = PROTOVER_LEGACY_NEWEST;

	/* a second initialize would renegotiate under calls already made: the first one stands */
	char first[sizeof(rq->peer->version)];
	pthread_mutex_lock(&rq->peer->lock);
	bool again = rq->peer->initialized;
	if (!again) {
		rq->peer->initialized = true;
		snprintf(rq->peer->version, sizeof(rq->peer->version), "%s", chosen);
	}
	snprintf(first, sizeof(first), "%s", rq->peer->version);
	pthread_mutex_unlock(&rq->peer->lock);
	if (again)
		return fail_set(f, RPC_INVALID_REQUEST,
				"Invalid Request: this connection is already initialized (protocol %s); the session "
				"stays as it was: start a new connection for a new session",
				first);

	*ret = json_pack("{s:s, s:o, s:o, s:o}", "protocolVersion", chosen, "capabilities",
			 capabilities(m->resources_changed != NULL), "serverInfo", server_info(), "instructions",
			 instructions_json(m));
	return 0;
}

static int m_ping(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	*ret = json_object();
	return 0;
}

static int m_discover(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	json_t *versions = json_array();
	json_array_append_new(versions, json_string(PROTOVER_MODERN));
	size_t nlegacy;
	const char *const *legacy = protover_legacy(&nlegacy);
	for (size_t i = 0; i < nlegacy; i++)
		json_array_append_new(versions, json_string(legacy[i]));
	*ret = json_pack("{s:o, s:o, s:o}", "supportedVersions", versions, "capabilities", capabilities(false),
			 "instructions", instructions_json(m));
	/* a discover result is modern-shaped whichever era asked */
	struct req modern = *rq;
	modern.modern = true;
	finish_result(&modern, METHOD_LIST, *ret);
	return 0;
}

static int m_set_level(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	const char *level = json_string_value(json_object_get(rq->params, "level"));
	enum log_level l;

	if (!level || log_level_parse(level, &l) < 0)
		return fail_set(f, RPC_INVALID_PARAMS,
				"logging/setLevel: params.level must be one of debug, info, notice, warning, "
				"error, critical, alert, emergency");
	atomic_store(&rq->peer->legacy_log_level, (int)l);
	*ret = json_object();
	return 0;
}

static int m_tools_list(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	struct err e;
	if (tools_init(&e) < 0)
		return fail_set(f, RPC_INTERNAL_ERROR, "%s", e.msg);
	*ret = json_pack("{s:o}", "tools", tools_list_json(m->svc->cfg->tool_groups, rq->version));
	return 0;
}

static int m_tools_call(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	json_t *name = json_object_get(rq->params, "name");
	json_t *args = json_object_get(rq->params, "arguments");
	char key[DISPATCH_KEY_MAX + 8];

	if (!json_is_string(name))
		return fail_set(f, RPC_INVALID_PARAMS, "tools/call: params.name must be a string");
	if (args && !json_is_object(args))
		return fail_set(f, RPC_INVALID_PARAMS, "tools/call: params.arguments must be an object");
	const struct tool_entry *t = tools_find(json_string_value(name), m->svc->cfg->tool_groups);
	if (!t)
		return fail_set(f, RPC_INVALID_PARAMS, "Unknown tool '%.100s'. Call tools/list for the tools offered.",
				json_string_value(name));

	const char *session = json_string_value(json_object_get(args, "session_id"));
	/* a call that names a session queues behind that session's other calls */
	if ((t->per_session || session) && !t->beside_queue)
		session_key(m->svc->sessions, rq->peer->principal, session, key, DISPATCH_KEY_MAX);
	else
		snprintf(key, sizeof(key), "c:%llu", (unsigned long long)atomic_fetch_add(&m->seq, 1));

	struct call_data *cd = call_data_create(m, rq);
	cd->tool = t;
	cd->id = json_incref(rq->id);
	cd->args = args ? json_incref(args) : json_object();
	cd->progress_token = json_incref(rq->progress_token);
	snprintf(cd->version, sizeof(cd->version), "%s", rq->version);
	cd->modern = rq->modern;
	cd->log_level = rq->log_level;
	if (rq->bulk && rq->bulk->kept && json_object_get(cd->args, t->bulk_arg) == rq->bulk->kept) {
		int i = rq->bulk->kept_index;
		cd->bulk = rq->bulk->data[i];
		cd->bulk_len = rq->bulk->len[i];
		cd->bulk_json = rq->bulk->kept;
		rq->bulk->data[i] = NULL;
		rq->bulk->kept = NULL;
	}

	struct call *c = call_create(rq->id, key, call_run, call_data_free, cd);
	call_set_owner(c, rq->peer);
	call_set_principal(c, rq->peer->principal);
	if (t->preempts && t->preempts(cd->args)) {
		call_set_preempting(c);
		dispatch_preempt(m->dispatch, key);
	}
	*ret = NULL;
	/* a read-only call on no session has nothing to wait for and nothing to kill */
	return submit(m, c, rq, rq->run_here && t->read_only && !t->per_session && !session, f);
}

/*
 * Hands c to a worker; on failure frees it (it never ran; its data too) and
 * says why. Past the dispatcher's limits the request is refused at once, as
 * a protocol error: no tool ran, and the client can send it again later.
 */
static int submit(struct mcp *m, struct call *c, const struct req *rq, bool here, struct fail *f)
{
	call_set_weight(c, rq->line_len);
	if (!rq->in_order && atomic_load(&m->big_lines) > 0) {
		here = false;
		/* a big line sent before this one is still being parsed: queue behind it */
		struct forward *fw = xcalloc(1, sizeof(*fw));
		fw->m = m;
		fw->out = rq->out;
		fw->inner = c;
		c = call_create(rq->id, MCP_LINES_KEY, forward_run, forward_free, fw);
		call_set_owner(c, rq->peer);
		call_set_weight(c, rq->line_len);
	}
	int r = here ? dispatch_run_here(m->dispatch, c) : dispatch_submit(m->dispatch, c);
	if (r == 0)
		return REPLY_DEFERRED;
	call_destroy(c);
	return mcp_submit_busy(m, r, f);
}

/* The protocol error for a call the dispatcher refused with r. */
int mcp_submit_busy(struct mcp *m, int r, struct fail *f)
{
	if (r == -EBUSY)
		return fail_set(f, RPC_INTERNAL_ERROR,
				"Server busy: %u requests (%llu MiB of them at most) are already queued or running; "
				"wait for some answers, then send this one again",
				dispatch_pending(m->dispatch),
				(unsigned long long)(MCP_PENDING_LINES * m->svc->cfg->max_line_bytes) >> 20);
	return fail_set(f, RPC_INTERNAL_ERROR, "cannot start a worker for this request: %s", strerror(-r));
}

/* Runs on the big-line key once the big lines before the call are done: queues it for real. */
static void forward_run(struct call *c, void *data)
{
	struct forward *fw = data;
	struct fail f = { 0 };

	if (call_cancelled(c))
		return; /* forward_free drops the call unanswered, as a cancelled one is */
	int r = dispatch_submit(fw->m->dispatch, fw->inner);
	if (r == 0) {
		fw->inner = NULL;
		return;
	}
	(void)mcp_submit_busy(fw->m, r, &f);
	mcp_reply_error(fw->out, call_id(c), f.code, f.message, NULL);
}

static void forward_free(void *data)
{
	struct forward *fw = data;
	call_destroy(fw->inner);
	free(fw);
}

static int m_resources_templates(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	*ret = json_pack("{s:o}", "resourceTemplates", resources_templates_json());
	return 0;
}

static int m_resources_list(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	char key[32];
	snprintf(key, sizeof(key), "c:%llu", (unsigned long long)atomic_fetch_add(&m->seq, 1));
	*ret = NULL;
	return defer(m, rq, CALL_RESOURCES_LIST, key, f);
}

static int m_resources_read(struct mcp *m, struct req *rq, json_t **ret, struct fail *f)
{
	char sid[RESOURCES_SESSION_REF_MAX + 1], key[DISPATCH_KEY_MAX + 8];

	if (!json_is_string(json_object_get(rq->params, "uri")))
		return fail_set(f, RPC_INVALID_PARAMS, "resources/read: params.uri must be a string");
	/* a read queues behind the calls of its session; an unknown one fails on its own */
	if (resources_uri_session(rq->params, sid, sizeof(sid)))
		session_key(m->svc->sessions, rq->peer->principal, sid, key, DISPATCH_KEY_MAX);
	else
		snprintf(key, sizeof(key), "c:%llu", (unsigned long long)atomic_fetch_add(&m->seq, 1));
	*ret = NULL;
	return defer(m, rq, CALL_RESOURCES_READ, key, f);
}

/* Queues rq on a worker under key; the worker replies. */
static int defer(struct mcp *m, struct req *rq, enum call_kind kind, const char *key, struct fail *f)
{
	struct call_data *cd = call_data_create(m, rq);
	cd->kind = kind;
	cd->params = json_incref(rq->params);
	cd->id = json_incref(rq->id);
	snprintf(cd->version, sizeof(cd->version), "%s", rq->version);
	cd->modern = rq->modern;
	cd->log_level = rq->log_level;
	struct call *c = call_create(rq->id, key, call_run, call_data_free, cd);
	call_set_owner(c, rq->peer);
	call_set_principal(c, rq->peer->principal);
	return submit(m, c, rq, false, f);
}

/* Runs a resources method on a worker and replies. */
static void resources_run(struct call *c, struct call_data *cd)
{
	struct mcp *m = cd->m;
	json_t *result = NULL;
	int code = RPC_INTERNAL_ERROR;
	struct err e;
	int r;

	err_clear(&e);
	if (cd->kind == CALL_RESOURCES_LIST)
		r = resources_list(m->svc, c, cd->params, &result, &code, &e);
	else
		r = resources_read(m->svc, c, cd->params, cd->modern ? RPC_INVALID_PARAMS : RPC_RESOURCE_NOT_FOUND,
				   &result, &code, &e);
	/* a read ended by a rollback of its session still answers: only its client's cancel goes unanswered */
	if (call_cancelled(c) && !call_preempted(c)) {
		json_decref(result);
		return;
	}
	if (r < 0) {
		mcp_reply_error(cd->out, cd->id, code, e.msg, NULL);
		return;
	}
	struct req rq = { .modern = cd->modern };
	finish_result(&rq, METHOD_LIST, result);
	(void)out_send_new(cd->out, rpc_result(cd->id, result));
}

/* The part every deferred request shares: who sent it, where its answers go. */
static struct call_data *call_data_create(struct mcp *m, const struct req *rq)
{
	struct call_data *cd = xcalloc(1, sizeof(*cd));
	cd->m = m;
	cd->peer = mcp_peer_get(rq->peer);
	cd->out = out_get(rq->out);
	return cd;
}

static void call_data_free(void *data)
{
	struct call_data *cd = data;
	if (!cd)
		return;
	mcp_peer_put(cd->peer);
	out_put(cd->out); /* for HTTP, the last reference ends the request's answer */
	json_decref(cd->params);
	json_decref(cd->id);
	json_decref(cd->args);
	json_decref(cd->progress_token);
	free(cd->bulk);
	free(cd);
}

/* tool_ctx.notify: a notification on the stream of the call's request. */
static void call_notify(void *arg, const char *method, json_t *params)
{
	(void)out_send_new(arg, rpc_notification(method, params));
}

/* Runs on a worker thread. */
static void call_run(struct call *c, void *data)
{
	struct call_data *cd = data;
	struct mcp *m = cd->m;
	struct tool_ctx ctx = {
		.svc = m->svc,
		.notify = call_notify,
		.notify_arg = cd->out,
		.call = c,
		.protocol_version = cd->version,
		.progress_token = cd->progress_token,
		.last_progress = 0,
		.started_ms = now_ms(),
		.bulk_arg = cd->bulk_json,
		.bulk = cd->bulk,
		.bulk_len = cd->bulk_len,
	};
	ctx.progress_ms = ctx.started_ms;
	struct tool_result res;
	struct err e;

	if (cd->kind != CALL_TOOL) {
		current_call = cd;
		resources_run(c, cd);
		current_call = NULL;
		return;
	}
	current_call = cd;
	tool_result_init(&res);
	err_clear(&e);
	if (tools_init(&e) < 0 || schema_validate(tools_input_schema(cd->tool), cd->args, &e) < 0) {
		tool_fail(&res, &e);
	} else {
		int r = cd->tool->handler(&ctx, cd->args, &res);
		if (r < 0) {
			if (res.is_error) {
				/* the handler already described the failure */
			} else {
				err_set(&e, ERRCODE_INTERNAL, r,
					"%s failed unexpectedly (%s); this is a bug in sandbox-mcp", cd->tool->name,
					strerror(-r));
				tool_fail(&res, &e);
			}
		}
	}
	current_call = NULL;

	if (call_preempted(c)) {
		tool_text(&res, "A rollback of this session (session_checkpoint) was asked for while this call ran, "
				"and ended it; the rollback's own result says whether it was done.");
	} else if (call_cancelled(c)) {
		/* the client gave up on this request: send nothing for it */
		tool_result_finish(&res);
		files_maybe_changed(m, cd);
		return;
	}
	tool_result_seal(&ctx, &res);
	json_t *result = json_pack("{s:O}", "content", res.content);
	if (res.is_error)
		json_object_set_new(result, "isError", json_true());
	if (res.structured && protover_structured(cd->version))
		json_object_set(result, "structuredContent", res.structured);
	struct req rq = { .modern = cd->modern };
	finish_result(&rq, 0, result);
	(void)out_send_new(cd->out, rpc_result(cd->id, result));
	tool_result_finish(&res);
	files_maybe_changed(m, cd); /* after the result: the client reads the list with the call done */
}

/*
 * After a tool that is not read-only (file_write, run_command, git, pip,
 * session_create/close, ...): the workspace files, so the resource list, may
 * have changed. Legacy sessions only, once initialized.
 */
static void files_maybe_changed(struct mcp *m, const struct call_data *cd)
{
	if (!cd->tool->read_only && !cd->modern && atomic_load(&m->initialized_legacy))
		notify_poke(m->resources_changed);
}

/* Forwards log records to the client where it asked for them. */
static void log_bridge(enum log_level level, const char *msg, void *data)
{
	struct mcp *m = data;
	struct call_data *cd = current_call;
	struct out *out = cd ? cd->out : m->out;
	int threshold = cd && cd->modern ? cd->log_level
					 : atomic_load(cd ? &cd->peer->legacy_log_level : &m->stdio->legacy_log_level);

	if (threshold < 0 || (int)level < threshold || out_closed(out))
		return;
	json_t *p = json_pack("{s:s, s:s, s:o}", "level", log_level_name(level), "logger", "sandbox-mcp", "data",
			      json_string_lossy(msg, strlen(msg)));
	(void)out_send_new(out, rpc_notification("notifications/message", p));
}

void mcp_handle_notification(struct mcp *m, struct mcp_peer *peer, const struct rpc_msg *rm)
{
	if (strcmp(rm->method, "notifications/cancelled") == 0) {
		json_t *id = json_object_get(rm->params, "requestId");
		if (rpc_id_valid(id) && dispatch_cancel(m->dispatch, peer, id))
			log_debugf("cancelled request %s", json_is_string(id) ? json_string_value(id) : "(integer id)");
		return;
	}
	if (strcmp(rm->method, "notifications/initialized") == 0) {
		atomic_store(&m->initialized_legacy, true);
		return;
	}
	/* other notifications (progress, roots changes, ...) need nothing from us */
}

void mcp_handle_request(struct mcp *m, struct mcp_peer *peer, struct out *out, const struct rpc_msg *rm,
			struct bulk_lifted *bulk, size_t line_len, bool in_order, bool run_here)
{
	struct req rq = { .peer = peer,
			  .out = out,
			  .id = rm->id,
			  .method = rm->method,
			  .log_level = -1,
			  .bulk = bulk,
			  .line_len = line_len,
			  .in_order = in_order,
			  .run_here = run_here };
	struct fail f = { 0 };
	json_t *empty = NULL;
	char legacy_version[16];

	if (rm->params && !json_is_object(rm->params)) {
		mcp_reply_error(out, rm->id, RPC_INVALID_PARAMS, "params must be an object", NULL);
		return;
	}
	rq.params = rm->params ? rm->params : (empty = json_object());

	json_t *meta = json_object_get(rq.params, "_meta");
	json_t *pv = json_object_get(meta, "io.modelcontextprotocol/protocolVersion");
	rq.progress_token = json_object_get(meta, "progressToken");
	if (rq.progress_token && !json_is_string(rq.progress_token) && !json_is_integer(rq.progress_token))
		rq.progress_token = NULL;

	if (pv) {
		if (!json_is_string(pv) || strcmp(json_string_value(pv), PROTOVER_MODERN) != 0) {
			/* only what _meta may carry: legacy versions need initialize instead */
			json_t *supported = json_array();
			json_array_append_new(supported, json_string(PROTOVER_MODERN));
			json_t *data = json_pack("{s:o, s:O}", "supported", supported, "requested", pv);
			char text[200];
			snprintf(text, sizeof(text), "Unsupported protocol version%s%.40s; this server speaks %s",
				 json_is_string(pv) ? " " : "", json_is_string(pv) ? json_string_value(pv) : "",
				 PROTOVER_MODERN);
			mcp_reply_error(out, rm->id, RPC_UNSUPPORTED_VERSION, text, data);
			json_decref(empty);
			return;
		}
		rq.modern = true;
		rq.version = PROTOVER_MODERN;
		const char *lvl = json_string_value(json_object_get(meta, "io.modelcontextprotocol/logLevel"));
		enum log_level l;
		if (lvl && log_level_parse(lvl, &l) == 0)
			rq.log_level = (int)l;
	} else {
		pthread_mutex_lock(&peer->lock);
		snprintf(legacy_version, sizeof(legacy_version), "%s", peer->version);
		pthread_mutex_unlock(&peer->lock);
		rq.version = legacy_version;
		rq.modern = false;
	}

	const struct method *md = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(mcp_method_table); i++)
		if (strcmp(mcp_method_table[i].name, rm->method) == 0)
			md = &mcp_method_table[i];
	if (!md) {
		char text[200];
		snprintf(text, sizeof(text), "Method not found: %.100s", rm->method);
		mcp_reply_error(out, rm->id, RPC_METHOD_NOT_FOUND, text, NULL);
		json_decref(empty);
		return;
	}
	if (rq.modern && (md->flags & METHOD_LEGACY_ONLY)) {
		char text[200];
		snprintf(text, sizeof(text), "Method %s is not part of protocol %s", rm->method, PROTOVER_MODERN);
		mcp_reply_error(out, rm->id, RPC_METHOD_NOT_FOUND, text, NULL);
		json_decref(empty);
		return;
	}
	if (!rq.modern && !(md->flags & METHOD_BEFORE_INIT)) {
		pthread_mutex_lock(&peer->lock);
		bool init = peer->initialized;
		pthread_mutex_unlock(&peer->lock);
		if (!init) {
			mcp_reply_error(out, rm->id, RPC_INVALID_REQUEST,
					"Server not initialized: send initialize first, or put "
					"io.modelcontextprotocol/protocolVersion \"" PROTOVER_MODERN
					"\" in params._meta",
					NULL);
			json_decref(empty);
			return;
		}
	}

	json_t *result = NULL;
	int r = md->fn(m, &rq, &result, &f);
	if (r == REPLY_DEFERRED) {
		json_decref(empty);
		return;
	}
	if (r < 0) {
		mcp_reply_error(out, rm->id, f.code, f.message, f.data);
		json_decref(empty);
		return;
	}
	finish_result(&rq, md->flags, result);
	(void)out_send_new(out, rpc_result(rm->id, result));
	json_decref(empty);
}
