/* SPDX-License-Identifier: MIT */
/* Thread-local error detail behind devq_errmsg(). */
#ifndef DEVQ_LIB_ERROR_H
#define DEVQ_LIB_ERROR_H

#include <stdarg.h>

/* Record a one-line detail for the calling thread and return err.
 * Usage: return devq__err(-EINVAL, "devq_queue_copy: offset %zu past end", off); */
int devq__err(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int devq__verr(int err, const char *fmt, va_list ap);
/* Replace the detail with a stored string (e.g. a signal's root cause). */
int devq__err_str(int err, const char *msg);

/* make analyze: the analyzer sees one file at a time and cannot know that
 * devq__err returns err, so it follows `if (r)` checks of a failed call
 * as if they passed.  For it alone, the call yields err itself.  (The
 * definitions in error.c are written (devq__err) to escape the macro.) */
#ifdef __clang_analyzer__
#define devq__err(err, ...)                \
    __extension__({                        \
        int devq__e = (err);               \
        (devq__err)(devq__e, __VA_ARGS__); \
        devq__e;                           \
    })
#define devq__err_str(err, msg)          \
    __extension__({                      \
        int devq__e = (err);             \
        (devq__err_str)(devq__e, (msg)); \
        devq__e;                         \
    })
#endif
/* The current detail, to copy into a root-cause record. */
const char *devq__errmsg_peek(void);

#define DEVQ_ERRMSG_MAX 512

#endif
