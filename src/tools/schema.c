/*
 * schema.c - argument validation for tools/call.
 *
 * Only the keywords our own schemas use are understood; a schema that uses
 * another keyword is a bug in the tool table, caught by the unit tests.
 *
 * Unknown top-level arguments are ignored (with a debug log line) although
 * the published schemas say additionalProperties:false: real clients add
 * their own (Gemini CLI sends wait_for_previous with every call). A name
 * close to a known one is still refused, since it is almost surely a typo
 * whose value would otherwise be dropped without a word (timeout for
 * timeout_s).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "tools/schema.h"

/* Names longer than this are never "close" (and the distance table stays small). */
#define NAME_CLOSE_MAX 64

static int check(const json_t *schema, json_t *value, const char *path, int depth, struct err *err);
static bool type_matches(const char *type, const json_t *value);
static bool integral(const json_t *value);
static json_t *as_integer(const json_t *schema, const json_t *value);
static const char *type_of(const json_t *value);
static int lint(const json_t *schema, const char *path, int depth, struct err *err);

/* Optimal string alignment distance of a and b (adjacent swaps count 1), case folded. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	unsigned char d[NAME_CLOSE_MAX + 1][NAME_CLOSE_MAX + 1]; /* 4 KiB: worker stacks are small */

	for (size_t i = 0; i <= na; i++)
		d[i][0] = (unsigned char)i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = (unsigned char)j;
	for (size_t i = 1; i <= na; i++) {
		for (size_t j = 1; j <= nb; j++) {
			int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
			unsigned best = d[i - 1][j - 1] + (unsigned)(ca != cb);
			if (d[i - 1][j] + 1u < best)
				best = d[i - 1][j] + 1u;
			if (d[i][j - 1] + 1u < best)
				best = d[i][j - 1] + 1u;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb && d[i - 2][j - 2] + 1u < best)
				best = d[i - 2][j - 2] + 1u;
			d[i][j] = (unsigned char)best;
		}
	}
	return d[na][nb];
}

/*
 * The known property that key is probably a misspelling of, or NULL: the same
 * name in another case, or at most 2 edits away (1 for names of up to 4
 * characters, where 2 edits reach unrelated words).
 */
static const char *close_name(const json_t *props, const char *key)
{
	const char *name;
	const json_t *v;

	if (strlen(key) > NAME_CLOSE_MAX)
		return NULL;
	json_object_foreach ((json_t *)props, name, v) {
		if (strlen(name) > NAME_CLOSE_MAX)
			continue;
		if (edit_distance(key, name) <= (strlen(name) <= 4 ? 1u : 2u))
			return name;
	}
	return NULL;
}

static const char *type_of(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

/* A real that is a whole number json_int_t holds (4096.0, 1e3; not 1.5, not 1e300). */
static bool integral(const json_t *v)
{
	double d = json_real_value(v);
	return json_is_real(v) && floor(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0;
}

/*
 * The integer an integral real stands for where the schema asks for an
 * integer (a new reference), else NULL: the tools read integers with
 * json_integer_value, which gives 0 for a real.
 */
static json_t *as_integer(const json_t *schema, const json_t *v)
{
	const char *type = json_string_value(json_object_get(schema, "type"));
	if (!type || strcmp(type, "integer") != 0 || !integral(v))
		return NULL;
	return json_integer((json_int_t)json_real_value(v));
}

static bool type_matches(const char *type, const json_t *v)
{
	if (strcmp(type, "object") == 0)
		return json_is_object(v);
	if (strcmp(type, "array") == 0)
		return json_is_array(v);
	if (strcmp(type, "string") == 0)
		return json_is_string(v);
	if (strcmp(type, "integer") == 0)
		return json_is_integer(v) || integral(v);
	if (strcmp(type, "number") == 0)
		return json_is_number(v);
	if (strcmp(type, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(type, "null") == 0)
		return json_is_null(v);
	return false;
}

static int check(const json_t *schema, json_t *value, const char *path, int depth, struct err *err)
{
	if (depth > SCHEMA_DEPTH_MAX)
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s is nested too deeply", path);

	const json_t *type = json_object_get(schema, "type");
	if (json_is_string(type) && !type_matches(json_string_value(type), value))
		return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must be %s %s, not %s", path,
			       strchr("aeiou", json_string_value(type)[0]) ? "an" : "a", json_string_value(type),
			       type_of(value));

	const json_t *en = json_object_get(schema, "enum");
	if (json_is_array(en)) {
		size_t i;
		const json_t *opt;
		bool ok = false;
		json_array_foreach (en, i, opt)
			ok = ok || json_equal((json_t *)opt, (json_t *)value);
		if (!ok) {
			char allowed[200] = "";
			size_t used = 0;
			json_array_foreach (en, i, opt) {
				if (json_is_string(opt) && used < sizeof(allowed))
					used += (size_t)snprintf(allowed + used, sizeof(allowed) - used, "%s%s",
								 i ? ", " : "", json_string_value(opt));
			}
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must be one of: %s", path, allowed);
		}
	}

	if (json_is_number(value)) {
		double v = json_number_value(value);
		const json_t *mn = json_object_get(schema, "minimum"), *mx = json_object_get(schema, "maximum");
		if (json_is_number(mn) && v < json_number_value(mn))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must be at least %g", path,
				       json_number_value(mn));
		if (json_is_number(mx) && v > json_number_value(mx))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must be at most %g", path,
				       json_number_value(mx));
	}

	if (json_is_string(value)) {
		size_t n = json_string_length(value);
		const json_t *mn = json_object_get(schema, "minLength"), *mx = json_object_get(schema, "maxLength");
		if (json_is_integer(mn) && n < (size_t)json_integer_value(mn))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must be at least %lld characters",
				       path, (long long)json_integer_value(mn));
		if (json_is_integer(mx) && n > (size_t)json_integer_value(mx))
			return err_set(err, ERRCODE_TOO_LARGE, -EINVAL, "%s must be at most %lld bytes", path,
				       (long long)json_integer_value(mx));
	}

	if (json_is_array(value)) {
		const json_t *items = json_object_get(schema, "items");
		const json_t *mx = json_object_get(schema, "maxItems");
		if (json_is_integer(mx) && json_array_size(value) > (size_t)json_integer_value(mx))
			return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s must have at most %lld items", path,
				       (long long)json_integer_value(mx));
		if (json_is_object(items)) {
			size_t i;
			json_t *el;
			json_array_foreach (value, i, el) {
				char sub[256];
				snprintf(sub, sizeof(sub), "%s[%zu]", path, i);
				int r = check(items, el, sub, depth + 1, err);
				if (r < 0)
					return r;
				json_t *n = as_integer(items, el);
				if (n)
					json_array_set_new(value, i, n);
			}
		}
	}

	if (json_is_object(value)) {
		const json_t *props = json_object_get(schema, "properties");
		const json_t *req = json_object_get(schema, "required");
		const json_t *addl = json_object_get(schema, "additionalProperties");
		size_t i;
		const json_t *name;
		json_array_foreach (req, i, name) {
			if (json_is_string(name) && !json_object_get(value, json_string_value(name)))
				return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "%s%s%s is required",
					       path[0] ? path : "", path[0] ? "." : "", json_string_value(name));
		}
		const char *key;
		json_t *v;
		json_object_foreach (value, key, v) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s%s%s", path[0] ? path : "", path[0] ? "." : "", key);
			const json_t *ps = json_object_get(props, key);
			if (!ps && json_is_object(addl))
				ps = addl; /* a schema for every other property */
			if (!ps) {
				if (!json_is_false(addl))
					continue;
				const char *near = close_name(props, key);
				if (near)
					return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL,
						       "unknown argument '%s': did you mean '%s'?", sub, near);
				if (depth > 0)
					return err_set(err, ERRCODE_INVALID_ARGUMENT, -EINVAL, "unknown argument '%s'",
						       sub);
				/* a client's own addition (Gemini CLI's wait_for_previous): not ours to refuse */
				log_debugf("ignoring unknown argument '%.200s'", sub);
				continue;
			}
			int r = check(ps, v, sub, depth + 1, err);
			if (r < 0)
				return r;
			json_t *n = as_integer(ps, v);
			if (n)
				json_object_set_new(value, key, n); /* replaces in place: the iteration goes on */
		}
	}
	return 0;
}

int schema_validate(const json_t *schema, json_t *value, struct err *err)
{
	return check(schema, value, "arguments", 0, err);
}

static int lint(const json_t *schema, const char *path, int depth, struct err *err)
{
	if (depth > SCHEMA_DEPTH_MAX || !json_is_object(schema))
		return err_set(err, ERRCODE_INTERNAL, -EINVAL, "%s: not a schema object", path);
	const char *type = json_string_value(json_object_get(schema, "type"));
	if (type && strcmp(type, "object") == 0) {
		const json_t *props = json_object_get(schema, "properties");
		if (!json_is_object(props))
			return err_set(err, ERRCODE_INTERNAL, -EINVAL, "%s: object without properties", path);
		const char *key;
		const json_t *v;
		json_object_foreach ((json_t *)props, key, v) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s.%s", path, key);
			int r = lint(v, sub, depth + 1, err);
			if (r < 0)
				return r;
		}
	}
	if (type && strcmp(type, "array") == 0) {
		char sub[256];
		snprintf(sub, sizeof(sub), "%s[]", path);
		const json_t *items = json_object_get(schema, "items");
		if (!items)
			return err_set(err, ERRCODE_INTERNAL, -EINVAL, "%s: array without items", path);
		return lint(items, sub, depth + 1, err);
	}
	return 0;
}

int schema_lint(const json_t *schema, struct err *err)
{
	return lint(schema, "schema", 0, err);
}
