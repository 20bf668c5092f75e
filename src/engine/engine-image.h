/*
 * engine-image.h - the Engine API's image calls (engine-image.c): inspect,
 * list, tag, remove, commit, import, build, pull; the engine itself and
 * the types they share are engine.h's.
 */
#ifndef ENGINE_IMAGE_H
#define ENGINE_IMAGE_H

#include <jansson.h>

#include "base/call.h"
#include "base/errcode.h"
#include "engine/engine.h"

/* GET /images/{name}/json; ERRCODE_IMAGE_NOT_FOUND when absent. */
int engine_image_inspect(struct engine *e, struct call *call, const char *name, json_t **ret_json, struct err *err);

/* GET /images/json?all=1&filters={"label":[label]} (intermediate images too); ret_json is the array. */
int engine_image_list(struct engine *e, struct call *call, const char *label, json_t **ret_json, struct err *err);
/* POST /images/{id}/tag?repo=&tag= (moves the tag if it exists: check first). */
int engine_image_tag(struct engine *e, struct call *call, const char *id, const char *repo, const char *tag,
		     struct err *err);

/*
 * POST /commit?container=id&repo=&tag=&comment=&pause=1 with config (the
 * new image's container config, may be NULL) and changes (Dockerfile
 * instructions, NULL-terminated, may be NULL; the request line holds at most
 * ENGINE_COMMIT_PATH_MAX bytes). 0 with ret_id, or -errno.
 */
int engine_commit(struct engine *e, struct call *call, const char *container_id, const char *repo, const char *tag,
		  const char *comment, json_t *config, const char *const *changes, char ret_id[ENGINE_IMAGE_ID_MAX],
		  struct err *err);
/* DELETE /images/{name} (no force: an image a container uses stays). An absent image is success. */
int engine_image_remove(struct engine *e, struct call *call, const char *name, struct err *err);

/*
 * POST /images/create?fromSrc=-&repo=&tag=&message=&changes=... with the
 * rootfs tar src gives, sent in chunks (no length needed). changes are
 * Dockerfile instructions (CMD, ENV, LABEL, ...; NULL-terminated, may be
 * NULL). 0 with ret_id, or -errno with err.
 */
int engine_image_import(struct engine *e, struct call *call, const char *repo, const char *tag, const char *message,
			const char *const *changes, engine_source_fn src, void *src_arg,
			char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err);
/*
 * POST /build?<query> (query already escaped: t=, labels=, networkmode=,
 * ...) with the uncompressed tar context src gives, sent in chunks. Each progress message
 * goes to on_msg. 0 with ret_id, or -errno with err: a failed build is
 * ERRCODE_ENGINE_ERROR carrying the builder's error line.
 */
int engine_build(struct engine *e, struct call *call, const char *query, engine_source_fn src, void *src_arg,
		 engine_message_fn on_msg, void *msg_arg, char ret_id[ENGINE_IMAGE_ID_MAX], struct err *err);

/*
 * POST /images/create?fromImage=&tag= (tag: a tag or a digest), for the
 * engine's own platform. auth (may be NULL) is the X-Registry-Auth value;
 * it is sent, never logged or kept. Each progress message goes to on_msg.
 * The pull may take ENGINE_LONG_TIMEOUT_MS, but no wait for a byte more
 * than the engine timeout. 0, or -errno with err: a refusal before the
 * stream (e.g. 404 for a missing tag) carries the engine's message, a
 * failure in it is ERRCODE_ENGINE_ERROR with -ENOEXEC.
 */
int engine_image_pull(struct engine *e, struct call *call, const char *from_image, const char *tag, const char *auth,
		      engine_message_fn on_msg, void *msg_arg, struct err *err);

#endif
