/*
 * ceiling.c - ceilings on what a session may ask for, the workspace quota, and
 * the state of that quota as env_info reports it.
 *
 * A quota needs the storage driver's help: overlay2 enforces
 * HostConfig.StorageOpt size only on xfs mounted with pquota, and refuses the
 * create otherwise.  So the first create tries it and, on that refusal,
 * creates without it; the engine object remembers the answer.  The per-file
 * limit (RLIMIT_FSIZE) works everywhere but bounds one file, not the sum.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "sandbox/ceiling.h"
#include "sandbox/diskguard.h"

/*
 * A probe that outlives this long was left by a server that died in the
 * milliseconds between its create and its remove: probes are never started,
 * so removing one that old cannot stop anyone's work (and removing a live
 * one only makes its server log that its own remove failed).
 */
#define CEILING_PROBE_STALE_S 10

static bool storage_opt_refused(const struct err *err);
static int whole_number(const json_t *v, uint64_t *ret);

static int whole_number(const json_t *v, uint64_t *ret)
{
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		*ret = i < 0 ? 0 : (uint64_t)i;
		return 0;
	}
	/* 4096.0 is 4096 (JSON has one number type); 4096.5 is not a size */
	double d = json_number_value(v);
	if (!json_is_real(v) || d != floor(d) || d < 0 || d > 9007199254740992.0)
		return -EINVAL;
	*ret = (uint64_t)d;
	return 0;
}

int ceiling_session(const struct config *cfg, const json_t *memory_mb, const json_t *cpus, uint64_t *ret_memory_mb,
		    double *ret_cpus, struct err *err)
{
	uint64_t max_mb = cfg->max_memory_mb ? cfg->max_memory_mb : cfg->memory_mb;
	double max_cpus = cfg->max_cpus > 0 ? cfg->max_cpus : cfg->cpus;
	uint64_t mb = cfg->memory_mb;
	double c = cfg->cpus;

	if (memory_mb && !json_is_null(memory_mb)) {
		if (whole_number(memory_mb, &mb) < 0)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "memory_mb must be a whole number of MB from %d to %llu", CEILING_MIN_MEMORY_MB,
				       (unsigned long long)max_mb);
		if (mb < CEILING_MIN_MEMORY_MB)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "memory_mb %llu is below %d MB, the least a sandbox runs with: ask for at "
				       "least %d, or omit memory_mb for the default %llu",
				       (unsigned long long)mb, CEILING_MIN_MEMORY_MB, CEILING_MIN_MEMORY_MB,
				       (unsigned long long)cfg->memory_mb);
		if (mb > max_mb)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "memory_mb %llu is above this server's ceiling of %llu MB: ask for at most "
				       "%llu (the operator can raise it with SANDBOX_MAX_MEMORY_MB)",
				       (unsigned long long)mb, (unsigned long long)max_mb, (unsigned long long)max_mb);
	}
	if (cpus && !json_is_null(cpus)) {
		c = json_number_value(cpus);
		if (!json_is_number(cpus) || !(c >= CEILING_MIN_CPUS))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "cpus %g is below %.2f, the least a sandbox runs with: ask for at least %.2f, "
				       "or omit cpus for the default %g",
				       c, CEILING_MIN_CPUS, CEILING_MIN_CPUS, cfg->cpus);
		if (c > max_cpus)
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
				       "cpus %g is above this server's ceiling of %g: ask for at most %g (the operator "
				       "can raise it with SANDBOX_MAX_CPUS)",
				       c, max_cpus, max_cpus);
	}
	*ret_memory_mb = mb;
	*ret_cpus = c;
	return 0;
}

/* The engine's refusal of StorageOpt, by the words its drivers use. */
static bool storage_opt_refused(const struct err *err)
{
	return err->code == ERRCODE_ENGINE_ERROR &&
	       (strcasestr(err->msg, "storage-opt") || strcasestr(err->msg, "storage opt") ||
		strcasestr(err->msg, "storageopt") || strcasestr(err->msg, "quota"));
}

int ceiling_container_create(struct engine *e, struct call *call, const struct config *cfg, json_t *body,
			     char ret_id[ENGINE_ID_LEN + 1], json_t **ret_warnings, struct err *err)
{
	json_t *hc = json_object_get(body, "HostConfig");
	if (!cfg->workspace_mb || !hc)
		return engine_container_create(e, call, body, ret_id, ret_warnings, err);

	json_int_t bytes = (json_int_t)(cfg->workspace_mb << 20);
	json_t *ulimits = json_object_get(hc, "Ulimits");
	if (!json_is_array(ulimits)) {
		ulimits = json_array();
		json_object_set_new(hc, "Ulimits", ulimits);
	}
	json_array_append_new(ulimits, json_pack("{s:s, s:I, s:I}", "Name", "fsize", "Soft", bytes, "Hard", bytes));
	if (engine_storage_opt_state(e, NULL, 0) < 0)
		return engine_container_create(e, call, body, ret_id, ret_warnings, err);

	char size[32];
	snprintf(size, sizeof(size), "%lluM", (unsigned long long)cfg->workspace_mb);
	json_object_set_new(hc, "StorageOpt", json_pack("{s:s}", "size", size));
	int r = engine_container_create(e, call, body, ret_id, ret_warnings, err);
	if (r == 0) {
		engine_storage_opt_note(e, 1, NULL);
		return 0;
	}
	if (!storage_opt_refused(err))
		return r;
	/* the engine's own words, without the generic advice every engine error ends with */
	const char *why = strstr(err->msg, ": ");
	why = why ? why + 2 : err->msg;
	const char *advice = strstr(why, "; try again");
	char reason[sizeof(err->msg)];
	snprintf(reason, sizeof(reason), "%.*s", advice ? (int)(advice - why) : (int)strlen(why), why);
	engine_storage_opt_note(e, -1, reason);
	log_infof("no workspace quota on this engine (only the per-file limit holds): %s", reason);
	json_object_del(hc, "StorageOpt");
	err_clear(err);
	return engine_container_create(e, call, body, ret_id, ret_warnings, err);
}

const char *ceiling_quota_state(struct engine *e, struct call *call, const struct config *cfg, bool may_probe,
				char *buf, size_t n)
{
	char why[160];
	struct err err;

	if (!cfg->workspace_mb) {
		snprintf(buf, n, "off (SANDBOX_WORKSPACE_MB=0)");
		return buf;
	}
	if (engine_storage_opt_state(e, NULL, 0) == 0 && !may_probe) {
		snprintf(buf, n, "unknown (the engine did not answer)");
		return buf;
	}
	if (engine_storage_opt_state(e, NULL, 0) == 0) {
		/* nothing created yet: ask the engine with a container that never starts */
		char id[ENGINE_ID_LEN + 1];
		json_t *body = json_pack("{s:s, s:[s], s:{s:s}, s:b, s:{s:s}}", "Image", cfg->image, "Cmd", "true",
					 "Labels", CEILING_PROBE_LABEL, "1", "NetworkDisabled", 1, "HostConfig",
					 "NetworkMode", "none");
		err_clear(&err);
		int r = ceiling_container_create(e, call, cfg, body, id, NULL, &err);
		json_decref(body);
		if (r == 0 && engine_container_remove(e, call, id, &err) < 0)
			log_warnf("removing the quota probe container %.12s failed: %s", id, err.msg);
		if (r < 0) {
			snprintf(buf, n, "unknown (the probe failed: %.200s)", err.msg);
			return buf;
		}
	}
	if (engine_storage_opt_state(e, why, sizeof(why)) > 0)
		snprintf(buf, n, "enforced");
	else
		snprintf(buf, n, "unavailable: %s", why);
	return buf;
}

void ceiling_sweep_probes(struct engine *e, struct call *call)
{
	json_t *list = NULL, *c;
	struct err err;
	size_t i;

	err_clear(&err);
	if (engine_container_list(e, call, CEILING_PROBE_LABEL, &list, &err) < 0) {
		log_debugf("listing old quota probes failed: %s", err.msg);
		return;
	}
	time_t now = time(NULL);
	json_array_foreach (list, i, c) {
		const char *id = json_string_value(json_object_get(c, "Id"));
		const char *state = json_string_value(json_object_get(c, "State"));
		json_int_t created = json_integer_value(json_object_get(c, "Created"));
		if (!id || !state || strcmp(state, "created") != 0 || now - (time_t)created < CEILING_PROBE_STALE_S)
			continue;
		err_clear(&err);
		if (engine_container_remove(e, call, id, &err) < 0)
			log_debugf("removing the old quota probe %.12s failed: %s", id, err.msg);
		else
			log_infof("removed a quota probe container %.12s left by a server that stopped", id);
	}
	json_decref(list);
}

json_t *ceiling_json(struct engine *e, struct call *call, const struct config *cfg, bool may_probe)
{
	char quota[256], cap[256];

	ceiling_quota_state(e, call, cfg, may_probe, quota, sizeof(quota));
	diskguard_mode(strcmp(quota, "enforced") == 0, (unsigned long long)cfg->workspace_mb, cap, sizeof(cap));
	return json_pack("{s:I, s:I, s:f, s:f, s:I, s:I, s:s, s:s, s:I}", "memory_mb", (json_int_t)cfg->memory_mb,
			 "max_memory_mb", (json_int_t)(cfg->max_memory_mb ? cfg->max_memory_mb : cfg->memory_mb),
			 "cpus", cfg->cpus, "max_cpus", cfg->max_cpus > 0 ? cfg->max_cpus : cfg->cpus, "pids",
			 (json_int_t)cfg->pids, "workspace_mb", (json_int_t)cfg->workspace_mb, "workspace_quota", quota,
			 "disk_cap", cap, "output_save_mb", (json_int_t)cfg->output_save_mb);
}
