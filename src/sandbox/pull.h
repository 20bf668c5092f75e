/*
 * pull.h - the image a session starts from, made available under the
 * operator's image policy: checked against SANDBOX_IMAGES (before any
 * registry is contacted), inspected, and pulled per SANDBOX_PULL with the
 * engine's progress condensed into layers and bytes.
 */
#ifndef PULL_H
#define PULL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "config/config.h"
#include "engine/engine.h"

/* Layers whose bytes a pull's progress follows; more are counted, not followed. */
#define PULL_LAYERS_MAX 128
/* Least time between two progress reports of one pull (a finished layer is reported at once). */
#define PULL_PROGRESS_MS 250

/* Hears a pull's progress: bytes so far, bytes known in all (0: not yet), and a line for people. */
typedef void (*pull_report_fn)(void *arg, double done, double total, const char *msg);

struct pull_result {
	bool pulled;
	int64_t pull_ms;
};

/*
 * Makes image usable by a session: 0 with *ret_img (the engine's inspect
 * of it, a new reference) and *ret (whether and how long it pulled), or
 * -errno with err: ERRCODE_INVALID_ARGUMENT for a reference that is
 * malformed or outside the policy, ERRCODE_IMAGE_NOT_FOUND for one that
 * is missing and not pulled (or that the registry does not have), with
 * the registry's reason. report (may be NULL) hears the pull's progress.
 * own: the server's own throwaway session (session_export's look at a
 * base, its build's steps), whose image id it took from the engine: the
 * policy is for the references users name and does not hold such ids back.
 */
int pull_image(struct engine *e, struct call *call, const struct config *cfg, const char *image, bool own,
	       pull_report_fn report, void *arg, json_t **ret_img, struct pull_result *ret, struct err *err);

/* True when the policy lets sessions use image from the engine (an image id only under the default policy). */
bool pull_allowed_local(const struct config *cfg, const char *image);

/* Local images listed in env_info at most. */
#define PULL_LOCAL_LIST_MAX 200
/*
 * The env_info "images" object: the policy in words, SANDBOX_IMAGES and
 * SANDBOX_PULL, and "local", the engine's tagged images the policy lets a
 * session use (at most PULL_LOCAL_LIST_MAX; [] when the engine does not
 * answer). A new reference.
 */
json_t *pull_images_json(struct engine *e, struct call *call, const struct config *cfg);

#endif
