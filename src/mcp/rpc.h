/*
 * rpc.h - JSON-RPC 2.0 over newline-delimited stdio: the capped line reader,
 * envelope validation and the builders for results, errors and notifications.
 *
 * The reader never holds more than max_line bytes of one line: a longer line
 * is drained to its newline and reported as -EMSGSIZE, so one bad line costs
 * one error reply and the stream stays in sync.
 */
#ifndef RPC_H
#define RPC_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/errcode.h"

#define RPC_PARSE_ERROR (-32700)
#define RPC_INVALID_REQUEST (-32600)
#define RPC_METHOD_NOT_FOUND (-32601)
#define RPC_INVALID_PARAMS (-32602)
#define RPC_INTERNAL_ERROR (-32603)
#define RPC_RESOURCE_NOT_FOUND (-32002)
#define RPC_UNSUPPORTED_VERSION (-32022)

/* Bytes read from the fd at a time. */
#define RPC_READ_CHUNK (64 * 1024)
/* Longest method name accepted. */
#define RPC_METHOD_MAX 128

struct rpc_reader {
	int fd;
	size_t max_line;
	struct buf buf;
	size_t scanned;	 /* bytes of buf already searched for '\n' */
	size_t consumed; /* bytes of buf handed out by the last call */
	bool discarding; /* inside an over-long line, dropping to its newline */
	bool eof;
};

void rpc_reader_init(struct rpc_reader *r, int fd, size_t max_line);
void rpc_reader_finish(struct rpc_reader *r);
/*
 * Returns the next line (without '\n', possibly empty) as a slice valid until
 * the next call: 1 for a line, 0 at EOF, -EMSGSIZE for a line over the cap
 * (already skipped), -EINTR when interrupted by a signal, or -errno.
 * A final line without '\n' before EOF is returned as a line.
 */
int rpc_reader_next(struct rpc_reader *r, struct slice *ret_line);

enum rpc_kind {
	RPC_KIND_REQUEST,
	RPC_KIND_NOTIFICATION,
	RPC_KIND_RESPONSE,
};

struct rpc_msg {
	enum rpc_kind kind;
	json_t *id;	    /* borrowed; NULL for notifications */
	const char *method; /* borrowed; NULL for responses */
	json_t *params;	    /* borrowed; NULL when absent */
};

/* True for the id forms JSON-RPC allows in requests: string or integer. */
bool rpc_id_valid(const json_t *id);

/*
 * Checks the envelope of one decoded message. 0 with ret filled, or -EINVAL
 * with err->msg set; *ret_id is then the id to echo in the error (or NULL).
 */
int rpc_envelope(json_t *msg, struct rpc_msg *ret, json_t **ret_id, struct err *err);

/* Builders; each returns a new reference and steals result/data. */
json_t *rpc_result(json_t *id, json_t *result);
json_t *rpc_error(json_t *id, int code, const char *message, json_t *data);
json_t *rpc_notification(const char *method, json_t *params);

#endif
