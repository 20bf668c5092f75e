/*
 * sshconn.c - ssh + `docker system dial-stdio` as an engine connection (sshconn.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "engine/sshconn.h"

extern char **environ;

/* The reaper reads stderr and waits: it needs little stack. */
#define SSHCONN_REAPER_STACK (64 * 1024)

struct child {
	pid_t pid;
	int errfd; /* ssh's stderr */
};

/* Reads what ssh says until it closes stderr, keeping the tail; bounded by deadline (ms, -1: none). */
static size_t read_stderr(int fd, char *tail, size_t cap, int64_t deadline)
{
	_Static_assert(SSHCONN_STDERR_MAX > 512, "the tail holds a whole chunk");
	size_t len = 0;
	char chunk[512];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = deadline < 0 ? -1 : (int)(deadline - now_ms());
		if (deadline >= 0 && left <= 0)
			break;
		int r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		ssize_t k = read(fd, chunk, sizeof(chunk));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		/* keep the tail: drop the oldest bytes first (cap is larger than one chunk) */
		if (len + (size_t)k >= cap) {
			size_t drop = len + (size_t)k - (cap - 1);
			drop = drop > len ? len : drop;
			memmove(tail, tail + drop, len - drop);
			len -= drop;
		}
		memcpy(tail + len, chunk, (size_t)k);
		len += (size_t)k;
	}
	tail[len] = '\0';
	return len;
}

static void *reaper_main(void *arg)
{
	struct child *c = arg;
	char tail[SSHCONN_STDERR_MAX];
	int st;

	if (read_stderr(c->errfd, tail, sizeof(tail), -1) > 0)
		log_debugf("ssh (pid %d): %s", (int)c->pid, tail);
	close(c->errfd);
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	free(c);
	return NULL;
}

static void reaper_start(pid_t pid, int errfd)
{
	pthread_attr_t attr;
	pthread_t th;
	struct child *c = xcalloc(1, sizeof(*c));

	c->pid = pid;
	c->errfd = errfd;
	if (pthread_attr_init(&attr) == 0) {
		(void)pthread_attr_setstacksize(&attr, SSHCONN_REAPER_STACK);
		(void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		int r = pthread_create(&th, &attr, reaper_main, c);
		pthread_attr_destroy(&attr);
		if (r == 0)
			return;
	}
	/* no thread: the process is left to end with the connection; its stderr is not read */
	log_warnf("ssh (pid %d): cannot start a reaper thread", (int)pid);
	close(errfd);
	free(c);
}

/* What to do about what ssh said, for the usual failures. */
static const char *ssh_hint(const char *said)
{
	if (strstr(said, "Host key verification failed") || strstr(said, "REMOTE HOST IDENTIFICATION HAS CHANGED"))
		return "the host key is unknown or changed: connect once with `ssh HOST` to check and accept it (known_hosts)";
	if (strstr(said, "Permission denied"))
		return "ssh could not log in without a prompt (BatchMode): load the key into ssh-agent or name it with "
		       "IdentityFile in ~/.ssh/config";
	if (strstr(said, "Could not resolve hostname"))
		return "check the host name in DOCKER_HOST";
	if (strstr(said, "Connection refused") || strstr(said, "Connection timed out") ||
	    strstr(said, "No route to host"))
		return "check that sshd runs on that host and port";
	if (strstr(said, "docker: command not found") || strstr(said, "docker: not found") ||
	    strstr(said, "No such file or directory"))
		return "the docker CLI is not on the remote user's PATH: install it there (`docker system dial-stdio` runs "
		       "on the remote side)";
	if (strstr(said, "permission denied while trying to connect") ||
	    strstr(said, "Cannot connect to the Docker daemon"))
		return "the remote docker cannot reach its engine: start dockerd there, or add the remote user to the "
		       "docker group";
	return "check that `ssh HOST docker system dial-stdio` works from this account";
}

/* The last non-empty line of ssh's stderr, for the message. */
static const char *last_line(char *said)
{
	size_t n = strlen(said);
	while (n > 0 && (said[n - 1] == '\n' || said[n - 1] == '\r'))
		said[--n] = '\0';
	for (char *q = said; *q; q++)
		if ((unsigned char)*q < 0x20 && *q != '\n')
			*q = ' ';
	while (n > 0 && said[n - 1] == '.')
		said[--n] = '\0'; /* the message adds its own */
	char *nl = strrchr(said, '\n');
	return nl ? nl + 1 : said;
}

/* Sends HEAD /_ping and reads the answer's head: 0 when the engine said 200. */
static int ping(int fd, int64_t deadline)
{
	static const char req[] = "HEAD /_ping HTTP/1.1\r\nHost: docker\r\n\r\n";
	char head[4096];
	size_t len = 0;

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) - 1))
		return -EPIPE;
	while (len < sizeof(head) - 1) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = (int)(deadline - now_ms());
		if (left <= 0)
			return -ETIMEDOUT;
		int r = poll(&p, 1, left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r == 0 ? -ETIMEDOUT : -errno;
		ssize_t k = recv(fd, head + len, sizeof(head) - 1 - len, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EPIPE;
		len += (size_t)k;
		head[len] = '\0';
		if (strstr(head, "\r\n\r\n"))
			return strncmp(head, "HTTP/1.1 200", 12) == 0 || strncmp(head, "HTTP/1.0 200", 12) == 0
				       ? 0
				       : -EPROTO;
	}
	return -EPROTO;
}

static int spawn_ssh(const char *user, const char *host, const char *port, int timeout_ms, int in_out, int err_w,
		     pid_t *ret_pid)
{
	char ct[32];
	const char *argv[16];
	int n = 0;

	snprintf(ct, sizeof(ct), "ConnectTimeout=%d", timeout_ms / 1000 > 0 ? timeout_ms / 1000 : 1);
	argv[n++] = "ssh";
	argv[n++] = "-o";
	argv[n++] = "BatchMode=yes";
	argv[n++] = "-o";
	argv[n++] = ct;
	if (user[0]) {
		argv[n++] = "-l";
		argv[n++] = user;
	}
	if (port[0]) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	argv[n++] = "--"; /* the host can never be read as an option */
	argv[n++] = host;
	argv[n++] = "docker";
	argv[n++] = "system";
	argv[n++] = "dial-stdio";
	argv[n] = NULL;

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int r = posix_spawn_file_actions_init(&fa);
	if (r)
		return -r;
	if ((r = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	sigset_t none, deflt;
	sigemptyset(&none);
	/* the janitor ignores these (janitor.c); an ssh it runs must still end on them */
	sigemptyset(&deflt);
	sigaddset(&deflt, SIGINT);
	sigaddset(&deflt, SIGTERM);
	sigaddset(&deflt, SIGHUP);
	sigaddset(&deflt, SIGPIPE);
	/* its own process group: a ^C meant for a terminal client does not cut the engine connection */
	if (!(r = posix_spawn_file_actions_adddup2(&fa, in_out, 0)) &&
	    !(r = posix_spawn_file_actions_adddup2(&fa, in_out, 1)) &&
	    !(r = posix_spawn_file_actions_adddup2(&fa, err_w, 2)) && !(r = posix_spawnattr_setpgroup(&at, 0)) &&
	    !(r = posix_spawnattr_setsigmask(&at, &none)) && !(r = posix_spawnattr_setsigdefault(&at, &deflt)) &&
	    !(r = posix_spawnattr_setflags(&at,
					   POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)))
		r = posix_spawnp(ret_pid, "ssh", &fa, &at, (char *const *)argv, environ);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

int sshconn_open(const char *user, const char *host, const char *port, const char *display, int timeout_ms, int *ret_fd,
		 struct err *err)
{
	int sv[2], ep[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -errno, "ssh: socketpair: %s", strerror(errno));
	if (pipe2(ep, O_CLOEXEC) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, -e, "ssh: pipe: %s", strerror(e));
	}
	int64_t deadline = now_ms() + timeout_ms;
	int r = spawn_ssh(user, host, port, timeout_ms, sv[1], ep[1], &pid);
	close(sv[1]);
	close(ep[1]);
	if (r < 0) {
		close(sv[0]);
		close(ep[0]);
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r,
			       "cannot start ssh for %s: %s. Install the OpenSSH client (ssh on PATH)", display,
			       strerror(-r));
	}
	if ((r = ping(sv[0], deadline)) == 0) {
		reaper_start(pid, ep[0]);
		*ret_fd = sv[0];
		return 0;
	}
	/* ssh failed, or the far side is not an engine: say why in ssh's words */
	close(sv[0]); /* EOF on its stdin: ssh ends */
	if (r == -ETIMEDOUT)
		kill(pid, SIGTERM);
	char said[SSHCONN_STDERR_MAX];
	read_stderr(ep[0], said, sizeof(said), now_ms() + 2000);
	close(ep[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	const char *line = last_line(said);
	if (r == -ETIMEDOUT && !line[0])
		return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r,
			       "ssh to %s did not reach the Docker engine in time; check `ssh HOST docker system "
			       "dial-stdio` by hand",
			       display);
	return err_set(err, ERRCODE_DOCKER_UNAVAILABLE, r == -ETIMEDOUT ? r : -ECONNREFUSED,
		       "cannot reach the Docker engine through ssh at %s (ssh %s %d): %s. %s", display,
		       WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st),
		       line[0] ? line : "(ssh said nothing)", ssh_hint(said));
}
