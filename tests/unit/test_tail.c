/* SPDX-License-Identifier: MIT */
/* Signal tails (the backend's signal_tail op, lib/queue/straight.c):
 * the signals that end a straight one-shot batch that reads no buffer
 * are set on the stream, right after its last op, with the end callback
 * doing the rest.  Which signals went that way is read from the
 * device's count of tails (internal); what a batch did is read back
 * from the buffers, signals and queues it touched.
 *
 * Here: the fast path is taken (and the end callback's bookkeeping still
 * happens: finish, stats, the timeline); it is not taken when the batch
 * reads a buffer, on a graph replay, or on a backend without the op; a
 * failure on the stream (a kernel that fails) reaches the signal with its
 * cause, never a set; a buffer failed anywhere holds the signal until the
 * end callback cleared what the batch wrote; a batch on another queue
 * waiting for a tail's signal runs (or fails with the same cause); a
 * queue destroyed with tails pending; and a bounded stress of pipelined
 * tails with a waiter on another thread; the end callback refused after
 * the tails went out (out of memory), the tails' signals kept alive
 * until the stream is past them. */
#include <check.h>
#include <stdatomic.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <devq/devq.h>
#include <devq/devq_cpu.h>
#include "device.h"
#include "error.h"
#include "queue.h"
#include "signal_impl.h"
#include "../helpers/check_main.h"

#define SEC 1000000000ull

static uint64_t tail_count(devq_device *dev)
{
    struct devq_device *d = (struct devq_device *)dev;
    pthread_mutex_lock(&d->lock);
    uint64_t n = d->qs->tails;
    pthread_mutex_unlock(&d->lock);
    return n;
}

static int fails_eio(void *const *args, const devq_cpu_group *g)
{
    (void)args, (void)g;
    return -EIO;
}

static int writes_nothing(void *const *args, const devq_cpu_group *g)
{
    (void)args, (void)g;
    return 0;
}

static void read_back(devq_queue *q, devq_buffer *b, unsigned char *host, size_t n)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_queue_read(q, host, b, 0, n), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), 0);
    devq_signal_destroy(s);
}

/* fill + signal, 100 times: a tail each, the value and bytes right, and
 * the end callback still completes every batch (finish, stats). */
START_TEST(fill_then_signal_takes_the_tail)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *s, *s2;
    unsigned char host[64];
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, sizeof host, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    devq_stats st0, st1;
    ck_assert_int_eq(devq_stats_get(dev, &st0), 0);
    uint64_t before = tail_count(dev);
    for (uint64_t i = 1; i <= 100; i++) {
        ck_assert_int_eq(devq_queue_fill(q, b, 0, sizeof host, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_signal(q, s, i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        ck_assert_int_eq(devq_signal_wait(s, i, 10 * SEC), 0);
    }
    ck_assert_uint_eq(tail_count(dev) - before, 100);
    /* Two signals at the end: a tail each. */
    ck_assert_int_eq(devq_queue_fill(q, b, 0, sizeof host, 0xab), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 101), 0);
    ck_assert_int_eq(devq_queue_signal(q, s2, 7), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_signal_wait(s2, 7, 10 * SEC), 0);
    ck_assert_int_eq(devq_signal_wait(s, 101, 10 * SEC), 0);
    ck_assert_uint_eq(tail_count(dev) - before, 102);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    ck_assert_int_eq(devq_stats_get(dev, &st1), 0);
    ck_assert_uint_eq(st1.batches_completed - st0.batches_completed, 101);
    ck_assert_uint_eq(st1.batches_failed - st0.batches_failed, 0);
    uint64_t at = tail_count(dev);
    read_back(q, b, host, sizeof host); /* reads b: no tail */
    ck_assert_uint_eq(tail_count(dev) - at, 0);
    for (size_t i = 0; i < sizeof host; i++)
        ck_assert_uint_eq(host[i], 0xab);
    ck_assert_int_eq(devq_signal_status(s), 0);
    ck_assert_uint_eq(devq_signal_value(s), 101);
    devq_signal_destroy(s);
    devq_signal_destroy(s2);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* A cpu device, a queue, a 64-byte buffer, a signal at 0 and kernel fn
 * named name: what the kernel tests start from. */
struct kfx {
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *s;
    devq_kernel *k;
};

static void kfx_open(struct kfx *f, devq_cpu_kernel_fn fn, const char *name)
{
    ck_assert_int_eq(devq_device_open("cpu", &f->dev), 0);
    ck_assert_int_eq(devq_queue_create(f->dev, NULL, &f->q), 0);
    ck_assert_int_eq(devq_buffer_alloc(f->dev, 64, NULL, 0, &f->b), 0);
    ck_assert_int_eq(devq_signal_create(0, &f->s), 0);
    ck_assert_int_eq(devq_kernel_load_fn(f->dev, fn, NULL, name, &f->k), 0);
}

/* A kernel that writes its buffer and fails on the stream: the tail was
 * queued (nothing could fail before the stream ran it) but skipped, and
 * the signal fails with the kernel's error and name, as does what it
 * writes; the queue reports it.  The next batch takes a tail again. */
START_TEST(failure_on_the_stream_fails_the_signal)
{
    struct kfx f;
    kfx_open(&f, fails_eio, "tail_breaker");
    devq_launch l = { .global = { 1, 1, 1 } };
    devq_arg a = DEVQ_ARG_BUF(f.b, DEVQ_WRITE);
    uint64_t at = tail_count(f.dev);
    ck_assert_int_eq(devq_queue_exec(f.q, f.k, &a, 1, &l), 0);
    ck_assert_int_eq(devq_queue_signal(f.q, f.s, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q), 0);
    ck_assert_uint_eq(tail_count(f.dev) - at, 1);
    ck_assert_int_eq(devq_signal_wait(f.s, 1, 10 * SEC), -EIO);
    ck_assert_msg(strstr(devq_errmsg(), "tail_breaker"), "cause: %s", devq_errmsg());
    ck_assert_int_eq(devq_signal_status(f.s), -EIO);
    ck_assert_uint_eq(devq_signal_value(f.s), 0); /* never set */
    ck_assert_int_eq(devq_buffer_status(f.b), -EIO);
    ck_assert_int_eq(devq_queue_finish(f.q, 10 * SEC), -EIO);
    devq_signal *s2;
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    at = tail_count(f.dev);
    ck_assert_int_eq(devq_queue_fill(f.q, f.b, 0, 64, 3), 0); /* rewrites b whole */
    ck_assert_int_eq(devq_queue_signal(f.q, s2, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q), 0);
    ck_assert_int_eq(devq_signal_wait(s2, 1, 10 * SEC), 0);
    ck_assert_uint_eq(tail_count(f.dev) - at, 1);
    ck_assert_int_eq(devq_buffer_status(f.b), 0); /* cleared before the signal was seen */
    devq_signal_destroy(f.s);
    devq_signal_destroy(s2);
    devq_kernel_destroy(f.k);
    ck_assert_int_eq(devq_buffer_free(f.b, NULL), 0);
    devq_queue_destroy(f.q);
    devq_device_close(f.dev);
}
END_TEST

/* A buffer failed elsewhere (a: its fill skipped behind a failed wait)
 * while b is refilled: whenever a waiter sees b's signal, b's own
 * failure (left by an earlier failed writer) is already cleared. */
START_TEST(a_failed_buffer_holds_the_tail_for_the_walk)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *a, *b;
    devq_signal *gate, *s;
    devq_kernel *k;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &a), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &gate), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_fail(gate, -EIO), 0);
    ck_assert_int_eq(devq_queue_wait(q, gate, 1), 0);
    ck_assert_int_eq(devq_queue_fill(q, a, 0, 64, 1), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_eio, NULL, "b_breaker", &k), 0);
    devq_launch l = { .global = { 1, 1, 1 } };
    devq_arg arg = DEVQ_ARG_BUF(b, DEVQ_WRITE);
    ck_assert_int_eq(devq_queue_exec(q, k, &arg, 1, &l), 0);
    ck_assert_int_eq(devq_queue_submit(q), 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), -EIO);
    ck_assert_int_eq(devq_buffer_status(a), -EIO);
    ck_assert_int_eq(devq_buffer_status(b), -EIO);
    for (uint64_t i = 1; i <= 50; i++) {
        ck_assert_int_eq(devq_queue_exec(q, k, &arg, 1, &l), 0); /* fails b again */
        ck_assert_int_eq(devq_queue_submit(q), 0);
        uint64_t at = tail_count(dev);
        ck_assert_int_eq(devq_queue_fill(q, b, 0, 64, 2), 0);
        ck_assert_int_eq(devq_queue_signal(q, s, i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        ck_assert_uint_eq(tail_count(dev) - at, 1); /* queued; it defers to the walk */
        ck_assert_int_eq(devq_signal_wait(s, i, 10 * SEC), 0);
        ck_assert_int_eq(devq_buffer_status(b), 0);
    }
    ck_assert_int_eq(devq_buffer_status(a), -EIO); /* still failed: the tails deferred */
    devq_queue_finish(q, 10 * SEC);
    devq_kernel_destroy(k);
    devq_signal_destroy(gate);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_buffer_free(a, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* q2 waits for a signal q1 sets: with a tail when q1 submits first (q2
 * is ordered after it), without one when q2's batch is already parked
 * on the device (q1 takes the general path); q2's batch runs after q1's
 * either way, and when q1's kernel fails, q2's fails with that cause. */
START_TEST(a_waiter_on_another_queue)
{
    devq_device *dev;
    devq_queue *q1, *q2;
    devq_buffer *b1, *b2;
    devq_signal *s, *done;
    devq_kernel *bad, *ok;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q1), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q2), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b1), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b2), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &done), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_eio, NULL, "upstream", &bad), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, writes_nothing, NULL, "fine", &ok), 0);
    devq_launch l = { .global = { 1, 1, 1 } };
    devq_arg a1 = DEVQ_ARG_BUF(b1, DEVQ_WRITE);
    for (uint64_t i = 1; i <= 40; i++) {
        int fail = i == 40;
        uint64_t at = tail_count(dev);
        /* Odd rounds: q2 first, its wait on work not submitted yet: q2's
         * batch is deferred, parked on the device, and q1's takes the
         * general path (no tail).  Even rounds: q1 first, with a tail,
         * and q2 ordered after q1's stream by the tracker. */
        int deferred = i % 2;
        if (!deferred) {
            ck_assert_int_eq(devq_queue_exec(q1, fail ? bad : ok, &a1, 1, &l), 0);
            ck_assert_int_eq(devq_queue_signal(q1, s, i), 0);
            ck_assert_int_eq(devq_queue_submit(q1), 0);
        }
        ck_assert_int_eq(devq_queue_wait(q2, s, i), 0);
        ck_assert_int_eq(devq_queue_fill(q2, b2, 0, 64, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_signal(q2, done, i), 0);
        ck_assert_int_eq(devq_queue_submit(q2), 0);
        if (deferred) {
            ck_assert_int_eq(devq_queue_exec(q1, fail ? bad : ok, &a1, 1, &l), 0);
            ck_assert_int_eq(devq_queue_signal(q1, s, i), 0);
            ck_assert_int_eq(devq_queue_submit(q1), 0);
        }
        ck_assert_uint_eq(tail_count(dev) - at, deferred ? 0 : 1);
        int r = devq_signal_wait(done, i, 10 * SEC);
        if (!fail) {
            ck_assert_int_eq(r, 0);
            continue;
        }
        ck_assert_int_eq(r, -EIO);
        ck_assert_msg(strstr(devq_errmsg(), "upstream"), "cause: %s", devq_errmsg());
    }
    ck_assert_int_eq(devq_signal_status(s), -EIO);
    devq_queue_finish(q1, 10 * SEC);
    devq_queue_finish(q2, 10 * SEC);
    devq_kernel_destroy(bad);
    devq_kernel_destroy(ok);
    devq_signal_destroy(s);
    devq_signal_destroy(done);
    ck_assert_int_eq(devq_buffer_free(b1, NULL), 0);
    ck_assert_int_eq(devq_buffer_free(b2, NULL), 0);
    devq_queue_destroy(q1);
    devq_queue_destroy(q2);
    devq_device_close(dev);
}
END_TEST

/* A graph replay ends in its end callback (straight.c takes no replay),
 * with the same result. */
START_TEST(a_graph_run_takes_no_tail)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_signal *s;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_queue_begin_capture(q), 0);
    ck_assert_int_eq(devq_queue_fill(q, b, 0, 64, 5), 0);
    ck_assert_int_eq(devq_queue_signal(q, s, 1), 0);
    devq_graph *g;
    devq_graph_exec *ge;
    ck_assert_int_eq(devq_queue_end_capture(q, &g), 0);
    ck_assert_int_eq(devq_graph_instantiate(g, &ge), 0);
    devq_graph_destroy(g);
    uint64_t at = tail_count(dev);
    ck_assert_int_eq(devq_graph_submit(q, ge), 0);
    ck_assert_int_eq(devq_signal_wait(s, 1, 10 * SEC), 0);
    ck_assert_uint_eq(tail_count(dev) - at, 0);
    ck_assert_int_eq(devq_queue_finish(q, 10 * SEC), 0);
    devq_graph_exec_destroy(ge);
    devq_signal_destroy(s);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

/* Destroy (and close) with tails still queued behind slow work: the
 * destroy waits for the batches, and every signal was set. */
static int slow_kernel(void *const *args, const devq_cpu_group *g)
{
    (void)args, (void)g;
    struct timespec ts = { 0, 2000000 };
    nanosleep(&ts, NULL);
    return 0;
}

START_TEST(destroy_with_tails_pending)
{
    for (int round = 0; round < 5; round++) {
        struct kfx f;
        kfx_open(&f, slow_kernel, "slow");
        devq_launch l = { .global = { 1, 1, 1 } };
        devq_arg a = DEVQ_ARG_BUF(f.b, DEVQ_WRITE);
        for (uint64_t i = 1; i <= 8; i++) {
            ck_assert_int_eq(devq_queue_exec(f.q, f.k, &a, 1, &l), 0);
            ck_assert_int_eq(devq_queue_signal(f.q, f.s, i), 0);
            ck_assert_int_eq(devq_queue_submit(f.q), 0);
        }
        devq_kernel_destroy(f.k);
        ck_assert_int_eq(devq_buffer_free(f.b, NULL), 0);
        devq_queue_destroy(f.q);
        devq_device_close(f.dev);
        ck_assert_int_eq(devq_signal_wait(f.s, 8, 10 * SEC), 0);
        ck_assert_int_eq(devq_signal_status(f.s), 0);
        devq_signal_destroy(f.s);
    }
}
END_TEST

/* The end callback refused after the tails were queued (the backend out
 * of memory): the batch ends at once and fails its signal and buffer,
 * while its tail is still queued behind a slow kernel.  The tail's
 * signal keeps one reference until the stream is past the tail: the
 * next batch's end callback drops it, or the queue's destroy
 * (tail_orphan.c); nothing leaks and nothing is touched after its free
 * (the ASan and valgrind runs of this test say so). */
static const struct devq_backend_ops *real_ops;
static struct devq_backend_ops refusing_ops;
static atomic_int refuse_host_fn;

static int host_fn_refused_once(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    if (atomic_exchange(&refuse_host_fn, 0))
        return devq__err(-ENOMEM, "test: host_fn refused (out of memory)");
    return real_ops->host_fn(s, fn, arg);
}

static int signal_refs(devq_signal *s)
{
    return atomic_load(&s->obj.refs);
}

static unsigned orphans(struct devq_queue *q)
{
    return atomic_load(&q->norphans);
}

/* One batch whose end callback is refused: a slow kernel writing f->b,
 * then f->s = 1, its tail queued behind the kernel. */
static void refused_after_tails(struct kfx *f)
{
    struct devq_device *d = (struct devq_device *)f->dev;
    real_ops = d->ops;
    refusing_ops = *real_ops;
    refusing_ops.host_fn = host_fn_refused_once;
    d->ops = &refusing_ops;
    devq_launch l = { .global = { 1, 1, 1 } };
    devq_arg a = DEVQ_ARG_BUF(f->b, DEVQ_WRITE);
    uint64_t at = tail_count(f->dev);
    ck_assert_int_eq(devq_queue_exec(f->q, f->k, &a, 1, &l), 0);
    ck_assert_int_eq(devq_queue_signal(f->q, f->s, 1), 0);
    atomic_store(&refuse_host_fn, 1);
    ck_assert_int_eq(devq_queue_submit(f->q), -ENOMEM);
    ck_assert_msg(strstr(devq_errmsg(), "host_fn refused"), "submit: %s", devq_errmsg());
    ck_assert_uint_eq(tail_count(f->dev) - at, 1); /* the tail went out */
    /* failed now, whatever the tail does when the stream gets there */
    ck_assert_int_eq(devq_signal_wait(f->s, 1, 10 * SEC), -ENOMEM);
    ck_assert_int_eq(devq_buffer_status(f->b), -ENOMEM);
    d->ops = real_ops;
    /* kept, long after the stream is past the tail: nothing else drops it */
    struct timespec settle = { 0, 20000000 };
    nanosleep(&settle, NULL);
    ck_assert_uint_eq(orphans(f->q), 1);
    ck_assert_ptr_eq(f->q->orphans[0].s, f->s);
}

START_TEST(end_callback_refused_after_tails)
{
    struct kfx f;
    kfx_open(&f, slow_kernel, "slow");
    refused_after_tails(&f);
    /* The next batch's end callback runs after the tail: the reference
     * goes then (finish waits for that callback). */
    devq_signal *s2;
    ck_assert_int_eq(devq_signal_create(0, &s2), 0);
    ck_assert_int_eq(devq_queue_fill(f.q, f.b, 0, 64, 7), 0);
    ck_assert_int_eq(devq_queue_signal(f.q, s2, 1), 0);
    ck_assert_int_eq(devq_queue_submit(f.q), 0);
    ck_assert_int_eq(devq_queue_finish(f.q, 10 * SEC), -ENOMEM); /* the first batch's */
    ck_assert_int_eq(devq_signal_status(s2), 0);
    ck_assert_uint_eq(devq_signal_value(s2), 1);
    ck_assert_uint_eq(orphans(f.q), 0);
    ck_assert_int_eq(devq_buffer_status(f.b), 0); /* overwritten by the fill */
    /* And again, with the queue destroyed while the tail is pending:
     * the destroy drops it once the stream stopped. */
    refused_after_tails(&f);
    devq_kernel_destroy(f.k);
    ck_assert_int_eq(devq_buffer_free(f.b, NULL), 0);
    devq_queue_destroy(f.q);
    devq_device_close(f.dev);              /* and its tracker's producer records */
    ck_assert_int_eq(signal_refs(f.s), 1); /* the user's alone: nothing kept */
    devq_signal_destroy(f.s);
    devq_signal_destroy(s2);
}
END_TEST

/* Bounded stress: batches pipelined, every 7th failing on the stream, a
 * thread waiting for every value as it comes.  Batch i sets signal
 * (i-1)/7 to i; the 7th of a run fails it.  Every value below a run's
 * failure is reached, every failure reaches its waiter, nothing is lost
 * or left hanging. */
enum { STRESS_N = 2100 };

struct stress {
    devq_signal *sig[STRESS_N / 7];
    int bad; /* the first value whose wait gave the wrong answer */
    int bad_r;
    char bad_msg[256];
};

static void *stress_waiter(void *arg)
{
    struct stress *st = arg;
    for (int i = 1; i <= STRESS_N; i++) {
        devq_signal *sig = st->sig[(i - 1) / 7];
        int r = devq_signal_wait(sig, (uint64_t)i, 20 * SEC);
        /* A wait that starts after the run's failure returns it, even
         * for a value reached before: then the value shows it was. */
        int ok = i % 7 == 0 ? r == -EIO && devq_signal_value(sig) == (uint64_t)i - 1
                            : r == 0 || (r == -EIO && devq_signal_value(sig) >= (uint64_t)i);
        if (!ok) {
            st->bad = i;
            st->bad_r = r;
            snprintf(st->bad_msg, sizeof st->bad_msg, "%s", devq_errmsg());
            break;
        }
    }
    return NULL;
}

START_TEST(pipelined_stress)
{
    devq_device *dev;
    devq_queue *q;
    devq_buffer *b;
    devq_kernel *bad;
    static struct stress st;
    ck_assert_int_eq(devq_device_open("cpu", &dev), 0);
    ck_assert_int_eq(devq_queue_create(dev, NULL, &q), 0);
    ck_assert_int_eq(devq_buffer_alloc(dev, 64, NULL, 0, &b), 0);
    ck_assert_int_eq(devq_kernel_load_fn(dev, fails_eio, NULL, "every_seventh", &bad), 0);
    for (int r = 0; r < STRESS_N / 7; r++)
        ck_assert_int_eq(devq_signal_create(0, &st.sig[r]), 0);
    st.bad = 0;
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, stress_waiter, &st), 0);
    devq_launch l = { .global = { 1, 1, 1 } };
    devq_arg a = DEVQ_ARG_BUF(b, DEVQ_WRITE);
    uint64_t at = tail_count(dev);
    for (int i = 1; i <= STRESS_N; i++) {
        if (i % 7 == 0)
            ck_assert_int_eq(devq_queue_exec(q, bad, &a, 1, &l), 0);
        else
            ck_assert_int_eq(devq_queue_fill(q, b, 0, 64, (uint8_t)i), 0);
        ck_assert_int_eq(devq_queue_signal(q, st.sig[(i - 1) / 7], (uint64_t)i), 0);
        ck_assert_int_eq(devq_queue_submit(q), 0);
        if (i % 64 == 0) /* stay a few batches ahead, not thousands */
            devq_signal_wait(st.sig[(i - 33) / 7], (uint64_t)(i - 32), 20 * SEC);
    }
    ck_assert_int_eq(pthread_join(th, NULL), 0);
    ck_assert_msg(st.bad == 0, "value %d: %d %s", st.bad, st.bad_r, st.bad_msg);
    ck_assert_uint_eq(tail_count(dev) - at, STRESS_N);
    ck_assert_int_eq(devq_queue_finish(q, 20 * SEC), -EIO);
    for (int r = 0; r < STRESS_N / 7; r++) {
        ck_assert_int_eq(devq_signal_status(st.sig[r]), -EIO);
        ck_assert_uint_eq(devq_signal_value(st.sig[r]), (uint64_t)(7 * r + 6));
        devq_signal_destroy(st.sig[r]);
    }
    devq_kernel_destroy(bad);
    ck_assert_int_eq(devq_buffer_free(b, NULL), 0);
    devq_queue_destroy(q);
    devq_device_close(dev);
}
END_TEST

static Suite *tail_suite(void)
{
    Suite *s = suite_create("tail");
    TCase *tc = tcase_create("paths");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fill_then_signal_takes_the_tail);
    tcase_add_test(tc, failure_on_the_stream_fails_the_signal);
    tcase_add_test(tc, a_failed_buffer_holds_the_tail_for_the_walk);
    tcase_add_test(tc, a_waiter_on_another_queue);
    tcase_add_test(tc, a_graph_run_takes_no_tail);
    tcase_add_test(tc, destroy_with_tails_pending);
    tcase_add_test(tc, pipelined_stress);
    tcase_add_test(tc, end_callback_refused_after_tails);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(tail_suite());
}
