/*
 * userdb.h - an image's USER, resolved to the numbers it runs as.
 *
 * Docker resolves a USER spec ("name", "uid", "name:group", "uid:gid", ...)
 * against the container's /etc/passwd and /etc/group each time a process
 * starts, and numbers such as "00", "+0" or a second passwd entry with uid 0
 * are root too.  So the server resolves the spec once, from the image's own
 * files before anything in it ran, and from then on hands the engine only an
 * explicit "uid:gid" in decimal: that form is never looked up again (a
 * sandbox that rewrites /etc/passwd changes nothing) and, being explicit,
 * gets no supplementary groups.
 *
 * Pure: the caller hands the files' bytes (capped by it); the cost is linear
 * in them.  The rules are runc's (libcontainer/user), including its quirks:
 * a numeric user always means a uid, an unparsable number in an entry reads
 * as 0, and a numeric uid without an entry gets gid 0.
 */
#ifndef USERDB_H
#define USERDB_H

#include <stddef.h>

#include "base/errcode.h"

/* Largest id Docker accepts (runc's maxID). */
#define USERDB_ID_MAX 2147483647UL

/*
 * Resolves spec against passwd[0..plen) and group[0..glen) (either may be
 * empty). 0 with *ret_uid and *ret_gid (which may be 0: the caller decides
 * what root means), or -ENOENT (a name neither file lists) or -EINVAL (a
 * number out of range), with err.
 */
int userdb_resolve(const char *spec, const char *passwd, size_t plen, const char *group, size_t glen,
		   unsigned long *ret_uid, unsigned long *ret_gid, struct err *err);

#endif
