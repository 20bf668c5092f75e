/*
 * fileops.c - the agent's built-in file operations (see fileops.h).
 *
 * Each mirrors one of the server's sh scripts line by line: the same tests
 * in the same order, so a path gets the same verdict (and exit code)
 * through the agent as through `docker exec sh -c`.  Single-threaded, in a
 * forked child that exits when the operation is done; the agent's loop
 * carries stdin/stdout/stderr as for any command, kills it on timeout or
 * cancellation, and reports its exit code.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "agent/dropops.h"
#include "agent/fileops.h"

/* Bytes read or written at a time. */
#define FILEOP_CHUNK (64 * 1024)

static int write_all(int fd, const char *p, size_t n);
static int op_read(int argc, char **argv);
static int op_write(int argc, char **argv);
static void list_record(const struct stat *st, int dirfd, const char *name, const char *shown);
static int list_walk(const char *rel, int level, int depth, bool hidden);
static int op_list(int argc, char **argv);
static int rm_tree(int parent, const char *name, char *shown, size_t shown_len);
static int op_delete(int argc, char **argv);
static int op_usage(int argc, char **argv);
static int op_roots(int argc, char **argv);

void fileop_say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

bool fileop_parse_num(const char *s, uint64_t *ret)
{
	char *end;
	if (!*s || *s < '0' || *s > '9')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

/* read_script (files.c), without tar: the head line, then the bytes asked for. */
static int op_read(int argc, char **argv)
{
	uint64_t off, len, cap;
	struct stat st;
	char head[64];

	if (argc != 5 || !fileop_parse_num(argv[2], &off) || !fileop_parse_num(argv[3], &len) ||
	    !fileop_parse_num(argv[4], &cap))
		return EXIT_FAILED;
	const char *p = argv[1];
	if (stat(p, &st) < 0)
		return EXIT_NOT_FOUND;
	if (S_ISDIR(st.st_mode))
		return EXIT_IS_DIR;
	if (!S_ISREG(st.st_mode))
		return EXIT_NOT_REGULAR;
	if (access(p, R_OK) < 0)
		return EXIT_DENIED;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fileop_say("read: %s: %s", p, strerror(errno));
		return errno == EACCES ? EXIT_DENIED : EXIT_FAILED;
	}
	uint64_t size = (uint64_t)st.st_size;
	uint64_t want = off >= size ? 0 : size - off;
	if (want > len)
		want = len;
	int n = snprintf(head, sizeof(head), "%llu %u\n", (unsigned long long)size, (unsigned)(st.st_mode & 07777));
	if (write_all(1, head, (size_t)n) < 0)
		return EXIT_FAILED;
	if (want > cap) /* the server says so, with the size */
		return 0;
	static char buf[FILEOP_CHUNK];
	while (want > 0) {
		ssize_t k = pread(fd, buf, want < sizeof(buf) ? (size_t)want : sizeof(buf), (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0) {
			fileop_say("read: %s: %s", p, strerror(errno));
			return EXIT_FAILED;
		}
		if (k == 0)
			break; /* it shrank meanwhile: what is there */
		if (write_all(1, buf, (size_t)k) < 0)
			return EXIT_FAILED;
		off += (uint64_t)k;
		want -= (uint64_t)k;
	}
	return 0;
}

int fileop_mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	size_t n = strlen(dir);

	if (n == 0 || n >= sizeof(path)) {
		fileop_say("mkdir: %s: %s", dir, strerror(ENAMETOOLONG));
		return -1;
	}
	memcpy(path, dir, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		char c = path[i];
		path[i] = '\0';
		if ((stat(path, &st) < 0 || !S_ISDIR(st.st_mode)) && mkdir(path, 0777) < 0 && errno != EEXIST) {
			fileop_say("mkdir: cannot create directory '%s': %s", path, strerror(errno));
			return -1;
		}
		path[i] = c;
	}
	return 0;
}

/*
 * write_script (tool-files.c): stdin becomes dir/base. tar -x unlinks what
 * is there and creates the file anew; a temporary file renamed over it does
 * the same (a symlink is replaced, not followed) and never leaves half a file.
 */
static int op_write(int argc, char **argv)
{
	struct stat st, lst;
	char tmp[64];
	uint64_t mode;

	if (argc != 6 || !fileop_parse_num(argv[5], &mode))
		return EXIT_FAILED;
	const char *d = argv[1], *b = argv[2];
	mode = strtoull(argv[5], NULL, 8) & 07777;
	if ((stat(d, &st) < 0 || !S_ISDIR(st.st_mode)) && fileop_mkdir_p(d) < 0)
		return EXIT_NO_DIR;
	if (chdir(d) < 0) {
		fileop_say("cd: %s: %s", d, strerror(errno));
		return EXIT_NO_DIR;
	}
	if (access(".", W_OK) < 0)
		return EXIT_DENIED;
	bool exists = lstat(b, &lst) == 0;
	if (exists && S_ISDIR(lst.st_mode))
		return EXIT_IS_DIR;
	if (exists && strcmp(argv[3], "1") != 0)
		return EXIT_EXISTS;
	if (exists && strcmp(argv[4], "1") != 0 && stat(b, &st) == 0)
		mode = st.st_mode & 07777;
	snprintf(tmp, sizeof(tmp), ".sandbox-mcp-write-%ld", (long)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) /* left by a write killed with this pid */
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		fileop_say("write: %s: %s", b, strerror(errno));
		return errno == EACCES ? EXIT_DENIED : EXIT_FAILED;
	}
	static char buf[FILEOP_CHUNK];
	int err = 0;
	for (;;) {
		ssize_t k = read(0, buf, sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? errno : 0;
			break;
		}
		if (write_all(fd, buf, (size_t)k) < 0) {
			err = errno;
			break;
		}
	}
	if (!err && fchmod(fd, (mode_t)mode) < 0)
		err = errno;
	if (close(fd) < 0 && !err)
		err = errno;
	if (!err && rename(tmp, b) < 0)
		err = errno;
	if (err) {
		unlink(tmp);
		fileop_say("write: %s: %s", b, strerror(err));
		return EXIT_FAILED;
	}
	return 0;
}

/* One record as `find -printf '%y\0%s\0%T@\0%m\0%l\0%P\0'` prints it. */
static void list_record(const struct stat *st, int dirfd, const char *name, const char *shown)
{
	char type = S_ISREG(st->st_mode)    ? 'f'
		    : S_ISDIR(st->st_mode)  ? 'd'
		    : S_ISLNK(st->st_mode)  ? 'l'
		    : S_ISFIFO(st->st_mode) ? 'p'
		    : S_ISSOCK(st->st_mode) ? 's'
		    : S_ISCHR(st->st_mode)  ? 'c'
		    : S_ISBLK(st->st_mode)  ? 'b'
					    : 'U';
	char target[PATH_MAX] = "";
	if (type == 'l') {
		ssize_t k = readlinkat(dirfd, name, target, sizeof(target) - 1);
		target[k > 0 ? k : 0] = '\0';
	}
	printf("%c%c%lld%c%lld.%09ld%c%o%c%s%c%s%c", type, 0, (long long)st->st_size, 0, (long long)st->st_mtim.tv_sec,
	       (long)st->st_mtim.tv_nsec, 0, (unsigned)(st->st_mode & 07777), 0, target, 0, shown, 0);
}

/* Records under rel (relative to the listed directory, "" for it), as find -mindepth 1 -maxdepth depth. */
static int list_walk(const char *rel, int level, int depth, bool hidden)
{
	int status = 0;
	DIR *dir = opendir(*rel ? rel : ".");
	if (!dir) {
		fprintf(stderr, "find: './%s': %s\n", rel, strerror(errno));
		return 1;
	}
	for (struct dirent *de; (de = readdir(dir));) {
		const char *n = de->d_name;
		char path[PATH_MAX];
		struct stat st;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || (!hidden && n[0] == '.'))
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", n) >= sizeof(path)) {
			fprintf(stderr, "find: './%s/%s': %s\n", rel, n, strerror(ENAMETOOLONG));
			status = 1;
			continue;
		}
		if (fstatat(dirfd(dir), n, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			fprintf(stderr, "find: './%s': %s\n", path, strerror(errno));
			status = 1;
			continue;
		}
		list_record(&st, dirfd(dir), n, path);
		if (S_ISDIR(st.st_mode) && level < depth && list_walk(path, level + 1, depth, hidden))
			status = 1;
	}
	closedir(dir);
	return status;
}

/* list_script (tool-find.c). */
static int op_list(int argc, char **argv)
{
	struct stat st, lst;
	uint64_t depth;

	if (argc != 4 || !fileop_parse_num(argv[2], &depth) || depth < 1 || depth > 64)
		return EXIT_FAILED;
	const char *p = argv[1];
	bool is_link = lstat(p, &lst) == 0, exists = stat(p, &st) == 0;
	if (!exists && !is_link)
		return EXIT_NOT_FOUND;
	if (!exists || !S_ISDIR(st.st_mode)) {
		const char *slash = strrchr(p, '/');
		list_record(&lst, AT_FDCWD, p, slash && slash[1] ? slash + 1 : p);
		return fflush(stdout) == 0 ? 0 : EXIT_FAILED;
	}
	if (chdir(p) < 0) {
		fileop_say("cd: %s: %s", p, strerror(errno));
		return EXIT_DENIED;
	}
	int status = list_walk("", 1, (int)depth, strcmp(argv[3], "1") == 0);
	return fflush(stdout) == 0 ? status : EXIT_FAILED;
}

/*
 * `rm -rf`: name in the directory parent, never following a symlink. shown
 * holds its path for messages (shown_len bytes used). 0, or 1 when anything
 * could not be removed (said on stderr, the rest still removed).
 */
static int rm_tree(int parent, const char *name, char *shown, size_t shown_len)
{
	struct stat st;
	int status = 0;

	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : (fileop_say("rm: cannot remove '%s': %s", shown, strerror(errno)), 1);
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		DIR *dir = fd < 0 ? NULL : fdopendir(fd);
		if (!dir) {
			fileop_say("rm: cannot remove '%s': %s", shown, strerror(errno));
			if (fd >= 0)
				close(fd);
			return 1;
		}
		for (struct dirent *de; (de = readdir(dir));) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			size_t k = (size_t)snprintf(shown + shown_len, PATH_MAX - shown_len, "/%s", de->d_name);
			size_t len = shown_len + k < PATH_MAX ? shown_len + k : PATH_MAX - 1;
			status |= rm_tree(dirfd(dir), de->d_name, shown, len);
			shown[shown_len] = '\0';
		}
		closedir(dir);
	}
	if (unlinkat(parent, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT) {
		fileop_say("rm: cannot remove '%s': %s", shown, strerror(errno));
		return 1;
	}
	return status;
}

/* delete_script (tool-files.c). */
static int op_delete(int argc, char **argv)
{
	struct stat st, lst;

	if (argc != 3)
		return EXIT_FAILED;
	const char *p = argv[1];
	if (lstat(p, &lst) < 0)
		return EXIT_NOT_FOUND;
	if (!S_ISLNK(lst.st_mode) && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
		printf("directory\n");
		fflush(stdout);
		if (strcmp(argv[2], "1") == 0) {
			char shown[PATH_MAX];
			snprintf(shown, sizeof(shown), "%s", p);
			return rm_tree(AT_FDCWD, p, shown, strlen(shown));
		}
		if (rmdir(p) == 0)
			return 0;
		return access(p, W_OK) == 0 ? EXIT_NOT_EMPTY : EXIT_DENIED;
	}
	printf("file\n");
	fflush(stdout);
	if (unlink(p) < 0 && errno != ENOENT) {
		fileop_say("rm: cannot remove '%s': %s", p, strerror(errno));
		return 1;
	}
	return 0;
}

/* What usage and roots have found so far (nftw's callback takes no argument). */
static struct {
	uint64_t bytes, entries, hidden;
	struct timespec since; /* usage: entries changed before this are the image's (or a checkpoint's) */
	ino_t *seen;	       /* usage: inodes of more than one link counted so far (a hash set) */
	size_t nseen;
	long long deadline_ms;	      /* usage: CLOCK_MONOTONIC ms past which it stops (0: none) */
	bool late;		      /* usage: it stopped there */
	uint64_t visits;	      /* usage: entries looked at, counted or not */
	dev_t devs[FILEOPS_DEVS_MAX]; /* usage: the filesystems its roots are on */
	unsigned ndevs;
	char root[PATH_MAX]; /* roots: the last one printed ("" before the first) */
	size_t root_len;
	unsigned nroots;
} walk;

/*
 * One entry: its blocks, at least FILEOPS_ENTRY_MIN (so that empty files,
 * which take inodes and no blocks, count too), once per inode, and only if
 * it changed since the session began (ctime, which no user can set back).
 * The bytes it counts, 0 if none.
 */
static uint64_t usage_count(const struct stat *st)
{
	if (st->st_ctim.tv_sec < walk.since.tv_sec ||
	    (st->st_ctim.tv_sec == walk.since.tv_sec && st->st_ctim.tv_nsec < walk.since.tv_nsec))
		return 0;
	/* linked twice, or deleted and open (its fds are found one by one) */
	if (st->st_nlink != 1 && !S_ISDIR(st->st_mode)) {
		/* open addressing in twice the slots it fills at most; inode 0 is never a file's */
		size_t i = (size_t)(st->st_ino * 0x9e3779b97f4a7c15ULL) & (2 * FILEOPS_LINKS_MAX - 1);
		while (walk.seen[i] && walk.seen[i] != st->st_ino)
			i = (i + 1) & (2 * FILEOPS_LINKS_MAX - 1);
		if (walk.seen[i])
			return 0;
		if (walk.nseen == FILEOPS_LINKS_MAX) {
			walk.hidden++; /* more linked files than it keeps track of: counts as hidden */
			return 0;
		}
		walk.seen[i] = st->st_ino;
		walk.nseen++;
	}
	uint64_t b = (uint64_t)st->st_blocks * 512;
	return b < FILEOPS_ENTRY_MIN ? FILEOPS_ENTRY_MIN : b;
}

static void usage_add(const struct stat *st)
{
	uint64_t b = usage_count(st);
	walk.bytes += b;
	walk.entries += b > 0;
}

/* Whether the walk is past its deadline (looked at every 256 entries: a clock read is not free). */
static bool usage_late(void)
{
	struct timespec ts;
	if (walk.late || !walk.deadline_ms || (++walk.visits & 255) != 0)
		return walk.late;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	walk.late = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 > walk.deadline_ms;
	return walk.late;
}

/*
 * Walks the folder open at fd (on device dev) depth levels down. What the
 * user may not read or search of its own, or of another's it may write, is
 * hidden; what vanished meanwhile is skipped; other mounts are not entered.
 */
static void usage_dir(int fd, dev_t dev, unsigned depth)
{
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		walk.hidden++;
		return;
	}
	for (struct dirent *de; !usage_late() && (de = readdir(d));) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				walk.hidden++; /* a folder it may read but not search */
			continue;
		}
		if (st.st_dev != dev)
			continue;
		usage_add(&st);
		if (!S_ISDIR(st.st_mode))
			continue;
		if (depth >= FILEOPS_DEPTH_MAX) {
			walk.hidden++;
			continue;
		}
		int cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0) {
			if (errno != ENOENT &&
			    (st.st_uid == geteuid() || faccessat(dirfd(d), de->d_name, W_OK, 0) == 0))
				walk.hidden++;
			continue;
		}
		usage_dir(cfd, dev, depth + 1);
	}
	closedir(d);
}

static bool usage_dev_known(dev_t dev)
{
	for (unsigned i = 0; i < walk.ndevs; i++)
		if (walk.devs[i] == dev)
			return true;
	return false;
}

/*
 * Files deleted while a process still holds them open: no folder shows
 * them and the engine's count of the layer leaves them out, yet their
 * blocks stay taken until the last close. Found through /proc/PID/fd of the
 * processes this user may look into (its own, and it can start no other
 * user's), counted as any file is (once, if changed since SINCE) when they
 * are on one of the roots' filesystems: not a pipe, a memfd or a tmpfs.
 */
static uint64_t usage_unlinked(void)
{
	uint64_t bytes = 0;
	DIR *proc = opendir("/proc");
	if (!proc)
		return 0;
	for (struct dirent *p; !usage_late() && (p = readdir(proc));) {
		char path[64];
		size_t n = strlen(p->d_name);
		if (p->d_name[0] < '1' || p->d_name[0] > '9' || n > 20 || strspn(p->d_name, "0123456789") != n)
			continue;
		snprintf(path, sizeof(path), "/proc/%.20s/fd", p->d_name);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		DIR *d = fd < 0 ? NULL : fdopendir(fd);
		if (!d) {
			if (fd >= 0)
				close(fd);
			continue; /* another user's, or gone */
		}
		for (struct dirent *de; !usage_late() && (de = readdir(d));) {
			struct stat st;
			/* follows the magic link to the open file, deleted or not */
			if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) < 0)
				continue;
			if (S_ISREG(st.st_mode) && st.st_nlink == 0 && usage_dev_known(st.st_dev))
				bytes += usage_count(&st);
		}
		closedir(d);
	}
	closedir(proc);
	return bytes;
}

/*
 * usage SINCE MS PATH...: the disk the trees under PATH take, each on its
 * own filesystem, counting what changed since SINCE ("@<seconds>.<ns>", the
 * container's creation, or a path made with it: its last change), within
 * MS ms (EXIT_TOO_LARGE past them), and the files on their filesystems
 * deleted but still open: "<bytes> <entries> <hidden> <unlinked>\n". The
 * disk guard's measure (sandbox/diskguard.c), which takes hidden as over
 * the cap.
 */
static int op_usage(int argc, char **argv)
{
	struct stat st;
	char *end;
	if (argc < 2)
		return EXIT_FAILED;
	memset(&walk, 0, sizeof(walk));
	/* "@SECONDS.NANOSECONDS" (the container's creation, as the engine says), or a path made with it */
	if (argv[1][0] == '@') {
		errno = 0;
		long long t = strtoll(argv[1] + 1, &end, 10);
		long ns = 0;
		if (!errno && *end == '.')
			ns = strtol(end + 1, &end, 10);
		if (errno || *end || end == argv[1] + 1 || ns < 0 || ns > 999999999)
			return EXIT_FAILED;
		walk.since = (struct timespec){ .tv_sec = (time_t)t, .tv_nsec = ns };
	} else if (stat(argv[1], &st) == 0) {
		walk.since = (struct timespec){ .tv_sec = st.st_ctime - 1 };
	} else {
		return EXIT_FAILED;
	}
	/* MS: how long it may walk (0: no end); past that it answers EXIT_TOO_LARGE, not a figure */
	errno = 0;
	long long ms = argc > 2 ? strtoll(argv[2], &end, 10) : -1;
	if (errno || ms < 0 || *end)
		return EXIT_FAILED;
	if (ms) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		walk.deadline_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + ms;
	}
	walk.seen = calloc(2 * FILEOPS_LINKS_MAX, sizeof(*walk.seen));
	if (!walk.seen)
		return EXIT_FAILED;
	for (int i = 3; i < argc && !walk.late; i++) {
		if (lstat(argv[i], &st) < 0) {
			if (errno != ENOENT)
				walk.hidden++;
			continue;
		}
		usage_add(&st);
		if (!usage_dev_known(st.st_dev) && walk.ndevs < FILEOPS_DEVS_MAX)
			walk.devs[walk.ndevs++] = st.st_dev;
		if (!S_ISDIR(st.st_mode))
			continue;
		int fd = open(argv[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			walk.hidden++;
		else
			usage_dir(fd, st.st_dev, 0);
	}
	uint64_t unlinked = walk.late ? 0 : usage_unlinked();
	free(walk.seen);
	if (walk.late)
		return EXIT_TOO_LARGE;
	printf("%llu %llu %llu %llu\n", (unsigned long long)walk.bytes, (unsigned long long)walk.entries,
	       (unsigned long long)walk.hidden, (unsigned long long)unlinked);
	return 0;
}

static int roots_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	if (flag != FTW_D)
		return 0;
	/* pre-order: a root's whole tree comes right after it */
	if (walk.root_len && strncmp(path, walk.root, walk.root_len) == 0 &&
	    (path[walk.root_len] == '/' || walk.root[walk.root_len - 1] == '/'))
		return 0;
	if (st->st_uid != geteuid() && access(path, W_OK) != 0)
		return 0;
	if (++walk.nroots > FILEOPS_ROOTS_MAX)
		return 1;
	walk.root_len = (size_t)snprintf(walk.root, sizeof(walk.root), "%s", path);
	printf("%s\n", path);
	return 0;
}

/*
 * roots PATH: the top-most folders under PATH, on its filesystem, that the
 * user may write or owns (so may make writable): everything it can add to
 * that filesystem lands under one of them. A line each; more than
 * FILEOPS_ROOTS_MAX ends it with EXIT_TOO_LARGE (walk PATH whole then).
 */
static int op_roots(int argc, char **argv)
{
	if (argc != 2)
		return EXIT_FAILED;
	memset(&walk, 0, sizeof(walk));
	int r = nftw(argv[1], roots_one, 32, FTW_PHYS | FTW_MOUNT);
	if (r == 1)
		return EXIT_TOO_LARGE;
	if (r < 0) {
		fileop_say("roots: %s: %s", argv[1], strerror(errno));
		return EXIT_FAILED;
	}
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} ops[] = {
	{ "read", op_read },	       { "write", op_write },	  { "list", op_list },	     { "delete", op_delete },
	{ "dropcheck", dropop_check }, { "place", dropop_place }, { "stage", dropop_stage }, { "clear", dropop_clear },
	{ "usage", op_usage },	       { "roots", op_roots },
};

bool fileop_known(const char *name)
{
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(name, ops[i].name) == 0)
			return true;
	return false;
}

int fileop_run(int argc, char **argv)
{
	for (size_t i = 0; argc > 0 && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (strcmp(argv[0], ops[i].name) == 0) {
			int code = ops[i].fn(argc, argv);
			if (fflush(NULL) != 0 && code == 0)
				code = EXIT_FAILED;
			return code;
		}
	return -1;
}
