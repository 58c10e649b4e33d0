/* SPDX-License-Identifier: MIT */
/* devq_emu_engine(): the engine table of emu_export.h, linked into the
 * emulated drivers (mk/nccl.mk adds it to their sources). */
#include "emu_export.h"

static const struct emu_engine_api api = {
    .version = EMU_ENGINE_API_VERSION,
    .stream_valid = emu_stream_valid,
    .stream_ctx = emu_stream_ctx,
    .enqueue_host_fn = emu_enqueue_host_fn,
    .ctx_status = emu_ctx_status,
    .ctx_poison = emu_ctx_poison,
    .ctx_ordinal = emu_ctx_ordinal,
};

__attribute__((visibility("default"))) const struct emu_engine_api *devq_emu_engine(void)
{
    return &api;
}
