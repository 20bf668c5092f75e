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
 *
 * The kernel decides what the user may do, as it does for the scripts.
 */
#ifndef AGENT_FILEOPS_H
#define AGENT_FILEOPS_H

#include <stdbool.h>

/* True when name is one of the operations. */
bool fileop_known(const char *name);
/* Runs operation argv[0] with argv[1..argc); returns the exit code. -1: no such operation. */
int fileop_run(int argc, char **argv);

#endif
