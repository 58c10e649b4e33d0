/* SPDX-License-Identifier: MIT */
/* Native graph runs (devq_plugin.h, graph_create .. graph_destroy): a run
 * of launches recorded once into a reusable command buffer.
 *
 * The form: a SECONDARY command buffer recorded with SIMULTANEOUS_USE,
 * which graph_launch executes (vkCmdExecuteCommands) inside the stream's
 * open primary, as one op of it.  Not a primary of the graph's own,
 * submitted in order, because:
 *   - stream order and the barriers are those of any op: vk_stream_cmd
 *     puts the op barrier before it, the next op (or the flush's host
 *     barrier) after it, and the launches inside are separated by the
 *     same barrier (vk_cmd_op_barrier), as consecutive launches are;
 *   - the held-submission rules, error latching (a host callback's error
 *     skips the primary, and with it the graph), the timeline values and
 *     the completion thread's bookkeeping see an ordinary primary: none
 *     of them changed.  A primary of our own would be a second kind of
 *     submission that every one of them would have to know;
 *   - many launches between two host-visible points cost one submission,
 *     not one each.
 * SIMULTANEOUS_USE lets one recording be pending in several primaries at
 * once (many launches in flight).  Buffer arguments are push descriptors
 * (VK_KHR_push_descriptor, the plugin's argument ABI) and values push
 * constants, both recorded INTO the graph's command buffer: the graph
 * needs no descriptor pool, and nothing of a launch lives in the stream.
 *
 * A recording that a primary has executed (a "use", held by that primary
 * until it completed and was reset, or was dropped: stream.c calls
 * vk_graph_uses_release) is never re-recorded or freed.  graph_update
 * only changes the prepared launch and marks the graph for recording: the
 * next graph_launch records a NEW command buffer (a free one of the graph:
 * no uses, not current), so libdevq's updates of several entries before a
 * launch cost one recording, and launches already queued keep running the
 * old one, which becomes free when its last use is released.
 * graph_destroy with uses left only marks the graph; the last release
 * frees it (its pool, and with it every command buffer).
 *
 * Everything is under the device mutex: the graph's pool is used by no
 * other lock, and uses are released under it (stream.c). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

struct vk_graph_cb {
    VkCommandBuffer cb;
    uint32_t uses; /* primaries holding it (open, held, in flight, not yet reset) */
};

struct devq_pl_graph {
    struct devq_pl_device *dev;
    VkCommandPool pool;
    size_t n;
    struct vk_dispatch *x; /* the prepared launches; bufs and pcbuf owned */
    struct vk_graph_cb *cbs;
    uint32_t ncbs, cap_cbs;
    int64_t cur;      /* the recording of the launches as they are now, or -1 */
    uint64_t pending; /* sum of cbs[].uses */
    bool destroyed;   /* graph_destroy was called: freed at pending == 0 */
    uint64_t recordings;
};

static void graph_free(struct devq_pl_graph *g)
{
    if (g->pool)
        vk_vkDestroyCommandPool(g->dev->dev, g->pool, NULL); /* frees every cb */
    for (size_t i = 0; i < g->n; i++) {
        free(g->x[i].bufs);
        free(g->x[i].pcbuf);
    }
    free(g->x);
    free(g->cbs);
    free(g);
}

/* Under mu: prepare e as launch i of g, into storage of g's own. */
static int prepare(struct devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e, bool *changed)
{
    struct devq_pl_device *d = g->dev;
    if (!e->k || e->nargs > DEVQ_PL_LIST_ARGS_MAX || (e->nargs && !e->args))
        return vk_host->error(
            -EINVAL, "vulkan:%u: graph launch %zu: %s (at most %d arguments, a loaded kernel)", d->ordinal, i,
            !e->k ? "no kernel" : "bad argument list", DEVQ_PL_LIST_ARGS_MAX);
    uint8_t pcbuf[VK_PC_MAX];
    VkDescriptorBufferInfo bufs[VK_MAX_BUFFERS];
    struct vk_dispatch t = { .bufs = bufs, .pcbuf = pcbuf };
    int err = vk_dispatch_prepare(e->k, &e->l, e->args, e->nargs, &t);
    if (err)
        return err;
    struct vk_dispatch *x = &g->x[i];
    *changed = !x->p || x->p != t.p || memcmp(x->groups, t.groups, sizeof t.groups) || x->nbuf != t.nbuf ||
               x->pc != t.pc || (t.nbuf && memcmp(x->bufs, t.bufs, t.nbuf * sizeof *t.bufs)) ||
               (t.pc && memcmp(x->pcbuf, t.pcbuf, t.pc));
    if (!*changed)
        return 0;
    /* New storage first, both or neither: a failure leaves x as it was. */
    bool new_bufs = x->nbuf != t.nbuf || !x->p, new_pc = x->pc != t.pc || !x->p;
    VkDescriptorBufferInfo *nb = new_bufs && t.nbuf ? malloc(t.nbuf * sizeof *nb) : NULL;
    uint8_t *np = new_pc && t.pc ? malloc(t.pc) : NULL;
    if ((new_bufs && t.nbuf && !nb) || (new_pc && t.pc && !np)) {
        free(nb);
        free(np);
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory preparing a graph", d->ordinal);
    }
    if (new_bufs) {
        free(x->bufs);
        x->bufs = nb;
    }
    if (new_pc) {
        free(x->pcbuf);
        x->pcbuf = np;
    }
    if (t.nbuf)
        memcpy(x->bufs, t.bufs, t.nbuf * sizeof *t.bufs);
    if (t.pc)
        memcpy(x->pcbuf, t.pcbuf, t.pc);
    x->p = t.p;
    memcpy(x->groups, t.groups, sizeof t.groups);
    x->nbuf = t.nbuf;
    x->pc = t.pc;
    return 0;
}

/* Under mu: a command buffer of g that no primary holds and that is not
 * the current recording; allocated when there is none.  -1 on failure. */
static int64_t free_cb(struct devq_pl_graph *g)
{
    struct devq_pl_device *d = g->dev;
    for (uint32_t i = 0; i < g->ncbs; i++)
        if (!g->cbs[i].uses && (int64_t)i != g->cur)
            return i;
    if (g->ncbs == g->cap_cbs) {
        uint32_t cap = g->cap_cbs ? 2 * g->cap_cbs : 2;
        struct vk_graph_cb *n = realloc(g->cbs, cap * sizeof *n);
        if (!n) {
            vk_host->error(-ENOMEM, "vulkan:%u: out of memory recording a graph", d->ordinal);
            return -1;
        }
        g->cbs = n;
        g->cap_cbs = cap;
    }
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = g->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_SECONDARY,
                                       .commandBufferCount = 1 };
    VkCommandBuffer cb;
    VkResult r = vk_vkAllocateCommandBuffers(d->dev, &ai, &cb);
    if (r != VK_SUCCESS) {
        vk_fail(d, "vkAllocateCommandBuffers", r, -ENOMEM);
        return -1;
    }
    g->cbs[g->ncbs] = (struct vk_graph_cb){ cb, 0 };
    return g->ncbs++;
}

/* Under mu: record g's launches as they are now into a free command
 * buffer, which becomes the current one. */
static int record(struct devq_pl_graph *g)
{
    struct devq_pl_device *d = g->dev;
    if (atomic_load(&d->lost))
        return vk_lost_error(d);
    int64_t i = free_cb(g);
    if (i < 0)
        return atomic_load(&d->lost) ? -ENODEV : -ENOMEM;
    VkCommandBuffer cb = g->cbs[i].cb;
    VkCommandBufferInheritanceInfo inherit = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO };
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
                                    .pInheritanceInfo = &inherit };
    VkResult r = vk_vkBeginCommandBuffer(cb, &bi); /* resets it: the pool allows it */
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkBeginCommandBuffer", r, -ENOMEM);
    for (size_t k = 0; k < g->n; k++) {
        if (k)
            vk_cmd_op_barrier(cb);
        vk_dispatch_record(cb, d, &g->x[k]);
    }
    if ((r = vk_vkEndCommandBuffer(cb)) != VK_SUCCESS)
        return vk_fail(d, "vkEndCommandBuffer", r, -ENOMEM);
    g->cur = i;
    g->recordings++;
    vk_host->log(DEVQ_LOG_FULL, "devq-vulkan: vulkan:%u: graph %p: recorded %zu launches (recording %llu)",
                 d->ordinal, (void *)g, g->n, (unsigned long long)g->recordings);
    return 0;
}

int vk_graph_create(struct devq_pl_device *d, const struct devq_pl_launch_entry *e, size_t n,
                    struct devq_pl_graph **out)
{
    if (!d->push_descriptors)
        return vk_host->error(-ENOTSUP, "vulkan:%u: graph_create: no kernels on this device (it lacks %s)",
                              d->ordinal, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (!n || !e)
        return vk_host->error(-EINVAL, "vulkan:%u: graph_create: no launches (give at least one)",
                              d->ordinal);
    if (atomic_load(&d->lost))
        return vk_lost_error(d);
    struct devq_pl_graph *g = calloc(1, sizeof *g);
    if (g)
        g->x = calloc(n, sizeof *g->x);
    if (!g || !g->x) {
        free(g);
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory creating a graph of %zu launches",
                              d->ordinal, n);
    }
    g->dev = d;
    g->n = n;
    g->cur = -1;
    VkCommandPoolCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                   .queueFamilyIndex = d->family };
    VkResult r = vk_vkCreateCommandPool(d->dev, &pi, NULL, &g->pool);
    if (r != VK_SUCCESS) {
        g->pool = VK_NULL_HANDLE;
        graph_free(g);
        return vk_fail(d, "vkCreateCommandPool", r, -ENOMEM);
    }
    pthread_mutex_lock(&d->mu);
    int err = 0;
    bool changed;
    for (size_t i = 0; i < n && !err; i++)
        err = prepare(g, i, &e[i], &changed);
    if (!err)
        err = record(g);
    pthread_mutex_unlock(&d->mu);
    if (err) {
        graph_free(g);
        return err;
    }
    *out = g;
    return 0;
}

int vk_graph_update(struct devq_pl_graph *g, size_t i, const struct devq_pl_launch_entry *e)
{
    struct devq_pl_device *d = g->dev;
    if (i >= g->n)
        return vk_host->error(-EINVAL, "vulkan:%u: graph_update: launch %zu of a graph of %zu", d->ordinal, i,
                              g->n);
    pthread_mutex_lock(&d->mu);
    bool changed = false;
    int err = prepare(g, i, e, &changed);
    if (!err && changed)
        g->cur = -1; /* the next launch records a new command buffer */
    pthread_mutex_unlock(&d->mu);
    return err;
}

/* failed is left alone: a dispatch that faults inside the command
 * buffer is not attributed by the driver (the whole run fails). */
int vk_graph_launch(struct devq_pl_stream *s, struct devq_pl_graph *g, uint32_t *failed)
{
    (void)failed;
    struct devq_pl_device *d = s->dev;
    int err = 0;
    pthread_mutex_lock(&d->mu);
    if (g->dev != d)
        err = vk_host->error(-EINVAL, "vulkan:%u: graph_launch: the graph belongs to vulkan:%u", d->ordinal,
                             g->dev->ordinal);
    else if (g->cur < 0)
        err = record(g);
    if (!err && s->nguses == s->cap_guses) {
        uint32_t cap = s->cap_guses ? 2 * s->cap_guses : 4;
        struct vk_graph_use *n = realloc(s->guses, cap * sizeof *n);
        if (!n)
            err = vk_host->error(-ENOMEM, "vulkan:%u: out of memory launching a graph", d->ordinal);
        else {
            s->guses = n;
            s->cap_guses = cap;
        }
    }
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (!err && !(cb = vk_stream_cmd(s)))
        err = atomic_load(&d->lost) ? -ENODEV : -EIO;
    if (!err) {
        struct vk_graph_cb *c = &g->cbs[g->cur];
        vk_vkCmdExecuteCommands(cb, 1, &c->cb);
        c->uses++;
        g->pending++;
        s->guses[s->nguses++] = (struct vk_graph_use){ g, (uint32_t)g->cur };
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}

void vk_graph_uses_release(struct vk_graph_use *u, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct devq_pl_graph *g = u[i].g;
        g->cbs[u[i].cb].uses--;
        if (!--g->pending && g->destroyed)
            graph_free(g);
    }
    free(u);
}

void vk_graph_destroy(struct devq_pl_graph *g)
{
    if (!g)
        return;
    struct devq_pl_device *d = g->dev;
    pthread_mutex_lock(&d->mu);
    g->destroyed = true;
    bool now = !g->pending;
    if (now)
        graph_free(g);
    pthread_mutex_unlock(&d->mu);
}
