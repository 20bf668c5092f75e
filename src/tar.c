/*
 * tar.c - building tar streams with libarchive, written into a struct buf
 * (whose cap bounds the stream).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "tar.h"

static la_ssize_t buf_writer(struct archive *a, void *data, const void *p, size_t n);

static la_ssize_t buf_writer(struct archive *a, void *data, const void *p, size_t n)
{
	if (buf_append(data, p, n) < 0) {
		archive_set_error(a, EMSGSIZE, "tar stream over its size cap");
		return -1;
	}
	return (la_ssize_t)n;
}

int tar_make_dir(const char *name, mode_t mode, unsigned uid, unsigned gid, struct buf *out, struct err *err)
{
	struct archive *a = archive_write_new();
	struct archive_entry *ent = archive_entry_new();
	int r = 0;

	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open2(a, out, NULL, buf_writer, NULL, NULL) != ARCHIVE_OK) {
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", archive_error_string(a));
		goto done;
	}
	archive_entry_set_pathname(ent, name);
	archive_entry_set_filetype(ent, AE_IFDIR);
	archive_entry_set_perm(ent, mode & 07777);
	archive_entry_set_uid(ent, uid);
	archive_entry_set_gid(ent, gid);
	if (archive_write_header(a, ent) != ARCHIVE_OK || archive_write_close(a) != ARCHIVE_OK)
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", archive_error_string(a));
done:
	archive_entry_free(ent);
	archive_write_free(a);
	return r;
}
