/* SPDX-License-Identifier: MIT */
/* Process bookkeeping of the soak: fd and thread counts, the phase page
 * shared with the parent, and stacks of a hung child. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "soak.h"

char *soak_phase_page;

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n; /* includes opendir's own fd for /proc/self/fd: the same each time */
}

int soak_count_fds(void)
{
    return count_dir("/proc/self/fd");
}
int soak_count_threads(void)
{
    return count_dir("/proc/self/task");
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * SOAK_SEC + (uint64_t)ts.tv_nsec;
}

int soak_settle_threads(int want, uint64_t max_ns)
{
    /* The emulator's stream workers are detached: nothing can be joined
     * or waited on, so this is the one polling loop of the soak, and it
     * is bounded (a real leak shows as a count still above `want`). */
    uint64_t end = now_ns() + max_ns;
    int n = soak_count_threads();
    while (n > want && now_ns() < end) {
        struct timespec ts = { 0, 2 * 1000000L };
        nanosleep(&ts, NULL);
        n = soak_count_threads();
    }
    return n;
}

void soak_dump_stacks(const char *why)
{
    /* gdb, when present, attaches to this very process: every thread's
     * stack is what says where a hang is.  Bounded by timeout(1). */
    if (getenv("SOAK_NO_STACKS"))
        return;
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "command -v gdb >/dev/null 2>&1 && timeout 60 gdb -p %d -batch -nx -q "
             "-ex 'thread apply all bt' </dev/null 2>&1 | grep -v '^\\[New LWP' >&2",
             (int)getpid());
    fprintf(stderr, "soak: stacks of all threads (%s):\n", why);
    fflush(stderr);
    if (system(cmd) != 0)
        fprintf(stderr, "soak: (no stacks: gdb missing or failed)\n");
}

void soak_phase(const char *fmt, ...)
{
    if (!soak_phase_page)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(soak_phase_page, 4096, fmt, ap);
    va_end(ap);
}
