/* SPDX-License-Identifier: MIT */
/* The shared front of the emulated drivers (emu_face.h), part two:
 * streams, stream callbacks and host functions, events. */
#define _GNU_SOURCE
#include <stdlib.h>
#include "emu_face.h"

static emu_stream *stream_of(face_stream s)
{
    return (emu_stream *)s;
}

/* ---- streams ---- */

EXPORT face_result FACE(cuStreamCreateWithPriority,
                        hipStreamCreateWithPriority)(face_stream *ph, unsigned int flags, int priority)
{
    CHECK(FACE_STR(cuStreamCreateWithPriority, hipStreamCreateWithPriority));
    if (!ph || (flags & ~(unsigned)FACE(CU_STREAM_NON_BLOCKING, hipStreamNonBlocking)))
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    if (priority > FACE_PRIO_LEAST)
        priority = FACE_PRIO_LEAST;
    if (priority < FACE_PRIO_GREATEST)
        priority = FACE_PRIO_GREATEST;
    emu_stream *s;
    int st = emu_stream_create(face_current(), priority, &s);
    RETURN_MADE(st, ph, (face_stream)s);
}

EXPORT face_result FACE(cuStreamDestroy, hipStreamDestroy)(face_stream h)
{
    CHECK_CALL();
    if (!emu_stream_valid(stream_of(h)))
        return FACE(CUDA_ERROR_INVALID_HANDLE, hipErrorInvalidHandle);
    int poisoned = emu_ctx_status(emu_stream_ctx(stream_of(h)));
    emu_stream_destroy(stream_of(h)); /* resources go back even when poisoned */
    return emu_front_status(poisoned);
}

/* The calls that take one handle and answer with the engine's status. */
#define ONE_HANDLE_CALL(cuda, hip, face_type, engine_fn, engine_type) \
    EXPORT face_result FACE(cuda, hip)(face_type h)                   \
    {                                                                 \
        CHECK(FACE_STR(cuda, hip));                                   \
        return emu_front_status(engine_fn((engine_type *)h));         \
    }

ONE_HANDLE_CALL(cuStreamSynchronize, hipStreamSynchronize, face_stream, emu_stream_synchronize, emu_stream)
ONE_HANDLE_CALL(cuStreamQuery, hipStreamQuery, face_stream, emu_stream_query, emu_stream)
ONE_HANDLE_CALL(cuEventQuery, hipEventQuery, face_event, emu_event_query, emu_event)
ONE_HANDLE_CALL(cuEventSynchronize, hipEventSynchronize, face_event, emu_event_synchronize, emu_event)

EXPORT face_result FACE(cuStreamWaitEvent, hipStreamWaitEvent)(face_stream h, face_event e,
                                                               unsigned int flags)
{
    CHECK(FACE_STR(cuStreamWaitEvent, hipStreamWaitEvent));
    if (flags != 0)
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    return emu_front_status(emu_stream_wait_event(stream_of(h), (emu_event *)e));
}

/* ---- stream callbacks and host functions ----
 * A stream callback runs even after a context error, with the error (what
 * face_callback_status makes of it); a host function (CUDA's
 * cuLaunchHostFunc), like the real driver's, never once the context has
 * failed.  Both are queued to run on error so the record is freed.  The
 * -broken HIP variant has neither. */
#if FACE_HAS_REQUIRED
struct call {
    face_stream stream;
    face_callback callback; /* or: */
    void (*host_fn)(void *arg);
    void *arg;
};

static void run_call(void *arg, int status)
{
    struct call c = *(struct call *)arg;
    free(arg);
    if (!c.callback && status != 0)
        return;
    emu_front_in_callback = true;
    if (c.callback)
        c.callback(c.stream, face_callback_status(status), c.arg);
    else
        c.host_fn(c.arg);
    emu_front_in_callback = false;
}

static face_result enqueue_call(struct call c)
{
    struct call *rec = malloc(sizeof *rec);
    if (!rec)
        return FACE(CUDA_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory);
    *rec = c;
    int st = emu_enqueue_host_fn(stream_of(c.stream), run_call, rec, true);
    if (st)
        free(rec);
    return emu_front_status(st);
}

EXPORT face_result FACE(cuStreamAddCallback, hipStreamAddCallback)(face_stream h, face_callback fn,
                                                                   void *userData, unsigned int flags)
{
    CHECK(FACE_STR(cuStreamAddCallback, hipStreamAddCallback));
    if (!fn || flags != 0)
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    return enqueue_call((struct call){ .stream = h, .callback = fn, .arg = userData });
}

#if defined(EMU_FACE_CUDA) /* HIP's runtime has no hipLaunchHostFunc the plugin uses */
EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *userData)
{
    CHECK("cuLaunchHostFunc");
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    return enqueue_call((struct call){ .stream = h, .host_fn = fn, .arg = userData });
}
#endif
#endif /* FACE_HAS_REQUIRED */

/* ---- events ---- */

EXPORT face_result FACE(cuEventCreate, hipEventCreateWithFlags)(face_event *ph, unsigned int flags)
{
    CHECK(FACE_STR(cuEventCreate, hipEventCreateWithFlags));
    const unsigned blocking = FACE(CU_EVENT_BLOCKING_SYNC, hipEventBlockingSync);
    const unsigned no_timing = FACE(CU_EVENT_DISABLE_TIMING, hipEventDisableTiming);
    if (!ph || (flags & ~(blocking | no_timing)))
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    emu_event *e;
    int st = emu_event_create(face_current(), !(flags & no_timing), &e);
    RETURN_MADE(st, ph, (face_event)e);
}

EXPORT face_result FACE(cuEventDestroy, hipEventDestroy)(face_event e)
{
    CHECK_CALL();
    return emu_front_status(emu_event_destroy((emu_event *)e));
}

EXPORT face_result FACE(cuEventRecord, hipEventRecord)(face_event e, face_stream h)
{
    CHECK(FACE_STR(cuEventRecord, hipEventRecord));
    return emu_front_status(emu_event_record((emu_event *)e, stream_of(h)));
}

EXPORT face_result FACE(cuEventElapsedTime, hipEventElapsedTime)(float *ms, face_event start, face_event end)
{
    CHECK(FACE_STR(cuEventElapsedTime, hipEventElapsedTime));
    if (!ms)
        return FACE(CUDA_ERROR_INVALID_VALUE, hipErrorInvalidValue);
    return emu_front_status(emu_event_elapsed_ms((emu_event *)start, (emu_event *)end, ms));
}
