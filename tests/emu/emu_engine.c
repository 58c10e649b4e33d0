/* SPDX-License-Identifier: MIT */
/* Emulator engine: process state, environment, fault injection, devices
 * and contexts.  Streams and events are in emu_stream.c, memory in
 * emu_mem.c. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "emu_engine.h"

#define EMU_MAX_DEVICES 16
#define EMU_MAX_RULES 16

struct emu_rule {
    char func[64];
    long nth; /* 1-based call that fails */
    atomic_long calls;
    struct emu_fail fail;
};

struct emu_ctx {
    int ordinal;
    pthread_mutex_t mu; /* refs, streams */
    int refs;
    atomic_int sticky; /* 0 or the poisoning error */
    atomic_uint_fast64_t generation;
    emu_stream **streams; /* live streams, for waking after a poison */
    size_t nstreams, cap;
    /* Event state of every event of this context changes under ev_mu and
     * is announced on ev_cv: one condvar keeps poison wake-ups simple. */
    pthread_mutex_t ev_mu;
    pthread_cond_t ev_cv;
    int64_t mem_outstanding;
};

static struct {
    pthread_once_t once;
    int status;
    const struct emu_face *face;
    int ndevices;
    struct emu_device_attrs attrs[EMU_MAX_DEVICES];
    emu_ctx ctx[EMU_MAX_DEVICES];
    struct emu_rule rules[EMU_MAX_RULES];
    int nrules;
    char missing[512];
    unsigned delay_max_us, seed;
    bool trace;
} emu = { .once = PTHREAD_ONCE_INIT };

static const struct emu_face *pending_face;

uint64_t emu__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct emu_face *emu__face(void)
{
    return emu.face;
}

unsigned emu__delay_max_us(void)
{
    return emu.delay_max_us;
}
unsigned emu__seed(void)
{
    return emu.seed;
}
bool emu__trace(void)
{
    return emu.trace;
}

static long env_long(const char *name, long dflt, long min, long max)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 0);
    if (errno || *end || n < min || n > max) {
        fprintf(stderr, "devq-emu: %s='%s' is not a number in [%ld, %ld]; using %ld\n", name, v, min, max,
                dflt);
        return dflt;
    }
    return n;
}

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

/* DEVQ_EMU_FAIL=func:N:ERROR[,func:N:ERROR...] */
static int parse_faults(void)
{
    const char *v = getenv("DEVQ_EMU_FAIL");
    if (!v || !*v)
        return 0;
    char *copy = strdup(v), *save = NULL;
    if (!copy)
        return EMU_E_OUT_OF_MEMORY;
    int st = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *c1 = strchr(tok, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        struct emu_rule *r = &emu.rules[emu.nrules];
        char *end = NULL;
        if (emu.nrules == EMU_MAX_RULES || !c1 || !c2 || (size_t)(c1 - tok) >= sizeof r->func) {
            fprintf(stderr, "devq-emu: DEVQ_EMU_FAIL: bad rule '%s' (want func:N:ERROR, at most %d)\n", tok,
                    EMU_MAX_RULES);
            st = EMU_E_INVALID_VALUE;
            continue;
        }
        *c1 = *c2 = '\0';
        r->nth = strtol(c1 + 1, &end, 10);
        if (*end || r->nth < 1 || !emu.face->parse_error(c2 + 1, &r->fail.code, &r->fail.sticky)) {
            fprintf(stderr, "devq-emu: DEVQ_EMU_FAIL: bad count '%s' or unknown %s error '%s'\n", c1 + 1,
                    emu.face->name, c2 + 1);
            st = EMU_E_INVALID_VALUE;
            continue;
        }
        strcpy(r->func, tok);
        atomic_init(&r->calls, 0);
        emu.nrules++;
    }
    free(copy);
    return st;
}

static void init_once(void)
{
    emu.face = pending_face;
    emu.ndevices = (int)env_long("DEVQ_EMU_DEVICES", 1, 0, EMU_MAX_DEVICES);
    uint64_t mem = (uint64_t)env_long("DEVQ_EMU_MEMORY", 4l << 30, 1 << 20, 1l << 40);
    bool no_pool = env_flag("DEVQ_EMU_NO_MEMPOOL"), no_memops = env_flag("DEVQ_EMU_NO_STREAM_MEMOPS");
    for (int i = 0; i < emu.ndevices; i++) {
        struct emu_device_attrs *a = &emu.attrs[i];
        snprintf(a->name, sizeof a->name, "devq emulated %s device %d", emu.face->name, i);
        a->total_memory = mem;
        a->multiprocessors = 4;
        a->async_engines = 2;
        a->memory_pools = !no_pool;
        a->stream_memops = !no_memops;
    }
    for (int i = 0; i < EMU_MAX_DEVICES; i++) {
        emu_ctx *c = &emu.ctx[i];
        c->ordinal = i;
        pthread_mutex_init(&c->mu, NULL);
        pthread_mutex_init(&c->ev_mu, NULL);
        pthread_cond_init(&c->ev_cv, NULL);
        atomic_init(&c->sticky, 0);
        atomic_init(&c->generation, 1);
    }
    const char *m = getenv("DEVQ_EMU_MISSING");
    snprintf(emu.missing, sizeof emu.missing, ",%s,", m ? m : "");
    emu.trace = env_flag("DEVQ_EMU_TRACE");
    emu.delay_max_us = (unsigned)env_long("DEVQ_EMU_DELAY", 0, 0, 1000000);
    emu.seed = (unsigned)env_long("DEVQ_EMU_SEED", (long)(emu__now_ns() % 1000000007u), 0, 0x7fffffff);
    if (emu.delay_max_us)
        fprintf(stderr, "devq-emu: random op delays up to %u us, DEVQ_EMU_SEED=%u\n", emu.delay_max_us,
                emu.seed);
    emu.status = parse_faults();
}

int emu_init(const struct emu_face *face)
{
    pending_face = face;
    pthread_once(&emu.once, init_once);
    return emu.status;
}

bool emu_initialized(void)
{
    return emu.face != NULL && emu.status == 0;
}

int emu_device_count(void)
{
    return emu.ndevices;
}

const struct emu_device_attrs *emu_device_attrs(int ordinal)
{
    return ordinal >= 0 && ordinal < emu.ndevices ? &emu.attrs[ordinal] : NULL;
}

bool emu_symbol_missing(const char *name)
{
    char key[80];
    snprintf(key, sizeof key, ",%s,", name);
    return strstr(emu.missing, key) != NULL;
}

bool emu_fault_take(const char *func, struct emu_fail *fail)
{
    for (int i = 0; i < emu.nrules; i++) {
        struct emu_rule *r = &emu.rules[i];
        if (strcmp(r->func, func) != 0)
            continue;
        if (atomic_fetch_add(&r->calls, 1) + 1 == r->nth) {
            *fail = r->fail;
            return true;
        }
    }
    return false;
}

/* ---- contexts ---- */

static void wake_all(emu_ctx *c);

int emu_primary_retain(int ordinal, emu_ctx **out)
{
    if (!emu_device_attrs(ordinal))
        return EMU_E_INVALID_DEVICE;
    emu_ctx *c = &emu.ctx[ordinal];
    pthread_mutex_lock(&c->mu);
    c->refs++;
    pthread_mutex_unlock(&c->mu);
    *out = c;
    return 0;
}

int emu_primary_release(int ordinal)
{
    if (!emu_device_attrs(ordinal))
        return EMU_E_INVALID_DEVICE;
    emu_ctx *c = &emu.ctx[ordinal];
    pthread_mutex_lock(&c->mu);
    int st = 0;
    bool destroyed = false;
    if (c->refs == 0)
        st = EMU_E_INVALID_CONTEXT;
    else if (--c->refs == 0) {
        /* Destroyed, as a real primary context is at its last release: its
         * streams and events die, its memory goes, and the next retain
         * starts clean. */
        atomic_fetch_add(&c->generation, 1);
        atomic_store(&c->sticky, 0);
        destroyed = true;
    }
    pthread_mutex_unlock(&c->mu);
    if (destroyed) {
        wake_all(c);
        emu__mem_release_ctx(c);
    }
    return st;
}

uint64_t emu_ctx_generation(emu_ctx *c)
{
    return atomic_load_explicit(&c->generation, memory_order_acquire);
}

int emu_ctx_ordinal(const emu_ctx *c)
{
    return c->ordinal;
}

int emu_ctx_status(emu_ctx *c)
{
    return atomic_load_explicit(&c->sticky, memory_order_acquire);
}

void emu_ctx_poison(emu_ctx *c, int code)
{
    int zero = 0;
    if (atomic_compare_exchange_strong(&c->sticky, &zero, code))
        wake_all(c);
}

/* Wake every wait of c's streams that may now never be satisfied: they
 * see the poison (or the dead generation) and give up, so a lost context
 * never hangs a thread. */
static void wake_all(emu_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nstreams; i++)
        emu__stream_kick(c->streams[i]);
    pthread_mutex_unlock(&c->mu);
    /* Streams of other contexts may wait on this one's events. */
    for (int i = 0; i < EMU_MAX_DEVICES; i++) {
        emu__ctx_event_lock(&emu.ctx[i]);
        emu__ctx_event_broadcast(&emu.ctx[i]);
        emu__ctx_event_unlock(&emu.ctx[i]);
    }
    emu__wake_value_waiters();
}

int emu_ctx_synchronize(emu_ctx *c)
{
    pthread_mutex_lock(&c->mu);
    size_t n = c->nstreams;
    emu_stream **copy = n ? malloc(n * sizeof *copy) : NULL;
    if (n && !copy) {
        pthread_mutex_unlock(&c->mu);
        return EMU_E_OUT_OF_MEMORY;
    }
    if (n)
        memcpy(copy, c->streams, n * sizeof *copy);
    pthread_mutex_unlock(&c->mu);
    /* Streams destroyed meanwhile finish on their own; a stream is only
     * freed after detaching, which needs c->mu, so racing here is the
     * caller's bug exactly as with a real driver. */
    for (size_t i = 0; i < n; i++)
        emu_stream_synchronize(copy[i]);
    free(copy);
    return emu_ctx_status(c);
}

void emu__ctx_attach_stream(emu_ctx *c, emu_stream *s)
{
    pthread_mutex_lock(&c->mu);
    if (c->nstreams == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        emu_stream **n = realloc(c->streams, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&c->mu);
            return; /* only costs poison wake-ups for this stream */
        }
        c->streams = n;
        c->cap = cap;
    }
    c->streams[c->nstreams++] = s;
    pthread_mutex_unlock(&c->mu);
}

void emu__ctx_detach_stream(emu_ctx *c, emu_stream *s)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nstreams; i++)
        if (c->streams[i] == s) {
            c->streams[i] = c->streams[--c->nstreams];
            break;
        }
    if (c->nstreams == 0) {
        free(c->streams);
        c->streams = NULL;
        c->cap = 0;
    }
    pthread_mutex_unlock(&c->mu);
}

void emu__ctx_event_lock(emu_ctx *c)
{
    pthread_mutex_lock(&c->ev_mu);
}
void emu__ctx_event_unlock(emu_ctx *c)
{
    pthread_mutex_unlock(&c->ev_mu);
}
void emu__ctx_event_wait(emu_ctx *c)
{
    pthread_cond_wait(&c->ev_cv, &c->ev_mu);
}
void emu__ctx_event_broadcast(emu_ctx *c)
{
    pthread_cond_broadcast(&c->ev_cv);
}

void emu__mem_account(emu_ctx *c, int64_t delta)
{
    pthread_mutex_lock(&c->mu);
    c->mem_outstanding += delta;
    pthread_mutex_unlock(&c->mu);
}

/* Reserve bytes against the device's memory; false when it does not fit. */
bool emu__mem_reserve(emu_ctx *c, size_t bytes)
{
    pthread_mutex_lock(&c->mu);
    bool ok = (uint64_t)c->mem_outstanding + bytes <= emu.attrs[c->ordinal].total_memory;
    if (ok)
        c->mem_outstanding += (int64_t)bytes;
    pthread_mutex_unlock(&c->mu);
    return ok;
}
