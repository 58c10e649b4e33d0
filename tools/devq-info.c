/* SPDX-License-Identifier: MIT */
/* devq-info: what devq sees on this machine — the plugins it tried (and
 * why any was skipped), the devices of each backend, and the environment
 * that steers it.  Like fi_info or vulkaninfo: the first thing to run
 * when a program says "no device".  Talks to libdevq through the public
 * API only; the environment table and the plugin-folder rule are lib's
 * own source files compiled in (mk/tools.mk), so what it prints and
 * checks is exactly what the library does. */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq.h>
#include <devq/devq_plugin.h>
#include <dirent.h>
#include <limits.h>
#include "env_table.h"
#include "manifest.h"
#include "plugin_dir.h"

#define DEVQ_ERRMSG_MAX_INFO 32 /* rows of the environment table, at most */

/* Exit statuses, documented in devq-info(1). */
enum {
    EXIT_NO_DEVICE = 1, /* devq_device_open(NULL) finds no device */
    EXIT_USAGE = 2,
    EXIT_BAD_ENV = 3, /* a variable is malformed, or DEVQ_BACKEND names no backend */
};


/* Every bit devq.h names, by the name of its macro; a bit set that is not
 * here (a newer plugin than this devq-info) shows as bitN. */
static const struct {
    uint64_t bit;
    const char *name;
} cap_names[] = {
    { DEVQ_CAP_KERNELS, "kernels" },
    { DEVQ_CAP_TIMING, "timing" },
    { DEVQ_CAP_ASYNC_ALLOC, "async_alloc" },
    { DEVQ_CAP_WAIT_VALUE, "wait_value" },
    { DEVQ_CAP_WRITE_VALUE, "write_value" },
    { DEVQ_CAP_HOST_VISIBLE, "host_visible" },
    { DEVQ_CAP_COPY_ENGINE, "copy_engine" },
    { DEVQ_CAP_PRIORITIES, "priorities" },
    { DEVQ_CAP_SKIP_ON_ERROR, "skip_on_error" },
    { DEVQ_CAP_SOFTWARE, "software" },
    { DEVQ_CAP_CHANNELS, "channels" },
    { DEVQ_CAP_KERNEL_CHECK, "kernel_check" },
    { DEVQ_CAP_GRAPH_NATIVE, "graph_native" },
};
#define NCAPS (sizeof cap_names / sizeof cap_names[0])

/* The name of cap bit `bit` (0..63): its table name or "bitN". */
static const char *cap_name(unsigned bit, char *buf, size_t len)
{
    for (size_t i = 0; i < NCAPS; i++)
        if (cap_names[i].bit == 1ull << bit)
            return cap_names[i].name;
    snprintf(buf, len, "bit%u", bit);
    return buf;
}

/* One device, or why it could not be opened. */
struct device_entry {
    char spec[32];
    int status;
    char error[512];
    devq_device_info info;
};

struct snapshot {
    char default_spec[32]; /* what devq_device_open(NULL) opens */
    int default_status;
    char default_error[512];
    char env_error[DEVQ_ERRMSG_MAX_INFO][512]; /* per variable of the table, "" when valid */
    int env_invalid;
    devq_backend_report *reports;
    size_t nreports;
    struct device_entry *devices;
    size_t ndevices;
    int accelerators; /* devices opened on a backend other than cpu, not software */
    int software;     /* devices emulated on the host (DEVQ_CAP_SOFTWARE): lavapipe */
    char software_list[128];
};

static const char *errno_name(int err)
{
    switch (-err) {
    case 0:
        return "0";
    case EINVAL:
        return "EINVAL";
    case ENOEXEC:
        return "ENOEXEC";
    case ENOTSUP:
        return "ENOTSUP";
    case EEXIST:
        return "EEXIST";
    case EIO:
        return "EIO";
    case ENODEV:
        return "ENODEV";
    case ENOMEM:
        return "ENOMEM";
    case ENOENT:
        return "ENOENT";
    case EACCES:
        return "EACCES";
    default:
        return "error";
    }
}

static void check_env(struct snapshot *s)
{
    for (size_t i = 0; i < devq__env_nvars && i < DEVQ_ERRMSG_MAX_INFO; i++) {
        const struct devq_env_var *v = &devq__env_vars[i];
        if (devq__env_check_var(v, devq__env_get(v->name), s->env_error[i], sizeof s->env_error[i]) < 0)
            s->env_invalid++;
        else
            s->env_error[i][0] = '\0';
    }
}

/* What a program calling devq_device_open(NULL) gets: this is where an
 * unknown name in DEVQ_BACKEND shows. */
static void open_default(struct snapshot *s)
{
    devq_device *dev = NULL;
    devq_device_info info = { 0 };
    s->default_status = devq_device_open(NULL, &dev);
    if (s->default_status == 0)
        s->default_status = devq_device_info_get(dev, &info);
    if (s->default_status < 0)
        snprintf(s->default_error, sizeof s->default_error, "%s", devq_errmsg());
    else
        snprintf(s->default_spec, sizeof s->default_spec, "%s:%d", info.backend, info.ordinal);
    devq_device_close(dev);
}

static int take_snapshot(struct snapshot *s)
{
    memset(s, 0, sizeof *s);
    check_env(s);
    size_t n = 0;
    int r = devq_backends_report(NULL, 0, &n);
    if (r < 0)
        return r;
    s->reports = calloc(n ? n : 1, sizeof *s->reports);
    if (!s->reports)
        return -ENOMEM;
    r = devq_backends_report(s->reports, n, &s->nreports);
    if (r < 0)
        return r;
    if (s->nreports > n)
        s->nreports = n;

    size_t total = 0;
    for (size_t i = 0; i < s->nreports; i++)
        if (s->reports[i].status == 0)
            total += s->reports[i].devices;
    s->devices = calloc(total ? total : 1, sizeof *s->devices);
    if (!s->devices)
        return -ENOMEM;
    for (size_t i = 0; i < s->nreports; i++) {
        const devq_backend_report *rep = &s->reports[i];
        if (rep->status != 0)
            continue;
        for (uint32_t d = 0; d < rep->devices; d++) {
            struct device_entry *e = &s->devices[s->ndevices++];
            snprintf(e->spec, sizeof e->spec, "%s:%u", rep->name, d);
            devq_device *dev = NULL;
            e->status = devq_device_open(e->spec, &dev);
            if (e->status == 0)
                e->status = devq_device_info_get(dev, &e->info);
            if (e->status < 0)
                snprintf(e->error, sizeof e->error, "%s", devq_errmsg());
            else if (strcmp(rep->name, "cpu") != 0 && (e->info.caps & DEVQ_CAP_SOFTWARE)) {
                size_t used = strlen(s->software_list);
                snprintf(s->software_list + used, sizeof s->software_list - used, "%s%s",
                         s->software++ ? ", " : "", e->spec);
            } else if (strcmp(rep->name, "cpu") != 0) {
                s->accelerators++;
            }
            devq_device_close(dev); /* NULL when the open failed */
        }
    }
    open_default(s);
    return 0;
}

static void caps_text(uint64_t caps, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (unsigned bit = 0; bit < 64 && used < len; bit++) {
        char tmp[8];
        if (caps & (1ull << bit))
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "",
                                     cap_name(bit, tmp, sizeof tmp));
    }
    if (!used)
        snprintf(buf, len, "(none)");
}

static void human_bytes(uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    if (u == 0)
        snprintf(buf, len, "%" PRIu64 " B", b);
    else
        snprintf(buf, len, "%.1f %s", v, unit[u]);
}

static void print_env_text(const struct snapshot *s)
{
    printf("environment (see devq(7)):\n");
    for (size_t i = 0; i < devq__env_nvars; i++) {
        const struct devq_env_var *v = &devq__env_vars[i];
        const char *val = devq__env_get(v->name);
        printf("  %-18s %s\n", v->name, val ? val : "(unset)");
        printf("      %s; %s\n", v->meaning, v->values);
        if (i < DEVQ_ERRMSG_MAX_INFO && s->env_error[i][0])
            printf("      INVALID: %s\n", s->env_error[i]);
    }
}

/* An address inside libdevq.so.  Not &devq_version: in a program built
 * without -fPIE that is the program's own PLT stub. */
static const void *lib_address(void)
{
    return dlsym(RTLD_DEFAULT, "devq_version");
}

/* The folders searched, in order, as the loader (plugin.c) searches them:
 * DEVQ_PLUGIN_PATH, or the build tree's when it is unset and libdevq
 * runs uninstalled; then the install folder. */
static void plugin_folders(char *buf, size_t len)
{
    const char *path = devq__env_get("DEVQ_PLUGIN_PATH");
    char dir[4096];
    size_t used = 0;
    buf[0] = '\0';
    if (path && *path) {
        used = (size_t)snprintf(buf, len, "%s:", path);
    } else {
        char build[DEVQ_BUILD_PLUGIN_DIRS_MAX][4096];
        int nb = devq__plugin_build_dirs(lib_address(), build, DEVQ_BUILD_PLUGIN_DIRS_MAX);
        for (int i = 0; i < nb && used < len; i++)
            used += (size_t)snprintf(buf + used, len - used, "%s:", build[i]);
    }
    devq__plugin_install_dir(lib_address(), dir, sizeof dir);
    if (used < len)
        snprintf(buf + used, len - used, "%s", dir);
}

static int same_folder(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!strcmp(a, b))
        return 1;
    return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

/* Is `folder` one of the colon list's? */
static int in_list(const char *list, const char *folder)
{
    char *copy = strdup(list), *save = NULL;
    int found = 0;
    for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found; d = strtok_r(NULL, ":", &save))
        found = same_folder(d, folder);
    free(copy);
    return found;
}

/* The manifest that names `path`, searched as the loader searches
 * (manifest.h, plugin.c): 1 and its file in `out`, or 0. */
static int manifest_of(const char *path, char *out, size_t len)
{
    char *dirs = strdup(devq__manifest_dirs(devq__env_get("DEVQ_PLUGIN_MANIFEST_PATH")));
    char *save = NULL;
    int found = 0;
    char seen[64][256];
    size_t nseen = 0;
    for (char *d = dirs ? strtok_r(dirs, ":", &save) : NULL; d && !found; d = strtok_r(NULL, ":", &save)) {
        struct dirent **names = NULL;
        int n = scandir(d, &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
            const char *name = names[i]->d_name;
            int masked = 0;
            for (size_t k = 0; k < nseen; k++)
                masked |= !strcmp(seen[k], name);
            if (!found && !masked && devq__manifest_file_name(name)) {
                char file[4096], lib[4096], why[300];
                struct devq_manifest m;
                if (nseen < 64)
                    snprintf(seen[nseen++], sizeof seen[0], "%s", name);
                snprintf(file, sizeof file, "%s/%s", d, name);
                if (devq__manifest_read(file, &m, lib, sizeof lib, why, sizeof why) == 0 &&
                    !strcmp(lib, path)) {
                    snprintf(out, len, "%s", file);
                    found = 1;
                }
            }
            free(names[i]);
        }
        free(names);
    }
    free(dirs);
    return found;
}

/* Where a plugin file of the report came from, in words. */
static void origin_of(const char *path, char *out, size_t len)
{
    size_t n = strlen(path);
    char manifest[4096];
    if (!strcmp(path, "(built in)")) {
        snprintf(out, len, "built into libdevq");
        return;
    }
    if (n > 5 && !strcmp(path + n - 5, ".json")) {
        snprintf(out, len, "a manifest folder");
        return;
    }
    if (manifest_of(path, manifest, sizeof manifest)) {
        snprintf(out, len, "manifest %s", manifest);
        return;
    }
    char folder[4096];
    const char *slash = strrchr(path, '/');
    snprintf(folder, sizeof folder, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    const char *env = devq__env_get("DEVQ_PLUGIN_PATH");
    char build[DEVQ_BUILD_PLUGIN_DIRS_MAX][4096], dir[4096];
    int nb = env && *env ? 0 : devq__plugin_build_dirs(lib_address(), build, DEVQ_BUILD_PLUGIN_DIRS_MAX);
    devq__plugin_install_dir(lib_address(), dir, sizeof dir);
    if (env && *env && in_list(env, folder)) {
        snprintf(out, len, "folder %s (DEVQ_PLUGIN_PATH)", folder);
        return;
    }
    for (int i = 0; i < nb; i++)
        if (same_folder(build[i], folder)) {
            snprintf(out, len, "folder %s (the build tree)", folder);
            return;
        }
    if (same_folder(dir, folder))
        snprintf(out, len, "folder %s (the install folder)", folder);
    else
        snprintf(out, len, "folder %s", folder);
}

static void print_text(const struct snapshot *s, int show_env)
{
    char folders[8192];
    plugin_folders(folders, sizeof folders);
    printf("devq %s (plugin ABI %d)\n", devq_version(), DEVQ_PLUGIN_ABI_VERSION);
    printf("plugin folders: %s\n", folders);
    printf("manifest folders: %s\n", devq__manifest_dirs(devq__env_get("DEVQ_PLUGIN_MANIFEST_PATH")));
    printf("\nplugins, in search order:\n");
    for (size_t i = 0; i < s->nreports; i++) {
        const devq_backend_report *r = &s->reports[i];
        printf("  %s\n", r->path);
        if (r->status == 0) {
            printf("      backend %s, ABI %u, %u device%s%s%s\n", r->name, r->abi_version, r->devices,
                   r->devices == 1 ? "" : "s", r->reason[0] ? ": " : "", r->reason);
        } else {
            if (r->abi_version)
                printf("      skipped (%s, ABI %u): %s\n", errno_name(r->status), r->abi_version, r->reason);
            else
                printf("      skipped (%s): %s\n", errno_name(r->status), r->reason);
        }
        char origin[4200];
        origin_of(r->path, origin, sizeof origin);
        printf("      from: %s\n", origin);
    }
    printf("\ndevices:\n");
    if (!s->ndevices)
        printf("  (none)\n");
    for (size_t i = 0; i < s->ndevices; i++) {
        const struct device_entry *e = &s->devices[i];
        if (e->status < 0) {
            printf("  %-8s cannot open (%s): %s\n", e->spec, errno_name(e->status), e->error);
            continue;
        }
        char mem[32], caps[256];
        if (e->info.total_memory)
            human_bytes(e->info.total_memory, mem, sizeof mem);
        else
            snprintf(mem, sizeof mem, "unknown");
        caps_text(e->info.caps, caps, sizeof caps);
        printf("  %-8s %s\n", e->spec, e->info.name);
        printf("           memory %s, ", mem);
        if (e->info.compute_units)
            printf("%u compute unit%s\n", e->info.compute_units, e->info.compute_units == 1 ? "" : "s");
        else
            printf("compute units unknown\n");
        printf("           caps: %s\n", caps);
    }
    printf("\n");
    if (!s->accelerators) {
        int cpu = 0;
        for (size_t i = 0; i < s->ndevices; i++)
            cpu |= s->devices[i].status == 0 && !strcmp(s->devices[i].info.backend, "cpu");
        printf("%s\n", cpu ? "no accelerator found; the cpu backend is available"
                           : "no accelerator found, and the cpu backend could not be opened");
    } else {
        printf("%d accelerator%s found\n", s->accelerators, s->accelerators == 1 ? "" : "s");
    }
    /* Software devices are not accelerators: devq_device_open(NULL) takes
     * one only after the cpu backend (devq_device_open(3)). */
    if (s->software)
        printf("%d software device%s (%s), tried after cpu\n", s->software, s->software == 1 ? "" : "s",
               s->software_list);
    if (s->default_status == 0)
        printf("devq_device_open(NULL) opens %s\n", s->default_spec);
    else
        printf("devq_device_open(NULL) fails (%s): %s\n", errno_name(s->default_status), s->default_error);
    if (show_env) {
        printf("\n");
        print_env_text(s);
    }
}

static void json_str(const char *v)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p == '\n')
            printf("\\n");
        else if (*p == '\t')
            printf("\\t");
        else if (*p < 0x20 || *p == 0x7f)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static void print_json(const struct snapshot *s, int show_env)
{
    printf("{\n  \"version\": ");
    json_str(devq_version());
    printf(",\n  \"plugin_abi\": %d,\n  \"plugin_path\": ", DEVQ_PLUGIN_ABI_VERSION);
    const char *path = devq__env_get("DEVQ_PLUGIN_PATH");
    json_str(path ? path : "");
    char dir[4096];
    devq__plugin_install_dir(lib_address(), dir, sizeof dir);
    printf(",\n  \"plugin_dir\": ");
    json_str(dir);
    char folders[8192];
    plugin_folders(folders, sizeof folders);
    printf(",\n  \"plugin_folders\": ");
    json_str(folders);
    printf(",\n  \"manifest_folders\": ");
    json_str(devq__manifest_dirs(devq__env_get("DEVQ_PLUGIN_MANIFEST_PATH")));
    printf(",\n  \"plugins\": [");
    for (size_t i = 0; i < s->nreports; i++) {
        const devq_backend_report *r = &s->reports[i];
        printf("%s\n    {\"path\": ", i ? "," : "");
        json_str(r->path);
        printf(", \"name\": ");
        json_str(r->name);
        printf(", \"abi_version\": %u, \"loaded\": %s, \"status\": %d, \"error\": ", r->abi_version,
               r->status == 0 ? "true" : "false", r->status);
        json_str(r->status ? errno_name(r->status) : "");
        printf(", \"devices\": %u, \"reason\": ", r->devices);
        json_str(r->reason);
        char origin[4200];
        origin_of(r->path, origin, sizeof origin);
        printf(", \"from\": ");
        json_str(origin);
        printf("}");
    }
    printf("\n  ],\n  \"devices\": [");
    for (size_t i = 0; i < s->ndevices; i++) {
        const struct device_entry *e = &s->devices[i];
        printf("%s\n    {\"spec\": ", i ? "," : "");
        json_str(e->spec);
        if (e->status < 0) {
            printf(", \"opened\": false, \"status\": %d, \"error\": ", e->status);
            json_str(e->error);
            printf("}");
            continue;
        }
        printf(", \"opened\": true, \"backend\": ");
        json_str(e->info.backend);
        printf(", \"ordinal\": %d, \"name\": ", e->info.ordinal);
        json_str(e->info.name);
        printf(", \"total_memory\": %" PRIu64 ", \"compute_units\": %u, \"caps_mask\": %" PRIu64
               ", \"caps\": [",
               e->info.total_memory, e->info.compute_units, e->info.caps);
        int first = 1;
        for (unsigned bit = 0; bit < 64; bit++) {
            char tmp[8];
            if (e->info.caps & (1ull << bit)) {
                printf("%s", first ? "" : ", ");
                json_str(cap_name(bit, tmp, sizeof tmp));
                first = 0;
            }
        }
        printf("]}");
    }
    printf("\n  ],\n  \"accelerators\": %d,\n  \"software_devices\": %d", s->accelerators, s->software);
    printf(",\n  \"default_device\": {\"status\": %d, \"spec\": ", s->default_status);
    json_str(s->default_spec);
    printf(", \"error\": ");
    json_str(s->default_error);
    printf("}");
    printf(",\n  \"environment_errors\": {");
    for (size_t i = 0, n = 0; i < devq__env_nvars && i < DEVQ_ERRMSG_MAX_INFO; i++) {
        if (!s->env_error[i][0])
            continue;
        printf("%s\n    ", n++ ? "," : "");
        json_str(devq__env_vars[i].name);
        printf(": ");
        json_str(s->env_error[i]);
    }
    printf("\n  }");
    if (show_env) {
        printf(",\n  \"environment\": {");
        for (size_t i = 0; i < devq__env_nvars; i++) {
            const char *v = devq__env_get(devq__env_vars[i].name);
            printf("%s\n    ", i ? "," : "");
            json_str(devq__env_vars[i].name);
            printf(": ");
            if (v)
                json_str(v);
            else
                printf("null");
        }
        printf("\n  }");
    }
    printf("\n}\n");
}

static void usage(FILE *f)
{
    char dir[4096];
    devq__plugin_install_dir(lib_address(), dir, sizeof dir);
    fprintf(f,
            "Usage: devq-info [-e] [--json]\n"
            "Show the devq plugins found (and why any was skipped), the devices of each\n"
            "backend, and with -e the environment variables devq reads.\n"
            "\n"
            "  -e, --env      also print devq's environment variables and their values\n"
            "  -j, --json     print JSON for scripts instead of text\n"
            "  -V, --version  print the devq version\n"
            "  -h, --help     print this help\n"
            "\n"
            "Plugins are searched in DEVQ_PLUGIN_PATH, then %s.\n"
            "DEVQ_LOG=full shows every file tried on stderr.\n"
            "Exit status: 0 ok, 1 devq_device_open(NULL) finds no device, 2 usage error,\n"
            "3 invalid environment.  See devq-info(1).\n",
            dir);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        { "env", no_argument, NULL, 'e' },
        { "json", no_argument, NULL, 'j' },
        { "version", no_argument, NULL, 'V' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int show_env = 0, json = 0, c;
    while ((c = getopt_long(argc, argv, "ejVh", longopts, NULL)) != -1) {
        switch (c) {
        case 'e':
            show_env = 1;
            break;
        case 'j':
            json = 1;
            break;
        case 'V':
            printf("devq-info %s\n", devq_version());
            return 0;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "devq-info: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return EXIT_USAGE;
    }
    struct snapshot s;
    int r = take_snapshot(&s);
    if (r < 0) {
        fprintf(stderr, "devq-info: %s\n", devq_errmsg());
        return EXIT_NO_DEVICE;
    }
    if (json)
        print_json(&s, show_env);
    else
        print_text(&s, show_env);
    /* The reasons again on stderr, so that a script sees why it failed. */
    for (size_t i = 0; i < devq__env_nvars && i < DEVQ_ERRMSG_MAX_INFO; i++)
        if (s.env_error[i][0])
            fprintf(stderr, "devq-info: %s\n", s.env_error[i]);
    if (s.default_status < 0 && !s.env_invalid) /* else it repeats the first of them */
        fprintf(stderr, "devq-info: %s\n", s.default_error);
    int status = 0;
    if (s.env_invalid || s.default_status == -EINVAL)
        status = EXIT_BAD_ENV;
    else if (s.default_status < 0)
        status = EXIT_NO_DEVICE;
    free(s.reports);
    free(s.devices);
    return status;
}
