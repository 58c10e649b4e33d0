/* SPDX-License-Identifier: MIT */
/* The front end the two emulated drivers share.  The CUDA face
 * (libcuda-emu.so) and the HIP face (libamdhip64-emu.so) export the same
 * calls under other names and types: emu_front_*.c define each such call
 * once, and are compiled once per face, with EMU_FACE_CUDA or
 * EMU_FACE_HIP (mk/cuda.mk, mk/hip.mk).  FACE(cuda, hip) picks the word
 * of this build; FACE_STR the name as a string (before cuda_decls.h's
 * macros turn cuMemAlloc into cuMemAlloc_v2: DEVQ_EMU_FAIL takes the base
 * name).  emu_cuda.c and emu_hip.c hold only what truly differs: the
 * calls one driver lacks, its contexts or per-thread device, its error
 * lookups, and the hooks declared at the end. */
#ifndef DEVQ_EMU_FACE_H
#define DEVQ_EMU_FACE_H

#include <stdint.h>
#include "emu_engine.h"

#if defined(EMU_FACE_CUDA)
#define FACE(cuda, hip) cuda
#define FACE_STR(cuda, hip) #cuda
#define DEVQ_CUDA_DECLS_PROTOTYPES
#include "cuda_decls.h" /* plugins/cuda: no CUDA toolkit needed */
#elif defined(EMU_FACE_HIP)
#define FACE(cuda, hip) hip
#define FACE_STR(cuda, hip) #hip
#include <hip/hip_runtime_api.h>
#else
#error "build the emulator's front end with EMU_FACE_CUDA or EMU_FACE_HIP"
#endif

#define EXPORT __attribute__((visibility("default")))

/* The HIP variants leave functions out (the plugin finds them with dlsym,
 * so only a library without them tests that path): -old lacks the
 * optional ones (pools, value waits), -broken required ones. */
#if defined(EMU_HIP_NO_OPTIONAL)
#define FACE_HAS_OPTIONAL 0
#else
#define FACE_HAS_OPTIONAL 1
#endif
#if defined(EMU_HIP_NO_REQUIRED)
#define FACE_HAS_REQUIRED 0
#else
#define FACE_HAS_REQUIRED 1
#endif

typedef FACE(CUresult, hipError_t) face_result;
typedef FACE(CUstream, hipStream_t) face_stream;
typedef FACE(CUevent, hipEvent_t) face_event;
typedef FACE(CUmodule, hipModule_t) face_module;
typedef FACE(CUfunction, hipFunction_t) face_function;
typedef FACE(CUstreamCallback, hipStreamCallback_t) face_callback;
/* A device pointer: an integer in CUDA, a pointer in HIP. */
typedef FACE(CUdeviceptr, hipDeviceptr_t) face_dptr;
#define DPTR(p) ((face_dptr)(uintptr_t)(p))
#define HPTR(d) ((void *)(uintptr_t)(d))

/* Stream priorities: CUDA's 0 (low) to -5 (high), ROCm's 1 to -1. */
#define FACE_PRIO_LEAST FACE(0, 1)
#define FACE_PRIO_GREATEST FACE(-5, -1)
/* What cuDriverGetVersion (a CUDA 13.0 driver, whatever headers built the
 * emulator) and hipRuntimeGetVersion (the headers' HIP_VERSION) report
 * unless DEVQ_EMU_DRIVER_VERSION says otherwise. */
#define FACE_DEFAULT_VERSION FACE(13000, HIP_VERSION)
/* A block's limits, also what the device attributes report. */
#define FACE_MAX_THREADS 1024
#define FACE_MAX_SHARED (FACE(48, 64) * 1024)

/* ---- the shared front (emu_front_core.c) ---- */

/* What the face tells the engine: its name and its DEVQ_EMU_FAIL names. */
extern const struct emu_face emu_front_face;

/* Set while a host function or stream callback runs: the driver refuses
 * every call from there.  initial-exec: a dlopened library's dynamic TLS
 * trips LeakSanitizer's thread scan (it reads a bogus DTLS range and
 * crashes at exit). */
extern __thread bool emu_front_in_callback __attribute__((tls_model("initial-exec")));

/* Engine status -> the face's code (a face code > 0 passes unchanged). */
face_result emu_front_status(int st);
/* The face's error table: name and text of a code, NULL if unknown. */
const char *emu_front_error_name(face_result code);
const char *emu_front_error_text(face_result code);
/* DEVQ_EMU_DRIVER_VERSION, else FACE_DEFAULT_VERSION. */
int emu_front_version(void);
/* The checks of a query that needs only the init: the library is
 * initialised and out is not NULL. */
face_result emu_front_out_check(const void *out);
/* DEVQ_EMU_FAIL for a call that fails on the spot; a sticky error also
 * poisons the current context, as a real one would be. */
face_result emu_front_inject(const char *func);
/* For work that runs on a stream: a sticky error happens when the work
 * runs (the call itself succeeds, as with a real faulting kernel) and is
 * left in *later; other errors are returned by the call. */
face_result emu_front_inject_async(const char *func, struct emu_fail *later);
/* What every call but the init and the queries checks first: the
 * library is initialised, and this is not a stream callback. */
face_result emu_front_call_check(void);
/* call_check, a usable current context, func's DEVQ_EMU_FAIL (func NULL:
 * the caller injects its own), the context not poisoned. */
face_result emu_front_ctx_check(const char *func);
/* The value waits of both drivers past their flags: supported says the
 * flags ask for what the engine does (>= on the whole word). */
face_result emu_front_wait_value(const char *func, face_stream h, void *addr, uint64_t value, bool supported);

/* Hand out what an engine call made: on success *out = made; the
 * engine's status as the face's. */
#define RETURN_MADE(st, out, made)   \
    do {                             \
        if (!(st))                   \
            *(out) = (made);         \
        return emu_front_status(st); \
    } while (0)

#define CHECK_CALL()                             \
    do {                                         \
        face_result r_ = emu_front_call_check(); \
        if (r_)                                  \
            return r_;                           \
    } while (0)

#define CHECK(func)                                 \
    do {                                            \
        face_result r_ = emu_front_ctx_check(func); \
        if (r_)                                     \
            return r_;                              \
    } while (0)

#define ASYNC_INJECT(func, later)                              \
    CHECK(NULL);                                               \
    struct emu_fail later;                                     \
    do {                                                       \
        face_result r_ = emu_front_inject_async(func, &later); \
        if (r_)                                                \
            return r_;                                         \
    } while (0)

/* ---- hooks each face defines (emu_cuda.c, emu_hip.c) ---- */

/* The library is initialised (HIP initialises itself at the first call). */
bool face_ready(void);
/* The calling thread's context: CUDA's current one, HIP's current
 * device's primary one; NULL if none. */
emu_ctx *face_current(void);
/* Why there is no usable current context (0: there is one). */
face_result face_no_context(void);
/* The status a stream callback is handed for the engine's status. */
face_result face_callback_status(int st);

#endif
