/*
 * schema.h - checks tool arguments against the subset of JSON Schema the
 * tool table uses: type, properties, required, additionalProperties:false,
 * items, enum, minimum/maximum, minLength/maxLength, maxItems.
 *
 * Pure but for a debug log line naming an ignored argument: no other I/O;
 * allocates only the integers that replace whole-number reals.
 */
#ifndef SCHEMA_H
#define SCHEMA_H

#include <jansson.h>

#include "base/errcode.h"

/* Deepest nesting followed in a schema or value. */
#define SCHEMA_DEPTH_MAX 16

/*
 * 0 when value satisfies schema; -EINVAL with err (ERRCODE_INVALID_ARGUMENT)
 * naming the first offending argument and what it should be.  A whole-number
 * real (4096.0) where the schema asks for an integer passes and is replaced
 * in value by that integer, so the tools read it as one; any other real there
 * is refused. A top-level property the schema does not name is ignored,
 * unless it is a close misspelling of one it does ("did you mean 'timeout_s'?"); deeper objects
 * with additionalProperties:false refuse every unknown property.
 */
int schema_validate(const json_t *schema, json_t *value, struct err *err);

/*
 * Checks that a schema is one clients accept everywhere: every object has
 * "properties", every array has "items". 0 or -EINVAL with the path in err.
 */
int schema_lint(const json_t *schema, struct err *err);

#endif
