/* SPDX-License-Identifier: MIT */
/* Device features: what a module may declare.  Features are fixed when
 * the VkDevice is made, and a kernel is loaded long after, so the device
 * enables every feature of the table below that it supports, and
 * kernel_load refuses (-ENOTSUP, naming the feature) a module declaring a
 * SPIR-V capability whose feature the device lacks: without the feature,
 * the module breaks a Vulkan rule (a `double` push constant once did,
 * with shaderInt64 on but shaderFloat64 off).  devq-vulkan(7) lists the
 * table; keep the two the same. */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <spirv_cross/spirv.h>
#include "vk_plugin.h"

enum where { CORE, V11, V12, CLOCK };

static const struct vk_feature {
    uint32_t cap; /* SPIR-V capability */
    const char *cap_name;
    enum where where;
    size_t offset; /* of the VkBool32 in its struct */
    const char *name;
} features[] = {
#define F(cap, w, st, field)                      \
    {                                             \
        cap, #cap, w, offsetof(st, field), #field \
    }
    F(SpvCapabilityFloat64, CORE, VkPhysicalDeviceFeatures, shaderFloat64),
    F(SpvCapabilityInt64, CORE, VkPhysicalDeviceFeatures, shaderInt64),
    F(SpvCapabilityInt16, CORE, VkPhysicalDeviceFeatures, shaderInt16),
    F(SpvCapabilityStorageBuffer16BitAccess, V11, VkPhysicalDeviceVulkan11Features, storageBuffer16BitAccess),
    F(SpvCapabilityUniformAndStorageBuffer16BitAccess, V11, VkPhysicalDeviceVulkan11Features,
      uniformAndStorageBuffer16BitAccess),
    F(SpvCapabilityStoragePushConstant16, V11, VkPhysicalDeviceVulkan11Features, storagePushConstant16),
    F(SpvCapabilityInt8, V12, VkPhysicalDeviceVulkan12Features, shaderInt8),
    F(SpvCapabilityFloat16, V12, VkPhysicalDeviceVulkan12Features, shaderFloat16),
    F(SpvCapabilityStorageBuffer8BitAccess, V12, VkPhysicalDeviceVulkan12Features, storageBuffer8BitAccess),
    F(SpvCapabilityUniformAndStorageBuffer8BitAccess, V12, VkPhysicalDeviceVulkan12Features,
      uniformAndStorageBuffer8BitAccess),
    F(SpvCapabilityStoragePushConstant8, V12, VkPhysicalDeviceVulkan12Features, storagePushConstant8),
    F(SpvCapabilityInt64Atomics, V12, VkPhysicalDeviceVulkan12Features, shaderBufferInt64Atomics),
    F(SpvCapabilityVulkanMemoryModel, V12, VkPhysicalDeviceVulkan12Features, vulkanMemoryModel),
    F(SpvCapabilityVulkanMemoryModelDeviceScope, V12, VkPhysicalDeviceVulkan12Features,
      vulkanMemoryModelDeviceScope),
    F(SpvCapabilityShaderClockKHR, CLOCK, VkPhysicalDeviceShaderClockFeaturesKHR, shaderSubgroupClock),
    /* Not a capability of its own: a device-scope clock read. */
    F(SpvCapabilityShaderClockKHR, CLOCK, VkPhysicalDeviceShaderClockFeaturesKHR, shaderDeviceClock),
#undef F
};
#define NFEATURES (sizeof features / sizeof features[0])
_Static_assert(NFEATURES <= 32, "vk_plugin.h: devq_pl_device.features is 32 bits");

static VkBool32 *field(struct vk_feature_chain *c, const struct vk_feature *f)
{
    char *base = f->where == CORE  ? (char *)&c->f2.features
                 : f->where == V11 ? (char *)&c->v11
                 : f->where == V12 ? (char *)&c->v12
                                   : (char *)&c->clock;
    return (VkBool32 *)(base + f->offset);
}

static void chain_init(struct vk_feature_chain *c, bool clock)
{
    memset(c, 0, sizeof *c);
    c->f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    c->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    c->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    c->v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
    c->clock.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CLOCK_FEATURES_KHR;
    c->f2.pNext = &c->v11;
    c->v11.pNext = &c->v12;
    c->v12.pNext = &c->v13;
    c->v13.pNext = clock ? &c->clock : NULL;
}

/* DEVQ_VULKAN_HIDE_FEATURES=shaderFloat64,...: a test switch that makes
 * the device look as if it lacked those features. */
static bool hidden(const char *name)
{
    const char *v = vk_host->getenv("DEVQ_VULKAN_HIDE_FEATURES");
    size_t n = strlen(name);
    for (const char *p = v; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n))
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

void vk_features_init(struct devq_pl_device *d, struct vk_feature_chain *c, bool clock)
{
    struct vk_feature_chain have;
    chain_init(&have, clock);
    vk_vkGetPhysicalDeviceFeatures2(d->phys, &have.f2);
    chain_init(c, clock);
    /* What devq itself needs (vk_device_unusable checked them). */
    c->v12.timelineSemaphore = VK_TRUE;
    c->v13.synchronization2 = VK_TRUE;
    c->v13.maintenance4 = VK_TRUE; /* shaders with LocalSizeId (glslc for vulkan1.3) */
    char list[512] = "";
    d->features = 0;
    for (size_t i = 0; i < NFEATURES; i++) {
        const struct vk_feature *f = &features[i];
        if ((f->where == CLOCK && !clock) || !*field(&have, f) || hidden(f->name))
            continue;
        *field(c, f) = VK_TRUE;
        d->features |= 1u << i;
        size_t l = strlen(list);
        snprintf(list + l, sizeof list - l, "%s%s", l ? " " : "", f->name);
    }
    vk_host->log(DEVQ_LOG_BASIC, "vulkan:%u: shader features enabled: %s", d->ordinal,
                 list[0] ? list : "none");
}

int vk_features_check(struct devq_pl_device *d, const struct vk_iface *k)
{
    for (uint32_t i = 0; i < k->ncaps; i++)
        for (size_t j = 0; j < NFEATURES; j++) {
            const struct vk_feature *f = &features[j];
            /* A clock read needs the subgroup clock at least. */
            if (f->cap != k->caps[i] || (d->features >> j & 1) || !strcmp(f->name, "shaderDeviceClock"))
                continue;
            return vk_host->error(-ENOTSUP,
                                  "vulkan:%u: kernel_load: the module declares capability %s, "
                                  "which needs the device feature %s; %s does not have it (devq-vulkan(7) "
                                  "Features)",
                                  d->ordinal, f->cap_name + strlen("SpvCapability"), f->name,
                                  d->props.deviceName);
        }
    return 0;
}
