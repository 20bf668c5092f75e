/*
 * dropops.h - the agent's built-in operations for transfers through the
 * drop (docs/agent.md "Transfers through the drop"): the engine's archive
 * API reads and writes only inside a slot, DROP/SLOT, a directory the
 * sandbox user cannot name (a secret name in a root-owned 0711 DROP), and
 * the agent moves bytes between the slot and the user's paths as the user.
 *
 * Registered in fileops.c's table; each runs in a forked child and returns
 * its exit code (enum xfer_exit's, plus 27 too large):
 *
 *   dropcheck DROP                    "<uid> <gid>\n" when /, each ancestor
 *                                     of DROP and DROP are real directories
 *                                     owned by root, not group/other
 *                                     writable; else 77
 *   place DROP SLOT DESTDIR BASE OVERWRITE   moves SLOT/BASE to DESTDIR/BASE
 *                                     (upload_script's checks: 69, 77, 68);
 *                                     empties the slot in every case
 *   stage DROP SLOT PATH CAP          "d\n" (PATH's contents under SLOT/t)
 *                                     or "f <base>\n" (SLOT/f/<base>);
 *                                     download_script's checks: 66, 77, 65
 *   clear DROP SLOT                   empties the slot, keeps it
 *
 * Messages never name DROP's slot: they say the user's path or the entry's
 * name relative to the slot.
 */
#ifndef AGENT_DROPOPS_H
#define AGENT_DROPOPS_H

/* Each takes the argv of its 'B' request (argv[0] its name); returns the exit code. */
int dropop_check(int argc, char **argv);
int dropop_place(int argc, char **argv);
int dropop_stage(int argc, char **argv);
int dropop_clear(int argc, char **argv);

#endif
