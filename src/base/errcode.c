/*
 * errcode.c - names for the stable tool error codes.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/errcode.h"

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
	[ERRCODE_SHELL_NOT_FOUND] = "shell_not_found",
	[ERRCODE_NETWORK_DISABLED] = "network_disabled",
	[ERRCODE_GIT_NOT_FOUND] = "git_not_found",
	[ERRCODE_PIP_FAILED] = "pip_failed",
	[ERRCODE_GIT_FAILED] = "git_failed",
	[ERRCODE_CHECKPOINT_NOT_FOUND] = "checkpoint_not_found",
	[ERRCODE_INTERNAL] = "internal",
};

const char *errcode_name(enum errcode code)
{
	if ((unsigned)code >= ERRCODE_MAX || !errcode_names[code])
		return "internal";
	return errcode_names[code];
}

/* Drops an incomplete UTF-8 sequence at the end of s: a cut one would make the message invalid JSON text. */
static void utf8_trim_end(char *s)
{
	size_t n = strlen(s), i = n;
	while (i > 0 && n - i < 3 && ((unsigned char)s[i - 1] & 0xc0) == 0x80)
		i--;
	if (i == 0 || ((unsigned char)s[i - 1] & 0x80) == 0)
		return;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t want = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
	if (n - (i - 1) < want)
		s[i - 1] = '\0';
}

/*
 * Program output may hold any bytes, but a message must be UTF-8 text (or
 * the error cannot be sent as JSON): each byte of a bad sequence - cut,
 * overlong, a surrogate, past U+10FFFF - becomes '?'.
 */
static void utf8_sanitize(char *s)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		size_t want = *p < 0x80		    ? 1
			      : (*p & 0xe0) == 0xc0 ? 2
			      : (*p & 0xf0) == 0xe0 ? 3
			      : (*p & 0xf8) == 0xf0 ? 4
						    : 0;
		unsigned long cp = want == 1 ? *p : *p & (0x7fu >> want);
		size_t k = 1;
		while (k < want && (p[k] & 0xc0) == 0x80)
			cp = cp << 6 | (p[k++] & 0x3f);
		bool bad = want == 0 || k < want || (want == 2 && cp < 0x80) || (want == 3 && cp < 0x800) ||
			   (want == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff);
		if (bad) {
			*p++ = '?';
			continue;
		}
		p += want;
	}
}

static void err_vset(struct err *e, enum errcode code, const char *fmt, va_list ap)
{
	e->code = code;
	if (vsnprintf(e->msg, sizeof(e->msg), fmt, ap) >= (int)sizeof(e->msg))
		utf8_trim_end(e->msg);
	/* "%.80s" of a value can end inside a character too */
	utf8_sanitize(e->msg);
}

int err_set(struct err *e, enum errcode code, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return ret;
	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	return ret;
}

int err_set_tail(struct err *e, enum errcode code, int ret, const char *text, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return ret;
	va_start(ap, fmt);
	err_vset(e, code, fmt, ap);
	va_end(ap);
	if (!text)
		return ret;
	/* trailing blank lines would spend the room on nothing */
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
		len--;
	size_t used = strlen(e->msg), room = sizeof(e->msg) - 1 - used;
	if (len == 0 || room == 0)
		return ret;
	const char *p = text;
	if (len > room) {
		p = text + len - room;
		/* a whole first line reads better than half of one, if that costs less than half the room */
		const char *nl = memchr(p, '\n', room / 2);
		if (nl)
			p = nl + 1;
		while (p < text + len && ((unsigned char)*p & 0xc0) == 0x80)
			p++;
	}
	size_t n = (size_t)(text + len - p);
	/* a NUL inside the output would end the message early: keep what follows the last one */
	const char *z = memrchr(p, '\0', n);
	if (z) {
		n -= (size_t)(z + 1 - p);
		p = z + 1;
	}
	memcpy(e->msg + used, p, n);
	e->msg[used + n] = '\0';
	utf8_sanitize(e->msg + used);
	return ret;
}

int err_append(struct err *e, int ret, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return ret;
	size_t used = strnlen(e->msg, sizeof(e->msg) - 1);
	e->msg[used] = '\0';
	va_start(ap, fmt);
	int n = vsnprintf(e->msg + used, sizeof(e->msg) - used, fmt, ap);
	va_end(ap);
	if (n < 0)
		e->msg[used] = '\0';
	else if ((size_t)n >= sizeof(e->msg) - used)
		utf8_trim_end(e->msg + used);
	utf8_sanitize(e->msg + used);
	return ret;
}

int err_prefix(struct err *e, int ret, const char *fmt, ...)
{
	va_list ap;
	char head[ERR_MSG_MAX], old[ERR_MSG_MAX];

	if (!e)
		return ret;
	va_start(ap, fmt);
	int n = vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	if (n < 0)
		return ret;
	utf8_sanitize(head);
	memcpy(old, e->msg, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	if ((size_t)snprintf(e->msg, sizeof(e->msg), "%s%s", head, old) >= sizeof(e->msg))
		utf8_trim_end(e->msg);
	return ret;
}

void err_clear(struct err *e)
{
	if (e) {
		e->code = ERRCODE_NONE;
		e->msg[0] = '\0';
	}
}
