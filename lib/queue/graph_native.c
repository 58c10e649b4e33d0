/* SPDX-License-Identifier: MIT */
/* Native graph runs (graph_native.h): making, updating and dropping the
 * backend's handle for each run of an exec's launches. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "buffer.h"
#include "device.h"
#include "error.h"
#include "graph.h"
#include "graph_native.h"
#include "kernel.h"
#include "log.h"

static void native_destroy(struct devq_object *o)
{
    struct graph_native *n = DEVQ_OBJECT_OWNER(o, struct graph_native, obj);
    struct devq_device *dev = n->dev;
    dev->ops->graph_destroy(n->g);
    for (uint32_t i = 0; i < n->nkernels; i++)
        devq__object_release_here(&n->kernels[i]->obj);
    free(n->kernels);
    free(n);
    devq_device_close(dev);
}

/* Exec op i of r as a launch entry, its values pointed at r's bytes
 * (they hold offsets), its arguments built in args (room for nargs). */
static struct devq_pl_launch_entry entry_of(const struct graph_rec *r, uint32_t i, struct devq_pl_arg *args)
{
    const struct op *o = &r->rec.ops[i];
    const struct devq_pl_arg *src = &r->rec.args[o->u.exec.first_arg];
    for (uint32_t a = 0; a < o->u.exec.nargs; a++) {
        args[a] = src[a];
        if (!args[a].is_buffer)
            args[a].value = r->rec.bytes + (uintptr_t)src[a].value;
    }
    return (struct devq_pl_launch_entry){ o->u.exec.k->pl, args, o->u.exec.nargs, o->u.exec.l };
}

/* The entries of run's launches, built in one allocation; NULL when out
 * of memory. */
static struct devq_pl_launch_entry *run_entries(const struct graph_rec *r, const struct run_plan *run)
{
    uint32_t n = run->end - run->from, nargs = 0;
    for (uint32_t i = run->from; i < run->end; i++)
        nargs += r->rec.ops[i].u.exec.nargs;
    struct devq_pl_launch_entry *e = malloc(n * sizeof *e + nargs * sizeof(struct devq_pl_arg));
    if (!e)
        return NULL;
    struct devq_pl_arg *args = (struct devq_pl_arg *)(e + n);
    for (uint32_t i = run->from; i < run->end; i++) {
        e[i - run->from] = entry_of(r, i, args);
        args += r->rec.ops[i].u.exec.nargs;
    }
    return e;
}

/* A native handle for run, or NULL when the backend cannot make one. */
static struct graph_native *native_new(const struct graph_rec *r, const struct run_plan *run)
{
    struct devq_device *dev = r->dev;
    uint32_t n = run->end - run->from;
    struct graph_native *nat = calloc(1, sizeof *nat);
    struct devq_pl_launch_entry *e = nat ? run_entries(r, run) : NULL;
    devq_kernel **kernels = e ? malloc(n * sizeof *kernels) : NULL;
    int err = -ENOMEM;
    if (kernels)
        err = dev->ops->graph_create(dev->pl, e, n, &nat->g);
    free(e);
    if (err < 0) {
        devq__log(DEVQ_LOG_FULL, "graph: launches %u..%u on %s:%d replay without a native graph: %s",
                  run->from, run->end - 1, dev->info.backend, dev->info.ordinal,
                  err == -ENOMEM ? "out of memory" : devq__errmsg_peek());
        free(kernels);
        free(nat);
        return NULL;
    }
    uint32_t nk = 0; /* the distinct kernels, each retained once */
    for (uint32_t i = run->from; i < run->end; i++) {
        devq_kernel *k = r->rec.ops[i].u.exec.k;
        uint32_t at = 0;
        while (at < nk && kernels[at] != k)
            at++;
        if (at == nk) {
            devq__object_retain(&k->obj);
            kernels[nk++] = k;
        }
    }
    nat->kernels = kernels;
    nat->nkernels = nk;
    devq__object_init(&nat->obj, DEVQ_MAGIC_GRAPH_NATIVE, native_destroy);
    devq__device_retain(dev);
    nat->dev = dev;
    return nat;
}

/* The backend's messages about a run it could not make native are not
 * the caller's error: devq_errmsg is put back as it was. */
struct saved_msg {
    char s[DEVQ_ERRMSG_MAX];
};
static void save_msg(struct saved_msg *m)
{
    const char *p = devq__errmsg_peek();
    snprintf(m->s, sizeof m->s, "%s", p ? p : "");
}
static void restore_msg(const struct saved_msg *m)
{
    (void)devq__err_str(0, m->s);
}

void devq__graph_native_make(struct graph_rec *r)
{
    if (!r->dev->ops->graph_create)
        return;
    struct saved_msg m;
    save_msg(&m);
    for (uint32_t k = 0; k < r->nrun; k++)
        r->run[k].nat = native_new(r, &r->run[k]);
    restore_msg(&m);
}

void devq__graph_native_fini(struct graph_rec *r)
{
    for (uint32_t k = 0; k < r->nrun; k++)
        if (r->run[k].nat) {
            devq__object_release_here(&r->run[k].nat->obj);
            r->run[k].nat = NULL;
        }
}

/* Whether exec op i of r has a buffer argument bound to buf. */
static int op_uses(const struct graph_rec *r, uint32_t i, const devq_buffer *buf)
{
    const struct op *o = &r->rec.ops[i];
    for (uint32_t k = 0; k < o->nuses; k++)
        if (r->rec.uses[o->first_use + k].buf == buf)
            return 1;
    return 0;
}

/* The launches of run that changed (op `op`, or every one using buf)
 * reach its handle: updated in place when no replay still to issue
 * holds it, else (or when the backend cannot update) a new handle made
 * from the exec's record replaces it, and the exec's reference on the
 * old one goes (the replays keep theirs). */
static void refresh(struct graph_rec *r, struct run_plan *run, uint32_t op, const devq_buffer *buf)
{
    struct graph_native *n = run->nat;
    if (atomic_load_explicit(&n->unissued, memory_order_acquire) == 0) {
        int ok = 1;
        for (uint32_t i = run->from; ok && i < run->end; i++) {
            if (i != op && !(buf && op_uses(r, i, buf)))
                continue;
            struct devq_pl_arg args[DEVQ_PL_LIST_ARGS_MAX];
            struct devq_pl_launch_entry e = entry_of(r, i, args);
            ok = r->dev->ops->graph_update(n->g, i - run->from, &e) == 0;
        }
        if (ok)
            return;
    }
    run->nat = native_new(r, run);
    devq__object_release_here(&n->obj);
}

void devq__graph_native_changed(struct graph_rec *r, uint32_t op)
{
    struct saved_msg m;
    save_msg(&m);
    for (uint32_t k = 0; k < r->nrun; k++)
        if (r->run[k].nat && r->run[k].from <= op && op < r->run[k].end)
            refresh(r, &r->run[k], op, NULL);
    restore_msg(&m);
}

void devq__graph_native_rebound(struct graph_rec *r, const devq_buffer *buf)
{
    struct saved_msg m;
    save_msg(&m);
    for (uint32_t k = 0; k < r->nrun; k++) {
        struct run_plan *run = &r->run[k];
        uint32_t i = run->from;
        while (run->nat && i < run->end && !op_uses(r, i, buf))
            i++;
        if (run->nat && i < run->end)
            refresh(r, run, UINT32_MAX, buf);
    }
    restore_msg(&m);
}
