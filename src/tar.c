/*
 * tar.c - building tar streams with libarchive, written into a struct buf
 * (whose cap bounds the stream).
 *
 * libarchive is loaded with dlopen on first use rather than linked: linking it
 * pulls libxml2, ICU and libstdc++ into every start of the server, which
 * tripled the time to the first reply and added a MiB of RSS, while most
 * sessions never move a file.  The headers still come from libarchive-dev and
 * every function is resolved and type-checked against them.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "tar.h"

/* Every libarchive function this module calls. */
#define TAR_LIBARCHIVE_FUNCS(X)                                                                                     \
	X(archive_write_new)                                                                                        \
	X(archive_write_free)                                                                                       \
	X(archive_write_set_format_pax_restricted)                                                                  \
	X(archive_write_set_bytes_in_last_block)                                                                    \
	X(archive_write_open2)                                                                                      \
	X(archive_write_header)                                                                                     \
	X(archive_write_close)                                                                                      \
	X(archive_error_string)                                                                                     \
	X(archive_set_error)                                                                                        \
	X(archive_entry_new)                                                                                        \
	X(archive_entry_free)                                                                                       \
	X(archive_entry_set_pathname)                                                                               \
	X(archive_entry_set_filetype)                                                                               \
	X(archive_entry_set_perm)                                                                                   \
	X(archive_entry_set_uid)                                                                                    \
	X(archive_entry_set_gid)

static struct {
#define DECLARE(fn) __typeof__(fn) *fn;
	TAR_LIBARCHIVE_FUNCS(DECLARE)
#undef DECLARE
} la;

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static int la_status; /* 0 loaded, -ENOENT not loadable */
static char la_error[200];

static void la_load(void);
static int la_ready(struct err *err);
static la_ssize_t buf_writer(struct archive *a, void *data, const void *p, size_t n);

static void la_load(void)
{
	void *h = dlopen("libarchive.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libarchive.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(la_error, sizeof(la_error), "%s", dlerror());
		la_status = -ENOENT;
		return;
	}
#define RESOLVE(fn)                                                                                                 \
	*(void **)&la.fn = dlsym(h, #fn);                                                                           \
	if (!la.fn) {                                                                                               \
		snprintf(la_error, sizeof(la_error), "libarchive lacks %s", #fn);                                   \
		la_status = -ENOENT;                                                                                \
		return;                                                                                             \
	}
	TAR_LIBARCHIVE_FUNCS(RESOLVE)
#undef RESOLVE
	la_status = 0;
}

static int la_ready(struct err *err)
{
	pthread_once(&la_once, la_load);
	if (la_status < 0)
		return err_set(err, ERRCODE_INTERNAL, la_status,
			       "cannot load libarchive (%s): install the libarchive13 package", la_error);
	return 0;
}

static la_ssize_t buf_writer(struct archive *a, void *data, const void *p, size_t n)
{
	if (buf_append(data, p, n) < 0) {
		la.archive_set_error(a, EMSGSIZE, "tar stream over its size cap");
		return -1;
	}
	return (la_ssize_t)n;
}

int tar_make_dir(const char *name, mode_t mode, unsigned uid, unsigned gid, struct buf *out, struct err *err)
{
	int r = la_ready(err);
	if (r < 0)
		return r;
	struct archive *a = la.archive_write_new();
	struct archive_entry *ent = la.archive_entry_new();

	if (la.archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    la.archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    la.archive_write_open2(a, out, NULL, buf_writer, NULL, NULL) != ARCHIVE_OK) {
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", la.archive_error_string(a));
		goto done;
	}
	la.archive_entry_set_pathname(ent, name);
	la.archive_entry_set_filetype(ent, AE_IFDIR);
	la.archive_entry_set_perm(ent, mode & 07777);
	la.archive_entry_set_uid(ent, uid);
	la.archive_entry_set_gid(ent, gid);
	if (la.archive_write_header(a, ent) != ARCHIVE_OK || la.archive_write_close(a) != ARCHIVE_OK)
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", la.archive_error_string(a));
done:
	la.archive_entry_free(ent);
	la.archive_write_free(a);
	return r;
}
