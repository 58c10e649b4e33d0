/* SPDX-License-Identifier: MIT */
/* Names of user objects: numbers per kind and process, the user's name,
 * the label every message uses (name.h).
 *
 * Why a fixed inline buffer under a striped lock: labels are formatted
 * from anywhere (API calls, the notifier thread, backend callback
 * threads, under the device lock), and a name may be set at the same
 * moment from another thread.  An inline buffer needs no allocation, so
 * there is nothing to free safely later (a swapped pointer would need
 * hazard pointers or a grace period for readers in host callbacks); the
 * stripe locks are leaves (nothing is called while one is held), so they
 * cannot join any lock order, and only names pay for them: set_name and
 * label formatting, never a hot path. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "error.h"
#include "name.h"

#define STRIPES 16

static _Atomic uint32_t numbers[DEVQ_NAME_KINDS];
static pthread_mutex_t stripes[STRIPES] = {
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
    PTHREAD_MUTEX_INITIALIZER,
};
static const char *const kinds[DEVQ_NAME_KINDS] = { "signal", "queue", "buffer", "kernel" };

static pthread_mutex_t *lock_of(const struct devq_name *n)
{
    return &stripes[((uintptr_t)n >> 6) % STRIPES];
}

uint32_t devq__name_number(enum devq_name_kind kind)
{
    return atomic_fetch_add_explicit(&numbers[kind], 1, memory_order_relaxed) + 1;
}

int devq__name_set(struct devq_name *n, enum devq_name_kind kind, const char *fn, const char *name)
{
    size_t len = name ? strnlen(name, DEVQ_NAME_MAX + 1) : 0;
    if (len > DEVQ_NAME_MAX)
        return devq__err(-EINVAL, "%s: %s: name '%.20s...' is longer than %d bytes; use a shorter one", fn,
                         devq__name_label(n, kind, NULL).s, name, DEVQ_NAME_MAX);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return devq__err(-EINVAL,
                             "%s: %s: name has a control character at byte %zu (names are "
                             "printed in one-line messages); use printable characters",
                             fn, devq__name_label(n, kind, NULL).s, i);
    pthread_mutex_t *m = lock_of(n);
    pthread_mutex_lock(m);
    memcpy(n->text, name ? name : "", len);
    n->text[len] = 0;
    pthread_mutex_unlock(m);
    return 0;
}

void devq__name_get(const struct devq_name *n, char *out, size_t cap)
{
    pthread_mutex_t *m = lock_of(n);
    pthread_mutex_lock(m);
    snprintf(out, cap, "%s", n->text);
    pthread_mutex_unlock(m);
}

struct devq_label devq__name_label(const struct devq_name *n, enum devq_name_kind kind, const char *detail)
{
    struct devq_label l;
    const char *k = kinds[kind];
    if (!n->number) {
        snprintf(l.s, sizeof l.s, "internal %s", k);
        return l;
    }
    char text[DEVQ_NAME_MAX + 1];
    devq__name_get(n, text, sizeof text);
    int d = detail && *detail;
    if (text[0])
        snprintf(l.s, sizeof l.s, "%s \"%s\" (#%u%s%s)", k, text, n->number, d ? ", " : "", d ? detail : "");
    else
        snprintf(l.s, sizeof l.s, "%s #%u%s%s%s", k, n->number, d ? " (" : "", d ? detail : "", d ? ")" : "");
    return l;
}
