/* SPDX-License-Identifier: MIT */
/* devq_backends_report: what the loader tried and what it made of each
 * file, for devq-info and for programs that want to explain a missing
 * backend to their users. */
#include "config.h"
#include <errno.h>
#include <devq/devq.h>
#include "device.h"
#include "error.h"
#include "plugin.h"

DEVQ_API int devq_backends_report(devq_backend_report *out, size_t cap, size_t *n)
{
    if (!out && cap)
        return devq__err(-EINVAL, "devq_backends_report: out is NULL but cap is %zu", cap);
    int r = devq__backends_load();
    if (r < 0)
        return r;
    size_t total = devq__plugin_report_count();
    for (size_t i = 0; i < total && i < cap; i++)
        out[i] = *devq__plugin_report_at(i);
    if (n)
        *n = total;
    return 0;
}
