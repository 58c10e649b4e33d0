/* SPDX-License-Identifier: MIT */
/* Loader internals shared with the registry (device.c) and the public
 * report (backend_report.c). */
#ifndef DEVQ_LIB_PLUGIN_H
#define DEVQ_LIB_PLUGIN_H

#include <stddef.h>
#include <devq/devq.h>

struct devq_backend;

/* Lookup without triggering a load (used while loading). */
struct devq_backend *devq__backend_find_loaded(const char *name);

/* Every plugin file tried (and the built-in cpu backend), in search
 * order; stable once devq__backends_load() has returned. */
size_t devq__plugin_report_count(void);
const devq_backend_report *devq__plugin_report_at(size_t i);

/* The report of a file named devq-<name>.so that was skipped, or NULL:
 * lets "unknown backend 'cuda'" say that devq-cuda.so exists but was
 * refused, and why. */
const devq_backend_report *devq__plugin_report_skipped(const char *name);

#endif
