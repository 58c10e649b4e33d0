/* SPDX-License-Identifier: MIT */
/* Where the installed plugins are: next to the libdevq.so that is
 * running, so that a copy installed or unpacked under any prefix finds
 * its own plugins (and not those of another install).  Pure libc + libdl:
 * devq-info compiles this file in to print the same folder. */
#ifndef DEVQ_LIB_PLUGIN_DIR_H
#define DEVQ_LIB_PLUGIN_DIR_H

#include <stddef.h>

/* addr: any address inside libdevq.so.  Writes "<folder of libdevq.so>/devq",
 * or the configure-time DEVQ_PLUGIN_DIR (config.h) when addr is not in a
 * file named libdevq.so* (a test linked with lib statically) or dladdr
 * cannot tell.  Returns 1 when the folder was found from the library's
 * location, 0 for the fallback. */
int devq__plugin_install_dir(const void *addr, char *out, size_t len);

/* The build tree's own plugin folders, for a libdevq.so that runs
 * uninstalled: when the library at addr is <B>/.libs/libdevq.so* and <B>
 * holds libdevq.la and config.status (a configured build folder), writes
 * <B>/plugins/<name>/.libs for each in-tree backend whose folder exists
 * and returns how many.  0 anywhere else: an installed library is never
 * in a ".libs" folder beside libdevq.la and config.status, so these
 * folders cannot reach an installed library's search, and no path of the
 * build is compiled in.  0 too in setuid/setgid programs (AT_SECURE). */
#define DEVQ_BUILD_PLUGIN_DIRS_MAX 4
int devq__plugin_build_dirs(const void *addr, char out[][4096], size_t max);

#endif
