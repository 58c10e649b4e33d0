/* SPDX-License-Identifier: MIT */
/* Emulated accelerator engine for devq's plugin tests.
 *
 * The engine knows nothing of CUDA or HIP: it has devices, contexts,
 * in-order streams run by host worker threads, events, host functions,
 * kernels (host C functions run once per block), memory (host malloc;
 * device pointers are host addresses) and 64-bit value waits/writes.
 * A "face" maps a driver API onto it: the CUDA and HIP faces share a
 * front end (emu_face.h, emu_front_*.c) and keep what differs in
 * emu_cuda.c and emu_hip.c.
 *
 * Status codes: 0 is success, negative values are the engine's own
 * EMU_E_* errors, positive values are a face's error code injected by
 * DEVQ_EMU_FAIL and passed through unchanged.
 *
 * Environment (read once by emu_init):
 *   DEVQ_EMU_DEVICES=N        number of devices (default 1)
 *   DEVQ_EMU_NO_MEMPOOL=1     devices report no stream-ordered pools
 *   DEVQ_EMU_NO_STREAM_MEMOPS=1  devices report no 64-bit value wait/write
 *   DEVQ_EMU_MEMORY=BYTES     memory per device (default 4 GiB, accounting only)
 *   DEVQ_EMU_DELAY=US         random delay up to US microseconds before each op
 *   DEVQ_EMU_SEED=N           seed of those delays (printed once to stderr)
 *   DEVQ_EMU_TRACE=1          a stderr line per op queued and run
 *   DEVQ_EMU_FAIL=func:N:ERR[,...]  the Nth call of func fails with ERR
 *   DEVQ_EMU_MISSING=sym[,...]      the face reports these symbols absent
 *   DEVQ_EMU_GRAPH_KERNEL_FAIL=N:K[:ERR]  in the Nth graph launch, the Kth
 *                             kernel node run fails with ERR (a sticky
 *                             error; default the launch failure)
 */
#ifndef DEVQ_EMU_ENGINE_H
#define DEVQ_EMU_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>

enum emu_status {
    EMU_OK = 0,
    EMU_E_INVALID_VALUE = -1,
    EMU_E_INVALID_HANDLE = -2,
    EMU_E_OUT_OF_MEMORY = -3,
    EMU_E_NOT_READY = -4,
    EMU_E_NOT_FOUND = -5,
    EMU_E_INVALID_IMAGE = -6,
    EMU_E_ILLEGAL_ADDRESS = -7, /* sticky */
    EMU_E_LAUNCH_FAILED = -8,   /* sticky */
    EMU_E_NOT_INITIALIZED = -9,
    EMU_E_INVALID_DEVICE = -10,
    EMU_E_INVALID_CONTEXT = -11,
    EMU_E_ALREADY_REGISTERED = -12,
    EMU_E_NOT_REGISTERED = -13,
    EMU_E_NOT_SUPPORTED = -14,
};

/* What a face tells the engine about itself. */
struct emu_face {
    const char *name; /* "cuda", "hip": used in messages */
    /* Parse an error name of DEVQ_EMU_FAIL into the face's code (> 0)
     * and whether that error poisons the context. */
    bool (*parse_error)(const char *name, int *code, bool *sticky);
};

/* An error to raise when an op executes (code 0: none). */
struct emu_fail {
    int code;
    bool sticky;
};

struct emu_device_attrs {
    char name[64];
    uint64_t total_memory;
    int multiprocessors;
    int async_engines;
    bool memory_pools;
    bool stream_memops;
};

/* ---- process ---- */
int emu_init(const struct emu_face *face); /* idempotent */
bool emu_initialized(void);
int emu_device_count(void);
const struct emu_device_attrs *emu_device_attrs(int ordinal); /* NULL if out of range */
bool emu_symbol_missing(const char *name);                    /* DEVQ_EMU_MISSING */
/* Count a call of func; true (and the error) when DEVQ_EMU_FAIL says this
 * call fails. */
bool emu_fault_take(const char *func, struct emu_fail *fail);

/* ---- contexts: one primary context per device ---- */
typedef struct emu_ctx emu_ctx;
int emu_primary_retain(int ordinal, emu_ctx **out);
int emu_primary_release(int ordinal); /* last release resets the context */
int emu_ctx_ordinal(const emu_ctx *c);
int emu_ctx_status(emu_ctx *c); /* 0 or the sticky error */
/* Bumped when the last release destroys the context: streams and events
 * of an older generation are dead (EMU_E_INVALID_CONTEXT). */
uint64_t emu_ctx_generation(emu_ctx *c);
void emu_ctx_poison(emu_ctx *c, int code); /* first cause wins */
int emu_ctx_synchronize(emu_ctx *c);

/* ---- streams ---- */
typedef struct emu_stream emu_stream;
int emu_stream_create(emu_ctx *c, int priority, emu_stream **out);
/* Returns at once; the worker finishes queued work, then frees itself. */
int emu_stream_destroy(emu_stream *s);
int emu_stream_synchronize(emu_stream *s);
int emu_stream_query(emu_stream *s); /* 0, EMU_E_NOT_READY, sticky */
emu_ctx *emu_stream_ctx(emu_stream *s);
bool emu_stream_valid(const emu_stream *s);

/* Ops: each enqueues and returns 0, or an error without enqueueing.
 * After a context is poisoned queued ops are skipped, except host
 * functions enqueued with run_on_error, which get the error as status. */
typedef void (*emu_host_fn)(void *arg, int status);
typedef int (*emu_kernel_fn)(void **params, const devq_cpu_group *g);

int emu_enqueue_copy(emu_stream *s, void *dst, const void *src, size_t n, struct emu_fail f);
int emu_enqueue_fill(emu_stream *s, void *dst, uint8_t byte, size_t n, struct emu_fail f);
int emu_enqueue_host_fn(emu_stream *s, emu_host_fn fn, void *arg, bool run_on_error);
/* params[i] points at sizes[i] bytes, copied now (as drivers do); the
 * kernel gets a pointer to each copy, or, where deref[i] is set (deref
 * may be NULL), the pointer stored in it: devq's cpu-kernel convention,
 * where a buffer argument is its address itself. */
int emu_enqueue_kernel(emu_stream *s, emu_kernel_fn fn, const uint32_t grid[3], const uint32_t block[3],
                       void *const *params, const size_t *sizes, const bool *deref, size_t nparams,
                       struct emu_fail f);
/* Later ops wait until (int64_t)(*addr - value) >= 0. */
int emu_enqueue_wait_value(emu_stream *s, uint64_t *addr, uint64_t value);
int emu_enqueue_write_value(emu_stream *s, uint64_t *addr, uint64_t value);
/* Stream-ordered free of memory from emu_mem_alloc. */
int emu_enqueue_free(emu_stream *s, void *ptr);

/* ---- events ---- */
typedef struct emu_event emu_event;
int emu_event_create(emu_ctx *c, bool timing, emu_event **out);
int emu_event_destroy(emu_event *e);
bool emu_event_valid(const emu_event *e);
int emu_event_record(emu_event *e, emu_stream *s);
int emu_event_query(emu_event *e); /* 0, EMU_E_NOT_READY, sticky */
int emu_event_synchronize(emu_event *e);
int emu_event_elapsed_ms(emu_event *start, emu_event *end, float *ms);
int emu_stream_wait_event(emu_stream *s, emu_event *e);

/* ---- memory ---- */
int emu_mem_alloc(emu_ctx *c, size_t bytes, void **out);
int emu_mem_free(void *ptr);
bool emu_mem_known(const void *ptr);
int emu_host_register(void *p, size_t bytes);
/* Whether [p, p + bytes) lies in one registered range. */
bool emu_host_registered(const void *p, size_t bytes);
int emu_host_unregister(void *p);
int emu_host_device_pointer(void *p, void **out);

/* ---- graphs (emu_graph.c): kernel nodes with dependencies, made
 * executable once, launched as one stream op ---- */
typedef struct emu_graph emu_graph;
typedef struct emu_graph_node emu_graph_node;
typedef struct emu_graph_exec emu_graph_exec;

/* A kernel node's launch, as emu_enqueue_kernel takes it. */
struct emu_kernel_call {
    emu_kernel_fn fn;
    uint32_t grid[3], block[3];
    void *const *params;
    const size_t *sizes;
    const bool *deref;
    size_t nparams;
};

int emu_graph_create(emu_graph **out);
bool emu_graph_valid(const emu_graph *g);
/* Its nodes go with it; executable graphs made from it stay. */
int emu_graph_destroy(emu_graph *g);
/* The parameters are copied now; deps are nodes of g. */
int emu_graph_add_kernel(emu_graph *g, emu_graph_node *const *deps, size_t ndeps,
                         const struct emu_kernel_call *k, emu_graph_node **out);
/* Nodes in dependency order (EMU_E_INVALID_VALUE for a cycle). */
int emu_graph_instantiate(emu_graph *g, emu_graph_exec **out);
bool emu_graph_exec_valid(const emu_graph_exec *x);
/* node (of the graph x was made from) takes k's parameters for the
 * launches queued after this call; those already queued keep theirs. */
int emu_graph_exec_set_kernel(emu_graph_exec *x, const emu_graph_node *node, const struct emu_kernel_call *k);
/* One op on s running every node in order; f is raised when it runs. */
int emu_graph_launch(emu_graph_exec *x, emu_stream *s, struct emu_fail f);
/* At once; what queued launches run is freed after the last one. */
int emu_graph_exec_destroy(emu_graph_exec *x);

/* ---- modules: "devq-emu-module" text images (emu_module.c) ---- */
#define EMU_MAX_PARAMS 32
struct emu_kfunc {
    char name[128];
    size_t nparams;
    size_t sizes[EMU_MAX_PARAMS];
    bool deref[EMU_MAX_PARAMS]; /* cpu-args: pass the pointer itself */
    emu_kernel_fn fn;           /* set by emu_module_function */
};
typedef struct emu_kmodule emu_kmodule;
int emu_module_parse(const char *text, emu_kmodule **out); /* EMU_E_INVALID_IMAGE if malformed */
bool emu_module_valid(const emu_kmodule *m);
int emu_module_unload(emu_kmodule *m);
/* Find name in m and resolve it with dlsym(RTLD_DEFAULT): EMU_E_NOT_FOUND
 * when either fails. */
int emu_module_function(emu_kmodule *m, const char *name, struct emu_kfunc **out);

/* internal, shared by the engine's files */
uint64_t emu__now_ns(void);
unsigned emu__delay_max_us(void);
unsigned emu__seed(void);
bool emu__trace(void);
void emu__wake_value_waiters(void);
void emu__ctx_attach_stream(emu_ctx *c, emu_stream *s);
void emu__ctx_detach_stream(emu_ctx *c, emu_stream *s);
void emu__stream_kick(emu_stream *s); /* wake waits after a poison */
void emu__ctx_event_lock(emu_ctx *c);
void emu__ctx_event_unlock(emu_ctx *c);
void emu__ctx_event_wait(emu_ctx *c);
void emu__ctx_event_broadcast(emu_ctx *c);
void emu__mem_account(emu_ctx *c, int64_t delta);
bool emu__mem_reserve(emu_ctx *c, size_t bytes);
void emu__mem_release_ctx(emu_ctx *c); /* a destroyed context's memory */
/* A kernel's parameters in one block (emu_enqueue_kernel's copy). */
int emu__kernel_pack(void *const *params, const size_t *sizes, const bool *deref, size_t nparams,
                     void ***out);
/* Run fn once per block: 0 or EMU_E_LAUNCH_FAILED. */
int emu__kernel_run(emu_kernel_fn fn, const uint32_t grid[3], const uint32_t block[3], void **params);
/* An op that calls run(arg) (its return: a sticky error or 0), skipped
 * once the context is poisoned; release(arg) after it either way. */
int emu__enqueue_call(emu_stream *s, int (*run)(void *arg), void (*release)(void *arg), void *arg,
                      struct emu_fail f);
/* The face's name and error names (DEVQ_EMU_* parsing). */
const struct emu_face *emu__face(void);

#endif
