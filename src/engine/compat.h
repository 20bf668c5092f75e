/*
 * compat.h - what engines other than Docker report differently through the
 * Docker Engine API (issue 19: Podman 4.3's compatible API), read so that the
 * server's checks hold on them without loosening on Docker.
 */
#ifndef COMPAT_H
#define COMPAT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "base/buf.h"

/*
 * Whether an inspected HostConfig shows every capability dropped.  Docker
 * echoes CapDrop ["ALL"]; Podman lists what it dropped from its default set
 * instead.  Such a list counts only if it covers all of Docker's default
 * capabilities and CapAdd adds nothing back.
 */
bool compat_caps_all_dropped(const json_t *host_config);

/*
 * An image id in Docker's spelling, "sha256:<64 hex>", into out (outsz >= 72)
 * from s: that spelling, or Podman's bare 64 hex digits (what its commit
 * returns).  false for anything else.
 */
bool compat_image_id(const char *s, char *out, size_t outsz);

/*
 * Whether kv, a "NAME=value" of an inspected container's Config.Env, is one
 * the engine adds to every container rather than the session's own: Podman
 * adds container=podman and HOSTNAME=<the container's host name>.  Docker
 * adds neither.  hostname is the container's Config.Hostname (NULL: none).
 */
bool compat_engine_env(const char *kv, const char *hostname);

/*
 * Whether an inspected container is on the network asked for (a
 * NetworkMode: "none" or a network's name).  Docker echoes the name in
 * HostConfig.NetworkMode; Podman says "bridge" there for any named network
 * and lists the network under NetworkSettings.Networks, which must then hold
 * exactly that one.
 */
bool compat_network_applied(const json_t *inspect, const char *asked);

/*
 * Appends s to out as Podman 4.3's changes parser reads a value: inside
 * double quotes, which it strips, with nothing escaped (it unescapes
 * nothing).  -EINVAL for what that cannot carry: a line break, or a quote
 * at either end (it would be stripped too).
 */
int compat_podman_quote(const char *s, struct buf *out);
/* A label key for the same parser: as is; -EINVAL if empty or holding a space, '=', a quote or a line break. */
int compat_podman_key(const char *s, struct buf *out);

#endif
