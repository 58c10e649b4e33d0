/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "plugin_dir.h"

int devq__plugin_install_dir(const void *addr, char *out, size_t len)
{
    Dl_info info;
    if (addr && dladdr(addr, &info) && info.dli_fname) {
        const char *slash = strrchr(info.dli_fname, '/');
        const char *base = slash ? slash + 1 : info.dli_fname;
        /* dli_fname is the path the loader opened: absolute whenever the
         * library was found by a search path, an rpath or ld.so.cache. */
        if (slash && !strncmp(base, "libdevq.so", 10)) {
            char dir[PATH_MAX], real[PATH_MAX];
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
            /* "/opt/p/bin/../lib" (found through a program's $ORIGIN run
             * path) is shown and searched as "/opt/p/lib". */
            const char *d = realpath(dir, real) ? real : dir;
            int n = snprintf(out, len, "%s/devq", d);
            if (n > 0 && (size_t)n < len)
                return 1;
        }
    }
    snprintf(out, len, "%s", DEVQ_PLUGIN_DIR);
    return 0;
}
