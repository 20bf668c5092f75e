/*
 * janitor.c - a child process that does a server's exit when the server
 * could not: killed (SIGKILL), crashed or OOM-killed, its containers would
 * run on until the next server's start-up scan, which may never come.
 *
 * The clients do kill: Claude Code sends SIGINT, SIGTERM 100 ms later and
 * SIGKILL 450 ms after that, less than the removal of a session and two
 * pool members takes. So the server forks this process first, before any
 * thread (a fork of a threaded process may only exec): it leaves the
 * client's process group and its pipes, and waits on a pipe from the
 * server. The server writes its instance once it has one, and a byte
 * before it exits cleanly. EOF with no such byte means the server died:
 * the janitor then does the exit's removals (session_reap_instance) and
 * ends. Idle, it is one read(2) on a pipe. It never takes the server's
 * lock: a server starting meanwhile would take a held lock for a live
 * owner and leave the persistent sessions unadopted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "engine/engines.h"
#include "sandbox/janitor.h"
#include "sandbox/session.h"

extern char **environ;

/* The byte a clean exit sends: nothing to do. */
#define JANITOR_RELEASE 'x'
/* An instance id and its newline. */
#define JANITOR_ARM_LEN (SESSION_INSTANCE_LEN + 1)
/* How often the janitor looks whether its server is gone, after EOF came too soon, ms. */
#define JANITOR_PARENT_POLL_MS 100

struct janitor {
	int fd; /* the pipe's write end, CLOEXEC: an ssh the server runs must not hold it */
};

/* Reads up to n bytes, until a newline or EOF: the count, or -1. */
static ssize_t read_line(int fd, char *p, size_t n)
{
	size_t have = 0;
	while (have < n) {
		ssize_t got = read(fd, p + have, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		if (got == 0 || p[have++] == '\n')
			break;
	}
	return (ssize_t)have;
}

/*
 * Standard streams: none the client reads (it may wait for their EOF, and
 * stdout carries only the server's protocol lines); stderr kept when it is
 * a terminal or a file, where a log line is read later.
 */
static void detach_stdio(void)
{
	struct stat st;
	/* no O_CLOEXEC: with stdin closed this is fd 0 itself, which dup2 onto itself would leave marked */
	int null = open("/dev/null", O_RDWR);
	if (null < 0)
		_exit(1);
	bool keep_err = isatty(STDERR_FILENO) || (fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode));
	if (dup2(null, STDIN_FILENO) < 0 || dup2(null, STDOUT_FILENO) < 0 ||
	    (!keep_err && dup2(null, STDERR_FILENO) < 0))
		_exit(1);
	if (null > STDERR_FILENO)
		close(null);
}

/*
 * Waits until server is no longer this process's parent: dead, not only
 * without the pipe (a stray close of its fd number in the server would
 * otherwise have its live sessions removed). The kernel closes a dying
 * process's files before it reparents its children, so EOF may come a
 * moment before; a live server is waited for until it ends.
 */
static void wait_server_gone(pid_t server)
{
	while (getppid() == server)
		(void)poll(NULL, 0, JANITOR_PARENT_POLL_MS);
}

/* The child: waits for the server's end, and does its exit's removals if it had none. Never returns. */
static void janitor_main(const struct config *cfg, pid_t server, int rfd)
{
	char inst[JANITOR_ARM_LEN + 1] = "";
	char b;

	(void)setsid(); /* out of the client's process group: a kill of the group spares it */
	(void)prctl(PR_SET_NAME, "sandbox-janitor");
	/* it ends with its server, at once or after the removals: a signal meant for "sandbox-mcp" is not for it */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	detach_stdio();
	/* nothing else of the client's: a pipe it passed on must see EOF when the server ends */
	if (rfd > 3)
		(void)close_range(3, (unsigned)rfd - 1, 0);
	(void)close_range((unsigned)rfd + 1, ~0u, 0);
	ssize_t n = read_line(rfd, inst, JANITOR_ARM_LEN);
	if (n != JANITOR_ARM_LEN || inst[JANITOR_ARM_LEN - 1] != '\n')
		_exit(0); /* a server that ended before it made anything, or sent nothing we know */
	inst[JANITOR_ARM_LEN - 1] = '\0';
	ssize_t got;
	do
		got = read(rfd, &b, 1);
	while (got < 0 && errno == EINTR);
	if (got != 0)
		_exit(0); /* the clean exit's byte */
	wait_server_gone(server);
	struct engines *es = NULL;
	struct err err;
	err_clear(&err);
	if (engines_open(cfg, environ, (int)cfg->engine_timeout_s * 1000, &es, &err) < 0) {
		log_warnf("janitor: the server of instance %s died; its containers stay for the next server: %s", inst,
			  err.msg);
		_exit(1);
	}
	log_infof("janitor: the server of instance %s died without its exit; removing its containers", inst);
	session_reap_instance(es, inst);
	_exit(0);
}

int janitor_start(const struct config *cfg, struct janitor **ret)
{
	int p[2];
	pid_t server = getpid();

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/*
	 * A server started with a standard stream closed (a daemon's stdin)
	 * would get the pipe there: the janitor's /dev/null would replace it,
	 * and the server's protocol lines would go into it. Above stderr, always.
	 */
	for (int i = 0; i < 2; i++) {
		if (p[i] > STDERR_FILENO)
			continue;
		int fd = fcntl(p[i], F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
		int e = errno;
		close(p[i]);
		p[i] = fd;
		if (fd < 0) {
			close(p[1 - i]);
			return -e;
		}
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		close(p[1]);
		janitor_main(cfg, server, p[0]);
	}
	close(p[0]);
	struct janitor *j = xcalloc(1, sizeof(*j));
	j->fd = p[1];
	*ret = j;
	return 0;
}

void janitor_arm(struct janitor *j, const char *instance)
{
	char line[JANITOR_ARM_LEN + 1];
	if (!j || strlen(instance) != JANITOR_ARM_LEN - 1)
		return;
	snprintf(line, sizeof(line), "%s\n", instance);
	/* a pipe takes the line whole; the janitor only exits before reading them if it failed */
	int r = write_full(j->fd, line, JANITOR_ARM_LEN);
	if (r < 0)
		log_warnf("janitor: %s; a killed server's containers stay for the next server", strerror(-r));
}

void janitor_release(struct janitor *j)
{
	char b = JANITOR_RELEASE;
	if (!j)
		return;
	if (write_full(j->fd, &b, 1) < 0)
		log_debugf("janitor: gone before the exit");
	close(j->fd);
	free(j);
}

void janitor_leave(struct janitor *j)
{
	if (!j)
		return;
	close(j->fd); /* EOF without the byte: a death, once this process is gone */
	free(j);
}
