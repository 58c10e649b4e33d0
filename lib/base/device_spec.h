/* SPDX-License-Identifier: MIT */
/* Device specs ("cpu", "cuda:1") and the DEVQ_BACKEND preference list
 * ("cuda,cpu", "^hip").  Pure parsers over outside input, kept apart
 * from the registry so they can be fuzzed. */
#ifndef DEVQ_LIB_DEVICE_SPEC_H
#define DEVQ_LIB_DEVICE_SPEC_H

#include <stddef.h>
#include <stdint.h>

struct devq_spec {
    char name[16];
    int has_ordinal;
    uint32_t ordinal;
};

/* Parse the len bytes at text as "name" or "name:N".  0, or -EINVAL with
 * a reason in why[] (which does not repeat the text). */
int devq__spec_parse(const char *text, size_t len, struct devq_spec *out, char *why, size_t why_len);

#define DEVQ_PREF_MAX 16

struct devq_backend_pref {
    struct devq_spec want[DEVQ_PREF_MAX]; /* in preference order */
    size_t nwant;
    char exclude[DEVQ_PREF_MAX][16];
    size_t nexclude;
};

/* Parse a comma-separated DEVQ_BACKEND value; entries are specs or
 * "^name" exclusions, blanks around entries and empty entries are
 * ignored.  0, or -EINVAL with a reason naming the bad entry. */
int devq__backend_pref_parse(const char *text, struct devq_backend_pref *out, char *why, size_t why_len);
int devq__backend_pref_excludes(const struct devq_backend_pref *p, const char *name);

/* Optimal string alignment distance (Levenshtein plus adjacent
 * transposition, so "cdua" is 1 from "cuda").  Only the first 31 bytes
 * of each string count. */
unsigned devq__edit_distance(const char *a, const char *b);

#endif
