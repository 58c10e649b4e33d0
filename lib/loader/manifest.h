/* SPDX-License-Identifier: MIT */
/* Plugin manifests: a package outside devq adds a backend by dropping a
 * small JSON file in a manifest folder (as a Vulkan driver adds an ICD),
 * never by writing into devq's own plugin folder.  The format, checked
 * strictly by a reader for this one format (no JSON library):
 *
 *   {
 *     "file_format_version": 1,
 *     "plugin": { "library_path": "/opt/acme/lib/devq-acme.so", "abi_version": 1 }
 *   }
 *
 * A relative library_path is taken from the manifest's folder.  Unknown
 * keys are skipped (for later versions of the format), but every value
 * must still be valid JSON.  Pure libc: devq-info compiles this file in
 * to say which manifest a plugin came from, and a fuzz target drives the
 * parser (tests/fuzz/fuzz_manifest.c). */
#ifndef DEVQ_LIB_MANIFEST_H
#define DEVQ_LIB_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#define DEVQ_MANIFEST_FORMAT 1
#define DEVQ_MANIFEST_MAX_BYTES 65536

struct devq_manifest {
    char library_path[4096]; /* as written in the file */
    uint32_t abi_version;
};

/* Parses text[0..len) (no terminator needed).  0, or -EINVAL with a
 * one-line reason in why ("line 3, column 14: expected ':' after a key"). */
int devq__manifest_parse(const char *text, size_t len, struct devq_manifest *out, char *why, size_t whylen);

/* Reads and parses the file at path; resolves a relative library_path
 * against the manifest's folder into resolved.  0; -EINVAL (bad manifest,
 * why says so); or the negative errno of open/read (-EMFILE, -ENOENT...). */
int devq__manifest_read(const char *path, struct devq_manifest *out, char *resolved, size_t resolved_len,
                        char *why, size_t whylen);

/* The manifest folders to search, as a colon list: env_value (the value
 * of DEVQ_PLUGIN_MANIFEST_PATH, NULL when unset) when it is not empty,
 * else the configure-time "$(sysconfdir)/devq/plugins.d:$(datadir)/devq/plugins.d". */
const char *devq__manifest_dirs(const char *env_value);

/* A manifest file name: *.json, not hidden. */
int devq__manifest_file_name(const char *name);

#endif
