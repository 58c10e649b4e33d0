/* SPDX-License-Identifier: MIT */
/* Unit tests of the tracker's bookkeeping, without a backend: `align` is
 * a recording stub.  The first four port the cubecl MultiStream tests
 * (../shared/seeds/001): shared-binding analysis and the cursor and
 * last_synced state after a resolve. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "signal_int.h"
#include "tracker.h"
#include "../helpers/check_main.h"

struct align_log {
    int n;
    uint32_t dst[64], src[64];
};

static int record_align(void *ctx, uint32_t dst, uint32_t src, uint64_t need, uint64_t *synced,
                        const char *why)
{
    (void)need;
    (void)why;
    (void)synced; /* the tail: *synced stays src's cursor */
    struct align_log *l = ctx;
    if (l->n < 64) {
        l->dst[l->n] = dst;
        l->src[l->n] = src;
    }
    l->n++;
    return 0;
}

static const struct devq_tracker_ops ops = { .align = record_align };
static struct align_log alog;
static struct devq_tracker *t;
static uint32_t s1, s2, s3;

static void setup(void)
{
    alog = (struct align_log){ 0 };
    ck_assert_int_eq(devq__tracker_create(&ops, &alog, &t), 0);
    ck_assert_int_eq(devq__tracker_stream_add(t, &s1), 0);
    ck_assert_int_eq(devq__tracker_stream_add(t, &s2), 0);
    ck_assert_int_eq(devq__tracker_stream_add(t, &s3), 0);
}

static void teardown(void)
{
    devq__tracker_destroy(t);
}

/* A buffer last written by the current unit of `stream` (cubecl's
 * "binding created on a stream"). */
static void binding_on(struct devq_buffer_track *b, uint32_t stream)
{
    devq__tracker_buffer_init(b);
    b->write = devq__tracker_here(t, stream);
}

/* cubecl: resolve(stream_1, []) and resolve(stream_2, []). */
static void resolve_empty_both(void)
{
    devq__tracker_begin(t, s1);
    devq__tracker_begin(t, s2);
}

START_TEST(shared_bindings_1)
{
    resolve_empty_both();
    struct devq_buffer_track b1, b2;
    binding_on(&b1, s1);
    binding_on(&b2, s2);
    devq__tracker_begin(t, s1);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b1, DEVQ_READ), 0);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b2, DEVQ_READ), 1); /* only b2 is shared */
    ck_assert_int_eq(alog.n, 1);
    ck_assert_uint_eq(alog.dst[0], s1);
    ck_assert_uint_eq(alog.src[0], s2);
    devq__tracker_buffer_fini(&b1);
    devq__tracker_buffer_fini(&b2);
}
END_TEST

START_TEST(shared_bindings_2)
{
    resolve_empty_both();
    struct devq_buffer_track b1, b2, b3;
    binding_on(&b1, s1);
    binding_on(&b2, s2);
    binding_on(&b3, s1);
    devq__tracker_begin(t, s1);
    int waits = devq__tracker_bind(t, s1, &b1, DEVQ_READ) + devq__tracker_bind(t, s1, &b2, DEVQ_READ) +
                devq__tracker_bind(t, s1, &b3, DEVQ_READ);
    ck_assert_int_eq(waits, 1);
    ck_assert_int_eq(alog.n, 1);
    ck_assert_uint_eq(alog.src[0], s2);
    devq__tracker_buffer_fini(&b1);
    devq__tracker_buffer_fini(&b2);
    devq__tracker_buffer_fini(&b3);
}
END_TEST

START_TEST(no_shared_bindings)
{
    resolve_empty_both();
    struct devq_buffer_track b1, b2, b3;
    binding_on(&b1, s1);
    binding_on(&b2, s1);
    binding_on(&b3, s1);
    devq__tracker_begin(t, s1);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b1, DEVQ_READ_WRITE), 0);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b2, DEVQ_READ), 0);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b3, DEVQ_WRITE), 0);
    ck_assert_int_eq(alog.n, 0);
    devq__tracker_buffer_fini(&b1);
    devq__tracker_buffer_fini(&b2);
    devq__tracker_buffer_fini(&b3);
}
END_TEST

START_TEST(state_after_resolve)
{
    resolve_empty_both();
    struct devq_buffer_track b1, b2, b3;
    binding_on(&b1, s1);
    binding_on(&b2, s2);
    binding_on(&b3, s1);
    devq__tracker_begin(t, s1);
    devq__tracker_bind(t, s1, &b1, DEVQ_READ);
    devq__tracker_bind(t, s1, &b2, DEVQ_READ);
    devq__tracker_bind(t, s1, &b3, DEVQ_READ);
    ck_assert_uint_eq(devq__tracker_last_synced(t, s1, s2), 1);
    ck_assert_uint_eq(devq__tracker_cursor(t, s1), 2);
    ck_assert_uint_eq(devq__tracker_last_synced(t, s2, s1), 0);
    ck_assert_uint_eq(devq__tracker_last_synced(t, s2, s3), 0);
    ck_assert_uint_eq(devq__tracker_cursor(t, s2), 1);
    devq__tracker_buffer_fini(&b1);
    devq__tracker_buffer_fini(&b2);
    devq__tracker_buffer_fini(&b3);
}
END_TEST

START_TEST(write_after_read_waits_for_every_reader)
{
    struct devq_buffer_track b;
    devq__tracker_buffer_init(&b);
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_bind(t, s2, &b, DEVQ_READ), 0);
    devq__tracker_begin(t, s3);
    ck_assert_int_eq(devq__tracker_bind(t, s3, &b, DEVQ_READ), 0); /* RAR: no hazard */
    devq__tracker_begin(t, s1);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b, DEVQ_WRITE), 2);
    ck_assert_uint_eq(b.nreads, 0);
    ck_assert_uint_eq(b.write.stream, s1);
    /* WAW from another stream: one wait, on the writer only. */
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_bind(t, s2, &b, DEVQ_WRITE), 1);
    ck_assert_uint_eq(alog.src[alog.n - 1], s1);
    devq__tracker_buffer_fini(&b);
}
END_TEST

START_TEST(waits_implied_transitively_are_elided)
{
    struct devq_buffer_track a, b;
    devq__tracker_buffer_init(&a);
    devq__tracker_buffer_init(&b);
    devq__tracker_begin(t, s1);
    devq__tracker_bind(t, s1, &a, DEVQ_WRITE);
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_bind(t, s2, &a, DEVQ_READ), 1); /* s2 after s1 */
    devq__tracker_bind(t, s2, &b, DEVQ_WRITE);
    devq__tracker_begin(t, s3);
    ck_assert_int_eq(devq__tracker_bind(t, s3, &b, DEVQ_READ), 1); /* s3 after s2 ... */
    ck_assert_int_eq(devq__tracker_bind(t, s3, &a, DEVQ_READ), 0); /* ... hence after s1 */
    struct devq_tracker_counts c;
    devq__tracker_counts(t, &c);
    ck_assert_uint_eq(c.waits_inserted, 2);
    ck_assert_uint_ge(c.waits_elided, 1);
    devq__tracker_buffer_fini(&a);
    devq__tracker_buffer_fini(&b);
}
END_TEST

START_TEST(reused_stream_id_forgets_old_uses)
{
    struct devq_buffer_track b;
    devq__tracker_buffer_init(&b);
    devq__tracker_begin(t, s2);
    devq__tracker_bind(t, s2, &b, DEVQ_WRITE);
    devq__tracker_stream_remove(t, s2); /* its work completed */
    uint32_t s4;
    ck_assert_int_eq(devq__tracker_stream_add(t, &s4), 0);
    ck_assert_uint_eq(s4, s2); /* id reused ... */
    devq__tracker_begin(t, s1);
    ck_assert_int_eq(devq__tracker_bind(t, s1, &b, DEVQ_READ), 0); /* ... old use ignored */
    ck_assert_int_eq(alog.n, 0);
    struct devq_use uses[4];
    ck_assert_uint_eq(devq__tracker_buffer_uses(t, &b, uses, 4), 1); /* the read on s1 */
    devq__tracker_buffer_fini(&b);
}
END_TEST

START_TEST(many_streams_grow)
{
    uint32_t ids[40];
    for (int i = 0; i < 40; i++)
        ck_assert_int_eq(devq__tracker_stream_add(t, &ids[i]), 0);
    struct devq_buffer_track b;
    devq__tracker_buffer_init(&b);
    devq__tracker_begin(t, ids[39]);
    devq__tracker_bind(t, ids[39], &b, DEVQ_WRITE);
    devq__tracker_begin(t, ids[0]);
    ck_assert_int_eq(devq__tracker_bind(t, ids[0], &b, DEVQ_READ), 1);
    ck_assert_uint_eq(devq__tracker_last_synced(t, ids[0], ids[39]), 1);
    devq__tracker_buffer_fini(&b);
}
END_TEST

START_TEST(signal_producers)
{
    devq_signal *s;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_producer_add(t, s, 5, s2), 0);
    devq__tracker_begin(t, s3);
    ck_assert_int_eq(devq__tracker_producer_add(t, s, 9, s3), 0);
    struct devq_use u;
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 3, &u), 1);
    ck_assert_uint_eq(u.stream, s2); /* the smallest value that satisfies */
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 7, &u), 1);
    ck_assert_uint_eq(u.stream, s3);
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 10, &u), 0);
    devq__tracker_begin(t, s1);
    ck_assert_int_eq(devq__tracker_require(t, s1, &u), 1);
    ck_assert_uint_eq(devq__tracker_last_synced(t, s1, s3), 1);
    devq_signal_destroy(s); /* the tracker keeps its own reference */
}
END_TEST

/* A run of producer records of one signal shares one reference; as the
 * signal reaches their values they are pruned and the reference moves on
 * to the records left, so the signal outlives its user handle for as
 * long as any record names it (a sanitizer or valgrind run sees a use
 * after free otherwise, and a leak if a reference is never released). */
START_TEST(producers_share_a_reference)
{
    devq_signal *s, *x, *y;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    ck_assert_int_eq(devq_signal_create(0, &x), 0);
    ck_assert_int_eq(devq_signal_create(0, &y), 0);
    for (uint64_t v = 1; v <= 12; v++) {
        devq__tracker_begin(t, s2);
        ck_assert_int_eq(devq__tracker_producer_add(t, s, v, s2), 0);
        if (v == 6) {
            devq__tracker_begin(t, s3);
            ck_assert_int_eq(devq__tracker_producer_add(t, x, 1, s3), 0);
        }
    }
    ck_assert_int_eq(devq_signal_set(s, 8), 0);
    /* Past the prune threshold: records 1..8 of s go, the rest stay. */
    for (uint64_t v = 13; v <= 20; v++) {
        devq__tracker_begin(t, s2);
        ck_assert_int_eq(devq__tracker_producer_add(t, s, v, s2), 0);
    }
    devq_signal_destroy(s); /* the records keep it alive */
    struct devq_use u;
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 9, &u), 1);
    ck_assert_uint_eq(u.stream, s2);
    ck_assert_int_eq(devq__tracker_producer_find(t, x, 1, &u), 1);
    ck_assert_uint_eq(u.stream, s3);
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 21, &u), 0);
    /* More prunes: s's records go (its user handle is gone), x's stay. */
    for (uint64_t v = 1; v <= 64; v++) {
        devq__tracker_begin(t, s1);
        ck_assert_int_eq(devq__tracker_producer_add(t, y, v, s1), 0);
    }
    ck_assert_int_eq(devq__tracker_producer_find(t, x, 1, &u), 1);
    ck_assert_uint_eq(u.stream, s3);
    devq_signal_destroy(x);
    devq_signal_destroy(y); /* teardown releases the rest */
}
END_TEST

/* Room reserved for producer records: the adds after it succeed (the
 * straight line records a batch's producers after its signal tails went
 * out, where a failure could no longer fail the signals), and a reserve
 * that cannot be met says so and changes nothing. */
START_TEST(producer_reserve)
{
    enum { N = 40 };
    devq_signal *sig[N];
    ck_assert_int_eq(devq__tracker_producer_reserve(t, 0), 0);
    ck_assert_int_eq(devq__tracker_producer_reserve(t, N), 0);
    devq__tracker_begin(t, s2);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(devq_signal_create(0, &sig[i]), 0);
        ck_assert_int_eq(devq__tracker_producer_add(t, sig[i], 1, s2), 0);
    }
    ck_assert_int_eq(devq__tracker_producer_reserve(t, SIZE_MAX), -ENOMEM);
    ck_assert_ptr_nonnull(strstr(devq_errmsg(), "tracker: out of memory recording"));
    struct devq_use u;
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(devq__tracker_producer_find(t, sig[i], 1, &u), 1);
        ck_assert_uint_eq(u.stream, s2);
        ck_assert_int_eq(devq__tracker_producer_find(t, sig[i], 2, &u), 0);
    }
    /* Reached values are pruned by later adds into reserved room (past
     * the prune threshold, 64 records here). */
    for (int i = 0; i < N; i++)
        ck_assert_int_eq(devq_signal_set(sig[i], 1), 0);
    ck_assert_int_eq(devq__tracker_producer_reserve(t, 30), 0);
    for (uint64_t v = 2; v <= 31; v++)
        ck_assert_int_eq(devq__tracker_producer_add(t, sig[0], v, s2), 0);
    ck_assert_int_eq(devq__tracker_producer_find(t, sig[0], 31, &u), 1);
    ck_assert_int_eq(devq__tracker_producer_find(t, sig[1], 1, &u), 0);
    for (int i = 0; i < N; i++)
        devq_signal_destroy(sig[i]); /* the tracker releases its references at teardown */
}
END_TEST

/* A queue signalling one timeline batch after batch, each waited for:
 * the record of a reached value gives way to the next one of the same
 * signal (holding its reference), a record not reached yet stays, and
 * the signal outlives its user handle while a record names it (a
 * sanitizer or valgrind run sees a use after free or a leak if the
 * reference goes wrong). */
START_TEST(settled_last_producer_gives_way)
{
    devq_signal *s;
    struct devq_use u;
    ck_assert_int_eq(devq_signal_create(0, &s), 0);
    for (uint64_t v = 1; v <= 40; v++) {
        devq__tracker_begin(t, s2);
        ck_assert_int_eq(devq__tracker_producer_add(t, s, v, s2), 0);
        ck_assert_int_eq(devq__tracker_producer_find(t, s, v, &u), 1);
        ck_assert_uint_eq(u.cursor, devq__tracker_here(t, s2).cursor);
        ck_assert_int_eq(devq_signal_set(s, v), 0);
    }
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_producer_add(t, s, 41, s2), 0);
    uint64_t c41 = devq__tracker_here(t, s2).cursor;
    devq__tracker_begin(t, s2);
    ck_assert_int_eq(devq__tracker_producer_add(t, s, 42, s2), 0);
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 41, &u), 1);
    ck_assert_uint_eq(u.cursor, c41); /* 41 not reached: its record stayed */
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 42, &u), 1);
    ck_assert_uint_eq(u.cursor, c41 + 1);
    devq_signal_destroy(s); /* the records keep it alive */
    ck_assert_int_eq(devq__tracker_producer_find(t, s, 42, &u), 1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("tracker");
    TCase *tc = tcase_create("bookkeeping");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, shared_bindings_1);
    tcase_add_test(tc, shared_bindings_2);
    tcase_add_test(tc, no_shared_bindings);
    tcase_add_test(tc, state_after_resolve);
    tcase_add_test(tc, write_after_read_waits_for_every_reader);
    tcase_add_test(tc, waits_implied_transitively_are_elided);
    tcase_add_test(tc, reused_stream_id_forgets_old_uses);
    tcase_add_test(tc, many_streams_grow);
    tcase_add_test(tc, signal_producers);
    tcase_add_test(tc, producers_share_a_reference);
    tcase_add_test(tc, producer_reserve);
    tcase_add_test(tc, settled_last_producer_gives_way);
    suite_add_tcase(s, tc);
    return check_run(s);
}
