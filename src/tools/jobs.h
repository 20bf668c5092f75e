/*
 * jobs.h - background jobs (tool-job.c), for run_command {background: true}.
 */
#ifndef JOBS_H
#define JOBS_H

#include "sandbox/session.h"
#include "tools/tools.h"

/* Starts command (a shell line) in workdir as a background job in s and fills res with its id; returns 0. */
int job_start(struct tool_ctx *ctx, struct session *s, const char *command, const char *workdir,
	      struct tool_result *res);

#endif
