/* SPDX-License-Identifier: MIT */
/* clang-format off */ /* hand-aligned tables, read as documentation */
/* Channels over NCCL (cuda) or RCCL (hip): the plugin's chan_* entries
 * (devq_plugin.h), written once over nccl_abi.h and compiled into both
 * plugins.  Mechanism only: lib/channel decides grouping, order,
 * timeouts and what a failure does; this file loads the library, maps
 * devq's ops, dtypes and reductions to NCCL's, and turns NCCL's results
 * and texts into errnos and messages.
 *
 * The library is dlopen'd at the first chan_id/chan_create, never at
 * plugin load or device open: device_info only looks for the file
 * (gpu_nccl_available), so a machine without NCCL pays nothing and the
 * DEVQ_CAP_CHANNELS bit says whether channels can work. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "driver.h"
#include "nccl_abi.h"

/* Every entry point: X(name, required). */
#define NCCL_ENTRIES(X) \
    X(GetVersion, 1) X(GetUniqueId, 1) X(CommInitRank, 1) X(CommDestroy, 1) X(CommAbort, 1) \
    X(CommGetAsyncError, 1) X(CommCount, 1) X(CommUserRank, 1) X(GetErrorString, 1) \
    X(AllReduce, 1) X(AllGather, 1) X(ReduceScatter, 1) X(Broadcast, 1) X(Send, 1) X(Recv, 1) \
    X(GroupStart, 1) X(GroupEnd, 1) X(CommSplit, 0) X(GetLastError, 0)

static struct {
#define NCCL_FIELD(name, req) nccl##name##_fn name;
    NCCL_ENTRIES(NCCL_FIELD)
#undef NCCL_FIELD
    int version;
} nc;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_err;
static char load_msg[512];

struct devq_pl_chan {
    devq_pl_device *dev;
    ncclComm_t comm;
    int rank, size;
    /* Held across each call on comm: an abort (the watchdog thread)
     * must not free it under a call from the issuing or callback thread. */
    pthread_mutex_t mu;
    bool aborted;
};

/* The file the library is loaded from: the override, else the soname. */
static const char *lib_name(void)
{
    const char *env = gpu_host->getenv(gpu_drv.nccl.env);
    return env && *env ? env : gpu_drv.nccl.soname;
}

static bool file_in(const char *dir, size_t len, const char *name)
{
    char path[4096];
    size_t n = strlen(name);
    if (!len || len + n + 2 > sizeof path)
        return false;
    memcpy(path, dir, len);
    path[len] = '/';
    memcpy(path + len + 1, name, n + 1);
    return access(path, R_OK) == 0;
}

/* The folders of an ld.so.conf file, with its includes (one level of
 * glob per include, as ldconfig reads them). */
static bool in_conf(const char *conf, const char *name, int depth)
{
    FILE *f = fopen(conf, "re");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        char *p = line + strspn(line, " \t");
        p[strcspn(p, "#\r\n")] = '\0';
        size_t len = strlen(p);
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            p[--len] = '\0';
        if (!len)
            continue;
        if (!strncmp(p, "include", 7) && (p[7] == ' ' || p[7] == '\t')) {
            char *pat = p + 8 + strspn(p + 8, " \t");
            glob_t g;
            if (depth < 4 && glob(pat, 0, NULL, &g) == 0) {
                for (size_t i = 0; i < g.gl_pathc && !found; i++)
                    found = in_conf(g.gl_pathv[i], name, depth + 1);
                globfree(&g);
            }
            continue;
        }
        found = file_in(p, len, name);
    }
    fclose(f);
    return found;
}

bool gpu_nccl_available(void)
{
    static const char *const dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                        "/usr/lib64", "/usr/lib", "/usr/local/lib", "/usr/local/cuda/lib64",
                                        "/opt/rocm/lib" };
    const char *name = lib_name();
    if (strchr(name, '/'))
        return access(name, R_OK) == 0;
    /* The loader's search, without loading anything (a dlopen would
     * run the library's constructors at every device open):
     * LD_LIBRARY_PATH, the folders of /etc/ld.so.conf, the usual ones.
     * A library only the program's RPATH finds is not seen here:
     * DEVQ_NCCL_LIBRARY / DEVQ_RCCL_LIBRARY name it then. */
    const char *lp = gpu_host->getenv("LD_LIBRARY_PATH");
    for (const char *p = lp; p && *p;) {
        const char *e = strchr(p, ':');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (file_in(p, len, name))
            return true;
        p = e ? e + 1 : p + len;
    }
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
        if (file_in(dirs[i], strlen(dirs[i]), name))
            return true;
    return in_conf("/etc/ld.so.conf", name, 0);
}

static void load(void)
{
    const char *name = lib_name();
    dlerror();
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        const char *e = dlerror();
        load_err = -ENOTSUP;
        snprintf(load_msg, sizeof load_msg, "%s: channels need %s: cannot load %.200s (%.160s); %s, or set %s "
                 "to the library's path", gpu_backend, gpu_drv.nccl.name, name, e ? e : "dlopen failed",
                 gpu_drv.nccl.install, gpu_drv.nccl.env);
        return;
    }
    const char *missing = NULL;
#define NCCL_SYM(n, req)                                                   \
    {                                                                      \
        void *s = dlsym(dl, "nccl" #n);                                    \
        memcpy(&nc.n, &s, sizeof s);                                       \
        if (!s && req && !missing)                                         \
            missing = "nccl" #n;                                           \
    }
    NCCL_ENTRIES(NCCL_SYM)
#undef NCCL_SYM
    if (missing) {
        load_err = -ENOTSUP;
        snprintf(load_msg, sizeof load_msg, "%s: %.200s has no %s: not a %s 2 library (set %s to one)", gpu_backend,
                 name, missing, gpu_drv.nccl.name, gpu_drv.nccl.env);
        dlclose(dl);
        return;
    }
    if (nc.GetVersion(&nc.version) != ncclSuccess)
        nc.version = 0;
    /* Kept loaded until exit: communicators may outlive any device. */
    gpu_host->log(DEVQ_LOG_FULL, "%s: loaded %s %d from %s", gpu_backend, gpu_drv.nccl.name, nc.version, name);
}

static int loaded(void)
{
    pthread_once(&load_once, load);
    return load_err ? gpu_host->error(load_err, "%s", load_msg) : 0;
}

static int nccl_errno(ncclResult_t r)
{
    switch (r) {
    case ncclInvalidArgument: case ncclInvalidUsage: return -EINVAL;
    case ncclInProgress: return -EAGAIN;
    default: return -EIO;
    }
}

/* The result's name: shorter than NCCL's text, which messages that
 * carry a root cause through several layers cannot afford. */
static const char *res_name(ncclResult_t r)
{
    static const char *const names[] = { "ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
                                         "ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage",
                                         "ncclRemoteError", "ncclInProgress" };
    return (unsigned)r < sizeof names / sizeof names[0] ? names[r] : "unknown ncclResult_t";
}

static const char *res_text(ncclResult_t r)
{
    const char *t = nc.GetErrorString ? nc.GetErrorString(r) : NULL;
    return t ? t : "unknown result";
}

/* A failed call: its result, NCCL's text, and the last error's detail. */
static int fail(struct devq_pl_chan *c, const char *call, ncclResult_t r)
{
    const char *last = nc.GetLastError ? nc.GetLastError(c ? c->comm : NULL) : NULL;
    return gpu_host->error(nccl_errno(r), "%s: %s %s failed: %s (%d)%s%.200s", gpu_backend, gpu_drv.nccl.name,
                           call, res_text(r), (int)r, last && *last ? ": " : "", last ? last : "");
}

int gpu_nccl_id(devq_pl_device *dev, void *id, size_t *size)
{
    (void)dev;
    int e = loaded();
    if (e)
        return e;
    if (*size < sizeof(ncclUniqueId))
        return gpu_host->error(-EINVAL, "devq_channel_id: %s's id takes %zu bytes, capacity is %zu",
                               gpu_drv.nccl.name, sizeof(ncclUniqueId), *size);
    ncclUniqueId u;
    ncclResult_t r = nc.GetUniqueId(&u);
    if (r != ncclSuccess)
        return fail(NULL, "ncclGetUniqueId", r);
    memcpy(id, &u, sizeof u);
    *size = sizeof u;
    return 0;
}

static int wrap(devq_pl_device *dev, ncclComm_t comm, devq_pl_chan **out)
{
    struct devq_pl_chan *c = calloc(1, sizeof *c);
    if (!c) {
        nc.CommDestroy(comm);
        return gpu_host->error(-ENOMEM, "%s: out of memory for a channel", gpu_backend);
    }
    c->dev = dev;
    c->comm = comm;
    pthread_mutex_init(&c->mu, NULL);
    if (nc.CommUserRank(comm, &c->rank) != ncclSuccess || nc.CommCount(comm, &c->size) != ncclSuccess) {
        c->rank = c->size = -1;
        int e = fail(c, "ncclCommUserRank/ncclCommCount", ncclInternalError);
        nc.CommDestroy(comm);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return e;
    }
    *out = c;
    return 0;
}

int gpu_nccl_create(devq_pl_device *dev, int rank, int size, const void *id, size_t id_size, devq_pl_chan **out)
{
    int e = loaded();
    if (e)
        return e;
    if (rank < 0 || !id)
        return gpu_host->error(-ENOTSUP, "%s: %s channels have no launcher's world: give desc with this rank, "
                               "the size and rank 0's devq_channel_id bytes", gpu_backend, gpu_drv.nccl.name);
    if (id_size != sizeof(ncclUniqueId))
        return gpu_host->error(-EINVAL, "%s: desc id_size %zu: a %s id has %zu bytes (pass what devq_channel_id "
                               "gave)", gpu_backend, id_size, gpu_drv.nccl.name, sizeof(ncclUniqueId));
    if ((e = gpu_enter(dev)))
        return e;
    ncclUniqueId u;
    memcpy(&u, id, sizeof u);
    ncclComm_t comm = NULL;
    ncclResult_t r = nc.CommInitRank(&comm, size, u, rank);
    if (r != ncclSuccess)
        return fail(NULL, "ncclCommInitRank", r);
    return wrap(dev, comm, out);
}

int gpu_nccl_split(devq_pl_chan *c, int color, int key, devq_pl_chan **out)
{
    if (!nc.CommSplit)
        return gpu_host->error(-ENOTSUP, "%s: this %s (version %d) has no ncclCommSplit (NCCL >= 2.18); create "
                               "a channel from a new id instead", gpu_backend, gpu_drv.nccl.name, nc.version);
    pthread_mutex_lock(&c->mu);
    int e = c->aborted ? gpu_host->error(-EIO, "%s: %s communicator was aborted", gpu_backend, gpu_drv.nccl.name)
                       : gpu_enter(c->dev);
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclSuccess;
    if (!e && (r = nc.CommSplit(c->comm, color, key, &comm, NULL)) != ncclSuccess)
        e = fail(c, "ncclCommSplit", r);
    pthread_mutex_unlock(&c->mu);
    if (e)
        return e;
    if (!comm)
        return gpu_host->error(-EIO, "%s: ncclCommSplit gave no communicator for color %d", gpu_backend, color);
    return wrap(c->dev, comm, out);
}

int gpu_nccl_rank(const devq_pl_chan *c)
{
    return c->rank;
}

int gpu_nccl_size(const devq_pl_chan *c)
{
    return c->size;
}

void gpu_nccl_destroy(devq_pl_chan *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    if (!c->aborted) {
        /* ncclCommDestroy waits for the ops issued; they finish or fail
         * on their own (lib aborts first when they hang). */
        gpu_enter(c->dev);
        nc.CommDestroy(c->comm);
    }
    pthread_mutex_unlock(&c->mu);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static int dtype(enum devq_dtype t, ncclDataType_t *out)
{
    static const ncclDataType_t map[] = { ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64, ncclUint64,
                                          ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64 };
    if ((unsigned)t >= sizeof map / sizeof map[0])
        return gpu_host->error(-EINVAL, "%s: dtype %d has no %s type", gpu_backend, (int)t, gpu_drv.nccl.name);
    *out = map[t];
    return 0;
}

static int redop(enum devq_reduce o, ncclRedOp_t *out)
{
    static const ncclRedOp_t map[] = { ncclSum, ncclProd, ncclMin, ncclMax, ncclAvg };
    if ((unsigned)o >= sizeof map / sizeof map[0])
        return gpu_host->error(-EINVAL, "%s: reduction %d has no %s op", gpu_backend, (int)o, gpu_drv.nccl.name);
    /* ncclAvg came with NCCL 2.10 (version codes before 2.9 are < 10000). */
    if (o == DEVQ_AVG && nc.version < DEVQ_NCCL_VERSION(2, 10, 0))
        return gpu_host->error(-ENOTSUP, "%s: DEVQ_AVG needs %s >= 2.10 (this one is %d); reduce with DEVQ_SUM "
                               "and divide", gpu_backend, gpu_drv.nccl.name, nc.version);
    *out = map[o];
    return 0;
}

static int one(struct devq_pl_chan *c, const struct devq_eng_op *op, void *stream)
{
    ncclDataType_t t = ncclInt8;
    ncclRedOp_t ro = ncclSum;
    int e = dtype(op->type, &t);
    if (e)
        return e;
    if ((op->kind == DEVQ_ENG_ALL_REDUCE || op->kind == DEVQ_ENG_REDUCE_SCATTER) && (e = redop(op->op, &ro)))
        return e;
    ncclResult_t r;
    const char *call;
/* Call nc.fn, naming it for fail()'s message. */
#define NCCL_CALL(fn, ...) (call = "nccl" #fn, nc.fn(__VA_ARGS__))
    switch (op->kind) {
    case DEVQ_ENG_ALL_REDUCE:
        r = NCCL_CALL(AllReduce, op->src, op->dst, op->count, t, ro, c->comm, stream);
        break;
    case DEVQ_ENG_ALL_GATHER:
        r = NCCL_CALL(AllGather, op->src, op->dst, op->count, t, c->comm, stream);
        break;
    case DEVQ_ENG_REDUCE_SCATTER:
        r = NCCL_CALL(ReduceScatter, op->src, op->dst, op->count, t, ro, c->comm, stream);
        break;
    case DEVQ_ENG_BROADCAST:
        r = NCCL_CALL(Broadcast, op->src, op->dst, op->count, t, op->peer, c->comm, stream);
        break;
    case DEVQ_ENG_SEND:
        r = NCCL_CALL(Send, op->src, op->count, t, op->peer, c->comm, stream);
        break;
    case DEVQ_ENG_RECV:
        r = NCCL_CALL(Recv, op->dst, op->count, t, op->peer, c->comm, stream);
        break;
    default:
        return gpu_host->error(-EINVAL, "%s: channel op kind %d unknown", gpu_backend, (int)op->kind);
    }
#undef NCCL_CALL
    return r == ncclSuccess ? 0 : fail(c, call, r);
}

int gpu_nccl_enqueue(devq_pl_chan *c, devq_pl_stream *s, const struct devq_eng_op *ops, size_t n)
{
    pthread_mutex_lock(&c->mu);
    int e = c->aborted ? gpu_host->error(-EIO, "%s: %s communicator was aborted", gpu_backend, gpu_drv.nccl.name)
                       : gpu_enter(c->dev);
    if (!e) {
        void *stream = s->stream;
        ncclResult_t r = nc.GroupStart();
        if (r != ncclSuccess) {
            e = fail(c, "ncclGroupStart", r);
        } else {
            for (size_t i = 0; i < n && !e; i++)
                e = one(c, &ops[i], stream);
            /* Always closed, or this thread's next group nests in it. */
            r = nc.GroupEnd();
            if (!e && r != ncclSuccess)
                e = fail(c, "ncclGroupEnd", r);
        }
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

int gpu_nccl_error(devq_pl_chan *c)
{
    pthread_mutex_lock(&c->mu);
    int e = 0;
    if (c->aborted) {
        e = gpu_host->error(-EIO, "%s: %s communicator was aborted", gpu_backend, gpu_drv.nccl.name);
    } else {
        ncclResult_t a = ncclSuccess;
        ncclResult_t r = nc.CommGetAsyncError(c->comm, &a);
        if (r != ncclSuccess)
            e = fail(c, "ncclCommGetAsyncError", r);
        else if (a != ncclSuccess && a != ncclInProgress) {
            const char *last = nc.GetLastError ? nc.GetLastError(c->comm) : NULL;
            e = gpu_host->error(nccl_errno(a), "%s asynchronous error %s%s%.240s", gpu_drv.nccl.name,
                                res_name(a), last && *last ? ": " : "", last ? last : "");
        }
    }
    pthread_mutex_unlock(&c->mu);
    return e;
}

void gpu_nccl_abort(devq_pl_chan *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->aborted) {
        c->aborted = true;
        /* Frees the communicator: chan_destroy only frees c after this. */
        ncclResult_t r = nc.CommAbort(c->comm);
        gpu_host->log(DEVQ_LOG_BASIC, "%s: %s communicator (rank %d of %d) aborted%s", gpu_backend,
                      gpu_drv.nccl.name, c->rank, c->size, r == ncclSuccess ? "" : " (ncclCommAbort failed)");
    }
    pthread_mutex_unlock(&c->mu);
}
