/* SPDX-License-Identifier: MIT */
/* cpu backend: host callbacks and the stream's error latch.
 *
 * The latch implements the devq_pl_host_fn contract: a failed op latches
 * its error, ops that would touch data are skipped while it is set, and
 * the next host callback receives it as `status` and clears it.  A
 * callback returning a negative errno latches that instead.  Callbacks
 * run on the worker thread, in stream order.  A signal tail (lib's
 * function for the signals that end a batch) runs there too, but only
 * with nothing latched: a failure before it stays for the end callback,
 * which fails those signals with its cause instead. */
#include "config.h"
#include <errno.h>
#include "cpu.h"

int cpu_host_fn(devq_pl_stream *s, devq_pl_host_fn fn, void *arg)
{
    if (!fn)
        return cpu_host->error(-EINVAL, "cpu: host_fn: NULL callback");
    struct cpu_op *op = cpu_stream_queue(s, CPU_OP_HOST_FN, "a host callback");
    if (!op)
        return -ENOMEM;
    op->u.host.fn = fn;
    op->u.host.arg = arg;
    cpu_stream_publish(s);
    return 0;
}

int cpu_signal_tail(devq_pl_stream *s, devq_pl_tail_fn fn, void *arg, uint64_t value)
{
    if (!fn)
        return cpu_host->error(-EINVAL, "cpu: signal_tail: NULL function");
    struct cpu_op *op = cpu_stream_queue(s, CPU_OP_TAIL, "a signal tail");
    if (!op)
        return -ENOMEM;
    op->u.tail.fn = fn;
    op->u.tail.arg = arg;
    op->u.tail.value = value;
    cpu_stream_publish(s);
    return 0;
}

void cpu_host_fn_run(devq_pl_stream *s, struct cpu_op *op)
{
    int status = s->error;
    s->error = 0;
    /* The contract: the failed op's detail is this thread's errmsg when
     * the callback sees the error. */
    if (status && s->error_msg[0])
        cpu_host->error(status, "%s", s->error_msg);
    s->error_msg[0] = 0;
    int r = op->u.host.fn(op->u.host.arg, status);
    if (r < 0)
        s->error = r;
}
