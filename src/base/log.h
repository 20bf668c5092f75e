/*
 * log.h - the one logger: stderr with a level and file:line, plus a hook the
 * MCP layer uses to forward records to the client as notifications/message.
 *
 * Parsers and the engine/http layers never log above debug; they return
 * errors, and the tool or dispatch boundary logs once.
 */
#ifndef LOG_H
#define LOG_H

#include <stdbool.h>

#include "base/util.h"

/* The MCP (syslog) levels, lowest first. */
enum log_level {
	LOG_LEVEL_DEBUG,
	LOG_LEVEL_INFO,
	LOG_LEVEL_NOTICE,
	LOG_LEVEL_WARNING,
	LOG_LEVEL_ERROR,
	LOG_LEVEL_CRITICAL,
	LOG_LEVEL_ALERT,
	LOG_LEVEL_EMERGENCY,
	LOG_LEVEL_MAX,
};

/* Receives every record (whatever the stderr level); must not call the logger. */
typedef void (*log_hook_fn)(enum log_level level, const char *msg, void *data);

void log_init(enum log_level stderr_level);
void log_set_hook(log_hook_fn fn, void *data);
void log_write(enum log_level level, const char *file, int line, const char *fmt, ...) PRINTF_LIKE(4, 5);

/* "debug" ... "emergency"; 0 or -EINVAL. */
int log_level_parse(const char *s, enum log_level *ret);
const char *log_level_name(enum log_level level);

#define log_debugf(...) log_write(LOG_LEVEL_DEBUG, __FILE__, __LINE__, __VA_ARGS__)
#define log_infof(...) log_write(LOG_LEVEL_INFO, __FILE__, __LINE__, __VA_ARGS__)
#define log_warnf(...) log_write(LOG_LEVEL_WARNING, __FILE__, __LINE__, __VA_ARGS__)
#define log_errorf(...) log_write(LOG_LEVEL_ERROR, __FILE__, __LINE__, __VA_ARGS__)

#endif
