/* SPDX-License-Identifier: MIT */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "device_spec.h"
#include "env_table.h"

static int fail(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *msg, size_t len, const char *fmt, ...)
{
    if (msg && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

const char *devq__env_get(const char *name)
{
#ifdef HAVE_SECURE_GETENV
    return secure_getenv(name);
#else
    return getenv(name);
#endif
}

/* Leading decimal digits into *v; the end, or NULL on overflow. */
static const char *digits(const char *p, uint64_t *v)
{
    *v = 0;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (*v > (UINT64_MAX - d) / 10)
            return NULL;
        *v = *v * 10 + d;
    }
    return p;
}

int devq__env_uint(const char *var, const char *text, uint64_t max, uint64_t *out, char *msg, size_t len)
{
    if (!text || !*text)
        return fail(msg, len, "%s: empty value; expected a number", var);
    uint64_t v;
    const char *end = digits(text, &v);
    if (!end)
        return fail(msg, len, "%s='%.64s': too large", var, text);
    if (end == text || *end)
        return fail(msg, len, "%s='%.64s': not a non-negative integer", var, text);
    if (v > max)
        return fail(msg, len, "%s='%.64s': above the limit %llu", var, text, (unsigned long long)max);
    *out = v;
    return 0;
}

int devq__env_size(const char *var, const char *text, uint64_t *out, char *msg, size_t len)
{
    if (!text || !*text)
        return fail(msg, len, "%s: empty value; expected a size like 64M", var);
    uint64_t v;
    const char *p = digits(text, &v);
    if (!p)
        return fail(msg, len, "%s='%.64s': too large", var, text);
    if (p == text)
        return fail(msg, len, "%s='%.64s': expected a size like 512K, 64M or 2G", var, text);
    if (*p == '.' || *p == ',')
        return fail(msg, len,
                    "%s='%.64s': fractions are not accepted; use a whole number "
                    "of a smaller unit (1.5G is 1536M)",
                    var, text);
    unsigned shift = 0;
    switch (toupper((unsigned char)*p)) {
    case 'K':
        shift = 10;
        p++;
        break;
    case 'M':
        shift = 20;
        p++;
        break;
    case 'G':
        shift = 30;
        p++;
        break;
    case 'T':
        shift = 40;
        p++;
        break;
    default:
        break;
    }
    if (shift && *p == 'i')
        p++;
    if (*p == 'B' || *p == 'b')
        p++;
    if (*p)
        return fail(msg, len,
                    "%s='%.64s': unknown suffix '%.16s'; use K, M, G or T (powers "
                    "of 1024), optionally followed by B or iB",
                    var, text, p);
    if (shift && v > (UINT64_MAX >> shift))
        return fail(msg, len, "%s='%.64s': too large", var, text);
    *out = v << shift;
    return 0;
}

int devq__env_flag(const char *var, const char *v, int *on, char *msg, size_t len)
{
    if (!v || !*v || !strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no")) {
        *on = 0;
        return 0;
    }
    if (!strcmp(v, "1") || !strcmp(v, "on") || !strcmp(v, "yes")) {
        *on = 1;
        return 0;
    }
    return fail(msg, len,
                "%s='%.64s': expected 1, on or yes (enable), or 0, off or no "
                "(disable)",
                var, v);
}

/* ---- checks, one per kind of value ---- */

static int check_size_nonzero(const char *var, const char *v, char *msg, size_t len)
{
    uint64_t n = 0; /* set when r == 0; zeroed for the analyzer (make analyze) */
    int r = devq__env_size(var, v, &n, msg, len);
    if (r == 0 && n == 0)
        return fail(msg, len,
                    "%s='%.64s': a budget of 0 refuses every allocation; unset it "
                    "for no limit",
                    var, v);
    return r;
}

static int check_size(const char *var, const char *v, char *msg, size_t len)
{
    uint64_t n;
    return devq__env_size(var, v, &n, msg, len);
}

static int check_flag(const char *var, const char *v, char *msg, size_t len)
{
    int on;
    return devq__env_flag(var, v, &on, msg, len);
}

static int check_log(const char *var, const char *v, char *msg, size_t len)
{
    static const char *const ok[] = { "off", "0", "basic", "1", "full", "2" };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (!strcmp(v, ok[i]))
            return 0;
    return fail(msg, len, "%s='%.64s': unknown level; use off, basic or full", var, v);
}

static int check_pool(const char *var, const char *v, char *msg, size_t len)
{
    if (!strcmp(v, "native") || !strcmp(v, "devq") || !strcmp(v, "pool") || !strcmp(v, "direct"))
        return 0;
    return fail(msg, len, "%s='%.64s': unknown pool; use native, devq or direct", var, v);
}

static int check_backend(const char *var, const char *v, char *msg, size_t len)
{
    struct devq_backend_pref pref;
    char why[256];
    if (devq__backend_pref_parse(v, &pref, why, sizeof why) < 0)
        return fail(msg, len, "%s='%.64s': %s", var, v, why);
    return 0; /* whether the names exist is known once plugins are loaded */
}

static int check_cpu_devices(const char *var, const char *v, char *msg, size_t len)
{
    uint64_t n;
    if (devq__env_uint(var, v, DEVQ_ENV_CPU_DEVICES_MAX, &n, msg, len) < 0)
        return fail(msg, len, "%s='%.64s': not a device count (want 0..%d)", var, v,
                    DEVQ_ENV_CPU_DEVICES_MAX);
    return 0;
}

static int check_cpu_threads(const char *var, const char *v, char *msg, size_t len)
{
    uint64_t n = 0; /* set when the call succeeds; zeroed for the analyzer */
    if (devq__env_uint(var, v, DEVQ_ENV_CPU_THREADS_MAX, &n, msg, len) < 0 || n < 1)
        return fail(msg, len, "%s='%.64s': not a thread count (want 1..%d)", var, v,
                    DEVQ_ENV_CPU_THREADS_MAX);
    return 0;
}

/* A file devq will create or append to: it, or else its folder, must be
 * writable now, so that a typo is an error at the first call rather than
 * output silently lost at exit.  Nothing is created here. */
static int check_writable(const char *var, const char *v, char *msg, size_t len)
{
    if (access(v, F_OK) == 0) {
        if (access(v, W_OK) == 0)
            return 0;
        return fail(msg, len, "%s='%.128s': not writable: %s", var, v, strerror(errno));
    }
    char dir[4096];
    const char *slash = strrchr(v, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == v)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - v), v);
    if (access(dir, W_OK | X_OK) == 0)
        return 0;
    return fail(msg, len, "%s='%.128s': cannot create it: folder '%.128s': %s", var, v, dir, strerror(errno));
}

const struct devq_env_var devq__env_vars[] = {
    { "DEVQ_BACKEND", "preference list for devq_device_open(NULL)",
      "comma list of specs (cuda, cuda:1, cpu); ^name excludes a backend", "lib", check_backend },
    { "DEVQ_PLUGIN_PATH", "folders searched for devq-*.so before the install folder", "colon list of folders",
      "lib", NULL },
    { "DEVQ_PLUGIN_MANIFEST_PATH",
      "folders of plugin manifests (*.json), in place of the "
      "configure-time $(sysconfdir)/devq/plugins.d and $(datadir)/devq/plugins.d",
      "colon list of folders", "lib", NULL },
    { "DEVQ_LOG", "what devq logs", "off (0), basic (1) or full (2)", "lib", check_log },
    { "DEVQ_LOG_FILE", "file the log is appended to instead of stderr", "a writable path", "lib",
      check_writable },
    { "DEVQ_TRACE", "Chrome trace-event file of every stream, written at exit", "a writable path", "lib",
      check_writable },
    { "DEVQ_TRACE_MAX", "memory kept for trace events (default 64M)", "a size like 64M", "lib", check_size },
    { "DEVQ_MEM_POOL", "base allocator of the default memory stack", "native, devq (pool) or direct", "lib",
      check_pool },
    { "DEVQ_MEM_BUDGET", "limit on device memory outstanding (unset: none)", "a size like 512M or 2G, not 0",
      "lib", check_size_nonzero },
    { "DEVQ_MEM_GUARD", "canaries, poison on free, double-free detection", "1, on, yes or 0, off, no", "lib",
      check_flag },
    { "DEVQ_MEM_LOG", "CSV file with a line per allocation and free", "a writable path", "lib",
      check_writable },
    { "DEVQ_CPU_DEVICES", "number of cpu devices (default 1)", "0..64", "cpu", check_cpu_devices },
    { "DEVQ_CPU_THREADS", "threads of the cpu kernel pool (default: online processors)", "1..1024", "cpu",
      check_cpu_threads },
    { "DEVQ_CUDA_LIBRARY", "CUDA driver library to load instead of libcuda.so.1", "a library path or name",
      "cuda", NULL },
    { "DEVQ_HIP_LIBRARY", "HIP runtime library to load instead of libamdhip64.so.5", "a library path or name",
      "hip", NULL },
    { "DEVQ_NCCL_LIBRARY", "NCCL library the cuda backend's channels load instead of libnccl.so.2",
      "a library path or name", "cuda", NULL },
    { "DEVQ_RCCL_LIBRARY", "RCCL library the hip backend's channels load instead of librccl.so.1",
      "a library path or name", "hip", NULL },
    { "DEVQ_MPI_ENGINE", "channel engine module to load instead of devq/engines/devq-mpi.so",
      "a path to devq-mpi.so", "lib", NULL },
};
const size_t devq__env_nvars = sizeof devq__env_vars / sizeof devq__env_vars[0];

const struct devq_env_var *devq__env_find(const char *name)
{
    for (size_t i = 0; i < devq__env_nvars; i++)
        if (!strcmp(devq__env_vars[i].name, name))
            return &devq__env_vars[i];
    return NULL;
}

int devq__env_check_var(const struct devq_env_var *v, const char *value, char *msg, size_t len)
{
    if (!value || !*value || !v->check)
        return 0;
    return v->check(v->name, value, msg, len);
}

int devq__env_check_all(char *msg, size_t len)
{
    for (size_t i = 0; i < devq__env_nvars; i++) {
        const struct devq_env_var *v = &devq__env_vars[i];
        int r = devq__env_check_var(v, devq__env_get(v->name), msg, len);
        if (r < 0)
            return r;
    }
    return 0;
}
