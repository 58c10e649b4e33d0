/* SPDX-License-Identifier: MIT */
/* Ops table validation: the gate between a plugin's table and lib.
 * Everything a plugin hands back is treated as outside input: the header
 * is checked before anything else is read, and a table from a newer ABI
 * is refused before its layout is trusted. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "plugin_validate.h"

static int refuse(int err, char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(int err, char *why, size_t why_len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (why_len)
        vsnprintf(why, why_len, fmt, ap);
    va_end(ap);
    return err;
}

int devq__backend_name_valid(const char *name)
{
    if (!name)
        return 0;
    size_t n = strnlen(name, 16);
    if (n == 0 || n > 15)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return 0;
    }
    return 1;
}

#define OP(field)                                        \
    {                                                    \
        offsetof(struct devq_backend_ops, field), #field \
    }
struct op_ref {
    size_t offset;
    const char *name;
};

/* In table order, so the first missing one is named. */
static const struct op_ref required_ops[] = {
    OP(device_count),  OP(device_open),    OP(device_close), OP(device_info),
    OP(stream_create), OP(stream_destroy), OP(event_create), OP(event_destroy),
    OP(event_record),  OP(event_query),    OP(event_wait),   OP(stream_wait_event),
    OP(host_fn),       OP(mem_alloc),      OP(mem_free),     OP(copy),
    OP(fill),
};

static int op_set(const struct devq_backend_ops *t, size_t offset)
{
    void (*fn)(void);
    memcpy(&fn, (const char *)t + offset, sizeof fn);
    return fn != NULL;
}

/* Groups whose members only make sense together: a half-present group
 * would fail later at a worse moment (a leak, or a launch with no
 * kernel).  Which groups a device *uses* is its caps' business. */
static int check_groups(const struct devq_backend_ops *t, char *why, size_t why_len)
{
    int kernel = !!t->kernel_load + !!t->kernel_destroy + !!t->launch;
    if (kernel != 0 && kernel != 3)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': kernel ops incomplete (kernel_load %s, kernel_destroy %s, launch %s): "
                      "provide all three or none",
                      t->name, t->kernel_load ? "set" : "NULL", t->kernel_destroy ? "set" : "NULL",
                      t->launch ? "set" : "NULL");
    if (!!t->value_attach != !!t->value_detach)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': value_attach and value_detach must both be set or both NULL", t->name);
    if ((t->stream_wait_value || t->stream_write_value) && !t->value_attach)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': stream_wait_value/stream_write_value need value_attach "
                      "and value_detach",
                      t->name);
    if (t->kernel_iface && !t->kernel_load)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': kernel_iface is set without the kernel ops (kernel_load, "
                      "kernel_destroy, launch): it describes loaded kernels",
                      t->name);
    if (t->kernel_load_fn && !t->kernel_load)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': kernel_load_fn is set without the kernel ops (kernel_load, "
                      "kernel_destroy, launch): its kernels are destroyed and launched by them",
                      t->name);
    if (t->launch_list && !t->launch)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': launch_list is set without the kernel ops (kernel_load, "
                      "kernel_destroy, launch): it runs loaded kernels",
                      t->name);
    if (t->signal_tail && !t->stream_idle)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': signal_tail is set without stream_idle: a stream that runs "
                      "signal tails reads its error latch between host callbacks, which stream_idle "
                      "reports; provide both or neither",
                      t->name);
    int graph = !!t->graph_create + !!t->graph_update + !!t->graph_launch + !!t->graph_destroy;
    if (graph != 0 && graph != 4)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': graph ops incomplete (%d of the 4 graph_* entries set): provide "
                      "graph_create, graph_update, graph_launch and graph_destroy, or none",
                      t->name, graph);
    if (graph && !t->launch)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': the graph_* ops are set without the kernel ops (kernel_load, "
                      "kernel_destroy, launch): they run loaded kernels",
                      t->name);
    if (!!t->mem_alloc_async != !!t->mem_free_async)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': mem_alloc_async and mem_free_async must both be set or "
                      "both NULL",
                      t->name);
    int chan = !!t->chan_id + !!t->chan_create + !!t->chan_split + !!t->chan_rank + !!t->chan_size +
               !!t->chan_destroy + !!t->chan_enqueue + !!t->chan_error + !!t->chan_abort;
    if (chan != 0 && chan != 9)
        return refuse(-EINVAL, why, why_len,
                      "backend '%s': channel ops incomplete (%d of the 9 chan_* entries set): provide all "
                      "or none",
                      t->name, chan);
    return 0;
}

int devq__plugin_validate(const struct devq_backend_ops *table, struct devq_backend_ops *out, char *why,
                          size_t why_len)
{
    if (why_len)
        why[0] = '\0';
    memset(out, 0, sizeof *out);
    if (!table)
        return refuse(-EINVAL, why, why_len, "devq_plugin_init returned no ops table");
    if (table->abi_version > DEVQ_PLUGIN_ABI_VERSION)
        return refuse(-ENOTSUP, why, why_len,
                      "plugin ABI version %u is newer than this libdevq's %u; "
                      "upgrade libdevq or use a plugin built for ABI %u",
                      table->abi_version, DEVQ_PLUGIN_ABI_VERSION, DEVQ_PLUGIN_ABI_VERSION);
    if (table->abi_version != DEVQ_PLUGIN_ABI_VERSION)
        return refuse(-ENOTSUP, why, why_len,
                      "plugin ABI version %u is not supported (this libdevq speaks %u); "
                      "rebuild the plugin against the installed devq_plugin.h",
                      table->abi_version, DEVQ_PLUGIN_ABI_VERSION);
    if (table->size < DEVQ_PLUGIN_MIN_TABLE_SIZE)
        return refuse(-EINVAL, why, why_len,
                      "ops table size %u is smaller than the %zu bytes ABI %u requires", table->size,
                      (size_t)DEVQ_PLUGIN_MIN_TABLE_SIZE, DEVQ_PLUGIN_ABI_VERSION);

    /* Newer tables of the same version may be longer (appended ops this
     * libdevq does not know): copy only what we understand. */
    size_t n = table->size < sizeof *out ? table->size : sizeof *out;
    memcpy(out, table, n);

    if (!devq__backend_name_valid(out->name)) {
        char shown[20] = "(null)";
        if (out->name)
            snprintf(shown, sizeof shown, "%.16s", out->name);
        memset(out, 0, sizeof *out);
        return refuse(-EINVAL, why, why_len, "invalid backend name '%s': use 1 to 15 of [a-z0-9_]", shown);
    }
    for (size_t i = 0; i < sizeof required_ops / sizeof required_ops[0]; i++) {
        if (!op_set(out, required_ops[i].offset)) {
            int r = refuse(-EINVAL, why, why_len, "backend '%s': required op '%s' is NULL", out->name,
                           required_ops[i].name);
            memset(out, 0, sizeof *out);
            return r;
        }
    }
    int r = check_groups(out, why, why_len);
    if (r < 0)
        memset(out, 0, sizeof *out);
    return r;
}
