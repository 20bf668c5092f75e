/*
 * hostmark.h - what a download may write and replace on the host (docs/design.md
 * §4: no host file overwritten that the server did not write), so that
 * nothing it writes makes a host program run the sandbox's code unasked
 * (a .git/config's core.fsmonitor on `git status`, a .bashrc, a Makefile).
 *
 * Every file and folder a download creates gets the extended attribute
 * HOSTMARK_XATTR, bound to its inode (and a file's size and mtime, so a file
 * edited or copied since is the user's). Only what carries a valid mark may
 * be replaced, in a folder every entry. The sandbox cannot forge it: tar
 * streams carry no xattrs to the host. On a filesystem without user xattrs
 * nothing is marked, so nothing is replaced. Hidden names and
 * version-control metadata are never written (hostfs.h says where).
 */
#ifndef HOSTMARK_H
#define HOSTMARK_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/errcode.h"

/* The extended attribute on what a download wrote. */
#define HOSTMARK_XATTR "user.sandbox-mcp.written"

/*
 * Whether name is version-control metadata, or git's HEAD (without which git
 * takes no folder for a bare repository), compared without case.
 */
bool hostmark_vcs_name(const char *name);
/*
 * Why name may never be written on the host nor be a folder written in, or
 * NULL: version-control metadata, a hidden name (.envrc, .vscode, .bashrc
 * configure programs there), or Python's bytecode (a __pycache__ folder, a
 * .pyc or .pyo file: python runs a newer-looking cache in place of the .py
 * beside it).
 */
const char *hostmark_unsafe_name(const char *name);
/* Marks what fd is now as written by the server. 0 or -errno (ENOTSUP: no user xattrs there). */
int hostmark_set(int fd);
/* mkdirat, then marks the new folder (left unmarked, it is only never replaced). 0 or -errno (-EEXIST). */
int hostmark_mkdir(int dfd, const char *name, mode_t mode);
/*
 * Whether name below dfd may be replaced: 0 when nothing is there; 1 when it
 * is a file or folder the server wrote, unchanged since (and so is everything
 * in a folder), its inode in *ret_ino; else -EACCES
 * (ERRCODE_HOST_PATH_NOT_ALLOWED, naming what is not the server's) or -errno
 * with err.
 */
int hostmark_replaceable(int dfd, const char *name, ino_t *ret_ino, struct err *err);

#endif
