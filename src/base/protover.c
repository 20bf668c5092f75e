/*
 * protover.c - the protocol version table (protover.h).
 */
#include <string.h>

#include "base/protover.h"
#include "base/util.h"

static const char *const legacy[] = { PROTOVER_LEGACY_NEWEST, "2025-06-18", "2025-03-26", "2024-11-05" };

/* The version that brought structured results; versions are dates, so order is strcmp's. */
#define PROTOVER_STRUCTURED_FROM "2025-06-18"

const char *const *protover_legacy(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(legacy);
	return legacy;
}

const char *protover_legacy_find(const char *v)
{
	for (size_t i = 0; v && i < ARRAY_SIZE(legacy); i++)
		if (strcmp(v, legacy[i]) == 0)
			return legacy[i];
	return NULL;
}

bool protover_known(const char *v)
{
	return v && (strcmp(v, PROTOVER_MODERN) == 0 || protover_legacy_find(v));
}

bool protover_structured(const char *v)
{
	return v && strcmp(v, PROTOVER_STRUCTURED_FROM) >= 0;
}
