/*
 * errcode.c - names for the stable tool error codes.
 */
#include <stdarg.h>
#include <stdio.h>

#include "errcode.h"

static const char *const errcode_names[ERRCODE_MAX] = {
	[ERRCODE_NONE] = "none",
	[ERRCODE_DOCKER_UNAVAILABLE] = "docker_unavailable",
	[ERRCODE_IMAGE_NOT_FOUND] = "image_not_found",
	[ERRCODE_SESSION_NOT_FOUND] = "session_not_found",
	[ERRCODE_SESSION_LIMIT] = "session_limit",
	[ERRCODE_TIMEOUT] = "timeout",
	[ERRCODE_TOO_LARGE] = "too_large",
	[ERRCODE_FILE_NOT_FOUND] = "file_not_found",
	[ERRCODE_FILE_EXISTS] = "file_exists",
	[ERRCODE_PATCH_NO_MATCH] = "patch_no_match",
	[ERRCODE_HOST_PATH_NOT_ALLOWED] = "host_path_not_allowed",
	[ERRCODE_INVALID_ARGUMENT] = "invalid_argument",
	[ERRCODE_ENGINE_ERROR] = "engine_error",
	[ERRCODE_CANCELLED] = "cancelled",
	[ERRCODE_OUT_OF_MEMORY] = "out_of_memory",
	[ERRCODE_TOO_MANY_PROCESSES] = "too_many_processes",
	[ERRCODE_PYTHON_NOT_FOUND] = "python_not_found",
	[ERRCODE_NETWORK_DISABLED] = "network_disabled",
	[ERRCODE_GIT_NOT_FOUND] = "git_not_found",
	[ERRCODE_INTERNAL] = "internal",
};

const char *errcode_name(enum errcode code)
{
	if ((unsigned)code >= ERRCODE_MAX || !errcode_names[code])
		return "internal";
	return errcode_names[code];
}

int err_set(struct err *e, enum errcode code, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return ret;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return ret;
}

void err_clear(struct err *e)
{
	if (e) {
		e->code = ERRCODE_NONE;
		e->msg[0] = '\0';
	}
}
