/*
 * ceiling.h - the operator's limits as ceilings (docs/design.md §5, issue 14 F8).
 *
 * SANDBOX_MEMORY_MB/SANDBOX_CPUS are what a session gets by default;
 * SANDBOX_MAX_MEMORY_MB/SANDBOX_MAX_CPUS (default: the same values) are the
 * most it may ask for; SANDBOX_PIDS is not a session argument at all.  The
 * workspace gets a disk quota (SANDBOX_WORKSPACE_MB) where the engine can
 * enforce one, and every file a session writes is capped at that size.
 */
#ifndef CEILING_H
#define CEILING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"

/*
 * Label on the quota probe's container: never started, removed at once, and
 * swept by the next probe when its server died in between (the session label
 * io.sandbox-mcp plus ".probe"; session.h includes this header, not the
 * other way round).
 */
#define CEILING_PROBE_LABEL "io.sandbox-mcp.probe"

/*
 * Removes quota probes older than a few seconds, left by a server that died
 * between creating and removing one. The probe carries no instance label
 * (no server owns it longer than a create and a remove), so the session
 * sweep at start-up never sees it and calls this instead.
 */
void ceiling_sweep_probes(struct engine *e, struct call *call);

/* Floors: below these a container starts but hardly anything runs in it. */
#define CEILING_MIN_MEMORY_MB 16
#define CEILING_MIN_CPUS 0.01

/*
 * The memory and CPUs of a new session from session_create's arguments
 * (NULL: the default).  0, or -EINVAL (invalid_argument) for a value under
 * the floor or over the ceiling, naming the ceiling and the setting that
 * raises it.
 */
int ceiling_session(const struct config *cfg, const json_t *memory_mb, const json_t *cpus, uint64_t *ret_memory_mb,
		    double *ret_cpus, struct err *err);

/*
 * engine_container_create with the workspace quota: adds the per-file limit
 * (ulimit fsize) and HostConfig.StorageOpt size to body's HostConfig when
 * SANDBOX_WORKSPACE_MB is set; when the engine refuses StorageOpt (overlay2
 * without xfs pquota) creates without it and notes why on the engine.
 */
int ceiling_container_create(struct engine *e, struct call *call, const struct config *cfg, json_t *body,
			     char ret_id[ENGINE_ID_LEN + 1], json_t **ret_warnings, struct err *err);

/*
 * The workspace quota's state for env_info and doctor: "enforced",
 * "unavailable: <reason>" or "off (SANDBOX_WORKSPACE_MB=0)".  When no create
 * has told yet and may_probe (the engine answers), asks with an unstarted
 * container of the default image.
 * Returns buf.
 */
const char *ceiling_quota_state(struct engine *e, struct call *call, const struct config *cfg, bool may_probe,
				char *buf, size_t n);

/* The limits as the JSON object env_info reports; a new reference. */
json_t *ceiling_json(struct engine *e, struct call *call, const struct config *cfg, bool may_probe);

#endif
