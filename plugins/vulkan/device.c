/* SPDX-License-Identifier: MIT */
/* Devices: one per physical device (vulkan:N in enumeration order).  A
 * physical device that cannot serve devq (no Vulkan 1.3, no timeline
 * semaphores, no compute queue) still has its ordinal, and opening it says
 * why, so ordinals match vulkaninfo's. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

int vk_lost_error(struct devq_pl_device *d)
{
    /* -ENODEV: the device is gone (VK_ERROR_DEVICE_LOST), not one op. */
    return vk_host->error(-ENODEV, "vulkan:%u: device lost: %s", d->ordinal, d->lost_cause);
}

void vk_mark_lost(struct devq_pl_device *d, const char *why)
{
    /* lost_cause is written once, before lost reads true. */
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once);
    if (!atomic_load(&d->lost)) {
        snprintf(d->lost_cause, sizeof d->lost_cause, "%s", why);
        atomic_store(&d->lost, true);
        vk_host->log(DEVQ_LOG_BASIC, "vulkan:%u: device lost: %s", d->ordinal, d->lost_cause);
    }
    pthread_mutex_unlock(&once);
}

int vk_fail(struct devq_pl_device *d, const char *call, VkResult r, int err)
{
    if (r == VK_ERROR_DEVICE_LOST) {
        char why[200];
        snprintf(why, sizeof why, "%s: %s", call, vk_result_str(r));
        vk_mark_lost(d, why);
        return vk_lost_error(d);
    }
    if (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY)
        err = -ENOMEM;
    return vk_host->error(err, "vulkan:%u: %s: %s", d->ordinal, call, vk_result_str(r));
}

static VkPhysicalDevice *physical_devices(uint32_t *n)
{
    *n = 0;
    if (vk_vkEnumeratePhysicalDevices(vk_instance, n, NULL) != VK_SUCCESS || !*n)
        return NULL;
    VkPhysicalDevice *p = calloc(*n, sizeof *p);
    if (p && vk_vkEnumeratePhysicalDevices(vk_instance, n, p) < 0) {
        free(p);
        p = NULL;
    }
    return p;
}

int vk_device_count(uint32_t *count)
{
    *count = 0;
    int err = vk_load();
    if (err)
        return err;
    uint32_t n;
    free(physical_devices(&n));
    vk_release();
    if (!n)
        return vk_host->error(-ENODEV, "vulkan: the Vulkan loader found no physical device "
                                       "(install a driver, e.g. Debian mesa-vulkan-drivers)");
    *count = n;
    return 0;
}

static bool has_extension(VkPhysicalDevice p, const char *name)
{
    uint32_t n = 0;
    bool found = false;
    if (vk_vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL) != VK_SUCCESS)
        return false;
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    if (e && vk_vkEnumerateDeviceExtensionProperties(p, NULL, &n, e) >= 0)
        for (uint32_t i = 0; i < n && !found; i++)
            found = !strcmp(e[i].extensionName, name);
    free(e);
    return found;
}

/* The first queue family that can run compute, or UINT32_MAX. */
static uint32_t compute_family(VkPhysicalDevice p, uint32_t *count, uint32_t *ts_bits)
{
    uint32_t n = 0, best = UINT32_MAX;
    vk_vkGetPhysicalDeviceQueueFamilyProperties(p, &n, NULL);
    VkQueueFamilyProperties *f = calloc(n ? n : 1, sizeof *f);
    if (!f)
        return UINT32_MAX;
    vk_vkGetPhysicalDeviceQueueFamilyProperties(p, &n, f);
    for (uint32_t i = 0; i < n && best == UINT32_MAX; i++)
        if (f[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            best = i;
            *count = f[i].queueCount;
            *ts_bits = f[i].timestampValidBits;
        }
    free(f);
    return best;
}

void vk_device_unusable(VkPhysicalDevice p, char *why, size_t n)
{
    VkPhysicalDeviceProperties props;
    vk_vkGetPhysicalDeviceProperties(p, &props);
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                             .pNext = &f13 };
    VkPhysicalDeviceFeatures2 f = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f12 };
    uint32_t qn = 0, ts = 0;
    why[0] = 0;
    if (props.apiVersion < VK_API_VERSION_1_3) {
        snprintf(why, n, "%s supports Vulkan %u.%u; devq needs 1.3 (update the driver)", props.deviceName,
                 VK_API_VERSION_MAJOR(props.apiVersion), VK_API_VERSION_MINOR(props.apiVersion));
        return;
    }
    vk_vkGetPhysicalDeviceFeatures2(p, &f);
    if (!f12.timelineSemaphore || !f13.synchronization2)
        snprintf(why, n, "%s lacks timeline semaphores or synchronization2", props.deviceName);
    else if (compute_family(p, &qn, &ts) == UINT32_MAX)
        snprintf(why, n, "%s has no queue that runs compute", props.deviceName);
}

/* Buffers come from one memory type: device-local and host-visible where
 * there is one (integrated GPUs, lavapipe, resizable BAR), so buffers
 * have host pointers; else device-local. */
static int pick_memory(struct devq_pl_device *d)
{
    VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = 4096,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VkBuffer b;
    VkResult r = vk_vkCreateBuffer(d->dev, &bi, NULL, &b);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateBuffer", r, -ENODEV);
    VkMemoryRequirements req;
    vk_vkGetBufferMemoryRequirements(d->dev, b, &req);
    vk_vkDestroyBuffer(d->dev, b, NULL);
    const VkMemoryPropertyFlags want[] = {
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
            VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT,
        0,
    };
    vk_vkGetPhysicalDeviceMemoryProperties(d->phys, &d->memprops);
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++)
        for (uint32_t i = 0; i < d->memprops.memoryTypeCount; i++) {
            VkMemoryPropertyFlags fl = d->memprops.memoryTypes[i].propertyFlags;
            if ((req.memoryTypeBits & (1u << i)) && (fl & want[w]) == want[w]) {
                d->mem_type = i;
                d->host_visible =
                    (fl & (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)) ==
                    (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
                d->total_memory = d->memprops.memoryHeaps[d->memprops.memoryTypes[i].heapIndex].size;
                return 0;
            }
        }
    return vk_host->error(-ENODEV, "vulkan:%u: no memory type for storage buffers", d->ordinal);
}

static void describe(struct devq_pl_device *d)
{
    VkPhysicalDeviceDriverProperties drv = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES };
    VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                       .pNext = &drv };
    vk_vkGetPhysicalDeviceProperties2(d->phys, &p2);
    uint32_t v = d->props.apiVersion;
    snprintf(d->name, sizeof d->name, "%.60s (Vulkan %u.%u.%u, %.40s)", d->props.deviceName,
             VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v),
             drv.driverInfo[0] ? drv.driverInfo : drv.driverName);
}

static int create_device(struct devq_pl_device *d, uint32_t qcount)
{
    float prio[4] = { 1, 1, 1, 1 };
    d->nqueues = qcount > 4 ? 4 : qcount;
    VkDeviceQueueCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = d->family,
                                   .queueCount = d->nqueues,
                                   .pQueuePriorities = prio };
    const char *exts[4];
    uint32_t nexts = 0;
    d->push_descriptors = has_extension(d->phys, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    if (d->push_descriptors)
        exts[nexts++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    /* Shaders may read the clock (the conformance kernels' sleeps do). */
    bool clock = has_extension(d->phys, VK_KHR_SHADER_CLOCK_EXTENSION_NAME);
    if (clock)
        exts[nexts++] = VK_KHR_SHADER_CLOCK_EXTENSION_NAME;
    /* Host copies by import of the user's pages (mem.c). */
    const char *no_import = vk_host->getenv("DEVQ_VULKAN_NO_HOST_IMPORT");
    bool import_ext = has_extension(d->phys, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) &&
                      !(no_import && !strcmp(no_import, "1"));
    if (import_ext)
        exts[nexts++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    struct vk_feature_chain feat;
    vk_features_init(d, &feat, clock);
    VkDeviceCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &feat.f2,
                              .queueCreateInfoCount = 1,
                              .pQueueCreateInfos = &qi,
                              .enabledExtensionCount = nexts,
                              .ppEnabledExtensionNames = exts };
    VkResult r = vk_vkCreateDevice(d->phys, &ci, NULL, &d->dev);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateDevice", r, -ENODEV);
    int err = vk_load_device();
    if (err)
        return err;
    d->host_import = import_ext && vk_vkGetMemoryHostPointerPropertiesEXT;
    d->queues = calloc(d->nqueues, sizeof *d->queues);
    if (!d->queues)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
    for (uint32_t i = 0; i < d->nqueues; i++)
        vk_vkGetDeviceQueue(d->dev, d->family, i, &d->queues[i]);
    return 0;
}

int vk_device_open(uint32_t ordinal, struct devq_pl_device **out)
{
    int err = vk_load();
    if (err)
        return err;
    uint32_t n;
    VkPhysicalDevice *p = physical_devices(&n);
    if (ordinal >= n) {
        free(p);
        vk_release();
        return vk_host->error(-ENODEV, "vulkan:%u: no such device (have %u)", ordinal, n);
    }
    struct devq_pl_device *d = calloc(1, sizeof *d);
    if (!d) {
        free(p);
        vk_release();
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", ordinal);
    }
    d->ordinal = ordinal;
    d->phys = p[ordinal];
    free(p);
    char why[256];
    vk_device_unusable(d->phys, why, sizeof why);
    if (why[0]) {
        free(d);
        vk_release();
        return vk_host->error(-ENODEV, "vulkan:%u: unusable: %s", ordinal, why);
    }
    vk_vkGetPhysicalDeviceProperties(d->phys, &d->props);
    uint32_t qcount = 0, ts = 0;
    d->family = compute_family(d->phys, &qcount, &ts);
    if (!ts)
        d->props.limits.timestampComputeAndGraphics = VK_FALSE;
    describe(d);
    pthread_mutex_init(&d->mu, NULL);
    d->next_addr = 1ull << 40;
    const char *inject = vk_host->getenv("DEVQ_VULKAN_INJECT_DEVICE_LOST");
    d->inject_lost_at = inject ? (uint32_t)strtoul(inject, NULL, 10) : 0;
    if (!(err = create_device(d, qcount)) && !(err = pick_memory(d)) && !(err = vk_mem_paths_init(d)) &&
        !(err = vk_mem_pattern_init(d))) {
        vk_device_opened(d);
        *out = d;
        return 0;
    }
    vk_device_close(d);
    return err;
}

void vk_device_close(struct devq_pl_device *d)
{
    if (!d || !vk_teardown_begin(d))
        return;
    vk_completion_stop_all(d);
    if (d->dev) {
        vk_vkDeviceWaitIdle(d->dev);
        vk_mem_release_all(d);
        vk_vkDestroyDevice(d->dev, NULL);
    }
    pthread_mutex_destroy(&d->mu);
    free(d->queues);
    free(d);
    vk_release();
    vk_teardown_end();
}

int vk_device_info(struct devq_pl_device *d, devq_device_info *info)
{
    snprintf(info->name, sizeof info->name, "%s", d->name);
    info->total_memory = d->total_memory;
    info->compute_units = 0;
    /* No DEVQ_CAP_WAIT_VALUE: a device-side wait on a value the host sets
     * later would hold the queue, and with it every stream on a device
     * with one queue.  lib defers those batches instead. */
    info->caps = DEVQ_CAP_SKIP_ON_ERROR;
    /* Every module is reflected at load (spirv.c), so every launch is
     * checked against the kernel's declared interface (kernel_iface). */
    if (d->push_descriptors)
        info->caps |= DEVQ_CAP_KERNELS | DEVQ_CAP_KERNEL_CHECK;
    /* A run of launches recorded once into a reusable command buffer
     * (graph.c): the graph_* ops. */
    if (d->push_descriptors)
        info->caps |= DEVQ_CAP_GRAPH_NATIVE;
    if (d->props.limits.timestampComputeAndGraphics)
        info->caps |= DEVQ_CAP_TIMING;
    if (d->host_visible)
        info->caps |= DEVQ_CAP_HOST_VISIBLE;
    /* lavapipe and other CPU implementations: devq's own cpu backend is
     * the better default there (devq_device_open(3)). */
    if (d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
        info->caps |= DEVQ_CAP_SOFTWARE;
    return 0;
}
