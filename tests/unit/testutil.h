/*
 * testutil.h - helpers shared by the unit tests: cmocka includes, a copy of
 * an input that ends exactly at a guard page, so a parser that reads one
 * byte past its input faults instead of passing by luck, and a ustar writer
 * for hand-made (hostile) archives that tar.c's own writer would never make,
 * and a wait for every process to let go of a file (a deferred free).
 */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"

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

/* True while some process has the inode dev:ino open (a scan of /proc/<pid>/fd). */
static inline bool inode_open(dev_t dev, ino_t ino)
{
	DIR *procs = opendir("/proc");
	bool found = false;
	assert_non_null(procs);
	for (struct dirent *pe; !found && (pe = readdir(procs));) {
		char fds[64];
		if (pe->d_name[0] < '0' || pe->d_name[0] > '9')
			continue;
		snprintf(fds, sizeof(fds), "/proc/%s/fd", pe->d_name);
		DIR *d = opendir(fds);
		for (struct dirent *fe; d && !found && (fe = readdir(d));) {
			char fp[128];
			struct stat st;
			snprintf(fp, sizeof(fp), "%s/%s", fds, fe->d_name);
			found = stat(fp, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
		}
		if (d)
			closedir(d);
	}
	closedir(procs);
	return found;
}

/* Waits up to 5 s for every process to close the inode dev:ino; false if one still has it. */
static inline bool inode_let_go(dev_t dev, ino_t ino)
{
	for (int waited = 0; inode_open(dev, ino); waited++) {
		if (waited == 100)
			return false;
		usleep(50 * 1000);
	}
	return true;
}

#endif
