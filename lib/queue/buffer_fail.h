/* SPDX-License-Identifier: MIT */
/* buffer_fail.c: the failure a buffer's last writer left, by write
 * generation (DESIGN §5a), and how messages name a buffer. */
#ifndef DEVQ_LIB_BUFFER_FAIL_H
#define DEVQ_LIB_BUFFER_FAIL_H

#include <stddef.h>
#include <stdint.h>
#include <devq/devq.h>
#include "buffer.h"
#include "name.h"

void devq__buffer_fail(devq_buffer *b, int err, const char *cause, uint32_t gen);
void devq__buffer_clear(devq_buffer *b, uint32_t gen);                  /* write gen declared all of it new */
int devq__buffer_failed(const devq_buffer *b, char *cause, size_t cap); /* 0 or the error */
/* 0 or the error, for a reader of generation gen. */
int devq__buffer_failed_at(const devq_buffer *b, uint32_t gen, char *cause, size_t cap);
/* Numbers the use's read generation, and its write (device lock). */
static inline uint32_t devq__buffer_bind_gen(devq_buffer *b, unsigned access)
{
    uint32_t g = b->wgen;
    if (access & DEVQ_WRITE)
        b->wgen = g + 1;
    return g;
}
void devq__buffer_fail_fini(devq_buffer *b);
int devq__buffer_any_failed(void); /* any buffer failed, process-wide */
/* How every message names b: `buffer #7 (tag 5, 64 KiB)`, named
 * `buffer "w" (#7, tag 5, 64 KiB)` (name.h, devq(7) NAMES). */
struct devq_label devq__buffer_label(const devq_buffer *b);

#endif
