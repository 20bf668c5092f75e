/*
 * stdio.c - the stdio transport (stdio.h): the read loop a desktop client
 * talks to. It never waits on Docker: mcp_handle_line hands calls to
 * workers, so the loop goes back to reading at once.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "mcp/rpc.h"
#include "transport/stdio.h"

bool stdio_serve(struct mcp *m, struct out *out, size_t max_line, volatile sig_atomic_t *stop)
{
	struct rpc_reader reader;
	int r;

	rpc_reader_init(&reader, STDIN_FILENO, max_line);
	log_debugf("serving on stdio");
	while (!*stop && !out_closed(out)) {
		struct slice line;
		r = rpc_reader_next(&reader, &line);
		if (r == 1)
			mcp_handle_line(m, (char *)line.p, line.n); /* the reader's buffer: mcp may consume it */
		else if (r == -EMSGSIZE)
			mcp_handle_oversized(m);
		else if (r == -EINTR || r == -EAGAIN)
			continue;
		else if (r == 0)
			break;
		else {
			log_errorf("reading stdin: %s", strerror(-r));
			break;
		}
	}
	if (*stop)
		log_infof("stopping on signal %d", (int)*stop);
	else if (!out_closed(out))
		mcp_drain(m, STDIO_EOF_GRACE_MS); /* answer what was asked before EOF */

	rpc_reader_finish(&reader);
	return mcp_destroy(m);
}
