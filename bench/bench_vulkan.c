/* SPDX-License-Identifier: MIT */
/* bench_vulkan: devq on vulkan:0 against raw Vulkan doing the same work
 * in the same run, on the same driver (lavapipe in CI):
 *   - submit -> completion of an empty batch (a timeline signal);
 *   - submit -> completion of a trivial dispatch;
 *   - empty batches per second (1000 submits, then one wait);
 *   - SAXPY over 64 MiB vectors (device-resident data), GB/s;
 *   - a graph of 64 tiny dispatches (SAXPY of 64 elements each, one
 *     barrier between two) submitted GRAPH_SUBMITS times, then one wait:
 *     submissions per second against raw Vulkan resubmitting one
 *     pre-recorded command buffer of the same 64 dispatches and barriers
 *     (the limit: nothing is recorded per submission), and against
 *     devq's one-shot path (64 devq_queue_exec + submit each time).
 *     On lavapipe the device's work dominates that rate, so the same
 *     loops also give the submitting thread's CPU time per submission
 *     (CLOCK_THREAD_CPUTIME_ID, the final wait left out): what a graph
 *     saves the host.
 * The raw side is what a careful Vulkan program does: command buffers
 * recorded once and resubmitted, one timeline semaphore, push
 * descriptors, the same SPIR-V (examples/saxpy.spv) and memory type.
 * Exits 77 without a Vulkan device.  Results: bench/RESULTS.md. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vulkan/vulkan.h>
#include <devq/devq.h>
#include "bench_util.h"

#define CHECK(x)                                                                 \
    do {                                                                         \
        int r_ = (x);                                                            \
        if (r_ < 0) {                                                            \
            fprintf(stderr, "bench_vulkan: %s: %d %s\n", #x, r_, devq_errmsg()); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)
#define VK(x)                                                       \
    do {                                                            \
        VkResult r_ = (x);                                          \
        if (r_ != VK_SUCCESS) {                                     \
            fprintf(stderr, "bench_vulkan: %s: %d\n", #x, (int)r_); \
            exit(1);                                                \
        }                                                           \
    } while (0)

enum { REPS = 7, LAT_N = 500, RATE_N = 1000, GRAPH_OPS = 64, GRAPH_SUBMITS = 100 };
#define SAXPY_BYTES (64u << 20)
#define SAXPY_N (SAXPY_BYTES / 4u)

static uint32_t *spv;
static size_t spv_size;

static void load_spv(void)
{
    const char *path = getenv("BENCH_SAXPY_SPV");
    if (!path)
        path = BENCH_SAXPY_SPV;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "bench_vulkan: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    spv = malloc(1 << 16);
    spv_size = fread(spv, 1, 1 << 16, f);
    fclose(f);
}

/* ---- raw Vulkan ---- */
struct raw {
    VkInstance inst;
    VkPhysicalDevice phys;
    VkDevice dev;
    VkQueue queue;
    uint32_t family, mem_type;
    VkSemaphore sem;
    uint64_t value;
    VkCommandPool pool;
    VkBuffer buf[2];
    VkDeviceMemory mem[2];
    VkDescriptorSetLayout dsl;
    VkPipelineLayout layout;
    VkPipeline pipe;
    VkCommandBuffer tiny, saxpy, run;
};

static void raw_buffer(struct raw *r, int i, VkDeviceSize size)
{
    VkBufferCreateInfo bi = { .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .size = size,
                              .usage =
                                  VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT };
    VK(vkCreateBuffer(r->dev, &bi, NULL, &r->buf[i]));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(r->dev, r->buf[i], &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(r->phys, &mp);
    uint32_t t = 0;
    while (!(req.memoryTypeBits & (1u << t)) ||
           !(mp.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
        t++;
    VkMemoryAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .allocationSize = req.size,
                                .memoryTypeIndex = t };
    VK(vkAllocateMemory(r->dev, &ai, NULL, &r->mem[i]));
    VK(vkBindBufferMemory(r->dev, r->buf[i], r->mem[i], 0));
}

static VkCommandBuffer raw_record(struct raw *r, uint32_t n, uint32_t groups)
{
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = r->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
    VkCommandBuffer cb;
    VK(vkAllocateCommandBuffers(r->dev, &ai, &cb));
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO };
    VK(vkBeginCommandBuffer(cb, &bi));
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipe);
    VkDescriptorBufferInfo bufs[2] = { { r->buf[0], 0, VK_WHOLE_SIZE }, { r->buf[1], 0, VK_WHOLE_SIZE } };
    VkWriteDescriptorSet w[2];
    for (int i = 0; i < 2; i++)
        w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bufs[i] };
    PFN_vkCmdPushDescriptorSetKHR push =
        (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(r->dev, "vkCmdPushDescriptorSetKHR");
    push(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 2, w);
    struct {
        float a;
        uint32_t n;
    } pc = { 2.0f, n };
    vkCmdPushConstants(cb, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
    for (uint32_t base = 0; base < groups; base += 32768) /* maxComputeWorkGroupCount >= 65535 */
        vkCmdDispatchBase(cb, base, 0, 0, groups - base < 32768 ? groups - base : 32768, 1, 1);
    VK(vkEndCommandBuffer(cb));
    return cb;
}

/* GRAPH_OPS tiny SAXPYs with the barrier devq puts between two ops. */
static VkCommandBuffer raw_record_run(struct raw *r)
{
    VkCommandBufferAllocateInfo ai = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                       .commandPool = r->pool,
                                       .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                       .commandBufferCount = 1 };
    VkCommandBuffer cb;
    VK(vkAllocateCommandBuffers(r->dev, &ai, &cb));
    /* Resubmitted while earlier submissions of it are pending. */
    VkCommandBufferBeginInfo bi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                    .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT };
    VK(vkBeginCommandBuffer(cb, &bi));
    VkDescriptorBufferInfo bufs[2] = { { r->buf[0], 0, VK_WHOLE_SIZE }, { r->buf[1], 0, VK_WHOLE_SIZE } };
    VkWriteDescriptorSet w[2];
    for (int i = 0; i < 2; i++)
        w[i] = (VkWriteDescriptorSet){ .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                       .dstBinding = (uint32_t)i,
                                       .descriptorCount = 1,
                                       .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                       .pBufferInfo = &bufs[i] };
    PFN_vkCmdPushDescriptorSetKHR push =
        (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(r->dev, "vkCmdPushDescriptorSetKHR");
    struct {
        float a;
        uint32_t n;
    } pc = { 2.0f, 64 };
    VkMemoryBarrier2 mb = { .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                            .srcStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                            .srcAccessMask = VK_ACCESS_2_MEMORY_WRITE_BIT,
                            .dstStageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                            .dstAccessMask = VK_ACCESS_2_MEMORY_READ_BIT | VK_ACCESS_2_MEMORY_WRITE_BIT };
    VkDependencyInfo dep = { .sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                             .memoryBarrierCount = 1,
                             .pMemoryBarriers = &mb };
    for (int i = 0; i < GRAPH_OPS; i++) {
        if (i)
            vkCmdPipelineBarrier2(cb, &dep);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->pipe);
        push(cb, VK_PIPELINE_BIND_POINT_COMPUTE, r->layout, 0, 2, w);
        vkCmdPushConstants(cb, r->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, &pc);
        vkCmdDispatchBase(cb, 0, 0, 0, 1, 1, 1);
    }
    VK(vkEndCommandBuffer(cb));
    return cb;
}

static int raw_init(struct raw *r)
{
    VkApplicationInfo app = { .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_3 };
    VkInstanceCreateInfo ici = { .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app };
    if (vkCreateInstance(&ici, NULL, &r->inst) != VK_SUCCESS)
        return -1;
    uint32_t n = 1;
    if (vkEnumeratePhysicalDevices(r->inst, &n, &r->phys) < 0 || n == 0)
        return -1;
    uint32_t nf = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(r->phys, &nf, NULL);
    VkQueueFamilyProperties fp[16];
    nf = nf > 16 ? 16 : nf;
    vkGetPhysicalDeviceQueueFamilyProperties(r->phys, &nf, fp);
    while (!(fp[r->family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        r->family++;
    float prio = 1;
    VkDeviceQueueCreateInfo qi = { .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = r->family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &prio };
    VkPhysicalDeviceVulkan13Features f13 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                             .synchronization2 = VK_TRUE,
                                             .maintenance4 = VK_TRUE };
    VkPhysicalDeviceVulkan12Features f12 = { .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                             .pNext = &f13,
                                             .timelineSemaphore = VK_TRUE };
    const char *ext = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    VkDeviceCreateInfo dci = { .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                               .pNext = &f12,
                               .queueCreateInfoCount = 1,
                               .pQueueCreateInfos = &qi,
                               .enabledExtensionCount = 1,
                               .ppEnabledExtensionNames = &ext };
    VK(vkCreateDevice(r->phys, &dci, NULL, &r->dev));
    vkGetDeviceQueue(r->dev, r->family, 0, &r->queue);
    VkSemaphoreTypeCreateInfo ti = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                     .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE };
    VkSemaphoreCreateInfo si = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &ti };
    VK(vkCreateSemaphore(r->dev, &si, NULL, &r->sem));
    VkCommandPoolCreateInfo pi = { .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                   .queueFamilyIndex = r->family };
    VK(vkCreateCommandPool(r->dev, &pi, NULL, &r->pool));
    raw_buffer(r, 0, SAXPY_BYTES);
    raw_buffer(r, 1, SAXPY_BYTES);
    VkDescriptorSetLayoutBinding b[2] = {
        { 0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL },
        { 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL }
    };
    VkDescriptorSetLayoutCreateInfo di = { .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
                                           .bindingCount = 2,
                                           .pBindings = b };
    VK(vkCreateDescriptorSetLayout(r->dev, &di, NULL, &r->dsl));
    VkPushConstantRange pr = { VK_SHADER_STAGE_COMPUTE_BIT, 0, 8 };
    VkPipelineLayoutCreateInfo li = { .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1,
                                      .pSetLayouts = &r->dsl,
                                      .pushConstantRangeCount = 1,
                                      .pPushConstantRanges = &pr };
    VK(vkCreatePipelineLayout(r->dev, &li, NULL, &r->layout));
    VkShaderModuleCreateInfo mi = { .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                    .codeSize = spv_size,
                                    .pCode = spv };
    VkShaderModule mod;
    VK(vkCreateShaderModule(r->dev, &mi, NULL, &mod));
    uint32_t local[3] = { 64, 1, 1 };
    VkSpecializationMapEntry me[3] = { { 0, 0, 4 }, { 1, 4, 4 }, { 2, 8, 4 } };
    VkSpecializationInfo spec = { 3, me, sizeof local, local };
    VkComputePipelineCreateInfo ci = { .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                       .stage = { .sType =
                                                      VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                  .module = mod,
                                                  .pName = "main",
                                                  .pSpecializationInfo = &spec },
                                       .layout = r->layout,
                                       .flags = VK_PIPELINE_CREATE_DISPATCH_BASE_BIT };
    VK(vkCreateComputePipelines(r->dev, VK_NULL_HANDLE, 1, &ci, NULL, &r->pipe));
    vkDestroyShaderModule(r->dev, mod, NULL);
    r->tiny = raw_record(r, 64, 1);
    r->saxpy = raw_record(r, SAXPY_N, SAXPY_N / 64);
    r->run = raw_record_run(r);
    return 0;
}

/* Submit cb (or nothing) signalling the next value; wait when asked. */
static void raw_submit(struct raw *r, VkCommandBuffer cb, int wait)
{
    VkSemaphoreSubmitInfo sig = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SUBMIT_INFO,
                                  .semaphore = r->sem,
                                  .value = ++r->value,
                                  .stageMask = VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT };
    VkCommandBufferSubmitInfo cbi = { .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_SUBMIT_INFO,
                                      .commandBuffer = cb };
    VkSubmitInfo2 si = { .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO_2,
                         .commandBufferInfoCount = cb ? 1 : 0,
                         .pCommandBufferInfos = &cbi,
                         .signalSemaphoreInfoCount = 1,
                         .pSignalSemaphoreInfos = &sig };
    VK(vkQueueSubmit2(r->queue, 1, &si, VK_NULL_HANDLE));
    if (wait) {
        VkSemaphoreWaitInfo wi = { .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                                   .semaphoreCount = 1,
                                   .pSemaphores = &r->sem,
                                   .pValues = &r->value };
        VK(vkWaitSemaphores(r->dev, &wi, UINT64_MAX));
    }
}

static double raw_latency_us(struct raw *r, VkCommandBuffer cb)
{
    double v[LAT_N];
    for (int i = 0; i < LAT_N; i++) {
        uint64_t t0 = bench_now();
        raw_submit(r, cb, 1);
        v[i] = (double)(bench_now() - t0) / 1e3;
    }
    return bench_median(v, LAT_N);
}

static double raw_rate(struct raw *r)
{
    uint64_t t0 = bench_now();
    for (int i = 0; i < RATE_N; i++)
        raw_submit(r, VK_NULL_HANDLE, i == RATE_N - 1);
    return RATE_N / ((double)(bench_now() - t0) / 1e9);
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The pre-recorded run of GRAPH_OPS dispatches, GRAPH_SUBMITS times;
 * *cpu_us: the submitting thread's CPU per submission. */
static double raw_run_rate(struct raw *r, double *cpu_us)
{
    uint64_t t0 = bench_now(), c0 = thread_cpu_ns();
    for (int i = 0; i < GRAPH_SUBMITS; i++)
        raw_submit(r, r->run, 0);
    *cpu_us = (double)(thread_cpu_ns() - c0) / 1e3 / GRAPH_SUBMITS;
    raw_submit(r, VK_NULL_HANDLE, 1);
    return GRAPH_SUBMITS / ((double)(bench_now() - t0) / 1e9);
}

/* ---- devq ---- */
struct dq {
    devq_device *dev;
    devq_queue *q;
    devq_signal *s;
    uint64_t value;
    devq_kernel *k;
    devq_buffer *x, *y;
};

static void dq_exec(struct dq *d, uint32_t n)
{
    float a = 2.0f;
    devq_arg args[4] = { DEVQ_ARG_BUF(d->x, DEVQ_READ), DEVQ_ARG_BUF(d->y, DEVQ_READ_WRITE), DEVQ_ARG_VAL(&a),
                         DEVQ_ARG_VAL(&n) };
    devq_launch l = { { n, 1, 1 }, { 64, 1, 1 }, 0 };
    CHECK(devq_queue_exec(d->q, d->k, args, 4, &l));
}

static void dq_batch(struct dq *d, uint32_t n, int wait)
{
    if (n)
        dq_exec(d, n);
    CHECK(devq_queue_signal(d->q, d->s, ++d->value));
    CHECK(devq_queue_submit(d->q));
    if (wait)
        CHECK(devq_signal_wait(d->s, d->value, DEVQ_TIMEOUT_INFINITE));
}

static double dq_latency_us(struct dq *d, uint32_t n)
{
    double v[LAT_N];
    for (int i = 0; i < LAT_N; i++) {
        uint64_t t0 = bench_now();
        dq_batch(d, n, 1);
        v[i] = (double)(bench_now() - t0) / 1e3;
    }
    return bench_median(v, LAT_N);
}

static double dq_rate(struct dq *d)
{
    uint64_t t0 = bench_now();
    for (int i = 0; i < RATE_N; i++)
        dq_batch(d, 0, i == RATE_N - 1);
    return RATE_N / ((double)(bench_now() - t0) / 1e9);
}

/* The same run as a graph: captured once, submitted GRAPH_SUBMITS times. */
static devq_graph_exec *dq_graph(struct dq *d)
{
    CHECK(devq_queue_begin_capture(d->q));
    for (int i = 0; i < GRAPH_OPS; i++)
        dq_exec(d, 64);
    devq_graph *g;
    devq_graph_exec *ge;
    CHECK(devq_queue_end_capture(d->q, &g));
    CHECK(devq_graph_instantiate(g, &ge));
    devq_graph_destroy(g);
    return ge;
}

static double dq_graph_rate(struct dq *d, devq_graph_exec *ge, double *cpu_us)
{
    uint64_t t0 = bench_now(), c0 = thread_cpu_ns();
    for (int i = 0; i < GRAPH_SUBMITS; i++)
        CHECK(devq_graph_submit(d->q, ge));
    *cpu_us = (double)(thread_cpu_ns() - c0) / 1e3 / GRAPH_SUBMITS;
    CHECK(devq_queue_finish(d->q, DEVQ_TIMEOUT_INFINITE));
    return GRAPH_SUBMITS / ((double)(bench_now() - t0) / 1e9);
}

/* The one-shot path: the 64 launches recorded again for every batch. */
static double dq_oneshot_rate(struct dq *d, double *cpu_us)
{
    uint64_t t0 = bench_now(), c0 = thread_cpu_ns();
    for (int i = 0; i < GRAPH_SUBMITS; i++) {
        for (int k = 0; k < GRAPH_OPS; k++)
            dq_exec(d, 64);
        CHECK(devq_queue_submit(d->q));
    }
    *cpu_us = (double)(thread_cpu_ns() - c0) / 1e3 / GRAPH_SUBMITS;
    CHECK(devq_queue_finish(d->q, DEVQ_TIMEOUT_INFINITE));
    return GRAPH_SUBMITS / ((double)(bench_now() - t0) / 1e9);
}

static double gbps(uint64_t ns)
{
    return 3.0 * SAXPY_BYTES / (double)ns; /* read x, read y, write y */
}

int main(void)
{
    struct dq d = { 0 };
    int r = devq_device_open("vulkan:0", &d.dev);
    if (r < 0) {
        printf("SKIP: no vulkan device: %s\n", devq_errmsg());
        return 77;
    }
    load_spv();
    struct raw raw = { 0 };
    if (raw_init(&raw) < 0) {
        printf("SKIP: raw Vulkan: no device\n");
        return 77;
    }
    CHECK(devq_queue_create(d.dev, NULL, &d.q));
    CHECK(devq_signal_create(0, &d.s));
    CHECK(devq_kernel_load(d.dev, spv, spv_size, "main", &d.k));
    CHECK(devq_buffer_alloc(d.dev, SAXPY_BYTES, NULL, 0, &d.x));
    CHECK(devq_buffer_alloc(d.dev, SAXPY_BYTES, NULL, 0, &d.y));
    CHECK(devq_queue_fill(d.q, d.x, 0, SAXPY_BYTES, 0));
    CHECK(devq_queue_fill(d.q, d.y, 0, SAXPY_BYTES, 0));
    /* Warm both up: pipelines compile at the first dispatch. */
    dq_batch(&d, 64, 1);
    dq_batch(&d, SAXPY_N, 1);
    raw_submit(&raw, raw.tiny, 1);
    raw_submit(&raw, raw.saxpy, 1);
    devq_graph_exec *ge = dq_graph(&d);
    double gc[REPS], gcb[REPS], goc[REPS];
    dq_graph_rate(&d, ge, &gc[0]);
    raw_run_rate(&raw, &gcb[0]);

    double e[REPS], eb[REPS], t[REPS], tb[REPS], b[REPS], bb[REPS], s[REPS], sb[REPS];
    for (int i = 0; i < REPS; i++) {
        e[i] = dq_latency_us(&d, 0);
        eb[i] = raw_latency_us(&raw, VK_NULL_HANDLE);
        t[i] = dq_latency_us(&d, 64);
        tb[i] = raw_latency_us(&raw, raw.tiny);
        b[i] = dq_rate(&d) / 1e3;
        bb[i] = raw_rate(&raw) / 1e3;
        uint64_t t0 = bench_now();
        dq_batch(&d, SAXPY_N, 1);
        s[i] = gbps(bench_now() - t0);
        t0 = bench_now();
        raw_submit(&raw, raw.saxpy, 1);
        sb[i] = gbps(bench_now() - t0);
    }
    /* Alternating A/B/C rounds of their own, after the rows above. */
    double gr[REPS], grb[REPS], go[REPS];
    for (int i = 0; i < REPS; i++) {
        gr[i] = dq_graph_rate(&d, ge, &gc[i]);
        grb[i] = raw_run_rate(&raw, &gcb[i]);
        go[i] = dq_oneshot_rate(&d, &goc[i]);
    }
    double gr_m = bench_median(gr, REPS);
    devq_device_info info;
    CHECK(devq_device_info_get(d.dev, &info));
    bench_header("vulkan:0 against raw Vulkan on the same driver");
    printf("device: %s\n", info.name);
    bench_row("empty batch submit -> completion", bench_median(e, REPS), bench_median(eb, REPS), "us",
              "<= 1.2x");
    bench_row("trivial dispatch submit -> completion", bench_median(t, REPS), bench_median(tb, REPS), "us",
              "<= 1.2x");
    bench_row("empty batches per second", bench_median(b, REPS), bench_median(bb, REPS), "k/s", ">= 0.8x");
    bench_row("SAXPY 64 MiB (device data)", bench_median(s, REPS), bench_median(sb, REPS), "GB/s", ">= 0.9x");
    bench_row("graph replay, 64 tiny dispatches", gr_m, bench_median(grb, REPS), "/s", "raw: the limit");
    bench_row("graph replay vs one-shot, 64 dispatches", gr_m, bench_median(go, REPS), "/s",
              ">= 1x one-shot");
    double gc_m = bench_median(gc, REPS);
    bench_row("graph submit, host CPU per submission", gc_m, bench_median(gcb, REPS), "us", "raw: the limit");
    bench_row("graph submit vs one-shot, host CPU", gc_m, bench_median(goc, REPS), "us", "< 1x one-shot");
    devq_graph_exec_destroy(ge);
    devq_buffer_free(d.x, NULL);
    devq_buffer_free(d.y, NULL);
    devq_kernel_destroy(d.k);
    devq_queue_destroy(d.q);
    devq_signal_destroy(d.s);
    devq_device_close(d.dev);
    vkDeviceWaitIdle(raw.dev);
    return 0;
}
