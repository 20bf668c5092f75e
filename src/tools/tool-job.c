/*
 * tool-job.c - background jobs (docs/jobs.md): run_command {background:
 * true} starts one, the job tool lists them, reads their output, sends
 * signals, waits for their end or for a port to answer.
 *
 * A job is a process group started by a detached shell in the container,
 * with its state in a folder of the workspace, .sandbox-mcp/jobs/<n>/:
 * command, started (unix seconds), pid (the group's leader), out (stdout
 * and stderr together, the first SANDBOX_OUTPUT_SAVE_MB bytes; the rest is
 * read and dropped so the job never blocks on a full pipe; head writes
 * unbuffered through stdbuf where the image has it, else its output shows
 * when it ends), rc once it
 * ended. So the server keeps nothing about jobs: they are the container's,
 * end with it (close, idle TTL, exit, the janitor, a rollback), and are
 * held to its limits. Every step is a fixed script run as the sandbox user,
 * with the values as its arguments.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"
#include "base/util.h"
#include "sandbox/exec.h"
#include "tools/jobs.h"
#include "tools/tools.h"

/* Below the workspace. */
#define JOB_DIR ".sandbox-mcp/jobs"
/* Running jobs per session at most. */
#define JOB_MAX 16
/* Output bytes one job call returns at most. */
#define JOB_READ_MAX (32u * 1024)
/* Longest wait of one call, s. */
#define JOB_WAIT_MAX 120

/*
 * The scripts, each the prelude and then its own part. The prelude knows a
 * job's state from its folder: "running" only while the pid it recorded is
 * alive with the start time it recorded, in this very container (its
 * hostname, in the folder as host): a folder that came from a checkpoint, or
 * a pid reused since, is "lost", never another process's. A job whose pid
 * is not written yet (the start answers before it is) counts as running
 * for 30 s. Only shell builtins in the per-job checks: a fork costs ~1 ms.
 *
 * start: $1 jobs folder, $2 output cap, $3 most running, $4 workdir, $5 the
 * command; prints "<id>" at once (the pid is in the list once the job
 * runs). The id is one past the highest (up to 6 digits): one mkdir, an
 * exec of ~3 ms in a container, where counting up from 1 made one per
 * job ever started. The wrapper runs in a session of its own (a
 * cancelled start's kill does not reach it) and the command in another (a
 * signal to its group does not reach the wrapper), which records its exit
 * status (128+N after signal N) once all its output is written.
 *
 * list: $1 jobs folder: one line per job, the newest 200, "<id> <state>
 * <rc|-> <started> <pid> <cpu ticks> <rss KiB> <out bytes> <command>", the
 * command's first 200 bytes on one line; cpu and rss add up its process
 * group (awk over /proc; 0 without awk).
 *
 * output: $1 job folder, $2 offset, $3 tail bytes (0: from offset), $4 wait
 * s, $5 bytes at most: waits up to $4 s for output past $2 while the job
 * runs, then prints "<size> <start> <rc|-> <state>" and the bytes.
 *
 * signal: $1 job folder, $2 signal name: the job's process group, while any
 * of it lives (also after its leader ended), in this container; exit 5 when
 * nothing is left to signal.
 */
/* What every script starts with: me (this container), alive DIR and state DIR; JOB_NOW is the server's clock. */
#define JOB_PRELUDE                                                                                                             \
	"read -r me < /proc/sys/kernel/hostname\n"                                                                              \
	"alive() { h=; read -r h < \"$1/host\" 2>/dev/null; [ \"$h\" = \"$me\" ] || return 1\n"                                 \
	"  if [ ! -e \"$1/pid\" ]; then a=0; read -r a < \"$1/started\" 2>/dev/null; [ $((JOB_NOW - a)) -lt 30 ]; return; fi\n" \
	"  p=0; t=; read -r p t < \"$1/pid\" 2>/dev/null || return 1; [ \"$p\" -gt 1 ] 2>/dev/null || return 1\n"               \
	"  s=; read -r s < \"/proc/$p/stat\" 2>/dev/null || return 1; s=${s##*) }; set -- $s; [ \"${20}\" = \"$t\" ]; }\n"      \
	"state() { if [ -e \"$1/rc\" ]; then echo exited; elif alive \"$1\"; then echo running; else echo lost; fi; }\n"

static const char start_script[] = JOB_PRELUDE
	"set -u; j=$1; cap=$2; max=$3; wd=$4; [ -d \"$j\" ] || mkdir -p \"$j\" || exit 1\n"
	"n=0; i=0; for d in \"$j\"/*/; do [ -d \"$d\" ] || continue; k=${d%/}; k=${k##*/}\n"
	"  case $k in ''|*[!0-9]*|???????*) ;; *) [ \"$k\" -gt \"$i\" ] && i=$k;; esac\n"
	"  [ ! -e \"$d/rc\" ] && alive \"$d\" && n=$((n+1)); done\n"
	"[ \"$n\" -ge \"$max\" ] && { echo \"$n running\"; exit 3; }\n"
	"i=$((i+1)); while ! mkdir \"$j/$i\" 2>/dev/null; do i=$((i+1)); [ \"$i\" -gt 1000000 ] && exit 1; done\n"
	"d=$j/$i; printf '%s' \"$5\" > \"$d/command\"; echo \"$JOB_NOW\" > \"$d/started\"; : > \"$d/out\"; echo \"$me\" > \"$d/host\"\n"
	"inner='c=$1; s=; read -r s < /proc/$$/stat; s=${s##*) }; set -- $s; echo \"$$ ${20}\" > \"$0/pid.part\"\n"
	"mv \"$0/pid.part\" \"$0/pid\"; exec sh -c \"$c\"'\n"
	"S=; command -v setsid >/dev/null 2>&1 && S=setsid\n"
	"$S sh -c 'd=$1; cap=$2; cd \"$3\" || { echo 1 > \"$d/rc\"; exit 1; }; S=; command -v setsid >/dev/null 2>&1 && S=setsid\n"
	"  B=; command -v stdbuf >/dev/null 2>&1 && B=\"stdbuf -o0\"\n"
	"  ( $S sh -c \"$5\" \"$d\" \"$4\" & wait $!; echo $? > \"$d/rc.part\"; mv \"$d/rc.part\" \"$d/rc\" ) 2>&1 < /dev/null |\n"
	"  { $B head -c \"$cap\" >> \"$d/out\"; cat > /dev/null; }' sandbox-mcp-job \"$d\" \"$cap\" \"$wd\" \"$5\" \"$inner\" \\\n"
	"  < /dev/null > /dev/null 2>&1 &\n"
	"echo \"$i\"\n";

static const char list_script[] = JOB_PRELUDE
	"j=$1; [ -d \"$j\" ] || exit 0\n"
	"for i in $(ls \"$j\" | grep -E '^[0-9]+$' | sort -n | tail -200); do d=$j/$i\n"
	"  p=0; read -r p x < \"$d/pid\" 2>/dev/null; rc=-; read -r rc < \"$d/rc\" 2>/dev/null; st=$(state \"$d\")\n"
	"  u=0; r=0; if [ \"$st\" = running ] && command -v awk >/dev/null 2>&1; then\n"
	"    set -- $(cat /proc/[0-9]*/stat 2>/dev/null | awk -v g=\"$p\" '{ s=$0; sub(/.*\\) /, \"\", s);\n"
	"      split(s, f, \" \"); if (f[3] == g) { u += f[12] + f[13]; r += f[22] } } END { print u+0, r+0 }')\n"
	"    u=$1; r=$(( $2 * 4 )); fi\n"
	"  sa=0; read -r sa < \"$d/started\" 2>/dev/null\n"
	"  printf '%s %s %s %s %s %s %s %s %s\\n' \"$i\" \"$st\" \"${rc:--}\" \"$sa\" \"${p:-0}\" \\\n"
	"    \"$u\" \"$r\" \"$(wc -c < \"$d/out\" 2>/dev/null || echo 0)\" \"$(head -c 200 \"$d/command\" | tr '\\n\\t' '  ')\"\n"
	"done\n";

static const char output_script[] = JOB_PRELUDE
	"d=$1; off=$2; tl=$3; w=$4; max=$5; [ -d \"$d\" ] || { echo nojob; exit 4; }\n"
	"k=0; while [ \"$k\" -lt $((w * 10)) ]; do [ \"$(wc -c < \"$d/out\")\" -gt \"$off\" ] && break\n"
	"  [ \"$(state \"$d\")\" = running ] || break; sleep 0.1; k=$((k+1)); done\n"
	"sz=$(wc -c < \"$d/out\"); st=$off; [ \"$tl\" -gt 0 ] && { st=$((sz - tl)); [ \"$st\" -lt 0 ] && st=0; }\n"
	"[ \"$st\" -gt \"$sz\" ] && st=$sz\n"
	"echo \"$sz $st $(cat \"$d/rc\" 2>/dev/null || echo -) $(state \"$d\")\"; tail -c +$((st + 1)) \"$d/out\" | head -c \"$max\"\n";

static const char signal_script[] = JOB_PRELUDE
	"d=$1; [ -d \"$d\" ] || { echo nojob; exit 4; }\n"
	"h=; read -r h < \"$d/host\" 2>/dev/null; [ \"$h\" = \"$me\" ] || { echo ended; exit 5; }\n"
	"k=0; while [ ! -e \"$d/pid\" ] && [ ! -e \"$d/rc\" ] && [ \"$k\" -lt 200 ]; do sleep 0.01; k=$((k+1)); done\n"
	"p=0; read -r p x < \"$d/pid\" 2>/dev/null; [ \"$p\" -gt 1 ] 2>/dev/null || exit 5\n"
	"kill -0 -- -\"$p\" 2>/dev/null || kill -0 -\"$p\" 2>/dev/null || alive \"$d\" || { echo ended; exit 5; }\n"
	"kill -s \"$2\" -- -\"$p\" 2>/dev/null || kill -s \"$2\" -\"$p\" 2>/dev/null || kill -s \"$2\" \"$p\"\n";

/* $1 port, $2 url ("" for the port), $3 timeout s: 0 once it answers, 1 when it did not in time. */
static const char ready_script[] =
	"import socket, sys, time, urllib.request\n"
	"port, url, end = int(sys.argv[1]), sys.argv[2], time.time() + float(sys.argv[3])\n"
	"last = ''\n"
	"while True:\n"
	"    try:\n"
	"        if url:\n"
	"            class NoRedirect(urllib.request.HTTPRedirectHandler):\n"
	"                def redirect_request(self, *a, **k): return None\n"
	"            o = urllib.request.build_opener(NoRedirect, urllib.request.ProxyHandler({}))\n"
	"            try:\n"
	"                code = o.open(url, timeout=2).status\n"
	"            except urllib.error.HTTPError as e:\n"
	"                code = e.code\n"
	"            if code < 400: print(code); sys.exit(0)\n"
	"            last = 'HTTP %d' % code\n"
	"        else:\n"
	"            for host in ('127.0.0.1', '::1'):\n"
	"                try:\n"
	"                    socket.create_connection((host, port), timeout=1).close(); print(host); sys.exit(0)\n"
	"                except OSError as e: last = str(e)\n"
	"    except Exception as e: last = str(e)\n"
	"    if time.time() > end: print(last); sys.exit(1)\n"
	"    time.sleep(0.1)\n";

static void jobs_dir(const struct tool_ctx *ctx, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/" JOB_DIR, ctx->svc->cfg->workspace);
}

/*
 * Runs a fixed script as the sandbox user, keeping up to JOB_READ_MAX and a
 * line of stdout whole; 0 with *xr (release it) and *out (stdout, owned),
 * or -errno with e (xr released).
 */
static int job_exec(struct tool_ctx *ctx, struct session *s, const char *const *argv, int timeout_s,
		    struct exec_result *xr, char **out, size_t *outlen, struct err *e)
{
	/* the time from here: the scripts need it, and `date` would be a fork each */
	char now[40];
	snprintf(now, sizeof(now), "JOB_NOW=%lld", (long long)time(NULL));
	const char *env[] = { now, NULL };
	struct exec_spec spec = {
		.argv = argv,
		.env = env,
		.workdir = ctx->svc->cfg->workspace,
		.user = s->user,
		.guard = session_guard(s),
		.timeout_ms = timeout_s * 1000,
		.cap = 2 * (JOB_READ_MAX + 4096),
	};
	/* through the session's agent when it has one (a round trip, not an exec's three) */
	int r = session_run(ctx->call, s, &spec, xr, e);
	if (r < 0) {
		exec_result_finish(xr); /* what the run took, whichever way it failed */
		return tool_session_gone(ctx, s, r, e);
	}
	struct buf b;
	buf_init(&b, SIZE_MAX);
	capture_render(&xr->out, &b);
	size_t n = b.len;
	(void)buf_append(&b, "", 1);
	*out = buf_steal(&b, NULL);
	if (outlen)
		*outlen = n;
	return 0;
}

int job_start(struct tool_ctx *ctx, struct session *s, const char *command, const char *workdir,
	      struct tool_result *res)
{
	char dir[PATH_MAX], cap[24], max[8];
	struct exec_result xr;
	struct err e;
	err_clear(&e);
	jobs_dir(ctx, dir, sizeof(dir));
	snprintf(cap, sizeof(cap), "%llu", (unsigned long long)ctx->svc->cfg->output_save_mb << 20);
	snprintf(max, sizeof(max), "%d", JOB_MAX);
	const char *argv[] = { "sh", "-c", start_script, "sandbox-mcp-job", dir, cap, max, workdir, command, NULL };
	int64_t t0 = now_ms();
	char *out = NULL;
	int r = job_exec(ctx, s, argv, 30, &xr, &out, NULL, &e);
	unsigned id = 0;
	if (r == 0 && xr.exit_code == 3)
		r = err_set(&e, ERRCODE_TOO_MANY_PROCESSES, -EAGAIN,
			    "session %s runs %d background jobs, the most it may: end one with job {action: "
			    "\"signal\"} first (job {action: \"list\"} shows them)",
			    s->id, JOB_MAX);
	else if (r == 0 && (xr.exit_code != 0 || sscanf(out, "%u", &id) != 1 || id == 0))
		r = err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "the background job did not start (exit %d): %.200s",
			    xr.exit_code, out);
	if (out) /* job_exec succeeded */
		exec_result_finish(&xr);
	free(out);
	if (r < 0)
		return tool_fail(res, &e);
	tool_text(res,
		  "Job %u started in session %s (%lld ms). job {action: \"output\", job_id: \"%u\"} reads its "
		  "output; job {action: \"ready\", port: N} waits for a server to listen; job {action: "
		  "\"signal\"} stops it. It ends with the session.",
		  id, s->id, (long long)(now_ms() - t0), id);
	char idstr[16];
	snprintf(idstr, sizeof(idstr), "%u", id);
	tool_structured(res, json_pack("{s:s, s:s, s:s}", "session_id", s->id, "job_id", idstr, "state", "running"));
	return 0;
}

/* One line of list_script's output as JSON; NULL for a line that is not one. */
static json_t *job_line(char *line, long ticks_per_s)
{
	char id[16], state[16], rc[16];
	long long started, pid, ticks, rss, bytes;
	int used = 0;
	if (sscanf(line, "%15s %15s %15s %lld %lld %lld %lld %lld %n", id, state, rc, &started, &pid, &ticks, &rss,
		   &bytes, &used) != 8)
		return NULL;
	json_t *j = json_pack("{s:s, s:s, s:o, s:I, s:I, s:I, s:I, s:I}", "job_id", id, "state", state, "command",
			      json_string_lossy(line + used, strlen(line + used)), "started", (json_int_t)started,
			      "pid", (json_int_t)pid, "cpu_ms",
			      (json_int_t)(ticks * 1000 / (ticks_per_s > 0 ? ticks_per_s : 100)), "rss_kb",
			      (json_int_t)rss, "output_bytes", (json_int_t)bytes);
	if (strcmp(rc, "-") != 0)
		json_object_set_new(j, "exit_code", json_integer(atoi(rc)));
	return j;
}

static int job_list(struct tool_ctx *ctx, struct session *s, struct tool_result *res)
{
	char dir[PATH_MAX];
	struct exec_result xr;
	struct err e;
	err_clear(&e);
	jobs_dir(ctx, dir, sizeof(dir));
	const char *argv[] = { "sh", "-c", list_script, "sandbox-mcp-job", dir, NULL };
	char *text = NULL;
	if (job_exec(ctx, s, argv, 30, &xr, &text, NULL, &e) < 0)
		return tool_fail(res, &e);
	json_t *jobs = json_array();
	for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		json_t *j = job_line(line, 100);
		if (!j)
			continue;
		json_t *rc = json_object_get(j, "exit_code");
		char rcs[24] = "";
		if (rc)
			snprintf(rcs, sizeof(rcs), " %lld", (long long)json_integer_value(rc));
		tool_text(res, "job %s  %s%s  pid %lld  cpu %lld ms  rss %lld KiB  %s",
			  json_string_value(json_object_get(j, "job_id")),
			  json_string_value(json_object_get(j, "state")), rcs,
			  (long long)json_integer_value(json_object_get(j, "pid")),
			  (long long)json_integer_value(json_object_get(j, "cpu_ms")),
			  (long long)json_integer_value(json_object_get(j, "rss_kb")),
			  json_string_value(json_object_get(j, "command")));
		json_array_append_new(jobs, j);
	}
	free(text);
	exec_result_finish(&xr);
	if (!json_array_size(jobs))
		tool_text(res, "No background jobs in session %s; run_command {background: true} starts one.", s->id);
	tool_structured(res, json_pack("{s:s, s:o}", "session_id", s->id, "jobs", jobs));
	return 0;
}

/* The job args name: its folder in dir, or -EINVAL with e. */
static int job_folder(const struct tool_ctx *ctx, json_t *args, char *out, size_t outsz, struct err *e)
{
	const char *id = json_string_value(json_object_get(args, "job_id"));
	uint64_t n;
	char dir[PATH_MAX];
	if (!id || parse_u64(id, 1, 100000, &n) < 0)
		return err_set(e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "job_id must be a job's number (job {action: \"list\"} shows them)");
	jobs_dir(ctx, dir, sizeof(dir));
	snprintf(out, outsz, "%s/%llu", dir, (unsigned long long)n);
	return 0;
}

/* The exit status of a job script that found no job (4), as the error to give. */
static int no_job(json_t *args, struct err *e)
{
	return err_set(e, ERRCODE_INVALID_ARGUMENT, -ENOENT,
		       "no job %.20s in this session (job {action: \"list\"} shows them; a rollback ends them)",
		       json_string_value(json_object_get(args, "job_id")));
}

static int job_output(struct tool_ctx *ctx, struct session *s, json_t *args, struct tool_result *res, bool wait_end)
{
	char dir[PATH_MAX], off[24], tl[24], w[8], max[16];
	json_int_t offset = json_integer_value(json_object_get(args, "offset"));
	json_int_t tail = json_integer_value(json_object_get(args, "tail"));
	json_t *jw = json_object_get(args, "wait_s");
	json_int_t wait = jw ? json_integer_value(jw) : wait_end ? 30 : 0;
	struct exec_result xr;
	struct err e;
	char *out = NULL;
	err_clear(&e);
	if (job_folder(ctx, args, dir, sizeof(dir), &e) < 0)
		return tool_fail(res, &e);
	snprintf(off, sizeof(off), "%lld", (long long)(offset > 0 ? offset : 0));
	snprintf(tl, sizeof(tl), "%lld", (long long)(tail > 0 ? tail : 0));
	snprintf(w, sizeof(w), "%lld", (long long)(wait > 0 ? (wait < JOB_WAIT_MAX ? wait : JOB_WAIT_MAX) : 0));
	/* waiting for the end: nothing is read before it, so the offset is past everything */
	snprintf(max, sizeof(max), "%u", JOB_READ_MAX);
	const char *argv[] = { "sh",
			       "-c",
			       output_script,
			       "sandbox-mcp-job",
			       dir,
			       wait_end ? "999999999999" : off,
			       wait_end ? "4096" : tl,
			       w,
			       max,
			       NULL };
	size_t outlen = 0;
	if (job_exec(ctx, s, argv, JOB_WAIT_MAX + 30, &xr, &out, &outlen, &e) < 0)
		return tool_fail(res, &e);
	long long size = 0, start = 0;
	char rc[16] = "-", state[16] = "";
	int used = 0;
	int r = 0;
	if (xr.exit_code == 4)
		r = no_job(args, &e);
	else if (sscanf(out, "%lld %lld %15s %15s%n", &size, &start, rc, state, &used) != 4)
		r = err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "reading the job's output failed: %.200s", out);
	if (r < 0) {
		free(out);
		exec_result_finish(&xr);
		return tool_fail(res, &e);
	}
	/* the bytes as they are, NUL included: the length is the capture's, not strlen's */
	const char *data = out + used + (out[used] == '\n');
	size_t n = outlen - (size_t)(data - out);
	json_t *st = json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:o}", "session_id", s->id, "job_id",
			       json_string_value(json_object_get(args, "job_id")), "state", state, "offset",
			       (json_int_t)start, "next_offset", (json_int_t)(start + (long long)n), "size",
			       (json_int_t)size, "output", json_string_lossy(data, n));
	if (strcmp(rc, "-") != 0)
		json_object_set_new(st, "exit_code", json_integer(atoi(rc)));
	tool_text(res, "job %s: %s%s%s; bytes %lld-%lld of %lld%s", json_string_value(json_object_get(args, "job_id")),
		  state, strcmp(rc, "-") ? ", exit code " : "", strcmp(rc, "-") ? rc : "", start, start + (long long)n,
		  size,
		  wait_end && strcmp(state, "running") == 0
			  ? " (still running: wait again, or job {action: \"signal\"})"
			  : "");
	if (n)
		tool_text_bytes(res, "", data, n);
	tool_structured(res, st);
	free(out);
	exec_result_finish(&xr);
	return 0;
}

static int job_signal(struct tool_ctx *ctx, struct session *s, json_t *args, struct tool_result *res)
{
	static const char *const names[] = { "TERM", "INT", "KILL", "HUP", "QUIT", "USR1", "USR2", "STOP", "CONT" };
	const char *sig = json_string_value(json_object_get(args, "signal"));
	char dir[PATH_MAX];
	struct exec_result xr;
	struct err e;
	char *out = NULL;
	err_clear(&e);
	if (!sig)
		sig = "TERM";
	bool known = false;
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		known = known || strcmp(sig, names[i]) == 0;
	if (!known)
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"signal '%.20s' must be one of TERM, INT, KILL, HUP, QUIT, USR1, USR2, STOP, CONT", sig);
	if (!known || job_folder(ctx, args, dir, sizeof(dir), &e) < 0)
		return tool_fail(res, &e);
	const char *argv[] = { "sh", "-c", signal_script, "sandbox-mcp-job", dir, sig, NULL };
	if (job_exec(ctx, s, argv, 30, &xr, &out, NULL, &e) < 0)
		return tool_fail(res, &e);
	int code = xr.exit_code;
	free(out);
	exec_result_finish(&xr);
	if (code == 4)
		return tool_fail(res, (no_job(args, &e), &e));
	if (code == 5) {
		tool_text(res, "job %s has ended: nothing of it is left to signal.",
			  json_string_value(json_object_get(args, "job_id")));
	} else if (code != 0) {
		err_set(&e, ERRCODE_ENGINE_ERROR, -EIO, "kill -%s failed (exit %d)", sig, code);
		return tool_fail(res, &e);
	} else {
		tool_text(res, "Sent SIG%s to job %s and its process group; job {action: \"wait\"} waits for its end.",
			  sig, json_string_value(json_object_get(args, "job_id")));
	}
	tool_structured(res, json_pack("{s:s, s:s, s:s, s:b}", "session_id", s->id, "job_id",
				       json_string_value(json_object_get(args, "job_id")), "signal", sig, "sent",
				       code == 0));
	return 0;
}

/* An http URL of the sandbox's own loopback (the check runs inside it, but a name is not loopback). */
static bool own_url(const char *url)
{
	static const char *const hosts[] = { "http://127.0.0.1", "http://localhost", "http://[::1]" };
	for (size_t i = 0; i < ARRAY_SIZE(hosts); i++) {
		size_t n = strlen(hosts[i]);
		if (strncmp(url, hosts[i], n) == 0 && (url[n] == ':' || url[n] == '/' || url[n] == '\0'))
			return !strchr(url, '@'); /* no userinfo: http://127.0.0.1:1@example.com/ is example.com */
	}
	return false;
}

static int job_ready(struct tool_ctx *ctx, struct session *s, json_t *args, struct tool_result *res)
{
	json_int_t port = json_integer_value(json_object_get(args, "port"));
	const char *url = json_string_value(json_object_get(args, "url"));
	json_t *jt = json_object_get(args, "timeout_s");
	json_int_t t = jt ? json_integer_value(jt) : 30;
	char ps[16], ts[16];
	struct exec_result xr;
	struct err e;
	char *out = NULL;
	err_clear(&e);
	if (!url && (port < 1 || port > 65535))
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL, "ready needs port (1-65535) or url");
	else if (url && !own_url(url))
		err_set(&e, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			"url must be the sandbox's own: http://127.0.0.1:PORT/..., http://localhost:PORT/... or "
			"http://[::1]:PORT/...");
	if (e.code)
		return tool_fail(res, &e);
	snprintf(ps, sizeof(ps), "%lld", (long long)(url ? 0 : port));
	snprintf(ts, sizeof(ts), "%lld", (long long)(t > 0 && t <= JOB_WAIT_MAX ? t : 30));
	const char *argv[] = { "python3", "-c", ready_script, ps, url ? url : "", ts, NULL };
	int64_t t0 = now_ms();
	if (job_exec(ctx, s, argv, JOB_WAIT_MAX + 30, &xr, &out, NULL, &e) < 0)
		return tool_fail(res, &e);
	int code = xr.exit_code;
	int64_t ms = now_ms() - t0;
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = '\0';
	if (code == 127)
		err_set(&e, ERRCODE_PYTHON_NOT_FOUND, -ENOENT, "ready needs python3 in the image");
	else if (code != 0)
		err_set(&e, ERRCODE_TIMEOUT, -ETIMEDOUT, "%s did not answer within %s s (last: %.200s)",
			url ? url : "the port", ts, out);
	free(out);
	exec_result_finish(&xr);
	if (e.code)
		return tool_fail(res, &e);
	tool_text(res, "%s%s answers (%lld ms).", url ? url : "port ", url ? "" : ps, (long long)ms);
	tool_structured(res, json_pack("{s:s, s:b, s:I}", "session_id", s->id, "ready", 1, "ms", (json_int_t)ms));
	return 0;
}

static int job_tool(struct tool_ctx *ctx, json_t *args, struct tool_result *res)
{
	const char *action = json_string_value(json_object_get(args, "action"));
	struct session *s;
	if (tool_session(ctx, args, &s, res) < 0)
		return 0;
	int r;
	if (!action || strcmp(action, "list") == 0)
		r = job_list(ctx, s, res);
	else if (strcmp(action, "output") == 0)
		r = job_output(ctx, s, args, res, false);
	else if (strcmp(action, "wait") == 0)
		r = job_output(ctx, s, args, res, true);
	else if (strcmp(action, "signal") == 0)
		r = job_signal(ctx, s, args, res);
	else
		r = job_ready(ctx, s, args, res);
	session_put(ctx->svc->sessions, s);
	return r;
}

const struct tool_entry tool_job_entry = {
	.name = "job",
	.title = "Background jobs",
	.description =
		"The session's background jobs (run_command {background: true} starts one: a dev server, a "
		"watcher, a long build). list (default): each job's state, exit code, start, CPU and memory. "
		"output: its output from offset (or its last tail bytes), optionally waiting up to wait_s for more. "
		"wait: until it ends (up to wait_s, default 30). signal: TERM (default), INT, KILL... to its whole "
		"process group. ready: wait until port (or url) in the sandbox answers, instead of sleeping.",
	.input_schema =
		"{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
		"\"action\":{\"type\":\"string\",\"enum\":[\"list\",\"output\",\"wait\",\"signal\",\"ready\"],"
		"\"description\":\"list (default), output, wait, signal or ready\"},"
		"\"job_id\":{\"type\":\"string\",\"maxLength\":8,\"description\":\"output, wait, signal: the job "
		"(at most 8 characters)\"},"
		"\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"output: first byte to read "
		"(next_offset of the last read; at least 0)\"},"
		"\"tail\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":32768,\"description\":\"output: read the "
		"last this many bytes instead (from 1 to 32768)\"},"
		"\"wait_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120,\"description\":\"output: wait up to "
		"this for new output; wait: for the end (default 30; from 0 to 120)\"},"
		"\"signal\":{\"type\":\"string\",\"enum\":[\"TERM\",\"INT\",\"KILL\",\"HUP\",\"QUIT\",\"USR1\",\"USR2\","
		"\"STOP\",\"CONT\"],\"description\":\"signal: which (default TERM)\"},"
		"\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,\"description\":\"ready: the TCP "
		"port in the sandbox to wait for (from 1 to 65535)\"},"
		"\"url\":{\"type\":\"string\",\"maxLength\":2048,\"description\":\"ready: or an http://127.0.0.1:PORT/ "
		"URL that must answer 2xx or 3xx (at most 2048 characters)\"},"
		"\"timeout_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":120,\"description\":\"ready: how long "
		"to wait (default 30; from 1 to 120)\"}," TOOL_SESSION_ARG "}}",
	.output_schema =
		"{\"type\":\"object\",\"properties\":{\"session_id\":{\"type\":\"string\"},"
		"\"job_id\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"},\"exit_code\":{\"type\":\"integer\"},"
		"\"output\":{\"type\":\"string\"},\"offset\":{\"type\":\"integer\"},\"next_offset\":{\"type\":\"integer\"},"
		"\"size\":{\"type\":\"integer\"},\"signal\":{\"type\":\"string\"},\"sent\":{\"type\":\"boolean\"},"
		"\"ready\":{\"type\":\"boolean\"},\"ms\":{\"type\":\"integer\"},"
		"\"jobs\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
		"\"job_id\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"},\"command\":{\"type\":\"string\"},"
		"\"exit_code\":{\"type\":\"integer\"},\"started\":{\"type\":\"integer\"},\"pid\":{\"type\":\"integer\"},"
		"\"cpu_ms\":{\"type\":\"integer\"},\"rss_kb\":{\"type\":\"integer\"},"
		"\"output_bytes\":{\"type\":\"integer\"}}}}}}",
	.group = TOOL_GROUP_SERVICES,
	.read_only = false,
	.destructive = false,
	.idempotent = false,
	.open_world = false,
	.per_session = true,
	.handler = job_tool,
	.instructions = "run_command {background: true} starts a server or a long job and returns at once; job "
			"reads its output, waits for a port to answer (ready) and stops it (signal).",
};
