/* SPDX-License-Identifier: MIT */
/* cpu backend: memory.  Buffers are host memory (host_ptr == device_ptr),
 * 256-byte aligned (what the plugin contract asks of every backend, and
 * what CUDA and HIP give), page aligned from 64 KiB up, 2 MiB aligned in
 * huge pages from 4 MiB up.  Copies and fills are
 * memcpy/memset on the stream worker; large ones are cut into chunks run
 * by the shared pool so they use the machine's memory bandwidth. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "cpu.h"

#define CPU_ALLOC_MAGIC 0x6370756d656d3031ull /* "cpumem01" */
#define CPU_MIN_ALIGN 256u                    /* devq-plugin(7): every allocation */
#define CPU_PAGE_ALIGN_FROM (64u << 10)
#define CPU_SPLIT_FROM (4u << 20) /* copies/fills this large use the pool */
#define CPU_SPLIT_CHUNK (1u << 20)

#define CPU_HUGE_FROM (4u << 20) /* mapped, 2 MiB aligned, huge pages */
#define CPU_HUGE_ALIGN (2u << 20)
#define CPU_PAGE 4096u

/* Lives in the 64 bytes just below the pointer handed out. */
struct cpu_alloc {
    struct cpu_link link;
    void *base;
    size_t bytes;
    size_t map_len; /* 0: heap block (free), else mapping (munmap) */
    uint64_t magic;
};
_Static_assert(sizeof(struct cpu_alloc) <= CPU_CACHELINE, "allocation header too large");

static struct cpu_alloc *cpu_alloc_header(void *ptr)
{
    return (struct cpu_alloc *)((char *)ptr - CPU_CACHELINE);
}

/* Large buffers get their own mapping, 2 MiB aligned and advised for
 * transparent huge pages (THP is often in "madvise" mode): fewer page
 * faults on first touch and fewer TLB misses in streaming kernels.  The
 * page just below the buffer holds the header; the slack around it is
 * unmapped again, so it costs address space only. */
static char *cpu_map_huge(size_t body, size_t *map_len, void **base)
{
    size_t len = body + CPU_HUGE_ALIGN + CPU_PAGE;
    if (len < body)
        return NULL;
    char *raw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t p = ((uintptr_t)raw + CPU_PAGE + CPU_HUGE_ALIGN - 1) & ~(uintptr_t)(CPU_HUGE_ALIGN - 1);
    char *ptr = (char *)p, *start = ptr - CPU_PAGE;
    size_t used = CPU_PAGE + ((body + CPU_PAGE - 1) & ~(size_t)(CPU_PAGE - 1));
    if (start > raw)
        munmap(raw, (size_t)(start - raw));
    if (start + used < raw + len)
        munmap(start + used, (size_t)(raw + len - (start + used)));
#ifdef MADV_HUGEPAGE
    madvise(ptr, used - CPU_PAGE, MADV_HUGEPAGE); /* advice only: failure is fine */
#endif
    *map_len = used;
    *base = start;
    return ptr;
}

int cpu_mem_alloc(devq_pl_device *dev, size_t bytes, void **device_ptr, void **host_ptr)
{
    if (bytes >= CPU_HUGE_FROM) {
        size_t map_len;
        void *base;
        char *ptr = cpu_map_huge(bytes, &map_len, &base);
        if (!ptr)
            return cpu_host->error(-ENOMEM, "cpu: cannot map %zu bytes of host memory", bytes);
        struct cpu_alloc *h = cpu_alloc_header(ptr);
        h->base = base;
        h->bytes = bytes;
        h->map_len = map_len;
        h->magic = CPU_ALLOC_MAGIC;
        cpu_list_add(dev, &dev->allocations, &h->link);
        *device_ptr = ptr;
        if (host_ptr)
            *host_ptr = ptr;
        return 0;
    }
    /* The header sits in the cache line just below the pointer, inside
     * the `align` bytes in front of it. */
    size_t align = bytes >= CPU_PAGE_ALIGN_FROM ? CPU_PAGE : CPU_MIN_ALIGN;
    size_t body = (bytes + CPU_CACHELINE - 1) & ~(size_t)(CPU_CACHELINE - 1);
    if (body < bytes || body > SIZE_MAX - align)
        return cpu_host->error(-ENOMEM, "cpu: cannot allocate %zu bytes: size overflows", bytes);
    if (!body)
        body = CPU_CACHELINE;
    char *base = cpu_aligned_alloc(align, align + body);
    if (!base)
        return cpu_host->error(-ENOMEM, "cpu: out of host memory allocating %zu bytes", bytes);
    char *ptr = base + align;
    struct cpu_alloc *h = cpu_alloc_header(ptr);
    h->base = base;
    h->bytes = bytes;
    h->map_len = 0;
    h->magic = CPU_ALLOC_MAGIC;
    cpu_list_add(dev, &dev->allocations, &h->link);
    *device_ptr = ptr;
    if (host_ptr)
        *host_ptr = ptr;
    return 0;
}

void cpu_mem_free(devq_pl_device *dev, void *device_ptr)
{
    if (!device_ptr)
        return;
    struct cpu_alloc *h = cpu_alloc_header(device_ptr);
    if (h->magic != CPU_ALLOC_MAGIC) {
        /* mem_free cannot fail; freeing a foreign pointer would corrupt
         * the heap, so say so and leave it. */
        cpu_host->log(DEVQ_LOG_BASIC,
                      "cpu: mem_free(%p): not a cpu allocation (double free?); "
                      "ignored",
                      device_ptr);
        return;
    }
    h->magic = 0;
    cpu_list_del(dev, &h->link);
    if (h->map_len)
        munmap(h->base, h->map_len);
    else
        free(h->base);
}

void cpu_mem_free_all(devq_pl_device *dev)
{
    while (dev->allocations.next != &dev->allocations) {
        struct cpu_alloc *h = (struct cpu_alloc *)dev->allocations.next;
        cpu_host->log(DEVQ_LOG_FULL, "cpu: device close frees a leaked %zu-byte buffer", h->bytes);
        cpu_mem_free(dev, (char *)h + CPU_CACHELINE);
    }
}

/* ---- stream-ordered copy and fill ---- */

struct cpu_bulk {
    void *dst;
    const void *src; /* NULL: fill */
    size_t n;
    uint8_t byte;
};

static void cpu_bulk_range(const struct cpu_bulk *b, size_t off, size_t len)
{
    if (b->src)
        memcpy((char *)b->dst + off, (const char *)b->src + off, len);
    else
        memset((char *)b->dst + off, b->byte, len);
}

static int cpu_bulk_chunk(struct cpu_job *job, uint64_t index)
{
    const struct cpu_bulk *b = job->ctx;
    size_t off = (size_t)index * CPU_SPLIT_CHUNK;
    size_t len = b->n - off < CPU_SPLIT_CHUNK ? b->n - off : CPU_SPLIT_CHUNK;
    cpu_bulk_range(b, off, len);
    return 0;
}

static void cpu_bulk_run(devq_pl_stream *s, struct cpu_bulk *b)
{
    if (s->error)
        return; /* skipped: an earlier op in this batch failed */
    if (b->n < CPU_SPLIT_FROM || cpu_pool_threads() == 0) {
        cpu_bulk_range(b, 0, b->n);
        return;
    }
    struct cpu_job job = {
        .priority = s->priority,
        .total = (b->n + CPU_SPLIT_CHUNK - 1) / CPU_SPLIT_CHUNK,
        .run = cpu_bulk_chunk,
        .ctx = b,
    };
    cpu_pool_run(&job);
}

/* Queue a copy (CPU_OP_COPY, from src) or a fill (CPU_OP_FILL, with
 * byte) of n bytes at dst. */
static int queue_bytes(devq_pl_stream *s, int kind, void *dst, const void *src, uint8_t byte, size_t n)
{
    bool copy = kind == CPU_OP_COPY;
    struct cpu_op *op = cpu_stream_queue(s, kind, copy ? "a copy" : "a fill");
    if (!op)
        return -ENOMEM;
    if (copy) {
        op->u.copy.dst = dst;
        op->u.copy.src = src;
        op->u.copy.n = n;
    } else {
        op->u.fill.dst = dst;
        op->u.fill.n = n;
        op->u.fill.byte = byte;
    }
    cpu_stream_publish(s);
    return 0;
}

int cpu_copy(devq_pl_stream *s, void *dst, const void *src, size_t n, enum devq_copy_dir dir)
{
    if (dir != DEVQ_COPY_D2D && dir != DEVQ_COPY_H2D && dir != DEVQ_COPY_D2H)
        return cpu_host->error(-EINVAL, "cpu: copy: unknown direction %d", (int)dir);
    if (n && (!dst || !src))
        return cpu_host->error(-EINVAL, "cpu: copy of %zu bytes with a NULL pointer", n);
    return queue_bytes(s, CPU_OP_COPY, dst, src, 0, n);
}

int cpu_fill(devq_pl_stream *s, void *dst, uint8_t byte, size_t n)
{
    if (n && !dst)
        return cpu_host->error(-EINVAL, "cpu: fill of %zu bytes with a NULL pointer", n);
    return queue_bytes(s, CPU_OP_FILL, dst, NULL, byte, n);
}

void cpu_copy_run(devq_pl_stream *s, struct cpu_op *op)
{
    struct cpu_bulk b = { op->u.copy.dst, op->u.copy.src, op->u.copy.n, 0 };
    cpu_bulk_run(s, &b);
}

void cpu_fill_run(devq_pl_stream *s, struct cpu_op *op)
{
    struct cpu_bulk b = { op->u.fill.dst, NULL, op->u.fill.n, op->u.fill.byte };
    cpu_bulk_run(s, &b);
}
