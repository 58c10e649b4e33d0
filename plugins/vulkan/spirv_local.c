/* SPDX-License-Identifier: MIT */
/* The local size of a validated module's entry point, read from its
 * words.  SPIRV-Cross's C API has a call for it, but that call lets a C++
 * exception escape (which aborts the process) on modules SPIRV-Tools
 * accepts, e.g. a LocalSizeId operand that is a type: the fuzz target
 * found one (tests/fuzz/corpus/spirv).  The words are safe to walk here:
 * the validator checked every instruction's length.
 *
 * Three forms: OpExecutionMode LocalSize x y z (literals);
 * OpExecutionModeId LocalSizeId a b c (glslc for Vulkan 1.3: constants or
 * specialization constants); a WorkgroupSize built-in composite, which
 * overrides both (glslc for older targets). */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>
#include "vk_plugin.h"

enum {
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_DECORATE = 71,
    OP_EXECUTION_MODE_ID = 331,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    DEC_SPEC_ID = 1,
    DEC_BUILTIN = 11,
    BUILTIN_WORKGROUP_SIZE = 25,
    MODEL_GL_COMPUTE = 5,
};

struct module {
    const uint32_t *w;
    size_t nw;
};

/* The instruction defining id (result id in word 2), or 0. */
static size_t definition(const struct module *m, uint32_t id)
{
    for (size_t i = 5; i < m->nw; i += m->w[i] >> 16) {
        uint32_t op = m->w[i] & 0xffff, wc = m->w[i] >> 16;
        if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT || op == OP_CONSTANT_COMPOSITE ||
             op == OP_SPEC_CONSTANT_COMPOSITE) &&
            wc >= 3 && m->w[i + 2] == id)
            return i;
    }
    return 0;
}

static bool spec_id(const struct module *m, uint32_t id, uint32_t *out)
{
    for (size_t i = 5; i < m->nw; i += m->w[i] >> 16)
        if ((m->w[i] & 0xffff) == OP_DECORATE && (m->w[i] >> 16) >= 4 && m->w[i + 1] == id &&
            m->w[i + 2] == DEC_SPEC_ID) {
            *out = m->w[i + 3];
            return true;
        }
    return false;
}

/* A scalar size constant: its value, and its specialization id or
 * UINT32_MAX.  False when id is not a 32-bit scalar constant. */
static bool size_constant(const struct module *m, uint32_t id, uint32_t *value, uint32_t *spec)
{
    size_t i = definition(m, id);
    if (!i || (m->w[i] >> 16) != 4)
        return false;
    uint32_t op = m->w[i] & 0xffff;
    if (op != OP_CONSTANT && op != OP_SPEC_CONSTANT)
        return false;
    *value = m->w[i + 3];
    *spec = UINT32_MAX;
    if (op == OP_SPEC_CONSTANT && !spec_id(m, id, spec))
        *spec = UINT32_MAX;
    return true;
}

static int from_ids(struct devq_pl_device *d, const struct module *m, const uint32_t ids[3],
                    struct vk_iface *out)
{
    for (int k = 0; k < 3; k++)
        if (!size_constant(m, ids[k], &out->local[k], &out->local_spec_id[k]))
            return vk_host->error(-EINVAL,
                                  "vulkan:%u: kernel_load: the local size's dimension %d (id %u) is "
                                  "not a 32-bit constant or specialization constant",
                                  d->ordinal, k, ids[k]);
    return 0;
}

int vk_spirv_local_size(struct devq_pl_device *d, const uint32_t *w, size_t nw, const char *entry,
                        struct vk_iface *out)
{
    struct module m = { w, nw };
    uint32_t fn = UINT32_MAX, ids[3];
    size_t builtin = 0, by_id = 0;
    for (int k = 0; k < 3; k++) {
        out->local[k] = 1;
        out->local_spec_id[k] = UINT32_MAX;
    }
    for (size_t i = 5; i < nw; i += w[i] >> 16) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        if (op == OP_ENTRY_POINT && wc >= 4 && w[i + 1] == MODEL_GL_COMPUTE && fn == UINT32_MAX &&
            strnlen((const char *)&w[i + 3], (wc - 3) * 4) < (wc - 3) * 4 &&
            !strcmp((const char *)&w[i + 3], entry))
            fn = w[i + 2];
        else if (op == OP_DECORATE && wc >= 4 && w[i + 2] == DEC_BUILTIN &&
                 w[i + 3] == BUILTIN_WORKGROUP_SIZE)
            builtin = i;
        else if (op == OP_EXECUTION_MODE && wc >= 6 && w[i + 1] == fn && w[i + 2] == MODE_LOCAL_SIZE)
            memcpy(out->local, &w[i + 3], sizeof out->local);
        else if (op == OP_EXECUTION_MODE_ID && wc >= 6 && w[i + 1] == fn && w[i + 2] == MODE_LOCAL_SIZE_ID)
            by_id = i;
    }
    int err = 0;
    if (builtin) {
        size_t c = definition(&m, w[builtin + 1]);
        if (!c || (w[c] >> 16) != 6)
            return vk_host->error(-EINVAL,
                                  "vulkan:%u: kernel_load: the WorkgroupSize built-in is not a "
                                  "3-component constant",
                                  d->ordinal);
        memcpy(ids, &w[c + 3], sizeof ids);
        err = from_ids(d, &m, ids, out);
    } else if (by_id) {
        memcpy(ids, &w[by_id + 3], sizeof ids);
        err = from_ids(d, &m, ids, out);
    }
    for (int k = 0; k < 3 && !err; k++)
        if (!out->local[k] && out->local_spec_id[k] == UINT32_MAX)
            err = vk_host->error(-EINVAL, "vulkan:%u: kernel_load: the local size is 0 in dimension %d",
                                 d->ordinal, k);
    return err;
}
