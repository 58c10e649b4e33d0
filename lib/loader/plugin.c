/* SPDX-License-Identifier: MIT */
/* The plugin loader: finds backends, loads them once per process, and
 * keeps a report of every file it tried.
 *
 * Search order: the built-in cpu backend, then every devq-*.so in each
 * folder of DEVQ_PLUGIN_PATH (colon list), then the install folder: devq/
 * next to the libdevq.so that is running (plugin_dir.c), so that an
 * install under any prefix, or a moved one, finds its own plugins; the
 * configure-time $(libdir)/devq only when that cannot be told.  Within a folder files load in name order so that the
 * result does not depend on directory hashing.  The first backend of a
 * name wins; later ones are reported as duplicates, which is how a
 * DEVQ_PLUGIN_PATH build overrides an installed plugin.
 *
 * A plugin is outside code: whatever it returns is checked
 * (plugin_validate.c) before lib relies on it, and one bad file never
 * stops the others.  After loading, the backend list is immutable, so
 * readers need no lock.
 *
 * Opening "cpu" by name loads nothing else: the built-in backend always
 * wins its name, and a GPU plugin's init loads its driver (ROCm alone
 * maps libstdc++ and dozens of libraries and took 32 ms here), which a
 * program that asked for the cpu should not pay.  So loading has two
 * steps, each run once: the built-in backend, then the plugin files
 * (which everything else, enumeration and reports, asks for). */
#include "config.h"
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "builtin.h"
#include "device.h"
#include "env.h"
#include "error.h"
#include "host.h"
#include "log.h"
#include "plugin.h"
#include "plugin_dir.h"
#include "plugin_validate.h"

/* More than any real machine has; a larger count is a broken plugin. */
#define MAX_DEVICES_PER_BACKEND 4096u

static pthread_once_t builtin_once = PTHREAD_ONCE_INIT, load_once = PTHREAD_ONCE_INIT;
static int load_status;
static _Atomic int load_done;
/* The built-in backend, set once by load_builtin (NULL if its table was
 * refused): found without reading `backends`, which the second step may
 * still be growing. */
static struct devq_backend *builtin;

static struct devq_backend **backends;
static size_t nbackends, backends_cap;

static devq_backend_report *reports;
static size_t nreports, reports_cap;

struct dir_id {
    dev_t dev;
    ino_t ino;
};
static struct dir_id *searched;
static size_t nsearched, searched_cap;

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return -ENOMEM;
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Returns the index of a new zeroed report, or -1 when out of memory. */
static long report_new(const char *path)
{
    if (grow((void **)&reports, &reports_cap, nreports, sizeof *reports) < 0) {
        load_status = -ENOMEM;
        return -1;
    }
    devq_backend_report *r = &reports[nreports];
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    return (long)nreports++;
}

static void report_skip(long idx, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report_skip(long idx, int status, const char *fmt, ...)
{
    if (idx < 0)
        return;
    devq_backend_report *r = &reports[idx];
    r->status = status;
    r->name[0] = '\0';
    r->devices = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reason, sizeof r->reason, fmt, ap);
    va_end(ap);
    devq__log(DEVQ_LOG_BASIC, "loader: %s: skipped: %s", r->path, r->reason);
}

/* The detail a plugin left with host->error(), or a generic one. */
static const char *plugin_detail(int err, char *buf, size_t len)
{
    const char *m = devq__errmsg_peek();
    if (m && *m)
        snprintf(buf, len, "%s", m);
    else
        snprintf(buf, len, "%s", strerror(err < 0 ? -err : EINVAL));
    return buf;
}

static void count_devices(struct devq_backend *b)
{
    uint32_t count = 0;
    devq__err_str(0, "");
    int r = b->ops->device_count(&count);
    if (r < 0) {
        char why[256];
        b->count_status = r;
        snprintf(b->count_reason, sizeof b->count_reason, "%s",
                 plugin_detail(r, why, sizeof why));
        count = 0;
    } else if (count > MAX_DEVICES_PER_BACKEND) {
        b->count_status = -EINVAL;
        snprintf(b->count_reason, sizeof b->count_reason,
                 "%s: device_count returned %u, more than %u: treated as broken",
                 b->name, count, MAX_DEVICES_PER_BACKEND);
        count = 0;
    } else if (count == 0) {
        snprintf(b->count_reason, sizeof b->count_reason, "%s: backend reports no device",
                 b->name);
    }
    b->ndevices = count;
}

/* Validate and register one table.  `dl` stays open whatever happens:
 * the plugin handed out a table, so code of it may still be referenced
 * (threads, atexit handlers, the table itself). */
static void register_table(const struct devq_backend_ops *table, const char *path, void *dl,
                           long rep)
{
    if (rep >= 0 && table)
        reports[rep].abi_version = table->abi_version;

    struct devq_backend_ops checked;
    char why[256];
    int r = devq__plugin_validate(table, &checked, why, sizeof why);
    if (r < 0) {
        report_skip(rep, r, "%s", why);
        return;
    }
    struct devq_backend *first = devq__backend_find_loaded(checked.name);
    if (first) {
        report_skip(rep, -EEXIST, "duplicate backend '%s' (already loaded from %s)",
                    checked.name, first->path);
        return;
    }

    struct devq_backend *b = calloc(1, sizeof *b);
    struct devq_backend_ops *ops = malloc(sizeof *ops);
    if (!b || !ops ||
        grow((void **)&backends, &backends_cap, nbackends, sizeof *backends) < 0) {
        free(b);
        free(ops);
        load_status = -ENOMEM;
        report_skip(rep, -ENOMEM, "out of memory registering backend '%s'", checked.name);
        return;
    }
    *ops = checked;
    b->ops = ops;
    snprintf(b->name, sizeof b->name, "%s", ops->name);
    snprintf(b->path, sizeof b->path, "%s", path);
    b->dl = dl;
    pthread_mutex_init(&b->open_lock, NULL);
    count_devices(b);
    b->slots = calloc(b->ndevices ? b->ndevices : 1, sizeof *b->slots);
    if (!b->slots) {
        load_status = -ENOMEM;
        report_skip(rep, -ENOMEM, "out of memory registering backend '%s'", b->name);
        free(ops);
        free(b);
        return;
    }
    backends[nbackends++] = b;

    if (rep >= 0) {
        devq_backend_report *rp = &reports[rep];
        snprintf(rp->name, sizeof rp->name, "%s", b->name);
        rp->status = 0;
        rp->devices = b->ndevices;
        snprintf(rp->reason, sizeof rp->reason, "%s", b->ndevices ? "" : b->count_reason);
    }
    devq__log(DEVQ_LOG_FULL, "loader: %s: loaded backend '%s' (ABI %u, %u device%s%s%s)", path,
              b->name, ops->abi_version, b->ndevices, b->ndevices == 1 ? "" : "s",
              b->ndevices ? "" : ": ", b->ndevices ? "" : b->count_reason);
}

static void run_init(devq_plugin_init_fn init, const char *path, void *dl, long rep)
{
    const struct devq_backend_ops *table = NULL;
    devq__err_str(0, "");
    int r = init(&devq__host, DEVQ_HOST_ABI_VERSION, &table);
    if (r != 0) {
        char why[256];
        if (rep >= 0 && table)
            reports[rep].abi_version = table->abi_version;
        if (r > 0)
            report_skip(rep, -EINVAL, "devq_plugin_init returned %d; expected 0 or a negative errno", r);
        else
            report_skip(rep, r, "devq_plugin_init failed: %s", plugin_detail(r, why, sizeof why));
        return;
    }
    register_table(table, path, dl, rep);
}

static void load_file(const char *path)
{
    long rep = report_new(path);
    dlerror();
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        report_skip(rep, -ENOEXEC, "cannot load: %s", e ? e : "dlopen failed");
        return;
    }
    devq_plugin_init_fn init;
    void *sym = dlsym(dl, DEVQ_PLUGIN_INIT_SYMBOL);
    if (!sym) {
        report_skip(rep, -ENOEXEC, "no '%s' symbol: not a devq plugin", DEVQ_PLUGIN_INIT_SYMBOL);
        dlclose(dl);    /* none of its devq code ran: safe to unload */
        return;
    }
    memcpy(&init, &sym, sizeof init);
    run_init(init, path, dl, rep);
}

static int is_plugin_file_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 8 && !strncmp(d->d_name, "devq-", 5) && !strcmp(d->d_name + n - 3, ".so");
}

/* A folder named twice (in DEVQ_PLUGIN_PATH and as the install folder, or
 * through a symlink) is searched once, so its plugins are not reported
 * as duplicates of themselves. */
static int already_searched(const struct stat *st)
{
    for (size_t i = 0; i < nsearched; i++)
        if (searched[i].dev == st->st_dev && searched[i].ino == st->st_ino)
            return 1;
    if (grow((void **)&searched, &searched_cap, nsearched, sizeof *searched) == 0)
        searched[nsearched++] = (struct dir_id){ st->st_dev, st->st_ino };
    return 0;
}

static void load_dir(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) < 0) {
        devq__log(DEVQ_LOG_FULL, "loader: plugin folder %s: %s", dir, strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        devq__log(DEVQ_LOG_BASIC, "loader: plugin folder %s: not a folder, skipped", dir);
        return;
    }
    if (already_searched(&st)) {
        devq__log(DEVQ_LOG_FULL, "loader: plugin folder %s: already searched", dir);
        return;
    }
    struct dirent **names = NULL;
    int n = scandir(dir, &names, is_plugin_file_name, alphasort);
    if (n < 0) {
        devq__log(DEVQ_LOG_BASIC, "loader: plugin folder %s: %s", dir, strerror(errno));
        return;
    }
    devq__log(DEVQ_LOG_FULL, "loader: searching %s (%d candidate%s)", dir, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        char path[4096];
        int len = snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        struct stat fst;
        if (len < 0 || (size_t)len >= sizeof path)
            devq__log(DEVQ_LOG_BASIC, "loader: %s/%s: path too long, skipped", dir,
                      names[i]->d_name);
        else if (stat(path, &fst) < 0 || !S_ISREG(fst.st_mode))
            devq__log(DEVQ_LOG_FULL, "loader: %s: not a regular file, skipped", path);
        else
            load_file(path);
        free(names[i]);
    }
    free(names);
}

static void load_path_list(const char *list)
{
    char *copy = strdup(list);
    if (!copy) {
        load_status = -ENOMEM;
        return;
    }
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        load_dir(dir);    /* strtok_r skips empty entries ("a::b", leading ':') */
    free(copy);
}

static void load_builtin(void)
{
    long rep = report_new("(built in)");
    run_init(devq__cpu_plugin_init, "(built in)", NULL, rep);
    if (nbackends == 1)
        builtin = backends[0];
}

static void load_all(void)
{
    pthread_once(&builtin_once, load_builtin);

    const char *path = devq__getenv("DEVQ_PLUGIN_PATH");
    if (path && *path)
        load_path_list(path);
    char dir[4096];
    devq__plugin_install_dir((const void *)load_all, dir, sizeof dir);
    load_dir(dir);

    free(searched);
    searched = NULL;
    nsearched = searched_cap = 0;
    devq__err_str(0, "");
    atomic_store(&load_done, 1);
}

int devq__backends_load(void)
{
    pthread_once(&load_once, load_all);
    return load_status < 0
        ? devq__err(load_status, "devq: out of memory while loading backends") : 0;
}

struct devq_backend *devq__backend_find_loaded(const char *name)
{
    for (size_t i = 0; i < nbackends; i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

struct devq_backend *devq__backend_find(const char *name)
{
    if (name && !strcmp(name, "cpu")) {
        pthread_once(&builtin_once, load_builtin);
        if (builtin)
            return builtin;
    }
    devq__backends_load();
    return name ? devq__backend_find_loaded(name) : NULL;
}

size_t devq__backend_count(void)
{
    devq__backends_load();
    return nbackends;
}

struct devq_backend *devq__backend_at(size_t i)
{
    devq__backends_load();
    return i < nbackends ? backends[i] : NULL;
}

size_t devq__plugin_report_count(void)
{
    devq__backends_load();
    return nreports;
}

const devq_backend_report *devq__plugin_report_at(size_t i)
{
    devq__backends_load();
    return i < nreports ? &reports[i] : NULL;
}

const devq_backend_report *devq__plugin_report_skipped(const char *name)
{
    char file[64];
    snprintf(file, sizeof file, "devq-%s.so", name);
    if (!strcmp(name, "cpu") && devq__plugin_report_count() && reports[0].status < 0)
        return &reports[0];     /* the built-in backend refused its own table */
    for (size_t i = 0; i < devq__plugin_report_count(); i++) {
        const char *base = strrchr(reports[i].path, '/');
        if (reports[i].status < 0 && base && !strcmp(base + 1, file))
            return &reports[i];
    }
    return NULL;
}

/* At exit, let idle backends release what they hold (worker threads,
 * driver contexts) so leak checkers see a clean process.  A backend with
 * a device still open is left alone: its threads may be running. */
__attribute__((destructor)) static void backends_fini(void)
{
    /* Only the built-in backend when the plugin files were never loaded. */
    size_t n = atomic_load(&load_done) ? nbackends : builtin ? 1 : 0;
    for (size_t i = n; i-- > 0;) {
        struct devq_backend *b = backends[i];
        if (!b->ops->fini)
            continue;
        int busy = 0;
        for (uint32_t d = 0; d < b->ndevices; d++)
            busy |= __atomic_load_n(&b->slots[d], __ATOMIC_ACQUIRE) != NULL;
        if (!busy)
            b->ops->fini();
    }
}
