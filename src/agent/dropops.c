/*
 * dropops.c - the agent's side of transfers through the drop (dropops.h,
 * docs/agent.md "Transfers through the drop").
 *
 * The engine extracts and reads as root, following symlinks, so it only
 * ever works inside a slot the user cannot name; these operations move
 * bytes between the slot and the user's paths as the user, so the kernel
 * decides what the user may write or read, as with the exec path's tar.
 * place and stage mirror upload_script and download_script (tool-host.c):
 * the same checks in the same order, the same exit codes.
 *
 * Every walk inside the slot and below the user's directory is relative to
 * directory fds, with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW: a symlink there is
 * moved or recreated, never followed. Walks stop at DROP_DEPTH_MAX levels.
 * Messages name the user's paths or names relative to the slot, never the
 * slot itself (its name is the secret that keeps the engine's root out of
 * the user's reach).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "agent/dropops.h"
#include "agent/fileops.h"

/* Deepest directory level a walk enters (the design's bound). */
#define DROP_DEPTH_MAX 256
/* rm's bound: the walks' levels, below the slot's t/ or f/ and BASE. */
#define DROP_RM_DEPTH_MAX (DROP_DEPTH_MAX + 2)
/* Bytes per read/write when copy_file_range cannot be used. */
#define DROP_CHUNK (64 * 1024)
/* Bytes per copy_file_range call. */
#define DROP_CFR_MAX (1u << 30)
/* Flags of every directory a walk opens. */
#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
/* Replaced files held open by one place, at most (hold_replaced). */
#define DROP_HELD_MAX 64
/* Smaller replaced files are freed at once: their pages cost nothing to free. */
#define DROP_HOLD_MIN (1 << 20)

/* place's replaced files, held until after the answer (hold_replaced, release_held). */
static int held[DROP_HELD_MAX];
static size_t nheld;

/* A path for messages, built while walking: the user's path, or a name relative to the slot. */
struct shown {
	char p[PATH_MAX];
	size_t n;
};

/* Called for each entry of a directory; 0, -1 (failed, said; the walk goes on) or -2 (stop). */
typedef int (*entry_fn)(int dirfd, const char *name, struct shown *sh, void *arg);

/* What a stage walk carries: the cap and the bytes staged so far. */
struct stage {
	uint64_t cap, total;
	const char *path; /* the user's PATH, for the too-large message */
	const char *slot; /* the slot's name: no staged symlink may carry it (copy_link) */
};

/* One level of a walk: where entries go and how deep it is. */
struct level {
	struct stage *sg; /* stage only */
	int to;		  /* the directory entries are moved, copied or staged into */
	int depth;
};

static bool one_name(const char *s);
static void shown_init(struct shown *sh, const char *s);
static bool shown_push(struct shown *sh, const char *name);
static int fail(const struct shown *sh, int e);
static int too_deep(const struct shown *sh);
static int each_entry(int fd, struct shown *sh, entry_fn fn, void *arg);
static int open_slot(const char *drop, const char *slot);
static int set_meta(int fd, const struct stat *st);
static int pwrite_all(int fd, const char *p, size_t n, off_t off);
static int copy_bytes(int in, int out, uint64_t len);
static int copy_file(int in, const struct stat *st, int dfd, const char *name, const struct shown *sh);
static int copy_link(int sfd, const char *name, int dfd, const char *secret, const struct shown *sh);
static int open_both(int sfd, int dfd, const char *name, int to_flags, int *to, int *from, const struct shown *sh);
static int copy_entry(int sfd, const char *name, int dfd, int depth, struct shown *sh);
static int copy_child(int fd, const char *name, struct shown *sh, void *arg);
static int merge_dir(int sfd, const char *name, int dfd, const struct stat *s, int depth, struct shown *sh);
static int move_entry(int sfd, const char *name, int dfd, int depth, struct shown *sh);
static void hold_replaced(int dfd, const char *name, const struct stat *t);
static void release_held(void);
static int move_child(int fd, const char *name, struct shown *sh, void *arg);
static int rm_child(int fd, const char *name, struct shown *sh, void *arg);
static int empty_slot(int slot);
static int check_dir(const char *path, bool last);
static int place_dest(const char *d, const char *b, bool overwrite, int *ret_fd);
static int link_or_copy(int fd, const struct stat *st, int tfd, const char *name, const struct shown *sh);
static int stage_file(int ufd, const char *name, int nofollow, int tfd, const char *tname, struct stage *sg,
		      const struct shown *sh);
static int stage_child(int fd, const char *name, struct shown *sh, void *arg);
static int stage_dir(int to, int from, const struct stat *st, struct stage *sg, int depth, struct shown *sh);
static int stage_code(int r);
static int stage_top_dir(int slot, int from, struct stage *sg, struct shown *sh);
static int stage_top_file(int slot, const char *p, struct stage *sg, struct shown *sh);

/* One path component: not empty, no '/', not "." or "..", at most NAME_MAX bytes. */
static bool one_name(const char *s)
{
	return s[0] && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 && strlen(s) <= NAME_MAX;
}

static void shown_init(struct shown *sh, const char *s)
{
	snprintf(sh->p, sizeof(sh->p), "%s", s);
	sh->n = strlen(sh->p);
}

/* Appends "/name" (or name to an empty path); false when it would pass PATH_MAX. */
static bool shown_push(struct shown *sh, const char *name)
{
	const char *sep = sh->n && sh->p[sh->n - 1] != '/' ? "/" : "";
	int k = snprintf(sh->p + sh->n, sizeof(sh->p) - sh->n, "%s%s", sep, name);
	if (k < 0 || (size_t)k >= sizeof(sh->p) - sh->n) {
		sh->p[sh->n] = '\0';
		return false;
	}
	sh->n += (size_t)k;
	return true;
}

/* Says "<path>: <reason>"; returns -1. */
static int fail(const struct shown *sh, int e)
{
	fileop_say("%s: %s", sh->n ? sh->p : ".", strerror(e));
	return -1;
}

/* Says a walk went past its bound; returns -1. */
static int too_deep(const struct shown *sh)
{
	fileop_say("%s: more than %d directory levels", sh->p, DROP_DEPTH_MAX);
	return -1;
}

/*
 * Calls fn for each entry of the directory fd (taken: closed here) with sh
 * extended by the entry's name. The worst result: 0, -1, or -2 (stopped at
 * the first -2).
 */
static int each_entry(int fd, struct shown *sh, entry_fn fn, void *arg)
{
	DIR *dir = fdopendir(fd);
	int worst = 0;

	if (!dir) {
		int e = errno;
		close(fd);
		return fail(sh, e);
	}
	while (worst != -2) {
		errno = 0;
		struct dirent *de = readdir(dir);
		if (!de) {
			if (errno)
				worst = fail(sh, errno);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		size_t n = sh->n;
		int r = shown_push(sh, de->d_name) ? fn(dirfd(dir), de->d_name, sh, arg) : fail(sh, ENAMETOOLONG);
		sh->n = n;
		sh->p[n] = '\0';
		worst = r < worst ? r : worst;
	}
	closedir(dir);
	return worst;
}

/* DROP/SLOT as a directory fd, or -1 with a message that names neither. */
static int open_slot(const char *drop, const char *slot)
{
	/* DROP is 0711: the user may pass through it, not read it */
	int dfd = open(drop, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = dfd < 0 ? -1 : openat(dfd, slot, DIR_FLAGS);
	if (fd < 0)
		fileop_say("the staged copy cannot be opened: %s", strerror(errno));
	if (dfd >= 0)
		close(dfd);
	return fd;
}

/* The mode (07777) and times of st onto fd, as tar -p keeps them. */
static int set_meta(int fd, const struct stat *st)
{
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	if (fchmod(fd, st->st_mode & 07777) < 0 || futimens(fd, ts) < 0)
		return -1;
	return 0;
}

static int pwrite_all(int fd, const char *p, size_t n, off_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			errno = w == 0 ? EIO : errno;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/*
 * Copies up to len bytes from the start of in to the start of out:
 * copy_file_range (in-kernel, reflinks where the filesystem can), then
 * pread/pwrite once it is refused (another filesystem on older kernels,
 * special files, seccomp). 0, or -1 with errno.
 */
static int copy_bytes(int in, int out, uint64_t len)
{
	static char buf[DROP_CHUNK];
	bool cfr = true;
	off_t off = 0;

	while (len > 0) {
		ssize_t k;
		if (cfr) {
			off_t oi = off, oo = off;
			k = copy_file_range(in, &oi, out, &oo, len < DROP_CFR_MAX ? (size_t)len : DROP_CFR_MAX, 0);
			if (k < 0 && errno != EINTR) {
				cfr = false;
				continue;
			}
		} else {
			k = pread(in, buf, len < sizeof(buf) ? (size_t)len : sizeof(buf), off);
			if (k > 0 && pwrite_all(out, buf, (size_t)k, off) < 0)
				return -1;
		}
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		if (k == 0)
			break; /* it shrank: what is there */
		off += k;
		len -= (uint64_t)k;
	}
	return 0;
}

/* A new file name in dfd with in's bytes (st->st_size at most), mode and times. */
static int copy_file(int in, const struct stat *st, int dfd, const char *name, const struct shown *sh)
{
	int out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return fail(sh, errno);
	int r = copy_bytes(in, out, (uint64_t)st->st_size) < 0 || set_meta(out, st) < 0 ? -1 : 0;
	int e = errno;
	if (close(out) < 0 && r == 0) {
		r = -1;
		e = errno;
	}
	if (r < 0) {
		unlinkat(dfd, name, 0);
		return fail(sh, e);
	}
	return 0;
}

/*
 * The symlink name in sfd made again in dfd (its target as it is, never
 * followed). A target holding secret (the slot's name) is left out: only
 * the kernel can make one, as the links of stage's own /proc/self/fd, and
 * the server would show it to the caller among the skipped entries.
 */
static int copy_link(int sfd, const char *name, int dfd, const char *secret, const struct shown *sh)
{
	char target[PATH_MAX];
	ssize_t k = readlinkat(sfd, name, target, sizeof(target));
	if (k < 0 || (size_t)k >= sizeof(target))
		return fail(sh, k < 0 ? errno : ENAMETOOLONG);
	target[k] = '\0';
	if (secret && strstr(target, secret)) {
		fileop_say("%s: a link into the staged copy, left out", sh->p);
		return -1;
	}
	if (symlinkat(target, dfd, name) < 0)
		return fail(sh, errno);
	return 0;
}

/* The directory name opened in dfd (with to_flags) and in sfd (to read): 0, or -1 said, neither left open. */
static int open_both(int sfd, int dfd, const char *name, int to_flags, int *to, int *from, const struct shown *sh)
{
	*to = openat(dfd, name, to_flags);
	*from = *to < 0 ? -1 : openat(sfd, name, DIR_FLAGS);
	if (*from >= 0)
		return 0;
	int e = errno;
	if (*to >= 0)
		close(*to);
	return fail(sh, e);
}

/* name copied from sfd into dfd, where it does not exist: dirs, files, symlinks; nothing else. */
static int copy_entry(int sfd, const char *name, int dfd, int depth, struct shown *sh)
{
	struct stat st;

	if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(sh, errno);
	if (S_ISLNK(st.st_mode))
		return copy_link(sfd, name, dfd, NULL, sh);
	if (S_ISREG(st.st_mode)) {
		int in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (in < 0)
			return fail(sh, errno);
		int r = copy_file(in, &st, dfd, name, sh);
		close(in);
		return r;
	}
	if (!S_ISDIR(st.st_mode))
		return 0;
	if (depth >= DROP_DEPTH_MAX)
		return too_deep(sh);
	/* 0700 while it is filled: the mode it should have may forbid writing */
	if (mkdirat(dfd, name, 0700) < 0)
		return fail(sh, errno);
	int to, from;
	if (open_both(sfd, dfd, name, DIR_FLAGS, &to, &from, sh) < 0)
		return -1;
	struct level lv = { .to = to, .depth = depth + 1 };
	int r = each_entry(from, sh, copy_child, &lv);
	if (set_meta(to, &st) < 0)
		r = fail(sh, errno);
	close(to);
	return r;
}

static int copy_child(int fd, const char *name, struct shown *sh, void *arg)
{
	const struct level *lv = arg;
	return copy_entry(fd, name, lv->to, lv->depth, sh);
}

/*
 * The directory name of sfd merged into the directory name of dfd, entry
 * by entry with move_entry's rule; then its mode and times set on the
 * target, as tar -x -p does for a directory that exists (best effort: the
 * user may not own it).
 */
static int merge_dir(int sfd, const char *name, int dfd, const struct stat *s, int depth, struct shown *sh)
{
	if (depth >= DROP_DEPTH_MAX)
		return too_deep(sh);
	int to, from;
	if (open_both(sfd, dfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, &to, &from, sh) < 0)
		return -1;
	struct level lv = { .to = to, .depth = depth + 1 };
	int r = each_entry(from, sh, move_child, &lv);
	struct timespec ts[2] = { s->st_atim, s->st_mtim };
	if (fchmodat(dfd, name, s->st_mode & 07777, 0) == 0)
		utimensat(dfd, name, ts, AT_SYMLINK_NOFOLLOW);
	close(to);
	return r;
}

/*
 * Moves name from sfd to dfd: rename when the target is absent or not a
 * directory (a file or symlink there is replaced, as tar -x replaces it);
 * a directory onto a directory is merged; anything onto an empty directory
 * replaces it; a file onto a non-empty one fails. EXDEV: copied instead
 * (the source goes with the slot's emptying).
 *
 * What is there is unlinked first, as tar -x and docker cp do. A rename
 * over an existing file costs far more on ext4: it is the replace-by-rename
 * idiom, and auto_da_alloc starts writing the new file back inside the
 * rename (30 ms for 50 MiB, strace). An exchange would avoid that too, but
 * it moves the old file into the slot, where a process that has it open
 * reads the slot's name in /proc, and on overlayfs it copies an image's
 * file up only to delete it.
 */
static int move_entry(int sfd, const char *name, int dfd, int depth, struct shown *sh)
{
	struct stat s, t;

	if (fstatat(sfd, name, &s, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(sh, errno);
	bool there = fstatat(dfd, name, &t, AT_SYMLINK_NOFOLLOW) == 0;
	if (there && S_ISDIR(t.st_mode) && S_ISDIR(s.st_mode))
		return merge_dir(sfd, name, dfd, &s, depth, sh);
	if (there) {
		hold_replaced(dfd, name, &t);
		if (unlinkat(dfd, name, S_ISDIR(t.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT) {
			if (errno == ENOTEMPTY || errno == EEXIST) {
				fileop_say("%s: cannot replace a non-empty directory with a file", sh->p);
				return -1;
			}
			return fail(sh, errno);
		}
	}
	if (renameat(sfd, name, dfd, name) == 0)
		return 0;
	if (errno != EXDEV)
		return fail(sh, errno);
	if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
		return fail(sh, errno);
	return copy_entry(sfd, name, dfd, depth, sh);
}

/*
 * A regular file about to lose its last name to place: held open (an
 * O_PATH fd keeps the inode), so that freeing its pages, 10-40 ms for 50
 * MiB, happens after the answer instead of inside the unlink.
 */
static void hold_replaced(int dfd, const char *name, const struct stat *t)
{
	if (!S_ISREG(t->st_mode) || t->st_size < DROP_HOLD_MIN || t->st_nlink != 1 || nheld == DROP_HELD_MAX)
		return;
	int fd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		held[nheld++] = fd;
}

/*
 * Lets go of the held files after place exits: a child closes them once
 * this process has gone (EOF on a pipe), so the last reference, and the
 * freeing, is the child's. It closes its stdio first: the agent waits for
 * the operation's output to end, not for the child. Without a pipe or a
 * child they are freed here, as a plain rename would.
 */
static void release_held(void)
{
	int p[2];

	if (nheld > 0 && pipe2(p, O_CLOEXEC) == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			char c;
			close(0);
			close(1);
			close(2);
			close(p[1]);
			while (read(p[0], &c, 1) < 0 && errno == EINTR)
				;
			for (size_t i = 0; i < nheld; i++)
				close(held[i]);
			_exit(0);
		}
		close(p[0]);
		/* p[1] stays open until this process exits: the child's cue */
		if (pid < 0)
			close(p[1]);
	}
	for (size_t i = 0; i < nheld; i++)
		close(held[i]);
	nheld = 0;
}

static int move_child(int fd, const char *name, struct shown *sh, void *arg)
{
	const struct level *lv = arg;
	return move_entry(fd, name, lv->to, lv->depth, sh);
}

/*
 * rm -rf of name in fd. Directories are made 0700 first: a staged or
 * uploaded one may have kept a mode that forbids removing what is inside.
 */
static int rm_child(int fd, const char *name, struct shown *sh, void *arg)
{
	int depth = *(const int *)arg, r = 0;
	struct stat st;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(sh, errno);
	if (S_ISDIR(st.st_mode)) {
		if (depth >= DROP_RM_DEPTH_MAX)
			return too_deep(sh);
		if ((st.st_mode & 0700) != 0700)
			fchmodat(fd, name, 0700, 0); /* a failure shows in openat */
		int sub = openat(fd, name, DIR_FLAGS);
		if (sub < 0)
			return fail(sh, errno);
		int next = depth + 1;
		r = each_entry(sub, sh, rm_child, &next);
	}
	if (unlinkat(fd, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
		return fail(sh, errno);
	return r;
}

/* Removes everything in the slot, not the slot. 0 or -1 (said, names relative to the slot). */
static int empty_slot(int slot)
{
	struct shown sh;
	int depth = 0;
	int fd = openat(slot, ".", DIR_FLAGS);

	shown_init(&sh, "");
	if (fd < 0)
		return fail(&sh, errno);
	return each_entry(fd, &sh, rm_child, &depth) < 0 ? -1 : 0;
}

/*
 * lstat's verdict on one directory of the drop's chain: 0, or -1 with the
 * reason said. The drop itself (last) must not be listable either: a user
 * who could read it would read the slots' names.
 */
static int check_dir(const char *path, bool last)
{
	struct stat st;
	const char *why = NULL;

	if (lstat(path, &st) < 0)
		why = strerror(errno);
	else if (S_ISLNK(st.st_mode))
		why = "a symbolic link";
	else if (!S_ISDIR(st.st_mode))
		why = "not a directory";
	else if (st.st_uid != 0)
		why = "not owned by root";
	else if (st.st_mode & 022)
		why = "writable by group or others";
	else if (last && (st.st_mode & 044))
		why = "readable by group or others (its slots could be listed)";
	if (!why)
		return 0;
	fileop_say("dropcheck: %s: %s", path, why);
	return -1;
}

/*
 * dropcheck DROP: /, every ancestor of DROP and DROP itself are
 * directories (not symlinks) owned by root and not writable by group or
 * others, and DROP not readable by them, so the user can neither swap the
 * way to a slot nor list the slots. Then
 * "<uid> <gid>\n", the owner the server gives the slots.
 */
int dropop_check(int argc, char **argv)
{
	char path[PATH_MAX];

	if (argc != 2 || argv[1][0] != '/' || strlen(argv[1]) >= sizeof(path) || strstr(argv[1], "//") ||
	    strstr(argv[1], "/./") || strstr(argv[1], "/../")) {
		fileop_say("dropcheck: the drop must be a normalised absolute path");
		return EXIT_FAILED;
	}
	strcpy(path, argv[1]);
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		path[--n] = '\0';
	if (check_dir("/", n == 1) < 0)
		return EXIT_DENIED;
	for (size_t i = 1; n > 1 && i <= n; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		path[i] = '\0';
		int r = check_dir(path, i >= n);
		path[i] = i < n ? '/' : '\0';
		if (r < 0)
			return EXIT_DENIED;
	}
	printf("%u %u\n", (unsigned)getuid(), (unsigned)getgid());
	return 0;
}

/* upload_script's checks on DESTDIR and BASE, in its order; 0 with the directory's fd, or the exit code. */
static int place_dest(const char *d, const char *b, bool overwrite, int *ret_fd)
{
	struct stat st;

	if ((stat(d, &st) < 0 || !S_ISDIR(st.st_mode)) && fileop_mkdir_p(d) < 0)
		return EXIT_NO_DIR;
	/* O_PATH: like cd, it needs search permission only; fchdir checks that */
	int fd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fchdir(fd) < 0) {
		fileop_say("cd: %s: %s", d, strerror(errno));
		if (fd >= 0)
			close(fd);
		return EXIT_NO_DIR;
	}
	int code = 0;
	if (faccessat(fd, ".", W_OK, 0) < 0)
		code = EXIT_DENIED;
	else if (fstatat(fd, b, &st, AT_SYMLINK_NOFOLLOW) == 0 && !overwrite)
		code = EXIT_EXISTS;
	if (code) {
		close(fd);
		return code;
	}
	*ret_fd = fd;
	return 0;
}

/* place DROP SLOT DESTDIR BASE OVERWRITE (dropops.h). */
int dropop_place(int argc, char **argv)
{
	struct shown sh;
	struct stat st;
	int dfd = -1;

	if (argc != 6 || !one_name(argv[2]) || !one_name(argv[4]) || argv[3][0] != '/')
		return EXIT_FAILED;
	int slot = open_slot(argv[1], argv[2]);
	if (slot < 0)
		return EXIT_FAILED;
	const char *base = argv[4];
	int code = place_dest(argv[3], base, strcmp(argv[5], "1") == 0, &dfd);
	if (code == 0 && fstatat(slot, base, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		fileop_say("the staged copy of %s is missing", base);
		code = EXIT_FAILED;
	}
	if (code == 0) {
		shown_init(&sh, argv[3]);
		if (!shown_push(&sh, base) || move_entry(slot, base, dfd, 0, &sh) < 0)
			code = EXIT_FAILED;
	}
	if (empty_slot(slot) < 0 && code == 0)
		code = EXIT_FAILED;
	if (dfd >= 0)
		close(dfd);
	close(slot);
	release_held();
	return code;
}

/*
 * The opened inode put in tfd as name: a hard link through /proc/self/fd
 * (the very inode the user could open, whatever the path points at now),
 * else (another filesystem, protected_hardlinks, EMLINK, no /proc) a copy
 * from the fd.
 */
static int link_or_copy(int fd, const struct stat *st, int tfd, const char *name, const struct shown *sh)
{
	char proc[48];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, tfd, name, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	return copy_file(fd, st, tfd, name, sh);
}

/*
 * Stages the regular file name of ufd as tname in tfd, opened as the user
 * (nofollow: O_NOFOLLOW inside a walk, 0 for the file asked for, as tar
 * -h). Unreadable: said, -1 (tar's exit 2). Past the cap: -2. Not a regular
 * file once opened (swapped meanwhile): skipped.
 */
static int stage_file(int ufd, const char *name, int nofollow, int tfd, const char *tname, struct stage *sg,
		      const struct shown *sh)
{
	struct stat st;
	int r = 0;

	int fd = openat(ufd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | nofollow);
	if (fd < 0) {
		fileop_say("%s: Cannot open: %s", sh->p, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		r = fail(sh, errno);
	} else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > sg->cap - sg->total) {
		fileop_say("%s: larger than %llu bytes", sg->path, (unsigned long long)sg->cap);
		r = -2;
	} else if (S_ISREG(st.st_mode)) {
		sg->total += (uint64_t)st.st_size;
		r = link_or_copy(fd, &st, tfd, tname, sh);
	}
	close(fd);
	return r;
}

/* One entry of a staged directory: dirs made and walked, files staged, symlinks made again; others skipped. */
static int stage_child(int fd, const char *name, struct shown *sh, void *arg)
{
	const struct level *lv = arg;
	struct stat st;

	if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return fail(sh, errno);
	if (S_ISLNK(st.st_mode))
		return copy_link(fd, name, lv->to, lv->sg->slot, sh);
	if (S_ISREG(st.st_mode))
		return stage_file(fd, name, O_NOFOLLOW, lv->to, name, lv->sg, sh);
	/* a fifo made again (the user may), so the server reports it skipped as the exec path's tar did */
	if (S_ISFIFO(st.st_mode))
		return mkfifoat(lv->to, name, st.st_mode & 0777) < 0 ? fail(sh, errno) : 0;
	if (!S_ISDIR(st.st_mode))
		return 0; /* sockets, devices: the server would skip them */
	if (lv->depth >= DROP_DEPTH_MAX)
		return too_deep(sh);
	if (mkdirat(lv->to, name, 0700) < 0)
		return fail(sh, errno);
	int to = openat(lv->to, name, DIR_FLAGS);
	if (to < 0)
		return fail(sh, errno);
	int r, from = openat(fd, name, DIR_FLAGS | O_NONBLOCK);
	if (from >= 0) {
		r = stage_dir(to, from, &st, lv->sg, lv->depth + 1, sh);
	} else {
		/* staged empty, with its mode, as tar archives a directory it cannot read */
		fileop_say("%s: Cannot open: %s", sh->p, strerror(errno));
		r = -1;
		set_meta(to, &st);
	}
	close(to);
	return r;
}

/* The entries of the user's directory from (taken) staged into to at depth, then to given st's mode and times. */
static int stage_dir(int to, int from, const struct stat *st, struct stage *sg, int depth, struct shown *sh)
{
	struct level lv = { .sg = sg, .to = to, .depth = depth };
	int r = each_entry(from, sh, stage_child, &lv);
	if (r != -2 && set_meta(to, st) < 0)
		r = fail(sh, errno);
	return r;
}

/* A result of a stage walk as the exit code: tar's 2 for a skipped entry, 27 past the cap. */
static int stage_code(int r)
{
	return r == 0 ? 0 : r == -2 ? EXIT_TOO_LARGE : EXIT_FAILED;
}

/* stage of a directory: its contents under SLOT/t; "d\n". from (taken) is the directory. */
static int stage_top_dir(int slot, int from, struct stage *sg, struct shown *sh)
{
	struct stat st;

	if (fstat(from, &st) < 0 || mkdirat(slot, "t", 0700) < 0) {
		close(from);
		return fail(sh, errno), EXIT_FAILED;
	}
	int to = openat(slot, "t", DIR_FLAGS);
	if (to < 0) {
		close(from);
		return fail(sh, errno), EXIT_FAILED;
	}
	int r = stage_dir(to, from, &st, sg, 0, sh);
	close(to);
	if (r != -2)
		printf("d\n");
	return stage_code(r);
}

/* stage of a regular file: SLOT/f/<base>; "f <base>\n". */
static int stage_top_file(int slot, const char *p, struct stage *sg, struct shown *sh)
{
	struct stat st;
	const char *base = strrchr(p, '/') + 1;

	if (!one_name(base))
		return EXIT_NOT_REGULAR;
	if (mkdirat(slot, "f", 0700) < 0)
		return fail(sh, errno), EXIT_FAILED;
	int to = openat(slot, "f", DIR_FLAGS);
	if (to < 0)
		return fail(sh, errno), EXIT_FAILED;
	int r = stage_file(AT_FDCWD, p, 0, to, base, sg, sh);
	/* it was swapped for something else than a regular file since the checks */
	if (r == 0 && fstatat(to, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		r = EXIT_NOT_REGULAR;
	close(to);
	if (r == EXIT_NOT_REGULAR)
		return r;
	if (r != -2)
		printf("f %s\n", base);
	return stage_code(r);
}

/*
 * stage DROP SLOT PATH CAP (dropops.h): download_script's checks in its
 * order (66, a directory or 77, 65, 77), the slot emptied of anything a
 * killed operation left, then the directory's contents or the file staged.
 */
int dropop_stage(int argc, char **argv)
{
	struct stage sg = { 0 };
	struct shown sh;
	struct stat st;
	int from = -1;

	if (argc != 5 || !one_name(argv[2]) || argv[3][0] != '/' || !fileop_parse_num(argv[4], &sg.cap))
		return EXIT_FAILED;
	const char *p = sg.path = argv[3];
	sg.slot = argv[2];
	if (stat(p, &st) < 0)
		return EXIT_NOT_FOUND;
	if (S_ISDIR(st.st_mode)) {
		/* follows a symlink to a directory, as cd does; fchdir checks search permission like cd */
		from = open(p, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
		if (from < 0 || fchdir(from) < 0) {
			fileop_say("cd: %s: %s", p, strerror(errno));
			if (from >= 0)
				close(from);
			return EXIT_DENIED;
		}
	} else if (!S_ISREG(st.st_mode)) {
		return EXIT_NOT_REGULAR;
	} else if (access(p, R_OK) < 0) {
		return EXIT_DENIED;
	}
	int slot = open_slot(argv[1], argv[2]);
	if (slot < 0 || empty_slot(slot) < 0) {
		if (from >= 0)
			close(from);
		if (slot >= 0)
			close(slot);
		return EXIT_FAILED;
	}
	shown_init(&sh, p);
	int code = from >= 0 ? stage_top_dir(slot, from, &sg, &sh) : stage_top_file(slot, p, &sg, &sh);
	close(slot);
	return code;
}

/* clear DROP SLOT: the slot emptied, kept. */
int dropop_clear(int argc, char **argv)
{
	if (argc != 3 || !one_name(argv[2]))
		return EXIT_FAILED;
	int slot = open_slot(argv[1], argv[2]);
	if (slot < 0)
		return EXIT_FAILED;
	int r = empty_slot(slot);
	close(slot);
	return r < 0 ? EXIT_FAILED : 0;
}
