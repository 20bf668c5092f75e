/*
 * tar.c - reading and building tar streams with libarchive.
 *
 * The reader pulls from a source through libarchive's read callback, which
 * also enforces the raw byte cap (data caps plus a fixed allowance per entry)
 * and tracks the run of zero bytes at the end of what it delivered: libarchive
 * takes a stream cut at an entry boundary for a complete one, so a stream
 * counts as complete only when libarchive reached its end and the last 1024
 * bytes were zero (the two end-of-archive blocks every writer emits).  Only
 * the tar format is enabled and no filter, so compressed input is refused.
 *
 * The writer appends to a struct buf (whose cap bounds the stream) with no
 * blocking (bytes_per_block 0), so every call's output is there at once.
 *
 * libarchive is loaded with dlopen on first use rather than linked: linking it
 * pulls libxml2, ICU and libstdc++ into every start of the server, which
 * tripled the time to the first reply and added a MiB of RSS, while most
 * sessions never move a file.  The headers still come from libarchive-dev and
 * every function is resolved and type-checked against them.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include "base/dynlib.h"
#include "base/pathsafe.h"
#include "base/tar.h"
#include "base/util.h"

/* Every libarchive function this module calls. */
#define TAR_LIBARCHIVE_FUNCS(X)                    \
	X(archive_write_new)                       \
	X(archive_write_free)                      \
	X(archive_write_set_format_pax_restricted) \
	X(archive_write_set_bytes_in_last_block)   \
	X(archive_write_open2)                     \
	X(archive_write_header)                    \
	X(archive_write_close)                     \
	X(archive_error_string)                    \
	X(archive_set_error)                       \
	X(archive_entry_new)                       \
	X(archive_entry_free)                      \
	X(archive_entry_set_pathname)              \
	X(archive_entry_set_filetype)              \
	X(archive_entry_set_perm)                  \
	X(archive_entry_set_uid)                   \
	X(archive_entry_set_gid)                   \
	X(archive_entry_set_size)                  \
	X(archive_entry_set_mtime)                 \
	X(archive_entry_clear)                     \
	X(archive_entry_pathname)                  \
	X(archive_entry_filetype)                  \
	X(archive_entry_hardlink)                  \
	X(archive_entry_symlink)                   \
	X(archive_entry_size)                      \
	X(archive_entry_perm)                      \
	X(archive_entry_mtime)                     \
	X(archive_read_new)                        \
	X(archive_read_free)                       \
	X(archive_read_support_format_tar)         \
	X(archive_read_open)                       \
	X(archive_read_next_header)                \
	X(archive_read_data)                       \
	X(archive_write_set_format_gnutar)         \
	X(archive_write_set_bytes_per_block)       \
	X(archive_write_data)

static struct {
#define DECLARE(fn) __typeof__(fn) *fn;
	TAR_LIBARCHIVE_FUNCS(DECLARE)
#undef DECLARE
} la;

static pthread_once_t la_once = PTHREAD_ONCE_INIT;
static int la_status; /* 0 loaded, -ENOENT not loadable */
static char la_error[200];

/* The end-of-archive marker: two zero blocks. */
#define TAR_END_ZEROS 1024

struct reader {
	tar_source_fn src;
	void *src_arg;
	char *in; /* TAR_CHUNK bytes handed to libarchive */
	uint64_t raw, raw_max;
	uint64_t zero_run; /* zero bytes at the end of what was delivered (saturates) */
	int src_err;	   /* a source's -errno */
	bool over_cap, eof;
};

struct mem_source {
	const char *p;
	size_t n, off;
};

struct tar_writer {
	struct archive *a;
	struct archive_entry *ent;
	uint64_t left; /* bytes the current file still needs */
	unsigned uid, gid;
	char prefix[PATHSAFE_MAX + 1]; /* "" or a relative name ending in '/' */
};

static void la_load(void);
static int la_ready(struct err *err);
static la_ssize_t buf_writer(struct archive *a, void *data, const void *p, size_t n);
static la_ssize_t reader_cb(struct archive *a, void *arg, const void **ret);
static ssize_t reader_pull(struct reader *rd, size_t want);
static void zero_track(struct reader *rd, const char *p, size_t n);
static int read_fail(struct reader *rd, struct archive *a, struct err *err);
static const char *skip_reason(struct archive_entry *ent, char *tmp, size_t tmpsz);
static int read_entries(struct reader *rd, struct archive *a, const struct tar_limits *lim, const struct tar_sink *sink,
			struct tar_stats *st, struct err *err);
static ssize_t mem_pull(void *arg, void *p, size_t n);
static ssize_t fd_pull(void *arg, void *p, size_t n);

static void la_load(void)
{
	static const char *const sonames[] = { "libarchive.so.13", "libarchive.so", NULL };
	static const char *const names[] = {
#define NAME(fn) #fn,
		TAR_LIBARCHIVE_FUNCS(NAME)
#undef NAME
	};
	void **const slots[] = {
#define SLOT(fn) (void **)&la.fn,
		TAR_LIBARCHIVE_FUNCS(SLOT)
#undef SLOT
	};
	la_status = dynlib_open(sonames, names, slots, ARRAY_SIZE(names), la_error, sizeof(la_error));
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

static void zero_track(struct reader *rd, const char *p, size_t n)
{
	size_t z = 0;
	while (z < n && p[n - 1 - z] == 0)
		z++;
	if (z == n)
		rd->zero_run = rd->zero_run + n > TAR_END_ZEROS ? TAR_END_ZEROS : rd->zero_run + n;
	else
		rd->zero_run = z > TAR_END_ZEROS ? TAR_END_ZEROS : z;
}

/* Pulls at most want bytes into rd->in, counting them against the raw cap. */
static ssize_t reader_pull(struct reader *rd, size_t want)
{
	if (rd->eof)
		return 0;
	ssize_t n = rd->src(rd->src_arg, rd->in, want);
	if (n < 0) {
		rd->src_err = (int)n;
		return -1;
	}
	if (n == 0) {
		rd->eof = true;
		return 0;
	}
	if ((uint64_t)n > rd->raw_max - rd->raw) {
		rd->over_cap = true;
		return -1;
	}
	rd->raw += (uint64_t)n;
	zero_track(rd, rd->in, (size_t)n);
	return n;
}

static la_ssize_t reader_cb(struct archive *a, void *arg, const void **ret)
{
	struct reader *rd = arg;
	ssize_t n = reader_pull(rd, TAR_CHUNK);
	if (n < 0) {
		la.archive_set_error(a, rd->over_cap ? EMSGSIZE : EIO, "%s",
				     rd->over_cap ? "over the size cap" : "source failed");
		return ARCHIVE_FATAL;
	}
	*ret = rd->in;
	return (la_ssize_t)n;
}

static int read_fail(struct reader *rd, struct archive *a, struct err *err)
{
	if (rd->src_err)
		return err_set(err, ERRCODE_ENGINE_ERROR, rd->src_err, "reading the tar stream failed: %s",
			       strerror(-rd->src_err));
	if (rd->over_cap)
		return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
			       "the tar stream passed %llu bytes, more than its files' size limits allow",
			       (unsigned long long)rd->raw_max);
	if (rd->raw == 0 && rd->eof)
		return err_set(err, ERRCODE_ENGINE_ERROR, -ENODATA, "the tar stream was empty");
	const char *why = la.archive_error_string(a);
	return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "malformed or truncated tar stream (%s)",
		       why ? why : "unknown error");
}

/* Why ent is not materialised, or NULL for a regular file or directory. */
static const char *skip_reason(struct archive_entry *ent, char *tmp, size_t tmpsz)
{
	const char *hl = la.archive_entry_hardlink(ent);
	if (hl) {
		snprintf(tmp, tmpsz, TAR_HARDLINK_REASON "%.200s", hl);
		return tmp;
	}
	switch (la.archive_entry_filetype(ent)) {
	case AE_IFREG:
	case AE_IFDIR:
		return NULL;
	case AE_IFLNK: {
		const char *to = la.archive_entry_symlink(ent);
		snprintf(tmp, tmpsz, "symbolic link to %.200s", to ? to : "?");
		return tmp;
	}
	case AE_IFCHR:
	case AE_IFBLK:
		return "device";
	case AE_IFIFO:
		return "fifo";
	case AE_IFSOCK:
		return "socket";
	default:
		return "unsupported entry type";
	}
}

static int read_entries(struct reader *rd, struct archive *a, const struct tar_limits *lim, const struct tar_sink *sink,
			struct tar_stats *st, struct err *err)
{
	char path[PATHSAFE_MAX + 1], why_buf[256];
	uint64_t max_entries = lim->entries < TAR_ENTRIES_MAX ? lim->entries : TAR_ENTRIES_MAX;
	uint64_t declared = 0;
	_cleanup_free_ char *out = xmalloc(TAR_CHUNK);

	for (;;) {
		struct archive_entry *ent;
		int r = la.archive_read_next_header(a, &ent);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return read_fail(rd, a, err);
		if (++st->entries > max_entries)
			return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE, "more than %llu entries",
				       (unsigned long long)max_entries);
		const char *raw = la.archive_entry_pathname(ent);
		if (!raw)
			raw = "";
		const char *why = skip_reason(ent, why_buf, sizeof(why_buf));
		int pr = why ? 0 : path_relative(raw, path, sizeof(path));
		bool is_dir = la.archive_entry_filetype(ent) == AE_IFDIR;
		if (!why && pr < 0)
			why = pr == -EXDEV	    ? (raw[0] == '/' ? "absolute name" : "'..' in the name")
			      : pr == -ENAMETOOLONG ? "name too long"
			      : raw[0]		    ? "control characters in the name"
						    : "empty name";
		if (!why && !is_dir && !path[0])
			why = "a file named like the top directory";
		if (why) {
			st->skipped++;
			if (sink->skipped)
				sink->skipped(sink->arg, raw, why);
			continue;
		}

		la_int64_t size = is_dir ? 0 : la.archive_entry_size(ent);
		if (size < 0)
			size = 0;
		if ((uint64_t)size > lim->entry_size)
			return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
				       "'%.200s' is %lld bytes, over the %llu-byte limit", path, (long long)size,
				       (unsigned long long)lim->entry_size);
		if ((uint64_t)size > lim->total_size - declared)
			return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
				       "the files add up to more than the %llu-byte limit (at '%.200s')",
				       (unsigned long long)lim->total_size, path);
		declared += (uint64_t)size;

		struct tar_entry te = {
			.path = path,
			.type = is_dir ? TAR_TYPE_DIR : TAR_TYPE_FILE,
			.size = (uint64_t)size,
			.mode = (unsigned)la.archive_entry_perm(ent) & 0777,
			.mtime = (int64_t)la.archive_entry_mtime(ent),
		};
		int sr = sink->entry(sink->arg, &te, err);
		if (sr < 0)
			return sr;
		if (sr == TAR_STOP) {
			st->stopped = true;
			return 0;
		}
		if (is_dir)
			st->dirs++;
		else
			st->files++;
		if (sr == TAR_SKIP || is_dir)
			continue;

		uint64_t got = 0;
		for (;;) {
			la_ssize_t n = la.archive_read_data(a, out, TAR_CHUNK);
			if (n < 0)
				return read_fail(rd, a, err);
			if (n == 0)
				break;
			got += (uint64_t)n;
			if (got > (uint64_t)size)
				return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "'%.200s' holds more than its size",
					       path);
			st->bytes += (uint64_t)n;
			int dr = sink->data(sink->arg, out, (size_t)n, err);
			if (dr < 0)
				return dr;
			if (dr == TAR_STOP) {
				st->stopped = true;
				return 0;
			}
		}
		if (got != (uint64_t)size)
			return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				       "truncated tar stream: '%.200s' ended after %llu of %lld bytes", path,
				       (unsigned long long)got, (long long)size);
		if (sink->entry_end && (r = sink->entry_end(sink->arg, err)) < 0)
			return r;
	}
}

int tar_read(tar_source_fn src, void *src_arg, const struct tar_limits *lim, const struct tar_sink *sink,
	     struct tar_stats *ret_stats, struct err *err)
{
	struct tar_stats st = { 0 };
	struct reader rd = { .src = src, .src_arg = src_arg };
	int r = la_ready(err);
	if (r < 0)
		return r;

	uint64_t entries = lim->entries < TAR_ENTRIES_MAX ? lim->entries : TAR_ENTRIES_MAX;
	/* saturating: a cap near UINT64_MAX must not wrap to a small one */
	rd.raw_max = lim->total_size + TAR_META_MAX + TAR_TRAILER_MAX;
	rd.raw_max = rd.raw_max < lim->total_size ? UINT64_MAX : rd.raw_max;
	uint64_t overhead = entries * TAR_ENTRY_OVERHEAD;
	rd.raw_max = rd.raw_max > UINT64_MAX - overhead ? UINT64_MAX : rd.raw_max + overhead;
	rd.in = xmalloc(TAR_CHUNK);

	struct archive *a = la.archive_read_new();
	if (la.archive_read_support_format_tar(a) != ARCHIVE_OK) {
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", la.archive_error_string(a));
		goto out;
	}
	if (la.archive_read_open(a, &rd, NULL, reader_cb, NULL) != ARCHIVE_OK) {
		r = read_fail(&rd, a, err);
		if (r == -EPROTO)
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO, "not an uncompressed tar stream (%s)",
				    la.archive_error_string(a) ? la.archive_error_string(a) : "unknown format");
		goto out;
	}
	if ((r = read_entries(&rd, a, lim, sink, &st, err)) < 0 || st.stopped)
		goto out;

	/* the record padding after the end blocks, then proof the end was there */
	for (uint64_t trailer = 0;;) {
		ssize_t n = reader_pull(&rd, TAR_CHUNK);
		if (n < 0) {
			r = read_fail(&rd, a, err);
			goto out;
		}
		if (n == 0)
			break;
		if ((trailer += (uint64_t)n) > TAR_TRAILER_MAX) {
			r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
				    "more than %u bytes after the end of the tar stream", TAR_TRAILER_MAX);
			goto out;
		}
	}
	if (rd.zero_run < TAR_END_ZEROS)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
			    "truncated tar stream: it ended without its end-of-archive blocks");
out:
	st.raw = rd.raw;
	la.archive_read_free(a);
	free(rd.in);
	if (r == 0 && ret_stats)
		*ret_stats = st;
	return r;
}

static ssize_t mem_pull(void *arg, void *p, size_t n)
{
	struct mem_source *m = arg;
	size_t k = m->n - m->off < n ? m->n - m->off : n;
	if (k)
		memcpy(p, m->p + m->off, k);
	m->off += k;
	return (ssize_t)k;
}

int tar_read_memory(const void *p, size_t n, const struct tar_limits *lim, const struct tar_sink *sink,
		    struct tar_stats *ret_stats, struct err *err)
{
	struct mem_source m = { .p = p, .n = n };
	return tar_read(mem_pull, &m, lim, sink, ret_stats, err);
}

static ssize_t fd_pull(void *arg, void *p, size_t n)
{
	int fd = *(int *)arg;
	for (;;) {
		ssize_t k = read(fd, p, n);
		if (k >= 0)
			return k;
		if (errno != EINTR)
			return -errno;
	}
}

int tar_read_fd(int fd, const struct tar_limits *lim, const struct tar_sink *sink, struct tar_stats *ret_stats,
		struct err *err)
{
	return tar_read(fd_pull, &fd, lim, sink, ret_stats, err);
}

int tar_writer_create(struct buf *out, struct tar_writer **ret, struct err *err)
{
	int r = la_ready(err);
	if (r < 0)
		return r;
	struct tar_writer *w = xcalloc(1, sizeof(*w));
	w->a = la.archive_write_new();
	w->ent = la.archive_entry_new();
	if (la.archive_write_set_format_gnutar(w->a) != ARCHIVE_OK ||
	    la.archive_write_set_bytes_per_block(w->a, 0) != ARCHIVE_OK ||
	    la.archive_write_open2(w->a, out, NULL, buf_writer, NULL, NULL) != ARCHIVE_OK) {
		r = err_set(err, ERRCODE_INTERNAL, -EIO, "tar: %s", la.archive_error_string(w->a));
		tar_writer_destroy(w);
		return r;
	}
	*ret = w;
	return 0;
}

void tar_writer_destroy(struct tar_writer *w)
{
	if (!w)
		return;
	la.archive_entry_free(w->ent);
	la.archive_write_free(w->a);
	free(w);
}

int tar_writer_add(struct tar_writer *w, const struct tar_entry *e, struct err *err)
{
	char norm[PATHSAFE_MAX + 1];

	if (w->left)
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "tar: the previous file is %llu bytes short",
			       (unsigned long long)w->left);
	if (path_relative(e->path, norm, sizeof(norm)) < 0 || !norm[0] || strcmp(norm, e->path) != 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "tar: bad entry name '%.200s'", e->path);
	char full[2 * (PATHSAFE_MAX + 1)];
	int n = snprintf(full, sizeof(full), "%s%s", w->prefix, e->path);
	if (n < 0 || (size_t)n > PATHSAFE_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "tar: entry name '%.200s' too long",
			       e->path);
	la.archive_entry_clear(w->ent);
	la.archive_entry_set_pathname(w->ent, full);
	la.archive_entry_set_uid(w->ent, w->uid);
	la.archive_entry_set_gid(w->ent, w->gid);
	la.archive_entry_set_filetype(w->ent, e->type == TAR_TYPE_DIR ? AE_IFDIR : AE_IFREG);
	la.archive_entry_set_perm(w->ent, e->mode & 07777);
	la.archive_entry_set_size(w->ent, e->type == TAR_TYPE_DIR ? 0 : (la_int64_t)e->size);
	la.archive_entry_set_mtime(w->ent, (time_t)e->mtime, 0);
	if (la.archive_write_header(w->a, w->ent) != ARCHIVE_OK)
		return err_set(err, ERRCODE_INTERNAL, -EMSGSIZE, "tar: %s", la.archive_error_string(w->a));
	w->left = e->type == TAR_TYPE_DIR ? 0 : e->size;
	return 0;
}

void tar_writer_set_owner(struct tar_writer *w, unsigned uid, unsigned gid)
{
	w->uid = uid;
	w->gid = gid;
}

int tar_writer_set_prefix(struct tar_writer *w, const char *prefix, struct err *err)
{
	char norm[PATHSAFE_MAX + 1];

	if (!prefix || !*prefix) {
		w->prefix[0] = '\0';
		return 0;
	}
	/* one normalised relative name, so every entry stays a path_relative one */
	if (path_relative(prefix, norm, sizeof(norm)) < 0 || !norm[0] || strcmp(norm, prefix) != 0 ||
	    strlen(norm) + 1 >= sizeof(w->prefix))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "tar: bad name prefix '%.200s'", prefix);
	snprintf(w->prefix, sizeof(w->prefix), "%s/", norm);
	return 0;
}

int tar_writer_data(struct tar_writer *w, const void *p, size_t n, struct err *err)
{
	if (n > w->left)
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "tar: %zu bytes past the end of the file",
			       n - (size_t)w->left);
	if (n == 0)
		return 0;
	la_ssize_t k = la.archive_write_data(w->a, p, n);
	if (k < 0 || (size_t)k != n)
		return err_set(err, ERRCODE_INTERNAL, -EMSGSIZE, "tar: %s", la.archive_error_string(w->a));
	w->left -= n;
	return 0;
}

int tar_writer_close(struct tar_writer *w, struct err *err)
{
	if (w->left)
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "tar: the last file is %llu bytes short",
			       (unsigned long long)w->left);
	if (la.archive_write_close(w->a) != ARCHIVE_OK)
		return err_set(err, ERRCODE_INTERNAL, -EMSGSIZE, "tar: %s", la.archive_error_string(w->a));
	return 0;
}
