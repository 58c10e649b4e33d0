/* SPDX-License-Identifier: MIT */
/* Thread-local error detail.  Each failing call overwrites it, so the
 * message a caller reads always belongs to the call that just failed. */
#include "config.h"
#include <stdio.h>
#include <string.h>
#include <devq/devq.h>
#include "error.h"

static _Thread_local char errbuf[DEVQ_ERRMSG_MAX];

int devq__verr(int err, const char *fmt, va_list ap)
{
    /* Callers often wrap the detail a lower layer just left here
     * ("...: %s", devq__errmsg_peek()): format into a copy, because
     * vsnprintf into the buffer it reads from overwrites that detail
     * before reading it (the plugin's driver error was lost this way). */
    char line[DEVQ_ERRMSG_MAX];
    vsnprintf(line, sizeof line, fmt, ap);
    memcpy(errbuf, line, strlen(line) + 1);
    return err;
}

int(devq__err)(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    devq__verr(err, fmt, ap);
    va_end(ap);
    return err;
}

int(devq__err_str)(int err, const char *msg)
{
    if (!msg)
        msg = "";
    if (msg != errbuf) {
        /* msg may be a tail of errbuf itself: move, do not copy. */
        size_t n = strnlen(msg, sizeof errbuf - 1);
        memmove(errbuf, msg, n);
        errbuf[n] = 0;
    }
    return err;
}

const char *devq__errmsg_peek(void)
{
    return errbuf;
}

DEVQ_API const char *devq_errmsg(void)
{
    return errbuf;
}

DEVQ_API const char *devq_version(void)
{
    return PACKAGE_VERSION;
}
