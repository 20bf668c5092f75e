/*
 * hostfs.h - the host side of file transfers, which is the security
 * boundary (docs/design.md §3-4).
 *
 * The allowed host directories (SANDBOX_HOST_DIRS) are canonicalised with
 * realpath and opened once at start; every later check is made on those fds.
 * A host path named by a tool is resolved with realpath once (symlinks the
 * user made are honoured), matched to an allowed directory, and then opened
 * beneath that directory's fd with no symlink followed on the way
 * (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or component by component
 * with O_NOFOLLOW where openat2 is missing), so a path swapped after the
 * check cannot lead out.
 *
 * Downloads (hostfs_extract) are written into a fresh, private temporary
 * directory next to the target, entry by entry beneath its fd, and renamed
 * into place only when the whole stream was read: no links, devices or fifos
 * are ever created, files never get exec bits, and a failed download leaves
 * nothing behind.  Uploads (hostfs_walk) stream a file or a directory tree
 * as tar pieces, never following a symlink inside it, and never send a file
 * with more than one name (a hard link may lead outside the allowed dirs).
 *
 * What a download may write (hostmark.h has why): never into a folder with
 * a hidden (".x") or version-control component below its allowed directory
 * (hostfs_open_dest), never under such a name, and inside a downloaded folder
 * never an entry whose path has such a component or Python bytecode
 * (hostmark_unsafe_name), at any depth (skipped and listed);
 * it marks all it creates and replaces only what carries a valid mark,
 * swapping atomically and checking that what it swapped out is what it
 * checked.
 */
#ifndef HOSTFS_H
#define HOSTFS_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/errcode.h"
#include "base/tar.h"

/* Allowed host directories at most. */
#define HOSTFS_DIRS_MAX 32
/* Directory nesting an upload walks at most. */
#define HOSTFS_DEPTH_MAX 64
/* Skipped entries listed by name in a report (the rest are counted). */
#define HOSTFS_SKIPPED_LISTED 100

struct hostfs;
struct hostfs_extract;
struct hostfs_walk;

/*
 * Canonicalises and opens the ':'-separated dirs. A directory that cannot be
 * opened is left out with a warning. 0 with *ret, or -E2BIG (too many) with err.
 */
int hostfs_create(const char *dirs, struct hostfs **ret, struct err *err);
void hostfs_destroy(struct hostfs *h);
/* The allowed directories as canonicalised, ':'-separated ("" for none); borrowed. */
const char *hostfs_dirs(const struct hostfs *h);

/*
 * The outbox (SANDBOX_OUTBOX): a folder inside an allowed directory where new
 * artifacts (run_python's figures) are also written, so a client that cannot
 * show images can still open them. hostfs_outbox_open opens it once, checked
 * like any host path; 0 or -errno with err.
 */
int hostfs_outbox_open(struct hostfs *h, const char *path, struct err *err);
/* The outbox's canonical path, or NULL when there is none. */
const char *hostfs_outbox(const struct hostfs *h);
/*
 * Writes a new file name (one component; never replaces anything) of n bytes
 * in the outbox, mode 0644; its host path goes to ret_path. 0 or -errno with err.
 */
int hostfs_outbox_put(const struct hostfs *h, const char *name, const void *data, size_t n, char *ret_path,
		      size_t pathsz, struct err *err);

/*
 * Opens host path (absolute) if it lies in one of principal's folders, with
 * flags (O_NOFOLLOW and O_CLOEXEC are added) and confined as described
 * above; ret_real (may be NULL) receives its canonical path. The principal
 * without tokens ("" or NULL) has the allowed directories themselves; an
 * HTTP token's principal NAME has only <dir>/<NAME> in each, made (0700) on
 * its first use, so one principal's host paths never resolve into another's.
 * 0 with *ret_fd, or -EACCES (ERRCODE_HOST_PATH_NOT_ALLOWED, saying which
 * setting to change) / -ENOENT (ERRCODE_FILE_NOT_FOUND) / -errno with err.
 */
int hostfs_open(const struct hostfs *h, const char *principal, const char *path, int flags, int *ret_fd, char *ret_real,
		size_t realsz, struct err *err);

/*
 * Opens host folder dir to write into (for hostfs_extract_begin): as
 * hostfs_open(O_RDONLY | O_DIRECTORY), and refuses a folder with a hidden or
 * version-control component below its allowed directory (-EACCES,
 * ERRCODE_HOST_PATH_NOT_ALLOWED).
 */
int hostfs_open_dest(const struct hostfs *h, const char *principal, const char *dir, int *ret_fd, char *ret_real,
		     size_t realsz, struct err *err);

/*
 * Starts a download into dirfd (from hostfs_open_dest) under name (one path
 * component): makes a fresh temporary directory there. Refuses a hidden or
 * version-control name (ERRCODE_HOST_PATH_NOT_ALLOWED), an existing name
 * unless overwrite (ERRCODE_FILE_EXISTS), and with overwrite one the server
 * did not write or that changed since (ERRCODE_HOST_PATH_NOT_ALLOWED).
 * 0 with *ret, or -errno with err.
 */
int hostfs_extract_begin(int dirfd, const char *name, bool overwrite, struct hostfs_extract **ret, struct err *err);
/* The sink that writes what tar_read hands it (borrowed from x). */
const struct tar_sink *hostfs_extract_sink(struct hostfs_extract *x);
/* Moves the result into place (replacing the old one when overwrite, checked again). 0 or -errno with err. */
int hostfs_extract_commit(struct hostfs_extract *x, struct err *err);
/* Files, directories and bytes written, and what was skipped ({name, reason}; new reference). */
void hostfs_extract_stats(const struct hostfs_extract *x, uint64_t *ret_files, uint64_t *ret_dirs, uint64_t *ret_bytes,
			  json_t **ret_skipped);
/* Removes the temporary directory unless committed, and frees x. */
void hostfs_extract_destroy(struct hostfs_extract *x);

/*
 * Streams fd (a regular file or a directory, opened by hostfs_open; taken
 * over) as tar entries named top[/...], within lim. 0 with *ret or -errno.
 */
int hostfs_walk_create(int fd, const char *top, const struct tar_limits *lim, struct hostfs_walk **ret,
		       struct err *err);
/* An xfer_produce_fn over a hostfs_walk. */
int hostfs_walk_produce(void *arg, struct tar_writer *w, struct err *err);
void hostfs_walk_stats(const struct hostfs_walk *wk, uint64_t *ret_files, uint64_t *ret_dirs, uint64_t *ret_bytes,
		       json_t **ret_skipped);
void hostfs_walk_destroy(struct hostfs_walk *wk);

#endif
