/*
 * test-agent.c - the sandbox-mcp-agent binary driven on the host through
 * pipes, as the server drives it in a container: hello, a shell command
 * with stdin, stdout, stderr and its exit report, argv, a program that does
 * not exist, a second request while one runs, a kill of a whole process
 * group, a malformed frame and EOF on stdin (both kill the running group);
 * the built-in file operations ('B') on a scratch directory, with the exit
 * codes of the scripts they stand for.
 * AGENT_BIN names the binary (meson sets it).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "agentproto.h"

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

static void start(struct agent *a)
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

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commands),
		cmocka_unit_test(test_kill_busy_and_eof),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_builtins),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
