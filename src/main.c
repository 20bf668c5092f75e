/*
 * main.c - the sandbox-mcp command: serve MCP on stdio (the default),
 * --help, --version, help, doctor, and ready-made client configuration.
 * Settings (--name value) may stand before or after the command.
 *
 * Exit codes: 0 success, 1 a check or start-up step failed, 2 bad usage.
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "buildconf.h"
#include "clientcfg.h"
#include "config/config.h"
#include "engine/engine-image.h"
#include "engine/engine.h"
#include "engine/engines.h"
#include "mcp/mcp.h"
#include "mcp/out.h"
#include "mcp/rpc.h"
#include "sandbox/agentctl.h"
#include "sandbox/ceiling.h"
#include "sandbox/diskguard.h"
#include "sandbox/janitor.h"
#include "sandbox/session.h"
#include "tools/linksign.h"
#include "tools/tools.h"
#include "transport/http/httpcheck.h"
#include "transport/http/httpd.h"
#include "transport/http/preview.h"
#include "transport/stdio.h"

extern char **environ;

/*
 * malloc arenas at most (glibc's default is 8 per core). Every call runs on a
 * thread of its own, and each thread arena kept the high-water mark of the
 * calls it served. The soak (2,000 calls over 8 sessions, 2 cores): RSS
 * start / end 15.4 / 20.4 MiB with glibc's default, 11.2 / 11.2 MiB with 2,
 * calls/s the same (8.8, 9.0). MALLOC_ARENA_MAX, when set, wins.
 */
#define MAIN_MALLOC_ARENAS 2
/*
 * The start-up check of the engine waits this long at most (or
 * SANDBOX_ENGINE_TIMEOUT_S if shorter): a missing socket or a refused
 * connection fails at once, a healthy engine answers in milliseconds, and
 * only an engine that accepts but never answers costs the whole wait.
 */
#define MAIN_ENGINE_PROBE_MS 2000

static volatile sig_atomic_t stop_signal;

/* One command: its arguments (at least, at most), what --help says, what runs it. */
struct command {
	const char *name;
	const char *synopsis; /* its arguments, for usage lines */
	int args_min, args_max;
	const char *help;
	int (*run)(const struct config *cfg, char **args);
};

static void on_signal(int sig);
static int engine_create_cfg(const struct config *cfg, int timeout_ms, struct engine **ret, struct err *err);
static void usage(FILE *f);
static int serve(const struct config *cfg, char **args);
static int serve_services(const struct config *cfg, struct janitor *janitor, bool http, const sigset_t *stop,
			  bool *ret_done);
static int serve_http(struct mcp *m, const struct tool_services *svc, const sigset_t *stop);
static int discard(void *data, const char *line, size_t len, bool response);
struct probe {
	const struct config *cfg;
	struct mcp *m;
};
static void *engine_probe(void *arg);
static int doctor(const struct config *cfg, char **args);
static int doctor_host(const struct config *cfg);
static int doctor_engines(const struct config *cfg);
static int doctor_engine(const struct config *cfg, struct engine *engine, const char *endpoint);
static int print_client_config(const struct config *cfg, char **args);
static int help(const struct config *cfg, char **args);
static const struct command *command_find(const char *name);
static const char *command_names(void);
static int run_command_line(const struct config *cfg, int argc, char **argv);

static const struct command commands[] = {
	{ "serve", "", 0, 0, "Serve MCP on stdin/stdout (the default), or over HTTP with --http", serve },
	{ "doctor", "", 0, 0, "Check the Docker engine, the default image and the host folders; print fixes", doctor },
	{ "config", "CLIENT [docker[=IMAGE]]", 1, 2,
	  "Print what adds this binary to CLIENT: claude-desktop, claude-code, gemini or codex; with docker, "
	  "`docker run -i` of the server image (default sandbox-mcp:" SANDBOX_VERSION ")",
	  print_client_config },
	{ "help", "[COMMAND]", 0, 1, "Show this help, or one command's", help },
};

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: sandbox-mcp [COMMAND] [SETTINGS]\n"
		   "\n"
		   "An MCP server on stdio that runs code in Docker sandboxes.\n"
		   "\n"
		   "Commands:\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		char head[64];
		snprintf(head, sizeof(head), "%s %s", commands[i].name, commands[i].synopsis);
		fprintf(f, "  %-22s %s\n", head, commands[i].help);
	}
	fprintf(f, "  %-22s %s\n  %-22s %s\n\n", "--help", "Show this help", "--version", "Show the version");
	fprintf(f, "Settings (flag, environment variable, meaning), before or after the command:\n");
	config_print_help(f);
}

static const struct command *command_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* "serve, doctor, config, help", from the table. */
static const char *command_names(void)
{
	static char names[128];
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(commands) && n < sizeof(names); i++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "", commands[i].name);
	return names;
}

/* help [COMMAND] */
static int help(const struct config *cfg, char **args)
{
	(void)cfg;
	if (!args[0]) {
		usage(stdout);
		return 0;
	}
	const struct command *c = command_find(args[0]);
	if (!c) {
		fprintf(stderr, "sandbox-mcp: help: unknown command '%s' (commands: %s)\n", args[0], command_names());
		return 2;
	}
	printf("Usage: sandbox-mcp %s%s%s [SETTINGS]\n\n%s\n\nSettings: see sandbox-mcp --help\n", c->name,
	       c->synopsis[0] ? " " : "", c->synopsis, c->help);
	return 0;
}

/* The engine DOCKER_HOST and the TLS settings name. */
static int engine_create_cfg(const struct config *cfg, int timeout_ms, struct engine **ret, struct err *err)
{
	struct endpoint_tls tls;
	char paths[3][4096];

	endpoint_tls_from_config(cfg, &tls, paths);
	return engine_create(cfg->docker_host, &tls, timeout_ms, ret, err);
}

/*
 * Asks the engine for its version once, at start, beside serving (a thread
 * of its own: clients start the server at every launch, and the engine's
 * answer took most of the time to the initialize reply). Clients call a
 * server healthy when it answers initialize, so an engine that does not
 * answer would otherwise surface only at the first tool call: say it on
 * stderr (client logs) and first in the instructions (the model), for
 * every initialize after the probe (most: a client's first line comes after
 * its own start-up, and an engine that is down is refused at once).
 */
static void *engine_probe(void *arg)
{
	const struct config *cfg = ((struct probe *)arg)->cfg;
	struct mcp *m = ((struct probe *)arg)->m;
	struct engine *probe = NULL;
	struct err err;
	uint64_t ms = cfg->engine_timeout_s * 1000 < MAIN_ENGINE_PROBE_MS ? cfg->engine_timeout_s * 1000
									  : MAIN_ENGINE_PROBE_MS;

	err_clear(&err);
	int r = engine_create_cfg(cfg, (int)ms, &probe, &err);
	if (r == 0)
		r = engine_reachable(probe, (int)ms, &err);
	engine_destroy(probe);
	if (r == 0)
		return NULL;
	log_warnf("the Docker engine does not answer, so every sandbox tool will fail until it does: %s. "
		  "`sandbox-mcp doctor` checks the setup",
		  err.msg);
	char notice[ERR_MSG_MAX + 400];
	snprintf(notice, sizeof(notice),
		 "WARNING: the Docker engine was unreachable when this server started (%s), so the sandbox tools "
		 "fail until it answers. Tell the user to start Docker or fix DOCKER_HOST (`sandbox-mcp doctor` "
		 "checks the setup); env_info checks the engine again.",
		 err.msg);
	mcp_add_notice(m, notice);
	return NULL;
}

static int serve(const struct config *cfg, char **args)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct janitor *janitor = NULL;
	int r;

	/* first: a fork must come before any thread (janitor.h) */
	if ((r = janitor_start(cfg, &janitor)) < 0)
		log_warnf("no janitor (%s): if this server is killed, its containers stay until the next one starts",
			  strerror(-r));
	signal(SIGPIPE, SIG_IGN);
#ifdef M_ARENA_MAX
	/* before any thread starts; a sanitizer's allocator declines (returns 0), which is fine */
	if (!getenv("MALLOC_ARENA_MAX") && mallopt(M_ARENA_MAX, MAIN_MALLOC_ARENAS) != 1)
		log_debugf("mallopt(M_ARENA_MAX, %d) declined; glibc's default arenas stay", MAIN_MALLOC_ARENAS);
#endif
	sigemptyset(&sa.sa_mask);
	/* no SA_RESTART: a signal must interrupt the blocking read of stdin */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	bool http = cfg->http && cfg->http[0];
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGTERM);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGHUP); /* HTTP: re-read the token file */
	/* HTTP: before any thread starts, so that only sigwait in serve_http takes them */
	if (http)
		pthread_sigmask(SIG_BLOCK, &stop, NULL);
	bool done = true;
	int rc = serve_services(cfg, janitor, http, &stop, &done);
	if (done)
		janitor_release(janitor);
	else
		janitor_leave(janitor); /* the engine was slow: the janitor removes the rest */
	return rc;
}

/* serve's services: made, served through, ended. The exit status; *ret_done false: removals left to the janitor. */
static int serve_services(const struct config *cfg, struct janitor *janitor, bool http, const sigset_t *stop,
			  bool *ret_done)
{
	struct err err;
	struct engines *engines = NULL;
	int r;

	err_clear(&err);
	/* the allowed host directories, canonicalised and opened once, now */
	struct hostfs *hostfs = NULL;
	if ((r = hostfs_create(cfg->host_dirs, &hostfs, &err)) < 0) {
		log_errorf("%s", err.msg);
		tools_finish();
		return 1;
	}
	/* a misplaced outbox is not fatal: the tools work, artifacts are just not copied */
	if (cfg->outbox && cfg->outbox[0] && hostfs_outbox_open(hostfs, cfg->outbox, &err) < 0)
		log_warnf("SANDBOX_OUTBOX: %s; new artifacts are not copied to the host", err.msg);
	if ((r = engines_open(cfg, environ, (int)cfg->engine_timeout_s * 1000, &engines, &err)) < 0) {
		log_errorf("%s", err.msg);
		hostfs_destroy(hostfs);
		tools_finish();
		return 1;
	}
	struct session_mgr *sessions = NULL;
	if ((r = session_mgr_create(cfg, engines, &sessions, &err)) < 0) {
		log_errorf("%s", err.msg);
		engines_destroy(engines);
		hostfs_destroy(hostfs);
		tools_finish();
		return 1;
	}
	/* before the pool or a session makes a container */
	janitor_arm(janitor, session_mgr_instance(sessions));
	session_mgr_start(sessions);
	/* HTTP answers each request on its own response: what has no request to go with is dropped */
	struct out_sink none = { .write = discard };
	struct out *out = http ? out_create_sink(&none) : out_create(STDOUT_FILENO);
	/* HTTP mode only: tool results then carry signed download links */
	struct linksign *links = http ? linksign_create(cfg->http_link_ttl_s) : NULL;
	struct tool_services svc = { .cfg = cfg,
				     .engine = engines_default(engines),
				     .engines = engines,
				     .sessions = sessions,
				     .hostfs = hostfs,
				     .links = links,
				     .env_cache = env_cache_create() };
	struct mcp *m = mcp_create(&svc, out);
	struct probe probe = { cfg, m };
	mcp_start_probe(m, engine_probe, &probe, engine_endpoint(svc.engine)->kind == ENDPOINT_UNIX);
	bool idle;
	int rc = 0;
	if (http) {
		rc = serve_http(m, &svc, stop);
		idle = mcp_destroy(m);
	} else {
		idle = stdio_serve(m, out, cfg->max_line_bytes, &stop_signal);
	}
	/* after the workers: removes this instance's non-persistent containers */
	if (!idle) {
		/* calls that ignored cancellation still use the services: keep them */
		log_warnf("exiting with calls still running");
		session_mgr_cleanup(sessions);
		/*
		 * No janitor_release: a running call may still make a container
		 * (or lose a create's answer) after the cleanup's sweep. The
		 * janitor sees the exit as a death and sweeps once more.
		 */
		/*
		 * The running calls hold the services, and svc lives in this frame:
		 * end the process here instead of returning (which would leave them a
		 * dead stack frame) and without exit handlers (LeakSanitizer's would
		 * report what they hold). stdout and stderr are unbuffered writes.
		 */
		_exit(rc);
	}
	session_mgr_cleanup(sessions);
	*ret_done = session_mgr_exit_done(sessions);
	session_mgr_destroy(sessions);
	env_cache_destroy(svc.env_cache);
	out_destroy(out);
	engines_destroy(engines);
	hostfs_destroy(hostfs);
	linksign_destroy(links);
	tools_finish();
	return rc;
}

static int discard(void *data, const char *line, size_t len, bool response)
{
	(void)data, (void)line, (void)len, (void)response;
	return 0;
}

/* Previews of forwarded ports (preview.h) on --http's address, unless SANDBOX_PREVIEW_URL is off. 0 or -errno. */
static int previews(const struct tool_services *svc, struct preview **ret, struct err *err)
{
	const struct config *cfg = svc->cfg;
	char host[HTTPCHECK_HOST_MAX + 1];
	unsigned port;

	*ret = NULL;
	if (cfg->preview_url && strcmp(cfg->preview_url, "off") == 0)
		return 0;
	if (httpcheck_listen_parse(cfg->http, strlen(cfg->http), host, &port) < 0)
		return 0; /* httpd_start has said what is wrong with it */
	/* behind a proxy of the operator's (a base URL given): that proxy is the way in, on this host */
	if (cfg->preview_url && cfg->preview_url[0])
		snprintf(host, sizeof(host), "127.0.0.1");
	int r = preview_start(host, (unsigned)cfg->preview_port, cfg->preview_url, svc->sessions, svc->links, ret, err);
	if (r == 0)
		log_infof("previews of forwarded ports on %s port %u", host, preview_port(*ret));
	return r;
}

/* Serves HTTP until SIGTERM or SIGINT (blocked in every thread: sigwait takes them). 0, or 1 when it cannot start. */
static int serve_http(struct mcp *m, const struct tool_services *svc, const sigset_t *stop)
{
	struct httpd *h = NULL;
	struct preview *p = NULL;
	struct err err;
	int sig = 0;

	err_clear(&err);
	if (httpd_start(m, svc, &h, &err) < 0 || previews(svc, &p, &err) < 0) {
		log_errorf("%s", err.msg);
		httpd_stop(h);
		return 1;
	}
	log_infof("serving MCP on %s://%s/mcp (engine %s)", httpd_tls(h) ? "https" : "http", httpd_address(h),
		  engine_endpoint(svc->engine)->display);
	for (;;) {
		if (sigwait(stop, &sig) != 0)
			continue;
		if (sig != SIGHUP)
			break;
		httpd_reload(h);
	}
	log_infof("stopping on signal %d", sig);
	preview_stop(p);
	httpd_stop(h);
	return 0;
}

/* Checks what the server needs and prints a fix for each problem; the exit status. */
static int doctor(const struct config *cfg, char **args)
{
	if (cfg->docker_config_warning[0])
		printf("note  %s\n", cfg->docker_config_warning);
	int host = doctor_host(cfg);
	int engine = doctor_engines(cfg);
	return host || engine ? 1 : 0;
}

/* Each engine (engines.h) in turn, the default first. 0, or 1 with problems on any. */
static int doctor_engines(const struct config *cfg)
{
	struct engines *es = NULL;
	struct err err;
	int problems = 0;

	err_clear(&err);
	if (engines_open(cfg, environ, (int)cfg->engine_timeout_s * 1000, &es, &err) < 0) {
		printf("FAIL  %s: %s\n", cfg->engines && cfg->engines[0] ? "engines" : "DOCKER_HOST", err.msg);
		return 1;
	}
	size_t n = engines_count(es);
	for (size_t i = 0; i < n; i++) {
		if (n > 1)
			printf("%sengine %s:\n", i ? "\n" : "", engines_name(es, i));
		problems |= doctor_engine(cfg, engines_at(es, i), engines_endpoint(es, i));
	}
	engines_destroy(es);
	return problems ? 1 : 0;
}

/* One engine: endpoint, socket, API version, the default image. 0, or 1 with problems. */
static int doctor_engine(const struct config *cfg, struct engine *engine, const char *endpoint)
{
	struct engine_version ev;
	struct err err;
	int problems = 0;

	err_clear(&err);
	printf("ok    endpoint %s\n", endpoint);
	if (agentctl_built())
		printf("ok    in-sandbox agent built in (commands skip the engine's exec path)\n");
	else
		printf("note  built without the in-sandbox agent (musl-gcc was missing: apt-get install musl-tools, "
		       "then rebuild); commands take the engine's exec path\n");
	const struct endpoint *ep = engine_endpoint(engine);
	if (ep->kind == ENDPOINT_UNIX) {
		struct stat st;
		if (stat(ep->path, &st) < 0) {
			printf("FAIL  socket %s: %s\n      start Docker (`systemctl start docker` or `dockerd &`), or set "
			       "DOCKER_HOST to the engine's socket\n",
			       ep->path, strerror(errno));
			return 1;
		}
		if (access(ep->path, R_OK | W_OK) < 0) {
			printf("FAIL  socket %s: no permission (owner uid %u, gid %u, mode %o)\n      add yourself to "
			       "the socket's group (`sudo usermod -aG docker $USER`, then log in again) or use a "
			       "socket you own (rootless Docker, Podman) via DOCKER_HOST\n",
			       ep->path, (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777));
			return 1;
		}
		printf("ok    socket %s is readable and writable by you\n", ep->path);
	}
	if (engine_version(engine, NULL, &ev, &err) < 0) {
		printf("FAIL  engine: %s\n", err.msg);
		return 1;
	}
	printf("ok    engine %s, API %s (min %s), %s/%s\n", ev.version, ev.api_version, ev.min_api_version, ev.os,
	       ev.arch);
	if (engine_api_at_least(ev.api_version, ENGINE_API_MIN)) {
		printf("ok    API version %s >= %s\n", ev.api_version, ENGINE_API_MIN);
	} else {
		printf("FAIL  API version %s is older than %s: upgrade Docker to 20.10 or newer\n", ev.api_version,
		       ENGINE_API_MIN);
		problems++;
	}
	json_t *img = NULL;
	if (engine_image_inspect(engine, NULL, cfg->image, &img, &err) == 0) {
		printf("ok    image %s present (%s)\n", cfg->image,
		       json_string_value(json_object_get(img, "Id")) ? json_string_value(json_object_get(img, "Id"))
								     : "?");
		json_decref(img);
	} else {
		printf("FAIL  image %s: %s\n", cfg->image, err.msg);
		if (err.code == ERRCODE_IMAGE_NOT_FOUND && strcmp(cfg->image, SANDBOX_DEFAULT_IMAGE) == 0)
			printf("      build it: docker build -t %s image/   (from the sandbox-mcp source tree)\n",
			       cfg->image);
		else if (err.code == ERRCODE_IMAGE_NOT_FOUND)
			printf("      get it: docker pull %s   (or build it)\n", cfg->image);
		problems++;
	}
	/* what the operator's settings allow, so a surprise is visible before a model meets it */
	char quota[256];
	ceiling_quota_state(engine, NULL, cfg, true, quota, sizeof(quota));
	printf("%s  workspace quota: %s\n", strcmp(quota, "enforced") == 0 ? "ok  " : "note", quota);
	char cap[256];
	bool enforced = strcmp(quota, "enforced") == 0;
	printf("%s  disk cap: %s\n", enforced || agentctl_built() ? "ok  " : "note",
	       diskguard_mode(enforced, (unsigned long long)cfg->workspace_mb, cap, sizeof(cap)));
	printf("ok    images: %s%s%s%s; pull %s\n", config_images_summary(cfg),
	       cfg->images[0] ? "; SANDBOX_IMAGES '" : "", cfg->images, cfg->images[0] ? "'" : "", cfg->pull);
	printf("ok    networks sessions may join: %s\n", cfg->networks[0] ? cfg->networks : "none (SANDBOX_NETWORKS)");
	return problems ? 1 : 0;
}

/* The host side: the allowed folders and the outbox. Returns the problems found. */
static int doctor_host(const struct config *cfg)
{
	struct hostfs *h = NULL;
	struct err err;
	int problems = 0;

	err_clear(&err);
	if (hostfs_create(cfg->host_dirs, &h, &err) < 0) {
		printf("FAIL  SANDBOX_HOST_DIRS: %s\n", err.msg);
		return 1;
	}
	if (hostfs_dirs(h)[0]) {
		printf("ok    host folders for file_upload/file_download: %s\n", hostfs_dirs(h));
	} else if (cfg->host_dirs[0]) {
		printf("FAIL  SANDBOX_HOST_DIRS=%s names no existing absolute folder\n", cfg->host_dirs);
		problems++;
	} else {
		printf("note  no host folders allowed (SANDBOX_HOST_DIRS): file_upload and file_download refuse "
		       "every host path\n");
	}
	if (cfg->outbox && cfg->outbox[0]) {
		if (hostfs_outbox_open(h, cfg->outbox, &err) == 0) {
			printf("ok    outbox %s\n", hostfs_outbox(h));
		} else {
			printf("FAIL  SANDBOX_OUTBOX: %s\n", err.msg);
			problems++;
		}
	}
	hostfs_destroy(h);
	return problems;
}

static int print_client_config(const struct config *cfg, char **args)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct err err;

	if (n < 0) {
		fprintf(stderr, "sandbox-mcp: cannot find my own path: %s\n", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	struct clientcfg_launch how = { .self = self, .host_dirs = cfg->host_dirs };
	if (args[1] && strcmp(args[1], "docker") == 0) {
		how.image = "sandbox-mcp:" SANDBOX_VERSION;
	} else if (args[1] && strncmp(args[1], "docker=", 7) == 0 && args[1][7]) {
		how.image = args[1] + 7;
	} else if (args[1]) {
		fprintf(stderr, "sandbox-mcp: config %s: '%s' is not docker or docker=IMAGE\n", args[0], args[1]);
		return 2;
	}
	err_clear(&err);
	int r = clientcfg_print(stdout, args[0], &how, &err);
	if (r < 0) {
		fprintf(stderr, "sandbox-mcp: %s\n", err.msg);
		return r == -ENOENT ? 2 : 1;
	}
	return 0;
}

/* The command and its arguments, after the settings were taken out: checks and runs it. */
static int run_command_line(const struct config *cfg, int argc, char **argv)
{
	for (int i = 0; i < argc; i++) {
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "sandbox-mcp: unknown setting '%s' (see sandbox-mcp --help for the settings)\n",
				argv[i]);
			return 2;
		}
	}
	const char *name = argc > 0 ? argv[0] : "serve";
	const struct command *c = command_find(name);
	if (!c) {
		fprintf(stderr, "sandbox-mcp: unknown command '%s' (commands: %s; see sandbox-mcp --help)\n", name,
			command_names());
		return 2;
	}
	int nargs = argc > 0 ? argc - 1 : 0;
	if (nargs < c->args_min && c->run == print_client_config) {
		fprintf(stderr, "sandbox-mcp: config needs a client: %s\n", clientcfg_names);
		return 2;
	}
	if (nargs > c->args_max) {
		if (c->args_max == 0)
			fprintf(stderr, "sandbox-mcp: %s takes no arguments; got '%s' (see sandbox-mcp help %s)\n",
				c->name, argv[1], c->name);
		else
			fprintf(stderr, "sandbox-mcp: %s takes %s; '%s' is one argument too many\n", c->name,
				c->synopsis, argv[1 + c->args_max]);
		return 2;
	}
	char *args[3] = { NULL, NULL, NULL };
	for (int i = 0; i < nargs && i < 2; i++)
		args[i] = argv[1 + i];
	return c->run(cfg, args);
}

int main(int argc, char **argv)
{
	struct config cfg;
	struct err err;
	int next = 1;

	util_json_init();
	config_init(&cfg);
	err_clear(&err);

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			config_finish(&cfg);
			return 0;
		}
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
			printf("sandbox-mcp %s\n", SANDBOX_VERSION);
			config_finish(&cfg);
			return 0;
		}
	}
	if (config_load(&cfg, environ, argc, argv, 1, &next, &err) < 0) {
		fprintf(stderr, "sandbox-mcp: %s (see sandbox-mcp --help)\n", err.msg);
		config_finish(&cfg);
		return 2;
	}
	log_init(cfg.log_level);

	int rc = run_command_line(&cfg, argc - next, argv + next);
	config_finish(&cfg);
	return rc;
}
