/*
 * compat.c - engine dialects of the Docker Engine API (see compat.h).
 */
#include "engine/compat.h"
#include "engine/engine.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/*
 * Docker's (and Podman's widest) default capability set: an engine that says
 * it dropped each of these, and added none, runs the container with none.
 */
static const char *const default_caps[] = {
	"AUDIT_WRITE",	    "CHOWN",   "DAC_OVERRIDE", "FOWNER", "FSETID",  "KILL",   "MKNOD",
	"NET_BIND_SERVICE", "NET_RAW", "SETFCAP",      "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
};

static bool cap_is(const json_t *v, const char *name)
{
	const char *s = json_string_value(v);
	if (!s)
		return false;
	if (strncasecmp(s, "CAP_", 4) == 0)
		s += 4;
	return strcasecmp(s, name) == 0;
}

static bool list_has(const json_t *list, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach (list, i, v)
		if (cap_is(v, name))
			return true;
	return false;
}

bool compat_caps_all_dropped(const json_t *host_config)
{
	const json_t *drop = json_object_get(host_config, "CapDrop");
	const json_t *add = json_object_get(host_config, "CapAdd");
	if (!json_is_array(drop))
		return false;
	if (list_has(drop, "ALL"))
		return true;
	/* a list form: nothing may come back through CapAdd (null and [] are both none) */
	if (add && !json_is_null(add) && (!json_is_array(add) || json_array_size(add) > 0))
		return false;
	for (size_t i = 0; i < sizeof(default_caps) / sizeof(default_caps[0]); i++)
		if (!list_has(drop, default_caps[i]))
			return false;
	return true;
}

bool compat_image_id(const char *s, char *out, size_t outsz)
{
	if (!s || outsz < sizeof("sha256:") + ENGINE_ID_LEN)
		return false;
	const char *hex = strncmp(s, "sha256:", 7) == 0 ? s + 7 : s;
	if (!engine_id_valid(hex))
		return false;
	snprintf(out, outsz, "sha256:%s", hex);
	return true;
}

bool compat_engine_env(const char *kv, const char *hostname)
{
	if (!kv)
		return false;
	if (strcmp(kv, "container=podman") == 0)
		return true;
	return hostname && *hostname && strncmp(kv, "HOSTNAME=", 9) == 0 && strcmp(kv + 9, hostname) == 0;
}

bool compat_network_applied(const json_t *inspect, const char *asked)
{
	const char *mode = json_string_value(json_object_get(json_object_get(inspect, "HostConfig"), "NetworkMode"));
	if (!mode || !asked || !*asked)
		return false;
	if (strcmp(mode, asked) == 0)
		return true;
	/* Podman's form: only for a named network, never in place of none, host or container:... */
	if (strcmp(mode, "bridge") != 0 || strcmp(asked, "none") == 0 || strcmp(asked, "host") == 0 ||
	    strcmp(asked, "bridge") == 0 || strchr(asked, ':'))
		return false;
	const json_t *nets = json_object_get(json_object_get(inspect, "NetworkSettings"), "Networks");
	return json_is_object(nets) && json_object_size(nets) == 1 && json_object_get(nets, asked);
}

int compat_podman_quote(const char *s, struct buf *out)
{
	size_t n = strlen(s);
	if (strpbrk(s, "\n\r") || (n > 0 && (s[0] == '"' || s[n - 1] == '"')))
		return -EINVAL;
	return buf_printf(out, "\"%s\"", s);
}

int compat_podman_key(const char *s, struct buf *out)
{
	if (!*s || strpbrk(s, " \t=\"'\n\r"))
		return -EINVAL;
	return buf_append_str(out, s);
}
