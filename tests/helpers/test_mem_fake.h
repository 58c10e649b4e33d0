/* SPDX-License-Identifier: MIT */
/* A fake device for the memory tests: a hand-built struct devq_device
 * over a tiny backend whose memory is malloc and whose events complete
 * only when the test says so ("a fence that never completes" is just a
 * ticket nobody completes). */
#ifndef DEVQ_TEST_MEM_FAKE_H
#define DEVQ_TEST_MEM_FAKE_H

#include <stddef.h>
#include <stdint.h>
#include "device.h"
#include "stream.h"

struct fake_config {
    uint64_t caps;     /* DEVQ_CAP_* (HOST_VISIBLE by default in tests) */
    size_t mem_limit;  /* backend refuses past this many bytes (0: no limit) */
    int defer_host_fn; /* queue host callbacks until fake_run_host_fns() */
    int attach_mem;    /* run devq__mem_create (the default stack) */
};

struct devq_device *fake_device_open(const struct fake_config *cfg);
/* Returns devq__mem_create's result when attach_mem is set. */
int fake_device_open_mem(const struct fake_config *cfg, struct devq_device **out);
void fake_device_close(struct devq_device *dev);

/* Stream `id` of the fake device (ids 0..15). */
struct devq_stream *fake_stream(struct devq_device *dev, uint32_t id);

/* Events: every record takes a new ticket; a ticket is reached once
 * completed.  fake_last_ticket() is the ticket of the latest record. */
uint64_t fake_last_ticket(void);
void fake_complete(uint64_t ticket);
void fake_complete_all(void);
void fake_complete_all_but(uint64_t ticket);
void fake_run_host_fns(void);

/* Backend counters. */
size_t fake_backend_bytes(void);    /* bytes the backend has handed out */
uint64_t fake_backend_allocs(void); /* mem_alloc calls that succeeded */

#endif
