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
 * which is why it was chosen over buffer device addresses.  Pipelines are
 * made at first launch and cached per (local size, bindings, push size). */
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
    struct vk_pipeline *pipes;
};

/* Is there a GLCompute OpEntryPoint named entry?  Also lists the names. */
static bool find_entry(const uint32_t *w, size_t nw, const char *entry, char *have, size_t n)
{
    bool found = false;
    have[0] = 0;
    for (size_t i = 5; i < nw;) {
        uint32_t op = w[i] & 0xffff, wc = w[i] >> 16;
        if (wc == 0 || i + wc > nw)
            break;
        if (op == 15 && wc >= 4 && w[i + 1] == 5 /* GLCompute */) {
            const char *name = (const char *)&w[i + 3];
            size_t max = (wc - 3) * 4;
            if (strnlen(name, max) < max) {
                found |= !strcmp(name, entry);
                size_t l = strlen(have);
                snprintf(have + l, n - l, "%s%s", l ? ", " : "", name);
            }
        }
        i += wc;
    }
    return found;
}

int vk_kernel_load(struct devq_pl_device *d, const void *image, size_t size, const char *entry,
                   struct devq_pl_kernel **out)
{
    if (!entry || !*entry)
        entry = "main";
    if (!image || size < 20 || size % 4 || *(const uint32_t *)image != 0x07230203u)
        return vk_host->error(-EINVAL, "vulkan:%u: kernel_load: the image is not SPIR-V (%zu bytes; "
                              "compile the shader with glslc -fshader-stage=compute)", d->ordinal, size);
    char have[256];
    if (!find_entry(image, size / 4, entry, have, sizeof have))
        return vk_host->error(-ENOENT, "vulkan:%u: kernel_load: no compute entry point '%s' in the "
                              "SPIR-V (has: %s)", d->ordinal, entry, have[0] ? have : "none");
    if (strlen(entry) >= sizeof((struct devq_pl_kernel *)0)->entry)
        return vk_host->error(-ENAMETOOLONG, "vulkan:%u: kernel_load: entry name too long", d->ordinal);
    struct devq_pl_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory loading a kernel", d->ordinal);
    k->dev = d;
    strcpy(k->entry, entry);
    VkShaderModuleCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = size,
                                    .pCode = image };
    VkResult r = vk_vkCreateShaderModule(d->dev, &ci, NULL, &k->mod);
    if (r != VK_SUCCESS) {
        free(k);
        return vk_fail(d, "vkCreateShaderModule", r, -EINVAL);
    }
    *out = k;
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
        b[i] = (VkDescriptorSetLayoutBinding){ .binding = i, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .descriptorCount = 1,
                                               .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT };
    VkDescriptorSetLayoutCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
                                           .bindingCount = p->nbuf, .pBindings = b };
    VkResult r = vk_vkCreateDescriptorSetLayout(d->dev, &di, NULL, &p->dsl);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateDescriptorSetLayout", r, -ENOMEM);
    VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, p->pc };
    VkPipelineLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1, .pSetLayouts = &p->dsl,
                                      .pushConstantRangeCount = p->pc ? 1 : 0, .pPushConstantRanges = &pr };
    if ((r = vk_vkCreatePipelineLayout(d->dev, &li, NULL, &p->layout)) != VK_SUCCESS)
        return vk_fail(d, "vkCreatePipelineLayout", r, -ENOMEM);
    VkSpecializationMapEntry me[3] = { { 0, 0, 4 }, { 1, 4, 4 }, { 2, 8, 4 } };
    VkSpecializationInfo spec = { 3, me, sizeof p->local, p->local };
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = { .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                   .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = k->mod, .pName = k->entry,
                   .pSpecializationInfo = &spec },
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

/* Checks of the launch against the device's limits; 0 or -EINVAL. */
static int check_launch(struct devq_pl_device *d, const devq_launch *l, uint32_t groups[3])
{
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint64_t inv = 1;
    for (int i = 0; i < 3; i++) {
        uint32_t loc = l->local[i] ? l->local[i] : 1;
        groups[i] = l->global[i] / loc + (l->global[i] % loc != 0);
        inv *= loc;
        if (loc > lim->maxComputeWorkGroupSize[i])
            return vk_host->error(-EINVAL, "vulkan:%u: launch: dimension %d: local %u (max %u)", d->ordinal, i,
                                  loc, lim->maxComputeWorkGroupSize[i]);
    }
    if (inv > lim->maxComputeWorkGroupInvocations)
        return vk_host->error(-EINVAL, "vulkan:%u: launch: %llu work-items per group (max %u)", d->ordinal,
                              (unsigned long long)inv, lim->maxComputeWorkGroupInvocations);
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

int vk_launch(struct devq_pl_stream *s, struct devq_pl_kernel *k, const devq_launch *l,
              const struct devq_pl_arg *args, size_t nargs)
{
    struct devq_pl_device *d = s->dev;
    const VkPhysicalDeviceLimits *lim = &d->props.limits;
    uint8_t pcbuf[256] = { 0 };
    VkDescriptorBufferInfo bufs[64];
    VkWriteDescriptorSet writes[64];
    uint32_t nbuf = 0, pc = 0, groups[3], local[3];
    int err = check_launch(d, l, groups);
    if (err)
        return err;
    for (int i = 0; i < 3; i++)
        local[i] = l->local[i] ? l->local[i] : 1;
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < nargs && !err; i++) {
        if (args[i].is_buffer) {
            uint64_t addr = (uintptr_t)args[i].device_ptr;
            struct vk_alloc *a = vk_mem_find(d, addr, 1);
            if (nbuf == 64)
                err = vk_host->error(-EINVAL, "vulkan:%u: launch: more than 64 buffer arguments", d->ordinal);
            else if (!a)
                err = vk_host->error(-EINVAL, "vulkan:%u: launch: argument %zu (%p) is not device memory "
                                     "of this device", d->ordinal, i, args[i].device_ptr);
            else if ((addr - a->addr) % lim->minStorageBufferOffsetAlignment)
                err = vk_host->error(-EINVAL, "vulkan:%u: launch: argument %zu is at offset %llu, not a "
                                     "multiple of minStorageBufferOffsetAlignment (%llu)", d->ordinal, i,
                                     (unsigned long long)(addr - a->addr),
                                     (unsigned long long)lim->minStorageBufferOffsetAlignment);
            else {
                VkDeviceSize off = addr - a->addr, range = a->size - off;
                if (range > lim->maxStorageBufferRange)
                    range = lim->maxStorageBufferRange & ~(VkDeviceSize)3;
                bufs[nbuf] = (VkDescriptorBufferInfo){ a->buf, off, range };
                writes[nbuf] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                                       .dstBinding = nbuf, .descriptorCount = 1,
                                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                       .pBufferInfo = &bufs[nbuf] };
                nbuf++;
            }
        } else {
            uint32_t at = (pc + 3) & ~3u;
            if (at + args[i].size > lim->maxPushConstantsSize || at + args[i].size > sizeof pcbuf)
                err = vk_host->error(-EINVAL, "vulkan:%u: launch: value arguments need %zu bytes of push "
                                     "constants; the device has %u (pass a buffer instead)", d->ordinal,
                                     at + args[i].size, lim->maxPushConstantsSize);
            else {
                memcpy(pcbuf + at, args[i].value, args[i].size);
                pc = at + (uint32_t)args[i].size;
            }
        }
    }
    pc = (pc + 3) & ~3u;
    struct vk_pipeline *p = NULL;
    VkCommandBuffer cb = VK_NULL_HANDLE;
    if (!err)
        err = pipeline_for(k, local, nbuf, pc, &p);
    if (!err && !(cb = vk_stream_cmd(s)))
        err = -EIO;
    if (!err) {
        vk_vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
        if (nbuf)
            vk_vkCmdPushDescriptorSetKHR(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, nbuf, writes);
        if (pc)
            vk_vkCmdPushConstants(cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, pc, pcbuf);
        dispatch(cb, groups, lim->maxComputeWorkGroupCount);
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}
