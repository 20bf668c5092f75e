/*
 * fuzz-rpc.c - the stdio side end to end: the input is what a client writes
 * to stdin, read back through the capped line reader and handed line by line
 * to mcp_handle_line, as serve() does.
 *
 * Each input gets a fresh mcp (so a crash replays from its file alone) over
 * an engine whose socket does not exist: tools/call fails fast with
 * docker_unavailable, so the session manager, built once as main does it,
 * never holds a session from one input to the next.  Replies go to
 * /dev/null.  Lines are copied into buffers of their exact size, so reading
 * past a line is caught.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "config/config.h"
#include "engine/engine.h"
#include "fuzz.h"
#include "mcp/mcp.h"
#include "mcp/out.h"
#include "mcp/rpc.h"
#include "sandbox/session.h"
#include "tools/tools.h"

/* Short enough that the fuzzer reaches the over-long-line path. */
#define FUZZ_RPC_LINE_MAX 4096
/* How long to wait for queued tools/call workers after each input. */
#define FUZZ_RPC_DRAIN_MS 5000

static struct config cfg;
static struct engines *engines;
static struct out *out;
static struct session_mgr *sessions;
static struct tool_services svc;

static void finish(void)
{
	session_mgr_destroy(sessions); /* drops its lock file */
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct err e;

	util_json_init();
	log_init(LOG_LEVEL_EMERGENCY);
	config_init(&cfg);
	cfg.max_line_bytes = FUZZ_RPC_LINE_MAX;
	cfg.pool_size = 0; /* no warm pool: nothing runs beside the input */
	err_clear(&e);
	FUZZ_CHECK(tools_init(&e) == 0);
	/* an engine that is never there: every call fails fast, as with the engine down */
	cfg.docker_host = xstrdup("unix:///nonexistent/sandbox-mcp-fuzz.sock");
	char *envp[] = { NULL };
	FUZZ_CHECK(engines_open(&cfg, envp, 1000, &engines, &e) == 0);
	FUZZ_CHECK(session_mgr_create(&cfg, engines, &sessions, &e) == 0);
	session_mgr_start(sessions);
	atexit(finish);
	int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	out = out_create(fd); /* fd and the rest live for the whole run */
	svc = (struct tool_services){
		.cfg = &cfg, .engine = engines_at(engines, 0), .engines = engines, .sessions = sessions
	};
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-rpc", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write_full(fd, data, size) == 0);
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);

	struct mcp *m = mcp_create(&svc, out);
	struct rpc_reader reader;
	rpc_reader_init(&reader, fd, cfg.max_line_bytes);
	for (size_t lines = 0;; lines++) {
		FUZZ_CHECK(lines <= size + 1);
		struct slice line;
		int r = rpc_reader_next(&reader, &line);
		if (r == 0)
			break;
		if (r == -EMSGSIZE) {
			mcp_handle_oversized(m);
			continue;
		}
		FUZZ_CHECK(r == 1);
		FUZZ_CHECK(line.n <= FUZZ_RPC_LINE_MAX && memchr(line.p, '\n', line.n) == NULL);
		char *copy = fuzz_piece(line.p, line.n);
		mcp_handle_line(m, copy, line.n);
		free(copy);
	}
	mcp_drain(m, FUZZ_RPC_DRAIN_MS);
	mcp_destroy(m);
	rpc_reader_finish(&reader);
	close(fd);
	return 0;
}
