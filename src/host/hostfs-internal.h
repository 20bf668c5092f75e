/*
 * hostfs-internal.h - what hostfs.c (opens, downloads) and hostwalk.c
 * (uploads) share: the list of what a transfer left out, and the one test
 * of a single file name.
 */
#ifndef HOSTFS_INTERNAL_H
#define HOSTFS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

/* What a transfer left out: the first HOSTFS_SKIPPED_LISTED, and how many in all. */
struct skips {
	json_t *list;
	uint64_t count;
};

/* Notes name as left out, for why. */
void hostfs_left_out(struct skips *s, const char *name, const char *why);
/* Whether name is one file name: not empty, no '/', not "." or "..", at most NAME_MAX. */
bool hostfs_single_name(const char *name);

#endif
