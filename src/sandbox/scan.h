/*
 * scan.h - the start-up scan of what other servers left on the engines, and
 * the sweep of one instance's containers (scan.c).
 */
#ifndef SCAN_H
#define SCAN_H

#include <stddef.h>

struct engines;
struct session_mgr;

/*
 * The scan, on every engine: containers of servers proven dead are this
 * server's now (persistent ones adopted, the rest removed); those of live
 * servers, other hosts or unproven owners are left alone. Then the lock files
 * of ended servers go. Errors are logged.
 */
void scan_run(struct session_mgr *m);
/* This process as a label names it, "<pid>:<start time>:<boot id>", into out; -errno if /proc says nothing. */
int scan_proc_id(char *out, size_t n);
/* Removes instance's non-persistent containers (and pool members) on engine ei: its exit's removals. */
void scan_sweep_instance(struct engines *es, size_t ei, const char *instance);

#endif
