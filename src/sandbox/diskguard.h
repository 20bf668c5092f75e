/*
 * diskguard.h - the disk cap (SANDBOX_WORKSPACE_MB) on engines whose storage
 * driver has no quota (diskguard.c). Where the engine enforces the quota
 * (ceiling.c) writes past the cap fail with ENOSPC and this does nothing.
 */
#ifndef DISKGUARD_H
#define DISKGUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/errcode.h"

struct session;
struct session_mgr;

/* How often each session's writable layer is looked at (a look that costs c ms waits 20 c, up to the max). */
#define DISKGUARD_PERIOD_MS 1000
#define DISKGUARD_PERIOD_MAX_MS 10000
/*
 * Over the cap, a session may not grow past what it held right after its
 * last restart by more than this (logs, a shell's history) before it is
 * restarted again.
 */
#define DISKGUARD_SLACK ((int64_t)4 << 20)
/*
 * How often the folders a session can write in are walked (blocks, which
 * count small files as the disk does), and how long a walk may take: longer
 * counts as over the cap twice in a row (some 500,000 files).
 */
#define DISKGUARD_WALK_EVERY_MS 10000
#define DISKGUARD_WALK_MS 5000
/* Walks in a row that failed or ran out of time, after which a session counts as over the cap. */
#define DISKGUARD_FAILS 2
/* Restarts over the cap, without getting under it, after which its calls are refused. */
#define DISKGUARD_STRIKES 3

struct diskguard_look;
/* Frees what the guard kept of a session (session_free). NULL is a no-op. */
void diskguard_look_free(struct diskguard_look *l);

/* The thread's body (session_mgr starts it when SANDBOX_WORKSPACE_MB is set); ends when the registry stops. */
void *diskguard_main(void *arg);

/*
 * A tool call on s: 0, or -ENOSPC (ERRCODE_TOO_LARGE) with err when s went
 * over the cap DISKGUARD_STRIKES times and stays stopped until it is closed.
 */
int diskguard_admit(struct session_mgr *m, struct session *s, struct err *err);

/* What env_info and doctor say the cap is: the engine's quota, the guard, or off. */
const char *diskguard_mode(bool quota_enforced, unsigned long long cap_mb, char *buf, size_t n);

#endif
