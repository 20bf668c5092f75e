/*
 * agent.c - sandbox-mcp-agent, the program the server starts once in each
 * session's container (as the sandbox user, over one attached exec) to run
 * commands without the engine's per-exec cost.  See docs/agent.md.
 *
 * It speaks agentproto.h on stdin/stdout and runs one command at a time:
 * 'R' forks it into a session (and process group) of its own, its stdout and
 * stderr come back as 'O'/'E' frames, 'I'/'C' feed and close its stdin, 'K'
 * kills its whole group, and 'X' reports the exit status with the rusage of
 * wait4.  Like the engine's exec, once the command exits its output is
 * drained for AGENT_DRAIN_MS (a background job may hold the pipes), then
 * the pipes are closed.  EOF on stdin (the server went away) kills the
 * running group and ends the agent.
 *
 * Built static with musl-gcc so that it runs on any image: no shell, no
 * libc, no loader assumed.  Single-threaded; every wait is one poll().
 * With --idle it is the container's idle main process instead (see main).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agentproto.h"
#include "agent/connect.h"
#include "agent/fileops.h"
#include "agent/guard.h"
#include "agent/relay.h"

#define AGENT_VERSION "1"
/* Bytes read from a pipe or stdin at a time. */
#define AGENT_CHUNK (64 * 1024)
/* Stdin bytes queued for the command at most (the server sends at most 1 MiB). */
#define AGENT_STDIN_MAX (8u << 20)
/* How long output is drained after the command exited. */
#define AGENT_DRAIN_MS 2000

extern char **environ;

struct job {
	pid_t pid;	  /* 0: no command */
	int out, err, in; /* pipes; -1 when closed */
	char *queue;	  /* stdin bytes not yet written */
	size_t qlen, qoff;
	bool in_close; /* close stdin once the queue is empty */
	bool reaped;
	int status;
	struct rusage ru;
	long long drain_until; /* set once reaped */
};

static int sigpipe_fd[2];
static struct job job = { .out = -1, .err = -1, .in = -1 };
static char *req; /* the 'R' or 'B' payload being assembled */
static size_t req_len;

static void on_sigchld(int sig);
static long long now_ms(void);
static void send_frame(int type, const char *p, size_t n);
static void sendf(int type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void close_fd(int *fd);
static void start(const char *p, size_t len, bool builtin);
static char **build_env(char **extra, size_t nextra);
static void close_from(int lowest);
static void child(char **argv, size_t argc, char **envp, const char *cwd, int status_fd, bool builtin);
static void frame_piece(const struct agentproto_piece *pc);
static void pump_output(int *fd, int type);
static void reap(void);
static void finish_if_done(void);

static void on_sigchld(int sig)
{
	(void)sig;
	int saved = errno;
	ssize_t r = write(sigpipe_fd[1], "c", 1);
	(void)r;
	errno = saved;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes one frame to stdout; a server that stopped reading ends the agent. */
static void send_frame(int type, const char *p, size_t n)
{
	char hdr[AGENTPROTO_HEADER_LEN];
	agentproto_header(hdr, type, (uint32_t)n);
	const char *parts[2] = { hdr, p };
	size_t lens[2] = { sizeof(hdr), n };
	for (int k = 0; k < 2; k++) {
		size_t off = 0;
		while (off < lens[k]) {
			ssize_t w = write(1, parts[k] + off, lens[k] - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				if (job.pid > 0)
					kill(-job.pid, SIGKILL);
				_exit(1);
			}
			off += (size_t)w;
		}
	}
}

static void sendf(int type, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_frame(type, text, n < 0 ? 0 : (size_t)n >= sizeof(text) ? sizeof(text) - 1 : (size_t)n);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* The environment: the agent's own, with the request's K=V entries replacing or added. */
static char **build_env(char **extra, size_t nextra)
{
	size_t n = 0;
	while (environ[n])
		n++;
	char **envp = calloc(n + nextra + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		bool replaced = false;
		for (size_t j = 0; j < nextra && !replaced; j++)
			replaced = strncmp(extra[j], environ[i], klen) == 0 && extra[j][klen] == '=';
		if (!replaced)
			envp[k++] = environ[i];
	}
	for (size_t j = 0; j < nextra; j++)
		envp[k++] = extra[j];
	envp[k] = NULL;
	return envp;
}

/* Closes every descriptor from lowest up (status_fd included, which tells the parent it started). */
static void close_from(int lowest)
{
#ifdef SYS_close_range
	if (syscall(SYS_close_range, (unsigned)lowest, ~0u, 0) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);
	for (int fd = lowest; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		close(fd);
}

/*
 * In the forked child: never returns. Reports "<errno> <step>" on status_fd
 * when it cannot exec (or has no such built-in); a built-in closes status_fd
 * (the parent's "started") and runs here, in the child.
 */
static void child(char **argv, size_t argc, char **envp, const char *cwd, int status_fd, bool builtin)
{
	const char *step = "chdir";
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	setsid();
	if (cwd && chdir(cwd) < 0) {
		/* step stays "chdir" */
	} else if (builtin) {
		step = "builtin";
		errno = ENOSYS;
		if (fileop_known(argv[0])) {
			/* no exec closes the agent's descriptors here: the command's own stdin pipe would never end */
			close_from(3);
			_exit(fileop_run((int)argc, argv));
		}
	} else {
		step = "exec";
		char **saved = environ;
		environ = envp; /* execvp searches the request's PATH */
		execvp(argv[0], argv);
		environ = saved;
	}
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "%d %s", errno, step);
	ssize_t r = write(status_fd, msg, (size_t)n);
	(void)r;
	_exit(127);
}

/* Runs the command an 'R' payload describes (or the built-in of a 'B' one); sends 'P' or 'F'. */
static void start(const char *p, size_t len, bool builtin)
{
	char **argv = calloc(AGENTPROTO_FIELDS_MAX + 4, sizeof(*argv));
	char **extra = calloc(AGENTPROTO_FIELDS_MAX + 1, sizeof(*extra));
	size_t argc = 0, nextra = 0, off = 0;
	const char *cwd = NULL, *shell = NULL, *v;
	size_t vlen;
	int tag, r, io[3][2] = { { -1, -1 }, { -1, -1 }, { -1, -1 } }, st[2] = { -1, -1 };
	char **envp = NULL;

	if (!argv || !extra) {
		sendf('F', "%d memory", ENOMEM);
		goto out;
	}
	while ((r = agentproto_field(p, len, &off, &tag, &v, &vlen)) == 1) {
		if (argc + nextra >= AGENTPROTO_FIELDS_MAX) {
			r = -1;
			break;
		}
		if (tag == 'a')
			argv[argc++] = (char *)v;
		else if (tag == 'e')
			extra[nextra++] = (char *)v;
		else if (tag == 'd')
			cwd = v;
		else
			shell = v;
	}
	if (r < 0 || (shell ? argc != 0 : argc == 0) || (builtin && (shell || nextra))) {
		sendf('F', "%d request", EINVAL);
		goto out;
	}
	if (shell) {
		argv[0] = "/bin/sh";
		argv[1] = "-c";
		argv[2] = (char *)shell;
		argc = 3;
	}
	argv[argc] = NULL;
	if (!(envp = build_env(extra, nextra))) {
		sendf('F', "%d memory", ENOMEM);
		goto out;
	}
	if (pipe2(io[0], O_CLOEXEC) < 0 || pipe2(io[1], O_CLOEXEC) < 0 || pipe2(io[2], O_CLOEXEC) < 0 ||
	    pipe2(st, O_CLOEXEC) < 0) {
		sendf('F', "%d pipe", errno);
		goto out;
	}
	pid_t pid = fork();
	if (pid < 0) {
		sendf('F', "%d fork", errno);
		goto out;
	}
	if (pid == 0) {
		/* dup2 clears O_CLOEXEC on 0, 1 and 2 */
		if (dup2(io[0][0], 0) < 0 || dup2(io[1][1], 1) < 0 || dup2(io[2][1], 2) < 0)
			_exit(127);
		child(argv, argc, envp, cwd, st[1], builtin);
	}
	close_fd(&st[1]);
	char msg[64];
	ssize_t n;
	do
		n = read(st[0], msg, sizeof(msg) - 1);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		/* the child could not exec: reap it here, SIGCHLD's byte is harmless */
		msg[n] = '\0';
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		send_frame('F', msg, (size_t)n);
		goto out;
	}
	memset(&job, 0, sizeof(job));
	job.pid = pid;
	job.in = io[0][1], io[0][1] = -1;
	job.out = io[1][0], io[1][0] = -1;
	job.err = io[2][0], io[2][0] = -1;
	fcntl(job.in, F_SETFL, O_NONBLOCK);
	sendf('P', "%d", (int)pid);
out:
	for (int i = 0; i < 3; i++) {
		close_fd(&io[i][0]);
		close_fd(&io[i][1]);
	}
	close_fd(&st[0]);
	close_fd(&st[1]);
	free(envp);
	free(argv);
	free(extra);
}

static void frame_piece(const struct agentproto_piece *pc)
{
	switch (pc->type) {
	case 'R':
	case 'B':
		if (pc->first) {
			free(req);
			req_len = 0;
			req = malloc(pc->size + 1);
			if (!req)
				_exit(1);
		}
		memcpy(req + req_len, pc->p, pc->n);
		req_len += pc->n;
		if (pc->last) {
			if (job.pid > 0)
				sendf('F', "%d busy", EBUSY);
			else
				start(req, req_len, pc->type == 'B');
			free(req);
			req = NULL;
		}
		break;
	case 'I':
		if (job.pid <= 0 || job.in < 0 || pc->n == 0)
			break;
		if (job.qlen + pc->n > AGENT_STDIN_MAX) {
			kill(-job.pid, SIGKILL);
			break;
		}
		if (!job.queue && !(job.queue = malloc(AGENT_STDIN_MAX)))
			_exit(1);
		memcpy(job.queue + job.qlen, pc->p, pc->n);
		job.qlen += pc->n;
		break;
	case 'C':
		job.in_close = true;
		if (job.qoff == job.qlen)
			close_fd(&job.in);
		break;
	case 'K':
		if (job.pid > 0)
			kill(-job.pid, SIGKILL);
		break;
	}
}

static void pump_output(int *fd, int type)
{
	char buf[AGENT_CHUNK];
	ssize_t n = read(*fd, buf, sizeof(buf));
	if (n > 0)
		send_frame(type, buf, (size_t)n);
	else if (n == 0 || (errno != EINTR && errno != EAGAIN))
		close_fd(fd);
}

static void reap(void)
{
	if (job.pid <= 0 || job.reaped)
		return;
	pid_t w = wait4(job.pid, &job.status, WNOHANG, &job.ru);
	if (w == job.pid) {
		job.reaped = true;
		job.drain_until = now_ms() + AGENT_DRAIN_MS;
	}
}

static void finish_if_done(void)
{
	if (job.pid <= 0 || !job.reaped)
		return;
	if ((job.out >= 0 || job.err >= 0) && now_ms() < job.drain_until)
		return;
	int code = WIFEXITED(job.status) ? WEXITSTATUS(job.status) : 128 + WTERMSIG(job.status);
	long long cpu = ((long long)job.ru.ru_utime.tv_sec + job.ru.ru_stime.tv_sec) * 1000 +
			(job.ru.ru_utime.tv_usec + job.ru.ru_stime.tv_usec) / 1000;
	close_fd(&job.out);
	close_fd(&job.err);
	close_fd(&job.in);
	free(job.queue);
	sendf('X', "%d %lld %ld", code, cpu, (long)job.ru.ru_maxrss);
	memset(&job, 0, sizeof(job));
	job.out = job.err = job.in = -1;
}

int main(int argc, char **argv)
{
	static char inbuf[AGENT_CHUNK];
	struct agentproto f;
	struct sigaction sa = { .sa_handler = on_sigchld, .sa_flags = SA_NOCLDSTOP };

	/*
	 * --idle: the container's main process, in place of a shell loop, so
	 * that images without /bin/sh can run sessions. The engine's init is
	 * pid 1, so SIGTERM's default action ends it.
	 */
	if (argc > 1 && strcmp(argv[1], "--idle") == 0)
		for (;;)
			pause();
	/* --connect PORT: one connection of a port forward (connect.h) */
	if (argc == 3 && strcmp(argv[1], "--connect") == 0) {
		signal(SIGPIPE, SIG_IGN);
		return connect_main(argv[2]);
	}
	/* --relay PORT: a session's end of egress (relay.h) */
	if (argc == 3 && strcmp(argv[1], "--relay") == 0) {
		signal(SIGPIPE, SIG_IGN);
		return relay_main(argv[2]);
	}
	/*
	 * --walker: the disk guard's own agent (sandbox/diskguard.c), the same
	 * loop; the word only tells it apart in ps. Anything else is refused.
	 */
	if (argc > 1 && strcmp(argv[1], "--walker") != 0 && strcmp(argv[1], "--guard") != 0)
		return 2;
	/* --guard PROG ARGS...: the engine's exec path runs a command behind the same filter */
	if (argc > 2 && strcmp(argv[1], "--guard") == 0)
		return guard_exec_main(argc - 2, argv + 2);
	/*
	 * Everything it forks runs behind the filter (guard.h). A kernel that
	 * refuses it (no seccomp) leaves fallocate allowed, as the exec path does.
	 */
	(void)guard_install();
	/*
	 * Non-dumpable: the built-ins it forks are told the names of the drop's
	 * slots (dropops.h), which must stay secret from the user's other
	 * processes of the same uid: they may not ptrace it or its forked
	 * children nor read their /proc/<pid>/{fd,cwd,mem,environ} (names come
	 * in frames, never in a cmdline). A command it execs is dumpable again
	 * (execve resets it) and never saw a slot name, nor does --idle above.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return 1;
	if (pipe2(sigpipe_fd, O_CLOEXEC | O_NONBLOCK) < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	sigaction(SIGCHLD, &sa, NULL);
	agentproto_init(&f, AGENTPROTO_TO_AGENT);
	sendf('H', "sandbox-mcp-agent %s %d", AGENT_VERSION, (int)getpid());

	for (;;) {
		struct pollfd pfd[5] = {
			{ .fd = 0, .events = POLLIN },
			{ .fd = sigpipe_fd[0], .events = POLLIN },
			{ .fd = job.pid > 0 ? job.out : -1, .events = POLLIN },
			{ .fd = job.pid > 0 ? job.err : -1, .events = POLLIN },
			{ .fd = job.pid > 0 && job.qoff < job.qlen ? job.in : -1, .events = POLLOUT },
		};
		int timeout = -1;
		if (job.pid > 0 && job.reaped) {
			long long left = job.drain_until - now_ms();
			timeout = left < 0 ? 0 : (int)left;
		}
		if (poll(pfd, 5, timeout) < 0 && errno != EINTR)
			return 1;
		if (pfd[1].revents & POLLIN) {
			char tmp[64];
			while (read(sigpipe_fd[0], tmp, sizeof(tmp)) > 0)
				;
		}
		reap();
		if (pfd[2].revents)
			pump_output(&job.out, 'O');
		if (pfd[3].revents)
			pump_output(&job.err, 'E');
		if (pfd[4].revents) {
			ssize_t w = write(job.in, job.queue + job.qoff, job.qlen - job.qoff);
			if (w > 0)
				job.qoff += (size_t)w;
			else if (w < 0 && errno != EAGAIN && errno != EINTR)
				job.qoff = job.qlen, job.in_close = true;
			if (job.qoff == job.qlen && job.in_close)
				close_fd(&job.in);
		}
		if (pfd[0].revents) {
			ssize_t n = read(0, inbuf, sizeof(inbuf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				if (job.pid > 0 && !job.reaped)
					kill(-job.pid, SIGKILL);
				return 0;
			}
			size_t off = 0;
			while (off < (size_t)n) {
				size_t used = 0;
				struct agentproto_piece pc;
				int r = agentproto_feed(&f, inbuf + off, (size_t)n - off, &used, &pc);
				if (r == -1) {
					if (job.pid > 0 && !job.reaped)
						kill(-job.pid, SIGKILL);
					return 2;
				}
				off += used;
				if (r == -2)
					break;
				frame_piece(&pc);
			}
		}
		finish_if_done();
	}
}
