/*
 * image.c - image references, tags and Dockerfile instructions for
 * session_commit and session_export.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "buf.h"
#include "image.h"
#include "imageref.h"

static bool component_ok(const char *p, size_t n);
static bool domain_ok(const char *p, size_t n);
static void normalize(const char *ref, char *out, size_t outsz);

static bool lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]+((\.|_|__|-+)[a-z0-9]+)* */
static bool component_ok(const char *p, size_t n)
{
	size_t i = 0;
	if (n == 0 || !lower_alnum(p[0]) || !lower_alnum(p[n - 1]))
		return false;
	while (i < n) {
		if (lower_alnum(p[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < n && !lower_alnum(p[j]))
			j++;
		size_t k = j - i;
		bool ok = (k == 1 && (p[i] == '.' || p[i] == '_')) || (k == 2 && p[i] == '_' && p[i + 1] == '_');
		if (!ok) {
			ok = true;
			for (size_t m = i; m < j; m++)
				ok = ok && p[m] == '-';
		}
		if (!ok)
			return false;
		i = j;
	}
	return true;
}

/* host[:port]: letters, digits, '.', '-'; a port of digits. */
static bool domain_ok(const char *p, size_t n)
{
	size_t i = 0;
	if (n == 0)
		return false;
	for (; i < n && p[i] != ':'; i++) {
		char c = p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '-'))
			return false;
	}
	if (i == 0)
		return false;
	if (i < n) {
		if (i + 1 == n)
			return false;
		for (i++; i < n; i++)
			if (p[i] < '0' || p[i] > '9')
				return false;
	}
	return true;
}

int image_repository_check(const char *repo, struct err *err)
{
	size_t n = strlen(repo);
	const char *p = repo;
	bool first = true;

	if (n == 0 || n > IMAGE_REF_MAX)
		goto bad;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t k = slash ? (size_t)(slash - p) : strlen(p);
		bool is_domain = first && slash && (memchr(p, '.', k) || memchr(p, ':', k) || (k == 9 && !strncmp(p, "localhost", 9)));
		if (is_domain ? !domain_ok(p, k) : !component_ok(p, k))
			goto bad;
		first = false;
		if (!slash)
			break;
		p = slash + 1;
		if (!*p)
			goto bad;
	}
	return 0;
bad:
	return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
		       "repository '%.100s' is not a valid image name: use lowercase letters, digits and '.', '_', '-' "
		       "between them, components separated by '/' (e.g. my-project/analysis), at most %d characters",
		       repo, IMAGE_REF_MAX);
}

int image_tag_check(const char *tag, struct err *err)
{
	size_t n = strlen(tag);
	bool ok = n > 0 && n <= IMAGE_TAG_MAX && tag[0] != '.' && tag[0] != '-';
	for (size_t i = 0; ok && i < n; i++) {
		char c = tag[i];
		ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		     c == '-';
	}
	if (!ok)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
			       "tag '%.140s' is not a valid image tag: 1-%d letters, digits, '_', '.' or '-', not starting "
			       "with '.' or '-'",
			       tag, IMAGE_TAG_MAX);
	return 0;
}

void image_default_tag(const struct session *s, char *out, size_t outsz)
{
	char stamp[32];
	unsigned short rnd = 0;
	time_t now = time(NULL);
	struct tm tm;

	if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
		rnd = (unsigned short)(now ^ (time_t)(uintptr_t)s);
	strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", gmtime_r(&now, &tm));
	/* a name is letters, digits, '-', '_', '.': a tag unless it starts with '.' or '-' */
	const char *who = s->name[0] && s->name[0] != '.' && s->name[0] != '-' ? s->name : s->id;
	snprintf(out, outsz, "%.60s-%s-%04x", who, stamp, rnd);
}

/* ref normalised as the docker CLI reads it (imageref.h); an id or a malformed reference as given. */
static void normalize(const char *ref, char *out, size_t outsz)
{
	struct imageref r;
	struct err err;
	if (imageref_parse(ref, strlen(ref), &r, &err) == 0)
		imageref_format(&r, out, outsz);
	else
		snprintf(out, outsz, "%s", ref);
}

bool image_same_ref(const char *a, const char *b)
{
	char na[IMAGEREF_FORMAT_MAX + IMAGEREF_INPUT_MAX], nb[IMAGEREF_FORMAT_MAX + IMAGEREF_INPUT_MAX];
	normalize(a, na, sizeof(na));
	normalize(b, nb, sizeof(nb));
	return strcmp(na, nb) == 0;
}

int image_quote(const char *s, struct buf *out)
{
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t')
			return -EINVAL;
	buf_append_str(out, "\"");
	for (const char *p = s; *p; p++) {
		if (*p == '"' || *p == '\\' || *p == '$')
			buf_append_str(out, "\\");
		buf_append(out, p, 1);
	}
	return buf_append_str(out, "\"");
}

json_t *image_changes(json_t *config)
{
	json_t *out = json_array();
	struct buf b;
	const char *key;
	json_t *v;
	size_t i;

	buf_init(&b, 1u << 20);
#define EMIT()                                                                                                      \
	do {                                                                                                        \
		json_array_append_new(out, json_stringn(b.data, b.len));                                            \
		buf_reset(&b);                                                                                      \
	} while (0)
	const char *user = json_string_value(json_object_get(config, "User"));
	if (user && *user && !strpbrk(user, "\n\r")) {
		buf_printf(&b, "USER %s", user);
		EMIT();
	}
	const char *wd = json_string_value(json_object_get(config, "WorkingDir"));
	if (wd && *wd && !strpbrk(wd, "\n\r")) {
		buf_printf(&b, "WORKDIR %s", wd);
		EMIT();
	}
	json_array_foreach (json_object_get(config, "Env"), i, v) {
		const char *kv = json_string_value(v);
		const char *eq = kv ? strchr(kv, '=') : NULL;
		if (!eq || eq == kv)
			continue;
		buf_printf(&b, "ENV %.*s=", (int)(eq - kv), kv);
		if (image_quote(eq + 1, &b) < 0) {
			buf_reset(&b);
			continue;
		}
		EMIT();
	}
	const char *cmds[] = { "Entrypoint", "Cmd" };
	const char *words[] = { "ENTRYPOINT", "CMD" };
	for (size_t k = 0; k < 2; k++) {
		json_t *a = json_object_get(config, cmds[k]);
		if (!json_is_array(a) || json_array_size(a) == 0)
			continue;
		char *j = json_dumps(a, JSON_COMPACT);
		if (j && !strpbrk(j, "\n\r")) {
			buf_printf(&b, "%s %s", words[k], j);
			EMIT();
		}
		free(j);
	}
	json_object_foreach (json_object_get(config, "Labels"), key, v) {
		const char *val = json_string_value(v);
		buf_append_str(&b, "LABEL ");
		if (!val || image_quote(key, &b) < 0 || buf_append_str(&b, "=") < 0 || image_quote(val, &b) < 0) {
			buf_reset(&b);
			continue;
		}
		EMIT();
	}
#undef EMIT
	buf_finish(&b);
	return out;
}

bool image_replaceable(json_t *labels, const char *ref)
{
	const char *made_as = json_string_value(json_object_get(labels, IMAGE_LABEL_REF));
	return json_is_string(json_object_get(labels, IMAGE_LABEL_SESSION)) && made_as && image_same_ref(made_as, ref);
}

int image_target_check(struct engine *e, struct call *call, const char *ref, const struct session *s,
		       const char *parent_id, struct err *err)
{
	json_t *existing = NULL;

	if (image_same_ref(ref, s->image))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			       "%s is the image session %s started from, and it is never replaced: pass another tag "
			       "(or omit tag for a unique one)",
			       s->image, s->id);
	int r = engine_image_inspect(e, call, ref, &existing, err);
	if (r < 0)
		return err->code == ERRCODE_IMAGE_NOT_FOUND ? 0 : r;
	const char *eid = json_string_value(json_object_get(existing, "Id"));
	json_t *labels = json_object_get(json_object_get(existing, "Config"), "Labels");
	if (eid && strcmp(eid, parent_id) == 0)
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			    "%s names the image session %s started from, and it is never replaced: pass another tag (or "
			    "omit tag for a unique one)",
			    ref, s->id);
	else if (!image_replaceable(labels, ref))
		/* an image built FROM one of ours inherits its labels: the tag it was made under tells them apart */
		r = err_set(err, ERRCODE_INVALID_ARGUMENT, -EEXIST,
			    "%s already exists and was not made under that name by session_commit or session_export, so it "
			    "is not replaced: pass another repository or tag (or omit tag for a unique one)",
			    ref);
	json_decref(existing);
	return r;
}
