/*
 * testutil.h - helpers shared by the unit tests: cmocka includes, and a copy
 * of an input that ends exactly at a guard page, so a parser that reads one
 * byte past its input faults instead of passing by luck.
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct guarded {
	void *map;
	size_t maplen;
	char *p; /* the copy; p[len] is unmapped */
};

static inline struct guarded guarded_copy(const void *src, size_t len)
{
	struct guarded g;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t pages = (len + page - 1) / page + 1;
	g.maplen = pages * page;
	g.map = mmap(NULL, g.maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(g.map != MAP_FAILED);
	char *guard = (char *)g.map + (pages - 1) * page;
	assert_int_equal(mprotect(guard, page, PROT_NONE), 0);
	g.p = guard - len;
	if (len)
		memcpy(g.p, src, len);
	return g;
}

static inline void guarded_free(struct guarded *g)
{
	munmap(g->map, g->maplen);
}

#endif
