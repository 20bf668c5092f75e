/*
 * dynlib.h - a shared library opened on first use, its functions resolved
 * into the caller's table of pointers.
 *
 * The server links only what every start needs. A library that only some
 * runs use (libarchive for file transfers, GnuTLS for TLS engines,
 * libmicrohttpd for `serve --http`) is opened when first needed: loading
 * GnuTLS and its eight libraries at every exec took longer than the rest of
 * start-up to the first reply. The headers still come from the -dev
 * packages, so every pointer has the library's own type.
 *
 * A user lists its functions once (an X macro), declares a struct of
 * pointers typed with __typeof__, and hands dynlib_open their names and the
 * addresses of the fields, from a pthread_once.
 */
#ifndef DYNLIB_H
#define DYNLIB_H

#include <stddef.h>

/*
 * Opens the first of sonames (NULL-terminated) that loads and stores
 * dlsym(names[i]) through slots[i] for i < n. 0, or -ENOENT with what
 * failed in msg (the loader's message, or the function missing). The
 * library stays loaded for the process's life.
 */
int dynlib_open(const char *const *sonames, const char *const *names, void **const *slots, size_t n, char *msg,
		size_t msgsz);

#endif
