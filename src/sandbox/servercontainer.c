/*
 * servercontainer.c - a server's own container, and whether another
 * server's still runs (see servercontainer.h).
 *
 * The id comes from the mount of the container's hostname file: Docker
 * bind-mounts /var/lib/docker/containers/<id>/hostname, Podman
 * .../overlay-containers/<id>/userdata/hostname, at /etc/hostname. Only
 * that mount point counts: on the host, mountinfo lists other containers'
 * mounts (their shm), which must never pass for this process's container.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "sandbox/servercontainer.h"

/* Generous: a mountinfo of a few hundred mounts is some 50 KiB. */
#define SERVERCONTAINER_MOUNTINFO_MAX (1 << 20)

static bool is_hex64(const char *p)
{
	for (int i = 0; i < ENGINE_ID_LEN; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...". The id when it mounts a container's hostname at /etc/hostname. */
static bool line_id(const char *line, size_t n, char out[ENGINE_ID_LEN + 1])
{
	const char *f[5];
	size_t len[5], k = 0, i = 0;
	while (k < 5 && i < n) {
		while (i < n && line[i] == ' ')
			i++;
		f[k] = line + i;
		while (i < n && line[i] != ' ')
			i++;
		len[k] = (size_t)(line + i - f[k]);
		k++;
	}
	if (k < 5 || len[4] != strlen("/etc/hostname") || memcmp(f[4], "/etc/hostname", len[4]) != 0)
		return false;
	/* the root: ...containers/<id>/hostname or ...containers/<id>/userdata/hostname */
	static const char key[] = "containers/";
	for (size_t j = 0; j + strlen(key) + ENGINE_ID_LEN + 1 <= len[3]; j++) {
		const char *p = f[3] + j;
		if (memcmp(p, key, strlen(key)) != 0 || !is_hex64(p + strlen(key)) ||
		    p[strlen(key) + ENGINE_ID_LEN] != '/')
			continue;
		memcpy(out, p + strlen(key), ENGINE_ID_LEN);
		out[ENGINE_ID_LEN] = '\0';
		return true;
	}
	return false;
}

void servercontainer_parse(const char *text, size_t n, char out[ENGINE_ID_LEN + 1])
{
	out[0] = '\0';
	for (size_t start = 0; start < n;) {
		const char *nl = memchr(text + start, '\n', n - start);
		size_t end = nl ? (size_t)(nl - text) : n;
		if (line_id(text + start, end - start, out))
			return;
		start = end + 1;
	}
}

void servercontainer_self(char out[ENGINE_ID_LEN + 1])
{
	char *text = NULL;
	size_t n = 0;
	out[0] = '\0';
	/*
	 * Outside a container (Docker makes /.dockerenv, Podman
	 * /run/.containerenv) nothing is read: a host's mountinfo lists every
	 * container's mounts, and reading it was a tenth of the start-up.
	 */
	if (access("/.dockerenv", F_OK) < 0 && access("/run/.containerenv", F_OK) < 0)
		return;
	if (read_small_file("/proc/self/mountinfo", SERVERCONTAINER_MOUNTINFO_MAX, &text, &n) == 0)
		servercontainer_parse(text, n, out);
	free(text);
}

int servercontainer_running(struct engine *e, const char *id, struct err *err)
{
	json_t *j = NULL;
	int r = engine_container_inspect(e, NULL, id, &j, err);
	if (r < 0)
		return err->code == ERRCODE_SESSION_NOT_FOUND ? 0 : r;
	json_t *state = json_object_get(j, "State");
	bool up = json_is_true(json_object_get(state, "Running")) ||
		  json_is_true(json_object_get(state, "Restarting")) || json_is_true(json_object_get(state, "Paused"));
	json_decref(j);
	return up ? 1 : 0;
}

bool servercontainer_on(struct engine *e, const char *self)
{
	char host[65];
	json_t *j = NULL;
	struct err err;
	if (!self[0] || gethostname(host, sizeof(host) - 1) < 0)
		return false;
	host[sizeof(host) - 1] = '\0';
	if (engine_container_inspect(e, NULL, self, &j, &err) < 0)
		return false;
	const char *id = json_string_value(json_object_get(j, "Id"));
	const char *name = json_string_value(json_object_get(json_object_get(j, "Config"), "Hostname"));
	bool mine = id && strcmp(id, self) == 0 && name && strcmp(name, host) == 0 &&
		    json_is_true(json_object_get(json_object_get(j, "State"), "Running"));
	json_decref(j);
	return mine;
}
