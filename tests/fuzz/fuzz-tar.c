/*
 * fuzz-tar.c - tar_read over the rest of the input, pulled in pieces cut by
 * the first byte (see fuzz.h), with caps small enough to be hit.
 *
 * Whatever the stream says, only clean relative names reach the sink (no
 * absolute name, no "..", ".", or empty component, no control byte), only
 * files and directories, never more data than a file's size or the caps,
 * and a file's data is complete before the next entry.  The result is one
 * of the documented codes, and fed whole the same stream must give the same
 * result and the same entries.
 */
#include <errno.h>
#include <string.h>

#include "base/tar.h"
#include "fuzz.h"

struct check {
	const struct tar_limits *lim;
	struct buf log;
	uint64_t want, got, total;
	bool in_file;
};

struct pieces {
	const char *p;
	size_t n, off;
	struct fuzz_split split;
};

static int on_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	struct check *c = arg;
	const char *p = e->path;
	size_t n = strlen(p);

	FUZZ_CHECK(!c->in_file || c->got == c->want);
	FUZZ_CHECK(e->type == TAR_TYPE_FILE || e->type == TAR_TYPE_DIR);
	FUZZ_CHECK(p[0] != '/' && (n == 0 || p[n - 1] != '/'));
	FUZZ_CHECK(!strstr(p, "//"));
	for (const char *c2 = p; *c2; c2++)
		FUZZ_CHECK((unsigned char)*c2 >= 0x20 && *c2 != 0x7f);
	for (const char *s = p; *s;) {
		const char *e2 = strchr(s, '/');
		size_t len = e2 ? (size_t)(e2 - s) : strlen(s);
		FUZZ_CHECK(len > 0);
		FUZZ_CHECK(!(len == 1 && s[0] == '.'));
		FUZZ_CHECK(!(len == 2 && s[0] == '.' && s[1] == '.'));
		s += len + (e2 ? 1 : 0);
	}
	FUZZ_CHECK(e->type == TAR_TYPE_DIR || n > 0);
	FUZZ_CHECK(e->mode <= 0777);
	if (e->type == TAR_TYPE_DIR)
		FUZZ_CHECK(e->size == 0);
	FUZZ_CHECK(e->size <= c->lim->entry_size);
	c->total += e->size;
	FUZZ_CHECK(c->total <= c->lim->total_size);
	c->in_file = e->type == TAR_TYPE_FILE;
	c->want = e->size;
	c->got = 0;
	buf_printf(&c->log, "%c %s %llu|", e->type == TAR_TYPE_DIR ? 'D' : 'F', p, (unsigned long long)e->size);
	return TAR_OK;
}

static int on_data(void *arg, const char *p, size_t n, struct err *err)
{
	struct check *c = arg;
	FUZZ_CHECK(c->in_file && n > 0 && n <= TAR_CHUNK);
	c->got += n;
	FUZZ_CHECK(c->got <= c->want);
	(void)buf_append(&c->log, p, n < 16 ? n : 16);
	return TAR_OK;
}

static int on_end(void *arg, struct err *err)
{
	struct check *c = arg;
	FUZZ_CHECK(c->in_file && c->got == c->want);
	c->in_file = false;
	return 0;
}

static void on_skipped(void *arg, const char *name, const char *why)
{
	struct check *c = arg;
	FUZZ_CHECK(why && *why);
	buf_printf(&c->log, "S %s|", why);
}

static ssize_t pull(void *arg, void *out, size_t want)
{
	struct pieces *ps = arg;
	size_t n = fuzz_split_next(&ps->split, ps->n - ps->off);
	if (n > want)
		n = want;
	char *piece = fuzz_piece(ps->p + ps->off, n);
	memcpy(out, piece, n);
	free(piece);
	ps->off += n;
	return (ssize_t)n;
}

static int run(const char *in, size_t len, uint8_t plan, const struct tar_limits *lim, char **ret_log)
{
	struct check c = { .lim = lim };
	struct pieces ps = { .p = in, .n = len };
	struct tar_sink sink = { on_entry, on_data, on_end, on_skipped, &c };
	struct tar_stats st;
	struct err err;

	buf_init(&c.log, 1u << 22);
	fuzz_split_init(&ps.split, plan);
	err_clear(&err);
	int r = tar_read(pull, &ps, lim, &sink, &st, &err);
	FUZZ_CHECK(r == 0 || r == -EMSGSIZE || r == -EPROTO || r == -ENODATA);
	FUZZ_CHECK(r == 0 || err.msg[0]);
	if (r == -EMSGSIZE)
		FUZZ_CHECK(err.code == ERRCODE_TOO_LARGE);
	if (r == 0) {
		FUZZ_CHECK(!c.in_file);
		FUZZ_CHECK(st.bytes <= lim->total_size && st.raw == len);
	}
	*ret_log = c.log.data ? buf_steal(&c.log, NULL) : strdup("");
	buf_finish(&c.log);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	const char *in = (const char *)data + 1;
	size_t len = size - 1;
	/* the plan byte's top bits also pick tight or roomy caps */
	struct tar_limits tight = { .entries = 8, .entry_size = 4096, .total_size = 8192 };
	struct tar_limits roomy = { .entries = 10000, .entry_size = 1u << 24, .total_size = 1u << 24 };
	const struct tar_limits *lim = (data[0] & 0x80) ? &tight : &roomy;
	char *a, *b;

	int ra = run(in, len, data[0], lim, &a);
	int rb = run(in, len, 0, lim, &b);
	FUZZ_CHECK(ra == rb);
	FUZZ_CHECK(strcmp(a, b) == 0);
	free(a);
	free(b);
	return 0;
}
