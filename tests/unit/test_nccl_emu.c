/* SPDX-License-Identifier: MIT */
/* The emulated NCCL (tests/emu/libnccl-emu.so over libcuda-emu.so) and
 * RCCL (librccl-emu.so over libamdhip64-emu.so), called the way a plugin
 * calls the real ones: dlopen, dlsym, the types of nccl_abi.h.  Ranks
 * are threads (one emulated device each) or forked processes.
 *
 * DEVQ_TEST_NCCL_FACE=nccl|rccl runs one face (default: every face built). */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "nccl_abi.h"
#include "emu_nccl.h"
#include "../helpers/check_main.h"

#ifndef TEST_BUILD_DIR
#error "TEST_BUILD_DIR must name the top build directory"
#endif
#define LIBS TEST_BUILD_DIR "/tests/emu/.libs/"

/* ---- the driver underneath: what differs between cuda and hip ---- */

typedef void (*callback_fn)(void *stream, int status, void *arg);

struct face {
    const char *name, *driver, *nccl;
    void *drv, *lib;
    int (*init)(unsigned);
    /* cuda */
    int (*cu_device_get)(int *, int);
    int (*cu_retain)(void **, int);
    int (*cu_set_current)(void *);
    int (*cu_alloc)(unsigned long long *, size_t);
    int (*cu_free)(unsigned long long);
    /* hip */
    int (*hip_set_device)(int);
    int (*hip_alloc)(void **, size_t);
    int (*hip_free)(void *);
    /* both */
    int (*stream_create)(void **, unsigned, int);
    int (*stream_destroy)(void *);
    int (*stream_sync)(void *);
    int (*add_callback)(void *, callback_fn, void *, unsigned);
    int (*cu_memset)(unsigned long long, unsigned char, size_t, void *);
    int (*hip_memset)(void *, unsigned char, size_t, void *);
    const char *memset_fail; /* DEVQ_EMU_FAIL making the memset a sticky error */
};

static struct face faces[] = {
    { .name = "nccl",
      .driver = LIBS "libcuda-emu.so",
      .nccl = LIBS "libnccl-emu.so",
      .memset_fail = "cuMemsetD8Async:1:CUDA_ERROR_ILLEGAL_ADDRESS" },
#ifdef TEST_RCCL
    { .name = "rccl",
      .driver = LIBS "libamdhip64-emu.so",
      .nccl = LIBS "librccl-emu.so",
      .memset_fail = "hipMemsetD8Async:1:hipErrorIllegalAddress" },
#endif
};
static struct face *F; /* the face of this run (set before the runner forks) */

static void *dsym(void *h, const char *name)
{
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "%s: %s missing\n", F->name, name);
        abort();
    }
    return p;
}

/* NCCL entry points */
static ncclGetVersion_fn GetVersion;
static ncclGetUniqueId_fn GetUniqueId;
static ncclCommInitRank_fn CommInitRank;
static ncclCommSplit_fn CommSplit;
static ncclCommDestroy_fn CommDestroy;
static ncclCommAbort_fn CommAbort;
static ncclCommGetAsyncError_fn CommGetAsyncError;
static ncclCommCount_fn CommCount;
static ncclCommUserRank_fn CommUserRank;
static ncclGetErrorString_fn GetErrorString;
static ncclGetLastError_fn GetLastError;
static ncclAllReduce_fn AllReduce;
static ncclAllGather_fn AllGather;
static ncclReduceScatter_fn ReduceScatter;
static ncclBroadcast_fn Broadcast;
static ncclSend_fn Send;
static ncclRecv_fn Recv;
static ncclGroupStart_fn GroupStart;
static ncclGroupEnd_fn GroupEnd;

/* Load the driver and the library (after a fork, in each rank process). */
static void load(void)
{
    setenv("DEVQ_EMU_NCCL_DRIVER", F->driver, 1);
    F->drv = dlopen(F->driver, RTLD_NOW | RTLD_LOCAL);
    F->lib = dlopen(F->nccl, RTLD_NOW | RTLD_LOCAL);
    if (!F->drv || !F->lib) {
        fprintf(stderr, "%s\n", dlerror());
        abort();
    }
    void *d = F->drv, *l = F->lib;
    if (strcmp(F->name, "nccl") == 0) {
        F->init = dsym(d, "cuInit");
        F->cu_device_get = dsym(d, "cuDeviceGet");
        F->cu_retain = dsym(d, "cuDevicePrimaryCtxRetain");
        F->cu_set_current = dsym(d, "cuCtxSetCurrent");
        F->cu_alloc = dsym(d, "cuMemAlloc_v2");
        F->cu_free = dsym(d, "cuMemFree_v2");
        F->stream_create = dsym(d, "cuStreamCreateWithPriority");
        F->stream_destroy = dsym(d, "cuStreamDestroy_v2");
        F->stream_sync = dsym(d, "cuStreamSynchronize");
        F->add_callback = dsym(d, "cuStreamAddCallback");
        F->cu_memset = dsym(d, "cuMemsetD8Async");
    } else {
        F->init = dsym(d, "hipInit");
        F->hip_set_device = dsym(d, "hipSetDevice");
        F->hip_alloc = dsym(d, "hipMalloc");
        F->hip_free = dsym(d, "hipFree");
        F->stream_create = dsym(d, "hipStreamCreateWithPriority");
        F->stream_destroy = dsym(d, "hipStreamDestroy");
        F->stream_sync = dsym(d, "hipStreamSynchronize");
        F->add_callback = dsym(d, "hipStreamAddCallback");
        F->hip_memset = dsym(d, "hipMemsetD8Async");
    }
    if (F->init(0) != 0)
        abort();
#define L(v, n) v = (__typeof__(v))dsym(l, n)
    L(GetVersion, "ncclGetVersion");
    L(GetUniqueId, "ncclGetUniqueId");
    L(CommInitRank, "ncclCommInitRank");
    L(CommSplit, "ncclCommSplit");
    L(CommDestroy, "ncclCommDestroy");
    L(CommAbort, "ncclCommAbort");
    L(CommGetAsyncError, "ncclCommGetAsyncError");
    L(CommCount, "ncclCommCount");
    L(CommUserRank, "ncclCommUserRank");
    L(GetErrorString, "ncclGetErrorString");
    L(GetLastError, "ncclGetLastError");
    L(AllReduce, "ncclAllReduce");
    L(AllGather, "ncclAllGather");
    L(ReduceScatter, "ncclReduceScatter");
    L(Broadcast, "ncclBroadcast");
    L(Send, "ncclSend");
    L(Recv, "ncclRecv");
    L(GroupStart, "ncclGroupStart");
    L(GroupEnd, "ncclGroupEnd");
#undef L
}

static int use_device(int dev)
{
    if (F->hip_set_device)
        return F->hip_set_device(dev);
    int d;
    void *ctx;
    if (F->cu_device_get(&d, dev) || F->cu_retain(&ctx, d))
        return -1;
    return F->cu_set_current(ctx);
}

static void *dalloc(size_t n)
{
    if (n == 0)
        n = 1;
    if (F->hip_alloc) {
        void *p = NULL;
        return F->hip_alloc(&p, n) ? NULL : p;
    }
    unsigned long long p = 0;
    return F->cu_alloc(&p, n) ? NULL : (void *)(uintptr_t)p;
}

static void dfree(void *p)
{
    if (F->hip_free)
        F->hip_free(p);
    else
        F->cu_free((unsigned long long)(uintptr_t)p);
}

static int dmemset(void *p, unsigned char v, size_t n, void *stream)
{
    if (F->hip_memset)
        return F->hip_memset(p, v, n, stream);
    return F->cu_memset((unsigned long long)(uintptr_t)p, v, n, stream);
}

/* ---- ranks ---- */

struct rank {
    int rank, nranks;
    ncclUniqueId id;
    void *stream;
    ncclComm_t comm;
    int (*scenario)(struct rank *);
    char err[512];
    pthread_barrier_t *bar; /* thread mode only */
};

#define REQUIRE(x, cond, ...)                                                                               \
    do {                                                                                                    \
        if (!(cond)) {                                                                                      \
            int n_ = snprintf((x)->err, sizeof(x)->err, "rank %d: %s:%d: ", (x)->rank, __FILE__, __LINE__); \
            snprintf((x)->err + n_, sizeof(x)->err - (size_t)n_, __VA_ARGS__);                              \
            return -1;                                                                                      \
        }                                                                                                   \
    } while (0)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int rank_run(struct rank *x)
{
    REQUIRE(x, use_device(x->nranks > 1 && !x->bar ? 0 : x->rank) == 0, "device %d", x->rank);
    REQUIRE(x, F->stream_create(&x->stream, 0, 0) == 0, "stream");
    ncclResult_t r = CommInitRank(&x->comm, x->nranks, x->id, x->rank);
    REQUIRE(x, r == ncclSuccess, "ncclCommInitRank: %s: %s", GetErrorString(r), GetLastError(NULL));
    int n = 0, me = -1;
    REQUIRE(x, CommCount(x->comm, &n) == ncclSuccess && n == x->nranks, "count %d", n);
    REQUIRE(x, CommUserRank(x->comm, &me) == ncclSuccess && me == x->rank, "rank %d", me);
    int rc = x->scenario(x);
    if (x->comm)
        CommDestroy(x->comm);
    F->stream_destroy(x->stream);
    return rc;
}

static void *rank_thread(void *arg)
{
    struct rank *x = arg;
    rank_run(x);
    return NULL;
}

/* Run scenario on n ranks as threads. */
static void run_threads(int n, int (*scenario)(struct rank *))
{
    load();
    struct rank x[4];
    pthread_t t[4];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)n);
    ncclUniqueId id;
    ck_assert_int_eq(GetUniqueId(&id), ncclSuccess);
    for (int i = 0; i < n; i++) {
        x[i] = (struct rank){ .rank = i, .nranks = n, .id = id, .scenario = scenario, .bar = &bar };
        pthread_create(&t[i], NULL, rank_thread, &x[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&bar);
    for (int i = 0; i < n; i++)
        ck_assert_msg(x[i].err[0] == '\0', "%s: %s", F->name, x[i].err);
}

/* Run scenario on n ranks as processes; expect[r] is the exit status of
 * rank r (0: passed). */
static void run_procs(int n, int (*scenario)(struct rank *), const int *expect)
{
    ncclUniqueId id;
    {
        /* the id only: no driver (and no thread) before the fork */
        void *l = dlopen(F->nccl, RTLD_NOW | RTLD_LOCAL);
        ck_assert_ptr_nonnull(l);
        ncclGetUniqueId_fn get = (ncclGetUniqueId_fn)dsym(l, "ncclGetUniqueId");
        ck_assert_int_eq(get(&id), ncclSuccess);
    }
    pid_t pid[4];
    for (int i = 0; i < n; i++) {
        pid[i] = fork();
        ck_assert_int_ge(pid[i], 0);
        if (pid[i] == 0) {
            load();
            struct rank x = { .rank = i, .nranks = n, .id = id, .scenario = scenario };
            int rc = rank_run(&x);
            if (rc)
                fprintf(stderr, "%s: %s\n", F->name, x.err);
            fflush(stderr);
            _exit(rc ? 1 : 0);
        }
    }
    double end = now_s() + 60;
    for (int i = 0; i < n; i++) {
        int st = 0;
        while (waitpid(pid[i], &st, WNOHANG) == 0) {
            if (now_s() > end) {
                for (int j = 0; j < n; j++)
                    kill(pid[j], SIGKILL);
                waitpid(pid[i], &st, 0);
                ck_abort_msg("%s: rank %d still running after 60 s", F->name, i);
            }
            usleep(2000);
        }
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == (expect ? expect[i] : 0),
                      "%s: rank %d ended with status %d", F->name, i, st);
    }
}

/* ---- element values and the host reference ---- */

static const int dtypes[] = { ncclInt8,   ncclUint8,   ncclInt32,   ncclUint32,  ncclInt64,
                              ncclUint64, ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16 };
#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

static void put(int dtype, void *buf, size_t i, double v)
{
    switch (dtype) {
    case ncclInt8:
        ((int8_t *)buf)[i] = (int8_t)v;
        break;
    case ncclUint8:
        ((uint8_t *)buf)[i] = (uint8_t)v;
        break;
    case ncclInt32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    case ncclUint32:
        ((uint32_t *)buf)[i] = (uint32_t)v;
        break;
    case ncclInt64:
        ((int64_t *)buf)[i] = (int64_t)v;
        break;
    case ncclUint64:
        ((uint64_t *)buf)[i] = (uint64_t)v;
        break;
    case ncclFloat16:
        ((uint16_t *)buf)[i] = emu_nccl_float_to_half((float)v);
        break;
    case ncclFloat32:
        ((float *)buf)[i] = (float)v;
        break;
    case ncclFloat64:
        ((double *)buf)[i] = v;
        break;
    case ncclBfloat16:
        ((uint16_t *)buf)[i] = emu_nccl_float_to_bf16((float)v);
        break;
    }
}

/* Small positive integers, exact in every type, products fit int8. */
static double value(int rank, size_t i)
{
    return (double)((i * 7 + (size_t)rank * 3) % 5 + 1);
}

static bool is_int(int dtype)
{
    return dtype <= ncclUint64;
}

/* The expected element i of a reduction over n ranks, written into out. */
static void reference(int dtype, int op, int n, size_t i, void *out, size_t at)
{
    double acc = value(0, i);
    for (int r = 1; r < n; r++) {
        double v = value(r, i);
        switch (op) {
        case ncclSum:
        case ncclAvg:
            acc += v;
            break;
        case ncclProd:
            acc *= v;
            break;
        case ncclMax:
            acc = acc > v ? acc : v;
            break;
        case ncclMin:
            acc = acc < v ? acc : v;
            break;
        }
    }
    if (op != ncclAvg) {
        put(dtype, out, at, acc);
    } else if (is_int(dtype)) {
        put(dtype, out, at, (double)((long long)acc / n));
    } else if (dtype == ncclFloat64) {
        put(dtype, out, at, acc / n);
    } else {
        put(dtype, out, at, (double)((float)acc / (float)n));
    }
}

static int sync_ok(struct rank *x, const char *what)
{
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st == 0 && a == ncclSuccess, "%s: stream %d, async %d: %s", what, st, a,
            GetLastError(x->comm));
    return 0;
}

#define TRY(x, call)                                                                                     \
    do {                                                                                                 \
        ncclResult_t r_ = (call);                                                                        \
        REQUIRE(x, r_ == ncclSuccess, "%s: %s: %s", #call, GetErrorString(r_), GetLastError((x)->comm)); \
    } while (0)

/* Every op x type x reduction against the host reference. */
static int scenario_ops(struct rank *x)
{
    const int n = x->nranks, me = x->rank;
    const size_t count = 37;
    for (size_t t = 0; t < NDTYPES; t++) {
        int dt = dtypes[t];
        size_t esz = emu_nccl_dtype_size(dt);
        unsigned char *send = dalloc(count * n * esz), *recv = dalloc(count * n * esz);
        unsigned char *want = malloc(count * n * esz);
        REQUIRE(x, send && recv && want, "alloc");
        for (int op = ncclSum; op <= ncclAvg; op++) {
            for (size_t i = 0; i < count; i++)
                put(dt, send, i, value(me, i));
            TRY(x, AllReduce(send, recv, count, dt, op, x->comm, x->stream));
            if (sync_ok(x, "allreduce"))
                return -1;
            for (size_t i = 0; i < count; i++)
                reference(dt, op, n, i, want, i);
            REQUIRE(x, memcmp(recv, want, count * esz) == 0, "allreduce type %d op %d", dt, op);
            /* in place */
            TRY(x, AllReduce(send, send, count, dt, op, x->comm, x->stream));
            if (sync_ok(x, "allreduce in place"))
                return -1;
            REQUIRE(x, memcmp(send, want, count * esz) == 0, "in-place allreduce type %d op %d", dt, op);
            /* reduce-scatter: rank r's block of the send buffer is value(., r*count+i) */
            for (size_t i = 0; i < count * n; i++)
                put(dt, send, i, value(me, i));
            TRY(x, ReduceScatter(send, recv, count, dt, op, x->comm, x->stream));
            if (sync_ok(x, "reducescatter"))
                return -1;
            for (size_t i = 0; i < count; i++)
                reference(dt, op, n, (size_t)me * count + i, want, i);
            REQUIRE(x, memcmp(recv, want, count * esz) == 0, "reducescatter type %d op %d", dt, op);
        }
        for (size_t i = 0; i < count; i++)
            put(dt, send, i, value(me, i));
        TRY(x, AllGather(send, recv, count, dt, x->comm, x->stream));
        if (sync_ok(x, "allgather"))
            return -1;
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < count; i++)
                put(dt, want, (size_t)r * count + i, value(r, i));
        REQUIRE(x, memcmp(recv, want, count * n * esz) == 0, "allgather type %d", dt);
        for (int root = 0; root < n; root++) {
            memset(recv, 0, count * esz);
            TRY(x, Broadcast(send, recv, count, dt, root, x->comm, x->stream));
            if (sync_ok(x, "broadcast"))
                return -1;
            for (size_t i = 0; i < count; i++)
                put(dt, want, i, value(root, i));
            REQUIRE(x, memcmp(recv, want, count * esz) == 0, "broadcast type %d root %d", dt, root);
        }
        dfree(send);
        dfree(recv);
        free(want);
    }
    /* Large: several staging chunks, ring messages larger than the ring. */
    const size_t big = 150000;
    int32_t *s = dalloc(big * n * 4), *d = dalloc(big * n * 4), *d2 = dalloc(big * 4);
    REQUIRE(x, s && d && d2, "alloc");
    for (size_t i = 0; i < big * n; i++)
        s[i] = (int32_t)(i % 1000) + me;
    TRY(x, AllReduce(s, d, big, ncclInt32, ncclSum, x->comm, x->stream));
    if (sync_ok(x, "big allreduce"))
        return -1;
    for (size_t i = 0; i < big; i++)
        REQUIRE(x, d[i] == (int32_t)(i % 1000) * n + n * (n - 1) / 2, "big allreduce [%zu] %d", i, d[i]);
    TRY(x, ReduceScatter(s, d, big, ncclInt32, ncclMax, x->comm, x->stream));
    if (sync_ok(x, "big reducescatter"))
        return -1;
    for (size_t i = 0; i < big; i += 13)
        REQUIRE(x, d[i] == (int32_t)(((size_t)me * big + i) % 1000) + n - 1, "big reducescatter [%zu]", i);
    TRY(x, AllGather(s, d, big, ncclInt32, x->comm, x->stream));
    if (sync_ok(x, "big allgather"))
        return -1;
    for (int r = 0; r < n; r++)
        REQUIRE(x, d[(size_t)r * big + 7] == 7 + r, "big allgather");
    /* A ring in a group: send to the next, receive from the previous. */
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    TRY(x, GroupStart());
    TRY(x, Send(s, big, ncclInt32, next, x->comm, x->stream));
    TRY(x, Recv(d2, big, ncclInt32, prev, x->comm, x->stream));
    TRY(x, GroupEnd());
    if (sync_ok(x, "ring"))
        return -1;
    for (size_t i = 0; i < big; i += 997)
        REQUIRE(x, d2[i] == (int32_t)(i % 1000) + prev, "ring [%zu] %d", i, d2[i]);
    /* Both ways with one peer in one group, and two messages in order. */
    if (n == 2 || me < 2) {
        int peer = 1 - me;
        TRY(x, GroupStart());
        TRY(x, Recv(d, 10, ncclInt32, peer, x->comm, x->stream));
        TRY(x, Recv(d + 10, 10, ncclInt32, peer, x->comm, x->stream));
        TRY(x, Send(s, 10, ncclInt32, peer, x->comm, x->stream));
        TRY(x, Send(s + 100, 10, ncclInt32, peer, x->comm, x->stream));
        TRY(x, GroupEnd());
        if (sync_ok(x, "exchange"))
            return -1;
        REQUIRE(x, d[3] == 3 + peer && d[13] == 103 + peer, "exchange order %d %d", d[3], d[13]);
    }
    dfree(s);
    dfree(d);
    dfree(d2);
    return 0;
}

/* A collective queued behind a slow host function runs after it. */
static void slow_fill(void *stream, int status, void *arg)
{
    (void)stream;
    (void)status;
    usleep(150000);
    int32_t *p = arg;
    for (int i = 0; i < 64; i++)
        p[i] = p[64]; /* p[64]: this rank's value */
}

static int scenario_order(struct rank *x)
{
    int32_t *s = dalloc(65 * 4), *d = dalloc(64 * 4);
    REQUIRE(x, s && d, "alloc");
    memset(s, 0, 64 * 4);
    s[64] = x->rank + 1;
    REQUIRE(x, F->add_callback(x->stream, slow_fill, s, 0) == 0, "callback");
    TRY(x, AllReduce(s, d, 64, ncclInt32, ncclSum, x->comm, x->stream));
    if (sync_ok(x, "ordered allreduce"))
        return -1;
    int n = x->nranks;
    for (int i = 0; i < 64; i++)
        REQUIRE(x, d[i] == n * (n + 1) / 2, "[%d] = %d: ran before the host function", i, d[i]);
    /* split by parity: an allreduce in each part */
    ncclComm_t sub = NULL;
    TRY(x, CommSplit(x->comm, x->rank % 2, -x->rank, &sub, NULL));
    REQUIRE(x, sub != NULL, "split");
    int cnt = 0, r = -1;
    CommCount(sub, &cnt);
    CommUserRank(sub, &r);
    int want_cnt = (n + 1 - x->rank % 2) / 2;
    REQUIRE(x, cnt == want_cnt, "split count %d, not %d", cnt, want_cnt);
    REQUIRE(x, r == want_cnt - 1 - x->rank / 2, "split rank %d (keys reverse the order)", r);
    s[0] = x->rank;
    TRY(x, AllReduce(s, d, 1, ncclInt32, ncclSum, sub, x->stream));
    REQUIRE(x, F->stream_sync(x->stream) == 0, "split allreduce");
    int want = 0;
    for (int q = x->rank % 2; q < n; q += 2)
        want += q;
    REQUIRE(x, d[0] == want, "split sum %d, not %d", d[0], want);
    CommDestroy(sub);
    dfree(s);
    dfree(d);
    return 0;
}

/* Rank 1 fails its 2nd op (DEVQ_EMU_NCCL_FAIL=1:2): every rank's stream
 * fails and its async error is set, within a bound far below the timeout. */
static int scenario_fail(struct rank *x)
{
    int32_t *s = dalloc(1024 * 4);
    REQUIRE(x, s != NULL, "alloc");
    memset(s, 0, 1024 * 4);
    TRY(x, AllReduce(s, s, 1024, ncclInt32, ncclSum, x->comm, x->stream));
    if (sync_ok(x, "first allreduce"))
        return -1;
    double t0 = now_s();
    TRY(x, AllReduce(s, s, 1024, ncclInt32, ncclSum, x->comm, x->stream));
    int st = F->stream_sync(x->stream);
    double dt = now_s() - t0;
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st != 0, "the stream did not fail");
    REQUIRE(x, a == (x->rank == 1 ? ncclSystemError : ncclRemoteError), "async error %d: %s", a,
            GetLastError(x->comm));
    REQUIRE(x, dt < 5, "took %.1f s", dt);
    REQUIRE(x, strstr(GetLastError(x->comm), x->rank == 1 ? "injected" : "rank 1 failed"), "message: %s",
            GetLastError(x->comm));
    /* A failed communicator refuses new ops with its error. */
    REQUIRE(x, AllReduce(s, s, 1, ncclInt32, ncclSum, x->comm, x->stream) == a, "op after failure");
    CommAbort(x->comm);
    x->comm = NULL;
    return 0;
}

/* DEVQ_EMU_NCCL_DIE=1:2: rank 1's process exits in its 2nd op; the
 * others fail with ncclRemoteError long before the timeout. */
static int scenario_die(struct rank *x)
{
    int32_t *s = dalloc(1024 * 4);
    REQUIRE(x, s != NULL, "alloc");
    memset(s, 0, 1024 * 4);
    TRY(x, AllReduce(s, s, 1024, ncclInt32, ncclSum, x->comm, x->stream));
    if (sync_ok(x, "first allreduce"))
        return -1;
    double t0 = now_s();
    TRY(x, AllGather(s, s, 10, ncclInt32, x->comm, x->stream));
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st != 0 && a == ncclRemoteError, "stream %d async %d", st, a);
    REQUIRE(x, now_s() - t0 < 5, "took %.1f s", now_s() - t0);
    CommAbort(x->comm);
    x->comm = NULL;
    return 0;
}

/* DEVQ_EMU_NCCL_DIE=1:1 in a ring of sends larger than the rings:
 * rank 1 exits; the others' group fails with ncclRemoteError. */
static int scenario_die_p2p(struct rank *x)
{
    const size_t big = 100000;
    int32_t *s = dalloc(big * 4), *d = dalloc(big * 4);
    REQUIRE(x, s && d, "alloc");
    memset(s, 0, big * 4);
    int n = x->nranks, me = x->rank;
    double t0 = now_s();
    TRY(x, GroupStart());
    TRY(x, Send(s, big, ncclInt32, (me + 1) % n, x->comm, x->stream));
    TRY(x, Recv(d, big, ncclInt32, (me + n - 1) % n, x->comm, x->stream));
    TRY(x, GroupEnd());
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st != 0 && a == ncclRemoteError, "stream %d async %d", st, a);
    REQUIRE(x, now_s() - t0 < 5, "took %.1f s", now_s() - t0);
    CommAbort(x->comm);
    x->comm = NULL;
    return 0;
}

/* Rank 2 takes part in one all_reduce, destroys its communicator and
 * its process exits; rank 1 comes to its exchange with rank 0 300 ms
 * later.  Rank 0 waits on rank 1 all that time: a peer that left
 * cleanly is no failure of an op it has no part in. */
static int scenario_bystander_leaves(struct rank *x)
{
    int32_t *s = dalloc(16 * 4), *d = dalloc(16 * 4);
    REQUIRE(x, s && d, "alloc");
    memset(s, 0, 16 * 4);
    TRY(x, AllReduce(s, d, 16, ncclInt32, ncclSum, x->comm, x->stream));
    if (sync_ok(x, "allreduce"))
        return -1;
    if (x->rank < 2) {
        if (x->rank == 1)
            usleep(300 * 1000);
        int peer = 1 - x->rank;
        TRY(x, GroupStart());
        TRY(x, Send(s, 16, ncclInt32, peer, x->comm, x->stream));
        TRY(x, Recv(d, 16, ncclInt32, peer, x->comm, x->stream));
        TRY(x, GroupEnd());
        if (sync_ok(x, "exchange after rank 2 left"))
            return -1;
    }
    dfree(s);
    dfree(d);
    return 0;
}

/* DEVQ_EMU_NCCL_HANG=1:1, timeout 400 ms: the others time out (or hear
 * of the timeout); rank 1 stays until it aborts, which ends its op. */
static int scenario_hang(struct rank *x)
{
    int32_t *s = dalloc(16 * 4);
    REQUIRE(x, s != NULL, "alloc");
    memset(s, 0, 16 * 4);
    double t0 = now_s();
    TRY(x, AllReduce(s, s, 16, ncclInt32, ncclSum, x->comm, x->stream));
    if (x->rank == 1) {
        pthread_barrier_wait(x->bar); /* the others have failed */
        usleep(50000);
        CommAbort(x->comm);
        x->comm = NULL;
        REQUIRE(x, F->stream_sync(x->stream) == 0, "an aborted op does not fail the stream");
        return 0;
    }
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    double dt = now_s() - t0;
    pthread_barrier_wait(x->bar);
    REQUIRE(x, st != 0 && (a == ncclSystemError || a == ncclRemoteError), "stream %d async %d", st, a);
    REQUIRE(x, dt > 0.3 && dt < 5, "took %.2f s", dt);
    return 0;
}

/* ncclCommAbort from another thread wakes an op waiting for peers that
 * never come (timeout 60 s). */
struct aborter {
    ncclComm_t comm;
};

static void *abort_later(void *arg)
{
    usleep(200000);
    CommAbort(((struct aborter *)arg)->comm);
    return NULL;
}

static int scenario_abort(struct rank *x)
{
    if (x->rank != 0)
        return 0; /* never joins the op */
    int32_t *s = dalloc(16 * 4);
    REQUIRE(x, s != NULL, "alloc");
    double t0 = now_s();
    TRY(x, AllReduce(s, s, 16, ncclInt32, ncclSum, x->comm, x->stream));
    struct aborter a = { x->comm };
    pthread_t t;
    pthread_create(&t, NULL, abort_later, &a);
    F->stream_sync(x->stream);
    pthread_join(t, NULL);
    x->comm = NULL;
    REQUIRE(x, now_s() - t0 < 3, "abort took %.1f s", now_s() - t0);
    return 0;
}

/* A group on two streams: the ring's data is written by a slow host
 * function on the second stream, queued before the group; the group
 * waits for it, and both streams wait for the group. */
static int scenario_two_streams(struct rank *x)
{
    void *s2 = NULL;
    REQUIRE(x, F->stream_create(&s2, 0, 0) == 0, "stream");
    int n = x->nranks, me = x->rank;
    int32_t *a = dalloc(65 * 4), *b = dalloc(64 * 4), *c = dalloc(64 * 4);
    REQUIRE(x, a && b && c, "alloc");
    memset(a, 0, 64 * 4);
    a[64] = me + 10;
    for (int i = 0; i < 64; i++)
        b[i] = me;
    REQUIRE(x, F->add_callback(s2, slow_fill, a, 0) == 0, "callback");
    TRY(x, GroupStart());
    TRY(x, AllReduce(b, b, 64, ncclInt32, ncclSum, x->comm, x->stream));
    TRY(x, Send(a, 64, ncclInt32, (me + 1) % n, x->comm, s2));
    TRY(x, Recv(c, 64, ncclInt32, (me + n - 1) % n, x->comm, s2));
    TRY(x, GroupEnd());
    REQUIRE(x, F->stream_sync(s2) == 0 && F->stream_sync(x->stream) == 0, "sync");
    REQUIRE(x, b[5] == n * (n - 1) / 2, "allreduce %d", b[5]);
    REQUIRE(x, c[5] == (me + n - 1) % n + 10, "ring %d: ran before the host function", c[5]);
    F->stream_destroy(s2);
    return 0;
}

/* Rank 1's device fails (a sticky error of the op before): its
 * collective fails with ncclUnhandledCudaError, the others' with
 * ncclRemoteError, long before the timeout. */
static int scenario_poisoned(struct rank *x)
{
    int32_t *s = dalloc(64 * 4);
    REQUIRE(x, s != NULL, "alloc");
    if (x->rank == 1) {
        REQUIRE(x, dmemset(s, 0, 64 * 4, x->stream) == 0, "memset");
        /* The failure is known before the collective (a CI run under
         * TSan once saw the collective run before the memset's failure
         * was: then nothing failed it). */
        REQUIRE(x, F->stream_sync(x->stream) != 0, "the memset did not fail the stream");
    }
    double t0 = now_s();
    ncclResult_t r = AllReduce(s, s, 64, ncclInt32, ncclSum, x->comm, x->stream);
    /* the failed device may already refuse the op */
    REQUIRE(x, r == ncclSuccess || (x->rank == 1 && r == ncclUnhandledCudaError), "allreduce: %d", r);
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st != 0, "the stream did not fail");
    /* Refused at enqueue or failed on the stream: the communicator says so. */
    REQUIRE(x, a == (x->rank == 1 ? ncclUnhandledCudaError : ncclRemoteError),
            "async %d (allreduce returned %d): %s", a, r, GetLastError(x->comm));
    REQUIRE(x, now_s() - t0 < 5, "took %.1f s", now_s() - t0);
    CommAbort(x->comm);
    x->comm = NULL;
    return 0;
}

/* Mismatched ops: every rank fails with ncclInvalidUsage. */
static int scenario_mismatch(struct rank *x)
{
    int32_t *s = dalloc(64 * 4);
    REQUIRE(x, s != NULL, "alloc");
    TRY(x, AllReduce(s, s, 10 + (size_t)x->rank, ncclInt32, ncclSum, x->comm, x->stream));
    int st = F->stream_sync(x->stream);
    ncclResult_t a = ncclSuccess;
    CommGetAsyncError(x->comm, &a);
    REQUIRE(x, st != 0 && (a == ncclInvalidUsage || a == ncclRemoteError), "stream %d async %d", st, a);
    CommAbort(x->comm);
    x->comm = NULL;
    return 0;
}

/* ---- tests ---- */

static void env_timeout(const char *ms)
{
    setenv("DEVQ_EMU_NCCL_TIMEOUT_MS", ms, 1);
}

START_TEST(test_ops_threads)
{
    run_threads(2 + _i, scenario_ops);
}
END_TEST

START_TEST(test_ops_procs)
{
    run_procs(2 + _i, scenario_ops, NULL);
}
END_TEST

START_TEST(test_order_split_threads)
{
    run_threads(3, scenario_order);
}
END_TEST

START_TEST(test_order_split_procs)
{
    run_procs(3, scenario_order, NULL);
}
END_TEST

START_TEST(test_fail_threads)
{
    env_timeout("30000");
    setenv("DEVQ_EMU_NCCL_FAIL", "1:2", 1);
    run_threads(3, scenario_fail);
}
END_TEST

START_TEST(test_fail_procs)
{
    env_timeout("30000");
    setenv("DEVQ_EMU_NCCL_FAIL", "1:2", 1);
    run_procs(2, scenario_fail, NULL);
}
END_TEST

START_TEST(test_die_procs)
{
    env_timeout("30000");
    setenv("DEVQ_EMU_NCCL_DIE", "1:2", 1);
    static const int expect[] = { 0, 86, 0 };
    run_procs(3, scenario_die, expect);
}
END_TEST

START_TEST(test_die_p2p_procs)
{
    env_timeout("30000");
    setenv("DEVQ_EMU_NCCL_DIE", "1:1", 1);
    static const int expect[] = { 0, 86, 0 };
    run_procs(3, scenario_die_p2p, expect);
}
END_TEST

START_TEST(test_bystander_leaves_procs)
{
    env_timeout("30000");
    run_procs(3, scenario_bystander_leaves, NULL);
}
END_TEST

START_TEST(test_hang_timeout_threads)
{
    env_timeout("400");
    setenv("DEVQ_EMU_NCCL_HANG", "1:1", 1);
    run_threads(3, scenario_hang);
}
END_TEST

START_TEST(test_abort_wakes)
{
    env_timeout("60000");
    run_threads(2, scenario_abort);
}
END_TEST

START_TEST(test_mismatch)
{
    env_timeout("30000");
    run_threads(2, scenario_mismatch);
}
END_TEST

START_TEST(test_poisoned_device)
{
    env_timeout("30000");
    setenv("DEVQ_EMU_FAIL", F->memset_fail, 1);
    run_threads(3, scenario_poisoned);
}
END_TEST

START_TEST(test_group_two_streams)
{
    run_threads(3, scenario_two_streams);
}
END_TEST

START_TEST(test_delays)
{
    setenv("DEVQ_EMU_NCCL_DELAY", "2000", 1);
    setenv("DEVQ_EMU_DELAY", "500", 1);
    run_threads(3, scenario_order);
}
END_TEST

/* Host-side errors: arguments, init timeout, injected call failures. */
START_TEST(test_errors)
{
    setenv("DEVQ_EMU_NCCL_CALL_FAIL", "ncclGroupStart:2:ncclInternalError", 1);
    load();
    int v = 0;
    ck_assert_int_eq(GetVersion(&v), ncclSuccess);
    ck_assert_int_ge(v, 21800);
    ck_assert_str_eq(GetErrorString(ncclRemoteError), "remote process exited or there was a network error");
    ck_assert_int_eq(use_device(0), 0);
    ncclUniqueId id, bad;
    ck_assert_int_eq(GetUniqueId(&id), ncclSuccess);
    memset(&bad, 0, sizeof bad);
    ncclComm_t c = NULL;
    ck_assert_int_eq(CommInitRank(&c, 2, bad, 0), ncclInvalidArgument);
    ck_assert_ptr_nonnull(strstr(GetLastError(NULL), "unique id"));
    ck_assert_int_eq(CommInitRank(&c, 2, id, 2), ncclInvalidArgument);
    /* one rank of two: times out */
    env_timeout("300");
    double t0 = now_s();
    ck_assert_int_eq(CommInitRank(&c, 2, id, 0), ncclSystemError);
    ck_assert_double_lt(now_s() - t0, 3);
    ck_assert_ptr_nonnull(strstr(GetLastError(NULL), "timed out"));
    /* a communicator of one */
    ck_assert_int_eq(GetUniqueId(&id), ncclSuccess);
    ck_assert_int_eq(CommInitRank(&c, 1, id, 0), ncclSuccess);
    void *stream;
    ck_assert_int_eq(F->stream_create(&stream, 0, 0), 0);
    int32_t *s = dalloc(64);
    ck_assert_int_eq(AllReduce(s, s, 4, (ncclDataType_t)42, ncclSum, c, stream), ncclInvalidArgument);
    ck_assert_ptr_nonnull(strstr(GetLastError(c), "data type"));
    ck_assert_int_eq(AllReduce(s, s, 4, ncclInt32, (ncclRedOp_t)9, c, stream), ncclInvalidArgument);
    ck_assert_int_eq(AllReduce(s, s, 4, ncclInt32, ncclSum, c, NULL), ncclInvalidArgument);
    ck_assert_int_eq(Broadcast(s, s, 4, ncclInt32, 1, c, stream), ncclInvalidArgument);
    ck_assert_int_eq(Send(s, 4, ncclInt32, 1, c, stream), ncclInvalidArgument);
    ck_assert_int_eq(AllReduce(NULL, s, 4, ncclInt32, ncclSum, c, stream), ncclInvalidArgument);
    ck_assert_int_eq(AllReduce(s, s, 4, ncclInt32, ncclSum, NULL, stream), ncclInvalidArgument);
    ck_assert_int_eq(GroupEnd(), ncclInvalidUsage);
    /* self send/recv in a group */
    s[0] = 5;
    ck_assert_int_eq(GroupStart(), ncclSuccess);
    ck_assert_int_eq(Send(s, 1, ncclInt32, 0, c, stream), ncclSuccess);
    ck_assert_int_eq(Recv(s + 1, 1, ncclInt32, 0, c, stream), ncclSuccess);
    ck_assert_int_eq(GroupEnd(), ncclSuccess);
    ck_assert_int_eq(F->stream_sync(stream), 0);
    ck_assert_int_eq(s[1], 5);
    ck_assert_int_eq(GroupStart(), ncclInternalError); /* DEVQ_EMU_NCCL_CALL_FAIL */
    ck_assert_int_eq(CommDestroy(c), ncclSuccess);
    F->stream_destroy(stream);
    dfree(s);
}
END_TEST

/* One thread drives two ranks (one device each), as with several GPUs
 * in one process: the inits and the ops go in groups. */
START_TEST(test_one_thread_two_ranks)
{
    load();
    ncclUniqueId id;
    ck_assert_int_eq(GetUniqueId(&id), ncclSuccess);
    ncclComm_t c[2];
    void *st[2];
    int32_t *buf[2];
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(use_device(r), 0);
        ck_assert_int_eq(F->stream_create(&st[r], 0, 0), 0);
        buf[r] = dalloc(8 * 4);
        for (int i = 0; i < 8; i++)
            buf[r][i] = i * (r + 1);
    }
    ck_assert_int_eq(GroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++)
        ck_assert_int_eq(CommInitRank(&c[r], 2, id, r), ncclSuccess);
    ck_assert_int_eq(GroupEnd(), ncclSuccess);
    ck_assert_int_eq(GroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++)
        ck_assert_int_eq(AllReduce(buf[r], buf[r], 8, ncclInt32, ncclSum, c[r], st[r]), ncclSuccess);
    ck_assert_int_eq(GroupEnd(), ncclSuccess);
    for (int r = 0; r < 2; r++) {
        ck_assert_int_eq(F->stream_sync(st[r]), 0);
        for (int i = 0; i < 8; i++)
            ck_assert_int_eq(buf[r][i], 3 * i);
        ck_assert_int_eq(CommDestroy(c[r]), ncclSuccess);
        F->stream_destroy(st[r]);
        dfree(buf[r]);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("nccl_emu");
    TCase *tc = tcase_create("emu");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, test_ops_threads, 0, 2);
    tcase_add_loop_test(tc, test_ops_procs, 0, 2);
    tcase_add_test(tc, test_order_split_threads);
    tcase_add_test(tc, test_order_split_procs);
    tcase_add_test(tc, test_fail_threads);
    tcase_add_test(tc, test_fail_procs);
    tcase_add_test(tc, test_die_procs);
    tcase_add_test(tc, test_die_p2p_procs);
    tcase_add_test(tc, test_bystander_leaves_procs);
    tcase_add_test(tc, test_hang_timeout_threads);
    tcase_add_test(tc, test_abort_wakes);
    tcase_add_test(tc, test_mismatch);
    tcase_add_test(tc, test_delays);
    tcase_add_test(tc, test_group_two_streams);
    tcase_add_test(tc, test_poisoned_device);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_one_thread_two_ranks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    setenv("DEVQ_EMU_DEVICES", "4", 1);
    const char *only = getenv("DEVQ_TEST_NCCL_FACE");
    int rc = EXIT_SUCCESS;
    for (size_t i = 0; i < sizeof faces / sizeof faces[0]; i++) {
        if (only && *only && strcmp(only, faces[i].name) != 0)
            continue;
        F = &faces[i];
        fprintf(stderr, "face %s\n", F->name);
        int r = check_run_forked(suite(), "test_nccl_emu");
        if (r != EXIT_SUCCESS)
            rc = r;
    }
    return rc;
}
