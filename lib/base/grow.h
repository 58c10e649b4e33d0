/* SPDX-License-Identifier: MIT */
/* Growing arrays: the one way lib/ makes room for one more element. */
#ifndef DEVQ_LIB_GROW_H
#define DEVQ_LIB_GROW_H

#include <errno.h>
#include <stdlib.h>

/* Make room for one more element in arr (capacity cap, an lvalue of any
 * unsigned type), doubling it, from `first` when empty.  0, or -ENOMEM
 * with arr and cap unchanged; the caller words the error. */
#define DEVQ_GROW(arr, cap, first)                                                 \
    __extension__({                                                                \
        __typeof__(cap) devq_n_ = (cap) ? (cap)*2 : (first);                       \
        __typeof__(arr) devq_p_ = realloc((arr), (size_t)devq_n_ * sizeof *(arr)); \
        if (devq_p_) {                                                             \
            (arr) = devq_p_;                                                       \
            (cap) = devq_n_;                                                       \
        }                                                                          \
        devq_p_ ? 0 : -ENOMEM;                                                     \
    })

#endif
