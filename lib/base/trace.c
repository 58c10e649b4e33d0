/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "env.h"
#include "env_table.h"
#include "error.h"
#include "futex.h"
#include "device.h"
#include "trace.h"

#define DEFAULT_MAX (64ull << 20)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int enabled;
static char path[4096];
static char config_error[256];
static uint64_t max_bytes = DEFAULT_MAX;
static uint64_t t0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *buf;
static size_t len, cap;
static uint64_t dropped;
static _Atomic uint64_t next_flow = 1;

static void at_exit(void)
{
    devq__trace_flush();
}

static void init(void)
{
    const char *p = devq__getenv("DEVQ_TRACE");
    if (!p || !*p)
        return;
    const char *m = devq__getenv("DEVQ_TRACE_MAX");
    if (m && *m && devq__parse_size("DEVQ_TRACE_MAX", m, &max_bytes) < 0) {
        snprintf(config_error, sizeof config_error, "%s", devq_errmsg());
        return;
    }
    /* A folder that does not exist is an error now, not a trace lost at exit. */
    if (devq__env_check_var(devq__env_find("DEVQ_TRACE"), p, config_error, sizeof config_error) < 0)
        return;
    if (max_bytes < 4096)
        max_bytes = 4096;
    snprintf(path, sizeof path, "%s", p);
    t0 = devq__now_ns();
    enabled = 1;
    atexit(at_exit);
}

/* Asked on every alloc, free and op: after the first call one relaxed
 * load (1 off, 2 on) instead of pthread_once's barrier and call. */
static _Atomic int state;

int devq__trace_on(void)
{
    int st = atomic_load_explicit(&state, memory_order_acquire);
    if (__builtin_expect(st != 0, 1))
        return st == 2;
    pthread_once(&once, init);
    atomic_store_explicit(&state, enabled ? 2 : 1, memory_order_release);
    return enabled;
}

int devq__trace_config_error(void)
{
    pthread_once(&once, init);
    return config_error[0] ? devq__err_str(-EINVAL, config_error) : 0;
}

uint64_t devq__trace_now(void)
{
    return devq__now_ns();
}

/* Append one event line; past DEVQ_TRACE_MAX events are counted, not kept. */
static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0 || (size_t)n >= sizeof line)
        return;
    pthread_mutex_lock(&lock);
    if (len + (size_t)n + 2 > max_bytes) {
        dropped++;
    } else {
        if (len + (size_t)n + 2 > cap) {
            size_t nc = cap ? cap * 2 : 1 << 16;
            while (nc < len + (size_t)n + 2)
                nc *= 2;
            char *nb = realloc(buf, nc);
            if (!nb) {
                dropped++;
                pthread_mutex_unlock(&lock);
                return;
            }
            buf = nb;
            cap = nc;
        }
        memcpy(buf + len, line, (size_t)n);
        len += (size_t)n;
        buf[len++] = '\n';
    }
    pthread_mutex_unlock(&lock);
}

static double us(uint64_t ns)
{
    return ns > t0 ? (double)(ns - t0) / 1000.0 : 0.0;
}

/* JSON-safe copy of a name (names come from users, kernels and
 * backends): quotes and backslashes escaped, anything unprintable '_'. */
static void clean(char *out, size_t cap_, const char *in)
{
    size_t j = 0;
    for (size_t i = 0; in && in[i] && j + 2 < cap_; i++) {
        unsigned char c = (unsigned char)in[i];
        if (c == '"' || c == '\\')
            out[j++] = '\\';
        out[j++] = (c < 0x20 || c >= 0x7f) ? '_' : (char)c;
    }
    out[j] = 0;
}

static unsigned pid_of(const struct devq_device *dev)
{
    /* Stable per device: backend name hash and ordinal. */
    unsigned h = 0;
    for (const char *p = dev->info.backend; *p; p++)
        h = h * 31 + (unsigned char)*p;
    return (h % 1000) * 100 + (unsigned)dev->info.ordinal + 1;
}

void devq__trace_device(struct devq_device *dev)
{
    if (!devq__trace_on())
        return;
    char name[160];
    clean(name, sizeof name, dev->info.name);
    emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"tid\":0,\"args\":{\"name\":\"%s:%d %s\"}},",
         pid_of(dev), dev->info.backend, dev->info.ordinal, name);
}

void devq__trace_track(const struct devq_device *dev, uint32_t track, const char *name)
{
    if (!devq__trace_on())
        return;
    char n[224];
    clean(n, sizeof n, name);
    emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"%s\"}},",
         pid_of(dev), track, n);
}

void devq__trace_slice(const struct devq_device *dev, uint32_t track, const char *name, const char *arg_name,
                       uint64_t arg, uint64_t begin, uint64_t end)
{
    char n[96];
    clean(n, sizeof n, name);
    if (arg_name)
        emit(
            "{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"op\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"%s\":%llu}},",
            n, pid_of(dev), track, us(begin), end > begin ? (double)(end - begin) / 1000.0 : 0.0, arg_name,
            (unsigned long long)arg);
    else
        emit("{\"ph\":\"X\",\"name\":\"%s\",\"cat\":\"op\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f},",
             n, pid_of(dev), track, us(begin), end > begin ? (double)(end - begin) / 1000.0 : 0.0);
}

uint64_t devq__trace_flow_id(void)
{
    return atomic_fetch_add(&next_flow, 1);
}

void devq__trace_flow(const struct devq_device *dev, uint32_t track, uint64_t id, int start, uint64_t ts)
{
    emit(
        "{\"ph\":\"%s\",\"name\":\"wait\",\"cat\":\"tracker\",\"id\":%llu,\"pid\":%u,\"tid\":%u,\"ts\":%.3f%s},",
        start ? "s" : "f", (unsigned long long)id, pid_of(dev), track, us(ts), start ? "" : ",\"bp\":\"e\"");
}

void devq__trace_counter(const struct devq_device *dev, const char *name, uint64_t value, uint64_t ts)
{
    emit("{\"ph\":\"C\",\"name\":\"%s\",\"pid\":%u,\"ts\":%.3f,\"args\":{\"bytes\":%llu}},", name,
         pid_of(dev), us(ts), (unsigned long long)value);
}

void devq__trace_flush(void)
{
    if (!enabled)
        return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    pthread_mutex_lock(&lock);
    FILE *f = fopen(tmp, "we");
    if (f) {
        fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
        if (len)
            fwrite(buf, 1, len, f);
        /* The last line closes the array (events each end with a comma). */
        fprintf(
            f,
            "{\"ph\":\"M\",\"name\":\"devq\",\"pid\":0,\"tid\":0,\"args\":{\"dropped_events\":%llu,\"max_bytes\":%llu}}\n]}\n",
            (unsigned long long)dropped, (unsigned long long)max_bytes);
        if (fclose(f) == 0 && rename(tmp, path) == 0) {
            pthread_mutex_unlock(&lock);
            return;
        }
        unlink(tmp);
    }
    /* Said on stderr, whatever DEVQ_LOG is: the user asked for this file. */
    fprintf(stderr, "devq: DEVQ_TRACE='%.200s': cannot write the trace: %s\n", path, strerror(errno));
    pthread_mutex_unlock(&lock);
}
