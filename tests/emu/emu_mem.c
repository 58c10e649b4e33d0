/* SPDX-License-Identifier: MIT */
/* Emulator engine: device memory (host malloc, device pointer = host
 * address) and host memory registration. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "emu_engine.h"

#define BUCKETS 1024

struct alloc {
    struct alloc *next;
    void *ptr;
    size_t bytes;
    emu_ctx *ctx;
};

struct hostreg {
    struct hostreg *next;
    char *p;
    size_t bytes;
};

static pthread_mutex_t mem_mu = PTHREAD_MUTEX_INITIALIZER;
static struct alloc *table[BUCKETS];
static struct hostreg *hostregs;

static size_t bucket(const void *p)
{
    return ((uintptr_t)p >> 4) * 2654435761u % BUCKETS;
}

int emu_mem_alloc(emu_ctx *c, size_t bytes, void **out)
{
    int st = emu_ctx_status(c);
    if (st)
        return st;
    if (bytes == 0)
        return EMU_E_INVALID_VALUE;
    if (!emu__mem_reserve(c, bytes))
        return EMU_E_OUT_OF_MEMORY;
    struct alloc *a = malloc(sizeof *a);
    /* 256-byte alignment like cudaMalloc's, and memory that is not zero:
     * tests must not pass by luck of calloc. */
    void *p = NULL;
    if (!a || posix_memalign(&p, 256, bytes) != 0) {
        free(a);
        emu__mem_account(c, -(int64_t)bytes);
        return EMU_E_OUT_OF_MEMORY;
    }
    memset(p, 0xa5, bytes);
    a->ptr = p;
    a->bytes = bytes;
    a->ctx = c;
    pthread_mutex_lock(&mem_mu);
    size_t b = bucket(p);
    a->next = table[b];
    table[b] = a;
    pthread_mutex_unlock(&mem_mu);
    *out = p;
    return 0;
}

int emu_mem_free(void *ptr)
{
    if (!ptr)
        return 0;
    pthread_mutex_lock(&mem_mu);
    struct alloc **pp = &table[bucket(ptr)], *a;
    while ((a = *pp) && a->ptr != ptr)
        pp = &a->next;
    if (a)
        *pp = a->next;
    pthread_mutex_unlock(&mem_mu);
    if (!a)
        return EMU_E_INVALID_VALUE;
    emu__mem_account(a->ctx, -(int64_t)a->bytes);
    free(a->ptr);
    free(a);
    return 0;
}

void emu__mem_release_ctx(emu_ctx *c)
{
    struct alloc *dead = NULL;
    pthread_mutex_lock(&mem_mu);
    for (size_t b = 0; b < BUCKETS; b++) {
        struct alloc **pp = &table[b], *a;
        while ((a = *pp)) {
            if (a->ctx == c) {
                *pp = a->next;
                a->next = dead;
                dead = a;
            } else {
                pp = &a->next;
            }
        }
    }
    pthread_mutex_unlock(&mem_mu);
    while (dead) {
        struct alloc *next = dead->next;
        emu__mem_account(c, -(int64_t)dead->bytes);
        free(dead->ptr);
        free(dead);
        dead = next;
    }
}

bool emu_mem_known(const void *ptr)
{
    pthread_mutex_lock(&mem_mu);
    struct alloc *a = table[bucket(ptr)];
    while (a && a->ptr != ptr)
        a = a->next;
    pthread_mutex_unlock(&mem_mu);
    return a != NULL;
}

static struct hostreg *hostreg_find_locked(const char *p, size_t bytes)
{
    for (struct hostreg *r = hostregs; r; r = r->next)
        if (p < r->p + r->bytes && r->p < p + bytes)
            return r;
    return NULL;
}

int emu_host_register(void *p, size_t bytes)
{
    if (!p || !bytes)
        return EMU_E_INVALID_VALUE;
    struct hostreg *r = malloc(sizeof *r);
    if (!r)
        return EMU_E_OUT_OF_MEMORY;
    pthread_mutex_lock(&mem_mu);
    int st = 0;
    if (hostreg_find_locked(p, bytes)) {
        st = EMU_E_ALREADY_REGISTERED;
        free(r);
    } else {
        r->p = p;
        r->bytes = bytes;
        r->next = hostregs;
        hostregs = r;
    }
    pthread_mutex_unlock(&mem_mu);
    return st;
}

int emu_host_unregister(void *p)
{
    pthread_mutex_lock(&mem_mu);
    struct hostreg **pp = &hostregs, *r;
    while ((r = *pp) && r->p != (char *)p)
        pp = &r->next;
    if (r)
        *pp = r->next;
    pthread_mutex_unlock(&mem_mu);
    int st = r ? 0 : EMU_E_NOT_REGISTERED;
    free(r);
    return st;
}

bool emu_host_registered(const void *p, size_t bytes)
{
    pthread_mutex_lock(&mem_mu);
    struct hostreg *r = hostreg_find_locked(p, bytes);
    bool whole = r && r->p <= (const char *)p && (const char *)p + bytes <= r->p + r->bytes;
    pthread_mutex_unlock(&mem_mu);
    return whole;
}

int emu_host_device_pointer(void *p, void **out)
{
    pthread_mutex_lock(&mem_mu);
    struct hostreg *r = hostreg_find_locked(p, 1);
    pthread_mutex_unlock(&mem_mu);
    if (!r)
        return EMU_E_INVALID_VALUE;
    *out = p;
    return 0;
}
