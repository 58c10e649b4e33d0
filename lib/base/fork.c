/* SPDX-License-Identifier: MIT */
/* The fork generation (fork.h). */
#define _GNU_SOURCE
#include "fork.h"
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include "error.h"

atomic_uint devq__fork_generation;

static void in_child(void)
{
    atomic_fetch_add_explicit(&devq__fork_generation, 1, memory_order_relaxed);
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void track(void)
{
    pthread_atfork(NULL, NULL, in_child);
}

void devq__fork_track(void)
{
    pthread_once(&once, track);
}

int devq__forked_err(const char *fn, const char *what, int pid)
{
    return devq__err(-ENODEV,
                     "%s: %s was made in process %d, and this process (%d) was forked from it: devq devices "
                     "and queues do not survive fork(); open the device and make its queues in this process",
                     fn, what, pid, (int)getpid());
}
