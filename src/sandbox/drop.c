/*
 * drop.c - transfers through the drop (drop.h): the session's drop state
 * and slots, the agent's drop operations (dropcheck, place, stage, clear;
 * src/agent), the streamed PUT of an upload and the GET of a download.
 *
 * Nothing here lets a slot name out: the agent's stderr and every error
 * message pass through drop_scrub() before the caller sees them, and slot
 * names are logged at debug level only.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/pathsafe.h"
#include "base/util.h"
#include "sandbox/agentctl.h"
#include "sandbox/drop.h"
#include "sandbox/exec.h"

/* Time dropcheck and clear may take (place and stage get XFER_TIMEOUT_MS). */
#define DROP_OP_TIMEOUT_MS 60000
/* How long place or clear waits for an agent another call is using (resources/read, a file link). */
#define DROP_BUSY_WAIT_MS 5000
/* Bytes of an agent operation's stdout kept ("<uid> <gid>", "f <base>"). */
#define DROP_OUT_MAX (NAME_MAX + 64)

struct put_state {
	struct tar_writer *w;
	struct buf out;
	size_t off;
	xfer_produce_fn produce;
	void *arg;
	const struct session *s;
	int slot;
	bool started, done;
	bool produce_failed; /* the error is the producer's (the host side), not the engine's */
};

/* A folder's staged copy arrives as t/...: the sink beyond hears the names download_script's tar gives. */
struct map_sink {
	const struct tar_sink *to;
	const struct session *s;
	bool file; /* a file's GET: its names are passed on as they are */
	char raw[PATHSAFE_MAX + 8];
	char why[512];
};

struct body_src {
	struct engine_body *b;
};

static char *splice(char *text, size_t cap, char *at, size_t n, const char *with);
static void replace_all(char *text, size_t cap, const char *needle, const char *with);
static bool in_a_slot(const struct session *s, const char *run, size_t n);
static int scrubbed(const struct session *s, int r, struct xfer_result *ret, struct err *err);
static int collect(void *arg, int stream, const char *p, size_t n);
static bool agent_op(struct engine *e, struct call *call, struct session *s, const char *op, const char *const *args,
		     int timeout_ms, struct buf *out, struct xfer_result *ret, struct err *err, int *ret_r);
static bool agent_op_wait(struct engine *e, struct call *call, struct session *s, const char *op,
			  const char *const *args, int timeout_ms, struct buf *out, struct xfer_result *ret,
			  struct err *err, int *ret_r);
static void unusable(struct session *s, const char *why);
static bool name_slots(struct session *s);
static int probe_owner(struct engine *e, struct call *call, struct session *s);
static void check(struct engine *e, struct call *call, struct session *s);
static bool clear(struct engine *e, struct session *s, int slot);
static int put_begin(struct put_state *ps, struct err *err);
static ssize_t put_source(void *arg, void *p, size_t n, struct err *err);
static int make_slot(struct engine *e, struct call *call, struct session *s, int slot, struct err *err);
static int engine_failed(struct engine *e, const struct session *s, int r, struct err *err);
static int map_entry(void *arg, const struct tar_entry *e, struct err *err);
static int map_data(void *arg, const char *p, size_t n, struct err *err);
static int map_end(void *arg, struct err *err);
static void map_skipped(void *arg, const char *name, const char *why);
static ssize_t body_source(void *arg, void *p, size_t n);
static int stage(struct engine *e, struct call *call, struct session *s, int slot, const char *path, uint64_t cap,
		 struct buf *out, struct xfer_result *ret, struct err *err);
static int fetch(struct engine *e, struct call *call, struct session *s, int slot, const char *what,
		 const struct tar_limits *lim, const struct tar_sink *sink, struct err *err);

/*
 * Puts with in place of at[0..n) in text (NUL-terminated, within cap),
 * cutting what no longer fits; returns the end of with.
 */
static char *splice(char *text, size_t cap, char *at, size_t n, const char *with)
{
	size_t wl = strlen(with), tail = strlen(at + n);
	size_t room = cap - (size_t)(at - text) - 1;
	size_t w = wl < room ? wl : room;
	size_t t = tail < room - w ? tail : room - w;

	memmove(at + w, at + n, t);
	memcpy(at, with, w);
	at[w + t] = '\0';
	return at + w;
}

/* Replaces every needle in text by with. */
static void replace_all(char *text, size_t cap, const char *needle, const char *with)
{
	size_t nl = strlen(needle);
	for (char *at = text; nl && (at = strstr(at, needle)) != NULL;)
		at = splice(text, cap, at, nl, with);
}

/* True when run[0..n) is part of one of s's slot names, or holds one. */
static bool in_a_slot(const struct session *s, const char *run, size_t n)
{
	for (int i = 0; i < SESSION_DROP_SLOTS; i++) {
		const char *name = s->drop_slot[i];
		if (name[0] && (n <= SESSION_DROP_SLOT_LEN ? memmem(name, SESSION_DROP_SLOT_LEN, run, n) != NULL
							   : memmem(run, n, name, SESSION_DROP_SLOT_LEN) != NULL))
			return true;
	}
	return false;
}

void drop_scrub(const struct session *s, char *text, size_t cap)
{
	char full[sizeof(AGENTCTL_DROP) + SESSION_DROP_SLOT_LEN + 1];

	for (int i = 0; i < SESSION_DROP_SLOTS && s->drop_slot[i][0]; i++) {
		snprintf(full, sizeof(full), "%s/%s", AGENTCTL_DROP, s->drop_slot[i]);
		replace_all(text, cap, full, DROP_SCRUBBED);
	}
	replace_all(text, cap, AGENTCTL_DROP, DROP_SCRUBBED);
	/* a name, or the part of one a cap left, standing alone as a run of hex digits */
	for (char *p = text; *p;) {
		size_t n = strspn(p, "0123456789abcdef");
		if (n >= DROP_SCRUB_RUN && in_a_slot(s, p, n))
			p = splice(text, cap, p, n, DROP_SCRUBBED);
		else
			p += n ? n : 1;
	}
}

/* What a transfer hands back, scrubbed: r, with ret's stderr and err's message. */
static int scrubbed(const struct session *s, int r, struct xfer_result *ret, struct err *err)
{
	drop_scrub(s, ret->stderr_text, sizeof(ret->stderr_text));
	if (r < 0)
		drop_scrub(s, err->msg, sizeof(err->msg));
	return r;
}

static int collect(void *arg, int stream, const char *p, size_t n)
{
	struct buf *out = arg;
	if (stream != 1)
		return 0;
	/* room is left for the NUL the reader appends */
	size_t room = out->len + 1 < out->max ? out->max - out->len - 1 : 0;
	(void)buf_append(out, p, n < room ? n : room);
	return 0;
}

/*
 * Runs the agent's built-in op with args, stdout into out. True when the
 * agent ran it (0 or -errno with err in *ret_r, the rest in ret), false
 * when it could not (no agent, in use, too old to know op): nothing ran.
 */
static bool agent_op(struct engine *e, struct call *call, struct session *s, const char *op, const char *const *args,
		     int timeout_ms, struct buf *out, struct xfer_result *ret, struct err *err, int *ret_r)
{
	struct exec_result xr;
	struct exec_spec spec = {
		.builtin = op,
		.argv = args,
		.user = s->user,
		.attach_stdin = true,
		.timeout_ms = timeout_ms,
		.cap = XFER_STDERR_MAX,
		.on_data = collect,
		.arg = out,
	};
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if (!session_agent_run(e, call, s, &spec, &xr, err, &r))
		return false;
	xfer_result_from_exec(&xr, ret);
	if (r == 0 && xr.agent_lost)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
			    "the session's agent (sandbox-mcp-agent) stopped during the transfer (killed from outside?); "
			    "the session is usable: run the call again (the next one starts a new agent)");
	exec_result_finish(&xr);
	*ret_r = r;
	return true;
}

/*
 * agent_op, waiting up to DROP_BUSY_WAIT_MS while another call holds the
 * agent (after a PUT there is no way back), and trying once more when the
 * agent turned out dead on the way (dropped by session_agent_run: the next
 * try starts a new one). Podman keeps a killed agent's exec stream open for
 * a while, so its death shows only when the op is sent.
 */
static bool agent_op_wait(struct engine *e, struct call *call, struct session *s, const char *op,
			  const char *const *args, int timeout_ms, struct buf *out, struct xfer_result *ret,
			  struct err *err, int *ret_r)
{
	bool retried = false;
	for (int waited = 0;;) {
		if (agent_op(e, call, s, op, args, timeout_ms, out, ret, err, ret_r))
			return true;
		if (!atomic_load(&s->agent_busy)) {
			if (retried || !s->agent_installed)
				return false;
			retried = true;
			continue;
		}
		if (waited >= DROP_BUSY_WAIT_MS)
			return false;
		usleep(50 * 1000);
		waited += 50;
	}
}

/* The session takes the exec path for its whole life; the log says why (never a slot name). */
static void unusable(struct session *s, const char *why)
{
	log_infof("session %s: transfers use exec'd tar, the drop is not usable (%s)", s->id, why);
	atomic_store(&s->drop_state, SESSION_DROP_UNUSABLE);
}

/* Gives the session's slots their random names. False when there was no randomness. */
static bool name_slots(struct session *s)
{
	for (int i = 0; i < SESSION_DROP_SLOTS; i++) {
		unsigned char raw[SESSION_DROP_SLOT_LEN / 2];
		if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
			return false;
		for (size_t k = 0; k < sizeof(raw); k++)
			snprintf(&s->drop_slot[i][2 * k], 3, "%02x", raw[k]);
	}
	return true;
}

/*
 * The engine must keep a tar header's owner: Docker's archive PUT does, but
 * one that gave the slot to root would lock the agent out of it. So the
 * first slot is made and emptied by the agent once. 1 when that worked, 0
 * when it did not (the drop is unusable), -1 when the call ended first.
 */
static int probe_owner(struct engine *e, struct call *call, struct session *s)
{
	struct err err;
	int r = make_slot(e, call, s, 0, &err);

	if (r == -ECANCELED)
		return -1;
	if (r < 0) {
		unusable(s, err.msg);
		return 0;
	}
	if (!clear(e, s, 0)) {
		unusable(s, "the agent cannot use a slot the engine made for it");
		return 0;
	}
	return 1;
}

/* The session's first transfer: dropcheck decides whether the drop is used, and the slots get their names. */
static void check(struct engine *e, struct call *call, struct session *s)
{
	const char *args[] = { AGENTCTL_DROP, NULL };
	struct xfer_result res;
	struct buf out;
	struct err err;
	unsigned long uid = 0, gid = 0;
	char extra;
	int r = 0;

	if (!s->agent_installed) {
		atomic_store(&s->drop_state, SESSION_DROP_UNUSABLE);
		return;
	}
	if (atomic_load(&s->agent_busy))
		return; /* not now: the next transfer asks again */
	buf_init(&out, DROP_OUT_MAX);
	bool ran = agent_op(e, call, s, "dropcheck", args, DROP_OP_TIMEOUT_MS, &out, &res, &err, &r);
	if (buf_append(&out, "", 1) < 0)
		abort(); /* collect leaves room for it */
	bool good = ran && r == 0 && res.exit_code == 0 && sscanf(out.data, "%lu %lu%c", &uid, &gid, &extra) == 3 &&
		    extra == '\n' && uid > 0 && uid <= UINT32_MAX && gid <= UINT32_MAX;
	buf_finish(&out);
	if (ran && (r < 0 || res.cancelled || res.timed_out))
		return; /* the agent was lost or the call ended: decide another time */
	if (!good) {
		unusable(s, !ran		 ? "the agent cannot check it"
			    : res.stderr_text[0] ? res.stderr_text
						 : "dropcheck failed");
		return;
	}
	if (!name_slots(s)) {
		unusable(s, "no random slot names");
		return;
	}
	s->drop_uid = (unsigned)uid;
	s->drop_gid = (unsigned)gid;
	if (probe_owner(e, call, s) <= 0)
		return;
	atomic_store(&s->drop_state, SESSION_DROP_USABLE);
	log_debugf("session %s: transfers go through the drop as %lu:%lu", s->id, uid, gid);
}

/* Empties the slot (best effort, never cancelled: it runs after a cancel too). False when it could not. */
static bool clear(struct engine *e, struct session *s, int slot)
{
	const char *args[] = { AGENTCTL_DROP, s->drop_slot[slot], NULL };
	struct xfer_result res;
	struct buf out;
	struct err err;
	int r = 0;

	buf_init(&out, DROP_OUT_MAX);
	bool ok = agent_op_wait(e, NULL, s, "clear", args, DROP_OP_TIMEOUT_MS, &out, &res, &err, &r) && r == 0 &&
		  res.exit_code == 0;
	buf_finish(&out);
	if (ok)
		atomic_fetch_and(&s->drop_dirty, ~(1u << slot));
	else
		atomic_fetch_or(&s->drop_dirty, 1u << slot);
	return ok;
}

int drop_take(struct engine *e, struct call *call, struct session *s)
{
	if (atomic_load(&s->drop_state) == SESSION_DROP_UNKNOWN)
		check(e, call, s);
	if (atomic_load(&s->drop_state) != SESSION_DROP_USABLE)
		return -1;
	for (int i = 0; i < SESSION_DROP_SLOTS; i++) {
		unsigned bit = 1u << i;
		if (atomic_fetch_or(&s->drop_busy, bit) & bit)
			continue;
		/* what a failed transfer may have left goes first */
		if (!(atomic_load(&s->drop_dirty) & bit) || clear(e, s, i))
			return i;
		atomic_fetch_and(&s->drop_busy, ~bit);
	}
	return -1;
}

void drop_release(struct session *s, int slot)
{
	if (slot >= 0 && slot < SESSION_DROP_SLOTS)
		atomic_fetch_and(&s->drop_busy, ~(1u << slot));
}

/* The slot's own entry, owned by the agent's user and 0700, then every name of the upload below it. */
static int put_begin(struct put_state *ps, struct err *err)
{
	struct tar_entry dir = {
		.path = ps->s->drop_slot[ps->slot], .type = TAR_TYPE_DIR, .mode = 0700, .mtime = (int64_t)time(NULL)
	};
	int r;

	tar_writer_set_owner(ps->w, ps->s->drop_uid, ps->s->drop_gid);
	if ((r = tar_writer_add(ps->w, &dir, err)) < 0)
		return r;
	ps->started = true;
	return tar_writer_set_prefix(ps->w, dir.path, err);
}

/*
 * The PUT's body: fills p from the writer's buffer, asking the producer for
 * the next piece whenever it is empty, so each chunk sent is a full one
 * (fewer, larger writes for the engine to read).
 */
static ssize_t put_source(void *arg, void *p, size_t n, struct err *err)
{
	struct put_state *ps = arg;
	size_t got = 0;

	while (got < n) {
		if (ps->off == ps->out.len) {
			if (ps->done)
				break;
			buf_reset(&ps->out);
			ps->off = 0;
			int r = ps->started ? ps->produce(ps->arg, ps->w, err) : put_begin(ps, err);
			if (r < 0) {
				ps->produce_failed = true;
				return r;
			}
			ps->done = r == 1;
			continue;
		}
		size_t k = ps->out.len - ps->off < n - got ? ps->out.len - ps->off : n - got;
		memcpy((char *)p + got, ps->out.data + ps->off, k);
		ps->off += k;
		got += k;
	}
	return (ssize_t)got;
}

/*
 * An engine error of a PUT or GET inside the drop, its text scrubbed. A 404
 * is the session gone when its container is (the drop cannot vanish: only
 * root can remove it); else a staged entry went missing, which only a fault
 * of the agent explains: ERRCODE_ENGINE_ERROR, and the session stays.
 */
static int engine_failed(struct engine *e, const struct session *s, int r, struct err *err)
{
	if (r == -ENOENT) {
		json_t *ins = NULL;
		struct err ierr;
		int ir = engine_container_inspect(e, NULL, s->container, &ins, &ierr);
		json_decref(ins);
		if (ir < 0 && ierr.code == ERRCODE_SESSION_NOT_FOUND)
			return err_set(err, ERRCODE_SESSION_NOT_FOUND, -ENOENT, "the session's container is gone");
		return err_set(err, ERRCODE_ENGINE_ERROR, -EIO,
			       "the staged copy of the transfer went missing in the sandbox; run the call again");
	}
	drop_scrub(s, err->msg, sizeof(err->msg));
	return r;
}

int drop_push(struct engine *e, struct call *call, struct session *s, int slot, xfer_produce_fn produce, void *arg,
	      const char *dir, const char *base, bool overwrite, struct xfer_result *ret, struct err *err)
{
	struct put_state ps = { .produce = produce, .arg = arg, .s = s, .slot = slot };
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	/* a header, a long-name header and one chunk of data at most */
	buf_init(&ps.out, 2 * TAR_CHUNK + 4 * TAR_ENTRY_OVERHEAD);
	int64_t t0 = now_ms();
	if ((r = tar_writer_create(&ps.out, &ps.w, err)) == 0) {
		r = engine_archive_put_stream(e, call, s->container, AGENTCTL_DROP, put_source, &ps, err);
		if (r == 0)
			atomic_fetch_or(&s->drop_made, 1u << slot);
		else if (r != -ECANCELED && !ps.produce_failed)
			r = engine_failed(e, s, r, err);
	}
	tar_writer_destroy(ps.w);
	buf_finish(&ps.out);
	if (r < 0) {
		(void)clear(e, s, slot);
		return scrubbed(s, r, ret, err);
	}
	const char *args[] = { AGENTCTL_DROP, s->drop_slot[slot], dir, base, overwrite ? "1" : "0", NULL };
	struct buf out;
	buf_init(&out, DROP_OUT_MAX);
	int64_t t1 = now_ms();
	bool ran = agent_op_wait(e, call, s, "place", args, XFER_TIMEOUT_MS, &out, ret, err, &r);
	buf_finish(&out);
	/* one line per transfer: which path it took is what an operator asks first when it is slow */
	if (ran && r == 0 && ret->exit_code == 0)
		log_infof("session %s: upload through the drop (PUT %lld ms, place %lld ms)", s->id,
			  (long long)(t1 - t0), (long long)(now_ms() - t1));
	if (!ran)
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EAGAIN,
			    "the session's agent (sandbox-mcp-agent) could not finish the upload; run the call again");
	/* place empties the slot itself, unless it never ran or was stopped */
	if (!ran || r < 0 || ret->exit_code < 0)
		(void)clear(e, s, slot);
	return scrubbed(s, r, ret, err);
}

static int map_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct map_sink *m = arg;
	struct tar_entry t = *e;

	if (m->file)
		return m->to->entry(m->to->arg, e, err);
	if (strcmp(e->path, "t") == 0)
		t.path = "";
	else if (strncmp(e->path, "t/", 2) == 0)
		t.path = e->path + 2;
	else
		return err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
			       "the Docker engine sent an entry outside the copied folder; try again");
	return m->to->entry(m->to->arg, &t, err);
}

static int map_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct map_sink *m = arg;
	return m->to->data(m->to->arg, p, n, err);
}

static int map_end(void *arg, struct err *err)
{
	struct map_sink *m = arg;
	return m->to->entry_end ? m->to->entry_end(m->to->arg, err) : 0;
}

/*
 * Skipped names as `tar -c .` gives them: "./x". Name and reason (a
 * link's target) are scrubbed: they reach the caller's result.
 */
static void map_skipped(void *arg, const char *name, const char *why)
{
	struct map_sink *m = arg;
	const char *rest = m->file ? NULL : strncmp(name, "t/", 2) == 0 ? name + 2 : strcmp(name, "t") == 0 ? "" : NULL;

	if (!m->to->skipped)
		return;
	if (rest)
		snprintf(m->raw, sizeof(m->raw), "./%s", rest);
	else
		snprintf(m->raw, sizeof(m->raw), "%s", name);
	/* a hard link names its target as the stream does: "t/a" is "./a" to the caller */
	if (!m->file && strncmp(why, TAR_HARDLINK_REASON "t/", strlen(TAR_HARDLINK_REASON "t/")) == 0)
		snprintf(m->why, sizeof(m->why), TAR_HARDLINK_REASON "./%s", why + strlen(TAR_HARDLINK_REASON "t/"));
	else
		snprintf(m->why, sizeof(m->why), "%s", why);
	drop_scrub(m->s, m->raw, sizeof(m->raw));
	drop_scrub(m->s, m->why, sizeof(m->why));
	m->to->skipped(m->to->arg, m->raw, m->why);
}

static ssize_t body_source(void *arg, void *p, size_t n)
{
	struct body_src *bs = arg;
	struct err err;
	return engine_body_read(bs->b, p, n, &err);
}

/* The slot's directory, owned by the agent's user and 0700, for a download into a slot no upload made yet. */
static int make_slot(struct engine *e, struct call *call, struct session *s, int slot, struct err *err)
{
	struct buf tar;
	int r;

	if (atomic_load(&s->drop_made) & (1u << slot))
		return 0;
	buf_init(&tar, 64 * 1024);
	r = tar_make_dir(s->drop_slot[slot], 0700, s->drop_uid, s->drop_gid, &tar, err);
	if (r == 0)
		r = engine_archive_put(e, call, s->container, AGENTCTL_DROP, tar.data, tar.len, err);
	buf_finish(&tar);
	if (r == 0)
		atomic_fetch_or(&s->drop_made, 1u << slot);
	return r < 0 && r != -ECANCELED ? engine_failed(e, s, r, err) : r;
}

/*
 * The agent's stage of path: 0 with ret (exit code, stderr) and its stdout
 * in out, DROP_FALLBACK when it could not run, or -errno with err.
 */
static int stage(struct engine *e, struct call *call, struct session *s, int slot, const char *path, uint64_t cap,
		 struct buf *out, struct xfer_result *ret, struct err *err)
{
	char capstr[24];
	int r = 0;

	snprintf(capstr, sizeof(capstr), "%llu", (unsigned long long)cap);
	const char *args[] = { AGENTCTL_DROP, s->drop_slot[slot], path, capstr, NULL };
	if (!agent_op(e, call, s, "stage", args, XFER_TIMEOUT_MS, out, ret, err, &r))
		return DROP_FALLBACK;
	if (buf_append(out, "", 1) < 0)
		abort(); /* collect leaves room for it */
	return r;
}

/* GET of the slot's entry what, read with lim into sink. 0 or -errno with err (scrubbed). */
static int fetch(struct engine *e, struct call *call, struct session *s, int slot, const char *what,
		 const struct tar_limits *lim, const struct tar_sink *sink, struct err *err)
{
	char where[PATHSAFE_MAX + 128];
	struct body_src bs;
	int r;

	if (snprintf(where, sizeof(where), "%s/%s/%s", AGENTCTL_DROP, s->drop_slot[slot], what) >= (int)sizeof(where))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -ENAMETOOLONG, "the file's name is too long");
	if ((r = engine_archive_get(e, call, s->container, where, &bs.b, err)) < 0)
		return r == -ECANCELED ? r : engine_failed(e, s, r, err);
	r = tar_read(body_source, &bs, lim, sink, NULL, err);
	engine_body_destroy(bs.b);
	if (r < 0 && call && call_cancelled(call))
		r = err_set(err, ERRCODE_CANCELLED, -ECANCELED, "cancelled");
	return r;
}

int drop_pull(struct engine *e, struct call *call, struct session *s, int slot, const char *path,
	      const struct tar_limits *lim, const struct tar_sink *sink, struct xfer_result *ret, struct err *err)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char what[NAME_MAX + 8];
	struct buf out;
	/* what the GET's reader hears goes through m: names mapped, skipped entries scrubbed */
	struct map_sink m = { .to = sink, .s = s };
	struct tar_sink ms = { map_entry, map_data, map_end, map_skipped, &m };
	int r;

	memset(ret, 0, sizeof(*ret));
	ret->exit_code = -1;
	if ((r = make_slot(e, call, s, slot, err)) < 0)
		return scrubbed(s, r, ret, err);
	buf_init(&out, DROP_OUT_MAX);
	int64_t t0 = now_ms();
	r = stage(e, call, s, slot, path, lim->total_size, &out, ret, err);
	int64_t t1 = now_ms();
	bool staged = r == 0 && (ret->exit_code == 0 || ret->exit_code == 2);
	size_t bl = strlen(base);
	if (staged && !out.data[0] && ret->exit_code == 2) {
		/* nothing staged at all: tar's own failure on the exec path */
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EIO, "could not read %s (exit code 2): %.300s", path,
			    ret->stderr_text[0] ? ret->stderr_text : "no message");
	} else if (staged && strcmp(out.data, "d\n") == 0) {
		r = fetch(e, call, s, slot, "t", lim, &ms, err);
	} else if (staged && strncmp(out.data, "f ", 2) == 0 && strncmp(out.data + 2, base, bl) == 0 &&
		   strcmp(out.data + 2 + bl, "\n") == 0 && bl <= NAME_MAX) {
		snprintf(what, sizeof(what), "f/%s", base);
		m.file = true;
		r = fetch(e, call, s, slot, what, lim, &ms, err);
	} else if (staged) {
		r = err_set(err, ERRCODE_ENGINE_ERROR, -EPROTO,
			    "the session's agent gave an unexpected answer for the download; try again");
	} else if (r == 0 && ret->exit_code == DROP_EXIT_TOO_LARGE) {
		r = err_set(err, ERRCODE_TOO_LARGE, -EMSGSIZE,
			    "%s is larger than the %llu-byte limit (SANDBOX_MAX_UPLOAD_MB): download a smaller folder or "
			    "file",
			    path, (unsigned long long)lim->total_size);
		ret->exit_code = -1;
	}
	buf_finish(&out);
	if (staged && r == 0)
		log_infof("session %s: download through the drop (stage %lld ms, GET %lld ms)", s->id,
			  (long long)(t1 - t0), (long long)(now_ms() - t1));
	if (r != DROP_FALLBACK)
		(void)clear(e, s, slot);
	return scrubbed(s, r, ret, err);
}
