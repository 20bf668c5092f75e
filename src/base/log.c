/*
 * log.c - stderr logger with an MCP bridge.
 *
 * The level and hook are set once at start-up, before any worker thread
 * exists; after that the logger is read-only apart from stderr itself, whose
 * writes are whole lines (one write(2) per record).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"

#define LOG_LINE_MAX 2048

static enum log_level log_stderr_level = LOG_LEVEL_INFO;
static log_hook_fn log_hook;
static void *log_hook_data;

static const char *const log_level_names[LOG_LEVEL_MAX] = {
	"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency",
};

void log_init(enum log_level stderr_level)
{
	log_stderr_level = stderr_level;
}

void log_set_hook(log_hook_fn fn, void *data)
{
	log_hook = fn;
	log_hook_data = data;
}

void log_write(enum log_level level, const char *file, int line, const char *fmt, ...)
{
	char msg[LOG_LINE_MAX];
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);

	if (level >= log_stderr_level) {
		char out[LOG_LINE_MAX + 128];
		const char *base = strrchr(file, '/');
		int n = snprintf(out, sizeof(out), "sandbox-mcp: %s: %s:%d: %s\n", log_level_name(level),
				 base ? base + 1 : file, line, msg);
		if (n > (int)sizeof(out) - 1) {
			n = (int)sizeof(out) - 1;
			out[n - 1] = '\n';
		}
		if (n > 0)
			(void)write_full(STDERR_FILENO, out, (size_t)n);
	}
	if (log_hook)
		log_hook(level, msg, log_hook_data);
	errno = saved;
}

int log_level_parse(const char *s, enum log_level *ret)
{
	for (int i = 0; i < LOG_LEVEL_MAX; i++) {
		if (strcmp(s, log_level_names[i]) == 0) {
			*ret = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *log_level_name(enum log_level level)
{
	if ((unsigned)level >= LOG_LEVEL_MAX)
		return "unknown";
	return log_level_names[level];
}
