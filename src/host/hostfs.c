/*
 * hostfs.c - allowed host directories, confined opens and download
 * extraction (see hostfs.h for the rules; the upload's walk: hostwalk.c).
 *
 * Every path below a directory fd that this file opens or creates has passed
 * path_relative (no absolute name, no ".."), and every component is opened
 * with O_NOFOLLOW: nothing that came out of a sandbox can name a place
 * outside the temporary directory, and no symlink is ever created, so none
 * can be planted inside it either.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "buildconf.h"
#include "host/hostfs-internal.h"
#include "host/hostfs.h"
#include "host/hostmark.h"

/* HOSTFS_NO_OPENAT2: the unit tests build the fallback too */
#if HAVE_OPENAT2 && !defined(HOSTFS_NO_OPENAT2)
#define USE_OPENAT2 1
#include <linux/openat2.h>
#else
#define USE_OPENAT2 0
#endif
#if !HAVE_RENAMEAT2
#include <linux/fs.h>
/* glibc before 2.28 and older musl lack the wrapper; the system call is older */
static int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned flags)
{
	return (int)syscall(SYS_renameat2, olddirfd, oldpath, newdirfd, newpath, flags);
}
#endif

/* Name of the file inside the temporary directory for a one-file download. */
#define EXTRACT_FILE "file"
/* A replaced file this big has its pages freed after the answer (hold_replaced). */
#define HOSTFS_HOLD_MIN (1 << 20)
/* Directories removed below an old tree that a download replaces, at most. */
#define REMOVE_DEPTH_MAX 256

struct hostfs {
	size_t n;
	char *dir[HOSTFS_DIRS_MAX]; /* canonical */
	int fd[HOSTFS_DIRS_MAX];    /* O_PATH, opened once */
	char *joined;
	int outbox_fd; /* -1: no outbox */
	char *outbox;  /* canonical, or NULL */
};

struct hostfs_extract {
	int dirfd, tmpfd, filefd;
	char name[NAME_MAX + 1];
	char tmpname[64];
	char unsafe_top[PATHSAFE_MAX + 1]; /* the last folder skipped for its name (unsafe_in_path) */
	bool overwrite, committed, decided, is_dir, got_file;
	unsigned root_mode, file_mode;
	int64_t mtime;
	uint64_t files, dirs, bytes;
	struct skips skips;
	struct tar_sink sink;
};

static int open_beneath(int rootfd, const char *rel, int flags, mode_t mode);
static int open_dir_beneath(int rootfd, const char *rel, bool create);
static bool unsafe_in_path(const char *path, struct skips *s, char *last, size_t lastsz);
static int dest_check(const char *path, const char *rel, struct err *err);
static int open_plain(int rootfd, const char *rel, int flags);
static int open_checked(const struct hostfs *h, const char *principal, const char *path, int flags, bool dest,
			int *ret_fd, char *ret_real, size_t realsz, struct err *err);
static void remove_tree(int dfd, const char *name, int depth);
static int x_entry(void *arg, const struct tar_entry *e, struct err *err);
static int x_data(void *arg, const char *p, size_t n, struct err *err);
static int x_end(void *arg, struct err *err);
static void x_skipped(void *arg, const char *name, const char *why);

bool hostfs_single_name(const char *name)
{
	return name[0] && strlen(name) <= NAME_MAX && !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

/*
 * Whether a component of path (relative, clean) is a name never written on
 * the host (hostmark_unsafe_name: version-control metadata, hidden, Python
 * bytecode), at any depth: such an entry is skipped, and listed by the path
 * up to that component, once for the entries below it that follow (last
 * remembers it).
 */
static bool unsafe_in_path(const char *path, struct skips *s, char *last, size_t lastsz)
{
	char comp[NAME_MAX + 1], why[160];

	for (const char *p = path; *p;) {
		size_t n = strcspn(p, "/");
		snprintf(comp, sizeof(comp), "%.*s", (int)(n < NAME_MAX ? n : NAME_MAX), p);
		const char *unsafe = hostmark_unsafe_name(comp);
		if (unsafe) {
			int top = (int)(p - path + n);
			if (strncmp(last, path, (size_t)top) != 0 || last[top]) {
				snprintf(last, lastsz, "%.*s", top, path);
				snprintf(why, sizeof(why),
					 "%s: never written on the host, where it could make a program run "
					 "a command",
					 unsafe);
				hostfs_left_out(s, last, why);
			}
			return true;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return false;
}

void hostfs_left_out(struct skips *s, const char *name, const char *why)
{
	if (s->count++ < HOSTFS_SKIPPED_LISTED)
		json_array_append_new(s->list, json_pack("{s:o, s:s}", "name", json_string_lossy(name, strlen(name)),
							 "reason", why));
}

/*
 * Opens rel (relative, clean) beneath rootfd without following any symlink:
 * openat2 when the kernel has it, else one component at a time. fd or -errno.
 */
static int open_beneath(int rootfd, const char *rel, int flags, mode_t mode)
{
	flags |= O_NOFOLLOW | O_CLOEXEC;
#if USE_OPENAT2
	static int no_openat2;
	if (!__atomic_load_n(&no_openat2, __ATOMIC_RELAXED)) {
		struct open_how how = {
			.flags = (uint64_t)flags,
			.mode = (flags & O_CREAT) ? mode : 0,
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		if (fd >= 0)
			return (int)fd;
		if (errno != ENOSYS && errno != EPERM)
			return -errno;
		__atomic_store_n(&no_openat2, 1, __ATOMIC_RELAXED); /* missing, or refused by a seccomp filter */
	}
#endif
	char buf[PATHSAFE_MAX + 1];
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	int dfd = rootfd;
	char *p = buf;
	for (;;) {
		char *slash = strchr(p, '/');
		if (!slash)
			break;
		*slash = '\0';
		if (strcmp(p, "..") == 0 || !*p) {
			if (dfd != rootfd)
				close(dfd);
			return -EXDEV;
		}
		int nfd = openat(dfd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		if (dfd != rootfd)
			close(dfd);
		if (nfd < 0)
			return e == ENOTDIR ? -ELOOP : -e;
		dfd = nfd;
		p = slash + 1;
	}
	if (strcmp(p, "..") == 0) {
		if (dfd != rootfd)
			close(dfd);
		return -EXDEV;
	}
	int fd = openat(dfd, *p ? p : ".", flags, mode);
	int e = errno;
	if (dfd != rootfd)
		close(dfd);
	return fd < 0 ? -e : fd;
}

/* Opens (creating when asked, mode 0755) the directory rel beneath rootfd, "" being rootfd itself. */
static int open_dir_beneath(int rootfd, const char *rel, bool create)
{
	char buf[PATHSAFE_MAX + 1];
	int dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	for (char *p = buf, *next; p && *p; p = next) {
		char *slash = strchr(p, '/');
		next = slash ? slash + 1 : NULL;
		if (slash)
			*slash = '\0';
		int m = create ? hostmark_mkdir(dfd, p, 0755) : 0;
		if (m < 0 && m != -EEXIST) {
			close(dfd);
			return m;
		}
		int nfd = openat(dfd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(dfd);
		if (nfd < 0)
			return -e;
		dfd = nfd;
	}
	return dfd;
}

int hostfs_create(const char *dirs, struct hostfs **ret, struct err *err)
{
	struct hostfs *h = xcalloc(1, sizeof(*h));
	h->outbox_fd = -1;
	struct buf joined;
	_cleanup_free_ char *copy = xstrdup(dirs ? dirs : "");

	buf_init(&joined, SIZE_MAX);
	for (char *save = NULL, *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		if (!*d)
			continue;
		if (h->n == HOSTFS_DIRS_MAX) {
			hostfs_destroy(h);
			buf_finish(&joined);
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -E2BIG,
				       "SANDBOX_HOST_DIRS names more than %d directories", HOSTFS_DIRS_MAX);
		}
		char *real = d[0] == '/' ? realpath(d, NULL) : NULL;
		int fd = real ? open(real, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
		if (fd < 0) {
			log_warnf("SANDBOX_HOST_DIRS: '%s' is not an existing absolute directory; it is left out", d);
			free(real);
			continue;
		}
		h->dir[h->n] = real;
		h->fd[h->n] = fd;
		h->n++;
		buf_printf(&joined, "%s%s", joined.len ? ":" : "", real);
	}
	h->joined = joined.data ? buf_steal(&joined, NULL) : xstrdup("");
	buf_finish(&joined);
	*ret = h;
	return 0;
}

void hostfs_destroy(struct hostfs *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->dir[i]);
		close(h->fd[i]);
	}
	if (h->outbox_fd >= 0)
		close(h->outbox_fd);
	free(h->outbox);
	free(h->joined);
	free(h);
}

int hostfs_outbox_open(struct hostfs *h, const char *path, struct err *err)
{
	char real[PATHSAFE_MAX + 1];
	int fd;
	int r = hostfs_open(h, "", path, O_RDONLY | O_DIRECTORY, &fd, real, sizeof(real), err);
	if (r < 0)
		return r;
	if (h->outbox_fd >= 0)
		close(h->outbox_fd);
	free(h->outbox);
	h->outbox_fd = fd;
	h->outbox = xstrdup(real);
	return 0;
}

const char *hostfs_outbox(const struct hostfs *h)
{
	return h ? h->outbox : NULL;
}

int hostfs_outbox_put(const struct hostfs *h, const char *name, const void *data, size_t n, char *ret_path,
		      size_t pathsz, struct err *err)
{
	if (!h || h->outbox_fd < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENOENT, "no outbox is set (SANDBOX_OUTBOX)");
	if (!hostfs_single_name(name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "outbox file name %.100s is not one name", name);
	/* a new file only, never through a link, never executable */
	int fd = openat(h->outbox_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -errno, "cannot create %s/%s: %s", h->outbox, name,
			       strerror(errno));
	const char *p = data;
	int r = 0;
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(h->outbox_fd, name, 0);
		return err_set(err, ERRCODE_INVALID_ARGUMENT, r, "writing %s/%s: %s", h->outbox, name, strerror(-r));
	}
	snprintf(ret_path, pathsz, "%s/%s", h->outbox, name);
	return 0;
}

const char *hostfs_dirs(const struct hostfs *h)
{
	return h ? h->joined : "";
}

/*
 * Opens rel beneath rootfd with flags only if it is a regular file or a
 * folder, looked at through an O_PATH fd first: opening a device or a fifo
 * can act (a tape rewinds, a terminal is taken, a fifo blocks). fd, -ENXIO
 * for anything else, -ESTALE when it was swapped between the two opens.
 */
static int open_plain(int rootfd, const char *rel, int flags)
{
	struct stat pst, st;
	int fd = open_beneath(rootfd, rel, O_PATH, 0);

	if (fd < 0)
		return fd;
	int r = fstat(fd, &pst) < 0 ? -errno : 0;
	close(fd);
	if (r < 0)
		return r;
	if (!S_ISREG(pst.st_mode) && !S_ISDIR(pst.st_mode))
		return -ENXIO;
	if ((fd = open_beneath(rootfd, rel, flags | O_NOCTTY, 0)) < 0)
		return fd;
	if (fstat(fd, &st) < 0 || st.st_ino != pst.st_ino || st.st_dev != pst.st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int hostfs_open(const struct hostfs *h, const char *principal, const char *path, int flags, int *ret_fd, char *ret_real,
		size_t realsz, struct err *err)
{
	return open_checked(h, principal, path, flags, false, ret_fd, ret_real, realsz, err);
}

int hostfs_open_dest(const struct hostfs *h, const char *principal, const char *dir, int *ret_fd, char *ret_real,
		     size_t realsz, struct err *err)
{
	return open_checked(h, principal, dir, O_RDONLY | O_DIRECTORY, true, ret_fd, ret_real, realsz, err);
}

/*
 * principal's part of the allowed directories (hostfs_open): "" for the
 * tokenless principal (the directories themselves), else its own folder in
 * each, made on first use (0700, never through a link). A name a folder
 * cannot carry safely (hidden, . or ..) has none.
 */
static int principal_part(const struct hostfs *h, const char *principal, struct err *err)
{
	if (!principal || !principal[0])
		return 0;
	if (principal[0] == '.' || strchr(principal, '/') || strlen(principal) > NAME_MAX)
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "the token name '%.64s' cannot name a host folder (it starts with '.'): rename it in the "
			       "token file to use SANDBOX_HOST_DIRS",
			       principal);
	for (size_t i = 0; i < h->n; i++) {
		struct stat st;
		if (mkdirat(h->fd[i], principal, 0700) < 0 && errno != EEXIST)
			log_debugf("host folder %s/%s: %s", h->dir[i], principal, strerror(errno));
		else if (fstatat(h->fd[i], principal, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
			log_warnf("host folder %s/%s is not a folder: principal %s has none there", h->dir[i],
				  principal, principal);
	}
	return 0;
}

/*
 * Refuses a destination folder with a component below its allowed directory
 * that unsafe_name refuses. rel is the canonical path that open_beneath then
 * follows component by component, no symlink allowed: a check on these
 * names is a check on the folders the fd is opened through.
 */
static int dest_check(const char *path, const char *rel, struct err *err)
{
	char comp[NAME_MAX + 1];

	for (const char *p = rel; *p;) {
		size_t n = strcspn(p, "/");
		snprintf(comp, sizeof(comp), "%.*s", (int)(n < NAME_MAX ? n : NAME_MAX), p);
		const char *why = strcmp(comp, ".") == 0 ? NULL : hostmark_unsafe_name(comp);
		if (why)
			return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
				       "host folder %.300s: '%.100s' in it %s, and sandbox-mcp writes nothing in or below "
				       "such a folder (files there configure programs on the host: .git/config can make git "
				       "run a command, likewise .bashrc, .envrc, .vscode). Choose a folder without one",
				       path, comp, why);
		p += n;
		while (*p == '/')
			p++;
	}
	return 0;
}

static int open_checked(const struct hostfs *h, const char *principal, const char *path, int flags, bool dest,
			int *ret_fd, char *ret_real, size_t realsz, struct err *err)
{
	char norm[PATHSAFE_MAX + 1], root[PATH_MAX + NAME_MAX + 2];
	bool own = principal && principal[0];

	if (!h || h->n == 0)
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "no host directory is allowed: set SANDBOX_HOST_DIRS (or --host-dirs) to the folders "
			       "sandboxes may copy from and to, colon-separated, and restart the server");
	if (principal_part(h, principal, err) < 0)
		return -EACCES;
	if (!path || path[0] != '/' || path_resolve("/", path, norm, sizeof(norm)) < 0)
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "host paths must be absolute (one of the allowed directories %s, or below one)",
			       h->joined);
	_cleanup_free_ char *real = realpath(path, NULL);
	int rerr = errno;
	const char *check = real ? real : norm;
	/* the part of dir[i] that is the caller's: the folder itself, or <dir>/<principal> */
	size_t i = 0, len = 0, dlen = 0;
	for (; i < h->n; i++) {
		dlen = strcmp(h->dir[i], "/") == 0 ? 0 : strlen(h->dir[i]);
		snprintf(root, sizeof(root), "%.*s%s%s", (int)dlen, h->dir[i], own ? "/" : "", own ? principal : "");
		len = strlen(root);
		if (strncmp(check, root, len) == 0 && (check[len] == '\0' || check[len] == '/'))
			break;
	}
	if (i == h->n)
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "host path %.300s%s%.300s is outside %s (%s%s%.64s): use a path inside one, or add its "
			       "folder to SANDBOX_HOST_DIRS (colon-separated) and restart the server",
			       path, real && strcmp(real, path) != 0 ? ", which resolves to " : "",
			       real && strcmp(real, path) != 0 ? real : "",
			       own ? "this principal's host folders" : "the allowed host directories", h->joined,
			       own ? ", each with a folder named " : "", own ? principal : "");
	if (!real)
		return err_set(err, rerr == ENOENT ? ERRCODE_FILE_NOT_FOUND : ERRCODE_HOST_PATH_NOT_ALLOWED, -rerr,
			       "host path %.300s: %s", path, strerror(rerr));

	/* relative to dir[i]'s fd, the principal's folder included: it too is opened without links */
	const char *rel = check[dlen] ? check + dlen + 1 : ".";
	if (dest && dest_check(path, rel, err) < 0)
		return -EACCES;
	int fd = (flags & O_PATH) ? open_beneath(h->fd[i], rel, flags, 0) : open_plain(h->fd[i], rel, flags);
	if (fd == -ENXIO)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, fd,
			       "host path %.300s is not a regular file or a folder: only those are copied", path);
	if (fd < 0) {
		if (fd == -ELOOP || fd == -EXDEV || fd == -ESTALE)
			return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, fd,
				       "host path %.300s changed (into a symbolic link?) while it was opened: refused",
				       path);
		return err_set(err, fd == -ENOENT ? ERRCODE_FILE_NOT_FOUND : ERRCODE_INVALID_ARGUMENT, fd,
			       "cannot open host path %.300s: %s", path, strerror(-fd));
	}
	if (ret_real)
		snprintf(ret_real, realsz, "%s", real);
	*ret_fd = fd;
	return 0;
}

/* Removes name below dirfd without following links; bounded depth (what is deeper stays). */
static void remove_tree(int dfd, const char *name, int depth)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		unlinkat(dfd, name, 0);
		return;
	}
	if (depth < REMOVE_DEPTH_MAX) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		if (d) {
			struct dirent *de;
			while ((de = readdir(d)))
				if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
					remove_tree(dirfd(d), de->d_name, depth + 1);
			closedir(d);
		} else if (fd >= 0) {
			close(fd);
		}
	}
	unlinkat(dfd, name, AT_REMOVEDIR);
}

int hostfs_extract_begin(int dfd, const char *name, bool overwrite, struct hostfs_extract **ret, struct err *err)
{
	struct stat st;
	const char *why;
	ino_t ino;

	if (!hostfs_single_name(name))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "'%.200s' cannot be a file name on the host",
			       name);
	if ((why = hostmark_unsafe_name(name)))
		return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
			       "'%.200s' %s: sandbox-mcp never writes such a name on the host, since files like .bashrc, "
			       ".envrc, .git or .vscode make programs there run commands. %s",
			       name, why,
			       hostmark_vcs_name(name)
				       ? "Copy the files you need out of it in the sandbox and download those"
				       : "Rename it in the sandbox first (e.g. run_command mv): inside a downloaded folder "
					 "it is skipped too");
	if (!overwrite && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		struct err ignored;
		bool ours = hostmark_replaceable(dfd, name, &ino, &ignored) == 1;
		return err_set(err, ERRCODE_FILE_EXISTS, -EEXIST,
			       ours ? "%s already exists in the host folder: pass overwrite: true to replace it"
				    : "%s already exists in the host folder, and sandbox-mcp did not write it (or it changed "
				      "since), so no download replaces it: download into another host_dir, or move it away on "
				      "the host first",
			       name);
	}
	if (overwrite && hostmark_replaceable(dfd, name, &ino, err) < 0)
		return -EACCES;
	struct hostfs_extract *x = xcalloc(1, sizeof(*x));
	x->dirfd = dfd;
	x->tmpfd = x->filefd = -1;
	x->overwrite = overwrite;
	x->root_mode = 0755;
	x->skips.list = json_array();
	snprintf(x->name, sizeof(x->name), "%s", name);
	for (int tries = 0;; tries++) {
		uint32_t rnd = 0;
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (uint32_t)now_us() ^ (uint32_t)getpid();
		snprintf(x->tmpname, sizeof(x->tmpname), ".sandbox-mcp-download-%08x", rnd);
		int m = hostmark_mkdir(dfd, x->tmpname, 0700); /* a folder download's folder */
		if (m == 0)
			break;
		if (m != -EEXIST || tries == 16) {
			int r = err_set(err, ERRCODE_INVALID_ARGUMENT, m,
					"cannot create a folder in the host folder: %s", strerror(-m));
			x->tmpname[0] = '\0';
			hostfs_extract_destroy(x);
			return r;
		}
	}
	x->tmpfd = openat(dfd, x->tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (x->tmpfd < 0) {
		int r = err_set(err, ERRCODE_INTERNAL, -errno, "cannot open the temporary folder: %s", strerror(errno));
		hostfs_extract_destroy(x);
		return r;
	}
	x->sink = (struct tar_sink){ x_entry, x_data, x_end, x_skipped, x };
	*ret = x;
	return 0;
}

const struct tar_sink *hostfs_extract_sink(struct hostfs_extract *x)
{
	return &x->sink;
}

static void x_skipped(void *arg, const char *name, const char *why)
{
	struct hostfs_extract *x = arg;
	hostfs_left_out(&x->skips, name, why);
}

static int x_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct hostfs_extract *x = arg;
	const char *path = e->path;
	char dir[PATHSAFE_MAX + 1];

	if (!x->decided) {
		/* a folder comes as "./" first; a single file as its one entry */
		x->decided = true;
		x->is_dir = e->type == TAR_TYPE_DIR && !path[0];
	}
	if (!x->is_dir) {
		if (x->got_file || e->type != TAR_TYPE_FILE) {
			hostfs_left_out(&x->skips, path, "not part of a one-file download");
			return TAR_SKIP;
		}
		x->got_file = true;
		path = EXTRACT_FILE;
	} else if (!path[0]) {
		x->root_mode = e->mode;
		return TAR_SKIP;
	} else if (unsafe_in_path(path, &x->skips, x->unsafe_top, sizeof(x->unsafe_top))) {
		return TAR_SKIP;
	}

	const char *slash = strrchr(path, '/');
	snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 0, path);
	const char *base = slash ? slash + 1 : path;
	int dfd = open_dir_beneath(x->tmpfd, dir, true);
	if (dfd < 0) {
		hostfs_left_out(&x->skips, path,
				dfd == -ENOTDIR || dfd == -ELOOP ? "its folder is a file in the download"
								 : "its folder could not be made");
		return TAR_SKIP;
	}
	if (e->type == TAR_TYPE_DIR) {
		int m = hostmark_mkdir(dfd, base, (e->mode & 0755) | 0700);
		if (m < 0 && m != -EEXIST) {
			close(dfd);
			return err_set(err, ERRCODE_INTERNAL, m, "cannot create folder %.300s on the host: %s", path,
				       strerror(-m));
		}
		close(dfd);
		x->dirs++;
		return TAR_OK;
	}
	/* files never get exec bits on the host; 0600 until marked (a user xattr needs write permission) */
	x->file_mode = e->mode & 0666;
	x->filefd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int en = errno;
	close(dfd);
	if (x->filefd < 0) {
		if (en == EEXIST) {
			hostfs_left_out(&x->skips, path, "a second entry with the same name");
			return TAR_SKIP;
		}
		return err_set(err, ERRCODE_INTERNAL, -en, "cannot create %.300s on the host: %s", path, strerror(en));
	}
	x->mtime = e->mtime;
	x->files++;
	return TAR_OK;
}

static int x_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct hostfs_extract *x = arg;
	int r = write_full(x->filefd, p, n);
	if (r < 0)
		return err_set(err, ERRCODE_INTERNAL, r, "writing on the host failed: %s", strerror(-r));
	x->bytes += n;
	return TAR_OK;
}

static int x_end(void *arg, struct err *err)
{
	struct hostfs_extract *x = arg;
	struct timespec ts[2] = { { .tv_sec = (time_t)x->mtime }, { .tv_sec = (time_t)x->mtime } };
	(void)futimens(x->filefd, ts);
	(void)hostmark_set(x->filefd); /* after the last change of size and mtime, which it records */
	int r = fchmod(x->filefd, x->file_mode) < 0 ? -1 : 0;
	if (close(x->filefd) < 0)
		r = -1;
	x->filefd = -1;
	if (r < 0)
		return err_set(err, ERRCODE_INTERNAL, -errno, "writing on the host failed: %s", strerror(errno));
	return 0;
}

int hostfs_extract_commit(struct hostfs_extract *x, struct err *err)
{
	struct stat st;
	ino_t old = 0;
	int r = 0;

	if (!x->is_dir && !x->got_file)
		return err_set(err, ERRCODE_ENGINE_ERROR, -ENOENT, "the sandbox sent no file");
	bool exists = fstatat(x->dirfd, x->name, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if (exists && !x->overwrite)
		return err_set(err, ERRCODE_FILE_EXISTS, -EEXIST,
			       "%s appeared in the host folder during the download: pass overwrite: true to replace it",
			       x->name);
	if (exists && (r = hostmark_replaceable(x->dirfd, x->name, &old, err)) < 0)
		return r;
	exists = exists && r == 1;
	int fromfd = x->is_dir ? x->dirfd : x->tmpfd;
	const char *from = x->is_dir ? x->tmpname : EXTRACT_FILE;
	if (x->is_dir)
		(void)fchmod(x->tmpfd, (x->root_mode & 0755) | 0700);
	if (!exists) {
		r = renameat2(fromfd, from, x->dirfd, x->name, RENAME_NOREPLACE);
		if (r < 0 && errno == EINVAL) /* a filesystem without these flags */
			r = renameat(fromfd, from, x->dirfd, x->name);
	} else {
		/* swapped, then checked: what is replaced is the one found to be the server's */
		r = renameat2(fromfd, from, x->dirfd, x->name, RENAME_EXCHANGE);
		if (r < 0 && errno == EINVAL && !x->is_dir)
			r = renameat(fromfd, from, x->dirfd, x->name); /* checked just above */
		else if (r == 0 && (fstatat(fromfd, from, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != old)) {
			(void)renameat2(fromfd, from, x->dirfd, x->name, RENAME_EXCHANGE);
			return err_set(err, ERRCODE_HOST_PATH_NOT_ALLOWED, -EACCES,
				       "%s was replaced on the host while the download was put in its place: nothing "
				       "replaced, try again",
				       x->name);
		}
	}
	if (r < 0)
		return err_set(err, errno == EEXIST ? ERRCODE_FILE_EXISTS : ERRCODE_INVALID_ARGUMENT, -errno,
			       "cannot move the download into place as %s: %s", x->name, strerror(errno));
	/* the old one, if any, is now where the download was: removed here, or with the temporary folder */
	if (x->is_dir) {
		x->committed = true;
		if (exists)
			remove_tree(x->dirfd, x->tmpname, 0);
	}
	return 0;
}

void hostfs_extract_stats(const struct hostfs_extract *x, uint64_t *ret_files, uint64_t *ret_dirs, uint64_t *ret_bytes,
			  json_t **ret_skipped)
{
	*ret_files = x->files;
	*ret_dirs = x->dirs;
	*ret_bytes = x->bytes;
	*ret_skipped = json_incref(x->skips.list);
}

/*
 * The host file a download replaced, now in the temporary folder, when it
 * is big and has no other name: an O_PATH fd that keeps its pages until
 * close_later frees them off the answer's time. -1 otherwise.
 */
static int hold_replaced(const struct hostfs_extract *x)
{
	struct stat st;
	/* through the folder's own fd, never its name again: the name is in a folder others may write */
	if (x->is_dir || x->tmpfd < 0 || fstatat(x->tmpfd, EXTRACT_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_size < HOSTFS_HOLD_MIN)
		return -1;
	return openat(x->tmpfd, EXTRACT_FILE, O_PATH | O_NOFOLLOW | O_CLOEXEC);
}

void hostfs_extract_destroy(struct hostfs_extract *x)
{
	if (!x)
		return;
	if (x->filefd >= 0)
		close(x->filefd);
	int held = x->tmpname[0] && !x->committed ? hold_replaced(x) : -1;
	if (x->tmpfd >= 0)
		close(x->tmpfd);
	if (x->tmpname[0] && !x->committed)
		remove_tree(x->dirfd, x->tmpname, 0);
	if (held >= 0)
		close_later(held);
	json_decref(x->skips.list);
	free(x);
}
