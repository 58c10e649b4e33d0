/* SPDX-License-Identifier: MIT */
/* The plugin loader: finds backends, loads them once per process, and
 * keeps a report of every file it tried.
 *
 * Search order: the built-in cpu backend, then every devq-*.so in each
 * folder of DEVQ_PLUGIN_PATH (colon list) -- or, when it is unset and this
 * libdevq.so runs from its build tree, the in-tree plugins' build folders
 * (plugin_dir.c) -- then the install folder: devq/
 * next to the libdevq.so that is running (plugin_dir.c), so that an
 * install under any prefix, or a moved one, finds its own plugins; the
 * configure-time $(libdir)/devq only when that cannot be told; last, the
 * plugins that manifests name (manifest.h): the *.json files of each
 * manifest folder in name order, the administrator's folder before the
 * packages', where a file masks one of the same name in a later folder.
 * So a package outside devq adds a backend without writing into devq's
 * folder, and cannot replace one installed with devq.  Within a folder files load in name order so that the
 * result does not depend on directory hashing.  The first backend of a
 * name wins; later ones are reported as duplicates, which is how a
 * DEVQ_PLUGIN_PATH build overrides an installed plugin.
 *
 * A plugin is outside code: whatever it returns is checked
 * (plugin_validate.c) before lib relies on it, and one bad file never
 * stops the others.  Entries are only ever appended (and published by
 * the count), so readers need no lock.
 *
 * A scan that fails for want of a resource (EMFILE, ENFILE, ENOMEM:
 * opening a folder or a file) is not a verdict on the plugins: it is
 * reported as that error and the scan is left unfinished, so the next
 * open searches again (files already tried are not tried twice).  Only
 * a finished scan is final; until then readers see a prefix of it.  The
 * tables are fixed arrays so that a rescan never moves what a reader holds.
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
#include "manifest.h"
#include "plugin.h"
#include "plugin_dir.h"
#include "plugin_validate.h"

/* More than any real machine has; a larger count is a broken plugin. */
#define MAX_DEVICES_PER_BACKEND 4096u
/* Fixed so that entries never move under a reader; past these the rest
 * are reported in the log and skipped. */
#define MAX_BACKENDS 64u
#define MAX_REPORTS 256u

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int load_done;
/* Why the last scan was left unfinished (negative errno, 0 if it was
 * not), and the folder or file it was opening. */
static int scan_error;
static char scan_error_path[4096];
/* The built-in backend, set once by load_builtin (NULL if its table was
 * refused): found without reading `backends`, which a scan may still be
 * growing. */
static _Atomic(struct devq_backend *) builtin;
/* Set once the built-in backend is registered or refused for good; a
 * transient failure (out of memory) leaves it clear, so the next open
 * tries again. */
static _Atomic int builtin_final;

static struct devq_backend *backends[MAX_BACKENDS];
static _Atomic size_t nbackends;

static devq_backend_report *reports[MAX_REPORTS];
static _Atomic size_t nreports;

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

static int is_transient(int err)
{
    return err == EMFILE || err == ENFILE || err == ENOMEM;
}

/* The scan ran out of something: remember the first such failure. */
static void scan_failed(int err, const char *path)
{
    if (scan_error)
        return;
    scan_error = -err;
    snprintf(scan_error_path, sizeof scan_error_path, "%s", path);
    devq__log(DEVQ_LOG_BASIC, "loader: %s: %s; searching again on the next open", path, strerror(err));
}

/* Returns the index of a new zeroed report, or -1 when out of room. */
static long report_new(const char *path)
{
    size_t n = atomic_load(&nreports);
    if (n >= MAX_REPORTS) {
        devq__log(DEVQ_LOG_BASIC, "loader: %s: more than %u plugin files, not reported", path, MAX_REPORTS);
        return -1;
    }
    devq_backend_report *r = reports[n] ? reports[n] : calloc(1, sizeof *r);
    if (!r) {
        scan_failed(ENOMEM, path);
        return -1;
    }
    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s", path);
    reports[n] = r;
    atomic_store(&nreports, n + 1);
    return (long)n;
}

/* Takes back the last report (a file whose load hit a transient error:
 * it is tried again by the next scan).  Its storage is kept for reuse. */
static void report_drop_last(long idx)
{
    if (idx >= 0 && (size_t)idx + 1 == atomic_load(&nreports))
        atomic_store(&nreports, (size_t)idx);
}

/* Was this file tried by an earlier, unfinished scan? */
static int already_tried(const char *path)
{
    for (size_t i = 0; i < atomic_load(&nreports); i++)
        if (!strncmp(reports[i]->path, path, sizeof reports[i]->path))
            return 1;
    return 0;
}

static void report_skip(long idx, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void report_skip(long idx, int status, const char *fmt, ...)
{
    if (idx < 0)
        return;
    devq_backend_report *r = reports[idx];
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
        snprintf(b->count_reason, sizeof b->count_reason, "%s", plugin_detail(r, why, sizeof why));
        count = 0;
    } else if (count > MAX_DEVICES_PER_BACKEND) {
        b->count_status = -EINVAL;
        snprintf(b->count_reason, sizeof b->count_reason,
                 "%s: device_count returned %u, more than %u: treated as broken", b->name, count,
                 MAX_DEVICES_PER_BACKEND);
        count = 0;
    } else if (count == 0) {
        snprintf(b->count_reason, sizeof b->count_reason, "%s: backend reports no device", b->name);
    }
    b->ndevices = count;
}

/* Validate and register one table.  `dl` stays open whatever happens:
 * the plugin handed out a table, so code of it may still be referenced
 * (threads, atexit handlers, the table itself). */
/* The manifest of the file being loaded, if it came from one: its table
 * must declare the ABI the manifest does. */
static const struct devq_manifest *loading_manifest;
static const char *loading_manifest_path;

static struct devq_backend *register_table(const struct devq_backend_ops *table, const char *path, void *dl,
                                           long rep)
{
    if (rep >= 0 && table)
        reports[rep]->abi_version = table->abi_version;
    if (loading_manifest && table && table->abi_version != loading_manifest->abi_version) {
        report_skip(rep, -EINVAL, "the plugin's ops table is ABI %u but its manifest %s says %u",
                    table->abi_version, loading_manifest_path, loading_manifest->abi_version);
        return NULL;
    }

    struct devq_backend_ops checked;
    char why[256];
    int r = devq__plugin_validate(table, &checked, why, sizeof why);
    if (r < 0) {
        report_skip(rep, r, "%s", why);
        return NULL;
    }
    struct devq_backend *first = devq__backend_find_loaded(checked.name);
    if (first) {
        report_skip(rep, -EEXIST, "duplicate backend '%s' (already loaded from %s)", checked.name,
                    first->path);
        return NULL;
    }

    if (atomic_load(&nbackends) >= MAX_BACKENDS) {
        report_skip(rep, -ENOSPC, "more than %u backends: '%s' not registered", MAX_BACKENDS, checked.name);
        return NULL;
    }
    struct devq_backend *b = calloc(1, sizeof *b);
    struct devq_backend_ops *ops = malloc(sizeof *ops);
    if (!b || !ops) {
        /* Not a verdict on the plugin: it is tried again by the next
         * scan (or, built in, the next open of cpu). */
        free(b);
        free(ops);
        report_drop_last(rep);
        scan_failed(ENOMEM, path);
        return NULL;
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
        pthread_mutex_destroy(&b->open_lock);
        free(ops);
        free(b);
        report_drop_last(rep);
        scan_failed(ENOMEM, path);
        return NULL;
    }
    size_t nb = atomic_load(&nbackends);
    backends[nb] = b;
    atomic_store(&nbackends, nb + 1);

    if (rep >= 0) {
        devq_backend_report *rp = reports[rep];
        snprintf(rp->name, sizeof rp->name, "%s", b->name);
        rp->status = 0;
        rp->devices = b->ndevices;
        snprintf(rp->reason, sizeof rp->reason, "%s", b->ndevices ? "" : b->count_reason);
    }
    devq__log(DEVQ_LOG_FULL, "loader: %s: loaded backend '%s' (ABI %u, %u device%s%s%s)", path, b->name,
              ops->abi_version, b->ndevices, b->ndevices == 1 ? "" : "s", b->ndevices ? "" : ": ",
              b->ndevices ? "" : b->count_reason);
    return b;
}

static struct devq_backend *run_init(devq_plugin_init_fn init, const char *path, void *dl, long rep)
{
    const struct devq_backend_ops *table = NULL;
    devq__err_str(0, "");
    int r = init(&devq__host, DEVQ_HOST_ABI_VERSION, &table);
    if (r < 0 && dl && is_transient(-r)) {
        /* Its driver could not be opened for want of descriptors or
         * memory: not a verdict on the plugin, so try it again later. */
        report_drop_last(rep);
        scan_failed(-r, path);
        return NULL;
    }
    if (r != 0) {
        char why[256];
        if (rep >= 0 && table)
            reports[rep]->abi_version = table->abi_version;
        if (r > 0)
            report_skip(rep, -EINVAL, "devq_plugin_init returned %d; expected 0 or a negative errno", r);
        else
            report_skip(rep, r, "devq_plugin_init failed: %s", plugin_detail(r, why, sizeof why));
        return NULL;
    }
    return register_table(table, path, dl, rep);
}

static void load_file(const char *path)
{
    if (already_tried(path))
        return;
    long rep = report_new(path);
    dlerror();
    errno = 0;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        int err = errno;
        const char *e = dlerror();
        if (is_transient(err)) {
            report_drop_last(rep);
            scan_failed(err, path);
            return;
        }
        report_skip(rep, -ENOEXEC, "cannot load: %s", e ? e : "dlopen failed");
        return;
    }
    devq_plugin_init_fn init;
    void *sym = dlsym(dl, DEVQ_PLUGIN_INIT_SYMBOL);
    if (!sym) {
        report_skip(rep, -ENOEXEC, "no '%s' symbol: not a devq plugin", DEVQ_PLUGIN_INIT_SYMBOL);
        dlclose(dl); /* none of its devq code ran: safe to unload */
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
    if (n < 0 && is_transient(errno)) {
        scan_failed(errno, dir);
        return;
    }
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
            devq__log(DEVQ_LOG_BASIC, "loader: %s/%s: path too long, skipped", dir, names[i]->d_name);
        else if (stat(path, &fst) < 0 || !S_ISREG(fst.st_mode))
            devq__log(DEVQ_LOG_FULL, "loader: %s: not a regular file, skipped", path);
        else
            load_file(path);
        free(names[i]);
    }
    free(names);
}

/* One manifest: a bad one is reported under its own path and skipped. */
static void load_manifest(const char *path)
{
    if (already_tried(path))
        return;
    struct devq_manifest m;
    char lib[4096], why[300];
    int r = devq__manifest_read(path, &m, lib, sizeof lib, why, sizeof why);
    if (r < 0 && is_transient(-r)) {
        scan_failed(-r, path);
        return;
    }
    if (r < 0) {
        long rep = report_new(path);
        report_skip(rep, r == -EINVAL ? -EINVAL : r, "bad manifest: %s", why);
        return;
    }
    if (already_tried(lib))
        return;
    if (m.abi_version > DEVQ_PLUGIN_ABI_VERSION) {
        long rep = report_new(lib);
        if (rep >= 0)
            reports[rep]->abi_version = m.abi_version;
        report_skip(rep, -ENOTSUP,
                    "its manifest %s declares plugin ABI %u, newer than this "
                    "libdevq's %u: not loaded",
                    path, m.abi_version, DEVQ_PLUGIN_ABI_VERSION);
        return;
    }
    struct stat st;
    int found = stat(lib, &st) == 0;
    if (!found || !S_ISREG(st.st_mode)) {
        const char *what = found ? "not a regular file" : strerror(errno);
        long rep = report_new(lib);
        report_skip(rep, found ? -EINVAL : -ENOENT, "named by the manifest %s: %s", path, what);
        return;
    }
    devq__log(DEVQ_LOG_FULL, "loader: manifest %s names %s (ABI %u)", path, lib, m.abi_version);
    loading_manifest = &m;
    loading_manifest_path = path;
    load_file(lib);
    loading_manifest = NULL;
    loading_manifest_path = NULL;
}

static int seen_name(char (*names)[256], size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

static int is_manifest_name(const struct dirent *d)
{
    return devq__manifest_file_name(d->d_name);
}

/* Every manifest folder in order; a file name seen in an earlier folder
 * masks the later ones (an administrator's override or opt-out). */
static void load_manifest_dirs(void)
{
    char *copy = strdup(devq__manifest_dirs(devq__getenv("DEVQ_PLUGIN_MANIFEST_PATH")));
    char(*seen)[256] = calloc(MAX_REPORTS, sizeof *seen);
    size_t nseen = 0;
    if (!copy || !seen) {
        free(copy);
        free(seen);
        scan_failed(ENOMEM, "the plugin manifests");
        return;
    }
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        struct dirent **names = NULL;
        int n = scandir(dir, &names, is_manifest_name, alphasort);
        if (n < 0 && is_transient(errno)) {
            scan_failed(errno, dir);
            continue;
        }
        if (n < 0) {
            devq__log(DEVQ_LOG_FULL, "loader: manifest folder %s: %s", dir, strerror(errno));
            continue;
        }
        devq__log(DEVQ_LOG_FULL, "loader: searching manifests in %s (%d)", dir, n);
        for (int i = 0; i < n; i++) {
            char path[4096];
            const char *name = names[i]->d_name;
            if (seen_name(seen, nseen, name)) {
                devq__log(DEVQ_LOG_FULL, "loader: %s/%s: masked by %s of an earlier folder", dir, name, name);
            } else if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) < sizeof path) {
                if (nseen < MAX_REPORTS)
                    snprintf(seen[nseen++], sizeof seen[0], "%s", name);
                load_manifest(path);
            }
            free(names[i]);
        }
        free(names);
    }
    free(seen);
    free(copy);
}

static void load_path_list(const char *list)
{
    char *copy = strdup(list);
    if (!copy) {
        scan_failed(ENOMEM, "DEVQ_PLUGIN_PATH");
        return;
    }
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save))
        load_dir(dir); /* strtok_r skips empty entries ("a::b", leading ':') */
    free(copy);
}

static const char *transient_text(int err);

/* Called with load_lock held. */
static void load_builtin(void)
{
    if (atomic_load(&builtin_final))
        return;
    scan_error = 0;
    scan_error_path[0] = '\0';
    long rep = report_new("(built in)");
    struct devq_backend *b = run_init(devq__cpu_plugin_init, "(built in)", NULL, rep);
    if (b)
        atomic_store(&builtin, b);
    if (b || already_tried("(built in)"))
        atomic_store(&builtin_final, 1);
}

int devq__builtin_load(void)
{
    if (atomic_load(&builtin_final))
        return 0;
    pthread_mutex_lock(&load_lock);
    load_builtin();
    int err = atomic_load(&builtin_final) ? 0 : scan_error;
    pthread_mutex_unlock(&load_lock);
    if (err)
        return devq__err(err,
                         "devq: could not register the built-in cpu backend: %s; it is tried "
                         "again on the next open",
                         transient_text(err));
    return 0;
}

/* One scan of every folder; called with load_lock held.  Finished unless
 * a transient error left it short. */
static void load_all(void)
{
    load_builtin();
    scan_error = 0;
    scan_error_path[0] = '\0';

    const char *path = devq__getenv("DEVQ_PLUGIN_PATH");
    if (path && *path) {
        load_path_list(path);
    } else {
        /* Run from the build tree: the plugins built beside this library
         * (plugin_dir.h says why this cannot reach an installed one).
         * Not with DEVQ_PLUGIN_PATH set: then the caller chose. */
        char build[DEVQ_BUILD_PLUGIN_DIRS_MAX][4096];
        int nb = devq__plugin_build_dirs((const void *)load_all, build, DEVQ_BUILD_PLUGIN_DIRS_MAX);
        for (int i = 0; i < nb; i++)
            load_dir(build[i]);
    }
    char dir[4096];
    devq__plugin_install_dir((const void *)load_all, dir, sizeof dir);
    load_dir(dir);
    load_manifest_dirs();

    free(searched);
    searched = NULL;
    nsearched = searched_cap = 0;
    devq__err_str(0, "");
    if (!scan_error)
        atomic_store(&load_done, 1);
}

static const char *transient_text(int err)
{
    switch (err) {
    case -EMFILE:
        return "too many open files (close some, or raise the limit: ulimit -n)";
    case -ENFILE:
        return "too many open files in the system";
    default:
        return "out of memory";
    }
}

int devq__backends_load(void)
{
    if (atomic_load(&load_done))
        return 0;
    pthread_mutex_lock(&load_lock);
    if (!atomic_load(&load_done))
        load_all();
    int err = atomic_load(&load_done) ? 0 : scan_error;
    char where[sizeof scan_error_path];
    snprintf(where, sizeof where, "%s", scan_error_path);
    pthread_mutex_unlock(&load_lock);
    if (!err)
        return 0;
    struct stat st;
    if (where[0] != '/') /* not a file: "DEVQ_PLUGIN_PATH", "the plugin manifests" */
        return devq__err(err,
                         "devq: could not search %.256s for plugins: %s; backends are "
                         "searched again on the next open",
                         where, transient_text(err));
    int is_dir = stat(where, &st) == 0 && S_ISDIR(st.st_mode);
    return devq__err(err,
                     "devq: could not open the plugin %s %.256s: %s; backends are searched "
                     "again on the next open",
                     is_dir ? "folder" : "file", where, transient_text(err));
}

struct devq_backend *devq__backend_find_loaded(const char *name)
{
    size_t n = atomic_load(&nbackends);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(backends[i]->name, name))
            return backends[i];
    return NULL;
}

struct devq_backend *devq__backend_find(const char *name)
{
    if (name && !strcmp(name, "cpu")) {
        devq__builtin_load();
        struct devq_backend *b = atomic_load(&builtin);
        if (b)
            return b;
    }
    devq__backends_load();
    return name ? devq__backend_find_loaded(name) : NULL;
}

size_t devq__backend_count(void)
{
    devq__backends_load();
    return atomic_load(&nbackends);
}

struct devq_backend *devq__backend_at(size_t i)
{
    devq__backends_load();
    return i < atomic_load(&nbackends) ? backends[i] : NULL;
}

size_t devq__plugin_report_count(void)
{
    devq__backends_load();
    return atomic_load(&nreports);
}

const devq_backend_report *devq__plugin_report_at(size_t i)
{
    devq__backends_load();
    return i < atomic_load(&nreports) ? reports[i] : NULL;
}

const devq_backend_report *devq__plugin_report_skipped(const char *name)
{
    char file[64];
    snprintf(file, sizeof file, "devq-%s.so", name);
    if (!strcmp(name, "cpu") && devq__plugin_report_count() && reports[0]->status < 0)
        return reports[0]; /* the built-in backend refused its own table */
    for (size_t i = 0; i < devq__plugin_report_count(); i++) {
        const char *base = strrchr(reports[i]->path, '/');
        if (reports[i]->status < 0 && base && !strcmp(base + 1, file))
            return reports[i];
    }
    return NULL;
}

/* At exit, let idle backends release what they hold (worker threads,
 * driver contexts) so leak checkers see a clean process.  A backend with
 * a device still open is left alone: its threads may be running. */
__attribute__((destructor)) static void backends_fini(void)
{
    size_t n = atomic_load(&nbackends);
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
