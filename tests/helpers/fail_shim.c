/* SPDX-License-Identifier: MIT */
/* An LD_PRELOAD shim that makes thread creation and allocation fail on
 * demand (issue 27: tests/unit/test_exhaust, tests/unit/malloc_sweep).
 *
 * pthread_create fails with EAGAIN while thread failure is on, as it
 * does under RLIMIT_NPROC.  The allocation functions count the calls
 * made while armed and fail the Nth one (once), as malloc failing
 * inside any library call would.  A test reaches the switches with
 * dlsym(RTLD_DEFAULT, ...): found means the shim is loaded.  Whether the
 * program's calls reach it is for the test to try: a sanitizer linked
 * into the program comes first.  ASan's and TSan's pthread_create still
 * end in this one (their REAL() is the next definition), their malloc
 * never does.
 *
 * The real functions are glibc's __libc_* entry points and the next
 * pthread_create: no dlsym on the allocation path, which would recurse. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The switches (found by the tests with dlsym). */
void failshim_threads(int on);
long failshim_alloc_arm(long n);

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

static _Atomic int fail_threads;
static _Atomic long alloc_armed; /* 0: off; > 0: fail the call numbered this; < 0: count */
static _Atomic long alloc_count;

void failshim_threads(int on)
{
    atomic_store(&fail_threads, on);
}

/* Fail the nth allocation from now (n >= 1), or count only (n < 0), or
 * stop (0).  Returns the number counted since the last call. */
long failshim_alloc_arm(long n)
{
    long was = atomic_exchange(&alloc_count, 0);
    atomic_store(&alloc_armed, n);
    return was;
}

static int alloc_fails(void)
{
    long armed = atomic_load_explicit(&alloc_armed, memory_order_relaxed);
    if (!armed)
        return 0;
    long n = atomic_fetch_add(&alloc_count, 1) + 1;
    if (armed > 0 && n == armed) {
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *malloc(size_t n)
{
    return alloc_fails() ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    return alloc_fails() ? NULL : __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    return alloc_fails() ? NULL : __libc_realloc(p, n);
}

void free(void *p)
{
    __libc_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    return alloc_fails() ? NULL : __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
    return alloc_fails() ? NULL : __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)))
        return EINVAL;
    if (alloc_fails())
        return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
    static _Atomic(create_fn) real;
    if (atomic_load(&fail_threads))
        return EAGAIN;
    create_fn f = atomic_load(&real);
    if (!f) {
        f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
        atomic_store(&real, f);
    }
    return f(t, attr, fn, arg);
}
