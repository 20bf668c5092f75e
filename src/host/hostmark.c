/*
 * hostmark.c - what a download may write and replace on the host (see
 * hostmark.h): the server's mark on what it wrote, checked before anything
 * is replaced, and the names never written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "base/util.h"
#include "host/hostmark.h"

/* Entries of an old folder checked before a download replaces it, at most (more: not replaced). */
#define OURS_ENTRIES_MAX 100000
/* Folder nesting checked below an old folder, at most (deeper: not replaced). */
#define OURS_DEPTH_MAX 256
/* Bytes of a mark's value. */
#define MARK_MAX 96

static void mark_value(const struct stat *st, char *out, size_t outsz);
static int mark_check(int fd, const struct stat *st);
static int open_same(int dfd, const char *name, const struct stat *st, struct stat *ret_st);
static int ours_tree(int fd, char *path, size_t plen, int depth, uint64_t *left);

/*
 * Names whose files make a program on the host run a command without asking:
 * version-control metadata (a .git/config's core.fsmonitor runs on `git
 * status`, which shell prompts run in every folder entered; .hg/hgrc hooks
 * likewise), and git's HEAD, without which git takes no folder for a (bare)
 * repository. Compared without case, for case-insensitive filesystems.
 */
static const char *const vcs_names[] = {
	".git", ".hg", ".svn", ".bzr", ".jj", "_darcs", ".fslckout", "_FOSSIL_", "HEAD"
};

bool hostmark_vcs_name(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(vcs_names); i++)
		if (strcasecmp(name, vcs_names[i]) == 0)
			return true;
	return false;
}

const char *hostmark_unsafe_name(const char *name)
{
	if (hostmark_vcs_name(name))
		return "is version-control metadata";
	if (name[0] == '.')
		return "is hidden (starts with '.')";
	size_t n = strlen(name);
	if (strcasecmp(name, "__pycache__") == 0 || /* case-insensitive filesystems find it too */
	    (n > 4 && (strcasecmp(name + n - 4, ".pyc") == 0 || strcasecmp(name + n - 4, ".pyo") == 0)))
		return "is Python bytecode (python would run it in place of the .py)";
	return NULL;
}

/* The mark's value for st: bound to the inode, and for a file also to its size and mtime. */
static void mark_value(const struct stat *st, char *out, size_t outsz)
{
	if (S_ISDIR(st->st_mode))
		snprintf(out, outsz, "1 dir %llu", (unsigned long long)st->st_ino);
	else
		snprintf(out, outsz, "1 file %llu %lld %lld.%09ld", (unsigned long long)st->st_ino,
			 (long long)st->st_size, (long long)st->st_mtim.tv_sec, (long)st->st_mtim.tv_nsec);
}

int hostmark_set(int fd)
{
	struct stat st;
	char v[MARK_MAX];

	if (fstat(fd, &st) < 0)
		return -errno;
	mark_value(&st, v, sizeof(v));
	if (fsetxattr(fd, HOSTMARK_XATTR, v, strlen(v), 0) < 0) {
		log_debugf("cannot mark a host file as written by the server: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* 0 when fd (of stat st) carries the mark of what it is now; -ENODATA without a mark, -ESTALE changed since. */
static int mark_check(int fd, const struct stat *st)
{
	char want[MARK_MAX], got[MARK_MAX];

	mark_value(st, want, sizeof(want));
	ssize_t n = fgetxattr(fd, HOSTMARK_XATTR, got, sizeof(got));
	if (n < 0)
		return errno == ERANGE ? -ESTALE : -ENODATA;
	return (size_t)n == strlen(want) && memcmp(got, want, (size_t)n) == 0 ? 0 : -ESTALE;
}

int hostmark_mkdir(int dfd, const char *name, mode_t mode)
{
	if (mkdirat(dfd, name, mode) < 0)
		return -errno;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		(void)hostmark_set(fd);
		close(fd);
	}
	return 0;
}

/* Opens name below dfd, a regular file or a folder of stat st, checking it is still that one. fd or -errno. */
static int open_same(int dfd, const char *name, const struct stat *st, struct stat *ret_st)
{
	int fd = openat(dfd, name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (S_ISDIR(st->st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return -errno;
	if (fstat(fd, ret_st) < 0 || ret_st->st_ino != st->st_ino || ret_st->st_dev != st->st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/*
 * Whether everything below the folder fd (taken over) carries the mark; path
 * (plen bytes used, PATHSAFE_MAX + 1 in all) names the first entry that does
 * not. 0, or -ENODATA (not the server's), -ESTALE (changed), -E2BIG (too many
 * or too deep to check).
 */
static int ours_tree(int fd, char *path, size_t plen, int depth, uint64_t *left)
{
	DIR *d = fdopendir(fd);
	struct dirent *de;
	int r = 0;

	if (!d) {
		close(fd);
		return -ENODATA;
	}
	while (r == 0) {
		errno = 0;
		if (!(de = readdir(d))) {
			r = errno ? -ENODATA : 0;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path + plen, PATHSAFE_MAX + 1 - plen, "/%s", de->d_name);
		struct stat st, cst;
		if (*left == 0 || depth >= OURS_DEPTH_MAX) {
			r = -E2BIG;
			break;
		}
		(*left)--;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
			r = -ENODATA; /* links, fifos, sockets, devices: never the server's */
			break;
		}
		int cfd = open_same(dirfd(d), de->d_name, &st, &cst);
		if (cfd < 0) {
			r = cfd == -ESTALE ? cfd : -ENODATA;
			break;
		}
		if ((r = mark_check(cfd, &cst)) < 0 || !S_ISDIR(cst.st_mode))
			close(cfd);
		else
			r = ours_tree(cfd, path, strlen(path), depth + 1, left);
	}
	closedir(d);
	return r;
}

int hostmark_replaceable(int dfd, const char *name, ino_t *ret_ino, struct err *err)
{
	struct stat st, fst;
	char path[PATHSAFE_MAX + 1];
	int r = -ENODATA;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0
				       : err_set(err, ERRCODE_INVALID_ARGUMENT, -errno,
						 "cannot look at %s on the host: %s", name, strerror(errno));
	snprintf(path, sizeof(path), "%s", name);
	if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
		int fd = open_same(dfd, name, &st, &fst);
		if (fd == -ESTALE)
			r = fd;
		else if (fd >= 0 && ((r = mark_check(fd, &fst)) < 0 || !S_ISDIR(fst.st_mode)))
			close(fd);
		else if (fd >= 0) {
			uint64_t left = OURS_ENTRIES_MAX;
			r = ours_tree(fd, path, strlen(path), 1, &left);
		}
	}
	if (r == 0) {
		*ret_ino = st.st_ino;
		return 1;
	}
	return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
		       "%.300s %s: a download replaces only files and folders that sandbox-mcp wrote itself and nobody "
		       "changed since. Download into another host_dir, or move %.200s away on the host first",
		       path,
		       r == -ESTALE  ? "was changed (or copied) on the host since sandbox-mcp wrote it"
		       : r == -E2BIG ? "is past what sandbox-mcp checks before replacing a folder (too many entries or "
				       "too deep)"
				     : "exists on the host and was not written by sandbox-mcp",
		       name);
}
