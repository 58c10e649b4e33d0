/* SPDX-License-Identifier: MIT */
/* Checking an ops table a plugin handed back.  Kept apart from the loader
 * (no dlopen, no global state) so it can be unit-tested and fuzzed with
 * arbitrary tables. */
#ifndef DEVQ_LIB_PLUGIN_VALIDATE_H
#define DEVQ_LIB_PLUGIN_VALIDATE_H

#include <stddef.h>
#include <devq/devq_plugin.h>

/* Bytes a table must cover: everything up to and including the last
 * required op (fill).  Older, smaller tables are fine as long as they
 * reach this far; optional ops past their `size` read as NULL. */
#define DEVQ_PLUGIN_MIN_TABLE_SIZE \
    (offsetof(struct devq_backend_ops, fill) + sizeof(((struct devq_backend_ops *)0)->fill))

/* Validate `table` and copy it into *out, a full-size table whose entries
 * past table->size are NULL.  Reads nothing beyond the header unless the
 * version and size are acceptable.  Returns 0, or a negative errno with a
 * one-line reason in why[] (also 0 on success: why[0] == '\0'):
 *   -EINVAL   no table, table too small, bad name, required op NULL,
 *             inconsistent optional group;
 *   -ENOTSUP  ABI version other than DEVQ_PLUGIN_ABI_VERSION. */
int devq__plugin_validate(const struct devq_backend_ops *table, struct devq_backend_ops *out, char *why,
                          size_t why_len);

/* 1 if name matches [a-z0-9_]{1,15}, else 0.  Reads at most 16 bytes. */
int devq__backend_name_valid(const char *name);

#endif
