/*
 * fileops.h - the agent's built-in file operations ('B' requests,
 * agentproto.h): what the file tools' sh scripts do (files.c,
 * tool-files.c, tool-find.c), done by the agent itself so that they need no
 * shell, tar or find in the image and no exec of the engine.
 *
 * Each runs in a forked child of the agent, as the sandbox user, with the
 * same arguments, the same exit codes (enum xfer_exit) and the same stdout
 * as the script it stands for, so the server reads both the same way:
 *
 *   read   PATH OFFSET LENGTH CAP   "<size> <mode>\n" then bytes [OFFSET,
 *                                   OFFSET+LENGTH) of the file (none when
 *                                   they are more than CAP); follows symlinks
 *                                   like `tar -h`
 *   write  DIR BASE OVERWRITE SETMODE MODE   stdin becomes DIR/BASE (made
 *                                   with `mkdir -p`, replaced by rename so a
 *                                   symlink BASE is replaced, not followed,
 *                                   as tar -x does); MODE octal
 *   list   PATH DEPTH HIDDEN        find's -printf records (tool-find.c)
 *   delete PATH RECURSIVE           "file"/"directory", then rm / rmdir
 *   usage  SINCE MS PATH...         "<bytes> <entries> <hidden> <unlinked>\n",
 *                                   the trees' disk use since SINCE, within MS
 *                                   ms (EXIT_TOO_LARGE past them; the disk
 *                                   guard's); unlinked: files on their disks
 *                                   deleted but still open
 *   roots  PATH                     the top-most folders the user may write
 *                                   or owns under PATH, a line each
 *
 * and the transfers' dropcheck, place, stage and clear (dropops.h).
 *
 * The kernel decides what the user may do, as it does for the scripts.
 */
#ifndef AGENT_FILEOPS_H
#define AGENT_FILEOPS_H

#include <stdbool.h>
#include <stdint.h>

/* The exit codes of enum xfer_exit (xfer.h), which the server maps to errors. */
/* Folders roots lists at most. */
#define FILEOPS_ROOTS_MAX 64
/* usage: levels it walks down (deeper counts as hidden), linked inodes it tells apart, the least an entry counts. */
#define FILEOPS_DEPTH_MAX 128
#define FILEOPS_LINKS_MAX 65536
#define FILEOPS_ENTRY_MIN 4096
/* Filesystems usage tells apart for its files deleted but held open (the roots' own, at most). */
#define FILEOPS_DEVS_MAX 16

enum {
	EXIT_TOO_LARGE = 27, /* stage: more than the cap; the server's own */
	EXIT_NOT_REGULAR = 65,
	EXIT_NOT_FOUND = 66,
	EXIT_IS_DIR = 67,
	EXIT_EXISTS = 68,
	EXIT_NO_DIR = 69,
	EXIT_DENIED = 77,
	EXIT_NOT_EMPTY = 39, /* the delete script's own */
	EXIT_FAILED = 2,     /* what tar exits with when it fails */
};

/* True when name is one of the operations. */
bool fileop_known(const char *name);
/* Runs operation argv[0] with argv[1..argc); returns the exit code. -1: no such operation. */
int fileop_run(int argc, char **argv);
/* A message on stderr (a newline added), as the scripts' tools print them. */
void fileop_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parses a decimal number, digits only. */
bool fileop_parse_num(const char *s, uint64_t *ret);
/* `mkdir -p dir` (absolute). 0, or -1 with the message said. */
int fileop_mkdir_p(const char *dir);

#endif
