/*
 * test-agent.c - the sandbox-mcp-agent binary driven on the host through
 * pipes, as the server drives it in a container: hello, a shell command
 * with stdin, stdout, stderr and its exit report, argv, a program that does
 * not exist, a second request while one runs, a kill of a whole process
 * group, a malformed frame and EOF on stdin (both kill the running group);
 * the built-in file operations ('B') on a scratch directory, with the exit
 * codes of the scripts they stand for; the transfers' dropcheck, place,
 * stage and clear on a scratch drop in the build directory (and /dev/shm,
 * a tmpfs, for the copy across filesystems), some of them as an
 * unprivileged uid when the test runs as root.
 * AGENT_BIN names the binary (meson sets it).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "agent/agentproto.h"

/* No frame takes longer than this on a loaded machine. */
#define WAIT_MS 20000

struct agent {
	pid_t pid;
	int to, from;
	struct agentproto f;
	char buf[1 << 16];
	size_t len, off;
};

struct frame {
	int type;
	char data[4096];
	size_t n;
};

/* Starts the agent, as uid (and gid) when uid is not -1 (the test is root then). */
static void start_as(struct agent *a, int uid)
{
	int in[2], out[2];
	const char *bin = getenv("AGENT_BIN");
	assert_non_null(bin);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	a->pid = fork();
	assert_true(a->pid >= 0);
	if (a->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (uid != -1 && (setgroups(0, NULL) < 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
				  setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
			_exit(126);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	a->to = in[1];
	a->from = out[0];
	a->len = a->off = 0;
	agentproto_init(&a->f, AGENTPROTO_TO_SERVER);
}

static void start(struct agent *a)
{
	start_as(a, -1);
}

static void send_frame(struct agent *a, int type, const char *p, size_t n)
{
	char hdr[AGENTPROTO_HEADER_LEN];
	agentproto_header(hdr, type, (uint32_t)n);
	assert_int_equal(write(a->to, hdr, sizeof(hdr)), sizeof(hdr));
	if (n)
		assert_int_equal(write(a->to, p, n), (ssize_t)n);
}

/* The next whole frame; type 0 at EOF. */
static void next(struct agent *a, struct frame *fr)
{
	fr->type = 0;
	fr->n = 0;
	for (;;) {
		while (a->off < a->len) {
			struct agentproto_piece pc;
			size_t used = 0;
			int r = agentproto_feed(&a->f, a->buf + a->off, a->len - a->off, &used, &pc);
			assert_int_not_equal(r, -1);
			a->off += used;
			if (r == -2)
				break;
			assert_true(fr->n + pc.n <= sizeof(fr->data));
			memcpy(fr->data + fr->n, pc.p, pc.n);
			fr->n += pc.n;
			if (pc.last) {
				fr->type = pc.type;
				fr->data[fr->n < sizeof(fr->data) ? fr->n : sizeof(fr->data) - 1] = '\0';
				return;
			}
		}
		a->len = a->off = 0;
		struct pollfd pfd = { .fd = a->from, .events = POLLIN };
		assert_int_equal(poll(&pfd, 1, WAIT_MS), 1);
		ssize_t n = read(a->from, a->buf, sizeof(a->buf));
		assert_true(n >= 0);
		if (n == 0)
			return;
		a->len = (size_t)n;
	}
}

/* Frames up to and including 'X' or 'F'; stdout and stderr collected (2048 bytes each). */
static int until_end(struct agent *a, char *out, char *err, struct frame *end)
{
	size_t no = 0, ne = 0;
	out[0] = err[0] = '\0';
	for (;;) {
		next(a, end);
		char *to = end->type == 'O' ? out : end->type == 'E' ? err : NULL;
		size_t *at = end->type == 'O' ? &no : &ne;
		if (to) {
			assert_true(*at + end->n < 2048);
			memcpy(to + *at, end->data, end->n);
			*at += end->n;
			to[*at] = '\0';
		} else if (end->type != 'P') {
			return end->type;
		}
	}
}

static int finish(struct agent *a)
{
	int st;
	char tmp[4096];
	close(a->to);
	/* read to EOF: an agent whose output cannot be delivered exits 1 instead */
	while (read(a->from, tmp, sizeof(tmp)) > 0)
		;
	close(a->from);
	assert_int_equal(waitpid(a->pid, &st, 0), a->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Asserts that process group pgid is gone. Killed members stay zombies
 * until whoever inherited them reaps them, so this waits up to WAIT_MS.
 */
static void gone(pid_t pgid)
{
	for (int i = 0; i < WAIT_MS / 10 && kill(-pgid, 0) == 0; i++)
		poll(NULL, 0, 10);
	assert_int_equal(kill(-pgid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

static void test_commands(void **state)
{
	struct agent a;
	struct frame fr;
	char out[2048], err[2048];
	static const char sh[] = "secho out; echo err >&2; cat; exit 3";
	static const char argv_req[] = "aprintf\0a%s|\0aa b\0a$X\0eX=no\0d/\0";
	static const char none[] = "a/nonexistent/program\0";

	start(&a);
	next(&a, &fr);
	assert_int_equal(fr.type, 'H');
	assert_memory_equal(fr.data, "sandbox-mcp-agent ", 18);

	send_frame(&a, 'R', sh, sizeof(sh));
	send_frame(&a, 'I', "in\n", 3);
	send_frame(&a, 'C', NULL, 0);
	assert_int_equal(until_end(&a, out, err, &fr), 'X');
	assert_string_equal(out, "out\nin\n");
	assert_string_equal(err, "err\n");
	struct agentproto_exit x;
	assert_int_equal(agentproto_parse_exit(fr.data, fr.n, &x), 0);
	assert_int_equal(x.code, 3);
	assert_true(x.maxrss_kb > 0);

	send_frame(&a, 'R', argv_req, sizeof(argv_req) - 1);
	send_frame(&a, 'C', NULL, 0);
	assert_int_equal(until_end(&a, out, err, &fr), 'X');
	assert_string_equal(out, "a b|$X|");

	send_frame(&a, 'R', none, sizeof(none) - 1);
	assert_int_equal(until_end(&a, out, err, &fr), 'F');
	assert_string_equal(fr.data, "2 exec");

	/* no field, two kinds at once, a field without its NUL: refused, the agent goes on */
	send_frame(&a, 'R', "", 0);
	assert_int_equal(until_end(&a, out, err, &fr), 'F');
	send_frame(&a, 'R', "strue\0atrue\0", 12);
	assert_int_equal(until_end(&a, out, err, &fr), 'F');
	send_frame(&a, 'R', "atrue", 5);
	assert_int_equal(until_end(&a, out, err, &fr), 'F');
	assert_int_equal(finish(&a), 0);
}

static void test_kill_busy_and_eof(void **state)
{
	struct agent a;
	struct frame fr;
	char out[2048], err[2048];
	static const char tree[] = "ssleep 300 & sleep 301 & echo $$; wait";

	start(&a);
	next(&a, &fr);
	send_frame(&a, 'R', tree, sizeof(tree));
	send_frame(&a, 'C', NULL, 0);
	next(&a, &fr);
	assert_int_equal(fr.type, 'P');
	pid_t pgid = (pid_t)atoi(fr.data);
	assert_true(pgid > 1);
	send_frame(&a, 'R', "atrue\0", 6);
	do
		next(&a, &fr); /* the shell's pid may come first */
	while (fr.type == 'O');
	assert_int_equal(fr.type, 'F');
	assert_string_equal(fr.data, "16 busy");
	send_frame(&a, 'K', NULL, 0);
	assert_int_equal(until_end(&a, out, err, &fr), 'X');
	assert_memory_equal(fr.data, "137 ", 4);
	gone(pgid);

	/* EOF on stdin kills the running group and ends the agent */
	send_frame(&a, 'R', tree, sizeof(tree));
	next(&a, &fr);
	assert_int_equal(fr.type, 'P');
	pgid = (pid_t)atoi(fr.data);
	assert_int_equal(finish(&a), 0);
	gone(pgid);
}

static void test_malformed(void **state)
{
	struct agent a;
	struct frame fr;
	static const char tree[] = "ssleep 300";

	start(&a);
	next(&a, &fr);
	send_frame(&a, 'R', tree, sizeof(tree));
	next(&a, &fr);
	assert_int_equal(fr.type, 'P');
	pid_t pgid = (pid_t)atoi(fr.data);
	assert_int_equal(write(a.to, "O\0\0\0\0", 5), 5); /* a type the agent never receives */
	next(&a, &fr);
	assert_int_equal(fr.type, 0); /* it ended */
	assert_int_equal(finish(&a), 2);
	gone(pgid);
}

/* Sends 'B' with the NUL-separated fields of fields[0..n) and 'C'; returns the exit code. */
static int builtin(struct agent *a, const char *const *args, const char *in, char *out, char *err)
{
	char req[4096];
	size_t len = 0;
	struct frame fr;
	for (const char *const *v = args; *v; v++)
		len += (size_t)snprintf(req + len, sizeof(req) - len, "a%s", *v) + 1;
	send_frame(a, 'B', req, len);
	if (in)
		send_frame(a, 'I', in, strlen(in));
	send_frame(a, 'C', NULL, 0);
	int t = until_end(a, out, err, &fr);
	if (t == 'F')
		return -1000 - atoi(fr.data);
	assert_int_equal(t, 'X');
	struct agentproto_exit x;
	assert_int_equal(agentproto_parse_exit(fr.data, fr.n, &x), 0);
	return x.code;
}

static void test_builtins(void **state)
{
	struct agent a;
	struct frame fr;
	char out[2048], err[2048], dir[64], sub[128], file[160], link[128], target[128];
	struct stat st;

	snprintf(dir, sizeof(dir), "/tmp/test-agent-%d", (int)getpid());
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	snprintf(file, sizeof(file), "%s/f.txt", sub);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(target, sizeof(target), "%s/target", dir);
	start(&a);
	next(&a, &fr);

	/* write makes the directories, sets the mode, refuses to overwrite when told */
	assert_int_equal(builtin(&a, (const char *[]){ "write", sub, "f.txt", "1", "1", "640", NULL }, "hello", out,
				 err),
			 0);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_size, 5);
	assert_int_equal(builtin(&a, (const char *[]){ "write", sub, "f.txt", "0", "1", "644", NULL }, "x", out, err),
			 68);
	/* replacing keeps the old mode unless one is given */
	assert_int_equal(builtin(&a, (const char *[]){ "write", sub, "f.txt", "1", "0", "644", NULL }, "hello", out,
				 err),
			 0);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(builtin(&a, (const char *[]){ "write", dir, "a", "1", "1", "644", NULL }, "x", out, err), 67);

	/* read: the head line, then the range; nothing past the cap; the scripts' codes */
	assert_int_equal(builtin(&a, (const char *[]){ "read", file, "1", "3", "100", NULL }, NULL, out, err), 0);
	assert_string_equal(out, "5 416\nell");
	assert_int_equal(builtin(&a, (const char *[]){ "read", file, "0", "18446744073709551615", "2", NULL }, NULL,
				 out, err),
			 0);
	assert_string_equal(out, "5 416\n");
	assert_int_equal(builtin(&a, (const char *[]){ "read", dir, "0", "1", "1", NULL }, NULL, out, err), 67);
	assert_int_equal(builtin(&a, (const char *[]){ "read", "/dev/null", "0", "1", "1", NULL }, NULL, out, err), 65);
	assert_int_equal(builtin(&a, (const char *[]){ "read", "/nonexistent/x", "0", "1", "1", NULL }, NULL, out, err),
			 66);

	/* a symlink as the name written is replaced, not followed */
	assert_int_equal(builtin(&a, (const char *[]){ "write", dir, "target", "1", "1", "600", NULL }, "keep", out,
				 err),
			 0);
	assert_int_equal(symlink(target, link), 0);
	assert_int_equal(builtin(&a, (const char *[]){ "write", dir, "link", "1", "1", "644", NULL }, "new", out, err),
			 0);
	assert_int_equal(lstat(link, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(builtin(&a, (const char *[]){ "read", target, "0", "100", "100", NULL }, NULL, out, err), 0);
	assert_string_equal(out, "4 384\nkeep");

	/* list: find's records, hidden names left out, depth kept */
	assert_int_equal(builtin(&a, (const char *[]){ "write", dir, ".hidden", "1", "1", "644", NULL }, "", out, err),
			 0);
	assert_int_equal(builtin(&a, (const char *[]){ "list", dir, "2", "0", NULL }, NULL, out, err), 0);
	size_t records = 0;
	bool saw_b = false, saw_file = false;
	for (const char *p = out; *p;) {
		const char *f[6];
		for (int k = 0; k < 6; k++) {
			f[k] = p;
			p += strlen(p) + 1;
		}
		records++;
		saw_b |= strcmp(f[5], "a/b") == 0 && f[0][0] == 'd';
		saw_file |= strcmp(f[5], "a/b/f.txt") == 0;
		assert_true(strchr("fdl", f[0][0]) != NULL);
		assert_null(strstr(f[5], "hidden"));
	}
	assert_int_equal(records, 4); /* a, a/b, link, target */
	assert_true(saw_b);
	assert_false(saw_file);
	assert_int_equal(builtin(&a, (const char *[]){ "list", file, "1", "0", NULL }, NULL, out, err), 0);
	assert_string_equal(out, "f");
	assert_string_equal(out + strlen(out) + 1, "5");
	assert_int_equal(builtin(&a, (const char *[]){ "list", "/nonexistent", "1", "0", NULL }, NULL, out, err), 66);

	/* delete: a non-empty directory needs recursive; then everything goes */
	char top[96];
	snprintf(top, sizeof(top), "%s/a", dir);
	assert_int_equal(builtin(&a, (const char *[]){ "delete", top, "0", NULL }, NULL, out, err), 39);
	assert_string_equal(out, "directory\n");
	assert_int_equal(builtin(&a, (const char *[]){ "delete", link, "0", NULL }, NULL, out, err), 0);
	assert_string_equal(out, "file\n");
	assert_int_equal(builtin(&a, (const char *[]){ "delete", dir, "1", NULL }, NULL, out, err), 0);
	assert_int_equal(lstat(dir, &st), -1);
	assert_int_equal(builtin(&a, (const char *[]){ "delete", dir, "0", NULL }, NULL, out, err), 66);

	/* no such operation, or a field a built-in does not take: refused, the agent goes on */
	assert_int_equal(builtin(&a, (const char *[]){ "chmod", dir, NULL }, NULL, out, err), -1000 - ENOSYS);
	send_frame(&a, 'B', "aread\0eX=1\0", 11);
	assert_int_equal(until_end(&a, out, err, &fr), 'F');
	assert_string_equal(fr.data, "22 request");
	assert_int_equal(finish(&a), 0);
}

/*
 * The drop (docs/agent.md "Transfers through the drop"): a scratch
 * directory in the build directory holds drop/ (0711) and one slot.
 */
#define SLOT "0123456789abcdef0123456789abcdef"
#define NOBODY 65534

struct drop {
	char base[PATH_MAX / 4], drop[PATH_MAX / 4], slot[PATH_MAX / 4];
};

static char *pathf(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *pathf(char *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(out, PATH_MAX, fmt, ap);
	va_end(ap);
	assert_true(n > 0 && n < PATH_MAX);
	return out;
}

static void set_times(const char *path, time_t mtime)
{
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };
	assert_int_equal(utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void mkfile(const char *path, const char *content, mode_t mode, time_t mtime)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
	if (mtime)
		set_times(path, mtime);
}

static void mkdir_mode(const char *path, mode_t mode)
{
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(chmod(path, mode), 0);
}

static void slurp(const char *path, char *out, size_t cap)
{
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	ssize_t n = read(fd, out, cap - 1);
	assert_true(n >= 0);
	out[n] = '\0';
	close(fd);
}

static size_t count_entries(const char *dir)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	assert_non_null(d);
	for (struct dirent *de; (de = readdir(d));)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A fresh directory (0755) in dir (the build directory when NULL); its absolute path. */
static void scratch(char *out, size_t cap, const char *dir)
{
	char cwd[PATH_MAX];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_true((size_t)snprintf(out, cap, "%s/drop-test-XXXXXX", dir ? dir : cwd) < cap);
	assert_non_null(mkdtemp(out));
	assert_int_equal(chmod(out, 0755), 0);
}

/* base/drop (root's, 0711) and base/drop/SLOT (the agent's uid, 0700). */
static void drop_init(struct drop *d, int uid)
{
	scratch(d->base, sizeof(d->base), NULL);
	snprintf(d->drop, sizeof(d->drop), "%s/drop", d->base);
	snprintf(d->slot, sizeof(d->slot), "%s/%s", d->drop, SLOT);
	mkdir_mode(d->drop, 0711);
	mkdir_mode(d->slot, 0700);
	if (uid != -1)
		assert_int_equal(chown(d->slot, (uid_t)uid, (gid_t)uid), 0);
}

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];
	assert_true((size_t)snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path) < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/* A drop operation: its exit code; stderr never names the slot. */
static int dropop(struct agent *a, const char *const *args, char *out, char *err)
{
	int code = builtin(a, args, NULL, out, err);
	assert_null(strstr(err, SLOT));
	return code;
}

/* True when path and each of its ancestors pass dropcheck's rules (the build directory may not). */
static bool chain_ok(const char *path)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p + strlen(p); s > p; s = strrchr(p, '/')) {
		*s = '\0';
		if (lstat(*p ? p : "/", &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
			return false;
	}
	return true;
}

static void test_dropcheck(void **state)
{
	struct agent a;
	struct frame fr;
	char out[2048], err[2048], base[PATH_MAX], p[PATH_MAX], q[PATH_MAX], want[64];

	scratch(base, sizeof(base), NULL);
	mkdir_mode(pathf(p, "%s/a", base), 0755);
	mkdir_mode(pathf(p, "%s/a/b", base), 0711);
	/* when the build directory's own chain fails, only the exit codes can be checked */
	bool good = getuid() == 0 && chain_ok(base);
	start(&a);
	next(&a, &fr);
	if (good) {
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(p, "%s/a/b", base), NULL }, out, err),
				 0);
		snprintf(want, sizeof(want), "%u %u\n", (unsigned)getuid(), (unsigned)getgid());
		assert_string_equal(out, want);
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(p, "%s/a/b/", base), NULL }, out, err),
				 0);
	} else {
		print_message("# dropcheck: the good chain needs root and a build directory only root can write\n");
	}
	/* group-writable, a symlink, a file, missing: each named with its reason */
	assert_int_equal(chmod(pathf(p, "%s/a", base), 0775), 0);
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(q, "%s/a/b", base), NULL }, out, err), 77);
	assert_true(!good || strstr(err, "/a: writable by group or others"));
	assert_string_equal(out, "");
	assert_int_equal(chmod(p, 0755), 0);
	assert_int_equal(symlink("a", pathf(p, "%s/l", base)), 0);
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(q, "%s/l/b", base), NULL }, out, err), 77);
	assert_true(!good || strstr(err, "/l: a symbolic link"));
	mkfile(pathf(p, "%s/a/f", base), "", 0644, 0);
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", p, NULL }, out, err), 77);
	assert_true(!good || strstr(err, "not a directory"));
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(p, "%s/none", base), NULL }, out, err), 77);
	if (good) {
		assert_int_equal(chown(pathf(p, "%s/a/b", base), NOBODY, NOBODY), 0);
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", p, NULL }, out, err), 77);
		assert_non_null(strstr(err, "/a/b: not owned by root"));
	}
	/* the drop listable by others (its slots' names readable): refused; its ancestors may be */
	if (good) {
		assert_int_equal(chown(pathf(p, "%s/a/b", base), 0, 0), 0);
		assert_int_equal(chmod(p, 0751), 0);
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", p, NULL }, out, err), 77);
		assert_non_null(strstr(err, "/a/b: readable by group or others"));
		assert_int_equal(chmod(p, 0711), 0);
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", p, NULL }, out, err), 0);
	}
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", "relative/drop", NULL }, out, err), 2);
	if (good)
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", "/", NULL }, out, err), 77);
	assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", pathf(p, "%s/a/../a/b", base), NULL }, out, err), 2);
	assert_int_equal(finish(&a), 0);
	rm_rf(base);
}

static void assert_meta(const char *path, mode_t type, mode_t mode, time_t mtime)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_mode & S_IFMT, type);
	assert_int_equal(st.st_mode & 07777, mode);
	if (mtime)
		assert_int_equal(st.st_mtim.tv_sec, mtime);
}

static void assert_link(const char *path, const char *target)
{
	char buf[PATH_MAX];
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_string_equal(buf, target);
}

/* In the slot, as the engine's PUT leaves it: BASE "d" with modes, times, a file and a symlink to outside. */
static void put_tree(const struct drop *d, const char *outside)
{
	char p[PATH_MAX];
	mkdir_mode(pathf(p, "%s/d", d->slot), 0750);
	mkdir_mode(pathf(p, "%s/d/sub", d->slot), 0705);
	mkfile(pathf(p, "%s/d/sub/x", d->slot), "x1", 0604, 1000000001);
	set_times(pathf(p, "%s/d/sub", d->slot), 1000000002);
	assert_int_equal(symlink(outside, pathf(p, "%s/d/out", d->slot)), 0);
	set_times(pathf(p, "%s/d", d->slot), 1000000003);
}

/* The tree put_tree made, now in dir/d; outside (a directory) left as it was. */
static void assert_tree(const char *dir, const char *outside)
{
	char p[PATH_MAX];
	assert_meta(pathf(p, "%s/d", dir), S_IFDIR, 0750, 1000000003);
	assert_meta(pathf(p, "%s/d/sub", dir), S_IFDIR, 0705, 1000000002);
	assert_meta(pathf(p, "%s/d/sub/x", dir), S_IFREG, 0604, 1000000001);
	slurp(p, p, sizeof(p));
	assert_string_equal(p, "x1");
	assert_meta(pathf(p, "%s/d/out", dir), S_IFLNK, 0777, 0);
	assert_link(p, outside);
	assert_int_equal(count_entries(outside), 1);
}

static void place_ok(struct agent *a, const struct drop *d, const char *dest, const char *base, const char *ow)
{
	char out[2048], err[2048];
	assert_int_equal(dropop(a, (const char *[]){ "place", d->drop, SLOT, dest, base, ow, NULL }, out, err), 0);
	assert_string_equal(out, "");
	assert_int_equal(count_entries(d->slot), 0);
}

/* New, refused, replaced, merged, made, a file onto a non-empty directory; the slot emptied every time. */
static void place_cases(struct agent *a, const struct drop *d, const char *dest, const char *outside)
{
	char out[2048], err[2048], p[PATH_MAX];

	mkfile(pathf(p, "%s/f1", d->slot), "hello", 0640, 1000000000);
	place_ok(a, d, dest, "f1", "0");
	assert_meta(pathf(p, "%s/f1", dest), S_IFREG, 0640, 1000000000);
	mkfile(pathf(p, "%s/f1", d->slot), "new", 0600, 0);
	assert_int_equal(dropop(a, (const char *[]){ "place", d->drop, SLOT, dest, "f1", "0", NULL }, out, err), 68);
	assert_int_equal(count_entries(d->slot), 0);
	slurp(pathf(p, "%s/f1", dest), p, sizeof(p));
	assert_string_equal(p, "hello");
	mkfile(pathf(p, "%s/f1", d->slot), "new", 0600, 0);
	/* whoever has the replaced file open never sees the slot's name in /proc (it is the drop's secret) */
	int old = open(pathf(p, "%s/f1", dest), O_RDONLY | O_CLOEXEC);
	assert_true(old >= 0);
	place_ok(a, d, dest, "f1", "1");
	char seen[PATH_MAX];
	ssize_t ln = readlink(pathf(p, "/proc/self/fd/%d", old), seen, sizeof(seen) - 1);
	assert_true(ln > 0);
	seen[ln] = '\0';
	assert_null(strstr(seen, SLOT));
	close(old);
	slurp(pathf(p, "%s/f1", dest), p, sizeof(p));
	assert_string_equal(p, "new");

	/* a tree; its symlink to a directory outside is moved as a symlink, never followed */
	put_tree(d, outside);
	place_ok(a, d, dest, "d", "0");
	assert_tree(dest, outside);
	/* merged into the tree: x replaced, new names added, old ones kept */
	mkdir_mode(pathf(p, "%s/d", d->slot), 0755);
	mkdir_mode(pathf(p, "%s/d/sub", d->slot), 0705);
	mkfile(pathf(p, "%s/d/sub/x", d->slot), "x2", 0600, 0);
	mkfile(pathf(p, "%s/d/y", d->slot), "y", 0600, 0);
	assert_int_equal(symlink(outside, pathf(p, "%s/d/out2", d->slot)), 0);
	place_ok(a, d, dest, "d", "1");
	slurp(pathf(p, "%s/d/sub/x", dest), p, sizeof(p));
	assert_string_equal(p, "x2");
	assert_meta(pathf(p, "%s/d/y", dest), S_IFREG, 0600, 0);
	assert_meta(pathf(p, "%s/d/out", dest), S_IFLNK, 0777, 0);
	assert_link(pathf(p, "%s/d/out2", dest), outside);
	assert_meta(pathf(p, "%s/d", dest), S_IFDIR, 0755, 0);
	assert_int_equal(count_entries(outside), 1);

	/* BASE itself a symlink to a directory outside: moved as a symlink onto the file there */
	assert_int_equal(symlink(outside, pathf(p, "%s/f1", d->slot)), 0);
	place_ok(a, d, dest, "f1", "1");
	assert_link(pathf(p, "%s/f1", dest), outside);
	assert_int_equal(count_entries(outside), 1);
	/* and a file onto that symlink: the link replaced, never followed */
	mkfile(pathf(p, "%s/f1", d->slot), "back", 0644, 0);
	place_ok(a, d, dest, "f1", "1");
	assert_meta(pathf(p, "%s/f1", dest), S_IFREG, 0644, 0);
	assert_int_equal(count_entries(outside), 1);
	/* a replaced file's other hard link keeps the old content */
	assert_int_equal(link(pathf(p, "%s/f1", dest), pathf(out, "%s/f1-other", dest)), 0);
	mkfile(pathf(p, "%s/f1", d->slot), "newer", 0644, 0);
	place_ok(a, d, dest, "f1", "1");
	slurp(pathf(p, "%s/f1", dest), p, sizeof(p));
	assert_string_equal(p, "newer");
	slurp(pathf(p, "%s/f1-other", dest), p, sizeof(p));
	assert_string_equal(p, "back");
	assert_int_equal(unlink(pathf(p, "%s/f1-other", dest)), 0);

	/* a file onto a non-empty directory: refused, said, the slot emptied; onto an empty one: replaced */
	mkfile(pathf(p, "%s/d", d->slot), "f", 0644, 0);
	assert_int_equal(dropop(a, (const char *[]){ "place", d->drop, SLOT, dest, "d", "1", NULL }, out, err), 2);
	assert_non_null(strstr(err, "/d: cannot replace a non-empty directory with a file"));
	assert_int_equal(count_entries(d->slot), 0);
	mkdir_mode(pathf(p, "%s/e", dest), 0755);
	mkfile(pathf(p, "%s/e", d->slot), "e", 0644, 0);
	place_ok(a, d, dest, "e", "1");
	assert_meta(pathf(p, "%s/e", dest), S_IFREG, 0644, 0);

	/* DESTDIR missing: made, as mkdir -p */
	mkfile(pathf(p, "%s/g", d->slot), "g", 0644, 0);
	place_ok(a, d, pathf(p, "%s/new/deeper", dest), "g", "0");
	assert_meta(pathf(p, "%s/new/deeper/g", dest), S_IFREG, 0644, 0);
}

/*
 * A big file replaced: place answers before the old file's pages are freed
 * (held open by a child of its own, dropops.c's hold_replaced), and that
 * child lets go of it soon after: no process keeps it.
 */
static void replace_big(struct agent *a, const struct drop *d, const char *dest)
{
	char p[PATH_MAX], big[2 << 20];
	struct stat old;
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	mkfile(pathf(p, "%s/big", dest), big, 0644, 0);
	assert_int_equal(stat(p, &old), 0);
	big[0] = 'b';
	mkfile(pathf(p, "%s/big", d->slot), big, 0644, 0);
	place_ok(a, d, dest, "big", "1");
	slurp(pathf(p, "%s/big", dest), p, 2);
	assert_string_equal(p, "b");
	assert_true(inode_let_go(old.st_dev, old.st_ino));
}

static void test_place(void **state)
{
	struct agent a;
	struct frame fr;
	struct drop d;
	struct stat st, shm;
	char out[2048], err[2048], dest[PATH_MAX], outside[PATH_MAX], p[PATH_MAX];

	drop_init(&d, -1);
	mkdir_mode(pathf(dest, "%s/dest", d.base), 0755);
	mkdir_mode(pathf(outside, "%s/outside", d.base), 0755);
	mkfile(pathf(p, "%s/keep", outside), "keep", 0644, 0);
	start(&a);
	next(&a, &fr);
	place_cases(&a, &d, dest, outside);
	replace_big(&a, &d, dest);

	/* bad names and a missing staged copy: 2, nothing named but BASE */
	assert_int_equal(dropop(&a, (const char *[]){ "place", d.drop, "../x", dest, "f", "0", NULL }, out, err), 2);
	assert_int_equal(dropop(&a, (const char *[]){ "place", d.drop, SLOT, dest, "a/b", "0", NULL }, out, err), 2);
	assert_int_equal(dropop(&a, (const char *[]){ "place", d.drop, SLOT, dest, "none", "0", NULL }, out, err), 2);
	assert_non_null(strstr(err, "staged copy of none is missing"));
	assert_null(strstr(err, d.drop));

	/* across filesystems (/dev/shm, a tmpfs): copied, the same cases give the same results */
	if (stat("/dev/shm", &shm) == 0 && stat(d.base, &st) == 0 && shm.st_dev != st.st_dev) {
		char shmdir[PATH_MAX];
		scratch(shmdir, sizeof(shmdir), "/dev/shm");
		place_cases(&a, &d, shmdir, outside);
		rm_rf(shmdir);
	} else {
		print_message("# place: no second filesystem at /dev/shm, the copy path is not tested\n");
	}
	assert_int_equal(finish(&a), 0);
	rm_rf(d.base);
}

/* A directory to stage: a file, a subdirectory with one, a symlink out, a fifo. */
static void put_src(const char *src)
{
	char p[PATH_MAX];
	mkdir_mode(src, 0755);
	mkfile(pathf(p, "%s/a", src), "hello", 0640, 1000000010);
	mkdir_mode(pathf(p, "%s/sub", src), 0750);
	mkfile(pathf(p, "%s/sub/b", src), "bb", 0600, 1000000011);
	set_times(pathf(p, "%s/sub", src), 1000000012);
	assert_int_equal(symlink("/etc/passwd", pathf(p, "%s/ln", src)), 0);
	assert_int_equal(mkfifo(pathf(p, "%s/p", src), 0644), 0);
}

/* src's file name staged as staged: linked (the same inode) when same_inode, else a copy with its mode and times. */
static void assert_staged(const char *src, const char *staged, bool same_inode)
{
	struct stat a, b;
	char x[64], y[64];
	assert_int_equal(stat(src, &a), 0);
	assert_int_equal(lstat(staged, &b), 0);
	assert_true(S_ISREG(b.st_mode));
	assert_int_equal(a.st_ino == b.st_ino && a.st_dev == b.st_dev, same_inode);
	assert_int_equal(b.st_mode & 07777, a.st_mode & 07777);
	assert_int_equal(b.st_mtim.tv_sec, a.st_mtim.tv_sec);
	slurp(src, x, sizeof(x));
	slurp(staged, y, sizeof(y));
	assert_string_equal(x, y);
}

/* The symlinks in dir, asserting that none has a target holding secret. */
static int links_without(const char *dir, const char *secret)
{
	DIR *dp = opendir(dir);
	int n = 0;
	assert_non_null(dp);
	for (struct dirent *de; (de = readdir(dp));) {
		char t[PATH_MAX];
		ssize_t k = readlinkat(dirfd(dp), de->d_name, t, sizeof(t) - 1);
		if (k < 0)
			continue;
		t[k] = '\0';
		assert_null(strstr(t, secret));
		n++;
	}
	closedir(dp);
	return n;
}

/* Stages src (made by put_src) and checks the slot; linked: hard links expected. */
static void stage_dir_case(struct agent *a, const struct drop *d, const char *src, bool linked)
{
	char out[2048], err[2048], p[PATH_MAX], q[PATH_MAX];

	assert_int_equal(dropop(a, (const char *[]){ "stage", d->drop, SLOT, src, "1000", NULL }, out, err), 0);
	assert_string_equal(out, "d\n");
	assert_staged(pathf(p, "%s/a", src), pathf(q, "%s/t/a", d->slot), linked);
	assert_staged(pathf(p, "%s/sub/b", src), pathf(q, "%s/t/sub/b", d->slot), linked);
	assert_meta(pathf(p, "%s/t/sub", d->slot), S_IFDIR, 0750, 1000000012);
	assert_link(pathf(p, "%s/t/ln", d->slot), "/etc/passwd");
	/* a, sub, ln and the fifo made again (the server reports it skipped, as tar's stream did) */
	assert_int_equal(count_entries(pathf(p, "%s/t", d->slot)), 4);
	assert_meta(pathf(p, "%s/t/p", d->slot), S_IFIFO, 0644, 0);
	assert_int_equal(dropop(a, (const char *[]){ "clear", d->drop, SLOT, NULL }, out, err), 0);
	assert_int_equal(count_entries(d->slot), 0);
	assert_int_equal(count_entries(src), 4);
}

static void test_stage_clear(void **state)
{
	struct agent a;
	struct frame fr;
	struct drop d;
	struct stat st, shm;
	char out[2048], err[2048], src[PATH_MAX], p[PATH_MAX], q[PATH_MAX];

	drop_init(&d, -1);
	put_src(pathf(src, "%s/src", d.base));
	start(&a);
	next(&a, &fr);
	stage_dir_case(&a, &d, src, true);

	/* a file, and a symlink to one (followed, as tar -h does) */
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, pathf(p, "%s/a", src), "5", NULL }, out,
				err),
			 0);
	assert_string_equal(out, "f a\n");
	assert_staged(p, pathf(q, "%s/f/a", d.slot), true);
	assert_int_equal(symlink(pathf(q, "%s/a", src), pathf(p, "%s/la", d.base)), 0);
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, p, "5", NULL }, out, err), 0);
	assert_string_equal(out, "f la\n");
	assert_staged(pathf(p, "%s/a", src), pathf(q, "%s/f/la", d.slot), true);
	assert_int_equal(count_entries(d.slot), 1); /* stage empties what was left first */

	/* missing, a fifo, a device: the script's codes */
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, pathf(p, "%s/none", src), "5", NULL }, out,
				err),
			 66);
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, pathf(p, "%s/p", src), "5", NULL }, out,
				err),
			 65);
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, "/dev/null", "5", NULL }, out, err), 65);

	/* over the cap: 27, nothing on stdout */
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, pathf(p, "%s/a", src), "4", NULL }, out,
				err),
			 27);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "larger than 4 bytes"));
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, src, "6", NULL }, out, err), 27);
	assert_string_equal(out, "");
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, src, "7", NULL }, out, err), 0);

	/* clear: modes that forbid removing are no obstacle; the slot stays */
	mkdir_mode(pathf(p, "%s/t/sub/locked", d.slot), 0755);
	mkfile(pathf(p, "%s/t/sub/locked/z", d.slot), "z", 0000, 0);
	assert_int_equal(chmod(pathf(p, "%s/t/sub/locked", d.slot), 0000), 0);
	assert_int_equal(dropop(&a, (const char *[]){ "clear", d.drop, SLOT, NULL }, out, err), 0);
	assert_int_equal(count_entries(d.slot), 0);
	assert_int_equal(stat(d.slot, &st), 0);

	/*
	 * stage's own /proc/self/fd: the links to the slot it holds open are
	 * left out (said, exit 2), the others made again: the slot's name must
	 * not reach the caller through a skipped link's target.
	 */
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, "/proc/self/fd", "5", NULL }, out, err),
			 2);
	assert_string_equal(out, "d\n");
	assert_non_null(strstr(err, "a link into the staged copy, left out"));
	assert_null(strstr(err, SLOT));
	assert_true(links_without(pathf(p, "%s/t", d.slot), SLOT) >= 3); /* 0, 1 and 2 at least */
	assert_int_equal(dropop(&a, (const char *[]){ "clear", d.drop, SLOT, NULL }, out, err), 0);

	/* from another filesystem: copies with modes and times */
	if (stat("/dev/shm", &shm) == 0 && shm.st_dev != st.st_dev) {
		char shmdir[PATH_MAX];
		scratch(shmdir, sizeof(shmdir), "/dev/shm");
		put_src(pathf(p, "%s/src", shmdir));
		stage_dir_case(&a, &d, p, false);
		rm_rf(shmdir);
	} else {
		print_message("# stage: no second filesystem at /dev/shm, the copy path is not tested\n");
	}
	assert_int_equal(finish(&a), 0);
	rm_rf(d.base);
}

/* Past DROP_DEPTH_MAX (256) levels: exit 2, what fits is staged, clear still empties the slot. */
static void test_stage_depth(void **state)
{
	struct agent a;
	struct frame fr;
	struct drop d;
	char out[2048], err[2048], p[PATH_MAX];

	drop_init(&d, -1);
	mkdir_mode(pathf(p, "%s/deep", d.base), 0755);
	int fd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	for (int i = 0; i < 300; i++) {
		assert_int_equal(mkdirat(fd, "d", 0755), 0);
		int sub = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		assert_true(sub >= 0);
		close(fd);
		fd = sub;
	}
	close(fd);
	start(&a);
	next(&a, &fr);
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, p, "0", NULL }, out, err), 2);
	assert_string_equal(out, "d\n");
	assert_non_null(strstr(err, "more than 256 directory levels"));
	assert_int_equal(dropop(&a, (const char *[]){ "clear", d.drop, SLOT, NULL }, out, err), 0);
	assert_int_equal(count_entries(d.slot), 0);
	assert_int_equal(finish(&a), 0);
	rm_rf(d.base);
}

static bool protected_hardlinks(void)
{
	char v[8] = "";
	int fd = open("/proc/sys/fs/protected_hardlinks", O_RDONLY);
	if (fd >= 0) {
		ssize_t n = read(fd, v, sizeof(v) - 1);
		v[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	return v[0] == '1';
}

/* True when others may search every directory down to path's parent (uid 65534 must reach the build directory). */
static bool others_reach(const char *path)
{
	char p[PATH_MAX];
	struct stat st;
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = strrchr(p, '/'); s && s > p; s = strrchr(p, '/')) {
		*s = '\0';
		if (stat(p, &st) < 0 || !(st.st_mode & S_IXOTH))
			return false;
	}
	return true;
}

/* The owner of /proc/pid/fd: root's when pid is not dumpable. */
static uid_t proc_owner(pid_t pid)
{
	char p[64];
	struct stat st;
	snprintf(p, sizeof(p), "/proc/%d/fd", (int)pid);
	assert_int_equal(stat(p, &st), 0);
	return st.st_uid;
}

/* As an unprivileged uid: not dumpable, the uid reported, 77 where it may not write, unreadable files skipped. */
static void test_drop_unprivileged(void **state)
{
	struct agent a;
	struct frame fr;
	struct drop d;
	char out[2048], err[2048], p[PATH_MAX], q[PATH_MAX], src[PATH_MAX];

	if (getuid() != 0) {
		print_message("# drop as another uid: needs root to switch; not tested\n");
		return;
	}
	drop_init(&d, NOBODY);
	if (!others_reach(d.slot) || !others_reach(getenv("AGENT_BIN"))) {
		print_message("# drop as another uid: needs a build directory others can reach; not tested\n");
		rm_rf(d.base);
		return;
	}
	start_as(&a, NOBODY);
	next(&a, &fr);
	pid_t pid = (pid_t)atoi(strrchr(fr.data, ' ') + 1);
	assert_int_equal(proc_owner(pid), 0);
	/* a command it runs is dumpable again (execve) */
	static const char sleep_req[] = "asleep\0a30\0";
	send_frame(&a, 'R', sleep_req, sizeof(sleep_req) - 1);
	next(&a, &fr);
	assert_int_equal(fr.type, 'P');
	assert_int_equal(proc_owner((pid_t)atoi(fr.data)), NOBODY);
	send_frame(&a, 'K', NULL, 0);
	assert_int_equal(until_end(&a, out, err, &fr), 'X');

	if (chain_ok(d.drop)) {
		assert_int_equal(dropop(&a, (const char *[]){ "dropcheck", d.drop, NULL }, out, err), 0);
		assert_string_equal(out, "65534 65534\n");
	}
	mkfile(pathf(p, "%s/f", d.slot), "f", 0644, 0);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	assert_int_equal(dropop(&a, (const char *[]){ "place", d.drop, SLOT, d.base, "f", "0", NULL }, out, err), 77);
	assert_int_equal(count_entries(d.slot), 0);

	mkdir_mode(pathf(src, "%s/src", d.base), 0755);
	assert_int_equal(chown(src, NOBODY, NOBODY), 0);
	mkfile(pathf(p, "%s/ok", src), "ok", 0644, 0);
	assert_int_equal(chown(p, NOBODY, NOBODY), 0);
	mkfile(pathf(p, "%s/secret", src), "s", 0600, 0);
	mkfile(pathf(p, "%s/rootread", src), "r", 0644, 1000000020);
	mkdir_mode(pathf(p, "%s/priv", src), 0750);
	mkfile(pathf(p, "%s/priv/x", src), "x", 0644, 0);
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, src, "100", NULL }, out, err), 2);
	assert_string_equal(out, "d\n");
	assert_non_null(strstr(err, "/secret: Cannot open: Permission denied"));
	assert_int_equal(lstat(pathf(p, "%s/t/secret", d.slot), (struct stat[1]){ 0 }), -1);
	assert_non_null(strstr(err, "/priv: Cannot open: Permission denied"));
	assert_meta(pathf(p, "%s/t/priv", d.slot), S_IFDIR, 0750, 0);
	assert_int_equal(count_entries(p), 0);
	assert_staged(pathf(p, "%s/ok", src), pathf(q, "%s/t/ok", d.slot), true);
	/* protected_hardlinks refuses a link to root's file: copied from the opened fd */
	assert_staged(pathf(p, "%s/rootread", src), pathf(q, "%s/t/rootread", d.slot), !protected_hardlinks());
	assert_int_equal(dropop(&a, (const char *[]){ "stage", d.drop, SLOT, pathf(p, "%s/secret", src), "100", NULL },
				out, err),
			 77);
	assert_int_equal(dropop(&a, (const char *[]){ "clear", d.drop, SLOT, NULL }, out, err), 0);
	assert_int_equal(count_entries(d.slot), 0);
	assert_int_equal(finish(&a), 0);
	rm_rf(d.base);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),	  cmocka_unit_test(test_kill_busy_and_eof),
		cmocka_unit_test(test_malformed),	  cmocka_unit_test(test_builtins),
		cmocka_unit_test(test_dropcheck),	  cmocka_unit_test(test_place),
		cmocka_unit_test(test_stage_clear),	  cmocka_unit_test(test_stage_depth),
		cmocka_unit_test(test_drop_unprivileged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
