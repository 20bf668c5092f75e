/*
 * export-build.h - session_export's build past the engine's builder: its
 * output, and the RUN steps in a hardened session (export-build.c).
 */
#ifndef EXPORT_BUILD_H
#define EXPORT_BUILD_H

#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"
#include "engine/engine.h"
#include "sandbox/session.h"
#include "tools/tools.h"

/* Bytes of the build's output quoted when it fails. */
#define EXPORT_BUILD_TAIL 3000

/* The output of a build (the builder's, then the RUN steps'), for progress and for the error. */
struct build_tail {
	struct tool_ctx *ctx;
	struct buf text; /* the last EXPORT_BUILD_TAIL bytes of output */
	char step[160];	 /* the last "Step n/m : ..." line */
};

/* "<IMAGE_LABEL_BUILD>=<32 hex>": a label filter naming one build's images. */
void export_build_nonce(char *out, size_t outsz);
/* The builder's messages (engine_build's callback; arg is a struct build_tail). */
void export_build_message(void *arg, json_t *msg);
/*
 * The RUN steps of an export (runs: [{step, cmd}] of steps in all): in a
 * transient session of the built image (image_id, replaced by the commit's),
 * with s's limits and runtime, in wd, after outside's /tmp files are written
 * there again; then committed with the built image's settings. The session
 * is closed in every case. 0 or -errno.
 */
int export_hardened_steps(struct tool_ctx *ctx, struct session *s, json_t *runs, size_t steps, const char *wd,
			  json_t *outside, struct build_tail *bt, char image_id[ENGINE_IMAGE_ID_MAX], struct err *err);

#endif
