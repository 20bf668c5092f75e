/*
 * bench.c - speed and memory figures, each beside its anchor measured in the
 * same run (never a timed test: it prints, it does not assert).
 *
 *   spawn -> initialize reply      vs  fork+exec of /bin/true
 *   idle server RSS
 *   run_command `true`, warm       vs  raw Engine API exec floor (create +
 *                                      hijacked start + inspect, keep-alive)
 *                                  vs  `docker exec <ctr> true` (the CLI)
 *   run_python interpreter start   vs  raw API exec floor (same exec, no python)
 *   run_python `1+1`, warm         vs  `docker exec <ctr> python3 -c 1+1` (the CLI)
 *   session_create to ready        vs  raw API create + start of that image
 *   server RSS with 10 sessions
 *   file_upload / file_download of 50 MiB  vs  `docker cp` both ways,
 *                                      with the server's peak RSS
 *   file_write (base64) of 32 MiB      with the server's peak RSS
 *   file_read / file_write of 1 KiB vs  `docker exec <ctr> cat` (the CLI)
 *   file_list of the workspace      vs  `docker exec <ctr> ls -la` (the CLI)
 *   pip_install of a local wheel    vs  `docker exec <ctr> pip install` (CLI)
 *   session_commit                  vs  `docker commit <ctr>` (CLI)
 *   session_export with build: true vs  `docker build` (CLI) of the same
 *                                      export written to a host folder
 *   session_create from the warm pool  vs  raw API create + start (and a
 *                                      fresh session_create beside it)
 *   10 sessions x 100 run_command true in parallel  vs  10 x 20 `docker exec
 *                                      <ctr> true` in parallel (calls/s)
 *   session_create pulling an image vs  `docker pull` of the same reference
 *   from a loopback docker-registry    (a 100 MB layer of its own on the
 *                                      sandbox image): its pull_ms, and the
 *                                      whole create less a create of the
 *                                      present image; peak RSS before/after
 *
 *   remote: run_command and the 50 MiB transfers beside docker exec/cp over
 *   the endpoint of the environment (tests/bench/remote.sh: unix, TLS, ssh)
 *
 * Usage: bench SANDBOX_MCP_BIN [rounds] [files|save|run|pull|fileops|remote|pool|spawn]
 *        ("files", "save", "pull", "fileops", "remote", "pool": only those rows, pull needs docker-registry; "run": up
 *        to the run_command rows; "spawn": only the first row)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/base64.h"
#include "buildconf.h"
#include "base/buf.h"
#include "engine/engine.h"
#include "sandbox/exec.h"
#include "base/util.h"

struct server {
	pid_t pid;
	int in, out;
	struct buf rbuf;
};

static const char *bin;
static char **env_extra;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void server_start(struct server *s)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
		abort();
	s->pid = fork();
	if (s->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		/* BENCH_SERVER_LOG: the server's stderr goes there (appended) instead of /dev/null */
		const char *log = getenv("BENCH_SERVER_LOG");
		int errfd = log ? open(log, O_WRONLY | O_CREAT | O_APPEND, 0644) : -1;
		dup2(errfd >= 0 ? errfd : open("/dev/null", O_WRONLY), 2);
		execl(bin, bin, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	s->in = in[1];
	s->out = out[0];
	buf_init(&s->rbuf, 64u << 20);
}

/* Reads lines until the reply with this id; returns it (caller frees). */
static char *server_wait(struct server *s, int id)
{
	char want[32];
	snprintf(want, sizeof(want), "\"id\":%d,", id);
	for (;;) {
		char *nl;
		while ((nl = memchr(s->rbuf.data ? s->rbuf.data : "", '\n', s->rbuf.len))) {
			size_t n = (size_t)(nl - s->rbuf.data);
			char *line = xstrndup(s->rbuf.data, n);
			buf_consume(&s->rbuf, n + 1);
			if (strstr(line, want))
				return line;
			free(line);
		}
		char *tail;
		if (buf_reserve(&s->rbuf, 65536, &tail) < 0)
			abort();
		ssize_t r = read(s->out, tail, 65536);
		if (r <= 0) {
			fprintf(stderr, "bench: server closed its output\n");
			exit(1);
		}
		buf_commit(&s->rbuf, (size_t)r);
	}
}

static char *server_call(struct server *s, int id, const char *method, const char *params)
{
	char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", id, method, params);
	if (write_full(s->in, line, strlen(line)) < 0)
		abort();
	free(line);
	return server_wait(s, id);
}

static void server_stop(struct server *s)
{
	close(s->in);
	int st;
	waitpid(s->pid, &st, 0);
	close(s->out);
	buf_finish(&s->rbuf);
}

static long rss_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	long v = -1;
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, strlen(field)) == 0)
			v = atol(line + strlen(field) + 1);
	if (f)
		fclose(f);
	return v;
}

/* The CPU time a process used so far, user + system, in ms (its threads included). */
static double cpu_ms(pid_t pid)
{
	char path[64], line[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	unsigned long ut = 0, st = 0;
	char *p = f && fgets(line, sizeof(line), f) ? strrchr(line, ')') : NULL;
	/* after "pid (comm)": state is field 3, utime 14, stime 15 */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		ut = st = 0;
	if (f)
		fclose(f);
	return (double)(ut + st) * 1000.0 / (double)sysconf(_SC_CLK_TCK);
}

static const char init_params[] =
	"{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}";

static void row(const char *what, double v, const char *unit, const char *anchor, double a)
{
	if (anchor)
		printf("%-34s %10.2f %-3s | %-34s %10.2f %-3s | ratio %.2f\n", what, v, unit, anchor, a, unit, v / a);
	else
		printf("%-34s %10.2f %-3s |\n", what, v, unit);
}

static double run_cli(char *const argv[])
{
	int64_t t0 = now_us();
	pid_t p = fork();
	if (p == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	return (double)(now_us() - t0) / 1000.0;
}

/* A tools/call whose reply must not be an error; returns the reply (caller frees). */
static char *call_ok(struct server *s, int id, const char *args)
{
	char *r = server_call(s, id, "tools/call", args);
	if (strstr(r, "\"isError\":true")) {
		fprintf(stderr, "bench: %.60s failed: %.400s\n", args, r);
		exit(1);
	}
	return r;
}

/*
 * 50 MiB through file_upload and file_download against `docker cp` both
 * ways, on a fresh server so its peak RSS is the transfers'; then 32 MiB of
 * base64 through file_write (a 50 MiB one passes the default line cap).
 */
/*
 * A pause before each timed transfer: work either side leaves behind (the
 * agent freeing a replaced file's pages after its answer, the engine
 * winding a CLI call down after it returns) must not land in the next
 * row's time, whichever side that is.
 */
static void settle(void)
{
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void bench_files(int n)
{
	char dir[] = "/tmp/sandbox-mcp-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("bench: mkdtemp");
		exit(1);
	}
	/* docker cp writes into a folder of its own: a download replaces only what sandbox-mcp wrote */
	char *src = xasprintf("%s/fifty.bin", dir), *back = xasprintf("%s/back", dir);
	char *cliback = xasprintf("%s/cli", dir);
	mkdir(back, 0755);
	mkdir(cliback, 0755);
	size_t size = 50u << 20;
	char *data = xmalloc(size);
	int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	int fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (rnd < 0 || fd < 0 || read_full(rnd, data, size) < 0 || write_full(fd, data, size) < 0) {
		perror("bench: test file");
		exit(1);
	}
	close(fd);
	close(rnd);

	setenv("SANDBOX_HOST_DIRS", dir, 1);
	setenv("SANDBOX_MAX_UPLOAD_MB", "64", 1);
	struct server s;
	server_start(&s);
	unsetenv("SANDBOX_HOST_DIRS");
	free(server_call(&s, 1, "initialize", init_params));
	char *cr = call_ok(&s, 2, "{\"name\":\"session_create\",\"arguments\":{}}");
	char container[65] = "", sid[16] = "";
	char *c = strstr(cr, "\"container_id\":\"");
	char *p = strstr(cr, "\"session_id\":\"");
	if (c)
		snprintf(container, sizeof(container), "%.64s", c + 16);
	if (p)
		snprintf(sid, sizeof(sid), "%.12s", p + 14);
	free(cr);
	double *up = calloc((size_t)n, sizeof(double)), *cpin = calloc((size_t)n, sizeof(double));
	double *down = calloc((size_t)n, sizeof(double)), *cpout = calloc((size_t)n, sizeof(double));
	char *target = xasprintf("%s:/workspace/cp.bin", container);
	char *from = xasprintf("%s:/workspace/fifty.bin", container);
	char *upargs = xasprintf("{\"name\":\"file_upload\",\"arguments\":{\"host_path\":\"%s\",\"session_id\":\"%s\"}}",
				 src, sid);
	char *downargs = xasprintf("{\"name\":\"file_download\",\"arguments\":{\"path\":\"fifty.bin\",\"host_dir\":"
				   "\"%s\",\"overwrite\":true,\"session_id\":\"%s\"}}",
				   back, sid);
	/* interleaved, so both sides see the same machine state */
	double cpu_up = 0, cpu_down = 0;
	for (int i = 0; i < n; i++) {
		settle();
		int64_t t0 = now_us();
		double c0 = cpu_ms(s.pid);
		free(call_ok(&s, 100 + i, upargs));
		up[i] = (double)(now_us() - t0) / 1000.0;
		cpu_up += cpu_ms(s.pid) - c0;
		char *cv[] = { "docker", "cp", src, target, NULL };
		settle();
		cpin[i] = run_cli(cv);
		settle();
		t0 = now_us();
		c0 = cpu_ms(s.pid);
		free(call_ok(&s, 200 + i, downargs));
		down[i] = (double)(now_us() - t0) / 1000.0;
		cpu_down += cpu_ms(s.pid) - c0;
		char *dv[] = { "docker", "cp", from, cliback, NULL };
		settle();
		cpout[i] = run_cli(dv);
	}
	row("file_upload 50 MiB (median)", median(up, n), "ms", "docker cp host -> container", median(cpin, n));
	row("file_download 50 MiB (median)", median(down, n), "ms", "docker cp container -> host", median(cpout, n));
	row("server CPU per file_upload (mean)", cpu_up / n, "ms", NULL, 0);
	row("server CPU per file_download (mean)", cpu_down / n, "ms", NULL, 0);
	row("server peak RSS, 50 MiB up/down", (double)rss_kb(s.pid, "VmHWM:") / 1024.0, "MiB", NULL, 0);
	server_stop(&s);

	/* base64 content through the JSON request, on another fresh server */
	size_t bsize = 32u << 20;
	char *b64 = xmalloc(base64_encoded_len(bsize) + 1);
	base64_encode(data, bsize, b64);
	setenv("SANDBOX_MAX_UPLOAD_MB", "64", 1);
	server_start(&s);
	unsetenv("SANDBOX_MAX_UPLOAD_MB");
	free(server_call(&s, 1, "initialize", init_params));
	free(call_ok(&s, 2, "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}"));
	long before = rss_kb(s.pid, "VmHWM:");
	char *wargs = xasprintf("{\"name\":\"file_write\",\"arguments\":{\"path\":\"b64.bin\",\"encoding\":\"base64\","
				"\"content\":\"%s\"}}",
				b64);
	free(b64);
	int64_t t0 = now_us();
	free(call_ok(&s, 3, wargs));
	double tw = (double)(now_us() - t0) / 1000.0;
	free(wargs);
	long peak = rss_kb(s.pid, "VmHWM:");
	row("file_write base64 32 MiB", tw, "ms", NULL, 0);
	printf("%-34s %10.2f MiB | %.2fx the file (%.1f MiB before the call)\n", "server peak RSS, base64 write",
	       (double)peak / 1024.0, (double)peak * 1024.0 / (double)bsize, (double)before / 1024.0);
	server_stop(&s);

	unlink(src);
	char *bk = xasprintf("%s/fifty.bin", back);
	unlink(bk);
	free(bk);
	bk = xasprintf("%s/fifty.bin", cliback);
	unlink(bk);
	rmdir(back);
	rmdir(cliback);
	free(cliback);
	rmdir(dir);
	free(bk);
	free(data);
	free(src);
	free(back);
	free(target);
	free(from);
	free(upargs);
	free(downargs);
	free(up);
	free(cpin);
	free(down);
	free(cpout);
}

static json_t *call_sc_params(struct server *s, int id, const char *name, json_t *params);

/* A tools/call of name with args (stolen) that must succeed; returns its structuredContent (caller owns). */
static json_t *call_sc(struct server *s, int id, const char *name, json_t *args)
{
	return call_sc_params(s, id, name, json_pack("{s:s, s:o}", "name", name, "arguments", args));
}

/* call_sc with the whole params (stolen), e.g. with a _meta.progressToken. */
static json_t *call_sc_params(struct server *s, int id, const char *name, json_t *params)
{
	char *text = json_dumps(params, JSON_COMPACT);
	json_decref(params);
	if (!text)
		abort();
	char *r = call_ok(s, id, text);
	free(text);
	json_t *reply = json_loads(r, 0, NULL);
	free(r);
	json_t *sc = json_incref(json_object_get(json_object_get(reply, "result"), "structuredContent"));
	json_decref(reply);
	if (!sc) {
		fprintf(stderr, "bench: %s returned no structuredContent\n", name);
		exit(1);
	}
	return sc;
}

static double since_ms(int64_t t0)
{
	return (double)(now_us() - t0) / 1000.0;
}

/*
 * The small file calls a model makes all the time, warm (the session's agent
 * running): file_write and file_read of 1 KiB beside `docker exec cat` of
 * that file, file_list of the workspace (20 entries) beside `docker exec ls
 * -la` of it. The calls run back to back first, then the anchors: the
 * engine winds a CLI's exec down after the CLI returns, which slowed the
 * call after it by several ms when they were interleaved.
 */
static void bench_fileops(int n)
{
	struct server s;
	char kib[1025];
	server_start(&s);
	free(server_call(&s, 1, "initialize", init_params));
	json_t *cr = call_sc(&s, 2, "session_create", json_pack("{s:s}", "name", "bench-fileops"));
	char *sid = xstrdup(json_string_value(json_object_get(cr, "session_id")));
	char *ctr = xstrdup(json_string_value(json_object_get(cr, "container_id")));
	json_decref(cr);
	memset(kib, 'x', 1023);
	kib[1023] = '\n';
	kib[1024] = '\0';
	int id = 10;
	for (int i = 0; i < 19; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%02d.txt", i);
		json_decref(call_sc(&s, id++, "file_write", json_pack("{s:s, s:s, s:s}", "session_id", sid, "path", name,
								    "content", "warm")));
	}
	json_decref(call_sc(&s, id++, "file_list", json_pack("{s:s}", "session_id", sid)));

	double *w = calloc((size_t)n, sizeof(double)), *r = calloc((size_t)n, sizeof(double));
	double *l = calloc((size_t)n, sizeof(double)), *ac = calloc((size_t)n, sizeof(double));
	double *al = calloc((size_t)n, sizeof(double));
	/* the calls back to back, as a model makes them; then the anchors (a CLI exec loads the engine after it returns) */
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_us();
		json_decref(call_sc(&s, id++, "file_write",
				    json_pack("{s:s, s:s, s:s}", "session_id", sid, "path", "kib.txt", "content", kib)));
		w[i] = since_ms(t0);
		t0 = now_us();
		char *args = xasprintf("{\"name\":\"file_read\",\"arguments\":{\"session_id\":\"%s\",\"path\":\"kib.txt\"}}",
				       sid);
		free(call_ok(&s, id++, args));
		free(args);
		r[i] = since_ms(t0);
		t0 = now_us();
		json_decref(call_sc(&s, id++, "file_list", json_pack("{s:s}", "session_id", sid)));
		l[i] = since_ms(t0);
	}
	for (int i = 0; i < n; i++) {
		char *cv[] = { "docker", "exec", ctr, "cat", "/workspace/kib.txt", NULL };
		ac[i] = run_cli(cv);
		char *lv[] = { "docker", "exec", ctr, "ls", "-la", "/workspace", NULL };
		al[i] = run_cli(lv);
	}
	double cat = median(ac, n);
	row("file_write 1 KiB, warm (median)", median(w, n), "ms", "docker exec cat (CLI)", cat);
	row("file_read 1 KiB, warm (median)", median(r, n), "ms", "docker exec cat (CLI)", cat);
	row("file_list workspace, warm (median)", median(l, n), "ms", "docker exec ls -la (CLI)", median(al, n));
	free(w);
	free(r);
	free(l);
	free(ac);
	free(al);
	free(sid);
	free(ctr);
	server_stop(&s);
}

/*
 * Saving a session: a session that built a wheel and installed it, then
 * pip_install (uninstalled between rounds), session_commit and session_export
 * with build: true, each beside the docker CLI doing the same, interleaved.
 * Each export's Dockerfile carries its creation time in the LABEL right
 * after FROM, so no export build takes a step from the builder's cache; the
 * anchor builds with --no-cache to match. The export's figure includes what
 * the anchor does not do: reading pip freeze and the workspace out of the
 * sandbox.
 */
static void bench_save(int n)
{
	char dir[] = "/tmp/sandbox-mcp-bench-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("bench: mkdtemp");
		exit(1);
	}
	setenv("SANDBOX_HOST_DIRS", dir, 1);
	struct server s;
	server_start(&s);
	unsetenv("SANDBOX_HOST_DIRS");
	free(server_call(&s, 1, "initialize", init_params));
	json_t *cr = call_sc(&s, 2, "session_create", json_pack("{s:s}", "name", "bench-save"));
	char *sid = xstrdup(json_string_value(json_object_get(cr, "session_id")));
	char *ctr = xstrdup(json_string_value(json_object_get(cr, "container_id")));
	json_decref(cr);
	const char *make = "mkdir -p pkg/benchpkg && printf '%s\\n' '[build-system]' 'requires = [\"setuptools\"]' "
			   "'build-backend = \"setuptools.build_meta\"' '[project]' 'name = \"benchpkg\"' "
			   "'version = \"1.0\"' '[tool.setuptools]' 'packages = [\"benchpkg\"]' > pkg/pyproject.toml && "
			   "echo 'VALUE = 1' > pkg/benchpkg/__init__.py && head -c 1048576 /dev/urandom > data.bin && "
			   "python3 -m pip wheel -q --no-deps --no-index --no-build-isolation -w dist ./pkg";
	json_decref(call_sc(&s, 3, "run_command", json_pack("{s:s, s:s}", "session_id", sid, "command", make)));
	const char *wheel = "dist/benchpkg-1.0-py3-none-any.whl";

	double *v = calloc((size_t)n, sizeof(double)), *a = calloc((size_t)n, sizeof(double));
	int id = 100;
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_us();
		json_decref(call_sc(&s, id++, "pip_install",
				    json_pack("{s:s, s:[s]}", "session_id", sid, "packages", wheel)));
		v[i] = since_ms(t0);
		json_decref(call_sc(&s, id++, "pip_uninstall",
				    json_pack("{s:s, s:[s]}", "session_id", sid, "packages", "benchpkg")));
		char *iv[] = { "docker", "exec", "-w", "/workspace", ctr, "python3", "-m", "pip", "install", "-q",
			       "--no-index", (char *)wheel, NULL };
		a[i] = run_cli(iv);
		char *uv[] = { "docker", "exec", ctr, "python3", "-m", "pip", "uninstall", "-q", "-y", "benchpkg", NULL };
		run_cli(uv);
	}
	row("pip_install local wheel (median)", median(v, n), "ms", "docker exec pip install (CLI)", median(a, n));
	/* the session keeps it installed: the commit and the export carry it */
	json_decref(call_sc(&s, id++, "pip_install", json_pack("{s:s, s:[s]}", "session_id", sid, "packages", wheel)));

	for (int i = 0; i < n; i++) {
		char tag[32];
		snprintf(tag, sizeof(tag), "r%d", i);
		int64_t t0 = now_us();
		json_decref(call_sc(&s, id++, "session_commit",
				    json_pack("{s:s, s:s, s:s}", "session_id", sid, "repository",
					      "sandbox-mcp-bench/commit", "tag", tag)));
		v[i] = since_ms(t0);
		char *ref = xasprintf("sandbox-mcp-bench/cli-commit:%s", tag);
		char *cv[] = { "docker", "commit", ctr, ref, NULL };
		a[i] = run_cli(cv);
		free(ref);
	}
	row("session_commit (median)", median(v, n), "ms", "docker commit (CLI)", median(a, n));

	json_t *hx = call_sc(&s, id++, "session_export", json_pack("{s:s, s:s}", "session_id", sid, "host_dir", dir));
	char *folder = xstrdup(json_string_value(json_object_get(hx, "host_path")));
	json_decref(hx);
	for (int i = 0; i < n; i++) {
		char tag[32];
		snprintf(tag, sizeof(tag), "r%d", i);
		int64_t t0 = now_us();
		json_decref(call_sc(&s, id++, "session_export",
				    json_pack("{s:s, s:b, s:s, s:s}", "session_id", sid, "build", 1, "repository",
					      "sandbox-mcp-bench/export", "tag", tag)));
		v[i] = since_ms(t0);
		char *ref = xasprintf("sandbox-mcp-bench/cli-build:%s", tag);
		char *bv[] = { "docker", "build", "--no-cache", "--network", "none", "-q", "-t", ref, folder, NULL };
		setenv("DOCKER_BUILDKIT", "0", 1);
		a[i] = run_cli(bv);
		free(ref);
	}
	row("session_export build (median)", median(v, n), "ms", "docker build --no-cache, its folder", median(a, n));
	row("server peak RSS, saving", (double)rss_kb(s.pid, "VmHWM:") / 1024.0, "MiB", NULL, 0);
	server_stop(&s);

	/* the images, then the folder (rm -rf: the export wrote a tree); only this session's untagged ones */
	char *script = xasprintf("docker images -q --filter 'reference=sandbox-mcp-bench/*' | sort -u | "
				 "xargs -r docker rmi -f; docker image prune -f --filter "
				 "label=io.sandbox-mcp.commit.session=%s",
				 sid);
	char *const clean[] = { "sh", "-c", script, NULL };
	run_cli(clean);
	free(script);
	char *const rm[] = { "rm", "-rf", dir, NULL };
	run_cli(rm);
	free(folder);
	free(sid);
	free(ctr);
	free(v);
	free(a);
}

/* A free loopback TCP port (the registry takes it a moment later). */
/*
 * The endpoint the environment names (DOCKER_HOST, DOCKER_TLS_VERIFY,
 * DOCKER_CERT_PATH; the server and the docker CLI both inherit it): warm
 * run_command beside `docker exec`, then bench_files' transfers beside
 * `docker cp` over that same endpoint.  tests/bench/remote.sh runs it on the
 * unix socket, on a TLS dockerd and through sshd on loopback.
 */
static void bench_remote(int n)
{
	const char *host = getenv("DOCKER_HOST");
	printf("endpoint %s%s\n", host ? host : "(default unix socket)",
	       getenv("DOCKER_TLS_VERIFY") && *getenv("DOCKER_TLS_VERIFY") ? " (TLS verified)" : "");
	struct server s;
	server_start(&s);
	free(server_call(&s, 1, "initialize", init_params));
	char *cr = call_ok(&s, 2, "{\"name\":\"session_create\",\"arguments\":{}}");
	char container[65] = "", sid[16] = "";
	char *c = strstr(cr, "\"container_id\":\"");
	char *p = strstr(cr, "\"session_id\":\"");
	if (c)
		snprintf(container, sizeof(container), "%.64s", c + 16);
	if (p)
		snprintf(sid, sizeof(sid), "%.12s", p + 14);
	free(cr);
	char *args = xasprintf("{\"name\":\"run_command\",\"arguments\":{\"command\":\"echo 1\",\"session_id\":\"%s\"}}", sid);
	free(call_ok(&s, 3, args)); /* warm: the agent and the kept connections are up */
	double *ours = calloc((size_t)n, sizeof(double)), *cli = calloc((size_t)n, sizeof(double));
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_us();
		free(call_ok(&s, 10 + i, args));
		ours[i] = since_ms(t0);
		char *dv[] = { "docker", "exec", container, "echo", "1", NULL };
		cli[i] = run_cli(dv);
	}
	row("run_command echo, warm (median)", median(ours, n), "ms", "docker exec CLI (median)", median(cli, n));
	server_stop(&s);
	free(args);
	free(ours);
	free(cli);
	bench_files(n < 5 ? n : 5);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t n = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &n) < 0)
		abort();
	close(fd);
	return ntohs(a.sin_port);
}

/* bench_pull's registry, killed when the bench gives up */
static pid_t registry_pid;

/* Runs sh -c cmd; exits the bench when it fails. */
static void sh_ok(const char *cmd)
{
	char *const argv[] = { "sh", "-c", (char *)cmd, NULL };
	pid_t p = fork();
	if (p == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	waitpid(p, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "bench: `%s` failed\n", cmd);
		if (registry_pid > 0)
			kill(registry_pid, SIGKILL);
		exit(1);
	}
}

/*
 * Pulls from a docker-registry on loopback: an image with a 100 MB layer of
 * its own on top of the sandbox image is pushed, then each round removes it
 * and pulls it back, once through session_create and once with `docker
 * pull`, interleaved. Only the own layer moves; the server's peak RSS shows
 * that the progress stream is not kept.
 */
static void bench_pull(int n)
{
	char dir[] = "/tmp/sandbox-mcp-bench-reg-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("bench: mkdtemp");
		exit(1);
	}
	int port = free_port();
	char *cfg = xasprintf("%s/config.yml", dir);
	FILE *f = fopen(cfg, "w");
	if (!f)
		abort();
	fprintf(f, "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: %s/data\n"
		   "http:\n  addr: 127.0.0.1:%d\n", dir, port);
	fclose(f);
	pid_t reg = fork();
	if (reg == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execlp("docker-registry", "docker-registry", "serve", cfg, (char *)NULL);
		_exit(127);
	}
	registry_pid = reg;
	char *ref = xasprintf("127.0.0.1:%d/sandbox-mcp-bench/pull:1", port);
	char *cmd = xasprintf("for i in $(seq 50); do curl -sf http://127.0.0.1:%d/v2/ >/dev/null && exit 0; "
			      "sleep 0.1; done; exit 1", port);
	sh_ok(cmd);
	free(cmd);
	cmd = xasprintf("d=$(mktemp -d) && printf 'FROM %s\\nRUN head -c 100000000 /dev/urandom > /tmp/blob\\n' > $d/Dockerfile"
			" && docker build -q --network none -t %s $d && rm -rf $d && docker push %s && docker rmi %s",
			SANDBOX_DEFAULT_IMAGE, ref, ref, ref);
	sh_ok(cmd);
	free(cmd);

	char *images = xasprintf("127.0.0.1:%d/sandbox-mcp-bench/*", port);
	setenv("SANDBOX_IMAGES", images, 1);
	setenv("SANDBOX_PULL", "missing", 1);
	struct server s;
	server_start(&s);
	unsetenv("SANDBOX_IMAGES");
	unsetenv("SANDBOX_PULL");
	free(images);
	free(server_call(&s, 1, "initialize", init_params));
	/* a session without a pull first: the growth measured below is the pulls' alone */
	json_t *warm = call_sc(&s, 2, "session_create", json_pack("{}"));
	json_decref(call_sc(&s, 3, "session_close",
			    json_pack("{s:s}", "session_id", json_string_value(json_object_get(warm, "session_id")))));
	json_decref(warm);
	long rss0 = rss_kb(s.pid, "VmHWM:");
	double *v = calloc((size_t)n, sizeof(double)), *a = calloc((size_t)n, sizeof(double));
	double *d = calloc((size_t)n, sizeof(double));
	double *p = calloc((size_t)n, sizeof(double)), *h = calloc((size_t)n, sizeof(double));
	char *rmi = xasprintf("docker rmi %s", ref);
	int id = 10;
	for (int i = 0; i < n; i++) {
		int64_t t0 = now_us();
		/* with a progress token, as a client showing a progress bar calls it */
		json_t *cr = call_sc_params(&s, id, "session_create",
					    json_pack("{s:s, s:{s:s}, s:{s:i}}", "name", "session_create", "arguments",
						      "image", ref, "_meta", "progressToken", id));
		id++;
		v[i] = since_ms(t0);
		p[i] = (double)json_integer_value(json_object_get(cr, "pull_ms"));
		if (!json_is_true(json_object_get(cr, "pulled"))) {
			fprintf(stderr, "bench: session_create did not pull\n");
			exit(1);
		}
		json_decref(call_sc(&s, id++, "session_close",
				    json_pack("{s:s}", "session_id", json_string_value(json_object_get(cr, "session_id")))));
		json_decref(cr);
		/* the same create with the image present: what the whole time owes to the container, not the pull */
		t0 = now_us();
		cr = call_sc(&s, id++, "session_create", json_pack("{s:s}", "image", ref));
		h[i] = since_ms(t0);
		json_decref(call_sc(&s, id++, "session_close",
				    json_pack("{s:s}", "session_id",
					      json_string_value(json_object_get(cr, "session_id")))));
		json_decref(cr);
		sh_ok(rmi);
		char *pv[] = { "docker", "pull", "-q", ref, NULL };
		a[i] = run_cli(pv);
		sh_ok(rmi);
	}
	double cli = median(a, n);
	for (int i = 0; i < n; i++)
		d[i] = v[i] - h[i];
	long rss1 = rss_kb(s.pid, "VmHWM:");
	row("session_create's pull_ms (median)", median(p, n), "ms", "docker pull (CLI, median)", cli);
	row("session_create pulling minus present (median)", median(d, n), "ms", "docker pull (CLI, median)", cli);
	row("session_create pulling, whole (median)", median(v, n), "ms", "session_create, image present",
	    median(h, n));
	row("server peak RSS after the pulls", (double)rss1 / 1024.0, "MiB", "before them (VmHWM)",
	    (double)rss0 / 1024.0);
	server_stop(&s);
	kill(reg, SIGKILL);
	waitpid(reg, NULL, 0);
	registry_pid = 0;
	cmd = xasprintf("rm -rf %s", dir);
	sh_ok(cmd);
	free(cmd);
	free(rmi);
	free(ref);
	free(cfg);
	free(v);
	free(a);
	free(d);
	free(h);
	free(p);
}

/* env_info's pool_ready of s. */
static long pool_ready(struct server *s, int id)
{
	json_t *sc = call_sc(s, id, "env_info", json_object());
	long n = (long)json_integer_value(json_object_get(sc, "pool_ready"));
	json_decref(sc);
	return n;
}

/* Waits (polling every 50 ms, at most 120 s) until s's pool holds want members. */
static void pool_wait(struct server *s, int *id, long want)
{
	for (int i = 0; i < 2400 && pool_ready(s, (*id)++) < want; i++)
		poll(NULL, 0, 50);
}

/* One session_create of args (stolen) timed, then closed; its time in ms. */
static double create_close(struct server *s, int *id, json_t *args)
{
	int64_t t0 = now_us();
	json_t *sc = call_sc(s, (*id)++, "session_create", args);
	double ms = since_ms(t0);
	json_decref(call_sc(s, (*id)++, "session_close",
			    json_pack("{s:s}", "session_id", json_string_value(json_object_get(sc, "session_id")))));
	json_decref(sc);
	return ms;
}

/* The raw API floor of a new container: create + start of the default image, then removed; ms. */
static double raw_create_start(struct engine *e)
{
	struct err err;
	char id[65];
	int64_t t0 = now_us();
	json_t *body = json_pack("{s:s, s:[s, s, s], s:{s:s, s:b}}", "Image", SANDBOX_DEFAULT_IMAGE, "Entrypoint",
				 "/bin/sh", "-c", "while sleep 3600; do :; done", "HostConfig", "NetworkMode", "none",
				 "Init", 1);
	if (engine_container_create(e, NULL, body, id, NULL, &err) < 0 ||
	    engine_container_start(e, NULL, id, &err) < 0) {
		fprintf(stderr, "bench: raw create: %s\n", err.msg);
		exit(1);
	}
	double ms = since_ms(t0);
	json_decref(body);
	engine_container_remove(e, NULL, id, &err);
	return ms;
}

#define PAR_SESSIONS 10
#define PAR_CALLS 100
#define PAR_CLI_CALLS 20

/*
 * PAR_SESSIONS callers, each making PAR_CALLS `run_command true` on a session
 * of its own, one after the other (a closed loop: the next call leaves when
 * the last answered), all through one server at once. Calls/s.
 */
static double parallel_calls(struct server *s, char sids[PAR_SESSIONS][16], int base)
{
	int sent[PAR_SESSIONS] = { 0 }, done = 0;
	int64_t t0 = now_us();
	for (int k = 0; k < PAR_SESSIONS; k++) {
		char *line = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":"
				       "\"run_command\",\"arguments\":{\"command\":\"true\",\"session_id\":\"%s\"}}}\n",
				       base + k, sids[k]);
		if (write_full(s->in, line, strlen(line)) < 0)
			abort();
		free(line);
		sent[k] = 1;
	}
	while (done < PAR_SESSIONS * PAR_CALLS) {
		char *nl;
		while ((nl = memchr(s->rbuf.data ? s->rbuf.data : "", '\n', s->rbuf.len))) {
			size_t n = (size_t)(nl - s->rbuf.data);
			char *line = xstrndup(s->rbuf.data, n);
			buf_consume(&s->rbuf, n + 1);
			char *idp = strstr(line, "\"id\":");
			int id = idp ? atoi(idp + 5) : -1;
			if (strstr(line, "\"isError\":true")) {
				fprintf(stderr, "bench: parallel run_command failed: %.400s\n", line);
				exit(1);
			}
			free(line);
			if (id < base || id >= base + PAR_SESSIONS * PAR_CALLS)
				continue;
			int k = (id - base) % PAR_SESSIONS;
			done++;
			if (sent[k] < PAR_CALLS) {
				char *req = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":"
						      "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\","
						      "\"session_id\":\"%s\"}}}\n",
						      base + sent[k] * PAR_SESSIONS + k, sids[k]);
				if (write_full(s->in, req, strlen(req)) < 0)
					abort();
				free(req);
				sent[k]++;
			}
		}
		if (done == PAR_SESSIONS * PAR_CALLS)
			break;
		char *tail;
		if (buf_reserve(&s->rbuf, 65536, &tail) < 0)
			abort();
		struct pollfd pfd = { .fd = s->out, .events = POLLIN };
		if (poll(&pfd, 1, 60000) == 0) {
			fprintf(stderr, "bench: no answer in 60 s; %d of %d answered; sent per session:", done,
				PAR_SESSIONS * PAR_CALLS);
			for (int k = 0; k < PAR_SESSIONS; k++)
				fprintf(stderr, " %d", sent[k]);
			fprintf(stderr, "\n");
			exit(1);
		}
		ssize_t r = read(s->out, tail, 65536);
		if (r <= 0) {
			fprintf(stderr, "bench: server closed its output\n");
			exit(1);
		}
		buf_commit(&s->rbuf, (size_t)r);
	}
	return PAR_SESSIONS * PAR_CALLS / (since_ms(t0) / 1000.0);
}

/* The same through `docker exec <ctr> true`: PAR_SESSIONS processes of PAR_CLI_CALLS each. Calls/s. */
static double parallel_cli(char ctrs[PAR_SESSIONS][65])
{
	pid_t kids[PAR_SESSIONS];
	int64_t t0 = now_us();
	for (int k = 0; k < PAR_SESSIONS; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			for (int i = 0; i < PAR_CLI_CALLS; i++) {
				char *dv[] = { "docker", "exec", ctrs[k], "true", NULL };
				run_cli(dv);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < PAR_SESSIONS; k++)
		waitpid(kids[k], NULL, 0);
	return PAR_SESSIONS * PAR_CLI_CALLS / (since_ms(t0) / 1000.0);
}

/*
 * The warm pool (SANDBOX_POOL_SIZE=2): session_create to ready from a full
 * pool, beside the raw API create + start and a fresh session_create (one
 * setting off the pool's), interleaved; then PAR_SESSIONS x PAR_CALLS
 * `run_command true` in parallel beside `docker exec` in parallel.
 */
static void bench_pool(int n)
{
	struct engine *e;
	struct err err;
	double *v = xcalloc((size_t)n, sizeof(double)), *a = xcalloc((size_t)n, sizeof(double)),
	       *f = xcalloc((size_t)n, sizeof(double));
	if (engine_create(getenv("DOCKER_HOST"), NULL, 30000, &e, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	setenv("SANDBOX_POOL_SIZE", "2", 1);
	setenv("SANDBOX_IDLE_TTL_S", "0", 1);
	setvbuf(stdout, NULL, _IOLBF, 0);
	struct server s;
	int id = 2;
	server_start(&s);
	free(server_call(&s, 1, "initialize", init_params));
	for (int i = 0; i < n; i++) {
		pool_wait(&s, &id, 2);
		/* the machine settles after the refill before the next figure */
		poll(NULL, 0, 300);
		v[i] = create_close(&s, &id, json_object());
		pool_wait(&s, &id, 2);
		poll(NULL, 0, 300);
		a[i] = raw_create_start(e);
		poll(NULL, 0, 300);
		f[i] = create_close(&s, &id, json_pack("{s:I}", "memory_mb", (json_int_t)256));
	}
	row("session_create from the pool (median)", median(v, n), "ms", "raw API create+start (median)", median(a, n));
	row("session_create fresh (median)", median(f, n), "ms", "raw API create+start (median)", median(a, n));

	char sids[PAR_SESSIONS][16], ctrs[PAR_SESSIONS][65];
	for (int k = 0; k < PAR_SESSIONS; k++) {
		json_t *sc = call_sc(&s, id++, "session_create", json_object());
		snprintf(sids[k], sizeof(sids[k]), "%s", json_string_value(json_object_get(sc, "session_id")));
		snprintf(ctrs[k], sizeof(ctrs[k]), "%s", json_string_value(json_object_get(sc, "container_id")));
		json_decref(sc);
		/* each session's agent is up before the figure (a session made fresh starts it on first use) */
		json_decref(call_sc(&s, id++, "run_command", json_pack("{s:s, s:s}", "command", "true", "session_id", sids[k])));
	}
	pool_wait(&s, &id, 2);
	double calls = parallel_calls(&s, sids, 1000000);
	double cli = parallel_cli(ctrs);
	char what[64], anchor[64];
	snprintf(what, sizeof(what), "%dx%d run_command true, parallel", PAR_SESSIONS, PAR_CALLS);
	snprintf(anchor, sizeof(anchor), "%dx%d docker exec true, parallel", PAR_SESSIONS, PAR_CLI_CALLS);
	row(what, calls, "/s", anchor, cli);
	server_stop(&s);
	unsetenv("SANDBOX_POOL_SIZE");
	unsetenv("SANDBOX_IDLE_TTL_S");
	engine_destroy(e);
	free(v);
	free(a);
	free(f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench SANDBOX_MCP_BIN [rounds] [files|save|run|pull|fileops|remote|pool]\n");
		return 2;
	}
	bin = argv[1];
	int rounds = argc > 2 ? atoi(argv[2]) : 30;
	if (rounds < 3)
		rounds = 3;
	(void)env_extra;
	util_json_init();
	signal(SIGPIPE, SIG_IGN);
	/* the rows outside the pool's mode measure fresh sessions, as before the pool: no background creates */
	setenv("SANDBOX_POOL_SIZE", "0", 0);
	if (argc > 3 && strcmp(argv[3], "files") == 0) {
		bench_files(rounds < 5 ? rounds : 5);
		return 0;
	}
	/* run: only the spawn, RSS and run_command rows (the agent's figures) */
	bool only_run = argc > 3 && strcmp(argv[3], "run") == 0;
	if (argc > 3 && strcmp(argv[3], "save") == 0) {
		bench_save(rounds < 5 ? rounds : 5);
		return 0;
	}
	if (argc > 3 && strcmp(argv[3], "remote") == 0) {
		bench_remote(rounds);
		return 0;
	}
	if (argc > 3 && strcmp(argv[3], "pull") == 0) {
		bench_pull(rounds < 5 ? rounds : 5);
		return 0;
	}
	if (argc > 3 && strcmp(argv[3], "fileops") == 0) {
		bench_fileops(rounds);
		return 0;
	}
	if (argc > 3 && strcmp(argv[3], "pool") == 0) {
		bench_pool(rounds < 10 ? rounds : 10);
		return 0;
	}
	double *v = calloc((size_t)rounds, sizeof(double)), *a = calloc((size_t)rounds, sizeof(double));

	/* 1. spawn -> initialize */
	for (int i = 0; i < rounds; i++) {
		struct server s;
		int64_t t0 = now_us();
		server_start(&s);
		free(server_call(&s, 1, "initialize", init_params));
		v[i] = (double)(now_us() - t0) / 1000.0;
		server_stop(&s);
		char *tv[] = { "/bin/true", NULL };
		a[i] = run_cli(tv);
	}
	row("spawn -> initialize reply (median)", median(v, rounds), "ms", "fork+exec /bin/true", median(a, rounds));
	/* what a client waits for before it can offer the tools: initialize, then tools/list */
	for (int i = 0; i < rounds; i++) {
		struct server s;
		int64_t t0 = now_us();
		server_start(&s);
		free(server_call(&s, 1, "initialize", init_params));
		static const char initialized[] = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n";
		if (write_full(s.in, initialized, strlen(initialized)) < 0)
			abort();
		free(server_call(&s, 2, "tools/list", "{}"));
		v[i] = (double)(now_us() - t0) / 1000.0;
		server_stop(&s);
		char *tv[] = { "/bin/true", NULL };
		a[i] = run_cli(tv);
	}
	row("spawn -> tools/list reply (median)", median(v, rounds), "ms", "fork+exec /bin/true", median(a, rounds));
	if (argc > 3 && strcmp(argv[3], "spawn") == 0)
		return 0;

	/* 2. idle RSS */
	struct server s;
	server_start(&s);
	free(server_call(&s, 1, "initialize", init_params));
	free(server_call(&s, 2, "tools/list", "{}"));
	row("idle server RSS (VmHWM)", (double)rss_kb(s.pid, "VmHWM:") / 1024.0, "MiB", NULL, 0);

	/* 3. run_command true, warm */
	char *r = server_call(&s, 3, "tools/call",
			      "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}");
	char *cid = strstr(r, "\"session_id\":\"");
	char sid[32] = "";
	if (cid)
		snprintf(sid, sizeof(sid), "%.12s", cid + 14);
	free(r);
	for (int i = 0; i < rounds; i++) {
		int64_t t0 = now_us();
		free(server_call(&s, 10 + i, "tools/call",
				 "{\"name\":\"run_command\",\"arguments\":{\"command\":\"true\"}}"));
		v[i] = (double)(now_us() - t0) / 1000.0;
	}
	double run_true = median(v, rounds);
	for (int i = 0; i < rounds; i++) {
		int64_t t0 = now_us();
		free(server_call(&s, 5000 + i, "tools/call",
				 "{\"name\":\"run_command\",\"arguments\":{\"argv\":[\"true\"]}}"));
		v[i] = (double)(now_us() - t0) / 1000.0;
	}
	double run_argv = median(v, rounds);

	/* the container behind the default session, for the anchors */
	char *info = server_call(&s, 9000, "tools/call",
				 "{\"name\":\"env_info\",\"arguments\":{\"session_id\":\"default\"}}");
	char container[65] = "";
	char *c = strstr(info, "\"container_id\":\"");
	if (c)
		snprintf(container, sizeof(container), "%.64s", c + 16);
	free(info);

	struct engine *e;
	struct err err;
	if (engine_create(getenv("DOCKER_HOST"), NULL, 30000, &e, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < rounds; i++) {
		const char *tv[] = { "true", NULL };
		char xid[65];
		struct engine_stream *st;
		int64_t t0 = now_us();
		json_t *cfg = json_pack("{s:b, s:b, s:[s]}", "AttachStdout", 1, "AttachStderr", 1, "Cmd", tv[0]);
		if (engine_exec_create(e, NULL, container, cfg, xid, &err) < 0 ||
		    engine_exec_start(e, NULL, xid, &st, &err) < 0) {
			fprintf(stderr, "bench: exec floor: %s\n", err.msg);
			return 1;
		}
		json_decref(cfg);
		char tmp[4096];
		while (read(engine_stream_fd(st), tmp, sizeof(tmp)) > 0)
			;
		engine_stream_destroy(st);
		bool running = true;
		int code;
		while (running && engine_exec_inspect(e, NULL, xid, &running, &code, &err) == 0)
			;
		a[i] = (double)(now_us() - t0) / 1000.0;
	}
	double floor_ms = median(a, rounds);
	int cli_rounds = rounds < 20 ? rounds : 20;
	for (int i = 0; i < cli_rounds; i++) {
		char *dv[] = { "docker", "exec", container, "true", NULL };
		v[i] = run_cli(dv);
	}
	double cli_ms = median(v, cli_rounds);
	row("run_command true, warm (median)", run_true, "ms", "raw API exec floor (median)", floor_ms);
	row("run_command true, warm (median)", run_true, "ms", "docker exec CLI (median)", cli_ms);
	row("run_command argv [true], warm", run_argv, "ms", "raw API exec floor (median)", floor_ms);
	if (only_run) {
		server_stop(&s);
		return 0;
	}

	/* 3b. run_python: interpreter start (a fresh one each time), then 1+1 warm */
	int n10 = rounds < 10 ? rounds : 10;
	int got = 0;
	for (int i = 0; i < n10; i++) {
		/* apart, as a first use is: back to back, the last one's exit competes for the CPU */
		poll(NULL, 0, 300);
		char *pr = server_call(&s, 40000 + i, "tools/call",
				       "{\"name\":\"run_python\",\"arguments\":{\"code\":\"1+1\",\"fresh\":true}}");
		char *m = strstr(pr, "new interpreter started in ");
		if (m)
			v[got++] = atof(m + strlen("new interpreter started in "));
		free(pr);
	}
	if (got)
		row("run_python start (median)", median(v, got), "ms", "raw API exec floor (median)",
		    floor_ms);
	else
		printf("run_python: not available in this build\n");
	free(server_call(&s, 41000, "tools/call", "{\"name\":\"run_python\",\"arguments\":{\"code\":\"1+1\"}}"));
	for (int i = 0; got && i < rounds; i++) {
		int64_t t0 = now_us();
		free(server_call(&s, 42000 + i, "tools/call",
				 "{\"name\":\"run_python\",\"arguments\":{\"code\":\"1+1\"}}"));
		v[i] = (double)(now_us() - t0) / 1000.0;
	}
	for (int i = 0; got && i < cli_rounds; i++) {
		char *dv[] = { "docker", "exec", container, "python3", "-c", "1+1", NULL };
		a[i] = run_cli(dv);
	}
	if (got)
		row("run_python 1+1, warm (median)", median(v, rounds), "ms", "docker exec python3 -c 1+1 (CLI)",
		    median(a, cli_rounds));

	/* 4. session_create vs raw create + start */
	int n5 = rounds < 5 ? rounds : 5;
	for (int i = 0; i < n5; i++) {
		int64_t t0 = now_us();
		char *cr = server_call(&s, 20000 + i, "tools/call", "{\"name\":\"session_create\",\"arguments\":{}}");
		v[i] = (double)(now_us() - t0) / 1000.0;
		char *p = strstr(cr, "\"session_id\":\"");
		char args[128];
		snprintf(args, sizeof(args), "{\"name\":\"session_close\",\"arguments\":{\"session_id\":\"%.12s\"}}",
			 p ? p + 14 : "");
		free(cr);
		free(server_call(&s, 21000 + i, "tools/call", args));

		t0 = now_us();
		char id[65];
		json_t *body = json_pack("{s:s, s:[s, s, s], s:{s:s, s:b}}", "Image", "sandbox-mcp-python:latest",
					 "Entrypoint", "/bin/sh", "-c", "while sleep 3600; do :; done", "HostConfig",
					 "NetworkMode", "none", "Init", 1);
		if (engine_container_create(e, NULL, body, id, NULL, &err) < 0 ||
		    engine_container_start(e, NULL, id, &err) < 0) {
			fprintf(stderr, "bench: raw create: %s\n", err.msg);
			return 1;
		}
		a[i] = (double)(now_us() - t0) / 1000.0;
		json_decref(body);
		engine_container_remove(e, NULL, id, &err);
	}
	row("session_create to ready (median)", median(v, n5), "ms", "raw API create+start (median)", median(a, n5));

	/* 5. RSS with 10 sessions (the default one counts) */
	for (int i = 0; i < 9; i++)
		free(server_call(&s, 30000 + i, "tools/call", "{\"name\":\"session_create\",\"arguments\":{}}"));
	row("server RSS with 10 sessions", (double)rss_kb(s.pid, "VmRSS:") / 1024.0, "MiB", NULL, 0);
	row("server peak RSS (VmHWM) so far", (double)rss_kb(s.pid, "VmHWM:") / 1024.0, "MiB", NULL, 0);
	server_stop(&s);
	engine_destroy(e);

	bench_files(rounds < 5 ? rounds : 5);
	bench_save(rounds < 5 ? rounds : 5);
	if (access("/usr/bin/docker-registry", X_OK) == 0)
		bench_pull(rounds < 5 ? rounds : 5);
	free(v);
	free(a);
	(void)sid;
	return 0;
}
