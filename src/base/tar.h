/*
 * tar.h - uncompressed tar streams built and read with libarchive.
 *
 * Reading is for streams that come out of a sandbox, so they are hostile
 * until proven otherwise: every read is bounded by a struct tar_limits, every
 * name passes path_relative (no absolute names, no ".."), and only regular
 * files and directories ever reach the sink; links, devices, fifos, sockets
 * and bad names are reported to it as skipped, never materialised.  A stream
 * that is truncated, malformed, compressed or lacks its end-of-archive blocks
 * is an error.
 *
 * Writing is incremental: a tar_writer appends each header and data chunk to
 * a caller-owned buf the caller drains, so a stream of any size costs only
 * the chunk in flight (GNU format: raw name bytes, long names, large sizes).
 */
#ifndef TAR_H
#define TAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/errcode.h"

/* Bytes pulled from a source and handed to a sink at a time. */
#define TAR_CHUNK (256 * 1024)
/* Ceiling on entries in one stream, whatever the limits say. */
#define TAR_ENTRIES_MAX 1000000
/* Header bytes allowed per entry on top of the data (headers, long names, padding). */
#define TAR_ENTRY_OVERHEAD 4096
/* Bytes of metadata a stream may carry besides that (one large pax header). */
#define TAR_META_MAX (1u << 20)
/* Bytes read after the end-of-archive blocks (record padding). */
#define TAR_TRAILER_MAX (1u << 20)
/* A skipped hard link's reason, before the target's name as the stream gives it. */
#define TAR_HARDLINK_REASON "hard link to "

/* What sink->entry and sink->data return to go on, skip an entry, or stop reading early (success). */
#define TAR_OK 0
#define TAR_SKIP 1
#define TAR_STOP 2

struct tar_limits {
	uint64_t entries;    /* entries of any kind, skipped ones included */
	uint64_t entry_size; /* bytes of one regular file */
	uint64_t total_size; /* bytes of all regular files */
};

enum tar_type {
	TAR_TYPE_FILE,
	TAR_TYPE_DIR,
};

struct tar_entry {
	const char *path; /* relative and normalised; "" is the archive's top directory */
	enum tar_type type;
	uint64_t size; /* 0 for directories */
	unsigned mode; /* permission bits, 0777 at most */
	int64_t mtime; /* unix seconds */
};

struct tar_sink {
	/* An entry starts: TAR_OK (a file's data follows), TAR_SKIP, TAR_STOP, or -errno with err. */
	int (*entry)(void *arg, const struct tar_entry *e, struct err *err);
	/* The current file's bytes, in order: TAR_OK, TAR_STOP, or -errno with err. */
	int (*data)(void *arg, const char *p, size_t n, struct err *err);
	/* The current file is complete (after all its data): 0 or -errno with err. */
	int (*entry_end)(void *arg, struct err *err);
	/* An entry that was not materialised: its raw name and why ("symbolic link to /etc"). */
	void (*skipped)(void *arg, const char *name, const char *why);
	void *arg;
};

struct tar_stats {
	uint64_t entries, files, dirs, skipped;
	uint64_t bytes; /* file data handed to the sink */
	uint64_t raw;	/* stream bytes read */
	bool stopped;	/* a sink callback returned TAR_STOP */
};

/* Pulls up to n bytes into p: the count, 0 at the end, or -errno. */
typedef ssize_t (*tar_source_fn)(void *arg, void *p, size_t n);

/*
 * Reads the tar stream src yields, within lim, calling sink for each entry.
 * 0 with *ret_stats (may be NULL) once the end-of-archive blocks were read
 * (or a sink stopped); else -EMSGSIZE (a cap, ERRCODE_TOO_LARGE), -EPROTO
 * (malformed or truncated), -ENODATA (empty stream), a source's -errno, or a
 * sink's error, with err.
 */
int tar_read(tar_source_fn src, void *src_arg, const struct tar_limits *lim, const struct tar_sink *sink,
	     struct tar_stats *ret_stats, struct err *err);
/* tar_read over p[0..n). */
int tar_read_memory(const void *p, size_t n, const struct tar_limits *lim, const struct tar_sink *sink,
		    struct tar_stats *ret_stats, struct err *err);
/* tar_read from fd (a pipe or socket) until EOF. */
int tar_read_fd(int fd, const struct tar_limits *lim, const struct tar_sink *sink, struct tar_stats *ret_stats,
		struct err *err);

struct tar_writer;

/* A writer appending to out (borrowed; the caller drains it). 0 or -errno with err. */
int tar_writer_create(struct buf *out, struct tar_writer **ret, struct err *err);
void tar_writer_destroy(struct tar_writer *w);
/*
 * Starts entry e (e->path relative, non-empty; a file's e->size bytes must
 * follow through tar_writer_data). 0, -EINVAL (a bad name, or the previous
 * file is short), -EMSGSIZE (out is full), with err.
 */
int tar_writer_add(struct tar_writer *w, const struct tar_entry *e, struct err *err);
/*
 * Every entry added from now on is owned by uid:gid (numeric only; the
 * default is 0:0). The engine's archive PUT keeps a header's owner.
 */
void tar_writer_set_owner(struct tar_writer *w, unsigned uid, unsigned gid);
/*
 * Every entry added from now on is named prefix/path (prefix relative and
 * normalised, no trailing '/'; NULL or "" for none). 0 or -EINVAL with err.
 */
int tar_writer_set_prefix(struct tar_writer *w, const char *prefix, struct err *err);
/* Appends bytes of the current file (never past its size). 0 or -errno with err. */
int tar_writer_data(struct tar_writer *w, const void *p, size_t n, struct err *err);
/* Writes the end-of-archive blocks. 0 or -errno with err. */
int tar_writer_close(struct tar_writer *w, struct err *err);

/* Appends a tar holding one directory entry `name` owned by uid:gid to out
 * (the engine keeps the header's owner when extracting). 0 or -errno. */
int tar_make_dir(const char *name, mode_t mode, unsigned uid, unsigned gid, struct buf *out, struct err *err);

#endif
