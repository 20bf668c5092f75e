/*
 * hostwalk.c - an upload's walk of an allowed host file or folder (see
 * hostfs.h): read beneath an fd already confined by hostfs_open, one entry
 * at a time into a tar stream, nothing followed that could lead out (no
 * symlink, no file with a second name), what is left out listed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "host/hostfs-internal.h"
#include "host/hostfs.h"
#include "host/hostmark.h"

/* Why a file of a folder upload with more than one name is skipped (like a symlink, it may lead out). */
#define HARD_LINK_SKIPPED                                                                                       \
	"hard link (the file has another name, which may be outside the allowed host directories): copy it to " \
	"upload it"

struct walk_dir {
	DIR *d;
	size_t plen; /* length of the path of this directory */
};

struct hostfs_walk {
	struct tar_limits lim;
	char top[NAME_MAX + 1];
	int rootfd;
	bool is_dir, started;
	struct stat root_st;
	struct walk_dir st[HOSTFS_DEPTH_MAX];
	int depth;
	char path[PATHSAFE_MAX + 1];
	int filefd;
	uint64_t left;
	char *chunk;
	uint64_t files, dirs, bytes, entries;
	struct skips skips;
};

int hostfs_walk_create(int fd, const char *top, const struct tar_limits *lim, struct hostfs_walk **ret, struct err *err)
{
	struct stat st;

	if (fstat(fd, &st) < 0 || (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))) {
		close(fd);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "only regular files and folders can be uploaded");
	}
	if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
		close(fd);
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "the host file has %llu hard links (names), and another may be outside the allowed host "
			       "directories, so it is not uploaded: copy it (cp, not ln) inside an allowed directory and "
			       "upload the copy",
			       (unsigned long long)st.st_nlink);
	}
	if (!hostfs_single_name(top)) {
		close(fd);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "'%.200s' cannot be a file name", top);
	}
	struct hostfs_walk *wk = xcalloc(1, sizeof(*wk));
	wk->lim = *lim;
	wk->rootfd = fd;
	wk->filefd = -1;
	wk->root_st = st;
	wk->is_dir = S_ISDIR(st.st_mode);
	wk->chunk = xmalloc(TAR_CHUNK);
	wk->skips.list = json_array();
	snprintf(wk->top, sizeof(wk->top), "%s", top);
	snprintf(wk->path, sizeof(wk->path), "%s", top);
	*ret = wk;
	return 0;
}

/* Adds the next entry of the tree walk, or closes the stream at its end. 0, 1 (closed) or -errno. */
static int walk_next(struct hostfs_walk *wk, struct tar_writer *w, struct err *err)
{
	while (wk->depth > 0) {
		struct walk_dir *cur = &wk->st[wk->depth - 1];
		errno = 0;
		struct dirent *de = readdir(cur->d);
		if (!de) {
			if (errno)
				hostfs_left_out(&wk->skips, wk->path, "the folder could not be read to its end");
			closedir(cur->d);
			wk->depth--;
			if (wk->depth > 0)
				wk->path[wk->st[wk->depth - 1].plen] = '\0';
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		size_t plen = cur->plen;
		if (plen + 1 + strlen(de->d_name) > PATHSAFE_MAX) {
			hostfs_left_out(&wk->skips, de->d_name, "path too long");
			continue;
		}
		snprintf(wk->path + plen, sizeof(wk->path) - plen, "/%s", de->d_name);
		if (++wk->entries > wk->lim.entries)
			return err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE, "the folder holds more than %llu entries",
				       (unsigned long long)wk->lim.entries);
		struct stat st;
		int dfd = dirfd(cur->d);
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			hostfs_left_out(&wk->skips, wk->path + strlen(wk->top) + 1, "vanished while being read");
			wk->path[plen] = '\0';
			continue;
		}
		const char *rel = wk->path + strlen(wk->top) + 1;
		char norm[PATHSAFE_MAX + 1];
		if (path_relative(wk->path, norm, sizeof(norm)) < 0 || strcmp(norm, wk->path) != 0) {
			hostfs_left_out(&wk->skips, rel, "control characters in the name");
			wk->path[plen] = '\0';
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			if (wk->depth == HOSTFS_DEPTH_MAX) {
				hostfs_left_out(&wk->skips, rel, "nested too deep");
				wk->path[plen] = '\0';
				continue;
			}
			int fd = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
			if (!d) {
				if (fd >= 0)
					close(fd);
				hostfs_left_out(&wk->skips, rel, "the folder cannot be opened");
				wk->path[plen] = '\0';
				continue;
			}
			struct tar_entry te = {
				.path = wk->path, .type = TAR_TYPE_DIR, .mode = st.st_mode & 0777, .mtime = st.st_mtime
			};
			int r = tar_writer_add(w, &te, err);
			if (r < 0) {
				closedir(d);
				return r;
			}
			wk->st[wk->depth++] = (struct walk_dir){ d, strlen(wk->path) };
			wk->dirs++;
			return 0;
		}
		if (!S_ISREG(st.st_mode)) {
			hostfs_left_out(&wk->skips, rel,
					S_ISLNK(st.st_mode)    ? "symbolic link (not followed)"
					: S_ISFIFO(st.st_mode) ? "fifo"
					: S_ISSOCK(st.st_mode) ? "socket"
							       : "device");
			wk->path[plen] = '\0';
			continue;
		}
		if ((uint64_t)st.st_size > wk->lim.entry_size || (uint64_t)st.st_size > wk->lim.total_size - wk->bytes)
			return err_set(err, ERRCODE_TOO_LARGE, -EFBIG,
				       "%s is %lld bytes, which passes the upload limit of %llu bytes (SANDBOX_MAX_UPLOAD_MB)",
				       rel, (long long)st.st_size, (unsigned long long)wk->lim.total_size);
		int fd = openat(dfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		struct stat fst;
		if (fd < 0 || fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode) || fst.st_ino != st.st_ino) {
			if (fd >= 0)
				close(fd);
			hostfs_left_out(&wk->skips, rel,
					fd < 0 && errno == EACCES ? "permission denied" : "changed while being read");
			wk->path[plen] = '\0';
			continue;
		}
		if (fst.st_nlink > 1) {
			close(fd);
			hostfs_left_out(&wk->skips, rel, HARD_LINK_SKIPPED);
			wk->path[plen] = '\0';
			continue;
		}
		struct tar_entry te = { .path = wk->path,
					.type = TAR_TYPE_FILE,
					.size = (uint64_t)fst.st_size,
					.mode = fst.st_mode & 0777,
					.mtime = fst.st_mtime };
		int r = tar_writer_add(w, &te, err);
		if (r < 0) {
			close(fd);
			return r;
		}
		wk->files++;
		wk->bytes += (uint64_t)fst.st_size;
		wk->path[plen] = '\0';
		if (fst.st_size == 0) {
			close(fd);
			return 0;
		}
		wk->filefd = fd;
		wk->left = (uint64_t)fst.st_size;
		return 0;
	}
	int r = tar_writer_close(w, err);
	return r < 0 ? r : 1;
}

int hostfs_walk_produce(void *arg, struct tar_writer *w, struct err *err)
{
	struct hostfs_walk *wk = arg;
	int r;

	if (!wk->started) {
		wk->started = true;
		struct tar_entry te = { .path = wk->top,
					.mode = wk->root_st.st_mode & 0777,
					.mtime = wk->root_st.st_mtime };
		if (wk->is_dir) {
			int fd = fcntl(wk->rootfd, F_DUPFD_CLOEXEC, 0);
			DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
			if (!d) {
				if (fd >= 0)
					close(fd);
				return err_set(err, ERRCODE_INVALID_ARGUMENT, -errno, "cannot read the host folder: %s",
					       strerror(errno));
			}
			te.type = TAR_TYPE_DIR;
			wk->st[wk->depth++] = (struct walk_dir){ d, strlen(wk->top) };
			wk->dirs++;
			return tar_writer_add(w, &te, err);
		}
		if ((uint64_t)wk->root_st.st_size > wk->lim.entry_size)
			return err_set(err, ERRCODE_TOO_LARGE, -EFBIG,
				       "the file is %lld bytes, over the upload limit of %llu bytes (SANDBOX_MAX_UPLOAD_MB)",
				       (long long)wk->root_st.st_size, (unsigned long long)wk->lim.entry_size);
		te.type = TAR_TYPE_FILE;
		te.size = (uint64_t)wk->root_st.st_size;
		if ((r = tar_writer_add(w, &te, err)) < 0)
			return r;
		wk->files++;
		wk->bytes = te.size;
		wk->filefd = fcntl(wk->rootfd, F_DUPFD_CLOEXEC, 0);
		wk->left = te.size;
		if (wk->left == 0) {
			close(wk->filefd);
			wk->filefd = -1;
		}
		return 0;
	}
	if (wk->filefd >= 0) {
		size_t want = wk->left < TAR_CHUNK ? (size_t)wk->left : TAR_CHUNK;
		ssize_t n;
		do
			n = read(wk->filefd, wk->chunk, want);
		while (n < 0 && errno == EINTR);
		if (n <= 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, n < 0 ? -errno : -EIO,
				       "a host file shrank or failed while it was being read%s%s", n < 0 ? ": " : "",
				       n < 0 ? strerror(errno) : "");
		if ((r = tar_writer_data(w, wk->chunk, (size_t)n, err)) < 0)
			return r;
		wk->left -= (uint64_t)n;
		if (wk->left == 0) {
			close(wk->filefd);
			wk->filefd = -1;
		}
		return 0;
	}
	if (!wk->is_dir) {
		r = tar_writer_close(w, err);
		return r < 0 ? r : 1;
	}
	return walk_next(wk, w, err);
}

void hostfs_walk_stats(const struct hostfs_walk *wk, uint64_t *ret_files, uint64_t *ret_dirs, uint64_t *ret_bytes,
		       json_t **ret_skipped)
{
	*ret_files = wk->files;
	*ret_dirs = wk->dirs;
	*ret_bytes = wk->bytes;
	*ret_skipped = json_incref(wk->skips.list);
}

void hostfs_walk_destroy(struct hostfs_walk *wk)
{
	if (!wk)
		return;
	while (wk->depth > 0)
		closedir(wk->st[--wk->depth].d);
	if (wk->filefd >= 0)
		close(wk->filefd);
	close(wk->rootfd);
	free(wk->chunk);
	json_decref(wk->skips.list);
	free(wk);
}
