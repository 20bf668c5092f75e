/*
 * tar.h - uncompressed tar streams built in memory with libarchive.
 */
#ifndef TAR_H
#define TAR_H

#include <stddef.h>
#include <sys/types.h>

#include "buf.h"
#include "errcode.h"

/* Appends a tar holding one directory entry `name` owned by uid:gid to out
 * (the engine keeps the header's owner when extracting). 0 or -errno. */
int tar_make_dir(const char *name, mode_t mode, unsigned uid, unsigned gid, struct buf *out, struct err *err);

#endif
