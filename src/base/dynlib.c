/*
 * dynlib.c - a shared library opened on first use (dynlib.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>

#include "base/dynlib.h"

int dynlib_open(const char *const *sonames, const char *const *names, void **const *slots, size_t n, char *msg,
		size_t msgsz)
{
	void *h = NULL;
	for (size_t i = 0; !h && sonames[i]; i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *why = dlerror();
		snprintf(msg, msgsz, "%s", why ? why : "not found");
		return -ENOENT;
	}
	for (size_t i = 0; i < n; i++) {
		/* POSIX's way to a function pointer from dlsym: through the object pointer's bytes */
		*slots[i] = dlsym(h, names[i]);
		if (!*slots[i]) {
			snprintf(msg, msgsz, "%s lacks %s", sonames[0], names[i]);
			return -ENOENT;
		}
	}
	return 0;
}
