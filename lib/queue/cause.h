/* SPDX-License-Identifier: MIT */
/* How long a failure's cause string may be: the queue, its batches and
 * their callbacks keep causes in arrays of this size. */
#ifndef DEVQ_LIB_CAUSE_H
#define DEVQ_LIB_CAUSE_H

#define DEVQ_CAUSE_MAX 384

#endif
