/* SPDX-License-Identifier: MIT */
/* SPIR-V before the driver: every module is validated with SPIRV-Tools
 * (the Khronos validator, the one spirv-val runs) for the Vulkan 1.3
 * environment, and only a valid one is reflected with SPIRV-Cross's C API
 * and handed to vkCreateShaderModule.  Drivers trust their input: a bad
 * id bound made lavapipe write out of bounds, a truncated module hung
 * the validation layer.  Reflection gives the kernel's interface in
 * devq's argument ABI (kernel.c): storage buffers at bindings 0..n-1 of
 * set 0, one push-constant block, the local size, the capabilities. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spirv-tools/libspirv.h>
#include <spirv_cross/spirv_cross_c.h>
#include "vk_plugin.h"

/* The validator's verdict; its own message in msg ("" when valid). */
static int validate(const uint32_t *words, size_t nwords, char *msg, size_t n)
{
    msg[0] = 0;
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_3);
    spv_validator_options opt = spvValidatorOptionsCreate();
    if (!ctx || !opt) {
        spvValidatorOptionsDestroy(opt);
        spvContextDestroy(ctx);
        snprintf(msg, n, "out of memory in the validator");
        return -ENOMEM;
    }
    spv_const_binary_t bin = { words, nwords };
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidateWithOptions(ctx, opt, &bin, &diag);
    if (r != SPV_SUCCESS) {
        const char *t = diag && diag->error ? diag->error : "invalid";
        if (diag && !diag->isTextSource && diag->position.index)
            snprintf(msg, n, "word %zu: %s", diag->position.index, t);
        else
            snprintf(msg, n, "%s", t);
        /* One line: the validator appends the offending instruction. */
        for (char *c = msg; *c; c++)
            if (*c == '\n' || *c == '\r')
                *c = ' ';
    }
    spvDiagnosticDestroy(diag);
    spvValidatorOptionsDestroy(opt);
    spvContextDestroy(ctx);
    return r == SPV_SUCCESS ? 0 : r == SPV_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EINVAL;
}

struct reflect {
    struct devq_pl_device *d;
    spvc_compiler c;
    struct vk_iface *out;
};

#define REFUSE(rf, err, ...) vk_host->error(err, "vulkan:%u: kernel_load: " __VA_ARGS__)

static const char *resource_kind(spvc_resource_type t)
{
    switch (t) {
    case SPVC_RESOURCE_TYPE_UNIFORM_BUFFER:
        return "a uniform buffer";
    case SPVC_RESOURCE_TYPE_STORAGE_IMAGE:
        return "a storage image";
    case SPVC_RESOURCE_TYPE_SAMPLED_IMAGE:
        return "a sampled image";
    case SPVC_RESOURCE_TYPE_SEPARATE_IMAGE:
        return "an image";
    case SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS:
        return "a sampler";
    case SPVC_RESOURCE_TYPE_ATOMIC_COUNTER:
        return "an atomic counter";
    case SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE:
        return "an acceleration structure";
    default:
        return "a resource";
    }
}

/* Storage buffers: exactly bindings 0..n-1 of set 0, one descriptor each;
 * any other descriptor is outside devq's ABI. */
static int reflect_buffers(struct reflect *rf, spvc_resources res)
{
    static const spvc_resource_type others[] = {
        SPVC_RESOURCE_TYPE_UNIFORM_BUFFER,         SPVC_RESOURCE_TYPE_STORAGE_IMAGE,
        SPVC_RESOURCE_TYPE_SAMPLED_IMAGE,          SPVC_RESOURCE_TYPE_SEPARATE_IMAGE,
        SPVC_RESOURCE_TYPE_SEPARATE_SAMPLERS,      SPVC_RESOURCE_TYPE_ATOMIC_COUNTER,
        SPVC_RESOURCE_TYPE_ACCELERATION_STRUCTURE,
    };
    const spvc_reflected_resource *list;
    size_t n;
    uint32_t ord = rf->d->ordinal;
    for (size_t t = 0; t < sizeof others / sizeof others[0]; t++)
        if (spvc_resources_get_resource_list_for_type(res, others[t], &list, &n) == SPVC_SUCCESS && n)
            return REFUSE(rf, -EINVAL,
                          "'%s' is %s; devq passes only storage buffers (bindings 0..n-1 of "
                          "set 0, in argument order) and push constants",
                          ord, list[0].name ? list[0].name : "?", resource_kind(others[t]));
    if (spvc_resources_get_resource_list_for_type(res, SPVC_RESOURCE_TYPE_STORAGE_BUFFER, &list, &n) !=
        SPVC_SUCCESS)
        return REFUSE(rf, -EINVAL, "reflection failed: %s", ord, "storage buffers");
    /* Several variables may share a binding (views of one buffer as
     * different types): the buffers are the distinct bindings. */
    uint64_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned set = spvc_compiler_get_decoration(rf->c, list[i].id, SpvDecorationDescriptorSet);
        unsigned binding = spvc_compiler_get_decoration(rf->c, list[i].id, SpvDecorationBinding);
        spvc_type type = spvc_compiler_get_type_handle(rf->c, list[i].type_id);
        const char *name = list[i].name && *list[i].name ? list[i].name : "(unnamed)";
        if (set != 0)
            return REFUSE(rf, -EINVAL, "storage buffer '%s' is in descriptor set %u; devq binds set 0 only",
                          ord, name, set);
        if (binding >= VK_MAX_BUFFERS)
            return REFUSE(rf, -EINVAL, "storage buffer '%s' has binding %u; devq binds at most %d buffers",
                          ord, name, binding, VK_MAX_BUFFERS);
        if (spvc_type_get_num_array_dimensions(type))
            return REFUSE(rf, -EINVAL,
                          "storage buffer '%s' (binding %u) is an array of descriptors; devq "
                          "binds one buffer per binding",
                          ord, name, binding);
        seen |= 1ull << binding;
    }
    for (n = 0; n < VK_MAX_BUFFERS && (seen >> n & 1); n++)
        ;
    /* n == 64 when all 64 bindings are used: shifting by 64 is undefined. */
    if (n < VK_MAX_BUFFERS && seen >> n)
        return REFUSE(rf, -EINVAL,
                      "the shader has storage buffers at bindings up to %d but none at binding %zu; "
                      "devq binds buffer arguments to bindings 0..n-1 of set 0, in argument order",
                      ord, 63 - __builtin_clzll(seen), n);
    rf->out->nbuf = (uint32_t)n;
    return 0;
}

/* The push-constant block: its size and its members' offsets and sizes. */
static int reflect_push_constants(struct reflect *rf, spvc_resources res)
{
    const spvc_reflected_resource *list;
    size_t n;
    uint32_t ord = rf->d->ordinal;
    if (spvc_resources_get_resource_list_for_type(res, SPVC_RESOURCE_TYPE_PUSH_CONSTANT, &list, &n) !=
        SPVC_SUCCESS)
        return REFUSE(rf, -EINVAL, "reflection failed: %s", ord, "push constants");
    if (!n)
        return 0;
    spvc_type type = spvc_compiler_get_type_handle(rf->c, list[0].base_type_id);
    size_t size = 0;
    if (spvc_compiler_get_declared_struct_size(rf->c, type, &size) != SPVC_SUCCESS)
        return REFUSE(rf, -EINVAL, "reflection failed: %s", ord, "push-constant block size");
    unsigned nm = spvc_type_get_num_member_types(type);
    if (nm > VK_MAX_VALUES)
        return REFUSE(rf, -EINVAL, "the push-constant block has %u members; devq takes at most %d", ord, nm,
                      VK_MAX_VALUES);
    /* Members in offset order (explicit offsets may differ from the
     * declaration order); the block ends where its furthest member does. */
    for (unsigned i = 0; i < nm; i++) {
        unsigned off = 0;
        size_t msize = 0;
        if (spvc_compiler_type_struct_member_offset(rf->c, type, i, &off) != SPVC_SUCCESS ||
            spvc_compiler_get_declared_struct_member_size(rf->c, type, i, &msize) != SPVC_SUCCESS ||
            msize > UINT32_MAX)
            return REFUSE(rf, -EINVAL, "reflection failed: push-constant member %u", ord, i);
        if ((uint64_t)off + msize > size)
            size = (uint64_t)off + msize;
        unsigned j = i;
        for (; j > 0 && rf->out->values[j - 1].offset > off; j--)
            rf->out->values[j] = rf->out->values[j - 1];
        rf->out->values[j] = (struct vk_member){ off, (uint32_t)msize };
    }
    if (size > rf->d->props.limits.maxPushConstantsSize)
        return REFUSE(rf, -ENOTSUP,
                      "the push-constant block is %zu bytes; this device has %u (pass a buffer "
                      "instead)",
                      ord, size, rf->d->props.limits.maxPushConstantsSize);
    rf->out->nvalues = nm;
    rf->out->pc_size = (uint32_t)size;
    return 0;
}

static int reflect_caps(struct reflect *rf)
{
    const SpvCapability *caps;
    size_t n;
    if (spvc_compiler_get_declared_capabilities(rf->c, &caps, &n) != SPVC_SUCCESS)
        return REFUSE(rf, -EINVAL, "reflection failed: %s", rf->d->ordinal, "capabilities");
    if (n > VK_MAX_CAPS)
        n = VK_MAX_CAPS;
    for (size_t i = 0; i < n; i++)
        rf->out->caps[i] = (uint32_t)caps[i];
    rf->out->ncaps = (uint32_t)n;
    return 0;
}

/* Is entry a GLCompute entry point?  Lists the module's in have. */
static bool has_entry(spvc_compiler c, const char *entry, char *have, size_t n)
{
    const spvc_entry_point *ep;
    size_t nep = 0;
    bool found = false;
    have[0] = 0;
    if (spvc_compiler_get_entry_points(c, &ep, &nep) != SPVC_SUCCESS)
        return false;
    for (size_t i = 0; i < nep; i++) {
        if (ep[i].execution_model != SpvExecutionModelGLCompute)
            continue;
        found |= !strcmp(ep[i].name, entry);
        size_t l = strlen(have);
        snprintf(have + l, n - l, "%s%s", l ? ", " : "", ep[i].name);
    }
    return found;
}

static int reflect(struct devq_pl_device *d, spvc_context ctx, const uint32_t *w, size_t nw,
                   const char *entry, struct vk_iface *out)
{
    spvc_parsed_ir ir;
    struct reflect rf = { .d = d, .out = out };
    if (spvc_context_parse_spirv(ctx, w, nw, &ir) != SPVC_SUCCESS ||
        spvc_context_create_compiler(ctx, SPVC_BACKEND_NONE, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &rf.c) !=
            SPVC_SUCCESS)
        return vk_host->error(-EINVAL, "vulkan:%u: kernel_load: SPIRV-Cross cannot read the module: %s",
                              d->ordinal, spvc_context_get_last_error_string(ctx));
    char have[256];
    if (!has_entry(rf.c, entry, have, sizeof have))
        return vk_host->error(-ENOENT,
                              "vulkan:%u: kernel_load: no compute entry point '%s' in the SPIR-V "
                              "(has: %s)",
                              d->ordinal, entry, have[0] ? have : "none");
    if (spvc_compiler_set_entry_point(rf.c, entry, SpvExecutionModelGLCompute) != SPVC_SUCCESS)
        return vk_host->error(-EINVAL, "vulkan:%u: kernel_load: entry '%s': %s", d->ordinal, entry,
                              spvc_context_get_last_error_string(ctx));
    spvc_resources res;
    if (spvc_compiler_create_shader_resources(rf.c, &res) != SPVC_SUCCESS)
        return vk_host->error(-EINVAL, "vulkan:%u: kernel_load: SPIRV-Cross: %s", d->ordinal,
                              spvc_context_get_last_error_string(ctx));
    int err = reflect_buffers(&rf, res);
    if (!err)
        err = reflect_push_constants(&rf, res);
    if (!err)
        err = reflect_caps(&rf);
    if (!err)
        err = vk_spirv_local_size(d, w, nw, entry, out);
    return err;
}

int vk_spirv_check(struct devq_pl_device *d, const void *image, size_t size, const char *entry,
                   struct vk_iface *out)
{
    memset(out, 0, sizeof *out);
    if (!image || !size || size % 4)
        return vk_host->error(-EINVAL,
                              "vulkan:%u: kernel_load: the image is not SPIR-V (%zu bytes, not whole "
                              "32-bit words; compile the shader with glslc -fshader-stage=compute)",
                              d->ordinal, size);
    char msg[512];
    int err = validate(image, size / 4, msg, sizeof msg);
    if (err)
        return vk_host->error(err,
                              "vulkan:%u: kernel_load: invalid SPIR-V (spirv-val --target-env "
                              "vulkan1.3): %s",
                              d->ordinal, msg);
    spvc_context ctx;
    if (spvc_context_create(&ctx) != SPVC_SUCCESS)
        return vk_host->error(-ENOMEM, "vulkan:%u: kernel_load: out of memory", d->ordinal);
    err = reflect(d, ctx, image, size / 4, entry, out);
    spvc_context_destroy(ctx);
    if (!err)
        err = vk_features_check(d, out);
    return err;
}
