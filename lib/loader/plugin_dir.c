/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
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

/* The backends built from plugins/ (the mpi channel engine there is not a
 * backend: lib/channel loads it). */
static const char *const in_tree_backends[] = { "cuda", "hip", "vulkan" };

static int is_file(const char *dir, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int devq__plugin_build_dirs(const void *addr, char out[][4096], size_t max)
{
    Dl_info info;
    if (getauxval(AT_SECURE) || !addr || !dladdr(addr, &info) || !info.dli_fname)
        return 0;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash || strncmp(slash + 1, "libdevq.so", 10))
        return 0;
    char dir[PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - info.dli_fname), info.dli_fname);
    if (!realpath(dir, real))
        return 0;
    char *base = strrchr(real, '/');
    if (!base || strcmp(base + 1, ".libs"))
        return 0;
    *base = '\0'; /* real is the build folder now */
    if (!is_file(real, "libdevq.la") || !is_file(real, "config.status"))
        return 0;
    int n = 0;
    for (size_t i = 0; i < sizeof in_tree_backends / sizeof in_tree_backends[0] && (size_t)n < max; i++) {
        struct stat st;
        int len = snprintf(out[n], 4096, "%s/plugins/%s/.libs", real, in_tree_backends[i]);
        if (len > 0 && len < 4096 && stat(out[n], &st) == 0 && S_ISDIR(st.st_mode))
            n++;
    }
    return n;
}
