/* SPDX-License-Identifier: MIT */
/* A devq_host table for plugin-level tests that link nothing of libdevq,
 * and helpers to load a plugin from the build tree. */
#ifndef DEVQ_TEST_HOST_H
#define DEVQ_TEST_HOST_H
#include <devq/devq_plugin.h>

extern const struct devq_host test_host;

/* The calling thread's last host->error() text ("" if none). */
const char *test_errmsg(void);
void test_errmsg_clear(void);

/* dlopen build_dir/rel and run devq_plugin_init with test_host; NULL
 * with a message on stderr when it fails. */
const struct devq_backend_ops *test_plugin_load(const char *build_dir, const char *rel);
#endif
