/* SPDX-License-Identifier: MIT */
/* Memory: each allocation is a VkDeviceMemory with one VkBuffer over all
 * of it.  lib suballocates by address arithmetic, so the plugin hands out
 * addresses of its own: a private 64-bit space where each allocation
 * gets a range with a gap after it (never reused, never NULL), mapped back
 * to (buffer, offset) by binary search.  This needs no
 * bufferDeviceAddress and keeps every op a plain buffer command.
 *
 * Host copies take the first of three paths that the device allows
 * (devq-vulkan(7) HOST COPIES), each done in stream order at execution
 * time, so that what a devq_queue_write reads is the source then:
 *   import   the user's pages become a VkBuffer (VK_EXT_external_memory_host)
 *            and the device copies; a host item frees the import after;
 *   mapping  the completion thread memcpy's through the buffer's mapping;
 *   staging  a host-visible staging buffer, memcpy'd by the completion
 *            thread and copied by the device (devices without
 *            host-visible device memory).
 * DEVQ_VULKAN_NO_HOST_IMPORT=1 and DEVQ_VULKAN_FORCE_STAGING=1 (which also
 * leaves buffers unmapped, as on such a device) let tests force each. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "vk_plugin.h"

#define ADDR_GAP (64u * 1024u)

static bool env_on(const char *name)
{
    const char *v = vk_host->getenv(name);
    return v && !strcmp(v, "1");
}

int vk_mem_paths_init(struct devq_pl_device *d)
{
    if (env_on("DEVQ_VULKAN_FORCE_STAGING")) {
        d->force_staging = true;
        d->host_visible = false;
        d->host_import = false;
    }
    if (d->host_import) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT
        };
        VkPhysicalDeviceProperties2 p2 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                           .pNext = &hp };
        vk_vkGetPhysicalDeviceProperties2(d->phys, &p2);
        d->import_align = hp.minImportedHostPointerAlignment;
        /* A power of two by the spec; anything else: no imports. */
        if (!d->import_align || (d->import_align & (d->import_align - 1)))
            d->host_import = false;
    }
    const VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < d->memprops.memoryTypeCount && !d->has_staging; i++)
        if ((d->memprops.memoryTypes[i].propertyFlags & want) == want) {
            d->staging_type = i;
            d->has_staging = true;
        }
    vk_host->log(DEVQ_LOG_BASIC, "vulkan:%u: host copies: %s", d->ordinal,
                 d->host_import    ? "import of the user's pages"
                 : d->host_visible ? "through the mapping"
                 : d->has_staging  ? "through staging buffers"
                                   : "none (no host-visible memory)");
    return 0;
}

void vk_transient_free(struct devq_pl_device *d, struct vk_transient *t)
{
    if (!t)
        return;
    if (t->buf)
        vk_vkDestroyBuffer(d->dev, t->buf, NULL);
    if (t->mem)
        vk_vkFreeMemory(d->dev, t->mem, NULL);
    free(t);
}

/* A buffer of `size` bytes (usage: transfers) over memory of `type`,
 * imported from host pointer `host` when it is not NULL. */
static int transient(struct devq_pl_device *d, VkDeviceSize size, uint32_t type_bits, void *host,
                     struct vk_transient **out)
{
    struct vk_transient *t = calloc(1, sizeof *t);
    if (!t)
        return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
    VkExternalMemoryBufferCreateInfo eb = { .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                            .handleTypes =
                                                VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT };
    VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = host ? &eb : NULL,
                              .size = size,
                              .usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VkMemoryRequirements req;
    VkImportMemoryHostPointerInfoEXT imp = { .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
                                             .handleType =
                                                 VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
                                             .pHostPointer = host };
    VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = host ? &imp : NULL };
    const char *call = "vkCreateBuffer";
    VkResult r = vk_vkCreateBuffer(d->dev, &bi, NULL, &t->buf);
    if (r == VK_SUCCESS) {
        vk_vkGetBufferMemoryRequirements(d->dev, t->buf, &req);
        type_bits &= req.memoryTypeBits;
        call = "no memory type for the host copy";
        r = VK_ERROR_FEATURE_NOT_PRESENT;
        if (type_bits && (host || req.size <= size + req.alignment + (VkDeviceSize)4096)) {
            ai.allocationSize = host ? size : req.size;
            ai.memoryTypeIndex = (uint32_t)__builtin_ctz(type_bits);
            call = "vkAllocateMemory";
            r = vk_vkAllocateMemory(d->dev, &ai, NULL, &t->mem);
        }
    }
    if (r == VK_SUCCESS) {
        call = "vkBindBufferMemory";
        r = vk_vkBindBufferMemory(d->dev, t->buf, t->mem, 0);
    }
    if (r == VK_SUCCESS && !host) {
        call = "vkMapMemory";
        r = vk_vkMapMemory(d->dev, t->mem, 0, VK_WHOLE_SIZE, 0, &t->map);
    }
    if (r != VK_SUCCESS) {
        vk_transient_free(d, t);
        return vk_fail(d, call, r, -ENOMEM);
    }
    *out = t;
    return 0;
}

/* The user's pages around [p, p+n) as a buffer; *off: p's offset in it.
 * Fails quietly (a positive 1) when the driver refuses these pages: the
 * copy then takes another path. */
static int import_pages(struct devq_pl_device *d, const void *p, size_t n, struct vk_transient **out,
                        VkDeviceSize *off)
{
    uintptr_t a = (uintptr_t)d->import_align, base = (uintptr_t)p & ~(a - 1);
    uintptr_t end = ((uintptr_t)p + n + a - 1) & ~(a - 1);
    VkMemoryHostPointerPropertiesEXT hp = { .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT };
    VkResult r = vk_vkGetMemoryHostPointerPropertiesEXT(
        d->dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, (void *)base, &hp);
    if (r != VK_SUCCESS || !hp.memoryTypeBits)
        return 1;
    int err = transient(d, end - base, hp.memoryTypeBits, (void *)base, out);
    if (err) {
        vk_host->log(DEVQ_LOG_BASIC, "vulkan:%u: host copy: importing %p (+%zu) failed, copying another way",
                     d->ordinal, p, n);
        return 1;
    }
    *off = (uintptr_t)p - base;
    return 0;
}

int vk_mem_alloc(struct devq_pl_device *d, size_t bytes, void **device_ptr, void **host_ptr)
{
    if (atomic_load(&d->lost))
        return vk_lost_error(d);
    struct vk_alloc a = { .size = bytes ? bytes : 4 };
    a.size = (a.size + 3) & ~(VkDeviceSize)3;
    VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = a.size,
                              .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                       VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VkResult r = vk_vkCreateBuffer(d->dev, &bi, NULL, &a.buf);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateBuffer", r, -ENOMEM);
    VkMemoryRequirements req;
    vk_vkGetBufferMemoryRequirements(d->dev, a.buf, &req);
    VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = d->mem_type };
    if ((r = vk_vkAllocateMemory(d->dev, &ai, NULL, &a.mem)) != VK_SUCCESS) {
        vk_vkDestroyBuffer(d->dev, a.buf, NULL);
        return vk_fail(d, "vkAllocateMemory", r, -ENOMEM);
    }
    if ((r = vk_vkBindBufferMemory(d->dev, a.buf, a.mem, 0)) != VK_SUCCESS ||
        (d->host_visible && (r = vk_vkMapMemory(d->dev, a.mem, 0, VK_WHOLE_SIZE, 0, &a.map)) != VK_SUCCESS)) {
        vk_vkFreeMemory(d->dev, a.mem, NULL);
        vk_vkDestroyBuffer(d->dev, a.buf, NULL);
        return vk_fail(d, a.map ? "vkMapMemory" : "vkBindBufferMemory", r, -ENOMEM);
    }
    pthread_mutex_lock(&d->mu);
    if (d->nallocs == d->cap_allocs) {
        size_t cap = d->cap_allocs ? 2 * d->cap_allocs : 64;
        struct vk_alloc *n = realloc(d->allocs, cap * sizeof *n);
        if (!n) {
            pthread_mutex_unlock(&d->mu);
            vk_vkFreeMemory(d->dev, a.mem, NULL);
            vk_vkDestroyBuffer(d->dev, a.buf, NULL);
            return vk_host->error(-ENOMEM, "vulkan:%u: out of memory", d->ordinal);
        }
        d->allocs = n;
        d->cap_allocs = cap;
    }
    /* Addresses only grow, so appending keeps the table sorted. */
    a.addr = d->next_addr;
    d->next_addr += (a.size + 2 * ADDR_GAP - 1) / ADDR_GAP * ADDR_GAP;
    d->allocs[d->nallocs++] = a;
    pthread_mutex_unlock(&d->mu);
    *device_ptr = (void *)(uintptr_t)a.addr;
    *host_ptr = a.map;
    return 0;
}

static size_t find_index(struct devq_pl_device *d, uint64_t addr)
{
    size_t lo = 0, hi = d->nallocs;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (d->allocs[mid].addr + d->allocs[mid].size <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

struct vk_alloc *vk_mem_find(struct devq_pl_device *d, uint64_t addr, size_t n)
{
    size_t i = find_index(d, addr);
    if (i == d->nallocs)
        return NULL;
    struct vk_alloc *a = &d->allocs[i];
    if (addr < a->addr || n > a->size || addr - a->addr > a->size - n)
        return NULL;
    return a;
}

void vk_mem_free(struct devq_pl_device *d, void *device_ptr)
{
    uint64_t addr = (uintptr_t)device_ptr;
    pthread_mutex_lock(&d->mu);
    size_t i = find_index(d, addr);
    if (i == d->nallocs || d->allocs[i].addr != addr) {
        pthread_mutex_unlock(&d->mu);
        vk_host->log(DEVQ_LOG_BASIC, "vulkan:%u: mem_free of %#llx, which is not an allocation", d->ordinal,
                     (unsigned long long)addr);
        return;
    }
    struct vk_alloc a = d->allocs[i];
    memmove(&d->allocs[i], &d->allocs[i + 1], (d->nallocs - i - 1) * sizeof a);
    d->nallocs--;
    pthread_mutex_unlock(&d->mu);
    /* lib frees only memory no stream still uses. */
    vk_vkDestroyBuffer(d->dev, a.buf, NULL);
    vk_vkFreeMemory(d->dev, a.mem, NULL);
}

void vk_mem_release_all(struct devq_pl_device *d)
{
    for (size_t i = 0; i < d->nallocs; i++) {
        vk_vkDestroyBuffer(d->dev, d->allocs[i].buf, NULL);
        vk_vkFreeMemory(d->dev, d->allocs[i].mem, NULL);
    }
    free(d->allocs);
    d->allocs = NULL;
    d->nallocs = 0;
    if (d->pattern)
        vk_vkDestroyBuffer(d->dev, d->pattern, NULL);
    if (d->pattern_mem)
        vk_vkFreeMemory(d->dev, d->pattern_mem, NULL);
    d->pattern = VK_NULL_HANDLE;
    d->pattern_mem = VK_NULL_HANDLE;
}

/* vkCmdFillBuffer takes whole 4-byte words only; the pattern buffer (4
 * bytes of each byte value, 1 KiB) is the source of the unaligned edges
 * of a fill, copied with vkCmdCopyBuffer, which takes any offset. */
int vk_mem_pattern_init(struct devq_pl_device *d)
{
    void *dptr, *hptr;
    int err = vk_mem_alloc(d, 1024, &dptr, &hptr);
    if (err)
        return err;
    /* Owned apart from lib's allocations. */
    struct vk_alloc a = d->allocs[--d->nallocs];
    d->pattern = a.buf;
    d->pattern_mem = a.mem;
    VkCommandPoolCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                   .queueFamilyIndex = d->family };
    VkCommandPool pool;
    VkResult r = vk_vkCreateCommandPool(d->dev, &pi, NULL, &pool);
    if (r != VK_SUCCESS)
        return vk_fail(d, "vkCreateCommandPool", r, -ENODEV);
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
    VkCommandBuffer cb;
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT };
    if ((r = vk_vkAllocateCommandBuffers(d->dev, &ai, &cb)) == VK_SUCCESS &&
        (r = vk_vkBeginCommandBuffer(cb, &bi)) == VK_SUCCESS) {
        for (uint32_t b = 0; b < 256; b++)
            vk_vkCmdFillBuffer(cb, d->pattern, b * 4, 4, b * 0x01010101u);
        if ((r = vk_vkEndCommandBuffer(cb)) == VK_SUCCESS) {
            VkCommandBufferSubmitInfo cbi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                              .commandBuffer = cb };
            VkSubmitInfo2 si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                                 .commandBufferInfoCount = 1,
                                 .pCommandBufferInfos = &cbi };
            if ((r = vk_vkQueueSubmit2(d->queues[0], 1, &si, VK_NULL_HANDLE)) == VK_SUCCESS)
                r = vk_vkDeviceWaitIdle(d->dev);
        }
    }
    vk_vkDestroyCommandPool(d->dev, pool, NULL);
    return r == VK_SUCCESS ? 0 : vk_fail(d, "filling the pattern buffer", r, -ENODEV);
}

static int bad_address(struct devq_pl_device *d, const char *op, const void *p, size_t n)
{
    return vk_host->error(-EINVAL, "vulkan:%u: %s: [%p, +%zu) is not device memory of this device",
                          d->ordinal, op, p, n);
}

/* Under mu: a host copy between device allocation a and host memory, by
 * the first path the device allows (see the top of the file).  Where the
 * item that frees a transient buffer cannot be queued (out of memory,
 * the stream broken), the buffer is left allocated rather than freed
 * under a copy that may still run. */
static int host_copy(struct devq_pl_stream *s, struct vk_alloc *a, void *dst, const void *src, size_t n,
                     enum devq_copy_dir dir)
{
    struct devq_pl_device *d = s->dev;
    bool h2d = dir == DEVQ_COPY_H2D;
    VkDeviceSize at = h2d ? (uintptr_t)dst - a->addr : (uintptr_t)src - a->addr, off = 0;
    struct vk_transient *t = NULL;
    VkCommandBuffer cb;
    int err;
    if (d->host_import && import_pages(d, h2d ? src : dst, n, &t, &off) == 0) {
        if (!(cb = vk_stream_cmd(s))) {
            vk_transient_free(d, t);
            return -EIO;
        }
        VkBufferCopy region = { h2d ? off : at, h2d ? at : off, n };
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): t is set (transient fails by vk_fail, never 0)
        vk_vkCmdCopyBuffer(cb, h2d ? t->buf : a->buf, h2d ? a->buf : t->buf, 1, &region);
        return vk_stream_release_item(s, VK_ITEM_RELEASE, NULL, NULL, 0, t);
    }
    if (a->map && !d->force_staging)
        return vk_stream_host_item(s, VK_ITEM_MEMCPY, NULL, NULL, h2d ? (char *)a->map + at : dst,
                                   h2d ? src : (const char *)a->map + at, n);
    if (!d->has_staging)
        return vk_host->error(-ENOTSUP,
                              "vulkan:%u: host copies need host-visible memory for staging, which "
                              "this device does not have",
                              d->ordinal);
    if ((err = transient(d, n, 1u << d->staging_type, NULL, &t)))
        return err;
    if (h2d) {
        /* The source is read when the copy executes, like the others. */
        // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): t is set (transient fails by vk_fail, never 0)
        if ((err = vk_stream_host_item(s, VK_ITEM_MEMCPY, NULL, NULL, t->map, src, n))) {
            vk_transient_free(d, t);
            return err;
        }
        /* The memcpy into t is queued: t is freed by an item after it. */
        if ((cb = vk_stream_cmd(s))) {
            VkBufferCopy region = { 0, at, n };
            vk_vkCmdCopyBuffer(cb, t->buf, a->buf, 1, &region);
        }
        err = vk_stream_release_item(s, VK_ITEM_RELEASE, NULL, NULL, 0, t);
        return cb ? err : -EIO;
    }
    if (!(cb = vk_stream_cmd(s))) {
        vk_transient_free(d, t);
        return -EIO;
    }
    VkBufferCopy region = { at, 0, n };
    // NOLINTNEXTLINE(clang-analyzer-core.NullDereference): t is set (transient fails by vk_fail, never 0)
    vk_vkCmdCopyBuffer(cb, a->buf, t->buf, 1, &region);
    return vk_stream_release_item(s, VK_ITEM_MEMCPY, dst, t->map, n, t);
}

int vk_copy(struct devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    struct devq_pl_device *d = s->dev;
    if (n == 0)
        return 0;
    pthread_mutex_lock(&d->mu);
    int err = 0;
    struct vk_alloc *da = NULL, *sa = NULL;
    if (dir != DEVQ_COPY_D2H && !(da = vk_mem_find(d, (uintptr_t)dst, n)))
        err = bad_address(d, "copy destination", dst, n);
    else if (dir != DEVQ_COPY_H2D && !(sa = vk_mem_find(d, (uintptr_t)src, n)))
        err = bad_address(d, "copy source", src, n);
    else if (dir == DEVQ_COPY_D2D) {
        VkCommandBuffer cb = vk_stream_cmd(s);
        if (!cb)
            err = -EIO;
        else {
            VkBufferCopy region = { (uintptr_t)src - sa->addr, (uintptr_t)dst - da->addr, n };
            vk_vkCmdCopyBuffer(cb, sa->buf, da->buf, 1, &region);
        }
    } else {
        err = host_copy(s, dir == DEVQ_COPY_H2D ? da : sa, dst, src, n, dir);
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}

int vk_fill(struct devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    struct devq_pl_device *d = s->dev;
    if (n == 0)
        return 0;
    pthread_mutex_lock(&d->mu);
    int err = 0;
    struct vk_alloc *a = vk_mem_find(d, (uintptr_t)dst, n);
    VkCommandBuffer cb = NULL;
    if (!a)
        err = bad_address(d, "fill", dst, n);
    else if (!(cb = vk_stream_cmd(s)))
        err = -EIO;
    else {
        VkDeviceSize off = (uintptr_t)dst - a->addr;
        VkDeviceSize head = (4 - off % 4) % 4;
        if (head > n)
            head = n;
        VkDeviceSize body = (n - head) & ~(VkDeviceSize)3, tail = n - head - body;
        VkBufferCopy edges[2];
        uint32_t nedges = 0;
        if (head)
            edges[nedges++] = (VkBufferCopy){ byte * 4u, off, head };
        if (tail)
            edges[nedges++] = (VkBufferCopy){ byte * 4u, off + head + body, tail };
        if (body)
            vk_vkCmdFillBuffer(cb, a->buf, off + head, body, byte * 0x01010101u);
        if (nedges)
            vk_vkCmdCopyBuffer(cb, d->pattern, a->buf, nedges, edges);
    }
    pthread_mutex_unlock(&d->mu);
    return err;
}
