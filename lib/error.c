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
    vsnprintf(errbuf, sizeof errbuf, fmt, ap);
    return err;
}

int devq__err(int err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    devq__verr(err, fmt, ap);
    va_end(ap);
    return err;
}

int devq__err_str(int err, const char *msg)
{
    if (msg != errbuf)
        snprintf(errbuf, sizeof errbuf, "%s", msg ? msg : "");
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
