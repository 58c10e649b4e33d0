/* SPDX-License-Identifier: MIT */
/* Signals' names (devq(7) NAMES): the user's signals are numbered in
 * creation order (a queue's own timeline is not: it would shift every
 * number the user sees); the label every message uses.  Setting a
 * name is in signal.c, beside the handle check. */
#include "config.h"
#include "error.h"
#include "signal_impl.h"

void devq__signal_number_user(struct devq_signal *s)
{
    s->name.number = devq__name_number(DEVQ_NAME_SIGNAL);
}

struct devq_label devq__signal_label(const devq_signal *s)
{
    return devq__name_label(&s->name, DEVQ_NAME_SIGNAL, NULL);
}
