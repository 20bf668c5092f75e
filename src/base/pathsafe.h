/*
 * pathsafe.h - pure, lexical path normalisation and containment checks for
 * paths inside sandboxes (working directories, file tool paths).
 *
 * Lexical only: inside a container the container is the boundary, so a
 * symlink there may point anywhere the sandbox user can reach anyway.  Host
 * paths are never checked with these; they are checked on opened fds.
 */
#ifndef PATHSAFE_H
#define PATHSAFE_H

#include <stdbool.h>
#include <stddef.h>

/* Longest path accepted. */
#define PATHSAFE_MAX 4096

/*
 * Joins path to base (unless path is absolute) and normalises the result:
 * no ".", "..", empty components or trailing '/'; ".." never climbs above
 * "/". 0, -EINVAL (empty path, NUL or control bytes), or -ENAMETOOLONG.
 */
int path_resolve(const char *base, const char *path, char *out, size_t outsz);

/* True when normalised path is dir itself or below it. */
bool path_within(const char *dir, const char *path);

/*
 * Normalises a name taken from an untrusted archive into a relative path:
 * "./" prefixes, "." and empty components and a trailing '/' go; "" (the
 * archive's top directory) is allowed. Never climbs: 0, -EXDEV for an
 * absolute name or a ".." component, -EINVAL for control bytes (or an empty
 * name), -ENAMETOOLONG past outsz or PATHSAFE_MAX.
 */
int path_relative(const char *name, char *out, size_t outsz);

#endif
