/* SPDX-License-Identifier: MIT */
/* Kernels: SPIR-V compute shaders.  The argument ABI (devq-vulkan(7)):
 *   - buffer arguments are storage buffers, bindings 0, 1, ... of set 0,
 *     in argument order, pushed with VK_KHR_push_descriptor (no pools);
 *   - value arguments are packed, in argument order, each at the next
 *     multiple of 4 bytes, into one push-constant block;
 *   - devq_launch.local is specialization constants 0, 1, 2, so a shader
 *     says `layout(local_size_x_id = 0, local_size_y_id = 1,
 *     local_size_z_id = 2) in;`; global is in work-items and the plugin
 *     dispatches ceil(global / local) groups (in several dispatches with
 *     a base group where that exceeds maxComputeWorkGroupCount, which
 *     gl_GlobalInvocationID includes, so the shader does not know).
 * That is what a GLSL author writes for a compute shader without devq,
 * which is why it was chosen over buffer device addresses.  kernel_load
 * validates and reflects the module first (spirv.c); the pipeline layout
 * is the shader's own (its bindings, its push-constant block), and each
 * launch is checked against it, behind libdevq's check of the declared
 * interface (kernel_iface).  Pipelines are made at first launch and
 * cached per local size. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

struct vk_pipeline {
    struct vk_pipeline *next;
    uint32_t local[3], nbuf, pc;
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
};

struct devq_pl_kernel {
    struct devq_pl_device *dev;
    VkShaderModule mod;
    char entry[128];
    struct vk_iface iface;
    struct devq_pl_param params[VK_MAX_BUFFERS + VK_MAX_VALUES]; /* kernel_iface's */
    struct vk_pipeline *pipes;
};

int vk_kernel_load(struct devq_pl_device *d, const void *image, size_t size, const char *entry,
                   struct devq_pl_kernel **out)
{
    if (!entry || !*entry)
        entry = "main";
    if (strlen(entry) >= sizeof((struct devq_pl_kernel *)0)->entry)
        return vk_host->error(-ENAMETOOLONG, "vulkan:%u: kernel_load: entry name too long", d->ordinal);
    struct devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory loading a kernel", d->ordinal);
    int err = vk_spirv_check(d, image, size, entry, &k->iface);
    if (err) {
        free(k);
        return err;
    }
    k->dev = d;
    strcpy(k->entry, entry);
    VkShaderModuleCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = size,
                                    .pCode = image };
    VkResult r = vk_vkCreateShaderModule(d->dev, &ci, NULL, &k->mod);
    if (r != VK_SUCCESS) {
        free(k);
        return vk_fail(d, "vkCreateShaderModule", r, -EINVAL);
    }
    *out = k;
    return 0;
}

/* Not positional: the buffers are bindings 0..n-1, the values the
 * push-constant members by offset (devq_plugin.h). */
int vk_kernel_iface(struct devq_pl_kernel *k, struct devq_pl_kernel_iface *out)
{
    const struct vk_iface *f = &k->iface;
    uint32_t n = 0;
    for (uint32_t i = 0; i < f->nbuf; i++)
        k->params[n++] =
            (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_BUFFER, .size = 0, .offset = UINT32_MAX };
    for (uint32_t i = 0; i < f->nvalues; i++)
        k->params[n++] = (struct devq_pl_param){ .kind = DEVQ_PL_PARAM_VALUE,
                                                 .size = f->values[i].size,
                                                 .offset = f->values[i].offset };
    *out = (struct devq_pl_kernel_iface){
        .flags = 0, .nparams = n, .params = k->params, .value_block = f->pc_size
    };
    return 0;
}

static void destroy_pipeline(struct devq_pl_device *d, struct vk_pipeline *p)
{
    if (p->pipe)
        vk_vkDestroyPipeline(d->dev, p->pipe, NULL);
    if (p->layout)
        vk_vkDestroyPipelineLayout(d->dev, p->layout, NULL);
    if (p->dsl)
        vk_vkDestroyDescriptorSetLayout(d->dev, p->dsl, NULL);
    free(p);
}

void vk_kernel_destroy(struct devq_pl_kernel *k)
{
    while (k->pipes) {
        struct vk_pipeline *p = k->pipes;
        k->pipes = p->next;
        destroy_pipeline(k->dev, p);
    }
    vk_vkDestroyShaderModule(k->dev->dev, k->mod, NULL);
    free(k);
}

static int make_pipeline(struct devq_pl_kernel *k, struct vk_pipeline *p)
{
    struct devq_pl_device *d = k->dev;
    VkDescriptorSetLayoutBinding b[64];
    for (uint32_t i = 0; i < p->nbuf; i++)
        b[i] = (VkDescriptorSetLayoutBinding){ .binding = i,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .descriptorCount = 1,
                                               .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
    VkDescriptorSetLayoutCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
                                           .bindingCount = p->nbuf,
                                           .pBindings = b };
    VkResult r = vk_vkCreateDescriptorSetLayout(d->dev, &di, NULL, &p->dsl);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateDescriptorSetLayout", r, -ENOMEM);
    VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, p->pc };
    VkPipelineLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &p->dsl,
                                      .pushConstantRangeCount = p->pc ? 1 : 0,
                                      .pPushConstantRanges = &pr };
    if ((r = vk_vkCreatePipelineLayout(d->dev, &li, NULL, &p->layout)) != VK_SUCCESS)
        return vk_fail(d, "vkCreatePipelineLayout", r, -ENOMEM);
    /* The local size goes to the specialization constants the shader
     * sized its work group with (local_size_x_id = 0 etc.). */
    VkSpecializationMapEntry me[3];
    uint32_t nme = 0;
    for (uint32_t i = 0; i < 3; i++)
        if (k->iface.local_spec_id[i] != UINT32_MAX)
            me[nme++] = (VkSpecializationMapEntry){ k->iface.local_spec_id[i], i * 4, 4 };
    VkSpecializationInfo spec = { nme, me, sizeof p->local, p->local };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                   .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                   .module = k->mod,
                   .pName = k->entry,
                   .pSpecializationInfo = nme ? &spec : NULL },
        .layout = p->layout,
        .flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT,
    };
    if ((r = vk_vkCreateComputePipelines(d->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe)) != VK_SUCCESS)
        return vk_fail(d, "vkCreateComputePipelines", r, -EINVAL);
    return 0;
}

static int pipeline_for(struct devq_pl_kernel *k, const uint32_t local[3], uint32_t nbuf, uint32_t pc,
                        struct vk_pipeline **out)
{
    for (struct vk_pipeline *p = k->pipes; p; p = p->next)
        if (!memcmp(p->local, local, sizeof p->local) && p->nbuf == nbuf && p->pc == pc) {
            *out = p;
            return 0;
        }
    struct vk_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", k->dev->ordinal);
    memcpy(p->local, local, sizeof p->local);
    p->nbuf = nbuf;
    p->pc = pc;
    int err = make_pipeline(k, p);
    if (err) {
        destroy_pipeline(k->dev, p);
        return err;
    }
    p->next = k->pipes;
    k->pipes = p;
    *out = p;
    return 0;
}

/* The work-group size of a launch: devq_launch.local where the shader
 * takes it as specialization constants; the shader's literal LocalSize,
 * which a launch may only repeat, elsewhere.  Then the device's limits. */
static int check_launch(struct devq_pl_kernel *k, const devq_launch *l, uint32_t local[3], uint32_t groups[3])
{
    struct devq_pl_device *d = k->dev;
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint64_t inv = 1;
    for (int i = 0; i < 3; i++) {
        uint32_t want = l->local[i] ? l->local[i] : 1;
        if (k->iface.local_spec_id[i] == UINT32_MAX) {
            if (l->local[i] && l->local[i] != k->iface.local[i])
                return vk_host->error(
                    -EINVAL,
                    "vulkan:%u: launch: kernel '%s' has a fixed local size %u in "
                    "dimension %d, not %u (pass 0 or %u, or declare local_size_x_id = 0 etc.)",
                    d->ordinal, k->entry, k->iface.local[i], i, l->local[i], k->iface.local[i]);
            want = k->iface.local[i];
        }
        local[i] = want;
        groups[i] = l->global[i] / want + (l->global[i] % want != 0);
        inv *= want;
        if (want > lim->maxComputeWorkGroupSize[i])
            return vk_host->error(-EINVAL, "vulkan:%u: launch: dimension %d: local %u (max %u)", d->ordinal,
                                  i, want, lim->maxComputeWorkGroupSize[i]);
    }
    if (inv > lim->maxComputeWorkGroupInvocations)
        return vk_host->error(-EINVAL, "vulkan:%u: launch: %llu work-items per group (max %u)", d->ordinal,
                              (unsigned long long)inv, lim->maxComputeWorkGroupInvocations);
    return 0;
}

/* The offsets of the push-constant members, for messages. */
static void member_offsets(const struct vk_iface *f, char *buf, size_t n)
{
    buf[0] = 0;
    for (uint32_t i = 0; i < f->nvalues; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, n - l, "%s%u (%u bytes)", i ? ", " : "", f->values[i].offset, f->values[i].size);
    }
}

/* A value argument packed at byte `at` must start a member of the block
 * and end one (it may span several: a C struct for the whole block), or
 * touch no member at all: padding before an 8-byte member, which std430
 * puts at a multiple of 8 while devq packs values at multiples of 4. */
static bool on_member_edges(const struct vk_iface *f, uint32_t at, size_t size)
{
    bool starts = false, ends = false, touches = false;
    uint64_t end = at + (uint64_t)size;
    for (uint32_t i = 0; i < f->nvalues; i++) {
        uint64_t m0 = f->values[i].offset, m1 = m0 + f->values[i].size;
        starts |= m0 == at;
        ends |= m1 == end;
        touches |= m0 < end && at < m1;
    }
    return (starts && ends) || !touches;
}

/* The second line of defence behind libdevq's check (kernel_iface): the
 * arguments against the shader's own interface. */
static int check_args(struct devq_pl_kernel *k, const struct devq_pl_arg *args, size_t nargs)
{
    const struct vk_iface *f = &k->iface;
    struct devq_pl_device *d = k->dev;
    uint32_t nbuf = 0, pc = 0;
    char members[256];
    for (size_t i = 0; i < nargs; i++) {
        if (args[i].is_buffer) {
            nbuf++;
            continue;
        }
        uint32_t at = (pc + 3) & ~3u;
        if (at + args[i].size > f->pc_size || !on_member_edges(f, at, args[i].size)) {
            member_offsets(f, members, sizeof members);
            return vk_host->error(-EINVAL,
                                  "vulkan:%u: launch: kernel '%s': value argument %zu (%zu bytes) lands "
                                  "at push-constant offset %u, not on members of the shader's %u-byte block "
                                  "(members at %s; values pack at multiples of 4: a 4-byte value before an "
                                  "8-byte member needs a 4-byte padding argument, devq-vulkan(7))",
                                  d->ordinal, k->entry, i, args[i].size, at, f->pc_size,
                                  members[0] ? members : "none");
        }
        pc = at + (uint32_t)args[i].size;
    }
    if (nbuf != f->nbuf)
        return vk_host->error(-EINVAL,
                              "vulkan:%u: launch: kernel '%s' declares %u storage buffers (bindings "
                              "0..n-1 of set 0); %u buffer arguments given",
                              d->ordinal, k->entry, f->nbuf, nbuf);
    if (pc < f->pc_size)
        return vk_host->error(-EINVAL,
                              "vulkan:%u: launch: kernel '%s' reads a %u-byte push-constant block; the "
                              "value arguments fill %u bytes",
                              d->ordinal, k->entry, f->pc_size, pc);
    return 0;
}

/* groups in chunks of at most max per dimension, each with its base.  A
 * chunk is max rounded down to a power of two: equal chunks of 32768
 * groups (max 65535 on lavapipe) run a 64 MiB SAXPY twice as fast there
 * as chunks of 65535 and a small tail. */
static uint32_t chunk(uint32_t max)
{
    uint32_t c = 1;
    while (c <= max / 2)
        c *= 2;
    return c;
}

static void dispatch(VkCommandBuffer cb, const uint32_t groups[3], const uint32_t limit[3])
{
    uint32_t max[3] = { chunk(limit[0]), chunk(limit[1]), chunk(limit[2]) };
    for (uint32_t z = 0; z < groups[2]; z += max[2])
        for (uint32_t y = 0; y < groups[1]; y += max[1])
            for (uint32_t x = 0; x < groups[0]; x += max[0]) {
                uint32_t nx = groups[0] - x < max[0] ? groups[0] - x : max[0];
                uint32_t ny = groups[1] - y < max[1] ? groups[1] - y : max[1];
                uint32_t nz = groups[2] - z < max[2] ? groups[2] - z : max[2];
                vk_vkCmdDispatchBase(cb, x, y, z, nx, ny, nz);
            }
}

/* Resolve buffer argument i into x->bufs[x->nbuf]; under mu. */
static int resolve_buffer(struct devq_pl_device *d, size_t i, const struct devq_pl_arg *a,
                          struct vk_dispatch *x)
{
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint64_t addr = (uintptr_t)a->device_ptr;
    struct vk_alloc *al = vk_mem_find(d, addr, 1);
    if (!al)
        return vk_host->error(-EINVAL,
                              "vulkan:%u: launch: argument %zu (%p) is not device memory of this device",
                              d->ordinal, i, a->device_ptr);
    if ((addr - al->addr) % lim->minStorageBufferOffsetAlignment)
        return vk_host->error(-EINVAL,
                              "vulkan:%u: launch: argument %zu is at offset %llu, not a "
                              "multiple of minStorageBufferOffsetAlignment (%llu)",
                              d->ordinal, i, (unsigned long long)(addr - al->addr),
                              (unsigned long long)lim->minStorageBufferOffsetAlignment);
    VkDeviceSize off = addr - al->addr, range = al->size - off;
    if (range > lim->maxStorageBufferRange)
        range = lim->maxStorageBufferRange & ~(VkDeviceSize)3;
    x->bufs[x->nbuf++] = (VkDescriptorBufferInfo){ al->buf, off, range };
    return 0;
}

int vk_dispatch_prepare(struct devq_pl_kernel *k, const devq_launch *l, const struct devq_pl_arg *args,
                        size_t nargs, struct vk_dispatch *x)
{
    struct devq_pl_device *d = k->dev;
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint32_t local[3];
    x->nbuf = x->pc = 0;
    int err = check_launch(k, l, local, x->groups);
    if (!err)
        err = check_args(k, args, nargs);
    for (size_t i = 0; i < nargs && !err; i++) {
        if (args[i].is_buffer) {
            err = resolve_buffer(d, i, &args[i], x);
            continue;
        }
        uint32_t at = (x->pc + 3) & ~3u;
        if (at + args[i].size > lim->maxPushConstantsSize || at + args[i].size > VK_PC_MAX)
            err = vk_host->error(-EINVAL,
                                 "vulkan:%u: launch: value arguments need %zu bytes of push "
                                 "constants; the device has %u (pass a buffer instead)",
                                 d->ordinal, at + args[i].size, lim->maxPushConstantsSize);
        else {
            memset(x->pcbuf + x->pc, 0, at - x->pc);
            memcpy(x->pcbuf + at, args[i].value, args[i].size);
            x->pc = at + (uint32_t)args[i].size;
        }
    }
    if (err)
        return err;
    uint32_t end = (x->pc + 3) & ~3u; /* == the block's size, rounded up (check_args) */
    memset(x->pcbuf + x->pc, 0, end - x->pc);
    x->pc = end;
    return pipeline_for(k, local, x->nbuf, x->pc, &x->p);
}

void vk_dispatch_record(VkCommandBuffer cb, struct devq_pl_device *d, const struct vk_dispatch *x)
{
    VkWriteDescriptorSet writes[VK_MAX_BUFFERS];
    for (uint32_t i = 0; i < x->nbuf; i++)
        writes[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                            .dstBinding = i,
                                            .descriptorCount = 1,
                                            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            .pBufferInfo = &x->bufs[i] };
    vk_vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, x->p->pipe);
    if (x->nbuf)
        vk_vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, x->p->layout, 0, x->nbuf, writes);
    if (x->pc)
        vk_vkCmdPushConstants(cb, x->p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, x->pc, x->pcbuf);
    dispatch(cb, x->groups, d->props.limits.maxComputeWorkGroupCount);
}

int vk_launch(struct devq_pl_stream *s, struct devq_pl_kernel *k, const devq_launch *l,
              const struct devq_pl_arg *args, size_t nargs)
{
    struct devq_pl_device *d = s->dev;
    uint8_t pcbuf[VK_PC_MAX];
    VkDescriptorBufferInfo bufs[VK_MAX_BUFFERS];
    struct vk_dispatch x = { .bufs = bufs, .pcbuf = pcbuf };
    pthread_mutex_lock(&d->mu);
    int err = vk_dispatch_prepare(k, l, args, nargs, &x);
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (!err && !(cb = vk_stream_cmd(s)))
        err = -EIO;
    if (!err)
        vk_dispatch_record(cb, d, &x);
    pthread_mutex_unlock(&d->mu);
    return err;
}
