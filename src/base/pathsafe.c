/*
 * pathsafe.c - lexical path normalisation.
 */
#include <errno.h>
#include <string.h>

#include "base/pathsafe.h"

int path_resolve(const char *base, const char *path, char *out, size_t outsz)
{
	char tmp[2 * PATHSAFE_MAX + 2];
	size_t bl = strlen(base), pl = strlen(path);

	if (pl == 0 || outsz < 2)
		return -EINVAL;
	if (bl > PATHSAFE_MAX || pl > PATHSAFE_MAX)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < pl; i++)
		if ((unsigned char)path[i] < 0x20 || path[i] == 0x7f)
			return -EINVAL;
	if (path[0] == '/') {
		memcpy(tmp, path, pl + 1);
	} else {
		memcpy(tmp, base, bl);
		tmp[bl] = '/';
		memcpy(tmp + bl + 1, path, pl + 1);
	}

	/* walk components, keeping a stack of where each kept one starts */
	size_t o = 0;
	const char *p = tmp;
	out[0] = '\0';
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 1 && c[0] == '.')
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--; /* drop the '/' too */
			out[o] = '\0';
			continue;
		}
		if (o + 1 + n + 1 > outsz)
			return -ENAMETOOLONG;
		out[o++] = '/';
		memcpy(out + o, c, n);
		o += n;
		out[o] = '\0';
	}
	if (o == 0) {
		out[0] = '/';
		out[1] = '\0';
	}
	return 0;
}

bool path_within(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int path_relative(const char *name, char *out, size_t outsz)
{
	size_t nl = strlen(name), o = 0;

	if (nl == 0 || outsz < 1)
		return -EINVAL;
	if (nl > PATHSAFE_MAX)
		return -ENAMETOOLONG;
	if (name[0] == '/')
		return -EXDEV;
	for (size_t i = 0; i < nl; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return -EINVAL;
	out[0] = '\0';
	for (const char *p = name; *p;) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		const char *c = p;
		while (*p && *p != '/')
			p++;
		size_t n = (size_t)(p - c);
		if (n == 1 && c[0] == '.')
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return -EXDEV;
		if (o + (o > 0) + n + 1 > outsz)
			return -ENAMETOOLONG;
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, c, n);
		o += n;
		out[o] = '\0';
	}
	return 0;
}
