/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "env.h"
#include "error.h"
#include "log.h"

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static int log_level = DEVQ_LOG_OFF;
static FILE *log_file;
static char log_error[256];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_init(void)
{
    const char *v = devq__getenv("DEVQ_LOG");
    if (v && *v) {
        if (!strcmp(v, "off") || !strcmp(v, "0"))
            log_level = DEVQ_LOG_OFF;
        else if (!strcmp(v, "basic") || !strcmp(v, "1"))
            log_level = DEVQ_LOG_BASIC;
        else if (!strcmp(v, "full") || !strcmp(v, "2"))
            log_level = DEVQ_LOG_FULL;
        else
            snprintf(log_error, sizeof log_error, "DEVQ_LOG='%.64s': unknown level; use off, basic or full",
                     v);
    }
    log_file = stderr;
    const char *f = devq__getenv("DEVQ_LOG_FILE");
    if (f && *f && log_level != DEVQ_LOG_OFF) {
        FILE *fp = fopen(f, "ae");
        if (fp) {
            setvbuf(fp, NULL, _IOLBF, 0);
            log_file = fp;
        } else {
            snprintf(log_error, sizeof log_error, "DEVQ_LOG_FILE='%.128s': cannot open: %s", f,
                     strerror(errno));
        }
    }
}

/* Asked on hot paths (DEVQ_LOG_ON): after the first call one load of the
 * level plus one (-1 unknown) instead of pthread_once's barrier and call. */
static _Atomic int level_cached;

int devq__log_level(void)
{
    int l = atomic_load_explicit(&level_cached, memory_order_acquire);
    if (__builtin_expect(l != 0, 1))
        return l - 1;
    pthread_once(&log_once, log_init);
    atomic_store_explicit(&level_cached, log_level + 1, memory_order_release);
    return log_level;
}

int devq__log_config_error(void)
{
    pthread_once(&log_once, log_init);
    return log_error[0] ? devq__err_str(-EINVAL, log_error) : 0;
}

void devq__vlog(int level, const char *fmt, va_list ap)
{
    if (devq__log_level() < level)
        return;
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    pthread_mutex_lock(&log_lock);
    fprintf(log_file, "devq[%ld.%06ld] %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000, line);
    pthread_mutex_unlock(&log_lock);
}

void devq__log(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    devq__vlog(level, fmt, ap);
    va_end(ap);
}
