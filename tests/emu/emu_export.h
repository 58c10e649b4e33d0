/* SPDX-License-Identifier: MIT */
/* The engine's entry points for libraries layered on an emulated driver
 * (the emulated NCCL/RCCL, emu_nccl.c): libcuda-emu.so and
 * libamdhip64-emu.so export devq_emu_engine(), which returns this table,
 * so such a library enqueues on, and poisons, the very streams of the
 * driver instance the plugin loaded.  Everything else stays hidden. */
#ifndef DEVQ_EMU_EXPORT_H
#define DEVQ_EMU_EXPORT_H

#include "emu_engine.h"

#define EMU_ENGINE_API_VERSION 1

struct emu_engine_api {
    unsigned version; /* EMU_ENGINE_API_VERSION */
    bool (*stream_valid)(const emu_stream *s);
    emu_ctx *(*stream_ctx)(emu_stream *s);
    int (*enqueue_host_fn)(emu_stream *s, emu_host_fn fn, void *arg, bool run_on_error);
    int (*ctx_status)(emu_ctx *c);
    void (*ctx_poison)(emu_ctx *c, int code);
    int (*ctx_ordinal)(const emu_ctx *c);
};

typedef const struct emu_engine_api *(*devq_emu_engine_fn)(void);

/* Defined in emu_export.c, exported by each emulated driver. */
const struct emu_engine_api *devq_emu_engine(void);

#endif
