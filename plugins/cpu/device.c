/* SPDX-License-Identifier: MIT */
/* cpu backend: devices.  Each device is the whole host; DEVQ_CPU_DEVICES
 * makes several (useful to test multi-device code on one machine). */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cpu.h"

#define CPU_MAX_DEVICES 64

void cpu_list_init(struct cpu_link *head)
{
    head->prev = head->next = head;
}

void cpu_list_add(struct devq_pl_device *dev, struct cpu_link *head, struct cpu_link *node)
{
    pthread_mutex_lock(&dev->lock);
    node->next = head->next;
    node->prev = head;
    head->next->prev = node;
    head->next = node;
    pthread_mutex_unlock(&dev->lock);
}

void cpu_list_del(struct devq_pl_device *dev, struct cpu_link *node)
{
    pthread_mutex_lock(&dev->lock);
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = node->next = node;
    pthread_mutex_unlock(&dev->lock);
}

int cpu_device_count(uint32_t *count)
{
    const char *v = cpu_host->getenv("DEVQ_CPU_DEVICES");
    *count = 0;
    if (!v || !*v) {
        *count = 1;
        return 0;
    }
    char *end;
    errno = 0;
    unsigned long n = strtoul(v, &end, 10);
    if (errno || *end || end == v || !isdigit((unsigned char)v[0]) || n > CPU_MAX_DEVICES)
        return cpu_host->error(-EINVAL,
                               "DEVQ_CPU_DEVICES: '%s' is not a device count "
                               "(want 0..%d)",
                               v, CPU_MAX_DEVICES);
    *count = (uint32_t)n;
    return 0;
}

int cpu_device_open(uint32_t ordinal, devq_pl_device **out)
{
    uint32_t n;
    int err = cpu_device_count(&n);
    if (err)
        return err;
    if (ordinal >= n)
        return cpu_host->error(-ENODEV, "cpu: no device %u (DEVQ_CPU_DEVICES gives %u)", ordinal, n);
    /* Check DEVQ_CPU_THREADS now rather than at the first launch, where
     * the failure would surface far from its cause. */
    err = cpu_pool_config();
    if (err)
        return err;
    struct devq_pl_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return cpu_host->error(-ENOMEM, "cpu: out of memory opening device %u", ordinal);
    dev->ordinal = ordinal;
    pthread_mutex_init(&dev->lock, NULL);
    cpu_list_init(&dev->allocations);
    cpu_list_init(&dev->kernels);
    cpu_list_init(&dev->streams);
    cpu_list_init(&dev->events);
    cpu_host->log(DEVQ_LOG_FULL, "cpu:%u: opened (pool of %u threads, DEVQ_CPU_THREADS)", ordinal,
                  cpu_pool_size());
    *out = dev;
    return 0;
}

#define container_of(p, type, member) ((type *)((char *)(p)-offsetof(type, member)))

void cpu_device_close(devq_pl_device *dev)
{
    if (!dev)
        return;
    /* lib destroys what it made before closing; whatever is left (a
     * caller that leaked) is torn down here so nothing outlives the
     * device.  Streams first: their workers may still touch memory,
     * events and kernels. */
    while (dev->streams.next != &dev->streams)
        cpu_stream_destroy(container_of(dev->streams.next, struct devq_pl_stream, link));
    while (dev->events.next != &dev->events)
        cpu_event_free(container_of(dev->events.next, struct devq_pl_event, link));
    cpu_kernel_free_all(dev);
    cpu_mem_free_all(dev);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

/* "model name : Intel(R) ..." from /proc/cpuinfo; "cpu" when absent
 * (some architectures call it differently, containers may hide it). */
static void cpu_model_name(char *name, size_t cap)
{
    snprintf(name, cap, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "re");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0)
            continue;
        char *colon = strchr(line, ':');
        if (!colon)
            continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        size_t len = strcspn(v, "\n");
        while (len && (v[len - 1] == ' ' || v[len - 1] == '\t'))
            len--;
        if (len) {
            if (len >= cap)
                len = cap - 1;
            memcpy(name, v, len);
            name[len] = '\0';
        }
        break;
    }
    fclose(f);
}

int cpu_device_info(devq_pl_device *dev, devq_device_info *info)
{
    (void)dev;
    cpu_model_name(info->name, sizeof info->name);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    info->total_memory = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    info->compute_units = cores > 0 ? (uint32_t)cores : 0;
    info->caps = DEVQ_CAP_KERNELS | DEVQ_CAP_GRAPH_NATIVE | DEVQ_CAP_HOST_VISIBLE | DEVQ_CAP_PRIORITIES |
                 DEVQ_CAP_SKIP_ON_ERROR | DEVQ_CAP_TIMING |
                 DEVQ_CAP_KERNEL_CHECK; /* declared kernels only: devq-cpu(7) */
    return 0;
}
