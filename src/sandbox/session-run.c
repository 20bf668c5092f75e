/*
 * session-run.c - the one way a command runs in a session: through the
 * session's agent (a framed request on its stream, no exec) when it has one
 * that is free and alive, started or restarted here; else in an exec of its
 * own. A session with egress gets its relay back first if it died.
 */
#include <errno.h>
#include <stdatomic.h>

#include "base/log.h"
#include "sandbox/agentctl.h"
#include "sandbox/egress.h"
#include "sandbox/exec.h"
#include "sandbox/session-internal.h"
#include "sandbox/session.h"

bool session_agent_run(struct engine *e, struct call *call, struct session *s, const struct exec_spec *spec,
		       struct exec_result *xr, struct err *err, int *ret_r)
{
	struct err se;

	if (s->egress && egress_ensure(s->egress, e, call, s->container, &se) < 0)
		log_warnf("session %s: %s; it has no egress until a later call starts it", s->id, se.msg);
	if (!s->agent_installed || atomic_exchange(&s->agent_busy, true))
		return false;
	if (s->agent && !agentctl_alive(s->agent)) {
		log_infof("session %s: the agent is gone; starting a new one", s->id);
		agentctl_destroy(s->agent);
		s->agent = NULL;
	}
	if (!s->agent && agentctl_start(e, call, s->container, s->user, &s->agent, &se) < 0) {
		log_warnf("session %s: the agent did not start (%s); the exec path is used", s->id, se.msg);
		atomic_store(&s->agent_busy, false);
		return false;
	}
	int r = agentctl_run(s->agent, call, spec, xr, err);
	if (r == -EAGAIN) {
		log_infof("session %s: %s; the exec path is used", s->id, err->msg);
		agentctl_destroy(s->agent);
		s->agent = NULL;
		exec_result_finish(xr);
		err_clear(err);
	}
	atomic_store(&s->agent_busy, false);
	if (r == -EAGAIN)
		return false;
	*ret_r = r;
	return true;
}

int session_run(struct call *call, struct session *s, const struct exec_spec *spec, struct exec_result *xr,
		struct err *err)
{
	int r;
	if (!session_agent_run(s->engine, call, s, spec, xr, err, &r))
		r = exec_run(s->engine, call, s->container, spec, xr, err);
	return r;
}
