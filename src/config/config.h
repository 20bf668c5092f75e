/*
 * config.h - the server's settings: compiled-in defaults, then SANDBOX_*
 * environment variables, then the matching --flags (docs/design.md §5).
 *
 * Every setting is one row of a table in config.c, so the environment, the
 * flags, --help and env_info can never disagree about names or limits.
 */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "base/errcode.h"
#include "base/log.h"

/* Tool groups, each switchable with SANDBOX_TOOLS. */
enum tool_group {
	TOOL_GROUP_SESSION = 1u << 0,
	TOOL_GROUP_RUN = 1u << 1,
	TOOL_GROUP_FILES = 1u << 2,
	TOOL_GROUP_PIP = 1u << 3,
	TOOL_GROUP_GIT = 1u << 4,
	TOOL_GROUP_ENV = 1u << 5,
	TOOL_GROUP_EGRESS = 1u << 6,
	TOOL_GROUP_SAVEPOINTS = 1u << 7,
	TOOL_GROUP_SERVICES = 1u << 8,
	TOOL_GROUP_ALL = (1u << 9) - 1,
};

/* Repositories a commit or export may create unless SANDBOX_COMMIT_REPOS says otherwise. */
#define CONFIG_COMMIT_REPOS_DEFAULT "sandbox-mcp-*,localhost/sandbox-mcp/*"

struct config {
	char *docker_host; /* NULL: DOCKER_HOST unset, use the default socket */
	/* TLS to a tcp:// engine, read as the docker CLI reads it (endpoint_tls_from_config) */
	bool tls_verify;		    /* DOCKER_TLS_VERIFY non-empty, or --tlsverify[=true] */
	char *cert_path;		    /* DOCKER_CERT_PATH; default $DOCKER_CONFIG, else ~/.docker */
	char *tlscacert, *tlscert, *tlskey; /* --tlscacert...: override cert_path/{ca,cert,key}.pem */
	/* Docker context (dockerctx.h): DOCKER_CONTEXT, --context, or config.json's currentContext */
	char *context; /* the context in use; NULL or "default": DOCKER_HOST's */
	/* why docker's config.json was not read ("" when it was, or is absent); doctor shows it */
	char docker_config_warning[512];
	bool tls_from_context; /* TLS files came from the context: no cert_path defaults */
	bool tls_skip_verify;  /* the context's SkipTLSVerify */
	/* named engines besides DOCKER_HOST's: "a=ENDPOINT;b=ENDPOINT" (engines.h), each --engine adds one */
	char *engines;
	char *image;
	uint64_t memory_mb;
	double cpus;
	uint64_t pids;
	/* ceilings of what session_create may ask for; unset (0) means the default above */
	uint64_t max_memory_mb;
	double max_cpus;
	uint64_t workspace_mb;	 /* workspace quota where the engine enforces one (0: none) */
	uint64_t output_save_mb; /* run output saved in the workspace, per stream */
	uint64_t timeout_s;
	uint64_t idle_ttl_s;
	uint64_t max_sessions;	     /* per principal (HTTP token NAME); stdio has one */
	uint64_t max_sessions_total; /* all principals together; 0: no such limit */
	uint64_t pool_size;	     /* warm-pool members of the default settings (pool.h); 0: no pool */
	uint64_t max_upload_mb;
	uint64_t output_bytes;
	uint64_t max_code_bytes;
	uint64_t max_line_bytes;
	uint64_t engine_timeout_s;
	uint64_t max_layers; /* session_commit flattens an image that would have more */
	/* save points (docs/checkpoints.md): caps per session and per principal, forks, idle and paused sessions */
	uint64_t session_checkpoints; /* checkpoints taken of one session at most */
	uint64_t max_checkpoints;     /* checkpoints one principal holds at most */
	uint64_t checkpoint_mb;	      /* MB one principal's checkpoints add up to at most */
	uint64_t max_forks;	      /* sessions one session_fork makes at most */
	uint64_t idle_snapshot;	      /* 1: checkpoint a session before the idle TTL closes it */
	uint64_t paused_ttl_s;	      /* close a session paused this long, s (0: never while paused) */
	char *workspace;
	char *host_dirs;
	char *tools;
	char *outbox;
	char *runtime;
	char *commit_repos; /* repository patterns session_commit and session_export may tag (image.h) */
	char *networks;	    /* Docker networks sessions may join besides none, ','-separated */
	/* egress through the server's proxy (docs/egress.md; parsed by sandbox/egress.c) */
	char *egress_allow;	 /* the ceiling: rules a session may ask for; "": every preset's; "none": no egress */
	char *egress_presets;	 /* the operator's presets, "NAME=RULE,RULE;NAME=..." */
	char *egress_addresses;	 /* special addresses (CIDR) an allowed name may still resolve to */
	uint64_t egress_conns;	 /* connections per session at once */
	char *http;		 /* --http HOST:PORT; NULL or "": stdio */
	char *http_allow_origin; /* ','-separated origins; NULL or "": localhost's on loopback */
	uint64_t http_timeout_s; /* idle HTTP connections are closed after this */
	uint64_t http_request_timeout_s; /* a request head and body must arrive within this */
	char *http_public_url;		 /* base of signed links; NULL or "": the bound address */
	uint64_t http_link_ttl_s;	 /* signed links live this long */
	char *preview_url;		 /* previews' base (preview.h); NULL or "": http://localhost:PORT; "off" */
	uint64_t preview_port;		 /* previews listen here, on --http's address; 0: a free port */
	char *tls_cert, *tls_key;	 /* PEM files: --http serves HTTPS */
	char *http_token_file;		 /* NAME:TOKEN lines; NULL or "": no auth (loopback only) */
	char *images;			 /* image policy patterns (imageref.h), ','-separated; "": the default policy */
	char *pull;			 /* when session_create pulls: never, missing, always */
	char *log_level_name;
	enum log_level log_level;
	unsigned tool_groups;
};

/* The docker CLI's config dir: $DOCKER_CONFIG, else $HOME/.docker. */
void config_docker_dir(char **envp, char *ret, size_t n);

/* Fills c with the defaults. Release with config_finish. */
void config_init(struct config *c);
void config_finish(struct config *c);

/*
 * Reads the environment, then the settings in argv[start..argc), wherever
 * they stand (before or after a command; none after "--"). The other
 * arguments (a command, its arguments, unknown flags) are moved, in their
 * order, to argv[*ret_next..argc). 0, or -EINVAL with a one-line message in err.
 */
int config_load(struct config *c, char **envp, int argc, char **argv, int start, int *ret_next, struct err *err);

/* True for a network mode no setting may allow (host, container:..., any ':' or '/'). */
bool config_network_forbidden(const char *name);
/* True for "none" and the networks SANDBOX_NETWORKS lists (never a forbidden one). */
bool config_network_allowed(const struct config *c, const char *name);

/* One line saying what the image policy allows (for env_info and doctor). */
const char *config_images_summary(const struct config *c);

/* Prints the settings table for --help. */
void config_print_help(FILE *f);

/* The settings as a JSON object (for env_info); a new reference. */
json_t *config_to_json(const struct config *c);

#endif
