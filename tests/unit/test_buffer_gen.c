/* SPDX-License-Identifier: MIT */
/* A buffer's failure and the order of its writes (buffer_fail.c).
 *
 * Writes are numbered as they are bound (the order the tracker runs them
 * in), and a reader sees only the failures of writes up to the one it
 * reads.  A batch that fails while being issued marks what it writes at
 * once, before earlier readers of the buffer have run: those must not
 * fail, and a later successful write must not erase that failure
 * (tests/soak, SOAK_SEED=25832209731 SOAK_ROUND=513: an earlier batch
 * on the same queue failed with a later batch's issue failure). */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "buffer.h"
#include "buffer_fail.h"
#include "../helpers/check_main.h"

static devq_buffer *fresh(void)
{
    devq_buffer *b = calloc(1, sizeof *b);
    ck_assert_ptr_nonnull(b);
    return b;
}

static void done(devq_buffer *b)
{
    devq__buffer_clear(b, b->wgen + 1000);
    free(b);
}

START_TEST(bind_numbers_writes_only)
{
    devq_buffer *b = fresh();
    ck_assert_uint_eq(devq__buffer_bind_gen(b, DEVQ_READ), 0);
    ck_assert_uint_eq(devq__buffer_bind_gen(b, DEVQ_WRITE), 0); /* reads 0, is write 1 */
    ck_assert_uint_eq(devq__buffer_bind_gen(b, DEVQ_READ), 1);
    ck_assert_uint_eq(devq__buffer_bind_gen(b, DEVQ_READ_WRITE), 1); /* reads 1, is write 2 */
    ck_assert_uint_eq(b->wgen, 2);
    done(b);
}
END_TEST

/* Write 3 fails early: a reader of write 2 does not see it, a reader of
 * write 3 does; the public status says failed. */
START_TEST(early_failure_is_not_seen_by_earlier_readers)
{
    devq_buffer *b = fresh();
    devq__buffer_fail(b, -EIO, "write 3 failed at issue", 3);
    char cause[128] = "";
    ck_assert_int_eq(devq__buffer_failed_at(b, 2, cause, sizeof cause), 0);
    ck_assert_int_eq(devq__buffer_failed_at(b, 3, cause, sizeof cause), -EIO);
    ck_assert_str_eq(cause, "write 3 failed at issue");
    ck_assert_int_eq(devq__buffer_failed(b, NULL, 0), -EIO);
    done(b);
}
END_TEST

/* An earlier write that ran well does not clear a later write's early
 * failure; a write after it does. */
START_TEST(earlier_clear_keeps_a_later_failure)
{
    devq_buffer *b = fresh();
    devq__buffer_fail(b, -EIO, "write 3", 3);
    devq__buffer_clear(b, 2);
    ck_assert_int_eq(devq__buffer_failed_at(b, 3, NULL, 0), -EIO);
    ck_assert_int_eq(devq__buffer_failed_at(b, 7, NULL, 0), -EIO);
    devq__buffer_clear(b, 4);
    ck_assert_int_eq(devq__buffer_failed(b, NULL, 0), 0);
    ck_assert_int_eq(devq__buffer_failed_at(b, 4, NULL, 0), 0);
    done(b);
}
END_TEST

/* Write 3 fails early, then write 1's failure arrives: a reader between
 * them (of write 2) fails; the newest failure's cause is kept. */
START_TEST(two_failures_cover_the_readers_between)
{
    devq_buffer *b = fresh();
    devq__buffer_fail(b, -EIO, "write 3", 3);
    devq__buffer_fail(b, -ENODEV, "write 1", 1);
    char cause[64] = "";
    ck_assert_int_eq(devq__buffer_failed_at(b, 0, cause, sizeof cause), 0);
    ck_assert_int_ne(devq__buffer_failed_at(b, 2, cause, sizeof cause), 0);
    ck_assert_str_eq(cause, "write 3");
    /* A good write 2 overwrote write 1: only write 3's failure is left. */
    devq__buffer_clear(b, 2);
    ck_assert_int_eq(devq__buffer_failed_at(b, 2, NULL, 0), 0);
    ck_assert_int_ne(devq__buffer_failed_at(b, 3, NULL, 0), 0);
    done(b);
}
END_TEST

/* Generations wrap around 2^32. */
START_TEST(generations_wrap)
{
    devq_buffer *b = fresh();
    b->wgen = UINT32_MAX;
    uint32_t g = devq__buffer_bind_gen(b, DEVQ_WRITE); /* reads UINT32_MAX, is write 0 */
    devq__buffer_fail(b, -EIO, "wrapped", g + 1);
    ck_assert_int_eq(devq__buffer_failed_at(b, UINT32_MAX, NULL, 0), 0);
    ck_assert_int_eq(devq__buffer_failed_at(b, 0, NULL, 0), -EIO);
    ck_assert_int_eq(devq__buffer_failed_at(b, 5, NULL, 0), -EIO);
    done(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("buffer_gen");
    TCase *tc = tcase_create("gen");
    tcase_add_test(tc, bind_numbers_writes_only);
    tcase_add_test(tc, early_failure_is_not_seen_by_earlier_readers);
    tcase_add_test(tc, earlier_clear_keeps_a_later_failure);
    tcase_add_test(tc, two_failures_cover_the_readers_between);
    tcase_add_test(tc, generations_wrap);
    suite_add_tcase(s, tc);
    return check_run(s);
}
