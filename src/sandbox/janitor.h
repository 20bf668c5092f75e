/*
 * janitor.h - the process that removes a server's containers when the
 * server died without its exit (killed, crashed): janitor.c says why.
 */
#ifndef JANITOR_H
#define JANITOR_H

#include "config/config.h"

struct janitor;

/*
 * Forks the janitor. Call before any thread starts: the child goes on with
 * this process's memory (cfg among it). 0 with *ret, or -errno (the server
 * then runs without one).
 */
int janitor_start(const struct config *cfg, struct janitor **ret);
/* Names the instance whose containers the janitor removes if this process dies without janitor_release. */
void janitor_arm(struct janitor *j, const char *instance);
/* The exit has done its removals: the janitor ends without a look. Frees j; NULL is fine. */
void janitor_release(struct janitor *j);
/*
 * The exit left removals undone (the engine was slow, session_mgr_exit_done):
 * the janitor does them once this process has ended, as after a kill. Frees j;
 * NULL is fine.
 */
void janitor_leave(struct janitor *j);

#endif
