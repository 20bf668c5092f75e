/*
 * fuzz-pathsafe.c - path normalisation (pathsafe.h) on arbitrary names.
 *
 * The input is "base\0path" (or just a path, joined to /workspace). What
 * comes out must be what the callers rely on: path_resolve gives an absolute
 * path with no ".", ".." or empty component, that resolves to itself again
 * and that path_within agrees with; path_relative gives a relative name that
 * never climbs, or refuses with the documented codes.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "base/pathsafe.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* No "", "." or ".." component in the '/'-separated p (a leading '/' allowed when absolute). */
static bool clean_components(const char *p, bool absolute)
{
	if (absolute) {
		if (p[0] != '/')
			return false;
		if (p[1] == '\0')
			return true;
		p++;
	}
	for (;;) {
		const char *slash = strchr(p, '/');
		size_t n = slash ? (size_t)(slash - p) : strlen(p);
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		if (!slash)
			return true;
		p = slash + 1;
	}
}

static void check_resolve(const char *base, const char *path)
{
	char out[PATHSAFE_MAX + 1], again[PATHSAFE_MAX + 1], nbase[PATHSAFE_MAX + 1];

	int r = path_resolve(base, path, out, sizeof(out));
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENAMETOOLONG);
	if (r < 0)
		return;
	FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL);
	FUZZ_CHECK(clean_components(out, true));
	/* control bytes are refused in path (base is the server's own setting) */
	bool base_clean = true;
	for (const char *c = base; *c; c++)
		base_clean = base_clean && (unsigned char)*c >= 0x20 && *c != 0x7f;
	if (!base_clean)
		return;
	for (const char *c = out; *c; c++)
		FUZZ_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
	/* normal already: resolving it again changes nothing */
	FUZZ_CHECK(path_resolve("/", out, again, sizeof(again)) == 0);
	FUZZ_CHECK(strcmp(out, again) == 0);
	FUZZ_CHECK(path_within(out, out));
	FUZZ_CHECK(path_within("/", out));
	/* a relative path without ".." stays within its (normalised) base */
	if (path[0] != '/' && path_resolve("/", base, nbase, sizeof(nbase)) == 0) {
		bool climbs = strcmp(path, "..") == 0 || strncmp(path, "../", 3) == 0 || strstr(path, "/../") ||
			      (strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0);
		if (!climbs)
			FUZZ_CHECK(path_within(nbase, out));
	}
	/* path_within is a component match, never a string prefix */
	if (path_within(out, again)) {
		size_t n = strlen(out);
		FUZZ_CHECK(strcmp(out, "/") == 0 || again[n] == '\0' || again[n] == '/');
	}
}

static void check_relative(const char *name)
{
	char out[PATHSAFE_MAX + 1], again[PATHSAFE_MAX + 1];

	int r = path_relative(name, out, sizeof(out));
	FUZZ_CHECK(r == 0 || r == -EXDEV || r == -EINVAL || r == -ENAMETOOLONG);
	if (r < 0)
		return;
	FUZZ_CHECK(memchr(out, '\0', sizeof(out)) != NULL);
	if (name[0] == '/')
		FUZZ_CHECK(!"an absolute name was accepted");
	if (out[0] == '\0')
		return; /* the archive's top directory */
	FUZZ_CHECK(clean_components(out, false));
	FUZZ_CHECK(path_relative(out, again, sizeof(again)) == 0);
	FUZZ_CHECK(strcmp(out, again) == 0);
	/* joined to a directory, it stays below it */
	char joined[PATHSAFE_MAX + 1];
	if (path_resolve("/dest", out, joined, sizeof(joined)) == 0)
		FUZZ_CHECK(path_within("/dest", joined) && strcmp(joined, "/dest") != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 2 * PATHSAFE_MAX + 64)
		return 0;
	char *buf = malloc(size + 2);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, data, size);
	buf[size] = '\0';
	buf[size + 1] = '\0';
	const char *base = "/workspace", *path = buf;
	char *nul = memchr(buf, '\0', size);
	if (nul) {
		base = buf;
		path = nul + 1;
	}
	check_resolve(base, path);
	check_relative(path);
	free(buf);
	return 0;
}
