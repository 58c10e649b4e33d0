/* SPDX-License-Identifier: MIT */
/* cpu backend: kernels are C functions found with dlopen/dlsym or given
 * by pointer (kernel_load_fn), run once per work-group
 * (devq_cpu_kernel_fn), groups spread over the pool. */
#include "config.h"
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <devq/devq_cpu.h>
#include "cpu.h"
#include "launch.h"

struct devq_pl_kernel {
    struct cpu_link link;
    devq_pl_device *dev;
    devq_cpu_kernel_fn fn;
    void *dl;           /* the object that holds fn, kept open; NULL: none to hold */
    struct pl_ref refs; /* 1 until destroyed + each stream that launched it last */
    char entry[64];     /* for messages */
    bool declared;      /* it has a DEVQ_CPU_KERNEL_SIGNATURE */
    uint32_t nparams;
    struct devq_pl_param *params; /* from the signature, for kernel_iface */
};

/* Launch records up to this size (most: a few pointers and scalars) are
 * recycled per stream instead of going through malloc, whose free would
 * run on the worker thread; at most CPU_LAUNCH_CACHE are kept (1.1 MiB):
 * as many as can be in flight (a producer pauses CPU_BACKLOG_OPS ahead,
 * checked once a chunk), so a worker that drains the whole backlog while
 * its producer is descheduled caches every record instead of freeing
 * what the producer will malloc again a moment later.  Before, the cap
 * was 1024 while up to 16384 could be in flight, and under load a
 * quarter of a tiny launch's time went to malloc and free. */
#define CPU_LAUNCH_SMALL 256u
#define CPU_LAUNCH_CACHE (CPU_BACKLOG_OPS + 2u * CPU_CHUNK_OPS)

static struct cpu_launch *launch_alloc(devq_pl_stream *s, size_t bytes)
{
    if (bytes > CPU_LAUNCH_SMALL) {
        struct cpu_launch *cl = cpu_aligned_alloc(CPU_VALUE_ALIGN, bytes);
        if (cl)
            cl->small = 0;
        return cl;
    }
    if (!s->launch_private) {
        /* No walk to count what was taken: the stack's depth is kept in
         * its top record (a walk touched every record, each last written
         * on the worker's core, a second time long before its reuse). */
        s->launch_private = atomic_exchange_explicit(&s->launch_shared, NULL, memory_order_acquire);
    }
    struct cpu_launch *cl = s->launch_private;
    if (cl)
        s->launch_private = cl->next;
    else if ((cl = cpu_aligned_alloc(CPU_VALUE_ALIGN, CPU_LAUNCH_SMALL)))
        cl->small = 1;
    return cl;
}

/* On the worker thread, after the launch ran. */
static void launch_release(devq_pl_stream *s, struct cpu_launch *cl)
{
    if (!cl->small) {
        free(cl);
        return;
    }
    /* The bound is the depth of the shared stack, kept in its top record
     * (no counter for both sides to update).  head->depth may be read
     * just as the producer takes the stack and reuses head (hence
     * atomic; the producer never writes it): the exchange then fails and
     * retries.  Only this thread pushes, so a head seen again is current. */
    struct cpu_launch *head = atomic_load_explicit(&s->launch_shared, memory_order_acquire);
    do {
        uint32_t depth = head ? atomic_load_explicit(&head->depth, memory_order_relaxed) : 0;
        if (depth >= CPU_LAUNCH_CACHE) {
            free(cl);
            return;
        }
        cl->next = head;
        atomic_store_explicit(&cl->depth, depth + 1, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak_explicit(&s->launch_shared, &head, cl, memory_order_release,
                                                    memory_order_acquire));
}

/* On the producer side: a record that was never queued. */
static void launch_release_here(devq_pl_stream *s, struct cpu_launch *cl)
{
    if (cl->small) {
        cl->next = s->launch_private;
        s->launch_private = cl;
    } else
        free(cl);
}

void cpu_launch_cache_free(devq_pl_stream *s)
{
    if (s->launch_k) /* the worker stopped: nothing runs it now */
        cpu_kernel_unref(s->launch_k);
    s->launch_k = NULL;
    struct cpu_launch *lists[2] = { s->launch_private, atomic_exchange(&s->launch_shared, NULL) };
    for (int i = 0; i < 2; i++)
        for (struct cpu_launch *c = lists[i], *n; c; c = n) {
            n = c->next;
            free(c);
        }
    s->launch_private = NULL;
}

/* Any exported function can be found by name, and the search reaches
 * the C library and libdevq itself: "printf" would load, then crash or
 * scribble when launched with kernel arguments.  Those two never hold a
 * kernel, so a symbol defined in either is refused by name. */
static int not_a_kernel(void *sym, const char *entry, const char *shown)
{
    Dl_info at, libc, self;
    if (!dladdr(sym, &at) || !at.dli_fbase)
        return 0; /* cannot tell: trust the name */
    int in_libc = dladdr((void *)gnu_get_libc_version, &libc) && libc.dli_fbase == at.dli_fbase;
    /* Only when this code is in libdevq.so: tests link the cpu backend
     * into the program whose kernels it loads. */
    int in_devq = dladdr((void *)not_a_kernel, &self) && self.dli_fbase == at.dli_fbase && self.dli_fname &&
                  strstr(self.dli_fname, "libdevq.so");
    if (!in_libc && !in_devq)
        return 0;
    return cpu_host->error(-EINVAL,
                           "cpu: kernel_load: '%s' in '%s' resolves to %s's %s (%s), "
                           "not a kernel; export the kernel under its own name from the program "
                           "(link with -rdynamic) or the library given as the image",
                           entry, shown, in_libc ? "the C library" : "libdevq", entry,
                           at.dli_fname ? at.dli_fname : "?");
}

/* DEVQ_CPU_KERNEL_SIGNATURE(entry, ...) exports devq_cpu_signature_<entry>
 * from the object that defines the kernel: look for it there.  A
 * signature that is malformed or describes another function is refused
 * (checking launches against it would be worse than not checking). */
static int take_signature(devq_pl_kernel *k, const devq_cpu_signature *sig, void *sym, const char *name,
                          const char *entry, const char *shown);

static int read_signature(devq_pl_kernel *k, void *dl, void *sym, const char *entry, const char *shown)
{
    char name[160];
    if (snprintf(name, sizeof name, "devq_cpu_signature_%s", entry) >= (int)sizeof name)
        return 0; /* no symbol that long can have been declared */
    dlerror();
    const devq_cpu_signature *sig = dlsym(dl, name);
    if (dlerror() || !sig)
        return 0; /* undeclared: launched unchecked */
    return take_signature(k, sig, sym, name, entry, shown);
}

/* Checks sig (named `name` in messages) against the kernel function sym
 * and keeps its parameters for kernel_iface. */
static int take_signature(devq_pl_kernel *k, const devq_cpu_signature *sig, void *sym, const char *name,
                          const char *entry, const char *shown)
{
    void *fn;
    memcpy(&fn, &sig->fn, sizeof fn);
    if (sig->magic != DEVQ_CPU_SIGNATURE_MAGIC || sig->nparams > 4096 || (sig->nparams && !sig->params))
        return cpu_host->error(-EINVAL,
                               "cpu: kernel_load: %s in '%s' is not a signature this "
                               "backend reads (magic %#x, %u parameters); rebuild it with this "
                               "devq.h's DEVQ_CPU_KERNEL_SIGNATURE",
                               name, shown, sig->magic, sig->nparams);
    if (fn != sym)
        return cpu_host->error(-EINVAL,
                               "cpu: kernel_load: %s in '%s' describes another function "
                               "than the kernel '%s'; name the kernel itself in "
                               "DEVQ_CPU_KERNEL_SIGNATURE",
                               name, shown, entry);
    if (sig->nparams && !(k->params = calloc(sig->nparams, sizeof *k->params)))
        return cpu_host->error(-ENOMEM, "cpu: out of memory for kernel '%s''s signature", entry);
    for (uint32_t i = 0; i < sig->nparams; i++) {
        uint32_t size = sig->params[i];
        if (size > 4096)
            return cpu_host->error(-EINVAL,
                                   "cpu: kernel_load: %s in '%s': parameter %u is a "
                                   "%u-byte value; values are at most 4096 bytes",
                                   name, shown, i, size);
        k->params[i] = (struct devq_pl_param){
            .kind = size == DEVQ_CPU_BUFFER ? DEVQ_PL_PARAM_BUFFER : DEVQ_PL_PARAM_VALUE,
            .size = size,
            .offset = UINT32_MAX,
        };
    }
    k->nparams = sig->nparams;
    k->declared = true;
    return 0;
}

static void kernel_publish(devq_pl_device *dev, devq_pl_kernel *k, void *dl, devq_cpu_kernel_fn fn,
                           const char *entry, devq_pl_kernel **out);

int cpu_kernel_iface(devq_pl_kernel *k, struct devq_pl_kernel_iface *out)
{
    if (!k->declared)
        return -ENOTSUP;
    *out = (struct devq_pl_kernel_iface){
        .flags = DEVQ_PL_IFACE_POSITIONAL,
        .nparams = k->nparams,
        .params = k->params,
    };
    return 0;
}

int cpu_kernel_load(devq_pl_device *dev, const void *image, size_t size, const char *entry,
                    devq_pl_kernel **out)
{
    const char *path = image;
    /* image is a path; size is not needed, but when given it must cover
     * the terminating NUL (a binary image passed by mistake is refused
     * instead of read past its end). */
    if (path && size && !memchr(path, '\0', size))
        return cpu_host->error(-EINVAL,
                               "cpu: kernel_load: image is not a file path (no NUL "
                               "in its %zu bytes); the cpu backend loads shared objects by path",
                               size);
    const char *shown = path ? path : "(this process)";
    if (!entry || !*entry)
        return cpu_host->error(-EINVAL, "cpu: kernel_load: no entry symbol given for '%s'", shown);
    /* image is a path: "k.so" means the file in the current folder, not
     * a library searched along LD_LIBRARY_PATH as dlopen would take it. */
    char local[4096];
    if (path && !strchr(path, '/')) {
        if (snprintf(local, sizeof local, "./%s", path) >= (int)sizeof local)
            return cpu_host->error(-ENAMETOOLONG, "cpu: kernel_load: path '%.64s...' is too long", path);
        path = local;
    }
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *why = dlerror();
        return cpu_host->error(-ENOENT, "cpu: kernel_load: cannot open '%s': %s", shown,
                               why ? why : "unknown dlopen error");
    }
    dlerror();
    void *sym = dlsym(dl, entry);
    const char *why = dlerror();
    if (why || !sym) {
        int err = cpu_host->error(-ENOENT,
                                  "cpu: kernel_load: no symbol '%s' in '%s': %s "
                                  "(is it exported? build with -fvisibility=default, and "
                                  "link the program with -rdynamic for this process)",
                                  entry, shown, why ? why : "symbol is NULL");
        dlclose(dl);
        return err;
    }
    int err = not_a_kernel(sym, entry, shown);
    if (err) {
        dlclose(dl);
        return err;
    }
    devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        dlclose(dl);
        return cpu_host->error(-ENOMEM, "cpu: out of memory loading kernel '%s'", entry);
    }
    if ((err = read_signature(k, dl, sym, entry, shown))) {
        free(k->params);
        free(k);
        dlclose(dl);
        return err;
    }
    /* POSIX guarantees that a function pointer round-trips through the
     * void * dlsym returns. */
    devq_cpu_kernel_fn fn;
    memcpy(&fn, &sym, sizeof fn);
    kernel_publish(dev, k, dl, fn, entry, out);
    return 0;
}

/* The end of both loads: k (signature read) becomes the device's. */
static void kernel_publish(devq_pl_device *dev, devq_pl_kernel *k, void *dl, devq_cpu_kernel_fn fn,
                           const char *entry, devq_pl_kernel **out)
{
    k->dev = dev;
    k->dl = dl;
    k->fn = fn;
    pl_ref_init(&k->refs, 1);
    size_t len = strlen(entry);
    if (len >= sizeof k->entry)
        len = sizeof k->entry - 1;
    memcpy(k->entry, entry, len);
    cpu_list_add(dev, &dev->kernels, &k->link);
    *out = k;
}

/* The object that holds fn, opened once more so that it stays loaded
 * while the kernel lives (as devq_kernel_load's dlopen keeps its image):
 * NULL when fn is in no loaded object dladdr knows, or in the program
 * itself, which is never unloaded. */
static void *hold_object(void *fn)
{
    Dl_info at;
    if (!dladdr(fn, &at) || !at.dli_fname || !at.dli_fname[0])
        return NULL;
    return dlopen(at.dli_fname, RTLD_NOW | RTLD_NOLOAD);
}

int cpu_kernel_load_fn(devq_pl_device *dev, devq_cpu_kernel_fn fn, const struct devq_cpu_signature *sig,
                       const char *name, devq_pl_kernel **out)
{
    if (!fn || !name || !*name)
        return cpu_host->error(-EINVAL, "cpu: kernel_load_fn: NULL function or empty name");
    void *sym;
    memcpy(&sym, &fn, sizeof sym);
    devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return cpu_host->error(-ENOMEM, "cpu: out of memory loading kernel '%s'", name);
    int err;
    if (sig && (err = take_signature(k, sig, sym, "the signature", name, "(function pointer)"))) {
        free(k->params);
        free(k);
        return err;
    }
    kernel_publish(dev, k, hold_object(sym), fn, name, out);
    return 0;
}

void cpu_kernel_unref(devq_pl_kernel *k)
{
    if (!pl_ref_put(&k->refs))
        return;
    if (k->dl)
        dlclose(k->dl);
    free(k->params);
    free(k);
}

void cpu_kernel_destroy(devq_pl_kernel *k)
{
    if (!k)
        return;
    cpu_list_del(k->dev, &k->link);
    cpu_kernel_unref(k); /* queued launches keep it loaded */
}

/* The next node is read before a kernel is destroyed (which unlinks and
 * may free it). */
void cpu_kernel_free_all(devq_pl_device *dev)
{
    for (struct cpu_link *l = dev->kernels.next, *next; l != &dev->kernels; l = next) {
        next = l->next;
        cpu_kernel_destroy((devq_pl_kernel *)((char *)l - offsetof(devq_pl_kernel, link)));
    }
}

int cpu_launch_dims(struct cpu_launch *cl, const devq_launch *l, const char *entry)
{
    if (!l->global[0] || !l->global[1] || !l->global[2])
        return cpu_host->error(-EINVAL,
                               "cpu: launch of '%s': global size %u x %u x %u has "
                               "a zero dimension (use 1 for unused dimensions)",
                               entry, l->global[0], l->global[1], l->global[2]);
    for (int d = 0; d < 3; d++) {
        uint32_t g = l->global[d], lo = l->local[d] ? l->local[d] : 1;
        cl->global[d] = g;
        cl->local[d] = lo;
        cl->groups[d] = lo == 1 ? g /* no divide for the common 1 */
                                : (uint32_t)(((uint64_t)g + lo - 1) / lo);
    }
    /* Two 32-bit factors cannot overflow 64 bits; only the third can. */
    uint64_t total = (uint64_t)cl->groups[0] * cl->groups[1];
    if (__builtin_mul_overflow(total, cl->groups[2], &total))
        return cpu_host->error(-EINVAL,
                               "cpu: launch of '%s': %u x %u x %u groups is more "
                               "than 2^64; use larger local sizes",
                               entry, cl->groups[0], cl->groups[1], cl->groups[2]);
    cl->total = total;
    atomic_init(&cl->positive, 0);
    return 0;
}

int cpu_launch(devq_pl_stream *s, devq_pl_kernel *k, const devq_launch *l, const struct devq_pl_arg *args,
               size_t nargs)
{
    if (!k || !l || (nargs && !args))
        return cpu_host->error(-EINVAL, "cpu: launch: NULL kernel, launch or arguments");
    size_t bytes = sizeof(struct cpu_launch) + nargs * sizeof(void *);
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer)
            continue;
        if (args[i].size && !args[i].value)
            return cpu_host->error(-EINVAL,
                                   "cpu: launch of '%s': argument %zu has %zu value "
                                   "bytes at NULL",
                                   k->entry, i, args[i].size);
        bytes = (bytes + CPU_VALUE_ALIGN - 1) & ~(size_t)(CPU_VALUE_ALIGN - 1);
        bytes += args[i].size;
    }
    struct cpu_launch *cl = launch_alloc(s, (bytes + CPU_VALUE_ALIGN - 1) & ~(size_t)(CPU_VALUE_ALIGN - 1));
    if (!cl)
        return cpu_host->error(-ENOMEM, "cpu: out of memory queueing a launch of '%s'", k->entry);
    int err = cpu_launch_dims(cl, l, k->entry);
    if (err) {
        launch_release_here(s, cl);
        return err;
    }
    /* Value bytes are only valid during this call: keep a copy. */
    size_t off = sizeof(struct cpu_launch) + nargs * sizeof(void *);
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer) {
            cl->args[i] = args[i].device_ptr;
            continue;
        }
        off = (off + CPU_VALUE_ALIGN - 1) & ~(size_t)(CPU_VALUE_ALIGN - 1);
        cl->args[i] = (char *)cl + off;
        if (args[i].size)
            memcpy(cl->args[i], args[i].value, args[i].size);
        off += args[i].size;
    }
    cl->nargs = nargs;
    cl->k = k;
    struct cpu_op *op = cpu_stream_reserve(s);
    if (!op) {
        launch_release_here(s, cl);
        return cpu_host->error(-ENOMEM, "cpu: out of memory queueing a launch of '%s'", k->entry);
    }
    /* The stream holds one reference to the kernel it launched last, not
     * one per queued launch: a locked add here and a locked subtract on
     * the worker, per launch, on a line both cores write.  Switching
     * kernels hands the old one to the worker, which drops it when it
     * reaches this launch (every earlier launch of it has run by then). */
    cl->drop = NULL;
    if (k != s->launch_k) {
        pl_ref_get(&k->refs);
        cl->drop = s->launch_k;
        s->launch_k = k;
    }
    op->kind = CPU_OP_LAUNCH;
    op->u.launch.l = cl;
    cpu_stream_publish(s);
    return 0;
}

static int run_group(struct cpu_launch *cl, uint64_t index)
{
    devq_cpu_group g;
    if (index == 0) { /* every launch has it; three divides fewer */
        g.group_id[0] = g.group_id[1] = g.group_id[2] = 0;
    } else {
        g.group_id[0] = (uint32_t)(index % cl->groups[0]);
        g.group_id[1] = (uint32_t)(index / cl->groups[0] % cl->groups[1]);
        g.group_id[2] = (uint32_t)(index / ((uint64_t)cl->groups[0] * cl->groups[1]));
    }
    for (int d = 0; d < 3; d++) {
        g.local_size[d] = cl->local[d];
        g.global_size[d] = cl->global[d];
        g.num_groups[d] = cl->groups[d];
    }
    int r = cl->k->fn(cl->args, &g);
    return r ? cpu_group_failed(cl, &g, r) : 0;
}

int cpu_group_failed(struct cpu_launch *cl, const devq_cpu_group *g, int r)
{
    if (cpu_host->log_level() >= DEVQ_LOG_BASIC)
        cpu_host->log(DEVQ_LOG_BASIC, "cpu: kernel '%s' failed in group (%u,%u,%u): %d", cl->k->entry,
                      g->group_id[0], g->group_id[1], g->group_id[2], r);
    if (r < 0)
        return r;
    /* A positive return is a failure too; keep it for the message,
     * which would otherwise show only the -EIO it becomes. */
    int none = 0;
    atomic_compare_exchange_strong(&cl->positive, &none, r);
    return -EIO;
}

static int cpu_launch_group(struct cpu_job *job, uint64_t index)
{
    return run_group(job->ctx, index);
}

/* Many groups: spread over the pool (out of line: the job is large). */
static __attribute__((noinline)) int run_pool(devq_pl_stream *s, struct cpu_launch *cl)
{
    struct cpu_job job = {
        .priority = s->priority,
        .total = cl->total,
        .run = cpu_launch_group,
        .ctx = cl,
    };
    return cpu_pool_run(&job);
}

/* A launch's failure becomes the stream's latched error (the next host
 * callback reports it); `where` says which launch of a list, or "". */
static void latch_failure(devq_pl_stream *s, struct cpu_launch *cl, int err, const char *where)
{
    int positive = atomic_load(&cl->positive);
    s->error = err;
    if (err == -EIO && positive)
        snprintf(s->error_msg, sizeof s->error_msg,
                 "cpu: kernel '%s' returned %d, not 0 or "
                 "a negative errno; reported as -EIO%s",
                 cl->k->entry, positive, where);
    else
        snprintf(s->error_msg, sizeof s->error_msg, "cpu: kernel '%s' returned %d (%s)%s", cl->k->entry, err,
                 strerror(-err), where);
}

static int run_launch(devq_pl_stream *s, struct cpu_launch *cl)
{
    /* One group runs right here: the pool's job bookkeeping (two
     * locked adds) would only hand index 0 back to this thread. */
    return cl->total == 1 ? run_group(cl, 0) : run_pool(s, cl);
}

int cpu_launch_exec(devq_pl_stream *s, struct cpu_launch *cl)
{
    return run_launch(s, cl);
}

void cpu_launch_latch(devq_pl_stream *s, struct cpu_launch *cl, int err, const char *where)
{
    latch_failure(s, cl, err, where);
}

void cpu_kernel_ref(devq_pl_kernel *k)
{
    pl_ref_get(&k->refs);
}

const char *cpu_kernel_entry(const devq_pl_kernel *k)
{
    return k->entry;
}

devq_cpu_kernel_fn cpu_kernel_fn(const devq_pl_kernel *k)
{
    return k->fn;
}

void cpu_launch_run(devq_pl_stream *s, struct cpu_op *op)
{
    struct cpu_launch *cl = op->u.launch.l;
    if (!s->error) { /* else skipped: an earlier op in this batch failed */
        int err = run_launch(s, cl);
        if (err)
            latch_failure(s, cl, err, "");
    }
    if (cl->drop)
        cpu_kernel_unref(cl->drop);
    launch_release(s, cl);
}

#define CPU_LIST_PAUSE_NS 100000000ull /* as the ring's pause (stream.c) */

/* launch_list: lib keeps the entries, their arguments and value bytes
 * until a later host callback ran, and holds the kernels, so the op
 * carries pointers only and nothing is allocated or copied per launch. */
int cpu_launch_list(devq_pl_stream *s, const struct devq_pl_launch_entry *e, size_t n,
                    const struct devq_pl_launch_entry **failed)
{
    /* The entries are lib's, built from launches it checked (their
     * kernels, argument counts and geometries): only the list itself is
     * checked here, not each launch again. */
    if (!n)
        return 0;
    if (!e)
        return cpu_host->error(-EINVAL, "cpu: launch_list: %zu entries at NULL", n);
    /* The ring bounds what a producer runs ahead in ops (stream.c); a
     * list is n launches in one op, and lib keeps a batch per list in
     * flight, so it counts its launches: a producer more than
     * CPU_BACKLOG_OPS launches ahead (as lists of this size) waits for
     * the worker, politely and only for a while, as the ring does. */
    uint64_t ahead = CPU_BACKLOG_OPS / n < 4 ? 4 : CPU_BACKLOG_OPS / n, at = s->enqueued_local;
    if (at - cpu_stream_completed(s) > ahead)
        cpu_stream_wait_seq(s, at - ahead / 2, cpu_deadline(CPU_LIST_PAUSE_NS));
    struct cpu_op *op = cpu_stream_queue(s, CPU_OP_LAUNCH_LIST, "a launch list");
    if (!op)
        return -ENOMEM;
    op->u.list.e = e;
    op->u.list.n = n;
    op->u.list.failed = failed;
    cpu_stream_publish(s);
    return 0;
}

/* The launches of a list in order, each as cpu_launch_run would run it,
 * on a launch record built on the stack; the first failure skips the
 * rest (like the ops after a failed launch). */
void cpu_launch_list_run(devq_pl_stream *s, struct cpu_op *op)
{
    _Alignas(CPU_VALUE_ALIGN) unsigned char
        mem[sizeof(struct cpu_launch) + DEVQ_PL_LIST_ARGS_MAX * sizeof(void *)];
    struct cpu_launch *cl = (struct cpu_launch *)mem;
    const struct devq_pl_launch_entry *e = op->u.list.e;
    for (size_t i = 0; i < op->u.list.n && !s->error; i++) {
        cl->k = e[i].k;
        /* A graph's launches often share a geometry: its groups then
         * stand (run_group changes only `positive`). */
        int err = i && !memcmp(&e[i].l, &e[i - 1].l, sizeof e[i].l)
                      ? 0
                      : cpu_launch_dims(cl, &e[i].l, cl->k->entry);
        if (err) { /* lib never sends one; the message is the host's */
            s->error = err;
            snprintf(s->error_msg, sizeof s->error_msg, "cpu: launch %zu of a list of %zu: bad geometry", i,
                     op->u.list.n);
            if (op->u.list.failed)
                *op->u.list.failed = &e[i];
            break;
        }
        for (uint32_t a = 0; a < e[i].nargs; a++)
            cl->args[a] =
                e[i].args[a].is_buffer ? e[i].args[a].device_ptr : (void *)(uintptr_t)e[i].args[a].value;
        cl->nargs = e[i].nargs;
        if ((err = run_launch(s, cl)) != 0) {
            char where[64];
            snprintf(where, sizeof where, " (launch %zu of a list of %zu)", i, op->u.list.n);
            latch_failure(s, cl, err, where);
            if (op->u.list.failed) /* before the callback that reports it: this thread runs that too */
                *op->u.list.failed = &e[i];
        }
    }
}
