/*
 * guard.h - the agent's seccomp filter (guard.c): fallocate(2), the ioctls
 * that allocate like it and io_uring fail with EOPNOTSUPP in every process
 * the agent starts, so that a sandbox cannot take gigabytes of the host's
 * disk in microseconds and a disk cap that measures (sandbox/diskguard.c)
 * meets writes at the disk's speed at most. Programs that preallocate
 * (glibc's posix_fallocate, pip, git) fall back to writing.
 */
#ifndef GUARD_H
#define GUARD_H

/* Installs the filter on the calling process (inherited by all it forks and execs). 0 or -1 with errno. */
int guard_install(void);

/* --guard PROG ARGS...: installs the filter, then execs PROG; returns only on failure (the exit status). */
int guard_exec_main(int argc, char **argv);

#endif
