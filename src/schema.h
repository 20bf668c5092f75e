/*
 * schema.h - checks tool arguments against the subset of JSON Schema the
 * tool table uses: type, properties, required, additionalProperties:false,
 * items, enum, minimum/maximum, minLength/maxLength, maxItems.
 *
 * Pure but for a debug log line naming an ignored argument: no other I/O,
 * no allocation beyond what jansson lookups need.
 */
#ifndef SCHEMA_H
#define SCHEMA_H

#include <jansson.h>

#include "errcode.h"

/* Deepest nesting followed in a schema or value. */
#define SCHEMA_DEPTH_MAX 16

/*
 * 0 when value satisfies schema; -EINVAL with err (ERRCODE_INVALID_ARGUMENT)
 * naming the first offending argument and what it should be. A top-level
 * property the schema does not name is ignored, unless it is a close
 * misspelling of one it does ("did you mean 'timeout_s'?"); deeper objects
 * with additionalProperties:false refuse every unknown property.
 */
int schema_validate(const json_t *schema, const json_t *value, struct err *err);

/*
 * Checks that a schema is one clients accept everywhere: every object has
 * "properties", every array has "items". 0 or -EINVAL with the path in err.
 */
int schema_lint(const json_t *schema, struct err *err);

#endif
