/*
 * engine.h - typed calls to the Docker Engine API.
 *
 * Each call borrows a keep-alive connection from a small pool (or opens one),
 * sends one request and maps the answer: 2xx bodies are decoded, error
 * statuses become a struct err carrying the engine's own message.  A struct
 * call, when given, can abort a blocked request at once (its cancel hook shuts
 * the socket down).  Paths carry the API version negotiated on first use: the
 * engine's own, capped at the newest this client knows, never below 1.41.
 *
 * Ids that go into URLs are checked (hex container and exec ids); names and
 * other values are percent-encoded.
 */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/call.h"
#include "base/errcode.h"
#include "engine/endpoint.h"

/* Largest JSON body read from the engine. */
#define ENGINE_JSON_MAX (16u << 20)
/* Oldest API version this client speaks (Docker 20.10, Podman's compat socket). */
#define ENGINE_API_MIN "1.41"
/* Newest API version this client was written against. */
#define ENGINE_API_MAX "1.45"
/* Idle keep-alive connections kept for reuse. */
#define ENGINE_POOL_MAX 4
/* Container and exec ids: 64 hex digits. */
#define ENGINE_ID_LEN 64

struct engine;
struct engine_stream;

struct engine_version {
	char version[64];
	char api_version[16];
	char min_api_version[16];
	char os[32];
	char arch[32];
	char kernel[128];
	bool podman; /* Components name "Podman Engine": its compatible API (src/compat.h) */
};

/* 0 with *ret, or -EINVAL when DOCKER_HOST cannot be parsed. */
int engine_create(const char *docker_host, const struct endpoint_tls *tls, int timeout_ms, struct engine **ret,
		  struct err *err);
void engine_destroy(struct engine *e);
/* Whether the engine said it is Podman (known once a versioned call was made; false before). */
bool engine_is_podman(struct engine *e);
const struct endpoint *engine_endpoint(const struct engine *e);
/* Names the engine in its endpoint's display, so that its failures say which engine (engines.h). */
void engine_set_label(struct engine *e, const char *name);

/*
 * Sends method path (below the version prefix, e.g. "/containers/json") with
 * an optional JSON body; returns the status and decoded JSON (NULL for an
 * empty body). Statuses >= 400 are errors (-EIO, *ret_status still set).
 */
int engine_request(struct engine *e, struct call *call, const char *method, const char *path, json_t *body,
		   int *ret_status, json_t **ret_json, struct err *err);
/*
 * Whether the engine answers now: a fresh connect on a unix socket, a
 * _ping on a kept-alive connection elsewhere (TLS, ssh). 0 or -errno with err.
 */
int engine_reachable(struct engine *e, int timeout_ms, struct err *err);
/* The timeout of one engine call (SANDBOX_ENGINE_TIMEOUT_S), ms. */
int engine_timeout_ms(const struct engine *e);
/* Same with a raw body (e.g. a tar stream) and its content type. */
int engine_request_raw(struct engine *e, struct call *call, const char *method, const char *path,
		       const char *content_type, const void *body, size_t len, int *ret_status, json_t **ret_json,
		       struct err *err);

/* True when API version a ("1.43") is at least b. */
bool engine_api_at_least(const char *a, const char *b);
/* Percent-encodes s for a URL path segment or query value into out. 0 or -ENAMETOOLONG. */
int engine_url_escape(const char *s, char *out, size_t outsz);
/* True for a full 64-hex-digit id. */
bool engine_id_valid(const char *id);

/* GET /version. */
int engine_version(struct engine *e, struct call *call, struct engine_version *ret, struct err *err);

/*
 * What this engine answered to HostConfig.StorageOpt (a disk quota): state 1
 * applied, -1 refused with the engine's reason in why, 0 not tried yet.
 * Remembered for the engine's lifetime, so a refusal costs one request.
 */
void engine_storage_opt_note(struct engine *e, int state, const char *why);
/* The noted state; copies the reason into ret_why (may be NULL). */
int engine_storage_opt_state(struct engine *e, char *ret_why, size_t n);

/* POST /containers/create; ret_id receives the 64-hex id. */
int engine_container_create(struct engine *e, struct call *call, json_t *body, char ret_id[ENGINE_ID_LEN + 1],
			    json_t **ret_warnings, struct err *err);
/*
 * The same with a name (lower-case letters, digits and '-', at most 64): the
 * engine gives a name to one container at a time, so -EEXIST (a 409) says
 * another has it. What servers use as a lock only the engine can hold.
 */
int engine_container_create_named(struct engine *e, struct call *call, const char *name, json_t *body,
				  char ret_id[ENGINE_ID_LEN + 1], struct err *err);
int engine_container_start(struct engine *e, struct call *call, const char *id, struct err *err);
int engine_container_inspect(struct engine *e, struct call *call, const char *id, json_t **ret_json, struct err *err);
/* POST /containers/{id}/kill then DELETE ?force=1&v=1; a container already gone is success. */
int engine_container_remove(struct engine *e, struct call *call, const char *id, struct err *err);
/* POST /containers/{id}/restart?t=0. */
int engine_container_restart(struct engine *e, struct call *call, const char *id, struct err *err);
/* The bytes of the container's writable layer (SizeRw: the engine walks it, so it costs per file). */
int engine_container_size(struct engine *e, struct call *call, const char *id, int64_t *ret_bytes, struct err *err);
/* GET /containers/json?all=1&filters={"label":[label]}; ret_json is the array. */
int engine_container_list(struct engine *e, struct call *call, const char *label, json_t **ret_json, struct err *err);
/* PUT /containers/{id}/archive?path=... with an uncompressed tar (owners as in the headers). */
int engine_archive_put(struct engine *e, struct call *call, const char *id, const char *path, const void *tar,
		       size_t len, struct err *err);

/* POST /containers/{id}/pause and /unpause (the cgroup freezer: nothing in it runs meanwhile). */
int engine_container_pause(struct engine *e, struct call *call, const char *id, struct err *err);
int engine_container_unpause(struct engine *e, struct call *call, const char *id, struct err *err);

/* What HEAD /containers/{id}/archive says of a path (lstat of it, its parent resolved). */
struct engine_path_stat {
	uint64_t size;
	uint32_t mode; /* Go's os.FileMode: permission bits, ENGINE_MODE_* type bits */
	char link_target[256];
};
#define ENGINE_MODE_DIR (1u << 31)
#define ENGINE_MODE_SYMLINK (1u << 27)
/* Every type bit of os.FileMode (dir, append, exclusive, temporary, symlink, device, pipe, socket, ...). */
#define ENGINE_MODE_TYPE 0xfff80000u

/* HEAD /containers/{id}/archive?path=. ERRCODE_FILE_NOT_FOUND (-ENOENT) when absent. */
int engine_archive_stat(struct engine *e, struct call *call, const char *id, const char *path,
			struct engine_path_stat *ret, struct err *err);

struct engine_body;
/*
 * GET /containers/{id}/archive?path= (an uncompressed tar): 0 with *ret, whose
 * body is read with engine_body_read; -ENOENT (ERRCODE_FILE_NOT_FOUND) or
 * -errno with err. call, if given, can abort the reads until engine_body_destroy.
 */
int engine_archive_get(struct engine *e, struct call *call, const char *id, const char *path, struct engine_body **ret,
		       struct err *err);
/* Reads up to n body bytes: the count, 0 at the end, or -errno with err. */
ssize_t engine_body_read(struct engine_body *b, void *p, size_t n, struct err *err);
void engine_body_destroy(struct engine_body *b);

/* POST /containers/{id}/exec; body is the ExecConfig. ret_id receives the exec id. */
int engine_exec_create(struct engine *e, struct call *call, const char *container_id, json_t *body,
		       char ret_id[ENGINE_ID_LEN + 1], struct err *err);
/*
 * POST /exec/{id}/start, hijacked: on success *ret is a raw bidirectional
 * stream carrying the multiplexed output (and stdin, when attached).
 */
int engine_exec_start(struct engine *e, struct call *call, const char *exec_id, struct engine_stream **ret,
		      struct err *err);
/* GET /exec/{id}/json: running flag and exit code (-1 while running). */
int engine_exec_inspect(struct engine *e, struct call *call, const char *exec_id, bool *ret_running, int *ret_exit_code,
			struct err *err);

/* The stream's socket (for poll), and bytes already read past the HTTP head. */
int engine_stream_fd(const struct engine_stream *s);
/* The most bytes a stream can have read past its head (one read of the HTTP layer). */
#define ENGINE_STREAM_AHEAD_MAX (64 * 1024)
/* Moves the bytes read ahead of the caller into out (at most ENGINE_STREAM_AHEAD_MAX). 0 or -EMSGSIZE. */
int engine_stream_take_buffered(struct engine_stream *s, struct buf *out);
/* Writes stdin bytes. 0 or -errno. */
int engine_stream_write(struct engine_stream *s, const void *p, size_t n);
/* Half-closes the stream: the process sees EOF on stdin. */
void engine_stream_close_write(struct engine_stream *s);
void engine_stream_destroy(struct engine_stream *s);

/*
 * Images: commit, build, import, export, remove (session_commit and
 * session_export). These may run for minutes, so they get a connection of
 * their own whose reads wait up to ENGINE_LONG_TIMEOUT_MS; the struct call
 * still aborts them at once.
 */
#define ENGINE_LONG_TIMEOUT_MS (30 * 60 * 1000)
/* Longest line of a build's or import's progress stream kept whole. */
#define ENGINE_STREAM_LINE_MAX (1u << 20)
/* Image ids as the engine prints them: "sha256:" and 64 hex digits. */
#define ENGINE_IMAGE_ID_MAX 80
/* The longest /commit request path (its changes): far below the engines' 1 MiB header limit. */
#define ENGINE_COMMIT_PATH_MAX (256 * 1024)

/* GET /containers/{id}/export: the container's whole filesystem as a tar, read with engine_body_read. */
int engine_container_export(struct engine *e, struct call *call, const char *id, struct engine_body **ret,
			    struct err *err);

/* Gives the next bytes of an upload: the count, 0 at the end, or -errno with err. */
typedef ssize_t (*engine_source_fn)(void *arg, void *p, size_t n, struct err *err);
/* Hears each message of a build's or import's progress stream (a JSON object, borrowed). */
typedef void (*engine_message_fn)(void *arg, json_t *msg);

/* Bytes engine_archive_put_stream asks its source for at a time. */
#define ENGINE_PUT_CHUNK (1024 * 1024)
/*
 * engine_archive_put with a body src yields piece by piece (chunked, on a
 * kept-alive connection), so a tar of any size costs one piece of memory.
 * 0, or -errno with err: src's own error as it gave it, -ECANCELED when
 * call was cancelled, or the engine's refusal.
 */
int engine_archive_put_stream(struct engine *e, struct call *call, const char *id, const char *path,
			      engine_source_fn src, void *arg, struct err *err);

#endif
