/*
 * testutil.h - helpers shared by the unit tests: cmocka includes, a copy of
 * an input that ends exactly at a guard page, so a parser that reads one
 * byte past its input faults instead of passing by luck, and a ustar writer
 * for hand-made (hostile) archives that tar.c's own writer would never make.
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

#include "buf.h"

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

/* One ustar header block, with uid and gid id; name and link are cut at 100 bytes. */
static inline void ustar_header(struct buf *b, const char *name, char type, unsigned long long size, const char *link,
				unsigned mode, unsigned id)
{
	unsigned char h[512] = { 0 };
	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", mode);
	snprintf((char *)h + 108, 8, "%07o", id);
	snprintf((char *)h + 116, 8, "%07o", id);
	snprintf((char *)h + 124, 12, "%011llo", size);
	snprintf((char *)h + 136, 12, "%011o", 0);
	h[156] = (unsigned char)type;
	if (link)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	buf_append(b, h, 512);
}

/* n bytes of an entry's data, padded to the 512-byte block. */
static inline void ustar_body(struct buf *b, const void *data, size_t n)
{
	static const char zeros[512];
	buf_append(b, data, n);
	if (n % 512)
		buf_append(b, zeros, 512 - n % 512);
}

#endif
