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

#endif
