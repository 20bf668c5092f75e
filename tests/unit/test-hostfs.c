/*
 * test-hostfs.c - the host side of transfers on a real temporary directory:
 * which host paths open, what a hostile tar stream can (not) write, and what
 * an upload walk sends.  Built twice: as is, and with HOSTFS_NO_OPENAT2 so
 * the component-by-component O_NOFOLLOW fallback is exercised too.
 */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/tar.h"
#include "host/hostfs.h"
#include "host/hostmark.h"

static char base[64], allowed[128], outside[128];

static void put_file(const char *path, const char *content, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	assert_true(fd >= 0);
	assert_int_equal(write_full(fd, content, strlen(content)), 0);
	close(fd);
	chmod(path, mode);
}

static int setup(void **state)
{
	char p[256];
	snprintf(base, sizeof(base), "/tmp/test-hostfs-XXXXXX");
	assert_non_null(mkdtemp(base));
	snprintf(allowed, sizeof(allowed), "%s/allowed", base);
	snprintf(outside, sizeof(outside), "%s/outside", base);
	assert_int_equal(mkdir(allowed, 0755), 0);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(p, sizeof(p), "%sX", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/secret", outside);
	put_file(p, "secret\n", 0644);
	snprintf(p, sizeof(p), "%s/in.txt", allowed);
	put_file(p, "inside\n", 0644);
	snprintf(p, sizeof(p), "%s/sub", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/sub/link-out", allowed);
	char target[256];
	snprintf(target, sizeof(target), "%s/secret", outside);
	assert_int_equal(symlink(target, p), 0);
	snprintf(p, sizeof(p), "%s/dir-out", allowed);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/link-in", allowed);
	assert_int_equal(symlink("in.txt", p), 0);
	return 0;
}

static void rm_rf(int dfd, const char *name)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
		DIR *d = fdopendir(fd);
		struct dirent *de;
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				rm_rf(dirfd(d), de->d_name);
		closedir(d);
		unlinkat(dfd, name, AT_REMOVEDIR);
	} else {
		unlinkat(dfd, name, 0);
	}
}

static int teardown(void **state)
{
	rm_rf(AT_FDCWD, base);
	return 0;
}

static void test_open(void **state)
{
	struct hostfs *h;
	struct err err;
	char p[512], real[4096];
	int fd;

	snprintf(p, sizeof(p), "%s:relative:/nonexistent-dir-xyz", allowed);
	assert_int_equal(hostfs_create(p, &h, &err), 0);
	assert_string_equal(hostfs_dirs(h), allowed);

	snprintf(p, sizeof(p), "%s/in.txt", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, real, sizeof(real), &err), 0);
	assert_string_equal(real, p);
	close(fd);
	/* a link that stays inside is resolved once and opens */
	snprintf(p, sizeof(p), "%s/link-in", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, real, sizeof(real), &err), 0);
	close(fd);
	/* the allowed dir itself */
	assert_int_equal(hostfs_open(h, "", allowed, O_RDONLY | O_DIRECTORY, &fd, NULL, 0, &err), 0);
	close(fd);

	const char *refused[] = { "%s/sub/link-out",	  "%s/dir-out", "%s/dir-out/secret",
				  "%s/../outside/secret", "%sX",	"%s/./../outside" };
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		snprintf(p, sizeof(p), refused[i], allowed);
		err_clear(&err);
		assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), -EACCES);
		assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
		assert_non_null(strstr(err.msg, "SANDBOX_HOST_DIRS"));
	}
	assert_int_equal(hostfs_open(h, "", "relative/in.txt", O_RDONLY, &fd, NULL, 0, &err), -EACCES);
	assert_int_equal(hostfs_open(h, "", "/etc/passwd", O_RDONLY, &fd, NULL, 0, &err), -EACCES);
	/* a fifo is not opened (this open would block): refused after a look through O_PATH */
	snprintf(p, sizeof(p), "%s/ff", allowed);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), -ENXIO);
	assert_int_equal(err.code, ERRCODE_INVALID_ARGUMENT);
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/missing", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), -ENOENT);
	assert_int_equal(err.code, ERRCODE_FILE_NOT_FOUND);
	snprintf(p, sizeof(p), "%s/missing", outside);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), -EACCES);
	hostfs_destroy(h);

	/* nor a device */
	assert_int_equal(hostfs_create("/dev", &h, &err), 0);
	assert_int_equal(hostfs_open(h, "", "/dev/null", O_RDONLY, &fd, NULL, 0, &err), -ENXIO);
	hostfs_destroy(h);

	assert_int_equal(hostfs_create("", &h, &err), 0);
	snprintf(p, sizeof(p), "%s/in.txt", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), -EACCES);
	assert_non_null(strstr(err.msg, "SANDBOX_HOST_DIRS"));
	hostfs_destroy(h);
}

/* Lists dir (relative names, "name type mode" lines) into out. */
static void listing(int dfd, const char *prefix, struct buf *out)
{
	DIR *d = fdopendir(dup(dfd));
	struct dirent *de;
	char names[64][256];
	int n = 0;
	while ((de = readdir(d)) && n < 64)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			snprintf(names[n++], sizeof(names[0]), "%s", de->d_name);
	closedir(d);
	qsort(names, (size_t)n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
	for (int i = 0; i < n; i++) {
		struct stat st;
		assert_int_equal(fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW), 0);
		char t = S_ISDIR(st.st_mode) ? 'd' : S_ISREG(st.st_mode) ? 'f' : S_ISLNK(st.st_mode) ? 'l' : '?';
		buf_printf(out, "%s%s %c %o|", prefix, names[i], t, (unsigned)(st.st_mode & 0777));
		if (t == 'd') {
			char sub[512];
			snprintf(sub, sizeof(sub), "%s%s/", prefix, names[i]);
			int fd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
			listing(fd, sub, out);
			close(fd);
		}
	}
}

/* The outbox: opened like any host path; new files only, one name, no link followed, no exec bit. */
static void test_outbox(void **state)
{
	struct hostfs *h;
	struct err err;
	char p[512], got[4096];
	struct stat st;

	(void)state;
	assert_int_equal(hostfs_create(allowed, &h, &err), 0);
	assert_null(hostfs_outbox(h));
	assert_int_equal(hostfs_outbox_put(h, "a.png", "x", 1, got, sizeof(got), &err), -ENOENT);
	/* outside the allowed dirs, or through a link out: refused */
	assert_int_equal(hostfs_outbox_open(h, outside, &err), -EACCES);
	snprintf(p, sizeof(p), "%s/dir-out", allowed);
	assert_int_equal(hostfs_outbox_open(h, p, &err), -EACCES);
	assert_null(hostfs_outbox(h));

	snprintf(p, sizeof(p), "%s/sub", allowed);
	assert_int_equal(hostfs_outbox_open(h, p, &err), 0);
	assert_string_equal(hostfs_outbox(h), p);
	assert_int_equal(hostfs_outbox_put(h, "fig.png", "\x89PNG", 4, got, sizeof(got), &err), 0);
	snprintf(p, sizeof(p), "%s/sub/fig.png", allowed);
	assert_string_equal(got, p);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(st.st_mode & 0111, 0);
	/* never replaces, never follows the link already there, never leaves the folder */
	assert_true(hostfs_outbox_put(h, "fig.png", "y", 1, got, sizeof(got), &err) < 0);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 4);
	assert_true(hostfs_outbox_put(h, "link-out", "y", 1, got, sizeof(got), &err) < 0);
	snprintf(p, sizeof(p), "%s/secret", outside);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 7);
	assert_int_equal(hostfs_outbox_put(h, "../x.png", "y", 1, got, sizeof(got), &err), -EINVAL);
	assert_int_equal(hostfs_outbox_put(h, "..", "y", 1, got, sizeof(got), &err), -EINVAL);
	hostfs_destroy(h);
}

static void test_extract_hostile(void **state)
{
	struct buf t, out;
	struct err err;
	struct hostfs_extract *x;
	char p[512];

	buf_init(&t, 1u << 20);
	ustar_header(&t, "./", '5', 0, NULL, 0777, 0);
	ustar_header(&t, "./ok.txt", '0', 3, NULL, 04755, 0);
	ustar_body(&t, "ok\n", strlen("ok\n"));
	ustar_header(&t, "../escape", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "bad", strlen("bad"));
	ustar_header(&t, "/tmp/abs", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "bad", strlen("bad"));
	ustar_header(&t, "./evil", '2', 0, "/etc/passwd", 0777, 0);
	ustar_header(&t, "./evil", '0', 3, NULL, 0644, 0); /* not through a link: a plain file */
	ustar_body(&t, "new", strlen("new"));
	ustar_header(&t, "./d", '2', 0, "/", 0777, 0);
	ustar_header(&t, "./d/x", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "dx!", strlen("dx!"));
	ustar_header(&t, "./sh", '1', 0, "/etc/shadow", 0644, 0);
	ustar_header(&t, "./ff", '6', 0, NULL, 0644, 0);
	ustar_header(&t, "./ok.txt", '0', 3, NULL, 0644, 0); /* a second entry of that name */
	ustar_body(&t, "two", strlen("two"));
	ustar_header(&t, "./ok.txt/inner", '0', 3, NULL, 0644, 0); /* below a file */
	ustar_body(&t, "abc", strlen("abc"));
	ustar_header(&t, "./sub/deep/f", '0', 3, NULL, 0600, 0);
	ustar_body(&t, "f!\n", strlen("f!\n"));
	buf_append(&t, (char[1024]){ 0 }, 1024);

	int dfd = open(allowed, O_RDONLY | O_DIRECTORY);
	assert_int_equal(hostfs_extract_begin(dfd, "out", false, &x, &err), 0);
	struct tar_limits lim = { .entries = 100, .entry_size = 1 << 20, .total_size = 1 << 20 };
	assert_int_equal(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err), 0);
	assert_int_equal(hostfs_extract_commit(x, &err), 0);
	uint64_t files, dirs, bytes;
	json_t *skipped;
	hostfs_extract_stats(x, &files, &dirs, &bytes, &skipped);
	hostfs_extract_destroy(x);

	buf_init(&out, 1u << 20);
	int ofd = openat(dfd, "out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	assert_true(ofd >= 0);
	listing(ofd, "", &out);
	/* root 0777 -> 0755; files lose exec, setuid and group/other write */
	assert_string_equal(out.data, "d d 755|d/x f 644|evil f 644|ok.txt f 644|sub d 755|sub/deep d 755|"
				      "sub/deep/f f 600|");
	struct stat st;
	assert_int_equal(fstat(ofd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);
	close(ofd);
	snprintf(p, sizeof(p), "%s/escape", base);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(access("/tmp/abs", F_OK), -1);
	assert_int_equal(json_array_size(skipped), 8);
	json_decref(skipped);

	/* nothing but "out" was added next to it: no temporary folder left */
	buf_reset(&out);
	listing(dfd, "", &out);
	assert_null(strstr(out.data, ".sandbox-mcp"));

	/* again without overwrite: refused up front; with it: replaced */
	assert_int_equal(hostfs_extract_begin(dfd, "out", false, &x, &err), -EEXIST);
	assert_int_equal(err.code, ERRCODE_FILE_EXISTS);
	buf_reset(&t);
	ustar_header(&t, "./", '5', 0, NULL, 0755, 0);
	ustar_header(&t, "./only", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "one", strlen("one"));
	buf_append(&t, (char[1024]){ 0 }, 1024);
	assert_int_equal(hostfs_extract_begin(dfd, "out", true, &x, &err), 0);
	assert_int_equal(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err), 0);
	assert_int_equal(hostfs_extract_commit(x, &err), 0);
	hostfs_extract_destroy(x);
	buf_reset(&out);
	ofd = openat(dfd, "out", O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	listing(ofd, "", &out);
	close(ofd);
	assert_string_equal(out.data, "only f 644|");

	/* a stream that fails half way leaves nothing */
	buf_reset(&t);
	ustar_header(&t, "./", '5', 0, NULL, 0755, 0);
	ustar_header(&t, "./a", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "aaa", strlen("aaa"));
	ustar_header(&t, "./b", '0', 5000, NULL, 0644, 0);
	ustar_body(&t, "b", strlen("b"));
	assert_int_equal(hostfs_extract_begin(dfd, "partial", false, &x, &err), 0);
	assert_true(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err) < 0);
	hostfs_extract_destroy(x);
	buf_reset(&out);
	listing(dfd, "", &out);
	assert_null(strstr(out.data, "partial"));
	assert_null(strstr(out.data, ".sandbox-mcp"));

	/* a one-file download is the stream's one file under the name asked for */
	buf_reset(&t);
	ustar_header(&t, "whatever.bin", '0', 4, NULL, 0755, 0);
	ustar_body(&t, "data", strlen("data"));
	ustar_header(&t, "second", '0', 4, NULL, 0644, 0);
	ustar_body(&t, "more", strlen("more"));
	buf_append(&t, (char[1024]){ 0 }, 1024);
	assert_int_equal(hostfs_extract_begin(dfd, "single.bin", false, &x, &err), 0);
	assert_int_equal(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err), 0);
	assert_int_equal(hostfs_extract_commit(x, &err), 0);
	hostfs_extract_destroy(x);
	assert_int_equal(fstatat(dfd, "single.bin", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(st.st_size, 4);

	assert_int_equal(hostfs_extract_begin(dfd, "../up", false, &x, &err), -EINVAL);
	assert_int_equal(hostfs_extract_begin(dfd, "..", false, &x, &err), -EINVAL);
	close(dfd);
	buf_finish(&out);
	buf_finish(&t);
}

/* Reads a produced stream back: "name type size|" for each entry. */
static int log_entry(void *arg, const struct tar_entry *e, struct err *err)
{
	buf_printf(arg, "%s %c %llu %o|", e->path, e->type == TAR_TYPE_DIR ? 'd' : 'f', (unsigned long long)e->size,
		   e->mode);
	return TAR_OK;
}

static int log_data(void *arg, const char *p, size_t n, struct err *err)
{
	return TAR_OK;
}

static void test_walk(void **state)
{
	struct hostfs *h;
	struct hostfs_walk *wk;
	struct err err;
	char p[512];
	int fd;

	snprintf(p, sizeof(p), "%s/tree", allowed);
	assert_int_equal(mkdir(p, 0750), 0);
	snprintf(p, sizeof(p), "%s/tree/run.sh", allowed);
	put_file(p, "#!/bin/sh\n", 0755);
	snprintf(p, sizeof(p), "%s/tree/empty", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/tree/out", allowed);
	assert_int_equal(symlink(outside, p), 0);
	snprintf(p, sizeof(p), "%s/tree/fifo", allowed);
	assert_int_equal(mkfifo(p, 0644), 0);

	assert_int_equal(hostfs_create(allowed, &h, &err), 0);
	snprintf(p, sizeof(p), "%s/tree", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY | O_NONBLOCK, &fd, NULL, 0, &err), 0);
	struct tar_limits lim = { .entries = 100, .entry_size = 1 << 20, .total_size = 1 << 20 };
	assert_int_equal(hostfs_walk_create(fd, "dest", &lim, &wk, &err), 0);
	struct buf tarb, seen;
	struct tar_writer *w;
	buf_init(&tarb, 1u << 20);
	assert_int_equal(tar_writer_create(&tarb, &w, &err), 0);
	int r;
	while ((r = hostfs_walk_produce(wk, w, &err)) == 0)
		;
	assert_int_equal(r, 1);
	uint64_t files, dirs, bytes;
	json_t *skipped;
	hostfs_walk_stats(wk, &files, &dirs, &bytes, &skipped);
	assert_int_equal(files, 1);
	assert_int_equal(dirs, 2);
	assert_int_equal(bytes, 10);
	assert_int_equal(json_array_size(skipped), 2);
	json_decref(skipped);
	hostfs_walk_destroy(wk);
	tar_writer_destroy(w);

	buf_init(&seen, 1u << 20);
	struct tar_sink sink = { log_entry, log_data, NULL, NULL, &seen };
	assert_int_equal(tar_read_memory(tarb.data, tarb.len, &lim, &sink, NULL, &err), 0);
	/* readdir order: compare as a set */
	assert_non_null(strstr(seen.data, "dest d 0 750|"));
	assert_non_null(strstr(seen.data, "dest/run.sh f 10 755|"));
	assert_non_null(strstr(seen.data, "dest/empty d 0 755|"));
	assert_null(strstr(seen.data, "out"));
	assert_null(strstr(seen.data, "fifo"));

	/* caps: a file over the limit stops the walk */
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY | O_NONBLOCK, &fd, NULL, 0, &err), 0);
	lim.entry_size = 5;
	assert_int_equal(hostfs_walk_create(fd, "dest", &lim, &wk, &err), 0);
	buf_reset(&tarb);
	assert_int_equal(tar_writer_create(&tarb, &w, &err), 0);
	while ((r = hostfs_walk_produce(wk, w, &err)) == 0)
		;
	assert_int_equal(r, -EFBIG);
	assert_int_equal(err.code, ERRCODE_TOO_LARGE);
	hostfs_walk_destroy(wk);
	tar_writer_destroy(w);
	buf_finish(&seen);
	buf_finish(&tarb);
	hostfs_destroy(h);
}

/* Extracts tar stream t into dfd as name; the result of commit (or of the first step that failed). */
static int extract(int dfd, const char *name, bool overwrite, const struct buf *t, json_t **ret_skipped,
		   struct err *err)
{
	struct hostfs_extract *x;
	struct tar_limits lim = { .entries = 100, .entry_size = 1 << 20, .total_size = 1 << 20 };
	int r = hostfs_extract_begin(dfd, name, overwrite, &x, err);
	if (r < 0)
		return r;
	if ((r = tar_read_memory(t->data, t->len, &lim, hostfs_extract_sink(x), NULL, err)) == 0)
		r = hostfs_extract_commit(x, err);
	if (ret_skipped) {
		uint64_t f, d, b;
		hostfs_extract_stats(x, &f, &d, &b, ret_skipped);
	}
	hostfs_extract_destroy(x);
	return r;
}

static void one_file(struct buf *t, const char *name, const char *data, unsigned mode)
{
	buf_reset(t);
	ustar_header(t, name, '0', strlen(data), NULL, mode, 0);
	ustar_body(t, data, strlen(data));
	buf_append(t, (char[1024]){ 0 }, 1024);
}

static bool marked(int dfd, const char *name)
{
	char v[128];
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
	assert_true(fd >= 0);
	ssize_t n = fgetxattr(fd, HOSTMARK_XATTR, v, sizeof(v));
	close(fd);
	return n > 0;
}

/*
 * A big file of the server's replaced: the download is in place at once,
 * the old file's pages are freed on a thread of their own (close_later),
 * and soon nothing holds it; no temporary folder stays.
 */
static void test_replace_big(void **state)
{
	struct buf t;
	struct err err;
	struct stat old, st;
	struct hostfs_extract *x;
	struct tar_limits lim = { .entries = 10, .entry_size = 4 << 20, .total_size = 4 << 20 };
	char *data = xmalloc(2 << 20), p[512];

	(void)state;
	buf_init(&t, 3u << 20);
	snprintf(p, sizeof(p), "%s/big", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	int dfd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	for (int round = 0; round < 2; round++) {
		memset(data, 'a' + round, 2 << 20);
		buf_reset(&t);
		ustar_header(&t, "x", '0', 2 << 20, NULL, 0644, 0);
		ustar_body(&t, data, 2 << 20);
		buf_append(&t, (char[1024]){ 0 }, 1024);
		assert_int_equal(hostfs_extract_begin(dfd, "big.bin", true, &x, &err), 0);
		assert_int_equal(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err), 0);
		assert_int_equal(hostfs_extract_commit(x, &err), 0);
		hostfs_extract_destroy(x);
		if (round == 0)
			assert_int_equal(fstatat(dfd, "big.bin", &old, 0), 0);
	}
	int fd = openat(dfd, "big.bin", O_RDONLY);
	char c = 0;
	assert_int_equal(read(fd, &c, 1), 1);
	assert_int_equal(c, 'b');
	close(fd);
	assert_true(inode_let_go(old.st_dev, old.st_ino));
	DIR *d = opendir(p);
	int names = 0;
	for (struct dirent *e; (e = readdir(d));)
		names += e->d_name[0] != '.' || strncmp(e->d_name, ".sandbox-mcp-download-", 22) == 0;
	closedir(d);
	assert_int_equal(names, 1);
	assert_int_equal(fstatat(dfd, "big.bin", &st, 0), 0);
	assert_int_not_equal(st.st_ino, old.st_ino);
	close(dfd);
	buf_finish(&t);
	free(data);
}

/* Destination folders: nothing hidden or version-control below the allowed dir, whatever the spelling. */
static void test_dest(void **state)
{
	struct hostfs *h;
	struct err err;
	char p[512], target[512];
	int fd;

	(void)state;
	const char *dirs[] = { "%s/.git", "%s/.git/hooks", "%s/w", "%s/w/.vscode", "%s/w/_darcs", "%s/w/.HG" };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		snprintf(p, sizeof(p), dirs[i], allowed);
		assert_int_equal(mkdir(p, 0755), 0);
	}
	snprintf(target, sizeof(target), "%s/.git", allowed);
	snprintf(p, sizeof(p), "%s/to-git", allowed);
	assert_int_equal(symlink(target, p), 0);
	assert_int_equal(hostfs_create(allowed, &h, &err), 0);
	const char *refused[] = { "%s/.git",   "%s/.git/hooks",	  "%s/w/.vscode", "%s/w/_darcs", "%s/w/.HG",
				  "%s/to-git", "%s/to-git/hooks", "%s/./.git/",	  "%s/w/../.git" };
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		snprintf(p, sizeof(p), refused[i], allowed);
		err_clear(&err);
		assert_int_equal(hostfs_open_dest(h, "", p, &fd, NULL, 0, &err), -EACCES);
		assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
		/* reading from there is not what this rule is about */
		assert_int_equal(hostfs_open(h, "", p, O_RDONLY | O_DIRECTORY, &fd, NULL, 0, &err), 0);
		close(fd);
	}
	snprintf(p, sizeof(p), "%s/w", allowed);
	assert_int_equal(hostfs_open_dest(h, "", p, &fd, NULL, 0, &err), 0);
	close(fd);
	assert_int_equal(hostfs_open_dest(h, "", allowed, &fd, NULL, 0, &err), 0);
	close(fd);
	hostfs_destroy(h);
	/* an allowed directory that is itself hidden is the operator's choice */
	snprintf(p, sizeof(p), "%s/.git", allowed);
	assert_int_equal(hostfs_create(p, &h, &err), 0);
	assert_int_equal(hostfs_open_dest(h, "", p, &fd, NULL, 0, &err), 0);
	close(fd);
	hostfs_destroy(h);
}

/* Only what a download wrote, unchanged since, is replaced; hidden and VCS names are never written. */
static void test_replace_own(void **state)
{
	struct buf t;
	struct err err;
	struct stat st;
	json_t *skipped;
	char p[512];

	(void)state;
	buf_init(&t, 1u << 20);
	snprintf(p, sizeof(p), "%s/mine", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	int dfd = open(p, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	snprintf(p, sizeof(p), "%s/mine/Makefile", allowed);
	put_file(p, "user\n", 0644);

	one_file(&t, "x", "planted\n", 0644);
	const char *never[] = { ".bashrc", ".git", ".envrc", "HEAD", "head", "_darcs", ".HG" };
	for (size_t i = 0; i < ARRAY_SIZE(never); i++) {
		err_clear(&err);
		assert_int_equal(extract(dfd, never[i], true, &t, NULL, &err), -EACCES);
		assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
		assert_int_equal(fstatat(dfd, never[i], &st, AT_SYMLINK_NOFOLLOW), -1);
	}
	/* a user's file: file_exists without overwrite, refused with it, untouched */
	assert_int_equal(extract(dfd, "Makefile", false, &t, NULL, &err), -EEXIST);
	assert_int_equal(err.code, ERRCODE_FILE_EXISTS);
	assert_non_null(strstr(err.msg, "did not write"));
	assert_int_equal(extract(dfd, "Makefile", true, &t, NULL, &err), -EACCES);
	assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
	assert_non_null(strstr(err.msg, "not written by sandbox-mcp"));
	assert_int_equal(fstatat(dfd, "Makefile", &st, 0), 0);
	assert_int_equal(st.st_size, 5);

	/* its own file, read-only even: replaced with overwrite, keeps its mode and mark */
	one_file(&t, "x", "v1\n", 0444);
	assert_int_equal(extract(dfd, "out.txt", false, &t, NULL, &err), 0);
	assert_true(marked(dfd, "out.txt"));
	assert_int_equal(extract(dfd, "out.txt", false, &t, NULL, &err), -EEXIST);
	assert_non_null(strstr(err.msg, "overwrite: true"));
	one_file(&t, "x", "v2!\n", 0644);
	assert_int_equal(extract(dfd, "out.txt", true, &t, NULL, &err), 0);
	assert_int_equal(fstatat(dfd, "out.txt", &st, 0), 0);
	assert_int_equal(st.st_size, 4);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* changed by the user (same size, new mtime): theirs now */
	struct timespec ts[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 12345 } };
	assert_int_equal(utimensat(dfd, "out.txt", ts, 0), 0);
	assert_int_equal(extract(dfd, "out.txt", true, &t, NULL, &err), -EACCES);
	assert_non_null(strstr(err.msg, "changed"));
	/* a mark copied onto another file does not make it the server's */
	char v[128];
	int fd = openat(dfd, "out.txt", O_RDONLY);
	ssize_t n = fgetxattr(fd, HOSTMARK_XATTR, v, sizeof(v));
	assert_true(n > 0);
	close(fd);
	snprintf(p, sizeof(p), "%s/mine/forged", allowed);
	put_file(p, "v2!\n", 0644);
	assert_int_equal(lsetxattr(p, HOSTMARK_XATTR, v, (size_t)n, 0), 0);
	assert_int_equal(extract(dfd, "forged", true, &t, NULL, &err), -EACCES);
	/* a symlink in its place is never the server's */
	assert_int_equal(symlinkat(outside, dfd, "lnk"), 0);
	assert_int_equal(extract(dfd, "lnk", true, &t, NULL, &err), -EACCES);

	/* a folder: VCS metadata, hidden names and bytecode inside are skipped (listed at their top only) */
	buf_reset(&t);
	ustar_header(&t, "./", '5', 0, NULL, 0755, 0);
	ustar_header(&t, "./.git/", '5', 0, NULL, 0755, 0);
	ustar_header(&t, "./.git/config", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "cfg", strlen("cfg"));
	ustar_header(&t, "./bare/HEAD", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "ref", strlen("ref"));
	ustar_header(&t, "./bare/config", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "cfg", strlen("cfg"));
	ustar_header(&t, "./deep/.Hg/hgrc", '0', 3, NULL, 0644, 0); /* no folder entry first: listed as the folder */
	ustar_body(&t, "cfg", strlen("cfg"));
	ustar_header(&t, "./deep/.Hg/more", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "cfg", strlen("cfg"));
	ustar_header(&t, "./deep/f", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "fff", strlen("fff"));
	ustar_header(&t, "./.gitignore", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "ign", strlen("ign"));
	ustar_header(&t, "./deep/__pycache__/f.cpython-311.pyc", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "pyc", strlen("pyc"));
	ustar_header(&t, "./deep/__PyCache__/h.pyc", '0', 3, NULL, 0644, 0); /* one folder where case is folded */
	ustar_body(&t, "pyc", strlen("pyc"));
	ustar_header(&t, "./deep/g.PYC", '0', 3, NULL, 0644, 0);
	ustar_body(&t, "pyc", strlen("pyc"));
	buf_append(&t, (char[1024]){ 0 }, 1024);
	assert_int_equal(extract(dfd, "tree", false, &t, &skipped, &err), 0);
	assert_int_equal(json_array_size(skipped), 7);
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 0), "name")), ".git");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 1), "name")), "bare/HEAD");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 2), "name")), "deep/.Hg");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 3), "name")), ".gitignore");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 4), "name")), "deep/__pycache__");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 5), "name")), "deep/__PyCache__");
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 6), "name")), "deep/g.PYC");
	json_decref(skipped);
	struct buf out;
	buf_init(&out, 1u << 20);
	int tfd = openat(dfd, "tree", O_RDONLY | O_DIRECTORY);
	listing(tfd, "", &out);
	assert_string_equal(out.data, "bare d 755|bare/config f 644|deep d 755|deep/f f 644|");
	assert_true(marked(dfd, "tree") && marked(tfd, "bare") && marked(tfd, "bare/config") && marked(tfd, "deep") &&
		    marked(tfd, "deep/f"));
	/* replaced while all its entries are the server's; not once the user added one */
	assert_int_equal(extract(dfd, "tree", true, &t, NULL, &err), 0);
	close(tfd);
	snprintf(p, sizeof(p), "%s/mine/tree/deep/users.txt", allowed);
	put_file(p, "mine\n", 0644);
	assert_int_equal(extract(dfd, "tree", true, &t, NULL, &err), -EACCES);
	assert_non_null(strstr(err.msg, "tree/deep/users.txt"));
	assert_int_equal(access(p, F_OK), 0);
	buf_finish(&out);

	/* replaced on the host between the check and the swap: the user's file stays */
	struct hostfs_extract *x;
	struct tar_limits lim = { .entries = 100, .entry_size = 1 << 20, .total_size = 1 << 20 };
	one_file(&t, "x", "v3\n", 0644);
	assert_int_equal(extract(dfd, "racy", false, &t, NULL, &err), 0);
	assert_int_equal(hostfs_extract_begin(dfd, "racy", true, &x, &err), 0);
	assert_int_equal(tar_read_memory(t.data, t.len, &lim, hostfs_extract_sink(x), NULL, &err), 0);
	assert_int_equal(unlinkat(dfd, "racy", 0), 0);
	snprintf(p, sizeof(p), "%s/mine/racy", allowed);
	put_file(p, "user's\n", 0644);
	assert_int_equal(hostfs_extract_commit(x, &err), -EACCES);
	hostfs_extract_destroy(x);
	assert_int_equal(fstatat(dfd, "racy", &st, 0), 0);
	assert_int_equal(st.st_size, 7);
	buf_reset(&out);
	listing(dfd, "", &out);
	assert_null(strstr(out.data, ".sandbox-mcp"));
	buf_finish(&out);
	close(dfd);
	buf_finish(&t);
}

/* A file with a second name is never uploaded: refused alone, skipped in a folder. */
static void test_walk_hardlinks(void **state)
{
	struct hostfs *h;
	struct hostfs_walk *wk;
	struct err err;
	char p[512], q[512];
	int fd, r;

	(void)state;
	snprintf(p, sizeof(p), "%s/hl", allowed);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/secret", outside);
	snprintf(q, sizeof(q), "%s/hl/to-secret", allowed);
	assert_int_equal(link(p, q), 0);
	snprintf(q, sizeof(q), "%s/hl/plain", allowed);
	put_file(q, "plain\n", 0644);
	snprintf(q, sizeof(q), "%s/alone", allowed);
	assert_int_equal(link(p, q), 0);

	assert_int_equal(hostfs_create(allowed, &h, &err), 0);
	struct tar_limits lim = { .entries = 100, .entry_size = 1 << 20, .total_size = 1 << 20 };
	assert_int_equal(hostfs_open(h, "", q, O_RDONLY | O_NONBLOCK, &fd, NULL, 0, &err), 0);
	assert_int_equal(hostfs_walk_create(fd, "alone", &lim, &wk, &err), -EACCES);
	assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
	assert_non_null(strstr(err.msg, "hard link"));

	snprintf(p, sizeof(p), "%s/hl", allowed);
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY | O_NONBLOCK, &fd, NULL, 0, &err), 0);
	assert_int_equal(hostfs_walk_create(fd, "hl", &lim, &wk, &err), 0);
	struct buf tarb, seen;
	struct tar_writer *w;
	buf_init(&tarb, 1u << 20);
	assert_int_equal(tar_writer_create(&tarb, &w, &err), 0);
	while ((r = hostfs_walk_produce(wk, w, &err)) == 0)
		;
	assert_int_equal(r, 1);
	uint64_t files, dirs, bytes;
	json_t *skipped;
	hostfs_walk_stats(wk, &files, &dirs, &bytes, &skipped);
	assert_int_equal(files, 1);
	assert_int_equal(json_array_size(skipped), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(skipped, 0), "name")), "to-secret");
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(skipped, 0), "reason")), "hard link"));
	json_decref(skipped);
	hostfs_walk_destroy(wk);
	tar_writer_destroy(w);
	buf_init(&seen, 1u << 20);
	struct tar_sink sink = { log_entry, log_data, NULL, NULL, &seen };
	assert_int_equal(tar_read_memory(tarb.data, tarb.len, &lim, &sink, NULL, &err), 0);
	assert_null(strstr(seen.data, "secret"));
	buf_finish(&seen);
	buf_finish(&tarb);
	hostfs_destroy(h);
}

/* Team mode: a token's principal has <dir>/<NAME> only, made on first use; never another's. */
static void test_principals(void **state)
{
	struct hostfs *h;
	struct err err;
	char p[512], q[512], real[4096];
	struct stat st;
	int fd;

	assert_int_equal(hostfs_create(allowed, &h, &err), 0);
	snprintf(p, sizeof(p), "%s/alice", allowed);
	assert_int_equal(hostfs_open(h, "alice", p, O_RDONLY | O_DIRECTORY, &fd, real, sizeof(real), &err), 0);
	close(fd);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);
	snprintf(p, sizeof(p), "%s/alice/a.txt", allowed);
	put_file(p, "alice\n", 0644);
	assert_int_equal(hostfs_open(h, "alice", p, O_RDONLY, &fd, NULL, 0, &err), 0);
	close(fd);
	snprintf(q, sizeof(q), "%s/bob", allowed);
	assert_int_equal(hostfs_open(h, "bob", q, O_RDONLY | O_DIRECTORY, &fd, NULL, 0, &err), 0);
	close(fd);
	snprintf(q, sizeof(q), "%s/bob/to-alice", allowed);
	assert_int_equal(symlink(p, q), 0);
	/* bob reaches none of alice's paths, however spelled; nor the shared folder itself */
	const char *refused[] = {
		"%s/alice/a.txt", "%s/bob/../alice/a.txt", "%s/bob/to-alice", "%s/in.txt", "%s", "%s/alice", "%s/bobx"
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		snprintf(q, sizeof(q), refused[i], allowed);
		err_clear(&err);
		assert_int_equal(hostfs_open(h, "bob", q, O_RDONLY, &fd, NULL, 0, &err), -EACCES);
		assert_int_equal(err.code, ERRCODE_HOST_PATH_NOT_ALLOWED);
		assert_non_null(strstr(err.msg, "named bob"));
		assert_int_equal(hostfs_open_dest(h, "bob", q, &fd, NULL, 0, &err), -EACCES);
	}
	/* names a folder cannot carry are refused, and make nothing */
	for (const char *bad = ".."; bad; bad = strcmp(bad, "..") == 0 ? ".hidden" : NULL) {
		snprintf(q, sizeof(q), "%s/%s/x", allowed, bad);
		assert_int_equal(hostfs_open(h, bad, q, O_RDONLY, &fd, NULL, 0, &err), -EACCES);
	}
	snprintf(q, sizeof(q), "%s/.hidden", allowed);
	assert_int_equal(stat(q, &st), -1);
	/* the tokenless principal (the operator's own stdio server) sees the whole folder */
	assert_int_equal(hostfs_open(h, "", p, O_RDONLY, &fd, NULL, 0, &err), 0);
	close(fd);
	hostfs_destroy(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open),	       cmocka_unit_test(test_principals),
		cmocka_unit_test(test_outbox),	       cmocka_unit_test(test_extract_hostile),
		cmocka_unit_test(test_walk),	       cmocka_unit_test(test_dest),
		cmocka_unit_test(test_replace_own),    cmocka_unit_test(test_replace_big),
		cmocka_unit_test(test_walk_hardlinks),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
