/*
 * session-pool.c - the warm pool's side in the registry (pool.h): members
 * are made by the same session_container_new as fresh sessions, with the
 * default options, counted under SANDBOX_MAX_SESSIONS_TOTAL, and handed out
 * only while a fresh session would be the same.
 */
#include <stdint.h>
#include <string.h>

#include "base/log.h"
#include "engine/engine-image.h"
#include "sandbox/agentctl.h"
#include "sandbox/pool.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

static int build(struct session_mgr *m, struct call *call, struct session **ret, struct err *err)
{
	const struct session_opts o = { 0 };
	struct session *s;
	int r = session_container_new(m, call, &o, m->cfg->image, "none", true, &s, err);
	if (r < 0)
		return r;
	/* the agent up ahead too: the first run_command of the session pays no start */
	struct err aerr;
	if (s->agent_installed && agentctl_start(s->engine, call, s->container, s->user, &s->agent, &aerr) < 0 &&
	    !call_cancelled(call))
		log_infof("warm pool: the agent of %.12s did not start (%s); its first command starts it", s->container,
			  aerr.msg);
	*ret = s;
	return 0;
}

static void discard(struct session_mgr *m, struct session **list, size_t n)
{
	session_remove_all(m, list, n);
	for (size_t i = 0; i < n; i++)
		session_free(list[i]);
}

/* Containers still allowed under SANDBOX_MAX_SESSIONS_TOTAL, beside the sessions listed or starting. */
static size_t room(struct session_mgr *m)
{
	uint64_t max = m->cfg->max_sessions_total;
	if (!max)
		return SIZE_MAX;
	pthread_mutex_lock(&m->lock);
	size_t total = m->npending;
	for (size_t i = 0; i < m->len; i++)
		total += !m->list[i]->adopted;
	pthread_mutex_unlock(&m->lock);
	return total >= max ? 0 : (size_t)(max - total);
}

/*
 * A member is handed out only if a fresh session would be the same: the
 * default image still names the image it was made of, and it still runs
 * (its agent's stream ends when the container stops; without an agent, the
 * engine is asked). An engine that does not answer proves neither: the
 * member is kept (removing it would fail too) and the call goes fresh.
 */
static int current(struct session_mgr *m, struct session *s)
{
	json_t *j = NULL;
	struct err err;
	int r = engine_image_inspect(s->engine, NULL, m->cfg->image, &j, &err);
	if (r < 0)
		return err.code == ERRCODE_IMAGE_NOT_FOUND ? POOL_STALE : POOL_UNKNOWN;
	bool same = json_is_string(json_object_get(j, "Id")) &&
		    strcmp(json_string_value(json_object_get(j, "Id")), s->image_id) == 0;
	json_decref(j);
	j = NULL;
	if (!same)
		return POOL_STALE;
	if (s->agent)
		return agentctl_alive(s->agent) ? POOL_CURRENT : POOL_STALE;
	r = engine_container_inspect(s->engine, NULL, s->container, &j, &err);
	if (r < 0)
		return err.code == ERRCODE_SESSION_NOT_FOUND ? POOL_STALE : POOL_UNKNOWN;
	bool running = json_is_true(json_object_get(json_object_get(j, "State"), "Running"));
	json_decref(j);
	return running ? POOL_CURRENT : POOL_STALE;
}

const struct pool_ops session_pool_ops = {
	.build = build,
	.discard = discard,
	.room = room,
	.current = current,
};
