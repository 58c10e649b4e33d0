/* SPDX-License-Identifier: MIT */
/* The object header (lib/base/object.h), alone: one init, retain,
 * release and destroy path for every refcounted lib object, the one
 * place a last release is handed to the deferrer (the notifier in the
 * library; a recording stub here), the registry's unref, and the
 * reference set a batch holds. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "object.h"
#include "../helpers/check_main.h"

#define MAGIC_TEST 0x54455354u /* "TEST" */

/* The header is not first: DEVQ_OBJECT_OWNER finds the owner anyway. */
struct thing {
    char before[40];
    struct devq_object obj;
    _Atomic int destroyed; /* times destroy ran */
};

static void thing_destroy(struct devq_object *o)
{
    struct thing *t = DEVQ_OBJECT_OWNER(o, struct thing, obj);
    t->obj.magic = DEVQ_MAGIC_DEAD;
    atomic_fetch_add(&t->destroyed, 1); /* freed by the test, to read it */
}

static struct thing *thing_new(void)
{
    struct thing *t = calloc(1, sizeof *t);
    ck_assert_ptr_nonnull(t);
    devq__object_init(&t->obj, MAGIC_TEST, thing_destroy);
    return t;
}

/* The recording deferrer: what the notifier would run later. */
static void (*posted_fn)(void *);
static void *posted_arg;
static int posted, deferrer_result;

static int record_post(void (*fn)(void *), void *arg)
{
    if (deferrer_result < 0)
        return deferrer_result;
    posted_fn = fn;
    posted_arg = arg;
    posted++;
    return 0;
}

static void reset_deferrer(void)
{
    devq__object_set_deferrer(NULL);
    posted_fn = NULL;
    posted_arg = NULL;
    posted = 0;
    deferrer_result = 0;
}

START_TEST(init_retain_release_here)
{
    struct thing *t = thing_new();
    ck_assert_uint_eq(t->obj.magic, MAGIC_TEST);
    ck_assert_int_eq(atomic_load(&t->obj.refs), 1);
    devq__object_retain(&t->obj);
    ck_assert_int_eq(atomic_load(&t->obj.refs), 2);
    devq__object_release_here(&t->obj);
    ck_assert_int_eq(atomic_load(&t->destroyed), 0);
    ck_assert_uint_eq(t->obj.magic, MAGIC_TEST);
    devq__object_release_here(&t->obj);
    ck_assert_int_eq(atomic_load(&t->destroyed), 1);
    ck_assert_uint_eq(t->obj.magic, DEVQ_MAGIC_DEAD);
    free(t);
}
END_TEST

START_TEST(last_release_goes_to_the_deferrer)
{
    reset_deferrer();
    devq__object_set_deferrer(record_post);
    struct thing *t = thing_new();
    devq__object_retain(&t->obj);
    devq__object_release(&t->obj); /* not the last: nothing posted */
    ck_assert_int_eq(posted, 0);
    devq__object_release(&t->obj); /* the last: posted, not destroyed */
    ck_assert_int_eq(posted, 1);
    ck_assert_int_eq(atomic_load(&t->destroyed), 0);
    ck_assert_ptr_eq(posted_arg, &t->obj);
    posted_fn(posted_arg); /* the notifier's turn */
    ck_assert_int_eq(atomic_load(&t->destroyed), 1);
    free(t);
    reset_deferrer();
}
END_TEST

START_TEST(deferrer_that_cannot_post_destroys_here)
{
    reset_deferrer();
    devq__object_set_deferrer(record_post);
    deferrer_result = -ENOMEM;
    struct thing *t = thing_new();
    devq__object_release(&t->obj);
    ck_assert_int_eq(posted, 0);
    ck_assert_int_eq(atomic_load(&t->destroyed), 1);
    free(t);
    reset_deferrer();
}
END_TEST

START_TEST(no_deferrer_destroys_here)
{
    reset_deferrer();
    struct thing *t = thing_new();
    devq__object_release(&t->obj);
    ck_assert_int_eq(atomic_load(&t->destroyed), 1);
    free(t);
}
END_TEST

START_TEST(unref_and_release_unless_last)
{
    struct thing *t = thing_new();
    devq__object_retain(&t->obj);
    ck_assert_int_eq(devq__object_release_unless_last(&t->obj), 1);
    ck_assert_int_eq(atomic_load(&t->obj.refs), 1);
    /* The last: left alone for the caller to drop under its lock. */
    ck_assert_int_eq(devq__object_release_unless_last(&t->obj), 0);
    ck_assert_int_eq(atomic_load(&t->obj.refs), 1);
    devq__object_retain(&t->obj);
    ck_assert_int_eq(devq__object_unref(&t->obj), 0);
    ck_assert_int_eq(devq__object_unref(&t->obj), 1);
    ck_assert_int_eq(atomic_load(&t->destroyed), 0); /* unref never destroys */
    free(t);
}
END_TEST

/* Many threads take and drop references while the creator's stays:
 * destroy runs exactly once, at the creator's release, never before. */
#define STRESS_THREADS 8
#define STRESS_ROUNDS (200000 / SCALE)

static void *churn(void *arg)
{
    struct thing *t = arg;
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        devq__object_retain(&t->obj);
        if (i & 1)
            devq__object_release(&t->obj);
        else if (!devq__object_release_unless_last(&t->obj))
            devq__object_release_here(&t->obj);
    }
    return NULL;
}

START_TEST(concurrent_retain_release_destroys_once)
{
    reset_deferrer();
    for (int round = 0; round < 4; round++) {
        struct thing *t = thing_new();
        pthread_t th[STRESS_THREADS];
        for (int i = 0; i < STRESS_THREADS; i++)
            ck_assert_int_eq(pthread_create(&th[i], NULL, churn, t), 0);
        for (int i = 0; i < STRESS_THREADS; i++)
            pthread_join(th[i], NULL);
        ck_assert_int_eq(atomic_load(&t->destroyed), 0);
        ck_assert_int_eq(atomic_load(&t->obj.refs), 1);
        devq__object_release(&t->obj);
        ck_assert_int_eq(atomic_load(&t->destroyed), 1);
        free(t);
    }
}
END_TEST

START_TEST(ref_set_holds_each_object_once)
{
    reset_deferrer();
    struct thing *a = thing_new(), *b = thing_new();
    struct devq_ref_set s = { 0 };
    ck_assert_int_eq(devq__ref_set_reserve(&s, 3), 0);
    devq__ref_set_add(&s, &a->obj);
    devq__ref_set_add(&s, &a->obj); /* the memo knows it */
    devq__ref_set_add(&s, &b->obj);
    ck_assert_uint_eq(s.n, 2);
    ck_assert_int_eq(atomic_load(&a->obj.refs), 2);
    ck_assert_int_eq(atomic_load(&b->obj.refs), 2);
    devq__ref_set_release(&s);
    ck_assert_uint_eq(s.n, 0);
    ck_assert_int_eq(atomic_load(&a->obj.refs), 1);
    ck_assert_int_eq(atomic_load(&b->obj.refs), 1);
    /* Emptied, it forgot a: adding it again takes a reference again. */
    devq__ref_set_add(&s, &a->obj);
    ck_assert_int_eq(atomic_load(&a->obj.refs), 2);
    devq__ref_set_release(&s);
    devq__ref_set_fini(&s);
    ck_assert_int_eq(atomic_load(&a->destroyed) + atomic_load(&b->destroyed), 0);
    devq__object_release_here(&a->obj);
    devq__object_release_here(&b->obj);
    ck_assert_int_eq(atomic_load(&a->destroyed), 1);
    ck_assert_int_eq(atomic_load(&b->destroyed), 1);
    free(a);
    free(b);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("object");
    TCase *tc = tcase_create("header");
    tcase_add_test(tc, init_retain_release_here);
    tcase_add_test(tc, last_release_goes_to_the_deferrer);
    tcase_add_test(tc, deferrer_that_cannot_post_destroys_here);
    tcase_add_test(tc, no_deferrer_destroys_here);
    tcase_add_test(tc, unref_and_release_unless_last);
    tcase_add_test(tc, ref_set_holds_each_object_once);
    suite_add_tcase(s, tc);
    TCase *stress = tcase_create("stress");
    tcase_set_timeout(stress, 60);
    tcase_add_test(stress, concurrent_retain_release_destroys_once);
    suite_add_tcase(s, stress);
    return check_run(s);
}
