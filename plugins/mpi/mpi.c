/* SPDX-License-Identifier: MIT */
/* devq-mpi: the channel engine over MPI (Open MPI or MPICH), for the cpu
 * backend (DESIGN §11, include/devq/devq_engine.h).
 *
 * Loaded by libdevq on the first channel.  It initialises MPI with
 * MPI_THREAD_MULTIPLE only when the program has not (and finalises it at
 * exit then), since devq's stream threads call MPI concurrently with
 * each other and with the program.  Every op is a non-blocking MPI call
 * on a communicator of its own (a dup of the world, or a split), so
 * devq's traffic never matches the program's; lib progresses it with
 * MPI_Test.  F16 and BF16 reductions are done in host reduction ops
 * (MPI has no such types); AVG is SUM, then a divide when the op ends. */
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <mpi.h>
#include <devq/devq_engine.h>
#include <devq/devq_mpi.h>
#include "half.h"
#include "../analyzer.h"

#define EXPORT __attribute__((visibility("default")))
#define ID_MAGIC "DEVQMPI1"
#define ID_SIZE 16
#define CREATE_TIMEOUT_NS (60ull * 1000000000ull)

static const struct devq_host *host;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int mpi_ready;
static MPI_Op half_ops[2][4]; /* [f16, bf16][sum, prod, min, max] */

struct devq_eng_comm {
    MPI_Comm comm;
    MPI_Comm ctl;   /* peer notices only (a dup: never matches an op's messages) */
    uint64_t nonce; /* rank 0's random number, in every notice of this comm */
    int rank, size;
    char *notice;               /* what this rank sent, alive until every send is done */
    MPI_Request *notice_reqs;   /* one per rank (MPI_REQUEST_NULL for itself) */
    int notice_state;           /* 0 none, 1 queued, 2 being sent, 3 destroyed while sent, 4 sent */
    devq_eng_comm *notice_next; /* the sender's queue */
    /* Blocking collectives (see blocking_from): a dup of their own, run
     * in start order by one helper thread, started on the first. */
    MPI_Comm blk;
    pthread_mutex_t blk_lock;
    pthread_cond_t blk_cond;
    pthread_t blk_thread;
    int blk_started, blk_stop, blk_busy;
    int blk_dead;       /* a gate was abandoned: fail the rest */
    int orphans;        /* a collective on comm was abandoned */
    unsigned small_seq; /* small all_reduces started: their tags */
    /* Tests: the op (counted from 1) that fails at start, from
     * DEVQ_MPI_TEST_FAIL_OP when the comm was made; 0 none.  The op
     * at whose start this process kills itself (SIGKILL: no notice, as
     * a crashed host), from DEVQ_MPI_TEST_KILL_OP; 0 none. */
    unsigned long fail_op, kill_op, ops_started;
    devq_eng_req *blk_head, *blk_tail;
    /* One finished request kept for the next start (new_req/req_free):
     * a run of small ops allocates none.  Atomic, so that any thread may
     * finish a request of this comm while another starts one. */
    _Atomic(devq_eng_req *) spare;
};

#define NOTICE_TAG 7001
#define NOTICE_MAX 512

struct devq_eng_req {
    MPI_Request req;
    int p2p;
    void *avg_dst; /* AVG: divide these count elements by size */
    size_t avg_count;
    enum devq_dtype type;
    int size;
    /* A blocking collective, run by the comm's helper (under blk_lock). */
    devq_eng_comm *blk_comm; /* NULL: a non-blocking request */
    int blk_state;           /* 0 queued or running, 1 finished */
    int blk_rc;              /* its MPI return code */
    int blk_abandoned;       /* lib gave up: the helper frees it */
    devq_eng_req *blk_next;
    devq_eng_comm *owner; /* the comm it was started on */
    /* A small all_reduce by recursive doubling (start_small_all_reduce):
     * step of steps, this step's receive and send, what they carry. */
    int small, step, steps, tag, n;
    MPI_Request xfer[2];
    MPI_Datatype t;
    MPI_Op mop;
    enum devq_dtype rtype; /* what t and mop are, for host_reduce */
    enum devq_reduce rop;
    void *dst, *tmp; /* tmp: tmp_here up to its size, else malloc'd */
    /* Last: a reused request is reset up to here (new_req), these two
     * are written before they are read (start_blocking, small_post). */
    struct devq_eng_op op; /* the blocking collective's */
    unsigned char tmp_here[64];
};

static int mpi_error(int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, s, &len);
    return host->error(-EIO, "mpi: %s: %s", what, s);
}

/* Host reductions for the 16-bit float types. */
#define HALF_OP(name, to, from, expr)                                   \
    static void name(void *in, void *inout, int *len, MPI_Datatype *dt) \
    {                                                                   \
        (void)dt;                                                       \
        const uint16_t *a = in;                                         \
        uint16_t *b = inout;                                            \
        for (int i = 0; i < *len; i++) {                                \
            float x = to(a[i]), y = to(b[i]);                           \
            b[i] = from(expr);                                          \
        }                                                               \
    }
HALF_OP(f16_sum, devq_f16_to_f32, devq_f32_to_f16, x + y)
HALF_OP(f16_prod, devq_f16_to_f32, devq_f32_to_f16, x *y)
HALF_OP(f16_min, devq_f16_to_f32, devq_f32_to_f16, x < y ? x : y)
HALF_OP(f16_max, devq_f16_to_f32, devq_f32_to_f16, x > y ? x : y)
HALF_OP(bf16_sum, devq_bf16_to_f32, devq_f32_to_bf16, x + y)
HALF_OP(bf16_prod, devq_bf16_to_f32, devq_f32_to_bf16, x *y)
HALF_OP(bf16_min, devq_bf16_to_f32, devq_f32_to_bf16, x < y ? x : y)
HALF_OP(bf16_max, devq_bf16_to_f32, devq_f32_to_bf16, x > y ? x : y)

static void finalize_ours(void)
{
    int done = 0;
    MPI_Finalized(&done);
    if (!done)
        MPI_Finalize();
}

static int ensure_mpi(void)
{
    pthread_mutex_lock(&init_lock);
    int r = 0;
    if (mpi_ready)
        goto out;
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) {
            r = mpi_error(rc, "MPI_Init_thread");
            goto out;
        }
        atexit(finalize_ours);
        /* MPI is devq's here: an error on the world or self (a peer's
         * death noticed outside devq's own comms) comes back as an
         * error to the op that met it, which devq fails through its
         * timeout and roll call, rather than aborting the process.  A
         * program that initialises MPI keeps its own handlers. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    } else {
        int fin = 0;
        MPI_Finalized(&fin);
        if (fin) {
            r = host->error(-ENOTSUP, "mpi: MPI was already finalized; create channels before MPI_Finalize");
            goto out;
        }
        MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
        r = host->error(
            -ENOTSUP,
            "mpi: MPI gives thread level %d, devq needs MPI_THREAD_MULTIPLE (its stream "
            "threads call MPI); initialise MPI with MPI_Init_thread(MPI_THREAD_MULTIPLE) or let devq "
            "initialise it",
            provided);
        goto out;
    }
    MPI_User_function *fns[2][4] = { { f16_sum, f16_prod, f16_min, f16_max },
                                     { bf16_sum, bf16_prod, bf16_min, bf16_max } };
    for (int t = 0; t < 2; t++)
        for (int o = 0; o < 4; o++)
            MPI_Op_create(fns[t][o], 1, &half_ops[t][o]);
    mpi_ready = 1;
out:
    pthread_mutex_unlock(&init_lock);
    return r;
}

static MPI_Datatype mpi_type(enum devq_dtype t)
{
    switch (t) {
    case DEVQ_I8:
        return MPI_INT8_T;
    case DEVQ_U8:
        return MPI_UINT8_T;
    case DEVQ_I32:
        return MPI_INT32_T;
    case DEVQ_U32:
        return MPI_UINT32_T;
    case DEVQ_I64:
        return MPI_INT64_T;
    case DEVQ_U64:
        return MPI_UINT64_T;
    case DEVQ_F16:
    case DEVQ_BF16:
        return MPI_UINT16_T;
    case DEVQ_F32:
        return MPI_FLOAT;
    case DEVQ_F64:
        return MPI_DOUBLE;
    }
    return MPI_DATATYPE_NULL;
}

static size_t type_size(enum devq_dtype t)
{
    switch (t) {
    case DEVQ_I8:
    case DEVQ_U8:
        return 1;
    case DEVQ_F16:
    case DEVQ_BF16:
        return 2;
    case DEVQ_I32:
    case DEVQ_U32:
    case DEVQ_F32:
        return 4;
    default:
        return 8;
    }
}

static MPI_Op mpi_op(enum devq_dtype t, enum devq_reduce op)
{
    int i = op == DEVQ_PROD ? 1 : op == DEVQ_MIN ? 2 : op == DEVQ_MAX ? 3 : 0; /* AVG: SUM first */
    if (t == DEVQ_F16 || t == DEVQ_BF16)
        return half_ops[t == DEVQ_BF16][i];
    switch (i) {
    case 1:
        return MPI_PROD;
    case 2:
        return MPI_MIN;
    case 3:
        return MPI_MAX;
    default:
        return MPI_SUM;
    }
}

static void divide(void *p, size_t n, enum devq_dtype t, int by)
{
    switch (t) {
#define DIV(T)                                  \
    for (size_t i = 0; i < n; i++)              \
        ((T *)p)[i] = (T)(((T *)p)[i] / (T)by); \
    break
    case DEVQ_I8:
        DIV(int8_t);
    case DEVQ_U8:
        DIV(uint8_t);
    case DEVQ_I32:
        DIV(int32_t);
    case DEVQ_U32:
        DIV(uint32_t);
    case DEVQ_I64:
        DIV(int64_t);
    case DEVQ_U64:
        DIV(uint64_t);
    case DEVQ_F32:
        DIV(float);
    case DEVQ_F64:
        DIV(double);
#undef DIV
    case DEVQ_F16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)p)[i] = devq_f32_to_f16(devq_f16_to_f32(((uint16_t *)p)[i]) / (float)by);
        break;
    case DEVQ_BF16:
        for (size_t i = 0; i < n; i++)
            ((uint16_t *)p)[i] = devq_f32_to_bf16(devq_bf16_to_f32(((uint16_t *)p)[i]) / (float)by);
        break;
    }
}

static int comm_id(void *id, size_t *size)
{
    if (*size < ID_SIZE)
        return host->error(-EINVAL, "devq_channel_id: the MPI engine's id takes %d bytes, capacity is %zu",
                           ID_SIZE, *size);
    unsigned char b[ID_SIZE];
    memcpy(b, ID_MAGIC, 8);
    if (getrandom(b + 8, 8, 0) != 8)
        return host->error(-EIO, "devq_channel_id: getrandom: %s", strerror(errno));
    memcpy(id, b, ID_SIZE);
    *size = ID_SIZE;
    return 0;
}

static const char *family_name(uint32_t f)
{
    return f == DEVQ_MPI_OPEN_MPI ? "Open MPI" : f == DEVQ_MPI_MPICH ? "MPICH" : "an MPI devq does not know";
}

static int wait_bounded(MPI_Request *rq, const char *what);
static int dup_bounded(MPI_Comm from, MPI_Comm *out, const char *what);

/* Every rank of c calls this (creation is collective): the comm and its
 * notice dup, made non-blocking and bounded. */
static int wrap(MPI_Comm c, devq_eng_comm **out)
{
    devq_eng_comm *ec = calloc(1, sizeof *ec);
    if (!ec) {
        MPI_Comm_free(&c);
        return host->error(-ENOMEM, "mpi: out of memory");
    }
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    ec->comm = c;
    const char *fail = getenv("DEVQ_MPI_TEST_FAIL_OP");
    ec->fail_op = fail ? strtoul(fail, NULL, 10) : 0;
    const char *kill_at = getenv("DEVQ_MPI_TEST_KILL_OP");
    ec->kill_op = kill_at ? strtoul(kill_at, NULL, 10) : 0;
    MPI_Comm_rank(c, &ec->rank);
    MPI_Comm_size(c, &ec->size);
    MPI_Request dup;
    int r, rc;
    if ((r = dup_bounded(c, &ec->ctl, "MPI_Comm_dup for peer notices")) < 0) {
        MPI_Comm_free(&ec->comm);
        free(ec);
        return r;
    }
    MPI_Comm_set_errhandler(ec->ctl, MPI_ERRORS_RETURN);
    /* Open MPI reuses a freed communicator's context id, and a notice
     * nobody received can still arrive after its comm was freed: every
     * notice carries this comm's nonce, and a stale one is dropped. */
    if (ec->rank == 0 && getrandom(&ec->nonce, sizeof ec->nonce, 0) != sizeof ec->nonce)
        ec->nonce = (uint64_t)host->now_ns() ^ ((uint64_t)getpid() << 32);
    if ((rc = MPI_Ibcast(&ec->nonce, 1, MPI_UINT64_T, 0, ec->ctl, &dup)) != MPI_SUCCESS ||
        (r = wait_bounded(&dup, "the notice nonce")) < 0) {
        r = rc != MPI_SUCCESS ? mpi_error(rc, "MPI_Ibcast of the notice nonce") : r;
        MPI_Comm_free(&ec->ctl);
        MPI_Comm_free(&ec->comm);
        free(ec);
        return r;
    }
    if ((r = dup_bounded(c, &ec->blk, "MPI_Comm_dup for blocking collectives")) < 0) {
        MPI_Comm_free(&ec->ctl);
        MPI_Comm_free(&ec->comm);
        free(ec);
        return r;
    }
    MPI_Comm_set_errhandler(ec->blk, MPI_ERRORS_RETURN);
    pthread_mutex_init(&ec->blk_lock, NULL);
    pthread_cond_init(&ec->blk_cond, NULL);
    *out = ec;
    return 0;
}

/* Wait for a request, bounded (creation is collective; a rank that never
 * comes must not hang the others). */
static int wait_bounded(MPI_Request *rq, const char *what)
{
    uint64_t deadline = host->now_ns() + CREATE_TIMEOUT_NS;
    for (;;) {
        int flag = 0;
        int rc = MPI_Test(rq, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_error(rc, what);
        if (flag)
            return 0;
        if (host->now_ns() > deadline)
            return host->error(-ETIMEDOUT, "mpi: %s: the other ranks did not join within 60 s", what);
        struct timespec ts = { 0, 100000 };
        nanosleep(&ts, NULL);
    }
}

/* A dup that cannot hang on a rank that never comes: a barrier waited
 * for without blocking (bounded), then MPI_Comm_dup, which every rank has
 * then reached.  Not MPI_Comm_idup: Open MPI 4.1's (libnbc) crashed in
 * MPI_Test over the TCP transport (tests/channels-mpi-netns, about one
 * run in six). */
static int dup_bounded(MPI_Comm from, MPI_Comm *out, const char *what)
{
    MPI_Request rq;
    int r, rc = MPI_Ibarrier(from, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, what);
    if ((r = wait_bounded(&rq, what)) < 0)
        return r;
    if ((rc = MPI_Comm_dup(from, out)) != MPI_SUCCESS)
        return mpi_error(rc, what);
    return 0;
}

static int comm_create(int rank, int size, const void *id, size_t id_size, devq_eng_comm **out)
{
    int r = ensure_mpi();
    if (r < 0)
        return r;
    int wrank, wsize;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    if (rank >= 0 && (rank != wrank || size != wsize))
        return host->error(-ENOTSUP,
                           "mpi: rank %d of %d asked for, but this process is rank %d of the launcher's "
                           "%d; the MPI engine joins ranks started by one launcher (mpirun) only",
                           rank, size, wrank, wsize);
    if (id && (id_size != ID_SIZE || memcmp(id, ID_MAGIC, 8)))
        return host->error(
            -EINVAL, "mpi: the id (%zu bytes) was not made by devq_channel_id on the MPI engine", id_size);
    /* Bounded, so a rank that never comes cannot hang the others. */
    MPI_Comm c;
    int rc;
    if ((r = dup_bounded(MPI_COMM_WORLD, &c, "MPI_Comm_dup of the world")) < 0)
        return r;
    if (id) {
        /* Every rank must hold rank 0's id: a stale or foreign id is refused. */
        unsigned char mine[ID_SIZE], root[ID_SIZE];
        memcpy(mine, id, ID_SIZE);
        memcpy(root, id, ID_SIZE);
        MPI_Request rq;
        if ((rc = MPI_Ibcast(root, ID_SIZE, MPI_BYTE, 0, c, &rq)) != MPI_SUCCESS ||
            (r = wait_bounded(&rq, "id exchange")) < 0) {
            MPI_Comm_free(&c);
            return rc != MPI_SUCCESS ? mpi_error(rc, "MPI_Ibcast") : r;
        }
        int same = !memcmp(mine, root, ID_SIZE), all = 0;
        if ((rc = MPI_Iallreduce(&same, &all, 1, MPI_INT, MPI_LAND, c, &rq)) != MPI_SUCCESS ||
            (r = wait_bounded(&rq, "id check")) < 0) {
            MPI_Comm_free(&c);
            return rc != MPI_SUCCESS ? mpi_error(rc, "MPI_Iallreduce") : r;
        }
        if (!all) {
            MPI_Comm_free(&c);
            return host->error(-EINVAL, "mpi: the ranks were given different ids; hand rank 0's "
                                        "devq_channel_id bytes to every rank");
        }
    }
    return wrap(c, out);
}

/* The program's own communicator (devq_channel_create_mpi): a dup of
 * it, made non-blocking and bounded like the world's. */
static int comm_from_handle(const void *handle, size_t handle_size, devq_eng_comm **out)
{
    struct devq_mpi_handle h;
    if (handle_size != sizeof h)
        return host->error(-EINVAL,
                           "mpi: the handle has %zu bytes, a struct devq_mpi_handle of this engine has "
                           "%zu; fill it with devq_channel_create_mpi (devq_mpi.h)",
                           handle_size, sizeof h);
    memcpy(&h, handle, sizeof h);
    if (h.magic != DEVQ_MPI_HANDLE_MAGIC)
        return host->error(-EINVAL,
                           "mpi: the handle is not a struct devq_mpi_handle (magic 0x%x); fill it with "
                           "devq_channel_create_mpi (devq_mpi.h)",
                           (unsigned)h.magic);
    if (h.family != DEVQ_MPI_FAMILY || h.comm_bytes != sizeof(MPI_Comm))
        return host->error(-EINVAL,
                           "mpi: the program was compiled against another MPI (%s, MPI_Comm of %u bytes) "
                           "than this engine (%s, %zu bytes); build devq's MPI engine with the program's MPI "
                           "(configure --with-mpi=ompi-c or mpich)",
                           family_name(h.family), (unsigned)h.comm_bytes, family_name(DEVQ_MPI_FAMILY),
                           sizeof(MPI_Comm));
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited)
        return host->error(-EINVAL, "mpi: MPI is not initialised, so the communicator cannot be valid; call "
                                    "MPI_Init_thread(MPI_THREAD_MULTIPLE) first");
    if (h.comm == MPI_COMM_NULL)
        return host->error(-EINVAL, "mpi: the communicator is MPI_COMM_NULL (a rank left out of a split?); "
                                    "create channels only on ranks that belong to a communicator");
    int r = ensure_mpi();
    if (r < 0)
        return r;
    int inter = 0, rc = MPI_Comm_test_inter(h.comm, &inter);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Comm_test_inter (is the communicator valid?)");
    if (inter)
        return host->error(-EINVAL,
                           "mpi: the communicator is an inter-communicator; devq's collectives need an "
                           "intra-communicator (MPI_Intercomm_merge it first)");
    MPI_Comm c;
    if ((r = dup_bounded(h.comm, &c, "MPI_Comm_dup of the program's communicator")) < 0)
        return r;
    return wrap(c, out);
}

/* MPI has no non-blocking split: a bounded barrier first makes sure
 * every rank has come, so the split itself cannot wait forever for one
 * that never does. */
static int comm_split(devq_eng_comm *pc, int color, int key, devq_eng_comm **out)
{
    MPI_Comm c;
    MPI_Request rq;
    int r, rc = MPI_Ibarrier(pc->comm, &rq);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Ibarrier");
    if ((r = wait_bounded(&rq, "split")) < 0)
        return r;
    rc = MPI_Comm_split(pc->comm, color, key, &c);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Comm_split");
    return wrap(c, out);
}

static int comm_rank(const devq_eng_comm *c)
{
    return c->rank;
}
static int comm_size(const devq_eng_comm *c)
{
    return c->size;
}

/* The notice sender (see notice_send). */
static pthread_mutex_t sender_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sender_cond = PTHREAD_COND_INITIALIZER;
static devq_eng_comm *sender_head;
static int sender_started;

static void comm_destroy(devq_eng_comm *c)
{
    int fin = 0, pending = 0;
    pthread_mutex_lock(&sender_lock);
    if (c->notice_state == 1 ||
        c->notice_state == 2) { /* queued or being sent: the sender destroys it after */
        c->notice_state = 3;
        pthread_mutex_unlock(&sender_lock);
        return;
    }
    pthread_mutex_unlock(&sender_lock);
    pthread_mutex_lock(&c->blk_lock);
    int stuck = c->blk_busy || c->blk_head;
    c->blk_stop = 1;
    pthread_cond_broadcast(&c->blk_cond);
    pthread_mutex_unlock(&c->blk_lock);
    if (stuck) {
        /* An abandoned blocking collective holds the helper inside MPI
         * (a peer died or skipped it): the helper, this comm and its
         * communicators stay until exit (devq-channels(7)). */
        if (c->blk_started)
            pthread_detach(c->blk_thread);
        return;
    }
    if (c->blk_started)
        pthread_join(c->blk_thread, NULL);
    MPI_Finalized(&fin);
    if (!fin) {
        /* A notice a peer never took stays MPI's to deliver: its text
         * must outlive the request, so it is left allocated then. */
        for (int p = 0; c->notice_reqs && p < c->size; p++) {
            int flag = 1;
            if (c->notice_reqs[p] != MPI_REQUEST_NULL &&
                MPI_Test(&c->notice_reqs[p], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
                MPI_Request_free(&c->notice_reqs[p]);
                pending = 1;
            }
        }
        /* Communicators with an abandoned collective (an op or a gate's
         * barrier) stay: MPI still runs it (devq-channels(7)). */
        if (!c->blk_dead)
            MPI_Comm_free(&c->blk);
        MPI_Comm_free(&c->ctl);
        if (!c->orphans)
            MPI_Comm_free(&c->comm);
    }
    pthread_mutex_destroy(&c->blk_lock);
    pthread_cond_destroy(&c->blk_cond);
    free(atomic_exchange(&c->spare, NULL));
    if (!pending)
        free(c->notice);
    free(c->notice_reqs);
    free(c);
}

/* Peer notices (devq_engine.h): one short message to every peer on the
 * notice dup, sent once; a peer reads it with a probe when it waits.
 * The sends are made by one sender thread of the engine, never by the
 * caller: a notice goes out when something failed, often a dead peer,
 * and Open MPI 4.1's TCP transport can deadlock the thread that sends to
 * a peer whose connection just broke (its endpoint lock, taken again on
 * the error path); the caller -- a stream thread in its roll call -- must
 * stay free to time out.  A comm whose notice is still being sent when
 * it is destroyed is left to the sender (never freed). */

static void send_notices(devq_eng_comm *c)
{
    int n = (int)strlen(c->notice + sizeof c->nonce) + (int)sizeof c->nonce;
    for (int p = 0; p < c->size; p++) {
        if (p == c->rank)
            continue;
        int rc = MPI_Isend(c->notice, n + 1, MPI_CHAR, p, NOTICE_TAG, c->ctl, &c->notice_reqs[p]);
        if (rc != MPI_SUCCESS)
            c->notice_reqs[p] = MPI_REQUEST_NULL; /* best effort: the timeout stays the bound */
    }
}

static void *sender_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&sender_lock);
    for (;;) {
        while (!sender_head)
            pthread_cond_wait(&sender_cond, &sender_lock);
        devq_eng_comm *c = sender_head;
        sender_head = c->notice_next;
        if (c->notice_state == 1)
            c->notice_state = 2; /* being sent (3: destroyed while queued) */
        pthread_mutex_unlock(&sender_lock);
        send_notices(c);
        pthread_mutex_lock(&sender_lock);
        if (c->notice_state == 3) { /* destroyed meanwhile: ours to finish */
            pthread_mutex_unlock(&sender_lock);
            c->notice_state = 4;
            comm_destroy(c);
            pthread_mutex_lock(&sender_lock);
        } else {
            c->notice_state = 4; /* sent */
        }
    }
    return NULL;
}

static int notice_send(devq_eng_comm *c, const char *why)
{
    if (c->notice || c->size < 2)
        return 0;
    size_t n = strnlen(why, NOTICE_MAX - 1) + sizeof c->nonce;
    c->notice = malloc(n + 1);
    c->notice_reqs = malloc((size_t)c->size * sizeof *c->notice_reqs);
    if (!c->notice || !c->notice_reqs) {
        free(c->notice_reqs);
        c->notice_reqs = NULL;
        return host->error(-ENOMEM, "mpi: out of memory for a peer notice");
    }
    memcpy(c->notice, &c->nonce, sizeof c->nonce);
    memcpy(c->notice + sizeof c->nonce, why, n - sizeof c->nonce);
    c->notice[n] = '\0';
    for (int p = 0; p < c->size; p++)
        c->notice_reqs[p] = MPI_REQUEST_NULL;
    pthread_mutex_lock(&sender_lock);
    if (!sender_started) {
        pthread_t t;
        int e = pthread_create(&t, NULL, sender_main, NULL);
        if (e) {
            pthread_mutex_unlock(&sender_lock);
            return host->error(-e, "mpi: no thread to send peer notices: %s", strerror(e));
        }
        pthread_setname_np(t, "devq-mpi-note");
        pthread_detach(t);
        sender_started = 1;
    }
    c->notice_state = 1; /* queued */
    devq_eng_comm **at = &sender_head;
    while (*at)
        at = &(*at)->notice_next;
    *at = c;
    c->notice_next = NULL;
    pthread_cond_signal(&sender_cond);
    pthread_mutex_unlock(&sender_lock);
    return 0;
}

static int notice_poll(devq_eng_comm *c, int *from, char *why, size_t cap)
{
    for (int stale = 0; stale < 64; stale++) {
        int flag = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, NOTICE_TAG, c->ctl, &flag, &st);
        if (rc != MPI_SUCCESS || !flag)
            return 0;
        int n = 0;
        MPI_Get_count(&st, MPI_CHAR, &n);
        if (n < 1 || n > NOTICE_MAX + (int)sizeof c->nonce)
            n = NOTICE_MAX + (int)sizeof c->nonce;
        char buf[NOTICE_MAX + sizeof c->nonce];
        if (MPI_Recv(buf, n, MPI_CHAR, st.MPI_SOURCE, NOTICE_TAG, c->ctl, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return 0;
        uint64_t nonce;
        if (n <= (int)sizeof nonce)
            continue;
        memcpy(&nonce, buf, sizeof nonce);
        if (nonce != c->nonce)
            continue; /* for a freed comm that had this context id */
        buf[n - 1] = '\0';
        *from = st.MPI_SOURCE;
        snprintf(why, cap, "%s", buf + sizeof nonce);
        return 1;
    }
    return 0;
}

static int start_all_reduce(devq_eng_comm *c, const struct devq_eng_op *op, MPI_Datatype t, devq_eng_req *q)
{
    return MPI_Iallreduce(op->src == op->dst ? MPI_IN_PLACE : op->src, op->dst, (int)op->count, t,
                          mpi_op(op->type, op->op), c->comm, &q->req);
}

/* Small all_reduces (up to SMALL_MAX bytes, a power-of-two group):
 * recursive doubling by point-to-point messages, which Open MPI 4.1's
 * shared-memory and TCP paths deliver in well under a microsecond,
 * where MPI_Iallreduce's libnbc schedule costs two to three times the
 * blocking MPI_Allreduce (bench/RESULTS.md, "Channels at submit").
 * Step k exchanges the partial result with rank ^ 2^k and reduces the
 * peer's into it (MPI_Reduce_local, the same MPI_Op as the collective);
 * every reduction is commutative and both sides of a pair combine the
 * same two values, so every rank ends with the same bits.  Tags: 1 +
 * (the comm's small-op count mod 2000) * 16 + step, never 0 (send and
 * recv ops use 0), unique among the ops that may be in flight at once,
 * which every rank starts in the same order. */
#define SMALL_MAX 4096u

static int small_post(devq_eng_req *q)
{
    int partner = q->owner->rank ^ (1 << q->step);
    int rc = MPI_Irecv(q->tmp, q->n, q->t, partner, q->tag + q->step, q->owner->comm, &q->xfer[0]);
    if (rc == MPI_SUCCESS)
        rc = MPI_Isend(q->dst, q->n, q->t, partner, q->tag + q->step, q->owner->comm, &q->xfer[1]);
    return rc == MPI_SUCCESS ? 0 : mpi_error(rc, "MPI_Isend/MPI_Irecv (small all_reduce)");
}

static int small_usable(const devq_eng_comm *c, const struct devq_eng_op *op)
{
    return op->kind == DEVQ_ENG_ALL_REDUCE && c->size > 1 && (c->size & (c->size - 1)) == 0 &&
           op->count * type_size(op->type) <= SMALL_MAX;
}

static int start_small_all_reduce(devq_eng_comm *c, const struct devq_eng_op *op, devq_eng_req *q)
{
    size_t bytes = op->count * type_size(op->type);
    q->tmp = bytes <= sizeof q->tmp_here ? q->tmp_here : malloc(bytes);
    if (!q->tmp)
        return host->error(-ENOMEM, "mpi: out of memory");
    if (op->src != op->dst)
        memcpy(op->dst, op->src, bytes);
    q->small = 1;
    q->dst = op->dst;
    q->n = (int)op->count;
    q->t = mpi_type(op->type);
    q->mop = mpi_op(op->type, op->op);
    q->rtype = op->type;
    q->rop = op->op;
    q->tag = 1 + (int)(c->small_seq++ % 2000u) * 16;
    for (int s = c->size; s > 1; s >>= 1)
        q->steps++;
    q->xfer[0] = q->xfer[1] = MPI_REQUEST_NULL;
    int r = small_post(q);
    if (r < 0 && q->tmp != q->tmp_here)
        free(q->tmp); /* (nothing was left posted that MPI can still write) */
    if (r < 0)
        q->tmp = NULL;
    return r;
}

/* Given up (or failed): the receive is cancelled, the send left to MPI;
 * tmp stays allocated, since a cancel that comes too late still writes
 * it (a few bytes, once per failure), and the comm stays (orphans).
 * A failed MPI_Testall left the requests to lib: they are freed too. */
static void small_abandon(devq_eng_req *q)
{
    /* Its send may still arrive at a peer: the comm must not be freed,
     * or a later comm that gets its context id would match it. */
    q->owner->orphans = 1;
    if (q->xfer[0] != MPI_REQUEST_NULL) {
        MPI_Cancel(&q->xfer[0]);
        MPI_Request_free(&q->xfer[0]);
    }
    if (q->xfer[1] != MPI_REQUEST_NULL)
        MPI_Request_free(&q->xfer[1]);
    if (q->tmp != q->tmp_here)
        free(q); /* else q is the receive's buffer: it stays too */
}

/* The peer's part (in) reduced into this rank's (inout) here for the
 * 8 integer and float types, element by element with Open MPI's own
 * formulas (ompi/mca/op/base: inout = inout + in, inout < in ? inout :
 * in, ...; signed sums and products wrap, computed unsigned), skipping
 * MPI_Reduce_local's argument checks and dispatch on the path from one
 * op's end to the next's start.  The same values as that call, except
 * where MIN/MAX meet a NaN or zeros of both signs (no order: there the
 * ranks may differ, as they may with MPI's vectorised ops).  0: not one
 * of these types (F16, BF16): MPI's op does it. */
#define HOST_REDUCE(T, U)                                                     \
    do {                                                                      \
        const T *a = in;                                                      \
        T *b = inout;                                                         \
        for (int i = 0; i < n; i++)                                           \
            b[i] = rop == DEVQ_PROD  ? (T)((U)b[i] * (U)a[i])                 \
                   : rop == DEVQ_MIN ? (b[i] < a[i] ? b[i] : a[i])            \
                   : rop == DEVQ_MAX ? (b[i] > a[i] ? b[i] : a[i])            \
                                     : (T)((U)b[i] + (U)a[i]); /* SUM, AVG */ \
        return 1;                                                             \
    } while (0)

static int host_reduce(const void *in, void *inout, int n, enum devq_dtype t, enum devq_reduce rop)
{
    switch (t) {
    case DEVQ_I8:
        HOST_REDUCE(int8_t, uint32_t);
    case DEVQ_U8:
        HOST_REDUCE(uint8_t, uint32_t);
    case DEVQ_I32:
        HOST_REDUCE(int32_t, uint32_t);
    case DEVQ_U32:
        HOST_REDUCE(uint32_t, uint32_t);
    case DEVQ_I64:
        HOST_REDUCE(int64_t, uint64_t);
    case DEVQ_U64:
        HOST_REDUCE(uint64_t, uint64_t);
    case DEVQ_F32:
        HOST_REDUCE(float, float);
    case DEVQ_F64:
        HOST_REDUCE(double, double);
    default:
        return 0;
    }
}
#undef HOST_REDUCE

/* Progress: 1 when the last step is reduced, 0 not yet, or the failure. */
static int small_test(devq_eng_req *q)
{
    int flag = 0;
    int rc = MPI_Testall(2, q->xfer, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Testall (small all_reduce)");
    if (!flag)
        return 0;
    if (!host_reduce(q->tmp, q->dst, q->n, q->rtype, q->rop) &&
        (rc = MPI_Reduce_local(q->tmp, q->dst, q->n, q->t, q->mop)) != MPI_SUCCESS)
        return mpi_error(rc, "MPI_Reduce_local (small all_reduce)");
    if (++q->step < q->steps) {
        int r = small_post(q);
        return r < 0 ? r : 0;
    }
    return 1;
}

/* Blocking or non-blocking, per op and size.  Open MPI 4.1 runs the
 * non-blocking collectives with libnbc's algorithms and the blocking ones
 * with coll/tuned's, up to twice as fast on large buffers.  A channel's
 * ops may run blocking: lib's stream thread waits for them anyway, and
 * the call itself runs on the comm's helper thread, so that thread's
 * wait stays bounded: a peer that dies or skips the op ends it by the
 * timeout, the roll call and peer notices as before, and the helper is
 * left inside MPI (like an abandoned non-blocking collective).
 * The table, from a microbenchmark of the three MPI calls each way
 * (bench/RESULTS.md "Channels: blocking or non-blocking", 2026-11-28, 2
 * ranks, Open MPI 4.1.4, shared memory, load 8-9; median time,
 * non-blocking / blocking, so above 1 the blocking call is faster):
 *
 *   op              blocking from   4 KiB  64 KiB  1 MiB  4 MiB  16 MiB  64 MiB
 *   all_reduce      1 MiB           1.58   1.54    1.31   0.79*  1.52    1.26
 *   all_gather      4 MiB           1.24   1.03    0.92   2.77   1.34    1.61
 *   reduce_scatter  4 MiB           1.98   1.82    0.98   1.57   1.21    0.86*
 *   (* under load 9; the other sizes of the row decide)
 *
 * Below the threshold an op stays non-blocking: the helper's hand-off
 * (a few us) would cost more than the faster algorithm gains.  MPICH:
 * the same table (no measurement yet; its blocking paths are not slower).
 * Broadcast, send and receive stay non-blocking. */
static size_t blocking_from(enum devq_eng_op_kind k)
{
    switch (k) {
    case DEVQ_ENG_ALL_REDUCE:
        return 1u << 20;
    case DEVQ_ENG_ALL_GATHER:
        return 4u << 20;
    case DEVQ_ENG_REDUCE_SCATTER:
        return 4u << 20;
    default:
        return SIZE_MAX;
    }
}

static int run_blocking(devq_eng_comm *c, const struct devq_eng_op *op)
{
    int n = (int)op->count;
    MPI_Datatype t = mpi_type(op->type);
    size_t esz = type_size(op->type);
    switch (op->kind) {
    case DEVQ_ENG_ALL_REDUCE:
        return MPI_Allreduce(op->src == op->dst ? MPI_IN_PLACE : op->src, op->dst, n, t,
                             mpi_op(op->type, op->op), c->blk);
    case DEVQ_ENG_ALL_GATHER:
        return MPI_Allgather((const char *)op->src == (char *)op->dst + (size_t)c->rank * op->count * esz
                                 ? MPI_IN_PLACE
                                 : op->src,
                             n, t, op->dst, n, t, c->blk);
    case DEVQ_ENG_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(op->src == op->dst ? MPI_IN_PLACE : op->src, op->dst, n, t,
                                        mpi_op(op->type, op->op), c->blk);
    default:
        return MPI_ERR_OP;
    }
}

/* Before a blocking call, a barrier that is waited for without blocking:
 * the call starts only once every peer has reached the op, so a peer
 * that skips it (its batch failed, it timed out) never strands the
 * helper inside a blocking MPI call, spinning; only a peer that dies
 * during the data movement can.  GATE_ABANDONED: lib gave up first. */
#define GATE_ABANDONED (-1)
#define GATE_SPIN_NS 50000ull

static int gate(devq_eng_comm *c, devq_eng_req *q)
{
    MPI_Request rq;
    int rc = MPI_Ibarrier(c->blk, &rq);
    if (rc != MPI_SUCCESS)
        return rc;
    uint64_t t0 = host->now_ns();
    for (;;) {
        int flag = 0;
        rc = MPI_Test(&rq, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || flag)
            return rc;
        pthread_mutex_lock(&c->blk_lock);
        int abandoned = q->blk_abandoned;
        pthread_mutex_unlock(&c->blk_lock);
        if (abandoned)
            return GATE_ABANDONED;
        if (host->now_ns() - t0 > GATE_SPIN_NS) {
            struct timespec ts = { 0, 50000 };
            nanosleep(&ts, NULL);
        }
    }
}

/* The comm's helper: its blocking collectives one at a time, in the
 * order they were started (the same on every rank). */
static void *blk_main(void *arg)
{
    devq_eng_comm *c = arg;
    pthread_mutex_lock(&c->blk_lock);
    for (;;) {
        while (!c->blk_head && !c->blk_stop)
            pthread_cond_wait(&c->blk_cond, &c->blk_lock);
        if (!c->blk_head)
            break;
        devq_eng_req *q = c->blk_head;
        c->blk_head = q->blk_next;
        if (!c->blk_head)
            c->blk_tail = NULL;
        if (c->blk_dead) {
            if (q->blk_abandoned) {
                free(q);
            } else {
                q->blk_rc = MPI_ERR_OTHER;
                q->blk_state = 1;
            }
            continue;
        }
        pthread_mutex_unlock(&c->blk_lock);
        int rc = gate(c, q);
        pthread_mutex_lock(&c->blk_lock);
        if (rc == GATE_ABANDONED) {
            c->blk_dead = 1; /* a barrier left pending: no later op can match */
            free(q);
            continue;
        }
        if (rc == MPI_SUCCESS) {
            c->blk_busy = 1;
            pthread_mutex_unlock(&c->blk_lock);
            rc = run_blocking(c, &q->op);
            pthread_mutex_lock(&c->blk_lock);
            c->blk_busy = 0;
        }
        if (q->blk_abandoned) {
            free(q);
        } else {
            q->blk_rc = rc;
            q->blk_state = 1;
        }
    }
    pthread_mutex_unlock(&c->blk_lock);
    return NULL;
}

static int start_blocking(devq_eng_comm *c, const struct devq_eng_op *op, devq_eng_req *q)
{
    q->blk_comm = c;
    q->op = *op;
    pthread_mutex_lock(&c->blk_lock);
    if (!c->blk_started) {
        int e = pthread_create(&c->blk_thread, NULL, blk_main, c);
        if (e) {
            pthread_mutex_unlock(&c->blk_lock);
            q->blk_comm = NULL;
            return host->error(-e, "mpi: no helper thread for blocking collectives: %s", strerror(e));
        }
        pthread_setname_np(c->blk_thread, "devq-mpi-blk");
        c->blk_started = 1;
    }
    if (c->blk_tail)
        c->blk_tail->blk_next = q;
    else
        c->blk_head = q;
    c->blk_tail = q;
    pthread_cond_signal(&c->blk_cond);
    pthread_mutex_unlock(&c->blk_lock);
    return 0;
}

/* A zeroed request of c: the comm's spare when it has one. */
static devq_eng_req *new_req(devq_eng_comm *c)
{
    devq_eng_req *q = atomic_exchange_explicit(&c->spare, NULL, memory_order_acquire);
    if (q)
        memset(q, 0, offsetof(devq_eng_req, op));
    else if (!(q = calloc(1, sizeof *q)))
        return NULL;
    q->owner = c;
    return q;
}

static int start(devq_eng_comm *c, const struct devq_eng_op *op, devq_eng_req **out)
{
    if (op->count > INT_MAX)
        return host->error(-EINVAL, "mpi: count %zu is above MPI's int counts (%d); split the op", op->count,
                           INT_MAX);
    if (++c->ops_started == c->kill_op)
        raise(SIGKILL);
    if (c->ops_started == c->fail_op)
        return host->error(-EIO, "mpi: DEVQ_MPI_TEST_FAIL_OP failed op %lu at start (a test)", c->fail_op);
    devq_eng_req *q = new_req(c);
    if (!q)
        return host->error(-ENOMEM, "mpi: out of memory");
    int n = (int)op->count, rc;
    MPI_Datatype t = mpi_type(op->type);
    const char *what;
    size_t esz = type_size(op->type);
    if (c->size > 1 && op->count * esz >= blocking_from(op->kind)) {
        int r = start_blocking(c, op, q);
        if (r < 0) {
            free(q);
            return r;
        }
        if (op->op == DEVQ_AVG && op->kind != DEVQ_ENG_ALL_GATHER) {
            q->avg_dst = op->dst;
            q->avg_count = op->count;
            q->type = op->type;
            q->size = c->size;
        }
        *out = q;
        return 0;
    }
    if (small_usable(c, op)) {
        int r = start_small_all_reduce(c, op, q);
        if (r < 0) {
            free(q);
            return r;
        }
        if (op->op == DEVQ_AVG) {
            q->avg_dst = op->dst;
            q->avg_count = op->count;
            q->type = op->type;
            q->size = c->size;
        }
        *out = q;
        return 0;
    }
    switch (op->kind) {
    case DEVQ_ENG_ALL_REDUCE:
        what = "MPI_Iallreduce";
        rc = start_all_reduce(c, op, t, q);
        break;
    case DEVQ_ENG_ALL_GATHER:
        what = "MPI_Iallgather";
        rc = MPI_Iallgather((const char *)op->src == (char *)op->dst + (size_t)c->rank * op->count * esz
                                ? MPI_IN_PLACE
                                : op->src,
                            n, t, op->dst, n, t, c->comm, &q->req);
        break;
    case DEVQ_ENG_REDUCE_SCATTER:
        what = "MPI_Ireduce_scatter_block";
        rc = MPI_Ireduce_scatter_block(op->src == op->dst ? MPI_IN_PLACE : op->src, op->dst, n, t,
                                       mpi_op(op->type, op->op), c->comm, &q->req);
        break;
    case DEVQ_ENG_BROADCAST:
        what = "MPI_Ibcast";
        rc = MPI_Ibcast(op->dst, n, t, op->peer, c->comm, &q->req);
        break;
    case DEVQ_ENG_SEND:
        what = "MPI_Isend";
        q->p2p = 1;
        rc = MPI_Isend(op->src, n, t, op->peer, 0, c->comm, &q->req);
        break;
    case DEVQ_ENG_RECV:
        what = "MPI_Irecv";
        q->p2p = 1;
        rc = MPI_Irecv(op->dst, n, t, op->peer, 0, c->comm, &q->req);
        break;
    default:
        free(q);
        return host->error(-EINVAL, "mpi: unknown op kind %d", (int)op->kind);
    }
    if (rc != MPI_SUCCESS) {
        free(q);
        return mpi_error(rc, what);
    }
    if ((op->kind == DEVQ_ENG_ALL_REDUCE || op->kind == DEVQ_ENG_REDUCE_SCATTER) && op->op == DEVQ_AVG) {
        q->avg_dst = op->dst;
        q->avg_count = op->count;
        q->type = op->type;
        q->size = c->size;
    }
    *out = q;
    return 0;
}

/* A finished request (nothing of it left inside MPI): kept as its
 * comm's spare when the comm has none, else freed.  Only test() and
 * abandon() call this, from lib while the comm is alive. */
static void req_free(devq_eng_req *q)
{
    if (q->tmp != q->tmp_here)
        free(q->tmp);
    devq_eng_req *none = NULL;
    if (!q->owner || !atomic_compare_exchange_strong_explicit(&q->owner->spare, &none, q,
                                                              memory_order_release, memory_order_relaxed))
        free(q);
}

static int test(devq_eng_req *q, int *done)
{
    if (q->blk_comm) {
        devq_eng_comm *c = q->blk_comm;
        pthread_mutex_lock(&c->blk_lock);
        int finished = q->blk_state, rc = q->blk_rc;
        pthread_mutex_unlock(&c->blk_lock);
        *done = 0;
        if (!finished)
            return 0;
        if (rc != MPI_SUCCESS) {
            const char *what = q->op.kind == DEVQ_ENG_ALL_REDUCE   ? "MPI_Allreduce"
                               : q->op.kind == DEVQ_ENG_ALL_GATHER ? "MPI_Allgather"
                                                                   : "MPI_Reduce_scatter_block";
            req_free(q);
            return mpi_error(rc, what);
        }
        *done = 1;
        if (q->avg_dst)
            divide(q->avg_dst, q->avg_count, q->type, q->size);
        req_free(q);
        return 0;
    }
    int flag = 0, rc = MPI_SUCCESS;
    if (q->small) {
        int r = small_test(q);
        if (r < 0) {
            small_abandon(q); /* lib forgets a request whose test failed */
            return r;
        }
        flag = r;
    } else if ((rc = MPI_Test(&q->req, &flag, MPI_STATUS_IGNORE)) != MPI_SUCCESS) {
        req_free(q);
        return mpi_error(rc, "MPI_Test");
    }
    *done = flag;
    if (flag) {
        if (q->avg_dst)
            divide(q->avg_dst, q->avg_count, q->type, q->size);
        req_free(q);
    }
    return 0;
}

/* MPI cannot withdraw a started collective (MPI_Cancel and
 * MPI_Request_free are erroneous on one): it is left to the library,
 * and lib fails the channel's later ops.  Point-to-point ops are
 * cancelled. */
static void abandon(devq_eng_req *q)
{
    if (q->blk_comm) {
        /* Still queued or inside MPI on the helper, which frees it when
         * (if ever) the call returns; finished: freed now. */
        devq_eng_comm *c = q->blk_comm;
        pthread_mutex_lock(&c->blk_lock);
        int finished = q->blk_state;
        if (!finished)
            q->blk_abandoned = 1;
        pthread_mutex_unlock(&c->blk_lock);
        if (finished)
            req_free(q);
        return;
    }
    if (q->p2p) {
        MPI_Cancel(&q->req);
        MPI_Request_free(&q->req);
        free(q);
        return;
    }
    if (q->small) {
        small_abandon(q);
        return;
    }
    /* A collective left running: its communicator must outlive it
     * (Open MPI's libnbc progresses an orphaned schedule on a freed
     * communicator and crashes), so comm_destroy will not free it. */
    q->owner->orphans = 1;
}

static const struct devq_engine_ops mpi_engine = {
    .abi_version = DEVQ_ENGINE_ABI_VERSION,
    .size = sizeof(struct devq_engine_ops),
    .name = "mpi",
    .comm_id = comm_id,
    .comm_create = comm_create,
    .comm_split = comm_split,
    .comm_rank = comm_rank,
    .comm_size = comm_size,
    .comm_destroy = comm_destroy,
    .start = start,
    .test = test,
    .abandon = abandon,
    .comm_from_handle = comm_from_handle,
    .notice_send = notice_send,
    .notice_poll = notice_poll,
};

EXPORT int devq_engine_init(const struct devq_host *h, uint32_t host_abi, const struct devq_engine_ops **ops)
{
    if (!h || host_abi < 1 || h->size < sizeof *h)
        return -EINVAL;
    host = h;
    *ops = &mpi_engine;
    return 0;
}
